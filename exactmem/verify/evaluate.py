"""Producer-side evaluation of a lowered graph in ball arithmetic (untrusted; an accelerator).

The graph of a certificate's ``model`` (``docs/verify-format.md``) is evaluated on one example
with python-flint's ``arb`` balls: every weight enters as the ball of its exact rational (a
point when the precision holds its mantissa), every operation rounds outward, so each score is
an interval that surely contains the real network's score. The example's verdict is

* ``"pass"`` — the label's score is above every other score (lower bound > upper bound),
* ``"fail"`` — some other score is surely ≥ the label's (an exact tie included), or a score is
  NaN (no argmax; ±∞ compare as extended reals),
* ``"unknown"`` — neither, even at the top of the precision ladder (64, 128, …, 4096 bits).

Nothing here is trusted: the certificate kernel re-derives every claimed verdict. Matrix
products go through ``arb_mat`` (C loops); element-wise steps through NumPy object arrays.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .kernels import ATTRS, OPS, SPECIAL_OPS, OpError
from .special import Special, TEXTS, Unsure, first_special, holds_special

CODES = {t: c for c, t in TEXTS.items()}

__all__ = ["Program", "ArbBackend", "PRECISIONS", "judge", "Verdict"]

PRECISIONS = (64, 128, 256, 512, 1024, 2048, 4096)


def _parse_rat(s: str) -> Fraction:
    return Fraction(s)


class Program:
    """A lowered graph ready to evaluate: constants parsed once, attributes typed."""

    def __init__(self, model: Dict[str, Any]):
        g = model["graph"]
        self.input_name, self.output_name = g["input"], g["output"]
        self.input_type = model["input"]["type"]
        self.position = model["readout"]["position"]
        self.consts: Dict[str, Tuple[str, np.ndarray]] = {}
        for name, c in g["constants"].items():
            shape = tuple(c["shape"])
            if "ints" in c:
                self.consts[name] = ("int", np.asarray(c["ints"], dtype=np.int64).reshape(shape))
            else:
                arr = np.empty(len(c["values"]), dtype=object)
                cache: Dict[str, Fraction] = {}
                arr[:] = [cache.get(v) or cache.setdefault(v, Special(CODES[v]) if v in CODES else Fraction(v))
                          for v in c["values"]]
                self.consts[name] = ("rat", arr.reshape(shape))
        self.special = {k for k, (kind, a) in self.consts.items() if kind == "rat" and holds_special(a)}
        self.nodes = []
        for nd in g["nodes"]:
            spec = ATTRS.get(nd["op"], {})
            if set(nd["attrs"]) - set(spec):
                raise OpError(f"{nd['op']}: attributes {sorted(set(nd['attrs']) - set(spec))} are not in the table")
            at = {k: (Fraction(v) if spec.get(k) is Fraction else v) for k, v in nd["attrs"].items()}
            at = {**at, "_n": len(nd["outputs"])} if nd["op"] == "Split" else at
            raw = {1} if nd["op"] == "Pow" else set()  # the exponent stays an exact rational
            self.nodes.append((OPS[nd["op"]], nd["inputs"], nd["outputs"], at, raw, nd["op"]))

    def run(self, K, x) -> np.ndarray:
        """The output tensor on one bound input ``x`` (int array [1, n] or Fractions [1, n, d]). Special
        values are followed from the constants that hold them: an op outside SPECIAL_OPS that receives
        one refuses the model (`VerifyInputError`, one line, as the kernel's MalformedCertificate)."""
        env: Dict[str, Any] = {self.input_name: x if self.input_type == "tokens" else K.convert(x)}
        special = set(self.special)
        for j, (f, ins, outs, at, raw, op) in enumerate(self.nodes):
            args = [env[i] if i in env else self.consts[i][1] if k in raw else K.const(i, *self.consts[i])
                    for k, i in enumerate(ins)]
            hot = [a for i, a in zip(ins, args) if i in special and holds_special(a)]
            if hot and op not in SPECIAL_OPS:
                from .onnx_import import VerifyInputError

                raise VerifyInputError(f"{first_special(hot[0])} reaches {op} at node {j} ({outs[0]!r}), which takes "
                                       "no special values (docs/verify-format.md)")
            for o, v in zip(outs, f(K, args, at)):
                env[o] = v
                if hot:
                    special.add(o)
        return env[self.output_name]


class ArbBackend:
    """Ball arithmetic at ``prec`` bits (python-flint ``arb``); constants cached per backend."""

    def __init__(self, prec: int):
        import flint

        self.flint, self.prec = flint, prec
        flint.ctx.prec = prec
        self._consts: Dict[str, Any] = {}
        self._mats: Dict[Tuple, Any] = {}
        self._const_ids = set()
        self._exp = np.frompyfunc(lambda v: v.exp(), 1, 1)
        self._tanh = np.frompyfunc(lambda v: v.tanh(), 1, 1)
        self._erf = np.frompyfunc(lambda v: v.erf(), 1, 1)
        self._sqrt = np.frompyfunc(lambda v: v.sqrt(), 1, 1)
        self._sin = np.frompyfunc(lambda v: v.sin(), 1, 1)
        self._cos = np.frompyfunc(lambda v: v.cos(), 1, 1)
        self._log = np.frompyfunc(lambda v: v.log() if v > 0 else _unsure(), 1, 1)  # a ball reaching 0: undecided
        self._softplus = np.frompyfunc(lambda v: (1 + (-abs(v)).exp()).log() + (v if v > 0 else 0 if v <= 0 else
                                                                                 (v + abs(v)) / 2), 1, 1)
        zero = flint.arb(0)
        self._relu = np.frompyfunc(lambda v: v if v > 0 else (zero if v <= 0 else v.union(zero)), 1, 1)

    def activate(self):
        self.flint.ctx.prec = self.prec

    def num(self, q: Fraction):
        if isinstance(q, Special):
            return q
        q = Fraction(q)
        return self.flint.arb(self.flint.fmpq(q.numerator, q.denominator))

    def convert(self, arr) -> np.ndarray:
        arr = np.asarray(arr)
        out = np.empty(arr.shape, dtype=object)
        cache: Dict[Fraction, Any] = {}
        out.reshape(-1)[:] = [cache[v] if v in cache else cache.setdefault(v, self.num(v)) for v in arr.reshape(-1)]
        return out

    def const(self, name, kind, arr):
        if kind == "int":
            return arr
        c = self._consts.get(name)
        if c is None:
            c = self._consts[name] = self.convert(arr)
            self._const_ids.add(id(c))
        return c

    def _mat(self, a: np.ndarray):
        """An arb_mat of a 2-d object array; cached when it is (a view of) a stored weight."""
        base = a if a.base is None else a.base
        if id(base) in self._const_ids:
            key = (id(base), a.shape, a.strides, a.__array_interface__["data"][0])
            m = self._mats.get(key)
            if m is None:
                m = self._mats[key] = self.flint.arb_mat(a.shape[0], a.shape[1], a.reshape(-1).tolist())
            return m
        return self.flint.arb_mat(a.shape[0], a.shape[1], a.reshape(-1).tolist())

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        va, vb = a.ndim == 1, b.ndim == 1
        a = a[None, :] if va else a
        b = b[:, None] if vb else b
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        A = np.broadcast_to(a, lead + a.shape[-2:])
        B = np.broadcast_to(b, lead + b.shape[-2:])
        if A.shape[-1] != B.shape[-2]:
            raise ValueError(f"MatMul shapes {a.shape} and {b.shape}")
        out = np.empty(lead + (A.shape[-2], B.shape[-1]), dtype=object)
        for idx in np.ndindex(*lead):
            ma = self._mat(a[idx] if a.shape[:-2] == lead else A[idx])
            mb = self._mat(b[idx] if b.shape[:-2] == lead else B[idx])
            out[idx].reshape(-1)[:] = (ma * mb).entries()
        if va:
            out = out[..., 0, :]
        if vb:
            out = out[..., 0]
        return out

    def exp(self, x):
        return self._exp(x)

    def tanh(self, x):
        return self._tanh(x)

    def erf(self, x):
        return self._erf(x)

    def sqrt(self, x):
        return self._sqrt(x)

    def relu(self, x):
        return self._relu(x)

    def log(self, x):
        return self._log(x)

    def softplus(self, x):
        return self._softplus(x)

    def sin(self, x):
        return self._sin(x)

    def cos(self, x):
        return self._cos(x)

    def recip(self, x):
        return 1 / x

    def pi(self):
        return self.flint.arb.pi()

    def softmax(self, x: np.ndarray, axis: int) -> np.ndarray:
        y = np.moveaxis(x, axis, -1)
        shift = np.empty(y.shape[:-1] + (1,), dtype=object)
        for idx in np.ndindex(*y.shape[:-1]):
            row = y[idx]
            best = row[0].mid()
            for v in row[1:]:
                m = v.mid()
                if m > best:
                    best = m
            shift[idx + (0,)] = best
        e = self._exp(y - shift)
        out = e / np.sum(e, axis=-1, keepdims=True)
        return np.moveaxis(out, -1, axis)


def _unsure():
    raise Unsure()


def _above(a, b, strict: bool) -> bool:
    """Surely a > b (``strict``) or a >= b; ±∞ as extended reals (equal infinities are a tie)."""
    ca, cb = (v.code if isinstance(v, Special) else 0 for v in (a, b))
    if ca or cb:
        return ca > cb or (not strict and ca == cb)
    return a - b > 0 if strict else a - b >= 0


def _decide(scores: Sequence[Any], label: int) -> str:
    if any(isinstance(v, Special) and v.code == 2 for v in scores):
        return "fail"  # a NaN score: the network has no argmax there
    s = scores[label]
    others = [v for j, v in enumerate(scores) if j != label]
    if all(_above(s, v, True) for v in others):
        return "pass"
    if any(_above(v, s, False) for v in others):
        return "fail"
    return "unknown"


def _combine(vs: List[str]) -> str:
    return "fail" if "fail" in vs else "unknown" if "unknown" in vs else "pass"


class Verdict(tuple):
    """``(verdict, precision bits used, margin text)``: the margin is display only (meta)."""


def _margin(scores, label) -> str:
    if any(isinstance(v, Special) for v in scores):
        return "scores " + ", ".join(map(str, scores))[:200]
    s = scores[label]
    worst = None
    for j, v in enumerate(scores):
        if j != label:
            d = s - v
            worst = d if worst is None or d.mid() < worst.mid() else worst
    return worst.str(5, radius=True) if worst is not None else ""


def ladder_rows(prog: Program, x, label, precisions: Sequence[int], backends: Dict):
    """For each precision of the ladder, ``(prec, K, rows, labels)``: the read rows of the output (arb
    balls) and their labels, or rows None where the sign of a factor of an infinity is undecided."""
    for prec in precisions:
        K = backends.get(prec)
        if K is None:
            K = backends[prec] = ArbBackend(prec)
        K.activate()
        try:
            out = prog.run(K, x)
        except Unsure:
            yield prec, K, None, None
            continue
        if prog.position == "last":
            yield prec, K, [out[0, -1, :] if out.ndim == 3 else out[0, :]], [label]
        else:
            yield prec, K, [out[0, i, :] for i in range(out.shape[1])], list(label)


def judge(prog: Program, x, label, precisions: Sequence[int] = PRECISIONS, backends: Optional[Dict] = None):
    """The verdict of one example: ``(verdict, bits, margin)`` where ``margin`` is the label's score
    minus the nearest other score, as an arb ball printed for humans (never used to decide)."""
    for prec, K, rows, labels in ladder_rows(prog, x, label, precisions, {} if backends is None else backends):
        if rows is None:
            if prec == precisions[-1]:
                return "unknown", prec, ""
            continue
        vs = [_decide(list(r), int(lab)) for r, lab in zip(rows, labels)]
        v = _combine(vs)
        if v != "unknown" or prec == precisions[-1]:
            k = next((i for i, w in enumerate(vs) if w == v), 0)
            return v, prec, _margin(list(rows[k]), int(labels[k]))
    raise AssertionError("empty precision ladder")
