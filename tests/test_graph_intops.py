"""The graph-model ops of issue 35 (build item 2, part B; docs/verify-format.md): comparisons, Not/And/Or,
CumSum and Where on integers computed from the token ids (RoBERTa's position ids, BART's masked ids),
Log/Softplus/Sin/Cos, and tensor (image) inputs. Kernel: exact hand-computed cases, enclosures against
mpmath, planted faults that flip a verdict; producer: the same graphs through ``exactmem verify`` on ONNX
models built with ``onnx.helper``, its claimed verdicts re-derived by the kernel."""

import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from exactmem.kernel.checker import check_certificate
from exactmem.kernel.schema import MalformedCertificate

sys.path.insert(0, str(Path(__file__).parent))
from test_graph_kernel import MP, XS, contains, doc, evaluate, exact, ints, node, values  # noqa: E402

X = [Fraction(3, 2), Fraction(-1, 4), 2, 0]


# ----------------------------------------------------------------------------- kernel: exact cases

def test_comparisons_on_values_and_ints_are_exact_0_1():
    c = {"c": values([4], [1, Fraction(-1, 4), 3, 0])}
    exact([node("Equal", ["x", "c"])], c, X, [0, 1, 0, 1])
    exact([node("Less", ["x", "c"])], c, X, [0, 0, 1, 0])
    exact([node("Greater", ["x", "c"])], c, X, [1, 0, 0, 0])
    exact([node("LessOrEqual", ["x", "c"])], c, X, [0, 1, 1, 1])
    exact([node("GreaterOrEqual", ["x", "c"])], c, X, [1, 1, 0, 1])
    exact([node("Less", ["i", "j"])], {"i": ints([3], [0, 5, -2]), "j": ints([1], [1])}, X, [1, 0, 1])  # broadcast


def test_logic_and_cumsum():
    a, b = ints([4], [0, 1, 0, 1]), ints([4], [0, 0, 1, 1])
    exact([node("Not", ["a"])], {"a": a}, X, [1, 0, 1, 0])
    exact([node("And", ["a", "b"])], {"a": a, "b": b}, X, [0, 0, 0, 1])
    exact([node("Or", ["a", "b"])], {"a": a, "b": b}, X, [0, 1, 1, 1])
    ax = {"ax": ints([], [-1])}
    exact([node("CumSum", ["x", "ax"])], ax, X, [Fraction(3, 2), Fraction(5, 4), Fraction(13, 4), Fraction(13, 4)])
    exact([node("CumSum", ["x", "ax"], exclusive=1)], ax, X, [0, Fraction(3, 2), Fraction(5, 4), Fraction(13, 4)])
    exact([node("CumSum", ["x", "ax"], reverse=1)], ax, X, [Fraction(13, 4), Fraction(7, 4), 2, 0])
    exact([node("CumSum", ["x", "ax"], reverse=1, exclusive=1)], ax, X, [Fraction(7, 4), 2, 0, 0])
    M = {"m": ints([2, 3], [1, 2, 3, 4, 5, 6]), "a0": ints([1], [0])}
    exact([node("CumSum", ["m", "a0"])], M, X, [1, 2, 3, 5, 7, 9])


def test_logic_of_non_booleans_and_two_axes_are_malformed():
    with pytest.raises(MalformedCertificate, match=r"\(Not\): Not takes 0/1 ints"):
        evaluate([node("Not", ["a"])], {"a": ints([2], [0, 2])}, X)
    with pytest.raises(MalformedCertificate, match=r"CumSum takes one axis"):
        evaluate([node("CumSum", ["x", "ax"])], {"ax": ints([2], [0, 1])}, X)


