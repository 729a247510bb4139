"""ONNX in, the lowered graph of ``docs/verify-format.md`` out.

`load_onnx` reads a file or a ``ModelProto`` with the ``onnx`` package (its checker and
shape inference; local functions inlined); `lower` binds the one graph input to a fixed
shape — ``[1, n]`` token ids or ``[1, n, d]`` vectors — takes every stored weight exactly
(`exactmem.verify.floats`), walks the nodes in order through the per-operator table of
`exactmem.verify.ops` (folding constants where exact, emitting table ops otherwise) and
prunes what the output does not need. The result, `Lowered`, holds the ``model`` object
of the certificate (``Lowered.model_json``).

Every failure is a `VerifyInputError` with a one-line message; an operator outside the
table names itself, its node and its neighbours.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import missing_extra
from .floats import ONNX_FLOATS, ONNX_INTS, exact_array
from .kernels import ATTRS, OPS, ExactBackend, NotExact, OpError
from . import composite  # noqa: F401  (adds its compositions of table ops to ops.LOWER: Conv, GatherND, …)
from .ops import LOWER, Const, Dyn, LowerError
from .special import Special

__all__ = ["VerifyInputError", "load_onnx", "lower", "Lowered", "rational_str"]

ARITH = {"Add", "Sub", "Mul", "Div", "MatMul", "Gemm", "Neg", "Relu", "Sqrt", "Reciprocal", "Exp", "Tanh", "Sigmoid",
         "Erf", "Pow", "Gelu", "Softmax", "LayerNormalization", "ReduceMean", "Log", "Softplus", "Sin", "Cos"}
INT_ARITH = {"Add", "Sub", "Mul"}  # exact on integers too: integers in, integers out (token ids, positions, masks)
BOOLS = {"IsNaN", "IsInf", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or"}  # 0/1 ints


class VerifyInputError(ValueError):
    """Bad input for ``verify`` (model file, operator, data); the message is one line."""


def rational_str(q: Fraction) -> str:
    q = Fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def load_onnx(model) -> Any:
    """A checked ``onnx.ModelProto`` from a path, bytes or a ModelProto (one-line errors)."""
    try:
        import onnx
    except ImportError:
        raise VerifyInputError(str(missing_extra("reading ONNX", "onnx", "verify"))) from None
    what = "the model"
    try:
        if isinstance(model, (str, os.PathLike)):
            what = str(model)
            model = onnx.load(str(model))
        elif isinstance(model, bytes):
            model = onnx.load_from_string(model)
        elif not isinstance(model, onnx.ModelProto):
            raise VerifyInputError(f"expected an ONNX file, ModelProto or torch.nn.Module, got {type(model).__name__}")
        onnx.checker.check_model(model)
        if model.functions:
            from onnx import inliner

            model = inliner.inline_local_functions(model)
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except VerifyInputError:
        raise
    except FileNotFoundError:
        raise VerifyInputError(f"{what}: no such file") from None
    except Exception as e:  # onnx raises DecodeError, ValidationError, InferenceError, ...
        msg = " ".join(str(e).split()) or type(e).__name__
        raise VerifyInputError(f"{what} is not a valid ONNX model: {msg[:300]}") from None
    return model


@dataclass
class Lowered:
    """The lowered network: graph JSON pieces plus what the caller needs to bind data."""

    input_name: str
    output_name: str
    input_type: str  # "tokens" or "vectors"
    n: int
    dim: Optional[int]
    vocab: Optional[int]
    out_shape: Tuple[int, ...]
    constants: Dict[str, Dict[str, Any]]
    nodes: List[Dict[str, Any]]
    source_ops: Dict[str, int] = field(default_factory=dict)
    shape: Optional[Tuple[int, ...]] = None  # a tensor input's shape (an image's C x H x W): model.input.shape

    def model_json(self, position: str, decode: str = "argmax") -> Dict[str, Any]:
        inp = {"type": "tokens", "vocab": self.vocab} if self.input_type == "tokens" else \
            {"type": "vectors", "dim": self.dim, **({"shape": list(self.shape)} if self.shape else {})}
        return {"input": inp, "graph": {"input": self.input_name, "output": self.output_name,
                                        "constants": self.constants, "nodes": self.nodes},
                "readout": {"position": position, "decode": decode}}

    @property
    def n_classes(self) -> int:
        return self.out_shape[-1]


class _Shape:
    """Backend that only carries shapes (zeros), to learn the shape of an emitted node's outputs."""

    def num(self, q):
        return 0

    def matmul(self, a, b):
        return np.zeros(np.matmul(np.zeros(a.shape, np.int8), np.zeros(b.shape, np.int8)).shape, dtype=object)

    def recip(self, x):
        return x

    exp = tanh = erf = sqrt = log = softplus = sin = cos = recip

    def softmax(self, x, axis):
        return x

    def pi(self):
        return 1


