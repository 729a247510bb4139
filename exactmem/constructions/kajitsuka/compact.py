"""Kajitsuka & Sato (ICLR 2025) Theorem 4.1 / B.1 and Corollary 4.1: the compact memorizing Transformers.

Theorem 4.1 / B.1 (next-token) and Corollary 4.1 (seq-to-seq): a width-≤14 Transformer
E_out ∘ F₂ ∘ F^(UA) ∘ F₁ ∘ E_in that memorizes N consistently labelled, token-wise separated
sequences exactly. See ``docs/kajitsuka.md``; note ``kajitsuka.md`` §4.

Pipeline (note §4.1), all weights exact rationals:

* **Lemma B.1** (`witness_set`): a greedy set A of at most N' − 1 tokens on which the
  N' distinct multisets stay distinct.
* **Lemma B.2** (`token_weights`): integer weights f: A → [1, F], F = ⌈4N'²|A|√π⌉
  (√π from below, so F never exceeds the paper's range), drawn at random until the N'
  weighted counts Σ_x m(x) f(x) are pairwise distinct — verified exactly. This replaces the
  paper's "Park projection + shift ⌊2N²|S|√π⌋", whose shift breaks separation when the
  restricted multisets have different cardinalities (note §4.3, ``docs/errata.md``).
* **Lemma B.3** (ϕ̃): the Lemma C.1 memorizer (`exactmem.constructions.vardi.memorizer`) with the
  points A labelled f(x) and every other distinct token an extra point with output 0, so
  Σ_k ϕ̃(X_{:,k}) is the sequence id (eq. (38)).
* **Lemma C.2** (token id F): a second Stage-I projection σ(wᵀx + β) of all distinct
  tokens, values in [2, R] with gaps ≥ 2, computed in the first layer of ϕ̃ and carried in
  one extra register (eqs. (50)–(51)). E_in is folded into this first layer.
* **Uniform attention** (eqs. (39), (52)–(53)): one head, W_V = (1 0 0), W_O = (0 0 1)ᵀ, with
  residual: s_k = (ϕ̃(X_{:,k}), F(X_{:,k}), (1/n) Σ_l ϕ̃(X_{:,l})). The hard-attention form
  (zero W_Q, W_K, hardmax: every key ties) gives the same outputs.
* **F₂** (eqs. (57)–(60)): Lemma C.1 on the distinct context ids s_n (next-token) or s_k
  for every k (seq-to-seq, note §4.9), labels y. E_out is its affine output layer.

Only building happens here (with the exact data facts the proof needs checked on the way);
[`exactmem.pipeline.certify`][exactmem.pipeline.certify] evaluates the network and the independent checker judges.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...arith import enclosure as E
from ...data.dataset import DataError
from ...data.kajitsuka_data import SequenceData, check_consistency, check_separation
from ...model.layers import Attention, Head, Model
from ...arith.numbers import max_sq_norm
from ..vardi import memorizer as vardi

# √π from below (√π = 1.77245385090551602729…): F = ⌈4N'²|A|·SQRT_PI_LO⌉ ≤ ⌈4N'²|A|√π⌉.
SQRT_PI_LO = Fraction(177245385090551602, 10 ** 17)
PI_LO = E.PI.lo  # π from below (the enclosure module's truncation)


class ConstructionError(RuntimeError):
    """A step of the proof failed on this instance (never expected; the message says which)."""


# ----------------------------------------------------------------------------- Lemma B.1


def distinct_multisets(id_seqs) -> Tuple[List[Counter], Dict[tuple, int]]:
    """The distinct multisets of the sequences (as Counters, in first-seen order) and the index
    of each sorted sequence among them."""
    index: Dict[tuple, int] = {}
    out: List[Counter] = []
    for X in id_seqs:
        key = tuple(sorted(X))
        if key not in index:
            index[key] = len(out)
            out.append(Counter(X))
    return out, index


def witness_set(multisets: Sequence[Counter]) -> List[int]:
    """Lemma B.1, the proof's induction as a greedy pass: for each multiset in turn, if its
    restriction to A equals an earlier one's (at most one can: the earlier ones are pairwise
    distinct on A), add to A the smallest token on which the two differ. Adding a token never
    merges restrictions that differ, so every multiset stays distinct on the final A."""
    A: List[int] = []
    in_A = set()
    keys: List[frozenset] = []
    owner: Dict[frozenset, int] = {}
    holders: Dict[int, List[int]] = {}  # token → earlier multisets containing it
    for k, m in enumerate(multisets):
        key = frozenset((x, c) for x, c in m.items() if x in in_A)
        i = owner.get(key)
        if i is not None:
            other = multisets[i]
            diff = sorted(x for x in set(m) | set(other) if m.get(x, 0) != other.get(x, 0))
            if not diff:
                raise ConstructionError(f"Lemma B.1: multisets {i} and {k} are equal (duplicates must be removed)")
            x = diff[0]
            A.append(x)
            in_A.add(x)
            for j in holders.get(x, []):
                del owner[keys[j]]
                keys[j] = keys[j] | {(x, multisets[j][x])}
                owner[keys[j]] = j
            if x in m:
                key = key | {(x, m[x])}
            if key in owner:  # impossible: k now differs from i on x, and from the rest already
                raise ConstructionError(f"Lemma B.1: multiset {k} still collides after adding a token")
        keys.append(key)
        owner[key] = k
        for x in m:
            holders.setdefault(x, []).append(k)
    return A


# ----------------------------------------------------------------------------- Lemma B.2


def weight_range(n_multisets: int, size_A: int) -> int:
    """F = ⌈4N'²|A|·√π⌉ with √π enclosed from below (Lemma B.2's range [⌈4N²|S|√π⌉])."""
    q = 4 * n_multisets ** 2 * size_A * SQRT_PI_LO
    return -((-q.numerator) // q.denominator)


def weighted_counts(multisets: Sequence[Counter], f: Dict[int, int]) -> List[int]:
    """Σ_{x ∈ A} m(x) f(x) for every multiset (eq. (22)/(38)); tokens outside A weigh 0."""
    return [sum(c * f.get(x, 0) for x, c in m.items()) for m in multisets]


def context_labels(id_seqs: Sequence[Sequence], labels: Sequence, setting: str, f: Dict, sums: Sequence[int],
                   ms_index: Dict[tuple, int], token_id,
                   allow_collisions: bool = False) -> Tuple[Dict[tuple, int], int]:
    """Context ids s_k = (f(x_k), F(x_k), (1/n) Σ_j f(x_j)) (eq. (53); f = 0 off A, F(x) =
    ``token_id(x)``) with their labels, computed from the definitions at the labelled positions:
    the last one (``setting`` "next_token", one label per sequence) or every one ("seq2seq").
    Two different (multiset, token) pairs sharing a context id raise ConstructionError (Lemma
    B.2's distinct sums or the token id's injectivity failed), unless ``allow_collisions``:
    then the first label stays. Returns (context id → label, number of distinct pairs)."""
    ctx_label: Dict[tuple, int] = {}
    ctx_of_key: Dict[tuple, tuple] = {}
    for X, ys in zip(id_seqs, labels):
        ms = tuple(sorted(X))
        avg = Fraction(sums[ms_index[ms]], len(X))
        for k, y in ([(len(X) - 1, ys)] if setting == "next_token" else enumerate(ys)):
            key = (ms, X[k])
            s = ctx_of_key.get(key)
            if s is None:
                s = ctx_of_key[key] = (Fraction(f.get(X[k], 0)), token_id(X[k]), avg)
            if ctx_label.setdefault(s, y) != y and not allow_collisions:
                raise ConstructionError(f"two different (multiset, token) pairs share the context id {s} with labels "
                                        f"{ctx_label[s]} and {y}: Lemma B.2's distinct sums or Lemma C.2's gaps "
                                        "failed")
    if len(ctx_label) != len(ctx_of_key) and not allow_collisions:
        raise ConstructionError("distinct (multiset, token) pairs collided in the context ids")
    return ctx_label, len(ctx_of_key)


def token_weights(multisets: Sequence[Counter], A: Sequence[int], seed: int, max_tries: int = 64
                  ) -> Tuple[Dict[int, int], int, int]:
    """Lemma B.2 (repaired, note §4.3): integer f: A → [1, F] with pairwise distinct weighted
    counts — so the N' sums are (M·F, 1)-separated — drawn at random and verified exactly.
    Returns (f, F, tries)."""
    if not A:
        return {}, 0, 0
    F = weight_range(len(multisets), len(A))
    rng = random.Random(seed)
    for tries in range(1, max_tries + 1):
        f = {x: rng.randint(1, F) for x in A}
        sums = weighted_counts(multisets, f)
        if len(set(sums)) == len(sums):
            return f, F, tries
    raise ConstructionError(f"Lemma B.2: no weights in [1, {F}] separated the {len(multisets)} multisets "
                            f"in {max_tries} draws")


def paper_shifted_weights(v: Sequence[Fraction], n_multisets: int) -> Tuple[List[int], int]:
    """Lemma B.2 exactly as printed, for a given unit vector v (Park's direction) over
    |S| = len(v) tokens: h = ⌈N²|S|√π·v⌉ coordinate-wise and the shift c = ⌊2N²|S|√π⌋,
    f = h + c. √π is enclosed; a ceiling or floor the enclosure cannot decide raises."""
    if _sq(v) != 1:
        raise DataError("Lemma B.2 needs a unit vector v")
    k = n_multisets ** 2 * len(v)
    root = E.sqrt(E.PI)

    def exact_int(enc: E.Enc, what: str) -> int:
        if enc.lo != enc.hi:
            raise ConstructionError(f"Lemma B.2: the enclosure cannot decide {what}")
        return int(enc.lo)

    h = [exact_int(E.ceil(root * (k * x)), f"⌈N²|S|√π·{x}⌉") for x in v]
    c = exact_int(E.floor(root * (2 * k)), "⌊2N²|S|√π⌋")
    return [x + c for x in h], c


def _le_times_pi(a: Fraction, k: Fraction) -> bool:
    """a ≤ k·π for rationals a and k > 0, decided with π's enclosure (never equal: π is
    irrational); raises if the enclosure is too wide to decide."""
    if a <= k * E.PI.lo:
        return True
    if a >= k * E.PI.hi:
        return False
    raise ConstructionError(f"Lemma B.2: π's enclosure cannot decide {a} ≤ {k}·π")


def lemma_b2_holds(multisets: Sequence[Counter], f: Dict[int, int]) -> bool:
    """Lemma B.2's conclusion for f on S = ∪ supp m⁽ⁱ⁾, decided exactly (squares; π enclosed):
    f(x) ∈ [⌈4N²|S|√π⌉] for x ∈ S (eq. (16)), and the sums a_i = Σ m⁽ⁱ⁾(x) f(x) are
    (4MN²|S|√π, √|S|)-separated with M = max_i |m⁽ⁱ⁾| — read with distinct sums for distinct
    multisets (|a_i − a_j| ≥ √|S| for i ≠ j), as eq. (25) proves and Lemma B.3 needs; the
    literal definition before the lemma exempts equal sums. The multisets must be distinct."""
    if len({tuple(sorted(m.items())) for m in multisets}) != len(multisets):
        raise DataError("Lemma B.2 is about distinct multisets")
    S = set().union(*(set(m) for m in multisets)) if multisets else set()
    N, k, M = len(multisets), len(S), max((sum(m.values()) for m in multisets), default=0)
    if set(f) != S:
        raise DataError("f must be defined exactly on S, the union of the supports")
    if any(v < 1 or not _le_times_pi(Fraction((v - 1) ** 2), Fraction(16 * N ** 4 * k * k)) for v in f.values()):
        return False  # f(x) − 1 < 4N²|S|√π ⇔ f(x) ≤ ⌈4N²|S|√π⌉
    a = weighted_counts(multisets, f)
    if not all(_le_times_pi(Fraction(x * x), Fraction(16 * M * M * N ** 4 * k * k)) for x in a):
        return False
    return all((a[i] - a[j]) ** 2 >= k for i in range(N) for j in range(i))


def lemma_b2_witness(multisets: Sequence[Counter], order: Sequence[int], max_candidates: int = 10 ** 6
                     ) -> Tuple[int, ...]:
    """An f satisfying `lemma_b2_holds`, found by exhaustive search: the first tuple
    (f(order[0]), f(order[1]), …) in the order of increasing max f(x), then lexicographic.
    For tiny instances (the errata); ``max_candidates`` bounds the work."""
    from itertools import product

    N, k = len(multisets), len(order)
    bound = 4 * N ** 2 * k * E.sqrt(E.PI).hi
    top = -((-bound.numerator) // bound.denominator)  # ≥ ⌈4N²|S|√π⌉: larger values fail the range test
    tried = 0
    for high in range(1, top + 1):
        for t in product(range(1, high + 1), repeat=k):
            if max(t) != high:
                continue
            tried += 1
            if tried > max_candidates:
                raise ConstructionError(f"Lemma B.2: no witness among the first {max_candidates} candidates")
            if lemma_b2_holds(multisets, dict(zip(order, t))):
                return t
    raise ConstructionError("Lemma B.2: no f in the lemma's range satisfies its conclusion")


# ----------------------------------------------------------------------------- the Transformer


@dataclass
class KajitsukaBuild:
    """The model and every fact of the proof measured on the instance."""

    model: Model
    info: Dict[str, object] = field(default_factory=dict)
    phi_layout: Optional[vardi.Layout] = None
    f2_layout: Optional[vardi.Layout] = None


def _uniform_attention(kind: str) -> Attention:
    """Eq. (52): W_O W_V = [[0,0,0],[0,0,0],[1,0,0]] (one head, s = 1); ``hardmax`` adds zero
    W_Q, W_K (eq. (12): all keys tie, weights 1/n)."""
    if kind == "uniform":
        head = Head(WV=((1, 0, 0),), WO=((0,), (0,), (1,)))
    elif kind == "hardmax":
        head = Head(WV=((1, 0, 0),), WO=((0,), (0,), (1,)), WQ=((0, 0, 0),), WK=((0, 0, 0),))
    else:
        raise DataError(f"attention must be 'uniform' or 'hardmax', not {kind!r}")
    return Attention((head,), kind=kind, residual=True)


def _sq(v: Sequence[Fraction]) -> Fraction:
    return sum((x * x for x in v), Fraction(0))


def build(data: SequenceData, seed: int = 0, attention: str = "uniform", r=None, delta=None,
          witnesses: Optional[Sequence[int]] = None, weights: Optional[Dict[int, int]] = None,
          allow_collisions: bool = False) -> KajitsukaBuild:
    """Theorem B.1 (``data.setting == "next_token"``) or Corollary 4.1 (``"seq2seq"``).

    ``witnesses`` (token ids) and ``weights`` (token id → f) replace Lemma B.1's greedy set and
    Lemma B.2's verified weights, and ``allow_collisions`` keeps the first label when two
    contexts collide instead of raising — only to build the paper's literal steps for
    ``docs/errata.md`` (the independent checker then refutes the network)."""
    sep = check_separation(data, r, delta)
    check_consistency(data)
    n, d, N = data.n, data.d, data.N
    tokens, id_seqs = data.token_index()  # tokens are handled by id (0 … V − 1) from here on
    V = len(tokens)

    # sequence ids: distinct multisets, Lemma B.1 witnesses, Lemma B.2 weights
    multisets, ms_index = distinct_multisets(id_seqs)
    A = witness_set(multisets) if witnesses is None else list(witnesses)
    if weights is None:
        f, F, tries = token_weights(multisets, A, seed)
    else:
        f, tries = dict(weights), 0
        F = max(f.values(), default=0)
        if set(f) != set(A) or any(v < 1 for v in f.values()):
            raise DataError("weights must give a positive integer f(x) for exactly the witness tokens")
    sums = weighted_counts(multisets, f)

    # F₁: token id (Lemma C.2) in parallel with ϕ̃ (Lemma C.1 with zero on V \ A)
    # the token set's closest pair is known from check_separation: not searched again
    prep_tok = vardi.prepare(tokens, [0] * V, (), 1, min_dist2=sep.min_dist2)
    proj_tok = vardi.project_to_line(prep_tok, seed + 11)
    tid = proj_tok.values  # prepare keeps the (distinct) tokens in order
    inputs = [f"z{k}" for k in range(d)]
    prog = vardi.Program(inputs)
    phi_lay = proj_phi = prep_phi = None
    first = {"tid": vardi.stage1_expr(proj_tok, inputs)}
    if A:
        extra = [tokens[j] for j in range(V) if j not in f]
        prep_phi = vardi.prepare([tokens[j] for j in A], [f[j] for j in A], extra, F + 1, min_dist2=sep.min_dist2)
        proj_phi = vardi.project_to_line(prep_phi, seed + 12)
        first["x"] = vardi.stage1_expr(proj_phi, inputs)
    prog.layer(first, carry=False)
    phi_out = ({}, 0)
    if A:
        phi_out, phi_lay = vardi.emit_stages_2_3(prog, prep_phi, proj_phi, F + 1)
    prog.layer({"phi": phi_out, "tid": ({"tid": 1}, 0), "avg": ({}, 0)}, relu=False, carry=False)
    f1_layers = prog.compile(["phi", "tid", "avg"])

    # context ids s_k (eq. (53)), computed from the definitions, and their labels
    ctx_label, pairs = context_labels(id_seqs, data.labels, data.setting, f, sums, ms_index, tid.__getitem__,
                                      allow_collisions)
    contexts = list(ctx_label)

    # separation facts (48), (54)–(56), exactly
    min_ctx_d2 = vardi.min_sq_distance(contexts) if len(contexts) > 1 else None
    max_ctx_n2 = max_sq_norm(contexts)
    r2, d2 = sep.r2, sep.delta2
    facts = {
        "(54)-(55) min ||s - s'||^2": min_ctx_d2,
        "(54)-(55) min gap >= 1/n": min_ctx_d2 is None or min_ctx_d2 >= Fraction(1, n * n),
        "(56) max ||s||^2": max_ctx_n2,
        "(56) max ||s|| <= 20 r n^2 N^3 sqrt(pi d)/delta": max_ctx_n2 * d2 <= 400 * r2 * n ** 4 * N ** 6 * PI_LO * d,
        "(48) max F(x)": max(proj_tok.values),
        "(48) F <= 10 r (nN)^2 sqrt(pi d)/delta": max(proj_tok.values) ** 2 * d2 <= 100 * r2 * (n * N) ** 4 * PI_LO * d,
        "(49) token id gaps >= 2": True,  # verified by vardi.project_to_line (resampled otherwise)
    }
    if not facts["(54)-(55) min gap >= 1/n"]:
        raise ConstructionError(f"eq. (55) fails: two context ids are closer than 1/n = 1/{n}")

    # F₂ (Lemma C.1 on the context ids) and the whole network
    f2_model, f2_info = vardi.build_c1(contexts, [ctx_label[s] for s in contexts], data.C, seed=seed + 13)
    layers = tuple(f1_layers) + (_uniform_attention(attention),) + tuple(f2_model.layers)
    model = Model(layers, "vectors", d, "last" if data.setting == "next_token" else "all", "identity",
                  name=f"kajitsuka_{data.setting}_{attention}")
    info: Dict[str, object] = {
        "setting": data.setting, "attention": attention, "N": N, "N distinct": data.N_distinct, "n": n, "d": d, "C": data.C,
        "distinct multisets N'": len(multisets), "distinct tokens V": V, "witness set |A|": len(A),
        "weight range F = ceil(4 N'^2 |A| sqrt(pi))": F, "max f": max(f.values(), default=0), "weight draws": tries,
        "distinct sequence ids": len(set(sums)), "context ids": len(contexts),
        "colliding (multiset, token) pairs": pairs - len(contexts),
        "r^2 (clamped >= 1)": r2, "delta^2 (clamped <= 1)": d2, "max ||x||^2": sep.max_norm2,
        "min ||x - x'||^2": sep.min_dist2,
        "token id projection bits": proj_tok.bits, "token id range": (min(proj_tok.values), max(proj_tok.values)),
        "phi projection bits": proj_phi.bits if proj_phi else None,
        "phi V (points)": V, "phi N (labelled = |A|)": len(A),
        "phi r^2": prep_phi.r2 if prep_phi else None, "phi delta^2": prep_phi.delta2 if prep_phi else None,
        "F2 N (contexts)": len(contexts), "F2 r^2": f2_info["lemma r^2 (clamped >= 1)"],
        "F2 delta^2": f2_info["lemma delta^2 (clamped <= 1)"], "F2 projection bits": f2_info["projection bits"],
        **facts,
    }
    return KajitsukaBuild(model, info, phi_lay, f2_info["layout"])


# ----------------------------------------------------------------------------- exact sizes


def relu_depth(b: KajitsukaBuild) -> int:
    """This implementation's ReLU depth: F₁ = 1 (both projections) + ϕ̃'s Stages II–III
    (0 if A = ∅), F₂ = Lemma C.1's exact depth."""
    f1 = 1 + (b.phi_layout.relu_layers if b.phi_layout else 0)
    return f1 + vardi.relu_depth_c1(b.f2_layout)


