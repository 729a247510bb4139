"""Rigorous rational enclosures of elementary functions (kernel; standard library only).

Used by lower-bound certificates (:mod:`lowerbound`, ``docs/lower-bound-certificates.md``).
An enclosure is an :class:`~.rational_interval.Interval` ``[lo, hi]`` of Fractions that contains
the real value. An exact (point) interval stays exact; a non-point result is rounded outward to
p bits (:func:`~.rational_interval.rounded`). No floating point; no tolerance.

Exceptions: :class:`Undecided` (the enclosure is too wide to answer, e.g. ⌊x⌋ of an interval that
contains an integer, or 1/x of an interval that contains 0: retry at a higher precision);
:class:`DomainError` (certainly undefined: ln of a number ≤ 0, division by exactly 0).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb, factorial, isqrt

from .rational_interval import Interval, exp_bound, round_ratio, rounded


class Undecided(Exception):
    """Not decidable at this precision; a higher precision may decide it."""


class DomainError(Exception):
    """The value is certainly undefined (the message says why)."""


def point(x) -> Interval:
    x = Fraction(x)
    return Interval(x, x)


def bits(a: Interval) -> int:
    """Bits of the largest numerator or denominator of the endpoints."""
    return max(max(x.numerator.bit_length(), x.denominator.bit_length()) for x in a)


def fit(lo: Fraction, hi: Fraction, p: int, budget) -> Interval:
    """[lo, hi] as a result: exact if lo == hi, else rounded outward to p bits; its size is
    charged to ``budget.value`` (``max_value_bits``) so no value grows without bound."""
    iv = Interval(lo, lo) if lo == hi else rounded(lo, hi, p)
    budget.value(bits(iv), "a value of an expression")
    return iv


def add(a: Interval, b: Interval, p: int, budget) -> Interval:
    return fit(a.lo + b.lo, a.hi + b.hi, p, budget)


def neg(a: Interval) -> Interval:
    return Interval(-a.hi, -a.lo)


def mul(a: Interval, b: Interval, p: int, budget) -> Interval:
    """The product's extremes are among the four endpoint products (charged before they are formed)."""
    budget.value(bits(a) + bits(b), "a product")
    ps = [x * y for x in a for y in b]
    return fit(min(ps), max(ps), p, budget)


def inv(a: Interval, p: int, budget) -> Interval:
    """1/x is decreasing on each side of 0."""
    if a.lo == a.hi == 0:
        raise DomainError("division by zero")
    if a.lo <= 0 <= a.hi:
        raise Undecided("a divisor's enclosure contains 0")
    return fit(1 / a.hi, 1 / a.lo, p, budget)


def ipow(a: Interval, k: int, p: int, budget) -> Interval:
    """a^k for an integer k: x^k is increasing for odd k (and on x ≥ 0), |x|^k for even k; a^−k = 1/a^k."""
    if k < 0:
        return inv(ipow(a, -k, p, budget), p, budget)
    lo = _pow(a.lo, k, p, budget)
    hi = lo if a.lo == a.hi else _pow(a.hi, k, p, budget)
    if k % 2 or a.lo >= 0:
        return Interval(lo.lo, hi.hi)
    return Interval(hi.lo, lo.hi) if a.hi <= 0 else Interval(Fraction(0), max(lo.hi, hi.hi))


def _pow(x: Fraction, k: int, p: int, budget) -> Interval:
    """x^k (k ≥ 0) by repeated squaring of |x| (x ↦ x², x·y are increasing on x, y ≥ 0, so the
    outward-rounded steps enclose), charged to the budget at every step; the sign restored."""
    out, sq, odd_negative = point(1), point(abs(x)), x < 0 and k % 2 == 1
    while k:
        budget.tick()
        if k & 1:
            out = mul(out, sq, p, budget)
        k >>= 1
        if k:
            sq = mul(sq, sq, p, budget)
    return neg(out) if odd_negative else out


