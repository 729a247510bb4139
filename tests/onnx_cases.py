"""ONNX's own backend node cases, run through the kernel's op table and the producer's (issue 38).

ONNX semantics are what the ``onnx`` package's backend node test cases say
(``onnx.backend.test.case.node.collect_testcases``). A case here is one single-node ONNX model whose
operator is in the lowered network's op table (``docs/verify-format.md``) and its data sets (inputs,
expected outputs). :func:`kernel_run` builds a ``model.graph`` with the case's inputs as constants
(floats taken exactly from their bits, integers as ``ints``) and the node with its attributes, parses it
with the kernel's own parser (so attribute validation runs) and evaluates the node with the kernel's
``OPS`` functions; :func:`producer_run` does the same through the producer's table
(``exactmem.verify.evaluate.Program`` with python-flint balls). Each output is a list of exact
rational intervals, compared with the expected floats by :func:`judge`.

A case that falls outside the table is *refused* with one line: the kernel's ``MalformedCertificate``
or ``ShapeError``, the producer's ``OpError``, or — before either runs — :class:`Refused` for what
the table cannot express at all (a dtype: integer division or wrap-around integer arithmetic; an
output the table lacks). Nothing here is trusted; it is a test harness.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from exactmem.kernel import graph as kg
from exactmem.kernel.fields import MalformedCertificate
from exactmem.kernel.limits import Budget
from exactmem.kernel.schema import _Reader
from exactmem.verify.floats import FORMATS, NonFinite, decode_bits, exact_array, exact_scalar
from exactmem.verify.kernels import OpError

TABLE = tuple(kg.OPS)
STRUCTURAL = {"Gather", "Identity", "Reshape", "Transpose", "Split", "Slice", "Concat", "Unsqueeze", "Squeeze",
              "Where", "Neg", "Relu", "IsNaN", "IsInf", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
              "And", "Or"}  # no rounding anywhere: the expected value itself must be enclosed
ARITH = set(TABLE) - STRUCTURAL - {"Identity"}


class Refused(Exception):
    """The case needs something the lowered table cannot express (one line)."""


@lru_cache(maxsize=1)
def cases():
    """(name, node, data_sets) of every single-node backend case whose operator is in the table."""
    from onnx.backend.test.case.node import collect_testcases

    out = []
    for c in collect_testcases(None):
        nodes = list(c.model.graph.node)
        if len(nodes) == 1 and nodes[0].op_type in TABLE and nodes[0].domain in ("", "ai.onnx"):
            out.append((c.name, nodes[0], c.data_sets, c.model))
    return out


def rat(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def _fmt(a: np.ndarray):
    return "bfloat16" if a.dtype.name == "bfloat16" else a.dtype.name if a.dtype.kind == "f" else None


def constant(a) -> dict:
    """A numpy array as a graph constant: floats exactly (``values``; ±inf and NaN as their texts),
    integers and bools as ``ints``."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return {"shape": list(a.shape), "values": [rat(v) if isinstance(v, Fraction) else repr(v)
                                                   for v in exact_array(a, special=True).reshape(-1)]}
    if a.dtype.kind in "iub":
        return {"shape": list(a.shape), "ints": [int(v) for v in a.reshape(-1)]}
    raise Refused(f"dtype {a.dtype}: no rational value")


def attrs(node) -> dict:
    """The node's ONNX attributes as JSON (floats as the exact rationals of their float32 values)."""
    import onnx.helper as oh

    out = {}
    for at in node.attribute:
        v = oh.get_attribute_value(at)
        if isinstance(v, float):
            v = rat(exact_scalar(v))
        elif isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, (list, tuple)) and all(isinstance(x, int) for x in v):
            v = list(v)
        elif not isinstance(v, int):
            raise Refused(f"attribute {at.name} of type {type(v).__name__}")
        out[at.name] = v
    return out


