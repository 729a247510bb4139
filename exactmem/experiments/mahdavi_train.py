"""Mahdavi et al.'s synthetic memorization task and model, trained in PyTorch, certified exactly.

Shared code of the experiment ``mahdavi-fig2`` (Mahdavi, Liao & Thrampoulidis, ICLR 2024,
§5 and Fig. 2; set-up in the note ``papers/mahdavi.md`` §5.1–§5.3, re-implemented from that
description — no code copied):

* **data** (note §5.1, the paper's ``RandomDataset``): query e ∈ [0, 1]^d and context
  E ∈ [0, 1]^{n×d} i.i.d. uniform, one E *shared* by all examples (``context_type = fixed``,
  Fig. 2's set-up), labels uniform over ``C`` classes; drawn with NumPy ``RandomState(seed)``
  and stored in float32, so every coordinate is the rational it denotes;
* **model** (note §5.2, ``BaselineAttention``): ``Linear(d→d)`` embedding, + sinusoidal
  positions (base 10000; the query is position 0, context token j is position j + 1),
  H softmax heads with W_Q^h, W_K^h ∈ R^{d×d_h}, W_V^h ∈ R^{d×1} (d_v = 1), W_O ∈ R^{H×d}
  (no bias), scores q·k/√d (√d_model, not √d_h), the query attends to the n context tokens
  only, then ``Linear(d→C)``; the output is read at the query;
* **training** (note §5.3): cross-entropy, Adam (lr 1e-3), mini-batches of 256 with
  shuffling, linear warm-up over steps/20 from 0.01·lr then cosine to 0; evaluation on the
  training set every ``eval_every`` steps, the checkpoint of lowest training loss is kept,
  early stop at 100 % training accuracy.

`to_exact` turns the trained module into an exactmem ``Model`` with the *same* function:
an example is the sequence (context rows, then the query as the last token, as
``Attention(query="last", keys="others")`` expects); each token is [x; p] with p its
float32 sinusoidal position, so the embedding is ``Affine([W_emb | I], b)`` — W x + b + p
exactly; 1/√d = 1/8 (d = 64; any d: the float32 value of 1/√d, taken exactly) is folded into
W_Q; head h is ``Head(WQ = W_Q^hᵀ/√d, WK = W_K^hᵀ, WV = W_V^hᵀ, WO = W_O[h]ᵀ)``; the decoder is
``Affine(W_dec, b_dec)``, decoded by argmax. The sinusoids are irrational numbers; the torch
model computes them in float32 and the exact model uses those float32 values (rationals).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List

from ..data.dataset import Dataset
from ..model.layers import Affine, Attention, Head, Model


def require_torch():
    from .base import require_torch as _rt

    return _rt()


# ----------------------------------------------------------------------------- data


@dataclass
class SyntheticData:
    """T examples of note §5.1 (float32 arrays): ``queries`` T×d, ``contexts`` T×n×d (a view of
    one n×d matrix when shared), ``labels`` T ints in [0, C)."""

    queries: Any
    contexts: Any
    labels: Any
    num_classes: int
    shared: bool
    seed: int

    @property
    def T(self) -> int:
        return int(self.queries.shape[0])

    @property
    def n(self) -> int:
        return int(self.contexts.shape[1])

    @property
    def d(self) -> int:
        return int(self.queries.shape[1])

    def sequences(self):
        """T×(n+1)×d float32: context rows, then the query (exactmem's order)."""
        import numpy as np

        return np.concatenate([self.contexts, self.queries[:, None, :]], axis=1).astype(np.float32)


def synthetic_data(T: int, n: int, d: int = 64, num_classes: int = 100, seed: int = 42,
                   shared: bool = True) -> SyntheticData:
    """Note §5.1: U[0, 1] query and context coordinates (float32), uniform class labels; a
    shared context (``context_type = fixed``) is drawn once, before the queries."""
    import numpy as np

    rng = np.random.RandomState(seed)
    if shared:
        E = rng.uniform(0.0, 1.0, size=(n, d)).astype(np.float32)
        contexts = np.broadcast_to(E, (T, n, d))
    else:
        contexts = rng.uniform(0.0, 1.0, size=(T, n, d)).astype(np.float32)
    queries = rng.uniform(0.0, 1.0, size=(T, d)).astype(np.float32)
    labels = rng.randint(0, num_classes, size=T).astype(np.int64)
    return SyntheticData(queries, contexts, labels, num_classes, shared, seed)


def sinusoidal_positions(length: int, d: int):
    """float32 sinusoidal encodings (base 10000): row s = position s; even coordinates sin,
    odd cos, frequency 10000^(−2i/d). Computed in float32 as a float32 framework does; the
    exact model takes these float32 values as rationals (the sinusoids are irrational)."""
    torch = require_torch()

    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d, dtype=torch.float32)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def exact_dataset(data: SyntheticData, positions) -> Dataset:
    """The exactmem dataset of `to_exact`'s model: example t is the sequence of tokens
    [x; p] (context rows with positions 1..n, then the query with position 0), label y_t."""
    from fractions import Fraction as F

    import numpy as np

    P = np.asarray(positions, dtype=np.float32)
    n, d = data.n, data.d
    order = list(range(1, n + 1)) + [0]
    pos_rows = [tuple(F(float(v)) for v in P[s]) for s in order]
    shared_ctx = None
    inputs = []
    for t in range(data.T):
        if shared_ctx is None or not data.shared:
            E = data.contexts[t]
            ctx = tuple(tuple(F(float(v)) for v in E[j]) + pos_rows[j] for j in range(n))
            shared_ctx = ctx
        ctx = shared_ctx
        q = tuple(F(float(v)) for v in data.queries[t]) + pos_rows[n]
        inputs.append(ctx + (q,))
    return Dataset(inputs, [int(y) for y in data.labels], "vectors", data.seed,
                   f"Mahdavi synthetic ({'shared' if data.shared else 'distinct'} context) T={data.T} n={n} d={d}")


