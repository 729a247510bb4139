"""Dana, Pydi & Chevaleyre, Theorem 1: the best sequence encoder exactmem can construct, and its distance to optimum.

The optimum is d_KL(π, L(N,S,d)) (Lemma 1's minimiser, which the paper does not construct).

* **Upper bound** (`optimized_encoder`): minimise d_KL(π, f_{W,E}) = Σ_t π(t)[lse(W e_t) −
  π_tᵀW e_t − h_t] by block-coordinate Newton (each block — one e_t, or W — is a convex problem),
  from the float SVD start and seeded random starts, in FLOATS: a design choice only. The result is
  rounded to dyadic rationals and its d_KL is then enclosed rigorously (Arb): U ≥ d_KL(π, L).
* **Lower bound** (`lower_bound_codim1`, d = N − 2): softmax depends on the centred logits,
  so d_KL(π, L) = inf over subspaces V ⊆ 1^⊥ of dimension ≤ N − 2 of Σ_t π(t) inf_{z∈V} KL_t(z),
  and every such V lies in n^⊥ ∩ 1^⊥ for a nonzero n ⊥ 1. For z ⊥ n and q_t = π_t + τ_t n in the
  simplex, Gibbs' inequality lse(z) ≥ qᵀz + H(q) and qᵀz = π_tᵀz give KL_t(z) ≥ H(q_t) − H(π_t).
  Hence d_KL(π, L) ≥ min_n Σ_t π(t)[H(π_t + τ_t n) − H(π_t)] for any choice of τ_t(n); n = B u
  (B's columns e_i − e_N) with u on the faces u_i = 1 of the cube (n and −n give the same V).
  Branch and bound over those faces: on each box of u, τ_t is fixed (a float maximiser at the
  centre, a design choice) and the sum is enclosed over the whole box in Arb ball arithmetic;
  the box with the smallest enclosure is split until the budget is spent. L = the smallest
  lower end over the remaining boxes is a rigorous lower bound (producer-checked: the kernel's
  expression language has no variables ranging over a box).
"""

from __future__ import annotations

import heapq
import math
import random
from fractions import Fraction
from typing import Dict, List, Sequence, Tuple

from ...data.dana_data import Conditionals
from ...data.dataset import DataError


def _loss_grad(W, E, P, w):
    import numpy as np

    Z = E @ W.T  # T × N logits
    m = Z.max(axis=1, keepdims=True)
    Q = np.exp(Z - m)
    Q /= Q.sum(axis=1, keepdims=True)
    lse = (m[:, 0] + np.log(np.exp(Z - m).sum(axis=1)))
    loss = float((w * (lse - (P * Z).sum(axis=1))).sum())
    return loss, Q


def _newton_blocks(W, E, P, w, iters: int = 300):
    """Block-coordinate damped Newton on (E rows, then W); returns (W, E, loss)."""
    import numpy as np

    T, d = E.shape
    N = W.shape[0]
    loss, Q = _loss_grad(W, E, P, w)
    for _ in range(iters):
        old = loss
        # E-step: each e_t separately (convex in e_t)
        for t in range(T):
            for _ in range(3):
                q = Q[t]
                g = w[t] * W.T @ (q - P[t])
                Hs = w[t] * W.T @ (np.diag(q) - np.outer(q, q)) @ W + 1e-12 * np.eye(d)
                step = np.linalg.solve(Hs, g)
                e0 = E[t].copy()
                f0 = _row_loss(W, e0, P[t])
                a = 1.0
                while a > 1e-8:
                    E[t] = e0 - a * step
                    if _row_loss(W, E[t], P[t]) <= f0:
                        break
                    a /= 2
                else:
                    E[t] = e0
                z = W @ E[t]
                z = np.exp(z - z.max())
                Q[t] = z / z.sum()
        # W-step (convex in W for fixed E)
        loss, Q = _loss_grad(W, E, P, w)
        G = ((w[:, None] * (Q - P)).T @ E)  # N × d
        Hm = np.zeros((N * d, N * d))
        for t in range(T):
            S = np.diag(Q[t]) - np.outer(Q[t], Q[t])
            Hm += w[t] * np.kron(S, np.outer(E[t], E[t]))
        Hm += 1e-12 * np.eye(N * d)
        step = np.linalg.solve(Hm, G.reshape(-1)).reshape(N, d)
        W0, a = W.copy(), 1.0
        while a > 1e-8:
            W = W0 - a * step
            new, Qn = _loss_grad(W, E, P, w)
            if new <= loss:
                loss, Q = new, Qn
                break
            a /= 2
        else:
            W = W0
        if old - loss < 1e-15:
            break
    return W, E, loss


