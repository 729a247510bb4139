"""Kajitsuka & Sato (ICLR 2025) Theorem 4.1 / B.1 and Corollary 4.1, built for concrete data and certified end to end.

Theorem 4.1 / B.1 is next-token prediction, Corollary 4.1 sequence-to-sequence.

Every claim is computed from the instance and compared by the independent checker
(``docs/kajitsuka.md`` derives each one; log base 2, enclosures rounded the safe way):

* ``n_examples == N``, ``attention_layers == 1``, ``width <= 14`` (Thm B.1);
* ``relu_depth`` and ``depth`` (ReLU + attention layers) ``==`` this implementation's exact
  values (from the rounding choices of the two Lemma C.1 memorizers);
* ``depth <= ⌊(110)_ϕ̃⌋ + ⌊(110)_F₂⌋ − 1``: eq. (110) for each Lemma C.1 stage with the
  stage's measured N, C, R (the paper's totals (61): depth(F₁) + depth(F₂) + 1 in affine
  layers; each ReLU stack has one affine layer fewer than (110) counts);
* ``depth <= 2⌊(110)(N, C, R)⌋ − 1`` with Theorem B.1's R = 400·√(3d)·n³·r·N⁵·δ⁻¹·π written
  out (eq. (41)); seq-to-seq: nN for N and R = 400·√(3d)·n³·r·N³(nN)²·δ⁻¹·π (note §4.9);
* ``max_bits ==`` the implementation's exact maximum, ``max_bits <=`` eq. (111) per stage and
  ``<=`` the theorem form (42) with the same R;
* ``n_params <= 14(d + 1) + 210·D + 12`` with D the depth bound above: the explicit
  Õ(d + √N) parameter bound (every affine layer after the first has ≤ 14 outputs and ≤ 15
  inputs with its bias; the attention head ≤ 12 entries).
"""

from fractions import Fraction
from typing import List, NamedTuple, Optional, Tuple

from exactmem.arith import enclosure as E
from exactmem.certificate.formulas import PI, Formulas, add, ceil, div, emax, floor, log2, mul, power, sqrt, sub
from exactmem.certificate.writer import Claim
from exactmem.constructions.kajitsuka import compact as kajitsuka
from exactmem.constructions.vardi import formulas as vf
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.data.kajitsuka_data import generate
from exactmem.proof import Built, Instance, Theorem

SOURCE = "Kajitsuka & Sato (ICLR 2025) Theorem 4.1 / B.1, eqs. (41)-(42), (50)-(62)"
SOURCE_S2S = "Kajitsuka & Sato (ICLR 2025) Corollary 4.1 (constants: note kajitsuka.md §4.9)"
ENGINE = "compress"  # the producer's exact engine (see exactmem/proofs/vardi.py)


floor_lo = E.floor_lower


def theorem_R2(info):
    """R² of Thm B.1 (next-token) or its seq-to-seq analogue (note §4.9: N² → (nN)² in R₂)."""
    n, N, d, r2, d2 = info["n"], info["N"], info["d"], info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"]
    R2 = kajitsuka.paper_R2(n, N, d, r2, d2)
    if info["setting"] == "seq2seq":
        R2 = R2 * Fraction(n * n)
    return R2


class C1Stage(NamedTuple):
    """One Lemma C.1 memorizer of a Kajitsuka network, with the measured quantities that
    eqs. (110)/(111) take: labelled points N, classes C, R² (from r², δ², V inputs in ℝ^d)."""

    name: str  # "phi" (ϕ̃ of Lemma B.3) or "F2"
    layout: object  # its vardi.Layout
    N: int
    C: int
    R2: E.Enc
    r2: Fraction
    delta2: Fraction
    V: int
    d: int


