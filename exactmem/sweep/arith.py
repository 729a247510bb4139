"""Floating-point evaluation (the ``arith`` precision model): a network with every operation rounded in a format.

Operations are rounded in the order of `OPERATION_ORDER`.

Two engines compute the same numbers: MPFR (gmpy2, the reference; needed for softmax) and
NumPy (named formats, softmax-free models). Floats live only here, to simulate a format;
outputs are converted back to exact Fractions before they are judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, List, Optional, Tuple

from .formats import FORMATS, NAMED_FORMATS, FloatFormat, SweepError, get_format
from .judge import Judge, _tally
from .quantize import _weights


class _NumpyArith:
    """IEEE formats on NumPy arrays: float64 and float32 natively (NumPy rounds every
    operation correctly, no fused multiply-add); float16 and bfloat16 held in float32 and
    re-rounded after every operation (to float16 by NumPy's conversion, to bfloat16 by
    rounding the bit pattern to nearest even). The double rounding is innocuous: 24 ≥ 2p + 2
    for p = 11 and p = 8 (and for bfloat16 the exponent range is float32's)."""

    kind = "numpy"

    def __init__(self, fmt: FloatFormat):
        import numpy as np

        self.np = np
        self.fmt = fmt
        self.bf16 = fmt.name == "bfloat16"
        self.f16 = fmt.name == "float16"
        self.dtype = {"float64": np.float64, "float32": np.float32, "float16": np.float32,
                      "bfloat16": np.float32}[fmt.name]
        self.conv = _MpfrArith(fmt)
        self.zero = self.dtype(0)

    def const(self, q: Fraction):
        return self.dtype(float(self.conv.const(q)))

    def array(self, rows) -> Any:
        np = self.np
        return np.array([[float(self.conv.const(Fraction(x))) for x in r] for r in rows], dtype=np.float64) \
            .astype(self.dtype)

    def _r(self, a):
        np = self.np
        if self.f16:
            return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)
        if not self.bf16:
            return a
        a = np.asarray(a, dtype=np.float32)
        u = a.view(np.uint32)
        r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)).view(np.float32)
        nan = np.isnan(a)
        if nan.any():  # a NaN's payload could carry into the sign bit
            r = np.where(nan, a, r)
        return r

    def mul(self, a, b):
        return self._r(a * b)

    def add(self, a, b):
        return self._r(a + b)

    def sub(self, a, b):
        return self._r(a - b)

    def div(self, a, b):
        return self._r(a / b)

    def exp(self, a):  # pragma: no cover - guarded by engine selection
        raise SweepError("exp is evaluated with MPFR (correctly rounded); use the mpfr engine")

    exp2 = exp

    def relu(self, a):
        return self.np.maximum(a, self.zero)

    def isfinite(self, a):
        return self.np.isfinite(a)

    def isnan(self, a):
        return self.np.isnan(a)

    def maximum(self, a, b):
        return self.np.maximum(a, b)  # propagates NaN

    def zeros(self, shape):
        return self.np.zeros(shape, dtype=self.dtype)

    def nan_like(self, a):
        return self.np.full(self.np.shape(a), self.np.nan, dtype=self.dtype)

    def where(self, cond, a, b):
        return self.np.where(cond, a, b).astype(self.dtype)

    def eq(self, a, b):
        return a == b

    def to_fraction(self, x) -> Optional[Fraction]:
        x = float(x)
        if x != x or x in (float("inf"), float("-inf")):
            return None
        return Fraction(x)

    def affine(self, W, b, H):
        """Left to right over the input index. Zero weights are skipped: for finite inputs
        they add ±0 and change nothing; 0·(±inf or NaN) = NaN is applied afterwards (NaN
        absorbs every later operation), so this equals the dense sum."""
        np = self.np
        m_out, m_in = W.shape
        T = H.shape[1]
        out = np.empty((m_out, T), dtype=self.dtype)
        finite = None
        with np.errstate(all="ignore"):
            for i in range(m_out):
                row = W[i]
                nz = np.flatnonzero(row)
                if len(nz):
                    s = self.mul(row[nz[0]], H[nz[0]])
                    for j in nz[1:]:
                        s = self.add(s, self.mul(row[j], H[j]))
                else:
                    s = np.zeros(T, dtype=self.dtype)
                if len(nz) < m_in:
                    if finite is None:
                        fin = np.isfinite(H)
                        finite = True if fin.all() else fin
                    if finite is not True:
                        bad = ~finite[row == 0].all(axis=0)
                        if bad.any():
                            s = np.where(bad, np.nan, s).astype(self.dtype)
                if b is not None:
                    s = self.add(s, b[i])
                out[i] = s
        return out

    def context(self):
        import contextlib

        return contextlib.nullcontext()

    def errstate(self):
        return self.np.errstate(all="ignore")


