"""Fixed-point enclosures for graph models (kernel; standard library only): exp, tanh, σ, erf, Φ, ln, sin.

Also softplus, and cos (as a shifted sin).

An integer ``n`` stands for the real ``n / 2^F``. Each ``f_fx(n, F, up)`` returns an integer ``b``
with ``b / 2^F >= f(n / 2^F)`` when ``up`` and ``b / 2^F <= f(n / 2^F)`` otherwise, so a monotone
function maps an interval ``[lo, hi]`` to ``[f(lo, F, False), f(hi, F, True)]`` (decreasing: the
other way round). The fixed-point value ``n / 2^F`` is the rational ``Fraction(n, 2^F)``: exp and √
are `enclosure`'s rational proofs read there, π is `enclosure.pi_fx`, atanh `enclosure._atanh`. Only ``graph.py`` uses this
module, so the layer-model and lower-bound bases do not carry it; one proof per function, in its
docstring (``docs/certificate.md`` § *Proofs of the enclosures*).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from itertools import count

from .enclosure import _atanh, cdiv, exp_bound, pi_fx, sqrt_bound


def exp_fx(n: int, F: int, up: bool, tick=None) -> int:
    """exp(n / 2^F). Below x = −F: 0 < exp(x) < e^−F < 2^−F, so the bounds are 0 and 1 units (this
    keeps masked scores of −3.4·10^38 cheap); otherwise `exp_bound` at F + 8 bits, rounded outward."""
    if n < -(F << F):
        return 1 if up else 0
    b = exp_bound(Fraction(n, 1 << F), F + 8, up, tick)
    return cdiv(b.numerator << F, b.denominator, up)


def tanh_fx(n: int, F: int, up: bool, tick=None) -> int:
    """tanh is odd; for x >= 0, tanh x = (1 − E)/(1 + E) with E = e^(−2x) in (0, 1], decreasing in E:
    the upper bound uses E rounded down, the lower bound E rounded up."""
    if n < 0:
        return -tanh_fx(-n, F, not up, tick)
    E = exp_fx(-2 * n, F, not up, tick)
    return cdiv(((1 << F) - E) << F, (1 << F) + E, up)


def sigmoid_fx(n: int, F: int, up: bool, tick=None) -> int:
    """σ(x) = 1/(1 + E), E = e^(−x) in (0, 1] for x >= 0 (decreasing in E); σ(x) = 1 − σ(−x)
    for x < 0, so exp is only taken of arguments <= 0."""
    if n < 0:
        return (1 << F) - sigmoid_fx(-n, F, not up, tick)
    E = exp_fx(-n, F, not up, tick)
    return cdiv(1 << 2 * F, (1 << F) + E, up)


@lru_cache(maxsize=64)
def inv_sqrt_pi_fx(F: int):
    """(lo, hi) of 2^F/√π: 1/√ is decreasing, so lo = ⌊2^2F / ⌈√(π_hi)⌉⌋ and hi = ⌈2^2F / ⌊√(π_lo)⌋⌉."""
    lo, hi = pi_fx(F)
    return (1 << 2 * F) // sqrt_bound(hi, 1 << F, F, True), cdiv(1 << 2 * F, sqrt_bound(lo, 1 << F, F, False), True)


@lru_cache(maxsize=64)
def sqrt_2_over_pi_fx(F: int):
    """(lo, hi) of √(2/π)·2^F: 2/π between ⌊2^(2F+1)/π_hi⌋ and ⌈2^(2F+1)/π_lo⌉ (scaled), then √ outward."""
    lo, hi = pi_fx(F)
    return (sqrt_bound((1 << 2 * F + 1) // hi, 1 << F, F, False),
            sqrt_bound(cdiv(1 << 2 * F + 1, lo, True), 1 << F, F, True))


def erf_fx(n: int, F: int, up: bool, tick=None) -> int:
    """erf(x), x = n/2^F. erf is odd. For x² >= F (so x >= 1): 0 < erfc(x) <= e^(−x²)/(x√π) < e^−F
    < 2^−F, hence erf(x)·2^F lies in (2^F − 1, 2^F). Otherwise the Taylor series
    erf(x) = (2/√π) Σ_i (−1)^i a_i, a_i = x^(2i+1)/(i!(2i+1)): a_(i+1)/a_i = x²(2i+1)/((i+1)(2i+3)) < 1
    once i + 1 >= x², so from there the terms decrease to 0 and the alternating tail after term i−1 is
    at most a_i. Terms are kept as intervals [tl, th] of t_i = x^(2i+1)/i! in G fractional bits
    (each step rounds outward, so no error analysis is needed); G = F + 2k + 16 with k > x² covers the
    cancellation (terms up to x e^(x²) < 2^(1.45k + 1) against a sum below 1)."""
    if n < 0:
        return -erf_fx(-n, F, not up, tick)
    if n * n >= F << 2 * F:
        return (1 << F) - (0 if up else 1)
    k = (n * n >> 2 * F) + 1
    G = F + 2 * k + 16
    X = n << (G - F)
    q_lo, q_hi = X * X >> G, -(-(X * X) >> G)  # x²·2^G rounded down / up
    tl = th = s_lo = s_hi = X
    for i in count(1):
        if tick is not None and not i & 31:
            tick()
        tl, th = tl * q_lo // (i << G), cdiv(th * q_hi, i << G, True)
        a_lo, a_hi = tl // (2 * i + 1), cdiv(th, 2 * i + 1, True)
        if i > k and a_hi <= 1 << (G - F - 4):  # tail bound: |Σ_(j>=i) (−1)^j a_j| <= a_i
            s_lo, s_hi = s_lo - a_hi, s_hi + a_hi
            break
        s_lo, s_hi = (s_lo - a_hi, s_hi - a_lo) if i & 1 else (s_lo + a_lo, s_hi + a_hi)
    c_lo, c_hi = inv_sqrt_pi_fx(G)  # 2/√π = 2 c, c in [c_lo, c_hi]/2^G, c > 0
    if up:
        return min(1 << F, cdiv(2 * s_hi * (c_hi if s_hi >= 0 else c_lo), 1 << (2 * G - F), True))
    return max(0, 2 * s_lo * (c_lo if s_lo >= 0 else c_hi) >> (2 * G - F))


def phi_fx(n: int, F: int, up: bool, tanh_form: bool, tick=None) -> int:
    """The increasing factor g of GELU(x) = x·g(x): Φ(x) = (1 + erf(x/√2))/2, or with ``tanh_form``
    (1 + tanh(√(2/π)(x + 0.044715 x³)))/2 (0.044715 = 44715/10^6 exactly). The inner argument is
    increasing in x and is rounded in the direction ``up`` at every step (a product with a positive
    constant c in [c_lo, c_hi] takes c_hi or c_lo by the sign of the other factor)."""
    if tanh_form:
        u = cdiv(n * 10 ** 6 * (1 << 2 * F) + 44715 * n ** 3, 10 ** 6 << 2 * F, up)  # x + 0.044715 x³
        c_lo, c_hi = sqrt_2_over_pi_fx(F)
        f = tanh_fx
    else:  # 1/√2 = √(2^(F−1) / 2^F)
        u, f = n, erf_fx
        c_lo, c_hi = sqrt_bound(1 << (F - 1), 1 << F, F, False), sqrt_bound(1 << (F - 1), 1 << F, F, True)
    v = cdiv(u * (c_hi if (u >= 0) == up else c_lo), 1 << F, up)
    return cdiv((1 << F) + f(v, F, up, tick), 2, up)


def log_fx(n: int, F: int, up: bool, tick=None) -> int:
    """ln(n/2^F), n > 0. With 2^b <= n < 2^(b+1): n/2^F = 2^k·y, k = b − F, y = n/2^b in [1, 2), and
    ln y = 2 atanh z, z = (y − 1)/(y + 1) = (n − 2^b)/(n + 2^b) in [0, 1/3); ln 2 = 2 atanh(1/3).
    `enclosure._atanh` gives integers bounding 2^G atanh of each (G = F + bits of k + 8 fractional
    bits); k·ln 2 takes ln 2's upper bound when k and the direction agree in sign, else its lower one."""
    b = n.bit_length() - 1
    k, G = b - F, F + (b - F).bit_length() + 8
    y, l2 = _atanh(n - (1 << b), n + (1 << b), G), _atanh(1, 3, G)
    return cdiv(2 * y[up] + 2 * k * l2[(k >= 0) == up], 1 << (G - F), up)


