"""Dana, Pydi & Chevaleyre: Theorem 2 where it says something — instances with d < N − 1.

Theorem 2 bounds d_KL(π, L(N,S,d)); for d ≥ N − 1 that infimum is 0 (Prop. 2) and the bound is
trivially true. Here d < N − 1 and π is chosen so that d_KL(π, L) > 0 is *proved* on the instance:
with S = 1, sequences t = 0..N−1, the look-up table g(t) = t and

    π(t | t) = 1 − η_t,   π(j | t) = η_t · w_j / Σ_{k≠t} w_k   (w_j = 4 if W_jᵀW_t ≠ 0, else 1),

the log-probability matrix is (per row, up to the constant ln ρ_far(t), which centring removes)
α_t e_t + ln 4 · 1_near(t) with α_t = ln((1 − η_t)/ρ_far(t)). Strict row diagonal dominance
α_t > |near(t)| ln 4 makes it invertible (Levy–Desplanques), so the centred matrix has rank
≥ N − 1 > d and no encoder of embedding dimension d reaches π (Prop. 2's closedness argument:
d_KL(π, L) > 0).

W ∈ Q^{N×d} is explicit and sparse: rows e_0 … e_{d−1}, then N − d rows ``scale·(±1 on a support)``
(`sparse_unembedding`); its coherence c = ‖WWᵀ − I‖_max is exact. The proof's encoder
f(t) = λ(t) W W_{g(t)} depends on t only through the multiset of (a_j, π_j) with
a_j = (W_j − W_g)ᵀW_g, so the N sequences fall into a few *classes* (`theorem2_classes`);
every quantity of the theorem is then a short expression of logs and exps of rationals, which
`exactmem.bounds.dana.certificates.theorem2_small_d` writes as a lower-bound certificate for
the kernel. The grouping itself (an exact count over the N² pairs) is checked by the producer.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Dict, List, Sequence, Tuple

from ...data.dataset import DataError

Row = Dict[int, Fraction]  # a sparse row of W: coordinate -> value


def sparse_unembedding(N: int, d: int, k: int, scale: Fraction, signs: Sequence[Sequence[int]] = ()) -> List[Row]:
    """Rows e_0 … e_{d−1}, then N − d rows scale·(s_1, …, s_k) on supports of k consecutive
    coordinates (row m on m·k … m·k + k − 1 mod d); ``signs[m]`` (default all +1)."""
    if not 1 <= d < N:
        raise DataError(f"the sparse W needs 1 ≤ d < N (d = {d}, N = {N})")
    rows: List[Row] = [{i: Fraction(1)} for i in range(d)]
    for m in range(N - d):
        sg = list(signs[m]) if m < len(signs) else [1] * k
        rows.append({(m * k + i) % d: Fraction(scale) * sg[i] for i in range(k)})
    return rows


def _dot(a: Row, b: Row) -> Fraction:
    if len(a) > len(b):
        a, b = b, a
    return sum((v * b[i] for i, v in a.items() if i in b), Fraction(0))


def _index(W: Sequence[Row]) -> Dict[int, List[int]]:
    idx: Dict[int, List[int]] = {}
    for j, r in enumerate(W):
        for i in r:
            idx.setdefault(i, []).append(j)
    return idx


def near_dots(W: Sequence[Row], g: int, idx=None) -> Dict[int, Fraction]:
    """{j ≠ g: W_jᵀW_g} for the rows sharing a coordinate with W_g (every other dot is 0)."""
    idx = _index(W) if idx is None else idx
    js = {j for i in W[g] for j in idx[i] if j != g}
    return {j: _dot(W[j], W[g]) for j in sorted(js)}


def coherence(W: Sequence[Row]) -> Fraction:
    """‖WWᵀ − I‖_max over all N² entries (exact; pairs without a shared coordinate are 0)."""
    idx = _index(W)
    c = Fraction(0)
    for g, r in enumerate(W):
        c = max(c, abs(_dot(r, r) - 1), *(abs(x) for x in near_dots(W, g, idx).values()))
    return c


def conditionals(W: Sequence[Row], etas: Sequence[Fraction]) -> List[Tuple[Fraction, ...]]:
    """π(·|t) of the module docstring, η_t = etas[t mod len(etas)] (exact rationals)."""
    N = len(W)
    idx = _index(W)
    out = []
    for t in range(N):
        eta = Fraction(etas[t % len(etas)])
        near = {j for j, x in near_dots(W, t, idx).items() if x != 0}
        w = [Fraction(4) if j in near else Fraction(1) for j in range(N)]
        w[t] = Fraction(0)
        s = sum(w)
        c = [eta * x / s for x in w]
        c[t] = 1 - eta
        out.append(tuple(c))
    return out


def theorem2_classes(W: Sequence[Row], etas: Sequence[Fraction]) -> List[Dict[str, object]]:
    """The N sequences grouped by what Theorem 2's quantities depend on: for each class, the
    number of sequences, π_g, ‖W_g‖², and the sorted (a_j, π_j, multiplicity) of the j ≠ g.
    Exact; the multiplicities of a class sum to N − 1. Tokens sharing no coordinate with W_g
    (dot 0: a_j = −‖W_g‖², π_j = ρ_far) are counted, not enumerated (`conditionals` lists
    every entry, for small N and the tests)."""
    N = len(W)
    idx = _index(W)
    classes: Dict[tuple, int] = {}
    for t in range(N):
        eta = Fraction(etas[t % len(etas)])
        ng = _dot(W[t], W[t])
        dots = {j: x for j, x in near_dots(W, t, idx).items() if x != 0}
        far = N - 1 - len(dots)
        s = 4 * len(dots) + far
        cnt: Dict[Tuple[Fraction, Fraction], int] = {}
        for x in dots.values():
            key = (x - ng, eta * 4 / s)
            cnt[key] = cnt.get(key, 0) + 1
        if far:
            cnt[(-ng, eta / s)] = cnt.get((-ng, eta / s), 0) + far
        key = (1 - eta, ng, tuple(sorted((a, p, m) for (a, p), m in cnt.items())))
        classes[key] = classes.get(key, 0) + 1
    out = []
    for (pg, ng, terms), n in sorted(classes.items()):
        if sum(m for _, _, m in terms) != N - 1:
            raise DataError("class multiplicities do not sum to N − 1")
        out.append({"count": n, "pi_g": pg, "norm_g": ng, "terms": list(terms)})
    return out


def lambda_bracket(cls: Dict[str, object], bits: int = 40) -> Tuple[Fraction, Fraction]:
    """[lo, hi] with φ(lo) > 0 > φ(hi), φ(λ) = ln(1 + Σ m_j e^{λ a_j}) − h (Arb bisection, rigorous)."""
    from flint import arb, ctx

    from .association import _arb
    from .bounds import bracket_decreasing_root

    old = ctx.prec
    ctx.prec = bits + 96
    try:
        pg, terms = cls["pi_g"], cls["terms"]
        h = -(_arb(pg) * _arb(pg).log()) - sum((m * _arb(p) * _arb(p).log() for _, p, m in terms), arb(0))
        if any(a >= 0 for a, _, _ in terms):
            raise DataError("(W_j − W_g)ᵀW_g ≥ 0 for some j ≠ g: λ is not defined")

        def phi(lam: Fraction):
            lb = _arb(lam)
            return (1 + sum((m * (lb * _arb(a)).exp() for a, _, m in terms), arb(0))).log() - h

        return bracket_decreasing_root(phi, bits)
    finally:
        ctx.prec = old


# (name, N, d, k, scale, signs, etas): the instances of ``dana.theorem2.small_d``
INSTANCES = {
    # C as printed > 1/2 (d < 128 ln(N+1)): the printed right-hand side is negative while d_KL(π, L) > 0
    "N6-d4": dict(N=6, d=4, k=4, scale=Fraction(2, 5), signs=[(1, 1, 1, 1), (1, 1, -1, -1)],
                  etas=[Fraction(1, 100), Fraction(1, 1000)]),
    # the smallest non-vacuous N: d = ⌊128 ln 870⌋ + 1 = 867 = N − 2
    "N869-d867": dict(N=869, d=867, k=9, scale=Fraction(1, 3), signs=(),
                      etas=[Fraction(1, 10 ** 5), Fraction(1, 10 ** 6)]),
    "N1000-d900": dict(N=1000, d=900, k=9, scale=Fraction(1, 3), signs=(),
                       etas=[Fraction(1, 10 ** 3), Fraction(1, 10 ** 4), Fraction(1, 10 ** 5)]),
}


def instance(name: str) -> Tuple[List[Row], Dict[str, object]]:
    """(W, params) of a named instance."""
    if name not in INSTANCES:
        raise DataError(f"unknown Theorem 2 instance {name!r}; known: {', '.join(INSTANCES)}")
    p = INSTANCES[name]
    return sparse_unembedding(p["N"], p["d"], p["k"], p["scale"], p["signs"]), p


# ------------------------------------------------------------------ App. A.3's last step, term by term

def a3_last_step(W: Sequence[Sequence[Fraction]], pi: Sequence[Fraction], g: int) -> Dict[str, Fraction]:
    """App. A.3's last display on one sequence, per unit of λ (every term is linear in λ > 0, so
    the comparisons are exact rational ones, whatever λ(t) is). With f_j = λ W_jᵀW_g and
    C = ‖WWᵀ − I‖_max, the proof splits d_KL_t = (1 − π_g) f_g − Σ_{j≠g} π_j f_j (its value at
    the exact λ) into
    term1 = (1 − π_g)(f_g − mean_{j≠g} f_j) ≤ (1 − π_g) λ (1 + 2C) and
    term2 = −(1 − π_g) Σ_{j≠g} (π̃_j − 1/(N−1)) f_j ≤ (1 − π_g) λ C ‖π̃ − π_unif‖₁ = 2 C d_TV;
    the paper writes C d_TV for term2. Returns the coefficients of λ: term1, term2, total, C,
    d_TV (= ½‖·‖₁), and the three bounds (1 − π_g)(1 + 2C), (1 − π_g)C d_TV, (1 − π_g)(1 + 2C + C d_TV),
    and the direct bound (1 − π_g)(1 + 2C) on the total (|f_j| ≤ λC, f_g ≤ λ(1 + C))."""
    N = len(W)
    dot = lambda a, b: sum((x * y for x, y in zip(a, b)), Fraction(0))  # noqa: E731
    C = max(abs(dot(W[i], W[j]) - (1 if i == j else 0)) for i in range(N) for j in range(N))
    a = [dot(W[j], W[g]) for j in range(N)]
    rest = [j for j in range(N) if j != g]
    m = 1 - pi[g]
    tilde = {j: pi[j] / m for j in rest}
    term1 = m * (a[g] - sum(a[j] for j in rest) / (N - 1))
    term2 = -m * sum((tilde[j] - Fraction(1, N - 1)) * a[j] for j in rest)
    tv = sum(abs(tilde[j] - Fraction(1, N - 1)) for j in rest) / 2
    return {"term1": term1, "term2": term2, "total": m * a[g] - sum(pi[j] * a[j] for j in rest), "C": C, "d_TV": tv,
            "bound_term1": m * (1 + 2 * C), "bound_term2_printed": m * C * tv, "bound_term2_proof": m * 2 * C * tv,
            "bound_printed": m * (1 + 2 * C + C * tv), "bound_direct": m * (1 + 2 * C)}


A3_EXAMPLE = dict(W=[[Fraction(1), Fraction(0), Fraction(0)], [Fraction(-5, 13), Fraction(12, 13), Fraction(0)],
                     [Fraction(5, 13), Fraction(0), Fraction(12, 13)]],
                  pi=[Fraction(9, 10), Fraction(99, 1000), Fraction(1, 1000)], g=0)
