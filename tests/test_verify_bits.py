"""Bits per weight of a trained network (``exactmem.verify.bits``; ``sweep MODEL.onnx``): exact,
idempotent rounding; the full-width count equals ``em.verify``'s; b* certified by the kernel and
a claim at b* − 1 refuted; CLI errors. A hand-built ONNX model (embedding, one softmax head with a
scale and a causal mask, ReLU MLP): seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("flint")

import exactmem as em  # noqa: E402
from exactmem.kernel.checker import check_certificate  # noqa: E402
from exactmem.kernel.schema import load_certificate  # noqa: E402
from exactmem.arith.numbers import round_to_bits  # noqa: E402
from exactmem.verify.bits import encode_bits, round_model, weight_initializers  # noqa: E402
from exactmem.verify.bits_report import markdown_table  # noqa: E402
from exactmem.verify.floats import decode_bits, exact_array  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB, N_POS, D, C = 16, 4, 8, 6


def tiny_model(seed=0):
    """Embedding + positions, one scaled causal softmax head, residual, ReLU MLP, readout."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    mask = np.triu(np.full((N_POS, N_POS), np.finfo(np.float32).min, np.float32), 1)
    inits = [numpy_helper.from_array(a, k) for k, a in [
        ("E", w(VOCAB, D)), ("P", w(N_POS, D)), ("Wq", w(D, D)), ("Wk", w(D, D)), ("Wv", w(D, D)),
        ("W1", w(D, 2 * D)), ("b1", w(2 * D)), ("W2", w(2 * D, C)),
        ("scale", np.array(0.35355338, np.float32)), ("mask", mask)]]
    n = helper.make_node
    nodes = [n("Gather", ["E", "ids"], ["e0"]), n("Add", ["e0", "P"], ["x"]),
             n("MatMul", ["x", "Wq"], ["q"]), n("MatMul", ["x", "Wk"], ["k"]), n("MatMul", ["x", "Wv"], ["v"]),
             n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), n("MatMul", ["q", "kt"], ["s0"]),
             n("Mul", ["s0", "scale"], ["s1"]), n("Add", ["s1", "mask"], ["s"]),
             n("Softmax", ["s"], ["a"], axis=-1), n("MatMul", ["a", "v"], ["o"]), n("Add", ["x", "o"], ["h"]),
             n("MatMul", ["h", "W1"], ["u0"]), n("Add", ["u0", "b1"], ["u1"]), n("Relu", ["u1"], ["u"]),
             n("MatMul", ["u", "W2"], ["logits"])]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, N_POS])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, N_POS, C])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The model, 40 examples labelled by the real network's argmax (every 7th label shifted),
    and the sweep result with certificates (module scope: computed once)."""
    d = tmp_path_factory.mktemp("bits")
    mp = tiny_model()
    path = str(d / "tiny.onnx")
    onnx.save(mp, path)
    X = np.random.default_rng(1).integers(0, VOCAB, (40, N_POS))
    y = _float_argmax(mp, X)
    y[::7] = (y[::7] + 1) % C
    data = str(d / "data.npz")
    np.savez(data, inputs=X, labels=y)
    res = em.sweep_bits(path, X, y, bits=[2, 4, 6, 8, 12, 16, 24], out=str(d / "out"), float_count=False)
    return mp, path, data, X, y, res, d


def _float_argmax(mp, X):
    """Labels the network (nearly) gets right: onnxruntime's float argmax (it only chooses the
    labels; every verdict is certified)."""
    try:
        import onnxruntime as ort

        sess = ort.InferenceSession(mp.SerializeToString(), providers=["CPUExecutionProvider"])
        return np.array([int(np.argmax(sess.run(None, {"ids": X[i:i + 1]})[0][0, -1])) for i in range(len(X))])
    except ImportError:
        pytest.skip("onnxruntime needed to label the test data")


# ----------------------------------------------------------------------------- rounding


def test_encode_bits_inverts_decode_on_every_kind_of_float32():
    for bits in (0, 1, 0x00000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0xBF800001, 0x7F7FFFFF, 0xFF7FFFFF):
        assert encode_bits(decode_bits(bits, "float32"), "float32") == bits
    for bits in (0x0001, 0x3C00, 0xFBFF):
        assert encode_bits(decode_bits(bits, "float16"), "float16") == bits
    with pytest.raises(ValueError):
        encode_bits(Fraction(1, 3), "float32")
    with pytest.raises(ValueError):
        encode_bits(Fraction(2) ** 128, "float32")
    with pytest.raises(ValueError):
        encode_bits(Fraction(1, 2 ** 150), "float32")


def test_rounding_is_exact_idempotent_and_the_identity_at_24_bits():
    from onnx import numpy_helper

    mp = tiny_model()
    weights, kept = weight_initializers(mp)
    assert kept == {"scale": "scalar", "mask": "mask"}
    assert set(weights) == {"E", "P", "Wq", "Wk", "Wv", "W1", "b1", "W2"}
    same, changed = round_model(mp, 24)
    assert changed == 0 and same.SerializeToString() == mp.SerializeToString()
    assert round_model(mp, 40)[1] == 0
    orig = {t.name: exact_array(numpy_helper.to_array(t)) for t in mp.graph.initializer if t.name in weights}
    for b in (1, 3, 8, 11):
        r, changed = round_model(mp, b)
        assert changed > 0
        got = {t.name: exact_array(numpy_helper.to_array(t)) for t in r.graph.initializer}
        for name, vals in orig.items():
            want = [round_to_bits(v, b) for v in vals.reshape(-1)]
            assert list(got[name].reshape(-1)) == want  # exactly the rounded rationals
        for name in kept:  # structure untouched
            assert any(t.name == name and t == u for t in r.graph.initializer for u in mp.graph.initializer)
        assert round_model(r, b)[1] == 0  # idempotent


# ----------------------------------------------------------------------------- the sweep


def test_full_width_count_equals_verify_and_counts_fall_with_bits(tiny):
    mp, path, data, X, y, res, _ = tiny
    v = em.verify(path, X, y, float_count=False)
    assert res.full.certified == v.certified and res.full.refuted == v.refuted and res.full.unknown == 0
    assert res.points[24].changed == 0 and res.points[24].certified == v.certified and res.points[24].ok
    assert res.full.certified >= 30 and res.n_distinct == 40
    # the count is non-increasing between these widths on this model (asserted, not assumed)
    assert res.points[1].certified < res.points[4].certified <= res.points[24].certified
    assert res.points[1].lost and not res.points[1].ok


def test_b_star_certified_and_the_claim_at_b_star_minus_1_refuted(tiny):
    mp, path, data, X, y, res, d = tiny
    b = res.b_star
    assert b is not None and 2 <= b <= 8
    assert res.points[b].ok and not res.points[b - 1].ok
    assert all(res.points[k].ok for k in res.points if k >= b) or res.violations
    assert res.kernel["b_star"]["status"] == "CERTIFIED"
    assert res.kernel["b_star_minus_1"]["status"] == "CERTIFIED"  # the honest, lower count
    assert res.kernel["b_star_minus_1_claims_all"]["status"] == "REFUTED"
    doc = load_certificate(res.certificates["b_star"])
    assert doc["meta"]["weight_bits"] == b
    claims = {c["quantity"]: int(c["bound"]) for c in doc["claims"]}
    assert claims["n_pass"] == res.points[b].certified
    low = load_certificate(res.certificates["b_star_minus_1"])
    assert {c["quantity"]: int(c["bound"]) for c in low["claims"]}["n_pass"] == res.points[b - 1].certified
    # the planted claim: every full-precision example still memorized at b* - 1 -> refuted, witness a lost row
    v = check_certificate(load_certificate(res.certificates["b_star_minus_1_claims_all"]))
    assert v.status == "REFUTED" and v.witness["example"] in res.points[b - 1].lost
    # the sweep's own check ran the fast graph engine; the pure kernel reaches the same verdicts and witness
    assert {r["engine"] for r in res.kernel.values()} == {"fast"}
    fast = res.kernel["b_star_minus_1_claims_all"]["witness"]  # the same example; its score enclosures differ
    assert {k: x for k, x in v.witness.items() if k != "scores"} == {k: x for k, x in fast.items() if k != "scores"}
    for role in ("b_star", "b_star_minus_1"):
        assert check_certificate(load_certificate(res.certificates[role])).status == res.kernel[role]["status"]
    assert os.path.exists(os.path.join(d, "out", "bits.md")) and os.path.exists(os.path.join(d, "out", "bits.json"))
    table = markdown_table(res)
    assert "bfloat16" in table and "**b\\***" in table


def test_torch_module_in_process_gives_the_same_result(tiny):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    from exactmem.verify.run import export_torch

    class Lin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.e = torch.nn.Embedding(8, 4)
            self.h = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.h(torch.relu(self.e(x)))

    m = Lin().eval()
    X = np.random.default_rng(0).integers(0, 8, (10, 3))
    with torch.no_grad():
        y = m(torch.tensor(X))[:, -1].argmax(-1).numpy()
    mp = export_torch(m, X[:1])
    r1 = em.sweep_bits(m, X, y, bits=[2, 6], check=False, float_count=False)
    r2 = em.sweep_bits(mp, X, y, bits=[2, 6], check=False, float_count=False)
    assert r1.full.certified == r2.full.certified == em.verify(mp, X, y, float_count=False).certified == 10
    assert r1.b_star == r2.b_star and r1.points.keys() == r2.points.keys()


# ----------------------------------------------------------------------------- command line


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "exactmem", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def test_cli_json_and_bad_input(tiny, tmp_path):
    mp, path, data, X, y, res, _ = tiny
    r = _cli("sweep", path, "--data", data, "--bits", "2,6,24", "--out", str(tmp_path / "o"), "--json",
             "--no-check")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["b_star"] == res.b_star and out["full"]["certified"] == res.full.certified
    for bad in (["--bits", "0"], ["--bits", "x"], ["--bits", "2,-1"]):
        r = _cli("sweep", path, "--data", data, *bad, "--out", str(tmp_path / "b"))
        assert r.returncode == 3 and r.stderr.startswith("exactmem: error: ") and "--bits" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    for bad in ([], ["--data", str(tmp_path / "missing.npz")]):
        r = _cli("sweep", path, *bad, "--out", str(tmp_path / "c"))
        assert r.returncode == 3 and r.stderr.startswith("exactmem: error: "), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
