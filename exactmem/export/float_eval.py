"""NumPy float evaluation of the exported network, and float accuracy on a dataset ([`exactmem.export`][exactmem.export])."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence

from ..model.layers import Model
from .arrays import RoundingReport, architecture, to_arrays
from .formats import get_format, round_to_format


# ----------------------------------------------------------------------------- float evaluation


class FloatNet:
    """The exported network evaluated in NumPy float arithmetic (the layer semantics of
    ``docs/model.md``: affine, feed-forward with residual, uniform / hardmax / softmax /
    base-2 softmax attention with ``query``/``keys`` options, embedding; readout and decoding).

    Hardmax picks the keys whose float score equals the float maximum; softmax subtracts the
    row maximum. Every operation is in the format's dtype (bfloat16: float32 arithmetic)."""

    def __init__(self, spec: Dict[str, Any], arrays: Dict[str, Any], dtype="float32"):
        import numpy as np

        self.spec = spec
        self.format = get_format(dtype)
        self.dt = np.dtype(self.format.numpy)
        self.arrays = {k: np.asarray(v).astype(self.dt) for k, v in arrays.items()}

    @classmethod
    def from_model(cls, model, dtype="float32") -> "FloatNet":
        """Round ``model``'s weights to ``dtype`` (the same rounding as [`save`][exactmem.export.save])."""
        m = model if isinstance(model, Model) else model.model
        arrays, rep = to_arrays(m, dtype)
        net = cls(architecture(m), arrays, dtype)
        net.rounding = rep
        return net

    def _t(self, i: int, name: str):
        return self.arrays.get(f"layers.{i}.{name}")

    def _inputs(self, seqs):
        import numpy as np

        sp = self.spec
        if sp["input_type"] == "tokens":
            E, P = self._t(0, "E"), self._t(0, "P")
            X = E[np.asarray(seqs, dtype=np.int64)]
            if P is not None:
                X = X + P[: X.shape[1]][None, :, :]
            return X, 1
        cache: Dict[Fraction, float] = {}

        def rnd(v):
            v = Fraction(v)
            if v not in cache:
                cache[v] = round_to_format(v, self.format)[0]
            return cache[v]

        X = [[[rnd(v) for v in tok] for tok in s] for s in seqs]
        return np.array(X, dtype=np.float64).astype(self.dt), 0

    def _attention(self, i: int, L: Dict[str, Any], X):
        import numpy as np

        B, n, _ = X.shape
        q_pos = list(range(n)) if L["query"] == "all" else [n - 1]
        out = X[:, q_pos, :].copy() if L["residual"] else None
        for h in range(L["heads"]):
            WV, WO, WQ, WK = (self._t(i, f"heads.{h}.{k}") for k in ("WV", "WO", "WQ", "WK"))
            V = X @ WV.T  # B × n × v
            nq = len(q_pos)
            if L["kind"] == "uniform":
                S = np.zeros((B, nq, n), dtype=self.dt)
            else:
                Q = X[:, q_pos, :] @ WQ.T
                K = X @ WK.T
                S = Q @ np.swapaxes(K, 1, 2)  # B × nq × n
            mask = np.ones((nq, n), dtype=bool)
            if L["keys"] == "others":
                for a, j in enumerate(q_pos):
                    mask[a, j] = False
            if L["kind"] in ("uniform", "hardmax"):
                Sm = np.where(mask[None], S, -np.inf)
                top = np.max(Sm, axis=2, keepdims=True)
                sel = (Sm == top) & mask[None] if L["kind"] == "hardmax" else np.broadcast_to(mask[None], S.shape)
                cnt = np.sum(sel, axis=2, keepdims=True).astype(self.dt)
                Pw = sel.astype(self.dt) / cnt
            else:
                Sm = np.where(mask[None], S, -np.inf)
                top = np.max(Sm, axis=2, keepdims=True)
                Z = Sm - top
                e = np.exp2(Z) if L["kind"] == "softmax2" else np.exp(Z)
                e = np.where(mask[None], e, 0).astype(self.dt)
                Pw = e / np.sum(e, axis=2, keepdims=True)
            A = Pw.astype(self.dt) @ V  # B × nq × v
            o = A @ WO.T
            out = o if out is None else out + o
        return out

    def forward(self, inputs: Sequence) -> List[Any]:
        """Raw outputs, one per sequence: a vector (readout last) or an n × m' array (all)."""
        import numpy as np

        by_len: Dict[int, List[int]] = {}
        for k, s in enumerate(inputs):
            by_len.setdefault(len(s), []).append(k)
        res: List[Any] = [None] * len(inputs)
        with np.errstate(all="ignore"):
            for _, idx in by_len.items():
                X, start = self._inputs([inputs[k] for k in idx])
                for i, L in enumerate(self.spec["layers"]):
                    if i < start:
                        continue
                    t = L["type"]
                    if t == "affine":
                        W, b = self._t(i, "W"), self._t(i, "b")
                        X = X @ W.T
                        if b is not None:
                            X = X + b
                        if L["relu"]:
                            X = np.maximum(X, self.dt.type(0))
                    elif t == "feedforward":
                        Hh = np.maximum(X @ self._t(i, "W1").T + self._t(i, "b1"), self.dt.type(0))
                        T = Hh @ self._t(i, "W2").T + self._t(i, "b2")
                        X = X + T if L["residual"] else T
                    elif t == "attention":
                        X = self._attention(i, L, X)
                    else:
                        raise ValueError(f"layer {i}: cannot evaluate {t!r} here")
                for a, k in enumerate(idx):
                    res[k] = X[a, -1, :] if self.spec["readout"] == "last" else X[a]
        return res

    def predict(self, inputs: Sequence) -> List[Any]:
        """Decoded outputs: the output vector(s) (identity) or the argmax class (None on a tie)."""
        import numpy as np

        out = self.forward(inputs)
        if self.spec["decode"] != "argmax":
            return out

        def am(v):
            top = np.max(v)
            idx = np.flatnonzero(v == top)
            return int(idx[0]) if len(idx) == 1 and np.isfinite(top) else None

        if self.spec["readout"] == "last":
            return [am(v) for v in out]
        return [[am(r) for r in o] for o in out]


