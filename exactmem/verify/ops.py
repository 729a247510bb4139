"""One lowering function per ONNX operator (a table that grows an operator at a time, like ``onnx.reference``).

A lowering function ``f(cx, node, ins, at)`` receives the importer's context ``cx``
(`exactmem.verify.onnx_import.Lowering`), the ONNX node, its inputs as values —
`Const` (known exactly: int64 arrays or object arrays of Fractions) or `Dyn`
(computed from the example's input, with a known shape) or None for an omitted optional input
— and its ONNX attributes as Python values. It returns one value per node output (None for
an output the importer will never need). Constants are folded here only where the result is
exact; everything else becomes a node of the op table in ``docs/verify-format.md``
(``cx.emit``), whose attributes are normalised to the table's names and defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import List, Optional, Tuple

import numpy as np

from .floats import ONNX_BOOL, ONNX_INTS, exact_scalar
from .kernels import OpError, slice_array
from .special import Special

__all__ = ["Const", "Dyn", "LOWER", "LowerError"]


class LowerError(ValueError):
    """The node cannot be lowered (an unsupported use of a supported operator); one line."""


@dataclass
class Const:
    """A tensor known exactly: ``kind`` "int" (np.int64 array) or "rat" (object array of Fractions)."""

    value: np.ndarray
    kind: str
    name: Optional[str] = None  # the graph constant that already holds it, once emitted

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.value.shape)


@dataclass
class Dyn:
    """A tensor computed from the example's input: its graph name, shape and kind."""

    name: str
    shape: Tuple[int, ...]
    kind: str = "rat"


def _const_ints(v, what: str) -> List[int]:
    if not isinstance(v, Const):
        raise LowerError(f"{what} must be a constant (it depends on the input)")
    return [int(x) for x in np.asarray(v.value).reshape(-1)]


def int_const(values) -> Const:
    return Const(np.asarray(values, dtype=np.int64), "int")


def _rat(q) -> Fraction:
    return exact_scalar(q) if isinstance(q, float) else Fraction(q)


# ----------------------------------------------------------------------------- table ops


def _table(op: str, attrs=None, const_inputs: Tuple[int, ...] = ()):
    """A table op whose attributes need no normalisation beyond ``attrs(at, ins)``."""

    def lower(cx, node, ins, at):
        a = attrs(at, ins) if attrs else {}
        for i in const_inputs:
            if i < len(ins) and ins[i] is not None and not isinstance(ins[i], Const):
                raise LowerError(f"input {i} of {op} must be a constant")
        return cx.op(op, ins, a, len(node.output))

    return lower


def _same(*names):
    return lambda at, ins: {k: at[k] for k in names if k in at}


def lower_gemm(cx, node, ins, at):
    a = {"alpha": _rat(at.get("alpha", 1.0)), "beta": _rat(at.get("beta", 1.0)),
         "transA": int(at.get("transA", 0)), "transB": int(at.get("transB", 0))}
    return cx.op("Gemm", ins, a, 1)


def lower_gather(cx, node, ins, at):
    return cx.op("Gather", ins, {"axis": int(at.get("axis", 0))}, 1)


def lower_gelu(cx, node, ins, at):
    approx = at.get("approximate", "none")
    approx = approx.decode() if isinstance(approx, bytes) else str(approx)
    if approx not in ("none", "tanh"):
        raise LowerError(f"Gelu approximate={approx!r}")
    return cx.op("Gelu", ins, {"approximate": approx}, 1)


def lower_softmax(cx, node, ins, at):
    rank = len(ins[0].shape)
    default = -1 if cx.opset >= 13 else 1
    axis = int(at.get("axis", default))
    if cx.opset < 13 and axis % rank != rank - 1:
        raise LowerError(f"Softmax (opset {cx.opset}) over axes {axis}.. (the last axis only)")
    return cx.op("Softmax", ins, {"axis": axis}, 1)


def lower_layer_norm(cx, node, ins, at):
    if len(node.output) > 1 and any(node.output[1:]):
        cx.unused(node, node.output[1:], "LayerNormalization's Mean/InvStdDev outputs")
    rank = len(ins[0].shape)
    axis = int(at.get("axis", -1))
    if axis % rank != rank - 1:
        raise LowerError(f"LayerNormalization over axis {axis} (the last axis only)")
    eps = _rat(at.get("epsilon", 1e-5))
    return cx.op("LayerNormalization", ins[:3], {"axis": -1, "epsilon": eps}, 1) + [None] * (len(node.output) - 1)


