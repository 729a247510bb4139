"""Exact backend ``"compress"``: evaluate a stack on the *distinct* values of each register.

For deep memorizers such as Vardi et al.'s (``docs/vardi.md``) the registers that carry the
huge crafted integers (u_j, w_j, their bit streams) take only one value per group of data
points, while the registers that differ per token (the projected input, comparators) hold
small numbers. Evaluating every register on every token, as the ``flint`` and ``limbs``
engines do, multiplies the big-integer work by the number of tokens; this engine does it once
per distinct value.

State: for each row, a NumPy array of distinct numerators (``int64`` when every value is
provably below 2^62 in magnitude; past that, on at least ``NATIVE_MIN_VALUES`` values and with
numba installed, a compiled limb array — base-2^30 limbs, ``exactmem/native/rows.py`` — computed
by `exactmem.native.rows.lincomb`; otherwise Python ints in an object array) and a *class
map* token → position in that array (shared by the rows computed together; ``None`` means
one value per token). A step ``H ↦ ρ(W H + b)`` in integer form ``(D·W, D·b)``:

* a row that copies one input row with weight 1 (D = 1, no bias, ReLU of a non-negative
  row) keeps the input's arrays — no work;
* the other rows are grouped by the set of class maps they read; each group's class maps
  are combined (distinct tuples of classes: a compiled hash table, or ``np.unique`` without
  numba), the rows are computed on the
  combined classes and, when classes may have merged (several maps combined, or fewer
  outputs than inputs), equal columns are collapsed again.

Exact: integer arithmetic only (int64 with a proven magnitude bound, or Python ints); the
class maps only decide which equal values are computed once. Tested against the ``flint``
and ``fraction`` engines in ``tests/test_vardi.py``. Registered in `BACKENDS` on import;
not chosen by ``auto`` (for dense random networks with all-distinct registers it is slower
than ``limbs``): a proof file's `Instance` may ask for it.
"""

from __future__ import annotations

from itertools import count
from math import gcd
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..native import AVAILABLE, NATIVE_MIN_VALUES, equal_classes, kernels, refinement
from ..native.rows import ints_of, lincomb
from .affine_stack import BACKENDS, AffineStep, ScaledInts, StackResult

LIMIT = 1 << 62
COMPILED = AVAILABLE  # numba is importable (it is imported at the first wide row, not here)


class _Classes:
    """token → class map (``arr`` int64 of length T, or None for one class per token)."""

    __slots__ = ("arr", "n")

    def __init__(self, arr: Optional[np.ndarray], n: int):
        self.arr, self.n = arr, n


class _Reg:
    """A register: values ``v`` per class (int64 below 2^62, object Python ints, or a compiled
    limb array (K, n): see ``exactmem/native/rows.py``), ``mag`` a bound on |value| (exact for
    int64/object, ``2^(30·K)`` for limbs), ``pos``: every value >= 0."""

    __slots__ = ("v", "cls", "mag", "pos")

    def __init__(self, v: np.ndarray, cls: _Classes):
        if v.ndim == 2:  # limbs: the sign is the top limb's; |value| < 2^(30·K)
            self.v, self.cls = v, cls
            self.mag, self.pos = 1 << (30 * v.shape[0]), bool((v[-1] >= 0).all())
            return
        if v.dtype != np.int64 and len(v):
            lo, hi = int(np.min(v)), int(np.max(v))
            if -LIMIT < lo and hi < LIMIT:
                v = v.astype(np.int64)
        elif len(v):
            lo, hi = int(v.min()), int(v.max())
        else:
            lo = hi = 0
        self.v, self.cls, self.mag, self.pos = v, cls, max(abs(lo), abs(hi)), lo >= 0


def _align(maps: List[_Classes]) -> Tuple[_Classes, List[Optional[np.ndarray]]]:
    """Common classes for several maps, and how to pick each map's value for them."""
    if len(maps) == 1:
        return maps[0], [None]
    for c in maps:
        if c.arr is None:
            return c, [m.arr for m in maps]
    got = refinement([c.arr for c in maps], [c.n for c in maps])
    if got is not None:  # one map's classes refine the others': a gather, no hash
        return maps[got[0]], got[1]
    code = np.zeros(len(maps[0].arr), dtype=np.int64)
    size = 1
    for c in maps:
        if size * c.n >= LIMIT:
            _, code = equal_classes(code)
            size = int(code.max()) + 1
        code = code * c.n + c.arr
        size *= c.n
    rep, inv = equal_classes(code)
    return _Classes(inv, len(rep)), [c.arr[rep] for c in maps]


