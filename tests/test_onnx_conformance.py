"""The kernel (and the producer) agree with ONNX's own semantics (issue 38, item 1).

ONNX semantics are what the installed ``onnx`` package's backend node cases say. For every
single-node case whose operator is in the op table (``docs/verify-format.md``), the kernel's op —
driven through its own parser, ``exactmem.kernel.graph.parse_graph``, so attribute validation runs —
and the producer's op (``exactmem.verify.kernels`` through ``Program``) must either

* **enclose** each expected output: the exact rational interval contains the expected float taken
  exactly from its bits — for structural ops (Slice, Reshape, Gather, …) the value itself, no
  tolerance; for arithmetic and irrational ops, whose expected float32 is ONNX's *rounded* result of
  the real value, the interval must meet [expected − n·ulp, expected + n·ulp] with the ulp computed
  exactly from the float's bits and n per op (``onnx_cases.ULPS``: 1 for a correctly rounded step,
  4 for numpy's float32 exp/tanh/erf, more where the reference chains float steps), or
* **refuse** the case with one line (the kernel's ``MalformedCertificate``/``ShapeError``, the
  producer's ``OpError``/numpy error) because an attribute or dtype is outside the table.

No case may fail. The per-operator counts are written in ``docs/verify-format.md`` (§ Conformance
to ONNX's backend node cases) and checked here, so they cannot drift. Then differential fuzzing
against ``onnx.reference.ReferenceEvaluator`` (onnxruntime for Slice and Softmax), and the regression tests of
the adversarial round's bugs, at the certificate level and through ``verify``.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
sys.path.insert(0, str(Path(__file__).parent))
import onnx_cases as oc  # noqa: E402

from exactmem.kernel.checker import check_certificate  # noqa: E402
from exactmem.kernel.schema import MalformedCertificate, canonical_hash  # noqa: E402

DOC = Path(__file__).parent.parent / "docs" / "verify-format.md"


@pytest.fixture(scope="module")
def tables():
    """Both tables over ONNX's cases (``collect_testcases`` runs once per session)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        oc.cases()
        return {"kernel": oc.table(oc.kernel_run, oc.KERNEL_REFUSALS),
                "producer": oc.table(oc.producer_run, oc.PRODUCER_REFUSALS)}


def markdown(tables) -> str:
    kc, pc = tables["kernel"][0], tables["producer"][0]
    rows = ["| op | kernel enclosed | kernel refused | kernel failing | producer enclosed | producer refused | producer failing |",
            "|---|---|---|---|---|---|---|"]
    for op in oc.TABLE:
        k, p = kc[op], pc[op]
        rows.append(f"| `{op}` | {k['enclosed']} | {k['refused']} | {k['failing']} | {p['enclosed']} | {p['refused']} | {p['failing']} |")
    tot = lambda c, key: sum(v[key] for v in c.values())  # noqa: E731
    rows.append("| **all** | **%d** | **%d** | **%d** | **%d** | **%d** | **%d** |" % tuple(
        tot(c, key) for c in (kc, pc) for key in ("enclosed", "refused", "failing")))
    return "\n".join(rows)


@pytest.mark.parametrize("side", ["kernel", "producer"])
def test_every_onnx_case_is_enclosed_or_refused_in_one_line(tables, side):
    counts, rows = tables[side]
    failing = [(name, why) for name, op, kind, why in rows if kind == "failing"]
    assert not failing, failing
    assert sum(c["enclosed"] for c in counts.values()) >= 140
    for name, op, kind, why in rows:
        assert kind != "refused" or "\n" not in why and len(why) < 300, (name, why)
    assert all(sum(c.values()) for c in counts.values()), "an operator of the table has no ONNX case"


def test_kernel_and_producer_refuse_the_same_cases(tables):
    k = {name: kind for name, _, kind, _ in tables["kernel"][1]}
    p = {name: kind for name, _, kind, _ in tables["producer"][1]}
    assert k == p


def test_the_documented_table_is_the_measured_one(tables):
    text = DOC.read_text()
    sec = text.split("## Conformance to ONNX's backend node cases", 1)
    assert len(sec) == 2, "docs/verify-format.md lacks its conformance section"
    assert markdown(tables) in sec[1], "docs/verify-format.md's conformance table is stale:\n" + markdown(tables)


# ----------------------------------------------------------------------------- differential fuzzing

def fuzz(n, seed, special=0.0):
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    rng = np.random.default_rng(seed)
    decided = agree = 0
    bad = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n):
            kind, ok, why, node, inputs = oc.fuzz_one(rng, special)
            if kind == "decided":
                decided += 1
                agree += ok
                if not ok:
                    bad.append((node.op_type, why, [a.shape for a in inputs]))
    return decided, agree, bad


