"""Planted mutants of graph-model certificates (issue 38), an oracle independent of the kernel's
graph evaluator, and a harness; the graph-model half of ``tests/test_adversarial.py``.

This is a test helper, not part of the package. It mirrors ``tests/mutants.py`` (layer models):

* :func:`parents` — honest graph-model certificates built in-process (``docs/verify-format.md``):
  the attention block of ``tests/test_graph_kernel.py`` with several label sets (one read at every
  position) and with a −∞ causal mask and SDPA's IsNaN/Where guard, its exact tie graph, an MLP with Gemm / Relu / LayerNormalization / Gelu / Softmax on
  vector inputs, an exact graph of shape ops (Slice, Concat, Reshape, Transpose, Gather, Where, Pow,
  ReduceMean, Split, Unsqueeze, Squeeze), and (``slow``) a small GPT-2-like graph. Their claimed
  verdicts and claims come from the oracle, and each is CERTIFIED by the kernel before use.
* :func:`generate` — deterministic (seeded) edits, each re-hashed: weight nudges in ``values``
  constants (the entry that decides an example's margin, or a random one; a small dyadic or a
  large step), ``ints`` edits (a Gather index, a Slice start / end / step, a Reshape entry, a
  Transpose perm, an axis), label flips, claimed-verdict flips (``pass`` <-> ``fail``, to
  ``unknown``), claim edits (``n_pass`` / ``n_fail`` and size claims off by one or at the
  boundary), structural edits (a node removed, bypassed, duplicated, reordered, an input renamed,
  an op replaced by one of the same arity, an attribute changed) and data edits (an input
  repeated with another label, a token id changed).
* :func:`oracle` — decides each mutant with code that shares nothing with
  ``exactmem/kernel/graph.py``: the graph runs through the producer's op table
  (``exactmem/verify/kernels.py`` via ``exactmem.verify.evaluate.Program``) on Fractions when it
  has no irrational step, else in python-flint ball arithmetic at ``ORACLE_BITS`` bits; the
  graph's structure (names, arities, attributes, constant-ints inputs) is validated here from the
  format's text, and the claims are recounted here (distinct inputs, ``n_pass`` / ``n_fail``,
  parameters including ``ints`` constants read as values, ``bits(p/q)``, width, depth). It follows
  the kernel's documented order: model claims, then the rows in order (a conflict, a contradicted
  claimed verdict, an op that cannot run), then the data claims.
* :func:`run_campaign` — checks each mutant (even index: the fast engine, odd: the pure kernel,
  every fifth: both, which must agree) and records a problem for a false CERTIFIED, a wrong
  REFUTED, a witness that does not name what the oracle finds, an illegitimate UNKNOWN, a
  MALFORMED where the oracle finds the graph valid (or a valid verdict where it finds it
  malformed), and any exception other than ``MalformedCertificate``.
"""

from __future__ import annotations

import copy
import json
import random
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Dict, List, Optional

import numpy as np

import mutants as M
from exactmem.verify.evaluate import ArbBackend, Program
from exactmem.verify.kernels import ExactBackend, NotExact
from exactmem.verify.special import Special
from test_graph_kernel import INPUTS, attention_graph, doc, ints, node, tie_graph, values

#: Ball precision of the oracle's evaluation of graphs with irrational steps.
ORACLE_BITS = 1024
#: A margin below this (after an irrational step) may leave the verifier UNKNOWN legitimately.
TINY = Fraction(1, 1 << 40)

IRRATIONAL = {"Sqrt", "Exp", "Tanh", "Sigmoid", "Erf", "Gelu", "Softmax", "LayerNormalization"}
#: (least, most) inputs per op, from the op table of docs/verify-format.md.
ARITY = {**{o: (2, 2) for o in ("MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Gather")},
         **{o: (1, 1) for o in ("Neg", "Relu", "Sqrt", "Reciprocal", "Exp", "Tanh", "Sigmoid", "Erf", "Identity",
                                "Gelu", "Softmax", "Transpose", "IsNaN")},
         "Gemm": (2, 3), "LayerNormalization": (2, 3), "ReduceMean": (1, 2), "Reshape": (2, 2), "Split": (1, 2),
         "Slice": (3, 5), "Concat": (1, 1 << 30), "Unsqueeze": (2, 2), "Squeeze": (1, 2), "Where": (3, 3)}
OPTIONAL = {"Gemm": (2,), "LayerNormalization": (2,), "ReduceMean": (1,), "Split": (1,), "Slice": (3, 4),
            "Squeeze": (1,)}
#: Inputs that must name an ``ints`` constant ("constant ints" in the op table).
CONST_INTS = {"ReduceMean": (1,), "Reshape": (1,), "Split": (1,), "Slice": (1, 2, 3, 4), "Unsqueeze": (1,),
              "Squeeze": (1,)}
#: Where an ``ints`` constant is not counted as parameters (indices, shapes, axes, conditions, exponents).
UNCOUNTED = {**CONST_INTS, "Gather": (1,), "Where": (0,), "Pow": (1,)}
REQUIRED_ATTRS = {"Concat": ("axis",)}
SPECIAL = {"-inf": -1, "inf": 1, "nan": 2}  # special values' texts and codes (docs/verify-format.md)


def frac(v) -> Fraction:
    """A ``values`` entry as a number; a special value counts as 0 (the format's parameter rule)."""
    return Fraction(0) if v in SPECIAL else Fraction(v)
MODEL_QTY = ("n_params", "n_nonzero", "width", "relu_depth", "attention_layers", "depth", "max_bits", "total_bits")


# ----------------------------------------------------------------------------- the oracle's own counts

def bits(x: Fraction) -> int:
    """``bits(p/q)`` of docs/certificate.md: 1 + LEN(|p|) + LEN(q) − 1."""
    return abs(x.numerator).bit_length() + x.denominator.bit_length()


def measure_graph(d: dict) -> Dict[str, int]:
    """The model quantities of a graph model, counted from the format's definitions."""
    g = d["model"]["graph"]
    consts = g["constants"]
    params = [frac(v) for c in consts.values() if "values" in c for v in c["values"]]
    read = {v for nd in g["nodes"] for k, v in enumerate(nd["inputs"])
            if v in consts and "ints" in consts[v] and k not in UNCOUNTED.get(nd["op"], ())}
    params += [Fraction(v) for name in sorted(read) for v in consts[name]["ints"]]
    ops = [nd["op"] for nd in g["nodes"]]
    return {"n_params": len(params), "n_nonzero": sum(1 for p in params if p),
            "max_bits": max(map(bits, params), default=0),
            "total_bits": sum(map(bits, params)),
            "width": max((c["shape"][-1] if c["shape"] else 1 for c in consts.values() if "values" in c), default=0),
            "depth": ops.count("MatMul") + ops.count("Gemm"), "relu_depth": ops.count("Relu") + ops.count("Gelu"),
            "attention_layers": ops.count("Softmax")}


