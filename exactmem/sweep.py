"""Bit-precision sweeps: how many bits does a construction really need? (``docs/precision.md``)

A sweep runs over *proof files* (``exactmem.proof``): every theorem ``build(params, seed)``
gives a model, a dataset and claims, so every construction with a proof file is sweepable.
A sweep point is (proof file, theorem, parameters — an instance's, optionally overridden —,
seed, task). Tasks:

``quant-float`` / ``quant-fixed`` — **weight quantization**. Every stored weight is rounded
(to nearest, ties to even) to ``b`` significant bits (floating-style, unbounded exponent,
:func:`exactmem.numbers.round_to_bits`) or to ``b`` fractional bits (fixed point: a multiple
of 2^-b). The quantized network is evaluated *exactly* (:func:`exactmem.model.forward`;
balls, decided rigorously, for softmax) and every example is judged by two criteria:

* ``exact``: the construction's own criterion — output equal to the label (identity
  decoding), within the certificate's ``error_bound`` if the theorem states one, or strict
  argmax (argmax decoding);
* ``nearest``: decoding by rounding to the nearest label — each output component strictly
  closer to its label than to any other label value occurring at that component in the
  dataset (identity decoding; for argmax decoding it is the same as ``exact``).

The minimal ``b`` per criterion is found by bisection between a failing ``b`` and one that
works (for dyadic weights: the number of bits at which quantization is the identity), and
the monotonicity the bisection assumes is *checked*: ``neighbours`` values on each side of
the result are evaluated too and every ``b`` that contradicts monotonicity is reported as a
violation. Optionally the quantized network at the minimum (and one bit below) is written as
a certificate and handed to the independent checker.

``arith`` — **arithmetic precision**. The exact model's weights and inputs are rounded to a
floating-point format and the network is evaluated with every operation rounded (to
nearest, ties to even) in that format: the named IEEE-style formats bfloat16, float16,
float32, float64 (bounded exponent range: overflow gives ±inf, gradual underflow to
subnormals, NaN propagates) and, with ``arith_min``, the smallest mantissa width ``b`` with
an unbounded exponent at which every example still comes out right. The order of operations
is fixed (see :data:`OPERATION_ORDER`); the reference engine is MPFR (gmpy2 contexts with
the format's precision, exponent range and subnormals; ``exp`` correctly rounded), a NumPy
engine computes the same numbers for softmax-free models and is tested against it.

Results go to ``OUT/points.jsonl`` (one line per finished point; a re-run skips points
already there, so an interrupted sweep resumes and gives identical results) and
``OUT/sweep.json`` (all points, with seeds and versions), plus the CSV, Markdown and LaTeX
tables of :mod:`exactmem.report`. ``workers > 1`` runs points in separate processes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .numbers import least_true, round_to_bits

FORMAT = "exactmem-sweep"
VERSION = 1
TASKS = ("quant-float", "quant-fixed", "arith")
MODELS = {"float": "quant-float", "fixed": "quant-fixed", "arith": "arith"}
MAX_FAILING = 20  # failing example indices kept per evaluation

OPERATION_ORDER = """\
* weights and inputs are first rounded to the format (correctly rounded from the exact rationals);
* affine map W z + b: s = fl(W[i,0]·z[0]); s = fl(s + fl(W[i,j]·z[j])) for j = 1, 2, … (every
  stored entry, zeros included: 0·inf = NaN); then s = fl(s + b[i]); then ReLU (NaN stays NaN);
* feed-forward layer (eq. (3)): h = ReLU(W1 z + b1), t = W2 h + b2 as above, output fl(z + t)
  with a residual, t without;
* embedding: fl(E[t] + P[s]);
* attention (eq. (2)), per head: v = WV z, k = WK z, q = WQ z (affine maps without bias),
  score s_k = Σ_c fl(k_c·q_c) summed left to right; weights: uniform fl(1/|K|); hardmax
  fl(1/|I|) on the keys whose score equals the maximum; softmax e_k = fl(exp(fl(s_k − max))),
  Z = Σ e_k left to right, p_k = fl(e_k / Z) (base 2 for ``softmax2``); head output
  WO(Σ_k fl(p_k·v_k)) summed over the keys in order; layer output fl(fl(z + o_1) + o_2) … over
  the heads (starting from 0 without a residual);
* fl = round to nearest, ties to even, in the format (MPFR semantics; no fused multiply-add)."""


class SweepError(ValueError):
    """A sweep specification is invalid (unknown theorem, instance, format, malformed --param)."""


# ----------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: ``precision`` significand bits (with the leading bit);
    exponent range in MPFR's convention (x = 0.1b₂b₃…·2^e, emin ≤ e ≤ emax; ``None``:
    unbounded, no overflow or underflow)."""

    name: str
    precision: int
    emin: Optional[int] = None
    emax: Optional[int] = None

    @property
    def bounded(self) -> bool:
        return self.emax is not None

    def context(self):
        import gmpy2

        if self.bounded:
            return gmpy2.context(precision=self.precision, emin=self.emin, emax=self.emax, subnormalize=True,
                                 round=gmpy2.RoundToNearest)
        return gmpy2.context(precision=self.precision, emin=gmpy2.get_emin_min(), emax=gmpy2.get_emax_max(),
                             subnormalize=False, round=gmpy2.RoundToNearest)

    @property
    def max_finite(self) -> Optional[Fraction]:
        if not self.bounded:
            return None
        return Fraction((1 << self.precision) - 1) * Fraction(2) ** (self.emax - self.precision)

    @property
    def min_subnormal(self) -> Optional[Fraction]:
        return None if not self.bounded else Fraction(2) ** (self.emin - 1)


