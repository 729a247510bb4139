"""Mahdavi et al. construction, shared pieces: exact helpers and the plan (note ``mahdavi.md`` §4).

The data types every part of the construction (``mahdavi_interpolation``,
``mahdavi_saturation``, ``mahdavi_hardmax``, ``mahdavi_readout``, ``mahdavi``) works on:
context matrices as integer flint matrices, exact column products, one head's pieces
(`HeadPlan`) and the whole design before the scale and readout (`Plan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...arith import linalg
from ...data.assumptions import SaturatedPair
from ...data.mahdavi_data import QueryContextData

Vec = Tuple[Fraction, ...]
Matrix = Tuple[Tuple[Fraction, ...], ...]


class ConstructionError(ValueError):
    """The construction cannot be completed for these data / parameters; the message says why."""


class _Retry(ConstructionError):
    """A random choice was unlucky (e.g. Z^∞ not certified full rank); redraw."""


# ----------------------------------------------------------------------------- exact helpers

def _sq_norm(row: Sequence[Fraction]) -> Fraction:
    """‖row‖², computed on integers over the row's common denominator."""
    L = math.lcm(*(x.denominator for x in row))
    return Fraction(sum((x.numerator * (L // x.denominator)) ** 2 for x in row), L * L)


def _dot(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return sum((x * y for x, y in zip(a, b) if x and y), Fraction(0))


class _Contexts:
    """The context matrices as integer flint matrices (E^(t) = N_g / L_g, one per distinct context)."""

    def __init__(self, data: QueryContextData):
        self.data = data
        distinct, key = data.context_classes()
        self.key: List[int] = list(key)
        self.rows: List[Tuple[Vec, ...]] = list(distinct)
        self.mats: List[Any] = []
        self.dens: List[int] = []
        for E in distinct:
            L = math.lcm(*(x.denominator for row in E for x in row))
            self.mats.append(linalg.fmpz_matrix([[x.numerator * (L // x.denominator) for x in row] for row in E]))
            self.dens.append(L)
        self._arbT: Dict[Any, Any] = {}

    def times_columns(self, Y: Sequence[Vec]) -> List[Vec]:
        """[E^(t) y_t for t] for d-vectors y_t, exactly (integer products over common denominators)."""
        out: List[Optional[Vec]] = [None] * len(Y)
        groups: Dict[int, List[int]] = {}
        for t in range(len(Y)):
            groups.setdefault(self.key[t], []).append(t)
        for g, ts in groups.items():
            D = math.lcm(*(x.denominator for t in ts for x in Y[t]))
            B = linalg.fmpz_matrix([list(c) for c in zip(*([x.numerator * (D // x.denominator) for x in Y[t]]
                                                           for t in ts))])
            P = self.mats[g] * B
            den = D * self.dens[g]
            ent = [int(v) for v in P.entries()]
            nc = P.ncols()
            for col, t in enumerate(ts):
                out[t] = tuple(Fraction(ent[i * nc + col], den) for i in range(P.nrows()))
        return out  # type: ignore[return-value]

    def arb_transpose(self, t: int):
        """E^(t)ᵀ as an arb_mat (d × n), cached per distinct context and precision."""
        from flint import ctx

        k = (self.key[t], ctx.prec)
        if k not in self._arbT:
            self._arbT[k] = linalg.arb_matrix(linalg.transpose(self.rows[self.key[t]]))
        return self._arbT[k]


_COLS_CACHE: Dict[int, Tuple[Any, Any, int]] = {}


def _integer_columns(X: Sequence[Vec]):
    """(fmpz matrix with columns D·x, D) for a list of rational vectors; the last few inputs are
    cached by identity (the query list is multiplied by every head's factors)."""
    hit = _COLS_CACHE.get(id(X))
    if hit is not None and hit[0] is X:
        return hit[1], hit[2]
    D = math.lcm(*(v.denominator for x in X for v in x))
    Xi = linalg.fmpz_matrix([list(c) for c in zip(*([v.numerator * (D // v.denominator) for v in x] for x in X))])
    if len(_COLS_CACHE) > 8:
        _COLS_CACHE.clear()
    _COLS_CACHE[id(X)] = (X, Xi, D)
    return Xi, D


def _matmul_cols(A: Matrix, X: Sequence[Vec]) -> List[Vec]:
    """[A x for x in X] exactly (A r × d): integer products over common denominators."""
    if not A:
        return [() for _ in X]
    LA = math.lcm(*(x.denominator for row in A for x in row))
    Ai = linalg.fmpz_matrix([[x.numerator * (LA // x.denominator) for x in row] for row in A])
    Xi, D = _integer_columns(X)
    P = Ai * Xi
    ent = [int(v) for v in P.entries()]
    nr, nc, den = P.nrows(), P.ncols(), LA * D
    return [tuple(Fraction(ent[i * nc + j], den) for i in range(nr)) for j in range(nc)]


# ----------------------------------------------------------------------------- the plan

@dataclass
class HeadPlan:
    """One head's pieces (0-based ``index``): W0 = L R, the saturating pair (u, w), exact logits."""

    index: int
    S: Tuple[int, ...]
    L: Matrix  # d × |S|
    R: Matrix  # |S| × d
    u: Optional[Vec] = None
    w: Optional[Vec] = None
    designed: Dict[int, Vec] = field(default_factory=dict)  # a_{h,t}, t ∈ S
    sat: Dict[int, SaturatedPair] = field(default_factory=dict)  # t ∉ S (h ≥ 2)
    r: List[Vec] = field(default_factory=list)  # r_{h,t} = E^(t) W0_h x^(t), every t
    g: Dict[int, Vec] = field(default_factory=dict)  # g_{h,t} = (wᵀx) E^(t) u, t ∉ S
    sigma: Dict[int, int] = field(default_factory=dict)  # hardmax design: designed token per active t


@dataclass
class Plan:
    data: QueryContextData
    H: int
    d_h: int
    k: int
    partition: List[List[int]]
    heads: List[HeadPlan]
    ctx: _Contexts
    mode: str
    design: str


def _one_hot(n: int, i: int) -> Vec:
    return tuple(Fraction(int(j == i)) for j in range(n))


def _softmax_arb(logits: Sequence[Fraction]):
    from flint import arb

    top = max(logits)
    e = [linalg.arb_of(x - top).exp() for x in logits]
    s = sum(e, arb(0))
    return [x / s for x in e]


def _hardmax(logits: Sequence[Fraction]) -> List[Fraction]:
    top = max(logits)
    idx = [i for i, x in enumerate(logits) if x == top]
    return [Fraction(1, len(idx)) if x == top else Fraction(0) for x in logits]
