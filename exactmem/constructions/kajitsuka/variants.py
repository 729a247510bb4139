"""Kajitsuka & Sato (ICLR 2025) Theorem F.1: the Theorem B.1 Transformer with limited bit complexity.

Both token-wise feed-forward stacks (ϕ̃ inside F₁, and F₂) are built with Lemma F.1 instead of
Lemma C.1. See ``docs/kajitsuka-variants.md``.

Lemma F.1 (eqs. (136)–(142)): one shared Stage-I projection, then the labelled points, sorted,
are split into ⌈N/B²⌉ subsets of at most B² consecutive points (balanced sizes,
`balanced_sizes`); each subset gets its own Lemma C.1
Stages II–III (every other point is an extra point of that memorizer, so it outputs exactly 0
there), and the outputs are summed in a carried register r (eq. (140):
F_i(x, r) = (x, r + F̃_i(x)), the addition folded into the next subset's first layer). Each
memorizer's crafted integers hold g_B = ⌈√(B²/log₂ B²)⌉ slots instead of g_N, so the bits per
weight fall from ~√(N/log N)·log R to ~B/√(log B)·log R while the depth grows ~N/B².

The rest is Theorem B.1 (`exactmem.constructions.kajitsuka.compact`): Lemma B.1 witnesses A,
Lemma B.2 weights f (verified), the token id F (Lemma C.2) carried beside ϕ̃, one
uniform-attention layer, context ids s_n (eq. (53)) and F₂ on them.

Only building happens here; [`exactmem.pipeline.certify`][exactmem.pipeline.certify] evaluates and the independent checker
judges. The shared pieces (`sequence_ids`, `context_ids`) are also used by the
embedding variant (`exactmem.constructions.kajitsuka.embedding`, Theorem E.1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from ...data.dataset import DataError
from ...data.kajitsuka_data import SequenceData, check_consistency, check_separation
from ...model.layers import Model
from ...arith.numbers import bits
from . import compact as kajitsuka
from ..vardi import memorizer as vardi

Expr = vardi.Expr

# ----------------------------------------------------------------------------- shared: ids


@dataclass
class SequenceIds:
    """Lemmas B.1/B.2 on the distinct multisets: witnesses A, weights f, range F, sums."""

    ms_index: Dict[tuple, int]  # sorted token ids -> multiset number
    multisets: List[Counter]
    A: List[Hashable]
    f: Dict[Hashable, int]
    F: int
    tries: int
    sums: List[int]  # Σ_x m(x) f(x) per multiset (eq. (38) / (134))


def sequence_ids(id_seqs: Sequence[Sequence[Hashable]], seed: int) -> SequenceIds:
    """The distinct multisets of the sequences, Lemma B.1's witness set A
    (`kajitsuka.witness_set`) and Lemma B.2's verified weights f: A → [1, F],
    F = ⌈4N'²|A|√π⌉ (`kajitsuka.token_weights`)."""
    multisets, ms_index = kajitsuka.distinct_multisets(id_seqs)
    A = kajitsuka.witness_set(multisets)
    f, F, tries = kajitsuka.token_weights(multisets, A, seed)
    return SequenceIds(ms_index, multisets, A, f, F, tries, kajitsuka.weighted_counts(multisets, f))


def context_ids(id_seqs: Sequence[Sequence[Hashable]], labels: Sequence[int], ids: SequenceIds,
                token_id: Callable[[Hashable], Fraction]) -> Dict[tuple, int]:
    """Next-token context ids s_n = (f(x_n), F(x_n), (1/n) Σ_k f(x_k)) (eq. (53); f = 0 off A)
    with their labels (`kajitsuka.context_labels`, which raises on a collision)."""
    return kajitsuka.context_labels(id_seqs, labels, "next_token", ids.f, ids.sums, ids.ms_index,
                                    lambda t: Fraction(token_id(t)))[0]


# ----------------------------------------------------------------------------- Lemma F.1 stages


@dataclass
class F1Stack:
    """The rounding choices of one Lemma F.1 stack: one Lemma C.1 layout per subset, plus the
    largest Stage-II interval constant (2a_j, 2b_j), whose bits can exceed gP + 2 when g = 1."""

    layouts: List[vardi.Layout]
    stage2_bits: int

    @property
    def relu_layers(self) -> int:
        """Stages II–III of every subset (Stage I and the sums r cost no extra layer)."""
        return sum(l.relu_layers for l in self.layouts)

    def max_bits(self, proj_bits: int) -> int:
        """Exact max bits: the doubling weights g_i·max(ρ, c) + 2 of each subset, Stage I's
        projection, the interval constants."""
        return max([vardi.max_bits_impl(l, proj_bits) for l in self.layouts] + [self.stage2_bits])