def c1_stages(b) -> List[C1Stage]:
    """The Lemma C.1 stages of a built Kajitsuka network (compact or the paper's blocks): ϕ̃ when it
    was built (some sequences share a multiset), then F₂ on the context ids."""
    info = b.info
    out = []
    if b.phi_layout is not None:
        r2, d2, V, d = info["phi r^2"], info["phi delta^2"], info["distinct tokens V"], info["d"]
        out.append(C1Stage("phi", b.phi_layout, info["phi N (labelled = |A|)"],
                           info["weight range F = ceil(4 N'^2 |A| sqrt(pi))"] + 1, vardi.paper_R2(r2, d2, V, d),
                           r2, d2, V, d))
    N2, r2, d2 = info["F2 N (contexts)"], info["F2 r^2"], info["F2 delta^2"]
    out.append(C1Stage("F2", b.f2_layout, N2, info["C"], vardi.paper_R2(r2, d2, N2, 3), r2, d2, N2, 3))
    return out


def stage_bounds(b):
    """(depth bound, bits bound) from eqs. (110)/(111) applied to each Lemma C.1 stage with
    its measured N, C, R — or None where a stage has fewer than 2 labelled points (the
    formulas need log N > 0)."""
    info = b.info
    stages = c1_stages(b)
    if any(s.N < 2 for s in stages):
        return None
    depth = [] if b.phi_layout is not None else [2]  # no ϕ̃: F₁ = one projection layer + its output layer
    depth += [floor_lo(vardi.eq110_depth(s.N, s.C, s.R2)) for s in stages]
    bits = [floor_lo(vardi.eq111_bits(s.N, s.C, s.R2, s.r2, s.delta2, s.V, s.d)) for s in stages]
    # the token id (Lemma C.2 on the V distinct tokens): log2(3 d r V² √π / δ)
    bits.append(floor_lo(vardi.lemma_c2_bits(info["d"], info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"],
                                             info["distinct tokens V"])))
    return sum(depth) - 1, max(bits)


def theorem_bounds(info):
    """(depth bound (41), bits bound (42), parameter bound) with Thm B.1's R, as integers.

    Depth: each of the two Lemma C.1 stacks is bounded by (110)(N, C, R) — R ≥ R₁, C₁, R₂
    (Thm B.1's proof) — so depth ≤ 2⌊(110)⌋ − 1 (ReLU + attention layers). Bits (42): the
    stages' eq. (111) with R, and the token id's log2(3 d r (nN)² √π/δ)."""
    n, N, d, C = info["n"], info["N"], info["d"], info["C"]
    Nn = N * n if info["setting"] == "seq2seq" else N
    r2, d2 = info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"]
    R2 = theorem_R2(info)
    if Nn < 2:
        return None
    D = 2 * floor_lo(vardi.eq110_depth(Nn, C, R2)) - 1
    tid = vardi.lemma_c2_bits(d, r2, d2, n * N)
    g = E.sqrt(Fraction(Nn) / E.log2(Nn))
    logR = E.log2(R2) * Fraction(1, 2)
    mx = E.emax(logR, E.log2(C))
    # F₂'s Stage I: points in R³ of norm ≤ 20 r n² N³ √(πd)/δ (56) and gaps ≥ 1/n (55), V = Nn
    s_r2 = E.PI * (Fraction(400) * r2 * n ** 4 * N ** 6 * d / d2)
    f2_stage1 = vardi.lemma_c2_bits(3, s_r2, Fraction(1, n * n), Nn)
    B = floor_lo(E.emax(tid, f2_stage1, g * mx + E.ceil(logR), g * mx + 2))
    P = 14 * (d + 1) + 210 * D + 12
    return D, B, P


def data_claims(info, F: Optional[Formulas] = None) -> List[Claim]:
    """The dataset quantities the bounds below take, each recounted by the kernel from the data:
    N sequences (duplicates allowed, note §2.3) of which ``N distinct`` differ, length n, at most
    C label values, Assumption 4.1's token-wise (r, δ)-separation as ||x||² ≤ r², ||x − x'||² ≥ δ²,
    the token dimension d and (where the build counted them) V distinct tokens. With ``F``, N, n,
    C, r2, delta2, d and V are named for claim formulas."""
    out = [
        Claim("n_rows", "==", info["N"], "N sequences, duplicates allowed given consistency (eq. (5)/(10))"),
        Claim("n_examples", "==", info["N distinct"], "pairwise-distinct sequences among the N"),
        Claim("seq_len", "==", info["n"], "sequence length n"),
        Claim("label_classes", "<=", info["C"], "labels in [C]"),
        Claim("max_norm2", "<=", info["r^2 (clamped >= 1)"], "Assumption 4.1 (1): ||x|| <= r, r >= 1"),
        Claim("min_sep2", ">=", info["delta^2 (clamped <= 1)"], "Assumption 4.1 (2): distinct tokens >= delta apart, "
                                                                  "delta <= 1"),
        Claim("input_dim", "==", info["d"], "token dimension d"),
    ]
    names = ["N", None, "n", "C", "r2", "delta2", "d"]
    if "distinct tokens V" in info:
        out.append(Claim("distinct_tokens", "<=", info["distinct tokens V"], "at most V distinct tokens (Lemma C.2's V; "
                                                                            "the bounds grow with V)"))
        names.append("V")
    return out if F is None else [F.named(c, n) if n else c for c, n in zip(out, names)]


