"""Rational interval arithmetic with outward dyadic rounding; certified ``exp`` and softmax.

``Interval(lo, hi)`` is {x : lo <= x <= hi}, endpoints ``int``/``Fraction`` (no floating point).
*Rounding to p bits* replaces an endpoint by a dyadic ``m * 2^e``, ``|m| < 2^p``, outward (``lo``
down, ``hi`` up), so every result contains the exact result for any points of the arguments. A
nonzero number never rounds to zero (rounding is relative): positive lower bounds stay positive.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import repeat
from typing import Iterable, List, NamedTuple, Sequence

ONE = Fraction(1)
ZERO = Fraction(0)


class Interval(NamedTuple):
    lo: Fraction
    hi: Fraction


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
    if n < 0:
        q = -q
    return Fraction(q << e) if e >= 0 else Fraction(q, 1 << -e)


def rounded(lo: Fraction, hi: Fraction, p: int) -> Interval:
    """[lo, hi] rounded outward to p bits."""
    return Interval(round_ratio(lo.numerator, lo.denominator, p, False),
                    round_ratio(hi.numerator, hi.denominator, p, True))


def idot(xs: Iterable, ys: Iterable, p: int) -> Interval:
    """Σ x_i y_i of numbers or intervals, exact from the endpoint products, rounded once."""
    lo = hi = ZERO
    for x, y in zip(xs, ys):
        x, y = (x if isinstance(x, Interval) else (x,)), (y if isinstance(y, Interval) else (y,))
        ps = [a * b for a in x for b in y]
        lo += min(ps)
        hi += max(ps)
    return rounded(lo, hi, p)


def isum(xs: Iterable, p: int) -> Interval:
    """Sum of numbers or intervals, exact, rounded once."""
    return idot(xs, repeat(1), p)


def irelu(a: Interval) -> Interval:
    """max(0, ·) is monotone, so it acts on the endpoints (exactly)."""
    return Interval(max(a.lo, ZERO), max(a.hi, ZERO))


def exp_bound(x: Fraction, p: int, up: bool, tick=None) -> Fraction:
    """A p-bit dyadic b >= exp(x) (``up``) or 0 < b <= exp(x) (not ``up``); ``tick()`` is called
    between Taylor terms. Halving, Taylor sum in fixed point, squaring; the proof is in
    ``docs/certificate.md`` § *Proof of the exp enclosure*."""
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


def softmax(scores: Sequence, p: int, tick=None) -> List[Interval]:
    """Enclosures of p_k = exp(a_k) / Σ_k' exp(a_k') for scores a_k in the given intervals: with
    E_k = exp(a_k - max hi) in [L_k, U_k], p_k in [L_k / (L_k + Σ_{k'≠k} U_k'), U_k / (U_k + Σ_{k'≠k} L_k')]
    (clipped to [0, 1]); an exponent below -4p gets L_k = 0 (``docs/certificate.md`` § Proof of the
    exp enclosure)."""
    ivs = [a if isinstance(a, Interval) else Interval(Fraction(a), Fraction(a)) for a in scores]
    c = max(a.hi for a in ivs)
    floor = Fraction(-4 * p)
    E = [(exp_bound(a.lo - c, p, False, tick) if a.lo - c >= floor else ZERO,
          exp_bound(max(a.hi - c, floor), p, True, tick)) for a in ivs]
    s_lo = sum(l for l, _ in E)
    s_hi = sum(h for _, h in E)
    out = []
    for l, h in E:
        lo, hi = rounded(l / (l + s_hi - h) if l else ZERO, h / (h + s_lo - l), p)
        out.append(Interval(lo, min(hi, ONE)))
    return out
