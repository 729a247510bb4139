"""Python side of the compiled kernels: conversions, step plans from integer rows, and exact register arithmetic.

`lincomb` computes exact linear combinations + ReLU of *registers* for the engines that keep
one array of distinct values per register (``compress`` and the checker's accelerator).

A register's values are one of: an int64 array (n,) whose values are below 2^62 in magnitude,
an object array (n,) of Python ints, or a **limb array**: int64 of shape (K, n), every value
canonical in base 2^30 (``exactmem/native/limbs.py``: lower limbs in [0, 2^30), signed top,
``|v| < 2^(30·K)``). Limb arrays let values past int64 (the ~82-bit selection rows of the
Kajitsuka construction, the long bit streams of Vardi's) stay in compiled arithmetic from one
layer to the next instead of becoming Python ints.

Needs numba (callers check `exactmem.native.kernels` first).
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from . import kernels

S = 30
MASK = (1 << S) - 1
BASE = 1 << S
TOKEN_BLOCK = 128  # tokens (or distinct values) processed together inside the kernel
MAX_ADDS = 1 << 32  # additions into one accumulator limb (each <= 2^30): keeps sums below 2^62

__all__ = ["Plan", "bias_limbs", "to_limbs", "from_limbs", "lincomb", "limbs_of", "ints_of", "is_limbs",
           "S", "TOKEN_BLOCK"]


# ----------------------------------------------------------------------------- conversions


def to_limbs(vals: Sequence[int]) -> np.ndarray:
    """Canonical (n, K) limbs of Python ints (K the fewest that hold them all)."""
    n = len(vals)
    bits = max((v.bit_length() for v in vals), default=0)
    K = max(1, -(-(bits + 1) // S))
    nb = (S * K + 7) // 8
    buf = np.frombuffer(b"".join([v.to_bytes(nb, "little", signed=True) for v in vals]), np.uint8)
    return kernels().bytes_to_limbs(buf, n, nb, K)


def from_limbs(L: np.ndarray) -> List[int]:
    """Python ints of canonical (n, K) limbs."""
    n, K = L.shape
    nb = (S * K + 8) // 8
    data = kernels().limbs_to_bytes(np.ascontiguousarray(L), nb).tobytes()
    fb = int.from_bytes
    return [fb(data[i * nb:(i + 1) * nb], "little", signed=True) for i in range(n)]


def mag_limbs(M: int) -> List[int]:
    """Limbs of a non-negative integer (at least one)."""
    out = []
    while True:
        out.append(M & MASK)
        M >>= S
        if not M:
            return out


def bias_limbs(bias: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
    """Canonical limbs of the biases, concatenated, and where each row's start (a zero bias has
    no limbs). Python ints: ``b & MASK`` and ``b >> 30`` are the two's-complement limb and the
    floor shift, also for negative b."""
    ptr = [0]
    flat: List[int] = []
    for b in bias:
        if b:
            while not -BASE < b < BASE:
                flat.append(b & MASK)
                b >>= S
            flat.append(b)
        ptr.append(len(flat))
    return np.array(ptr, dtype=np.int64), np.array(flat, dtype=np.int64)


def is_limbs(v: np.ndarray) -> bool:
    return v.ndim == 2


def limbs_of(v: np.ndarray) -> np.ndarray:
    """Any register array as a limb array (K, n)."""
    if v.ndim == 2:
        return v
    if v.dtype == np.int64:  # |v| < 2^62: three limbs, the top in [-4, 4)
        out = np.empty((3, len(v)), dtype=np.int64)
        np.bitwise_and(v, MASK, out=out[0])
        np.bitwise_and(v >> S, MASK, out=out[1])
        np.right_shift(v, 2 * S, out=out[2])
        return out
    return np.ascontiguousarray(to_limbs([int(x) for x in v.tolist()]).T)


def ints_of(v: np.ndarray) -> List[int]:
    """Python ints of any register array."""
    if v.ndim == 2:
        return from_limbs(v.T)
    return [int(x) for x in v.tolist()]


# ----------------------------------------------------------------------------- plans


class Plan:
    """Integer rows ``Σ_j a_rj·x_j + b_r`` (then ReLU on chosen rows) for
    `step_block`: each row's terms grouped by weight magnitude, the
    signed sums of a group (*lists*) and the linear parts of a row (*combos*) de-duplicated
    across rows, so rows that differ only by their bias (the ``relu(x − c + 1)``,
    ``relu(x − c)`` pairs of the bit-extraction gadgets) share the work.

    ``rows``: per output row, its non-zero ``(input, integer weight)`` terms. ``a``: the step's
    denominator is 2^a (0 for integer rows)."""

    __slots__ = ("a", "m_out", "list_ptr", "term_j", "term_sgn", "combo_ptr", "cm_list", "cm_sgn", "mag_ptr",
                 "mags", "row_combo", "bi", "relu", "kw", "terms")

    def __init__(self, rows: Sequence[Sequence[Tuple[int, int]]], bias: Sequence[int], relu: Sequence[bool],
                 a: int = 0):
        self.a, self.m_out = a, len(rows)
        lists: Dict[tuple, int] = {}
        combos: Dict[tuple, int] = {}
        row_combo = []
        maxbits, terms = 1, 1
        for row in rows:
            groups: Dict[int, List[Tuple[int, int]]] = {}
            for j, w in row:
                if w > 0:
                    groups.setdefault(w, []).append((j, 1))
                elif w < 0:
                    groups.setdefault(-w, []).append((j, -1))
            entries = []
            for M, ts in groups.items():
                sg = ts[0][1]  # a list starts with a + sign; the group's sign goes to the combo
                key = tuple(ts) if sg > 0 else tuple((j, -s) for j, s in ts)
                li = lists.setdefault(key, len(lists))
                entries.append((li, sg, M))
                maxbits = max(maxbits, M.bit_length())
                terms = max(terms, len(ts))
            row_combo.append(combos.setdefault(tuple(entries), len(combos)) if entries else -1)
        list_ptr, term_j, term_sgn = [0], [], []
        for key in lists:
            for j, sg in key:
                term_j.append(j)
                term_sgn.append(sg)
            list_ptr.append(len(term_j))
        combo_ptr, cm_list, cm_sgn, mag_ptr, mags = [0], [], [], [0], []
        for entries in combos:
            for li, sg, M in entries:
                cm_list.append(li)
                cm_sgn.append(sg)
                mags.extend(mag_limbs(M))
                mag_ptr.append(len(mags))
            combo_ptr.append(len(cm_list))
        arr = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
        self.list_ptr, self.term_j, self.term_sgn = arr(list_ptr), arr(term_j), arr(term_sgn)
        self.combo_ptr, self.cm_list, self.cm_sgn = arr(combo_ptr), arr(cm_list), arr(cm_sgn)
        self.mag_ptr, self.mags, self.row_combo = arr(mag_ptr), arr(mags), arr(row_combo)
        self.bi = list(bias)
        self.relu = np.array(relu, dtype=np.bool_)
        self.kw, self.terms = -(-maxbits // S), terms

    def run(self, X: np.ndarray, Xlen: np.ndarray, K: int, bias: Sequence[int], vcap: int, block: int):
        """The kernel on the batch (X, Xlen) with these biases: (Y, Ylen, longest, valuation)."""
        T = X.shape[2]
        K = max(K, 1)
        bias_ptr, blimbs = bias_limbs(bias)
        nbias = int((bias_ptr[1:] - bias_ptr[:-1]).max()) if len(bias_ptr) > 1 else 0
        P = max(self.kw + K + 2, nbias + 2)
        if X.shape[0] * 2 * (self.kw + 1) * (K + 2) + P >= MAX_ADDS or self.terms >= 1 << 29:
            raise ValueError("compiled step too large for the int64 accumulator bound")
        Y = np.empty((self.m_out, P, T), dtype=np.int64)
        Ylen = np.empty((self.m_out, Xlen.shape[1]), dtype=np.int64)
        longest, v = kernels().step_block(X, Xlen, K, self.list_ptr, self.term_j, self.term_sgn, self.combo_ptr,
                                          self.cm_list, self.cm_sgn, self.mag_ptr, self.mags, self.row_combo,
                                          bias_ptr, blimbs, self.relu, Y, Ylen, vcap, block)
        return Y, Ylen, longest, v


# ----------------------------------------------------------------------------- registers


def lincomb(inputs: Sequence[np.ndarray], rows: Sequence[Sequence[Tuple[int, int]]], bias: Sequence[int],
            relu: Sequence[bool], n: int) -> List[np.ndarray]:
    """Exact ``ρ(Σ_j a_rj·inputs[j] + b_r)`` for every row r, on n values, compiled.

    ``inputs``: register arrays (int64, object or limb arrays, each of length n); ``rows``: per
    output row, its ``(input index, integer weight)`` terms. Each output is an int64 array when
    every value fits in two limbs (``|v| < 2^60``), else a limb array (K, n) with the fewest
    limbs that hold it."""
    k = kernels()
    Ks = []
    mats = []
    for v in inputs:
        L = limbs_of(v)
        mats.append(L)
        Ks.append(L.shape[0])
    K = max(Ks, default=1)
    nb = -(-n // TOKEN_BLOCK)
    X = np.empty((len(inputs), K, n), dtype=np.int64)  # limbs past Xlen are never read
    Xlen = np.empty((len(inputs), nb), dtype=np.int64)
    for i, L in enumerate(mats):
        X[i, :L.shape[0]] = L
        Xlen[i] = L.shape[0]
    plan = Plan(rows, bias, relu)
    Y, Ylen, longest, _ = plan.run(X, Xlen, K, bias, 0, TOKEN_BLOCK)
    del X
    Krow = Ylen.max(axis=1) if Ylen.shape[1] else np.ones(len(rows), dtype=np.int64)
    Krow = np.maximum(Krow, 1)
    k.extend(Y, Ylen, TOKEN_BLOCK, Krow)  # in place: no copy of the rows
    P = Y.shape[1]
    out = []
    for r in range(len(rows)):
        kr = int(Krow[r])
        if kr == 1:
            out.append(Y[r, 0].copy())
        elif kr == 2:
            out.append(Y[r, 0] + (Y[r, 1] << S))
        else:  # a view when it is most of the buffer, else a copy that frees the buffer
            out.append(Y[r, :kr] if 2 * kr >= P else Y[r, :kr].copy())
    return out