def graph_json(node, inputs, n_out=None) -> dict:
    """``model.graph`` JSON: the inputs as constants named after the node's inputs, then the node."""
    names = [n if n else "" for n in node.input]
    consts = {n: constant(a) for n, a in zip(names, inputs) if n}
    outs = list(node.output)[:n_out]
    if node.op_type in ARITH and any(np.asarray(a).dtype.kind in "iub" for a in inputs[:1 if node.op_type == "Pow" else 2]):
        if node.op_type in ("Div", "Reciprocal") or any(np.asarray(a).dtype.kind == "u" for a in inputs):
            raise Refused(f"integer {node.op_type} (ONNX truncates or wraps; the table's arithmetic is on rationals)")
    return {"input": "__x", "output": outs[0], "constants": consts,
            "nodes": [{"op": node.op_type, "inputs": names, "outputs": outs, "attrs": attrs(node)}]}


def table_outputs(node):
    """How many of the node's outputs the table defines (LayerNormalization: Y only; the importer
    lowers Mean and InvStdDev only when unused)."""
    return 1 if node.op_type == "LayerNormalization" else len(node.output)


def _intervals(t: kg.T):
    """(shape, [(lo, hi)]): Fractions, or a special value's text twice."""
    d, sp = Fraction(1, 1 << t.s), t.sp or [0] * len(t.lo)
    return t.shape, [(kg.NAMES[c],) * 2 if c else (lo * d, hi * d) for lo, hi, c in zip(t.lo, t.hi, sp)]


def kernel_run(node, inputs, F=256):
    """The kernel's outputs [(shape, [(lo, hi) Fractions])], parsed by ``parse_graph``; raises
    Refused / MalformedCertificate / ShapeError / Undecided."""
    g = graph_json(node, inputs, table_outputs(node))
    budget = Budget()
    G, _ = kg.parse_graph(g, _Reader(budget))
    env = dict(G.constants(F)[0])  # (constants, bits they hold)
    cx = SimpleNamespace(F=F, budget=budget, tick=budget.tick)
    (op, fn, ins, outs, a), = G.nodes
    r = fn(cx, a, *[env[v] if v else None for v in ins])
    r = r if isinstance(r, list) else [r]
    kg.need(len(r) == len(outs), f"{len(r)} outputs, the node names {len(outs)}")
    return [_intervals(t) for t in r]


def _ball(v):
    from exactmem.verify.special import Special

    if isinstance(v, Special):
        return repr(v), repr(v)
    if isinstance(v, (int, np.integer, Fraction)):
        return Fraction(v), Fraction(v)
    m, r = (Fraction(int(a)) * (Fraction(2) ** int(b)) for a, b in (v.mid().man_exp(), v.rad().man_exp()))
    return m - r, m + r


def producer_run(node, inputs, prec=256):
    """The producer's outputs, through ``Program`` (attribute parsing) and ``kernels.OPS`` in balls."""
    from exactmem.verify.evaluate import ArbBackend, Program

    g = graph_json(node, inputs, table_outputs(node))
    model = {"input": {"type": "tokens", "vocab": 1}, "graph": g, "readout": {"position": "last"}}
    prog = Program(model)
    K = ArbBackend(prec)
    K.activate()
    out = []
    for name in g["nodes"][0]["outputs"]:
        prog.output_name = name
        a = np.asarray(prog.run(K, None))
        out.append((a.shape, [_ball(v) for v in a.reshape(-1)]))
    return out


def ulp(bits: int, fmt: str) -> Fraction:
    """The gap between the float with these bits and its neighbour away from zero (exact)."""
    total, ebits, mbits, _ = FORMATS[fmt]
    e = bits >> mbits & ((1 << ebits) - 1)
    return Fraction(2) ** (max(e, 1) - ((1 << (ebits - 1)) - 1) - mbits)


def expected(a):
    """Expected outputs as [(value, ulp or None)]: floats exactly from their bits (±inf and NaN as
    their texts, which must be matched exactly), integers exact."""
    a = np.asarray(a)
    fmt = _fmt(a)
    if fmt is None:
        return [(Fraction(int(v)), None) for v in a.reshape(-1)]
    out = []
    for b in a.view(FORMATS[fmt][3]).reshape(-1).tolist():
        try:
            out.append((decode_bits(b, fmt), ulp(b, fmt)))
        except NonFinite as e:
            out.append(({"NaN": "nan", "+inf": "inf"}.get(e.what, e.what), None))
    return out


