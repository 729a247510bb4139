"""Training side of ``morris-capacity``: GPT-2 language models on uniformly random token sequences.

Morris et al. 2025 ("How much do language models memorize?", §3–4) train GPT-2-style models on
sequences whose tokens are drawn i.i.d. uniformly from a vocabulary of V tokens, so the data hold
exactly N·S·log₂V bits and whatever the model predicts better than chance it must have memorized.
Here:

* **Model** (`make_model`): ``transformers.GPT2LMHeadModel`` with the library's default
  ``GPT2Config`` except the sizes (layers, width, heads, vocabulary V + 1, context S) and
  dropout switched off (see `model_config`); the output layer is tied to the token embedding,
  as in GPT-2, so the model scores V + 1 classes.
* **Data** (`random_sequences`): N × S tokens uniform over [0, V) from the run's seed. A fixed
  BOS token (id V) is prepended so that every one of the S tokens is predicted: the model reads
  ``[BOS, x₁ … x_{S−1}]`` and is scored on ``[x₁ … x_S]`` at every position.
* **Training** (`train`): AdamW (β = (0.9, 0.999), weight decay 0), full batch when N·S ≤
  `FULL_BATCH_TOKENS` and minibatches of that many tokens otherwise, a fixed number of steps
  (a linear warm-up over the first 5 %, then cosine
  decay to 0), one torch thread, CPU.
* **Rounding** (`rounded_copy`): the same network with every weight rounded to bfloat16 (round to
  nearest even, by torch) and held in float32 — the real network of the bf16-stored weights.

`float_bits` measures −Σ log₂ p in float32 with torch (the training-time view; the experiment's
float estimate next to the certificate is onnxruntime's, `exactmem.verify.codelength`).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any, Dict, Tuple

import numpy as np

FULL_BATCH_TOKENS = 32768  # full batch up to this many tokens; minibatches of this size above


def model_config(layers: int, width: int, heads: int, vocab: int, seq_len: int):
    """``GPT2Config`` of the given sizes (vocabulary ``vocab`` + 1 for the BOS token), default
    otherwise except dropout 0 (residual, embedding, attention): memorization to capacity within
    the CPU step budget (Morris et al. do not state dropout; the certified network is the
    eval-mode one either way)."""
    from transformers import GPT2Config

    return GPT2Config(vocab_size=vocab + 1, n_positions=seq_len, n_embd=width, n_layer=layers, n_head=heads,
                      bos_token_id=vocab, eos_token_id=vocab, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


def make_model(layers: int, width: int, heads: int, vocab: int, seq_len: int, seed: int):
    """A freshly initialised ``GPT2LMHeadModel`` (torch seeded with ``seed``)."""
    import torch
    from transformers import GPT2LMHeadModel

    torch.manual_seed(seed)
    return GPT2LMHeadModel(model_config(layers, width, heads, vocab, seq_len))


def n_params(model) -> int:
    """Trainable parameters (the tied output layer counted once, as ``model.parameters()`` does)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def random_sequences(N: int, vocab: int, seq_len: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(inputs, labels)``: N sequences of ``seq_len`` tokens uniform over [0, vocab); inputs are
    ``[BOS, x₁ … x_{S−1}]`` with BOS = ``vocab``, labels ``[x₁ … x_S]`` (int64)."""
    rng = np.random.default_rng([seed, N, vocab, seq_len])
    X = rng.integers(0, vocab, size=(N, seq_len), dtype=np.int64)
    inputs = np.concatenate([np.full((N, 1), vocab, dtype=np.int64), X[:, :-1]], axis=1)
    return inputs, X


@dataclass
class TrainResult:
    steps: int
    seconds: float
    loss: float  # final training loss (nats per token, float32)
    curve: list  # (step, loss) every `eval_every` steps


def train(model, inputs: np.ndarray, labels: np.ndarray, steps: int, lr: float, seed: int,
          eval_every: int = 250) -> TrainResult:
    """AdamW on the next-token cross-entropy of every position (module docstring)."""
    import torch

    torch.manual_seed(seed)
    x = torch.from_numpy(inputs)
    y = torch.from_numpy(labels)
    N, S = x.shape
    batch = N if N * S <= FULL_BATCH_TOKENS else max(1, FULL_BATCH_TOKENS // S)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), weight_decay=0.0)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: (k + 1) / warm if k < warm else 0.5 * (1 + math.cos(math.pi * (k - warm) / max(1, steps - warm))))
    gen = torch.Generator().manual_seed(seed)
    model.train()
    t0 = time.perf_counter()
    curve = []
    loss_v = math.nan
    for step in range(1, steps + 1):
        if batch < N:
            idx = torch.randint(0, N, (batch,), generator=gen)
            xb, yb = x[idx], y[idx]
        else:
            xb, yb = x, y
        logits = model(xb).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % eval_every == 0 or step == steps:
            loss_v = float(loss.detach()) if batch == N else float_bits(model, inputs, labels) * math.log(2) / (N * S)
            curve.append((step, round(loss_v, 5)))
            model.train()
    model.eval()
    return TrainResult(steps, time.perf_counter() - t0, loss_v, curve)


def float_bits(model, inputs: np.ndarray, labels: np.ndarray, chunk: int = 2048) -> float:
    """Σ −log₂ p(label | prefix) over every sequence and position, float32 (torch, eval mode)."""
    import torch

    model.eval()
    total = 0.0
    with torch.no_grad():
        for k in range(0, len(inputs), chunk):
            logits = model(torch.from_numpy(inputs[k:k + chunk])).logits
            lp = torch.log_softmax(logits.double(), dim=-1)
            total -= float(lp.gather(-1, torch.from_numpy(labels[k:k + chunk])[..., None]).sum())
    return total / math.log(2)


def rounded_copy(model, dtype: str = "bfloat16"):
    """A copy of ``model`` whose every parameter is rounded to ``dtype`` by torch (round to nearest
    even) and stored back in float32, exactly: the real network of the ``dtype``-stored weights."""
    import torch

    m = copy.deepcopy(model)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(p.to(getattr(torch, dtype)).to(torch.float32))
    m.eval()
    return m


def describe(model) -> Dict[str, Any]:
    c = model.config
    return {"layers": c.n_layer, "width": c.n_embd, "heads": c.n_head, "vocab_size": c.vocab_size,
            "n_positions": c.n_positions, "params": n_params(model)}
