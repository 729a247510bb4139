"""Masked PyTorch attention exported by ``torch.onnx.export`` and verified with no glue (issue 35).

nanoGPT's manual attention (``masked_fill(mask == 0, float('-inf'))``), ``nn.MultiheadAttention``
with a boolean ``attn_mask``, and ``transformers``' GPT2LMHeadModel with its default attention
implementation (SDPA: ``Where(IsNaN(Softmax(…)), 0, Softmax(…))`` in the dynamo export), each
briefly trained, exported by both exporters (TorchScript and dynamo) and verified: every decided
example's verdict equals onnxruntime's float argmax, and ``check`` re-derives the certificate.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from exactmem.verify.run import verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
V, D, n, N = 8, 16, 4, 16


class NanoAttention(nn.Module):
    """nanoGPT's manual causal attention path, one head."""

    def __init__(self):
        super().__init__()
        self.emb, self.pos = nn.Embedding(V, D), nn.Parameter(torch.randn(n, D) * 0.3)
        self.q, self.k, self.v, self.out = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, V)
        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, n, n))

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        att = self.q(h) @ self.k(h).transpose(-2, -1) / D ** 0.5
        att = att.masked_fill(self.bias[:, : x.shape[1], : x.shape[1]] == 0, float("-inf"))
        return self.out(F.softmax(att, dim=-1) @ self.v(h))


class MultiHead(nn.Module):
    """nn.MultiheadAttention with a boolean causal attn_mask (True: not allowed)."""

    def __init__(self):
        super().__init__()
        self.emb, self.mha, self.out = nn.Embedding(V, D), nn.MultiheadAttention(D, 2, batch_first=True), nn.Linear(D, V)
        self.register_buffer("mask", torch.triu(torch.ones(n, n, dtype=torch.bool), 1))

    def forward(self, x):
        h = self.emb(x)
        a, _ = self.mha(h, h, h, attn_mask=self.mask, need_weights=False)
        return self.out(a + h)


class GPT2(nn.Module):
    """transformers' GPT2LMHeadModel with its default attention implementation; logits out."""

    def __init__(self):
        super().__init__()
        transformers = pytest.importorskip("transformers")
        cfg = transformers.GPT2Config(vocab_size=V, n_positions=n, n_embd=D, n_layer=1, n_head=2, bos_token_id=0,
                                      eos_token_id=0)
        self.m = transformers.GPT2LMHeadModel(cfg)

    def forward(self, x):
        return self.m(input_ids=x).logits


def trained(cls, X, Y, steps):
    torch.manual_seed(0)
    model = cls()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(X)[:, -1], Y).backward()
        opt.step()
    return model.eval()


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("cls", [NanoAttention, MultiHead, GPT2], ids=["nanogpt", "multihead", "gpt2"])
def test_masked_attention_exports_verify_with_no_glue(cls, dynamo, tmp_path):
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randint(0, V, (N, n), generator=g), torch.randint(0, V, (N,), generator=g)
    model = trained(cls, X, Y, 40)  # briefly: some examples memorized, some not
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (X[:1],), str(path), input_names=["ids"], output_names=["logits"], dynamo=dynamo)
    import onnx

    ops = {nd.op_type for nd in onnx.load(str(path)).graph.node}
    if cls is GPT2 and dynamo:
        assert "IsNaN" in ops  # the SDPA pattern of the issue
    r = verify(str(path), X.numpy(), Y.numpy(), out=str(tmp_path))
    print(f"\n{cls.__name__} ({'dynamo' if dynamo else 'torchscript'}): {r.certified} certified, {r.refuted} refuted, "
          f"{r.unknown} unknown of {r.n_distinct}; float argmax = label on {r.float_count}")
    assert r.certified + r.refuted + r.unknown == r.n_distinct == N
    assert all(d["verdict"] == "unknown" for d in r.differences), r.differences  # decided = float argmax
    assert r.certified == r.float_count - sum(d["float_argmax_is_label"] is True for d in r.differences)
    if cls is not GPT2:  # the mask's -inf is in the certificate as -inf (GPT-2's causal mask is finfo.min)
        assert '"-inf"' in Path(r.certificate).read_text()
    c = subprocess.run([sys.executable, "-m", "exactmem", "check", r.certificate], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert c.returncode == 0 and c.stdout.startswith("CERTIFIED"), c.stdout + c.stderr
    np.testing.assert_equal(r.verdicts.count("pass"), r.certified)