# float32 results of an arithmetic op are rounded; the true real value lies within this many ulps
# of ONNX's expected float: 1 for one correctly rounded step (+ − × ÷ √); 4 for numpy's float32
# exp/tanh/erf (vectorised, not correctly rounded: documented within 4 ulps); more where the reference
# chains several float32 steps (MatMul/Gemm accumulate, Softmax/Gelu/LayerNorm compose).
ULPS = {"Add": 1, "Sub": 1, "Mul": 1, "Div": 1, "Reciprocal": 1, "Sqrt": 1, "Exp": 4, "Tanh": 4, "Erf": 4,
        "Sigmoid": 2, "Pow": 2, "MatMul": 8, "Gemm": 8, "ReduceMean": 4, "Softmax": 8, "Gelu": 8,
        "LayerNormalization": 64, "Log": 4, "Sin": 4, "Cos": 4, "Softplus": 8, "CumSum": 8}


def judge(op, got, want, floor=0):
    """None when every output encloses the expected values, else a one-line reason.

    Structural ops: the interval must contain the expected value exactly. Arithmetic ops: it must
    contain it, or — the expected float being ONNX's rounded float32 result of the real value — meet
    [expected − n·ulp, expected + n·ulp] (n = ULPS[op], the ulp computed exactly from the float's bits;
    ``floor``: a least ulp, for chains of float steps whose error scales with their inputs, not the
    result — a cancellation such as LayerNormalization's x − mean)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for k, ((shape, iv), w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        if tuple(shape) != tuple(w.shape):
            return f"output {k}: shape {list(shape)}, expected {list(w.shape)}"
        for i, ((lo, hi), (v, u)) in enumerate(zip(iv, expected(w))):
            if isinstance(v, str) or isinstance(lo, str):  # a special value: the same one, exactly
                if lo != v:
                    return f"output {k}[{i}]: {lo!r}, expected {v!r}"
                continue
            if lo <= v <= hi:
                continue
            n = ULPS.get(op) if u is not None else None
            u = max(u, floor) if u is not None else None
            if n is None or not (lo <= v + n * u and v - n * u <= hi):
                return f"output {k}[{i}]: [{float(lo)!r}, {float(hi)!r}] misses {float(v)!r}"
    return None


KERNEL_REFUSALS = (Refused, MalformedCertificate, kg.ShapeError)
PRODUCER_REFUSALS = (Refused, OpError, ValueError, IndexError, ZeroDivisionError)  # what the importer
# turns into its one-line LowerError (numpy's broadcast and axis errors are ValueErrors)


def outcome(run, op, node, data_sets, refusals, floor=0):
    """("enclosed", None) | ("refused", reason class and line) | ("failing", why), over every data set."""
    for inputs, outputs in data_sets:
        try:
            got = run(node, list(inputs))
        except refusals as e:
            return "refused", f"{type(e).__name__}: {' '.join(str(e).split())}"
        except Exception as e:  # noqa: BLE001 -- anything else is a failure to conform
            return "failing", f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
        why = judge(op, got, list(outputs)[:table_outputs(node)], floor)
        if why:
            return "failing", why
    return "enclosed", None


def table(run, refusals):
    """{op: {"enclosed": n, "refused": n, "failing": n}} and the per-case outcomes."""
    counts, rows = {op: {"enclosed": 0, "refused": 0, "failing": 0} for op in TABLE}, []
    for name, node, data_sets, _ in cases():
        kind, why = outcome(run, node.op_type, node, data_sets, refusals)
        counts[node.op_type][kind] += 1
        rows.append((name, node.op_type, kind, why))
    return counts, rows


# ----------------------------------------------------------------------------- differential fuzzing

IRRATIONAL = {"Sqrt", "Exp", "Tanh", "Erf", "Sigmoid", "Gelu", "Softmax", "LayerNormalization"}
FUZZ_OPSET = 20
RUNTIME_ORACLE = ("Slice", "Softmax")  # see reference()  # Gelu joined ONNX at opset 20


def _vals(rng, shape, positive=False):
    """Small dyadic float64 values (k/4, |k| <= 8): exact in the reference's float arithmetic."""
    v = rng.integers(1 if positive else -8, 9, size=shape) / 4
    return v.astype(np.float64)