def softplus_fx(n: int, F: int, up: bool, tick=None) -> int:
    """ln(1 + e^x) = max(x, 0) + ln(1 + E), E = e^(−|x|) in (0, 1], ln(1 + E) increasing in E."""
    return max(n, 0) + log_fx((1 << F) + exp_fx(-abs(n), F, up, tick), F, up)


def sin_fx(n: int, w: int, F: int, cos: bool):
    """(lo, hi) over 2^F enclosing sin x (cos x with ``cos``) for every x in [n, n + w]/2^F.

    sin is 1-Lipschitz, so sin x is within w/2^F of sin(n/2^F); cos t = sin(t + π/2); and sin is 2π-periodic:
    with π in [P, Q]/2^G (`enclosure.pi_fx`, G = F + bits of |x| + 16) and an integer c = 4k − [cos]
    (k near (x + [cos]π/2)/2π, any integer is sound), r = x − c·π/2 lies in [R, R + D]/2^H (H = G + 1,
    D = |c|(Q − P)), and sin x = sin r is within D/2^H of sin m, m = R/2^H. The Taylor series
    sin m = Σ_i (−1)^i m^(2i+1)/(2i+1)! has terms t_i decreasing once (2i+2)(2i+3) > m², i.e. from i > K
    = ⌊m²⌋ + 1 on, so the alternating tail after the terms summed is at most the next term; the terms
    are kept as intervals [tl, th] of |m|^(2i+1)/(2i+1)! over 2^H, each step rounded outward (sin is odd).
    For |x| >= 2^64 the answer is [−1, 1] (true for every real x)."""
    one, H = 1 << F, F + (abs(n) >> F).bit_length() + 17
    if abs(n) >> F >> 64:
        return -one, one
    (P, Q), X = pi_fx(H - 1), n << (H - F)
    c = 4 * ((X + cos * P + 2 * P) // (4 * P)) - cos
    R, rad = X - max(c * P, c * Q), abs(c) * (Q - P) + (w << (H - F))
    A, K = abs(R), (R * R >> 2 * H) + 1  # |m| over 2^H, and K > m²
    A2l, A2h, tl, th, lo, hi = A * A >> H, cdiv(A * A, 1 << H, True), A, A, A, A
    for i in count(1):
        d = (2 * i) * (2 * i + 1) << H
        tl, th = tl * A2l // d, cdiv(th * A2h, d, True)
        if i > K and th <= 1:
            break
        lo, hi = (lo - th, hi - tl) if i & 1 else (lo + tl, hi + th)
    lo, hi = (lo - th, hi + th) if R >= 0 else (-hi - th, th - lo)
    return max(-one, (lo - rad) >> (H - F)), min(one, cdiv(hi + rad, 1 << (H - F), True))