def _collapse(vs: List[np.ndarray], cls: _Classes) -> Tuple[List[np.ndarray], _Classes]:
    """Merge classes whose values agree in every row of the group."""
    n = _count(vs[0])
    if n < 2:
        return vs, cls
    if any(v.ndim == 2 for v in vs):
        if any(v.dtype == object for v in vs):
            vs = [np.array(ints_of(v), dtype=object) if v.ndim == 2 else v for v in vs]
        else:  # int64 and limb arrays: one int64 column per value / per limb (canonical, so unique)
            limbs = np.concatenate([v.reshape(-1, n) for v in vs]) if len(vs) > 1 else vs[0]
            first, inv = equal_classes(limbs, True)
            if len(first) == n:
                return vs, cls
            new = inv if cls.arr is None else inv[cls.arr]
            return [_take(v, first) for v in vs], _Classes(new, len(first))
    if all(v.dtype == np.int64 for v in vs):  # vectorised: rows of small integers
        first, inv = equal_classes(np.stack(vs, axis=1))
        if len(first) == n:
            return vs, cls
        new = inv if cls.arr is None else inv[cls.arr]
        return [v[first] for v in vs], _Classes(new, len(first))
    first, inv = first_occurrences(vs[0].tolist() if len(vs) == 1 else zip(*(v.tolist() for v in vs)), n)
    if len(first) == n:
        return vs, cls
    new = inv if cls.arr is None else inv[cls.arr]
    return [v[first] for v in vs], _Classes(new, len(first))


def first_occurrences(keys, n: int) -> Tuple[np.ndarray, np.ndarray]:
    """For n hashable keys: the positions of each distinct key's first occurrence (ascending) and,
    per key, the index of its key among them. ``dict.setdefault(key, position)`` returns the
    first position of the key, all in C (no Python-level loop)."""
    seen: Dict[object, int] = {}
    at = np.fromiter(map(seen.setdefault, keys, count()), dtype=np.int64, count=n)
    if len(seen) == n:
        return at, at
    first, inv = np.unique(at, return_inverse=True)
    return first, inv.reshape(-1).astype(np.int64)


def _count(v: np.ndarray) -> int:
    return v.shape[-1]


