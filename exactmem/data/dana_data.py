"""Token data for Dana, Pydi & Chevaleyre (note ``papers/dana.md`` §1.2, §2).

* [`LookupTable`][exactmem.api.dana.LookupTable] — Assumption 1: a look-up table g: [N]^S → [N] on a list of distinct
  sequences (all N^S of them or a chosen subset). Tokens are 0-based ids ``0..N-1`` (the
  paper writes [N] = {1..N}).
* `Conditionals` — a prior π(t) over sequences and next-token conditionals
  π(·|t), all exact rationals; Assumption 2 (full support) is checked on request.
* `t_epsilon` — the paper's T_ε (note §2, "Definition of T_ε"): the smallest number of
  sequences whose prior mass is ≥ 1 − ε (most likely first).

Every check raises `DataError` with a message naming the
sequence, the position or the probability that is wrong.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import List, Optional, Sequence, Tuple

from ..arith.numbers import to_rational
from .dataset import DataError, Dataset

Seq = Tuple[int, ...]


def _check_sequence(t, N: int, S: int, where: str) -> Seq:
    """A sequence of S token ids in [0, N); ``where`` names it in the error."""
    if not isinstance(t, (tuple, list)):
        raise DataError(f"{where}: a sequence must be a tuple of token ids, got {type(t).__name__}")
    if len(t) != S:
        raise DataError(f"{where}: has length {len(t)}, the context length is S = {S}")
    for s, tok in enumerate(t):
        if isinstance(tok, bool) or not isinstance(tok, int):
            raise DataError(f"{where}, position {s}: token {tok!r} is not an integer id")
        if not 0 <= tok < N:
            raise DataError(f"{where}, position {s}: token {tok} is out of range [0, {N})")
    return tuple(t)


def _check_sizes(N: int, S: int) -> None:
    for name, v in (("N", N), ("S", S)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise DataError(f"{name} must be a positive integer, got {v!r}")


@dataclass
class LookupTable:
    """Assumption 1 (note §1.2): next token g(t) for each of the listed distinct sequences."""

    N: int
    S: int
    sequences: List[Seq]
    labels: List[int]
    seed: Optional[int] = None

    def __post_init__(self):
        _check_sizes(self.N, self.S)
        if len(self.sequences) != len(self.labels):
            raise DataError(f"{len(self.sequences)} sequences but {len(self.labels)} labels")
        seen = {}
        seqs = []
        for i, t in enumerate(self.sequences):
            t = _check_sequence(t, self.N, self.S, f"sequence {i}")
            if t in seen:
                raise DataError(f"sequence {i} {t} repeats sequence {seen[t]}: a look-up table lists each "
                                "sequence once")
            seen[t] = i
            seqs.append(t)
        for i, g in enumerate(self.labels):
            if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < self.N:
                raise DataError(f"label of sequence {i} {seqs[i]}: next token {g!r} is not an id in [0, {self.N})")
        self.sequences = seqs
        self.labels = list(self.labels)

    def __len__(self) -> int:
        return len(self.sequences)

    def subset(self, idx: Sequence[int]) -> "LookupTable":
        """The table restricted to the sequences at positions ``idx`` (in that order)."""
        return LookupTable(self.N, self.S, [self.sequences[i] for i in idx], [self.labels[i] for i in idx], self.seed)

    def to_dataset(self) -> Dataset:
        """The certificate's dataset: token-id inputs, argmax class labels."""
        return Dataset([tuple(t) for t in self.sequences], list(self.labels), "tokens", self.seed,
                       f"look-up table N={self.N} S={self.S} T0={len(self)}")


def all_sequences(N: int, S: int) -> List[Seq]:
    """All N^S sequences in lexicographic order."""
    _check_sizes(N, S)
    return list(itertools.product(range(N), repeat=S))


def random_table(N: int, S: int, seed: int, T0: Optional[int] = None, labels: Optional[int] = None) -> LookupTable:
    """A seeded random look-up table (the experiments' data, note §5.1).

    ``T0`` sequences drawn without replacement from [N]^S (all of them, in lexicographic
    order, when ``T0`` is None); each gets an independent uniform next token among the
    first ``labels`` ids (default N).
    """
    _check_sizes(N, S)
    total = N ** S
    if T0 is not None and not 0 < T0 <= total:
        raise DataError(f"T0 = {T0} associations requested, but only N^S = {total} sequences exist")
    k = N if labels is None else labels
    if not 0 < k <= N:
        raise DataError(f"labels = {labels} must be in [1, N = {N}]")
    rng = random.Random(seed)
    if T0 is None:
        seqs = all_sequences(N, S)
    else:
        seqs = sorted(rng.sample(all_sequences(N, S), T0))
    return LookupTable(N, S, seqs, [rng.randrange(k) for _ in seqs], seed)