def balanced_sizes(N: int, B: int) -> List[int]:
    """Lemma F.1's split with k = ⌈N/B²⌉ subsets of consecutive sorted points, balanced: sizes
    ⌊N/k⌋ or ⌈N/k⌉ (each ≤ B²; the paper assumes B² | N, where this is its split). Unlike a
    last short subset, no subset has a single point when N ≥ 2 and B ≥ 2 (sizes ≥ B²/2), so
    eq. (110) (undefined at N = 1) applies to every subset."""
    if B < 1 or N < 1:
        raise DataError(f"N = {N}, B = {B}: need N ≥ 1 and B ≥ 1")
    k = -(-N // (B * B))
    return [N // k + (1 if i < N % k else 0) for i in range(k)]


def emit_f1_stages(prog: vardi.Program, prep: vardi.Prepared, proj: vardi.Projection, C: int, B: int,
                   plant_flip: Optional[int] = None) -> Tuple[Expr, F1Stack]:
    """Lemma F.1 after Stage I (register ``x`` holds it): ⌈N/B²⌉ subsets of ≤ B² consecutive
    sorted labelled points (`balanced_sizes`; one subset if N ≤ B²), each Lemma C.1 Stages II–III
    (`vardi.emit_memorizer`), outputs summed in ``r`` (eq. (140)). Returns the output
    expression (r + the last subset's output) and the stack's layouts.

    ``plant_flip`` (tests only, a planted wrong step): subset ``plant_flip`` encodes its first
    label as (y + 1) mod C."""
    if B < 1:
        raise DataError(f"B = {B}: Lemma F.1 needs B ≥ 1")
    xs, ys = vardi.sorted_labelled(prep, proj)
    rho = max(2, max(vardi.floor_frac(x) for x in xs).bit_length())
    c = vardi.label_width(C)
    layouts: List[vardi.Layout] = []
    prev: Optional[Expr] = None
    start, s2 = 0, 0
    for i, n_i in enumerate(balanced_sizes(len(xs), B)):
        lay = vardi.plan_layout(n_i, rho, c, None)
        sub_y = list(ys[start:start + n_i])
        if plant_flip == i:
            sub_y[0] = (sub_y[0] + 1) % C
        first = None if i == 0 else {"r": prev if i == 1 else vardi.plus_expr(prev, {"r": 1})}
        prev, groups = vardi.emit_memorizer(prog, xs[start:start + n_i], sub_y, lay, "paper", first)
        s2 = max([s2] + [max(bits(2 * g.a), bits(2 * g.b)) for g in groups])
        layouts.append(lay)
        start += n_i
    out = prev if len(layouts) == 1 else vardi.plus_expr(prev, {"r": 1})
    return out, F1Stack(layouts, s2)


def build_f1_model(points: Sequence[tuple], labels: Sequence[int], C: int, B: int, seed: int,
                   plant_flip: Optional[int] = None) -> Tuple[Model, Dict[str, object]]:
    """F₂ of Theorem F.1: Lemma F.1 on the context ids (Stage I on R³, then
    `emit_f1_stages`, then the affine output layer E_out). Unlike
    `vardi.build_f1` it accepts B² > N (then one subset: Lemma C.1)."""
    prep = vardi.prepare(points, labels, (), C)
    proj = vardi.project_to_line(prep, seed)
    prog = vardi.Program([f"z{k}" for k in range(prep.d)])
    vardi.emit_stage1(prog, proj)
    out, stack = emit_f1_stages(prog, prep, proj, C, B, plant_flip)
    prog.layer({"out": out}, relu=False, carry=False)
    model = Model(tuple(prog.compile(["out"])), "vectors", prep.d, "last", "identity", name="f2_lemma_f1")
    info = {"N": prep.n_labelled, "r^2": prep.r2, "delta^2": prep.delta2, "projection bits": proj.bits,
            "stack": stack}
    return model, info


# ----------------------------------------------------------------------------- Theorem F.1


@dataclass
class LimitedBuild:
    """The model and every fact of Theorem F.1's proof measured on the instance."""

    model: Model
    info: Dict[str, object] = field(default_factory=dict)
    phi: Optional[F1Stack] = None
    f2: Optional[F1Stack] = None


def build_limited(data: SequenceData, B: int, seed: int = 0, attention: str = "uniform",
                  plant: Optional[Tuple[str, int]] = None) -> LimitedBuild:
    """Theorem F.1 (next-token): E_out ∘ F₂ ∘ F^(UA) ∘ F₁ ∘ E_in with ϕ̃ and F₂ built by
    Lemma F.1 with parameter B ∈ [√N] (eqs. (147)–(150)).

    ``plant = ("phi" | "F2", k)`` (tests only) flips the first label of subset k of that
    stack: a planted wrong step the independent checker must refute."""
    if data.setting != "next_token":
        raise DataError("Theorem F.1 is stated for next-token prediction")
    N = data.N
    if not 1 <= B or B * B > N:
        raise DataError(f"B = {B} is not in [√N] = [1, ⌊√{N}⌋] (Theorem F.1 needs 1 ≤ B ≤ √N)")
    sep = check_separation(data)
    check_consistency(data)
    n, d = data.n, data.d
    tokens, id_seqs = data.token_index()
    V = len(tokens)
    ids = sequence_ids(id_seqs, seed)
    flip_phi = plant[1] if plant and plant[0] == "phi" else None
    flip_f2 = plant[1] if plant and plant[0] == "F2" else None

    # F₁: token id (Lemma C.2) beside ϕ̃ (Lemma F.1 with zero on V \ A), as in Thm B.1
    prep_tok = vardi.prepare(tokens, [0] * V, (), 1, min_dist2=sep.min_dist2)
    proj_tok = vardi.project_to_line(prep_tok, seed + 11)
    inputs = [f"z{k}" for k in range(d)]
    prog = vardi.Program(inputs)
    first = {"tid": vardi.stage1_expr(proj_tok, inputs)}
    prep_phi = proj_phi = phi = None
    if ids.A:
        extra = [tokens[j] for j in range(V) if j not in ids.f]
        prep_phi = vardi.prepare([tokens[j] for j in ids.A], [ids.f[j] for j in ids.A], extra, ids.F + 1,
                                 min_dist2=sep.min_dist2)
        proj_phi = vardi.project_to_line(prep_phi, seed + 12)
        first["x"] = vardi.stage1_expr(proj_phi, inputs)
    prog.layer(first, carry=False)
    phi_out: Expr = ({}, 0)
    if ids.A:
        phi_out, phi = emit_f1_stages(prog, prep_phi, proj_phi, ids.F + 1, B, flip_phi)
    prog.layer({"phi": phi_out, "tid": ({"tid": 1}, 0), "avg": ({}, 0)}, relu=False, carry=False)
    f1_layers = prog.compile(["phi", "tid", "avg"])

    tid = proj_tok.values
    ctx = context_ids(id_seqs, data.labels, ids, lambda j: tid[j])
    contexts = list(ctx)
    f2_model, f2_info = build_f1_model(contexts, [ctx[s] for s in contexts], data.C, B, seed + 13, flip_f2)
    layers = tuple(f1_layers) + (kajitsuka._uniform_attention(attention),) + tuple(f2_model.layers)
    model = Model(layers, "vectors", d, "last", "identity", name=f"kajitsuka_limited_bits_B{B}_{attention}")
    info: Dict[str, object] = {
        "setting": "next_token", "attention": attention, "N": N, "N distinct": data.N_distinct, "n": n, "d": d, "C": data.C, "B": B,
        "distinct multisets N'": len(ids.multisets), "distinct tokens V": V, "witness set |A|": len(ids.A),
        "weight range F = ceil(4 N'^2 |A| sqrt(pi))": ids.F, "max f": max(ids.f.values(), default=0),
        "weight draws": ids.tries, "r^2 (clamped >= 1)": sep.r2, "delta^2 (clamped <= 1)": sep.delta2,
        "token id projection bits": proj_tok.bits,
        "phi projection bits": proj_phi.bits if proj_phi else None,
        "phi N (labelled = |A|)": len(ids.A),
        "phi r^2": prep_phi.r2 if prep_phi else None, "phi delta^2": prep_phi.delta2 if prep_phi else None,
        "phi subsets": len(phi.layouts) if phi else 0,
        "phi subset sizes": [l.N for l in phi.layouts] if phi else [],
        "phi slots per subset": [l.g for l in phi.layouts] if phi else [],
        "F2 N (contexts)": len(contexts), "F2 r^2": f2_info["r^2"], "F2 delta^2": f2_info["delta^2"],
        "F2 projection bits": f2_info["projection bits"], "F2 subsets": len(f2_info["stack"].layouts),
        "F2 subset sizes": [l.N for l in f2_info["stack"].layouts],
        "F2 slots per subset": [l.g for l in f2_info["stack"].layouts],
        "planted": plant,
    }
    return LimitedBuild(model, info, phi, f2_info["stack"])


def relu_depth(b: LimitedBuild) -> int:
    """Exact ReLU depth: F₁ = 1 (both projections) + ϕ̃'s subsets' Stages II–III; F₂ = 1
    (Stage I) + its subsets' Stages II–III."""
    return 1 + (b.phi.relu_layers if b.phi else 0) + 1 + b.f2.relu_layers


def max_bits(b: LimitedBuild) -> int:
    """Exact max bits per weight: each stack's `F1Stack.max_bits`, the token id's
    projection, and 2 (the 0/1 attention and output weights)."""
    parts = [2, b.info["token id projection bits"], b.f2.max_bits(b.info["F2 projection bits"])]
    if b.phi:
        parts.append(b.phi.max_bits(b.info["phi projection bits"]))
    return max(parts)


def b_table(N: int, Bs: Sequence[int], n: int = 8, d: int = 16, C: int = 4, seed: int = 0) -> List[Dict]:
    """Build Theorem F.1 for each B on the seeded data of ``proofs/kajitsuka.py`` and measure it
    (no certification; ``python -m exactmem certify`` certifies the instances)."""
    from ...data.kajitsuka_data import generate
    from ...model.measure import measure

    data = generate(N, n, d, C, seed)
    rows = []
    for B in Bs:
        b = build_limited(data, B, seed=seed)
        m = measure(b.model)
        rows.append({"B": B, "phi subsets": b.info["phi subsets"], "F2 subsets": b.info["F2 subsets"],
                     "width": m.width, "depth": m.depth, "max_bits": m.max_bits, "n_params": m.n_params,
                     "total_bits": m.total_bits, "build": b})
    return rows
