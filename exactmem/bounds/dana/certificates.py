"""Lower-bound certificates for Dana, Pydi & Chevaleyre's statements run by ``bounds run proofs/dana.py``.

``exactmem/proofs/dana.py`` names its theorems; `BUILDERS` maps a theorem name to a
function ``params -> certificate`` (`.protocol.certificate_builder` looks here when a
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
from typing import Any, Dict, Sequence

from ..certificates import Chain, add, div, lit, mul, op, sub

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
    from ...constructions.dana.bounds import prop1_obstruction, prop1_report

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
    ch.conclude_with_every_step("N", "S", "d")
    ch.conclusion = (f"the centred exponent matrix has rank ≥ {d + 1}: no Transformer of embedding dimension {d} "
                     "memorizes the family exactly (d_KL > 0)")
    return ch.document()


def theorem2(p: Dict[str, Any]) -> Dict[str, Any]:
    """Theorem 2's constant C = √(32 ln(N+1)/d) against 1/2, and the vacuity threshold."""
    from ...constructions.dana import bounds as DB
    from ...constructions.dana.bounds import run_theorem2, theorem2_data

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
    ch.conclude_with_every_step("N", "S", "d")
    ch.conclusion = (f"at N = {N}, d = {d}: C {'<' if below else '>'} 1/2, and Theorem 2 is "
                     f"{'vacuous' if vac else 'not vacuous'} for this N")
    return ch.document()


def _abs(x):
    return op("max", x, op("-", x))


# ------------------------------------------------------------------ producer side: Arb values of a chain

def arb_eval(e, env: Dict[str, Any]):
    """An Arb ball of an expression of the certificate language (the producer's own evaluation,
    separate code from the kernel's ``lowerbound.py`` and ``enclosure.py``); ``env`` maps defined names to balls."""
    from flint import arb

    from ...constructions.dana.association import _arb

    if isinstance(e, str):
        if e in env:
            return env[e]
        return _arb(Fraction(e))
    o, args = e[0], e[1:]
    if o == "e":
        return arb(1).exp()
    if o == "^":
        return arb_eval(args[0], env) ** int(args[1])
    a = [arb_eval(x, env) for x in args]
    if o == "+":
        return sum(a[1:], a[0])
    if o == "*":
        out = a[0]
        for x in a[1:]:
            out = out * x
        return out
    if o == "-":
        return -a[0] if len(a) == 1 else a[0] - a[1]
    if o == "/":
        return a[0] / a[1]
    if o in ("ln", "log2", "exp", "sqrt"):
        x = a[0]
        return {"ln": x.log, "exp": x.exp, "sqrt": x.sqrt, "log2": lambda: x.log() / arb(2).log()}[o]()
    if o in ("min", "max"):
        out = a[0]
        for x in a[1:]:
            out = out.min(x) if o == "min" else out.max(x)
        return out
    if o in ("floor", "ceil"):
        return a[0].floor() if o == "floor" else a[0].ceil()
    raise ValueError(f"arb_eval: operator {o!r} not supported")


def chain_values(ch: Chain, prec: int = 256) -> Dict[str, Any]:
    """Arb balls of every definition of ``ch``, in order."""
    from flint import ctx

    old = ctx.prec
    ctx.prec = prec
    try:
        env: Dict[str, Any] = {}
        for x in ch.definitions:
            env[x["name"]] = arb_eval(x["expr"], env)
        return env
    finally:
        ctx.prec = old


def interval(ball):
    """A ball as an exact-endpoint [`Interval`][exactmem.arith.enclosure.Interval]."""
    from ...arith.enclosure import Interval
    from ...arith.linalg import lower_fraction, upper_fraction

    return Interval(lower_fraction(ball), upper_fraction(ball))


def decided_step(ch: Chain, env, eq: str, claim: str, lhs, rels: Sequence[str], rhs, uses=(), prec: int = 256):
    """Add the step ``lhs rel rhs`` with the first of ``rels`` that the producer's Arb values decide
    true (the kernel re-decides it); returns (step id, rel). Neither decided: a DataError."""
    from flint import ctx

    from ...data.dataset import DataError
    from ...arith.enclosure import HOLDS, compare

    old = ctx.prec
    ctx.prec = prec
    try:
        L, R = interval(arb_eval(lit(lhs), env)), interval(arb_eval(lit(rhs), env))
    finally:
        ctx.prec = old
    for rel in rels:
        if compare(L, rel, R) == HOLDS:
            return ch.step(eq, claim.replace("{rel}", rel), lhs, rel, rhs, uses), rel
    raise DataError(f"{eq}: {claim}: undecided at {prec} bits ({L} vs {R})")