def _take(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Values of the classes ``idx`` (limb arrays: columns)."""
    return v[:, idx] if v.ndim == 2 else v[idx]


def _small(terms: List[Tuple[int, int]], bias: int, regs: List[_Reg]) -> bool:
    """Every partial sum of the row provably fits in int64 (and no input is a limb array)."""
    live = [(j, a) for j, a in terms if regs[j].mag]
    return (all(regs[j].v.ndim == 1 for j, _ in live)
            and abs(bias) + sum(abs(a) * regs[j].mag for j, a in live) < LIMIT)


def _row(terms: List[Tuple[int, int]], bias: int, picked: Dict[int, np.ndarray], regs: List[_Reg], n: int,
         relu: bool) -> np.ndarray:
    live = [(j, a) for j, a in terms if regs[j].mag]
    small = _small(terms, bias, regs)
    if not small:
        picked = {j: (np.array(ints_of(picked[j]), dtype=object) if picked[j].ndim == 2 else picked[j])
                  for j, _ in live}
    out = np.full(n, bias, dtype=np.int64 if small else object)
    for a, xs in _by_magnitude(live, picked, small):
        out = out + (xs if a == 1 else xs * a)
    return np.maximum(out, 0) if relu else out


def _by_magnitude(live: List[Tuple[int, int]], picked: Dict[int, np.ndarray], small: bool):
    """Σ a_j x_j as Σ_|a| |a| · (Σ ±x_j): (|a|, signed sum) pairs, one multiplication per distinct
    |a|. In the doubling gadget ``2U − 2^M (s₁ − s₂)`` the big factor then multiplies the small
    difference s₁ − s₂ (0 or 1 on the data) instead of two numbers of M bits each."""
    sums: Dict[int, np.ndarray] = {}
    for j, a in live:
        x = picked[j] if small or picked[j].dtype == object else picked[j].astype(object)
        m = abs(a)
        if m in sums:
            sums[m] = sums[m] + x if a > 0 else sums[m] - x
        else:
            sums[m] = x if a > 0 else -x
    return sums.items()


def _apply(st: AffineStep, regs: List[_Reg], den: int, T: int) -> Tuple[List[_Reg], int]:
    D, Wi, bi = st.integer_form()
    out: List[Optional[_Reg]] = [None] * st.m_out
    pending: Dict[frozenset, List[int]] = {}
    rows = []
    for i in range(st.m_out):
        terms = [(j, a) for j, a in enumerate(Wi[i]) if a]
        b = bi[i] * den
        rows.append((terms, b))
        if D == 1 and b == 0 and len(terms) == 1 and terms[0][1] == 1:
            src = regs[terms[0][0]]
            if not st.relu_rows[i] or src.pos:
                out[i] = src
                continue
        pending.setdefault(frozenset(id(regs[j].cls) for j, _ in terms), []).append(i)
    for key, members in pending.items():
        if not key:
            one = _Classes(np.zeros(T, dtype=np.int64), 1)
            for i in members:
                b = rows[i][1]
                out[i] = _Reg(np.array([max(b, 0) if st.relu_rows[i] else b], dtype=object), one)
            continue
        inputs = sorted({j for i in members for j, _ in rows[i][0]})
        maps, where = [], {}
        for j in inputs:
            c = regs[j].cls
            if id(c) not in where:
                where[id(c)] = len(maps)
                maps.append(c)
        common, picks = _align(maps)
        picked = {}
        for j in inputs:
            p = picks[where[id(regs[j].cls)]]
            picked[j] = regs[j].v if p is None else _take(regs[j].v, p)
        value = {}
        wide = []
        for i in members:
            if (common.n >= NATIVE_MIN_VALUES and COMPILED and not _small(rows[i][0], rows[i][1], regs)
                    and kernels() is not None):
                wide.append(i)
            else:
                value[i] = _row(rows[i][0], rows[i][1], picked, regs, common.n, st.relu_rows[i])
        if wide:  # rows past int64 on many values: compiled limb arithmetic (exactmem/native)
            ins = sorted({j for i in wide for j, _ in rows[i][0]})
            at = {j: k for k, j in enumerate(ins)}
            got = lincomb([picked[j] for j in ins], [[(at[j], a) for j, a in rows[i][0]] for i in wide],
                          [rows[i][1] for i in wide], [st.relu_rows[i] for i in wide], common.n)
            value.update(zip(wide, got))
        # rows reading the same inputs stay together; such a subgroup may have fewer distinct
        # columns than the combined classes (it merged maps, or it contracts its inputs)
        subgroups: Dict[frozenset, List[int]] = {}
        for i in members:
            subgroups.setdefault(frozenset(j for j, _ in rows[i][0]), []).append(i)
        for ins, sub in subgroups.items():
            vs, cls = [value[i] for i in sub], common
            if len({id(regs[j].cls) for j in ins}) > 1 or len(sub) < len(ins):
                vs, cls = _collapse(vs, common)
            for i, v in zip(sub, vs):
                out[i] = _Reg(v, cls)
    return out, den * D  # type: ignore[return-value]


def _shrink(regs: List[_Reg], den: int) -> Tuple[List[_Reg], int]:
    g = den
    for r in {id(r): r for r in regs}.values():
        for x in ints_of(r.v):
            g = gcd(g, x)
            if g == 1:
                return regs, den
    done: Dict[int, _Reg] = {}
    for r in regs:
        if id(r) not in done:
            v = np.array(ints_of(r.v), dtype=object) if r.v.ndim == 2 else r.v
            v = v if v.dtype == object or g < LIMIT else v.astype(object)
            done[id(r)] = _Reg(v // g, r.cls)
    return [done[id(r)] for r in regs], den // g


def _expand(regs: List[_Reg], den: int, T: int) -> ScaledInts:
    rows = []
    for r in regs:
        vals = ints_of(r.v)
        rows.append(vals if r.cls.arr is None else [vals[k] for k in r.cls.arr.tolist()])
    return ScaledInts(rows, den)


def run_stack_compress(steps: Sequence[AffineStep], X: ScaledInts, trace: bool = False,
                       on_step=None) -> StackResult:
    """Evaluate the steps on the batch X exactly, per distinct register value.
    ``on_step(steps done)``: progress after every step (display only)."""
    m, T = X.shape
    if T == 0:
        return StackResult(ScaledInts([[] for _ in range(steps[-1].m_out if steps else m)], 1), [], "compress")
    ident = _Classes(None, T)
    regs = [_Reg(np.array(list(r), dtype=object), ident) for r in X.rows]
    den = X.den
    tr = []
    for k, st in enumerate(steps):
        if st.m_in != len(regs):
            raise ValueError(f"step {k} expects {st.m_in} input rows, got {len(regs)}")
        regs, den = _apply(st, regs, den, T)
        if den.bit_length() > 256:
            regs, den = _shrink(regs, den)
        if trace:
            tr.append(_expand(regs, den, T).reduced())
        if on_step is not None:
            on_step(k + 1)
    return StackResult(_expand(regs, den, T).reduced(), tr, "compress")


BACKENDS.setdefault("compress", run_stack_compress)
