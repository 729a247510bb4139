"""ONNX's backend node cases of the operators the producer lowers to compositions of table ops.

``exactmem/verify/composite.py`` lowers Conv, GatherND, Einsum, ReduceSum, Max, … to ops of the table
in ``docs/verify-format.md``. A case here is one single-node backend case of such an operator. It is
lowered by the importer's own lowering function (``exactmem.verify.ops.LOWER``) in two ways:

* **lowered**: the float inputs are values computed from the example (``Dyn``, as the graph input and
  everything after it are), the integer inputs (indices, axes, shapes) and Clip's bounds constants;
  the emitted nodes are then evaluated by the kernel (``exactmem.kernel.graph``, parsed by
  ``parse_graph``) and by the producer (``exactmem.verify.evaluate.Program``), the Dyn inputs bound as
  constants holding the case's exact values;
* **folded**: every input a constant, so each step folds exactly where it can (what is left, e.g.
  Elu's Exp, is evaluated by the kernel).

Outputs are judged as ``onnx_cases.judge`` does (ULPs per operator below: the expected float32 is
ONNX's rounded result of the real value). A case the lowering or the evaluator refuses in one line is
*refused*; anything else that misses is *failing*. Nothing here is trusted; it is a test harness.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

import onnx_cases as oc
from exactmem.kernel import graph as kg
from exactmem.kernel.limits import Budget
from exactmem.kernel.schema import _Reader
from exactmem.verify.composite import COMPOSITE_OPS
from exactmem.verify.floats import exact_array
from exactmem.verify.kernels import OpError
from exactmem.verify.ops import LOWER, Const, Dyn, LowerError

OPS = COMPOSITE_OPS
CONST_INPUTS = {"Clip": (1, 2)}  # inputs that stay constants in the "lowered" run (Clip's bounds)
# n ulps per op, as onnx_cases.ULPS: 0 (absent) where the op moves or selects values (the expected value
# itself); float32 steps chained by ONNX's reference where it computes
ULPS = {"Conv": 16, "ConvTranspose": 16, "Einsum": 16, "ReduceSum": 16, "ReduceSumSquare": 16, "ReduceL1": 16,
        "ReduceL2": 16, "ReduceProd": 16, "Sum": 2, "Mean": 4, "LeakyRelu": 1, "PRelu": 1, "HardSigmoid": 2,
        "HardSwish": 4, "Elu": 8, "Selu": 8, "Celu": 8, "GlobalAveragePool": 8,
        "ScatterND": 2, "ScatterElements": 2}  # Scatter*: reduction add / mul rounds once per update
for _k, _v in ULPS.items():
    oc.ULPS.setdefault(_k, _v)


@lru_cache(maxsize=1)
def cases():
    """(name, node, data_sets, model) of every single-node backend case of a lowered operator."""
    from onnx.backend.test.case.node import collect_testcases

    out = []
    for c in collect_testcases(None):
        nodes = list(c.model.graph.node)
        if len(nodes) == 1 and nodes[0].op_type in OPS and nodes[0].domain in ("", "ai.onnx"):
            out.append((c.name, nodes[0], c.data_sets, c.model))
    return out


def _const(a) -> Const:
    a = np.asarray(a)
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        fmt = "bfloat16" if a.dtype.name == "bfloat16" else None
        return Const(exact_array(a.view(np.uint16) if fmt else a, fmt, special=True), "rat")
    if a.dtype.kind in "iub":
        return Const(a.astype(np.int64), "int")
    raise oc.Refused(f"dtype {a.dtype}: no rational value")


def lower_case(model, node, inputs, mode):
    """Run the importer's lowering of ``node``: (outputs, graph JSON pieces) — the outputs are Const
    (folded) or Dyn (nodes emitted into ``cx.nodes``)."""
    import onnx.helper as oh
    from exactmem.verify.onnx_import import Lowering

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    cx = Lowering(model, opset)
    bound = dict(zip([i.name for i in model.graph.input], inputs))
    ins, dyn = [], {}
    for pos, name in enumerate(node.input):
        if not name:
            ins.append(None)
            continue
        a = np.asarray(bound[name])
        c = _const(a)
        if mode == "lowered" and c.kind == "rat" and pos not in CONST_INPUTS.get(node.op_type, ()):
            ins.append(Dyn(name, tuple(a.shape), "rat"))
            cx.used.add(name)
            dyn[name] = oc.constant(a if a.dtype.name != "bfloat16" else a.astype(np.float32))
        else:
            ins.append(c)
    at = {a.name: oh.get_attribute_value(a) for a in node.attribute}
    cx.node = node
    outs = LOWER[node.op_type](cx, node, ins, at)
    return outs, {**cx.constants, **dyn}, cx.nodes


def _kernel_eval(graph, name, F=256):
    budget = Budget()
    G, _ = kg.parse_graph(graph, _Reader(budget))
    env = dict(G.constants(F)[0])
    cx = SimpleNamespace(F=F, budget=budget, tick=budget.tick)
    for op, fn, ins, outs, a in G.nodes:
        r = fn(cx, a, *[env[v] if v else None for v in ins])
        for o, t in zip(outs, r if isinstance(r, list) else [r]):
            env[o] = t
    return oc._intervals(env[name])


def _producer_eval(graph, name, prec=256):
    from exactmem.verify.evaluate import ArbBackend, Program

    prog = Program({"input": {"type": "tokens", "vocab": 1}, "graph": {**graph, "output": name},
                    "readout": {"position": "last"}})
    K = ArbBackend(prec)
    K.activate()
    a = np.asarray(prog.run(K, None))
    return a.shape, [oc._ball(v) for v in a.reshape(-1)]


def _folded(c: Const):
    return c.shape, [(repr(v),) * 2 if not isinstance(v, (int, Fraction, np.integer)) else (Fraction(v), Fraction(v))
                     for v in c.value.reshape(-1)]


def run(side, mode):
    """A runner for ``onnx_cases.outcome``: lower the node, then evaluate by ``side`` (kernel/producer)."""
    def go(node, inputs, model):
        outs, consts, nodes = lower_case(model, node, inputs, mode)
        got = []
        for v in outs[:len(node.output)]:
            if isinstance(v, Const):
                got.append(_folded(v))
                continue
            g = {"input": "__x", "output": v.name, "constants": consts, "nodes": nodes}
            got.append(_kernel_eval(g, v.name) if side == "kernel" else _producer_eval(g, v.name))
        return got
    return go


REFUSALS = (oc.Refused, LowerError, OpError, kg.MalformedCertificate if hasattr(kg, "MalformedCertificate") else
            oc.MalformedCertificate, kg.ShapeError)


def outcome(runner, node, data_sets, model):
    for inputs, outputs in data_sets:
        try:
            got = runner(node, list(inputs), model)
        except REFUSALS as e:
            return "refused", f"{type(e).__name__}: {' '.join(str(e).split())}"
        except Exception as e:  # noqa: BLE001 -- anything else is a failure to conform
            return "failing", f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
        why = oc.judge(node.op_type, got, list(outputs))
        if why:
            return "failing", why
    return "enclosed", None


COLUMNS = (("lowered", "kernel"), ("lowered", "producer"), ("folded", "kernel"))


def table():
    """{op: {(mode, side): {"enclosed", "refused", "failing"}}} and the per-case rows."""
    counts = {op: {col: {"enclosed": 0, "refused": 0, "failing": 0} for col in COLUMNS} for op in OPS}
    rows = []
    for name, node, data_sets, model in cases():
        for mode, side in COLUMNS:
            kind, why = outcome(run(side, mode), node, data_sets, model)
            counts[node.op_type][(mode, side)][kind] += 1
            rows.append((name, node.op_type, (mode, side), kind, why))
    return counts, rows


def markdown(counts) -> str:
    head = "| op | lowered: kernel enclosed / refused / failing | lowered: producer | folded (all inputs constant) |"
    rows = [head, "|---|---|---|---|"]
    fmt = lambda c: f"{c['enclosed']} / {c['refused']} / {c['failing']}"  # noqa: E731
    tot = {col: {k: 0 for k in ("enclosed", "refused", "failing")} for col in COLUMNS}
    for op in OPS:
        if not sum(counts[op][COLUMNS[0]].values()):
            continue
        rows.append(f"| `{op}` | " + " | ".join(fmt(counts[op][col]) for col in COLUMNS) + " |")
        for col in COLUMNS:
            for k in tot[col]:
                tot[col][k] += counts[op][col][k]
    rows.append("| **all** | " + " | ".join(f"**{fmt(tot[col])}**" for col in COLUMNS) + " |")
    return "\n".join(rows)