def test_comparison_of_overlapping_enclosures_is_undecided():
    """exp(1) against itself: equal reals whose enclosures have positive width, so neither = nor ≠ is
    decided at any precision; the example is UNKNOWN (never REFUTED, never CERTIFIED)."""
    g = {"input": "ids", "output": "y", "constants": {"E": values([4, 2], [1] * 8), "W": values([1, 2], [1, -1])},
         "nodes": [node("Gather", ["E", "ids"], "h"), node("Exp", ["h"], "e1"), node("Exp", ["h"], "e2"),
                   node("Equal", ["e1", "e2"], "q"), node("Mul", ["q", "W"], "y")]}
    v = check_certificate(doc(g, [[0]], [0], ["pass"], max_precision=128))
    assert v.status == "UNKNOWN", v.message


# ----------------------------------------------------------------------------- RoBERTa and BART

def positions_graph(pad=1):
    """RoBERTa's position ids, (ids != pad).cumsum(1) * (ids != pad) + pad, index P; the scores are
    token embedding + position embedding (4 classes)."""
    C = {"E": values([4, 4], [Fraction((i * 5) % 9 - 4, 4) for i in range(16)]),
         "P": values([6, 4], [Fraction((i * 7) % 11 - 5, 2) for i in range(24)]),
         "pad": ints([], [pad]), "one": ints([], [1])}
    N = [node("Equal", ["ids", "pad"], "eq"), node("Not", ["eq"], "m"), node("CumSum", ["m", "one"], "cs"),
         node("Mul", ["cs", "m"], "cm"), node("Add", ["cm", "pad"], "pos"),
         node("Gather", ["E", "ids"], "te"), node("Gather", ["P", "pos"], "pe"), node("Add", ["te", "pe"], "y")]
    return {"input": "ids", "output": "y", "constants": C, "nodes": N}


def scores(g, x):
    return [lo for lo, _ in evaluate_ids(g, x)]


def evaluate_ids(g, x, F=64):
    from exactmem.kernel.graph import run_graph
    from exactmem.kernel.limits import Budget
    from exactmem.kernel.schema import parse_certificate

    cert = parse_certificate(doc(g, [x], [0], ["unknown"]))
    [(lo, hi, _)], s = run_graph(cert.graph, x, True, F, Budget(), "last")
    return [(Fraction(a, 1 << s), Fraction(b, 1 << s)) for a, b in zip(lo, hi)]


def test_roberta_position_ids_by_hand_and_a_planted_pad_flips_a_verdict():
    g = positions_graph()
    E, P = ([Fraction(v) for v in g["constants"][k]["values"]] for k in ("E", "P"))
    x = [0, 2, 1, 3]  # positions: 2, 3, 1 (a pad keeps the pad id), 4
    want = [E[3 * 4 + j] + P[4 * 4 + j] for j in range(4)]
    assert evaluate_ids(g, x) == [(w, w) for w in want]
    inputs = [[0, 2, 1, 3], [1, 1, 3, 0], [3, 0, 2, 2]]
    labels = [int(np.argmax([float(v) for v in scores(g, x)])) for x in inputs]
    v = check_certificate(doc(g, inputs, labels, ["pass"] * 3))
    assert v.status == "CERTIFIED" and v.measured["n_pass"] == 3, v.message
    planted = positions_graph(pad=0)  # another padding id: other positions, other scores
    v = check_certificate(doc(planted, inputs, labels, ["pass"] * 3))
    assert v.status == "REFUTED" and v.witness["reason"] == "verdict", v.message


def test_bart_masked_fill_of_ids_through_where():
    """Where(ids == 3, 0, ids): token 3 is read as token 0 (masked_fill(ids == -100, pad) in BART)."""
    C = {"E": values([4, 3], [0, 0, 5, 1, 0, 0, 0, 2, 0, 9, 9, 9]), "three": ints([], [3]), "zero": ints([], [0])}
    g = {"input": "ids", "output": "y", "constants": C,
         "nodes": [node("Equal", ["ids", "three"], "c"), node("Where", ["c", "zero", "ids"], "ids2"),
                   node("Gather", ["E", "ids2"], "y")]}
    v = check_certificate(doc(g, [[3], [1], [2]], [2, 0, 1], ["pass"] * 3))
    assert v.status == "CERTIFIED", v.message
    g["nodes"][1]["inputs"] = ["c", "ids", "ids"]  # the mask dropped: token 3 reads row 3 (a tie), refuted
    assert check_certificate(doc(g, [[3], [1], [2]], [2, 0, 1], ["pass"] * 3)).status == "REFUTED"


