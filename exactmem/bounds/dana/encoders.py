"""Dana, Pydi & Chevaleyre (AISTATS 2025): the sequence-encoder statements, checked on instances.

A sequence encoder f_{W,E}(t) = W E(t) (W ∈ R^{N×d}, E: [N]^S → R^d, Definition 1) is what any
Transformer of embedding dimension d computes before its softmax, and
d_KL(π, L(N,S,d)) = inf_f E_{t∼π} KL(π(·|t) ‖ softmax f(t)).

* **Proposition 2** (`proposition2_report`): d ≥ N − 1 ⇒ d_KL(π, L) = 0 for every π;
  d < N − 1 ⇒ some π has d_KL(π, L) > 0. The paper prints no proof (note ``dana.md`` open
  question 7); the steps below are one, decided exactly on the instance.
* **Proposition 3** (`proposition3_report`): under Assumption 1 (a look-up table) and
  d ≥ 2, d_KL(π, L) = 0 — the circle target of App. A.5 with an exact rational circle.
* **Corollary 2** (`corollary2_report`): the accuracy floor 1/N + (1 − 1/N)(H·d_h + d)/T0
  under a uniform prior, for Corollary 1's construction — exact in expectation over the labels
  of the sequences it does not memorize, and what the construction gives on a worst-case table.

Every verdict is an exact computation (ranks over Q, exact rationals, rigorous enclosures and
Arb balls for the logarithms); the analytic step each one closes is written in its note.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import List, Sequence

from ...arith import enclosure as E
from ...arith.steps import Report, check

DANA = "Dana, Pydi & Chevaleyre (AISTATS 2025)"


def _centred(v: Sequence[int]) -> List[Fraction]:
    m = Fraction(sum(v), len(v))
    return [Fraction(x) - m for x in v]


def dyadic_conditionals(N: int, S: int, seed: int, spread: int = 3):
    """Full-support conditionals π(j|t) = 2^{k_{t,j}} / Σ_i 2^{k_{t,i}} (integer k ∈ [0, spread]) on
    all N^S sequences, uniform prior — so log π(·|t) = ln 2 · k_t − log Z_t and the centred
    log-probability matrix is ln 2 times an integer matrix: its rank is exact."""
    from ...data.dana_data import Conditionals, all_sequences

    rng = random.Random(seed)
    seqs = all_sequences(N, S)
    K = [[rng.randint(0, spread) for _ in range(N)] for _ in seqs]
    conds = [tuple(Fraction(2 ** k, sum(2 ** x for x in row)) for k in row) for row in K]
    prior = [Fraction(1, len(seqs))] * len(seqs)
    return Conditionals(N, S, seqs, prior, conds, True, seed), K


def proposition2_report(N: int, S: int, d: int, seed: int = 0, frac_bits=(10, 20, 40)) -> Report:
    """Prop. 2 on one instance. d ≥ N − 1: the exact encoder W = [e_i − e_N]_{i<N} (zero-padded
    to d columns) spans the centred logits, so E(t) = coordinates of the centred log π(·|t)
    gives softmax(W E(t)) = π(·|t): d_KL = 0. Rational E at 2^−b show it with a rigorous KL
    upper bound per b. d < N − 1: dyadic π whose centred log-probability matrix has rank > d
    (exact, integer matrix): no f ∈ L reaches it, and (Lemma 1's closedness) none comes close."""
    from ...constructions.dana.association import exact_rank_columns
    from ...constructions.dana.distribution import kl_upper_bound_from_logits, log_prob_targets

    rep = Report(f"Proposition 2: N = {N}, S = {S}, d = {d}")
    if d >= N - 1:
        from ...data.dana_data import random_conditionals

        data = random_conditionals(N, S, seed)
        W = [[Fraction(int(i == j) - int(i == N - 1)) for j in range(N - 1)] + [Fraction(0)] * (d - N + 1)
             for i in range(N)]  # column j = e_j − e_N, then zero columns
        rank = exact_rank_columns([[W[i][j] for i in range(N)] for j in range(d)])
        rep.add(check("Prop. 2 (d ≥ N − 1)", "W's columns e_j − e_N span the sum-zero subspace: rank W = N − 1",
                      rank, "==", N - 1, "identity"))
        rep.add(check("Prop. 2", "N − 1 ≤ d: W ∈ Q^{N×d} is an encoder of L(N, S, d)", N - 1, "<=", d, "precondition"))
        for b in frac_bits:
            logits = log_prob_targets(data, b)  # centred, in W's column space: W E(t) with E(t)_j = ℓ_j(t), j < N
            in_span = all(sum(z) == 0 for z in logits)
            rep.add(check("Prop. 2", f"2^-{b} rational log-probabilities are centred (W E(t) with E(t) = ℓ(t)_{{<N}})",
                          int(in_span), "==", 1, "identity"))
            kl = kl_upper_bound_from_logits(data, logits, prec=b + 96)
            rep.add(check("Prop. 2", f"d_KL(π, f) ≤ 2^-{b - 4} for the 2^-{b} encoder (Arb, rigorous)",
                          kl, "<=", Fraction(1, 2 ** (b - 4)), "inequality",
                          note="so d_KL(π, L) ≤ every such bound; the real encoder E(t) = centred log π gives 0"))
        rep.results["d_KL(π, L)"] = "0 (infimum attained by the real encoder)"
        return rep
    data, K = dyadic_conditionals(N, S, seed)
    rank = exact_rank_columns([_centred(row) for row in K])
    rep.add(check("Prop. 2 (d < N − 1)", "π has full support (Assumption 2): every π(j|t) = 2^k/Z > 0",
                  min(min(c) for c in data.conditionals), ">", 0, "precondition"))
    rep.add(check("Prop. 2", "the prior gives every sequence positive weight (uniform 1/N^S)",
                  min(data.prior), ">", 0, "precondition"))
    rep.add(check("Prop. 2", "rank of the centred log-probability matrix (ln 2 · centred exponents, exact over Q) > d",
                  rank, ">", d, "verdict",
                  note="any f ∈ L has centred logits of rank ≤ d; d_KL(π, f) = 0 needs softmax f(t) = π(·|t) for "
                       "every t (positive prior), i.e. centred f = centred log π, of rank > d; a sequence f_k with "
                       "d_KL → 0 has softmax f_k → π (Pinsker), so centred f_k → centred log π (softmax is a "
                       "homeomorphism of the sum-zero space onto the open simplex), and rank ≤ d is closed: "
                       "impossible. Hence d_KL(π, L(N, S, d)) > 0."))
    rep.results["rank of centred log π"] = rank
    rep.results["d_KL(π, L)"] = "> 0"
    return rep


def proposition3_report(N: int, S: int, d: int, seed: int = 0, targets=(10, 30)) -> Report:
    """Prop. 3 on a random look-up table g (Assumption 1): W's rows are N distinct rational points
    exactly on the unit circle (``dana.circle_points``, zero-padded to d columns), E(t) = λ W_{g(t)}.
    With the exact margin m = min_g (1 − max_{j≠g} ⟨W_j, W_g⟩) > 0,
    KL(π(·|t) ‖ softmax λ W W_g) = log(1 + Σ_{j≠g} e^{−λ(1 − ⟨W_j, W_g⟩)}) ≤ (N − 1) e^{−λ m} → 0.
    For each target 2^−k the smallest integer λ with (N − 1)e^{−λ m} ≤ 2^−k is found and checked,
    and the actual d_KL at that λ is bounded with Arb."""
    from ...constructions.dana.association import circle_margin, circle_points
    from ...constructions.dana.distribution import kl_upper_bound_from_logits
    from ...data.dana_data import Conditionals, random_table

    rep = Report(f"Proposition 3: N = {N}, S = {S}, d = {d}")
    rep.add(check("Prop. 3", "d ≥ 2", d, ">=", 2, "precondition"))
    table = random_table(N, S, seed)
    pts = circle_points(N)
    rep.add(check("Prop. 3", "every W_j lies exactly on the unit circle: max abs(⟨W_j, W_j⟩ − 1)",
                  max(abs(x * x + y * y - 1) for x, y in pts), "==", 0, "identity"))
    m = circle_margin(pts)
    rep.add(check("Prop. 3", "margin m = min_g (1 − max_{j≠g} ⟨W_j, W_g⟩) > 0 (exact)", m, ">", 0, "inequality"))
    conds = [tuple(Fraction(int(j == y)) for j in range(N)) for y in table.labels]
    data = Conditionals(N, S, table.sequences, [Fraction(1, len(table))] * len(table), conds, False, seed)
    for k in targets:
        bound = E.LN2 * (E.log2(N - 1) + k) if N > 2 else E.LN2 * k
        lam = int(bound.hi / m) + 1  # the smallest integer with λ m > the enclosure's upper end
        rep.add(check("Prop. 3", f"λ m ≥ ln 2 (k + log2(N − 1)) at λ = {lam}, k = {k}: (N − 1)e^{{−λ m}} ≤ 2^-{k}",
                      lam * m, ">=", bound, "inequality"))
        logits = [[lam * (pts[j][0] * pts[g][0] + pts[j][1] * pts[g][1]) for j in range(N)] for g in table.labels]
        kl = kl_upper_bound_from_logits(data, logits, prec=k + 96)
        rep.add(check("Prop. 3", f"d_KL(π, f_λ) at λ = {lam} ≤ 2^-{k} (Arb, rigorous)", kl, "<=",
                      Fraction(1, 2 ** k), "inequality"))
    rep.results["margin m"] = m
    rep.results["d_KL(π, L)"] = "0 (≤ (N − 1) e^{−λ m} for every λ)"
    return rep


def corollary2_report(N: int, S: int, d: int, dh: int, H: int, seed: int = 0) -> Report:
    """Cor. 2 for Corollary 1's construction (mode (a): softmax2, exact in Q). X = H·d_h + d of the
    T0 = N^S sequences (uniform prior, Assumption 1) are memorized — the network is built from
    their labels only — and evaluated exactly on all T0. The other T0 − X labels are independent
    of the network, so over uniformly random labels each of them is right with probability 1/N
    when its argmax is strict: E[Acc] = (X + u/N)/T0 with u the strict-argmax count, which equals
    φ(X) = 1/N + (1 − 1/N)X/T0 exactly when u = T0 − X. Against a worst-case table (every other
    label different from the network's choice) the same construction scores X/T0 < φ(X): the
    corollary's 1/N term is an average over tables (note ``dana.md`` open question 6)."""
    from ...constructions.dana.association import build_association, capacity, corollary2_accuracy
    from ...data.dana_data import all_sequences, spread_table
    from ...model.forward import decode_output, forward

    T0 = N ** S
    X = capacity(d, dh, H)
    rep = Report(f"Corollary 2: N = {N}, S = {S}, d = {d}, d_h = {dh}, H = {H}")
    rep.add(check("Cor. 2", "X = H·d_h + d < T0 = N^S (the floor is informative)", X, "<", T0, "precondition"))
    table = spread_table(N, S, seed, X)
    b = build_association(table, d, dh, H, mode="base2", seed=seed, sigma_min=False)
    seqs = all_sequences(N, S)
    res = forward(b.model, [tuple(t) for t in seqs])
    pred = {tuple(t): decode_output(b.model, out) for t, out in zip(seqs, res.outputs)}
    memorized = sum(pred[tuple(t)] == y for t, y in zip(table.sequences, table.labels))
    rep.add(check("Cor. 1 (exact, softmax2)", "memorized associations among the X built from", memorized, "==", X,
                  "count"))
    chosen = {tuple(t) for t in table.sequences}
    rest = [t for t in map(tuple, seqs) if t not in chosen]
    strict = sum(pred[t] is not None for t in rest)
    rep.add(check("Cor. 2", "sequences not memorized whose exact argmax is strict (u)", strict, "==", len(rest), "count"))
    floor = corollary2_accuracy(X, T0, N)
    expected = (Fraction(memorized) + Fraction(strict, N)) / T0
    rep.add(check("Cor. 2 (average over the labels of the T0 − X others)",
                  "E[Acc] = (X + u/N)/T0 ≥ φ(X) = 1/N + (1 − 1/N) X/T0", expected, ">=", floor, "verdict"))
    worst = Fraction(memorized, T0)
    rep.add(check("Cor. 2 (worst-case table, this construction)",
                  "Acc = X/T0 when every other label differs from the network's argmax: below φ(X)",
                  worst, "<", floor, "check",
                  note="the proof gives the floor on average over look-up tables, not for every table"))
    rep.results.update({"X": X, "T0": T0, "phi(X)": floor, "E[Acc]": expected, "worst-case Acc": worst})
    return rep