def _row_loss(W, e, p):
    import numpy as np

    z = W @ e
    m = z.max()
    return float(m + np.log(np.exp(z - m).sum()) - p @ z)


def optimized_encoder(data: Conditionals, d: int, seed: int = 0, starts: int = 6,
                      w_bits: int = 24, e_bits: int = 32, *,
                      targets: Sequence[Sequence[Fraction]]) -> Tuple[List[List[Fraction]], List[List[Fraction]]]:
    """The best rank-d encoder found (module docstring), rounded to dyadics: (W, E) exact.
    ``targets``: the centred log-probabilities ℓ(t) to fit,
    `.dana_distribution.log_prob_targets` of ``data`` (passed in, so that this module does
    not import ``dana_distribution``, which imports it)."""
    import numpy as np

    N = data.N
    P = np.array([[float(p) for p in c] for c in data.conditionals])
    w = np.array([float(x) for x in data.prior])
    L = np.array([[float(x) for x in l] for l in targets])
    rng = np.random.default_rng(seed)
    inits = []
    U, s, Vt = np.linalg.svd(L.T * np.sqrt(w)[None, :], full_matrices=False)
    W0 = U[:, :d]
    inits.append((W0.copy(), L @ W0))
    for _ in range(starts):
        Wr = rng.normal(size=(N, d))
        inits.append((Wr, rng.normal(size=(len(data), d))))
    best = None
    for W, E in inits:
        W, E, loss = _newton_blocks(W.copy(), E.copy(), P, w)
        if best is None or loss < best[2]:
            best = (W, E, loss)
    W, E, _ = best
    scale = np.abs(W).max() or 1.0  # keep W's entries O(1): (W/s)(s E) is the same encoder
    W, E = W / scale, E * scale
    Wq = [[Fraction(round(float(x) * 2 ** w_bits), 2 ** w_bits) for x in r] for r in W]
    Wf = np.array([[float(x) for x in r] for r in Wq])
    Wf, E, _ = _newton_blocks(Wf, E, P, w, iters=1)  # re-fit E to the rounded W (W-step kept only if better)
    Eq = [[Fraction(round(float(x) * 2 ** e_bits), 2 ** e_bits) for x in r] for r in E]
    Wq = [[Fraction(float(x)) for x in r] for r in Wf]  # exact dyadics (the float's own value)
    return Wq, Eq


# ------------------------------------------------------------------ the lower bound (d = N − 2)

def _entropy_f(q) -> float:
    return -sum(x * math.log(x) for x in q if x > 0)


