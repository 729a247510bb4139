"""Enclosures of e and of logarithms (kernel; standard library only): e, ln 2, ln x.

Only the expression language uses them (``expression.py``: claim formulas and lower bounds), so
the layer-model and graph-model bases do not carry them; they build on `enclosure`'s rational
intervals, `exp_bound` and the atanh series (`enclosure._atanh`, which graph models' ln shares).
One proof per function, in its docstring (``docs/certificate.md`` § *Proofs of the enclosures*).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from .enclosure import ONE, ZERO, _atanh, exp_bound, round_ratio
from .interval import Interval, rounded


@lru_cache(maxsize=64)
def e_interval(p: int) -> Interval:
    """e = exp(1), by `exp_bound`."""
    return Interval(exp_bound(ONE, p, False), exp_bound(ONE, p, True))


@lru_cache(maxsize=64)
def ln2(p: int) -> Interval:
    """ln 2 = 2·atanh(1/3) (since (1 + 1/3)/(1 − 1/3) = 2)."""
    F = p + 4
    lo, hi = _atanh(1, 3, F)
    return Interval(Fraction(2 * lo, 1 << F), Fraction(2 * hi, 1 << F))


@lru_cache(maxsize=8192)
def ln_point(x: Fraction, p: int) -> Interval:
    """ln x for a rational x > 0: x = 2^k·y with y ∈ [3/4, 3/2), ln x = k·ln 2 + 2·atanh(z),
    z = (y − 1)/(y + 1) ∈ [−1/7, 1/5]; z is rounded outward to a dyadic first (atanh is
    increasing), and atanh is odd."""
    if x == 1:
        return Interval(ZERO, ZERO)
    n, d = x.numerator, x.denominator
    k = n.bit_length() - d.bit_length()
    while (n << max(0, -k)) * 2 >= (d << max(0, k)) * 3:
        k += 1
    while (n << max(0, -k)) * 4 < (d << max(0, k)) * 3:
        k -= 1
    yn, yd = n << max(0, -k), d << max(0, k)  # y = yn / yd
    F = p + k.bit_length() + 8
    zn, zd = yn - yd, yn + yd
    zlo, zhi = round_ratio(abs(zn), zd, F + 4, False), round_ratio(abs(zn), zd, F + 4, True)
    lo = _atanh(zlo.numerator, zlo.denominator, F)[0]
    hi = _atanh(zhi.numerator, zhi.denominator, F)[1]
    if zn < 0:
        lo, hi = -hi, -lo
    L2 = ln2(F)
    klo, khi = (k * L2.lo, k * L2.hi) if k >= 0 else (k * L2.hi, k * L2.lo)
    return rounded(klo + Fraction(2 * lo, 1 << F), khi + Fraction(2 * hi, 1 << F), p)
