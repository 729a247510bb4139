"""Kajitsuka & Sato (ICLR 2025) Theorems F.1 and E.1, built for concrete data and certified end to end.

Theorem F.1 is limited bit complexity, Theorem E.1 the embedding layer
(``docs/kajitsuka-variants.md``).

Every claim is computed from the instance and compared by the independent checker (log base 2;
irrational quantities enclosed by [`exactmem.arith.enclosure`][exactmem.arith.enclosure], an upper bound used through
⌊lower end⌋).

Theorem F.1 (``kajitsuka.limited_bits``), B ∈ [√N], R := 400·√(3d)·n³·r·N⁵·δ⁻¹·π:

* ``n_examples == N``, ``attention_layers == 1``, ``width <= 15``;
* ``relu_depth``, ``depth``, ``max_bits ==`` this implementation's exact values;
* ``depth <= Σ_stacks Σ_subsets ⌊(110)(N_i, C_stack, R_stack)⌋ − 1`` (measured stage R's);
* ``max_bits <=`` eq. (111) per stack with its largest subset, and Lemma C.2 for the token id;
* (144) explicit: ``depth <= 2⌈N/B²⌉·⌊(110)(B², C, R)⌋ − 1``;
* (145) explicit: ``max_bits <= ⌊max{log₂(3dr(nN)²√π/δ), F₂'s Stage-I budget,
  g_B·m + ⌈log₂R⌉, g_B·m + 2}⌋`` with g_B = √(B²/log₂B²), m = max{log₂R, log₂C};
* ``n_params <= 15(d + 1) + 240·D + 12``, D the (144) bound.

Theorem E.1 (``kajitsuka.embedding``), R := 200·√3·n²·r·N⁵·δ⁻¹·ω·π with r = δ = 1 (the one-hot
inputs e_x are (1, 1)-separated; the theorem leaves r, δ undefined):

* ``n_examples == N``, ``attention_layers == 1``, ``width <= 12``;
* ``relu_depth``, ``depth``, ``max_bits``, ``n_params ==`` exact values (n_params: 3ω +
  the head + F^(FF)'s layer shapes);
* ``depth <= ⌊(110)(N', C, R_F)⌋`` and ``max_bits <= max(⌊(111)⌋, bits of f and ω)`` with the
  measured context geometry;
* (130) explicit: ``n_params <= 3ω + 12 + 156·⌊(110)(N, C, R)⌋``;
* (131) explicit: ``max_bits <= max{LEN(F_E) + 1, LEN(ω) + 1, F's Stage-I budget,
  ⌊√(N/log₂N)·m + ⌈log₂R⌉⌋, ⌊√(N/log₂N)·m + 2⌋}``, F_E = ⌈4N²√π·min{ω, N}⌉;
* ``depth <= ⌊(110)(N, C, R)⌋``.
"""

from fractions import Fraction

from exactmem.arith import enclosure as E
from exactmem.certificate.formulas import PI, Formulas, add, ceil, div, emax, floor, log2, mul, power, sqrt, sub
from exactmem.certificate.writer import Claim
from exactmem.constructions.kajitsuka import compact as kajitsuka
from exactmem.constructions.kajitsuka import embedding as KE
from exactmem.constructions.kajitsuka import variants as KV
from exactmem.constructions.vardi import formulas as vf
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.proof import Built, Instance, Theorem
from exactmem.proofs._kajitsuka_core import data_claims, instance_data

SOURCE_F1 = "Kajitsuka & Sato (ICLR 2025) Theorem F.1, eqs. (143)-(150), with Lemma F.1 (136)-(142)"
SOURCE_E1 = "Kajitsuka & Sato (ICLR 2025) Theorem E.1, eqs. (127)-(135)"
ENGINE = "compress"

floor_lo = E.floor_lower


# ----------------------------------------------------------------------------- Theorem F.1


