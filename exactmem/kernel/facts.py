"""Dataset facts the kernel recomputes from the examples (kernel; standard library only).

A memorization theorem speaks of N pairwise-distinct labelled inputs, of their length n, of C
classes and, for token-wise (r, δ)-separated data (Kajitsuka & Sato, Definition of separated
tokens, §3), of the norms and gaps of the distinct tokens (`geometry`, layer models only). A
certificate never states these: the
kernel counts them while it reads the examples, and the claims on them (``n_examples``,
``n_rows``, ``seq_len``, ``label_classes``, ``distinct_tokens``, ``max_norm2``, ``min_sep2``)
are judged against these counts.

Equal inputs are found by the SHA-256 of a canonical byte form (token ids, or the reduced
numerators and denominators of every coordinate, each length-prefixed): equal inputs always
give equal digests, so N is never over-counted; two rows with one digest and two labels are a
REFUTED witness (a false one would need a SHA-256 collision, which the certificate's own hash
already rules out).
"""

from __future__ import annotations

import hashlib
from typing import Dict, List, Optional, Tuple

from .geometry import norms_and_gaps  # layer models only: graph models claim no token geometry (schema.py)

DATA_QUANTITIES = ("n_examples", "n_rows", "seq_len", "label_classes", "distinct_tokens", "max_norm2", "min_sep2")
VERDICT_QUANTITIES = ("n_pass", "n_fail", "codelength_bits")  # graph models: confirmed verdicts, code lengths
CODER_BITS = 2  # codelength_bits = the confirmed code lengths of the distinct inputs + an arithmetic coder's 2 bits
VECTOR_QUANTITIES = ("max_norm2", "min_sep2")  # need the distinct token vectors, not only their count
KNOWN_TOKENS = 1 << 16  # token objects whose bytes DataFacts remembers (then it starts afresh)


def _int_bytes(v: int) -> bytes:
    """A length-prefixed two's-complement encoding of an int of any size (no decimal conversion)."""
    b = v.to_bytes(v.bit_length() // 8 + 1, "big", signed=True)
    return len(b).to_bytes(8, "big") + b


def token_bytes(t) -> bytes:
    """Canonical bytes of one token: an id, or a vector of Fractions (in lowest terms)."""
    if isinstance(t, int):
        return b"i" + _int_bytes(t)
    return b"v" + b"".join(_int_bytes(x.numerator) + _int_bytes(x.denominator) for x in t)


def _label_key(label):
    """A hashable, exact form of a label (class index, column of Fractions, or one per position)."""
    if isinstance(label, int):
        return label
    return tuple(_label_key(x) if isinstance(x, list) else x for x in label)


class DataFacts:
    """Distinct inputs, their labels and the token facts of the rows seen so far.

    ``add(row, input, label)`` returns the earlier row with the same input and another label
    (a conflict), else None; ``merge`` adds another part's facts (a shard) and returns the
    conflicts it finds, ordered by the later row; ``quantities`` gives the data quantities."""

    def __init__(self, vectors: bool = False, verdicts: bool = False, codes: bool = False):
        self.vectors = vectors  # keep the distinct token vectors (for max_norm2 / min_sep2)
        self.verdicts = {"pass": set(), "fail": set()} if verdicts else None  # confirmed verdict -> input digests
        self.codes = {} if codes else None  # input digest -> its confirmed code length (codelength.py)
        self.last = None  # the digest of the input added last
        self.seen: Dict[bytes, Tuple[int, object]] = {}  # input digest -> (first row, label key)
        self.rows = self.repeats = self.seq_len = 0
        self.classes: set = set()  # the distinct label values (one per position for sequence-to-sequence)
        self.tokens: Dict[bytes, object] = {}  # canonical token bytes -> the vector (or None)
        self.known: Dict[int, tuple] = {}  # id(token) -> (token, its bytes); holding the token keeps its id unique

    def token_bytes(self, t) -> bytes:
        """`token_bytes` of ``t``, computed once per token object of an immutable kind
        (the parser shares one tuple among equal input tokens)."""
        hit = self.known.get(id(t))  # an entry holds its token, so no other object has that id meanwhile
        if hit is not None:
            return hit[1]
        tb = token_bytes(t)
        if type(t) is tuple:
            if len(self.known) >= KNOWN_TOKENS:
                self.known.clear()
            self.known[id(t)] = (t, tb)
        return tb

    def add(self, row: int, x: list, label) -> Optional[int]:
        h = hashlib.sha256()
        for t in x:
            tb = self.token_bytes(t)
            h.update(tb)
            self.tokens.setdefault(tb, t if self.vectors and not isinstance(t, int) else None)
        self.seq_len = max(self.seq_len, len(x))
        key = _label_key(label)
        self.classes.update(key if isinstance(key, tuple) and key and isinstance(label[0], (list, int)) else (key,))
        self.last = h.digest()
        other = self._record(self.last, row, key)
        return None if other is None else other[0]

    def confirm(self, verdict, code=None) -> None:
        """The last added input's claimed verdict ("pass" or "fail") and code length were confirmed (graph models)."""
        if self.verdicts is not None and verdict in self.verdicts:
            self.verdicts[verdict].add(self.last)
        if self.codes is not None and code is not None:
            self.codes[self.last] = code

    def _record(self, digest: bytes, row: int, key) -> Optional[tuple]:
        """Count one row; the (row, label key) it conflicts with (same input, another label), else None."""
        self.rows += 1
        old = self.seen.get(digest)
        self.repeats += old is not None
        if old is None or row < old[0]:
            self.seen[digest] = (row, key)  # the earliest row stands for the input
        return None if old is None or old[1] == key else old

    def export(self) -> tuple:
        """Picklable facts of one part, for `merge` in the process that combines parts."""
        return self.seen, self.rows, self.repeats, self.seq_len, self.classes, self.tokens, self.verdicts, self.codes

    def merge(self, part: tuple) -> List[tuple]:
        """Add a part's exported facts; the (earlier row, later row, later row's label) triples of
        one input with two labels, ordered by the later row."""
        seen, rows, repeats, seq_len, classes, tokens, verdicts, codes = part
        for k, v in (verdicts or {}).items():
            self.verdicts[k] |= v
        self.codes is None or self.codes.update(codes or {})
        conflicts = []
        for digest, (row, key) in sorted(seen.items(), key=lambda kv: kv[1][0]):
            other = self._record(digest, row, key)
            if other is not None:
                conflicts.append((other[0], row, key) if other[0] < row else (row, *other))
        self.rows += rows - len(seen)
        self.repeats += repeats
        self.seq_len = max(self.seq_len, seq_len)
        self.classes |= classes
        self.tokens.update((k, v) for k, v in tokens.items() if k not in self.tokens)
        return sorted(conflicts, key=lambda p: p[1])

    def quantities(self, tick=None) -> Dict[str, object]:
        """The data quantities (``min_sep2`` None when fewer than two distinct tokens: no pair)."""
        q = {"n_examples": len(self.seen), "n_rows": self.rows, "seq_len": self.seq_len,
             "label_classes": len(self.classes), "distinct_tokens": len(self.tokens)}
        if self.verdicts is not None:
            q.update({"n_" + k: len(v) for k, v in self.verdicts.items()})
        if self.codes is not None:
            q["codelength_bits"] = sum(self.codes.values()) + CODER_BITS
        if self.vectors:  # layer models only: geometry.py
            q.update(norms_and_gaps([v for v in self.tokens.values() if v is not None], tick))
        return q