def _best_tau(p: Sequence[float], n: Sequence[float], margin: float) -> float:
    """A float maximiser of τ ↦ H(p + τ n) on the range keeping every p_j + τ n_j ≥ margin·p_j
    (the derivative −Σ n_j log q_j is decreasing: bisection). A design choice, not a verdict."""
    lo = max((-(1 - margin) * pj / nj for pj, nj in zip(p, n) if nj > 0), default=-1e9)
    hi = min(((1 - margin) * pj / -nj for pj, nj in zip(p, n) if nj < 0), default=1e9)
    if lo >= hi:
        return 0.0

    def der(t):
        return -sum(nj * math.log(pj + t * nj) for pj, nj in zip(p, n) if nj)

    if der(lo) <= 0:
        return lo
    if der(hi) >= 0:
        return hi
    for _ in range(60):
        mid = (lo + hi) / 2
        if der(mid) > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _box_bound(data: Conditionals, face: int, box: Sequence[Tuple[Fraction, Fraction]], hs, prec: int = 96):
    """A rigorous lower bound of Σ_t π(t)[H(π_t + τ_t n) − h_t] over every u in the box (u_face = 1).

    With τ_t fixed, u ↦ Σ_t π(t) H(π_t + τ_t B u) is concave (entropy is concave, the argument
    affine), so its minimum over the box is attained at a vertex: the bound is the smallest value
    over the 2^(N−2) vertices, each an Arb evaluation at exact rational points. A sequence whose
    q_t leaves the open simplex at some vertex gets τ_t = 0 (it then adds exactly 0); the simplex
    is convex, so q_t > 0 at every vertex keeps it inside over the whole box."""
    from itertools import product

    from flint import arb, ctx

    from ...arith.linalg import lower_fraction
    from .association import _arb

    N = data.N
    mid = [(a + b) / 2 for a, b in box]
    nc = [float(x) for x in _full(face, mid, N)]
    verts = [_full(face, v, N) for v in product(*box)]
    old = ctx.prec
    ctx.prec = prec
    try:
        totals = [arb(0) for _ in verts]
        for wt, c, h in zip(data.prior, data.conditionals, hs):
            tau = Fraction(_best_tau([float(x) for x in c], nc, 1e-3)).limit_denominator(2 ** 40)
            if tau == 0:
                continue
            qs = [[p + tau * x for p, x in zip(c, n)] for n in verts]
            if any(q <= 0 for qv in qs for q in qv):
                continue  # τ_t = 0 for this sequence: it adds exactly 0
            for k, qv in enumerate(qs):
                Hq = arb(0)
                for q in qv:
                    qb = _arb(q)
                    Hq -= qb * qb.log()
                totals[k] += _arb(wt) * (Hq - h)
        return min(lower_fraction(x) for x in totals)
    finally:
        ctx.prec = old


def _full(face: int, v: Sequence[Fraction], N: int) -> List[Fraction]:
    """n = B u for u with u_face = 1 and the other coordinates v: n_j = u_j, n_{N−1} = −Σ u_j."""
    u = list(v[:face]) + [Fraction(1)] + list(v[face:])
    return u + [-sum(u)]


def lower_bound_codim1(data: Conditionals, budget: int = 2000, prec: int = 96) -> Dict[str, object]:
    """Rigorous L ≤ d_KL(π, L(N, S, N − 2)) by branch and bound (module docstring)."""
    from flint import ctx

    from .association import _arb

    N = data.N
    if N < 3:
        raise DataError("the codimension-1 lower bound needs N ≥ 3")
    old = ctx.prec
    ctx.prec = prec
    try:
        hs = []
        for c in data.conditionals:
            h = _arb(Fraction(0))
            for p in c:
                if p:
                    h -= _arb(p) * _arb(p).log()
            hs.append(h)
    finally:
        ctx.prec = old
    heap = []
    cnt = 0
    for face in range(N - 1):
        box = tuple((Fraction(-1), Fraction(1)) for _ in range(N - 2))
        heapq.heappush(heap, (_box_bound(data, face, box, hs, prec), cnt, face, box))
        cnt += 1
    evals = N - 1
    while evals < budget:
        lb, _, face, box = heapq.heappop(heap)
        # split the widest side in two
        i = max(range(len(box)), key=lambda j: box[j][1] - box[j][0]) if box else None
        if i is None:
            heapq.heappush(heap, (lb, cnt, face, box))
            break
        a, b = box[i]
        for half in ((a, (a + b) / 2), ((a + b) / 2, b)):
            nb = box[:i] + (half,) + box[i + 1:]
            heapq.heappush(heap, (max(lb, _box_bound(data, face, nb, hs, prec)), cnt, face, nb))
            cnt += 1
            evals += 1
    L = heap[0][0]
    return {"lower": max(L, Fraction(0)), "boxes": len(heap), "evaluations": evals}
