"""−∞, +∞ and NaN in graph models (issue 35, build item 1; docs/verify-format.md § Special values).

A softmax score excluded by −∞ against a hand-computed value; a fully masked row (NaN) and IsNaN;
IEEE arithmetic on special values against NumPy's float64 (kernel and producer); −∞ through every
shape op against ONNX's reference evaluator; an op without a rule refusing in one line (exit 3);
the verdict of a NaN or infinite readout; planted faults: a mask entry edited in a certificate, and a
mask that hides the label's evidence, flip the verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx_cases import _ball, judge as conform, kernel_run, producer_run  # noqa: E402
from test_graph_kernel import doc, ints, node, rat  # noqa: E402

from exactmem.kernel.checker import check_certificate  # noqa: E402
from exactmem.kernel.graph import run_graph  # noqa: E402
from exactmem.kernel.limits import Budget  # noqa: E402
from exactmem.kernel.schema import MalformedCertificate, canonical_hash, parse_certificate  # noqa: E402
from exactmem.verify.evaluate import ArbBackend, Program  # noqa: E402
from exactmem.verify.special import Special  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VEC = {"type": "vectors", "dim": 3}


def values(shape, xs):
    """A ``values`` constant; the special values as their texts."""
    return {"shape": list(shape), "values": [x if x in ("-inf", "inf", "nan") else rat(x) for x in xs]}


def masked_softmax_graph(mask, tail=()):
    """x [1, 1, 3] + mask, Softmax, then ``tail`` nodes; the output flattened to [1, 1, 3]."""
    last = tail[-1]["outputs"][0] if tail else "p"
    return {"input": "x", "output": "y",
            "constants": {"m": values([3], mask) if not isinstance(mask, dict) else mask, "flat": ints([3], [1, 1, -1]),
                          "zero": values([], [0])},
            "nodes": [node("Add", ["x", "m"], "a"), node("Softmax", ["a"], "p"), *tail,
                      node("Reshape", [last, "flat"], "y")]}


def kernel_out(graph, x, F=128):
    """The kernel's output row: [(lo, hi) Fractions, or the special value's text]."""
    cert = parse_certificate(doc(graph, [[x]], [0], ["unknown"], inp=VEC))
    [(lo, hi, sp)], s = run_graph(cert.graph, cert.inputs[0], False, F, Budget(), "last")
    sp = sp or [0] * len(lo)
    return [{-1: "-inf", 1: "inf", 2: "nan"}[c] if c else (Fraction(a, 1 << s), Fraction(b, 1 << s))
            for a, b, c in zip(lo, hi, sp)]


def producer_out(graph, x, prec=128):
    model = {"input": VEC, "graph": graph, "readout": {"position": "last", "decode": "argmax"}}
    K = ArbBackend(prec)
    K.activate()
    out = Program(model).run(K, np.array([[[Fraction(v) for v in x]]], dtype=object))
    return [repr(v) if isinstance(v, Special) else v for v in out.reshape(-1)]


MASK = ["0", "-inf", "0"]
X = ["1", "5", "3"]


def test_a_minus_inf_score_is_excluded_exactly():
    """softmax([1, 5 − ∞, 3]) = [1/(1 + e²), 0, e²/(1 + e²)]: the masked weight is exactly 0 (a point,
    no special value), the others enclose the softmax of the rest (mpmath at 60 digits)."""
    mpmath.mp.dps = 60
    want = [1 / (1 + mpmath.e ** 2), mpmath.mpf(0), mpmath.e ** 2 / (1 + mpmath.e ** 2)]
    got = kernel_out(masked_softmax_graph(MASK), X)
    assert got[1] == (0, 0)
    for (lo, hi), w in zip(got, want):
        assert mpmath.mpf(lo.numerator) / lo.denominator <= w <= mpmath.mpf(hi.numerator) / hi.denominator
        assert hi - lo < Fraction(1, 2 ** 100) or w == 0
    ball = producer_out(masked_softmax_graph(MASK), X)
    assert ball[1] == 0
    for (lo, hi), w in zip(map(_ball, ball), want):
        assert mpmath.mpf(lo.numerator) / lo.denominator <= w <= mpmath.mpf(hi.numerator) / hi.denominator
    # without the mask the middle score dominates: the mask is what excludes it
    assert kernel_out(masked_softmax_graph(["0", "0", "0"]), X)[1][0] > Fraction(1, 2)


def test_a_fully_masked_row_is_nan_and_isnan_where_zeroes_it():
    """Every position −∞: exp(x − max) is NaN in ONNX (onnxruntime and the reference agree), so the
    row is NaN; IsNaN marks it and Where(IsNaN(p), 0, p) — the transformers SDPA export — gives 0."""
    full = ["-inf"] * 3
    assert kernel_out(masked_softmax_graph(full), X) == ["nan"] * 3
    assert producer_out(masked_softmax_graph(full), X) == ["nan"] * 3
    tail = (node("IsNaN", ["p"], "isn"), node("Where", ["isn", "zero", "p"], "q"))
    assert kernel_out(masked_softmax_graph(full, tail), X) == [(0, 0)] * 3
    assert producer_out(masked_softmax_graph(full, tail), X) == [0] * 3
    part = kernel_out(masked_softmax_graph(MASK, tail), X)  # nothing NaN: Where keeps the softmax
    assert part[1] == (0, 0) and part[0][0] > 0 and part[2][0] > 0
    isn = kernel_out(masked_softmax_graph(full, (node("IsNaN", ["p"], "q"),)), X)
    assert isn == [(1, 1)] * 3


SPECIALS = [float("-inf"), float("inf"), float("nan"), 2.0, -3.0, 0.0, 0.5]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Neg", "Reciprocal"])
def test_ieee_arithmetic_on_special_values_matches_numpy(op):
    """Every pair of {−∞, +∞, NaN, 2, −3, 0, 1/2}: the kernel and the producer give NumPy's float64
    result exactly (special or finite); a division by the point 0 is undecided (IEEE's ±∞ is not the
    real network's value), so Div and Reciprocal take nonzero divisors."""
    a = np.array(SPECIALS)
    b = np.array([v for v in SPECIALS if v != 0 or op not in ("Div", "Reciprocal")])
    A, B = np.repeat(a, len(b)), np.tile(b, len(a))
    unary = op in ("Neg", "Reciprocal")
    ins = [b] if unary else [A, B]
    with np.errstate(all="ignore"):
        want = {"Add": A + B, "Sub": A - B, "Mul": A * B, "Div": A / B, "Neg": -b, "Reciprocal": 1 / b}[op]
    nd = helper.make_node(op, ["a"] if unary else ["a", "b"], ["y"])
    for run in (kernel_run, producer_run):
        assert conform(op, run(nd, [np.asarray(v) for v in ins]), [want]) is None, (run.__name__, op)


def _reference(nd, inputs):
    from onnx.reference import ReferenceEvaluator

    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT if np.asarray(v).dtype.kind == "f" else
                                         TensorProto.INT64 if np.asarray(v).dtype.kind == "i" else TensorProto.BOOL,
                                         list(np.shape(v))) for n, v in zip(nd.input, inputs)]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in nd.output]
    m = helper.make_model(helper.make_graph([nd], "g", ins, outs), opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(m).run(None, dict(zip(nd.input, inputs)))


F32 = np.float32


def _shape_cases():
    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    x[0, 1, 2], x[1, 2, 0], x[1, 0, 3] = -np.inf, np.inf, np.nan
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    return [
        ("Reshape", helper.make_node("Reshape", ["x", "s"], ["y"]), [x, i64(4, 6)]),
        ("Transpose", helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1]), [x]),
        ("Unsqueeze", helper.make_node("Unsqueeze", ["x", "a"], ["y"]), [x, i64(1, -1)]),
        ("Squeeze", helper.make_node("Squeeze", ["x", "a"], ["y"]), [x[:1], i64(0)]),
        ("Slice", helper.make_node("Slice", ["x", "b", "e", "a", "st"], ["y"]), [x, i64(3, 0), i64(-5, 3), i64(2, 1), i64(-1, 1)]),
        ("Gather", helper.make_node("Gather", ["x", "i"], ["y"], axis=1), [x, i64(2, 0, 2, -2)]),
        ("Concat", helper.make_node("Concat", ["x", "z"], ["y"], axis=1), [x, x[:, :1] * 2]),
        ("Split", helper.make_node("Split", ["x", "s"], ["y", "w"], axis=2), [x, i64(1, 3)]),
        ("Where", helper.make_node("Where", ["c", "x", "z"], ["y"]), [np.array([True, False, True, False]), x, -x]),
        ("Identity", helper.make_node("Identity", ["x"], ["y"]), [x]),
    ]


