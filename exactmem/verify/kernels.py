"""The op table of ``docs/verify-format.md``, once, over NumPy object arrays.

Each table op is one small function ``op(K, inputs, attrs) -> list of arrays``. The element
type is whatever the *backend* ``K`` computes with: `ExactBackend` (Fractions; the
importer folds constant sub-graphs with it and refuses irrational steps) or the ball backend
of `exactmem.verify.evaluate` (python-flint ``arb``). Structural ops (Reshape, Transpose,
Gather, …) are the same for every element type; arithmetic goes through the elements' own
operators; irrational functions (exp, tanh, erf, √) through ``K``.

``attrs`` are the node's attributes already parsed: ints, lists of ints, Fractions for the
rational attributes (``alpha``, ``beta``, ``epsilon``), strings for ``approximate``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Dict, List, Sequence

import numpy as np

from .special import NAN, Special, Unsure, holds_special

__all__ = ["OPS", "NotExact", "ExactBackend", "slice_array", "reshape_target", "OpError"]


class NotExact(Exception):
    """An irrational step asked of the exact backend (the importer keeps such a node)."""


class OpError(ValueError):
    """An op cannot run on these inputs (shapes, indices, attributes); the message says why."""


class ExactBackend:
    """Fraction arithmetic: what the importer may fold. Irrational functions raise NotExact."""

    def num(self, q: Fraction):
        return Fraction(q)

    def matmul(self, a, b):
        return np.matmul(a, b)

    def _irrational(self, name):
        raise NotExact(name)

    def exp(self, x):
        self._irrational("Exp")

    def tanh(self, x):
        self._irrational("Tanh")

    def erf(self, x):
        self._irrational("Erf")

    def sqrt(self, x):
        self._irrational("Sqrt")

    def softmax(self, x, axis):
        self._irrational("Softmax")

    def log(self, x):
        self._irrational("Log")

    def softplus(self, x):
        self._irrational("Softplus")

    def sin(self, x):
        self._irrational("Sin")

    def cos(self, x):
        self._irrational("Cos")

    def recip(self, x):
        if any(v == 0 for v in np.asarray(x).reshape(-1)):
            raise OpError("division by zero")
        return 1 / x


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise OpError(f"axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def _axes(axes, rank: int) -> List[int]:
    """ONNX axes: each in [-rank, rank) (negative counts from the end), none repeated."""
    out = [_axis(a, rank) for a in axes]
    if len(set(out)) != len(out):
        raise OpError(f"axes {list(axes)} repeat an axis of rank {rank}")
    return out


def _ints(a) -> List[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _obj(a):
    a = np.asarray(a)
    return a if a.dtype == object else a.astype(object)


# ----------------------------------------------------------------------------- structural

def gather(K, xs, at):
    data, idx = xs
    axis = _axis(at.get("axis", 0), data.ndim)
    idx = np.asarray(idx).astype(np.int64)
    dim = data.shape[axis]
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise OpError(f"index out of range [{-dim}, {dim}) on axis {axis}")
    return [np.take(data, np.where(idx < 0, idx + dim, idx), axis=axis)]


def reshape_target(shape_in: Sequence[int], target: Sequence[int]) -> List[int]:
    out = [shape_in[i] if t == 0 else t for i, t in enumerate(target)]
    if out.count(-1) > 1:
        raise OpError("Reshape: more than one -1")
    size = int(np.prod(shape_in, dtype=np.int64))
    if -1 in out:
        rest = int(np.prod([t for t in out if t != -1], dtype=np.int64))
        if rest == 0 or size % rest:
            raise OpError(f"Reshape: cannot infer -1 from {list(shape_in)} to {list(target)}")
        out[out.index(-1)] = size // rest
    if int(np.prod(out, dtype=np.int64)) != size:
        raise OpError(f"Reshape: {list(shape_in)} has {size} entries, {list(target)} does not")
    return out


def reshape(K, xs, at):
    return [np.reshape(xs[0], reshape_target(xs[0].shape, _ints(xs[1])))]


def transpose(K, xs, at):
    perm = at.get("perm") or list(range(xs[0].ndim))[::-1]
    return [np.transpose(xs[0], perm)]


def split(K, xs, at):
    x = xs[0]
    axis = _axis(at.get("axis", 0), x.ndim)
    d, n = x.shape[axis], at.get("_n", 1)
    sizes = _ints(xs[1]) if len(xs) > 1 and xs[1] is not None else [-(-d // n)] * (n - 1) + [d - -(-d // n) * (n - 1)]
    if sum(sizes) != x.shape[axis] or min(sizes, default=0) < 0 or ("_n" in at and len(sizes) != at["_n"]):
        raise OpError(f"Split: sizes {sizes} do not add up to {x.shape[axis]}")
    cuts = np.cumsum(sizes)[:-1]
    return list(np.split(x, cuts, axis=axis))


def slice_array(x, starts, ends, axes=None, steps=None):
    """ONNX Slice on a NumPy array, clamped as the operator's definition says: a negative start or end
    counts from the end (+ dim), then a positive step clamps both to [0, dim], a negative step the start
    to [0, dim − 1] and the end to [−1, dim − 1] (the one rule; ``docs/verify-format.md``)."""
    axes = list(range(len(starts))) if axes is None else _axes(axes, x.ndim)
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise OpError("Slice: starts, ends, axes and steps differ in length")
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        d = x.shape[a]
        if st == 0:
            raise OpError("Slice: step 0")
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
        index[a] = slice(s, None if e < 0 else e, st) if s >= 0 else slice(0, 0)
    return x[tuple(index)]


def slice_(K, xs, at):
    args = [_ints(v) if v is not None else None for v in xs[1:]] + [None] * (5 - len(xs))
    return [slice_array(xs[0], args[0], args[1], args[2], args[3])]


def concat(K, xs, at):
    return [np.concatenate(xs, axis=_axis(at["axis"], xs[0].ndim))]


def unsqueeze(K, xs, at):
    x = xs[0]
    rank = x.ndim + len(_ints(xs[1]))
    axes = sorted(_axes(_ints(xs[1]), rank))
    for a in axes:
        x = np.expand_dims(x, a)
    return [x]


def squeeze(K, xs, at):
    x = xs[0]
    axes = [i for i, d in enumerate(x.shape) if d == 1] if len(xs) < 2 or xs[1] is None else \
        _axes(_ints(xs[1]), x.ndim)
    if any(x.shape[a] != 1 for a in axes):
        raise OpError(f"Squeeze: an axis of {list(axes)} is not 1 in {list(x.shape)}")
    return [np.squeeze(x, axis=tuple(axes))]


def where(K, xs, at):
    return [np.where(np.asarray(xs[0]).astype(bool), xs[1], xs[2])]


def identity(K, xs, at):
    return [xs[0]]


# ----------------------------------------------------------------------------- arithmetic

def _binary(f):
    return lambda K, xs, at: [_obj(f(_obj(xs[0]), _obj(xs[1])))]


def div(K, xs, at):
    return [_obj(xs[0]) * K.recip(_obj(xs[1]))]


def matmul(K, xs, at):
    a, b = _obj(xs[0]), _obj(xs[1])
    if a.ndim == 0 or b.ndim == 0:
        raise OpError("MatMul of a scalar")
    return [K.matmul(a, b)]


def gemm(K, xs, at):
    a, b = _obj(xs[0]), _obj(xs[1])
    if a.ndim != 2 or b.ndim != 2:
        raise OpError("Gemm needs 2-d A and B")
    a = a.T if at.get("transA", 0) else a
    b = b.T if at.get("transB", 0) else b
    y = K.matmul(a, b)
    alpha, beta = at.get("alpha", Fraction(1)), at.get("beta", Fraction(1))
    if alpha != 1:
        y = y * K.num(alpha)
    if len(xs) > 2 and xs[2] is not None:
        c = _obj(xs[2])
        y = y + (c if beta == 1 else c * K.num(beta))
    return [y]


def neg(K, xs, at):
    return [-_obj(xs[0])]


def relu(K, xs, at):
    x = _obj(xs[0])
    zero = K.num(Fraction(0))
    f = getattr(K, "relu", None)
    return [f(x) if f else np.vectorize(lambda v: v if v > 0 else zero, otypes=[object])(x)]


def reciprocal(K, xs, at):
    return [K.recip(_obj(xs[0]))]


def pow_(K, xs, at):
    y = np.asarray(xs[1]).reshape(-1)
    if y.size != 1:
        raise OpError("Pow: the exponent must be a scalar constant")
    shape = np.broadcast_shapes(np.shape(xs[0]), np.shape(xs[1]))  # a one-element Y may raise X's rank
    y = Fraction(y[0])
    x = _obj(xs[0]).reshape(shape)
    if y == Fraction(1, 2):
        return [K.sqrt(x)]
    if y.denominator != 1 or y < 0:
        raise OpError(f"Pow: exponent {y} (an integer >= 0 or 1/2 only)")
    k = int(y)
    if k == 0:
        return [np.full(x.shape, K.num(Fraction(1)), dtype=object)]
    out = x
    for _ in range(k - 1):
        out = out * x
    return [out]


def _unary(name):
    return lambda K, xs, at: [getattr(K, name)(_obj(xs[0]))]


def sigmoid(K, xs, at):
    one = K.num(Fraction(1))
    return [K.recip(one + K.exp(-_obj(xs[0])))]


def gelu(K, xs, at):
    x = _obj(xs[0])
    one, half = K.num(Fraction(1)), K.num(Fraction(1, 2))
    if at.get("approximate", "none") == "tanh":
        c = K.sqrt(np.array(K.num(Fraction(2)), dtype=object) * K.recip(np.array(K.pi(), dtype=object)))
        inner = (x + K.num(Fraction(44715, 1000000)) * x * x * x) * c
        return [half * x * (one + K.tanh(inner))]
    r2 = K.sqrt(np.array(K.num(Fraction(2)), dtype=object))
    return [half * x * (one + K.erf(x * K.recip(r2)))]


def softmax(K, xs, at):
    """Softmax; with special values, row by row: −∞ positions weigh exactly 0 and the others are the
    softmax of the rest; a row of only −∞, or holding +∞ or NaN, is NaN (as the kernel)."""
    x = _obj(xs[0])
    axis = _axis(at.get("axis", -1), x.ndim)
    if x.size == 0 or not holds_special(x):
        return [x if x.size == 0 else K.softmax(x, axis)]
    y = np.moveaxis(x, axis, -1).copy()
    for idx in np.ndindex(*y.shape[:-1]):
        row = y[idx]
        codes = [v.code if isinstance(v, Special) else 0 for v in row]
        if max(codes):
            row[:] = NAN
            continue
        keep = [i for i, c in enumerate(codes) if c == 0]
        w = K.softmax(row[keep], 0)
        row[:] = K.num(Fraction(0))
        row[keep] = w
    return [np.moveaxis(y, -1, axis)]


def isnan(K, xs, at):
    return [np.vectorize(lambda v: int(isinstance(v, Special) and v.code == 2), otypes=[np.int64])(np.asarray(xs[0]))]


def isinf(K, xs, at):
    want = {-1} if at.get("detect_negative", 1) else set()
    want |= {1} if at.get("detect_positive", 1) else set()
    return [np.vectorize(lambda v: int(isinstance(v, Special) and v.code in want), otypes=[np.int64])(np.asarray(xs[0]))]


# ----------------------------------------------------------------------------- integers and comparisons

def _sure(yes, no) -> int:
    """1, 0, or `Unsure` when the enclosures decide neither (balls that overlap)."""
    if bool(yes) == bool(no):
        raise Unsure()
    return int(bool(yes))


_COMPARE = {  # (surely true, surely false) for exact numbers or arb balls (whose < is "surely <")
    "Equal": lambda x, y: (x == y, x < y or x > y), "Less": lambda x, y: (x < y, x >= y),
    "Greater": lambda x, y: (x > y, x <= y), "LessOrEqual": lambda x, y: (x <= y, x > y),
    "GreaterOrEqual": lambda x, y: (x >= y, x < y)}


def compare(op):
    """Equal, Less, …: 0/1 ints, decided from the enclosures (undecided: `Unsure`, as the kernel's Undecided)."""
    f = _COMPARE[op]
    return lambda K, xs, at: [np.vectorize(lambda x, y: _sure(*f(x, y)), otypes=[np.int64])(_obj(xs[0]), _obj(xs[1]))]


def logic(op):
    """Not, And, Or of 0/1 ints."""
    def run(K, xs, at):
        a = [np.asarray(x).astype(np.int64) for x in xs]
        if any(set(np.unique(v)) - {0, 1} for v in a):
            raise OpError(f"{op} takes 0/1 ints")
        return [1 - a[0] if op == "Not" else np.minimum(*a) if op == "And" else np.maximum(*a)]
    return run


def cumsum(K, xs, at):
    x, ax = _obj(xs[0]), _ints(xs[1])
    if len(ax) != 1:
        raise OpError("CumSum takes one axis")
    axis = _axis(ax[0], x.ndim)
    y = np.flip(x, axis) if at.get("reverse", 0) else x
    c = np.cumsum(y, axis=axis, dtype=object) if y.size else y
    if at.get("exclusive", 0) and y.size:
        c = c - y
    return [np.flip(c, axis) if at.get("reverse", 0) else c]


def _mean(K, x, axes, keep=True):
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    s = np.sum(x, axis=tuple(axes), keepdims=keep)
    if count == 0:
        if np.size(s):
            raise OpError("a mean over no elements (ONNX: NaN)")
        return _obj(s)
    return _obj(s) * K.num(Fraction(1, count))


def reduce_mean(K, xs, at):
    x = _obj(xs[0])
    axes = _ints(xs[1]) if len(xs) > 1 and xs[1] is not None else []
    axes = _axes(axes, x.ndim) or list(range(x.ndim))
    return [_mean(K, x, sorted(axes), bool(at.get("keepdims", 1)))]


def layer_norm(K, xs, at):
    x = _obj(xs[0])
    if at.get("axis", -1) != -1:
        raise OpError("LayerNormalization: axis -1 only")
    if x.size == 0:
        return [x]
    ax = [x.ndim - 1]
    xc = x - _mean(K, x, ax)
    var = _mean(K, xc * xc, ax)
    y = xc * K.recip(K.sqrt(var + K.num(at.get("epsilon", Fraction(1, 100000)))))
    y = y * _obj(xs[1])
    if len(xs) > 2 and xs[2] is not None:
        y = y + _obj(xs[2])
    return [y]


OPS: Dict[str, Callable] = {
    "Gather": gather, "MatMul": matmul, "Gemm": gemm,
    "Add": _binary(lambda a, b: a + b), "Sub": _binary(lambda a, b: a - b), "Mul": _binary(lambda a, b: a * b),
    "Div": div, "Neg": neg, "Relu": relu, "Sqrt": _unary("sqrt"), "Reciprocal": reciprocal,
    "Exp": _unary("exp"), "Tanh": _unary("tanh"), "Sigmoid": sigmoid, "Erf": _unary("erf"), "Pow": pow_,
    "Gelu": gelu, "Softmax": softmax, "LayerNormalization": layer_norm, "ReduceMean": reduce_mean,
    "Reshape": reshape, "Transpose": transpose, "Split": split, "Slice": slice_, "Concat": concat,
    "Unsqueeze": unsqueeze, "Squeeze": squeeze, "Where": where, "Identity": identity, "IsNaN": isnan, "IsInf": isinf,
    **{op: compare(op) for op in _COMPARE}, **{op: logic(op) for op in ("Not", "And", "Or")}, "CumSum": cumsum,
    "Log": _unary("log"), "Softplus": _unary("softplus"), "Sin": _unary("sin"), "Cos": _unary("cos"),
}
# the ops that take special values (−∞, +∞, NaN; docs/verify-format.md): any other refuses them
SPECIAL_OPS = {"Add", "Sub", "Mul", "Div", "Reciprocal", "Neg", "Softmax", "Where", "IsNaN", "IsInf", "Identity", "Gather",
               "Reshape", "Transpose", "Split", "Slice", "Concat", "Unsqueeze", "Squeeze"}

# the attributes each op may carry in the lowered graph, and how to parse them from JSON
ATTRS = {"Gather": {"axis": int}, "Gemm": {"alpha": Fraction, "beta": Fraction, "transA": int, "transB": int},
         "Gelu": {"approximate": str}, "Softmax": {"axis": int},
         "LayerNormalization": {"axis": int, "epsilon": Fraction}, "ReduceMean": {"keepdims": int},
         "Transpose": {"perm": list}, "Split": {"axis": int}, "Concat": {"axis": int},
         "IsInf": {"detect_negative": int, "detect_positive": int}, "CumSum": {"exclusive": int, "reverse": int}}
