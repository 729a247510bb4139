"""Σ_{l=a}^{b} (α + β·l)·log2(γ·l + δ), enclosed without summing term by term.

The sharp bound (90) of Theorem B.3 is a product over the L blocks; at nN = 10²¹ the
minimal L is about 10⁹, so its log2 cannot be summed factor by factor. Every block factor
is (8e·M'·D_l/v_l)^{v_l} with v_l and D_l linear in l, so log2 of the product reduces to
exact integer sums plus sums of the form

    S = Σ_{l=a}^{b} f(l),   f(x) = (α + βx)·log2(u),   u = γx + δ > 0 on [a, b],

which `linear_log2_sum` encloses by the Euler–Maclaurin formula with a proven
remainder (integers and rationals; the logarithms through the enclosures of
[`exactmem.arith.enclosure`][exactmem.arith.enclosure]; no floating point).

**Proof.** Write α + βx = P·u + R with P = β/γ, R = α − βδ/γ (rationals). With
log2' = log2 e / u:

* ∫ f dx = (1/γ)·[P·(u²/2·log2 u − u²/4·log2 e) + R·(u·log2 u − u·log2 e)];
* f'(x) = γ·[P·log2 u + (P + R/u)·log2 e];
* for k ≥ 2, f^{(k)}(x) = log2 e · γ^k · (−1)^k · [P·(k−2)!/u^{k−1} − R·(k−1)!/u^k]
  (differentiate P·log2 e/u − R·log2 e/u², which is d²f/du², k − 2 more times).

Euler–Maclaurin (e.g. Apostol, *An elementary view of Euler's summation formula*, 1999;
DLMF 2.10.1) for K ≥ 1:

    Σ_{l=a}^{b} f(l) = ∫_a^b f + (f(a) + f(b))/2
                       + Σ_{k=1}^{K} B_{2k}/(2k)!·(f^{(2k−1)}(b) − f^{(2k−1)}(a)) + ρ,
    |ρ| ≤ 2ζ(2K)/(2π)^{2K} · ∫_a^b |f^{(2K)}(x)| dx,

the bound because ρ = −∫_a^b f^{(2K)}(x)·P_{2K}(x)/(2K)! dx with P_{2K} the periodic Bernoulli
function, |P_{2K}| ≤ 2·(2K)!·ζ(2K)/(2π)^{2K}.

For K ≥ 2, with u_a = γa + δ and ∫_a^b γ^{2K}·u^{−j} dx ≤ γ^{2K−1}·u_a^{1−j}/(j − 1) (j ≥ 2):

    ∫_a^b |f^{(2K)}| ≤ log2 e · γ^{2K−1} · [|P|·(2K−3)!/u_a^{2K−2} + |R|·(2K−2)!/u_a^{2K−1}],

and 2ζ(2K) ≤ 2ζ(2) = π²/3 < 33/10, 2π > 6283/1000. The remainder shrinks like
(2K)!/(2π·u_a/γ)^{2K}: the first ``head`` terms (u_a/γ small) are summed directly, and K
grows until |ρ| is below the requested width. The result is an Interval of width about
2^−bits (absolute), because each logarithm is enclosed to 2^−bits divided by the size of its
coefficient.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb, factorial
from typing import Union

from ..arith.enclosure import Interval, log2_e, log2_interval

Rat = Union[int, Fraction]

HEAD = 32  # terms with u/γ below this are summed directly (the asymptotic series needs u/γ large)
K_MAX = 60  # most Euler–Maclaurin correction terms tried (max(K_MAX, bits))
ZETA_BOUND = Fraction(33, 10)  # 2ζ(2K) ≤ 2ζ(2) = π²/3 < 3.3
TWO_PI_LO = Fraction(6283, 1000)  # 2π > 6.283


@lru_cache(maxsize=None)
def bernoulli(n: int) -> Fraction:
    """B_n (B_1 = −1/2) from Σ_{j=0}^{m} C(m+1, j)·B_j = 0, exactly."""
    if n == 0:
        return Fraction(1)
    return -sum((comb(n + 1, j) * bernoulli(j) for j in range(n)), Fraction(0)) / (n + 1)


def bits_of(x: Rat) -> int:
    """An integer k ≥ 0 with |x| ≤ 2^k."""
    x = abs(Fraction(x))
    return max(0, x.numerator.bit_length() - x.denominator.bit_length() + 1)


def scaled_log2(u: Rat, coef: Rat, bits: int) -> Interval:
    """coef·log2(u), enclosed to about 2^−bits (absolute)."""
    if coef == 0:
        return Interval.exact(0)
    return coef * log2_interval(Fraction(u), bits + bits_of(coef) + 2)


def direct_sum(alpha: Rat, beta: Rat, gamma: Rat, delta: Rat, a: int, b: int, bits: int) -> Interval:
    """Σ_{l=a}^{b} (α+βl)·log2(γl+δ), term by term (empty sum 0)."""
    tot = Interval.exact(0)
    for l in range(a, b + 1):
        tot = tot + scaled_log2(gamma * l + delta, alpha + beta * l, bits + bits_of(b - a + 1))
    return tot


def em_remainder(P: Fraction, R: Fraction, gamma: Rat, ua: Fraction, K: int, l2e_hi: Fraction) -> Fraction:
    """The bound on |ρ| above, for K ≥ 2 correction terms."""
    integral = l2e_hi * Fraction(gamma) ** (2 * K - 1) * (abs(P) * factorial(2 * K - 3) / ua ** (2 * K - 2)
                                                         + abs(R) * factorial(2 * K - 2) / ua ** (2 * K - 1))
    return ZETA_BOUND * integral / TWO_PI_LO ** (2 * K)


def linear_log2_sum(alpha: Rat, beta: Rat, gamma: Rat, delta: Rat, a: int, b: int, bits: int = 48) -> Interval:
    """Enclosure of Σ_{l=a}^{b} (α + β·l)·log2(γ·l + δ) (integers a ≤ b, γ > 0, γa + δ > 0),
    of width about 2^−bits: the terms with (γl + δ)/γ < max(HEAD, bits/2) directly, the rest by
    Euler–Maclaurin with the proven remainder of the module docstring."""
    if b < a:
        return Interval.exact(0)
    if gamma <= 0 or gamma * a + delta <= 0:
        raise ValueError("linear_log2_sum needs γ > 0 and γa + δ > 0")
    alpha, beta, gamma, delta = (Fraction(x) for x in (alpha, beta, gamma, delta))
    # first l summed by Euler–Maclaurin: the smallest c ≥ a with (γc + δ)/γ ≥ max(HEAD, bits/2)
    t = max(HEAD, bits // 2) - delta / gamma
    c = max(a, -((-t.numerator) // t.denominator))
    out = direct_sum(alpha, beta, gamma, delta, a, min(b, c - 1), bits + 1)
    if c > b:
        return out
    P, R = beta / gamma, alpha - beta * delta / gamma
    uc, ub = gamma * c + delta, gamma * b + delta
    l2e = log2_e(bits + 8)
    # the Euler–Maclaurin remainder: smallest K ≥ 2 with |ρ| ≤ 2^-(bits+2), or the best one
    target = Fraction(1, 1 << (bits + 2))
    K, rho = 2, em_remainder(P, R, gamma, uc, 2, l2e.hi)
    while rho > target and K < max(K_MAX, bits):
        nxt = em_remainder(P, R, gamma, uc, K + 1, l2e.hi)
        if nxt >= rho:
            break
        K, rho = K + 1, nxt
    # coefficients of log2 u_b, log2 u_c and log2 e, collected before enclosing (no cancellation loss)
    c_ub = (P * ub * ub / 2 + R * ub) / gamma + (alpha + beta * b) / 2 + gamma * P / 12
    c_uc = -(P * uc * uc / 2 + R * uc) / gamma + (alpha + beta * c) / 2 - gamma * P / 12
    c_e = (-P * ub * ub / 4 - R * ub + P * uc * uc / 4 + R * uc) / gamma + gamma * (R / ub - R / uc) / 12
    for k in range(2, K + 1):  # f^{(2k−1)} = log2 e·γ^{2k−1}·g_k(u), g_k(u) = −P(2k−3)!/u^{2k−2} + R(2k−2)!/u^{2k−1}
        g_b = -P * factorial(2 * k - 3) / ub ** (2 * k - 2) + R * factorial(2 * k - 2) / ub ** (2 * k - 1)
        g_c = -P * factorial(2 * k - 3) / uc ** (2 * k - 2) + R * factorial(2 * k - 2) / uc ** (2 * k - 1)
        c_e += bernoulli(2 * k) / factorial(2 * k) * gamma ** (2 * k - 1) * (g_b - g_c)
    e_bits = bits + bits_of(c_e) + 2
    em = scaled_log2(ub, c_ub, bits + 2) + scaled_log2(uc, c_uc, bits + 2) + c_e * log2_e(e_bits)
    return out + em + Interval(-rho, rho)
