"""Rational interval arithmetic with outward dyadic rounding; certified ``exp`` and softmax.

Only ``int`` and ``fractions.Fraction`` are used (no floating point). ``Interval(lo, hi)``
stands for the set {x : lo <= x <= hi}. *Rounding to p bits* replaces an endpoint by a
dyadic ``m * 2^e`` with ``|m| < 2^p`` (p significant bits), always outward: ``lo`` down,
``hi`` up. Hence every function below returns an interval that contains the exact result
of the operation applied to any points of its arguments. A nonzero number never rounds to
zero (rounding is relative), so positive lower bounds stay positive.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable, List, NamedTuple, Sequence, Union

__all__ = ["Interval", "round_ratio", "round_down", "round_up", "as_interval", "rounded", "isum", "idot", "irelu",
           "exp_lower", "exp_upper", "softmax"]

ONE = Fraction(1)
ZERO = Fraction(0)


class Interval(NamedTuple):
    lo: Fraction
    hi: Fraction


Num = Union[int, Fraction, Interval]


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


def round_down(x: Fraction, p: int) -> Fraction:
    return round_ratio(x.numerator, x.denominator, p, False)


def round_up(x: Fraction, p: int) -> Fraction:
    return round_ratio(x.numerator, x.denominator, p, True)


def as_interval(x: Num) -> Interval:
    """A point interval for an exact number; intervals pass through."""
    if isinstance(x, Interval):
        return x
    x = Fraction(x)
    return Interval(x, x)


def rounded(lo: Fraction, hi: Fraction, p: int) -> Interval:
    """[lo, hi] rounded outward to p bits."""
    return Interval(round_ratio(lo.numerator, lo.denominator, p, False),
                    round_ratio(hi.numerator, hi.denominator, p, True))


def _mul_exact(a: Num, b: Num):
    """Exact (lo, hi) of the product of two intervals or numbers."""
    if not isinstance(a, Interval):
        if not isinstance(b, Interval):
            x = a * b
            return x, x
        a, b = b, a
    if not isinstance(b, Interval):  # interval times a number
        x, y = a.lo * b, a.hi * b
        return (x, y) if b >= 0 else (y, x)
    ps = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    return min(ps), max(ps)


def isum(xs: Iterable[Num], p: int) -> Interval:
    """Sum, computed exactly and rounded once."""
    lo = hi = ZERO
    for x in xs:
        if isinstance(x, Interval):
            lo += x.lo
            hi += x.hi
        else:
            lo += x
            hi += x
    return rounded(lo, hi, p)


def idot(xs: Sequence[Num], ys: Sequence[Num], p: int) -> Interval:
    """Σ x_i y_i, computed exactly from the endpoint products and rounded once."""
    lo = hi = ZERO
    for x, y in zip(xs, ys):
        l, h = _mul_exact(x, y)
        lo += l
        hi += h
    return rounded(lo, hi, p)


def irelu(a: Interval) -> Interval:
    """max(0, ·) is monotone, so it acts on the endpoints (exactly)."""
    return Interval(a.lo if a.lo > 0 else ZERO, a.hi if a.hi > 0 else ZERO)


def _exp_bound(x: Fraction, p: int, up: bool, tick=None) -> Fraction:
    """A p-bit dyadic b with b >= exp(x) (``up``) or 0 < b <= exp(x) (not ``up``).

    Method and proof (each step costs one multiplication of O(p)-bit integers).

    1. Halving: s >= 0 is least with |x| / 2^s <= 1/2, and y is x / 2^s rounded to w = p + s + 12
       bits in the direction of the bound. -1/2 and 1/2 are dyadics, so rounding does not leave
       [-1/2, 1/2]; exp is increasing, so a bound for exp(y)^(2^s) bounds exp(x).
    2. Taylor: T_K(y) = Σ_{i<=K} y^i / i!. By Taylor's theorem with Lagrange remainder,
       |exp(y) - T_K(y)| <= e^|y| |y|^(K+1) / (K+1)! <= 2 (1/2)^(K+1) / (K+1)! <= 2^-(w+2), with K
       least such. In fixed point with F fractional bits and y = m / 2^E: t_0 = 2^F and
       t_i = floor(t_{i-1} m / (2^E i)). With e_i = t_i - 2^F y^i / i!, e_0 = 0 and
       e_i = e_{i-1} y / i + δ_i, δ_i in (-1, 0], so |e_i| <= |e_i-1| / 2 + 1 <= 2 by induction,
       and S = Σ t_i satisfies |S - 2^F T_K(y)| <= 2K. Hence exp(y) lies in
       [(S - 2K) / 2^F - 2^-(w+2), (S + 2K) / 2^F + 2^-(w+2)]; F = w + LEN(2K) + 3 makes the
       error terms at most 2^-(w+1). The lower endpoint is positive: e^(-1/2) - 2^-(w+1) > 0.
    3. Squaring s times: 0 < l <= exp(z) implies l^2 <= exp(2z), and u >= exp(z) > 0 implies
       u^2 >= exp(2z); each square is rounded outward to w bits, the result finally to p bits.
    """
    if x == 0:
        return ONE
    n, d = x.numerator, x.denominator
    a = -n if n < 0 else n
    s = max(0, a.bit_length() - d.bit_length())
    while 2 * a > d << s:  # until |x| / 2^s <= 1/2
        s += 1
    w = p + s + 12
    y = round_ratio(n, d << s, w, up)
    m, E = y.numerator, y.denominator.bit_length() - 1  # y = m / 2^E
    K, f = 0, 2  # f = (K+1)! 2^(K+1)
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
    for _ in range(s):
        b = round_ratio(b.numerator ** 2, b.denominator ** 2, w, up)
    return round_ratio(b.numerator, b.denominator, p, up)


def exp_lower(x: Fraction, p: int, tick=None) -> Fraction:
    """A p-bit dyadic in (0, exp(x)]; ``tick()`` is called between steps (the checker's budget)."""
    return _exp_bound(Fraction(x), p, False, tick)


def exp_upper(x: Fraction, p: int, tick=None) -> Fraction:
    """A p-bit dyadic >= exp(x)."""
    return _exp_bound(Fraction(x), p, True, tick)


def softmax(scores: Sequence[Num], p: int, tick=None) -> List[Interval]:
    """Enclosures of p_k = exp(a_k) / Σ_k' exp(a_k') for scores a_k in the given intervals.

    Scores are shifted by c = max_k hi_k (softmax is shift-invariant), so every exponent is
    <= 0. With E_k = exp(a_k - c) in [L_k, U_k] and p_k = E_k / (E_k + Σ_{k'≠k} E_k')
    increasing in E_k and decreasing in the others,

        p_k in [L_k / (L_k + Σ_{k'≠k} U_k'),  U_k / (U_k + Σ_{k'≠k} L_k')]   (clipped to [0, 1]).

    An exponent below -4p (a term below 2^(-5p) relative to the largest one) gets L_k = 0 and
    U_k = exp_upper(-4p) -- still a valid enclosure, and it keeps huge score gaps cheap.
    """
    ivs = [as_interval(a) for a in scores]
    c = max(a.hi for a in ivs)
    floor = Fraction(-4 * p)
    E = []
    for a in ivs:
        lo, hi = a.lo - c, a.hi - c
        E.append((exp_lower(lo, p, tick) if lo >= floor else ZERO, exp_upper(max(hi, floor), p, tick)))
    s_lo = sum(l for l, _ in E)
    s_hi = sum(h for _, h in E)
    out = []
    for l, h in E:
        lo = round_down(l / (l + s_hi - h), p) if l else ZERO
        hi = round_up(h / (h + s_lo - l), p)
        out.append(Interval(lo, min(hi, ONE)))
    return out
