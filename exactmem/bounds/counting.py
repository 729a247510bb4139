"""Lemma B.4 (Goldberg–Jerrum sign-vector count) and the layer-wise product bound.

Lemma B.4 (Kajitsuka & Sato, attributed to Goldberg & Jerrum 1995, Cor. 2.1): *suppose
W ≤ M and let P_1, …, P_M be polynomials of degree at most D in W variables; the number K
of sign vectors (sgn P_1(a), …, sgn P_M(a)), a ∈ R^W, with three-valued sgn, satisfies
K ≤ (8eMD/W)^W.*

A `Factor` is one application: M polynomials, degree ≤ D, v variables. The
**precondition v ≤ M** is part of the lemma; the written proof of Theorem B.3 never checks
it. Repair used here (``docs/errata.md``): repeating a polynomial does not change the set
of sign vectors, so with ``M' = max(M, v)`` copies the lemma applies and gives
``K ≤ (8e·M'·D/v)^v``; when v ≤ M this is the paper's factor.

The product of the factors is eq. (90) (middle line); the weighted AM–GM step

    Π (a_i / w_i)^{w_i} ≤ (Σ a_i / Σ w_i)^{Σ w_i}          (a_i, w_i > 0)

turns it into the last line of (90). Both are evaluated as log2 enclosures; the AM–GM
step is also checked with exact integers when the exponents are small.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import List, Sequence

from ..arith.enclosure import Interval, log2_e, log2_interval


@dataclass(frozen=True)
class Factor:
    """One use of Lemma B.4: ``M`` polynomials of degree ≤ ``D`` in ``v`` variables."""

    label: str
    eq: str
    M: int
    D: int
    v: int

    @property
    def precondition(self) -> bool:
        """Lemma B.4 needs v ≤ M (at most as many variables as polynomials)."""
        return self.v <= self.M

    @property
    def M_eff(self) -> int:
        """M' = max(M, v): duplicated polynomials make the lemma applicable (same sign vectors)."""
        return max(self.M, self.v)

    @property
    def numerator(self) -> int:
        """The a_i of the AM–GM step without its factor 8e: M'·D."""
        return self.M_eff * self.D

    def log2(self, bits: int) -> Interval:
        """log2 of the factor (8e·M'·D/v)^v."""
        return lemma_b4_log2(self.M_eff, self.D, self.v, bits)


def lemma_b4_log2(M: int, D: int, v: int, bits: int) -> Interval:
    """log2 (8eMD/v)^v = v·(log2(8MD/v) + log2 e), enclosed."""
    return v * (log2_interval(Fraction(8 * M * D, v), bits) + log2_e(bits))


def product_log2(factors: Sequence[Factor], bits: int) -> Interval:
    """log2 of the product of the factors — eq. (90), middle line (with M' where needed)."""
    tot = Interval.exact(0)
    for f in factors:
        tot = tot + f.log2(bits)
    return tot


def total_weight(factors: Sequence[Factor]) -> int:
    """Σ v_i: the exponent W̄ of eq. (90)–(91)."""
    return sum(f.v for f in factors)


def amgm_log2(factors: Sequence[Factor], bits: int) -> Interval:
    """log2 of (8e·Σ M'_i D_i / W̄)^{W̄} — eq. (90), last line."""
    Wbar = total_weight(factors)
    S = sum(f.numerator for f in factors)
    return Wbar * (log2_interval(Fraction(8 * S, Wbar), bits) + log2_e(bits))


def amgm_is_equality(factors: Sequence[Factor]) -> bool:
    """Weighted AM–GM is an equality iff all ratios a_i/w_i coincide (exact check)."""
    ratios = {Fraction(f.numerator, f.v) for f in factors}
    return len(ratios) == 1


def amgm_exact(factors: Sequence[Factor]) -> bool:
    """The AM–GM step with exact integers (the common factor (8e)^{W̄} cancels):
    Π (c_i)^{w_i} · W̄^{W̄} ≤ (Σ c_i)^{W̄} · Π w_i^{w_i}. Use only for small exponents."""
    Wbar = total_weight(factors)
    S = sum(f.numerator for f in factors)
    lhs, rhs = Wbar ** Wbar, S ** Wbar
    for f in factors:
        lhs *= f.numerator ** f.v
        rhs *= f.v ** f.v
    return lhs <= rhs


def generic_arrangement_faces(M: int, W: int) -> int:
    """Number of sign vectors in {−,0,+}^M of M affine hyperplanes in general position in
    R^W (= number of faces of a simple arrangement, Buck 1943):
    Σ_{k=0}^{W} C(M, W−k) Σ_{i=0}^{k} C(M−W+k, i). Used to sanity-check Lemma B.4 at D = 1."""
    from math import comb

    if M < W:
        raise ValueError("general-position face count needs M ≥ W")
    return sum(comb(M, W - k) * sum(comb(M - W + k, i) for i in range(k + 1)) for k in range(W + 1))


def factors_table(factors: Sequence[Factor], bits: int = 48) -> List[dict]:
    """Rows for reports: label, M, D, v, precondition, log2 factor enclosure."""
    return [{"factor": f.label, "eq": f.eq, "M": f.M, "D": f.D, "v": f.v, "v<=M": f.precondition,
             "log2_factor": f.log2(bits)} for f in factors]
