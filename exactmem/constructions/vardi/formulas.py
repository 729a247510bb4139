"""Eqs. (110) and (111) and Lemma C.2's bits as claim formulas (kernel-evaluated expressions).

The same quantities as `sizes` (``eq110_depth``, ``eq110_integer``, ``eq111_bits``,
``lemma_c2_bits``, ``paper_R2``), written in the kernel's expression language so that a
certificate's size bound is the formula itself, evaluated by the kernel
(``docs/certificate.md`` § *Claim formulas*), not a number computed here. Log base 2 throughout
(exactmem's reading, ``docs/errata.md``). Arguments are expressions: names, number texts or
Python integers/Fractions.
"""

from __future__ import annotations

from ...certificate.formulas import PI, add, ceil, div, emax, log2, mul, power, sqrt


def paper_R2(r2, delta2, V, d) -> list:
    """R² for Lemma C.1's R := 20 r V² δ⁻¹ √(π d): 400 r² V⁴ π d / δ²."""
    return div(mul(400, r2, power(V, 4), PI, d), delta2)


def _slots(N) -> list:
    """√(N / log₂ N), Lemma G.6's slot count before rounding."""
    return sqrt(div(N, log2(N)))


def _log_max(C, R2) -> list:
    """max{log₂ R, log₂ C} with log₂ R = log₂(R²)/2."""
    return emax(div(log2(R2), 2), log2(C))


def eq110_real(N, C, R2) -> list:
    """Eq. (110) as printed (before ≲): 2 + 3√(N log N) + 2 + 3√(N/log N)·max{log R, log C} + 2√(N/log N) + 2."""
    g = _slots(N)
    return add(6, mul(3, sqrt(mul(N, log2(N)))), mul(3, g, _log_max(C, R2)), mul(2, g))


def eq110_integer(N, C, R2) -> list:
    """Eq. (110) with the natural numbers its lemmas take (`sizes.eq110_integer`):
    2 + (3m + 2) + (3n·max{ρ, c} + 2n + 2), m = ⌈√(N log₂ N)⌉, n = ⌈√(N/log₂ N)⌉, ρ = ⌈log₂ R⌉,
    c = max(1, ⌈log₂ C⌉)."""
    m, n = ceil(sqrt(mul(N, log2(N)))), ceil(_slots(N))
    rho, c = ceil(div(log2(R2), 2)), emax(1, ceil(log2(C)))
    return add(6, mul(3, m), mul(3, n, emax(rho, c)), mul(2, n))


def lemma_c2_bits(d, r2, delta2, V) -> list:
    """Lemma C.2's bit complexity log₂(3 d r V² √π δ⁻¹) = log₂(9 π d² r² V⁴ / δ²) / 2."""
    return div(log2(div(mul(9, PI, power(d, 2), r2, power(V, 4)), delta2)), 2)


def eq111_bits(N, C, R2, r2, delta2, V, d) -> list:
    """Eq. (111) (before ≲): max{Lemma C.2's bits, √(N/log N)·max{log C, log R} + ⌈log R⌉,
    √(N/log N)·max{…} + 2}."""
    gm = mul(_slots(N), _log_max(C, R2))
    return emax(lemma_c2_bits(d, r2, delta2, V), add(gm, ceil(div(log2(R2), 2))), add(gm, 2))