@dataclass
class Conditionals:
    """A prior π(t) over ``sequences`` and conditionals π(·|t) (note §1.2), exact rationals.

    ``require_full_support`` enforces Assumption 2 (every π(j|t) > 0).
    """

    N: int
    S: int
    sequences: List[Seq]
    prior: List[Fraction]
    conditionals: List[Tuple[Fraction, ...]]
    require_full_support: bool = True
    seed: Optional[int] = None
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        _check_sizes(self.N, self.S)
        n = len(self.sequences)
        if len(self.prior) != n or len(self.conditionals) != n:
            raise DataError(f"{n} sequences, {len(self.prior)} prior weights and {len(self.conditionals)} "
                            "conditionals: the three lists must have the same length")
        seen = {}
        seqs = []
        for i, t in enumerate(self.sequences):
            t = _check_sequence(t, self.N, self.S, f"sequence {i}")
            if t in seen:
                raise DataError(f"sequence {i} {t} repeats sequence {seen[t]}")
            seen[t] = i
            seqs.append(t)
        self.sequences = seqs
        self.prior = [self._prob(p, f"prior of sequence {i} {seqs[i]}") for i, p in enumerate(self.prior)]
        if sum(self.prior) != 1:
            raise DataError(f"prior probabilities sum to {sum(self.prior)}, not 1")
        conds = []
        for i, c in enumerate(self.conditionals):
            where = f"conditional π(·|{seqs[i]}) (sequence {i})"
            if len(c) != self.N:
                raise DataError(f"{where} has {len(c)} entries, the dictionary has N = {self.N}")
            c = tuple(self._prob(p, f"{where}, token {j}") for j, p in enumerate(c))
            if sum(c) != 1:
                raise DataError(f"{where} sums to {sum(c)}, not 1")
            if self.require_full_support:
                zero = [j for j, p in enumerate(c) if p == 0]
                if zero:
                    raise DataError(f"{where}: π({zero[0]}|t) = 0 violates Assumption 2 (full support)")
            conds.append(c)
        self.conditionals = conds

    @staticmethod
    def _prob(p, where: str) -> Fraction:
        try:
            q = to_rational(p)
        except (TypeError, ValueError) as e:
            raise DataError(f"{where}: {e}") from None
        if not 0 <= q <= 1:
            raise DataError(f"{where}: probability {q} is not in [0, 1]")
        return q

    def __len__(self) -> int:
        return len(self.sequences)

    def argmax_table(self) -> LookupTable:
        """The most likely next token of each sequence (smallest id on ties)."""
        labels = [max(range(self.N), key=lambda j: (c[j], -j)) for c in self.conditionals]
        return LookupTable(self.N, self.S, self.sequences, labels, self.seed)


def random_conditionals(N: int, S: int, seed: int, weight_range: int = 8, uniform_prior: bool = False,
                        peaked: int = 0) -> Conditionals:
    """Seeded rational data with full support on all N^S sequences (Assumption 2).

    Conditionals: integer weights in [1, weight_range], normalised; with ``peaked`` > 0 a
    random token per sequence gets ``peaked`` extra weight (a near look-up table).
    Prior: uniform 1/N^S, or integer weights in [1, weight_range] normalised.
    """
    _check_sizes(N, S)
    rng = random.Random(seed)
    seqs = all_sequences(N, S)
    if uniform_prior:
        prior = [Fraction(1, len(seqs))] * len(seqs)
    else:
        w = [rng.randint(1, weight_range) for _ in seqs]
        prior = [Fraction(x, sum(w)) for x in w]
    conds = []
    for _ in seqs:
        w = [rng.randint(1, weight_range) for _ in range(N)]
        if peaked:
            w[rng.randrange(N)] += peaked
        conds.append(tuple(Fraction(x, sum(w)) for x in w))
    return Conditionals(N, S, seqs, prior, conds, True, seed)


def likely_order(data: Conditionals) -> List[int]:
    """Indices of the sequences by decreasing prior (ties: the listed order)."""
    return sorted(range(len(data)), key=lambda i: (-data.prior[i], i))


def t_epsilon(data: Conditionals, eps) -> int:
    """T_ε (note §2): the smallest k such that the k most likely sequences have mass ≥ 1 − ε."""
    eps = to_rational(eps)
    if not 0 <= eps <= 1:
        raise DataError(f"ε = {eps} must be in [0, 1]")
    need = 1 - eps
    mass = Fraction(0)
    if need == 0:
        return 0
    for k, i in enumerate(likely_order(data), 1):
        mass += data.prior[i]
        if mass >= need:
            return k
    raise DataError("prior mass never reaches 1 − ε (the prior does not sum to 1)")


def spread_table(N: int, S: int, seed: int, T0: int, labels: Optional[int] = None) -> LookupTable:
    """A seeded random look-up table on T0 sequences chosen so that their last tokens are as
    spread as possible (round-robin over the last token, random order within each).

    Corollary 1 lets the construction choose which T0 associations of the table it memorizes;
    the skip connection x(t,S) = e(t_S) + pos_S only sees the last token, so its d rows of F
    have rank ≤ the number of distinct last tokens (errata in docs/errata.md).
    """
    _check_sizes(N, S)
    total = N ** S
    if not 0 < T0 <= total:
        raise DataError(f"T0 = {T0} associations requested, but only N^S = {total} sequences exist")
    k = N if labels is None else labels
    if not 0 < k <= N:
        raise DataError(f"labels = {labels} must be in [1, N = {N}]")
    rng = random.Random(seed)
    buckets = {}
    for t in all_sequences(N, S):
        buckets.setdefault(t[-1], []).append(t)
    for b in buckets.values():
        rng.shuffle(b)
    order = list(buckets)
    rng.shuffle(order)
    seqs = []
    while len(seqs) < T0:
        for last in order:
            if buckets[last] and len(seqs) < T0:
                seqs.append(buckets[last].pop())
    seqs.sort()
    return LookupTable(N, S, seqs, [rng.randrange(k) for _ in seqs], seed)
