"""Lower-bound certificates for Dana, Pydi & Chevaleyre's statements run by ``bounds run proofs/dana.py``.

``exactmem/proofs/dana.py`` names its theorems; :data:`BUILDERS` maps a theorem name to a
function ``params -> certificate`` (:func:`.protocol.certificate_builder` looks here when a
BoundTheorem has no ``certificate`` of its own). What the expression language can state is a
kernel-checked step; the rest of the theorem's report goes to ``producer_checked``:

* ``dana.proposition1.obstruction``: the nonzero (d+1)×(d+1) minor of the centred exponent matrix
  K̄ (Leibniz expansion of the determinant from the integer exponents; det² > 0). The realisable
  family's rank is producer-checked.
* ``dana.theorem2.bound``: the paper's C = √(32 ln(N+1)/d) against 1/2 and the vacuity threshold
  ⌊128 ln(N+1)⌋ + 1 against N − 1 (Prop. 2). The KL-against-bound steps need the root λ(t)
  of an equation (an Arb bisection) and the bound's expectation: producer-checked.
* ``dana.theorem3.eq15``: eq. (15), Lemma 4 and (17) for every δ — logs and exps of the explicit
  rational logits and probabilities, all kernel-checked.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import permutations
from typing import Any, Dict

from .certificates import Chain, add, div, mul, op, sub

DANA = "Dana, Pydi & Chevaleyre (AISTATS 2025)"


def _sign(perm) -> int:
    """The sign of a permutation (by counting inversions)."""
    inv = sum(1 for i in range(len(perm)) for j in range(i + 1, len(perm)) if perm[i] > perm[j])
    return -1 if inv % 2 else 1


def _producer(ch: Chain, report, skip=lambda s: False) -> None:
    """The report's other steps, listed as checked by the producer (with their status)."""
    for s in report.steps:
        if not skip(s):
            ch.by_producer(s.eq, s.claim, s.status + (f"; repair: {s.repair}" if s.repair else ""))


def proposition1(p: Dict[str, Any]) -> Dict[str, Any]:
    """Prop. 1's obstruction: det of the centred minor, expanded from the integer exponents."""
    from ..constructions.dana_bounds import prop1_obstruction, prop1_report

    rep, fam = prop1_report(p["N"], p["S"], p["d"], p["dh"], p["H"], p.get("seed", 0))
    K, d = fam["K"], p["d"]
    rows, cols, det = prop1_obstruction(K, d)
    ch = Chain(f"{DANA}, Proposition 1 (N = {p['N']}, S = {p['S']}, d = {d}): no Transformer of embedding dimension "
               f"{d} memorizes the {len(K)} dyadic conditionals exactly")
    pre = ch.premise(DANA + ", Proposition 1 (its argument)", "A Transformer of embedding dimension d has logits "
                     "W_U z(t) with z(t) ∈ R^d; exact memorization softmax T(t) = π(·|t) with π(j|t) = 2^{k_tj}/Σ_i "
                     "2^{k_ti} forces the centred exponent rows k̄_t = k_t − mean(k_t) (times ln 2) into a space of "
                     "dimension ≤ d, so every (d+1)×(d+1) minor of K̄ vanishes.", "Prop. 1")
    n_tok = len(K[0])
    for r in rows:
        for j in range(n_tok):
            ch.define(f"k{r}_{j}", K[r][j])
        ch.define(f"mean{r}", div(add(*[f"k{r}_{j}" for j in range(n_tok)]), n_tok), "mean exponent of the row")
    terms = []
    for perm in permutations(range(d + 1)):
        terms.append(mul(_sign(perm), *[sub(f"k{rows[i]}_{cols[perm[i]]}", f"mean{rows[i]}") for i in range(d + 1)]))
    ch.define("det", add(*terms), f"det of the centred minor: sequences {rows}, tokens {cols} (Leibniz)")
    ch.step("Prop. 1", f"the centred ({d + 1})×({d + 1}) minor is nonzero: det² > 0", mul("det", "det"), ">", "0",
            [pre])
    _ = det
    _producer(ch, rep, lambda s: "minor" in s.claim)
    ch.conclusion = (f"the centred exponent matrix has rank ≥ {d + 1}: no Transformer of embedding dimension {d} "
                     "memorizes the family exactly (d_KL > 0)")
    return ch.document()