class _MpfrArith:
    """The reference engine: gmpy2 ``mpfr`` values in NumPy object arrays, every operation
    rounded by MPFR in the format's context (precision, exponent range, subnormals)."""

    kind = "mpfr"

    def __init__(self, fmt: FloatFormat):
        import gmpy2
        import numpy as np

        self.g, self.np, self.fmt = gmpy2, np, fmt
        self.ctx = fmt.context()  # evaluation
        self._cctx = fmt.context()  # conversions (a context object cannot be entered twice)
        self._cache: Dict[Fraction, Any] = {}
        with self._cctx:
            self.zero = gmpy2.mpfr(0)
            self.nan = gmpy2.mpfr("nan")
        self._relu = np.frompyfunc(self._relu1, 1, 1)
        self._fin = np.frompyfunc(gmpy2.is_finite, 1, 1)
        self._isnan = np.frompyfunc(gmpy2.is_nan, 1, 1)
        self._max = np.frompyfunc(self._max1, 2, 1)
        self._exp = np.frompyfunc(gmpy2.exp, 1, 1)
        self._exp2 = np.frompyfunc(gmpy2.exp2, 1, 1)

    def _relu1(self, x):
        return x if (x > 0 or self.g.is_nan(x)) else self.zero

    def _max1(self, a, b):
        if self.g.is_nan(a) or self.g.is_nan(b):
            return self.nan
        return a if a >= b else b

    def const(self, q: Fraction):
        v = self._cache.get(q)
        if v is None:
            with self._cctx:
                v = self._cache[q] = self.g.mpfr(self.g.mpq(q.numerator, q.denominator))
        return v

    def array(self, rows):
        np = self.np
        rows = [list(r) for r in rows]
        out = np.empty((len(rows), len(rows[0]) if rows else 0), dtype=object)
        for i, r in enumerate(rows):
            for j, x in enumerate(r):
                out[i, j] = self.const(Fraction(x))
        return out

    def mul(self, a, b):
        return a * b

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def div(self, a, b):
        return a / b

    def exp(self, a):
        return self._exp(a)

    def exp2(self, a):
        return self._exp2(a)

    def relu(self, a):
        return self._relu(a)

    def isfinite(self, a):
        return self._fin(a).astype(bool)

    def isnan(self, a):
        return self._isnan(a).astype(bool)

    def maximum(self, a, b):
        return self._max(a, b)

    def zeros(self, shape):
        out = self.np.empty(shape, dtype=object)
        out.fill(self.zero)
        return out

    def nan_like(self, a):
        out = self.np.empty(self.np.shape(a), dtype=object)
        out.fill(self.nan)
        return out

    def where(self, cond, a, b):
        return self.np.where(cond, a, b)

    def eq(self, a, b):
        r = a == b
        return r.astype(bool) if hasattr(r, "astype") else r

    def to_fraction(self, x) -> Optional[Fraction]:
        if not self.g.is_finite(x):
            return None
        p, q = x.as_integer_ratio()
        return Fraction(int(p), int(q))

    def affine(self, W, b, H):
        """Same numbers as the dense left-to-right sum: a zero weight only matters through
        0·(±inf or NaN) = NaN, which is applied afterwards (NaN absorbs everything)."""
        np = self.np
        m_out, m_in = W.shape
        T = H.shape[1]
        out = np.empty((m_out, T), dtype=object)
        finite = None
        for i in range(m_out):
            s, zj = None, []
            for j in range(m_in):
                w = W[i, j]
                if not w:
                    zj.append(j)
                    continue
                t = H[j] * w
                s = t if s is None else s + t
            if s is None:
                s = self.zeros(T)
            if zj:
                if finite is None:
                    finite = self.isfinite(H)
                bad = ~finite[zj].all(axis=0)
                if bad.any():
                    s = np.array(s, dtype=object)
                    s[bad] = self.nan
            if b is not None:
                s = s + b[i]
            out[i] = s
        return out

    def context(self):
        return self.ctx

    def errstate(self):
        import contextlib

        return contextlib.nullcontext()


def _needs_mpfr(model) -> bool:
    from ..model.layers import Attention

    return any(isinstance(l, Attention) and l.kind not in ("uniform", "hardmax") for l in model.layers)