def report_from_chain(title: str, ch: Chain, prec: int = 256):
    """A [`Report`][exactmem.bounds.Report] of the chain's steps, each decided on the
    producer's Arb values (what ``bounds run`` prints; the kernel re-checks the certificate)."""
    from flint import ctx

    from ...arith.steps import Report, check

    env = chain_values(ch, prec)
    rep = Report(title)
    old = ctx.prec
    ctx.prec = prec
    try:
        for s in ch.steps:
            rep.add(check(s["eq"], s["claim"], interval(arb_eval(s["lhs"], env)), s["rel"],
                          interval(arb_eval(s["rhs"], env)), "verdict"))
    finally:
        ctx.prec = old
    for x in ch.producer:
        rep.notes.append(f"checked by the producer: {x['eq']}: {x['claim']}" + (f" ({x['note']})" if x.get("note") else ""))
    return rep


def theorem3(p: Dict[str, Any]) -> Dict[str, Any]:
    """Eq. (15) (c = 1/4), Lemma 4's range bound and (17) for the explicit family f_δ, every δ: the
    logits are exact rationals, so each quantity is logs and exps of rationals:
    log(π_j/softmax f(t)_j) = ln π_j − f_j + ln Σ_k exp f_k and
    d_KL(π, f) = Σ_t π(t)·[ln Σ_k exp f_k + Σ_{π_j>0} π_j (ln π_j − f_j)]."""
    from ...constructions.dana import bounds as DB
    from ...constructions.dana.distribution import encoder_logits

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
    ch.conclude_with_every_step("N", "S", "d")
    ch.conclusion = ("the family f_δ meets eq. (15) with c = 1/4, Lemma 4's range bound and d_KL(π, f_δ) ≤ δ at every "
                     "δ checked")
    return ch.document()


BUILDERS = {"dana.proposition1.obstruction": proposition1, "dana.theorem2.bound": theorem2,
            "dana.theorem3.eq15": theorem3}


# ------------------------------------------------------------------ Theorem 2 with d < N − 1

