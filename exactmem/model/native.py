"""Exact backend ``"native"``: compiled (numba) multi-limb integer steps, dyadic weights.

Values are ``N / (odd0·2^e)``, N an integer matrix held as canonical base-2^30 limbs in int64,
token-major (``(rows, limbs, tokens)``, so the compiled loops run over tokens and vectorize;
``exactmem/native/limbs.py`` says why no int64 sum overflows). The tokens are cut in blocks of
`TOKEN_BLOCK`; each (row, block) keeps its own limb count, trimmed after every step.
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

Registered in `BACKENDS` when numba is importable; ``auto``
prefers it over ``limbs`` for dyadic weights. Without numba the module still imports,
``AVAILABLE`` is False and nothing is registered (``auto`` keeps choosing ``limbs``/``flint``).
Tested against the Fraction reference and python-flint in ``tests/test_native.py``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .. import native as _native
from ..native.rows import Plan, S, TOKEN_BLOCK, from_limbs, to_limbs
from .steps import AffineStep, ScaledInts, StackResult, _check_shapes, run_stack_fraction

__all__ = ["AVAILABLE", "applies", "run_stack_native", "to_limbs", "from_limbs", "warm"]

AVAILABLE = _native.AVAILABLE


def _k():
    return _native.kernels()


def warm() -> bool:
    """Load (or compile, the first time on a machine) the kernels now, on a tiny stack, so that
    a timed call does not include it; False without numba."""
    if not AVAILABLE or _k() is None:
        return False
    st = AffineStep.make([[1, -1], [2, 0]], [1, 0], [True, False])
    run_stack_native([st], ScaledInts([[1, -2], [3, 2**70]], 2))
    # a whole limb divided out (the batch becomes a view), then read by the next step
    w = Fraction(1, 2**40)
    shift = [AffineStep.make([[w, 0], [0, w]], [0, 0], False), AffineStep.make([[1, 1]], [1], True)]
    run_stack_native(shift, ScaledInts([[2**35, 2**36], [2**37, 0]], 1))
    run_stack_native(shift, ScaledInts([[2**35, 2**36], [2**37, 0]], 1), trace=True)
    to_limbs([1, -1])
    from_limbs(to_limbs([2**65]))
    _k().first_index_rows(np.zeros((2, 1), dtype=np.int64))
    return True


# ----------------------------------------------------------------------------- the plan


def _step_plan(st: AffineStep) -> Plan:
    """The step's integer form ``(2^a·W, 2^a·b)`` as a compiled-step plan; ValueError if some
    weight or bias is not dyadic."""
    dens = {x.denominator for row in st.W for x in row}
    dens.update(x.denominator for x in st.b)
    for d in dens:
        if d & (d - 1):
            raise ValueError("not dyadic")
    D = max(dens) if dens else 1
    rows = []
    for row in st.W:
        terms = []
        for j, x in enumerate(row):
            n = x.numerator
            if n:
                terms.append((j, n * (D // x.denominator) if D != 1 else n))
        rows.append(terms)
    return Plan(rows, [x.numerator * (D // x.denominator) for x in st.b], st.relu_rows, D.bit_length() - 1)


_cache: Optional[Tuple[Tuple[AffineStep, ...], Optional[List[Plan]]]] = None


def _plans(steps: Sequence[AffineStep]) -> Optional[List[Plan]]:
    """Compiled-step plans (None if some weight or bias is not dyadic); the last stack's plans
    are kept (compared by identity of the step objects)."""
    global _cache
    c = _cache
    if c is not None and len(c[0]) == len(steps) and all(x is y for x, y in zip(c[0], steps)):
        return c[1]
    try:
        plans: Optional[List[Plan]] = [_step_plan(st) for st in steps]
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


def _step(sp: Plan, X: _Batch, odd0: int, blk: int) -> _Batch:
    """One step; the result is divided by 2^(30·q) for the largest q with 30·q <= min(its
    2-adic valuation, e + a): whole limbs, dropped by a view (no copy). The rest of the power of
    two stays in the denominator (less than 2^(30 + a)), so denominators never pile up."""
    emax = X.e + sp.a
    Y, Ylen, maxlen, v = sp.run(X.Y, X.Ylen, X.K, [b * (odd0 << X.e) for b in sp.bi], emax, blk)
    q = min(v, emax) // S
    if maxlen == 0 or q >= maxlen:  # every entry is 0
        return _Batch(Y[:, :1], np.zeros_like(Ylen), 0, 0)
    if q:
        Y = Y[:, q:]
        np.subtract(Ylen, q, out=Ylen)
        np.maximum(Ylen, 0, out=Ylen)  # an entry of at most q limbs is 0: |v| < 2^(30q) <= 2^valuation
    return _Batch(Y, Ylen, maxlen - q, emax - q * S)


def _to_scaled(k, X: _Batch, odd0: int, blk: int) -> ScaledInts:
    m, _, T = X.Y.shape
    K = max(X.K, 1)
    Z = X.Y[:, :K].copy()  # always a copy: extend rewrites top limbs, the batch's must stay as they are
    k.extend(Z, X.Ylen, blk, np.full(m, K, dtype=np.int64))
    ints = from_limbs(Z.transpose(0, 2, 1).reshape(m * T, K))
    return ScaledInts([ints[i * T:(i + 1) * T] for i in range(m)], odd0 << X.e).reduced()


def run_stack_native(steps: Sequence[AffineStep], X: ScaledInts, trace: bool = False,
                     token_block: Optional[int] = None, on_step=None) -> StackResult:
    """Exact batched evaluation with compiled multi-limb integer steps (dyadic weights only).
    ``token_block``: tokens per kernel block (default `TOKEN_BLOCK`; tests use tiny
    blocks so that one batch has blocks of different lengths). ``on_step(steps done)``:
    progress after every step (display only)."""
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
    for i, sp in enumerate(plans):
        B = _step(sp, B, odd0, blk)
        if trace:
            tr.append(_to_scaled(k, B, odd0, blk))
        if on_step is not None:
            on_step(i + 1)
    out = tr[-1] if trace else _to_scaled(k, B, odd0, blk)
    return StackResult(out, tr, "native")