def static_problem(d: dict) -> Optional[str]:
    """Why the graph is malformed before any example runs (names, arities, attributes), else None."""
    g = d["model"]["graph"]
    consts = g["constants"]
    defined = set(consts) | {g["input"]}
    for i, nd in enumerate(g["nodes"]):
        op, ins, outs, at = nd["op"], nd["inputs"], nd["outputs"], nd.get("attrs", {})
        if op not in ARITY:
            return f"node {i}: op {op}"
        lo, hi = ARITY[op]
        if not lo <= len(ins) <= hi:
            return f"node {i}: arity"
        for k, v in enumerate(ins):
            if v == "" and (k < lo and k not in OPTIONAL.get(op, ())):
                return f"node {i}: empty input {k}"
            if v and v not in defined:
                return f"node {i}: input {v} undefined"
            if v and k in CONST_INTS.get(op, ()) and "ints" not in consts.get(v, {}):
                return f"node {i}: input {k} not an ints constant"
        for k, v in enumerate(outs):
            if not v or v in defined or (k and op != "Split"):
                return f"node {i}: output {v}"
            defined.add(v)
        spec = {"Gather": ("axis",), "Gemm": ("alpha", "beta", "transA", "transB"), "Gelu": ("approximate",),
                "Softmax": ("axis",), "LayerNormalization": ("axis", "epsilon"), "ReduceMean": ("keepdims",),
                "Transpose": ("perm",), "Split": ("axis",), "Concat": ("axis",)}.get(op, ())
        if set(at) - set(spec) or any(a not in at for a in REQUIRED_ATTRS.get(op, ())):
            return f"node {i}: attributes"
        if op == "Gelu" and at.get("approximate", "none") not in ("none", "tanh"):
            return f"node {i}: approximate"
        if op == "LayerNormalization" and at.get("axis", -1) != -1:
            return f"node {i}: LayerNormalization axis"
        if op == "Pow":
            c = consts.get(ins[1], {})
            vals = [Fraction(v) for v in c.get("values", c.get("ints", [])) if v not in SPECIAL]
            if len(vals) != 1 or len(c.get("values", c.get("ints", []))) != 1 or not (vals[0] == Fraction(1, 2) or (vals[0].denominator == 1 and vals[0] >= 0)):
                return f"node {i}: Pow exponent"
        if op == "Where" and ins[0] in consts and ("ints" not in consts[ins[0]] or
                                                   not set(consts[ins[0]]["ints"]) <= {0, 1}):
            return f"node {i}: Where condition"  # a computed condition is checked when it runs
    if g["output"] not in defined:
        return "output undefined"
    return None


#: Ops through which integers flow (their data inputs all integers): docs/verify-format.md.
INT_FLOW = {"Gather": (0,), "Reshape": (0,), "Transpose": (0,), "Slice": (0,), "Split": (0,), "Unsqueeze": (0,),
            "Squeeze": (0,), "Identity": (0,), "Where": (1, 2), "Concat": None}


def _float_indices(d: dict) -> Optional[str]:
    """A Gather whose indices are not integers (rationals: arithmetic on ints gives rationals)."""
    g = d["model"]["graph"]
    integral = {k for k, c in g["constants"].items() if "ints" in c}
    if d["model"]["input"]["type"] == "tokens":
        integral.add(g["input"])
    for i, nd in enumerate(g["nodes"]):
        if nd["op"] == "Gather" and nd["inputs"][1] not in integral:
            return f"node {i}: Gather indices {nd['inputs'][1]} are not integers"
        pos = INT_FLOW.get(nd["op"], ())
        ins = nd["inputs"] if pos is None else [nd["inputs"][k] for k in pos]
        if nd["op"] in INT_FLOW and all(v in integral for v in ins):
            integral.update(nd["outputs"])
    return None


def irrational(d: dict) -> bool:
    g = d["model"]["graph"]
    return any(nd["op"] in IRRATIONAL or (nd["op"] == "Pow" and frac(
        (g["constants"].get(nd["inputs"][1], {}).get("values") or ["0"])[0]) == Fraction(1, 2)) for nd in g["nodes"])


class _Exact(ExactBackend):
    """Fractions throughout (the producer's exact backend, with constants bound as they are)."""

    def const(self, name, kind, arr):
        return arr

    def convert(self, arr):
        return np.asarray(arr, dtype=object)

    def pi(self):
        raise NotExact("pi")

    def relu(self, x):
        return np.vectorize(lambda v: v if v > 0 else Fraction(0), otypes=[object])(x)


class _Balls(ArbBackend):
    """The producer's ball backend; a softmax over an axis of one element is exactly 1."""

    def softmax(self, x, axis):
        if x.shape[axis] == 1:
            return np.full(x.shape, self.num(Fraction(1)), dtype=object)
        return super().softmax(x, axis)


def _shapes_first(f):
    """A binary op that refuses shapes that do not broadcast before it looks at values (Div by 0)."""
    def op(K, xs, at):
        np.broadcast_shapes(np.shape(xs[0]), np.shape(xs[1]))
        return f(K, xs, at)
    return op


def _where_01(f):
    """Where whose condition must be 0/1 integers (a computed one is checked when it runs)."""
    def op(K, xs, at):
        c = np.asarray(xs[0])
        if c.dtype.kind not in "iu" or not set(c.reshape(-1).tolist()) <= {0, 1}:
            raise ValueError("the condition of Where must be 0/1 ints")
        return f(K, xs, at)
    return op


def _program(d: dict) -> Program:
    prog = Program(d["model"])
    wrap = {"Div": _shapes_first, "Where": _where_01}
    prog.nodes = [(wrap[nd["op"]](f) if nd["op"] in wrap else f, *rest)
                  for (f, *rest), nd in zip(prog.nodes, d["model"]["graph"]["nodes"])]
    return prog


_SCORES: Dict[str, Dict[tuple, object]] = {}