def _shape(rng, rank=None, zero=True):
    rank = int(rng.integers(0, 4)) if rank is None else rank
    return tuple(int(rng.integers(0 if zero and rng.random() < 0.1 else 1, 4)) for _ in range(rank))


def _axes(rng, r, k=None):
    """Axes for rank r: usually valid and distinct, sometimes negative, repeated or out of range."""
    k = int(rng.integers(0, max(r, 1) + 1)) if k is None else k
    ax = [int(v) for v in rng.choice(np.arange(-r, r), size=k, replace=False)] if r and k <= r else []
    if rng.random() < 0.15 and ax:
        ax.append(ax[0] if rng.random() < 0.5 else (ax[0] + r) % r - r if ax[0] >= 0 else ax[0] + r)  # a repeat
    if rng.random() < 0.08:
        ax.append(int(rng.choice([r, -r - 1])))  # out of range
    return ax


def _i(v):
    return np.asarray(v, dtype=np.int64)


def random_case(rng):
    """(op, ONNX attributes, inputs) of one random node of the table (graph inputs as arrays)."""
    op = str(rng.choice(["Add", "Sub", "Mul", "Div", "Pow", "Neg", "Relu", "Sqrt", "Reciprocal", "Exp", "Tanh", "Erf",
                         "Sigmoid", "Identity", "Gather", "Gemm", "Gelu", "Softmax", "LayerNormalization", "ReduceMean",
                         "MatMul", "Reshape", "Transpose", "Split", "Slice", "Concat", "Unsqueeze", "Squeeze", "Where"]))
    s = _shape(rng)
    r = len(s)
    if op in ("Add", "Sub", "Mul", "Div"):
        t = tuple(d if rng.random() < 0.6 else 1 for d in s[int(rng.integers(0, r + 1)):])
        t = t if rng.random() < 0.9 else _shape(rng)  # sometimes not broadcastable
        a, b = (t, s) if rng.random() < 0.5 else (s, t)
        return op, {}, [_vals(rng, a), _vals(rng, b, positive=op == "Div")]
    if op == "Pow":
        k = [0, 1, 2, 3, 0.5][int(rng.integers(0, 5))]
        return op, {}, [_vals(rng, s, positive=k == 0.5), np.full((1,) * int(rng.integers(0, 4)), k, np.float64)]
    if op in ("Neg", "Relu", "Sqrt", "Reciprocal", "Exp", "Tanh", "Erf", "Sigmoid", "Identity"):
        return op, {}, [_vals(rng, s, positive=op in ("Sqrt", "Reciprocal"))]
    if op == "Gelu":
        return op, {"approximate": str(rng.choice(["none", "tanh"]))}, [_vals(rng, s)]
    if op == "MatMul":
        n, k, m = (int(rng.integers(1, 4)) for _ in range(3))
        lead = _shape(rng, int(rng.integers(0, 2)), zero=False)
        a = (k,) if rng.random() < 0.2 else lead + (n, k)
        b = (k,) if rng.random() < 0.2 else (lead[int(rng.integers(0, len(lead) + 1)):] + (k, m))
        return op, {}, [_vals(rng, a), _vals(rng, b)]
    if op == "Gemm":
        n, k, m = (int(rng.integers(1, 4)) for _ in range(3))
        ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        at = {"transA": ta, "transB": tb, "alpha": float(rng.integers(-4, 5) / 2), "beta": float(rng.integers(-4, 5) / 2)}
        c = [_vals(rng, [(n, m), (m,), (1, m), (n, 1)][int(rng.integers(0, 4))])] if rng.random() < 0.7 else []
        return op, at, [_vals(rng, (k, n) if ta else (n, k)), _vals(rng, (m, k) if tb else (k, m))] + c
    if op == "Softmax":  # rank >= 1: ONNX's axis range [-r, r - 1] is empty for a scalar
        s = s or (2,)
        r = len(s)
        return op, {"axis": int(rng.integers(-r - 1, r + 1))}, [_vals(rng, s)]
    if op == "LayerNormalization":
        s = s or (2,)
        return op, {"axis": -1, "epsilon": float(rng.choice([1e-5, 0.25]))}, [_vals(rng, s), _vals(rng, s[-1:]), _vals(rng, s[-1:])]
    if op == "ReduceMean":
        return op, {"keepdims": int(rng.integers(0, 2))}, [_vals(rng, s), _i(_axes(rng, r))]
    if op == "Gather":
        s = s or (3,)
        ax = int(rng.integers(-len(s), len(s)))
        d = s[ax]
        ix = rng.integers(-d, d, size=_shape(rng, int(rng.integers(0, 3)), zero=False)) if d else _i([])
        return op, {"axis": ax}, [_vals(rng, s), _i(ix)]
    if op == "Reshape":
        n = int(np.prod(s))
        t = list(rng.permutation(list(s))) if rng.random() < 0.7 else [n] if rng.random() < 0.5 else [n, 1]
        if t and rng.random() < 0.3:
            t[int(rng.integers(0, len(t)))] = -1
        return op, {}, [_vals(rng, s), _i(t)]
    if op == "Transpose":
        at = {"perm": [int(v) for v in rng.permutation(r)]} if rng.random() < 0.8 and r else {}
        if at and rng.random() < 0.1 and r:
            at["perm"][0] = at["perm"][-1] if r > 1 else r
        return op, at, [_vals(rng, s)]
    if op == "Split":
        s = s or (3,)
        ax = int(rng.integers(-len(s), len(s)))
        d, parts = s[ax], int(rng.integers(1, 4))
        cuts = sorted(int(v) for v in rng.integers(0, d + 1, size=parts - 1))
        sizes = [b - a for a, b in zip([0] + cuts, cuts + [d])]
        return op, {"axis": ax}, [_vals(rng, s), _i(sizes)], parts
    if op == "Slice":
        s = s or (3,)
        ax = _axes(rng, len(s), int(rng.integers(1, len(s) + 1)))
        big = lambda: int(rng.choice([-9, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 9]))  # noqa: E731
        st = [int(rng.choice([-3, -2, -1, 1, 2])) for _ in ax]
        ins = [_vals(rng, s), _i([big() for _ in ax]), _i([big() for _ in ax]), _i(ax), _i(st)]
        return op, {}, ins
    if op == "Concat":
        s = s or (2,)
        ax = int(rng.integers(-len(s), len(s)))
        parts = [tuple(int(rng.integers(0, 3)) if i == ax % len(s) else d for i, d in enumerate(s)) for _ in range(int(rng.integers(1, 4)))]
        return op, {"axis": ax}, [_vals(rng, p) for p in parts]
    if op == "Unsqueeze":
        k = int(rng.integers(1, 3))
        return op, {}, [_vals(rng, s), _i(_axes(rng, r + k, k))]
    if op == "Squeeze":
        s = tuple(1 if rng.random() < 0.5 else d for d in s)
        return op, {}, [_vals(rng, s), _i(_axes(rng, r))]
    # Where
    c = tuple(d if rng.random() < 0.7 else 1 for d in s)
    return op, {}, [rng.random(c) < 0.5, _vals(rng, s), _vals(rng, s[int(rng.integers(0, r + 1)):])]


