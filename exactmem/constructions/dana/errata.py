"""The exact instances behind the Dana et al. entries of ``docs/errata.md``.

Note §3.6, §7.3: exact impossibility certificates (a Radon-style obstruction: no linear readout fits
these labels) and the facts each erratum states, computed on the constructions of `.dana`."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Sequence, Tuple

from ...data.dataset import DataError
from ...arith.linalg import integer_kernel
from .association import (Vec, attention_columns_exact, capacity, check_architecture, choose_design, corollary2_accuracy,
                   exact_rank_columns, feature_columns_exact, rank_bound, sequence_rank_bound)


@dataclass
class RadonObstruction:
    """A proof that no linear readout memorizes the labels (note §3.6 / Prop. 1 style).

    ``c`` is an integer vector with Σ_t c_t φ(t) = 0 for the feature columns φ(t); labels are
    ``a`` where c_t > 0 and ``b`` where c_t < 0. Any readout B gives logits B φ(t), and
    Σ_t c_t (logit_a(t) − logit_b(t)) = 0; memorizing would make every nonzero term > 0.
    """

    c: List[int]
    labels: List[int]
    a: int
    b: int


def radon_obstruction(cols: Sequence[Vec], a: int = 0, b: int = 1) -> RadonObstruction:
    """From columns with a linear dependency (more columns than rank), the labels no readout can fit."""
    rows = [[c[i] for c in cols] for i in range(len(cols[0]))]
    ker = integer_kernel(rows)
    if not ker:
        raise DataError("the feature columns are linearly independent: no obstruction")
    c = [int(v) for v in ker[0]]
    labels = [a if v > 0 else b if v < 0 else a for v in c]
    return RadonObstruction(c, labels, a, b)


def verify_radon_obstruction(cols: Sequence[Vec], ob: RadonObstruction) -> bool:
    """Exact check: c ≠ 0, Σ c_t φ(t) = 0, and the labels follow the signs of c (a ≠ b)."""
    if ob.a == ob.b or len(ob.c) != len(cols) or len(ob.labels) != len(cols) or not any(ob.c):
        return False
    for i in range(len(cols[0])):
        if sum((ci * col[i] for ci, col in zip(ob.c, cols)), Fraction(0)) != 0:
            return False
    for ci, lab in zip(ob.c, ob.labels):
        if (ci > 0 and lab != ob.a) or (ci < 0 and lab != ob.b):
            return False
    return True


def all_sequences_of(N: int, S: int) -> List[Tuple[int, ...]]:
    return list(itertools.product(range(N), repeat=S))


def corollary1_small_d_facts(N: int, S: int, d: int, dh: int, H: int, seed: int = 0) -> Dict[str, object]:
    """Note §3.6 / §7.3: with d_h > d (e.g. Corollary 1 at d = 2, d_h > 2) the claimed
    T0 = H·d_h + d exceeds rank F ≤ d + H·min(d_h, d).

    Builds a mode-(a) design on T0 = H·d_h + d random sequences and returns the exact rank of
    F, the bound, and a Radon obstruction on rank_bound + 1 sequences for the features
    A′(t) = [x(t,S); A^h(t)] (independent of W_V): labels that no choice of W_V, W_O, W_U
    realises for these embeddings and query-key matrices.
    """
    check_architecture(N, S, d, dh, H)
    claimed = capacity(d, dh, H)
    if claimed > N ** S:
        raise DataError(f"T0 = {claimed} exceeds the N^S = {N ** S} sequences")
    design = choose_design(N, S, d, dh, H, "base2", None, seed)
    rng = random.Random(seed)
    seqs = sorted(rng.sample(all_sequences_of(N, S), claimed))
    F = feature_columns_exact(design, seqs)
    bound = rank_bound(d, dh, H)
    sub = seqs[:bound + 1]
    Acols = attention_columns_exact(design, sub)
    ob = radon_obstruction(Acols) if len(Acols[0]) < len(Acols) else None
    return {"design": design, "sequences": seqs, "claimed_T0": claimed, "rank_F": exact_rank_columns(F),
            "rank_bound": bound, "obstruction_sequences": sub, "obstruction_features": Acols, "obstruction": ob}


def experiment6_facts(seed: int = 0) -> Dict[str, object]:
    """The paper's own Experiment 6 (App. B): N = 10, S = 2, d = 2, d_h = 5, H = 1…20, uniform
    prior over the N^S = 100 bigrams; "Corollary 2 states that with H = 20, the model should be
    able to obtain exactly 1 accuracy". Corollary 2's φ(X) at X = H·d_h + d = 102 ≥ 100 is 1,
    but the proof's features give rank F ≤ d + H·min(d_h, d) = 42 (W_V^h A^h(t) with
    A^h(t) ∈ R²), so the proof supports φ(42) = 239/500 only.

    Returns those numbers and, for a seeded mode-(a) design (exact base-2 softmax, full W_QK),
    the exact ranks of F = [x(t,2); W_V^h A^h(t)] (102 rows) and of A′ = [x(t,2); A^h(t)]
    (42 rows) on all 100 bigrams: the design reaches the bound, and the proof's linear solve
    E(t) = W_O W_V A′(t) for T0 targets needs rank F = T0."""
    N, S, d, dh, H = 10, 2, 2, 5, 20
    T = N ** S
    design = choose_design(N, S, d, dh, H, "base2", "random", seed)  # full-rank W_QK: rank A′ reaches the bound
    seqs = all_sequences_of(N, S)
    bound = rank_bound(d, dh, H)
    A = attention_columns_exact(design, seqs)
    return {"design": design, "T0": T, "paper_X": capacity(d, dh, H),
            "paper_accuracy": corollary2_accuracy(capacity(d, dh, H), T, N), "rank_bound": bound,
            "rows_A_prime": len(A[0]), "rank_A_prime": exact_rank_columns(A),
            "rank_F": exact_rank_columns(feature_columns_exact(design, seqs)),
            "proof_accuracy": corollary2_accuracy(bound, T, N)}


def block_diagonal_instance(seed: int = 0, tries: int = 50) -> Dict[str, object]:
    """Note §3.6 / §7.3: rank A′ = T0 does not give rank W_V A′ = T0 for block-diagonal W_V.

    d = 3, d_h = 2, H = 2 (T0 = 7), S = 2, N = 8, the 7 sequences (0, t) for t = 1..7. Head 1
    is a generic rank-1 base-2 head; head 2 has W_QK = 0, so its weights are exactly 1/2 and
    A²(t) = (x(t,1) + x(t,2))/2 with x(t,1) the same for all t: rank [x_S; A²] = d + 1.
    Then rank A′ = rank [x_S; A¹; A²] can be 7 = T0, while every block-diagonal W_V gives
    rank F ≤ d + d_h + 1 = 6 (head 2 adds at most one direction). All ranks exact over Q.
    """
    N, S, d, dh, H = 8, 2, 3, 2, 2
    seqs = [(0, t) for t in range(1, 8)]
    zero = [[Fraction(0)] * d for _ in range(dh)]
    for k in range(tries):
        design = choose_design(N, S, d, dh, H, "base2", "rank1", seed + k)
        design.heads[1].Q = [list(r) for r in zero]
        design.heads[1].K = [list(r) for r in zero]
        A = attention_columns_exact(design, seqs)
        rank_A = exact_rank_columns(A)
        if rank_A < 7:
            continue
        head2 = [c[:d] + c[2 * d:3 * d] for c in A]
        F = feature_columns_exact(design, seqs)
        return {"design": design, "sequences": seqs, "T0": 7, "rank_A_prime": rank_A,
                "rank_skip_and_head2": exact_rank_columns(head2), "rank_F": exact_rank_columns(F),
                "bound_for_every_W_V": d + dh + (exact_rank_columns(head2) - d)}
    raise DataError(f"no seed in [{seed}, {seed + tries}) gives rank A′ = 7")


def skip_rank_instance(seed: int = 0) -> Dict[str, object]:
    """The skip connection's d rows of F only see the last token (derived — not in the paper).

    N = 3 < d = 4, S = 2, d_h = 1, H = 1: the claimed T0 = H·d_h + d = 5 ≤ N^S = 9, but on all
    9 sequences rank F ≤ 3 + 1 = 4 (exact, mode (a)), so no 5 sequences give full rank, and a
    Radon obstruction on 5 sequences defeats every W_O, W_U for these e, pos, W_QK, W_V.
    """
    N, S, d, dh, H = 3, 2, 4, 1, 1
    design = choose_design(N, S, d, dh, H, "base2", None, seed)
    seqs = all_sequences_of(N, S)
    F = feature_columns_exact(design, seqs)
    sub = seqs[:5]
    Fs = feature_columns_exact(design, sub)
    return {"design": design, "claimed_T0": capacity(d, dh, H), "rank_F_all": exact_rank_columns(F),
            "bound": sequence_rank_bound(seqs, d, dh, H), "obstruction_sequences": sub,
            "obstruction_features": Fs, "obstruction": radon_obstruction(Fs)}