@pytest.mark.parametrize("name,nd,inputs", _shape_cases(), ids=[c[0] for c in _shape_cases()])
def test_special_values_move_through_every_shape_op(name, nd, inputs):
    """−∞, +∞ and NaN travel with their elements through each shape op, as ONNX's reference
    evaluator moves them (kernel and producer), and Expand (lowered to x + 0) keeps them too."""
    want = _reference(nd, inputs)
    assert any(not np.all(np.isfinite(w)) for w in want)
    for run in (kernel_run, producer_run):
        assert conform(name, run(nd, inputs), want) is None, run.__name__


def test_expand_keeps_special_values_through_its_lowering():
    """Expand of a computed tensor lowers to x + 0 broadcast: its special values are repeated."""
    from exactmem.verify.onnx_import import load_onnx, lower

    i64 = lambda *v: numpy_helper.from_array(np.array(v, np.int64))  # noqa: E731
    nodes = [helper.make_node("Add", ["ids", "m"], ["a"]), helper.make_node("Expand", ["a", "shape"], ["e"]),
             helper.make_node("Reshape", ["e", "flat"], ["y"])]
    inits = [numpy_helper.from_array(np.array([0, -np.inf, 0], F32), "m"), i64(1, 2, 3), i64(1, 1, 6)]
    inits[1].name, inits[2].name = "shape", "flat"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.FLOAT, [1, 1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 6])], inits)
    L = lower(load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])), 1, 3)
    cert = parse_certificate(doc(L.model_json("last")["graph"], [[X]], [0], ["unknown"], inp=VEC))
    [(lo, _, sp)], s = run_graph(cert.graph, cert.inputs[0], False, 64, Budget(), "last")
    assert sp == [0, -1, 0] * 2 and [Fraction(v, 1 << s) for v in lo] == [1, 0, 3] * 2


