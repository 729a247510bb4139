"""Training side of ``dana-fig1``: Dana, Pydi & Chevaleyre's attention-only Transformer on bigram tables.

The attention-only Transformer (AoT) of Dana, Pydi & Chevaleyre (AISTATS 2025) eq. (2), trained on
random bigram look-up tables as in their §5 and App. B.

The network (paper eq. (1)–(2), ``docs/dana.md``; exactmem's `exactmem.constructions.dana.association.assemble_model`)::

    x(t, s) = e(t_s) + pos_s
    T(t)    = W_U ( x(t, S) + Σ_h W_O^h W_V^h Σ_s softmax_s(x(t,S)ᵀ W_Q^hᵀ W_K^h x(t,s)) x(t, s) )

with no 1/√d_h scale, no LayerNorm, no MLP and argmax decoding at the last position. The heads are
stored stacked (``WQ``: H×d_h×d, …) so that one batched einsum evaluates all H heads;
`exact_model` converts the trained float32 tensors to the exactmem [`Model`][exactmem.model.Model]
``[Embed(E, P), Attention(softmax, residual, query="last", keys="all"), Affine(W_U)]`` through
[`exactmem.export.importer.from_state_dict`][exactmem.export.importer.from_state_dict] — every float32 weight becomes the rational it denotes.
``tests/test_experiments_dana.py`` checks that the float32 forward and the exact forward agree.

Data and training (paper App. B, "Experiments"; our note ``papers/dana.md`` §5.1–§5.2): π over three
tokens, the first two uniform and i.i.d., the third a deterministic random function g of the first
two (Assumption 1, a random look-up table); ``n_batches`` batches of ``batch`` i.i.d. samples of π,
trained for ``epochs`` epochs with Adam (default betas) and a learning rate decreasing linearly from
``lr0`` to ``lr1`` over all steps (the paper's text: 2^6 batches of 2^10, 2^6 epochs, 0.1 → 0.05).
The loss is the next-token cross-entropy at the last position (π has zero entropy, so it is the KL
of the paper's ``compute_loss``). The paper's official code uses a different module (positions after
a d→d_h compression, PyTorch ``MultiheadAttention`` per head); we train eq. (2) as stated, since that
is the network the theorems and exactmem's construction are about.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

from ..model.layers import Affine, Attention, Embed, Head, Model

__all__ = ["TrainConfig", "Replica", "TrainResult", "lookup_table", "all_bigrams", "sample_batches", "make_aot",
           "train_aot", "export_module", "state_dict_for_exactmem", "exact_model", "like_model", "float_logits"]


@dataclass
class TrainConfig:
    """One training configuration (defaults: the paper's official code for Exps. 1, 2, 6, note §5.2)."""

    N: int = 50
    d: int = 10
    H: int = 1
    dh: int = 10
    S: int = 2
    n_batches: int = 64  # 2^6 batches …
    batch: int = 256  # … of 2^8 samples (code; the App. B text says 2^10)
    epochs: int = 64  # 2^6 epochs
    lr0: float = 0.01  # effective LR of the code's LinearLR(0.1 → 0.005 factors on base 0.1) ...
    lr1: float = 0.0005  # ... the App. B text says "from 0.1 to 0.05" (see docs/experiments/dana-fig1.md)
    seeds: Tuple[int, ...] = (0,)  # replicas trained side by side (independent: Adam is elementwise)


@dataclass
class Replica:
    """One trained seed: its look-up table and its float32 verdicts on all N^S sequences."""

    seed: int
    table: List[int]  # g(t) for t in all_bigrams order
    float_correct: List[bool]  # float32 argmax == g(t)
    last_batch_acc: float  # the paper's metric: mean accuracy of its last 100 training batches
    final_loss: float

    @property
    def float_acc(self) -> float:
        return sum(self.float_correct) / len(self.float_correct)


@dataclass
class TrainResult:
    config: TrainConfig
    module: Any  # the trained torch module (AoTTorch, R replicas)
    replicas: List[Replica]
    seconds: float
    history: List[Tuple[int, List[float]]] = field(default_factory=list)  # (epoch, float acc per replica)


def all_bigrams(N: int, S: int = 2) -> List[Tuple[int, ...]]:
    """Every sequence of [N]^S (0-based ids) in lexicographic order: the support of the uniform prior."""
    seqs: List[Tuple[int, ...]] = [()]
    for _ in range(S):
        seqs = [s + (t,) for s in seqs for t in range(N)]
    return seqs


def lookup_table(N: int, S: int, seed: int) -> List[int]:
    """The random look-up table g: [N]^S → [N] of Assumption 1 (each next token independent, uniform)."""
    import torch

    g = torch.Generator().manual_seed(10_007 * seed + 17)
    return [int(x) for x in torch.randint(0, N, (N ** S,), generator=g).tolist()]


def sample_batches(cfg: TrainConfig, table: List[int], seed: int):
    """``n_batches`` batches of ``batch`` i.i.d. samples of π: tokens (n_batches×B×S), targets (n_batches×B)."""
    import torch

    g = torch.Generator().manual_seed(10_007 * seed + 29)
    idx = torch.randint(0, cfg.N ** cfg.S, (cfg.n_batches, cfg.batch), generator=g)
    tok = torch.stack([(idx // cfg.N ** (cfg.S - 1 - s)) % cfg.N for s in range(cfg.S)], dim=-1)
    tgt = torch.tensor(table, dtype=torch.long)[idx]
    return tok, tgt


def make_aot(cfg: TrainConfig):
    """R = len(cfg.seeds) independent AoTs (eq. (2)) with PyTorch-default-like initialisation, each
    seeded by its own seed, stacked along a leading replica axis."""
    import torch
    from torch import nn

    class AoTTorch(nn.Module):
        """Eq. (2), replicas × heads stacked: E (R×N×d), P (R×S×d), WQ, WK, WV (R×H×d_h×d),
        WO (R×H×d×d_h), WU (R×N×d). ``forward(tok)``: tok R×B×S (or B×S with R = 1) → logits."""

        def __init__(self, N: int, d: int, H: int, dh: int, S: int, gens):
            super().__init__()
            self.N, self.d, self.H, self.dh, self.S, self.R = N, d, H, dh, S, len(gens)

            def unif(shape, fan_in, fan_out=None):
                # xavier-uniform for the in-projections, U(±1/√fan_in) (nn.Linear's default) otherwise
                b = math.sqrt(6.0 / (fan_in + fan_out)) if fan_out else 1.0 / math.sqrt(fan_in)
                return [(torch.rand(*shape, generator=g) * 2 - 1) * b for g in gens]

            E, P = [torch.randn(N, d, generator=g) for g in gens], [torch.randn(S, d, generator=g) for g in gens]
            WQ, WK, WV = unif((H, dh, d), d, dh), unif((H, dh, d), d, dh), unif((H, dh, d), d, dh)
            WO, WU = unif((H, d, dh), dh), unif((N, d), d)
            for nm, xs in (("E", E), ("P", P), ("WQ", WQ), ("WK", WK), ("WV", WV), ("WO", WO), ("WU", WU)):
                setattr(self, nm, nn.Parameter(torch.stack(xs)))

        def forward(self, tok):
            single = tok.dim() == 2
            if single:
                tok = tok.unsqueeze(0).expand(self.R, -1, -1)
            r = torch.arange(self.R).view(-1, 1, 1)
            X = self.E[r, tok] + self.P[:, : tok.shape[2]].unsqueeze(1)  # R×B×S×d
            xq = X[:, :, -1, :]  # the last position queries
            q = torch.einsum("rhkd,rbd->rbhk", self.WQ, xq)
            k = torch.einsum("rhkd,rbsd->rbhsk", self.WK, X)
            a = torch.softmax(torch.einsum("rbhk,rbhsk->rbhs", q, k), dim=-1)
            A = torch.einsum("rbhs,rbsd->rbhd", a, X)  # attention before output, A^h(t)
            v = torch.einsum("rhkd,rbhd->rbhk", self.WV, A)
            z = xq + torch.einsum("rhdk,rbhk->rbd", self.WO, v)  # skip connection
            out = torch.einsum("rbd,rnd->rbn", z, self.WU)  # logits at the last position
            return out[0] if single and self.R == 1 else out

    gens = [torch.Generator().manual_seed(10_007 * s + 41) for s in cfg.seeds]
    return AoTTorch(cfg.N, cfg.d, cfg.H, cfg.dh, cfg.S, gens)


def _correct_all(module, N: int, S: int, tables: List[List[int]]) -> List[List[bool]]:
    import torch

    tok = torch.tensor(all_bigrams(N, S), dtype=torch.long)
    with torch.no_grad():
        pred = module(tok.unsqueeze(0).expand(module.R, -1, -1)).argmax(dim=-1)
    return (pred == torch.tensor(tables)).tolist()


def train_aot(cfg: TrainConfig, log_every: int = 0) -> TrainResult:
    """Train ``len(cfg.seeds)`` AoTs as in App. B, side by side: the loss is the sum of the
    replicas' mean cross-entropies, so each replica's gradient is its own, and Adam (elementwise)
    with one shared LR schedule makes each replica's trajectory that of a separate run."""
    import torch
    import torch.nn.functional as Fn

    t0 = time.perf_counter()
    torch.manual_seed(cfg.seeds[0])
    tables = [lookup_table(cfg.N, cfg.S, s) for s in cfg.seeds]
    data = [sample_batches(cfg, t, s) for t, s in zip(tables, cfg.seeds)]
    tok = torch.stack([d[0] for d in data], dim=1)  # n_batches × R × B × S
    tgt = torch.stack([d[1] for d in data], dim=1)  # n_batches × R × B
    model = make_aot(cfg)
    R = model.R
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr0)
    steps = cfg.n_batches * cfg.epochs
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=cfg.lr1 / cfg.lr0,
                                              total_iters=max(1, steps - 1))
    gens = [torch.Generator().manual_seed(10_007 * s + 53) for s in cfg.seeds]  # each replica's batch order
    ridx = torch.arange(R)
    recent: List[Any] = []
    history = []
    loss_r = torch.zeros(R)
    for ep in range(cfg.epochs):
        order = torch.stack([torch.randperm(cfg.n_batches, generator=g) for g in gens], dim=1)  # n_batches × R
        for b in order:
            tb, yb = tok[b, ridx], tgt[b, ridx]  # replica r's batch b[r]
            logits = model(tb)  # R × B × N
            ce = Fn.cross_entropy(logits.reshape(-1, cfg.N), yb.reshape(-1), reduction="none").view(R, -1)
            loss_r = ce.mean(dim=1)
            opt.zero_grad(set_to_none=True)
            loss_r.sum().backward()
            opt.step()
            sched.step()
            recent.append((logits.detach().argmax(-1) == yb).float().mean(dim=1))
            recent = recent[-100:]
        if log_every and ((ep + 1) % log_every == 0 or ep == cfg.epochs - 1):
            c = _correct_all(model, cfg.N, cfg.S, tables)
            history.append((ep + 1, [sum(x) / len(x) for x in c]))
    correct = _correct_all(model, cfg.N, cfg.S, tables)
    last = torch.stack(recent).mean(dim=0).tolist()
    reps = [Replica(s, t, c, float(a), float(l)) for s, t, c, a, l in
            zip(cfg.seeds, tables, correct, last, loss_r.detach().tolist())]
    return TrainResult(cfg, model, reps, time.perf_counter() - t0, history)


# ----------------------------------------------------------------------------- export (exactmem verify)

def export_module(module, r: int = 0):
    """Replica ``r`` of a trained `make_aot` module as its export twin for ``exactmem verify``:
    the same float32 tensors and the same real-number function (eq. (2)) on [B, S] token ids ->
    [B, N] logits at the last position, written with the operators the verify importer lowers
    (``embedding`` for ``E[t]`` instead of advanced indexing, batched ``matmul`` instead of
    ``einsum``, the sum over heads as one product with the heads' W_O side by side)."""
    import torch
    from torch import nn

    class AoTReplica(nn.Module):
        def __init__(self):
            super().__init__()
            self.H, self.dh, self.d = module.H, module.dh, module.d
            for nm in ("E", "P", "WQ", "WK", "WV", "WO", "WU"):
                self.register_buffer(nm, getattr(module, nm)[r].detach())

        def forward(self, tok):
            H, dh, d = self.H, self.dh, self.d
            B, S = tok.shape
            X = nn.functional.embedding(tok, self.E) + self.P[:S].unsqueeze(0)  # B×S×d
            xq = X[:, -1:, :]  # B×1×d: the last position queries
            q = (xq @ self.WQ.reshape(H * dh, d).T).reshape(B, 1, H, dh).transpose(1, 2)  # B×H×1×d_h
            k = (X @ self.WK.reshape(H * dh, d).T).reshape(B, S, H, dh).transpose(1, 2)  # B×H×S×d_h
            a = torch.softmax(q @ k.transpose(2, 3), dim=-1)  # B×H×1×S (no 1/√d_h scale: eq. (2))
            A = a @ X.unsqueeze(1)  # B×H×1×d, attention before output A^h(t)
            v = A @ self.WV.transpose(1, 2)  # B×H×1×d_h
            o = v.transpose(1, 2).reshape(B, H * dh) @ self.WO.transpose(1, 2).reshape(H * dh, d)  # Σ_h W_O^h v^h
            return (xq[:, 0, :] + o) @ self.WU.T  # skip connection, unembedding

    return AoTReplica().eval()


# ----------------------------------------------------------------------------- torch -> exact

def _zeros(r: int, c: int):
    return [[0] * c for _ in range(r)]


def like_model(N: int, d: int, H: int, dh: int, S: int = 2) -> Model:
    """The exactmem architecture of eq. (2) (weights zero): what `exact_model` fills in.
    Same layers as `exactmem.constructions.dana.association.assemble_model` with kind ``softmax``."""
    heads = [Head(WV=_zeros(dh, d), WO=_zeros(d, dh), WQ=_zeros(dh, d), WK=_zeros(dh, d)) for _ in range(H)]
    return Model([Embed(_zeros(N, d), _zeros(S, d)),
                  Attention(heads, kind="softmax", residual=True, query="last", keys="all"),
                  Affine(_zeros(N, d))],
                 input_type="tokens", input_dim=N, readout="last", decode="argmax", name="dana-trained-aot")


def state_dict_for_exactmem(module, r: int = 0) -> Dict[str, Any]:
    """Replica ``r``'s trained tensors under exactmem's export names (``layers.0.E``,
    ``layers.1.heads.h.WQ``, …, ``layers.2.W``)."""
    sd = {"layers.0.E": module.E[r].detach(), "layers.0.P": module.P[r].detach(),
          "layers.2.W": module.WU[r].detach()}
    for h in range(module.H):
        for nm in ("WQ", "WK", "WV", "WO"):
            sd[f"layers.1.heads.{h}.{nm}"] = getattr(module, nm)[r, h].detach()
    return sd


def exact_model(module, r: int = 0) -> Model:
    """The exact exactmem Model of replica ``r`` of a trained `make_aot` module (its float32
    weights taken exactly: each float is the rational it denotes)."""
    from ..export.importer import from_state_dict

    return from_state_dict(state_dict_for_exactmem(module, r),
                           like=like_model(module.N, module.d, module.H, module.dh, module.S))


def float_logits(module, seqs, r: int = 0) -> Any:
    """float32 logits of replica ``r`` on token sequences (a list of tuples), as a NumPy array (reports only)."""
    import torch

    tok = torch.tensor(list(seqs), dtype=torch.long).unsqueeze(0).expand(module.R, -1, -1)
    with torch.no_grad():
        return module(tok)[r].numpy()