def make_arith(fmt: FloatFormat, model=None, engine: str = "auto"):
    """The evaluation engine for a format: ``numpy`` (named formats, no softmax) or ``mpfr``."""
    if engine == "auto":
        engine = "numpy" if fmt.name in FORMATS and (model is None or not _needs_mpfr(model)) else "mpfr"
    if engine == "numpy":
        if fmt.name not in FORMATS:
            raise SweepError(f"the numpy engine only handles {', '.join(NAMED_FORMATS)}")
        if model is not None and _needs_mpfr(model):
            raise SweepError("softmax attention needs the mpfr engine (correctly rounded exp)")
        return _NumpyArith(fmt)
    if engine == "mpfr":
        return _MpfrArith(fmt)
    raise SweepError(f"unknown float engine {engine!r}; use auto, numpy or mpfr")


@dataclass
class FloatResult:
    outputs: list  # per example: a column (or list of columns) of Fractions, None for a non-finite entry
    format: str
    engine: str
    first_nonfinite_layer: Optional[int]
    weights_nonfinite: int
    weights_zeroed: int


def _matrix_cache(ar):
    cache: Dict[int, Any] = {}
    keep = []

    def get(M):
        k = id(M)
        if k not in cache:
            keep.append(M)
            cache[k] = ar.array(M)
        return cache[k]

    def getv(v):
        if v is None:
            return None
        k = id(v)
        if k not in cache:
            keep.append(v)
            cache[k] = ar.array([v])[0]
        return cache[k]

    return get, getv


def _key_plan(L: int, layer) -> List[Tuple[int, List[int]]]:
    queries = range(L) if layer.query == "all" else [L - 1]
    plan = []
    for j in queries:
        keys = [k for k in range(L) if not (layer.keys == "others" and k == j)]
        if not keys:
            raise SweepError("attention with keys='others' needs sequences of length at least 2")
        plan.append((j, keys))
    return plan


def _attention_group(ar, layer, Z, getm):
    """One attention layer on S sequences of equal length L: Z has shape (m, S, L)."""
    np = ar.np
    m, S, L = Z.shape
    plan = _key_plan(L, layer)
    nq = len(plan)
    flat = Z.reshape(m, S * L)
    outs = [Z[:, :, j] if layer.residual else ar.zeros((layer.m_out, S)) for j, _ in plan]
    qcols = [j for j, _ in plan]
    recips: Dict[int, Any] = {}
    for h in layer.heads:
        V = ar.affine(getm(h.WV), None, flat).reshape(-1, S, L)
        if layer.kind != "uniform":
            K = ar.affine(getm(h.WK), None, flat).reshape(-1, S, L)
            Q = ar.affine(getm(h.WQ), None, Z[:, :, qcols].reshape(m, S * nq)).reshape(-1, S, nq)
        for qi, (j, keys) in enumerate(plan):
            if layer.kind == "uniform":
                p = [ar.const(Fraction(1, len(keys)))] * len(keys)
            else:
                scores = []
                for k in keys:
                    s = ar.mul(K[0, :, k], Q[0, :, qi])
                    for c in range(1, K.shape[0]):
                        s = ar.add(s, ar.mul(K[c, :, k], Q[c, :, qi]))
                    scores.append(s)
                top = scores[0]
                for s in scores[1:]:
                    top = ar.maximum(top, s)
                if layer.kind == "hardmax":
                    eqs = [ar.eq(s, top) for s in scores]
                    cnt = sum(e.astype(np.int64) for e in eqs)
                    w = ar.zeros(S)
                    for c in set(int(x) for x in cnt.tolist()):
                        if c:
                            if c not in recips:
                                recips[c] = ar.const(Fraction(1, c))
                            w = ar.where(cnt == c, recips[c], w)
                    nan = ar.isnan(top)
                    p = [ar.where(nan, ar.nan_like(w), ar.where(e, w, ar.zeros(S))) for e in eqs]
                elif layer.kind in ("softmax", "softmax2"):
                    ex = ar.exp if layer.kind == "softmax" else ar.exp2
                    es = [ex(ar.sub(s, top)) for s in scores]
                    Zs = es[0]
                    for e in es[1:]:
                        Zs = ar.add(Zs, e)
                    p = [ar.div(e, Zs) for e in es]
                else:
                    raise SweepError(f"no floating-point rule for attention kind {layer.kind!r}")
            avg = None
            for pk, k in zip(p, keys):
                t = ar.mul(pk, V[:, :, k])
                avg = t if avg is None else ar.add(avg, t)
            o = ar.affine(getm(h.WO), None, avg)
            outs[qi] = ar.add(outs[qi], o)
    return np.stack(outs, axis=2)  # (m_out, S, nq)