def _to_float(v) -> float:
    if isinstance(v, float):
        return v
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


@dataclass
class FloatAccuracy:
    """How many examples the float network gets right.

    ``exact``: output equal to the label (identity decoding, every component and position) or
    the right argmax; ``nearest``: every output component rounds to its (integer) label —
    the fair reading for class labels; ``nonfinite``: examples with an inf or NaN output."""

    format: str
    examples: int
    exact: int
    nearest: int
    nonfinite: int
    rounding: Optional[RoundingReport] = None

    def __str__(self) -> str:
        pct = lambda k: f"{100 * k / self.examples:.1f}%" if self.examples else "-"  # noqa: E731
        return (f"{self.format}: {self.exact}/{self.examples} exactly right ({pct(self.exact)}), "
                f"{self.nearest}/{self.examples} right after rounding to the nearest label ({pct(self.nearest)}), "
                f"{self.nonfinite} with inf/NaN outputs")


def float_accuracy(model: Any, dataset: Any = None, dtype: str = "float32") -> FloatAccuracy:
    """Round ``model``'s weights to ``dtype``, evaluate the dataset in that float arithmetic
    ([`FloatNet`][exactmem.export.FloatNet]) and count the examples it still gets right ([`FloatAccuracy`][exactmem.export.FloatAccuracy]).
    ``model`` may be a Memorizer (its dataset is the default) or a [`FloatNet`][exactmem.export.FloatNet]."""
    import numpy as np

    from ..api import as_dataset

    if dataset is None:
        dataset = getattr(model, "dataset", None)
    ds = as_dataset(dataset)
    net = model if isinstance(model, FloatNet) else FloatNet.from_model(model, dtype)
    out = net.forward(ds.inputs)
    argmax = net.spec["decode"] == "argmax"
    pred = net.predict(ds.inputs) if argmax else out
    ex = near = bad = 0
    for o, p, y in zip(out, pred, ds.labels):
        o = np.asarray(o, dtype=np.float64)
        if not np.all(np.isfinite(o)):
            bad += 1
        if argmax:
            ok = p == (list(y) if isinstance(y, tuple) else y)
            ex += ok
            near += ok
            continue
        want = np.array([[_to_float(v) for v in c] for c in y] if y and isinstance(y[0], tuple)
                        else [_to_float(v) for v in y], dtype=np.float64).reshape(o.shape)
        ex += bool(np.all(o == want))
        near += bool(np.all(np.rint(o) == want))
    return FloatAccuracy(net.format.name, len(ds.inputs), ex, near, bad, getattr(net, "rounding", None))
