"""Affine steps and exact scaled-integer batches: the types every stack backend shares, and the fraction backend.

`.affine_stack` runs a stack and holds the flint backend, `.limbs` and `.compress`
add backends; this module also holds the ``"fraction"`` reference backend.

A step is ``H ↦ ρ(W H + b 1ᵀ)`` with ρ applying ReLU to a chosen subset of rows; a batch is
a matrix with one column per token, held as `ScaledInts` (an integer matrix and one
positive common denominator). See `.affine_stack` for the whole design.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import gcd
from typing import List, Optional, Sequence, Tuple

from ..arith.numbers import lcm_of_denominators


@dataclass(frozen=True)
class AffineStep:
    """One step ``H ↦ ρ(W H + b)``; ``relu_rows[i]`` says whether row i goes through ReLU."""

    W: Tuple[Tuple[Fraction, ...], ...]
    b: Tuple[Fraction, ...]
    relu_rows: Tuple[bool, ...]

    @property
    def m_out(self) -> int:
        return len(self.W)

    @property
    def m_in(self) -> int:
        return len(self.W[0]) if self.W else 0

    @staticmethod
    def make(W: Sequence[Sequence[Fraction]], b: Optional[Sequence[Fraction]], relu) -> "AffineStep":
        """Build a step; ``relu`` is a bool (all rows) or a per-row sequence of bools."""
        Wt = tuple(tuple(Fraction(x) for x in row) for row in W)
        m_out = len(Wt)
        bt = tuple(Fraction(x) for x in b) if b is not None else (Fraction(0),) * m_out
        if len(bt) != m_out:
            raise ValueError(f"bias has length {len(bt)}, expected {m_out}")
        if isinstance(relu, bool):
            rr = (relu,) * m_out
        else:
            rr = tuple(bool(r) for r in relu)
        if len(rr) != m_out:
            raise ValueError("relu mask length does not match the output dimension")
        return AffineStep(Wt, bt, rr)

    def integer_form(self) -> Tuple[int, List[List[int]], List[int]]:
        """(D, D·W, D·b) with D the least common denominator of all entries."""
        D = lcm_of_denominators([x for row in self.W for x in row] + list(self.b))
        if D == 1:  # integer entries: their numerators (no Fraction arithmetic)
            return 1, [[x.numerator for x in row] for row in self.W], [x.numerator for x in self.b]
        Wi = [[x.numerator * (D // x.denominator) for x in row] for row in self.W]
        bi = [x.numerator * (D // x.denominator) for x in self.b]
        return D, Wi, bi


@dataclass
class ScaledInts:
    """An exact rational matrix stored as integer rows over one common denominator."""

    rows: List[List[int]]
    den: int = 1

    @property
    def shape(self) -> Tuple[int, int]:
        return (len(self.rows), len(self.rows[0]) if self.rows else 0)

    @staticmethod
    def from_fractions(rows: Sequence[Sequence[Fraction]]) -> "ScaledInts":
        D = lcm_of_denominators(x for row in rows for x in row)
        exact = [[x if isinstance(x, (int, Fraction)) else Fraction(x) for x in row] for row in rows]
        return ScaledInts([[x.numerator * (D // x.denominator) for x in row] for row in exact], D)

    def to_fractions(self) -> List[List[Fraction]]:
        D = self.den
        if D == 1:
            return [[Fraction(x) for x in row] for row in self.rows]
        return [[Fraction(x, D) for x in row] for row in self.rows]

    def reduced(self) -> "ScaledInts":
        """Divide numerators and denominator by their common gcd."""
        g = self.den
        for row in self.rows:
            for x in row:
                if g == 1:
                    return self
                g = gcd(g, x)
        if g == 1:
            return self
        return ScaledInts([[x // g for x in row] for row in self.rows], self.den // g)


@dataclass
class StackResult:
    out: ScaledInts
    trace: List[ScaledInts] = field(default_factory=list)
    backend: str = ""


def _check_shapes(steps: Sequence[AffineStep], m_in: int) -> None:
    m = m_in
    for i, st in enumerate(steps):
        if st.m_in != m:
            raise ValueError(f"step {i} expects {st.m_in} input rows, got {m}")
        m = st.m_out


def run_stack_fraction(steps: Sequence[AffineStep], X: ScaledInts, trace: bool = False) -> StackResult:
    """Reference backend: plain Python rationals, one entry at a time (slow, obviously right)."""
    _check_shapes(steps, X.shape[0])
    H = X.to_fractions()
    T = X.shape[1]
    tr = []
    for st in steps:
        out = []
        for i, row in enumerate(st.W):
            bi = st.b[i]
            vals = []
            for t in range(T):
                s = bi
                for j, w in enumerate(row):
                    if w:
                        s += w * H[j][t]
                if st.relu_rows[i] and s < 0:
                    s = Fraction(0)
                vals.append(s)
            out.append(vals)
        H = out
        if trace:
            tr.append(ScaledInts.from_fractions(H))
    return StackResult(ScaledInts.from_fractions(H), tr, "fraction")