class _Exact(ExactBackend):
    def pi(self):
        raise NotExact("pi")


class Lowering:
    """The importer's state while it walks the nodes: values by ONNX name, emitted graph."""

    def __init__(self, model, opset: int):
        self.model, self.opset = model, opset
        self.values: Dict[str, Any] = {}
        self.constants: Dict[str, Dict[str, Any]] = {}
        self.nodes: List[Dict[str, Any]] = []
        self.used = set()
        self.bools = set()  # names of emitted 0/1 ints (IsNaN, comparisons, Not/And/Or): a Where may test them
        self._const_names: Dict[int, str] = {}
        self._keep: List[Const] = []
        self.node = None
        self.types = {vi.name: vi.type.tensor_type.elem_type for vi in
                      list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}

    def elem_type(self, name):
        v = self.values.get(name)
        if isinstance(v, (Const, Dyn)):
            from onnx import TensorProto
            return TensorProto.INT64 if v.kind == "int" else TensorProto.FLOAT
        return self.types.get(name, 1)

    # --- constants
    def tensor(self, proto) -> Const:
        from onnx import numpy_helper, TensorProto

        arr = numpy_helper.to_array(proto)
        if proto.data_type in ONNX_FLOATS:
            fmt = "bfloat16" if proto.data_type == TensorProto.BFLOAT16 else None  # ±inf, NaN: Special values
            return Const(exact_array(arr.view(np.uint16) if fmt else arr, fmt, special=True), "rat")
        if arr.dtype.kind in "iub":
            return Const(arr.astype(np.int64), "int")
        raise VerifyInputError(f"tensor {proto.name!r} has element type {arr.dtype} (numbers only)")

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}__{k}"
        self.used.add(name)
        return name

    def const_name(self, c: Const, hint: str) -> str:
        key = id(c)
        if key in self._const_names:
            return self._const_names[key]
        name = self.fresh(c.name or hint)
        flat = c.value.reshape(-1)
        if c.kind == "int":
            body = {"shape": list(c.shape), "ints": [int(v) for v in flat]}
        else:
            body = {"shape": list(c.shape), "values": [repr(v) if isinstance(v, Special) else rational_str(v) for v in flat]}
        self.constants[name] = body
        self._const_names[key] = name
        self._keep.append(c)  # keep id() stable
        return name

    # --- ops
    def op(self, name: str, ins: List[Any], attrs: Dict[str, Any], n_out: int) -> List[Any]:
        ints = name in INT_ARITH and all(v.kind == "int" for v in ins if v is not None)  # integer arithmetic
        kind = "int" if ints or name in BOOLS else "rat" if name in ARITH else _kind(name, ins)
        if name in ARITH and not ints:
            data = (0,) if name in ("ReduceMean", "Pow") else range(len(ins))  # axes and exponents stay as they are
            ins = [Const(_as_rat(v.value), "rat", v.name) if isinstance(v, Const) and v.kind == "int" and k in data
                   else v for k, v in enumerate(ins)]
        if all(v is None or isinstance(v, Const) for v in ins):
            try:
                outs = OPS[name](_Exact(), [None if v is None else v.value for v in ins], attrs)
                return [Const(np.asarray(o) if kind == "int" else _as_rat(o), kind) for o in outs]
            except NotExact:
                pass
            except (OpError, ZeroDivisionError, ValueError, IndexError) as e:
                raise LowerError(f"{name}: {e}") from None
        for v in ins:
            if isinstance(v, Dyn) and v.kind == "int" and name in ARITH and not ints:
                raise LowerError(f"{name} on integer values computed from the input")
        proxies = [None if v is None else (v.value if isinstance(v, Const) and v.kind == "int" else
                                           np.zeros(v.shape, dtype=np.int64 if v.kind == "int" else object))
                   for v in ins]
        try:
            shapes = [o.shape for o in OPS[name](_Shape(), proxies, attrs)]
        except (OpError, ValueError, IndexError) as e:
            raise LowerError(f"{name}: {' '.join(str(e).split())}") from None
        node_outs = list(self.node.output)
        outs, names = [], []
        for i, shp in enumerate(shapes):
            nm = self.fresh(node_outs[i] if i < len(node_outs) and node_outs[i] else f"{self.node.name}_out{i}")
            names.append(nm)
            outs.append(Dyn(nm, tuple(int(s) for s in shp), kind))
        in_names = []
        for i, v in enumerate(ins):
            if v is None:
                continue
            in_names.append(v.name if isinstance(v, Dyn) else self.const_name(v, f"{names[0]}__in{i}"))
        at = {k: (rational_str(v) if ATTRS.get(name, {}).get(k) is Fraction else v) for k, v in attrs.items()}
        self.nodes.append({"op": name, "inputs": in_names, "outputs": names, "attrs": at})
        if name in BOOLS:
            self.bools.update(names)
        return outs

    def unused(self, node, outputs, what):
        for o in outputs:
            if o:
                self.values[o] = _Unavailable(what)


