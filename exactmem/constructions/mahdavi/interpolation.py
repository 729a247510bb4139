"""Mahdavi et al. construction, the interpolating part W0_h = L_h R_h (note ``mahdavi.md`` §4.2 steps 2–3).

``design="solve"``: the note verbatim (designed logits, least-norm values, W0 = V(X_SᵀX_S)⁻¹X_Sᵀ);
``design="factored"``: the same family by its low-bit factors. Also the exact offsets
r_{h,t} = E^(t)W0_h x^(t) of every example.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...arith import linalg
from ...data.assumptions import AssumptionError
from ...data.mahdavi_data import QueryContextData
from .plan import ConstructionError, Matrix, Vec, _Contexts, _matmul_cols


def interpolating_part_solve(data: QueryContextData, S: Sequence[int], designed: Dict[int, Vec]) -> Tuple[Matrix, Matrix]:
    """W0 = V (X_SᵀX_S)⁻¹ X_Sᵀ with v_t = E^(t)ᵀ(E^(t)E^(t)ᵀ)⁻¹ a_t (note §4.2 steps 2–3): factors (L, R).

    L = V (X_SᵀX_S)⁻¹ (d × |S|), R = X_Sᵀ (|S| × d); then W0 x^(t) = v_t for t ∈ S.
    """
    S = list(S)
    if not S:
        return (), ()
    XS_T = tuple(data.queries[t] for t in S)  # |S| × d
    G = linalg.gram(linalg.transpose(XS_T))
    if linalg.rank(G) < len(S):
        raise AssumptionError("note §4.6 (i) independent queries per head",
                              f"the queries of examples {S} are linearly dependent", S)
    V = [linalg.least_norm_solution(data.contexts[t], designed[t]) for t in S]  # columns v_t
    Ginv = linalg.inverse(G)
    L = linalg.matmul(linalg.transpose(V), Ginv)  # d × |S|
    return L, XS_T


def interpolating_part_values(data: QueryContextData, S: Sequence[int], V: Dict[int, Vec]) -> Tuple[Matrix, Matrix]:
    """W0 = V (X_SᵀX_S)⁻¹ X_Sᵀ for given values v_t = W0 x^(t), t ∈ S (note §4.2 step 3): (L, R)."""
    S = list(S)
    if not S:
        return (), ()
    XS_T = tuple(data.queries[t] for t in S)
    G = linalg.gram(linalg.transpose(XS_T))
    if linalg.rank(G) < len(S):
        raise AssumptionError("note §4.6 (i) independent queries per head",
                              f"the queries of examples {S} are linearly dependent", S)
    L = linalg.matmul(linalg.transpose([V[t] for t in S]), linalg.inverse(G))
    return L, XS_T


def interpolating_part_factored(data: QueryContextData, S: Sequence[int], rng: random.Random,
                                target: int = 2, nnz: int = 3, ctx: Optional["_Contexts"] = None
                                ) -> Tuple[Matrix, Matrix]:
    """W0 = λ·L'R' with R' random in {−1, 0, 1}, L' with ``nnz`` random ±1 entries per column,
    and λ = 2^−e so that the active logits E^(t)W0x^(t), t ∈ S, are at most ``target`` in
    absolute value (a low-bit parametrisation of the family of note §4.2). L' is sparse
    because W_K = [λL'ᵀ; c·uᵀ] is applied to every context token."""
    S = list(S)
    if not S:
        return (), ()
    d, r = data.d, len(S)
    for _ in range(20):
        Lt = [[Fraction(0)] * d for _ in range(r)]  # L'ᵀ: r sparse rows (the key side)
        for row in Lt:
            for i in rng.sample(range(d), min(d, nnz)):
                row[i] = Fraction(rng.choice((-1, 1)))
        Lp = linalg.transpose(Lt)
        Rp = tuple(tuple(Fraction(rng.choice((-1, 0, 1))) for _ in range(d)) for _ in range(r))
        if linalg.rank(Lp) == r and linalg.rank(Rp) == r:
            break
    else:
        raise ConstructionError("could not draw full-rank {-1,0,1} factors")
    W0x = _matmul_cols(Lp, _matmul_cols(Rp, [data.queries[t] for t in S]))
    sub = ctx or _Contexts(data)
    full = [W0x[S.index(t)] if t in S else tuple(Fraction(0) for _ in range(d)) for t in range(data.T)]
    act = sub.times_columns(full)
    top = max((abs(x) for t in S for x in act[t]), default=0)
    e = 0
    while top > target * (2 ** e):
        e += 1
    lam = Fraction(1, 2 ** e)
    return tuple(tuple(x * lam for x in row) for row in Lp), Rp


def random_designed_logits(n: int, rng: random.Random, span: int = 1) -> Vec:
    """Designed logits a_{h,t}: small random integers (note §4.2 step 2), not all equal."""
    while True:
        a = tuple(Fraction(rng.randint(-span, span)) for _ in range(n))
        if len(set(a)) > 1 or n == 1:
            return a


def _offsets(plan_ctx: _Contexts, data: QueryContextData, L: Matrix, R: Matrix) -> List[Vec]:
    """r_{h,t} = E^(t) W0_h x^(t) for every t, exactly."""
    if not L:
        return [tuple(Fraction(0) for _ in range(data.n)) for _ in range(data.T)]
    Rx = _matmul_cols(R, data.queries)
    W0x = _matmul_cols(L, Rx)
    return plan_ctx.times_columns(W0x)