FORMATS: Dict[str, FloatFormat] = {
    "bfloat16": FloatFormat("bfloat16", 8, -132, 128),
    "float16": FloatFormat("float16", 11, -23, 16),
    "float32": FloatFormat("float32", 24, -148, 128),
    "float64": FloatFormat("float64", 53, -1073, 1024),
}
NAMED_FORMATS = tuple(FORMATS)


def mantissa_format(b: int) -> FloatFormat:
    """b-bit significand, unbounded exponent (the ``arith_min`` search)."""
    return FloatFormat(f"mpfr{b}", int(b))


def get_format(name: str) -> FloatFormat:
    if name in FORMATS:
        return FORMATS[name]
    m = re.fullmatch(r"mpfr(\d+)", name)
    if m and int(m.group(1)) >= 2:
        return mantissa_format(int(m.group(1)))
    raise SweepError(f"unknown format {name!r}; use {', '.join(NAMED_FORMATS)} or mpfrB (B >= 2 bits, unbounded "
                     f"exponent)")


# ----------------------------------------------------------------------------- weight quantization


def quantize_value(x: Fraction, mode: str, b: int) -> Fraction:
    """Round x to b significant bits (``float``) or to a multiple of 2^-b (``fixed``); nearest, ties to even."""
    if mode == "float":
        return round_to_bits(x, b, "nearest")
    if mode == "fixed":
        s = x * (1 << b) if b >= 0 else x / (1 << -b)
        q = round(s)  # Fraction.__round__: nearest, ties to even
        return Fraction(q, 1 << b) if b >= 0 else Fraction(q * (1 << -b))
    raise SweepError(f"unknown quantization mode {mode!r}; use float or fixed")