# ----------------------------------------------------------------------------- model


def make_model(d: int, n: int, heads: int, dh: int, num_classes: int, seed: int):
    """The note §5.2 ``BaselineAttention`` as a torch module (float32), Xavier-uniform heads."""
    torch = require_torch()
    from torch import nn

    class MahdaviAttention(nn.Module):
        """Embedding, sinusoidal positions, H softmax heads (d_v = 1) read at the query, decoder."""

        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(seed)
            self.d, self.n, self.H, self.dh, self.C = d, n, heads, dh, num_classes
            self.embedding = nn.Linear(d, d)
            self.decoder = nn.Linear(d, num_classes)
            with torch.no_grad():  # nn.Linear's default init, from our generator
                for lin in (self.embedding, self.decoder):
                    bound = 1.0 / math.sqrt(lin.in_features)
                    lin.weight.uniform_(-bound, bound, generator=g)
                    lin.bias.uniform_(-bound, bound, generator=g)

            def xavier(*shape):
                fan_in, fan_out = shape[-2], shape[-1]
                a = math.sqrt(6.0 / (fan_in + fan_out))
                return nn.Parameter(torch.empty(*shape).uniform_(-a, a, generator=g))

            self.Wq = xavier(heads, d, dh)
            self.Wk = xavier(heads, d, dh)
            self.Wv = xavier(heads, d, 1)
            self.Wo = xavier(heads, d)  # (H·d_v) × d_o, Xavier over the whole matrix
            pe = sinusoidal_positions(n + 1, d)
            order = list(range(1, n + 1)) + [0]  # context rows at positions 1..n, query at 0
            self.register_buffer("pos", pe[order].clone())
            self.scale = float(torch.tensor(1.0 / math.sqrt(d), dtype=torch.float32))

        def scores(self, Z):
            """Scores (W_Q^hᵀ q)·(W_K^hᵀ k)/√d of the query against the n context tokens,
            batch × H × n, computed as kᵀ (W_K^h (W_Q^hᵀ q))/√d (the same bilinear form,
            cheaper when n·d_h > d)."""
            q = Z[:, -1, :]  # B × d
            Q = torch.einsum("bd,hde->bhe", q, self.Wq) * self.scale  # B × H × dh
            A = torch.einsum("bhe,hde->bhd", Q, self.Wk)  # B × H × d
            return torch.einsum("bnd,bhd->bhn", Z[:, :-1, :], A)

        def forward(self, X):
            """X: batch × (n + 1) × d (context rows, then the query) -> batch × C logits."""
            Z = self.embedding(X) + self.pos
            P = torch.softmax(self.scores(Z), dim=-1)  # B × H × n
            V = torch.einsum("bnd,hd->bhn", Z[:, :-1, :], self.Wv[:, :, 0])  # B × H × n (d_v = 1)
            o = (P * V).sum(-1)  # B × H
            return self.decoder(o @ self.Wo)

        def attention(self, X):
            """The query's attention weights, batch × H × n (for the saturation analysis)."""
            with torch.no_grad():
                return torch.softmax(self.scores(self.embedding(X) + self.pos), dim=-1)

    return MahdaviAttention()


def _rows(t) -> List[List[Fraction]]:
    import numpy as np

    a = t.detach().cpu().numpy().astype(np.float32).astype(np.float64)
    if a.ndim == 1:
        return [Fraction(float(v)) for v in a]
    return [[Fraction(float(v)) for v in row] for row in a]


def to_exact(module) -> Model:
    """The exactmem ``Model`` with the module's float32 weights taken exactly (module docstring)."""
    d, H = module.d, module.H
    We = _rows(module.embedding.weight)
    eye = [[Fraction(int(i == j)) for j in range(d)] for i in range(d)]
    emb = Affine(tuple(tuple(r) + tuple(e) for r, e in zip(We, eye)), tuple(_rows(module.embedding.bias)))
    scale = Fraction(module.scale)
    heads = []
    Wo = _rows(module.Wo)  # H × d
    for h in range(H):
        WQ = [[x * scale for x in col] for col in zip(*_rows(module.Wq[h]))]  # dh × d
        WK = [list(col) for col in zip(*_rows(module.Wk[h]))]
        WV = [list(col) for col in zip(*_rows(module.Wv[h]))]  # 1 × d
        WO = [[Wo[h][i]] for i in range(d)]  # d × 1
        heads.append(Head(WV=WV, WO=WO, WQ=WQ, WK=WK))
    att = Attention(tuple(heads), "softmax", residual=False, query="last", keys="others")
    dec = Affine(tuple(tuple(r) for r in _rows(module.decoder.weight)), tuple(_rows(module.decoder.bias)))
    return Model((emb, att, dec), "vectors", 2 * d, "last", "argmax", name=f"Mahdavi attention H={H} dh={module.dh}")


