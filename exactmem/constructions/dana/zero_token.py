"""Dana, Pydi & Chevaleyre: Theorem 3 where it says something — d < N, d_KL(π, M(N,S,d)) > 0.

Theorem 3 bounds d_KL(π, T*) by d_KL(π, M(N,S,d)) + O(ε log 1/ε). The instances of
``dana.theorem3`` have d ≥ N and π ∈ M (π₀ = π), so d_KL(π, M) = 0. Here d ≤ N − 3 and every
conditional has the **same zero token** z = N − 1; on the other N′ = N − 1 tokens π is dyadic,
π(j|t) = 2^{k_tj}/Σ_i 2^{k_ti} (integer exponents, token 0 the most likely in every row).

* **d_KL(π, M) ≥ d_KL(π, L(N,S,d)) ≥ d_KL(π′, L(N′,S,d)) > 0.** The first: for π₀ ∈ M with its
  family f_δ, (17) gives d_KL(π, π₀) ≥ d_KL(π, f_δ) − δ ≥ d_KL(π, L) − δ for every δ (and
  d_KL(π, π₀) = ∞ when π₀ misses part of π's support). The second (restriction): π_z = 0 and
  softmax(f)_j ≤ softmax(f′)_j for j ≠ z, where f′ drops z's logit — an encoder of L(N′,S,d).
  The third: a nonzero centred (d+1)-minor of the exponent matrix K (so no f′ reaches π′
  exactly, Prop. 1) and Lemma 1 (π′ has full support: the infimum is attained). Quantitatively,
  for d = N′ − 2, `lower_bound_codim1` gives a rigorous L ≤ d_KL(π′, L).
* **An explicit π₀ ∈ M(N,S,d)** (Definition 2): f′ = W′E′(t) the best rank-d encoder of π′ found
  (`optimized_encoder`, exact dyadics), π₀(·|t) = (softmax f′(t), 0 at z).
  With u = e₀ − 1/N′, a_t = uᵀf′(t) > 0 (checked exactly) and
  f_δ(t) = W_δ E′(t), W_δ = [W′; −M_δ uᵀW′] ∈ Q^{N×d}, z's logit is −M_δ a_t and
  log(π₀_j / softmax f_δ(t)_j) = ln(1 + e^{−M_δ a_t}/S_t), S_t = Σ_j e^{f′_j(t)}, the same for
  every j ≠ z. M_δ ≥ max_t ln(1/(δ S_t))/a_t gives the right side of (15) (ln(1+x) ≤ x); the left
  side holds with α = a_max/a_min rounded up (ln(1+x) ≥ x/2 for x ≤ 1, e^{−M_δ a_t} ≥
  (δ·e^{−B})^{a_t/a_min}): checked on a grid of δ, with c chosen from it.
  So d_KL(π, M) ∈ [L, d_KL(π, π₀)] = [L, d_KL(π′, f′)]: the optimiser's gap.
* **T\\*** realises f_ε (δ = ε) on the T_ε most likely sequences (Theorem 1's construction,
  mode (a), d_h = 1 so that d + H = T_ε and C of (14) exists); its logits on every sequence are
  exact rationals. `exactmem.bounds.dana.certificates` writes every step as a lower-bound
  certificate (``dana.theorem3.small_d``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Sequence, Tuple

from ...data.dana_data import Conditionals, all_sequences
from ...data.dataset import DataError

Mat = List[List[Fraction]]


@dataclass
class Restricted:
    """π′: the conditionals on the N′ = N − 1 tokens ≠ z, same sequences and prior (duck-typed
    for `optimized_encoder` and `lower_bound_codim1`)."""

    N: int
    S: int
    sequences: list
    prior: List[Fraction]
    conditionals: List[Tuple[Fraction, ...]]

    def __len__(self) -> int:
        return len(self.sequences)


# name -> parameters of ``dana.theorem3.small_d``
INSTANCES = {
    "N5-S2-d2": dict(N=5, S=2, d=2, seed=0, eps=[Fraction(1, 4), Fraction(1, 8)]),
}


def exponents(N: int, S: int, seed: int) -> List[List[int]]:
    """Integer exponents k_t on the N′ = N − 1 tokens ≠ z: k_t0 ∈ {3, 4}, the others in {0, 1, 2}."""
    rng = random.Random(seed)
    return [[rng.randint(3, 4)] + [rng.randint(0, 2) for _ in range(N - 2)] for _ in all_sequences(N, S)]


def zero_token_data(N: int, S: int, seed: int) -> Tuple[Conditionals, Restricted, List[List[int]]]:
    """(π on N tokens with π(z|t) = 0 for z = N − 1 and every t, π′ on the other N − 1, K)."""
    if N < 4:
        raise DataError(f"the zero-token instance needs N ≥ 4 (N = {N})")
    K = exponents(N, S, seed)
    rng = random.Random(seed + 1)
    seqs = all_sequences(N, S)
    w = [rng.randint(1, 8) for _ in seqs]
    prior = [Fraction(x, sum(w)) for x in w]
    conds_r = []
    for k in K:
        m = min(k)
        ws = [2 ** (x - m) for x in k]
        conds_r.append(tuple(Fraction(x, sum(ws)) for x in ws))
    data = Conditionals(N, S, seqs, prior, [c + (Fraction(0),) for c in conds_r], require_full_support=False,
                        seed=seed)
    return data, Restricted(N - 1, S, seqs, prior, conds_r), K


def logits(W: Mat, E: Sequence[Sequence[Fraction]]) -> List[List[Fraction]]:
    return [[sum((a * b for a, b in zip(r, e)), Fraction(0)) for r in W] for e in E]


def margins(fp: Sequence[Sequence[Fraction]]) -> List[Fraction]:
    """a_t = uᵀf′(t), u = e₀ − 1/N′ (exact)."""
    return [f[0] - sum(f) / len(f) for f in fp]


def m_delta(fp: Sequence[Sequence[Fraction]], delta: Fraction, bits: int = 40) -> Fraction:
    """A dyadic M_δ ≥ max_t ln(1/(δ S_t))/a_t (Arb upper ends, rounded up to 2^−bits)."""
    from flint import arb, ctx

    from ...arith.linalg import upper_fraction
    from .association import _arb

    a = margins(fp)
    old = ctx.prec
    ctx.prec = 128
    try:
        best = None
        for f, at in zip(fp, a):
            St = sum((_arb(x).exp() for x in f), arb(0))
            v = upper_fraction(-(_arb(delta) * St).log() / _arb(at))
            best = v if best is None else max(best, v)
    finally:
        ctx.prec = old
    return Fraction(-((-best * 2 ** bits).__floor__()), 2 ** bits)


def family_W(Wp: Mat, M: Fraction) -> Mat:
    """W_δ = [W′; −M_δ uᵀW′] (u = e₀ − 1/N′)."""
    Np = len(Wp)
    row = [-M * (Wp[0][i] - sum(r[i] for r in Wp) / Np) for i in range(len(Wp[0]))]
    return [list(r) for r in Wp] + [row]


def build_instance(name: str, lower_budget: int = 300) -> Dict[str, object]:
    """Everything the chain needs (exact): data, π′, K, the minor, W′, E′, f′, a_t, L."""
    from .bounds import prop1_obstruction
    from .distribution import log_prob_targets
    from .optimum import lower_bound_codim1, optimized_encoder

    if name not in INSTANCES:
        raise DataError(f"unknown Theorem 3 instance {name!r}; known: {', '.join(INSTANCES)}")
    p = INSTANCES[name]
    N, S, d, seed = p["N"], p["S"], p["d"], p["seed"]
    if not 1 <= d <= N - 3:
        raise DataError(f"d_KL(π, M) > 0 needs d ≤ N − 3 here (d = {d}, N = {N})")
    data, rest, K = zero_token_data(N, S, seed)
    rows, cols, det = prop1_obstruction(K, d)
    Wp, Ep = optimized_encoder(rest, d, seed, targets=log_prob_targets(rest))
    fp = logits(Wp, Ep)
    a = margins(fp)
    if min(a) <= 0:
        raise DataError("a_t = uᵀf′(t) ≤ 0 for some t: z's logit cannot be pushed down within L(N,S,d)")
    out = dict(p, data=data, rest=rest, K=K, minor=(rows, cols, det), Wp=Wp, Ep=Ep, fp=fp, a=a)
    if d == N - 3 and lower_budget:
        out["lower"] = lower_bound_codim1(rest, budget=lower_budget)
    return out


def build_network(inst: Dict[str, object], eps: Fraction, tries: int = 12):
    """T* of Theorem 3's proof for δ = ε: Theorem 1's construction (mode (a), exact readout,
    d_h = 1) realising f_ε = W_ε E′ on the T_ε most likely sequences. Returns the DanaBuild."""
    from .distribution import build_distribution

    W = family_W(inst["Wp"], m_delta(inst["fp"], Fraction(eps)))
    return build_distribution(inst["data"], inst["d"], 1, Fraction(eps), mode="base2", seed=inst["seed"],
                              tol=Fraction(0), encoder=(W, inst["Ep"]), tries=tries)
