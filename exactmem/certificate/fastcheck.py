"""Optional fast exact checking path (``exactmem check --engine fast``).

Same verdicts as the pure checker (`checker`): it reuses the pure checker's parsing and
validation, its claim measurements and its per-example judgement, and replaces only the
example-by-example evaluation of token-wise layers (``embed``, ``affine``, ``feedforward``)
by a **batched, column-compressed** exact evaluation, and does the same for exact attention
layers (``hardmax`` and ``uniform``: any query/key matrices, ties sharing the mass, query
``all``/``last``, keys ``all``/``others``, residual, several heads). Models with any other
attention kind (``softmax`` and whatever needs intervals) are handed to the pure checker
unchanged. No construction code, no floating point: values are Python ``int`` (in NumPy
object arrays) or NumPy ``int64`` where a bound computed exactly beforehand proves that no
int64 overflow can happen.

Representation. All tokens of all examples are evaluated together, over one common
denominator D (as in the pure checker, but global). Each register (row) at each layer is a
`_Row`: the array of its *distinct* values and an index map token → value (an
`_Index`, shared by rows computed together; the identity map when every token has its
own value). Deep memorizers read each crafted weight on many tokens, so the registers that
carry the big integers take only a few distinct values; evaluating on the distinct values
only is what makes depth-2,000 networks with 1,300-bit weights checkable for 65,536 tokens.

With numba installed (``exactmem.native``; without it everything below runs in NumPy), a row
past int64 on at least ``NATIVE_MIN_VALUES`` distinct values is a *limb array* (int64, base
2^30, exact carries: ``exactmem/native/rows.py``) computed by a compiled kernel, and equal
columns are found by a compiled hash table instead of ``np.unique``'s sort. These only compute
outputs; the judgement stays the kernel's.

One layer, output row r = Σ_j A[r][j]·h_j + c_r·D (then ReLU):

1. rows whose support is a single row j with weight 1 (and no bias), when the layer adds no
   denominator and the row is ≥ 0 if a ReLU follows, are the same values: reused, no work;
2. other rows are grouped by the set of index maps their inputs use; each group's inputs
   are aligned on one merged index (the distinct combinations of the maps: ``np.unique``);
3. each row is computed on the merged distinct columns, in int64 if
   Σ|A[r][j]|·max|h_j| + |c_r·D| < 2^62 (so every partial sum fits), else with Python ints;
4. within a group, the rows reading exactly the same input rows are de-duplicated again when
   their distinct columns may have collapsed (they merged several maps, or they are fewer
   than their inputs, e.g. an indicator σ(1 − p − q) of two comparators).

Attention layers (the only layers that mix tokens) keep the same common denominator D:

* a head's ``WV``/``WO`` and, for hardmax, ``WQ``/``WK`` are token-wise linear maps, done
  as above on the compressed rows;
* each query j averages the values of its argmax / key set I_j. The per-token values of the
  rows to be mixed are materialised, grouped by sequence (the sequence lengths), and
  ``Σ_{k∈I_j} x_k · (M / |I_j|)`` is computed over the denominator ``D·M``, with M the lcm of
  all |I_j| that occur (uniform: the key counts ``L`` or ``L − 1``). The mixing is done at
  whichever of the three stages (before ``WV``, between ``WV`` and ``WO``, after ``WO``) has
  the fewest rows — the maps are linear, so the result is the same number;
* hardmax scores ``(WK z_k)·(WQ z_j)`` are integers over the one positive denominator
  ``D²·L_Q·L_K``, so the argmax set (all maximal scores: ties share the mass) is decided by
  exact integer comparison; an all-zero ``WQ`` or ``WK`` makes every score 0, i.e. uniform
  weights;
* the mixed rows go back to the compressed form (distinct columns, ``np.unique``-style), and
  the heads and the residual are summed over the lcm of their denominators.

Scores are formed per group of equal-length sequences, in chunks of at most ``SCORE_CHUNK``
query-key pairs. The input itself starts compressed (one index over the distinct token
columns: small vocabularies repeat), and with ``readout.position: "last"``, only the last token of each sequence is kept once no
attention layer is left (the other tokens cannot influence the output any more).

Exactness does not depend on the de-duplication (it only decides which equal values are
computed once); ``tests/test_fastcheck.py`` compares this path with the pure checker on
certified and planted-wrong certificates.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from itertools import count
from math import gcd, lcm
from operator import attrgetter
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..kernel.checker import (Budget, Limits, MalformedCertificate, ParsedCertificate, Verdict, check_chunks, check_claims,
                      check_examples, combine_verdicts, conclude, conflict_verdict, judge_example, new_facts,
                      parse_certificate, parse_chunk, precision_cap)
from ..kernel.facts import DataFacts
from ..kernel.evaluate import common_divisor
from ..kernel.linear import Affine, Attention, Embed, FeedForward, Lin
from ..kernel.limits import LimitExceeded
from ..native import AVAILABLE, NATIVE_MIN_VALUES, equal_classes, kernels, refinement
from ..native.rows import ints_of, lincomb

__all__ = ["check_certificate_fast", "check_examples_fast", "chunk_groups", "fast_supported", "merged_chunks"]

INT64_SAFE = 1 << 62
COMPILED = AVAILABLE  # numba is importable (it is imported at the first wide row, not here)
_clock = [lambda: None]  # the running check's Budget.tick, set by _evaluate (work on big integers checks it)
GROUP_EXAMPLES = 500_000  # a version-2 certificate's chunks are evaluated together up to this many examples
# (equal register values are shared within a group: larger groups cost much less per example)
EXACT_ATTENTION = ("uniform", "hardmax")  # every other kind (softmax, ...) goes to the pure checker


class _Index:
    """Token → distinct-value map: ``map`` is an int64 array of length T, or None (identity)."""

    __slots__ = ("map", "k")

    def __init__(self, map_: Optional[np.ndarray], k: int):
        self.map, self.k = map_, k


class _Row:
    """One register over all tokens: distinct values ``vals`` (int64 or object) and their map."""

    __slots__ = ("vals", "ix", "bound", "nonneg", "bits")

    def __init__(self, vals: np.ndarray, ix: _Index):
        self.vals, self.ix = _narrow(vals), ix
        if vals.ndim == 2:  # compiled limbs (exactmem/native/rows.py): |value| < 2^(30·K), sign of the top limb
            self.bound, self.nonneg = 1 << (30 * vals.shape[0]), bool((vals[-1] >= 0).all())
            self.bits: Optional[int] = None  # computed when first asked (max_bits)
            return
        if len(self.vals):
            lo, hi = int(self.vals.min()), int(self.vals.max())
        else:
            lo = hi = 0
        self.bound, self.nonneg = max(-lo, hi), lo >= 0  # bound = max |value|, exactly
        self.bits = self.bound.bit_length()

    def max_bits(self) -> int:
        """The largest bit length of |value| over the row's values; a row passed on unchanged
        from layer to layer is measured once."""
        if self.bits is None:
            self.bits = int(kernels().max_bit_length(self.vals))
        return self.bits


def _narrow(v: np.ndarray) -> np.ndarray:
    """int64 if every value provably fits (|v| < 2^62), else an object array of Python ints
    (limb arrays, 2-D, stay as they are)."""
    if v.dtype == np.int64:
        return v
    if len(v) == 0:
        return v.astype(np.int64)
    lo, hi = int(v.min()), int(v.max())
    return v.astype(np.int64) if -INT64_SAFE < lo and hi < INT64_SAFE else v


def _as_object(v: np.ndarray) -> np.ndarray:
    if v.ndim == 2:
        return np.array(ints_of(v), dtype=object)
    return v if v.dtype == object else v.astype(object)


def _take(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The values at ``idx`` (limb arrays: columns)."""
    return v[:, idx] if v.ndim == 2 else v[idx]