def _scores(d: dict, prog: Optional[Program], exact: bool, x) -> object:
    """Per read position, the list of (lo, hi) Fraction bounds of every class score (points when
    exact); or ("malformed", why) / ("undecided", why)."""
    key = json.dumps(d["model"], sort_keys=True, separators=(",", ":"))
    cache = _SCORES.get(key)
    if cache is None:
        if len(_SCORES) > 256:
            _SCORES.clear()
        cache = _SCORES[key] = {}
    tx = M._freeze(x)
    if tx in cache:
        return cache[tx]
    tokens = d["model"]["input"]["type"] == "tokens"
    arr = np.asarray([x], dtype=np.int64) if tokens else \
        np.asarray([[[Fraction(v) for v in t] for t in x]], dtype=object)
    try:
        if exact:
            with np.errstate(all="raise"):
                out = prog.run(_Exact(), arr)
        else:
            K = _Balls(ORACLE_BITS)
            K.activate()
            out = prog.run(K, arr)
    except (AttributeError, TypeError) as e:  # the producer's table cannot run it (arithmetic on token ids)
        res = cache[tx] = ("unsure", f"{type(e).__name__}: {e}")
        return res
    except Exception as e:  # the producer's table refuses the node: shapes, indices, axes
        if "division by zero" in str(e) or isinstance(e, ZeroDivisionError):
            res = ("undecided", "division by zero")
        else:
            res = ("malformed", f"{type(e).__name__}: {e}")
        cache[tx] = res
        return res
    out = np.asarray(out, dtype=object)
    n, pos = len(x), d["model"]["readout"]["position"]
    if out.ndim == 3 and out.shape[:2] == (1, n):
        rows = [out[0, -1, :]] if pos == "last" else [out[0, i, :] for i in range(n)]
    elif out.ndim == 2 and out.shape[0] == 1 and pos == "last":
        rows = [out[0, :]]
    else:
        res = ("malformed", f"output shape {out.shape}")
        cache[tx] = res
        return res

    def bounds(v):
        if isinstance(v, Special):
            return repr(v)
        if exact:
            return Fraction(v), Fraction(v)
        if not v.is_finite():
            return None
        lo, hi = v.lower(), v.upper()
        return _arb_frac(lo), _arb_frac(hi)

    res = [[bounds(v) for v in r] for r in rows]
    cache[tx] = res
    return res


def _arb_frac(v) -> Fraction:
    m, e = v.mid().man_exp()
    m, e = int(m), int(e)
    return Fraction(m * (1 << e)) if e >= 0 else Fraction(m, 1 << -e)


def _extended(col):
    """A row with special values (texts) as bounds: a NaN score is (None, class); ±inf become points
    below / above every finite bound (the same order as the extended reals)."""
    nan = next((k for k, b in enumerate(col) if b == "nan"), None)
    fin = [b for b in col if isinstance(b, tuple)]
    m = min((lo for lo, _ in fin), default=Fraction(0)) - 1
    M_ = max((hi for _, hi in fin), default=Fraction(0)) + 1
    return nan, [b if isinstance(b, tuple) or b is None else (m, m) if b == "-inf" else (M_, M_) for b in col]


def _judge_row(cols, labels):
    """(truth 'pass' | 'fail' | 'undecided', per position (margin lo, competitor class)); a NaN score
    fails (no argmax), ±inf compare as extended reals."""
    found, info = [], []
    for col, lab in zip(cols, labels):
        if lab >= len(col):
            return "malformed", []
        nan, col = _extended(col)
        if nan is not None:
            found.append("fail")
            info.append((None, [nan]))
            continue
        if any(b is None for b in col):
            found.append("undecided")
            info.append((None, None))
            continue
        others = [k for k in range(len(col)) if k != lab]
        if not others:
            found.append("pass")
            info.append((None, None))
            continue
        llo, lhi = col[lab]
        sure = all(llo > col[k][1] for k in others)
        beat = [k for k in others if col[k][0] >= lhi]
        found.append("pass" if sure else "fail" if beat else "undecided")
        top = max(others, key=lambda k: col[k][1])
        info.append((llo - col[top][1], beat))
    truth = "fail" if "fail" in found else "pass" if all(f == "pass" for f in found) else "undecided"
    return truth, list(zip(found, info))


@dataclass
class GraphOracle:
    """What the oracle finds for one graph-model mutant.

    ``wrong``: True / False / None (undecided). ``malformed``: "static" (the graph itself),
    "eval" (an op cannot run at row ``first``), or None. ``claim``: the first failing claim's index;
    ``first``: the first failing row, ``reason`` its reason (``"verdict"``, ``"conflicting_labels"``);
    ``rows``: per row the truth and per-position details; ``approximate``: an irrational step;
    ``tiny``: some evaluated row's margin is below :data:`TINY` or undecided (UNKNOWN is legitimate).
    """

    wrong: Optional[bool]
    malformed: Optional[str] = None
    claim: Optional[int] = None
    first: Optional[int] = None
    reason: Optional[str] = None
    rows: List[object] = field(default_factory=list)
    approximate: bool = False
    tiny: bool = False
    conflicts: Dict[int, int] = field(default_factory=dict)
    measured: Dict[str, int] = field(default_factory=dict)
    div0: bool = False  # a division by an exact 0 (UNKNOWN, as docs/verify-format.md says)
    unsure: bool = False  # the producer's table cannot run the graph (the oracle then judges nothing)
    spread: bool = False  # (the layer-model harness's fields, for ``mutants.Campaign.table``)


def _holds(v, op, b):
    return M.OPS[op](Fraction(v), b)


def oracle(d: dict) -> GraphOracle:
    """Decide a graph-model certificate in the kernel's documented order, with independent code."""
    why = static_problem(d)
    if why is not None:
        return GraphOracle(wrong=True, malformed="static", reason=why)
    meas = measure_graph(d)
    approx = irrational(d)
    res = GraphOracle(wrong=False, approximate=approx, measured=meas)
    for c, cl in enumerate(d["claims"]):
        if cl["quantity"] in MODEL_QTY and not _holds(meas[cl["quantity"]], cl["op"], M.q(cl["bound"])):
            res.wrong, res.claim = True, c
            return res
    try:
        prog = _program(d)
    except Exception as e:
        return GraphOracle(wrong=True, malformed="static", reason=f"producer: {e}", approximate=approx)
    exact = not approx
    bad_index = _float_indices(d)
    allpos = d["model"]["readout"]["position"] == "all"
    seen: Dict[tuple, tuple] = {}
    passed, failed, undecided = set(), set(), False
    for e, (x, lab, claim) in enumerate(zip(d["dataset"]["inputs"], d["dataset"]["labels"], d["outputs"])):
        tx = M._freeze(x)
        if tx in seen and seen[tx][1] != M._freeze(lab):
            res.conflicts[e] = seen[tx][0]
            res.wrong, res.first, res.reason = True, e, "conflicting_labels"
            return res
        seen.setdefault(tx, (e, M._freeze(lab)))
        if claim == "unknown":
            res.rows.append(("unclaimed", None))
            continue
        cols = ("malformed", bad_index) if bad_index else _scores(d, prog, exact, x)
        if isinstance(cols, tuple):
            if cols[0] == "malformed":
                res.wrong, res.malformed, res.first, res.reason = True, "eval", e, cols[1]
                return res
            res.rows.append(("undecided", None))
            undecided = res.tiny = True
            res.div0 |= cols[1] == "division by zero"
            res.unsure |= cols[0] == "unsure"
            continue
        truth, info = _judge_row(cols, lab if allpos else [lab])
        if truth == "malformed":
            res.wrong, res.malformed, res.first, res.reason = True, "eval", e, "label out of range"
            return res
        res.rows.append((truth, info))
        if truth == "undecided":
            undecided = res.tiny = True
            continue
        if approx and any(m is not None and abs(m) < TINY for _, (m, _) in info):
            res.tiny = True
        if truth != claim:
            res.wrong, res.first, res.reason = True, e, "verdict"
            return res
        (passed if truth == "pass" else failed).add(tx)
    data = {"n_examples": len(seen), "n_rows": len(d["dataset"]["inputs"]), "n_pass": len(passed),
            "n_fail": len(failed)}
    for c, cl in enumerate(d["claims"]):
        q = cl["quantity"]
        judged = q in data and not (undecided and q in ("n_pass", "n_fail"))
        if judged and not _holds(data[q], cl["op"], M.q(cl["bound"])):
            res.wrong, res.claim = True, c
            return res
    res.measured.update(data)
    if undecided:
        res.wrong = None
    return res