def export_module(module):
    """The trained `make_model` module itself, for ``exactmem verify``: its ``einsum`` products and the
    ``(P * V).sum(-1)`` reduction export as ONNX ``Einsum`` and ``ReduceSum``, which the importer lowers
    to batched ``MatMul`` (`exactmem.verify.composite`); it used to be an export twin written without them."""
    return module.eval()


def exact_inputs_tensor(data: SyntheticData):
    torch = require_torch()
    return torch.from_numpy(data.sequences())


# ----------------------------------------------------------------------------- training


@dataclass
class TrainResult:
    steps: int
    epochs_equiv: float
    loss: float
    float_acc: float
    seconds: float
    history: List[Dict[str, float]] = field(default_factory=list)


def train(module, data: SyntheticData, steps: int, lr: float = 1e-3, batch: int = 256, eval_every: int = 500,
          early_stop: bool = True, seed: int = 0) -> TrainResult:
    """Note §5.3's recipe (module docstring); keeps the lowest-training-loss checkpoint."""
    torch = require_torch()
    import copy

    X = exact_inputs_tensor(data)
    y = torch.from_numpy(data.labels)
    T = data.T
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.SequentialLR(
        opt, [torch.optim.lr_scheduler.LinearLR(opt, 0.01, 1.0, total_iters=warm),
              torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, steps - warm), eta_min=0.0)],
        milestones=[warm])
    g = torch.Generator().manual_seed(seed)
    lossf = torch.nn.CrossEntropyLoss()
    best = (float("inf"), None, 0.0)
    history = []
    t0 = time.perf_counter()
    perm, pos, step = torch.randperm(T, generator=g), 0, 0

    def evaluate():
        with torch.no_grad():
            logits = torch.cat([module(X[i:i + 4096]) for i in range(0, T, 4096)])
            return float(lossf(logits, y)), float((logits.argmax(-1) == y).float().mean())

    while step < steps:
        if pos >= T:
            perm, pos = torch.randperm(T, generator=g), 0
        idx = perm[pos:pos + batch]
        pos += batch
        loss = lossf(module(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if step % eval_every == 0 or step == steps:
            L, A = evaluate()
            history.append({"step": step, "loss": L, "acc": A})
            if L < best[0]:
                best = (L, copy.deepcopy(module.state_dict()), A)
            if early_stop and A >= 1.0:
                break
    if best[1] is not None:
        module.load_state_dict(best[1])
    L, A = evaluate()
    return TrainResult(step, step * batch / T, L, A, time.perf_counter() - t0, history)


def float_correct(module, data: SyntheticData) -> List[bool]:
    """Per example: is the float32 argmax the label (what the paper's ``mem_acc`` counts)."""
    torch = require_torch()
    X = exact_inputs_tensor(data)
    with torch.no_grad():
        pred = torch.cat([module(X[i:i + 4096]) for i in range(0, data.T, 4096)]).argmax(-1)
    return [bool(p == int(t)) for p, t in zip(pred.tolist(), data.labels)]


def float_margins(module, data: SyntheticData) -> List[float]:
    """Per example: float32 logit of the label minus the best other logit (> 0: float-correct)."""
    torch = require_torch()
    X = exact_inputs_tensor(data)
    with torch.no_grad():
        L = torch.cat([module(X[i:i + 4096]) for i in range(0, data.T, 4096)])
    y = torch.from_numpy(data.labels)
    lab = L.gather(1, y[:, None])[:, 0]
    other = L.clone()
    other.scatter_(1, y[:, None], float("-inf"))
    return (lab - other.max(-1).values).tolist()


def head_output_groups(module, data: SyntheticData, rel: float = 1e-3) -> int:
    """Float diagnostic for one head (H = 1, d_v = 1): the decoder sees one scalar o per example,
    so it can tell apart at most as many labels as there are distinct values of o. Returns the
    number of groups of the T values of o (float32) after merging values closer than ``rel``
    times the largest |o|."""
    torch = require_torch()
    X = exact_inputs_tensor(data)
    with torch.no_grad():
        Z = module.embedding(X) + module.pos
        P = torch.softmax(module.scores(Z), dim=-1)
        V = torch.einsum("bnd,hd->bhn", Z[:, :-1, :], module.Wv[:, :, 0])
        o = sorted((P * V).sum(-1)[:, 0].tolist())
    tol = rel * max(abs(x) for x in o) if o else 0.0
    groups = 1 if o else 0
    for a, b in zip(o, o[1:]):
        if b - a > tol:
            groups += 1
    return groups