# ----------------------------------------------------------------------------- index maps


def _merge(ixs: List[_Index], T: int) -> Tuple[_Index, List[Optional[np.ndarray]]]:
    """A common index for several maps and, per map, the gather array into its values."""
    if len(ixs) == 1:
        return ixs[0], [None]
    if any(ix.map is None for ix in ixs):
        return ixs[next(i for i, ix in enumerate(ixs) if ix.map is None)], [ix.map for ix in ixs]
    got = refinement([ix.map for ix in ixs], [ix.k for ix in ixs])
    if got is not None:  # one index's classes refine the others': a gather, no hash
        return ixs[got[0]], got[1]
    key = ixs[0].map.astype(np.int64)
    span = ixs[0].k
    for ix in ixs[1:]:
        if span * ix.k >= INT64_SAFE:  # compress first so the combined key fits in int64
            _, key = equal_classes(key)
            span = int(key.max()) + 1 if len(key) else 1
        key = key * ix.k + ix.map
        span *= ix.k
    first, inv = equal_classes(key)
    return _Index(inv, len(first)), [ix.map[first] for ix in ixs]


def _dedup(vals: List[np.ndarray], ix: _Index) -> Tuple[List[np.ndarray], _Index]:
    """Collapse equal columns of a group of rows sharing the index ``ix``."""
    k = vals[0].shape[-1]
    if k <= 1:
        return vals, ix
    if any(v.ndim == 2 for v in vals):
        if any(v.dtype == object for v in vals):
            vals = [_as_object(v) for v in vals]
        else:  # int64 and limb arrays: one column per value / per limb (canonical, so equal <=> same)
            limbs = np.concatenate([v.reshape(-1, k) for v in vals]) if len(vals) > 1 else vals[0]
            first, inv = equal_classes(limbs, True)
            if len(first) == k:
                return vals, ix
            new_map = inv if ix.map is None else inv[ix.map]
            return [_take(v, first) for v in vals], _Index(new_map, len(first))
    if all(v.dtype == np.int64 for v in vals):
        first, inv = equal_classes(vals[0] if len(vals) == 1 else np.stack(vals, axis=1))
        cols = [v[first] for v in vals]
    else:
        # dict.setdefault(key, position) gives each column the position of its first equal
        # column, in C; np.unique of those positions numbers the classes in order
        seen: Dict[object, int] = {}
        keys = vals[0].tolist() if len(vals) == 1 else zip(*(v.tolist() for v in vals))
        at = np.fromiter(map(seen.setdefault, keys, count()), dtype=np.int64, count=k)
        if len(seen) == k:
            return vals, ix
        reps, inv = np.unique(at, return_inverse=True)
        cols = [v[reps] for v in vals]
    if len(cols[0]) == k:
        return vals, ix
    new_map = inv.astype(np.int64) if ix.map is None else inv[ix.map]
    return cols, _Index(new_map, len(cols[0]))


