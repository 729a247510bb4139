"""``exactmem verify`` on real clients exported by ``torch.onnx.export``: a trained
``nn.TransformerEncoder``, ``transformers``' GPT-2 and BERT; planted faults; CLI exit codes.
The kernel's re-check (``check`` → CERTIFIED/REFUTED) runs once ``exactmem.kernel.graph``
exists."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")

import exactmem as em  # noqa: E402
from exactmem.kernel.schema import canonical_hash  # noqa: E402
from exactmem.verify.run import VerifyInputError, export_torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "exactmem", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def _check(path):
    """The kernel's verdict on a certificate, when the kernel knows graphs."""
    pytest.importorskip("exactmem.kernel.graph")
    r = _cli("check", path)
    return r.returncode, r.stdout + r.stderr


class Encoder(torch.nn.Module):
    def __init__(self, vocab=12, d=16, C=10):
        super().__init__()
        self.e = torch.nn.Embedding(vocab, d)
        layer = torch.nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.h = torch.nn.Linear(d, C)

    def forward(self, x):
        return self.h(self.enc(self.e(x)))[:, -1, :]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.integers(0, 12, (20, 6))
    y = rng.integers(0, 10, 20)
    net = Encoder()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    xt, yt = torch.tensor(X), torch.tensor(y)
    for _ in range(300):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(xt), yt)
        loss.backward()
        opt.step()
    net.eval()
    path = str(tmp_path_factory.mktemp("enc") / "encoder.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx.save(export_torch(net, X[:1]), path)
    data = str(tmp_path_factory.mktemp("encdata") / "data.npz")
    np.savez(data, inputs=X, labels=y)
    return net, path, data, X, y


def _consistent(res):
    """certified == float count, except for the rows listed as differences."""
    assert res.float_count is not None
    listed = {d["row"] for d in res.differences}
    for d in res.differences:
        assert d["verdict"] == "unknown" or d["float_argmax_is_label"] != (d["verdict"] == "pass")
    gained = sum(1 for d in res.differences if d["verdict"] == "pass")
    lost = sum(1 for d in res.differences if d["float_argmax_is_label"])
    assert res.certified == res.float_count + gained - lost, listed


def test_encoder_cli_certified_count_equals_float_count(encoder, tmp_path):
    net, path, data, X, y = encoder
    r = _cli("verify", path, "--data", data, "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"certified", "refuted", "unknown", "n_distinct", "float_count", "certificate"} <= set(out)
    assert out["n_distinct"] == 20 and out["certified"] + out["refuted"] + out["unknown"] == 20
    assert out["certified"] >= 18  # memorized in 300 steps
    with torch.no_grad():
        torch_count = int((net(torch.tensor(X)).argmax(-1) == torch.tensor(y)).sum())
    assert out["float_count"] == torch_count
    listed = [d for d in out["differences"] if d["verdict"] != "unknown"]
    assert out["certified"] == out["float_count"] - sum(d["float_argmax_is_label"] for d in listed) + \
        sum(not d["float_argmax_is_label"] for d in listed)
    doc = json.load(open(out["certificate"]))
    assert doc["hash"] == canonical_hash(doc)
    claims = {c["quantity"]: c["bound"] for c in doc["claims"]}
    assert claims["n_pass"] == str(out["certified"]) and claims["n_fail"] == str(out["refuted"])
    assert claims["n_rows"] == "20" and claims["n_examples"] == "20"
    assert set(doc["outputs"]) <= {"pass", "fail", "unknown"}
    rc, text = _check(out["certificate"])
    assert rc == 0 and "CERTIFIED" in text


def test_encoder_module_in_process_and_planted_faults(encoder, tmp_path):
    net, path, data, X, y = encoder
    res = em.verify(net, X, y, out=str(tmp_path))
    _consistent(res)
    i = res.verdicts.index("pass")
    # a flipped label: the producer now says fail; a certificate claiming the old "pass" is refuted
    y2 = y.copy()
    y2[i] = (y[i] + 1) % 10
    assert em.verify(path, X, y2).verdicts[i] == "fail"
    doc = copy.deepcopy(res.doc)
    doc["dataset"]["labels"][i] = int(y2[i])
    doc["hash"] = canonical_hash(doc)
    bad = str(tmp_path / "flipped.verify.json")
    with open(bad, "w") as f:
        json.dump(doc, f)
    # a nudged weight in the ONNX file: the head bias of example i's class drops
    m = onnx.load(path)
    bias = next(t for t in m.graph.initializer if t.name.endswith("h.bias"))
    b = onnx.numpy_helper.to_array(bias).copy()
    b[y[i]] -= 50.0
    bias.CopyFrom(onnx.numpy_helper.from_array(b, bias.name))
    nudged = str(tmp_path / "nudged.onnx")
    onnx.save(m, nudged)
    res2 = em.verify(nudged, X, y)
    assert res2.verdicts[i] == "fail"
    _consistent(res2)
    rc, text = _check(bad)
    assert rc == 1 and "REFUTED" in text


def _gpt2(tmp_path, n_embd=32):
    tr = pytest.importorskip("transformers")
    cfg = tr.GPT2Config(vocab_size=256, n_positions=16, n_embd=n_embd, n_layer=2, n_head=4, bos_token_id=0,
                        eos_token_id=0, use_cache=False, attn_implementation="eager")
    torch.manual_seed(1)
    return tr.GPT2LMHeadModel(cfg).eval()


def test_gpt2_next_token(tmp_path):
    m = _gpt2(tmp_path)
    rng = np.random.default_rng(2)
    X = rng.integers(0, 256, (12, 8))
    with torch.no_grad():
        pred = m(torch.tensor(X)).logits[:, -1, :].argmax(-1).numpy()
    y = pred.copy()
    y[::3] = (y[::3] + 7) % 256  # every third label is not the network's prediction
    res = em.verify(m, X, y, out=str(tmp_path))
    _consistent(res)
    assert res.certified == 8 and res.refuted == 4 and res.unknown == 0
    ops = {nd["op"] for nd in res.doc["model"]["graph"]["nodes"]}
    assert {"Gather", "LayerNormalization", "Softmax", "Tanh", "Pow"} <= ops
    rc, text = _check(res.certificate)
    assert rc == 0 and "CERTIFIED" in text
    # the same network as an ONNX file written by torch.onnx.export, through the command line
    path, data = str(tmp_path / "gpt2.onnx"), str(tmp_path / "data.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx.save(export_torch(m, X[:1]), path)
    np.savez(data, inputs=X, labels=y)
    r = _cli("verify", path, "--data", data, "--out", str(tmp_path / "cli"), "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["certified"], out["refuted"], out["unknown"], out["n_distinct"]) == (8, 4, 0, 12)
    assert out["float_count"] == 8
    rc, text = _check(out["certificate"])
    assert rc == 0 and "CERTIFIED" in text


def test_gpt2_position_all(tmp_path):
    m = _gpt2(tmp_path, n_embd=16)
    X = np.random.default_rng(3).integers(0, 256, (4, 5))
    with torch.no_grad():
        Y = m(torch.tensor(X)).logits.argmax(-1).numpy()
    Y[1, 2] = (Y[1, 2] + 1) % 256
    res = em.verify(m, X, Y, position="all")
    assert res.verdicts == ["pass", "fail", "pass", "pass"]
    _consistent(res)


def test_bert_classifier_last(tmp_path):
    tr = pytest.importorskip("transformers")
    cfg = tr.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=3,
                        attn_implementation="eager")
    torch.manual_seed(3)
    m = tr.BertForSequenceClassification(cfg).eval()
    X = np.random.default_rng(4).integers(0, 64, (10, 6))
    y = np.random.default_rng(5).integers(0, 3, 10)
    res = em.verify(m, X, y, out=str(tmp_path))
    assert res.doc["model"]["graph"]["nodes"] and res.n_distinct == 10
    assert {nd["op"] for nd in res.doc["model"]["graph"]["nodes"]} >= {"Gelu", "Tanh", "Gemm"}
    _consistent(res)
    with pytest.raises(VerifyInputError, match="needs a \\[1, n, C\\] output"):
        em.verify(m, X, np.zeros((10, 6), int), position="all")
    rc, text = _check(res.certificate)
    assert rc == 0 and "CERTIFIED" in text


def test_cli_bad_input_is_one_line_exit_3(encoder, tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    _, path, data, X, y = encoder
    g = helper.make_graph([helper.make_node("Gather", ["E", "x"], ["h"], name="emb"),
                           helper.make_node("TopK", ["h", "k"], ["v", "i"], name="top", axis=-1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.INT64, [1, 6])],
                          [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 6, 3])],
                          [numpy_helper.from_array(np.ones((12, 8), np.float32), "E"),
                           numpy_helper.from_array(np.array([3], np.int64), "k")])
    topk = str(tmp_path / "topk.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), topk)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00not an onnx file at all")
    labels_bad = str(tmp_path / "bad.npz")
    np.savez(labels_bad, inputs=X, labels=y + 100)
    for args, needle in [((topk, "--data", data), "cannot lower ONNX operator TopK (node 'top'"),
                         ((str(garbage), "--data", data), "is not a valid ONNX model"),
                         ((path, "--data", str(tmp_path / "none.npz")), "no such file"),
                         ((path, "--data", labels_bad), "outside the model's 10 classes")]:
        r = _cli("verify", *args, "--out", str(tmp_path))
        assert r.returncode == 3, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("exactmem: error: ") and needle in lines[0], r.stderr
        assert "Traceback" not in r.stderr
    r = _cli("verify", topk, "--data", data, "--debug")
    assert r.returncode != 0 and "Traceback" in r.stderr