def onnx_node(op, attrs, inputs, n_out=1):
    import onnx.helper as oh

    return oh.make_node(op, [f"x{k}" for k in range(len(inputs))], [f"y{k}" for k in range(n_out)], **attrs)


def reference(node, inputs, runtime=False):
    """ONNX's answer: a list of arrays, or an Exception when ONNX says the node is invalid.
    ``runtime``: onnxruntime instead of ``onnx.reference``, for Slice (the reference slices as numpy
    does for a start below −dim with a negative step, contrary to the operator's definition and to
    onnxruntime) and Softmax (the reference accepts an axis outside [−r, r − 1] on an empty tensor)."""
    import onnx
    import onnx.helper as oh
    from onnx import TensorProto as TP

    def vi(name, a):
        ty = TP.BOOL if a.dtype == bool else TP.INT64 if a.dtype.kind == "i" else TP.DOUBLE
        return oh.make_tensor_value_info(name, ty, a.shape)

    outs = [oh.make_tensor_value_info(o, TP.DOUBLE, None) for o in node.output]
    g = oh.make_graph([node], "fuzz", [vi(n, a) for n, a in zip(node.input, inputs)], outs)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", FUZZ_OPSET)])
    m.ir_version = 9
    try:
        if runtime:
            import onnxruntime as ort

            sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            return sess.run(None, dict(zip(node.input, inputs)))
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(m).run(None, dict(zip(node.input, inputs)))
    except Exception as e:  # noqa: BLE001 -- ONNX refuses the node
        return e