# ----------------------------------------------------------------------------- parents

def _claims(d: dict, extra=()) -> List[dict]:
    """Exact claims on the sizes and the verdict counts, as the oracle counts them."""
    meas = measure_graph(d)
    o = oracle(d)
    out = [{"quantity": "n_params", "op": "==", "bound": str(meas["n_params"])},
           {"quantity": "max_bits", "op": "<=", "bound": str(meas["max_bits"])},
           {"quantity": "width", "op": "==", "bound": str(meas["width"])},
           {"quantity": "depth", "op": "==", "bound": str(meas["depth"])}]
    out += [{"quantity": q, "op": "==", "bound": str(meas[q])} for q in extra]
    out += [{"quantity": "n_examples", "op": "==", "bound": str(o.measured["n_examples"])},
            {"quantity": "n_pass", "op": "==", "bound": str(o.measured["n_pass"])},
            {"quantity": "n_fail", "op": "==", "bound": str(o.measured["n_fail"])}]
    return out


def honest(graph, inputs, labels, position="last", inp=None, unknown=(), extra=()) -> dict:
    """A certificate whose claimed verdicts (except rows ``unknown``) and claims the oracle derives."""
    d = doc(graph, inputs, labels, ["unknown"] * len(inputs), position, inp)
    allpos = position == "all"
    prog, exact = _program(d), not irrational(d)
    verdicts = []
    for e, (x, lab) in enumerate(zip(inputs, labels)):
        truth, _ = _judge_row(_scores(d, prog, exact, x), lab if allpos else [lab])
        assert truth in ("pass", "fail"), (e, truth)
        verdicts.append("unknown" if e in unknown else truth)
    d = doc(graph, inputs, labels, verdicts, position, inp)
    d["claims"] = _claims(d, extra)
    return M.rehash(d)


def _argmax_labels(graph, inputs, position="last", inp=None, shift=0):
    """Labels that the graph's argmax gives (shift: the next class instead, for failing rows)."""
    d = doc(graph, inputs, [0] * len(inputs), ["unknown"] * len(inputs), position, inp)
    prog, exact = _program(d), not irrational(d)
    out = []
    for x in inputs:
        cols = _scores(d, prog, exact, x)
        labs = [max(range(len(c)), key=lambda k: c[k][0]) for c in cols]
        labs = [(lab + shift) % len(c) for lab, c in zip(labs, cols)]
        out.append(labs if position == "all" else labs[0])
    return out


def mlp_graph():
    """Vector inputs [1, 2, 3] -> Reshape -> Gemm (transB, alpha) -> Relu -> LayerNormalization ->
    Gemm -> Gelu -> MatMul -> Reshape -> Softmax: 3 classes per position."""
    C = {"s2": ints([2], [-1, 3]), "s3": ints([3], [1, 2, 3]),
         "W1": values([4, 3], [Fraction((i * 5) % 7 - 3, 4) for i in range(12)]),
         "b1": values([4], [Fraction(1, 8), 0, Fraction(-1, 4), Fraction(1, 2)]),
         "g": values([4], [1, Fraction(3, 2), Fraction(1, 2), 2]), "bb": values([4], [0, Fraction(1, 4), 0, -1]),
         "W2": values([4, 4], [Fraction((i * 3) % 5 - 2, 2) for i in range(16)]),
         "W3": values([4, 3], [Fraction((i * 7) % 9 - 4, 4) for i in range(12)])}
    N = [node("Reshape", ["x", "s2"], "x2"), node("Gemm", ["x2", "W1", "b1"], "h1", transB=1, alpha="1/2"),
         node("Relu", ["h1"], "r1"), node("LayerNormalization", ["r1", "g", "bb"], "n1", epsilon="1/1000"),
         node("Gemm", ["n1", "W2"], "h2"), node("Gelu", ["h2"], "a2"), node("MatMul", ["a2", "W3"], "h3"),
         node("Reshape", ["h3", "s3"], "h4"), node("Softmax", ["h4"], "y", axis=-1)]
    return {"input": "x", "output": "y", "constants": C, "nodes": N}


MLP_INPUTS = [[[M.s(Fraction(a, 2)), M.s(Fraction(b, 4)), M.s(Fraction(c, 3))],
               [M.s(Fraction(b, 2)), M.s(Fraction(c, 2)), M.s(Fraction(a - b, 1))]]
              for a, b, c in ((1, 2, 3), (-2, 1, 0), (3, -1, 2), (0, 0, 1), (2, 3, -3), (-1, -2, -1))]


def shapes_graph():
    """Exact (no irrational step): Gather, Transpose, Slice, Split, Concat, Pow, Where, ReduceMean,
    Reshape, Unsqueeze, Squeeze, Sub, Div, Relu, MatMul; tokens of length 4, 3 classes at every position."""
    C = {"E": values([6, 4], [Fraction((i * 7) % 11 - 5, 4) for i in range(24)]),
         "perm": ints([4], [3, 0, 2, 1]), "st": ints([1], [0]), "en": ints([1], [4]), "ax": ints([1], [2]),
         "sp": ints([1], [1]), "sp2": ints([2], [2, 2]), "two": values([], [2]), "three": ints([], [3]),
         "m": ints([1, 1, 4], [1, 0, 1, 1]), "a1": ints([1], [1]), "a3": ints([1], [3]), "sh": ints([3], [0, 0, -1]),
         "half": values([], [Fraction(1, 2)]), "c": values([4], [1, Fraction(-1, 2), Fraction(1, 4), 2]),
         "W": values([4, 3], [Fraction((i * 5) % 9 - 4, 2) for i in range(12)])}
    N = [node("Gather", ["E", "ids"], "h"), node("Gather", ["h", "perm"], "hp", axis=2),
         node("Slice", ["hp", "st", "en", "ax", "sp"], "s"), node("Split", ["s", "sp2"], ["s1", "s2"], axis=2),
         node("Pow", ["s1", "two"], "p1"), node("Pow", ["s2", "three"], "p2"),
         node("Concat", ["p2", "p1"], "cc", axis=2),
         node("Where", ["m", "cc", "h"], "w"), node("ReduceMean", ["w", "a1"], "mu", keepdims=1),
         node("Sub", ["w", "mu"], "z"), node("Div", ["z", "c"], "z2"), node("Mul", ["z2", "half"], "z3"),
         node("Transpose", ["z3"], "t", perm=[0, 2, 1]), node("Transpose", ["t"], "t2", perm=[0, 2, 1]),
         node("Unsqueeze", ["t2", "a3"], "u"), node("Squeeze", ["u", "a3"], "q"), node("Reshape", ["q", "sh"], "r"),
         node("Relu", ["r"], "rr"), node("Add", ["rr", "h"], "hh"), node("MatMul", ["hh", "W"], "y")]
    return {"input": "ids", "output": "y", "constants": C, "nodes": N}


