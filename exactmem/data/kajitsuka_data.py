"""Sequence data for Kajitsuka & Sato (note ``papers/kajitsuka.md`` §2): exact checks and generators.

* `check_separation` — Assumption 4.1, token-wise (r, δ)-separation, decided exactly
  with squared norms and squared distances (‖x‖² ≤ r², ‖x − x'‖² ≥ δ² for distinct tokens),
  plus the theorems' r ≥ 1 ≥ δ. Without a given r (δ) the smallest admissible value
  max(1, max ‖x‖) (largest: min(1, min ‖x − x'‖)) is used, as its square.
* `check_consistency` — label consistency up to permutation: eq. (5) (next-token: same
  multiset and same last token ⇒ same label) and eq. (10) (seq-to-seq: same multiset and
  same token ⇒ same label).
* `generate` — seeded sequences over a pool of separated tokens, with repeated tokens
  inside and across sequences, permuted duplicates with consistent labels, and rational
  coordinates with large denominators.

Every violation raises `DataError` naming the offending tokens (sequence, position)
or sequences. Sequence i, position k are 0-based (the paper's X^{(i+1)}_{:,k+1}).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from .dataset import DataError, Dataset
from ..arith.numbers import integer_points
from .geometry import closest_pair

Token = Tuple[Fraction, ...]
Seq = Tuple[Token, ...]


@dataclass
class SequenceData:
    """N sequences of n tokens in Q^d with labels in {0, …, C − 1} (one per sequence for
    next-token prediction, one per position for sequence-to-sequence)."""

    sequences: List[Seq]
    labels: List  # int (next-token) or tuple of n ints (seq2seq)
    C: int
    setting: str = "next_token"  # "next_token" | "seq2seq"
    seed: Optional[int] = None
    name: str = ""
    info: Dict[str, object] = field(default_factory=dict)
    _index: Optional[tuple] = field(default=None, repr=False, compare=False)

    @property
    def N(self) -> int:
        return len(self.sequences)

    @property
    def n(self) -> int:
        return len(self.sequences[0])

    @property
    def N_distinct(self) -> int:
        """The number of pairwise-distinct sequences (what a certificate's n_examples counts)."""
        return len(set(self.token_index()[1]))  # equal token ids <=> equal sequences

    @property
    def d(self) -> int:
        return len(self.sequences[0][0])

    def token_index(self) -> Tuple[List[Token], List[Tuple[int, ...]]]:
        """(distinct tokens in order of first occurrence, each sequence as token ids); computed
        once (hashing ints, not Fractions; a token object shared among sequences is keyed once,
        by its id: the sequences keep it alive meanwhile) and cached."""
        if self._index is None:
            ids: Dict[tuple, int] = {}
            by_id: Dict[int, int] = {}
            tokens: List[Token] = []
            seqs = []
            for X in self.sequences:
                row = []
                for t in X:
                    j = by_id.get(id(t))
                    if j is None:
                        key = tuple((x.numerator, x.denominator) for x in t)
                        j = ids.get(key)
                        if j is None:
                            j = ids[key] = len(tokens)
                            tokens.append(t)
                        by_id[id(t)] = j
                    row.append(j)
                seqs.append(tuple(row))
            self._index = (tokens, seqs)
        return self._index

    def to_dataset(self) -> Dataset:
        """The certificate's dataset: identity decoding, labels as exact output columns."""
        if self.setting == "next_token":
            labels = [(Fraction(y),) for y in self.labels]
        else:
            labels = [tuple((Fraction(y),) for y in ys) for ys in self.labels]
        return Dataset(list(self.sequences), labels, "vectors", self.seed, self.name, dict(self.info))


def check_labelled(items: Sequence, labels: Sequence, C, noun: str) -> None:
    """C a positive integer, at least one item, one label per item (``noun``: "sequences", …)."""
    if isinstance(C, bool) or not isinstance(C, int) or C < 1:
        raise DataError(f"C = {C!r}: need a positive integer number of classes")
    if not items:
        raise DataError(f"no {noun}")
    if len(items) != len(labels):
        raise DataError(f"{len(items)} {noun} but {len(labels)} labels")


def rational_entries(v, where: str) -> List[Fraction]:
    """The entries of a user's vector as Fractions; DataError (message starting ``where``) for a
    float (not exact data) or anything that is not a rational number."""
    out = []
    for x in v:
        if isinstance(x, float):
            raise DataError(f"{where}: floats are not exact data; use Fraction or 'p/q' strings")
        try:
            out.append(Fraction(x))
        except (TypeError, ValueError):
            raise DataError(f"{where}: {x!r} is not a rational number") from None
    return out


def _token(t, i: int, k: int, d: Optional[int]) -> Token:
    if not isinstance(t, (tuple, list)):
        raise DataError(f"sequence {i}, position {k}: a token must be a vector (tuple of rationals)")
    out = rational_entries(t, f"sequence {i}, position {k}")
    if not out:
        raise DataError(f"sequence {i}, position {k}: empty token")
    if d is not None and len(out) != d:
        raise DataError(f"sequence {i}, position {k}: token has dimension {len(out)}, sequence 0's tokens have {d}")
    return tuple(out)


def make_data(sequences: Sequence, labels: Sequence, C: int, setting: str = "next_token",
              seed: Optional[int] = None, name: str = "") -> SequenceData:
    """Validate shapes and labels (not yet separation or consistency) and return exact data."""
    if setting not in ("next_token", "seq2seq"):
        raise DataError(f"setting must be 'next_token' or 'seq2seq', not {setting!r}")
    check_labelled(sequences, labels, C, "sequences")
    n = len(sequences[0])
    if n == 0:
        raise DataError("sequence 0 is empty")
    d = None
    seqs: List[Seq] = []
    seen: Dict[tuple, Token] = {}  # sequences reuse a pool of tokens: convert each distinct one once, share it
    by_id: Dict[int, tuple] = {}  # id -> (that tuple, its token); the tuple is kept so its id stays unique
    for i, X in enumerate(sequences):
        if len(X) != n:
            raise DataError(f"sequence {i} has length {len(X)}, sequence 0 has {n} (the theorems fix n)")
        toks = []
        for k, t in enumerate(X):
            same = by_id.get(id(t))  # the very same tuple object again: no hashing of its entries
            tok, key = (same[1], None) if same is not None and same[0] is t else (None, None)
            if tok is None:
                try:
                    key = t if isinstance(t, tuple) else None
                    tok = seen.get(key) if key is not None else None
                except TypeError:  # an unhashable entry: _token names the problem
                    key = tok = None
            if tok is None:
                tok = _token(t, i, k, d)
                if key is not None:
                    seen[key] = tok
            if key is not None:
                by_id[id(t)] = (t, tok)
            elif len(tok) != d:
                raise DataError(f"sequence {i}, position {k}: token has dimension {len(tok)}, sequence 0's tokens "
                                f"have {d}")
            d = len(tok)
            toks.append(tok)
        seqs.append(tuple(toks))

    def label(y, where):
        if isinstance(y, bool) or Fraction(y).denominator != 1 or not 0 <= y < C:
            raise DataError(f"{where}: label {y!r} is not an integer in [0, {C}) (C = {C} classes)")
        return int(y)

    labs: List = []
    for i, y in enumerate(labels):
        if setting == "next_token":
            labs.append(label(y, f"sequence {i}"))
        else:
            if not isinstance(y, (tuple, list)) or len(y) != n:
                raise DataError(f"sequence {i}: seq-to-seq labels must be a tuple of n = {n} labels")
            labs.append(tuple(label(v, f"sequence {i}, position {k}") for k, v in enumerate(y)))
    return SequenceData(seqs, labs, C, setting, seed, name)


# ----------------------------------------------------------------------------- Assumption 4.1


@dataclass
class Separation:
    """Measured geometry of the distinct tokens and the (r², δ²) the theorems use."""

    tokens: List[Token]  # distinct tokens, in order of first occurrence
    where: Dict[Token, Tuple[int, int]]  # first (sequence, position) of each distinct token
    max_norm2: Fraction
    min_dist2: Fraction  # 1 if there is only one distinct token
    r2: Fraction
    delta2: Fraction


def check_separation(data: SequenceData, r=None, delta=None) -> Separation:
    """Assumption 4.1 with r ≥ 1 ≥ δ > 0, exactly. ``r``/``delta`` default to the tightest
    admissible values (squared, clamped to r ≥ 1, δ ≤ 1)."""
    tokens, id_seqs = data.token_index()
    where: Dict[Token, Tuple[int, int]] = {}
    seen = set()
    for i, row in enumerate(id_seqs):
        for k, j in enumerate(row):
            if j not in seen:
                seen.add(j)
                where[tokens[j]] = (i, k)
    L, P = integer_points(tokens)
    top, far = max((sum(x * x for x in p), t) for p, t in zip(P, tokens))  # ‖t‖² · L², and the token
    max_n2 = Fraction(top, L * L)
    if len(tokens) > 1:
        min_d2, a, b = closest_pair(tokens)
    else:
        min_d2, a, b = Fraction(1), 0, 0
    if r is not None:
        r = Fraction(r)
        if r < 1:
            raise DataError(f"r = {r}: the theorems need r ≥ 1 (Assumption 4.1 with r ≥ 1 ≥ δ)")
        if max_n2 > r * r:
            i, k = where[far]
            raise DataError(f"token (sequence {i}, position {k}) has squared norm {max_n2} > r² = {r * r}")
        r2 = r * r
    else:
        r2 = max(Fraction(1), max_n2)
    if delta is not None:
        delta = Fraction(delta)
        if not 0 < delta <= 1:
            raise DataError(f"delta = {delta}: the theorems need 0 < δ ≤ 1")
        if len(tokens) > 1 and min_d2 < delta * delta:
            (i, k), (j, l) = where[tokens[a]], where[tokens[b]]
            raise DataError(f"tokens (sequence {i}, position {k}) and (sequence {j}, position {l}) are distinct "
                            f"but their squared distance {min_d2} < δ² = {delta * delta}")
        delta2 = delta * delta
    else:
        delta2 = min(Fraction(1), min_d2)
    return Separation(tokens, where, max_n2, min_d2, r2, delta2)


# ----------------------------------------------------------------------------- eqs. (5), (10)


def multiset_key(X: Seq) -> Tuple[Token, ...]:
    """The multiset of a sequence (eq. (44)) as a canonical sorted tuple."""
    return tuple(sorted(X))


def check_consistency(data: SequenceData) -> Dict[tuple, int]:
    """Eq. (5) / eq. (10): equal (multiset, last token) — or (multiset, token) for seq-to-seq —
    must carry equal labels. Returns the map (sorted token ids, token id) → label."""
    seen: Dict[tuple, Tuple[int, int, int]] = {}
    for i, X in enumerate(data.token_index()[1]):
        ms = tuple(sorted(X))
        if data.setting == "next_token":
            items = [(len(X) - 1, data.labels[i])]
        else:
            items = list(enumerate(data.labels[i]))
        for k, y in items:
            key = (ms, X[k])
            prev = seen.get(key)
            if prev is None:
                seen[key] = (i, k, y)
            elif prev[2] != y:
                j, l, z = prev
                if data.setting == "next_token":
                    raise DataError(f"sequences {j} and {i} are permutations of each other with the same last "
                                    f"token but labels {z} and {y}: eq. (5) (consistency up to permutation) "
                                    f"fails, and no permutation-equivariant Transformer memorizes both")
                raise DataError(f"(sequence {j}, position {l}) and (sequence {i}, position {k}): same token, "
                                f"sequences equal up to permutation, labels {z} and {y}: eq. (10) fails")
    return {key: v[2] for key, v in seen.items()}


# ----------------------------------------------------------------------------- generators


def token_pool(size: int, d: int, seed: int, coord_range: int = 16, denominator_bits: int = 0) -> List[Token]:
    """``size`` distinct tokens in Q^d: integer coordinates in [−coord_range, coord_range], or —
    with ``denominator_bits`` = b > 0 — coordinates k/q with a random odd q of b bits and
    |k/q| ≤ coord_range (large denominators; distinct tokens stay apart by at least 1/q²·…,
    measured exactly by `check_separation`)."""
    rng = random.Random(seed)
    if (2 * coord_range + 1) ** d < 2 * size and denominator_bits == 0:
        raise DataError(f"a pool of {size} distinct integer tokens needs a larger coord_range than {coord_range} "
                        f"in dimension {d}")
    seen, out = set(), []
    while len(out) < size:
        if denominator_bits:
            t = []
            for _ in range(d):
                q = rng.randrange(2 ** (denominator_bits - 1), 2 ** denominator_bits) | 1
                t.append(Fraction(rng.randint(-coord_range * q, coord_range * q), q))
            t = tuple(t)
        else:
            t = tuple(Fraction(rng.randint(-coord_range, coord_range)) for _ in range(d))
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def generate(N: int, n: int, d: int, C: int, seed: int, setting: str = "next_token", vocab: Optional[int] = None,
             permuted: float = 0.1, duplicates: float = 0.05, denominator_bits: int = 0,
             coord_range: int = 16) -> SequenceData:
    """Seeded consistently labelled data: N sequences of n tokens drawn with repetition from
    a pool of ``vocab`` tokens (default max(n, ⌈√(nN)⌉·4)); a fraction ``permuted`` of the
    sequences are permutations of earlier ones (same last token for next-token prediction,
    so their labels agree by eq. (5)); a fraction ``duplicates`` are exact copies. Labels are
    a seeded random function of the consistency key, so eqs. (5)/(10) hold by construction."""
    if N < 1 or n < 1 or d < 1:
        raise DataError("N, n and d must be positive")
    rng = random.Random(seed)
    if vocab is None:
        vocab = max(n, 4 * int((n * N) ** 0.5) + 1)
    pool = token_pool(vocab, d, seed + 1, coord_range, denominator_bits)
    idx: List[Tuple[int, ...]] = []  # sequences as pool indices
    for i in range(N):
        u = rng.random()
        if i and u < duplicates:
            idx.append(idx[rng.randrange(i)])
        elif i and u < duplicates + permuted:
            X = list(idx[rng.randrange(i)])
            body = X[:-1] if setting == "next_token" else X
            rng.shuffle(body)
            idx.append(tuple(body + [X[-1]]) if setting == "next_token" else tuple(body))
        else:
            idx.append(tuple(rng.randrange(vocab) for _ in range(n)))
    table: Dict[tuple, int] = {}
    lab_rng = random.Random(seed + 2)

    def lab(key):
        if key not in table:
            table[key] = lab_rng.randrange(C)
        return table[key]

    if setting == "next_token":
        labels = [lab((tuple(sorted(X)), X[-1])) for X in idx]
    else:
        labels = [tuple(lab((tuple(sorted(X)), t)) for t in X) for X in idx]
    seqs = [tuple(pool[j] for j in X) for X in idx]
    name = f"{setting} N={N} n={n} d={d} C={C} vocab={vocab}" + (f" q~2^{denominator_bits}" if denominator_bits else "")
    data = make_data(seqs, labels, C, setting, seed, name)
    data.info.update({"vocab": vocab, "permuted": permuted, "duplicates": duplicates,
                      "denominator_bits": denominator_bits, "coord_range": coord_range})
    return data
