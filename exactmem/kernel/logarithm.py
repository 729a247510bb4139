"""Enclosures of e and of logarithms (kernel; standard library only): e, ln 2, ln x.

Only the expression language uses them (``expression.py``: claim formulas and lower bounds), so
the layer-model and graph-model bases do not carry them; they build on `enclosure`'s rational
intervals, `exp_bound` and the arctan series that π shares. One proof per function, in its
docstring (``docs/certificate.md`` § *Proofs of the enclosures*).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from .enclosure import ONE, ZERO, Interval, _arctan_series, exp_bound, round_ratio, rounded


@lru_cache(maxsize=64)
def e_interval(p: int) -> Interval:
    """e = exp(1), by `exp_bound`."""
    return Interval(exp_bound(ONE, p, False), exp_bound(ONE, p, True))


def _atanh(a: int, b: int, F: int) -> tuple:
    """Integers (S, S + 2J + 1) bounding 2^F·atanh(a/b) for 0 <= a/b <= 1/3, J the terms summed.

    Floors only lower, so S <= 2^F Σ_{j<J}; each term is at most 2 units low (`_arctan_series`):
    Σ_{j<J} <= (S + 2J)/2^F. The tail Σ_{j>=J} <= z^{2J+1}/(1 − z²) <= (9/8)·3^{−2J−1} < 9^{−J}
    <= 2^{−F} once 9^J >= 2^F (J = F // 3 + 1 terms at most); when t_J = 0 first, 2^F z^{2J+1} <= J + 1
    and the tail is at most (9/8)(J + 1)/(2J + 1) <= 3/4 of a unit."""
    S, J = _arctan_series(a, b, F, False, F // 3 + 1)  # 9^J >= 8^J >= 2^(3J) > 2^F
    return S, S + 2 * J + 1


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
