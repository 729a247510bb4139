"""Code-length claims confirmed from float64 score enclosures with proven rounding (``check --engine fast``).

A graph certificate with code-length claims (``docs/verify-format.md`` § Code length) states, per
example, an upper bound c of Σ_t −log₂ softmax(s_t)[y_t] over its read positions t. The kernel
(`checker._code_length`) confirms c from integer score bounds with its own fixed-point exp and log, one
term at a time: with V = 2,049 classes and 64 positions that is 131,072 big-integer exponentials per
example, seconds each example. `confirms` bounds the same upper end,

    Σ_t log₂ Σ_k exp(hi_k,t − lo_{y_t},t),

with float64 operations whose rounding is proven (``docs/certificate.md`` § *Code lengths in float64*;
Lemma U of `rounding`):

1. d = up(hi_k − lo_y) >= hi_k − lo_y;
2. exp_point(d)'s upper end >= e^d (`rounding.exp_point`; d > 709 gives ∞);
3. S_t: the terms summed pairwise, `rounding.up` after every addition, so S_t >= Σ_k e^(hi_k − lo_y) >= 1;
4. Π_t S_t <= M·2^E: each S_t split exactly by frexp, the mantissas multiplied with `up` after every
   product and renormalised by frexp (exact), the exponents summed as integers; M in [1/2, 1);
5. so Σ_t log₂ S_t <= log₂ M + E < E. Confirmed when E <= c; else, for q = c − E in [−1, 0), when
   M <= 2^q, tested against a lower bound of 2^q = e^(q ln 2) >= e^(q·LN2_HI) (q < 0) >= e^x with
   x = fdn(q·LN2_HI), the lower end of exp_point(x).

Only confirmation decides (the claim holds). A non-finite bound, or an upper end above c, decides
nothing: the kernel judges that example itself (and is the one that refutes).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

from .rounding import LN2_HI, exp_point, fdn, up


def sum_up(x: np.ndarray) -> np.ndarray:
    """An upper bound of the sum of x >= 0 along its last axis: pairwise additions, each followed by
    `rounding.up` (Lemma U: up(fl(a + b)) >= a + b; the bounds of nonnegative terms add monotonically)."""
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = np.concatenate([x, np.zeros(x.shape[:-1] + (1,))], axis=-1)
        x = up(x[..., 0::2] + x[..., 1::2])
    return x[..., 0]


def lse_upper(lo: np.ndarray, hi: np.ndarray, labels: Sequence[int]) -> np.ndarray:
    """S_t >= Σ_k exp(hi[t, k] − lo[t, y_t]) for every read position t (steps 1–3 of the module
    docstring); ∞ or NaN where a bound is not finite or a difference exceeds 709."""
    y = np.asarray(labels, dtype=np.int64)
    col = lo[np.arange(len(y)), y][:, None]
    d = up(hi - col)
    d = np.where(np.isfinite(d), d, np.inf)  # NaN and ±∞ bounds: never confirmed
    return sum_up(exp_point(d)[1])


def product_bound(S: np.ndarray):
    """(M, E) with Π_t S_t <= M·2^E, M in [1/2, 1) (step 4; S_t >= 1 finite)."""
    M, E = 1.0, 0
    for v in S:
        m, e = np.frexp(v)
        M, e2 = np.frexp(up(M * m))
        E += int(e) + int(e2)
    return float(M), E


def confirms(lo: np.ndarray, hi: np.ndarray, labels: Sequence[int], claimed: Fraction) -> bool:
    """True only if Σ_t −log₂ softmax(s_t)[y_t] <= ``claimed`` for every score s in [lo, hi] (rows t of
    the read positions, one label each): the kernel's upper end `checker._code_length` is then <= the
    claim at any precision. False decides nothing."""
    with np.errstate(all="ignore"):
        S = lse_upper(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64), labels)
        if not np.all(np.isfinite(S)):
            return False
        M, E = product_bound(S)  # finite: every S_t is, and M stays in [1/2, 1)
    if E <= claimed:
        return True
    q = claimed - E
    if q < -1:  # M >= 1/2 > 2^q
        return False
    return M <= pow2_lower(q)


def pow2_lower(q: Fraction) -> float:
    """A float <= 2^q for rational q <= 0: 2^q = e^(q ln 2) >= e^(q·LN2_HI) >= e^x, x = fdn(q·LN2_HI),
    and exp_point's lower end is <= e^x."""
    x = fdn(q * LN2_HI)
    with np.errstate(all="ignore"):
        return float(exp_point(np.array([x]))[0][0])
