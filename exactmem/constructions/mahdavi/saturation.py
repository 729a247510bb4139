"""Mahdavi et al. construction, saturation (note ``mahdavi.md`` §4.2 step 4, §4.3, §4.4).

The saturating pair (u_h, w_h) of each head h ≥ 2, the exact logits ℓ_{h,t}(c) = r + c·g,
the attention weights and feature matrix Z(c) (Z^∞ in the limit), and the certified scale c
of §4.4.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...arith import linalg
from ...data.assumptions import AssumptionError, SaturatedPair, outside_span, saturated_pairs
from ...data.mahdavi_data import QueryContextData
from .plan import (ConstructionError, Plan, Vec, _Contexts, _hardmax, _matmul_cols, _softmax_arb,
                           _sq_norm)


def saturating_query_direction(data: QueryContextData, head: int, S: Sequence[int], rng: random.Random,
                               tries: int = 50) -> Vec:
    """w_h ⊥ span X_{S_h}, integer, with w_hᵀx^(t) ≠ 0 for every t ∉ S_h (note §4.2 step 4).

    A random small-integer combination of an LLL-reduced integer basis of span(X_S)^⊥ (the
    coefficient range doubles every 4 draws). Raises
    `AssumptionError` (note §4.6 (ii)) when some x^(t), t ∉ S_h, lies in span X_S.
    """
    inside, K = outside_span(data, S)
    if inside:
        raise AssumptionError("note §4.6 (ii) queries outside the head's span",
                              f"head {head + 1}: the queries of examples {inside[:10]} lie in the span of the queries "
                              f"of its active examples {list(S)}, so no saturating direction exists", inside)
    others = [t for t in range(data.T) if t not in set(S)]
    iq = data.integer_queries()
    for attempt in range(tries):
        s = 2 ** (attempt // 4)  # wider coefficients when many examples must avoid w^⊥
        coef = [rng.randint(-s, s) if rng.random() < 0.7 else 0 for _ in K]
        if not any(coef):
            coef[rng.randrange(len(K))] = 1
        wi = [sum(c * k[i] for c, k in zip(coef, K)) for i in range(data.d)]
        if all(sum(a * b for a, b in zip(wi, iq[t]) if a) != 0 for t in others):
            return tuple(Fraction(v) for v in wi)
    raise ConstructionError(f"head {head + 1}: no saturating query direction w found in {tries} draws")


def saturating_key_direction(data: QueryContextData, head: int, S: Sequence[int], w: Vec, rng: random.Random,
                             tries: int = 24, span: int = 3, ctx: Optional["_Contexts"] = None
                             ) -> Tuple[Vec, List[SaturatedPair]]:
    """u_h with a unique argmax of g_{h,t} = (w_hᵀx^(t))·E^(t)u_h for every t ∉ S_h (note §4.2 step 4).

    Random integer vectors in [−s, s]^d, redrawn on ties (integer data do produce ties); the
    range s starts at ``span`` and doubles with every draw, since many saturated pairs need a
    finer set of directions to avoid every tie (each doubling costs one bit in W_K).
    """
    last: Optional[AssumptionError] = None
    ctx = ctx or _Contexts(data)
    wx = [col[0] for col in _matmul_cols((tuple(w),), data.queries)]
    for attempt in range(tries):
        s = span * 2 ** attempt
        u = tuple(Fraction(rng.randint(-s, s)) for _ in range(data.d))
        try:
            return u, saturated_pairs(data, head, S, u, w, ctx.times_columns([u] * data.T), wx)
        except AssumptionError as e:
            last = e
    raise ConstructionError(f"head {head + 1}: every one of {tries} random u_h gave a tie ({last})")

def logits(plan: Plan, h: int, t: int, c: Optional[Fraction]) -> Optional[Vec]:
    """ℓ_{h,t}(c) = r_{h,t} + c·g_{h,t} exactly (g = 0 on active pairs and for head 1);
    ``c=None`` (the limit) returns ``None`` for saturated pairs."""
    hp = plan.heads[h]
    if t in hp.g:
        if c is None:
            return None
        return tuple(a + c * b for a, b in zip(hp.r[t], hp.g[t]))
    return hp.r[t]


def attention_weights(plan: Plan, c: Optional[Fraction]) -> List[List[list]]:
    """s_{h,t}(c): arb balls (softmax mode) or Fractions (hardmax mode); ``c=None`` is the
    limit c → ∞ (saturated pairs become e_{j_h(t)}, note §4.3). Returns ``[t][h]``."""
    out = []
    for t in range(plan.data.T):
        row = []
        for h, hp in enumerate(plan.heads):
            ell = logits(plan, h, t, c)
            if ell is None:
                j = hp.sat[t].j
                row.append([Fraction(int(i == j)) for i in range(plan.data.n)])
            elif plan.mode == "hardmax":
                row.append(_hardmax(ell))
            else:
                row.append(_softmax_arb(ell))
        out.append(row)
    return out


def feature_matrix_arb(plan: Plan, c: Optional[Fraction]):
    """Z(c) (note §1.4) as an arb_mat (Hd × T): z_{h,t} = E^(t)ᵀ s_{h,t}(c); ``c=None`` gives Z^∞."""
    from flint import arb_mat

    d, H, T = plan.data.d, plan.H, plan.data.T
    Z = arb_mat(H * d, T)
    W = attention_weights(plan, c)
    for t in range(T):
        Et = plan.ctx.arb_transpose(t)
        for h in range(H):
            s = W[t][h]
            col = arb_mat([[x if not isinstance(x, Fraction) else linalg.arb_of(x)] for x in s])
            z = Et * col
            for i in range(d):
                Z[h * d + i, t] = z[i, 0]
    return Z


def feature_matrix_exact(plan: Plan, c: Optional[Fraction]) -> List[List[Fraction]]:
    """Z(c) exactly (hardmax mode): columns z_t = [E^(t)ᵀ s_{h,t}]_h as a list of T columns."""
    if plan.mode != "hardmax":
        raise ConstructionError("exact feature matrices exist only for hardmax attention")
    W = attention_weights(plan, c)
    cols = []
    for t in range(plan.data.T):
        E = plan.data.contexts[t]
        col: List[Fraction] = []
        for h in range(plan.H):
            s = W[t][h]
            col.extend(sum((p * row[i] for p, row in zip(s, E) if p), Fraction(0)) for i in range(plan.data.d))
        cols.append(col)
    return cols


# ----------------------------------------------------------------------------- §4.4 the scale

@dataclass
class ScaleCertificate:
    """The certified bound of note §4.4 and the inputs that produced it (all exact rationals)."""

    sigma_lower: Fraction  # certified σ_min(Z^∞) ≥ sigma_lower
    B_max: Fraction  # ≥ max context-token 2-norm
    n_sat: int
    delta_min: Fraction
    rho_max: Fraction  # max ‖r_{h,t}‖_∞ over saturated pairs
    c_bound: Fraction  # the right-hand side of §4.4 (an upper bound of it)
    c: Fraction  # the chosen scale, least integer ≥ max(1, c_bound)

    def to_dict(self) -> Dict[str, str]:
        return {k: str(v) for k, v in self.__dict__.items()}


def certified_scale(plan: Plan, sigma_lower: Fraction) -> ScaleCertificate:
    """c from note §4.4: c ≥ max_{sat (h,t)} [ln(2(n−1)·B_max·√N_sat/σ) + 2‖r_{h,t}‖_∞]/Δ_{h,t}.

    Every ingredient is an exact rational or a rigorous upper bound (√ and ln from Arb), so
    c ≥ the true bound; with σ ≤ σ_min(Z^∞) Weyl's inequality gives rank Z(c) = T.
    """
    data = plan.data
    n = data.n
    B2 = max(_sq_norm(row) for E in data.context_classes()[0] for row in E)
    B = linalg.sqrt_upper(B2)
    pairs = [(hp, t) for hp in plan.heads for t in hp.sat]
    N = len(pairs)
    if N == 0 or n == 1:
        return ScaleCertificate(sigma_lower, B, N, Fraction(0), Fraction(0), Fraction(0), Fraction(1))
    arg = 2 * (n - 1) * B * linalg.sqrt_upper(N) / sigma_lower
    lg = linalg.log_upper(arg)
    bound = None
    dmin = rmax = None
    for hp, t in pairs:
        sp = hp.sat[t]
        rho = max(abs(x) for x in hp.r[t])
        val = (lg + 2 * rho) / sp.gap
        bound = val if bound is None else max(bound, val)
        dmin = sp.gap if dmin is None else min(dmin, sp.gap)
        rmax = rho if rmax is None else max(rmax, rho)
    c = Fraction(max(1, math.ceil(bound)))
    return ScaleCertificate(sigma_lower, B, N, dmin, rmax, bound, c)