# ----------------------------------------------------------------------------- kernel: enclosures

@pytest.mark.parametrize("op,f", [("Softplus", lambda x: mpmath.log(1 + mpmath.exp(x))), ("Sin", mpmath.sin),
                                  ("Cos", mpmath.cos)])
def test_softplus_sin_cos_enclose_mpmath(op, f):
    contains([node(op, ["x"])], XS, [f(x) for x in MP])


def test_log_encloses_mpmath_and_is_undecided_at_zero():
    xs = [Fraction(1, 3), Fraction(5, 2), 7, Fraction(1, 1 << 40), 1]
    contains([node("Log", ["x"])], xs, [mpmath.log(mpmath.mpf(x.numerator) / x.denominator) for x in map(Fraction, xs)])
    e = [mpmath.exp(x) for x in MP]
    contains([node("Softmax", ["x"], "s"), node("Log", ["s"])], XS, [mpmath.log(v / sum(e)) for v in e],  # LogSoftmax
             width=Fraction(1, 1 << 40))  # log p is off by about 2^-64 / p for a weight p near e^-12
    from exactmem.kernel.enclosure import Undecided

    with pytest.raises(Undecided):
        evaluate([node("Log", ["x"])], {}, [1, 0])


def test_sin_cos_of_a_rotary_table_and_of_large_arguments():
    """cos(p·θ) of positions p and a frequency θ (a constant: the kernel encloses it, nothing is folded);
    arguments up to 2^40 still reduce modulo 2π within the precision's bits."""
    pos = [0, 1, 2, 3, 1 << 20, (1 << 40) + 3]
    g = [node("Mul", ["p", "t"], "a"), node("Cos", ["a"], "c"), node("Sin", ["a"], "s"), node("Concat", ["c", "s"], axis=0)]
    theta = Fraction(3, 1 << 15)  # a float32 frequency: dyadic, held exactly
    ref = [f(p * mpmath.mpf(3) / 2 ** 15) for f in (mpmath.cos, mpmath.sin) for p in pos]
    contains(g, [0], ref, {"p": values([6], pos), "t": values([], [theta])}, width=Fraction(1, 1 << 40))


def test_sin_of_an_interval_uses_its_width():
    """sin over [lo, hi] is within (hi − lo) of sin(lo) (1-Lipschitz): the enclosure holds both ends."""
    g = [node("Sigmoid", ["x"], "s"), node("Mul", ["s", "k"], "a"), node("Sin", ["a"])]
    ref = [mpmath.sin(3 / (1 + mpmath.exp(-x))) for x in MP]
    contains(g, XS, ref, {"k": values([], [3])})


# ----------------------------------------------------------------------------- tensor (image) inputs

def image_doc(W, inputs, labels, outputs):
    g = {"input": "img", "output": "y", "constants": {"flat": ints([2], [1, 8]), "W": values([8, 3], W)},
         "nodes": [node("Reshape", ["img", "flat"], "f"), node("MatMul", ["f", "W"], "y")]}
    return doc(g, inputs, labels, outputs, inp={"type": "vectors", "dim": 2, "shape": [2, 2, 2]})


def img(k):
    return [[[str((k * 7 + 3 * c + 2 * h + w) % 11 - 5) for w in range(2)] for h in range(2)] for c in range(2)]