SHAPE_INPUTS = [[0, 1, 2, 3], [5, 4, 3, 2], [1, 1, 0, 5], [2, 3, 5, 0], [4, 0, 1, 1]]


def gpt2_small():
    from graph_gpt2 import gpt2_graph
    g, _ = gpt2_graph(seed=3, layers=1, d=8, heads=2, n=4, vocab=16)
    return g


def masked_attention_graph():
    """The attention block with a causal mask of −∞ (not a large negative number) and the SDPA guard
    Where(IsNaN(p), 0, p) after its Softmax (docs/verify-format.md § Special values)."""
    g = copy.deepcopy(attention_graph())
    C, N = g["constants"], g["nodes"]
    C["mask"]["values"] = ["-inf" if v != "0" else v for v in C["mask"]["values"]]
    C["zero"] = values([], [0])
    k = next(i for i, nd in enumerate(N) if nd["op"] == "Softmax")
    N[k + 1:k + 1] = [node("IsNaN", ["a"], "isn"), node("Where", ["isn", "zero", "a"], "a2")]
    N[k + 3]["inputs"] = ["a2", "v"]
    return g


def parents(slow: bool = False) -> List[tuple]:
    """(name, certificate) of every honest parent; each is checked CERTIFIED by the caller."""
    att, tie, mlp, shp = attention_graph(), tie_graph(), mlp_graph(), shapes_graph()
    masked = masked_attention_graph()
    vec, tok6 = {"type": "vectors", "dim": 3}, {"type": "tokens", "vocab": 6}
    argmax = _argmax_labels(att, INPUTS)
    out = [("attention/mixed", honest(att, INPUTS, [0, 1, 2, 3, 0, 1], extra=("attention_layers", "relu_depth"))),
           ("attention/argmax", honest(att, INPUTS, argmax, extra=("n_nonzero", "total_bits"))),
           ("attention/half", honest(att, INPUTS, [a if e % 2 else (a + 1) % 4 for e, a in enumerate(argmax)],
                                     unknown=(4,))),
           ("attention/all", honest(att, INPUTS[:4], _argmax_labels(att, INPUTS[:4], "all", shift=0)[:2]
                                    + _argmax_labels(att, INPUTS[2:4], "all", shift=1), "all")),
           ("attention/-inf", honest(masked, INPUTS, [a if e % 3 else (a + 1) % 4 for e, a in
                                                      enumerate(_argmax_labels(masked, INPUTS))])),
           ("tie", honest(tie, [[0], [1], [2], [3]], [0, 1, 2, 0])),
           ("mlp", honest(mlp, MLP_INPUTS, _argmax_labels(mlp, MLP_INPUTS, inp=vec)[:4] + [0, 1], inp=vec,
                          extra=("relu_depth", "attention_layers"))),
           ("shapes/last", honest(shp, SHAPE_INPUTS, _argmax_labels(shp, SHAPE_INPUTS, inp=tok6)[:3] + [0, 2],
                                  inp=tok6, extra=("n_nonzero", "total_bits"))),
           ("shapes/all", honest(shp, SHAPE_INPUTS[:3], _argmax_labels(shp, SHAPE_INPUTS[:3], "all", tok6)[:2]
                                 + [[0, 1, 2, 0]], "all", tok6))]
    if slow:
        g = gpt2_small()
        ids = [[1, 5, 9, 3], [2, 2, 7, 15], [0, 11, 4, 8], [6, 6, 6, 6]]
        inp = {"type": "tokens", "vocab": 16}
        labs = _argmax_labels(g, ids, inp=inp)
        out.append(("gpt2-small", honest(g, ids, labs[:3] + [(labs[3] + 1) % 16], inp=inp,
                                         extra=("attention_layers", "relu_depth"))))
    return out


# ----------------------------------------------------------------------------- mutations

def _rat(x) -> str:
    return M.s(Fraction(x))


def _values_slots(d: dict) -> List[tuple]:
    g = d["model"]["graph"]
    return [(name, i) for name, c in sorted(g["constants"].items()) if "values" in c for i in range(len(c["values"]))]


def _final_weight(d: dict) -> Optional[tuple]:
    """(constant name, transposed) of the last MatMul/Gemm whose second input is a 2-d values constant."""
    g = d["model"]["graph"]
    for nd in reversed(g["nodes"]):
        if nd["op"] in ("MatMul", "Gemm"):
            c = g["constants"].get(nd["inputs"][1])
            if c and "values" in c and len(c["shape"]) == 2:
                return nd["inputs"][1], bool(nd.get("attrs", {}).get("transB", 0))
    return None


SMALL = (Fraction(1, 1 << 10), Fraction(1, 1 << 20), Fraction(1, 1 << 40), Fraction(3, 1 << 12))
LARGE = (Fraction(4), Fraction(64), Fraction(3, 2), Fraction(1 << 20))


def _set_value(d, name, i, delta) -> str:
    """Nudge a value by ``delta``; a special value (a mask entry) becomes ``delta`` (the mask opens)."""
    c = d["model"]["graph"]["constants"][name]
    old = c["values"][i]
    c["values"][i] = _rat(frac(old) + delta)
    return f"{name}[{i}] {old} -> {c['values'][i]}"


def _nudge(where: str, size):
    def mut(d, rng, info):
        sign = rng.choice((1, -1))
        delta = sign * rng.choice(size)
        if where == "random":
            name, i = rng.choice(_values_slots(d))
            return _set_value(d, name, i, delta)
        fw = _final_weight(d)
        if fw is None:
            return None
        name, trans = fw
        rows, cols = d["model"]["graph"]["constants"][name]["shape"]
        e = rng.randrange(len(d["dataset"]["inputs"]))
        lab = d["dataset"]["labels"][e]
        lab = rng.choice(lab) if isinstance(lab, list) else lab
        runner = info.get("runner", {}).get(e, (lab + 1) % (rows if trans else cols))
        col = rng.choice((lab, runner))
        r = rng.randrange(cols if trans else rows)
        i = col * cols + r if trans else r * cols + col
        return f"example {e}'s class {col}: " + _set_value(d, name, i, delta)
    return mut


