"""Exact multi-limb backend (``"limbs"``) for stacks whose weights are all dyadic.

Representation
--------------
Values are ``N / den`` with ``N`` an integer matrix (m rows, one column per token) and one
common denominator ``den = odd0 · 2^e`` (``odd0`` is the odd part of the input batch's
denominator and never changes, since every step's denominator is a power of two).

``N`` is held in base ``2^s`` (limb size ``s`` in ``[2, 25]``, chosen once per stack) with ``K``
limbs per entry, row-major in one float64 array ``H`` of shape ``(m·K, T)``: row ``j·K + l`` holds
limb ``l`` of row ``j``, ``N_j = Σ_l L_{j,l} · 2^(s·l)``. The form is *canonical*: lower limbs
``0 <= L_l < 2^s`` (l < K-1) and a signed top limb with ``|L_{K-1}| <= 2^s``. The sign of an
entry is the sign of its top limb (the lower part lies in ``[0, 2^(s(K-1)))``), which is how
ReLU is decided.

One step ``N' = (Wi·N + bi·den) / 2^v`` (``Wi = 2^a·W`` and ``bi = 2^a·b`` integer, ``2^a`` the
step's denominator, ``2^v`` a power of two known to divide every entry) is

1. *folding the division*: ``v`` is a rigorous lower bound on the 2-adic valuation of every
   output entry, from the exact per-row valuations of the current data and of the weights
   (``val(Σ terms) >= min val(term)``), capped so the exponent of ``den`` stays >= 0. Write
   ``v = q·s - r`` with ``0 <= r < s``; the step then computes ``2^r·(Wi·N + bi·den) = N'·2^(q·s)``
   by using the weights ``Wi·2^r`` (their limbs are re-split exactly) and drops the ``q`` lowest
   output limbs, which are then exactly zero (this is checked). So dyadic denominators never
   pile up and no separate shifting pass over the data is needed.
2. *BLAS products*: the limbs of ``Wi·2^r`` (signed, ``|limb| < 2^s``) are laid out as a block
   Toeplitz matrix with ``Wbig[(r, p), (j, l)] = limb_{p-l}(W_rj)``, so ``Wbig @ H`` gives the
   un-normalized output limbs ``Z_{r,p} = Σ_j Σ_{i+l=p} limb_i(W_rj) · L_{j,l}``. The output
   rows are split (once per step, statically) into contiguous groups that each read only the
   contiguous range of input rows their weights touch, one product per group, which saves the
   zero blocks of block-sparse weights. The bias limbs (of ``bi·den·2^r``) are added while
   transposing the result to limb-major order. The output gets
   ``P = max(kw + K - 1, ceil(bits/s), q + 1)`` limbs, where ``kw + K - 1`` makes every
   product land in the output and ``bits`` is a rigorous bound ``|N'·2^(qs)| < 2^bits`` computed
   from the bit lengths of the weights, the bias and the data (per-row magnitude bounds read
   off the top limbs), so that the top limb ends within ``|top| <= 2^s``.
3. *exact carry normalization*, limb by limb from the bottom (limb-major, so each limb is one
   contiguous ``(m, T)`` block): ``c = floor(Z_p / 2^s); Z_p -= c·2^s; Z_{p+1} += c``; then ReLU
   on the masked rows (zero all limbs of the entries whose top limb is negative), then the top
   limbs that are pure sign extension (all entries 0 or -1) are merged into the limb below
   (``L += top·2^s``), which is how the limb count shrinks again after cancellations such as
   ``2^200·(t1 - t2)``.

Why no floating-point rounding can occur
----------------------------------------
Every float64 number the backend produces is an integer of magnitude < 2^53, and every
operation applied to such integers has an integer result of magnitude < 2^53, which float64
represents exactly; an IEEE operation whose exact result is representable returns it exactly
(no rounding, whatever the rounding mode, with or without FMA).

* Products: ``|limb(W)| <= 2^s - 1`` and ``|L| <= 2^s`` (canonical form), so each product is an
  integer < 2^(2s).
* Sums in the matrix product: for output row ``(r, p)`` the number of non-zero products is at
  most ``n_r - 1`` with ``n_r = 1 + Σ_j nlimbs(W_rj · 2^r)`` (for a fixed column j and output
  limb p each non-zero weight limb i meets at most one data limb l = p - i; the 1 is the bias
  limb, < 2^s, added afterwards), with
  ``nlimbs(w) <= ceil(bitlen(|w|)/s)``. ``s`` is chosen (and checked at every step for the actual
  ``r``; if the check fails for ``r != 0`` the step folds only ``q·s`` with ``r = 0``) so that
  ``n_r · 2^(2s) <= 2^52``. Hence the sum of the absolute values of the terms of every dot
  product plus the bias limb is < 2^52, and so is *every partial sum in any order and any
  grouping*: a dgemm
  (OpenBLAS/MKL/Accelerate blocking, threading, FMA; or NumPy's own loop) only ever forms sums
  of subsets of the terms. (The one assumption is that the BLAS computes a classical product,
  i.e. no Strassen-like algorithm and no reduced-precision mode; no standard dgemm does either.)
* Carries: ``|Z_p| < 2^52`` on input, the incoming carry is at most ``2^(53-s) + 1``, so every
  intermediate is < 2^53; ``Z·2^-s`` is an exact power-of-two scaling, ``floor`` is exact,
  ``c·2^s`` is exact and ``Z - c·2^s`` is an integer in ``[0, 2^s)``.
* Re-splitting the shifted weights (``limb·2^r < 2^(2s)``), ReLU (multiply by 0 or 1), the top
  merge (``L - 2^s`` with ``L < 2^s``) and the int64 conversions used to read 2-adic valuations
  all act on integers below 2^53.
* Conversions between Python integers and limbs go through bytes and bit unpacking, no floats.

All bounds that size the representation (limb counts, valuations) are computed exactly in
integer arithmetic; the dropped low limbs are verified to be zero and a violation raises
``RuntimeError`` rather than returning a wrong value.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .steps import AffineStep, ScaledInts, StackResult, _check_shapes, run_stack_fraction

INF = 1 << 40  # "infinite" valuation / bit count (sums of two stay far below 2^63)
MAX_LIMB_BITS = 25
MIN_LIMB_BITS = 2
SUM_LOG2 = 52  # every dot product's sum of |terms| stays below 2^52
MAX_WORTHWHILE_BITS = 2048  # beyond this, limb products grow quadratically: flint is better
MIN_WORTHWHILE_LIMB_BITS = 12

__all__ = ["applies", "run_stack_limbs", "choose_limb_bits"]


# ----------------------------------------------------------------------------- conversions


def _abs_limbs(vals: Sequence[int], s: int, k: int) -> np.ndarray:
    """Limbs of non-negative ints (each < 2^(s·k)) in base 2^s: float64 array (n, k)."""
    n = len(vals)
    if n == 0 or k == 0:
        return np.zeros((n, k))
    if k == 1:
        return np.array(vals, dtype=np.float64).reshape(n, 1)
    nb = (s * k + 7) // 8
    buf = b"".join([v.to_bytes(nb, "little") for v in vals])
    bits = np.unpackbits(np.frombuffer(buf, np.uint8).reshape(n, nb), axis=1, count=s * k, bitorder="little")
    padded = np.zeros((n, k, 32), np.uint8)
    padded[:, :, :s] = bits.reshape(n, k, s)
    words = np.packbits(padded, axis=2, bitorder="little")  # (n, k, 4) little-endian bytes
    return words.view("<u4").reshape(n, k).astype(np.float64)


def _signed_limbs(vals: Sequence[int], s: int, k: int) -> np.ndarray:
    """Sign-magnitude limbs of ints (|v| < 2^(s·k)): float64 (n, k), every |limb| < 2^s."""
    out = _abs_limbs([abs(v) for v in vals], s, k)
    neg = np.array([v < 0 for v in vals], dtype=bool)
    if neg.any():
        out[neg] *= -1.0
    return out


def _ints_to_canonical(vals: Sequence[int], s: int, K: int) -> np.ndarray:
    """Canonical limbs (lower in [0, 2^s), signed top) of ints: float64 (n, K)."""
    n = len(vals)
    out = np.empty((n, K))
    shift = s * (K - 1)
    out[:, K - 1] = [v >> shift for v in vals]
    if K > 1:
        mask = (1 << shift) - 1
        out[:, : K - 1] = _abs_limbs([v & mask for v in vals], s, K - 1)
    return out


def _canonical_to_ints(C: np.ndarray, s: int) -> List[int]:
    """Inverse of `_ints_to_canonical` for a (K, n) limb array."""
    K, n = C.shape
    tops = C[K - 1].astype(np.int64).tolist()
    if K == 1 or n == 0:
        return [int(t) for t in tops]
    low = np.ascontiguousarray(C[: K - 1].T).astype("<u4")  # (n, K-1), each < 2^s
    bits = np.unpackbits(low.view(np.uint8).reshape(n, K - 1, 4), axis=2, bitorder="little")[:, :, :s]
    packed = np.packbits(bits.reshape(n, (K - 1) * s), axis=1, bitorder="little")
    nb = packed.shape[1]
    data = packed.tobytes()
    shift = s * (K - 1)
    fb = int.from_bytes
    return [fb(data[i * nb:(i + 1) * nb], "little") + (t << shift) for i, t in enumerate(tops)]


def _bitlen(x: np.ndarray) -> np.ndarray:
    """Bit lengths of non-negative integer-valued floats < 2^53 (exact via frexp)."""
    return np.frexp(x)[1].astype(np.int64)


def _tz(x: int) -> int:
    return (x & -x).bit_length() - 1 if x else INF


# ----------------------------------------------------------------------------- the plan


@dataclass
class _IntStep:
    a: int  # step denominator is 2^a
    m_out: int
    m_in: int
    Wi: List[int]  # row-major, 2^a·W
    bi: List[int]  # 2^a·b
    bl: np.ndarray  # (m_out, m_in) int64 bit lengths (0 for zero entries)
    relu: Tuple[bool, ...]


@dataclass
class _StepPlan:
    a: int
    m_out: int
    m_in: int
    Wl: np.ndarray  # (kw, m_out, m_in) signed limbs of Wi (sign-magnitude: limbs of |Wi| · sign)
    Wsign: np.ndarray  # (m_out, m_in) in {-1, 0, 1}
    nz: np.ndarray  # (m_out, m_in) bool
    bl: np.ndarray  # (m_out, m_in) int64
    blm: np.ndarray  # bl, -INF where zero
    valW: np.ndarray  # (m_out, m_in) 2-adic valuations, INF where zero
    nnz_r: np.ndarray  # (m_out,) non-zero weights per row
    bi: List[int]
    bi_val: np.ndarray  # (m_out,) valuations of bi, INF where zero
    relu_runs: List[Tuple[int, int]]
    shift_ok: bool  # the term bound holds for every fold shift r in [0, s)
    groups: List[Tuple[int, int, int, int]]  # (r0, r1, j0, j1): rows r0:r1 read columns j0:j1


PLAN_CACHE_BYTES = 256 << 20  # float limb arrays of the weights kept between calls, at most
INT_CACHE_ENTRIES = 1 << 22  # integer forms of the weights kept between calls, at most


@dataclass
class _Plan:
    s: int
    ints: List[_IntStep]
    max_bits: int  # largest bit length among the integer weights and biases
    cached: List[Optional[_StepPlan]]
    cached_bytes: int = 0

    def step(self, i: int) -> _StepPlan:
        """The float limb arrays of step i: built on demand, kept while within the budget."""
        sp = self.cached[i]
        if sp is None:
            sp = _step_plan(self.ints[i], self.s)
            nbytes = sp.Wl.nbytes + 6 * sp.bl.nbytes
            if self.cached_bytes + nbytes <= PLAN_CACHE_BYTES:
                self.cached[i] = sp
                self.cached_bytes += nbytes
        return sp


def _integer_step(st: AffineStep) -> Optional[_IntStep]:
    flat = [x for row in st.W for x in row]
    flat.extend(st.b)
    dens = [x.denominator for x in flat]
    dset = set(dens)
    for d in dset:
        if d & (d - 1):
            return None
    D = max(dset) if dset else 1
    if D == 1:
        ints = [x.numerator for x in flat]
    else:
        ints = [x.numerator * (D // d) for x, d in zip(flat, dens)]
    nW = st.m_out * st.m_in
    Wi, bi = ints[:nW], ints[nW:]
    bl = np.array([w.bit_length() for w in Wi], dtype=np.int64).reshape(st.m_out, st.m_in)
    return _IntStep(D.bit_length() - 1, st.m_out, st.m_in, Wi, bi, bl, st.relu_rows)


def _terms_bound(bl: np.ndarray, s: int, r: int = 0) -> int:
    """max over rows of 1 + Σ_j ceil((bitlen(W_rj) + r)/s) over non-zero W_rj."""
    if bl.size == 0:
        return 1
    n = np.where(bl > 0, (bl + r + s - 1) // s, 0).sum(axis=1)
    return int(n.max()) + 1


def _term_limit(s: int) -> int:
    return 1 << (SUM_LOG2 - 2 * s)


def choose_limb_bits(int_steps: Sequence[_IntStep]) -> int:
    """Largest limb size s with ``terms · 2^(2s) <= 2^52`` for every output row of every step."""
    if not int_steps:
        return MAX_LIMB_BITS
    bls = [st.bl for st in int_steps if st.bl.size]
    for s in range(MAX_LIMB_BITS, MIN_LIMB_BITS - 1, -1):
        lim = _term_limit(s)
        if all(_terms_bound(bl, s) <= lim for bl in bls):
            return s
    raise ValueError("weights too large for the limbs backend")


def _relu_runs(mask: Sequence[bool]) -> List[Tuple[int, int]]:
    runs = []
    i, n = 0, len(mask)
    while i < n:
        if mask[i]:
            j = i
            while j < n and mask[j]:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


WBIG_MAX_ENTRIES = 1 << 22  # 32 MiB per block-Toeplitz weight matrix; more rows are chunked
GROUP_OVERHEAD = 4  # cost of one extra product call, in units of (one row x one column)
DP_MAX_ROWS = 48


def _row_groups(nz: np.ndarray) -> List[Tuple[int, int, int, int]]:
    """Split the output rows into contiguous runs, each multiplied by the contiguous range of
    input rows its weights touch; minimizes Σ rows·columns + GROUP_OVERHEAD per run (dynamic
    programming for small widths, greedy otherwise). Saves work on block-sparse weights."""
    mo, mi = nz.shape
    lo = np.where(nz.any(axis=1), nz.argmax(axis=1), mi)
    hi = np.where(nz.any(axis=1), mi - nz[:, ::-1].argmax(axis=1), 0)
    lo_l, hi_l = lo.tolist(), hi.tolist()

    def span(i: int, k: int) -> Tuple[int, int]:
        a, b = min(lo_l[i:k]), max(hi_l[i:k])
        return (a, b) if b > a else (0, 0)

    def cost(i: int, k: int) -> int:
        a, b = span(i, k)
        return (k - i) * (b - a) + GROUP_OVERHEAD

    cuts: List[int]
    if mo <= DP_MAX_ROWS:
        best = [0] + [1 << 60] * mo
        arg = [0] * (mo + 1)
        for k in range(1, mo + 1):
            a, b = mi, 0
            for i in range(k - 1, -1, -1):
                a, b = min(a, lo_l[i]), max(b, hi_l[i])
                c = best[i] + (k - i) * max(b - a, 0) + GROUP_OVERHEAD
                if c < best[k]:
                    best[k], arg[k] = c, i
        cuts = []
        k = mo
        while k > 0:
            cuts.append(k)
            k = arg[k]
        cuts = [0] + cuts[::-1]
    else:
        cuts = [0]
        for k in range(1, mo):
            i = cuts[-1]
            if cost(i, k + 1) > cost(i, k) + cost(k, k + 1):
                cuts.append(k)
        cuts.append(mo)
    return [(i, k) + span(i, k) for i, k in zip(cuts[:-1], cuts[1:])]


_groups_cache: Dict[Tuple[int, int, bytes], List[Tuple[int, int, int, int]]] = {}


def _row_groups_cached(nz: np.ndarray) -> List[Tuple[int, int, int, int]]:
    key = nz.shape + (np.packbits(nz).tobytes(),)
    g = _groups_cache.get(key)
    if g is None:
        if len(_groups_cache) > 4096:
            _groups_cache.clear()
        g = _groups_cache[key] = _row_groups(nz)
    return g


def _step_plan(ist: _IntStep, s: int) -> _StepPlan:
    mo, mi = ist.m_out, ist.m_in
    bl = ist.bl
    nz = bl > 0
    maxbl = int(bl.max()) if bl.size else 0
    kw = max(1, -(-maxbl // s))
    Wabs = np.zeros((kw, mo * mi))
    Wsign = np.zeros(mo * mi)
    idx_small, val_small, idx_big, val_big = [], [], [], []
    Wi = ist.Wi
    nzidx = np.flatnonzero(nz).tolist()
    tz = []
    for k in nzidx:
        w = Wi[k]
        aw = -w if w < 0 else w
        if w < 0:
            Wsign[k] = -1.0
        else:
            Wsign[k] = 1.0
        tz.append((aw & -aw).bit_length() - 1)
        if aw.bit_length() <= s:
            idx_small.append(k)
            val_small.append(aw)
        else:
            idx_big.append(k)
            val_big.append(aw)
    if idx_small:
        Wabs[0, idx_small] = np.array(val_small, dtype=np.float64)
    if idx_big:
        Wabs[:, idx_big] = _abs_limbs(val_big, s, kw).T
    Wabs = Wabs.reshape(kw, mo, mi)
    Wsign = Wsign.reshape(mo, mi)
    valW = np.full(mo * mi, INF, dtype=np.int64)
    valW[nzidx] = tz
    valW = valW.reshape(mo, mi)
    bi_val = np.array([_tz(b) for b in ist.bi], dtype=np.int64)
    lim = _term_limit(s)
    return _StepPlan(
        a=ist.a, m_out=mo, m_in=mi, Wl=Wabs * Wsign, Wsign=Wsign, nz=nz, bl=bl,
        blm=np.where(nz, bl, -INF), valW=valW, nnz_r=nz.sum(axis=1).astype(np.int64),
        bi=list(ist.bi), bi_val=bi_val, relu_runs=_relu_runs(ist.relu),
        shift_ok=_terms_bound(bl, s, s - 1) <= lim, groups=_row_groups_cached(nz),
    )


# The last stack seen (applies() and run_stack_limbs() are usually called back to back on the
# same steps): one tuple, replaced atomically, compared by identity of the step objects.
_last: Optional[Tuple[Tuple[AffineStep, ...], Optional[List[_IntStep]], Dict[Optional[int], _Plan]]] = None


def _int_steps(steps: Sequence[AffineStep]) -> Tuple[Optional[List[_IntStep]], Dict[Optional[int], _Plan]]:
    """Integer forms of all steps (None if some entry is not dyadic) and the plans made from
    them so far; cached by identity of the steps."""
    global _last
    last = _last
    if last is not None and len(last[0]) == len(steps) and all(x is y for x, y in zip(last[0], steps)):
        return last[1], last[2]
    ints: Optional[List[_IntStep]] = []
    for st in steps:
        ist = _integer_step(st)
        if ist is None:
            ints = None
            break
        ints.append(ist)
    plans: Dict[Optional[int], _Plan] = {}
    if sum(st.m_out * st.m_in for st in steps) <= INT_CACHE_ENTRIES:
        _last = (tuple(steps), ints, plans)
    return ints, plans


def _plan(steps: Sequence[AffineStep], limb_bits: Optional[int] = None) -> Optional[_Plan]:
    ints, plans = _int_steps(steps)
    if ints is None:
        return None
    if limb_bits in plans:
        return plans[limb_bits]
    if limb_bits is None:
        s = choose_limb_bits(ints)
    else:
        s = int(limb_bits)
        if not MIN_LIMB_BITS <= s <= MAX_LIMB_BITS:
            raise ValueError(f"limb_bits must be in [{MIN_LIMB_BITS}, {MAX_LIMB_BITS}]")
        lim = _term_limit(s)
        if any(_terms_bound(ist.bl, s) > lim for ist in ints if ist.bl.size):
            raise ValueError(f"limb_bits={s} too large for these weights (float64 sums could round)")
    max_bits = 0
    for ist in ints:
        if ist.bl.size:
            max_bits = max(max_bits, int(ist.bl.max()))
        if ist.bi:
            max_bits = max(max_bits, max(b.bit_length() for b in ist.bi))
    plan = _Plan(s, ints, max_bits, [None] * len(ints))
    plans[limb_bits] = plan
    return plan


def applies(steps: Sequence[AffineStep]) -> bool:
    """True when every weight and bias is dyadic and the limb arithmetic should pay off."""
    if not steps:
        return False
    if any(st.m_in == 0 or st.m_out == 0 for st in steps):
        return False
    try:
        plan = _plan(steps)
    except ValueError:
        return False
    if plan is None:
        return False
    return plan.max_bits <= MAX_WORTHWHILE_BITS and plan.s >= MIN_WORTHWHILE_LIMB_BITS


# ----------------------------------------------------------------------------- evaluation


class _State:
    """Current batch, row-major limbs: H is (m·K, T) float64, row j·K + l = limb l of row j.
    The value is N / (odd0·2^e); hb[j] bounds |N_j| < 2^hb[j]; val[j] is the exact 2-adic
    valuation of row j (computed lazily)."""

    __slots__ = ("H", "K", "m", "hb", "val", "e", "odd0")

    def __init__(self, H, K, m, hb, val, e, odd0):
        self.H, self.K, self.m, self.hb, self.val, self.e, self.odd0 = H, K, m, hb, val, e, odd0

    def limbs3(self) -> np.ndarray:
        return self.H.reshape(self.m, self.K, -1)

    def valuations(self, s: int) -> np.ndarray:
        """Exact per-row 2-adic valuation of N (min over tokens; INF for an all-zero row)."""
        if self.val is None:
            m = self.m
            H3 = self.limbs3()
            val = np.full(m, INF, dtype=np.int64)
            todo = np.ones(m, dtype=bool)
            for p in range(self.K):
                o = np.bitwise_or.reduce(H3[:, p, :].astype(np.int64), axis=1)
                new = todo & (o != 0)
                if new.any():
                    low = (o & -o).astype(np.float64)
                    val[new] = p * s + _bitlen(low)[new] - 1
                    todo &= ~new
                    if not todo.any():
                        break
            self.val = val
        return self.val

    def to_scaled(self, s: int) -> ScaledInts:
        m, K = self.m, self.K
        T = self.H.shape[1]
        C = self.limbs3().transpose(1, 0, 2).reshape(K, m * T)
        ints = _canonical_to_ints(C, s)
        rows = [ints[i * T:(i + 1) * T] for i in range(m)]
        return ScaledInts(rows, self.odd0 << self.e).reduced()


def _initial_state(X: ScaledInts, s: int) -> _State:
    m, T = X.shape
    flat = [int(x) for row in X.rows for x in row]
    hb = np.array([max((x.bit_length() for x in flat[i * T:(i + 1) * T]), default=0) for i in range(m)],
                  dtype=np.int64)
    maxbl = int(hb.max()) if m else 0
    K = max(1, -(-maxbl // s))
    C = _ints_to_canonical(flat, s, K)  # (m·T, K)
    H = np.empty((m * K, T))
    H.reshape(m, K, T)[:] = C.reshape(m, T, K).transpose(0, 2, 1)
    den = int(X.den)
    if den <= 0:
        raise ValueError("ScaledInts denominator must be positive")
    e = _tz(den)
    return _State(H, K, m, hb, None, e, den >> e)


_grid_cache: Dict[Tuple[int, int], Tuple[np.ndarray, np.ndarray]] = {}


def _grid(kw: int, K: int) -> Tuple[np.ndarray, np.ndarray]:
    g = _grid_cache.get((kw, K))
    if g is None:
        ii, ll = np.meshgrid(np.arange(kw), np.arange(K), indexing="ij")
        g = (ii.ravel(), ll.ravel())
        _grid_cache[(kw, K)] = g
    return g


def _shifted_limbs(sp: _StepPlan, r: int, s: int) -> np.ndarray:
    """Signed limbs of Wi·2^r (exact re-split: limb·2^r = hi·2^s + lo, lo + carried hi < 2^s)."""
    base = float(1 << s)
    X = np.abs(sp.Wl) * float(1 << r)
    hi = np.floor(X * (1.0 / base))
    lo = X - hi * base
    kw = X.shape[0]
    out = np.zeros((kw + 1,) + X.shape[1:])
    out[:kw] = lo
    out[1:] += hi
    if not out[kw].any():
        out = out[:kw]
    return out * sp.Wsign


def _ceil_log2(n: np.ndarray) -> np.ndarray:
    return _bitlen(np.maximum(n - 1, 0).astype(np.float64))


def _step(sp: _StepPlan, S: _State, s: int) -> _State:
    mo = sp.m_out
    T = S.H.shape[1]
    K = S.K
    e = S.e
    base = float(1 << s)
    inv = 1.0 / base

    # 1. how much of the new denominator 2^(e+a) can be divided out (a proven lower bound)
    emax = e + sp.a
    v = 0
    if emax:
        val = S.valuations(s)
        lbr = np.minimum((sp.valW + val[None, :]).min(axis=1), sp.bi_val + e)
        lb = int(lbr.min())
        v = emax if lb >= INF // 2 else min(emax, lb)
    r = (-v) % s
    q = (v + r) // s
    if r and not sp.shift_ok and _terms_bound(sp.bl, s, r) > _term_limit(s):
        r, q = 0, v // s
    v_eff = q * s - r

    Wl = sp.Wl if r == 0 else _shifted_limbs(sp, r, s)
    kw = Wl.shape[0]
    den = S.odd0 << e
    bias = [(b * den) << r for b in sp.bi]

    # 2. size of the output: every product lands, and |top limb| <= 2^s afterwards
    tb = (sp.blm + S.hb[None, :]).max(axis=1) + r
    bb = np.array([x.bit_length() for x in bias], dtype=np.int64)
    nt = sp.nnz_r + (bb > 0)
    bits = np.maximum(tb, bb) + _ceil_log2(nt)
    bits = np.where(nt > 0, bits, 0)
    need = -(-int(bits.max()) // s)
    P = max(kw + K - 1, need, q + 1)

    # 3. one block-Toeplitz product per row group: rows (r, p) x columns (j, l)
    Zr = np.empty((mo * P, T))  # row-major output limbs
    Hin = S.H
    ii0, ll0 = _grid(kw, K)
    for g0, g1, j0, j1 in sp.groups:
        if j1 <= j0:
            Zr[g0 * P: g1 * P] = 0.0
            continue
        chunk = max(1, WBIG_MAX_ENTRIES // (P * (j1 - j0) * K))  # bounds the Toeplitz matrix
        for r0 in range(g0, g1, chunk):
            r1 = min(g1, r0 + chunk)
            Wg = Wl[:, r0:r1, j0:j1]
            nzl = Wg.reshape(kw, -1).any(axis=1)
            ii, ll = ii0, ll0
            if not nzl.all():
                keep = nzl[ii]
                ii, ll = ii[keep], ll[keep]
            Wbig = np.zeros((r1 - r0, P, j1 - j0, K))
            Wbig[:, ii + ll, :, ll] = Wg[ii]
            np.matmul(Wbig.reshape((r1 - r0) * P, (j1 - j0) * K), Hin[j0 * K: j1 * K],
                      out=Zr[r0 * P: r1 * P])

    # 4. bias limbs (rows that have a bias), then to limb-major order and exact carry
    #    normalization, limb by limb
    if any(bias):
        biasL = _signed_limbs(bias, s, P)  # (mo, P)
        Zr3 = Zr.reshape(mo, P, T)
        for rr, bv in enumerate(bias):
            if bv:
                Zr3[rr] += biasL[rr][:, None]
    Z = np.empty((P, mo, T))
    np.copyto(Z, Zr.reshape(mo, P, T).transpose(1, 0, 2))
    del Zr
    tmp = np.empty((mo, T))
    for p in range(P - 1):
        blk = Z[p]
        np.multiply(blk, inv, out=tmp)
        np.floor(tmp, out=tmp)
        Z[p + 1] += tmp
        tmp *= base
        blk -= tmp
    if q and Z[:q].any():
        raise RuntimeError("limbs backend: folded power of two does not divide the result (bug)")

    # 5. drop top limbs that are pure sign extension: the top is 0 or -1 everywhere and the
    #    limbs below it are 0 (non-negative entries) or 2^s - 1 (negative entries); the upper
    #    part is then exactly 0 or -1 and is merged into the new top limb.
    top_i = P - 1
    top = Z[top_i]
    if top_i > q and top.max() <= 0 and top.min() >= -1:
        negs = top < 0
        anyneg = bool(negs.any())
        fill = negs * (base - 1.0) if anyneg else None
        k = top_i - 1
        while k > q:
            blk = Z[k]
            if anyneg:
                if not np.array_equal(blk, fill):
                    break
            elif blk.any():
                break
            k -= 1
        if anyneg:
            Z[k] -= negs * base
        top_i = k
    # 6. ReLU (sign = sign of the top limb), on the kept limbs q .. top_i
    for r0, r1 in sp.relu_runs:
        neg = Z[top_i, r0:r1] < 0
        if neg.any():
            Z[q:top_i + 1, r0:r1] *= ~neg
    Kp = top_i + 1 - q
    H = np.empty((mo * Kp, T))
    H.reshape(mo, Kp, T)[:] = Z[q:top_i + 1].transpose(1, 0, 2)
    hb = _bitlen(np.abs(Z[top_i]).max(axis=1)) + s * (Kp - 1)
    return _State(H, Kp, mo, hb, None, e + sp.a - v_eff, S.odd0)


# ----------------------------------------------------------------------------- BLAS threads
#
# The products here are medium-sized (tens of rows and columns by T tokens) and memory-bound:
# a multi-threaded BLAS gains little on them, and when the cores are shared with other work
# (pytest-xdist, several checkers at once) OpenBLAS's spinning threads make them 5-20x slower.
# So the backend runs its products single-threaded by default. EXACTMEM_BLAS_THREADS=n uses n
# threads instead; EXACTMEM_BLAS_THREADS=keep leaves the BLAS setting alone. This affects speed
# only, never results.

@contextlib.contextmanager
def _blas_threads() -> Iterator[None]:
    """Limit BLAS threads (threadpoolctl) while the products run; speed only, never results."""
    want = os.environ.get("EXACTMEM_BLAS_THREADS", "1").strip().lower()
    if want in ("keep", "", "0"):
        yield
        return
    try:
        n = max(1, int(want))
    except ValueError:
        n = 1
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n, user_api="blas"):
        yield


def run_stack_limbs(steps: Sequence[AffineStep], X: ScaledInts, trace: bool = False,
                    limb_bits: Optional[int] = None) -> StackResult:
    """Exact batched evaluation with multi-limb float64 matrix products (dyadic weights only).

    ``limb_bits`` forces the limb size s (tests use small s to exercise carries); by default
    the largest safe s <= 25 is used.
    """
    _check_shapes(steps, X.shape[0])
    m, T = X.shape
    if T == 0 or m == 0 or any(st.m_out == 0 or st.m_in == 0 for st in steps):
        res = run_stack_fraction(steps, X, trace=trace)
        return StackResult(res.out, res.trace, "limbs")
    if not steps:
        return StackResult(ScaledInts([list(r) for r in X.rows], X.den).reduced(), [], "limbs")
    plan = _plan(steps, limb_bits)
    if plan is None:
        raise ValueError("the limbs backend needs dyadic weights and biases (use 'flint')")
    s = plan.s
    S = _initial_state(X, s)
    tr = []
    with _blas_threads():
        for i in range(len(plan.ints)):
            S = _step(plan.step(i), S, s)
            if trace:
                tr.append(S.to_scaled(s))
    out = tr[-1] if trace else S.to_scaled(s)
    return StackResult(out, tr, "limbs")
