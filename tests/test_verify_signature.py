"""Any model signature (issue 35, build item 3): a readout at any position K, a module whose forward
takes more than the input or returns more than the scores, and export errors that keep their cause.

The ONNX part needs no PyTorch (a lookup-table model built with ``onnx.helper``); the module part
is ``needs_torch``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from exactmem.verify.data import readout_index  # noqa: E402
from exactmem.verify.onnx_import import VerifyInputError  # noqa: E402
from exactmem.verify.run import export_cause, pick_output, verify  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V, C, n = 7, 5, 4


def table_model(table: np.ndarray):
    """ids [1, n] -> scores [1, n, C] = table[ids] (float32): each position's scores are its token's row."""
    g = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["scores"], axis=0)], "lookup",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, n])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, n, C])],
        [numpy_helper.from_array(table.astype(np.float32), "table")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


@pytest.fixture(scope="module")
def lookup():
    rng = np.random.default_rng(3)
    table = rng.integers(-8, 8, (V, C)).astype(np.float32)
    table[np.arange(V), rng.integers(0, C, V)] += 20  # one clear winner per token
    X = rng.integers(0, V, (12, n))
    return table, X


def test_readout_index_reads_python_style_positions():
    assert [readout_index(k, 4) for k in ("last", "all", 0, "2", -1, "-4")] == [None, None, 0, 2, 3, 0]
    for bad in (4, -5, "first", 1.5, None):
        with pytest.raises(VerifyInputError):
            readout_index(bad, 4)


def test_position_k_certifies_what_position_k_answers(lookup, tmp_path):
    table, X = lookup
    mp = table_model(table)
    for k in (0, 2, -1):
        y = np.argmax(table[X[:, k]], axis=1)  # the answer at position k
        res = verify(mp, X, y, position=k, out=str(tmp_path / f"k{k}"), name=f"pos{k}")
        assert (res.certified, res.refuted, res.unknown) == (len(set(map(tuple, X))), 0, 0)
        assert res.float_count == res.certified
        assert (res.n_params, res.n_params_source, res.graph_constants, res.buffers) == \
            (V * C, "ONNX float initializers", V * C, None)  # the readout's index is an int, not a weight
        wrong = verify(mp, X, (y + 1) % C, position=k)  # every label off: nothing memorized
        assert wrong.certified == 0 and wrong.refuted == res.certified
        path = res.certificate
        r = subprocess.run([sys.executable, "-m", "exactmem", "check", path], capture_output=True, text=True,
                           cwd=ROOT, timeout=300)
        assert r.returncode == 0 and r.stdout.startswith("CERTIFIED"), r.stdout + r.stderr
        nodes = json.load(open(path))["model"]["graph"]["nodes"]
        assert nodes[-1]["op"] == "Gather"  # the readout the certificate states, checked like any node
    # position 0 differs from the last position on this data: the readout is not the last one in disguise
    y0 = np.argmax(table[X[:, 0]], axis=1)
    assert verify(mp, X, y0, position="last").certified < len(set(map(tuple, X)))


def test_position_k_errors_are_one_line(lookup):
    table, X = lookup
    y = np.zeros(len(X), dtype=np.int64)
    with pytest.raises(VerifyInputError, match="outside sequences of 4 tokens"):
        verify(table_model(table), X, y, position=9)
    with pytest.raises(VerifyInputError, match="forward= and output= apply to a torch.nn.Module"):
        verify(table_model(table), X, y, output=0)
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", "nope.onnx", "--data", "x.npz", "--position",
                        "first"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_pick_output_by_name_index_or_default():
    class Out(dict):
        pass

    assert pick_output({"logits": 1, "aux": 2}) == 1 and pick_output((3, 4)) == 3 and pick_output(5) == 5
    assert pick_output((3, 4), 1) == 4 and pick_output({"a": 1, "b": 2}, "b") == 2
    with pytest.raises(VerifyInputError, match=r"no such item \(it has a, b\)"):
        pick_output({"a": 1, "b": 2}, "logits")
    with pytest.raises(VerifyInputError, match=r"2 items"):
        pick_output((1, 2), 5)


def test_export_cause_is_the_first_line_of_the_innermost_message():
    try:
        try:
            raise ValueError("Unsupported: data-dependent branch on x.sum()\n  at line 3\n" + "detail " * 100)
        except ValueError as inner:
            raise RuntimeError("Failed to export the model with torch.export. " + "x" * 400) from inner
    except RuntimeError as e:
        msg = export_cause(e)
    assert msg.startswith("ValueError: Unsupported: data-dependent branch on x.sum()") and "detail" not in msg
    assert len(msg) < 600


@pytest.mark.needs_torch
def test_a_module_with_two_inputs_and_two_outputs_read_at_position_0(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")

    class TwoInTwoOut(torch.nn.Module):
        """forward(x, y) -> (scores [1, n, C], aux): a memorizer that answers at its first token."""

        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.arange(64.0).reshape(8, 8))  # a fixed table, never trained
            self.frozen = torch.nn.Parameter(torch.ones(16), requires_grad=False)
            self.e = torch.nn.Embedding(V, 16)
            self.att = torch.nn.MultiheadAttention(16, 2, batch_first=True)
            self.h = torch.nn.Linear(16, C)

        def forward(self, x, y):
            z = self.e(x) * self.frozen + y + self.table[0, 0]
            a, w = self.att(z, z, z)
            return self.h(a), w

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    codes = rng.choice(V ** n, 16, replace=False)  # 16 distinct sequences: no input with two labels
    X = np.stack([(codes // V ** j) % V for j in range(n)], axis=1)
    labels = rng.integers(0, C, 16)
    net, shift = TwoInTwoOut(), torch.zeros(1, n, 16)
    opt = torch.optim.Adam(net.parameters(), lr=3e-2)
    for _ in range(300):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(torch.tensor(X), shift)[0][:, 0], torch.tensor(labels)).backward()
        opt.step()
    net.eval()
    res = verify(net, X, labels, position=0, forward=lambda m, x: m(x, shift), output=0, out=str(tmp_path))
    trainable = sum(p.numel() for p in net.parameters() if p.requires_grad)
    assert (res.n_params, res.buffers, res.n_params_source) == (trainable, 64, "module parameters")
    assert res.graph_constants >= trainable  # the graph's constants hold the weights and more (frozen, shapes...)
    with torch.no_grad():
        float_ok = int((net(torch.tensor(X), shift)[0][:, 0].argmax(-1).numpy() == labels).sum())
    assert res.float_count == float_ok and res.certified + res.unknown >= float_ok - res.unknown
    assert res.certified == float_ok - sum(1 for d in res.differences if d["float_argmax_is_label"]) + \
        sum(1 for d in res.differences if d["verdict"] == "pass")
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", res.certificate], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    with pytest.raises(VerifyInputError, match="no such item"):
        verify(net, X, labels, position=0, forward=lambda m, x: m(x, shift), output="logits")


@pytest.mark.needs_torch
def test_sweep_rounds_the_trained_weights_of_a_module_and_keeps_its_buffers_exact():
    """Issue 35, build item 4: a fixed 64 x 4 sinusoidal table (5 rows used) and a frozen parameter
    are not weights; the trainable parameters are, even when the exporter stores one transposed."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    from exactmem.verify.bits import module_weights, weight_initializers
    from exactmem.verify.run import export_torch

    class Table(torch.nn.Module):
        def __init__(self):
            super().__init__()
            pos = torch.arange(64.0)[:, None] / (10.0 ** torch.arange(4.0))
            self.register_buffer("pe", torch.sin(pos))
            self.frozen = torch.nn.Parameter(torch.linspace(1, 2, 4), requires_grad=False)
            self.e = torch.nn.Embedding(V, 4)
            self.h = torch.nn.Linear(4, C)

        def forward(self, x):
            return self.h(self.e(x) * self.frozen + self.pe[: x.shape[1]])

    torch.manual_seed(1)
    net = Table()
    mp = export_torch(net, np.zeros((1, 5), dtype=np.int64))
    weights, kept = module_weights(net, mp)
    sizes = {t.name: int(np.prod(t.dims)) for t in mp.graph.initializer}
    trainable = sum(p.numel() for p in net.parameters() if p.requires_grad)
    assert sum(sizes[w] for w in weights) == trainable  # e.weight, h.weight (transposed), h.bias
    assert set(kept.values()) == {"buffer"} and sum(sizes[k] for k in kept) == 5 * 4 + 4  # pe[:5], frozen
    auto, _ = weight_initializers(mp)
    assert sum(sizes[w] for w in auto) > trainable  # the file alone would round the table too