# ----------------------------------------------------------------------------- one linear step


def _sparse(lin: Lin) -> List[List[Tuple[int, int]]]:
    return [[(j, a) for j, a in enumerate(row) if a] for row in lin.A]


def _step(rows: List[_Row], sparse: List[List[Tuple[int, int]]], bias: Optional[List[int]], Dc: int, L: int,
          relu: bool, T: int, extra: Optional[List[List[Tuple[int, int]]]] = None) -> List[_Row]:
    """Output rows Σ_j A[r][j]·rows[j] + bias[r]·Dc (+ ``extra`` terms on the same inputs),
    then ReLU. ``L`` is the factor the layer adds to the common denominator."""
    out: List[Optional[_Row]] = [None] * len(sparse)
    groups: Dict[tuple, List[int]] = {}
    terms_of = []
    for r, terms in enumerate(sparse):
        if extra is not None and extra[r]:
            terms = terms + extra[r]
        b = bias[r] * Dc if bias is not None else 0
        terms_of.append((terms, b))
        if len(terms) == 1 and b == 0 and terms[0][1] == 1 and L == 1:
            src = rows[terms[0][0]]
            if not relu or src.nonneg:
                out[r] = src
                continue
        key = tuple(sorted({id(rows[j].ix) for j, _ in terms}))
        groups.setdefault(key, []).append(r)
    const_ix = None
    for key, members in groups.items():
        if not key:  # constant rows
            const_ix = const_ix or _Index(np.zeros(T, dtype=np.int64), 1)
            for r in members:
                v = terms_of[r][1]
                out[r] = _Row(np.array([max(v, 0) if relu else v], dtype=object), const_ix)
            continue
        srcs = sorted({j for r in members for j, _ in terms_of[r][0]})
        ix_list, pos = [], {}
        for j in srcs:
            if id(rows[j].ix) not in pos:
                pos[id(rows[j].ix)] = len(ix_list)
                ix_list.append(rows[j].ix)
        merged, gathers = _merge(ix_list, T)
        inputs = {}
        for j in srcs:
            g = gathers[pos[id(rows[j].ix)]]
            inputs[j] = rows[j].vals if g is None else _take(rows[j].vals, g)
        vals = {}
        wide = []
        for r in members:
            if (merged.k >= NATIVE_MIN_VALUES and COMPILED and not _fits(terms_of[r][0], terms_of[r][1], rows)
                    and kernels() is not None):
                wide.append(r)
            else:
                vals[r] = _combine(terms_of[r][0], terms_of[r][1], inputs, rows, merged.k, relu)
        if wide:  # rows past int64 on many values: compiled limb arithmetic (exactmem/native)
            _clock[0]()
            ins = sorted({j for r in wide for j, a in terms_of[r][0] if rows[j].bound})
            at = {j: i for i, j in enumerate(ins)}
            got = lincomb([inputs[j] for j in ins],
                          [[(at[j], a) for j, a in terms_of[r][0] if rows[j].bound] for r in wide],
                          [terms_of[r][1] for r in wide], [relu] * len(wide), merged.k)
            vals.update(zip(wide, got))
        by_inputs: Dict[tuple, List[int]] = {}  # rows reading exactly the same input rows
        for r in members:
            by_inputs.setdefault(tuple(sorted({j for j, _ in terms_of[r][0]})), []).append(r)
        for ins, part in by_inputs.items():
            vs, ix = [vals[r] for r in part], merged
            if len({id(rows[j].ix) for j in ins}) > 1 or len(part) < len(ins):
                vs, ix = _dedup(vs, merged)
            for r, v in zip(part, vs):
                out[r] = _Row(v, ix)
    return out  # type: ignore[return-value]