def _axes_input(ins, at, idx=1):
    """Axes as the constant input the table wants (older opsets keep them in an attribute)."""
    if "axes" in at:
        return int_const(at["axes"])
    return ins[idx] if len(ins) > idx else None


def lower_reduce_mean(cx, node, ins, at):
    axes = _axes_input(ins, at)
    if axes is None or not _const_ints(axes, "ReduceMean axes"):
        if at.get("noop_with_empty_axes", 0):
            return [ins[0]]
        axes = int_const(list(range(len(ins[0].shape))))
    _const_ints(axes, "ReduceMean axes")
    return cx.op("ReduceMean", [ins[0], axes], {"keepdims": int(at.get("keepdims", 1))}, 1)


def lower_reshape(cx, node, ins, at):
    shape = ins[1] if len(ins) > 1 else int_const(at.get("shape", []))
    target = _const_ints(shape, "Reshape's shape")
    if at.get("allowzero", 0) and 0 in target:
        raise LowerError("Reshape with allowzero=1 and a 0 in the shape")
    return cx.op("Reshape", [ins[0], int_const(target)], {}, 1)


def lower_transpose(cx, node, ins, at):
    perm = [int(p) for p in at.get("perm", list(range(len(ins[0].shape)))[::-1])]
    return cx.op("Transpose", ins, {"perm": perm}, 1)