def test_inspect_prints_a_graph_model(lookup, tmp_path):
    """`exactmem inspect CERT` on a verify certificate: its input, readout, operators and the sizes the
    kernel measures (it used to stop at "cannot read a model …: 'layers'")."""
    table, X = lookup
    y = np.argmax(table[X[:, -1]], axis=1)
    res = verify(table_model(table), X, y, out=str(tmp_path), name="lookup")
    r = subprocess.run([sys.executable, "-m", "exactmem", "inspect", res.certificate], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("graph model") and "vocabulary 7" in lines[0] and "readout last" in lines[0]
    assert "Gather 1" in lines[1] and f"n_params {V * C}" in lines[3], r.stdout


def masked_sum_model(E, W, n_):
    """(ids [1, n], mask [1, n] int32) -> scores [1, C] = (Σ_t mask_t · E[ids_t]) W: the mask decides
    which tokens count, so an example's verdict depends on it."""
    from onnx import TensorProto as TP

    nodes = [helper.make_node("Gather", ["E", "ids"], ["e"]),
             helper.make_node("Cast", ["mask"], ["mf"], to=TP.FLOAT),
             helper.make_node("Unsqueeze", ["mf", "m1"], ["mu"]),
             helper.make_node("Mul", ["e", "mu"], ["em"]),
             helper.make_node("ReduceSum", ["em", "ax1"], ["s"], keepdims=0),
             helper.make_node("MatMul", ["s", "W"], ["y"])]
    g = helper.make_graph(nodes, "masked", [helper.make_tensor_value_info("ids", TP.INT64, [1, n_]),
                                            helper.make_tensor_value_info("mask", TP.INT32, [1, n_])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [1, W.shape[1]])],
                          [numpy_helper.from_array(E.astype(np.float32), "E"),
                           numpy_helper.from_array(W.astype(np.float32), "W"),
                           numpy_helper.from_array(np.array([-1], np.int64), "m1"),
                           numpy_helper.from_array(np.array([1], np.int64), "ax1")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def test_several_per_example_inputs_a_mask_entry_decides_a_verdict(tmp_path):
    """Token ids and a per-example mask, given as a dict (library) or as named arrays of the .npz
    (command line): certified counts equal onnxruntime's; flipping one mask entry in the certificate
    flips that example's verdict, and the kernel refutes the edited certificate."""
    import onnxruntime as ort

    from exactmem.kernel.checker import check_certificate
    from exactmem.kernel.schema import canonical_hash

    rng = np.random.default_rng(5)
    E, W = rng.normal(size=(V, 4)), rng.normal(size=(4, C))
    m = masked_sum_model(E, W, n)
    codes = rng.choice(V ** n, 16, replace=False)  # distinct ids; every mask keeps its first token (no all-zero row)
    X, M = np.stack([(codes // V ** j) % V for j in range(n)], axis=1), (rng.random((16, n)) > 0.3).astype(np.int32)
    M[:, 0] = 1
    sess = ort.InferenceSession(m.SerializeToString())
    score = lambda x, k: sess.run(None, {"ids": x[None], "mask": k[None].astype(np.int32)})[0][0]  # noqa: E731
    Y = np.array([int(np.argmax(score(X[i], M[i]))) for i in range(16)])
    Y[:4] = (Y[:4] + 1) % C
    res = verify(m, {"ids": X, "mask": M}, Y, out=str(tmp_path))
    assert (res.certified, res.refuted, res.float_count) == (12, 4, 12)
    doc = json.load(open(res.certificate))
    assert check_certificate(doc).status == "CERTIFIED"
    # an example whose argmax moves when one mask entry flips: the kernel sees the edit
    e, t = next((e, t) for e in range(4, 16) for t in range(n)
                if np.argmax(score(X[e], np.where(np.arange(n) == t, 1 - M[e], M[e]))) != Y[e])
    doc["dataset"]["inputs"][e][n + t] = 1 - doc["dataset"]["inputs"][e][n + t]
    doc["hash"] = canonical_hash(doc)
    v = check_certificate(doc)
    assert v.status == "REFUTED" and v.witness["example"] == e, v.message
    np.savez(tmp_path / "d.npz", ids=X, mask=M, labels=Y)
    import onnx as _onnx

    _onnx.save(m, str(tmp_path / "m.onnx"))
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", str(tmp_path / "m.onnx"), "--data",
                        str(tmp_path / "d.npz"), "--out", str(tmp_path / "cli"), "--json"], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and json.loads(r.stdout)["certified"] == 12, r.stderr


def test_several_inputs_errors_are_one_line():
    rng = np.random.default_rng(5)
    m = masked_sum_model(rng.normal(size=(V, 4)), rng.normal(size=(4, C)), n)
    X, M, Y = rng.integers(0, V, (4, n)), np.ones((4, n), np.int32), np.zeros(4, np.int64)
    with pytest.raises(VerifyInputError, match="the model's inputs are ids, mask; the data gives ids, attention"):
        verify(m, {"ids": X, "attention": M}, Y)
    with pytest.raises(VerifyInputError, match="integer .or bool. arrays of one shape"):
        verify(m, {"ids": X, "mask": M.astype(np.float32)}, Y)
    with pytest.raises(VerifyInputError, match="position all with several inputs"):
        verify(m, {"ids": X, "mask": M}, np.zeros((4, n), np.int64), position="all")


def test_a_module_called_with_named_inputs(tmp_path):
    """A module whose forward takes (input_ids, attention_mask), given per example as a dict."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")

    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = torch.nn.Embedding(V, 8)
            self.h = torch.nn.Linear(8, C)

        def forward(self, input_ids, attention_mask):
            return self.h((self.e(input_ids) * attention_mask.unsqueeze(-1).float()).sum(1))

    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    X, M = rng.integers(0, V, (12, n)), (rng.random((12, n)) > 0.3).astype(np.int64)
    net = Masked().eval()
    with torch.no_grad():
        Y = net(torch.tensor(X), torch.tensor(M)).argmax(-1).numpy()
    res = verify(net, {"input_ids": X, "attention_mask": M}, Y, out=str(tmp_path))
    assert res.certified + res.unknown == 12 and res.float_count == 12
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", res.certificate], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