@dataclass
class _Unavailable:
    what: str


def _kind(name, ins):
    src = ins[1] if name == "Where" else ins[0]
    return src.kind


def _as_rat(a):
    a = np.asarray(a)
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = [v if isinstance(v, (Fraction, Special)) else Fraction(int(v)) if not isinstance(v, (bool, np.bool_))
                          else Fraction(int(v)) for v in a.reshape(-1)]
    return out


def _describe(node):
    return f"{node.op_type} {node.name!r}" if node.name else node.op_type


def _where(model, node) -> str:
    prod, cons = {}, {}
    for nd in model.graph.node:
        for o in nd.output:
            prod[o] = nd
        for i in nd.input:
            cons.setdefault(i, []).append(nd)
    inits = {t.name for t in model.graph.initializer}
    graph_in = {i.name for i in model.graph.input} - inits
    graph_out = {o.name for o in model.graph.output}
    src = []
    for i in node.input:
        if i in prod:
            src.append(_describe(prod[i]))
        elif i in graph_in:
            src.append(f"the graph input {i!r}")
        elif i in inits:
            src.append(f"the initializer {i!r}")
    dst = []
    for o in node.output:
        dst += [_describe(c) for c in cons.get(o, [])]
        if o in graph_out:
            dst.append(f"the graph output {o!r}")
    uniq = lambda xs: ", ".join(dict.fromkeys(xs)) or "nothing"
    return f"node {node.name or '(unnamed)'!r}, output of {uniq(src)}, input of {uniq(dst)}"