def _write(tmp_path, d, name="c.json"):
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


def test_an_op_without_a_rule_refuses_in_one_line(tmp_path):
    """−∞ reaching Exp (no rule for special values): `check` exits 3 with one line naming the node
    and the op; the producer refuses the same model in one line."""
    g = {"input": "x", "output": "y", "constants": {"m": values([3], MASK), "flat": ints([3], [1, 1, -1])},
         "nodes": [node("Add", ["x", "m"], "a"), node("Exp", ["a"], "e"), node("Reshape", ["e", "flat"], "y")]}
    p = _write(tmp_path, doc(g, [[X]], [0], ["pass"], inp=VEC))
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(p)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 3 and not r.stdout
    assert r.stderr == "exactmem: error: malformed certificate: model.graph.nodes[1] (Exp): -inf reaches Exp, which takes no special values " \
                       "(docs/verify-format.md)\n"
    from exactmem.verify.onnx_import import VerifyInputError

    with pytest.raises(VerifyInputError, match=r"^-inf reaches Exp at node 1 \('e'\), which takes no special values"):
        producer_out(g, X)
    for op in ("MatMul", "Relu", "LayerNormalization", "ReduceMean", "Pow", "Gelu"):  # every other op refuses too
        g2 = {**g, "nodes": [g["nodes"][0]] + [
            node(op, ["a", "a"] if op == "MatMul" else ["a", "two"] if op == "Pow" else ["a", "one"]
                 if op == "LayerNormalization" else ["a"], "e")] + g["nodes"][2:]}
        g2["constants"] = {**g["constants"], "two": values([], [2]), "one": values([3], [1, 1, 1])}
        with pytest.raises(MalformedCertificate, match=rf"^model.graph.nodes\[1\] \({op}\): -inf reaches {op}"):
            check_certificate(doc(g2, [[X]], [0], ["pass"], inp=VEC))


def _readout(scores, claimed, label=0):
    g = {"input": "x", "output": "y", "constants": {"s": values([3], scores), "flat": ints([3], [1, 1, -1])},
         "nodes": [node("Mul", ["x", "s"], "a"), node("Reshape", ["a", "flat"], "y")]}
    return check_certificate(doc(g, [[["1", "1", "1"]]], [label], [claimed], inp=VEC))