def _ints_nodes(d, op, k):
    """(node index, constant name) of the nodes ``op`` whose input k is an ints constant."""
    g = d["model"]["graph"]
    return [(i, nd["inputs"][k]) for i, nd in enumerate(g["nodes"]) if nd["op"] == op and len(nd["inputs"]) > k
            and "ints" in g["constants"].get(nd["inputs"][k], {})]


def _edit_ints(ops_positions, choices):
    def mut(d, rng, info):
        slots = [s for op, ks in ops_positions for k in ks for s in _ints_nodes(d, op, k)]
        if not slots:
            return None
        i, name = rng.choice(slots)
        c = d["model"]["graph"]["constants"][name]
        j = rng.randrange(len(c["ints"]))
        old = c["ints"][j]
        new = old + rng.choice(choices) if rng.random() < 0.7 else rng.choice(choices)
        if new == old:
            new = old + 1
        c["ints"][j] = new
        return f"{name}[{j}] (node {i}) {old} -> {new}"
    return mut


def _perm(d, rng, info):
    g = d["model"]["graph"]
    ts = [i for i, nd in enumerate(g["nodes"]) if nd["op"] == "Transpose" and "perm" in nd.get("attrs", {})]
    if not ts:
        return None
    i = rng.choice(ts)
    p = list(g["nodes"][i]["attrs"]["perm"])
    a, b = rng.sample(range(len(p)), 2)
    p[a], p[b] = p[b], p[a]
    if rng.random() < 0.2:
        p[a] = p[b]  # a repeated axis
    g["nodes"][i]["attrs"]["perm"] = p
    return f"node {i} perm -> {p}"


def _axis(d, rng, info):
    g = d["model"]["graph"]
    slots = [(i, "attr") for i, nd in enumerate(g["nodes"]) if nd["op"] in ("Gather", "Split", "Concat", "Softmax")]
    slots += [(i, "const") for i, nd in enumerate(g["nodes"]) if nd["op"] in ("ReduceMean", "Unsqueeze", "Squeeze")
              and len(nd["inputs"]) > 1 and nd["inputs"][1]]
    if not slots:
        return None
    i, kind = rng.choice(slots)
    nd = g["nodes"][i]
    if kind == "attr":
        old = nd.setdefault("attrs", {}).get("axis", -1 if nd["op"] == "Softmax" else 0)
        new = rng.choice([a for a in (-3, -2, -1, 0, 1, 2, 3) if a != old])
        nd["attrs"]["axis"] = new
        return f"node {i} ({nd['op']}) axis {old} -> {new}"
    c = g["constants"][nd["inputs"][1]]
    old = list(c["ints"])
    c["ints"][0] = rng.choice([a for a in (-3, -2, -1, 0, 1, 2, 3) if a != old[0]])
    return f"node {i} ({nd['op']}) axes {old} -> {c['ints']}"


def _label_flip(d, rng, info):
    labs = d["dataset"]["labels"]
    e = rng.randrange(len(labs))
    C = info["classes"]
    if isinstance(labs[e], list):
        t = rng.randrange(len(labs[e]))
        old = labs[e][t]
        labs[e][t] = rng.choice([k for k in range(C) if k != old])
        return f"label of example {e} position {t}: {old} -> {labs[e][t]}"
    old = labs[e]
    labs[e] = rng.choice([k for k in range(C) if k != old])
    return f"label of example {e}: {old} -> {labs[e]}"


def _verdict_flip(d, rng, info):
    outs = d["outputs"]
    es = [e for e, o in enumerate(outs) if o in ("pass", "fail")]
    e = rng.choice(es)
    outs[e] = "fail" if outs[e] == "pass" else "pass"
    return f"claimed verdict of example {e} -> {outs[e]}"


def _verdict_unknown(d, rng, info):
    outs = d["outputs"]
    es = [e for e, o in enumerate(outs) if o in ("pass", "fail")]
    picks = rng.sample(es, rng.choice((1, 1, 2)) if len(es) > 1 else 1)
    for e in picks:
        outs[e] = "unknown"
    return f"claimed verdicts of examples {picks} -> unknown"


def _claim_count(qty):
    def mut(d, rng, info):
        cs = [c for c in d["claims"] if c["quantity"] == qty]
        if not cs:
            return None
        c = rng.choice(cs)
        old = Fraction(c["bound"])
        c["bound"] = _rat(old + rng.choice((1, -1)))
        if rng.random() < 0.3:
            c["op"] = rng.choice(("<=", ">="))
        return f"{qty} claim {c['op']} {c['bound']} (was == {_rat(old)})"
    return mut


def _claim_size(boundary: bool):
    def mut(d, rng, info):
        meas = measure_graph(d)
        qty = rng.choice(("n_params", "max_bits", "width", "depth"))
        m = meas[qty]
        if boundary:  # exactly at the boundary (holds) or just past it (fails)
            op, b = rng.choice(((">=", m), ("<=", m), ("<", m), (">", m), ("<", m + 1), (">", m - 1)))
        else:
            op, b = rng.choice((("==", m + 1), ("==", m - 1), ("<=", m - 1), (">=", m + 1)))
        c = {"quantity": qty, "op": op, "bound": str(b)}
        d["claims"].insert(rng.randrange(len(d["claims"]) + 1), c)
        return f"claim {qty} {op} {b} (measured {m})"
    return mut


def _remove_node(bypass: bool):
    def mut(d, rng, info):
        g = d["model"]["graph"]
        i = rng.randrange(len(g["nodes"]))
        nd = g["nodes"].pop(i)
        if bypass:
            src = nd["inputs"][0]
            for later in g["nodes"][i:]:
                later["inputs"] = [src if v in nd["outputs"] else v for v in later["inputs"]]
            if g["output"] in nd["outputs"]:
                g["output"] = src
            return f"node {i} ({nd['op']}) bypassed: its outputs replaced by {src}"
        return f"node {i} ({nd['op']}) removed"
    return mut


def _duplicate(d, rng, info):
    g = d["model"]["graph"]
    i = rng.randrange(len(g["nodes"]))
    dup = copy.deepcopy(g["nodes"][i])
    if rng.random() < 0.5:
        dup["outputs"] = [o + "_dup" for o in dup["outputs"]]
        where = rng.randrange(i + 1, len(g["nodes"]) + 1)
        g["nodes"].insert(where, dup)
        return f"node {i} ({dup['op']}) duplicated with new outputs at {where}"
    g["nodes"].insert(i + 1, dup)
    return f"node {i} ({dup['op']}) duplicated with the same outputs"


def _reorder(d, rng, info):
    g = d["model"]["graph"]
    i = rng.randrange(len(g["nodes"]) - 1)
    j = i + 1 if rng.random() < 0.7 else rng.randrange(len(g["nodes"]))
    if i == j:
        return None
    g["nodes"][i], g["nodes"][j] = g["nodes"][j], g["nodes"][i]
    return f"nodes {i} and {j} swapped"