def max_bits(b: KajitsukaBuild) -> int:
    """This implementation's max bits per weight: the doubling weights of each Lemma C.1
    (gP + 2) and the three Stage-I projections (attention and output weights are 0/1)."""
    parts = [2, b.info["token id projection bits"], vardi.max_bits_impl(b.f2_layout, b.info["F2 projection bits"])]
    if b.phi_layout:
        parts.append(vardi.max_bits_impl(b.phi_layout, b.info["phi projection bits"]))
    return max(parts)


def paper_R2(n: int, N: int, d: int, r2: Fraction, delta2: Fraction) -> E.Enc:
    """R² for Theorem B.1's R := 400·√(3d)·n³·r·N⁵·δ⁻¹·π, i.e. 160000·3d·n⁶·r²·N¹⁰·π²/δ²."""
    return E.PI * E.PI * (Fraction(160000 * 3 * d) * n ** 6 * r2 * N ** 10 / delta2)


def build_measured(N: int, setting: str = "next_token", n: int = 8, d: int = 16, C: int = 2, seed: int = 0):
    """Build Theorem B.1 (or Corollary 4.1) on the seeded generator's data and measure it:
    ``(measurement, build)`` — used by the lower-bound plot and the bit report."""
    from ...data.kajitsuka_data import generate
    from ...model.measure import measure

    data = generate(N, n, d, C, seed, setting)
    b = build(data, seed=seed)
    return measure(b.model), b