def lower_split(cx, node, ins, at):
    x = ins[0]
    axis = int(at.get("axis", 0))
    dim = x.shape[axis]
    k = len(node.output)
    if len(ins) > 1 and ins[1] is not None:
        sizes = _const_ints(ins[1], "Split sizes")
    elif "split" in at:
        sizes = [int(s) for s in at["split"]]
    else:
        n = int(at.get("num_outputs", k))
        step = -(-dim // n)
        sizes = [min(step, dim - i * step) for i in range(n)]
    return cx.op("Split", [x, int_const(sizes)], {"axis": axis}, len(sizes))


def lower_slice(cx, node, ins, at):
    if "starts" in at:  # opset < 10
        args = [int_const(at["starts"]), int_const(at["ends"]), int_const(at.get("axes", range(len(at["starts"]))))]
    else:
        args = list(ins[1:4])
    starts = _const_ints(args[0], "Slice starts")
    axes = _const_ints(args[2], "Slice axes") if len(args) > 2 and args[2] is not None else list(range(len(starts)))
    steps = _const_ints(ins[4], "Slice steps") if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    ends = _const_ints(args[1], "Slice ends")
    big = 1 << 62  # ONNX uses INT64_MAX for "to the end"; keep the JSON integers small
    ends = [max(min(e, big), -big) for e in ends]
    starts = [max(min(s, big), -big) for s in starts]
    return cx.op("Slice", [ins[0], int_const(starts), int_const(ends), int_const(axes), int_const(steps)], {}, 1)


def lower_concat(cx, node, ins, at):
    return cx.op("Concat", ins, {"axis": int(at["axis"])}, 1)


def lower_unsqueeze(cx, node, ins, at):
    return cx.op("Unsqueeze", [ins[0], _axes_input(ins, at)], {}, 1)


def lower_squeeze(cx, node, ins, at):
    axes = _axes_input(ins, at)
    if axes is None:
        axes = int_const([i for i, d in enumerate(ins[0].shape) if d == 1])
    return cx.op("Squeeze", [ins[0], axes], {}, 1)


def lower_where(cx, node, ins, at):
    if isinstance(ins[0], Dyn) and ins[0].name in cx.bools:  # 0/1 ints: IsNaN, a comparison, Not/And/Or, ...
        return cx.op("Where", ins, {}, 1)
    if not isinstance(ins[0], Const):
        raise LowerError("Where with a computed condition that is not a comparison's, IsNaN's or a logic op's")
    cond = Const(np.asarray(ins[0].value).astype(bool).astype(np.int64), "int", ins[0].name)
    return cx.op("Where", [cond] + ins[1:], {}, 1)


def lower_isnan(cx, node, ins, at):
    """IsNaN, IsInf: 0/1 ints that a Where may test."""
    a = {k: int(at.get(k, 1)) for k in ("detect_negative", "detect_positive")} if node.op_type == "IsInf" else {}
    outs = cx.op(node.op_type, ins, a, 1)
    cx.bools.update(v.name for v in outs if isinstance(v, Dyn))
    return outs


def _int_op(fold):
    """A comparison or Not/And/Or: folded on constants, else the table op (0/1 ints, `cx.bools`)."""

    def lower(cx, node, ins, at):
        if all(isinstance(v, Const) for v in ins):
            return fold(cx, node, ins, at)
        for v in ins if node.op_type in ("Not", "And", "Or") else ():
            if isinstance(v, Dyn) and v.name not in cx.bools:
                raise LowerError(f"{node.op_type} of computed integers that are not 0/1 (a comparison's)")
        return cx.op(node.op_type, [v if isinstance(v, Dyn) or node.op_type not in ("Not", "And", "Or") else
                                    Const(np.asarray(v.value).astype(bool).astype(np.int64), "int") for v in ins], {}, 1)

    return lower


def truth(cx, x):
    """A computed value as 0/1 ints (ONNX's Cast to bool: x != 0): itself when already 0/1, else Not(Equal(x, 0))."""
    if x.name in cx.bools:
        return x
    zero = int_const(0) if x.kind == "int" else Const(np.array(Fraction(0), dtype=object), "rat")
    return cx.op("Not", cx.op("Equal", [x, zero], {}, 1), {}, 1)[0]


def lower_cumsum(cx, node, ins, at):
    axis = _const_ints(ins[1], "CumSum's axis")
    a = {k: int(at.get(k, 0)) for k in ("exclusive", "reverse")}
    return cx.op("CumSum", [ins[0], int_const(axis)], a, 1)


def lower_log_softmax(cx, node, ins, at):
    """LogSoftmax = Log(Softmax(x)): both enclosures are monotone (docs/verify-format.md)."""
    return cx.op("Log", lower_softmax(cx, node, ins, at), {}, 1)


def lower_mish(cx, node, ins, at):
    """Mish = x · tanh(softplus(x))."""
    return cx.op("Mul", [ins[0]] + cx.op("Tanh", cx.op("Softplus", ins, {}, 1), {}, 1), {}, 1)


def lower_pow(cx, node, ins, at):
    y = ins[1]
    if not isinstance(y, Const) or y.value.size != 1:
        raise LowerError("Pow with an exponent that is not a constant scalar")
    e = Fraction(np.asarray(y.value).reshape(-1)[0])
    if not (e == Fraction(1, 2) or (e.denominator == 1 and e >= 0)):
        raise LowerError(f"Pow with exponent {e} (an integer >= 0 or 1/2 only)")
    return cx.op("Pow", [ins[0], Const(np.array(e, dtype=object), "rat")], {}, 1)


def lower_dropout(cx, node, ins, at):
    if len(node.output) > 1 and node.output[1]:
        cx.unused(node, node.output[1:], "Dropout's mask output")
    return [ins[0]] + [None] * (len(node.output) - 1)


def lower_identity(cx, node, ins, at):
    return [ins[0]]


# ----------------------------------------------------------------------------- constants and shapes


def lower_constant(cx, node, ins, at):
    if "value" in at:
        return [cx.tensor(at["value"])]
    for k, kind in (("value_int", "int"), ("value_ints", "int")):
        if k in at:
            return [int_const(at[k])]
    for k in ("value_float", "value_floats"):
        if k in at:
            v = at[k]
            arr = np.empty(np.shape(v), dtype=object)
            arr.reshape(-1)[:] = [exact_scalar(x, special=True) for x in np.reshape(v, -1)]
            return [Const(arr, "rat")]
    raise LowerError("Constant without a numeric value")


def lower_shape(cx, node, ins, at):
    shape = list(ins[0].shape)
    lo, hi = int(at.get("start", 0)), at.get("end")
    return [int_const(shape[lo:None if hi is None else int(hi)])]


def lower_size(cx, node, ins, at):
    return [int_const(int(np.prod(ins[0].shape, dtype=np.int64)))]


def lower_constant_of_shape(cx, node, ins, at):
    shape = _const_ints(ins[0], "ConstantOfShape's shape")
    fill = cx.tensor(at["value"]) if "value" in at else Const(np.array([Fraction(0)], dtype=object), "rat")
    v = fill.value.reshape(-1)[0]
    out = np.empty(shape, dtype=np.int64 if fill.kind == "int" else object)
    out[...] = v
    return [Const(out, fill.kind)]


def _need_const(ins, op):
    for v in ins:
        if v is not None and not isinstance(v, Const):
            raise LowerError(f"{op} on a value computed from the input (only constants fold)")


def _fold(f, kind=None):
    """An ONNX op evaluated on constants only (NumPy on ints/bools, exact on rationals)."""

    def lower(cx, node, ins, at):
        _need_const(ins, node.op_type)
        vals = [v.value if v is not None else None for v in ins]
        out = f(vals, at, ins)
        k = kind or ("int" if all(v.kind == "int" for v in ins if v is not None) else "rat")
        return [Const(np.asarray(out, dtype=np.int64) if k == "int" else _as_obj(out), k)]

    return lower


def _as_obj(a):
    a = np.asarray(a)
    if a.dtype == object:
        return a
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = [Fraction(int(x)) for x in a.reshape(-1)]
    return out


def _range(vals, at, ins):
    s, lim, d = (np.asarray(v).reshape(-1)[0] for v in vals)
    if d == 0:
        raise LowerError("Range with delta 0")
    n = max(int(-(-(lim - s) // d)), 0)
    return np.array([s + i * d for i in range(n)], dtype=object if ins[0].kind == "rat" else np.int64)


def _trilu(vals, at, ins):
    x = vals[0]
    k = int(np.asarray(vals[1]).reshape(-1)[0]) if len(vals) > 1 and vals[1] is not None else 0
    rows, cols = x.shape[-2:]
    i, j = np.indices((rows, cols))
    keep = (j - i >= k) if at.get("upper", 1) else (j - i <= k)
    zero = 0 if x.dtype != object else Fraction(0)
    return np.where(keep, x, zero)


def _cast(cx, node, ins, at):
    from onnx import TensorProto

    to = int(at["to"])
    to_int = to in ONNX_INTS or to == ONNX_BOOL
    x = ins[0]
    if isinstance(x, Dyn):
        if to == TensorProto.BOOL:
            return [truth(cx, x)]
        if to_int and x.kind != "int":
            raise LowerError("Cast from a float type to an integer type of a value computed from the input")
        # int -> int: the same integers; int -> float: the same numbers, as rationals; float -> float: the
        # real-number network has no rounding to undo
        return [x if to_int or x.kind != "int" else Dyn(x.name, x.shape, "rat")]
    if to == TensorProto.BOOL:
        return [int_const(np.asarray([v != 0 for v in x.value.reshape(-1)]).reshape(x.shape).astype(np.int64))]
    if to_int:
        if x.kind == "int":
            return [x]
        vals = [int(v) for v in x.value.reshape(-1)]  # truncation toward zero, as a float -> int cast does
        return [int_const(np.asarray(vals, dtype=np.int64).reshape(x.shape))]
    return [Const(_as_obj(x.value), "rat")]


def _expand(cx, node, ins, at):
    shape = _const_ints(ins[1], "Expand's shape")
    x = ins[0]
    target = np.broadcast_shapes(tuple(x.shape), tuple(shape))
    if isinstance(x, Const):
        return [Const(np.array(np.broadcast_to(x.value, target)), x.kind)]
    if tuple(target) == tuple(x.shape):
        return [x]
    if x.kind != "rat":
        raise LowerError("Expand of integer values computed from the input")
    zeros = np.empty(target, dtype=object)
    zeros[...] = Fraction(0)
    return cx.op("Add", [x, Const(zeros, "rat")], {}, 1)  # x + 0 broadcast: the same real function


def _binary_any(name, f_int):
    """Add/Sub/Mul/Div: integer arithmetic folds with ONNX's integer semantics; the rest is the table op."""

    def lower(cx, node, ins, at):
        if all(isinstance(v, Const) and v.kind == "int" for v in ins):
            return [int_const(f_int(ins[0].value, ins[1].value))]
        return cx.op(name, ins, {}, 1)

    return lower


def _int_div(a, b):
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if np.any(b == 0):
        raise LowerError("integer division by zero")
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _cmp(f):
    def go(vals, at, ins):
        a, b = vals
        return np.vectorize(lambda x, y: int(f(x, y)), otypes=[np.int64])(a, b)
    return go


def _gather_const_free(vals, at, ins):  # Tile
    return np.tile(vals[0], [int(r) for r in np.asarray(vals[1]).reshape(-1)])


LOWER = {
    # the op table (docs/verify-format.md)
    "Gather": lower_gather, "MatMul": _table("MatMul"), "Gemm": lower_gemm,
    "Add": _binary_any("Add", lambda a, b: np.add(a, b)), "Sub": _binary_any("Sub", lambda a, b: np.subtract(a, b)),
    "Mul": _binary_any("Mul", lambda a, b: np.multiply(a, b)), "Div": _binary_any("Div", _int_div),
    "Neg": _table("Neg"), "Relu": _table("Relu"), "Sqrt": _table("Sqrt"), "Reciprocal": _table("Reciprocal"),
    "Exp": _table("Exp"), "Tanh": _table("Tanh"), "Sigmoid": _table("Sigmoid"), "Erf": _table("Erf"),
    "Pow": lower_pow, "Gelu": lower_gelu, "Softmax": lower_softmax, "LayerNormalization": lower_layer_norm,
    "ReduceMean": lower_reduce_mean, "Reshape": lower_reshape, "Transpose": lower_transpose, "Split": lower_split,
    "Slice": lower_slice, "Concat": lower_concat, "Unsqueeze": lower_unsqueeze, "Squeeze": lower_squeeze,
    "Where": lower_where, "Identity": lower_identity, "IsNaN": lower_isnan, "IsInf": lower_isnan,
    # identities of the real-number network
    "Dropout": lower_dropout, "Cast": _cast, "CastLike": lambda cx, n, ins, at: _cast(cx, n, ins[:1], {"to": cx.elem_type(n.input[1])}),
    "Expand": _expand,
    # constant sub-graphs only (folded exactly; an error when they depend on the input)
    "Constant": lower_constant, "Shape": lower_shape, "Size": lower_size, "ConstantOfShape": lower_constant_of_shape,
    "Range": _fold(_range), "Trilu": _fold(_trilu), "Tile": _fold(_gather_const_free),
    # comparisons and logic: folded on constants, else table ops (0/1 ints)
    "Equal": _int_op(_fold(_cmp(lambda x, y: x == y), "int")), "Less": _int_op(_fold(_cmp(lambda x, y: x < y), "int")),
    "Greater": _int_op(_fold(_cmp(lambda x, y: x > y), "int")),
    "LessOrEqual": _int_op(_fold(_cmp(lambda x, y: x <= y), "int")),
    "GreaterOrEqual": _int_op(_fold(_cmp(lambda x, y: x >= y), "int")),
    "Not": _int_op(_fold(lambda v, at, ins: np.logical_not(np.asarray(v[0]).astype(bool)), "int")),
    "And": _int_op(_fold(lambda v, at, ins: np.logical_and(np.asarray(v[0]).astype(bool), np.asarray(v[1]).astype(bool)),
                         "int")),
    "Or": _int_op(_fold(lambda v, at, ins: np.logical_or(np.asarray(v[0]).astype(bool), np.asarray(v[1]).astype(bool)),
                        "int")),
    "CumSum": lower_cumsum, "Log": _table("Log"), "Softplus": _table("Softplus"), "Sin": _table("Sin"),
    "Cos": _table("Cos"), "LogSoftmax": lower_log_softmax, "Mish": lower_mish,
    "Mod": _fold(lambda v, at, ins: _mod(v, at)),
    "Abs": _fold(lambda v, at, ins: np.vectorize(abs, otypes=[object])(v[0])),
    "Min": _fold(lambda v, at, ins: _reduce_pairs(v, min)), "Max": _fold(lambda v, at, ins: _reduce_pairs(v, max)),
}


def _mod(vals, at):
    """ONNX Mod: the sign of the divisor (Python's %), or of the dividend with ``fmod=1`` (C's fmod)."""
    def one(x, y):
        if y == 0:
            raise LowerError("Mod by zero")
        r = x % y
        return r - y if at.get("fmod", 0) and r and (r < 0) != (x < 0) else r
    return np.vectorize(one, otypes=[object])(*vals)


def _reduce_pairs(vals, f):
    """Max/Min of constants, element-wise; NaN wins (ONNX), ±inf by the extended-real order."""
    nan = lambda v: isinstance(v, Special) and v.code == 2  # noqa: E731
    out = vals[0]
    for v in vals[1:]:
        out = np.vectorize(lambda x, y: x if nan(x) else y if nan(y) else f(x, y), otypes=[object])(out, v)
    return out


def slice_const(x, starts, ends, axes, steps):  # re-exported for tests
    try:
        return slice_array(x, starts, ends, axes, steps)
    except OpError as e:
        raise LowerError(str(e)) from None
