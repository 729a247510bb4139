"""Floating-point formats of the ``arith`` precision model and the sweep's error type.

`FloatFormat` (significand bits, MPFR exponent range), the named IEEE-style formats
(`FORMATS`: bfloat16, float16, float32, float64), ``mpfrB`` mantissa formats with an
unbounded exponent, and `OPERATION_ORDER`, the fixed order in which a network's
operations are rounded (``docs/precision.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Optional


OPERATION_ORDER = """\
* weights and inputs are first rounded to the format (correctly rounded from the exact rationals);
* affine map W z + b: s = fl(W[i,0]·z[0]); s = fl(s + fl(W[i,j]·z[j])) for j = 1, 2, … (every
  stored entry, zeros included: 0·inf = NaN); then s = fl(s + b[i]); then ReLU (NaN stays NaN);
* feed-forward layer (eq. (3)): h = ReLU(W1 z + b1), t = W2 h + b2 as above, output fl(z + t)
  with a residual, t without;
* embedding: fl(E[t] + P[s]);
* attention (eq. (2)), per head: v = WV z, k = WK z, q = WQ z (affine maps without bias),
  score s_k = Σ_c fl(k_c·q_c) summed left to right; weights: uniform fl(1/|K|); hardmax
  fl(1/|I|) on the keys whose score equals the maximum; softmax e_k = fl(exp(fl(s_k − max))),
  Z = Σ e_k left to right, p_k = fl(e_k / Z) (base 2 for ``softmax2``); head output
  WO(Σ_k fl(p_k·v_k)) summed over the keys in order; layer output fl(fl(z + o_1) + o_2) … over
  the heads (starting from 0 without a residual);
* fl = round to nearest, ties to even, in the format (MPFR semantics; no fused multiply-add)."""


class SweepError(ValueError):
    """A sweep specification is invalid (unknown theorem, instance, format, malformed --param)."""


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: ``precision`` significand bits (with the leading bit);
    exponent range in MPFR's convention (x = 0.1b₂b₃…·2^e, emin ≤ e ≤ emax; ``None``:
    unbounded, no overflow or underflow)."""

    name: str
    precision: int
    emin: Optional[int] = None
    emax: Optional[int] = None

    @property
    def bounded(self) -> bool:
        return self.emax is not None

    def context(self):
        import gmpy2

        if self.bounded:
            return gmpy2.context(precision=self.precision, emin=self.emin, emax=self.emax, subnormalize=True,
                                 round=gmpy2.RoundToNearest)
        return gmpy2.context(precision=self.precision, emin=gmpy2.get_emin_min(), emax=gmpy2.get_emax_max(),
                             subnormalize=False, round=gmpy2.RoundToNearest)

    @property
    def max_finite(self) -> Optional[Fraction]:
        if not self.bounded:
            return None
        return Fraction((1 << self.precision) - 1) * Fraction(2) ** (self.emax - self.precision)

    @property
    def min_subnormal(self) -> Optional[Fraction]:
        return None if not self.bounded else Fraction(2) ** (self.emin - 1)


FORMATS: Dict[str, FloatFormat] = {
    "bfloat16": FloatFormat("bfloat16", 8, -132, 128),
    "float16": FloatFormat("float16", 11, -23, 16),
    "float32": FloatFormat("float32", 24, -148, 128),
    "float64": FloatFormat("float64", 53, -1073, 1024),
}
NAMED_FORMATS = tuple(FORMATS)


def mantissa_format(b: int) -> FloatFormat:
    """b-bit significand, unbounded exponent (the ``arith_min`` search)."""
    return FloatFormat(f"mpfr{b}", int(b))


def get_format(name: str) -> FloatFormat:
    if name in FORMATS:
        return FORMATS[name]
    m = re.fullmatch(r"mpfr(\d+)", name)
    if m and int(m.group(1)) >= 2:
        return mantissa_format(int(m.group(1)))
    raise SweepError(f"unknown format {name!r}; use {', '.join(NAMED_FORMATS)} or mpfrB (B >= 2 bits, unbounded "
                     f"exponent)")