def _rename_input(d, rng, info):
    g = d["model"]["graph"]
    i = rng.randrange(len(g["nodes"]))
    nd = g["nodes"][i]
    k = rng.randrange(len(nd["inputs"]))
    before = [g["input"]] + sorted(g["constants"]) + [o for n in g["nodes"][:i] for o in n["outputs"]]
    choices = [v for v in before if v != nd["inputs"][k]]
    if rng.random() < 0.15:
        choices = [o for n in g["nodes"][i + 1:] for o in n["outputs"]] or choices  # used before defined
    old = nd["inputs"][k]
    nd["inputs"][k] = rng.choice(choices)
    return f"node {i} ({nd['op']}) input {k}: {old} -> {nd['inputs'][k]}"


BINARY = ("Add", "Sub", "Mul", "Div", "MatMul")
UNARY = ("Neg", "Relu", "Sqrt", "Reciprocal", "Exp", "Tanh", "Sigmoid", "Erf", "Identity", "Gelu", "Softmax")


def _replace_op(d, rng, info):
    g = d["model"]["graph"]
    slots = [i for i, nd in enumerate(g["nodes"]) if nd["op"] in BINARY + UNARY]
    i = rng.choice(slots)
    nd = g["nodes"][i]
    group = BINARY if nd["op"] in BINARY else UNARY
    old = nd["op"]
    nd["op"] = rng.choice([o for o in group if o != old])
    nd["attrs"] = {}
    return f"node {i} {old} -> {nd['op']}"


def _attr(d, rng, info):
    g = d["model"]["graph"]
    slots = [i for i, nd in enumerate(g["nodes"]) if nd["op"] in ("Softmax", "Gemm", "LayerNormalization", "Gelu")]
    if not slots:
        return None
    i = rng.choice(slots)
    nd = g["nodes"][i]
    at = nd.setdefault("attrs", {})
    op = nd["op"]
    if op == "Softmax":
        old = at.get("axis", -1)
        at["axis"] = rng.choice([a for a in (-3, -2, 0, 1, 2) if a != old])
        return f"node {i} Softmax axis {old} -> {at['axis']}"
    if op == "Gemm":
        key = rng.choice(("transA", "alpha", "beta", "transB"))
        if key.startswith("trans"):
            at[key] = 1 - at.get(key, 0)
        else:
            at[key] = _rat(Fraction(at.get(key, "1")) * rng.choice((2, Fraction(1, 2), -1, Fraction(3, 4))))
        return f"node {i} Gemm {key} -> {at[key]}"
    if op == "LayerNormalization":
        old = at.get("epsilon", "10995116/1099511627776")
        at["epsilon"] = _rat(rng.choice((Fraction(1, 10), Fraction(1, 2 ** 20), Fraction(1), Fraction(1, 100))))
        return f"node {i} LayerNormalization epsilon {old} -> {at['epsilon']}"
    old = at.get("approximate", "none")
    at["approximate"] = "tanh" if old == "none" else "none"
    return f"node {i} Gelu approximate {old} -> {at['approximate']}"


def _repeat_other_label(d, rng, info):
    ds = d["dataset"]
    e = rng.randrange(len(ds["inputs"]))
    lab = ds["labels"][e]
    C = info["classes"]
    new = [rng.choice([k for k in range(C) if k != v]) for v in lab] if isinstance(lab, list) else \
        rng.choice([k for k in range(C) if k != lab])
    where = rng.randrange(len(ds["inputs"]) + 1)
    ds["inputs"].insert(where, copy.deepcopy(ds["inputs"][e]))
    ds["labels"].insert(where, new)
    d["outputs"].insert(where, rng.choice(("pass", "fail", "unknown", d["outputs"][e])))
    return f"input of example {e} repeated at row {where} with label {new}, claim {d['outputs'][where]}"


def _token_change(d, rng, info):
    ds = d["dataset"]
    e = rng.randrange(len(ds["inputs"]))
    x = ds["inputs"][e]
    t = rng.randrange(len(x))
    if d["model"]["input"]["type"] == "tokens":
        old = x[t]
        x[t] = rng.choice([v for v in range(d["model"]["input"]["vocab"]) if v != old])
        return f"example {e} token {t}: {old} -> {x[t]}"
    j = rng.randrange(len(x[t]))
    old = x[t][j]
    x[t][j] = _rat(Fraction(old) + rng.choice((Fraction(1, 1 << 12), Fraction(-1), Fraction(2), Fraction(1, 3))))
    return f"example {e} token {t}[{j}]: {old} -> {x[t][j]}"


MUTATIONS: Dict[str, Callable] = {
    "graph:nudge-margin-small": _nudge("margin", SMALL), "graph:nudge-margin-large": _nudge("margin", LARGE),
    "graph:nudge-random-small": _nudge("random", SMALL), "graph:nudge-random-large": _nudge("random", LARGE),
    "graph:ints-gather-index": _edit_ints([("Gather", (1,))], (-2, -1, 1, 2, 7)),
    "graph:ints-slice": _edit_ints([("Slice", (1, 2, 4))], (-5, -1, 1, 2, 0)),
    "graph:ints-reshape": _edit_ints([("Reshape", (1,))], (-1, 0, 1, 2, 3)),
    "graph:ints-transpose-perm": _perm, "graph:ints-axis": _axis,
    "graph:label-flip": _label_flip, "graph:verdict-flip": _verdict_flip, "graph:verdict-unknown": _verdict_unknown,
    "graph:claim-n_pass": _claim_count("n_pass"), "graph:claim-n_fail": _claim_count("n_fail"),
    "graph:claim-size-off-by-one": _claim_size(False), "graph:claim-size-boundary": _claim_size(True),
    "graph:node-removed": _remove_node(False), "graph:node-bypassed": _remove_node(True),
    "graph:node-duplicated": _duplicate, "graph:nodes-reordered": _reorder, "graph:input-renamed": _rename_input,
    "graph:op-replaced": _replace_op, "graph:attribute-changed": _attr,
    "graph:row-repeated-other-label": _repeat_other_label, "graph:token-changed": _token_change,
}
CLAIM_KINDS = ("graph:claim-n_pass", "graph:claim-n_fail", "graph:claim-size-off-by-one", "graph:claim-size-boundary")


def _info(d: dict) -> dict:
    """What the generator reads off the parent: the class count, each row's runner-up class."""
    prog, exact = _program(d), not irrational(d)
    runner, classes = {}, 0
    for e, (x, lab) in enumerate(zip(d["dataset"]["inputs"], d["dataset"]["labels"])):
        cols = _scores(d, prog, exact, x)
        classes = len(cols[0])
        lab = lab[-1] if isinstance(lab, list) else lab
        col = cols[-1]
        runner[e] = max((k for k in range(len(col)) if k != lab), key=lambda k: col[k][1])
    return {"runner": runner, "classes": classes}


