"""Enclosures of real functions (kernel; standard library only): exp, √, π.

The one place where the kernel bounds them, for every kind of certificate.

One proof per function, in its docstring (exp: ``docs/certificate.md`` § *Proofs of the
enclosures*, which lists them all). *Rounding to p bits* (`round_ratio`) replaces a bound by a dyadic
``m * 2^e``, ``|m| < 2^p``, in the bound's direction (a lower bound down, an upper bound up); a
nonzero number never rounds to zero (rounding is relative): positive lower bounds stay positive.
Rational intervals (``Interval``, `rounded`) are in ``interval.py``, which graph models do not use.
`exp_bound`, `sqrt_bound`, and π in fixed point (`pi_fx`: ``n`` stands for
``n / 2^F``) and the atanh series (`_atanh`), which ``fixedpoint.py`` (graph models' exp, tanh, σ,
erf, Φ, ln, sin) reads too; e and the logarithms of rationals, which only the expression language
needs, are in ``logarithm.py``.

Used by ``evaluate.py`` (layer models), ``fixedpoint.py`` and ``graph.py`` (graph models) and
``logarithm.py`` and ``expression.py`` (claim formulas and lower bounds); each keeps its own interval operations (sums,
products, softmax) next to its evaluator.
No floating point, no tolerance; ``tick`` (the budget's clock) is called inside long series.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import isqrt

ONE = Fraction(1)
ZERO = Fraction(0)


class Undecided(Exception):
    """The enclosures at the current precision cannot decide a comparison (or are too wide to
    answer, e.g. 1/x of an interval that contains 0): retry at a higher precision."""


def round_ratio(n: int, d: int, p: int, up: bool) -> Fraction:
    """The p-bit dyadic next to n/d (d > 0) in direction ``up`` (True: >= n/d, False: <= n/d)."""
    if n == 0:
        return ZERO
    a = -n if n < 0 else n
    if d & (d - 1) == 0 and a.bit_length() <= p:
        return Fraction(n, d)  # already a p-bit dyadic
    e = a.bit_length() - d.bit_length() - p  # then 2^(p-1) < a/(d 2^e) < 2^(p+1)
    while True:
        q, r = divmod(a << -e, d) if e < 0 else divmod(a, d << e)
        if q.bit_length() <= p:
            break
        e += 1
    if r and up == (n > 0):  # round the magnitude away from zero
        q += 1
    q = -q if n < 0 else q
    return Fraction(q << e) if e >= 0 else Fraction(q, 1 << -e)


def cdiv(a: int, b: int, up: bool) -> int:
    """a / b rounded up (ceil) or down (floor), b != 0 (Python's // floors for every sign)."""
    return -(-a // b) if up else a // b


def sqrt_bound(n: int, d: int, k: int, up: bool) -> int:
    """An integer s with s / 2^k <= √(n/d) (not ``up``) or >= √(n/d) (``up``), n >= 0, d > 0.
    √ is increasing: ⌊√⌊n·4^k/d⌋⌋ <= 2^k √(n/d) <= ⌈√⌈n·4^k/d⌉⌉, and ``math.isqrt`` is the exact
    floor of √ of an integer t; the ceiling adds 1 unless isqrt(t)² = t (an exact square stays a
    point). The fixed-point √ of n/2^F is ``sqrt_bound(n, 2^F, F, up)`` (then n·4^F/2^F is exact)."""
    t = cdiv(n << 2 * k, d, up)
    s = isqrt(t)
    return s + (up and s * s < t)


def exp_bound(x: Fraction, p: int, up: bool, tick=None) -> Fraction:
    """A p-bit dyadic b >= exp(x) (``up``) or 0 < b <= exp(x) (not ``up``); ``tick()`` is called
    between Taylor terms. Halving, Taylor sum in fixed point, squaring; the proof is in
    ``docs/certificate.md`` § *Proofs of the enclosures* (exp)."""
    if x == 0:
        return ONE
    n, d = x.numerator, x.denominator
    a = -n if n < 0 else n
    s = max(0, a.bit_length() - d.bit_length())
    while 2 * a > d << s:  # step 1: until |x| / 2^s <= 1/2
        s += 1
    w = p + s + 12
    y = round_ratio(n, d << s, w, up)
    m, E = y.numerator, y.denominator.bit_length() - 1  # y = m / 2^E
    K, f = 0, 2  # step 2: f = (K+1)! 2^(K+1)
    while f < 1 << (w + 2):
        K += 1
        f *= 2 * (K + 1)
    F = w + (2 * K).bit_length() + 3
    t = S = 1 << F
    for i in range(1, K + 1):
        t = ((t * m) >> E) // i  # floor(floor(a / 2^E) / i) = floor(a / (2^E i))
        S += t
        if tick is not None and not i & 63:
            tick()
    err = 2 * K + (1 << (F - w - 2))  # fixed-point error + Taylor remainder, in units of 2^-F
    b = round_ratio(S + err if up else S - err, 1 << F, w, up)
    for _ in range(s):  # step 3
        b = round_ratio(b.numerator ** 2, b.denominator ** 2, w, up)
    return round_ratio(b.numerator, b.denominator, p, up)


def _arctan_series(a: int, b: int, F: int, alternating: bool, J: int) -> tuple:
    """(S, n): S = Σ_{j<n} ±⌊t_j/(2j+1)⌋ (signs (−1)^j when ``alternating``) with t_0 = ⌊a 2^F/b⌋,
    t_{j+1} = ⌊t_j a²/b²⌋, stopping after the term whose successor t_n is 0, or after J terms.
    2^F·Σ_j (±1)^j z^{2j+1}/(2j+1), z = a/b, is atan z (alternating) or atanh z; the callers bound
    the error: t_j is at most j + 1 below 2^F z^{2j+1} (the error is multiplied by z² <= 1, then one
    more floor), exactly ⌊2^F z^{2j+1}⌋ when a = 1 (nested floors of divisions by integers)."""
    t, S = (a << F) // b, 0
    a2, b2 = a * a, b * b
    for j in range(J):
        S += -(t // (2 * j + 1)) if alternating and j & 1 else t // (2 * j + 1)
        t = t * a2 // b2
        if not t:
            return S, j + 1
    return S, J


def _atanh(a: int, b: int, F: int) -> tuple:
    """Integers (S, S + 2J + 1) bounding 2^F·atanh(a/b) for 0 <= a/b <= 1/3, J the terms summed.

    Floors only lower, so S <= 2^F Σ_{j<J}; each term is at most 2 units low (`_arctan_series`):
    Σ_{j<J} <= (S + 2J)/2^F. The tail Σ_{j>=J} <= z^{2J+1}/(1 − z²) <= (9/8)·3^{−2J−1} < 9^{−J}
    <= 2^{−F} once 9^J >= 2^F (J = F // 3 + 1 terms at most); when t_J = 0 first, 2^F z^{2J+1} <= J + 1
    and the tail is at most (9/8)(J + 1)/(2J + 1) <= 3/4 of a unit."""
    S, J = _arctan_series(a, b, F, False, F // 3 + 1)  # 9^J >= 8^J >= 2^(3J) > 2^F
    return S, S + 2 * J + 1


@lru_cache(maxsize=64)
def pi_fx(F: int):
    """(lo, hi) with lo <= π·2^F <= hi. Machin: π = 16 atan(1/5) − 4 atan(1/239), and atan(1/k) =
    Σ_i (−1)^i / ((2i+1) k^(2i+1)), an alternating series of decreasing terms, so the tail after the
    last term used is at most the first omitted one. In G = F + 16 fractional bits the term
    t_i = ⌊⌊2^G / k^(2i+1)⌋ / (2i+1)⌋ = ⌊2^G / ((2i+1) k^(2i+1))⌋ (`_arctan_series` with a = 1:
    nested floors of positive divisions) is off by less than 1 unit; the series stops when
    ⌊2^G / k^(2i+1)⌋ = 0 (before G terms, as k >= 5), i.e. the first omitted term is below 1 unit.
    So after i terms the sum s is within i + 1 units of 2^G atan(1/k)."""
    G = F + 16

    def atan_inv(k):
        s, i = _arctan_series(1, k, G, True, G)
        return s - i - 1, s + i + 1

    (a, b), (c, d) = atan_inv(5), atan_inv(239)
    return (16 * a - 4 * d) >> 16, -(-(16 * b - 4 * c) >> 16)