def _map_weights(obj, f):
    """Apply f to every Fraction stored in a model (layers are dataclasses; matrices tuples)."""
    if isinstance(obj, Fraction):
        return f(obj)
    if isinstance(obj, tuple):
        return tuple(_map_weights(x, f) for x in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for fld in dataclasses.fields(obj):
            if not fld.init:
                continue
            v = getattr(obj, fld.name)
            if isinstance(v, (tuple, Fraction)) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
                changes[fld.name] = _map_weights(v, f)
        return dataclasses.replace(obj, **changes)
    return obj


def _weights(obj) -> Iterable[Fraction]:
    if isinstance(obj, Fraction):
        yield obj
    elif isinstance(obj, tuple):
        for x in obj:
            yield from _weights(x)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for fld in dataclasses.fields(obj):
            if fld.init:
                yield from _weights(getattr(obj, fld.name))


def quantize_model(model, mode: str, b: int):
    """The model with every weight rounded (see :func:`quantize_value`); structure unchanged."""
    cache: Dict[Fraction, Fraction] = {}

    def f(x):
        q = cache.get(x)
        if q is None:
            q = cache[x] = quantize_value(x, mode, b)
        return q

    return _map_weights(model, f)


def significant_bits(x: Fraction) -> Optional[int]:
    """Bits of the odd significand of a dyadic x (0 for 0); None if x is not dyadic."""
    q = x.denominator
    if q & (q - 1):
        return None
    p = abs(x.numerator)
    if p == 0:
        return 0
    return (p >> ((p & -p).bit_length() - 1)).bit_length()


def fraction_bits(x: Fraction) -> Optional[int]:
    """k with denominator 2^k (0 for integers); None if x is not dyadic."""
    q = x.denominator
    return None if q & (q - 1) else q.bit_length() - 1


def identity_bits(model, mode: str) -> Optional[int]:
    """Smallest b at which quantization leaves every weight unchanged (None: some weight is
    not dyadic, no b does)."""
    fn = significant_bits if mode == "float" else fraction_bits
    best = 1 if mode == "float" else 0
    for w in set(_weights(model)):
        k = fn(w)
        if k is None:
            return None
        best = max(best, k)
    return best


def storage_bits(model, mode: str, b: int) -> Dict[str, int]:
    """Bits per weight of a uniform storage format holding the quantized weights.

    ``float``: 1 sign + b significand + E exponent bits, E = 1 + LEN(max |e|) over the
    nonzero weights' binary exponents e = ⌊log₂|w|⌋ (a signed exponent field covering them).
    ``fixed``: 1 sign + LEN(max |w·2^b|) (the integer part and the b fractional bits)."""
    ws = [w for w in set(_weights(model)) if w]
    if mode == "float":
        emax = 0
        for w in ws:
            p, q = abs(w.numerator), w.denominator
            e = p.bit_length() - q.bit_length()
            if Fraction(p, q) < Fraction(2) ** e:  # ⌊log₂|w|⌋ exactly
                e -= 1
            emax = max(emax, abs(e))
        E = 1 + emax.bit_length()
        return {"per_weight": 1 + b + E, "exponent_bits": E}
    top = max((abs(w * (1 << b)).numerator for w in ws), default=0)
    return {"per_weight": 1 + top.bit_length(), "exponent_bits": 0}


# ----------------------------------------------------------------------------- judging outputs


def _tri_gt(v, t: Fraction) -> Optional[bool]:
    """v > t: True/False, None if a ball cannot decide (v: Fraction, None = non-finite, arb)."""
    if v is None:
        return False
    if isinstance(v, Fraction):
        return v > t
    from flint import arb, fmpq

    ta = arb(fmpq(t.numerator, t.denominator))
    if v > ta:
        return True
    if v <= ta:
        return False
    return None


def _tri_lt(v, t: Fraction) -> Optional[bool]:
    if v is None:
        return False
    if isinstance(v, Fraction):
        return v < t
    from flint import arb, fmpq

    ta = arb(fmpq(t.numerator, t.denominator))
    if v < ta:
        return True
    if v >= ta:
        return False
    return None


def _all3(vals) -> Optional[bool]:
    vals = list(vals)
    if any(v is False for v in vals):
        return False
    if all(v is True for v in vals):
        return True
    return None


class Judge:
    """Decides, for one example's output, the ``exact`` and ``nearest`` criteria.

    Output entries may be Fractions (exact or a finite float's exact value), ``None`` (a
    non-finite float: always wrong) or python-flint ``arb`` balls (undecided when the ball
    straddles a threshold)."""

    def __init__(self, model, dataset, error_bound=None):
        self.decode, self.readout = model.decode, model.readout
        self.labels = list(dataset.labels)
        self.eps = None if error_bound is None else Fraction(error_bound)
        self.values: Dict[int, List[Fraction]] = {}
        if self.decode == "identity":
            vals: Dict[int, set] = {}
            for lab in self.labels:
                for col in self._label_cols(lab):
                    for c, y in enumerate(col):
                        vals.setdefault(c, set()).add(Fraction(y))
            self.values = {c: sorted(v) for c, v in vals.items()}
        self.index = {c: {y: i for i, y in enumerate(v)} for c, v in self.values.items()}

    def _label_cols(self, lab):
        return list(lab) if self.readout == "all" else [lab]

    def _pairs(self, out, e):
        lab = self.labels[e]
        cols = list(out) if self.readout == "all" else [out]
        return list(zip(cols, self._label_cols(lab)))

    def _argmax(self, col, k) -> Optional[bool]:
        if col is None or any(x is None for x in col):
            return False
        res = []
        for j, x in enumerate(col):
            if j == k:
                continue
            if isinstance(x, Fraction) and isinstance(col[k], Fraction):
                res.append(col[k] > x)
            else:
                from flint import arb, fmpq

                a = col[k] if not isinstance(col[k], Fraction) else arb(fmpq(col[k].numerator, col[k].denominator))
                c = x if not isinstance(x, Fraction) else arb(fmpq(x.numerator, x.denominator))
                res.append(True if a > c else (False if a <= c else None))
        return _all3(res)

    def _equal(self, x, y: Fraction) -> Optional[bool]:
        if x is None:
            return False
        if isinstance(x, Fraction):
            return x == y
        gt, lt = _tri_gt(x, y), _tri_lt(x, y)
        if gt or lt:
            return False
        if x.is_exact():  # an exact ball equal to y
            return True
        return None  # a ball containing y: equality cannot be decided

    def _within(self, x, y: Fraction) -> Optional[bool]:
        if x is None:
            return False
        lo, hi = _tri_lt(x, y - self.eps), _tri_gt(x, y + self.eps)
        return _all3([None if lo is None else not lo, None if hi is None else not hi])

    def exact(self, out, e) -> Optional[bool]:
        res = []
        for col, lab in self._pairs(out, e):
            if self.decode == "argmax":
                res.append(self._argmax(col, lab))
            elif col is None:
                res.append(False)
            elif self.eps is None:
                res.append(_all3(self._equal(x, Fraction(y)) for x, y in zip(col, lab)))
            else:
                res.append(_all3(self._within(x, Fraction(y)) for x, y in zip(col, lab)))
        return _all3(res)

    def nearest(self, out, e) -> Optional[bool]:
        if self.decode == "argmax":
            return self.exact(out, e)
        res = []
        for col, lab in self._pairs(out, e):
            if col is None:
                res.append(False)
                continue
            for c, (x, y) in enumerate(zip(col, lab)):
                vals, where = self.values[c], self.index[c]
                y = Fraction(y)
                i = where[y]
                if x is None:
                    res.append(False)
                    continue
                conds = []
                if i > 0:
                    conds.append(_tri_gt(x, (vals[i - 1] + y) / 2))
                if i + 1 < len(vals):
                    conds.append(_tri_lt(x, (vals[i + 1] + y) / 2))
                res.append(_all3(conds))
        return _all3(res)


def _tally(judge: Judge, outputs) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for crit in ("exact", "nearest"):
        fn = getattr(judge, crit)
        fail, und = [], 0
        for e, o in enumerate(outputs):
            v = fn(o, e)
            if v is False:
                fail.append(e)
            elif v is None:
                und += 1
        out[crit] = {"fail": len(fail), "undecided": und, "failing": fail[:MAX_FAILING]}
    return out


def _ok(ev: Dict[str, Any], crit: str) -> bool:
    r = ev[crit]
    return r["fail"] == 0 and r["undecided"] == 0


# ----------------------------------------------------------------------------- exact evaluation


def exact_outputs(model, inputs, engine: str = "auto", prec: int = 128, max_prec: int = 4096):
    """Exact (or, after softmax, ball) outputs; (outputs, precision used, error message or None)."""
    from .model.forward import Undecided, forward
    from .model.layers import ModelError

    p = prec
    while True:
        try:
            res = forward(model, inputs, backend=engine, prec=p)
            return res.outputs, (None if res.exact else p), None, res.exact
        except Undecided:
            if p >= max_prec:
                return None, p, f"undecided at precision {p}", False
            p *= 2
        except ModelError as e:  # e.g. a softmax2 score that quantization made non-integer
            return None, p, f"{type(e).__name__}: {e}", False


def evaluate_exact(model, dataset, judge: Judge, engine: str = "auto", prec: int = 128,
                   max_prec: int = 4096) -> Dict[str, Any]:
    """Evaluate exactly and tally both criteria (balls: doubling the precision while undecided)."""
    p = prec
    while True:
        outs, used, err, exact = exact_outputs(model, dataset.inputs, engine, p, max_prec)
        if outs is None:
            n = len(dataset)
            t = {c: {"fail": 0, "undecided": n, "failing": []} for c in ("exact", "nearest")}
            t["error"] = err
            t["precision"] = used
            return t
        t = _tally(judge, outs)
        if exact or (t["exact"]["undecided"] == 0 and t["nearest"]["undecided"] == 0) or used >= max_prec:
            if not exact:
                t["precision"] = used
            return t
        p = used * 2


# ----------------------------------------------------------------------------- minimal-b search


def search_minimal(evaluate: Callable[[int], Dict[str, Any]], crit: str, lowest: int, identity: Optional[int],
                   cap: int, neighbours: int, cache: Dict[int, Dict[str, Any]], start: int = 8) -> Dict[str, Any]:
    """Smallest b in [lowest, cap] with every example right under ``crit``, by bisection.

    ``identity``: a b known to leave the model unchanged (then every larger b does too), or
    None (the search doubles b from ``start`` until it works or passes ``cap``; ``start``
    only saves evaluations, the result does not depend on it).
    ``cache`` maps b to evaluations and is shared between criteria. After the bisection,
    ``neighbours`` values on each side are evaluated; every evaluated b that contradicts
    monotonicity (a success below the minimum, a failure above it) is a violation."""

    def ok(b):
        if b not in cache:
            cache[b] = evaluate(b)
        return _ok(cache[b], crit)

    status, bmin = "found", None
    if ok(lowest):
        bmin = lowest
    else:
        lo, hi = lowest, None
        if identity is not None:
            if ok(identity):
                hi = identity
            else:
                status = "fails unquantized"
        else:
            b = max(lowest + 1, min(start, cap))
            while b <= cap:
                if ok(b):
                    hi = b
                    break
                lo = b
                b *= 2
            if hi is None and lo < cap and ok(cap):
                hi = cap
            if hi is None:
                status = f"none up to {cap}"
        if hi is not None:
            bmin = least_true(ok, lo, hi)
    if bmin is not None:
        for d in range(1, neighbours + 1):
            if bmin - 1 - d >= lowest:
                ok(bmin - 1 - d)
            ok(bmin + d)
    violations = []
    if bmin is not None:
        for b in sorted(cache):
            good = _ok(cache[b], crit)
            if b < bmin and good:
                violations.append({"b": b, "ok": True, "expected": False})
            elif b >= bmin and not good:
                violations.append({"b": b, "ok": False, "expected": True})
    elif status.startswith("fails"):
        violations = [{"b": b, "ok": True, "expected": False} for b in sorted(cache) if _ok(cache[b], crit)]
    return {"min_b": bmin, "status": status, "violations": violations}


# ----------------------------------------------------------------------------- floating-point evaluation


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
    from .model.layers import Attention

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
    """Evaluate ``model`` with every operation rounded in ``fmt`` (see :data:`OPERATION_ORDER`)."""
    from .model.layers import Affine, Attention, Embed, FeedForward

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


# ----------------------------------------------------------------------------- one point


def _measure_dict(model) -> Dict[str, int]:
    from .model.measure import measure

    return measure(model).as_dict()


def _label_entries(model, dataset) -> int:
    if model.readout == "all":
        return sum(len(lab) for lab in dataset.labels)
    return len(dataset.labels)


def information_bound(model, dataset, params) -> Dict[str, Any]:
    """N·log₂C with N the number of labels (per position for sequence-to-sequence) and C the
    ``C`` (or ``classes``) parameter if the instance has one, else the distinct label values."""
    import math

    n = _label_entries(model, dataset)
    C = params.get("C", params.get("classes"))
    src = "params"
    if not isinstance(C, int) or C < 1:
        vals = set()
        for lab in dataset.labels:
            for col in (lab if model.readout == "all" else [lab]):
                vals.add(tuple(col) if isinstance(col, (tuple, list)) else col)
        C, src = max(1, len(vals)), "distinct labels"
    return {"labels": n, "C": C, "C_from": src, "bits": n * math.log2(C) if C > 1 else 0.0}


def _claims_json(claims) -> List[Dict[str, str]]:
    return [c.to_json() for c in claims]


STRUCTURAL = ("n_examples", "width", "relu_depth", "attention_layers", "depth", "n_params")


def _certify_quantized(point, built, model_q, b, mode, out_dir) -> Dict[str, Any]:
    """Write the quantized model as a certificate (structural claims only) and check it."""
    from .certificate.checker import check_certificate, load_certificate
    from .certificate.writer import build_certificate, write_certificate
    from .model.forward import decode_output, forward
    from .model.layers import Attention

    ds = built.dataset
    res = forward(model_q, ds.inputs, backend=point.get("engine") or "auto")
    if res.exact:
        outputs = [decode_output(model_q, o) for o in res.outputs]
    else:
        outputs = list(ds.labels) if model_q.decode == "argmax" else [None] * len(ds)
    claims = [c for c in built.claims if c.quantity in STRUCTURAL]
    name = re.sub(r"[^A-Za-z0-9._=-]+", "_", f"{point['theorem']}.{_slug(point)}.s{point['seed']}.{mode}-b{b}")
    doc = build_certificate(point["theorem"], f"{_slug(point)} quantized {mode} b={b}", point["seed"], model_q, ds,
                            outputs, claims, error_bound=built.error_bound,
                            meta={"sweep": {"mode": mode, "b": b, "params": _jsonable(point["params"])}})
    rel = os.path.join("certificates", name + ".json.gz")
    path = write_certificate(doc, os.path.join(out_dir, rel))
    token_wise = not any(isinstance(l, Attention) for l in model_q.layers)
    if token_wise:
        from .certificate.fastcheck import check_certificate_fast as check
        checker = "fast"
    else:
        check, checker = check_certificate, "pure"
    v = check(load_certificate(path))
    return {"b": b, "path": rel, "verdict": v.status, "checker": checker, "witness": _jsonable(v.witness)}


def run_quant(point, built, mode: str, log=None) -> Dict[str, Any]:
    model, ds = built.model, built.dataset
    st = point["settings"]
    judge = Judge(model, ds, built.error_bound)
    engine = point.get("engine") or "auto"
    ident = identity_bits(model, mode)
    lowest = 1 if mode == "float" else 0
    cap = max(st["max_bits"], ident or 0)
    cache: Dict[int, Dict[str, Any]] = {}

    def evaluate(b):
        if ident is not None and b > ident:  # quantization is the identity from ident on: same model
            if ident not in cache:
                cache[ident] = evaluate(ident)
            return dict(cache[ident], b=b, same_as=ident)
        t0 = time.perf_counter()
        mq = quantize_model(model, mode, b)
        ev = evaluate_exact(mq, ds, judge, engine, st.get("prec", 128))
        m = _measure_dict(mq)
        ev.update({"b": b, "max_bits": m["max_bits"], "total_bits": m["total_bits"], "n_nonzero": m["n_nonzero"],
                   "storage": storage_bits(mq, mode, b)})
        if log:
            log(f"    {mode} b={b}: exact {ev['exact']['fail']} wrong, nearest {ev['nearest']['fail']} wrong "
                f"({time.perf_counter() - t0:.1f} s)")
        return ev

    for b in st.get("bits") or ():
        if b >= lowest and b not in cache:
            cache[b] = evaluate(b)
    crits = {c: search_minimal(evaluate, c, lowest, ident, cap, st["neighbours"], cache) for c in ("exact", "nearest")}
    for c, r in crits.items():
        if r["min_b"] is not None:
            ev = cache[r["min_b"]]
            r["at_min"] = {"max_bits": ev["max_bits"], "total_bits": ev["total_bits"], "n_nonzero": ev["n_nonzero"],
                           "storage_bits": ev["storage"]["per_weight"],
                           "exponent_bits": ev["storage"]["exponent_bits"]}
    if st.get("certify") and crits["exact"]["min_b"] is not None and point.get("out_dir"):
        b = crits["exact"]["min_b"]
        certs = [_certify_quantized(point, built, quantize_model(model, mode, b), b, mode, point["out_dir"])]
        if b - 1 >= lowest:
            certs.append(_certify_quantized(point, built, quantize_model(model, mode, b - 1), b - 1, mode,
                                            point["out_dir"]))
        crits["exact"]["certificates"] = certs
    evals = [cache[b] for b in sorted(cache)]
    return {"mode": mode, "identity_b": ident, "lowest_b": lowest, "cap": cap, "criteria": crits, "evals": evals}


def run_arith(point, built, log=None) -> Dict[str, Any]:
    model, ds = built.model, built.dataset
    st = point["settings"]
    judge = Judge(model, ds, built.error_bound)
    out: Dict[str, Any] = {"formats": {}}
    for name in st["formats"]:
        t0 = time.perf_counter()
        r = evaluate_format(model, ds, judge, get_format(name), st.get("float_engine", "auto"))
        out["formats"][name] = r
        if log:
            log(f"    {name}: exact {r['exact']['fail']}/{len(ds)} wrong ({r['engine']}, "
                f"{time.perf_counter() - t0:.1f} s)")
    if st.get("arith_min"):
        cache: Dict[int, Dict[str, Any]] = {}

        def evaluate(b):
            t0 = time.perf_counter()
            r = evaluate_format(model, ds, judge, mantissa_format(b), "mpfr")
            r["b"] = b
            if log:
                log(f"    mantissa b={b}: exact {r['exact']['fail']} wrong ({time.perf_counter() - t0:.1f} s)")
            return r

        hint = max(8, identity_bits(model, "float") or 8)  # where the doubling starts (speed only)
        crits = {c: search_minimal(evaluate, c, 2, None, st["max_bits"], st["neighbours"], cache, start=hint)
                 for c in ("exact", "nearest")}
        out["mantissa"] = {"criteria": crits, "evals": [cache[b] for b in sorted(cache)]}
    return out


# ----------------------------------------------------------------------------- points, keys, grid


def _jsonable(x):
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, float):
        return x
    if isinstance(x, Fraction):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in x]
    return str(x)


