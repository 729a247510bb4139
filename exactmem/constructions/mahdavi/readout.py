"""Mahdavi et al. construction, the readout and the layer (note ``mahdavi.md`` §4.5).

A Z(c) = Y: from a ball enclosure of Z(c) (softmax; dyadic A with a certified residual) or
exactly (hardmax); then M_h(c) = W_Kᵀ W_Q is factored with d_h rows and the readout blocks
become W_V.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, List, Optional, Sequence, Tuple

from ...arith import linalg
from ...model.layers import Affine, Attention, Head, Model
from .plan import ConstructionError, Matrix, Plan, Vec


def readout_from_enclosure(Z, y: Sequence[Fraction], eps: Fraction, col_l1: Fraction = Fraction(1),
                           q0: Optional[int] = None, max_rounds: int = 12) -> Tuple[List[Fraction], int, Fraction]:
    """A dyadic readout A (grid 2^−q) with max_t |A z_t − y_t| certified ≤ eps/2 for every Z in the balls.

    A is the least-norm solution for the midpoint matrix (computed in Arb, then frozen),
    rounded to multiples of 2^−q; q grows until Arb certifies the residual bound.
    Returns (A, q, certified residual upper bound).
    """
    from flint import arb_mat

    Zm = Z.mid()
    G = Zm.transpose() * Zm
    Y = arb_mat([[linalg.arb_of(v)] for v in y])
    try:
        alpha = G.solve(Y)
    except (ZeroDivisionError, ValueError) as e:
        raise ConstructionError(f"readout: the Gram matrix of Z(c) is not invertible at this precision ({e})")
    Za = Zm * alpha
    A_mid = [linalg.mid_fraction(Za[i, 0]) for i in range(Zm.nrows())]
    if q0 is None:  # a starting grid: rounding A by 2^-(q+1) moves A z_t by <= 2^-(q+1)·‖z_t‖₁
        q0 = max(1, math.ceil(math.log2(max(col_l1 / eps, 1)))) + 2
    q = q0
    for _ in range(max_rounds):
        scale = 2 ** q
        A = [Fraction(round(a * scale), scale) for a in A_mid]
        Ar = arb_mat([[linalg.arb_of(a) for a in A]])
        res = Ar * Z
        worst = max(linalg.upper_fraction(abs(res[0, t] - linalg.arb_of(v))) for t, v in enumerate(y))
        if worst <= eps / 2:
            return A, q, worst
        q += 4
    raise ConstructionError(f"readout: residual {float(worst):.3g} not certified below eps/2 = {eps / 2} "
                            "(Z(c) too ill-conditioned for the working precision)")


def readout_exact(cols: List[List[Fraction]], y: Sequence[Fraction]) -> Tuple[List[Fraction], List[int]]:
    """Exact readout for an exact Z (columns): A supported on T independent rows I, A_I = Y Z_I⁻¹."""
    rows = linalg.independent_rows(linalg.transpose(cols))  # rows of Z = transpose of the column list
    T = len(cols)
    if len(rows) < T:
        raise ConstructionError(f"exact rank of Z is {len(rows)} < T = {T}: no exact readout")
    ZI_T = [[cols[t][i] for i in rows] for t in range(T)]  # Z_Iᵀ (T × T)
    sol = linalg.solve(ZI_T, [[v] for v in y])
    A = [Fraction(0)] * len(cols[0])
    for i, r in zip(rows, sol):
        A[i] = r[0]
    return A, rows

def _column_l1_bound(plan: Plan) -> Fraction:
    """‖z_t‖₁ ≤ H·max ‖context row‖₁ (each z_{h,t} is a convex combination of context rows)."""
    best = Fraction(0)
    for E in plan.data.context_classes()[0]:
        for row in E:
            L = math.lcm(*(x.denominator for x in row))
            best = max(best, Fraction(sum(abs(x.numerator) * (L // x.denominator) for x in row), L))
    return plan.H * best


def _pad(rows: List[Vec], d_h: int, d: int) -> Matrix:
    if len(rows) > d_h:
        raise ConstructionError(f"a head needs {len(rows)} query/key rows but d_h = {d_h}")
    zero = tuple(Fraction(0) for _ in range(d))
    return tuple(rows) + (zero,) * (d_h - len(rows))


def _assemble(plan: Plan, c: Fraction, A: Sequence[Fraction]) -> Model:
    """Factor M_h(c) = W_Kᵀ W_Q (d_h rows, zero-padded) and attach the readout blocks A_h = W_V (note §4.5)."""
    data, d = plan.data, plan.data.d
    heads = []
    for h, hp in enumerate(plan.heads):
        q_rows = [tuple(r) for r in hp.R]
        k_rows = [tuple(r) for r in linalg.transpose(hp.L)] if hp.L else []
        if hp.w is not None:
            q_rows.append(hp.w)
            k_rows.append(tuple(c * x for x in hp.u))
        WQ = _pad(q_rows, plan.d_h, d)
        WK = _pad(k_rows, plan.d_h, d)
        WV = (tuple(A[h * d:(h + 1) * d]),)
        heads.append(Head(WV=WV, WO=((Fraction(1),),), WQ=WQ, WK=WK))
    kind = "hardmax" if plan.mode == "hardmax" else "softmax"
    layers: List[Any] = [Attention(tuple(heads), kind=kind, residual=False, query="last", keys="others")]
    decode = "identity"
    if data.label_kind == "class":
        C = data.num_classes
        layers.append(Affine(tuple((Fraction(j),) for j in range(C)), tuple(Fraction(-j * j, 2) for j in range(C))))
        decode = "argmax"
    return Model(tuple(layers), input_type="vectors", input_dim=d, readout="last", decode=decode,
                 name=f"mahdavi-{plan.mode}-H{plan.H}-n{data.n}-d{d}-dh{plan.d_h}")