def theorem2(p: Dict[str, Any]) -> Dict[str, Any]:
    """Theorem 2's constant C = √(32 ln(N+1)/d) against 1/2, and the vacuity threshold."""
    from ..constructions import dana_bounds as DB
    from ..proofs.dana import run_theorem2, theorem2_data

    rep = run_theorem2(p)
    data = theorem2_data(p, p.get("seed", 0))
    N, d = data.N, p["d"]
    ch = Chain(f"{DANA}, Theorem 2 at N = {N}, d = {d}: whether the paper's C = √(32 ln(N+1)/d) is below 1/2, and "
               "whether the theorem is vacuous (d_min = ⌊128 ln(N+1)⌋ + 1 ≥ N − 1)")
    thm = ch.premise(DANA + ", Theorem 2", "d_KL(π, f_λ) ≤ E_t[(1 − π_g)(1 + 2C + C d_TV)/(1 − 2C)·"
                     "log((N−1)/(e^{h_t} − 1))] with C = √(32 log(N+1)/d); the factor 1/(1 − 2C) needs C < 1/2.", "Thm 2")
    prop2 = ch.premise(DANA + ", Proposition 2", "d ≥ N − 1 ⇒ d_KL(π, L(N, S, d)) = 0 for every π.", "Prop. 2")
    ch.define("N", N), ch.define("d", d)
    ch.define("C", op("sqrt", div(mul("32", op("ln", add("N", "1"))), "d")), "the paper's C")
    below = DB.paper_C(N, d)[1] < Fraction(1, 2)
    ch.step("Thm 2", f"the paper's C {'<' if below else '>'} 1/2" + ("" if below else ": 1/(1 − 2C) < 0, the "
            "right-hand side is negative as printed"), "C", "<" if below else ">", "1/2", [thm])
    ch.define("d_min", add(op("floor", mul("128", op("ln", add("N", "1")))), "1"), "smallest d with C < 1/2")
    vac = DB.theorem2_vacuity(N)["vacuous"]
    ch.step("Thm 2 / Prop. 2", f"d_min {'≥' if vac else '<'} N − 1" + (": vacuous (Prop. 2 gives 0 there)" if vac
                                                                       else ""),
            "d_min", ">=" if vac else "<", sub("N", "1"), [thm, prop2])
    _producer(ch, rep, lambda s: "paper's C = √" in s.claim or "d_min" in s.claim)
    ch.conclusion = (f"at N = {N}, d = {d}: C {'<' if below else '>'} 1/2, and Theorem 2 is "
                     f"{'vacuous' if vac else 'not vacuous'} for this N")
    return ch.document()


def _abs(x):
    return op("max", x, op("-", x))


def theorem3(p: Dict[str, Any]) -> Dict[str, Any]:
    """Eq. (15) (c = 1/4), Lemma 4's range bound and (17) for the explicit family f_δ, every δ: the
    logits are exact rationals, so each quantity is logs and exps of rationals:
    log(π_j/softmax f(t)_j) = ln π_j − f_j + ln Σ_k exp f_k and
    d_KL(π, f) = Σ_t π(t)·[ln Σ_k exp f_k + Σ_{π_j>0} π_j (ln π_j − f_j)]."""
    from ..constructions import dana_bounds as DB
    from ..constructions.dana_distribution import encoder_logits

    data = DB.zero_conditionals(p["N"], p["S"], p.get("seed", 0), p.get("zeros", 1))
    d = p["d"]
    deltas = [Fraction(1, 2 ** k) for k in (1, 2, 4, 8, 16, 32)]
    ch = Chain(f"{DANA}, Theorem 3 / Lemma 4 for π with zeros (N = {data.N}, S = {data.S}, d = {d}): the explicit "
               f"encoders f_δ satisfy eq. (15) with c = 1/4, Lemma 4's range bound and d_KL(π, f_δ) ≤ δ (17), "
               f"δ = 1/2, …, 2^-32")
    thm = ch.premise(DANA + ", Theorem 3 / Lemma 4, Definition 2 (App. A.4 eqs. (15)–(19))", "π is polynomially "
                     "approximable when a family f_δ satisfies c·δ ≤ |log(π_j/softmax f_δ(t)_j)| ≤ δ on the support "
                     "(15), with logits of range O(log 1/δ) (Lemma 4); then d_KL(π, f_δ) ≤ δ (17).", "(15)–(17)")
    n0 = max(sum(1 for x in c if x == 0) for c in data.conditionals)
    for t, (w, c) in enumerate(zip(data.prior, data.conditionals)):
        for j, x in enumerate(c):
            if x:
                ch.define(f"lnpi{t}_{j}", op("ln", x))
    for k, delta in enumerate(deltas):
        W, E, _ = DB.theorem3_encoder(data, d, delta)
        lg = encoder_logits(W, E)
        gaps, kl = [], []
        for t, (w, c, f) in enumerate(zip(data.prior, data.conditionals, lg)):
            lse = ch.define(f"lse{k}_{t}", op("ln", add(*[op("exp", x) for x in f])), f"ln Σ exp f_δ(t), δ = {delta}")
            gaps += [_abs(add(f"lnpi{t}_{j}", mul("-1", f[j]), lse)) for j, x in enumerate(c) if x]
            kl.append(mul(w, add(lse, *[mul(x, sub(f"lnpi{t}_{j}", f[j])) for j, x in enumerate(c) if x])))
        ch.step("(15) left", f"δ = {delta}: (1/4)·δ ≤ min abs(log(π_j/softmax f_δ(t)_j))", div(delta, 4), "<=",
                op("min", *gaps), [thm])
        ch.step("(15) right", f"δ = {delta}: max abs(log(π_j/softmax f_δ(t)_j)) ≤ δ", op("max", *gaps), "<=", delta,
                [thm])
        worst = op("max", "0", *[mul("-1", f"lnpi{t}_{j}") for t, c in enumerate(data.conditionals)
                                for j, x in enumerate(c) if x])
        ch.step("Lemma 4", f"δ = {delta}: max_t range f_δ(t) ≤ max abs(log π_j) + log(2n₀/δ) + 2^-59 + 2^-39",
                DB.logit_range(lg), "<=", add(worst, op("ln", div(2 * n0, delta)), Fraction(1, 2 ** 59),
                                             Fraction(1, 2 ** 39)), [thm])
        ch.step("(17)", f"δ = {delta}: d_KL(π, f_δ) ≤ δ (π₀ = π)", add(*kl), "<=", delta, [thm])
    ch.conclusion = ("the family f_δ meets eq. (15) with c = 1/4, Lemma 4's range bound and d_KL(π, f_δ) ≤ δ at every "
                     "δ checked")
    return ch.document()


BUILDERS = {"dana.proposition1.obstruction": proposition1, "dana.theorem2.bound": theorem2,
            "dana.theorem3.eq15": theorem3}