def test_fuzz_against_onnx_reference():
    """1,000 random nodes of the table (broadcasting, negative / repeated / out-of-range axes, empty
    axes and dimensions, Slice clamping): wherever ONNX gives a finite value both tables enclose it;
    wherever ONNX refuses the node (the reference, or onnxruntime for Slice and Softmax, raises) both refuse it."""
    pytest.importorskip("onnxruntime")
    decided, agree, bad = fuzz(1000, 38)
    assert decided >= 970 and agree == decided, bad[:5]


def test_fuzz_with_special_values_against_onnx_reference():
    """1,000 random nodes whose float inputs hold -inf, inf and nan (a quarter of the entries) for the
    ops with rules for them: both tables give ONNX's special results exactly and enclose its finite ones
    (Softmax rows with -inf, fully masked rows, inf - inf, inf * 0, x / inf, ...)."""
    pytest.importorskip("onnxruntime")
    decided, agree, bad = fuzz(1000, 35, special=0.25)
    assert decided >= 970 and agree == decided, bad[:5]


@pytest.mark.slow
def test_fuzz_against_onnx_reference_long():
    pytest.importorskip("onnxruntime")
    decided, agree, bad = fuzz(10_000, 2038)  # about 20 s
    assert decided >= 9800 and agree == decided, bad[:5]


# ----------------------------------------------------------------------------- the adversarial round's bugs

def _doc(graph, x, label, claim):
    d = {"format": "exactmem-certificate", "version": 1, "theorem": "graph", "instance": "t", "seed": 0,
         "model": {"input": {"type": "vectors", "dim": len(x)}, "graph": graph,
                   "readout": {"position": "last", "decode": "argmax"}},
         "dataset": {"inputs": [[[oc.rat(v) for v in x]]], "labels": [label]}, "outputs": [claim], "claims": [],
         "check": {"error_bound": None, "max_precision": 256}}
    d["hash"] = canonical_hash(d)
    return d


def test_pow_broadcasts_to_the_exponents_rank():
    """X [1, 3] ** Y [1, 1, 1] is [1, 1, 3] (ONNX broadcasts); a Softmax over axis 1 then sees one
    element per group: every score is 1, an exact tie (onnxruntime's answer). The kernel kept X's
    shape and certified 'pass'; now the claimed pass is refuted."""
    from fractions import Fraction

    g = {"input": "x", "output": "z", "constants": {"s": {"shape": [2], "ints": [1, 3]},
                                                     "one": {"shape": [1, 1, 1], "values": ["1"]}},
         "nodes": [{"op": "Reshape", "inputs": ["x", "s"], "outputs": ["x2"]},
                   {"op": "Pow", "inputs": ["x2", "one"], "outputs": ["p"]},
                   {"op": "Softmax", "inputs": ["p"], "outputs": ["z"], "attrs": {"axis": 1}}]}
    x = [Fraction(1), Fraction(2), Fraction(3)]
    v = check_certificate(_doc(g, x, 2, "pass"))
    assert v.status == "REFUTED", v
    assert check_certificate(_doc(g, x, 2, "fail")).status == "CERTIFIED"  # a tie is not memorized


def _slice_graph():
    """scores = Concat(Slice(x, start −5, end −10, step −1), Slice(x, 1, 2)) on x of dim 2: ONNX clamps
    the start −5 + 2 = −3 to 0 (negative step), so the scores are [x0, x1]; Python's range rules
    gave [] and left one class."""
    c = lambda v: {"shape": [1], "ints": [v]}  # noqa: E731
    return {"input": "x", "output": "z",
            "constants": {"a": c(-5), "b": c(-10), "ax": c(2), "m1": c(-1), "one": c(1), "two": c(2)},
            "nodes": [{"op": "Slice", "inputs": ["x", "a", "b", "ax", "m1"], "outputs": ["s1"]},
                      {"op": "Slice", "inputs": ["x", "one", "two", "ax"], "outputs": ["s2"]},
                      {"op": "Concat", "inputs": ["s1", "s2"], "outputs": ["z"], "attrs": {"axis": 2}}]}


def test_slice_clamps_a_negative_step_start_below_minus_dim():
    """onnxruntime gives [−1.25, 1.25]: label 0 is not memorized. The kernel certified 'pass'."""
    from fractions import Fraction

    x = [Fraction(-5, 4), Fraction(5, 4)]
    assert check_certificate(_doc(_slice_graph(), x, 0, "pass")).status == "REFUTED"
    assert check_certificate(_doc(_slice_graph(), x, 0, "fail")).status == "CERTIFIED"