def float_forward(model, inputs, fmt, engine: str = "auto") -> FloatResult:
    """Evaluate ``model`` with every operation rounded in ``fmt`` (see `OPERATION_ORDER`)."""
    from ..model.layers import Affine, Attention, Embed, FeedForward

    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    ar = make_arith(fmt, model, engine)
    np = ar.np
    getm, getv = _matrix_cache(ar)
    wn = wz = 0
    for w in set(_weights(model.layers)):
        v = ar.to_fraction(ar.const(w))
        if v is None:
            wn += 1
        elif w and not v:
            wz += 1
    lengths = [len(X) for X in inputs]
    first_bad = None
    with ar.context(), ar.errstate():
        layers = list(model.layers)
        if model.input_type == "tokens":
            emb = layers[0]
            E = getm(emb.E)
            ids = np.array([t for X in inputs for t in X], dtype=np.int64)
            H = E[ids].T
            if emb.P is not None:
                P = getm(emb.P)
                pos = np.array([s for X in inputs for s in range(len(X))], dtype=np.int64)
                H = ar.add(H, P[pos].T)
            start = 1
        else:
            cols = [tok for X in inputs for tok in X]
            H = ar.array(cols).T if cols else ar.zeros((model.input_dim, 0))
            start = 0
        if not ar.isfinite(H).all():
            first_bad = 0
        for i in range(start, len(layers)):
            layer = layers[i]
            if isinstance(layer, Affine):
                H = ar.affine(getm(layer.W), getv(layer.b), H)
                if layer.relu:
                    H = ar.relu(H)
            elif isinstance(layer, FeedForward):
                h = ar.relu(ar.affine(getm(layer.W1), getv(layer.b1), H))
                t = ar.affine(getm(layer.W2), getv(layer.b2), h)
                H = ar.add(H, t) if layer.residual else t
            elif isinstance(layer, Attention):
                H, lengths = _float_attention(ar, layer, H, lengths, getm)
            elif isinstance(layer, Embed):
                raise SweepError(f"layer {i}: an embed layer must come first")
            else:
                raise SweepError(f"layer {i}: no floating-point rule for {type(layer).__name__}")
            if first_bad is None and not ar.isfinite(H).all():
                first_bad = i
        outputs, pos = [], 0
        tf = ar.to_fraction
        for L in lengths:
            if model.readout == "last":
                col = [tf(x) for x in H[:, pos + L - 1]]
                outputs.append(None if any(x is None for x in col) else col)
            else:
                cs = []
                for c in range(pos, pos + L):
                    col = [tf(x) for x in H[:, c]]
                    cs.append(None if any(x is None for x in col) else col)
                outputs.append(cs)
            pos += L
    return FloatResult(outputs, fmt.name, ar.kind, first_bad, wn, wz)


def _float_attention(ar, layer, H, lengths, getm):
    np = ar.np
    offs = [0]
    for L in lengths:
        offs.append(offs[-1] + L)
    blocks: Dict[int, Any] = {}
    new_lengths = []
    for L in sorted(set(lengths)):
        seqs = [s for s, l in enumerate(lengths) if l == L]
        idx = np.array([[offs[s] + k for k in range(L)] for s in seqs], dtype=np.int64)
        O = _attention_group(ar, layer, H[:, idx], getm)  # (m_out, S, nq)
        for r, s in enumerate(seqs):
            blocks[s] = O[:, r, :]
    for s, L in enumerate(lengths):
        new_lengths.append(blocks[s].shape[1])
    out = np.concatenate([blocks[s] for s in range(len(lengths))], axis=1) if lengths else H
    return out, new_lengths


def evaluate_format(model, dataset, judge: Judge, fmt, engine: str = "auto") -> Dict[str, Any]:
    """Evaluate in a floating-point format and tally both criteria."""
    res = float_forward(model, dataset.inputs, fmt, engine)
    t = _tally(judge, res.outputs)
    nonfinite = sum(1 for o in res.outputs
                    if o is None or (model.readout == "all" and any(c is None for c in o)))
    t.update({"engine": res.engine, "first_nonfinite_layer": res.first_nonfinite_layer,
              "weights_nonfinite": res.weights_nonfinite, "weights_zeroed": res.weights_zeroed,
              "nonfinite_outputs": nonfinite, "n": len(dataset)})
    return t