SPECIAL_FUZZ = {"Add", "Sub", "Mul", "Div", "Neg", "Reciprocal", "Softmax", "Where", "Identity", "Gather", "Reshape",
                "Transpose", "Split", "Slice", "Concat", "Unsqueeze", "Squeeze"}  # ops with rules for -inf, inf, nan


def _special(rng, a, p):
    """A float array with each entry -inf, inf or nan with chance p (-inf the likeliest, as in masks)."""
    if a.dtype.kind != "f" or not a.size:
        return a
    a = np.array(a, dtype=a.dtype)  # a 0-d array stays an array
    hit = rng.random(a.shape) < p
    a[hit] = rng.choice([-np.inf, -np.inf, np.inf, np.nan], size=int(hit.sum()))
    return a


def fuzz_one(rng, special=0.0):
    """One random node: ("decided", agreement) | ("skipped", why). Agreement: True when both tables
    enclose ONNX's finite value, or both refuse a node ONNX refuses. ``special``: with this chance an
    input entry of an op of ``SPECIAL_FUZZ`` is -inf, inf or nan; ONNX's special results must then be
    matched exactly (docs/verify-format.md § Special values)."""
    case = random_case(rng)
    op, attrs, inputs = case[:3]
    if special and op in SPECIAL_FUZZ:
        inputs = [_special(rng, a, special) for a in inputs]
    node = onnx_node(op, attrs, inputs, case[3] if len(case) > 3 else 1)
    with np.errstate(all="ignore"):
        want = reference(node, inputs, runtime=op in RUNTIME_ORACLE)
    if isinstance(want, Exception):
        ok = []
        for run, refusals in ((kernel_run, KERNEL_REFUSALS), (producer_run, PRODUCER_REFUSALS)):
            try:
                run(node, inputs)
                ok.append(f"{run.__name__} accepts a node ONNX refuses ({type(want).__name__}: {str(want)[:120]})")
            except refusals:
                pass
            except Exception as e:  # noqa: BLE001
                ok.append(f"{run.__name__} fails with {type(e).__name__}: {e}")
        return ("decided", not ok, ok, node, inputs)
    if not (special and op in SPECIAL_FUZZ) and not all(np.all(np.isfinite(np.asarray(w, dtype=np.float64))) for w in want):
        return ("skipped", "no finite value", None, node, inputs)
    floor = 0
    if op in IRRATIONAL:  # onnx.reference computes erf in float32: trust irrational results to float32 ulps
        want = [np.asarray(w, dtype=np.float64).astype(np.float32) for w in want]
    if op in IRRATIONAL | {"MatMul", "Gemm", "ReduceMean"}:  # chains: error at the inputs' scale M
        m = max([1] + [abs(float(v)) for a in inputs if a.dtype.kind == "f" for v in a.reshape(-1) if np.isfinite(v)])
        floor = Fraction(2) ** (int(m).bit_length() - 1 - 23)  # a float32 ulp at M (inputs are k/4, |k| <= 8)
    errs = []
    for run, refusals in ((kernel_run, KERNEL_REFUSALS), (producer_run, PRODUCER_REFUSALS)):
        kind, why = outcome(run, op, node, [(inputs, want)], (), floor)
        if kind != "enclosed":
            errs.append(f"{run.__name__}: {kind}: {why}")
    return ("decided", not errs, errs, node, inputs)