def theorem2_small_d_chain(name: str) -> Chain:
    """Theorem 2 on an instance of `INSTANCES` (d < N − 1):
    d_KL(π, L) > 0 (strict diagonal dominance of the log-probability matrix), the proof's λ(t)
    bracketed (φ(lo) > 0 > φ(hi)), A.3's bound on λ(t), and d_KL(π, f_λ̃) — an upper bound on
    d_KL(π, L) — against the right-hand side with the paper's C and with the measured coherence c;
    the right-hand side against the uniform encoder's E_t[ln N − h_t] (is the bound informative?)
    and the "simpler bound". Every relation is decided by the producer (Arb) and re-decided by
    the kernel; the class grouping and c are producer-checked (exact counts over N² pairs)."""
    from ...constructions.dana import small_d as SD

    W, q = SD.instance(name)
    N, d = q["N"], q["d"]
    classes = SD.theorem2_classes(W, q["etas"])
    c = SD.coherence(W)
    ch = Chain(f"{DANA}, Theorem 2 at N = {N}, S = 1, d = {d} < N − 1 (instance {name}): d_KL(π, L(N, 1, d)) > 0 "
               "and Theorem 2's bound, with the paper's C = √(32 ln(N+1)/d) and with the explicit W's coherence")
    thm = ch.premise(DANA + ", Theorem 2", "For W with ‖WWᵀ − I‖_∞ ≤ C (C = √(32 log(N+1)/d)) and E(t) = λ(t) W_g(t), "
                     "λ(t) the root of −H(π_t) = log Σ_j exp(λ (W_j − W_g)ᵀW_g): d_KL(π, L(N,S,d)) ≤ E_t[(1 − π_g)"
                     "(1 + 2C + C d_TV(π̃_t, π_unif))/(1 − 2C) log((N−1)/(e^{−H(π_t)} − 1))].", "Thm 2")
    a3 = ch.premise(DANA + ", App. A.3 (proof of Theorem 2)", "With a_j = (W_j − W_g)ᵀW_g ≤ −(1 − 2C) for j ≠ g "
                    "(C ≥ the coherence, C < 1/2): λ(t) ≤ log((N−1)/(e^{h_t} − 1))/(1 − 2C); the proof uses C only "
                    "through |W_jᵀW_g| ≤ C and ‖W_g‖² ≥ 1 − C, so any C ≥ ‖WWᵀ − I‖_max in [0, 1/2) may replace "
                    "the printed constant.", "A.3")
    enc = ch.premise("Definition 1 (sequence encoders)", "f_λ̃(t) = λ̃(t) W W_g(t) is an encoder of L(N, S, d) for "
                     "every rational λ̃(t), so d_KL(π, L) ≤ d_KL(π, f_λ̃) = E_t[−h_t − Σ_j π_j f_j + ln Σ_j e^{f_j}] "
                     "(softmax is shift-invariant: f_j = λ̃ a_j).", "Def. 1")
    ivt = ch.premise("Intermediate value theorem", "φ(λ) = ln Σ_j e^{λ a_j} − h is continuous and strictly decreasing "
                     "(a_g = 0, a_j < 0 otherwise): φ(lo) > 0 > φ(hi) puts the root λ(t) in (lo, hi).", "(6)")
    rank = ch.premise("Levy–Desplanques; Proposition 2's closedness argument",
                      "A strictly row-diagonally-dominant matrix is invertible; the row-wise shifted log-probability "
                      "matrix ln π(j|t) − ln ρ_far(t) has diagonal ln((1 − η_t)/ρ_far(t)) and off-diagonal entries "
                      "ln(π(j|t)/ρ_far(t)) ≥ 0; invertible ⇒ the centred log-probability matrix has rank ≥ N − 1 "
                      "> d; every f ∈ L has centred logits of rank ≤ d, a rank-≤d set is closed and softmax is a "
                      "homeomorphism from the centred logits onto the open simplex, so d_KL(π, L(N,S,d)) > 0.",
                      "Prop. 2")
    ch.define("N", N), ch.define("d", d)
    ch.define("C", op("sqrt", div(mul("32", op("ln", add("N", "1"))), "d")), "the paper's C")
    ch.define("c", c, "the coherence ‖WWᵀ − I‖_max of the explicit W (exact, producer-checked)")
    ch.define("d_min", add(op("floor", mul("128", op("ln", add("N", "1")))), "1"), "smallest d with C < 1/2")
    kl, rC, rc, base, miss, hbar = [], [], [], [], [], []
    for k, cl in enumerate(classes):
        w = Fraction(cl["count"], N)
        pg, terms = cl["pi_g"], cl["terms"]
        lo, hi = SD.lambda_bracket(cl)
        cl["lambda"] = (lo, hi)
        ch.define(f"pg{k}", pg, f"class {k}: {cl['count']} sequences, π(g|t)")
        h = ch.define(f"h{k}", op("-", add(mul(f"pg{k}", op("ln", f"pg{k}")),
                                          *[mul(m, p, op("ln", p)) for _, p, m in terms])), "Shannon entropy h_t")
        lse = lambda lam: op("ln", add("1", *[mul(m, op("exp", mul(lam, a))) for a, _, m in terms]))  # noqa: E731
        ch.define(f"lo{k}", lo), ch.define(f"hi{k}", hi)
        ch.define(f"phlo{k}", sub(lse(f"lo{k}"), h), "φ(lo)")
        ch.define(f"phhi{k}", sub(lse(f"hi{k}"), h), "φ(hi)")
        ch.define(f"kl{k}", add(op("-", h), op("-", mul(f"lo{k}", add(*[mul(m, p, a) for a, p, m in terms]))),
                                lse(f"lo{k}")), "KL(π_t ‖ softmax f_λ̃(t)), λ̃ = lo")
        ch.define(f"tv{k}", div(add(*[mul(m, _abs(sub(div(p, sub("1", f"pg{k}")), div("1", sub("N", "1")))))
                                    for _, p, m in terms]), "2"), "d_TV(π̃_t, π_unif)")
        ch.define(f"lt{k}", op("ln", div(sub("N", "1"), sub(op("exp", h), "1"))), "log((N−1)/(e^{h_t} − 1))")
        fac = lambda CC: div(add("1", mul("2", CC), mul(CC, f"tv{k}")), sub("1", mul("2", CC)))  # noqa: E731
        ch.define(f"rC{k}", mul(sub("1", f"pg{k}"), fac("C"), f"lt{k}"), "right-hand side term, paper's C")
        ch.define(f"rc{k}", mul(sub("1", f"pg{k}"), fac("c"), f"lt{k}"), "right-hand side term, C = coherence c")
        far = min(p for _, p, _ in terms)
        ch.define(f"dg{k}", op("ln", div(f"pg{k}", far)), "diagonal ln((1 − η)/ρ_far)")
        ch.define(f"od{k}", add("0", *[mul(m, op("ln", div(p, far))) for _, p, m in terms if p != far]),
                  "sum of the off-diagonal entries ln(π_j/ρ_far) ≥ 0")
        for lst, nm in ((kl, "kl"), (rC, "rC"), (rc, "rc")):
            lst.append(mul(w, f"{nm}{k}"))
        base.append(mul(w, sub(op("ln", "N"), h)))
        miss.append(mul(w, sub("1", f"pg{k}")))
        hbar.append(mul(w, h))
    ch.define("KL", add(*kl), "d_KL(π, f_λ̃) = Σ_classes (count/N)·KL_class")
    ch.define("RHS_C", add(*rC), "Theorem 2's right-hand side with the paper's C")
    ch.define("RHS_c", add(*rc), "the same with C = the coherence c")
    ch.define("UNIF", add(*base), "d_KL(π, f ≡ 0) = E_t[ln N − h_t] (the uniform encoder)")
    ch.define("miss", add(*miss)), ch.define("hbar", add(*hbar))
    simp = lambda CC: mul("miss", op("ln", div(sub("N", "1"), sub(op("exp", "hbar"), "1"))),  # noqa: E731
                          div(add("1", mul("4", CC)), sub("1", mul("2", CC))))
    ch.define("SIMP_C", simp("C"), "the 'simpler bound', paper's C")
    ch.define("SIMP_c", simp("c"), "the 'simpler bound', C = c")
    env = chain_values(ch)
    sW, relW = decided_step(ch, env, "Thm 2 (W)", "the explicit W's coherence c {rel} the paper's C", "c", ("<=", ">"),
                            "C", [thm])
    sC, relC = decided_step(ch, env, "Thm 2", "the paper's C {rel} 1/2", "C", ("<", ">"), "1/2", [thm])
    below = relC == "<"
    decided_step(ch, env, "Thm 2 / Prop. 2", "d_min = ⌊128 ln(N+1)⌋ + 1 {rel} N − 1 (≥: vacuous)", "d_min",
                 ("<", ">="), sub("N", "1"), [thm])
    sd = ch.step("Prop. 2", "d < N − 1", "d", "<", sub("N", "1"), [rank])
    sc = ch.step("A.3", "the coherence c < 1/2 (the proof's constant)", "c", "<", "1/2", [a3])
    dom = []
    for k, cl in enumerate(classes):
        dom.append(ch.step("Prop. 2", f"class {k}: strict diagonal dominance of the shifted log-probability rows",
                           f"dg{k}", ">", f"od{k}", [rank]))
        b1 = ch.step("(6)", f"class {k}: φ(lo) > 0 (λ(t) > lo)", f"phlo{k}", ">", "0", [ivt])
        b2 = ch.step("(6)", f"class {k}: φ(hi) < 0 (λ(t) < hi)", f"phhi{k}", "<", "0", [ivt])
        ch.step("A.3", f"class {k}: λ(t) < hi ≤ log((N−1)/(e^h − 1))/(1 − 2c)", f"hi{k}", "<=",
                div(f"lt{k}", sub("1", mul("2", "c"))), [a3, sc, b1, b2])
        if below:
            ch.step("A.3", f"class {k}: λ(t) < hi ≤ log((N−1)/(e^h − 1))/(1 − 2C), paper's C", f"hi{k}", "<=",
                    div(f"lt{k}", sub("1", mul("2", "C"))), [a3, sC, b1, b2])
    env = chain_values(ch)
    if below:
        decided_step(ch, env, "Thm 2 (as printed)", "d_KL(π, L) ≤ d_KL(π, f_λ̃) {rel} the right-hand side with the "
                     "paper's C", "KL", ("<=", ">"), "RHS_C", [thm, enc, sW, sC])
        decided_step(ch, env, "Thm 2 (informative?)", "the right-hand side with the paper's C {rel} the uniform "
                     "encoder's d_KL = E_t[ln N − h_t]", "RHS_C", ("<", ">="), "UNIF", [thm])
        decided_step(ch, env, "Thm 2 (simplified)", "d_KL(π, f_λ̃) {rel} the simpler bound with the paper's C", "KL",
                     ("<=", ">"), "SIMP_C", [thm, enc])
    else:
        ch.step("Thm 2 (as printed)", "the right-hand side with the paper's C is negative, below d_KL(π, L) > 0: the "
                "printed statement fails on this instance", "RHS_C", "<", "0", [thm, sC, sd, *dom])
    decided_step(ch, env, "Thm 2 (C = c)", "d_KL(π, L) ≤ d_KL(π, f_λ̃) {rel} the right-hand side with C = c",
                 "KL", ("<=", ">"), "RHS_c", [thm, a3, enc, sc])
    decided_step(ch, env, "Thm 2 (C = c, informative?)", "the right-hand side with C = c {rel} E_t[ln N − h_t]",
                 "RHS_c", ("<", ">="), "UNIF", [thm])
    decided_step(ch, env, "Thm 2 (simplified, C = c)", "d_KL(π, f_λ̃) {rel} the simpler bound with C = c", "KL",
                 ("<=", ">"), "SIMP_c", [thm, enc])
    ch.step("Thm 2", "d_KL(π, L) ≤ d_KL(π, f_λ̃) > 0 is the quantity bounded (f_λ̃ is not exact)", "KL", ">", "0", [enc])
    ch.by_producer("Thm 2 (W)", f"‖WWᵀ − I‖_max = {c} for the explicit W ({N} × {d}; exact, over the N² entries)")
    ch.by_producer("classes", f"the {N} sequences fall into {len(classes)} classes with the listed (a_j, π_j, "
                   "multiplicity); each class's multiplicities sum to N − 1 (exact count)")
    ch.conclude_with_every_step("N", "S", "d")
    ch.conclusion = (f"at N = {N}, d = {d} < N − 1: d_KL(π, L) > 0, and d_KL(π, L) ≤ d_KL(π, f_λ̃) ≤ the right-hand "
                     f"side with C = c = {c}" + ("; the paper's C < 1/2 and its bound holds" if below else
                                                 "; with the paper's C > 1/2 the printed right-hand side is negative")
                     + " (the paper's log read as ln; theorem2_log2_reading gives log₂)")
    return ch


