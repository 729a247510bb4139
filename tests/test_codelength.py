"""Certified code length and memorized bits (issue 36, build item 1; docs/capacity.md, docs/verify-format.md
§ Code length).

The kernel's enclosure of −log₂ softmax(s)_y against a 60-digit mpmath value on hand-made scores;
`verify --measure bits` on a lookup network: its claimed code length certified by `check` (one file and
chunked), equal to the producer's, within a hair of the float estimate on a memorizing network;
planted faults: the total claim lowered by one bit, one example's code length below the kernel's lower
bound, an example whose claim was raised with the total unchanged — each REFUTED with its witness; a
code-length claim without per-example code lengths is malformed.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from exactmem.kernel.checker import check_certificate
from exactmem.kernel.limits import Budget
from exactmem.kernel.schema import MalformedCertificate, canonical_hash, parse_certificate

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
V, n, d = 8, 5, 8


def exact_bits(scores, y, dps=60):
    with mpmath.workdps(dps):
        s = [mpmath.mpf(v.numerator) / v.denominator for v in scores]
        return mpmath.log(mpmath.fsum(mpmath.exp(v - s[y]) for v in s), 2)


@pytest.mark.parametrize("scores,y", [([Fraction(1), Fraction(5), Fraction(3)], 0),
                                      ([Fraction(7, 2), Fraction(-1, 3), Fraction(0)], 0),
                                      ([Fraction(0)] * 4, 2),
                                      ([Fraction(40), Fraction(-40), Fraction(1, 7)], 1)])
def test_kernel_code_length_brackets_minus_log2_p(scores, y):
    """The kernel's enclosure of −log₂ p(y) from the scores (a vectors graph whose network is the
    identity, the scores as its input): a claim 10^-12 bits above the 60-digit value is CERTIFIED, one
    10^-12 bits below it REFUTED with the example as witness."""
    C = len(scores)
    truth = exact_bits(scores, y)
    with mpmath.workdps(60):
        near = [Fraction(int(mpmath.floor((truth + k * mpmath.mpf(10) ** -12) * 2 ** 80)), 2 ** 80) for k in (1, -1)]
    for claim, status in zip(near, ("CERTIFIED", "REFUTED")):
        doc = {"format": "exactmem-certificate", "version": 1, "theorem": "t", "instance": "i", "seed": None,
               "model": {"input": {"type": "vectors", "dim": C}, "readout": {"position": "last", "decode": "argmax"},
                         "graph": {"input": "x", "output": "s", "constants": {},
                                   "nodes": [{"op": "Identity", "inputs": ["x"], "outputs": ["s"], "attrs": {}}]}},
               "dataset": {"inputs": [[[f"{v.numerator}/{v.denominator}" for v in scores]]], "labels": [y]},
               "outputs": [{"verdict": "unknown", "codelength": f"{claim.numerator}/{claim.denominator}"}],
               "claims": [{"quantity": "codelength_bits", "op": "<=", "bound": str(claim.numerator * 4 // claim.denominator
                                                                                    + 3)}],
               "check": {"error_bound": None, "max_precision": 4096}}
        doc["hash"] = canonical_hash(doc)
        v = check_certificate(doc)
        assert v.status == status, (claim, v.message)
        if status == "REFUTED":
            assert v.witness["reason"] == "codelength" and Fraction(v.witness["lower_bound"]) > claim


def lookup_model(scale=1.0, seed=0):
    """A bigram lookup: one-hot embedding, logits = scale · (table of next-token scores)."""
    rng = np.random.default_rng(seed)
    E = np.eye(V, d, dtype=np.float32)
    W = (rng.normal(size=(d, V)) * scale).astype(np.float32)
    g = helper.make_graph([helper.make_node("Gather", ["E", "x"], ["h"]), helper.make_node("MatMul", ["h", "W"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.INT64, [1, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n, V])],
                          [numpy_helper.from_array(E, "E"), numpy_helper.from_array(W, "W")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), W


def data(N=6, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, V, size=(N, n))
    return X, np.roll(X, -1, axis=1)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    import exactmem as em

    model, _ = lookup_model()
    X, Y = data()
    out = tmp_path_factory.mktemp("cl")
    res = em.memorized_bits(model, X, Y, out=str(out))
    return res, json.loads(Path(res.certificate).read_text())


def rehash(doc):
    doc = copy.deepcopy(doc)
    doc["hash"] = canonical_hash(doc)
    return doc


def test_the_code_length_claim_is_certified_and_equals_the_producers(measured):
    res, doc = measured
    m = res.memorized
    claim = next(c for c in doc["claims"] if c["quantity"] == "codelength_bits")
    assert claim["op"] == "<=" and Fraction(claim["bound"]) == Fraction(m["codelength_bits"])
    assert Fraction(m["codelength_bits"]) == sum(Fraction(o["codelength"]) for o in doc["outputs"]) + 2
    assert Fraction(m["memorized_bits"]) == Fraction(m["dataset_bits"]) - Fraction(m["codelength_bits"])
    assert Fraction(m["dataset_bits"]) == 6 * n * 3  # log2 8 = 3 bits per prediction
    v = check_certificate(doc)
    assert v.status == "CERTIFIED", v.message
    assert v.measured["codelength_bits"] == Fraction(m["codelength_bits"])
    # the enclosure is tight: the float code length lies within 2^-20 bits of the certified one (minus the coder's 2)
    assert abs(float(Fraction(m["codelength_bits"])) - 2 - m["float_codelength_bits"]) < 1e-3


def test_the_total_claim_lowered_by_one_bit_is_refuted(measured):
    _, doc = measured
    bad = copy.deepcopy(doc)
    c = next(c for c in bad["claims"] if c["quantity"] == "codelength_bits")
    c["bound"] = str(Fraction(c["bound"]) - 1).replace(" ", "")
    v = check_certificate(rehash(bad))
    assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == "codelength_bits", v.message


def test_one_example_claimed_below_the_kernels_lower_bound_is_refuted(measured):
    _, doc = measured
    bad = copy.deepcopy(doc)
    c = Fraction(bad["outputs"][3]["codelength"]) - Fraction(1, 1 << 20)
    bad["outputs"][3]["codelength"] = f"{c.numerator}/{c.denominator}"
    v = check_certificate(rehash(bad))
    assert v.status == "REFUTED" and v.witness["reason"] == "codelength" and v.witness["example"] == 3, v.message
    assert Fraction(v.witness["lower_bound"]) > c
    assert "code length" in v.message


def test_a_raised_example_with_the_total_unchanged_refutes_the_total(measured):
    _, doc = measured
    bad = copy.deepcopy(doc)
    c = Fraction(bad["outputs"][0]["codelength"]) + 1
    bad["outputs"][0]["codelength"] = f"{c.numerator}/{c.denominator}"
    v = check_certificate(rehash(bad))
    assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == "codelength_bits", v.message


def test_the_fast_graph_engine_gives_the_kernels_verdicts_on_code_length_claims(measured):
    """`check --engine fast` on code-length certificates: the same status and measured total as the kernel on
    the honest certificate and on each planted fault (a total one bit low, one example below its lower
    bound, one example raised with the total unchanged), so the fast path can neither drop a confirmed
    code length from the total nor stop at an undecided one."""
    pytest.importorskip("numpy")
    from exactmem.certificate.fastcheck import check_certificate_fast

    _, doc = measured
    low_total = copy.deepcopy(doc)
    c = next(c for c in low_total["claims"] if c["quantity"] == "codelength_bits")
    b = Fraction(c["bound"]) - 1
    c["bound"] = f"{b.numerator}/{b.denominator}"
    below, raised = copy.deepcopy(doc), copy.deepcopy(doc)
    q = Fraction(below["outputs"][3]["codelength"]) - Fraction(1, 1 << 20)
    below["outputs"][3]["codelength"] = f"{q.numerator}/{q.denominator}"
    q = Fraction(raised["outputs"][0]["codelength"]) + 1
    raised["outputs"][0]["codelength"] = f"{q.numerator}/{q.denominator}"
    for d, status in ((doc, "CERTIFIED"), (low_total, "REFUTED"), (below, "REFUTED"), (raised, "REFUTED")):
        d = rehash(d)
        pure, fast = check_certificate(d), check_certificate_fast(d)
        assert pure.status == fast.status == status, (pure.message, fast.message)
        assert pure.witness == fast.witness or pure.witness.get("claim") == fast.witness.get("claim") or \
            (pure.witness["example"], pure.witness["reason"]) == (fast.witness["example"], fast.witness["reason"])
        if status == "CERTIFIED":
            assert fast.measured["codelength_bits"] == pure.measured["codelength_bits"]


def test_a_code_length_claim_needs_a_code_length_on_every_output(measured):
    _, doc = measured
    bad = copy.deepcopy(doc)
    bad["outputs"][2] = bad["outputs"][2]["verdict"]
    with pytest.raises(MalformedCertificate, match=r"outputs\[2\]"):
        parse_certificate(rehash(bad))


def test_chunked_certificate_sums_the_code_lengths_across_chunks(measured, tmp_path):
    from exactmem.certificate.writer import write_certificate

    _, doc = measured
    path = write_certificate(doc, str(tmp_path / "c.verify.json"), chunk_examples=2)
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", path, "--json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "CERTIFIED" and Fraction(out["measured"]["codelength_bits"]) == \
        Fraction(next(c["bound"] for c in doc["claims"] if c["quantity"] == "codelength_bits"))


def test_a_memorizing_network_memorizes_almost_every_bit_and_cli_prints_it(tmp_path):
    """Large logits on the right next token: code length near 0, so memorized ≈ dataset bits; the
    certified figure is the float estimate less the coder's 2 bits and at most 10^-6 bits of enclosure."""
    X, Y = data(N=4)
    E = np.eye(V, d, dtype=np.float32)
    W = np.zeros((d, V), dtype=np.float32)
    rng = np.random.default_rng(3)
    nxt = {}
    X = np.array([rng.permutation(V)[:n] for _ in range(4)])  # each token has one successor per table row
    X[:, :] = np.array([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5], [2, 3, 4, 5, 6], [3, 4, 5, 6, 7]])
    Y = np.roll(X, -1, axis=1)
    Y[:, -1] = (X[:, -1] + 1) % V
    for a, b in zip(X.reshape(-1), Y.reshape(-1)):
        nxt[int(a)] = int(b)
    for a, b in nxt.items():
        W[a, b] = 30.0
    g = helper.make_graph([helper.make_node("Gather", ["E", "x"], ["h"]), helper.make_node("MatMul", ["h", "W"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.INT64, [1, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n, V])],
                          [numpy_helper.from_array(E, "E"), numpy_helper.from_array(W, "W")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "d.npz", inputs=X, labels=Y)
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", str(tmp_path / "m.onnx"), "--data",
                        str(tmp_path / "d.npz"), "--position", "all", "--measure", "bits", "--out", str(tmp_path),
                        "--json"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["memorized"]
    assert m["float_memorized_bits"] - 2 - 1e-6 <= float(Fraction(m["memorized_bits"])) <= m["float_memorized_bits"] - 2
    assert float(Fraction(m["memorized_bits"])) > 60 - 2.001
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", str(tmp_path / "m.onnx"), "--data",
                        str(tmp_path / "d.npz"), "--position", "all", "--measure", "bits", "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert "memorized >= " in r.stdout and "bits per parameter" in r.stdout
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(tmp_path / "m.verify.json")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("CERTIFIED"), r.stdout + r.stderr


def test_bad_measure_and_source_bits_are_one_line_errors(tmp_path):
    model, _ = lookup_model()
    X, Y = data()
    onnx.save(model, str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "d.npz", inputs=X, labels=Y)
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", str(tmp_path / "m.onnx"), "--data",
                        str(tmp_path / "d.npz"), "--position", "all", "--measure", "bits", "--source-bits", "lots",
                        "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 3 and r.stderr.startswith("exactmem: error: --source-bits") and "Traceback" not in r.stderr