def _canon(x) -> str:
    return json.dumps(_jsonable(x), sort_keys=True, separators=(",", ":"))


def point_key(point: Dict[str, Any]) -> str:
    ident = {k: point[k] for k in ("proof_sha", "theorem", "params", "seed", "task", "settings")}
    return hashlib.sha256(_canon(ident).encode()).hexdigest()[:24]


def _slug(point) -> str:
    ov = point.get("overrides") or {}
    if not ov:
        return point["instance"]
    return point["instance"] + "@" + ",".join(f"{k}={_jsonable(v)}" for k, v in ov.items())


def file_sha(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


_NUM = re.compile(r"^[+-]?\d+$")


def parse_value(s: str):
    """A --param value: int (also 1e4, 10^4, 2^10), true/false, none, or the string itself."""
    t = s.strip()
    if _NUM.match(t):
        return int(t)
    m = re.fullmatch(r"(\d+)\^(\d+)", t)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    m = re.fullmatch(r"(\d+)e(\d+)", t, re.I)
    if m:
        return int(m.group(1)) * 10 ** int(m.group(2))
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    if t.lower() == "none":
        return None
    return t


def parse_values(text: str) -> List[Any]:
    """Comma-separated values; ``a:b`` (inclusive) and ``a:b:step`` integer ranges."""
    out: List[Any] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if ":" in part:
            bits = [parse_value(x) for x in part.split(":")]
            if len(bits) not in (2, 3) or not all(isinstance(x, int) and not isinstance(x, bool) for x in bits):
                raise SweepError(f"bad range {part!r}: use a:b or a:b:step with integers")
            step = bits[2] if len(bits) == 3 else 1
            if step <= 0:
                raise SweepError(f"bad range {part!r}: the step must be positive")
            out.extend(range(bits[0], bits[1] + 1, step))
        else:
            out.append(parse_value(part))
    if not out:
        raise SweepError(f"no values in {text!r}")
    return out


def parse_param(text: str) -> Tuple[str, List[Any]]:
    if "=" not in text:
        raise SweepError(f"--param needs KEY=V1,V2,...; got {text!r}")
    k, v = text.split("=", 1)
    k = k.strip()
    if not k:
        raise SweepError(f"--param needs a key: {text!r}")
    return k, parse_values(v)


@dataclass
class SweepSpec:
    """What to sweep. ``params``: list of (key, values) overriding the base instances'
    parameters (Cartesian product); ``instances``: base instance names (default: every
    instance of ``size``, or with ``params`` the first one of ``size``)."""

    proof: str
    theorems: Sequence[str] = ()
    only: Optional[str] = None
    instances: Sequence[str] = ()
    size: str = "small"
    params: Sequence[Tuple[str, Sequence[Any]]] = ()
    unset: Sequence[str] = ()
    seeds: Sequence[int] = (0,)
    models: Sequence[str] = ("float", "fixed", "arith")
    formats: Sequence[str] = NAMED_FORMATS
    arith_min: bool = False
    neighbours: int = 2
    max_bits: int = 4096
    bits: Sequence[int] = ()
    certify: bool = False
    engine: str = "auto"
    float_engine: str = "auto"
    prec: int = 128

    def settings(self, task: str) -> Dict[str, Any]:
        if task == "arith":
            s = {"formats": list(self.formats), "arith_min": bool(self.arith_min)}
            if self.arith_min:
                s.update({"neighbours": self.neighbours, "max_bits": self.max_bits})
            return s
        return {"neighbours": self.neighbours, "max_bits": self.max_bits, "bits": sorted(set(self.bits)),
                "certify": bool(self.certify), "prec": self.prec}


def plan(spec: SweepSpec) -> List[Dict[str, Any]]:
    """Every point of the sweep, in grid order."""
    from .proof import load_proof_file

    for m in spec.models:
        if m not in MODELS:
            raise SweepError(f"unknown precision model {m!r}; use {', '.join(MODELS)}")
    for f in spec.formats:
        get_format(f)
    if spec.neighbours < 0 or spec.max_bits < 1:
        raise SweepError("--neighbours must be >= 0 and --max-bits >= 1")
    theorems = load_proof_file(spec.proof)
    names = [t.name for t in theorems]
    for t in spec.theorems:
        if t not in names:
            raise SweepError(f"{spec.proof} has no theorem {t!r}; it has {', '.join(names)}")
    sel = [t for t in theorems if (not spec.theorems or t.name in spec.theorems)
           and (spec.only is None or spec.only in t.name)]
    if not sel:
        raise SweepError(f"no theorem of {spec.proof} matches")
    sha = file_sha(spec.proof)
    proof = os.path.relpath(os.path.abspath(spec.proof)) if not os.path.isabs(spec.proof) else spec.proof
    keys = [k for k, _ in spec.params]
    combos = list(itertools.product(*[list(v) for _, v in spec.params])) if spec.params else [()]
    points = []
    for t in sel:
        if spec.instances:
            bases = [i for i in t.instances if i.name in spec.instances]
            if not bases:
                if spec.theorems or len(sel) == 1:
                    raise SweepError(f"theorem {t.name} has no instance {', '.join(spec.instances)}; it has "
                                     f"{', '.join(i.name for i in t.instances)}")
                continue
        else:
            bases = t.instances_for(spec.size)
            if spec.params:
                bases = bases[:1]
        for inst in bases:
            for combo in combos:
                ov = dict(zip(keys, combo))
                params = dict(inst.params)
                for k in spec.unset:
                    params.pop(k, None)
                params.update(ov)
                for seed in spec.seeds:
                    for m in spec.models:
                        task = MODELS[m]
                        p = {"proof": proof, "proof_sha": sha, "theorem": t.name, "instance": inst.name,
                             "overrides": ov, "unset": list(spec.unset), "params": params, "seed": int(seed),
                             "task": task, "settings": spec.settings(task),
                             "engine": inst.engine if spec.engine == "auto" else spec.engine}
                        if task == "arith":
                            p["settings"]["float_engine"] = spec.float_engine
                            if spec.float_engine == "auto":
                                del p["settings"]["float_engine"]
                        p["key"] = point_key(p)
                        points.append(p)
    if not points:
        raise SweepError(f"{spec.proof}: no instances for --size {spec.size}")
    seen, uniq = set(), []
    for p in points:
        if p["key"] not in seen:
            seen.add(p["key"])
            uniq.append(p)
    return uniq


# ----------------------------------------------------------------------------- running a point


_VERSIONS: Optional[Dict[str, Any]] = None


def versions() -> Dict[str, Any]:
    """Versions of exactmem (and its git commit), Python and the numeric libraries."""
    global _VERSIONS
    if _VERSIONS is None:
        from . import __version__

        v: Dict[str, Any] = {"exactmem": __version__, "python": platform.python_version()}
        try:
            import numpy

            v["numpy"] = numpy.__version__
        except Exception:  # pragma: no cover
            pass
        try:
            import gmpy2

            v["gmpy2"] = gmpy2.version()
            v["mpfr"] = gmpy2.mpfr_version()
        except Exception:  # pragma: no cover
            pass
        try:
            import flint

            v["python-flint"] = flint.__version__
        except Exception:  # pragma: no cover
            pass
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        try:
            head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
            if head.returncode == 0:
                dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                       capture_output=True, text=True, timeout=10)
                v["git"] = head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
        except Exception:  # pragma: no cover - no git
            pass
        _VERSIONS = v
    return dict(_VERSIONS)