def sqrt(a: Interval, p: int, budget) -> Interval:
    """√x, increasing: ⌊√(⌊x·4^k⌋)⌋/2^k ≤ √x ≤ ⌈√(⌈x·4^k⌉)⌉/2^k (``math.isqrt``), k ≥ p + a margin."""
    if a.hi < 0:
        raise DomainError("square root of a negative number")
    if a.lo < 0:
        raise Undecided("a square root's argument may be negative")
    if a.lo == a.hi:
        n, d = a.lo.numerator, a.lo.denominator
        rn, rd = isqrt(n), isqrt(d)
        if rn * rn == n and rd * rd == d:
            return point(Fraction(rn, rd))
    k = p + 2 + max(0, (a.lo.denominator.bit_length() - a.lo.numerator.bit_length()) // 2)
    lo = Fraction(isqrt(a.lo.numerator * 4 ** k // a.lo.denominator), 2 ** k)
    t = -(-a.hi.numerator * 4 ** k // a.hi.denominator)
    s = isqrt(t)
    return fit(lo, Fraction(s + (s * s < t), 2 ** k), p, budget)


def _atanh(a: int, b: int, F: int) -> tuple:
    """Integers (S, S + 2J + 1) bounding 2^F·atanh(a/b) for 0 ≤ a/b ≤ 1/3.

    atanh z = Σ_{j≥0} z^{2j+1}/(2j+1). Fixed point: t_0 = ⌊a 2^F/b⌋, t_{j+1} = ⌊t_j a²/b²⌋ and
    S = Σ_{j<J} ⌊t_j/(2j+1)⌋. Floors only lower, so S ≤ 2^F Σ_{j<J}; each t_j is at most j + 1
    below 2^F z^{2j+1} (the error is multiplied by z² ≤ 1, then one more floor), so each term is at
    most 2 units low: Σ_{j<J} ≤ (S + 2J)/2^F. The tail Σ_{j≥J} ≤ z^{2J+1}/(1 − z²) ≤ (9/8)·3^{−2J−1}
    < 9^{−J} ≤ 2^{−F} once 9^J ≥ 2^F."""
    J = F // 3 + 1  # 9^J ≥ 8^J ≥ 2^(3J) > 2^F
    t, S = (a << F) // b, 0
    a2, b2 = a * a, b * b
    for j in range(J):
        S += t // (2 * j + 1)
        t = t * a2 // b2
        if not t:
            return S, S + 2 * (j + 1) + 1
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
        return point(0)
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


def ln(a: Interval, p: int, budget) -> Interval:
    """ln is increasing on (0, ∞): [ln lo, ln hi]."""
    if a.hi <= 0:
        raise DomainError("logarithm of a number ≤ 0")
    if a.lo <= 0:
        raise Undecided("a logarithm's argument may be ≤ 0")
    budget.tick()
    lo = ln_point(a.lo, p).lo
    return fit(lo, lo if a.lo == a.hi and a.lo == 1 else ln_point(a.hi, p).hi, p, budget)


def log2(a: Interval, p: int, budget) -> Interval:
    """log2 x = ln x / ln 2 (both enclosed; the quotient of intervals encloses the quotient)."""
    if a.lo == a.hi and a.lo > 0:
        n, d = a.lo.numerator, a.lo.denominator
        if n & (n - 1) == 0 and d & (d - 1) == 0:  # an exact power of two
            return point(n.bit_length() - d.bit_length())
    return mul(ln(a, p + 4, budget), inv(ln2(p + 4), p + 4, budget), p, budget)


def exp(a: Interval, p: int, budget) -> Interval:
    """exp is increasing: [exp lo, exp hi] by the kernel's exp enclosure (``docs/certificate.md``, Proof
    of the exp enclosure); e^{±x} needs about 1.45·x bits, charged before it is formed."""
    budget.value(2 * max(-(-abs(x).numerator // abs(x).denominator) for x in a) + p, "exp of a large number")
    return fit(exp_bound(a.lo, p, False, budget.tick), exp_bound(a.hi, p, True, budget.tick), p, budget)


@lru_cache(maxsize=64)
def e(p: int) -> Interval:
    """e = exp(1), by the kernel's exp enclosure (``docs/certificate.md``, Proof of the exp enclosure)."""
    return Interval(exp_bound(Fraction(1), p, False), exp_bound(Fraction(1), p, True))


def floor_of(a: Interval) -> int:
    """⌊x⌋ when the enclosure decides it (⌊lo⌋ = ⌊hi⌋), else :class:`Undecided`."""
    f = a.lo.numerator // a.lo.denominator
    if f != a.hi.numerator // a.hi.denominator:
        raise Undecided("floor: the enclosure contains an integer")
    return f


def binom(a: Interval, k: Interval, budget) -> Interval:
    """C(n, k) of exact integers 0 ≤ k ≤ n (``math.comb``); C(n, k) ≤ n^min(k, n−k) is charged first."""
    n, k = exact_int(a, "binom"), exact_int(k, "binom")
    if not 0 <= k <= n:
        raise DomainError("binom(n, k) needs 0 ≤ k ≤ n")
    budget.value(min(k, n - k) * n.bit_length(), "binom(n, k)")
    return point(comb(n, k))


def exact_int(a: Interval, what: str) -> int:
    """The integer an exact point interval holds (else the value is not a definite integer)."""
    if a.lo != a.hi or a.lo.denominator != 1:
        raise DomainError(f"{what} needs an exact integer argument")
    return a.lo.numerator


_B = [Fraction(1)]  # B_0, B_1, ... computed so far


def bernoulli(n: int) -> Fraction:
    """B_n (B_1 = −1/2) by Σ_{j≤m} C(m+1, j) B_j = 0, extended as needed."""
    while len(_B) <= n:
        m = len(_B)
        _B.append(-sum(comb(m + 1, j) * _B[j] for j in range(m)) / (m + 1))
    return _B[n]


ZETA2 = Fraction(33, 10)  # 2ζ(2K) ≤ 2ζ(2) = π²/3 < 3.3
TWO_PI = Fraction(6283, 1000)  # 2π > 6.283


def em_sum(al: Fraction, be: Fraction, ga: Fraction, de: Fraction, a: int, b: int, p: int, budget) -> Interval:
    """Σ_{l=a}^{b} (α + βl)·log2(γl + δ) (0 if b < a; needs γ > 0, γa + δ > 0).

    Terms with (γl + δ)/γ < H = max(32, p/8) are summed directly (the remainder's minimum over K,
    about e^{−2πH} < 2^{−9H}, is then below 2^{−p}). The rest, l = c..b, by
    Euler–Maclaurin with K ≥ 2 corrections: with u = γx + δ, α + βx = P·u + R (P = β/γ,
    R = α − βδ/γ), f = (α + βx)·log2 u,
    ∫_c^b f = (1/γ)[P(u²/2·log2 u − u²/4·log2 e) + R(u·log2 u − u·log2 e)]_{u_c}^{u_b},
    f^{(k)} = log2 e·γ^k·(−1)^k·[P(k−2)!/u^{k−1} − R(k−1)!/u^k] (k ≥ 2), f' = γ[P log2 u + (P + R/u) log2 e];
    Σ = ∫ + (f(c) + f(b))/2 + Σ_{k≤K} B_{2k}/(2k)!·(f^{(2k−1)}(b) − f^{(2k−1)}(c)) + ρ,
    |ρ| ≤ 2ζ(2K)/(2π)^{2K}·∫|f^{(2K)}| ≤ 3.3/6.283^{2K}·log2 e·γ^{2K−1}[|P|(2K−3)!/u_c^{2K−2} + |R|(2K−2)!/u_c^{2K−1}]
    (DLMF 2.10.1; ``exactmem/bounds/sums.py`` has the derivation). K grows while ρ shrinks, up to ρ ≤ 2^−p."""
    if b < a:
        return point(0)
    if ga <= 0 or ga * a + de <= 0:
        raise DomainError("em_sum needs γ > 0 and γa + δ > 0")
    t = max(32, p // 8) - de / ga
    c = max(a, -((-t.numerator) // t.denominator))
    tot = point(0)
    for l in range(a, min(b, c - 1) + 1):
        budget.tick()
        tot = add(tot, mul(point(al + be * l), log2(point(ga * l + de), p + 8, budget), p + 8, budget), p + 8, budget)
    if c > b:
        return fit(tot.lo, tot.hi, p, budget)
    P, R = be / ga, al - be * de / ga
    uc, ub = ga * c + de, ga * b + de
    q = p + 16 + max(abs(x).numerator.bit_length() for x in (al, be, ga, de, ub, Fraction(1))) * 2
    l2e = log2(e(q), q, budget)

    def rho(K):
        integral = l2e.hi * ga ** (2 * K - 1) * (abs(P) * factorial(2 * K - 3) / uc ** (2 * K - 2) +
                                               abs(R) * factorial(2 * K - 2) / uc ** (2 * K - 1))
        return ZETA2 * integral / TWO_PI ** (2 * K)

    c_ub = (P * ub * ub / 2 + R * ub) / ga + (al + be * b) / 2 + ga * P / 12  # coefficient of log2 u_b
    c_uc = -(P * uc * uc / 2 + R * uc) / ga + (al + be * c) / 2 - ga * P / 12  # of log2 u_c
    c_e = (-P * ub * ub / 4 - R * ub + P * uc * uc / 4 + R * uc) / ga + ga * (R / ub - R / uc) / 12  # of log2 e
    # the width asked is relative to the size of the sum (≈ c_ub·log2 u_b); any K is rigorous
    mag = max(0, abs(c_ub).numerator.bit_length() - c_ub.denominator.bit_length())
    K, r = 2, rho(2)
    while r > Fraction(1 << mag, 1 << p) and K < max(64, p):
        budget.tick()
        nxt = rho(K + 1)
        if nxt >= r:
            break
        K, r = K + 1, nxt
    for k in range(2, K + 1):
        budget.tick()
        g = [-P * factorial(2 * k - 3) / u ** (2 * k - 2) + R * factorial(2 * k - 2) / u ** (2 * k - 1) for u in (ub, uc)]
        c_e += bernoulli(2 * k) / factorial(2 * k) * ga ** (2 * k - 1) * (g[0] - g[1])
    parts = [mul(point(c), x, q, budget) for c, x in ((c_ub, log2(point(ub), q, budget)),
                                                      (c_uc, log2(point(uc), q, budget)), (c_e, l2e))]
    parts += [Interval(-r, r), tot]
    return fit(sum(x.lo for x in parts), sum(x.hi for x in parts), p, budget)