def f1_stage_bounds(b):
    """(depth bound, bits bound) from (110)/(111) per Lemma C.1 subset of each Lemma F.1
    stack, with the stack's measured N_i, C, R — None where a subset has < 2 points."""
    info = b.info
    d, V = info["d"], info["distinct tokens V"]
    depth, bits = [], []
    if b.phi is not None:
        C1 = info["weight range F = ceil(4 N'^2 |A| sqrt(pi))"] + 1
        r2, d2 = info["phi r^2"], info["phi delta^2"]
        if min(l.N for l in b.phi.layouts) < 2:
            return None
        R2 = vardi.paper_R2(r2, d2, V, d)
        depth += [floor_lo(vardi.eq110_depth(l.N, C1, R2)) for l in b.phi.layouts]
        big = max(l.N for l in b.phi.layouts)
        bits.append(floor_lo(vardi.eq111_bits(big, C1, R2, r2, d2, V, d)))
    else:
        depth.append(2)  # F₁ = one projection layer + its output layer
    N2, r2, d2 = info["F2 N (contexts)"], info["F2 r^2"], info["F2 delta^2"]
    if min(l.N for l in b.f2.layouts) < 2:
        return None
    R2 = vardi.paper_R2(r2, d2, N2, 3)
    depth += [floor_lo(vardi.eq110_depth(l.N, info["C"], R2)) for l in b.f2.layouts]
    big = max(l.N for l in b.f2.layouts)
    bits.append(floor_lo(vardi.eq111_bits(big, info["C"], R2, r2, d2, N2, 3)))
    bits.append(floor_lo(vardi.lemma_c2_bits(d, info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"], V)))
    return sum(depth) - 1, max(bits)


def f1_theorem_bounds(info):
    """(depth (144), bits (145), parameter bound) with Thm F.1's R, explicit, as integers; None
    for B = 1 (log B = 0: the formulas are undefined, docs/errata.md)."""
    n, N, d, C, B = info["n"], info["N"], info["d"], info["C"], info["B"]
    if B < 2:
        return None
    r2, d2 = info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"]
    R2 = kajitsuka.paper_R2(n, N, d, r2, d2)
    k = -(-N // (B * B))  # ⌈N/B²⌉ subsets per stack (ϕ̃ has |A| < N labelled points: ≤ k)
    D = 2 * k * floor_lo(vardi.eq110_depth(B * B, C, R2)) - 1
    tid = vardi.lemma_c2_bits(d, r2, d2, n * N)
    g = E.sqrt(Fraction(B * B) / E.log2(B * B))
    logR = E.log2(R2) * Fraction(1, 2)
    mx = E.emax(logR, E.log2(C))
    # F₂'s Stage I: context ids of norm ≤ 20 r n² N³ √(πd)/δ (56) and gaps ≥ 1/n (55), V = N
    s_r2 = E.PI * (Fraction(400) * r2 * n ** 4 * N ** 6 * d / d2)
    f2_stage1 = vardi.lemma_c2_bits(3, s_r2, Fraction(1, n * n), N)
    bits = floor_lo(E.emax(tid, f2_stage1, g * mx + E.ceil(logR), g * mx + 2))
    return D, bits, 15 * (d + 1) + 240 * D + 12


def f1_R_check(info):
    """Does Thm F.1's R bound the stages' own R's (the proof's R ≥ R_ϕ, C_ϕ, R₂)? Returns
    log₂ of R and of the largest measured stage quantity, and the decided comparison."""
    R2 = kajitsuka.paper_R2(info["n"], info["N"], info["d"], info["r^2 (clamped >= 1)"],
                            info["delta^2 (clamped <= 1)"])
    need = [vardi.paper_R2(info["F2 r^2"], info["F2 delta^2"], info["F2 N (contexts)"], 3)]
    if info["phi r^2"] is not None:
        Cphi = info["weight range F = ceil(4 N'^2 |A| sqrt(pi))"] + 1
        need += [vardi.paper_R2(info["phi r^2"], info["phi delta^2"], info["distinct tokens V"], info["d"]),
                 E.enc(Fraction(Cphi * Cphi))]
    top = E.emax(*need)
    half = Fraction(1, 2)
    return E.log2(R2) * half, E.log2(top) * half, R2.lo >= top.hi


def f1_stage_formulas(b, F: Formulas) -> list:
    """`f1_stage_bounds` as claim formulas: each stack's measured C, r², δ² and its subsets' N_i
    as named numbers, (110) per subset and (111) per stack with its largest subset, evaluated by
    the kernel. [] where a subset has fewer than 2 points."""
    info = b.info
    if (b.phi is not None and min(l.N for l in b.phi.layouts) < 2) or min(l.N for l in b.f2.layouts) < 2:
        return []
    depth, bits = [] if b.phi is not None else [2], []  # no ϕ̃: F₁ = one projection layer + its output layer
    stacks = [("F2", b.f2.layouts, info["C"], info["F2 r^2"], info["F2 delta^2"], info["F2 N (contexts)"], 3)]
    if b.phi is not None:
        stacks.insert(0, ("phi", b.phi.layouts, info["weight range F = ceil(4 N'^2 |A| sqrt(pi))"] + 1,
                          info["phi r^2"], info["phi delta^2"], "V", "d"))
    for k, layouts, C, r2, d2, V, d in stacks:
        for q, v in (("C", C), ("r2", r2), ("delta2", d2)) + ((("V", V),) if not isinstance(V, str) else ()):
            F.define(f"{k}.{q}", v, f"Lemma F.1 stack {k}: measured {q}")
        Vn = V if isinstance(V, str) else f"{k}.V"
        R2 = F.define(f"{k}.R2", vf.paper_R2(f"{k}.r2", f"{k}.delta2", Vn, d), f"R^2 of stack {k}")
        sizes = [F.define(f"{k}.N{i + 1}", l.N, f"stack {k}, subset {i + 1}: N_i") for i, l in enumerate(layouts)]
        depth += [floor(vf.eq110_real(Ni, f"{k}.C", R2)) for Ni in sizes]
        big = F.define(f"{k}.Nmax", max(l.N for l in layouts), f"stack {k}: its largest subset")
        bits.append(vf.eq111_bits(big, f"{k}.C", R2, f"{k}.r2", f"{k}.delta2", Vn, d))
    bits.append(vf.lemma_c2_bits("d", "r2", "delta2", "V"))
    return [F.claim("depth", "<=", sub(add(*depth), 1), "eq. (110) per Lemma C.1 subset of each Lemma F.1 stack "
                                                        "(measured N_i, C, R), summed (141), eq. (61)"),
            F.claim("max_bits", "<=", floor(emax(*bits)), "eq. (111) per stack with its largest subset; Lemma C.2 "
                                                           "token id")]


def f1_theorem_formulas(info, F: Formulas) -> list:
    """`f1_theorem_bounds` as claim formulas over the named N, n, d, C, r2, delta2 and Thm F.1's B:
    depth (144) = 2⌈N/B²⌉⌊(110)(B², C, R)⌋ − 1 (named D), bits (145), n_params ≤ 15(d+1) + 240 D + 12.
    [] for B = 1 (log B = 0: the formulas are undefined, docs/errata.md)."""
    if info["B"] < 2:
        return []
    B2 = F.define("B2", info["B"] ** 2, "Thm F.1: subsets of B^2 points")
    R2 = F.define("R2", div(mul(480000, "d", power("n", 6), "r2", power("N", 10), power(PI, 2)), "delta2"),
                  "Thm F.1's R^2 = (400 sqrt(3d) n^3 r N^5 pi / delta)^2")
    gm = mul(sqrt(div(B2, log2(B2))), emax(div(log2(R2), 2), log2("C")))
    s_r2 = div(mul(400, PI, "r2", power("n", 4), power("N", 6), "d"), "delta2")  # F2's Stage I radius² (56)
    return [
        F.claim("depth", "<=", sub(mul(2, ceil(div("N", B2)), floor(vf.eq110_real(B2, "C", R2))), 1),
                "eq. (144) explicit: 2 ceil(N/B^2) (110)(B^2, C, R) - 1, R = 400 sqrt(3d) n^3 r N^5 pi / delta",
                name="D"),
        F.claim("max_bits", "<=", floor(emax(vf.lemma_c2_bits("d", "r2", "delta2", mul("n", "N")),
                                             vf.lemma_c2_bits(3, s_r2, div(1, power("n", 2)), "N"),
                                             add(gm, ceil(div(log2(R2), 2))), add(gm, 2))),
                "eq. (145) explicit: (111) with N = B^2 and the theorem's R; token id log2(3dr(nN)^2 sqrt(pi)/delta)"),
        F.claim("n_params", "<=", add(mul(15, add("d", 1)), mul(240, "D"), 12),
                "15(d+1) + 240 D + 12, D the (144) bound (width 15)"),
    ]


def f1_claims(b):
    info, F = b.info, Formulas()
    return data_claims(info, F) + [
        Claim("attention_layers", "==", 1, "Thm F.1: one uniform-attention layer between F1 and F2"),
        Claim("width", "<=", 15, "Thm F.1: width 15"),
        Claim("relu_depth", "==", KV.relu_depth(b),
              f"this implementation: 1 + phi's {info['phi subsets']} subsets + 1 + F2's {info['F2 subsets']} subsets"),
        Claim("depth", "==", KV.relu_depth(b) + 1, "ReLU layers + the attention layer"),
        Claim("max_bits", "==", KV.max_bits(b), "this implementation: max over subsets of g_i max(rho, c) + 2, "
                                                "Stage-I projections, Stage-II interval constants"),
    ] + f1_stage_formulas(b, F) + f1_theorem_formulas(info, F)


def build_limited(params, seed):
    data = instance_data(params, seed)
    b = KV.build_limited(data, params["B"], seed=seed, attention=params.get("attention", "uniform"))
    lr, ln_, ok = f1_R_check(b.info)
    b.info.update({"log2 R (Thm F.1)": str(lr), "log2 max(R_phi, C_phi, R_2) measured": str(ln_),
                   "R >= R_phi, C_phi, R_2": ok})
    return Built(b.model, data.to_dataset(), f1_claims(b), info=b.info)


# ----------------------------------------------------------------------------- Theorem E.1


def e1_paper_R2(n, N, omega):
    """R² for Thm E.1's R := 200·√3·n²·r·N⁵·δ⁻¹·ω·π read with r = δ = 1: 120000·n⁴·N¹⁰·ω²·π²."""
    return E.PI * E.PI * Fraction(120000 * n ** 4 * N ** 10 * omega ** 2)


def e1_stage_bounds(b):
    """(depth, bits) bounds from (110)/(111) for F^(FF) with its measured N', C, R (the
    contexts' r, δ, V = N', d = 3), and the embedding's own bits; None if N' < 2."""
    info = b.info
    N2, r2, d2 = info["F2 N (contexts)"], info["F2 r^2"], info["F2 delta^2"]
    if N2 < 2:
        return None
    R2 = vardi.paper_R2(r2, d2, N2, 3)
    depth = floor_lo(vardi.eq110_depth(N2, info["C"], R2))  # ReLU (110) − 1, plus the attention layer
    emb = max(info["max f"].bit_length(), info["omega"].bit_length()) + 1
    return depth, max(emb, floor_lo(vardi.eq111_bits(N2, info["C"], R2, r2, d2, N2, 3)))


def e1_theorem_bounds(info):
    """(depth, (130) parameters, (131) bits) with the printed R (r = δ = 1), explicit; None if N < 2."""
    n, N, C, omega = info["n"], info["N"], info["C"], info["omega"]
    if N < 2:
        return None
    R2 = e1_paper_R2(n, N, omega)
    D = floor_lo(vardi.eq110_depth(N, C, R2))
    FE = KE.paper_weight_range(N, omega)
    s_r2 = Fraction(2 * FE * FE + omega * omega)  # ‖s‖² ≤ f² + ω² + avg², f, avg ≤ F_E
    stage1 = vardi.lemma_c2_bits(3, s_r2, Fraction(1, n * n), N)
    g = E.sqrt(Fraction(N) / E.log2(N))
    logR = E.log2(R2) * Fraction(1, 2)
    mx = E.emax(logR, E.log2(C))
    bits = max(FE.bit_length() + 1, omega.bit_length() + 1,
               floor_lo(E.emax(stage1, g * mx + E.ceil(logR), g * mx + 2)))
    return D, 3 * omega + 12 + 156 * D, bits


def e1_R_check(info):
    """Does the printed R (r = δ = 1) bound what the construction needs: Lemma C.1's R for
    the measured context ids? Returns (log₂ printed R, log₂ needed R, decided ≥)."""
    R2p = e1_paper_R2(info["n"], info["N"], info["omega"])
    R2n = vardi.paper_R2(info["F2 r^2"], info["F2 delta^2"], info["F2 N (contexts)"], 3)
    half = Fraction(1, 2)
    return E.log2(R2p) * half, E.log2(R2n) * half, R2p.lo >= R2n.hi


def _len_plus_1(x) -> list:
    """LEN(x) + 1 = ⌊log₂ x⌋ + 2 for an integer x ≥ 1 (the bits of a signed integer of magnitude x)."""
    return add(floor(log2(x)), 2)


def e1_formulas(b, F: Formulas) -> list:
    """`e1_stage_bounds` and `e1_theorem_bounds` as claim formulas over the named N, n, C, omega:
    F^(FF)'s (110)/(111) with its measured N', r², δ² (and the embedding's LEN(max f) + 1,
    LEN(ω) + 1); the printed R² = 120000 n⁴ N¹⁰ ω² π² (r = δ = 1), (110)(N, C, R) named D,
    (130) = 3ω + 12 + 156 D and (131) with F_E the construction's weight range (a given number)."""
    info, out = b.info, []
    F.define("maxf", info["max f"], "the embedding's largest f(x)")
    emb = emax(_len_plus_1("maxf"), _len_plus_1("omega"))
    N2 = info["F2 N (contexts)"]
    if N2 >= 2:
        for q, v in (("N", N2), ("r2", info["F2 r^2"]), ("delta2", info["F2 delta^2"])):
            F.define(f"F2.{q}", v, f"F^(FF): measured {q} of the context ids")
        R2 = F.define("F2.R2", vf.paper_R2("F2.r2", "F2.delta2", "F2.N", 3), "R^2 of F^(FF)")
        out += [F.claim("depth", "<=", floor(vf.eq110_real("F2.N", "C", R2)),
                        "eq. (110) for F^(FF) (measured N', C, R of the context ids)"),
                F.claim("max_bits", "<=", emax(emb, floor(vf.eq111_bits("F2.N", "C", R2, "F2.r2", "F2.delta2", "F2.N", 3))),
                        "eq. (111) for F^(FF); LEN(max f) + 1, LEN(omega) + 1")]
    if info["N"] >= 2:
        R2 = F.define("R2", mul(120000, power("n", 4), power("N", 10), power("omega", 2), power(PI, 2)),
                      "Thm E.1's printed R^2 = (200 sqrt(3) n^2 N^5 omega pi)^2, r = delta = 1")
        FE = F.define("FE", KE.paper_weight_range(info["N"], info["omega"]), "the range of f: ceil(4 N^2 sqrt(pi) "
                                                                              "min(omega, N)), as built")
        gm = mul(sqrt(div("N", log2("N"))), emax(div(log2(R2), 2), log2("C")))
        stage1 = vf.lemma_c2_bits(3, add(mul(2, power(FE, 2)), power("omega", 2)), div(1, power("n", 2)), "N")
        out += [F.claim("depth", "<=", floor(vf.eq110_real("N", "C", R2)),
                        "(110)(N, C, R), R = 200 sqrt(3) n^2 N^5 omega pi (r = delta = 1)", name="D"),
                F.claim("n_params", "<=", add(mul(3, "omega"), 12, mul(156, "D")),
                        "eq. (130) explicit: 3 omega + 12 + 156 (110)(N, C, R)"),
                F.claim("max_bits", "<=", emax(_len_plus_1(FE), _len_plus_1("omega"),
                                               floor(emax(stage1, add(gm, ceil(div(log2(R2), 2))), add(gm, 2)))),
                        "eq. (131) explicit: LEN(ceil(4N^2 sqrt(pi) min(omega,N))) + 1, LEN(omega) + 1, (111)(N, C, R)")]
    return out


def e1_claims(b):
    info, F = b.info, Formulas()
    return [
        F.named(Claim("n_rows", "==", info["N"], "N sequences, duplicates allowed given consistency (eq. (5))"), "N"),
        Claim("n_examples", "==", info["N distinct"], "pairwise-distinct sequences among the N"),
        F.named(Claim("seq_len", "==", info["n"], "sequence length n"), "n"),
        F.named(Claim("label_classes", "<=", info["C"], "labels in [C]"), "C"),
        F.named(Claim("distinct_tokens", "<=", info["omega"], "a vocabulary of omega tokens"), "omega"),
        Claim("attention_layers", "==", 1, "Thm E.1: one uniform-attention layer"),
        Claim("width", "<=", 12, "embedding 3, Lemma C.1 width 12"),
        Claim("relu_depth", "==", KE.relu_depth(b), "this implementation: Lemma C.1 depth of F^(FF)"),
        Claim("depth", "==", KE.relu_depth(b) + 1, "ReLU layers + the attention layer"),
        Claim("max_bits", "==", KE.max_bits(b), "this implementation: embedding f(x), x <= omega; Lemma C.1"),
        Claim("n_params", "==", KE.n_params(b), "3 omega (embedding) + head + F^(FF) layer shapes"),
    ] + e1_formulas(b, F)


def build_embedding(params, seed):
    data = KE.generate_tokens(params["N"], params["n"], params["omega"], params["C"], seed,
                              permuted=params.get("permuted", 0.1), duplicates=params.get("duplicates", 0.05))
    b = KE.build_embedding(data, seed=seed, attention=params.get("attention", "uniform"))
    lp, ln_, ok = e1_R_check(b.info)
    b.info.update({"log2 printed R (r = delta = 1)": str(lp), "log2 Lemma C.1 R of the contexts": str(ln_),
                   "printed R >= needed R": ok})
    return Built(b.model, data.to_dataset(), e1_claims(b), info=b.info)


# ----------------------------------------------------------------------------- theorems


def _inst(name, sizes, **p):
    return Instance(name, p, sizes, engine=ENGINE)


THEOREMS = [
    Theorem(
        name="kajitsuka.limited_bits",
        statement="With B in [sqrt N], N consistently labelled, token-wise (r, delta)-separated sequences are "
                  "memorized at the last position by E_out o F2 o F^(UA) o F1 o E_in of width <= 15 whose two "
                  "feed-forward stacks are Lemma F.1 memorizers (ceil(N/B^2) subsets of B^2 points), with depth "
                  "and bits within eqs. (144)-(145) made explicit (log base 2).",
        source=SOURCE_F1,
        build=build_limited,
        instances=[
            _inst("N12-n4-d3-C4-B2", ("small", "medium"), N=12, n=4, d=3, C=4, B=2),
            _inst("N12-n4-d3-C4-B3", ("small", "medium"), N=12, n=4, d=3, C=4, B=3),
            _inst("N40-n8-d16-C4-B2", ("small", "medium"), N=40, n=8, d=16, C=4, B=2),
            _inst("N40-n8-d16-C4-B6", ("small", "medium"), N=40, n=8, d=16, C=4, B=6),
            _inst("N30-n5-d2-C3-B3-bigden", ("small", "medium"), N=30, n=5, d=2, C=3, B=3, denominator_bits=40),
            _inst("N1000-n8-d16-C4-B8", ("medium", "large"), N=1000, n=8, d=16, C=4, B=8),
            # the B table of docs/kajitsuka-variants.md (B = 31 = ⌊√1000⌋: Theorem B.1's network)
            *[_inst(f"N1000-n8-d16-C4-B{B}", ("large",), N=1000, n=8, d=16, C=4, B=B) for B in (2, 4, 16, 31)],
        ],
    ),
    Theorem(
        name="kajitsuka.embedding",
        statement="N consistently labelled (eq. (129)) token-id sequences in [omega]^n are memorized at the last "
                  "position by E_out o F^(FF) o F^(UA) o F^(EM) with the embedding matrix of eq. (135), parameters "
                  "and bits within eqs. (130)-(131) made explicit (R with r = delta = 1, log base 2).",
        source=SOURCE_E1,
        build=build_embedding,
        instances=[
            _inst("N12-n4-omega50-C4", ("small", "medium"), N=12, n=4, omega=50, C=4),
            _inst("N40-n6-omega10-C3", ("small", "medium"), N=40, n=6, omega=10, C=3),
            _inst("N60-n5-omega200-C2", ("small", "medium"), N=60, n=5, omega=200, C=2),
            _inst("N1-n1-omega1-C1", ("small",), N=1, n=1, omega=1, C=1),
            _inst("N1000-n8-omega64-C4", ("medium",), N=1000, n=8, omega=64, C=4),
            _inst("N1000-n8-omega5000-C4", ("medium",), N=1000, n=8, omega=5000, C=4),
        ],
    ),
]