def test_the_verdict_of_a_nan_or_infinite_readout():
    """A NaN score: the network has no argmax there — a claimed pass is REFUTED (the witness says nan),
    a claimed fail confirmed. ±∞ compare as extended reals: +∞ beats every finite score; two equal
    infinities tie (a failure)."""
    v = _readout(["3", "nan", "1"], "pass")
    assert v.status == "REFUTED" and v.witness["scores"][1] == "nan" and v.witness["classes"] == [0, 1]
    assert _readout(["3", "nan", "1"], "fail").status == "CERTIFIED"
    assert _readout(["nan", "1", "1"], "pass").witness["scores"] == ["nan", "nan"]
    assert _readout(["inf", "7", "-inf"], "pass").status == "CERTIFIED"
    assert _readout(["-inf", "7", "-inf"], "fail").status == "CERTIFIED"
    assert _readout(["-inf", "-inf", "-inf"], "fail").status == "CERTIFIED"  # a tie
    w = _readout(["inf", "inf", "1"], "pass").witness
    assert w["scores"] == ["inf", "inf"]
    assert _readout(["5", "-inf", "-inf"], "pass").status == "CERTIFIED"
    assert _readout(["5", "inf", "-inf"], "pass").status == "REFUTED"


# ----------------------------------------------------------------------------- planted faults, through verify


def attention_model(mask):
    """Token ids [1, 3] → one-hot values; the last query attends with constant scores [4, 0, 0] plus
    ``mask``: the label (the token at position 0) wins while position 0 is visible."""
    onehot = np.eye(4, dtype=F32)
    nodes = [helper.make_node("Gather", ["E", "ids"], ["v"]),  # [1, 3, 4]
             helper.make_node("Add", ["bias", "mask"], ["sc"]),  # [1, 3, 3]
             helper.make_node("Softmax", ["sc"], ["p"]),
             helper.make_node("IsNaN", ["p"], ["isn"]),
             helper.make_node("Where", ["isn", "zero", "p"], ["q"]),
             helper.make_node("MatMul", ["q", "v"], ["y"])]
    bias = np.tile(np.array([4, 0, 0], F32), (1, 3, 1))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])],
                          [numpy_helper.from_array(onehot, "E"), numpy_helper.from_array(bias, "bias"),
                           numpy_helper.from_array(np.asarray(mask, F32).reshape(1, 3, 3), "mask"),
                           numpy_helper.from_array(np.array(0, F32), "zero")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


IDS = np.array([[1, 2, 2], [3, 0, 0], [2, 1, 1], [0, 3, 3]])
LABELS = np.array([1, 3, 2, 0])  # the token at position 0
CAUSAL = [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]]


