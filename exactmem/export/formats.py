"""IEEE float formats and exact round-to-nearest-even of rationals ([`exactmem.export`][exactmem.export])."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, Tuple


# ----------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754 binary format: ``precision`` significand bits (with the hidden bit), largest
    exponent ``emax`` (max finite (2 − 2^(1−p))·2^emax), smallest normal exponent ``emin``."""

    name: str
    precision: int
    emax: int
    emin: int
    numpy: str  # NumPy dtype holding the values ("float32" for bfloat16)
    safetensors: str  # safetensors dtype code

    @property
    def max_finite(self) -> Fraction:
        return (2 - Fraction(1, 2 ** (self.precision - 1))) * Fraction(2) ** self.emax

    @property
    def min_subnormal(self) -> Fraction:
        return Fraction(1, 2 ** (self.precision - 1 - self.emin))


FORMATS: Dict[str, FloatFormat] = {
    "float16": FloatFormat("float16", 11, 15, -14, "float16", "F16"),
    "bfloat16": FloatFormat("bfloat16", 8, 127, -126, "float32", "BF16"),
    "float32": FloatFormat("float32", 24, 127, -126, "float32", "F32"),
    "float64": FloatFormat("float64", 53, 1023, -1022, "float64", "F64"),
}


def get_format(dtype) -> FloatFormat:
    if isinstance(dtype, FloatFormat):
        return dtype
    name = str(dtype).replace("torch.", "")
    if name not in FORMATS:
        raise ValueError(f"unknown float format {dtype!r}; use one of {', '.join(FORMATS)}")
    return FORMATS[name]


def _floor_log2(x: Fraction) -> int:
    """⌊log₂ x⌋ for a rational x > 0, exactly."""
    p, q = x.numerator, x.denominator
    e = p.bit_length() - q.bit_length()
    # 2^e ≤ p/q < 2^(e+1)  ⇔  q·2^e ≤ p < q·2^(e+1)
    if e >= 0:
        if p < q << e:
            e -= 1
    elif p << -e < q:
        e -= 1
    return e


def round_to_format(x: Any, fmt: Any) -> Tuple[float, str]:
    """Round the rational ``x`` to the IEEE format ``fmt`` (name or [`FloatFormat`][exactmem.export.FloatFormat]):
    round to nearest, ties to even, gradual underflow, overflow to ±inf — exactly, from the
    rational (no intermediate float). Returns ``(value as a Python float, status)`` with
    status ``exact``, ``rounded``, ``overflow`` (±inf) or ``underflow`` (a nonzero value
    rounded to ±0). Every value of every format here is exactly a Python float."""
    fmt = get_format(fmt)
    x = Fraction(x)
    if x == 0:
        return 0.0, "exact"
    neg = x < 0
    a = -x if neg else x
    e = max(_floor_log2(a), fmt.emin)
    k = e - (fmt.precision - 1)  # quantum 2^k
    s = a / (Fraction(2) ** k) if k >= 0 else a * (1 << -k)
    m, r = divmod(s.numerator, s.denominator)
    twice = 2 * r
    if twice > s.denominator or (twice == s.denominator and m & 1):
        m += 1
    exact = r == 0
    if m == 0:
        return (-0.0 if neg else 0.0), "underflow"
    val = Fraction(m) * (Fraction(2) ** k)
    if val > fmt.max_finite:
        return (-math.inf if neg else math.inf), "overflow"
    f = math.ldexp(m, k)
    return (-f if neg else f), ("exact" if exact else "rounded")
