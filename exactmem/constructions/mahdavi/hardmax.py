"""Mahdavi et al. construction, the exact hardmax limit (note ``mahdavi.md`` §4.3, §4.4).

Designed tokens σ(h,t) following the induction of §4.4 (searched modulo a prime), small
integer vectors v with argmax(E v) = σ, and the least integer scale c at which hardmax picks
the limit token of every saturated pair.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import List, Sequence

from ...arith import linalg
from .plan import ConstructionError, Plan, Vec, _Retry, _dot, _hardmax, _one_hot


def argmax_vector(E: Sequence[Vec], sigma: int, rng: random.Random, tries: int = 400) -> Vec:
    """A small integer v with E v having its unique maximum at row ``sigma`` (designed logits
    a = E v for a one-hot design, without the (EEᵀ)⁻¹ denominators of the least-norm solution);
    falls back to v = Eᵀ(EEᵀ)⁻¹e_σ."""
    d = len(E[0])
    for attempt in range(tries):
        s = 1 + attempt // 50
        v = tuple(Fraction(rng.randint(-s, s)) for _ in range(d))
        a = [_dot(row, v) for row in E]
        top = max(a)
        if a[sigma] == top and a.count(top) == 1:
            return v
    return linalg.least_norm_solution(E, _one_hot(len(E), sigma))


def hardmax_scale(plan: Plan) -> Fraction:
    """The least integer c ≥ 1 with c·(g_j − g_i) > r_i − r_j for every saturated pair and i ≠ j:
    exactly the condition under which hardmax(c·g + r) = e_j (the limit token)."""
    need = Fraction(0)
    for hp in plan.heads:
        for t, sp in hp.sat.items():
            g, r = hp.g[t], hp.r[t]
            for i in range(plan.data.n):
                if i != sp.j:
                    need = max(need, (r[i] - r[sp.j]) / (g[sp.j] - g[i]))
    return Fraction(max(1, math.floor(need) + 1))

def _choose_tokens_for_head1(plan: Plan, rng: random.Random) -> None:
    """Designed tokens σ(1,t), t ∈ S_1, with independent rows (base case of note §4.4)."""
    data, hp = plan.data, plan.heads[0]
    span = linalg.SpanModP(data.d)
    for t in hp.S:
        start = rng.randrange(data.n)
        for s in range(data.n):
            i = (start + s) % data.n
            if span.try_add(linalg.integer_column(data.contexts[t][i])):
                hp.sigma[t] = i
                break
        else:
            raise ConstructionError(f"head 1: no context token of example {t} is independent of the other designed "
                                    "tokens (should not happen under Assumption 2)")


def _block(plan: Plan, h: int, t: int) -> List[Fraction]:
    """Head h's block of column z_t where it is already fixed (limit values)."""
    hp = plan.heads[h]
    E = plan.data.contexts[t]
    if t in hp.sat:
        return list(E[hp.sat[t].j])
    if t in hp.sigma:
        return list(E[hp.sigma[t]])
    s = _hardmax(hp.r[t])  # head 1 on t ∉ S_1
    return [sum((p * row[i] for p, row in zip(s, E) if p), Fraction(0)) for i in range(plan.data.d)]


def _choose_tokens_for_head(plan: Plan, h: int, rng: random.Random) -> None:
    """Designed tokens σ(h,t), t ∈ S_h: each new column of Z^∞[heads ≤ h, U_{h−1} ∪ S_h] must
    leave the span of the previous ones — the induction step of note §4.4, where some token
    always works (the n tokens are affinely independent, the span has dimension ≤ n − 2)."""
    data, hp = plan.data, plan.heads[h]
    span = linalg.SpanModP((h + 1) * data.d)
    done = [t for S in plan.partition[:h] for t in S]
    for t in done:
        col = [x for g in range(h + 1) for x in _block(plan, g, t)]
        if not span.try_add(linalg.integer_column(col)):
            raise _Retry(f"head {h + 1}: earlier columns became dependent modulo p")
    for t in hp.S:
        fixed = [x for g in range(h) for x in _block(plan, g, t)]
        start = rng.randrange(data.n)
        for s in range(data.n):
            i = (start + s) % data.n
            if span.try_add(linalg.integer_column(fixed + list(data.contexts[t][i]))):
                hp.sigma[t] = i
                break
        else:
            raise _Retry(f"head {h + 1}, example {t}: no designed token extends the rank modulo p")