def lower(model, n: int, dim: Optional[int] = None, shape: Optional[Tuple[int, ...]] = None) -> Lowered:
    """Lower a checked ModelProto for examples of length ``n`` (token ids, or vectors of ``dim``), or for
    float tensors of ``shape`` (an image C x H x W: the graph input is [1, *shape])."""
    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    cx = Lowering(model, opset)
    inits = {t.name: t for t in g.initializer}
    inputs = [i for i in g.input if i.name not in inits]
    if len(inputs) != 1:
        raise VerifyInputError(f"the model has {len(inputs)} graph inputs "
                               f"({', '.join(i.name for i in inputs) or 'none'}); verify needs exactly one "
                               "(the token ids or the input vectors)")
    if not g.output:
        raise VerifyInputError("the model has no graph output")
    inp = inputs[0]
    tt = inp.type.tensor_type
    is_int = tt.elem_type in ONNX_INTS
    want = (1, n) if is_int else (1, *shape) if shape is not None else (1, n, dim)
    if not is_int and dim is None:
        raise VerifyInputError(f"the model's input {inp.name!r} takes float vectors; the data holds token ids")
    if is_int and dim is not None:
        raise VerifyInputError(f"the model's input {inp.name!r} takes token ids; the data holds vectors")
    declared = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim] if tt.HasField("shape") else None
    if declared is not None and (len(declared) != len(want) or
                                 any(d is not None and d != w for d, w in zip(declared, want))):
        raise VerifyInputError(f"the model's input {inp.name!r} has shape "
                               f"{['?' if d is None else d for d in declared]}; the data needs {list(want)}")
    cx.used.add(inp.name)
    cx.values[inp.name] = Dyn(inp.name, want, "int" if is_int else "rat")
    for name, t in inits.items():
        c = cx.tensor(t)
        c.name = name
        cx.values[name] = c
    counts: Dict[str, int] = {}
    for node in g.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
        fn = LOWER.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if fn is None:
            op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
            raise VerifyInputError(f"cannot lower ONNX operator {op} ({_where(model, node)})")
        ins = []
        for i in node.input:
            if not i:
                ins.append(None)
                continue
            v = cx.values.get(i)
            if isinstance(v, _Unavailable):
                raise VerifyInputError(f"cannot lower ONNX operator {node.op_type} ({_where(model, node)}): "
                                       f"it uses {v.what}")
            if v is None:
                raise VerifyInputError(f"input {i!r} of {_describe(node)} is defined nowhere")
            ins.append(v)
        import onnx.helper as oh

        at = {a.name: oh.get_attribute_value(a) for a in node.attribute}
        cx.node = node
        try:
            outs = fn(cx, node, ins, at)
        except VerifyInputError:
            raise
        except Exception as e:  # LowerError, OpError, or a malformed node the checker let through
            raise VerifyInputError(f"cannot lower ONNX operator {node.op_type} ({_where(model, node)}): "
                                   f"{' '.join(str(e).split()) or type(e).__name__}") from None
        for o, v in zip(node.output, outs):
            if o:
                cx.values[o] = v if v is not None else _Unavailable(f"output {o!r} of {node.op_type}")
    out_name = g.output[0].name
    out = cx.values.get(out_name)
    if not isinstance(out, Dyn):
        raise VerifyInputError(f"the graph output {out_name!r} does not depend on the input")
    if len(out.shape) not in (2, 3) or out.shape[0] != 1 or (len(out.shape) == 3 and out.shape[1] != n):
        raise VerifyInputError(f"the graph output {out_name!r} has shape {list(out.shape)}; "
                               f"verify reads [1, {n}, C] or [1, C]")
    nodes, constants = _prune(cx.nodes, cx.constants, out.name)
    vocab = _vocab(nodes, constants, inp.name) if is_int else None
    return Lowered(inp.name, out.name, "tokens" if is_int else "vectors", n, dim, vocab, out.shape, constants,
                   nodes, counts, None if is_int or shape is None else tuple(shape))


def _prune(nodes, constants, output):
    need = {output}
    keep = []
    for nd in reversed(nodes):
        if any(o in need for o in nd["outputs"]):
            keep.append(nd)
            need.update(nd["inputs"])
    keep.reverse()
    return keep, {k: v for k, v in constants.items() if k in need}


def _vocab(nodes, constants, input_name):
    """The number of rows of the embeddings that the token ids index (the least, if several)."""
    ids = {input_name}
    vocab = []
    for nd in nodes:
        if nd["op"] in ("Reshape", "Unsqueeze", "Squeeze", "Identity", "Transpose", "Slice", "Split") and \
                nd["inputs"] and nd["inputs"][0] in ids or nd["op"] in ("Where", "Concat") and set(nd["inputs"]) & ids \
                or nd["op"] == "Gather" and nd["inputs"][0] in ids and nd["inputs"][1] not in ids:
            ids.update(nd["outputs"])  # still token ids (Where: masked_fill of ids, e.g. -100 -> pad; Concat with a
            # start token and a Gather at constant positions: BART's shift_tokens_right)
        elif nd["op"] == "Gather" and len(nd["inputs"]) == 2 and nd["inputs"][1] in ids:
            data = constants.get(nd["inputs"][0])
            if data is None:
                raise VerifyInputError(f"the token ids index {nd['inputs'][0]!r}, which is not a stored embedding")
            vocab.append(data["shape"][nd["attrs"].get("axis", 0)])
        elif any(i in ids for i in nd["inputs"]) and nd["op"] not in {"Gather", "CumSum"} | BOOLS | INT_ARITH:
            raise VerifyInputError(f"the token ids feed {nd['op']} ({nd['outputs'][0]!r}): only embeddings "
                                   "(Gather), shape operators, comparisons and integer arithmetic may take them")
    if not vocab:
        raise VerifyInputError("the token ids reach no embedding (Gather on a stored table)")
    return min(vocab)