@pytest.mark.parametrize("op,ins,consts", [
    ("Slice", ["x", "st", "en", "ax"], {"st": [0, 0], "en": [1, 1], "ax": [2, 2]}),
    ("Slice", ["x", "st", "en", "ax"], {"st": [0, 0], "en": [1, 1], "ax": [2, -1]}),
    ("Unsqueeze", ["x", "ax"], {"ax": [0, 0]}),
    ("Unsqueeze", ["x", "ax"], {"ax": [1, -4]}),
    ("Squeeze", ["x", "ax"], {"ax": [0, 0]}),
    ("ReduceMean", ["x", "ax"], {"ax": [2, -1]}),
    ("ReduceMean", ["x", "ax"], {"ax": [3]}),
    ("Slice", ["x", "st", "en", "ax"], {"st": [0], "en": [1], "ax": [3]}),
])
def test_invalid_axes_are_malformed_naming_the_node(op, ins, consts):
    """Repeated or out-of-range axes are invalid ONNX (onnxruntime refuses): malformed, naming the node
    (Unsqueeze with a repeated axis used to raise StopIteration; Slice's were accepted)."""
    from fractions import Fraction

    g = {"input": "x", "output": "z", "constants": {k: {"shape": [len(v)], "ints": v} for k, v in consts.items()},
         "nodes": [{"op": op, "inputs": ins, "outputs": ["y"]},
                   {"op": "Identity", "inputs": ["x"], "outputs": ["z"]}]}
    with pytest.raises(MalformedCertificate, match=rf"model\.graph\.nodes\[0\] \({op}\): .*(repeat|out of range)"):
        check_certificate(_doc(g, [Fraction(1), Fraction(2)], 0, "pass"))


@pytest.mark.parametrize("node,shape,x", [
    ({"op": "ReduceMean", "inputs": ["e", "ax"], "outputs": ["y"]}, [2, 0], "mean over no elements"),
    ({"op": "Softmax", "inputs": ["e"], "outputs": ["y"], "attrs": {"axis": 1}}, [2, 0], None),
    ({"op": "LayerNormalization", "inputs": ["e", "sc"], "outputs": ["y"]}, [2, 0], None),
])
def test_empty_axes_are_a_value_or_malformed(node, shape, x):
    """Reduce over an empty set: ONNX's mean is NaN (no rational value: malformed); Softmax and
    LayerNormalization of an empty axis are empty tensors (as onnx.reference gives), not a crash."""
    from fractions import Fraction

    g = {"input": "x", "output": "z",
         "constants": {"e": {"shape": shape, "values": []}, "ax": {"shape": [1], "ints": [1]},
                       "sc": {"shape": [0], "values": []}},
         "nodes": [node, {"op": "Identity", "inputs": ["x"], "outputs": ["z"]}]}
    d = _doc(g, [Fraction(1), Fraction(2)], 1, "pass")
    if x:
        with pytest.raises(MalformedCertificate, match=x):
            check_certificate(d)
    else:
        assert check_certificate(d).status == "CERTIFIED"


def test_verify_slice_fail_claim_is_confirmed(tmp_path):
    """Through ``exactmem.verify`` on a real ONNX file: the producer follows ONNX (scores [−1.25, 1.25],
    label 0 fails), and the kernel, which followed Python's range rules, refuted that true 'fail'."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import exactmem as em
    from onnx import TensorProto as TP, helper as oh

    i64 = lambda name, v: oh.make_tensor(name, TP.INT64, [len(v)], v)  # noqa: E731
    nodes = [oh.make_node("Slice", ["x", "a", "b", "ax", "m1"], ["s1"]),
             oh.make_node("Slice", ["x", "one", "two", "ax"], ["s2"]),
             oh.make_node("Concat", ["s1", "s2"], ["z"], axis=2)]
    g = oh.make_graph(nodes, "slice", [oh.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2])],
                      [oh.make_tensor_value_info("z", TP.FLOAT, [1, 1, 2])],
                      [i64("a", [-5]), i64("b", [-10]), i64("ax", [2]), i64("m1", [-1]), i64("one", [1]),
                       i64("two", [2])])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 18)])
    m.ir_version = 9
    path = str(tmp_path / "slice.onnx")
    onnx.save(m, path)
    X = np.array([[[-1.25, 1.25]], [[1.25, -1.25]]], dtype=np.float32)
    res = em.verify(path, X, np.array([0, 0]), out=str(tmp_path))
    assert list(res.verdicts) == ["fail", "pass"]
    assert (res.certified, res.refuted, res.float_count) == (1, 1, 1)  # refuted: provably not memorized
    v = check_certificate(res.doc)  # the kernel confirms both claims (it refuted the true 'fail' before)
    assert v.status == "CERTIFIED", v