def stage_formulas(b, F: Formulas, quantity: str = "depth", integer: bool = False, minus: int = 1) -> List[Claim]:
    """`stage_bounds` as claim formulas: each Lemma C.1 stage's measured N, C, r², δ², V, d as
    named numbers, R² = 400 r² V⁴ π d / δ², eq. (110) and (111) per stage, evaluated by the kernel:
    ``quantity <= Σ (110) − minus`` ((110) floored, or with the lemmas' integers when ``integer``)
    and max_bits. [] where a stage has fewer than 2 labelled points."""
    stages = c1_stages(b)
    if any(s.N < 2 for s in stages):
        return []
    depth, bits = [] if b.phi_layout is not None else [2], []
    for s in stages:
        k = s.name
        for q, v in (("N", s.N), ("C", s.C), ("r2", s.r2), ("delta2", s.delta2), ("V", s.V), ("d", s.d)):
            F.define(f"{k}.{q}", v, f"Lemma C.1 stage {k}: measured {q}")
        R2 = F.define(f"{k}.R2", vf.paper_R2(f"{k}.r2", f"{k}.delta2", f"{k}.V", f"{k}.d"), f"R^2 of stage {k}")
        depth.append(vf.eq110_integer(f"{k}.N", f"{k}.C", R2) if integer else floor(vf.eq110_real(f"{k}.N", f"{k}.C", R2)))
        bits.append(vf.eq111_bits(f"{k}.N", f"{k}.C", R2, f"{k}.r2", f"{k}.delta2", f"{k}.V", f"{k}.d"))
    bits.append(vf.lemma_c2_bits("d", "r2", "delta2", "V"))
    how = "with Lemmas G.3/G.6's integers m, n, ceil log R, ceil log C" if integer else "(measured N, C, R)"
    return [F.claim(quantity, "<=", sub(add(*depth), minus), f"eq. (110) per Lemma C.1 stage {how}, summed, eq. (61)"
                                                             + (f", minus {minus}" if minus != 1 else "")),
            F.claim("max_bits", "<=", floor(emax(*bits)), "eq. (111) per stage and Lemma C.2 for the token id, "
                                                           "eq. (62)")]