_BUILT: Dict[str, Any] = {}
_PROOFS: Dict[Tuple[str, str], Any] = {}


def _build(point):
    from .proof import load_proof_file

    bkey = _canon([point["proof_sha"], point["theorem"], point["params"], point["seed"]])
    if bkey in _BUILT:
        return _BUILT[bkey]
    pk = (os.path.abspath(point["proof"]), point["proof_sha"])
    if pk not in _PROOFS:
        _PROOFS[pk] = {t.name: t for t in load_proof_file(point["proof"])}
    thm = _PROOFS[pk][point["theorem"]]
    built = thm.build(dict(point["params"]), point["seed"])
    _BUILT.clear()  # keep one build per process (memory)
    _BUILT[bkey] = built
    return built


def run_point(point: Dict[str, Any], verbose: bool = False) -> Dict[str, Any]:
    """Build the point's instance and run its task; a record for ``points.jsonl``."""
    from .data.dataset import DataError
    from .model.forward import InputError
    from .model.layers import ModelError
    from .proof import ProofFileError

    log = (lambda m: print(m, file=sys.stderr, flush=True)) if verbose else None
    t0 = time.perf_counter()
    rec: Dict[str, Any] = {"key": point["key"], "point": {k: _jsonable(v) for k, v in point.items()
                                                          if k not in ("key", "out_dir")}}
    try:
        built = _build(point)
        model, ds = built.model, built.dataset
        rec["model"] = dict(_measure_dict(model), n_examples=len(ds), decode=model.decode, readout=model.readout,
                            input_type=model.input_type, softmax=_needs_mpfr(model),
                            identity_b_float=identity_bits(model, "float"),
                            identity_b_fixed=identity_bits(model, "fixed"))
        rec["claims"] = _claims_json(built.claims)
        rec["error_bound"] = None if built.error_bound is None else str(built.error_bound)
        rec["information"] = information_bound(model, ds, point["params"])
        task = point["task"]
        if task == "quant-float":
            rec["result"] = run_quant(point, built, "float", log)
        elif task == "quant-fixed":
            rec["result"] = run_quant(point, built, "fixed", log)
        elif task == "arith":
            rec["result"] = run_arith(point, built, log)
        else:
            raise SweepError(f"unknown task {task!r}")
        rec["status"] = "done"
    except (ProofFileError, DataError, ModelError, InputError, SweepError, KeyError, TypeError, ValueError) as e:
        rec["status"] = "error"
        rec["error"] = f"{type(e).__name__}: {e}"
    rec["versions"] = versions()
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


