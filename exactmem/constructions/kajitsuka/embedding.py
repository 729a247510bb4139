"""Kajitsuka & Sato (ICLR 2025) Theorem E.1: a Transformer with an embedding layer.

The network N^(EM) = E_out ∘ F^(FF) ∘ F^(UA) ∘ F^(EM) memorizes N consistently labelled token-id
sequences x⁽ⁱ⁾ ∈ [ω]ⁿ (eqs. (127)–(135)). See ``docs/kajitsuka-variants.md``.

* **Data** (`TokenData`, `generate_tokens`): sequences of token ids 0 … ω − 1
  (the paper's [ω] = {1, …, ω}: id t is the paper's token t + 1), labels in {0, …, C − 1},
  consistency (129) checked exactly (same multiset and same last token ⇒ same label).
* **Lemma B.1 / B.2** on the multisets m⁽ⁱ⁾ (eq. (133)): witnesses A ⊂ [ω]
  (`kajitsuka.witness_set`) and verified integer weights f: A → [1, F],
  F = ⌈4N'²|A|√π⌉ ≤ ⌈4N²√π·min{ω, N}⌉ (`kajitsuka.token_weights`).
* **Embedding** (eq. (135)): W^(EM)_{:,x} = (f(x), x, 0)ᵀ for x ∈ A, (0, x, 0)ᵀ otherwise —
  stored as the rows of [`Embed`][exactmem.model.Embed] (``E[t] = (f, t + 1, 0)``): the role of F₁ in Thm B.1,
  the token id being the id itself.
* **Uniform attention** (eq. (39)): s_k = (f(x_k), x_k, (1/n) Σ_l f(x_l)).
* **F^(FF)**: Lemma C.1 (`vardi.build_c1`) on the distinct context ids s_n with their
  labels; its affine output layer is E_out.

Only building happens here; [`exactmem.pipeline.certify`][exactmem.pipeline.certify] evaluates and the independent checker
judges.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...data.dataset import DataError, Dataset
from ...data.kajitsuka_data import check_labelled
from ...model.layers import Embed, Model
from ...arith.numbers import bits
from . import compact as kajitsuka
from ..vardi import memorizer as vardi
from .variants import SequenceIds, context_ids, sequence_ids

# ----------------------------------------------------------------------------- data


@dataclass
class TokenData:
    """N sequences of n token ids in {0, …, ω − 1} with next-token labels in {0, …, C − 1}."""

    sequences: List[Tuple[int, ...]]
    labels: List[int]
    C: int
    omega: int
    seed: Optional[int] = None
    name: str = ""
    info: Dict[str, object] = field(default_factory=dict)

    @property
    def N(self) -> int:
        return len(self.sequences)

    @property
    def n(self) -> int:
        return len(self.sequences[0])

    @property
    def N_distinct(self) -> int:
        """The number of pairwise-distinct sequences (what a certificate's n_examples counts)."""
        return len(set(map(tuple, self.sequences)))

    def to_dataset(self) -> Dataset:
        return Dataset([tuple(X) for X in self.sequences], [(Fraction(y),) for y in self.labels], "tokens",
                       self.seed, self.name, dict(self.info))


def make_token_data(sequences: Sequence[Sequence[int]], labels: Sequence[int], C: int, omega: int,
                    seed: Optional[int] = None, name: str = "") -> TokenData:
    """Validate shapes, ids and labels; errors name the sequence (and position)."""
    if isinstance(omega, bool) or not isinstance(omega, int) or omega < 1:
        raise DataError(f"vocabulary size ω = {omega!r}: need a positive integer")
    check_labelled(sequences, labels, C, "sequences")
    n = len(sequences[0])
    seqs = []
    for i, X in enumerate(sequences):
        if len(X) != n or n == 0:
            raise DataError(f"sequence {i} has length {len(X)}, sequence 0 has {n} (need a fixed length ≥ 1)")
        for k, t in enumerate(X):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < omega:
                raise DataError(f"sequence {i}, position {k}: token id {t!r} is not an integer in [0, {omega})")
        seqs.append(tuple(X))
    for i, y in enumerate(labels):
        if isinstance(y, bool) or not isinstance(y, int) or not 0 <= y < C:
            raise DataError(f"sequence {i}: label {y!r} is not an integer in [0, {C})")
    return TokenData(seqs, list(labels), C, omega, seed, name)


def check_token_consistency(data: TokenData) -> None:
    """Eq. (129): x⁽ⁱ⁾_n = x⁽ʲ⁾_n and x⁽ⁱ⁾ = x⁽ʲ⁾ up to permutation ⇒ y⁽ⁱ⁾ = y⁽ʲ⁾; a violation
    names both sequences."""
    seen: Dict[tuple, int] = {}
    for i, X in enumerate(data.sequences):
        key = (tuple(sorted(X)), X[-1])
        j = seen.setdefault(key, i)
        if data.labels[j] != data.labels[i]:
            raise DataError(f"sequences {j} and {i} are permutations of each other with the same last token but "
                            f"labels {data.labels[j]} and {data.labels[i]}: eq. (129) (consistency) fails")


def generate_tokens(N: int, n: int, omega: int, C: int, seed: int, permuted: float = 0.1,
                    duplicates: float = 0.05) -> TokenData:
    """Seeded consistently labelled token-id data: ids drawn uniformly from [0, ω) with
    repetition; a fraction ``permuted`` of the sequences permute an earlier one's body (same
    last token), a fraction ``duplicates`` copy one; labels are a seeded function of
    (multiset, last token), so eq. (129) holds by construction."""
    if N < 1 or n < 1 or omega < 1 or C < 1:
        raise DataError("N, n, ω and C must be positive")
    rng, lab_rng = random.Random(seed), random.Random(seed + 2)
    seqs: List[Tuple[int, ...]] = []
    for i in range(N):
        u = rng.random()
        if i and u < duplicates:
            seqs.append(seqs[rng.randrange(i)])
        elif i and u < duplicates + permuted:
            X = list(seqs[rng.randrange(i)])
            body = X[:-1]
            rng.shuffle(body)
            seqs.append(tuple(body + [X[-1]]))
        else:
            seqs.append(tuple(rng.randrange(omega) for _ in range(n)))
    table: Dict[tuple, int] = {}
    labels = [table.setdefault((tuple(sorted(X)), X[-1]), lab_rng.randrange(C)) for X in seqs]
    data = make_token_data(seqs, labels, C, omega, seed, f"token ids N={N} n={n} omega={omega} C={C}")
    data.info.update({"omega": omega, "permuted": permuted, "duplicates": duplicates})
    return data


# ----------------------------------------------------------------------------- Theorem E.1


@dataclass
class EmbeddingBuild:
    model: Model
    info: Dict[str, object] = field(default_factory=dict)
    f2_layout: Optional[vardi.Layout] = None


def embedding_matrix(omega: int, f: Dict[int, int]) -> Tuple[Tuple[int, int, int], ...]:
    """Eq. (135) as Embed rows: id t (the paper's token x = t + 1) ↦ (f(t), t + 1, 0) on A,
    (0, t + 1, 0) off A."""
    return tuple((f.get(t, 0), t + 1, 0) for t in range(omega))


def paper_weight_range(N: int, omega: int) -> int:
    """⌈4N²√π·min{ω, N}⌉, the range of f in Thm E.1's proof (√π enclosed from above, so the
    value returned is ≥ the paper's)."""
    from ...arith import enclosure as E

    q = E.sqrt(E.PI).hi * (4 * N * N * min(omega, N))
    return -((-q.numerator) // q.denominator)


def build_embedding(data: TokenData, seed: int = 0, attention: str = "uniform",
                    embedding_override: Optional[Dict[int, Tuple[int, int, int]]] = None) -> EmbeddingBuild:
    """Theorem E.1 on token-id data. ``embedding_override`` (tests only) replaces rows of the
    embedding matrix after F^(FF) has been built for the right one: a planted wrong step."""
    check_token_consistency(data)
    n, N, omega = data.n, data.N, data.omega
    ids: SequenceIds = sequence_ids(data.sequences, seed)
    ctx = context_ids(data.sequences, data.labels, ids, lambda t: Fraction(t + 1))
    contexts = list(ctx)
    f2_model, f2_info = vardi.build_c1(contexts, [ctx[s] for s in contexts], data.C, seed=seed + 13)
    rows = list(embedding_matrix(omega, ids.f))
    for t, row in (embedding_override or {}).items():
        rows[t] = row
    layers = (Embed(tuple(rows)), kajitsuka._uniform_attention(attention)) + tuple(f2_model.layers)
    model = Model(layers, "tokens", omega, "last", "identity", name=f"kajitsuka_embedding_{attention}")
    max_ctx_n2 = max(sum((x * x for x in s), Fraction(0)) for s in contexts)
    info: Dict[str, object] = {
        "attention": attention, "N": N, "N distinct": data.N_distinct, "n": n, "omega": omega, "C": data.C,
        "distinct multisets N'": len(ids.multisets), "witness set |A|": len(ids.A),
        "(Lemma B.1) |A| <= min(omega, N)": len(ids.A) <= min(omega, N),
        "weight range F = ceil(4 N'^2 |A| sqrt(pi))": ids.F, "max f": max(ids.f.values(), default=0),
        "paper range ceil(4 N^2 sqrt(pi) min(omega, N)) (upper enclosure)": paper_weight_range(N, omega),
        "weight draws": ids.tries, "embedding max bits": max(bits(x) for row in rows for x in row),
        "F2 N (contexts)": len(contexts), "F2 r^2": f2_info["lemma r^2 (clamped >= 1)"],
        "F2 delta^2": f2_info["lemma delta^2 (clamped <= 1)"], "F2 raw r^2": f2_info["r^2"],
        "F2 raw delta^2": f2_info["delta^2"], "F2 projection bits": f2_info["projection bits"],
        "max ||s||^2": max_ctx_n2, "planted rows": sorted(embedding_override) if embedding_override else None,
    }
    return EmbeddingBuild(model, info, f2_info["layout"])


def relu_depth(b: EmbeddingBuild) -> int:
    """Exact ReLU depth: the embedding and attention have none; F^(FF) is Lemma C.1's."""
    return vardi.relu_depth_c1(b.f2_layout)


def max_bits(b: EmbeddingBuild) -> int:
    """Exact max bits per weight: the embedding entries f(x) and x ≤ ω, Lemma C.1's doubling
    weights and Stage I, and 2 (the 0/1 attention weights)."""
    return max(2, b.info["embedding max bits"], vardi.max_bits_impl(b.f2_layout, b.info["F2 projection bits"]))


def n_params(b: EmbeddingBuild) -> int:
    """Exact stored entries: 3ω (embedding) + the head's W_V, W_O (6; hardmax: + W_Q, W_K) +
    F^(FF)'s matrices and biases, counted from its layer shapes."""
    head = b.model.layers[1].heads[0]
    att = sum(len(M) * len(M[0]) for M in (head.WQ, head.WK, head.WV, head.WO) if M is not None)
    ff = sum(l.m_out * l.m_in + (l.m_out if l.b is not None else 0) for l in b.model.layers[2:])
    return 3 * b.info["omega"] + att + ff