def theorem_formulas(info, F: Formulas, quantity: str = "depth", integer: bool = False, params=None,
                     params_source: str = "Õ(d + sqrt N) made explicit: 14(d+1) + 210 D + 12, D the (41) bound"
                     ) -> List[Claim]:
    """`theorem_bounds` as claim formulas over the named N, n, d, C, r2, delta2: Thm B.1's
    R² = 160000·3d·n⁶·r²·N¹⁰·π²/δ² (seq-to-seq: ·n², nN for N), ``quantity`` (41) ≤ 2·(110)(N, C, R) − 1
    ((110) floored, or with the lemmas' integers when ``integer``), named D; bits (42); and
    n_params ≤ ``params`` (an expression in D; default 14(d + 1) + 210·D + 12). [] when nN < 2."""
    seq = info["setting"] == "seq2seq"
    if (info["N"] * info["n"] if seq else info["N"]) < 2:
        return []
    Nn = F.define("Nn", mul("N", "n"), "nN: seq-to-seq counts every position") if seq else "N"
    R2 = F.define("R2", div(mul(480000, "d", power("n", 8 if seq else 6), "r2", power("N", 10), power(PI, 2)),
                            "delta2"), "Thm B.1's R^2 = (400 sqrt(3d) n^3 r N^5 pi / delta)^2" + (", times n^2 (note "
                                                                                                     "§4.9)" if seq else ""))
    gm = mul(sqrt(div(Nn, log2(Nn))), emax(div(log2(R2), 2), log2("C")))
    s_r2 = div(mul(400, PI, "r2", power("n", 4), power("N", 6), "d"), "delta2")  # F2's Stage I radius² (56)
    e110 = vf.eq110_integer(Nn, "C", R2) if integer else floor(vf.eq110_real(Nn, "C", R2))
    return [
        F.claim(quantity, "<=", sub(mul(2, e110), 1), "eq. (41): 2 x (110)(N, C, R) - 1, R = 400 sqrt(3d) n^3 r N^5 "
                                                      "pi / delta" + (", (110) with the lemmas' integers" if integer
                                                                      else ""), name="D"),
        F.claim("max_bits", "<=", floor(emax(vf.lemma_c2_bits("d", "r2", "delta2", mul("n", "N")),
                                             vf.lemma_c2_bits(3, s_r2, div(1, power("n", 2)), Nn),
                                             add(gm, ceil(div(log2(R2), 2))), add(gm, 2))),
                "eq. (42): (111) with the theorem's R; token id log2(3dr(nN)^2 sqrt(pi)/delta)"),
        F.claim("n_params", "<=", params or add(mul(14, add("d", 1)), mul(210, "D"), 12), params_source),
    ]


def claims(b):
    info, F = b.info, Formulas()
    return data_claims(info, F) + [
        Claim("attention_layers", "==", 1, "Thm B.1: one uniform-attention layer between F1 and F2"),
        Claim("width", "<=", 14, "Thm B.1: width 14 (ϕ̃ 12 + token id + carried register)"),
        Claim("relu_depth", "==", kajitsuka.relu_depth(b),
              "this implementation: 1 + ϕ̃ Stages II-III + Lemma C.1 depth of F2"),
        Claim("depth", "==", kajitsuka.relu_depth(b) + 1, "ReLU layers + the attention layer"),
        Claim("max_bits", "==", kajitsuka.max_bits(b), "this implementation: max over stages of gP + 2 and "
                                                        "the three Stage-I projections"),
    ] + stage_formulas(b, F) + theorem_formulas(info, F)


def instance_data(params, seed):
    """The seeded data of an instance's parameters (N, n, d, C; optional setting, vocab,
    permuted, duplicates, denominator_bits), shared by every Kajitsuka proof module."""
    return generate(params["N"], params["n"], params["d"], params["C"], seed, params.get("setting", "next_token"),
                    vocab=params.get("vocab"), permuted=params.get("permuted", 0.1),
                    duplicates=params.get("duplicates", 0.05), denominator_bits=params.get("denominator_bits", 0))


def stage_spans(b) -> List[Tuple[str, int, int]]:
    """Named layer ranges of a built network (the layer counts of each Lemma C.1 memorizer
    follow from its layout: Stage II m + 1 layers, Stage III 3 + max(ρ, c − 1) + (g − 1)P)."""
    out: List[Tuple[str, int, int]] = []
    i = 0

    def add(name, k):
        nonlocal i
        out.append((name, i, i + k))
        i += k

    add("F1: E_in, token id F (Lemma C.2) and phi's Stage I projection", 1)
    if not hasattr(b, "f2_layout"):  # a network without the compact layout: no stage names
        return []
    lay = b.phi_layout
    if lay is not None:
        add("F1: phi Stage II, group selection (Lemmas G.2-G.3)", lay.m + 1)
        add("F1: phi Stage III, bit extraction (Lemma G.6)", lay.relu_layers - (lay.m + 1))
    add("F1: output (phi, F, 0)", 1)
    add("uniform attention F^(UA), eq. (52)", 1)
    lay = b.f2_layout
    add("F2: Stage I projection of the context ids (Lemma C.2)", 1)
    add("F2: Stage II, group selection (Lemmas G.2-G.3)", lay.m + 1)
    add("F2: Stage III, bit extraction (Lemma G.6)", lay.relu_layers - (lay.m + 1))
    add("E_out (F2's affine output layer)", 1)
    if i != len(b.model.layers):  # never expected; fall back to no stage names rather than wrong ones
        return []
    return out