def generate(d: dict, seed: int = 0, per_kind: int = 10, source: str = "") -> List[M.Mutant]:
    """Deterministic mutants of the honest graph certificate ``d`` (re-hashed); edits that do not
    touch the claims drop every claim with probability 1/2."""
    info, out = _info(d), []
    for kind, fn in MUTATIONS.items():
        rng = random.Random(f"{seed}:{source}:{kind}")
        seen, made = set(), 0
        for _ in range(per_kind * 4):
            if made >= per_kind:
                break
            m = copy.deepcopy(d)
            desc = fn(m, rng, info)
            if desc is None:
                break
            if kind not in CLAIM_KINDS and m["claims"] and rng.random() < 0.5:
                m["claims"] = []
                desc += " [claims removed]"
            M.rehash(m)
            if m["hash"] in seen or m["hash"] == d["hash"]:
                continue
            seen.add(m["hash"])
            out.append(M.Mutant(kind, desc, m, source))
            made += 1
    return out


# ----------------------------------------------------------------------------- harness

def _run(engine: str, d: dict):
    try:
        v = M.CHECKERS[engine](d)
        return v.status, v.witness
    except M.MalformedCertificate as e:
        return "MALFORMED", {"message": str(e)}
    except Exception as e:  # any other exception is a checker bug
        return "CRASH", {"message": f"{type(e).__name__}: {e}"}


def judge(o: M.Outcome) -> None:
    """Set ``o.problem`` / ``o.kill`` from the verdict and the oracle's finding."""
    orc, st, w = o.oracle, o.status, o.witness or {}
    if st == "CRASH" or (st == "MALFORMED" and "the kernel met" in w.get("message", "")):
        o.problem = f"{st}: an exception escaped the kernel's checks"
        return
    if orc.malformed == "static":
        o.problem = None if st == "MALFORMED" else f"{st} for a graph the oracle finds malformed ({orc.reason})"
        o.kill = st == "MALFORMED"
        return
    if st == "MALFORMED":
        if orc.malformed == "eval":
            o.kill = True
        else:
            o.problem = f"MALFORMED for a graph the oracle finds valid: {w.get('message')}"
        return
    if orc.malformed == "eval":
        o.problem = f"{st} where the oracle finds row {orc.first} cannot run ({orc.reason})"
        return
    if orc.unsure:
        return
    if st == "UNKNOWN":
        if not (orc.approximate and orc.tiny) and not orc.div0:
            o.problem = f"UNKNOWN without an irrational step and a tiny margin (oracle wrong={orc.wrong})"
        return
    if orc.wrong is None:  # undecided rows: only a refutation the oracle can confirm is acceptable
        o.problem = "CERTIFIED with an undecided example" if st == "CERTIFIED" else _witness(o, lenient=True)
        o.kill = st == "REFUTED" and o.problem is None
        return
    if orc.wrong is True:
        if st == "CERTIFIED":
            o.problem = "FALSE CERTIFIED: the oracle finds this certificate wrong"
        else:
            o.problem = _witness(o)
            o.kill = o.problem is None
        return
    if st == "REFUTED":
        o.problem = f"REFUTED a certificate the oracle finds right (witness {w})"


def _witness(o: M.Outcome, lenient: bool = False) -> Optional[str]:
    """A REFUTED witness must name the claim or the row (and its reason, classes) the oracle finds."""
    orc, w, d = o.oracle, o.witness or {}, o.mutant.doc
    if orc.claim is not None:
        return None if w.get("claim") == d["claims"][orc.claim] else \
            f"witness {w} should name claims[{orc.claim}] = {d['claims'][orc.claim]}"
    e = w.get("example")
    if not isinstance(e, int) or not 0 <= e < len(d["outputs"]):
        return f"witness {w} names no example"
    if lenient:  # the row must be one the oracle decides against its claim
        if e >= len(orc.rows) or orc.rows[e][0] in ("undecided", "unclaimed") or orc.rows[e][0] == d["outputs"][e]:
            return f"witness {w}: the oracle does not find example {e} wrong"
    elif e != orc.first or w.get("reason") != orc.reason:
        return f"witness {w}: the oracle's first failure is example {orc.first} ({orc.reason})"
    if w.get("reason") == "conflicting_labels":
        first = orc.conflicts.get(e)
        return None if w.get("same_input_as") == first else f"witness {w}: the input's first row is {first}"
    if w.get("reason") != "verdict" or w.get("claimed") != d["outputs"][e]:
        return f"witness {w}: not the claimed verdict of example {e}"
    allpos = d["model"]["readout"]["position"] == "all"
    labs = d["dataset"]["labels"][e] if allpos else [d["dataset"]["labels"][e]]
    t = w.get("position", 0)
    lab, k = w["classes"]
    if lab != labs[t]:
        return f"witness {w}: label {labs[t]}"
    truth, info = orc.rows[e]
    found, (_, beat) = info[t]
    if w["claimed"] == "pass" and (found != "fail" or k not in beat):
        return f"witness {w}: the oracle does not find class {k} at least the label's at position {t}"
    if w["claimed"] == "fail" and truth != "pass":
        return f"witness {w}: the oracle does not find example {e} passing"
    return None


def _sans_scores(witness):
    """A witness without its enclosures: the fast graph engine encloses the same scores with its own
    (float64 / double-float) bounds, so two engines agree on the verdict, the example, the reason and the
    claim, not on the digits, nor on which of two (near-)tied classes the enclosures name."""
    return {k: v for k, v in witness.items() if k not in ("scores", "classes")} if isinstance(witness, dict) \
        else witness


def run_campaign(mutants: List[M.Mutant], oracles: List[GraphOracle], agree_every: int = 5,
                 offset: int = 0) -> M.Campaign:
    """Even index (counting from ``offset``): the fast engine, odd: the pure kernel; every
    ``agree_every``-th also by the other, which must give the same status and witness."""
    camp = M.Campaign()
    for i, (m, orc) in enumerate(zip(mutants, oracles), offset):
        engine = "fast" if i % 2 == 0 else "pure"
        t0 = time.perf_counter()
        status, witness = _run(engine, m.doc)
        o = M.Outcome(m, engine, status, witness, orc, time.perf_counter() - t0)
        judge(o)
        if agree_every and i % agree_every == 0:
            other = "pure" if engine == "fast" else "fast"
            st2, w2 = _run(other, m.doc)
            camp.agreement_checked += 1
            if (st2, _sans_scores(w2)) != (status, _sans_scores(witness)) and not o.problem:  # same verdict and example
                o.problem = f"engines disagree: {engine} {status} {witness} vs {other} {st2} {w2}"
        camp.outcomes.append(o)
    return camp