def test_image_input_c_h_w_and_a_planted_weight():
    W = [Fraction(((i * 13) % 17) - 8, 4) for i in range(24)]
    inputs = [img(k) for k in range(4)]
    flat = [[Fraction(v) for c in x for h in c for v in h] for x in inputs]
    sc = [[sum(f[i] * W[i * 3 + j] for i in range(8)) for j in range(3)] for f in flat]
    labels = [max(range(3), key=s.__getitem__) for s in sc]
    assert all(sorted(s)[-1] > sorted(s)[-2] for s in sc)  # no ties: every example passes
    v = check_certificate(image_doc(W, inputs, labels, ["pass"] * 4))
    assert v.status == "CERTIFIED" and v.measured["n_pass"] == 4, v.message
    k = next(i for i in range(8) if flat[0][i])  # a weight that example 0's winning score reads
    W2 = list(W)
    W2[k * 3 + labels[0]] -= 100 * flat[0][k]
    v = check_certificate(image_doc(W2, inputs, labels, ["pass"] * 4))
    assert v.status == "REFUTED" and v.witness["example"] == 0, v.message


@pytest.mark.parametrize("mutate,words", [
    (lambda d: d["dataset"]["inputs"][0].pop(), r"dataset.inputs\[0\]: wrong shape"),
    (lambda d: d["model"]["input"].update(shape=[2, 2, 3]), "model.input.shape: expected 1 to 63 dimensions"),
])
def test_image_input_shape_errors_are_one_line(mutate, words):
    from exactmem.kernel.schema import canonical_hash

    d = image_doc([0] * 24, [img(0)], [0], ["unknown"])
    mutate(d)
    d["hash"] = canonical_hash(d)
    with pytest.raises(MalformedCertificate, match=words):
        check_certificate(d)


# ----------------------------------------------------------------------------- producer: ONNX through verify

onnx = pytest.importorskip("onnx")


def _model(nodes, inits, inp, out, opset=18):
    import onnx.helper as oh

    g = oh.make_graph(nodes, "m", [inp], [out], initializer=inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def _verify_and_check(model, inputs, labels):
    from exactmem.verify.run import verify

    res = verify(model, np.asarray(inputs), np.asarray(labels), float_count=False)
    v = check_certificate(res.doc)
    return res, v


def roberta_onnx(pad=1):
    import onnx.helper as oh
    from onnx import TensorProto as TP, numpy_helper as nh

    rng = np.random.default_rng(0)
    E, P = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(8, 4)).astype(np.float32)
    inits = [nh.from_array(E, "E"), nh.from_array(P, "P"), nh.from_array(np.array(pad, np.int64), "pad"),
             nh.from_array(np.array(1, np.int64), "one")]
    nodes = [oh.make_node("Equal", ["ids", "pad"], ["eq"]), oh.make_node("Not", ["eq"], ["ne"]),
             oh.make_node("Cast", ["ne"], ["m"], to=TP.INT32), oh.make_node("CumSum", ["m", "one"], ["cs"]),
             oh.make_node("Mul", ["cs", "m"], ["cm"]), oh.make_node("Cast", ["cm"], ["cm64"], to=TP.INT64),
             oh.make_node("Add", ["cm64", "pad"], ["pos"]), oh.make_node("Gather", ["E", "ids"], ["te"]),
             oh.make_node("Gather", ["P", "pos"], ["pe"]), oh.make_node("Add", ["te", "pe"], ["h"]),
             oh.make_node("LogSoftmax", ["h"], ["y"], axis=-1)]
    return _model(nodes, inits, oh.make_tensor_value_info("ids", TP.INT64, [1, 5]),
                  oh.make_tensor_value_info("y", TP.FLOAT, [1, 5, 4]))


