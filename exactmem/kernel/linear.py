"""The model as the kernel holds it: integer linear maps and the four layer types.

Public API: accelerators read these classes, never build them. W and b are integers over their lcm L of
denominators; applied to a column ``nums / D`` they give integer numerators over ``L * D``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import repeat
from math import lcm
from operator import add, mul
from typing import List, Optional, Tuple


WORK_SLICE = 1 << 28  # cost units (about 30 ms here) of integer work done between two budget ticks


def over_lcm(rows: List[List[Fraction]], budget=None) -> Tuple[List[List[int]], int]:
    """Rows of rationals as integers over their least common denominator L: (rows · L, L);
    with a ``budget``, L's size is held to its value limit and the clock is checked per row."""
    if budget is None:
        L = lcm(*(x.denominator for row in rows for x in row))
    else:
        L = 1
        for row in rows:
            budget.tick()
            L = lcm(L, *(x.denominator for x in row))
            budget.value(L.bit_length(), "the common denominator of a weight matrix")
    return [[x.numerator * (L // x.denominator) for x in row] for row in rows], L


def product_cost(a_bits: int, b_bits: int) -> int:
    """Cost units of one product of an a-bit and a b-bit integer and its addition (linear for a
    small factor, about a·b/256 for two large ones: CPython's Karatsuba, measured)."""
    return a_bits + b_bits + (a_bits * b_bits >> 8)


class Lin:
    """x ↦ W x + b over exact columns; ``A`` = L·W, ``c`` = L·b (integers), ``cols`` inputs. Tall matrices
    (rows ≥ 8·cols) are applied column by column (C-level ``map`` chains; an all-equal column is a scalar)."""

    def __init__(self, A: List[List[int]], c: Optional[List[int]], L: int, cols: int):
        self.A, self.c, self.L, self.cols, self.rows = A, c, L, cols, len(A)
        self.T = self.const = self._abs = None
        self.bits = max((x.bit_length() for row in A + ([c] if c else []) for x in map(abs, row)), default=0)
        if cols * 8 <= self.rows:
            self.T = [list(t) for t in zip(*A)]
            self.const = [t[0] if t.count(t[0]) == len(t) else None for t in self.T]

    @staticmethod
    def make(W: List[List[Fraction]], b: Optional[List[Fraction]], budget=None) -> "Lin":
        rows, L = over_lcm(W if b is None else W + [b], budget)
        return Lin(rows[:len(W)], None if b is None else rows[-1], L, len(W[0]))

    def absolute(self) -> "Lin":
        """|W| (no bias) over the same L: the radius map of interval evaluation."""
        if self._abs is None:
            self._abs = Lin([[abs(a) for a in row] for row in self.A], None, self.L, self.cols)
        return self._abs

    def apply(self, v: List[int], D: int, relu: bool = False, tick=None) -> List[int]:
        """Numerators of W v/D + b over L*D, then max(0, ·) if ``relu``. With ``tick`` (the
        budget's clock), a product whose cost passes WORK_SLICE is done in ticked slices."""
        c = self.c
        if c is not None and D != 1:
            c = map(mul, c, repeat(D))
        if tick is not None:
            unit = product_cost(self.bits, max(map(int.bit_length, v), default=0))
            if unit * self.cols * self.rows > WORK_SLICE:
                return self._apply_ticked(v, None if c is None else list(c), relu, tick, unit)
        if self.T is None:
            it = (sum(map(mul, row, v)) for row in self.A)
            if c is not None:
                it = map(add, it, c)
        else:
            it, s = c, 0
            for col, k, x in zip(self.T, self.const, v):
                if x and k is not None:
                    s += k * x
                elif x:
                    t = col if x == 1 else map(mul, col, repeat(x))
                    it = t if it is None else map(add, it, t)
            if it is None:
                it = repeat(s, self.rows)
            elif s:
                it = map(add, it, repeat(s))
        return [x if x > 0 else 0 for x in it] if relu else list(it)

    def _apply_ticked(self, v: List[int], c: Optional[List[int]], relu: bool, tick, unit: int) -> List[int]:
        """``apply`` for large operands: row by row, in slices of columns of about WORK_SLICE
        cost units, the clock checked after each slice."""
        step, out = max(1, WORK_SLICE // unit), []
        for r, row in enumerate(self.A):
            acc = 0 if c is None else c[r]
            for j in range(0, self.cols, step):
                tick()
                acc += sum(map(mul, row[j:j + step], v[j:j + step]))
            out.append(acc if acc > 0 or not relu else 0)
        return out


@dataclass
class Embed:
    E: List[List[int]]  # token embeddings over L
    P: Optional[List[List[int]]]  # position embeddings over L
    L: int


@dataclass
class Affine:
    lin: Lin
    relu: bool


@dataclass
class FeedForward:
    lin1: Lin  # ReLU hidden layer
    lin2: Lin
    residual: bool


@dataclass
class Attention:
    kind: str  # softmax | hardmax | uniform | softmax2
    residual: bool
    query: str  # all | last
    keys: str  # all | others
    heads: List[Tuple[Optional[Lin], Optional[Lin], Lin, Lin]]  # (WQ, WK, WV, WO); WQ, WK None for uniform