def _worker(point, verbose):  # top-level for pickling
    return run_point(point, verbose)


_LIMITS = None


def _init_worker():
    """One BLAS thread per worker process, so K workers do not oversubscribe the CPUs."""
    global _LIMITS
    try:
        from threadpoolctl import threadpool_limits

        _LIMITS = threadpool_limits(limits=1)
    except Exception:  # pragma: no cover - speed only
        _LIMITS = None


# ----------------------------------------------------------------------------- store and driver


POINTS_FILE = "points.jsonl"
SWEEP_FILE = "sweep.json"


def load_records(out_dir: str) -> Dict[str, Dict[str, Any]]:
    """Finished records by key (the last one wins); a torn last line (a killed run) is dropped
    and cut from the file so later appends stay valid."""
    path = os.path.join(out_dir, POINTS_FILE)
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        data = f.read()
    recs: Dict[str, Dict[str, Any]] = {}
    good_end = 0
    pos = 0
    for line in data.splitlines(keepends=True):
        pos += len(line)
        if not line.endswith(b"\n"):
            break
        try:
            r = json.loads(line)
        except ValueError:
            break
        if isinstance(r, dict) and "key" in r and r.get("status") == "done":
            recs[r["key"]] = r
        good_end = pos
    if good_end < len(data):
        with open(path, "r+b") as f:
            f.truncate(good_end)
    return recs