def test_a_mask_that_hides_the_evidence_flips_every_verdict_and_check_agrees(tmp_path):
    from exactmem.verify.run import verify

    seen = verify(attention_model(CAUSAL), IDS, LABELS, out=str(tmp_path))
    hidden = np.array(CAUSAL)
    hidden[2, 0] = -np.inf  # the last query no longer sees position 0
    blind = verify(attention_model(hidden), IDS, LABELS, out=str(tmp_path), name="blind")
    assert (seen.certified, seen.refuted, blind.certified, blind.refuted) == (4, 0, 0, 4)
    assert seen.float_count == 4 and blind.float_count == 0 and not seen.differences and not blind.differences
    for r in (seen, blind):
        c = subprocess.run([sys.executable, "-m", "exactmem", "check", r.certificate], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
        assert c.returncode == 0 and c.stdout.startswith("CERTIFIED"), c.stdout + c.stderr
    # every position masked for the last query: its row is NaN, Where zeroes it: all scores 0, a tie
    dark = np.array(CAUSAL)
    dark[2] = -np.inf
    r = verify(attention_model(dark), IDS, LABELS)
    assert (r.certified, r.refuted, r.unknown) == (0, 4, 0)


def test_an_edited_mask_entry_in_the_certificate_is_refuted():
    """Planted faults in the certificate: the last query's score of position 0 (bias 4 + mask 0, folded
    into one constant with the −∞ entries) set to −∞ or nudged to 0 makes the claimed pass REFUTED
    (e^0 < 2 e^0); nudged to 1 the label still wins (e > 2): CERTIFIED."""
    from exactmem.verify.run import verify

    d = verify(attention_model(CAUSAL), IDS, LABELS).doc
    assert check_certificate(d).status == "CERTIFIED"
    name, = [k for k, c in d["model"]["graph"]["constants"].items() if c.get("values", [])[:3] == ["4", "-inf", "-inf"]]
    for value, status in (("-inf", "REFUTED"), ("0", "REFUTED"), ("1", "CERTIFIED"), ("4", "CERTIFIED")):
        e = json.loads(json.dumps(d))
        e["model"]["graph"]["constants"][name]["values"][6] = value  # [2, 0]: the last query, position 0
        e["hash"] = canonical_hash(e)
        v = check_certificate(e)
        assert v.status == status and (status == "CERTIFIED" or v.witness["claimed"] == "pass"), (value, v)


def test_sweep_keeps_a_mask_with_special_values_exact():
    """`sweep` rounds weights only: an initializer holding -inf is a mask, kept exact (not a crash)."""
    from exactmem.verify.bits import weight_initializers

    weights, kept = weight_initializers(attention_model(CAUSAL))
    assert kept["mask"] == "mask" and "mask" not in weights


def test_inspect_html_shows_a_certificate_with_special_values():
    from exactmem.inspector.html import graph_model_html
    from exactmem.verify.run import verify

    html = graph_model_html(verify(attention_model(CAUSAL), IDS, LABELS).doc)
    assert "Constant tensors" in html


def test_constant_folds_order_special_values_as_ieee():
    """Max/Min/Less/Equal on constants (mask construction) fold with IEEE's rules: NaN wins Max, every
    comparison with NaN is false, -inf below every number, -inf == -inf."""
    from exactmem.verify.onnx_import import load_onnx, lower

    m = np.array([0, -np.inf, np.nan], F32)
    nodes = [helper.make_node("Max", ["m", "lo"], ["mx"]), helper.make_node("Add", ["ids", "mx"], ["a"]),
             helper.make_node("Less", ["m", "zero"], ["lt"]), helper.make_node("Equal", ["m", "m"], ["eq"]),
             helper.make_node("Where", ["lt", "a", "ids"], ["b"]), helper.make_node("Where", ["eq", "b", "a"], ["y"])]
    inits = [numpy_helper.from_array(m, "m"), numpy_helper.from_array(np.full(3, -1, F32), "lo"),
             numpy_helper.from_array(np.array(0, F32), "zero")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.FLOAT, [1, 1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3])], inits)
    L = lower(load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])), 1, 3)
    consts = L.constants
    assert ["0", "-1", "nan"] in [c.get("values") for c in consts.values()]  # Max: NaN wins, -inf < -1
    assert [0, 1, 0] in [c.get("ints") for c in consts.values()]  # Less: only -inf < 0
    assert [1, 1, 0] in [c.get("ints") for c in consts.values()]  # Equal: NaN != NaN


def test_isinf_detects_each_infinity_as_asked():
    """IsInf on [−∞, +∞, NaN] (through x + mask): both infinities by default, one with the attributes;
    a finite value and NaN give 0."""
    m = ["-inf", "inf", "nan"]
    for attrs, want in (({}, [1, 1, 0]), ({"detect_negative": 0}, [0, 1, 0]), ({"detect_positive": 0}, [1, 0, 0])):
        g = {"input": "x", "output": "y", "constants": {"m": values([3], m), "flat": ints([3], [1, 1, -1])},
             "nodes": [node("Add", ["x", "m"], "a"), node("IsInf", ["a"], "i", **attrs), node("Reshape", ["i", "flat"], "y")]}
        assert kernel_out(g, X) == [(v, v) for v in want]
        assert [int(v) for v in producer_out(g, X)] == want
    g["constants"]["m"] = values([3], [0, 1, 2])
    assert kernel_out(g, X) == [(0, 0)] * 3  # the real network holds these finite


def test_verify_refuses_an_op_without_a_rule_in_one_line(tmp_path):
    """`exactmem verify` on a model where -inf reaches Exp: exit 3, one line naming the op and the node."""
    nodes = [helper.make_node("Add", ["ids", "m"], ["a"]), helper.make_node("Exp", ["a"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.FLOAT, [1, 1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3])],
                          [numpy_helper.from_array(np.array([0, -np.inf, 0], F32), "m")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "d.npz", inputs=np.ones((2, 1, 3), F32), labels=np.zeros(2, np.int64))
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", str(tmp_path / "m.onnx"), "--data",
                        str(tmp_path / "d.npz"), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("exactmem: error: -inf reaches Exp at node 1 ('y'), which takes no special values")