def theorem2_log2_reading(name: str) -> Dict[str, Any]:
    """Theorem 2 on an instance of `INSTANCES` with the paper's log in C read as log₂:
    C₂ = √(32 log₂(N+1)/d) and the right-hand side with C₂ (the log of (N−1)/(e^h − 1) stays
    natural: h is an entropy in nats, e^h its exponential). Producer-side Arb balls as exact
    intervals: ``C2``, ``RHS_C2``, ``KL`` (d_KL(π, f_λ̃), as in the chain) and ``RHS_C`` (ln)."""
    from ...constructions.dana import small_d as SD

    ch = theorem2_small_d_chain(name)
    W, q = SD.instance(name)
    ch.define("C2", op("sqrt", div(mul("32", div(op("ln", add("N", "1")), op("ln", "2"))), "d")), "C with log₂")
    terms = []
    for k, cl in enumerate(SD.theorem2_classes(W, q["etas"])):
        fac = div(add("1", mul("2", "C2"), mul("C2", f"tv{k}")), sub("1", mul("2", "C2")))
        ch.define(f"r2_{k}", mul(sub("1", f"pg{k}"), fac, f"lt{k}"))
        terms.append(mul(Fraction(cl["count"], q["N"]), f"r2_{k}"))
    ch.define("RHS_C2", add(*terms), "Theorem 2's right-hand side, C with log₂")
    env = chain_values(ch)
    return {k: interval(env[k]) for k in ("C2", "RHS_C2", "KL", "RHS_C")}