def _append(out_dir: str, rec: Dict[str, Any]) -> None:
    path = os.path.join(out_dir, POINTS_FILE)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _sort_key(rec):
    p = rec["point"]

    def norm(v):
        return (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, str(v))

    params = tuple((k, norm(v)) for k, v in sorted(p["params"].items()))
    return (p["proof"], p["theorem"], p["instance"], params, p["seed"], TASKS.index(p["task"]), rec["key"])


def sweep_document(records: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """The ``sweep.json`` document: every finished point, sorted; deterministic (no times in
    ``points``; timings are kept separately under ``seconds``)."""
    recs = sorted(records, key=_sort_key)
    vers = []
    for r in recs:
        v = r.get("versions")
        if v and v not in vers:
            vers.append(v)
    seeds = sorted({r["point"]["seed"] for r in recs})
    pts = []
    secs = {}
    for r in recs:
        r2 = {k: v for k, v in r.items() if k not in ("seconds", "versions")}
        pts.append(r2)
        secs[r["key"]] = r.get("seconds")
    return {"format": FORMAT, "version": VERSION, "seeds": seeds, "versions": vers, "points": pts, "seconds": secs}


def write_json_atomic(path: str, doc: Any) -> None:
    import tempfile

    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".partial-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def summarize_record(rec: Dict[str, Any]) -> str:
    if rec.get("status") != "done":
        return f"ERROR {rec.get('error')}"
    r = rec["result"]
    if rec["point"]["task"].startswith("quant"):
        c = r["criteria"]
        v = sum(len(x["violations"]) for x in c.values())
        s = f"min b exact {c['exact']['min_b']}, nearest {c['nearest']['min_b']} ({len(r['evals'])} evaluations"
        s += f", {v} monotonicity violations)" if v else ")"
        cert = c["exact"].get("certificates")
        if cert:
            s += " " + ", ".join(f"b={x['b']} {x['verdict']}" for x in cert)
        return s
    n = rec["model"]["n_examples"]
    parts = [f"{k} {'ok' if v['exact']['fail'] == 0 else str(v['exact']['fail']) + '/' + str(n) + ' wrong'}"
             for k, v in r["formats"].items()]
    if "mantissa" in r:
        parts.append(f"min mantissa {r['mantissa']['criteria']['exact']['min_b']}")
    return ", ".join(parts)


@dataclass
class SweepRun:
    out_dir: str
    records: List[Dict[str, Any]]  # this grid's records (finished ones), grid order
    ran: int
    skipped: int
    errors: List[Dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def _bar(k: int, n: int, width: int = 20) -> str:
    f = int(width * k / n) if n else width
    return "[" + "#" * f + "." * (width - f) + "]"


def run_sweep(spec: SweepSpec, out_dir: str, workers: int = 1, quiet: bool = False, verbose: bool = False,
              fresh: bool = False, write_tables: bool = True) -> SweepRun:
    """Run every point of ``spec`` not already finished in ``out_dir``; write ``sweep.json``
    (all finished points of the directory) and the tables."""
    t_start = time.perf_counter()
    pts = plan(spec)
    os.makedirs(out_dir, exist_ok=True)
    done = load_records(out_dir)
    todo = [p for p in pts if fresh or p["key"] not in done]
    skipped = len(pts) - len(todo)

    def say(msg):
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    say(f"sweep: {len(pts)} points ({skipped} already in {out_dir}/{POINTS_FILE}, {len(todo)} to run"
        + (f", {workers} workers" if workers > 1 else "") + ")")
    for p in todo:
        p["out_dir"] = out_dir
    errors: List[Dict[str, Any]] = []
    finished = 0

    def record(rec):
        nonlocal finished
        finished += 1
        if rec.get("status") == "done":
            _append(out_dir, rec)
            done[rec["key"]] = rec
        else:
            errors.append(rec)
        el = time.perf_counter() - t_start
        eta = el / finished * (len(todo) - finished)
        p = rec["point"]
        say(f"{_bar(finished, len(todo))} {finished}/{len(todo)} {p['theorem']} {_slug(p)} seed {p['seed']} "
            f"{p['task']}: {summarize_record(rec)} ({rec['seconds']:.1f} s; elapsed {el:.0f} s, ETA {eta:.0f} s)")

    order = sorted(todo, key=lambda p: -_cost_hint(p))
    try:
        if workers <= 1 or len(todo) <= 1:
            for p in order:
                record(run_point(p, verbose))
        else:
            import concurrent.futures as cf
            import multiprocessing as mp

            ex = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                        initializer=_init_worker)
            try:
                futs = [ex.submit(_worker, p, verbose) for p in order]
                for f in cf.as_completed(futs):
                    record(f.result())
            except BaseException:
                ex.shutdown(wait=False, cancel_futures=True)
                raise
            ex.shutdown()
    finally:  # also after Ctrl-C: sweep.json and the tables hold every finished point
        doc = sweep_document(done.values())
        write_json_atomic(os.path.join(out_dir, SWEEP_FILE), doc)
        if write_tables:
            from .report import write_tables as wt

            wt(doc, out_dir)
    recs = [done[p["key"]] for p in pts if p["key"] in done]
    for e in errors:  # even with quiet
        print(f"error: {e['point']['theorem']} {_slug(e['point'])} seed {e['point']['seed']} {e['point']['task']}: "
              f"{e['error']}", file=sys.stderr, flush=True)
    return SweepRun(out_dir, recs, len(todo), skipped, errors, time.perf_counter() - t_start)


def _cost_hint(p) -> float:
    """Bigger instances first, so parallel workers finish together (a heuristic only)."""
    v = 1.0
    for k in ("N", "V", "n", "H", "T"):
        x = p["params"].get(k)
        if isinstance(x, int) and not isinstance(x, bool) and x > 0:
            v *= x
    return v * (3 if p["task"] == "quant-float" else 1)