def _fits(terms, b: int, rows: List[_Row]) -> bool:
    """Σ|a|·bound + |b| < 2^62: the row is computed in int64 (no limb array among its inputs)."""
    return abs(b) + sum(abs(a) * rows[j].bound for j, a in terms if rows[j].bound) < INT64_SAFE


def _combine(terms, b: int, inputs: Dict[int, np.ndarray], rows: List[_Row], k: int, relu: bool) -> np.ndarray:
    """Σ a·inputs[j] + b over the k merged columns, in int64 when provably safe."""
    terms = [(j, a) for j, a in terms if rows[j].bound]  # an all-zero input adds nothing
    bound = abs(b) + sum(abs(a) * rows[j].bound for j, a in terms)
    small = bound < INT64_SAFE  # then every |a|, every term and every partial sum is < 2^62
    acc, sums = None, {}
    tick = _clock[0] if not small else None
    for j, a in terms:  # Σ_|a| |a|·(Σ ±x_j): 2U − 2^M (s₁ − s₂) multiplies 2^M by s₁ − s₂ only
        if tick is not None:
            tick()
        x, m = inputs[j] if small else _as_object(inputs[j]), abs(a)
        sums[m] = (x if a > 0 else -x) if m not in sums else (sums[m] + x if a > 0 else sums[m] - x)
    for m, x in sums.items():
        t = x if m == 1 else x * m
        acc = t if acc is None else acc + t
    if acc is None:
        acc = np.zeros(k, dtype=np.int64 if small else object)
    if b:
        acc = acc + b
    if relu:
        acc = np.maximum(acc, 0)
    return acc


# ----------------------------------------------------------------------------- attention


class _Seqs:
    """Sequence structure of the current token axis: lengths, start/end offsets, totals."""

    def __init__(self, lengths: np.ndarray):
        self.lengths = lengths
        self.ends = np.cumsum(lengths)
        self.starts = self.ends - lengths
        self.n, self.T = len(lengths), int(self.ends[-1]) if len(lengths) else 0


def _full(row: _Row) -> np.ndarray:
    """The row's value at every token (length T; int64 or object)."""
    vals = _as_object(row.vals) if row.vals.ndim == 2 else row.vals
    return vals if row.ix.map is None else vals[row.ix.map]


def _select(rows: List[_Row], positions: np.ndarray) -> List[_Row]:
    """The rows restricted to the tokens ``positions`` (rows sharing an index keep sharing one)."""
    made: Dict[int, Tuple[np.ndarray, _Index]] = {}
    out = []
    for row in rows:
        key = id(row.ix)
        if key not in made:
            if row.ix.map is None:
                made[key] = (positions, _Index(None, len(positions)))
            else:
                used, inv = np.unique(row.ix.map[positions], return_inverse=True)
                made[key] = (used, _Index(inv.reshape(-1).astype(np.int64), len(used)))
        gather, ix = made[key]
        out.append(_Row(_take(row.vals, gather), ix))
    return out


def _compress(arrays: List[np.ndarray], T: int) -> List[_Row]:
    """Rows from per-token arrays, sharing one index over their distinct columns."""
    if not arrays:
        return []
    vals, ix = _dedup([_narrow(a) for a in arrays], _Index(None, T))
    return [_Row(v, ix) for v in vals]


def _lin_rows(rows: List[_Row], lin: Lin, T: int) -> List[_Row]:
    """W·rows (no bias, no ReLU): numerators over D·lin.L."""
    return _step(rows, _sparse(lin), None, 1, lin.L, False, T)


class _Weights:
    """Which keys each query averages: the key set I_j (uniform) or argmax set (hardmax) of
    every query j, as ``Σ_{k∈I_j} x_k · (M / |I_j|)`` with M the lcm of the |I_j|.

    uniform: ``ksize`` per sequence (L, or L − 1 for keys "others"); hardmax: per group of
    sequences of one length L (chunked), ``(seq ids, token ids G×L, sel G×Lq×L bool, count G×Lq)``.
    """

    def __init__(self, M: int, ksize: Optional[np.ndarray] = None, groups: Optional[list] = None):
        self.M, self.ksize, self.groups = M, ksize, groups

    def factor(self, counts: np.ndarray) -> np.ndarray:
        """M // counts, int64 when M fits, else Python ints."""
        return self.M // (counts if self.M < INT64_SAFE else counts.astype(object))


