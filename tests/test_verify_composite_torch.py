"""PyTorch modules whose exports need the producer's compositions (exactmem/verify/composite.py).

A Conv2d patch embedding, einsum attention over ``weight[x]`` embeddings (advanced indexing) and a
``(p * v).sum(-1)`` reduction with ``torch.maximum`` and LeakyReLU, exported by both exporters
(TorchScript and dynamo) with no glue: every example whose float margin is not tiny is certified
with onnxruntime's argmax as its label, ``check`` re-derives the certificate, and the operators the
export used are the ones the compositions lower.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
import onnx  # noqa: E402
import torch.nn as nn  # noqa: E402

from exactmem.kernel.checker import check_certificate  # noqa: E402
from exactmem.verify.run import verify  # noqa: E402


class PatchEmbed(nn.Module):
    """ViT's patch embedding on an n×d input read as a 1-channel image, mean over patches, a head."""

    def __init__(self, C=5):
        super().__init__()
        self.conv = nn.Conv2d(1, 6, kernel_size=2, stride=2)
        self.head = nn.Linear(6, C)

    def forward(self, x):
        p = self.conv(x.unsqueeze(1)).flatten(2).transpose(1, 2)  # [1, P, 6]
        return self.head(nn.functional.leaky_relu(p, 0.1).mean(1))


class EinsumAttention(nn.Module):
    """weight[x] embeddings, einsum attention, a (p * v).sum(-1) readout and a max with a learned floor."""

    def __init__(self, V=7, D=8):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(V, D))
        self.wq, self.wk = nn.Parameter(torch.randn(D, D) * 0.5), nn.Parameter(torch.randn(D, D) * 0.5)
        self.out = nn.Parameter(torch.randn(V, D))
        self.floor = nn.Parameter(torch.randn(V) * 0.1)

    def forward(self, ids):
        h = self.weight[ids]  # [1, n, D]
        q, k = torch.einsum("bnd,de->bne", h, self.wq), torch.einsum("bnd,de->bne", h, self.wk)
        a = torch.softmax(torch.einsum("bqe,bke->bqk", q, k), dim=-1)
        z = torch.einsum("bqk,bkd->bqd", a, h)
        s = (z.unsqueeze(2) * self.out).sum(-1)  # [1, n, V]
        return torch.maximum(s, self.floor)


def export(module, example, path, dynamo):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"dynamo": True} if dynamo else {"dynamo": False, "opset_version": 17}
        torch.onnx.export(module, (example,), str(path), input_names=["x"], output_names=["y"], **kw)
    return onnx.load(str(path))


def run_case(tmp_path, module, X, dynamo):
    torch.manual_seed(0)
    path = tmp_path / f"m{int(dynamo)}.onnx"
    m = export(module.eval(), torch.as_tensor(X[:1]), path, dynamo)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    scores = np.stack([sess.run(None, {sess.get_inputs()[0].name: x[None]})[0].reshape(-1, sess.get_outputs()[0].shape[-1])[-1]
                       for x in X])
    labels = scores.argmax(-1)
    top2 = np.sort(scores, -1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 1e-3
    res = verify(str(path), X, labels, out=str(tmp_path / f"c{int(dynamo)}"), float_count=False)
    v = np.array(res.verdicts)
    assert (v[clear] == "pass").all(), (v, clear)
    assert check_certificate(res.doc).status == "CERTIFIED"
    return {n.op_type for n in m.graph.node}


@pytest.mark.parametrize("dynamo", [False, True])
def test_conv2d_patch_embedding(tmp_path, dynamo):
    torch.manual_seed(1)
    X = (np.random.default_rng(1).integers(-8, 9, (6, 4, 6)) / 4).astype(np.float32)
    ops = run_case(tmp_path, PatchEmbed(), X, dynamo)
    assert "Conv" in ops, ops


@pytest.mark.parametrize("dynamo", [False, True])
def test_einsum_attention_with_weight_indexing(tmp_path, dynamo):
    torch.manual_seed(2)
    X = np.random.default_rng(2).integers(0, 7, (8, 4)).astype(np.int64)
    ops = run_case(tmp_path, EinsumAttention(), X, dynamo)
    assert {"Einsum", "ReduceSum", "Max"} <= ops, ops
    assert ("GatherND" if dynamo else "Gather") in ops, ops  # weight[x]: dynamo writes GatherND
