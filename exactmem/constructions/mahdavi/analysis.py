"""Mahdavi et al.: the structural claims of note ``mahdavi.md`` §3.2, measured.

Feature matrices Z for *random* key/query weights (base-2 softmax and hardmax exactly,
natural softmax in balls), the shared-context bound rank Z ≤ H(n − 1) + 1 and a certified
rank lower bound.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import List, Sequence

from ...arith import linalg
from ...data.mahdavi_data import QueryContextData
from .plan import ConstructionError, _Contexts, _hardmax, _matmul_cols, _softmax_arb


def shared_context_rank_bound(H: int, n: int) -> int:
    """rank Z ≤ H(n − 1) + 1 for any weights when all examples share one context (note §3.2)."""
    return H * (n - 1) + 1


def _base2_weights(logits: Sequence[Fraction]) -> List[Fraction]:
    """Base-2 softmax 2^ℓ_i / Σ_j 2^ℓ_j for integer logits: exact rationals."""
    if any(x.denominator != 1 for x in logits):
        raise ConstructionError("base-2 softmax is rational only for integer logits")
    top = max(logits)
    p = [Fraction(2) ** int(x - top) for x in logits]
    s = sum(p)
    return [x / s for x in p]


def random_weight_features(data: QueryContextData, H: int, d_h: int, seed: int, attention: str = "base2",
                           weight_range: int = 1):
    """Z for *random* integer key/query weights (W_Q, W_K ∈ [−r, r]^{d_h×d}), note §3.2's setting.

    ``attention``: ``"base2"`` (2^ℓ/Σ2^ℓ, exact rationals for integer logits), ``"hardmax"``
    (exact) — returns the exact columns; ``"softmax"`` returns an arb_mat (balls).
    """
    rng = random.Random(seed)
    ctx = _Contexts(data)
    logits_all = []
    for _ in range(H):
        WQ = [[Fraction(rng.randint(-weight_range, weight_range)) for _ in range(data.d)] for _ in range(d_h)]
        WK = [[Fraction(rng.randint(-weight_range, weight_range)) for _ in range(data.d)] for _ in range(d_h)]
        M = linalg.matmul(linalg.transpose(WK), WQ)  # d × d, M = WKᵀ WQ
        logits_all.append(ctx.times_columns(_matmul_cols(M, data.queries)))
    if attention == "softmax":
        from flint import arb_mat

        Z = arb_mat(H * data.d, data.T)
        for t in range(data.T):
            Et = ctx.arb_transpose(t)
            for h in range(H):
                s = _softmax_arb(logits_all[h][t])
                z = Et * arb_mat([[x] for x in s])
                for i in range(data.d):
                    Z[h * data.d + i, t] = z[i, 0]
        return Z
    weight = {"base2": _base2_weights, "hardmax": _hardmax}.get(attention)
    if weight is None:
        raise ConstructionError(f"unknown attention {attention!r}; use base2, hardmax or softmax")
    cols = []
    for t in range(data.T):
        E = data.contexts[t]
        col: List[Fraction] = []
        for h in range(H):
            s = weight(logits_all[h][t])
            col.extend(sum((p * row[i] for p, row in zip(s, E) if p), Fraction(0)) for i in range(data.d))
        cols.append(col)
    return cols


def certified_rank_at_least(Z, r: int) -> bool:
    """True if the first r columns of the ball matrix Z are certified independent (σ_min > 0),
    hence rank Z ≥ r for every matrix in the balls."""
    if r == 0:
        return True
    from flint import arb_mat

    S = arb_mat(Z.nrows(), r)
    for i in range(Z.nrows()):
        for j in range(r):
            S[i, j] = Z[i, j]
    return linalg.sigma_min_lower(S) is not None