def theorem2_small_d(p: Dict[str, Any]) -> Dict[str, Any]:
    return theorem2_small_d_chain(p["instance"]).document()


def theorem2_small_d_report(p: Dict[str, Any]):
    from ...constructions.dana.small_d import INSTANCES

    q = INSTANCES[p["instance"]]
    return report_from_chain(f"Theorem 2 with d < N − 1: N = {q['N']}, S = 1, d = {q['d']}",
                             theorem2_small_d_chain(p["instance"]))


BUILDERS["dana.theorem2.small_d"] = theorem2_small_d


# ------------------------------------------------------------------ Theorem 3 with d < N

DELTAS3 = [Fraction(1, 2 ** k) for k in (1, 2, 3, 4, 8, 16, 32)]


def theorem3_small_d_chain(name: str, lower_budget: int = 300) -> Chain:
    """Theorem 3 on an instance of `INSTANCES`
    (d ≤ N − 3, one zero token z common to every conditional): d_KL(π, M) ≥ d_KL(π′, L) ≥ L > 0,
    the explicit π₀ ∈ M (eq. (15) with c, α on a grid of δ, Lemma 4's range bound, (17)), and
    for each ε the AoT T* realising f_ε: (4), (13), (18), (19) and the statement (16) with the
    proof's explicit constants against L ≤ d_KL(π, M). Every relation is decided by the producer
    (Arb) and re-decided by the kernel. Producer-checked: L (branch and bound), the network's
    logits (certified separately by ``certify … --only dana.theorem3.small_d``), C of eq. (14)
    and ‖W E‖₂ (exact LDLᵀ certificates), the (d+1)-minor's choice (its determinant is expanded)."""
    from ...constructions.dana import distribution as DD
    from ...constructions.dana import zero_token as Z
    from ...data.dana_data import t_epsilon

    inst = Z.build_instance(name, lower_budget)
    data, K, fp, a = inst["data"], inst["K"], inst["fp"], inst["a"]
    N, S, d = inst["N"], inst["S"], inst["d"]
    rows, cols, _ = inst["minor"]
    Np, T = N - 1, len(data)
    ch = Chain(f"{DANA}, Theorem 3 at N = {N}, S = {S}, d = {d} < N (instance {name}): every conditional has the zero "
               f"token z = {N - 1}, d_KL(π, M(N,S,d)) > 0, an explicit π₀ ∈ M, and the AoT T* of the proof for "
               f"ε ∈ {{{', '.join(str(e) for e in inst['eps'])}}}")
    thm = ch.premise(DANA + ", Theorem 3 (eq. (16)) and its proof (App. A.4, (17)–(19))",
                     "For ε > 0 there is an AoT T* with d_h H + d ≥ T_ε and d(S + 2N + 4 d_h H) parameters with "
                     "d_KL(π, T*) ≤ d_KL(π, M(N,S,d)) + O(ε log 1/ε); the proof: for π₀ ∈ M with family f_δ, "
                     "|d_KL(π, f_δ) − d_KL(π, π₀)| ≤ δ (17), |d_KL(π, T*) − d_KL(π, f_δ)| ≤ ε C max_t range f_δ(t) "
                     "(18), δ = ε (19).", "(16)–(19)")
    dfn = ch.premise(DANA + ", Definition 2 (eq. (15))", "π₀ is polynomially approximable (π₀ ∈ M(N,S,d)) if encoders "
                     "f_δ ∈ L(N,S,d) and c > 0, α ≥ 1 satisfy c δ^α ≤ |log(π₀_j/softmax f_δ(t)_j)| ≤ δ whenever "
                     "π₀_j > 0.", "(15)")
    low = ch.premise("d_KL(π, M) ≥ d_KL(π, L) ≥ d_KL(π′, L(N′,S,d)) (restriction)",
                     "For π₀ ∈ M with family f_δ, (17) gives d_KL(π, π₀) ≥ d_KL(π, f_δ) − δ ≥ d_KL(π, L(N,S,d)) − δ "
                     "for every δ (d_KL(π, π₀) = ∞ if π₀ misses part of π's support). For f ∈ L(N,S,d) and π(z|t) = 0: "
                     "softmax(f)_j ≤ softmax(f′)_j for j ≠ z, f′ = f without z's logit ∈ L(N−1,S,d), so "
                     "KL(π_t ‖ softmax f) ≥ KL(π′_t ‖ softmax f′).", "(17), Def. 1")
    pos = ch.premise(DANA + ", Proposition 1 and Lemma 1", "π′(j|t) = 2^{k_tj}/Σ_i 2^{k_ti}: an encoder of dimension d "
                     "with softmax = π′ exactly puts the centred exponent rows (times ln 2) in a space of dimension ≤ d, "
                     "so a nonzero centred (d+1)-minor excludes it; π′ has full support, so the infimum d_KL(π′, L) "
                     "is attained (Lemma 1) and is > 0. Every Transformer of embedding dimension d has "
                     "d_KL(π, T) ≥ d_KL(π, L(N,S,d)) (Prop. 1).", "Prop. 1, Lemma 1")
    gibbs = ch.premise("Gibbs duality, branch and bound (dana_optimum.lower_bound_codim1)",
                       "L ≤ d_KL(π′, L(N′, S, N′ − 2)): producer-checked (Arb over boxes of normals).", "Lemma 1")
    enc = ch.premise("Definition 1 (sequence encoders)", "f_δ(t) = W_δ E′(t) with W_δ ∈ Q^{N×d}, E′(t) ∈ Q^d is an "
                     "encoder of L(N,S,d); d_KL(π, f) = Σ_t π(t)[ln Σ_k e^{f_k} + Σ_{π_j>0} π_j (ln π_j − f_j)].",
                     "Def. 1")
    ch.define("N", N), ch.define("d", d)
    # positivity: the centred minor (Leibniz), kernel-checked
    for r in rows:
        for j in range(Np):
            ch.define(f"k{r}_{j}", K[r][j])
        ch.define(f"mean{r}", div(add(*[f"k{r}_{j}" for j in range(Np)]), Np), "mean exponent of the row")
    terms = [mul(_sign(pm), *[sub(f"k{rows[i]}_{cols[pm[i]]}", f"mean{rows[i]}") for i in range(d + 1)])
             for pm in permutations(range(d + 1))]
    ch.define("det", add(*terms), f"det of the centred minor: sequences {rows}, tokens {cols} (Leibniz)")
    s_det = ch.step("Prop. 1", f"the centred ({d + 1})×({d + 1}) exponent minor is nonzero: det² > 0 ⇒ "
                    "d_KL(π′, L(N′,S,d)) > 0", mul("det", "det"), ">", "0", [pos])
    lower = inst.get("lower")
    s_L = None
    if lower is not None:
        ch.define("L", lower["lower"], f"L ≤ d_KL(π′, L(N′,S,d)), branch and bound ({lower['evaluations']} boxes; "
                  "producer-checked)")
        s_L = ch.step("Lemma 1", "L > 0: d_KL(π, M) ≥ d_KL(π, L(N,S,d)) ≥ d_KL(π′, L(N′,S,d)) ≥ L > 0", "L", ">", "0",
                      [gibbs, low, s_det])
    # π, π₀ and the KL of π₀
    kl0, unif = [], []
    for t, (w, c, f) in enumerate(zip(data.prior, data.conditionals, fp)):
        for j in range(Np):
            ch.define(f"lp{t}_{j}", op("ln", c[j]))
            ch.define(f"f{t}_{j}", f[j])
        ch.define(f"S{t}", add(*[op("exp", f"f{t}_{j}") for j in range(Np)]), "S_t = Σ_j e^{f′_j(t)}")
        ch.define(f"a{t}", a[t], "a_t = uᵀf′(t), u = e₀ − 1/N′")
        ch.define(f"h{t}", op("-", add(*[mul(c[j], f"lp{t}_{j}") for j in range(Np)])), "Shannon entropy h_t")
        kl0.append(mul(w, add(op("ln", f"S{t}"), *[mul(c[j], sub(f"lp{t}_{j}", f"f{t}_{j}")) for j in range(Np)])))
        unif.append(mul(w, sub(op("ln", "N"), f"h{t}")))
    ch.define("KL0", add(*kl0), "d_KL(π, π₀) = d_KL(π′, f′) (π₀ = softmax f′ on j ≠ z, 0 at z)")
    ch.define("UNIF", add(*unif), "d_KL(π, f ≡ 0) = E_t[ln N − h_t] (the uniform encoder)")
    ch.define("amin", op("min", *[f"a{t}" for t in range(T)])), ch.define("amax", op("max", *[f"a{t}" for t in range(T)]))
    ch.define("B", op("max", *[op("-", op("ln", f"S{t}")) for t in range(T)]), "B = max_t (−ln S_t)")
    ch.define("R0", op("max", *[sub(op("max", *fp[t]), op("min", *fp[t])) for t in range(T)]), "max_t range f′(t)")
    s_a = ch.step("Def. 2", "min_t a_t > 0: z's logit −M_δ a_t → −∞ as δ → 0", "amin", ">", "0", [dfn, enc])
    if s_L is not None:
        ch.step("Lemma 1 (gap)", "d_KL(π, π₀) ≥ L (the optimiser's gap d_KL(π, π₀) − L ≥ 0)", "KL0", ">=", "L",
                [low, gibbs])
    ratio = Fraction(max(a)) / Fraction(min(a))
    alpha = Fraction(-((-ratio * 4).__floor__()), 4)
    ch.define("alpha", alpha, "α = a_max/a_min rounded up to a quarter")
    s_alpha = ch.step("Def. 2", "α ≥ max(1, a_max/a_min)", mul("alpha", "amin"), ">=", op("max", "amin", "amax"),
                      [dfn])
    # eq. (15), Lemma 4, (17) on the grid of δ; c chosen from the grid
    from flint import ctx

    from ...arith.linalg import lower_fraction

    gaps_all = {}
    for k, delta in enumerate(DELTAS3 + [e for e in inst["eps"] if e not in DELTAS3]):
        M = Z.m_delta(fp, delta)
        ch.define(f"M{k}", M, f"M_δ, δ = {delta}")
        for t in range(T):
            ch.define(f"g{k}_{t}", op("ln", add("1", div(op("exp", op("-", mul(f"M{k}", f"a{t}"))), f"S{t}"))),
                      "log(π₀_j/softmax f_δ(t)_j) = ln(1 + e^{−M_δ a_t}/S_t), every j ≠ z")
        gaps_all[delta] = k
    env = chain_values(ch)
    old = ctx.prec
    ctx.prec = 256
    try:
        cmin = None
        for delta, k in gaps_all.items():
            g = min(lower_fraction(env[f"g{k}_{t}"]) for t in range(T))
            v = lower_fraction(arb_eval(op("/", "1", op("exp", mul(alpha, op("ln", delta)))), env)) * g
            cmin = v if cmin is None else min(cmin, v)
    finally:
        ctx.prec = old
    cexp = 0
    while Fraction(1, 2 ** cexp) > cmin:
        cexp += 1
    ch.define("c", Fraction(1, 2 ** cexp), "c of eq. (15), a power of 2 below every grid point's ratio")
    s15 = {}
    for delta, k in gaps_all.items():
        gmin, gmax = op("min", *[f"g{k}_{t}" for t in range(T)]), op("max", *[f"g{k}_{t}" for t in range(T)])
        l15 = ch.step("(15) left", f"δ = {delta}: c·δ^α ≤ min_t log(π₀_j/softmax f_δ(t)_j)",
                      mul("c", op("exp", mul("alpha", op("ln", delta)))), "<=", gmin, [dfn, s_a, s_alpha])
        r15 = ch.step("(15) right", f"δ = {delta}: max_t log(π₀_j/softmax f_δ(t)_j) ≤ δ", gmax, "<=", delta, [dfn])
        rng = op("max", *[sub(op("max", *fp[t]), op("min", op("-", mul(f"M{k}", f"a{t}")), *fp[t]))
                          for t in range(T)])
        ch.define(f"range{k}", rng, f"max_t range f_δ(t), δ = {delta}")
        ch.step("Lemma 4", f"δ = {delta}: max_t range f_δ(t) ≤ R′ + a_max·(max(0, ln(1/δ) + B)/a_min + 2^-40) "
                "(O(log 1/δ))", f"range{k}", "<=",
                add("R0", mul("amax", add(div(op("max", "0", add(op("ln", div(1, delta)), "B")), "amin"),
                                          Fraction(1, 2 ** 40)))), [thm])
        ch.define(f"KLd{k}", add(*[mul(w, add(op("ln", add(f"S{t}", op("exp", op("-", mul(f"M{k}", f"a{t}"))))),
                                              *[mul(c[j], sub(f"lp{t}_{j}", f"f{t}_{j}")) for j in range(Np)]))
                                   for t, (w, c) in enumerate(zip(data.prior, data.conditionals))]),
                  f"d_KL(π, f_δ), δ = {delta}")
        s17 = ch.step("(17)", f"δ = {delta}: |d_KL(π, f_δ) − d_KL(π, π₀)| ≤ δ", _abs(sub(f"KLd{k}", "KL0")), "<=", delta,
                      [thm, enc, l15, r15])
        s15[delta] = (l15, r15, s17)
    # the networks T*
    for e in inst["eps"]:
        k = gaps_all[e]
        b = Z.build_network(inst, e)
        rep = DD.theorem1_bound_report(data, b, e)
        r = rep.results
        from ...model.forward import forward

        lg = forward(b.model, [tuple(t) for t in data.sequences]).outputs
        tag = f"e{k}"
        klT = []
        for t, (w, c, z) in enumerate(zip(data.prior, data.conditionals, lg)):
            for j in range(N):
                ch.define(f"T{tag}_{t}_{j}", z[j], f"T*'s exact logit (ε = {e})")
            klT.append(mul(w, add(op("ln", add(*[op("exp", f"T{tag}_{t}_{j}") for j in range(N)])),
                                  *[mul(c[j], sub(f"lp{t}_{j}", f"T{tag}_{t}_{j}")) for j in range(Np)])))
        ch.define(f"KLT{tag}", add(*klT), f"d_KL(π, T*), ε = {e}")
        Te = t_epsilon(data, e)
        ch.define(f"C{tag}", r["C_eq14"].hi, f"upper end of C of eq. (14) (exact LDLᵀ; producer-checked), ε = {e}")
        ch.define(f"WE{tag}", r["||W E||_2"].hi, f"upper end of ‖W E‖₂ (exact LDLᵀ; producer-checked), ε = {e}")
        ch.by_producer("(14)", f"ε = {e}: C of eq. (14) ≤ {r['C_eq14'].hi} and ‖W E‖₂ ≤ {r['||W E||_2'].hi} "
                       f"(T_ε = {Te}, H = {b.design.H}, d_h = 1; exact LDLᵀ of uI − KᵀK)")
        ch.by_producer("T*", f"ε = {e}: the logits T{tag}_t_j are T*'s exact outputs on all {T} sequences (certified by "
                       "`certify proofs/dana.py --only dana.theorem3.small_d`)")
        diff = sub(f"KLT{tag}", f"KLd{k}")
        if s_L is not None:
            ch.step("Prop. 1", f"ε = {e}: d_KL(π, T*) ≥ L > 0 (T* has embedding dimension d)", f"KLT{tag}", ">=", "L",
                    [pos, low, gibbs, s_L])
        ch.step("(4)", f"ε = {e}: d_KL(π, T*) − d_KL(π, f_ε) ≤ C ε ‖W E‖₂ (as printed)", diff, "<=",
                mul(f"C{tag}", e, f"WE{tag}"), [thm])
        s18 = ch.step("(18)", f"ε = {e}: d_KL(π, T*) − d_KL(π, f_ε) ≤ ε C max_t range f_ε(t) (the paper's form)", diff,
                      "<=", mul(e, f"C{tag}", f"range{k}"), [thm])
        ch.step("(19)", f"ε = {e}: d_KL(π, T*) ≤ d_KL(π, π₀) + δ + 2 C ε ‖W E‖₂ (δ = ε)", f"KLT{tag}", "<=",
                add("KL0", e, mul("2", f"C{tag}", e, f"WE{tag}")), [thm, s15[e][2]])
        if s_L is not None:
            rhs = add("L", e, mul(e, f"C{tag}", f"range{k}"))
            ch.define(f"RHS{tag}", rhs, "L + ε + ε C max_t range f_ε(t)")
            ch.step("(16)", f"ε = {e}: d_KL(π, T*) ≤ L + ε + ε C max_t range f_ε ≤ d_KL(π, M) + ε + ε C max_t range f_ε "
                    "(the statement with the proof's explicit O-term)", f"KLT{tag}", "<=", f"RHS{tag}",
                    [thm, s18, s15[e][2], s_L, low])
            env = chain_values(ch)
            decided_step(ch, env, "(16) informative?", f"ε = {e}: the right-hand side L + ε + ε C range f_ε {{rel}} the "
                         "uniform encoder's d_KL = E_t[ln N − h_t]", f"RHS{tag}", ("<", ">="), "UNIF", [thm])
    ch.by_producer("Prop. 1", f"the minor's rows {rows} and tokens {cols} (a search; its determinant is expanded above)")
    if lower is not None:
        ch.by_producer("Lemma 1", f"L = {lower['lower']} ≤ d_KL(π′, L(N′,S,d)) (branch and bound over normals, "
                       f"{lower['evaluations']} boxes, Arb)")
    ch.conclude_with_every_step("N", "S", "d")
    ch.conclusion = (f"at N = {N}, S = {S}, d = {d}: d_KL(π, M) ≥ L > 0, π₀ ∈ M with c = 2^-{cexp}, α = {alpha}, "
                     f"d_KL(π, M) ≤ d_KL(π, π₀); Theorem 3's bound holds on T* with the proof's constants for "
                     f"ε ∈ {{{', '.join(str(e) for e in inst['eps'])}}}")
    return ch


def theorem3_small_d(p: Dict[str, Any]) -> Dict[str, Any]:
    return theorem3_small_d_chain(p["instance"]).document()


def theorem3_small_d_report(p: Dict[str, Any]):
    from ...constructions.dana.zero_token import INSTANCES

    q = INSTANCES[p["instance"]]
    return report_from_chain(f"Theorem 3 with d < N: N = {q['N']}, S = {q['S']}, d = {q['d']}, zero token z = "
                             f"{q['N'] - 1}", theorem3_small_d_chain(p["instance"]))


BUILDERS["dana.theorem3.small_d"] = theorem3_small_d