def network_build(construct, claims_of):
    """A Theorem's ``build``: the instance's seeded data, the network ``construct(data, seed=,
    attention=)`` builds for it (attention "uniform" unless the parameters say otherwise), and
    ``claims_of`` that network; shared by the compact and the paper's-blocks Kajitsuka modules."""
    def build(params, seed):
        data = instance_data(params, seed)
        b = construct(data, seed=seed, attention=params.get("attention", "uniform"))
        spans = stage_spans(b)
        return Built(b.model, data.to_dataset(), claims_of(b), info=b.info,
                     meta={"stages": [{"name": n, "start": s, "stop": e} for n, s, e in spans]} if spans else {})
    return build


def next_token_instance(name, sizes, **p):
    """An Instance built by the producer's exact engine; the setting is next-token unless given."""
    p.setdefault("setting", "next_token")
    return Instance(name, p, sizes, engine=ENGINE)


build = network_build(kajitsuka.build, claims)
_inst = next_token_instance


THEOREMS = [
    Theorem(
        name="kajitsuka.next_token",
        statement="N consistently labelled (eq. (5)), token-wise (r, delta)-separated sequences in Q^(d x n) with "
                  "labels in {0..C-1} are memorized exactly at the last position by E_out o F2 o F^(UA) o F1 o E_in "
                  "of width <= 14, with depth and bit complexity within eqs. (41)-(42) (log base 2).",
        source=SOURCE,
        build=build,
        instances=[
            _inst("N12-n4-d3-C4", ("small", "medium"), N=12, n=4, d=3, C=4),
            _inst("N40-n8-d16-C4", ("small", "medium"), N=40, n=8, d=16, C=4),
            _inst("N30-n5-d2-C3-bigden", ("small", "medium"), N=30, n=5, d=2, C=3, denominator_bits=40),
            _inst("N1-n1-d1-C1", ("small",), N=1, n=1, d=1, C=1),
            _inst("N1000-n8-d16-C4", ("medium",), N=1000, n=8, d=16, C=4),
            _inst("N10000-n8-d16-C4", ("large",), N=10000, n=8, d=16, C=4),
            _inst("N100000-n8-d16-C4", ("xlarge",), N=100000, n=8, d=16, C=4),
            _inst("N1000000-n8-d16-C4", ("xxlarge",), N=1000000, n=8, d=16, C=4),
        ],
    ),
    Theorem(
        name="kajitsuka.next_token_hardmax",
        statement="The same Transformer with the uniform layer written as a hard-attention layer (zero W_Q, W_K, "
                  "hardmax eq. (1): every key ties) gives identical outputs and is certified separately.",
        source=SOURCE + ", eq. (12)",
        build=build,
        instances=[
            _inst("N12-n4-d3-C4-hardmax", ("small", "medium"), N=12, n=4, d=3, C=4, attention="hardmax"),
            _inst("N40-n8-d16-C4-hardmax", ("small", "medium"), N=40, n=8, d=16, C=4, attention="hardmax"),
            _inst("N1000-n8-d16-C4-hardmax", ("medium",), N=1000, n=8, d=16, C=4, attention="hardmax"),
        ],
    ),
    Theorem(
        name="kajitsuka.seq2seq",
        statement="N consistently labelled (eq. (10)) separated sequences with a label at every position are "
                  "memorized exactly at every position by the same architecture (F2 memorizes up to nN context "
                  "ids), width <= 14, depth and bits within the nN analogue of eqs. (41)-(42).",
        source=SOURCE_S2S,
        build=build,
        instances=[
            _inst("N10-n4-d3-C4", ("small", "medium"), N=10, n=4, d=3, C=4, setting="seq2seq"),
            _inst("N24-n6-d8-C2", ("small", "medium"), N=24, n=6, d=8, C=2, setting="seq2seq"),
            _inst("N1000-n8-d16-C4", ("medium", "large"), N=1000, n=8, d=16, C=4, setting="seq2seq"),
        ],
    ),
]