def _uniform_weights(seqs: _Seqs, others: bool) -> _Weights:
    ksize = seqs.lengths - 1 if others else seqs.lengths
    return _Weights(lcm(*(int(k) for k in np.unique(ksize))), ksize=ksize)


SCORE_CHUNK = 1 << 21  # at most this many query-key scores of one sequence group are held at once


def _length_groups(seqs: _Seqs, n_queries: Optional[int]):
    """(L, sequence ids) for the sequences of each length L, in chunks of at most SCORE_CHUNK
    query-key pairs (``n_queries`` per sequence; None: L queries)."""
    for L in np.unique(seqs.lengths).tolist():
        g = np.nonzero(seqs.lengths == L)[0]
        step = max(1, SCORE_CHUNK // (L * (L if n_queries is None else n_queries)))
        for a in range(0, len(g), step):
            yield L, g[a:a + step]


def _hardmax_weights(layer: Attention, WQ: Lin, WK: Lin, rows: List[_Row], seqs: _Seqs) -> _Weights:
    """Argmax sets of the scores (WK z_k)·(WQ z_j), compared exactly as integers over D²·L_Q·L_K."""
    last, others = layer.query == "last", layer.keys == "others"
    if not any(map(any, WQ.A)) or not any(map(any, WK.A)):  # every score is 0: all keys tie
        return _uniform_weights(seqs, others)
    Q, K = _lin_rows(rows, WQ, seqs.T), _lin_rows(rows, WK, seqs.T)
    small = sum(q.bound * k.bound for q, k in zip(Q, K)) < INT64_SAFE  # |score| and partial sums < 2^62
    Qf = [_full(q) if small else _as_object(_full(q)) for q in Q]
    Kf = [_full(k) if small else _as_object(_full(k)) for k in K]
    groups, counts = [], set()
    for L, g in _length_groups(seqs, 1 if last else None):
        tok = seqs.starts[g][:, None] + np.arange(L)
        qtok = tok[:, -1:] if last else tok
        A = None
        for q, k in zip(Qf, Kf):
            t = q[qtok][:, :, None] * k[tok][:, None, :]  # G × Lq × L
            A = t if A is None else A + t
        if others:
            qpos = np.array([L - 1]) if last else np.arange(L)
            allowed = np.arange(L)[None, :] != qpos[:, None]  # Lq × L
            A = np.where(allowed, A, A.min() - 1)
            sel = (A == A.max(axis=2, keepdims=True)) & allowed
        else:
            sel = A == A.max(axis=2, keepdims=True)
        cnt = sel.sum(axis=2).astype(np.int64)
        counts.update(np.unique(cnt).tolist())
        groups.append((g, tok, sel, cnt))
    return _Weights(lcm(*counts), groups=groups)


def _mix(x: np.ndarray, bound: int, w: _Weights, seqs: _Seqs, last: bool, others: bool) -> np.ndarray:
    """``Σ_{k∈I_j} x_k · (M / |I_j|)`` for every query j (x: per-token values, |x| ≤ bound)."""
    Lmax = int(seqs.lengths.max())
    if bound * Lmax * w.M >= INT64_SAFE:
        x = _as_object(x)
    if w.groups is None:
        S = np.add.reduceat(x, seqs.starts)  # per-sequence sums
        fac = w.factor(w.ksize)
        if last:
            return ((S - x[seqs.ends - 1]) if others else S) * fac
        sid = np.repeat(np.arange(seqs.n), seqs.lengths)
        return ((S[sid] - x) if others else S[sid]) * fac[sid]
    out = np.zeros(seqs.n if last else seqs.T, dtype=x.dtype)
    for g, tok, sel, cnt in w.groups:
        num = np.where(sel, x[tok][:, None, :], 0).sum(axis=2) * w.factor(cnt)  # G × Lq
        if last:
            out[g] = num[:, 0]
        else:
            out[tok] = num
    return out


def _attention(layer: Attention, rows: List[_Row], D: int, seqs: _Seqs) -> Tuple[List[_Row], int, _Seqs]:
    """One hardmax / uniform attention layer on the compressed rows (numerators over D)."""
    last, others = layer.query == "last", layer.keys == "others"
    Tq = seqs.n if last else seqs.T
    parts: List[Tuple[List[_Row], int]] = []  # (rows on the query tokens, their denominator)
    if layer.residual:
        parts.append((_select(rows, seqs.ends - 1) if last else rows, D))
    uniform_mixed: Dict[int, List[_Row]] = {}
    for WQ, WK, WV, WO in layer.heads:
        w = _uniform_weights(seqs, others) if layer.kind == "uniform" else _hardmax_weights(layer, WQ, WK, rows, seqs)
        lins = [WV, WO]
        sizes = [len(rows), len(WV.A), len(WO.A)]
        stage = sizes.index(min(sizes))  # mix where the fewest rows are (the maps are linear)
        cur, den = rows, D
        for lin in lins[:stage]:
            cur, den = _lin_rows(cur, lin, seqs.T), den * lin.L
        if stage == 0 and w.groups is None and w.M in uniform_mixed:
            mixed = uniform_mixed[w.M]  # uniform heads share the mix of the input
        else:
            done: Dict[int, np.ndarray] = {}
            for r in cur:
                if id(r) not in done:
                    done[id(r)] = _mix(_full(r), r.bound, w, seqs, last, others)
            mixed = _compress([done[id(r)] for r in cur], Tq)
            if stage == 0 and w.groups is None:
                uniform_mixed[w.M] = mixed
        cur, den = mixed, den * w.M
        for lin in lins[stage:]:
            cur, den = _lin_rows(cur, lin, Tq), den * lin.L
        parts.append((cur, den))
    Dn = lcm(*(d for _, d in parts))
    allrows: List[_Row] = []
    terms: List[List[Tuple[int, int]]] = [[] for _ in range(len(parts[0][0]))]
    for prow, d in parts:
        for r in range(len(terms)):
            terms[r].append((len(allrows) + r, Dn // d))
        allrows.extend(prow)
    out = _step(allrows, terms, None, 1, 1, False, Tq)
    return out, Dn, (_Seqs(np.ones(seqs.n, dtype=np.int64)) if last else seqs)


def fast_supported(cert: ParsedCertificate) -> bool:
    """True if every layer is one this path evaluates exactly (token-wise, hardmax, uniform)."""
    if cert.softmax_at is not None:
        return False
    return all(isinstance(l, (Embed, Affine, FeedForward)) or (isinstance(l, Attention) and l.kind in EXACT_ATTENTION)
               for l in cert.layers)


# ----------------------------------------------------------------------------- whole model


def _initial_rows(cert: ParsedCertificate, T: int) -> Tuple[List[_Row], int, int]:
    """Rows of the first layer's input (all tokens side by side, compressed to the distinct
    token columns: one shared index) and the common denominator."""
    seen: Dict[object, int] = {}
    if cert.tokens:
        emb: Embed = cert.layers[0]
        at = [seen.setdefault((t, s) if emb.P is not None else t, len(seen))
              for x in cert.inputs for s, t in enumerate(x)]
    else:  # (numerators, denominators): rationals in lowest terms, so equal keys <=> equal tokens, and
        # hashing tuples of ints is much cheaper than hashing Fractions (a modular inverse each); a token
        # object the parser shares among examples is keyed once (by id: cert.inputs keeps it alive)
        num, den = attrgetter("numerator"), attrgetter("denominator")
        by_id: Dict[int, int] = {}

        def index(tok) -> int:
            j = by_id.get(id(tok))
            if j is None:
                j = by_id[id(tok)] = seen.setdefault((tuple(map(num, tok)), tuple(map(den, tok))), len(seen))
            return j

        at = [index(tok) for x in cert.inputs for tok in x]
    tmap = np.fromiter(at, dtype=np.int64, count=T)  # each token slot's distinct column
    ix = _Index(None, T) if len(seen) == T else _Index(tmap, len(seen))
    if cert.tokens:
        cols = [emb.E[t] if emb.P is None else [a + b for a, b in zip(emb.E[t], emb.P[s])]
                for t, s in (key if emb.P is not None else (key, 0) for key in seen)]
        D, start = emb.L, 1
    else:
        D = lcm(*(d for _, dens in seen for d in dens))
        cols = [[n * (D // d) for n, d in zip(nums, dens)] for nums, dens in seen]
        start = 0
    m = len(cols[0])
    rows = [_Row(np.array([c[i] for c in cols], dtype=object), ix) for i in range(m)]
    return rows, D, start


def _reduce(rows: List[_Row], D: int) -> Tuple[List[_Row], int]:
    """Divide all numerators and D by their gcd (keeps the denominator from piling up)."""
    g = D
    seen = set()
    for row in rows:
        if id(row) in seen:
            continue
        seen.add(id(row))
        vals = row.vals
        if vals.ndim == 2:
            g = common_divisor(g, ints_of(vals), _clock[0])
        elif vals.dtype == np.int64:
            g = gcd(g, int(np.gcd.reduce(np.abs(vals)))) if len(vals) else g
        else:
            g = common_divisor(g, vals.tolist(), _clock[0])
        if g == 1:
            return rows, D
    done: Dict[int, _Row] = {}
    out = []
    for row in rows:
        if id(row) not in done:
            vals = _as_object(row.vals) if row.vals.ndim == 2 else row.vals
            vals = vals if vals.dtype == object or g < INT64_SAFE else vals.astype(object)
            done[id(row)] = _Row(vals // g, row.ix)
        out.append(done[id(row)])
    return out, D // g


def _evaluate(cert: ParsedCertificate, budget: Budget, progress=None) -> Tuple[List[_Row], int, np.ndarray]:
    """Run every layer on all tokens at once; return the final rows, D and sequence lengths
    (``progress(layers done, layers)`` after each layer, if given)."""
    _clock[0] = budget.tick
    try:
        return _evaluate_layers(cert, budget, progress)
    finally:
        _clock[0] = lambda: None


def _evaluate_layers(cert: ParsedCertificate, budget: Budget, progress=None) -> Tuple[List[_Row], int, np.ndarray]:
    seqs = _Seqs(np.array([len(x) for x in cert.inputs], dtype=np.int64))
    rows, D, start = _initial_rows(cert, seqs.T)
    layers = cert.layers[start:]
    last_attn = max((i for i, l in enumerate(layers) if isinstance(l, Attention)), default=-1)
    for i, layer in enumerate(layers):
        budget.tick()
        if i > last_attn and cert.position == "last" and seqs.T > seqs.n:
            rows, seqs = _select(rows, seqs.ends - 1), _Seqs(np.ones(seqs.n, dtype=np.int64))
        if isinstance(layer, Affine):
            lin = layer.lin
            rows = _step(rows, _sparse(lin), lin.c, D, lin.L, layer.relu, seqs.T)
            D *= lin.L
        elif isinstance(layer, FeedForward):
            l1, l2 = layer.lin1, layer.lin2
            hidden = _step(rows, _sparse(l1), l1.c, D, l1.L, True, seqs.T)
            both = hidden + rows
            sp2 = [[(j, a) for j, a in terms] for terms in _sparse(l2)]
            extra = None
            if layer.residual:
                k = l1.L * l2.L
                extra = [[(len(hidden) + r, k)] for r in range(len(rows))]
            rows = _step(both, sp2, l2.c, D * l1.L, l1.L * l2.L, False, seqs.T, extra)
            D *= l1.L * l2.L
        elif isinstance(layer, Attention) and layer.kind in EXACT_ATTENTION:
            rows, D, seqs = _attention(layer, rows, D, seqs)
        else:  # pragma: no cover - guarded by check_certificate_fast
            raise TypeError(type(layer).__name__)
        if D.bit_length() > 256:
            rows, D = _reduce(rows, D)
        budget.value(max(D.bit_length(), *(r.max_bits() for r in rows)),
                     f"the output of model.layers[{i + start}]")
        if progress is not None:
            progress(i + 1, len(layers))
    return rows, D, seqs.lengths


def _token_values(row: _Row, positions: np.ndarray) -> List[int]:
    sel = positions if row.ix.map is None else row.ix.map[positions]
    return ints_of(_take(row.vals, sel))


def check_certificate_fast(doc: dict, max_precision: Optional[int] = None, *, limits: Optional[Limits] = None,
                           budget: Optional[Budget] = None, read_chunk=None, progress=None) -> Verdict:
    """Same contract as `checker.check_certificate`, batched; models this path does not
    evaluate (softmax, softmax2) go to the kernel unchanged. Only the outputs are computed
    here: the claims, the judgement of each example and the verdict are the kernel's.
    ``progress(layers done, layers)``: called after each layer of each batch (display only)."""
    budget = budget or Budget(limits)
    try:
        cert = parse_certificate(doc, budget)
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, f"{x} while reading the certificate", None, {}, x.limit)
    cap = precision_cap(cert, max_precision, budget.limits)
    if refuted := check_claims(cert, budget=budget, cap=cap):
        return refuted
    facts = new_facts(cert)
    if cert.chunks is None:
        v = check_examples_fast(cert, 0, len(cert.inputs), cap, budget, progress=progress, facts=facts)
    elif cert.graph is not None:
        from ..fastgraph.check import check_graph_examples
        v = check_chunks(cert, read_chunk, cap, budget, facts=facts, check_part=lambda part, c, b, f: check_graph_examples(
            part, 0, len(part.inputs), c, b, progress, f))
    elif not fast_supported(cert):
        v = check_chunks(cert, read_chunk, cap, budget, facts=facts)
    else:
        v = _check_chunk_groups(cert, read_chunk, cap, budget, facts, progress)
    return conclude(cert, v, facts, budget)


def _check_chunk_groups(cert: ParsedCertificate, read_chunk, cap: int, budget: Budget, facts: DataFacts,
                        progress=None) -> Verdict:
    """A version-2 certificate's chunks, consecutive chunks batched together (the cost per layer is paid once)."""
    if read_chunk is None:
        raise MalformedCertificate("dataset: a chunked (version 2) certificate needs its chunk files")
    parts = []
    for ks in chunk_groups(cert, GROUP_EXAMPLES):
        try:
            part = merged_chunks(cert, ks, [read_chunk(cert.chunks[k][0]) for k in ks], budget)
        except LimitExceeded as x:
            return Verdict("UNKNOWN", None, f"{x}; no refutation found", None, cert.measured, x.limit)
        v = check_examples_fast(part, 0, len(part.inputs), cap, budget, progress=progress, facts=facts)
        if v.status == "REFUTED" or v.limit == "time_limit":
            return v
        parts.append((part.first, part.first + len(part.inputs), v))
    return combine_verdicts(cert, parts, f"{len(cert.chunks)} chunks in {len(parts)} batches")


def chunk_groups(cert: ParsedCertificate, examples: int) -> List[List[int]]:
    """Consecutive chunk indices of a version-2 certificate, in groups of at most ``examples``
    examples (one chunk at least)."""
    groups: List[List[int]] = []
    size = 0
    for k, (_, _, count, _) in enumerate(cert.chunks):
        if not groups or size + count > examples:
            groups.append([])
            size = 0
        groups[-1].append(k)
        size += count
    return groups


def merged_chunks(cert: ParsedCertificate, ks: List[int], datas: List[bytes], budget: Budget) -> ParsedCertificate:
    """Consecutive chunks ks, each verified and parsed by the kernel, as one part of the dataset."""
    parts = [parse_chunk(cert, k, d, budget) for k, d in zip(ks, datas)]
    return replace(parts[0], inputs=[x for p in parts for x in p.inputs], labels=[x for p in parts for x in p.labels],
                   outputs=[x for p in parts for x in p.outputs])


def _judge_all(part: ParsedCertificate, per_row, D: int, starts, ends, budget: Budget,
               facts: Optional[DataFacts]) -> Optional[Verdict]:
    """The kernel's judgement of every example of ``part`` from the batched outputs, in order:
    the first refutation (a label conflict counts at its later row), else None."""
    tick = budget.tick
    for e in range(len(part.inputs)):
        g = part.first + e
        if facts is not None:
            earlier = facts.add(g, part.inputs[e], part.labels[e])
            if earlier is not None:
                return conflict_verdict(part, earlier, g, part.labels[e])
        if part.position == "last":
            cols = [[tick() or Fraction(v[e], D) for v in per_row]]
        else:
            cols = [[tick() or Fraction(v[t], D) for v in per_row] for t in range(int(starts[e]), int(ends[e]))]
        status, wit = judge_example(part, e, cols)
        if status == "fail":
            what = "claimed output differs from" if wit["reason"] == "outputs" else "label not met by"
            return Verdict("REFUTED", wit, f"example {wit['example']}: {what} the re-derived output", None,
                           part.measured)
    return None


def check_examples_fast(cert: ParsedCertificate, lo: int, hi: int, cap: int, budget: Budget,
                        progress=None, facts: Optional[DataFacts] = None) -> Verdict:
    """`checker.check_examples` for the examples lo..hi−1, batched: the same verdict and
    witness (global example indices; each example joins ``facts`` just before it is judged).
    Models or examples this path does not evaluate go to the kernel. ``progress(layers done,
    layers)`` is called after each layer (display only)."""
    n, measured = hi - lo, cert.measured
    if cert.graph is not None:  # graph models: the float64 interval engine (exactmem/fastgraph)
        from ..fastgraph.check import check_graph_examples
        return check_graph_examples(cert, lo, hi, cap, budget, progress, facts)
    if not fast_supported(cert):
        return check_examples(cert, range(lo, hi), cap, budget, facts)
    if n:
        part = replace(cert, inputs=cert.inputs[lo:hi], labels=cert.labels[lo:hi], outputs=cert.outputs[lo:hi],
                       first=cert.first + lo)
        try:
            rows, D, lengths = _evaluate(part, budget, progress)
        except LimitExceeded as x:  # the kernel decides what a limit means, example by example
            if x.limit == "time_limit":
                return Verdict("UNKNOWN", None, f"{x}; no refutation found", None, measured, x.limit)
            return check_examples(cert, range(lo, hi), cap, budget, facts)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        if cert.position == "last":
            per_row = [_token_values(r, ends - 1) for r in rows]
        else:
            per_row = [_token_values(r, np.arange(int(ends[-1]), dtype=np.int64)) for r in rows]
        try:
            refuted = _judge_all(part, per_row, D, starts, ends, budget, facts)
        except LimitExceeded as x:
            return Verdict("UNKNOWN", None, f"{x}; no refutation found", None, measured, x.limit)
        if refuted is not None:
            return refuted
    return Verdict("CERTIFIED", None, f"all {n} examples pass and all {len(cert.claims)} claims hold (exact, fast "
                                      "engine)", None, measured)
