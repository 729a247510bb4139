"""Exact backend ``"native"``: compiled (numba) multi-limb integer steps, dyadic weights.

Values are ``N / (odd0·2^e)``, N an integer matrix held as canonical base-2^30 limbs in an int64
array (``exactmem/native/limbs.py`` says why nothing overflows). A step ``H ↦ ρ(W H + b)`` with
integer form ``(2^a·W, 2^a·b)`` computes, per token and output row, in compiled code:

* the terms grouped by the magnitude of their weight, ``Σ_|a| |a|·(Σ ±x_j)``: the signed sum
  of the inputs that share a magnitude first (cheap additions), then one multi-limb product by
  ``|a|`` (in the doubling gadget ``2U − 2^M (s₁ − s₂)`` the M-bit factor multiplies the
  one-limb difference, and a zero difference costs nothing);
* the bias ``2^a·b·odd0·2^e``, exact carry normalization, ReLU by the sign of the top limb;
* the limb count of the result (the longest entry) and the exact 2-adic valuation v of the
  result; the whole batch is then divided by ``2^min(v, e + a)`` (an exact shift), so dyadic
  denominators never pile up.

Registered in :data:`~exactmem.model.affine_stack.BACKENDS` when numba is importable; ``auto``
prefers it over ``limbs`` for dyadic weights. Without numba the module imports, ``AVAILABLE``
is False and nothing is registered (``auto`` keeps choosing ``limbs``/``flint``).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import native as _native
from .steps import AffineStep, ScaledInts, StackResult, _check_shapes, run_stack_fraction

S = 30
MASK = (1 << S) - 1
BLOCK_LIMBS = 1 << 22  # int64 limbs of one block's un-trimmed output (32 MiB); more tokens are split
MAX_ADDS = 1 << 32  # additions into one accumulator limb (each <= 2^30): keeps sums below 2^62

__all__ = ["AVAILABLE", "applies", "run_stack_native", "to_limbs", "from_limbs"]

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


# ----------------------------------------------------------------------------- the plan


class _StepPlan:
    __slots__ = ("a", "m_out", "m_in", "row_ptr", "mag_ptr", "mags", "term_ptr", "term_j", "term_sgn", "bi",
                 "relu", "kw", "max_terms")

    def __init__(self, st: AffineStep):
        flat = [x for row in st.W for x in row] + list(st.b)
        D = 1
        for x in flat:
            d = x.denominator
            if d & (d - 1):
                raise ValueError("not dyadic")
            D = max(D, d)
        self.a = D.bit_length() - 1
        self.m_out, self.m_in = st.m_out, st.m_in
        row_ptr, mag_ptr, mags, term_ptr, term_j, term_sgn = [0], [0], [], [0], [], []
        kw, max_terms = 1, 1
        for row in st.W:
            groups: Dict[int, List[Tuple[int, int]]] = {}
            for j, x in enumerate(row):
                if x:
                    w = x.numerator * (D // x.denominator)
                    groups.setdefault(abs(w), []).append((j, 1 if w > 0 else -1))
            for M, terms in groups.items():
                ml = _mag_limbs(M)
                mags.extend(ml)
                mag_ptr.append(len(mags))
                kw = max(kw, len(ml))
                for j, sg in terms:
                    term_j.append(j)
                    term_sgn.append(sg)
                term_ptr.append(len(term_j))
            max_terms = max(max_terms, len(groups) + 1)
            row_ptr.append(len(mag_ptr) - 1)
        arr = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
        self.row_ptr, self.mag_ptr, self.mags = arr(row_ptr), arr(mag_ptr), arr(mags)
        self.term_ptr, self.term_j, self.term_sgn = arr(term_ptr), arr(term_j), arr(term_sgn)
        self.bi = [x.numerator * (D // x.denominator) for x in st.b]
        self.relu = np.array(st.relu_rows, dtype=np.bool_)
        self.kw, self.max_terms = kw, max_terms


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


def _step(k, sp: _StepPlan, H: np.ndarray, odd0: int, e: int) -> Tuple[np.ndarray, int]:
    m_in, T, K = H.shape
    den = odd0 << e
    bias = [b * den for b in sp.bi]
    bl = [_mag_limbs(0)] * len(bias)
    nz = [i for i, b in enumerate(bias) if b]
    if nz:
        L = to_limbs([bias[i] for i in nz])
        for row, i in enumerate(nz):
            bl[i] = L[row].tolist()
    bias_ptr = np.zeros(len(bias) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in bl], out=bias_ptr[1:])
    bias_limbs = np.array([x for b in bl for x in b], dtype=np.int64)
    P = max(sp.kw + K + 2, int(max(len(x) for x in bl)) + 1)
    if sp.m_in * 2 * (sp.kw + 1) * (K + 2) + P >= MAX_ADDS or sp.m_in >= 1 << 29:
        raise ValueError("native backend: step too large for the int64 accumulator bound")
    block = max(1, BLOCK_LIMBS // (sp.m_out * P))
    emax = e + sp.a
    parts = []
    maxlen, minval = 1, 1 << 62
    for t0 in range(0, T, block):
        t1 = min(T, t0 + block)
        Y, ln, mv = k.step_block(H, t0, t1, sp.row_ptr, sp.mag_ptr, sp.mags, sp.term_ptr, sp.term_j, sp.term_sgn,
                                 bias_ptr, bias_limbs, sp.relu, P)
        if T > block:  # keep the block trimmed to its own length (the shift waits for all blocks)
            Yt = np.empty((Y.shape[0], t1 - t0, ln), dtype=np.int64)
            k.finish_block(Y, Yt, 0, 0)
            Y = Yt
        parts.append((t0, Y))
        maxlen, minval = max(maxlen, ln), min(minval, mv)
    v = min(emax, minval)
    K2 = max(1, maxlen - v // S)
    if v // S >= maxlen:  # only zeros (or a shift past every limb): value 0
        v = min(v, (maxlen - 1) * S)
        K2 = maxlen - v // S
    Z = np.empty((sp.m_out, T, K2), dtype=np.int64)
    for t0, Y in parts:
        k.finish_block(Y, Z, t0, v)
    return Z, emax - v


def _to_scaled(H: np.ndarray, odd0: int, e: int) -> ScaledInts:
    m, T, K = H.shape
    ints = from_limbs(H.reshape(m * T, K))
    return ScaledInts([ints[i * T:(i + 1) * T] for i in range(m)], odd0 << e).reduced()


def run_stack_native(steps: Sequence[AffineStep], X: ScaledInts, trace: bool = False) -> StackResult:
    """Exact batched evaluation with compiled multi-limb integer steps (dyadic weights only)."""
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
    H = np.ascontiguousarray(L.reshape(m, T, L.shape[1]))
    tr = []
    for sp in plans:
        H, e = _step(k, sp, H, odd0, e)
        if trace:
            tr.append(_to_scaled(H, odd0, e))
    out = tr[-1] if trace else _to_scaled(H, odd0, e)
    return StackResult(out, tr, "native")
