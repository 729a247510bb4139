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

__all__ = ["Interval", "round_ratio", "round_down", "round_up", "as_interval", "rounded", "iadd",
           "isum", "imul", "idot", "irelu", "exp_lower", "exp_upper", "iexp", "softmax"]

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


def iadd(a: Num, b: Num, p: int) -> Interval:
    return isum((a, b), p)


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


def imul(a: Num, b: Num, p: int) -> Interval:
    return rounded(*_mul_exact(a, b), p)


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


def _exp_bound(x: Fraction, p: int, up: bool) -> Fraction:
    """A p-bit dyadic b with b >= exp(x) (``up``) or 0 < b <= exp(x) (not ``up``).

    Method and proof.

    1. Halving: s >= 0 is least with |x| / 2^s <= 1/2, and y is x / 2^s rounded to w = p + s + 12
       bits in the direction of the bound. -1/2 and 1/2 are dyadics, so rounding does not leave
       [-1/2, 1/2]; exp is increasing, so a bound for exp(y)^(2^s) bounds exp(x).
    2. Taylor: T_K(y) = Σ_{i<=K} y^i / i!. By Taylor's theorem with Lagrange remainder,
       exp(y) - T_K(y) = e^ξ y^(K+1) / (K+1)! for some ξ between 0 and y, hence

           |R_K(y)| <= e^|y| |y|^(K+1) / (K+1)! <= 2 |y|^(K+1) / (K+1)!   (|y| <= 1/2, e^(1/2) < 2).

       With r = 2|y|^(K+1)/(K+1)!, exp(y) lies in [T_K(y) - r, T_K(y) + r]; T_K(y) and r are
       computed exactly (integers over D^(K+1) (K+1)! with y = m / D) and the chosen endpoint is
       rounded outward. K is least with 2 (1/2)^(K+1) / (K+1)! <= 2^-(w+2). The lower endpoint is
       positive: T_K(y) - r >= exp(y) - 2r >= e^(-1/2) - 2^-(w+1) > 0.
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
    m, D = y.numerator, y.denominator  # y = m / D, D a power of two
    K, f = 0, 2  # f = (K+1)! 2^(K+1)
    while f < 1 << (w + 3):
        K += 1
        f *= 2 * (K + 1)
    E = D.bit_length() - 1
    N, c = 1, 1  # Horner: N = Σ_i (K!/i!) m^i D^(K-i); c = K!/i!
    for i in range(K - 1, -1, -1):
        c *= i + 1
        N = N * m + (c << E * (K - i))
    fact = c * (K + 1)  # c = K! now
    r = 2 * abs(m) ** (K + 1)  # remainder bound, over D^(K+1) (K+1)!
    num = N * D * (K + 1) + (r if up else -r)
    assert num > 0
    b = round_ratio(num, D ** (K + 1) * fact, w, up)
    for _ in range(s):
        b = round_ratio(b.numerator ** 2, b.denominator ** 2, w, up)
    return round_ratio(b.numerator, b.denominator, p, up)


def exp_lower(x: Fraction, p: int) -> Fraction:
    """A p-bit dyadic in (0, exp(x)]."""
    return _exp_bound(Fraction(x), p, False)


def exp_upper(x: Fraction, p: int) -> Fraction:
    """A p-bit dyadic >= exp(x)."""
    return _exp_bound(Fraction(x), p, True)


def iexp(a: Num, p: int) -> Interval:
    """Enclosure of exp over an interval (exp is increasing). Cost grows with |a|."""
    a = as_interval(a)
    return Interval(exp_lower(a.lo, p), exp_upper(a.hi, p))


def softmax(scores: Sequence[Num], p: int) -> List[Interval]:
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
        E.append((exp_lower(lo, p) if lo >= floor else ZERO, exp_upper(max(hi, floor), p)))
    s_lo = sum(l for l, _ in E)
    s_hi = sum(h for _, h in E)
    out = []
    for l, h in E:
        lo = round_down(l / (l + s_hi - h), p) if l else ZERO
        hi = round_up(h / (h + s_lo - l), p)
        out.append(Interval(lo, min(hi, ONE)))
    return out
