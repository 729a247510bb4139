"""The model as the kernel holds it: integer linear maps and the four layer types (public API:
accelerators read these classes, never build them). W and b are integers over their lcm L of
denominators; applied to a column ``nums / D`` they give integer numerators over ``L * D``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import repeat
from math import lcm
from operator import add, mul
from typing import List, Optional, Tuple


def over_lcm(rows: List[List[Fraction]]) -> Tuple[List[List[int]], int]:
    """Rows of rationals as integers over their least common denominator L: (rows · L, L)."""
    L = lcm(*(x.denominator for row in rows for x in row))
    return [[x.numerator * (L // x.denominator) for x in row] for row in rows], L


class Lin:
    """x ↦ W x + b over exact columns; ``A`` = L·W, ``c`` = L·b (integers), ``cols`` inputs. Tall matrices
    (rows ≥ 8·cols) are applied column by column (C-level ``map`` chains; an all-equal column is a scalar)."""

    def __init__(self, A: List[List[int]], c: Optional[List[int]], L: int, cols: int):
        self.A, self.c, self.L, self.cols, self.rows = A, c, L, cols, len(A)
        self.T = self.const = self._abs = None
        if cols * 8 <= self.rows:
            self.T = [list(t) for t in zip(*A)]
            self.const = [t[0] if t.count(t[0]) == len(t) else None for t in self.T]

    @staticmethod
    def make(W: List[List[Fraction]], b: Optional[List[Fraction]]) -> "Lin":
        rows, L = over_lcm(W if b is None else W + [b])
        return Lin(rows[:len(W)], None if b is None else rows[-1], L, len(W[0]))

    def absolute(self) -> "Lin":
        """|W| (no bias) over the same L: the radius map of interval evaluation."""
        if self._abs is None:
            self._abs = Lin([[abs(a) for a in row] for row in self.A], None, self.L, self.cols)
        return self._abs

    def apply(self, v: List[int], D: int, relu: bool = False) -> List[int]:
        """Numerators of W v/D + b over L*D, then max(0, ·) if ``relu``."""
        c = self.c
        if c is not None and D != 1:
            c = map(mul, c, repeat(D))
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
