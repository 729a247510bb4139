"""Exact backend ``"native"``: compiled (numba) multi-limb integer steps, dyadic weights.

Values are ``N / (odd0·2^e)``, N an integer matrix held as canonical base-2^30 limbs in int64,
token-major (``(rows, limbs, tokens)``, so the compiled loops run over tokens and vectorize;
``exactmem/native/limbs.py`` says why no int64 sum overflows). The tokens are cut in blocks of
:data:`TOKEN_BLOCK`; each (row, block) keeps its own limb count, trimmed after every step.
A step ``H ↦ ρ(W H + b)`` with integer form ``(2^a·W, 2^a·b)`` computes, block by block:

* the terms of each row grouped by the magnitude of their weight, ``Σ_|a| |a|·(Σ ±x_j)``: the
  signed sum of the inputs that share a magnitude first (cheap additions), then one
  multi-limb product by ``|a|`` (in the doubling gadget ``2U − 2^M (s₁ − s₂)`` the M-bit factor
  multiplies the one-limb difference, and a difference that is 0 on the whole block costs
  nothing). Equal signed sums and equal linear parts are computed once per step: rows that
  differ only by their bias (the ``relu(x − c + 1)``, ``relu(x − c)`` pairs) share the work;
* the bias ``2^a·b·odd0·2^e``, exact carry normalization, ReLU by the sign of the top limb;
* the exact 2-adic valuation v of the result; whole limbs ``30·⌊min(v, e + a)/30⌋`` are divided
  out by dropping them (a view, no copy), so the power of two left in the denominator stays
  below 2^(30 + a) and never piles up.

Registered in :data:`~exactmem.model.affine_stack.BACKENDS` when numba is importable; ``auto``
prefers it over ``limbs`` for dyadic weights. Without numba the module still imports,
``AVAILABLE`` is False and nothing is registered (``auto`` keeps choosing ``limbs``/``flint``).
Tested against the Fraction reference and python-flint in ``tests/test_native.py``.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import native as _native
from .steps import AffineStep, ScaledInts, StackResult, _check_shapes, run_stack_fraction

S = 30
MASK = (1 << S) - 1
BASE = 1 << S
TOKEN_BLOCK = 128  # tokens processed together inside the kernel (its work arrays stay in cache)
MAX_ADDS = 1 << 32  # additions into one accumulator limb (each <= 2^30): keeps sums below 2^62

__all__ = ["AVAILABLE", "applies", "run_stack_native", "to_limbs", "from_limbs", "warm"]

AVAILABLE = _native.AVAILABLE


def _k():
    return _native.kernels()


# ----------------------------------------------------------------------------- conversions


def to_limbs(vals: Sequence[int]) -> np.ndarray:
    """Canonical (n, K) limbs of Python ints (K the fewest that hold them all)."""
    n = len(vals)
    bits = max((v.bit_length() for v in vals), default=0)
    K = max(1, -(-(bits + 1) // S))
    nb = (S * K + 7) // 8
    buf = np.frombuffer(b"".join([v.to_bytes(nb, "little", signed=True) for v in vals]), np.uint8)
    return _k().bytes_to_limbs(buf, n, nb, K)


def from_limbs(L: np.ndarray) -> List[int]:
    """Python ints of canonical (n, K) limbs."""
    n, K = L.shape
    nb = (S * K + 8) // 8
    data = _k().limbs_to_bytes(np.ascontiguousarray(L), nb).tobytes()
    fb = int.from_bytes
    return [fb(data[i * nb:(i + 1) * nb], "little", signed=True) for i in range(n)]


def _mag_limbs(M: int) -> List[int]:
    out = []
    while True:
        out.append(M & MASK)
        M >>= S
        if not M:
            return out


def warm() -> bool:
    """Load (or compile, the first time on a machine) the kernels now, on a tiny stack, so that
    a timed call does not include it; False without numba."""
    if not AVAILABLE or _k() is None:
        return False
    st = AffineStep.make([[1, -1], [2, 0]], [1, 0], [True, False])
    run_stack_native([st], ScaledInts([[1, -2], [3, 2**70]], 2))
    to_limbs([1, -1])
    from_limbs(to_limbs([2**65]))
    _k().first_index_rows(np.zeros((2, 1), dtype=np.int64))
    return True


# ----------------------------------------------------------------------------- the plan


class _StepPlan:
    """A step's integer form for :func:`~exactmem.native.limbs.step_block`: each row's terms
    grouped by weight magnitude, the signed sums of a group (*lists*) and the linear parts of a
    row (*combos*) de-duplicated across rows, so rows that differ only by their bias (the
    ``relu(x − c + 1)``, ``relu(x − c)`` pairs of the bit-extraction gadgets) share the work."""

    __slots__ = ("a", "m_out", "m_in", "list_ptr", "term_j", "term_sgn", "combo_ptr", "cm_list", "cm_sgn",
                 "mag_ptr", "mags", "row_combo", "bi", "relu", "kw", "terms")

    def __init__(self, st: AffineStep):
        dens = {x.denominator for row in st.W for x in row}
        dens.update(x.denominator for x in st.b)
        for d in dens:
            if d & (d - 1):
                raise ValueError("not dyadic")
        D = max(dens) if dens else 1
        self.a = D.bit_length() - 1
        self.m_out, self.m_in = st.m_out, st.m_in
        lists: Dict[tuple, int] = {}
        combos: Dict[tuple, int] = {}
        row_combo = []
        maxbits, terms = 1, 1
        for row in st.W:
            groups: Dict[int, List[Tuple[int, int]]] = {}
            for j, x in enumerate(row):
                n = x.numerator
                if n:
                    w = n * (D // x.denominator) if D != 1 else n
                    if w > 0:
                        groups.setdefault(w, []).append((j, 1))
                    else:
                        groups.setdefault(-w, []).append((j, -1))
            entries = []
            for M, ts in groups.items():
                sg = ts[0][1]  # a list starts with a + sign; the group's sign goes to the combo
                key = tuple(ts) if sg > 0 else tuple((j, -s) for j, s in ts)
                li = lists.setdefault(key, len(lists))
                entries.append((li, sg, M))
                maxbits = max(maxbits, M.bit_length())
                terms = max(terms, len(ts))
            if not entries:
                row_combo.append(-1)
                continue
            row_combo.append(combos.setdefault(tuple(entries), len(combos)))
        kw = -(-maxbits // S)
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
                mags.extend(_mag_limbs(M))
                mag_ptr.append(len(mags))
            combo_ptr.append(len(cm_list))
        arr = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
        self.list_ptr, self.term_j, self.term_sgn = arr(list_ptr), arr(term_j), arr(term_sgn)
        self.combo_ptr, self.cm_list, self.cm_sgn = arr(combo_ptr), arr(cm_list), arr(cm_sgn)
        self.mag_ptr, self.mags, self.row_combo = arr(mag_ptr), arr(mags), arr(row_combo)
        self.bi = [x.numerator * (D // x.denominator) for x in st.b]
        self.relu = np.array(st.relu_rows, dtype=np.bool_)
        self.kw, self.terms = kw, terms


_cache: Optional[Tuple[Tuple[AffineStep, ...], Optional[List[_StepPlan]]]] = None


def _plans(steps: Sequence[AffineStep]) -> Optional[List[_StepPlan]]:
    """Compiled-step plans (None if some weight or bias is not dyadic); the last stack's plans
    are kept (compared by identity of the step objects)."""
    global _cache
    c = _cache
    if c is not None and len(c[0]) == len(steps) and all(x is y for x, y in zip(c[0], steps)):
        return c[1]
    try:
        plans: Optional[List[_StepPlan]] = [_StepPlan(st) for st in steps]
    except ValueError:
        plans = None
    _cache = (tuple(steps), plans)
    return plans


def applies(steps: Sequence[AffineStep]) -> bool:
    """numba is available, every weight and bias is dyadic and every shape is non-empty."""
    if not AVAILABLE or not steps or any(st.m_in == 0 or st.m_out == 0 for st in steps):
        return False
    return _plans(steps) is not None and _k() is not None


# ----------------------------------------------------------------------------- evaluation


class _Batch:
    """A batch in the kernel's per-block form: entry (j, t) canonical in
    ``Y[j, :Ylen[j, t // TOKEN_BLOCK], t]`` (length 0: the value 0), K the largest length; the
    value is ``N / (odd0·2^e)``."""

    __slots__ = ("Y", "Ylen", "K", "e")

    def __init__(self, Y, Ylen, K, e):
        self.Y, self.Ylen, self.K, self.e = Y, Ylen, K, e


def _bias_limbs(bias: List[int]) -> Tuple[np.ndarray, np.ndarray]:
    """Canonical limbs of the biases, concatenated, and where each row's start (a zero bias has
    no limbs). Python ints: ``b & MASK`` and ``b >> 30`` are the two's-complement limb and the
    floor shift, also for negative b."""
    ptr = [0]
    flat: List[int] = []
    for b in bias:
        if b:
            while not -BASE <= b < BASE:
                flat.append(b & MASK)
                b >>= S
            flat.append(b)
        ptr.append(len(flat))
    return np.array(ptr, dtype=np.int64), np.array(flat, dtype=np.int64)


def _step(k, sp: _StepPlan, X: _Batch, odd0: int, blk: int) -> _Batch:
    """One step; the result is divided by 2^(30·q) for the largest q with 30·q <= min(its
    2-adic valuation, e + a): whole limbs, dropped by a view (no copy). The rest of the power of
    two stays in the denominator (less than 2^(30 + a)), so denominators never pile up."""
    T = X.Y.shape[2]
    K = max(X.K, 1)
    bias_ptr, bias_limbs = _bias_limbs([b * (odd0 << X.e) for b in sp.bi])
    nbias = int((bias_ptr[1:] - bias_ptr[:-1]).max()) if len(bias_ptr) > 1 else 0
    P = max(sp.kw + K + 2, nbias + 2)
    if sp.m_in * 2 * (sp.kw + 1) * (K + 2) + P >= MAX_ADDS or sp.terms >= 1 << 29:
        raise ValueError("native backend: step too large for the int64 accumulator bound")
    Y = np.empty((sp.m_out, P, T), dtype=np.int64)
    Ylen = np.empty((sp.m_out, X.Ylen.shape[1]), dtype=np.int64)
    emax = X.e + sp.a
    maxlen, v = k.step_block(X.Y, X.Ylen, K, sp.list_ptr, sp.term_j, sp.term_sgn, sp.combo_ptr, sp.cm_list, sp.cm_sgn,
                             sp.mag_ptr, sp.mags, sp.row_combo, bias_ptr, bias_limbs, sp.relu, Y, Ylen, emax,
                             blk)
    q = min(v, emax) // S
    if maxlen == 0 or q >= maxlen:  # every entry is 0
        return _Batch(Y[:, :1], np.zeros_like(Ylen), 0, 0)
    if q:
        Y = Y[:, q:]
        np.subtract(Ylen, q, out=Ylen)
        np.maximum(Ylen, 0, out=Ylen)  # an entry of at most q limbs is 0 (its valuation is >= 30·q)
    return _Batch(Y, Ylen, maxlen - q, emax - q * S)


def _to_scaled(k, X: _Batch, odd0: int, blk: int) -> ScaledInts:
    m, _, T = X.Y.shape
    K = max(X.K, 1)
    Z = np.empty((m, K, T), dtype=np.int64)
    k.uniform(X.Y, X.Ylen, blk, Z)
    ints = from_limbs(Z.transpose(0, 2, 1).reshape(m * T, K))
    return ScaledInts([ints[i * T:(i + 1) * T] for i in range(m)], odd0 << X.e).reduced()


def run_stack_native(steps: Sequence[AffineStep], X: ScaledInts, trace: bool = False,
                     token_block: Optional[int] = None) -> StackResult:
    """Exact batched evaluation with compiled multi-limb integer steps (dyadic weights only).
    ``token_block``: tokens per kernel block (default :data:`TOKEN_BLOCK`; tests use tiny
    blocks so that one batch has blocks of different lengths)."""
    _check_shapes(steps, X.shape[0])
    m, T = X.shape
    if T == 0 or m == 0 or any(st.m_out == 0 or st.m_in == 0 for st in steps):
        res = run_stack_fraction(steps, X, trace=trace)
        return StackResult(res.out, res.trace, "native")
    if not steps:
        return StackResult(ScaledInts([list(r) for r in X.rows], X.den).reduced(), [], "native")
    k = _k()
    plans = _plans(steps)
    if k is None or plans is None:
        raise ValueError("the native backend needs numba and dyadic weights and biases (use 'limbs' or 'flint')")
    den = int(X.den)
    if den <= 0:
        raise ValueError("ScaledInts denominator must be positive")
    e = (den & -den).bit_length() - 1
    odd0 = den >> e
    L = to_limbs([int(x) for row in X.rows for x in row])
    K = L.shape[1]
    H = np.ascontiguousarray(L.reshape(m, T, K).transpose(0, 2, 1))  # token-major (m, K, T)
    blk = int(token_block or TOKEN_BLOCK)
    B = _Batch(H, np.full((m, -(-T // blk)), K, dtype=np.int64), K, e)
    tr = []
    for sp in plans:
        B = _step(k, sp, B, odd0, blk)
        if trace:
            tr.append(_to_scaled(k, B, odd0, blk))
    out = tr[-1] if trace else _to_scaled(k, B, odd0, blk)
    return StackResult(out, tr, "native")