def test_verify_roberta_position_ids_and_log_softmax_agree_with_the_kernel_and_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    m = roberta_onnx()
    rng = np.random.default_rng(3)
    X = rng.integers(0, 5, (12, 5))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    Y = [np.asarray(sess.run(None, {"ids": X[i:i + 1]})[0])[0, -1] for i in range(len(X))]
    labels = [int(np.argmax(y)) for y in Y[:8]] + [int(np.argmin(y)) for y in Y[8:]]
    res, v = _verify_and_check(m, X, labels)
    assert res.certified + res.refuted == len(set(map(tuple, X.tolist()))) and res.unknown == 0
    assert v.status == "CERTIFIED", v.message
    ops = {nd["op"] for nd in res.doc["model"]["graph"]["nodes"]}
    assert {"Equal", "Not", "CumSum", "Log", "Softmax"} <= ops
    doc2 = dict(res.doc)  # the verdicts claimed under pad 1 are refuted under pad 0 (a planted fault)
    from exactmem.kernel.schema import canonical_hash

    pad = next(nd["inputs"][1] for nd in doc2["model"]["graph"]["nodes"] if nd["op"] == "Equal")
    doc2["model"] = {**doc2["model"], "graph": {**doc2["model"]["graph"], "constants": {
        **doc2["model"]["graph"]["constants"], pad: {"shape": [], "ints": [0]}}}}
    doc2["hash"] = canonical_hash(doc2)
    assert doc2["model"]["graph"]["constants"] != res.doc["model"]["graph"]["constants"]
    assert check_certificate(doc2).status == "REFUTED"


def test_verify_bart_shifted_ids_mask_sin_softplus_mish():
    import onnx.helper as oh
    from onnx import TensorProto as TP, numpy_helper as nh

    rng = np.random.default_rng(1)
    E = rng.normal(size=(6, 3)).astype(np.float32)
    inits = [nh.from_array(E, "E"), nh.from_array(np.array(5, np.int64), "five"),
             nh.from_array(np.array(0, np.int64), "zero")]
    nodes = [oh.make_node("Equal", ["ids", "five"], ["c"]), oh.make_node("Where", ["c", "zero", "ids"], ["ids2"]),
             oh.make_node("Gather", ["E", "ids2"], ["h"]), oh.make_node("Sin", ["h"], ["s"]),
             oh.make_node("Softplus", ["s"], ["p"]), oh.make_node("Mish", ["p"], ["y"])]
    m = _model(nodes, inits, oh.make_tensor_value_info("ids", TP.INT64, [1, 3]),
               oh.make_tensor_value_info("y", TP.FLOAT, [1, 3, 3]))
    X = np.array([[1, 2, 5], [5, 5, 0], [3, 4, 2], [0, 1, 5]])
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    labels = [int(np.argmax(np.asarray(sess.run(None, {"ids": X[i:i + 1]})[0])[0, -1])) for i in range(4)]
    res, v = _verify_and_check(m, X, labels)
    assert res.doc["dataset"]["inputs"][1] == [5, 5, 0]
    assert res.certified == 4 and v.status == "CERTIFIED", v.message  


def test_verify_image_input_n_c_h_w():
    import onnx.helper as oh
    from onnx import TensorProto as TP, numpy_helper as nh

    rng = np.random.default_rng(2)
    W = rng.normal(size=(12, 4)).astype(np.float32)
    inits = [nh.from_array(W, "W"), nh.from_array(np.array([1, 12], np.int64), "flat")]
    nodes = [oh.make_node("Reshape", ["img", "flat"], ["f"]), oh.make_node("MatMul", ["f", "W"], ["z"]),
             oh.make_node("Cos", ["z"], ["y"])]
    m = _model(nodes, inits, oh.make_tensor_value_info("img", TP.FLOAT, [1, 3, 2, 2]),
               oh.make_tensor_value_info("y", TP.FLOAT, [1, 4]))
    X = rng.normal(size=(6, 3, 2, 2)).astype(np.float32)
    Z = np.cos(X.reshape(6, 12).astype(np.float64) @ W.astype(np.float64))
    labels = [int(np.argmax(z)) for z in Z[:4]] + [int(np.argmin(z)) for z in Z[4:]]
    res, v = _verify_and_check(m, X, labels)
    assert res.doc["model"]["input"] == {"type": "vectors", "dim": 2, "shape": [3, 2, 2]}
    assert (res.certified, res.refuted) == (4, 2) and v.status == "CERTIFIED", v.message
