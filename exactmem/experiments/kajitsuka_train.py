"""Shared code of Kajitsuka & Sato's experiments (ICLR 2025, App. H, eq. (165); Figs. 1–3).

The model is eq. (165) exactly, written as an exactmem [`Model`][exactmem.model.Model]
and trained through its PyTorch twin ([`exactmem.export.to_torch`][exactmem.export.to_torch])::

    N(X) = E_out ∘ F₂^(FF) ∘ F^(UA) ∘ F₁^(FF) ∘ E_in (X)

* ``E_in``: token-wise linear R^d → R^m (no bias), m = 2 (App. H, footnote 3);
* ``F₁``, ``F₂``: ``blocks`` feed-forward layers each, eq. (3) with its residual,
  z ↦ z + W₂ ReLU(W₁ z + b₁) + b₂, hidden width q = 4m = 8;
* ``F^(UA)``: one uniform-attention layer, eq. (39), Z ↦ Z + W_O W_V (1/n) Σ_k Z_{:,k} (one head,
  value width m);
* ``E_out``: token-wise linear R^m → R^C (no bias), cross-entropy on the logits.

Read-out position. App. H compares "outputs at the 0-th token" with the labels. The model has no
positional encoding and one uniform layer, so it is permutation-equivariant: the output at the
0-th token of X is the output at the *last* token of X with its 0-th token moved to the end.
exactmem's models read out at the last position, so every sequence is stored that way
(``tokens[1:] + tokens[:1]``): same function, same verdicts.

Data (`corpus_examples`). MultiNLI is not shipped by any installed package, and nothing may
be downloaded at run time; the corpus is the English text that Python's standard library ships
in ``pydoc_data.topics`` (the ``help()`` topics, ~465,000 characters), split into sentences and
tokenized by a fixed word-level regular expression; every example is a sentence's first n = 8
tokens (App. H truncates to 8). Labels are 3 classes (MultiNLI's entailment/neutral/
contradiction), drawn i.i.d. uniformly with the run's seed: on the first eight premise tokens
the NLI label is essentially unpredictable, so what is measured is memorization, as in the
paper. Sequences that the model cannot tell apart (same multiset of tokens and same read-out
token) are kept once, so every dataset is consistently labelled (eq. (5)).

Tokens as vectors. App. H does not say how tokens become vectors of dimension d (its footnote
calls m = 2 the "embedding dimension"). Here (``ONEHOT``, the default) tokens are one-hot vectors
of the vocabulary (d = V), so ``E_in`` is a trained V × 2 embedding table (an exactmem
[`Embed`][exactmem.model.Embed] layer: E_in applied to a one-hot column); eq. (165) is
unchanged. Each word also gets a fixed d = 16 vector (`token_vectors`: i.i.d. N(0, 1/d)
entries seeded by the word's BLAKE2b hash, rounded to float32), used to build Kajitsuka & Sato's
construction fast (`construction`) and, with ``onehot=False``, as E_in's input instead.
Distinct words get distinct vectors (checked): the data are token-wise separated (Assumption 4.1).

Training (`train`): AdamW, full batch, a linear warm-up then cosine decay; the paper tunes
learning rate and warm-up with Optuna (2 or 10 trials). ``kajitsuka-fig3`` does so too (Optuna,
the ``experiments`` extra; `train` reports the loss to a pruning callback); ``kajitsuka-fig1``
tries a fixed list of (learning rate, warm-up) trials in order (`TRIALS`) and keeps the best.
Stopping rule: the paper's "training error below ε = 0.01", read as the training (cross-entropy)
loss, as in App. H's third experiment where "training error" is the MSE loss.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..model.layers import Affine, Attention, Embed, FeedForward, Head, Model

M_DIM = 2  # App. H: embedding dimension m = 2 (footnote 3)
Q_DIM = 4 * M_DIM  # App. H: hidden dimension q = 4m
N_LEN = 8  # App. H: sequences truncated to 8 tokens
D_TOK = 16  # token vector dimension (not given in the paper; see module docstring)
C_CLASSES = 3  # MultiNLI's three labels
ONEHOT = True  # E_in on one-hot tokens (a trained embedding table); False: on the fixed vectors
EPS = 0.01  # App. H: memorized when the training error falls below 0.01
# (learning rate, warm-up epochs): kajitsuka-fig1's tuning trials, tried in this order
TRIALS: Tuple[Tuple[float, int], ...] = ((3e-2, 100), (1e-2, 50), (1e-1, 100), (3e-3, 20), (2e-2, 10))

_TOKEN = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")


# ----------------------------------------------------------------------------- data


def corpus_sentences() -> List[List[str]]:
    """The token lists of every sentence of ``pydoc_data.topics`` (topics in sorted order)."""
    import pydoc_data.topics as T

    out = []
    for key in sorted(T.topics):
        text = T.topics[key].lower()
        for sent in re.split(r"(?<=[.!?])\s+|\n\s*\n", text):
            toks = _TOKEN.findall(sent)
            if toks:
                out.append(toks)
    return out


def corpus_info() -> Dict[str, Any]:
    import sys

    import pydoc_data.topics as T

    return {"corpus": "pydoc_data.topics (Python standard library help topics)",
            "python": sys.version.split()[0], "topics": len(T.topics),
            "characters": sum(len(v) for v in T.topics.values()),
            "tokenizer": "lower-case, regex [a-z]+|[0-9]+|[^\\sa-z0-9]"}


@dataclass
class TextData:
    """N sequences of n word tokens (read-out token last), their 3-class labels and the words'
    fixed d-dimensional float32 vectors."""

    tokens: List[Tuple[str, ...]]
    labels: List[int]
    vectors: Dict[str, np.ndarray]
    seed: int
    info: Dict[str, Any] = field(default_factory=dict)

    @property
    def N(self) -> int:
        return len(self.tokens)

    def array(self) -> np.ndarray:
        """float32 array N × n × d of the token vectors."""
        return np.stack([np.stack([self.vectors[w] for w in s]) for s in self.tokens]).astype(np.float32)

    def exact_inputs(self) -> List[Tuple[Tuple[Fraction, ...], ...]]:
        """The same vectors as exact rationals (every float32 is one)."""
        ex = {w: tuple(Fraction(float(x)) for x in v) for w, v in self.vectors.items()}
        return [tuple(ex[w] for w in s) for s in self.tokens]

    @property
    def vocab(self) -> List[str]:
        return sorted(self.vectors)

    def ids(self) -> List[Tuple[int, ...]]:
        """Token ids (index in the sorted vocabulary) of every sequence."""
        index = {w: i for i, w in enumerate(self.vocab)}
        return [tuple(index[w] for w in s) for s in self.tokens]

    def dataset(self, onehot: bool = False):
        """The exact dataset: token ids (``onehot``: E_in acts on one-hot vectors, i.e. an
        embedding table) or the fixed d-dimensional vectors."""
        from ..api import dataset

        name = f"pydoc-topics N={self.N} n={N_LEN} seed={self.seed}"
        if onehot:
            return dataset(self.ids(), self.labels, input_type="tokens", name=name)
        return dataset(self.exact_inputs(), self.labels, name=name)

    def sequence_data(self):
        """The same data as `SequenceData` for the construction."""
        from ..api import make_data

        return make_data(self.exact_inputs(), self.labels, C_CLASSES, "next_token",
                         name=f"pydoc-topics N={self.N}")


def token_vectors(words: Sequence[str], d: int = D_TOK) -> Dict[str, np.ndarray]:
    """A fixed float32 vector per word: N(0, 1/d) entries seeded by the word's BLAKE2b hash."""
    out = {}
    for w in words:
        h = int.from_bytes(hashlib.blake2b(w.encode("utf-8"), digest_size=8).digest(), "little")
        out[w] = (np.random.default_rng(h).standard_normal(d) / math.sqrt(d)).astype(np.float32)
    return out


def corpus_examples(N: int, seed: int = 0, n: int = N_LEN) -> TextData:
    """N distinct-to-the-model sentences' first n tokens, shuffled with ``seed``, 3-class labels."""
    sents = [s[:n] for s in corpus_sentences() if len(s) >= n]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(sents))
    seen = set()
    toks: List[Tuple[str, ...]] = []
    for i in order:
        s = sents[int(i)]
        s = tuple(s[1:] + s[:1])  # the paper's read-out token (the 0-th) goes last, see docstring
        key = (tuple(sorted(s)), s[-1])  # what a permutation-equivariant model can tell apart
        if key in seen:
            continue
        seen.add(key)
        toks.append(s)
        if len(toks) == N:
            break
    if len(toks) < N:
        raise ValueError(f"the corpus has only {len(toks)} distinguishable sentences of {n} tokens, not {N}")
    # one label per corpus position, drawn once: datasets of one seed are nested (N < N' ⇒ prefix)
    labels = [int(y) for y in np.random.default_rng([seed, 1]).integers(0, C_CLASSES, len(sents))[:N]]
    words = sorted({w for s in toks for w in s})
    vecs = token_vectors(words)
    if len({v.tobytes() for v in vecs.values()}) != len(vecs):
        raise ValueError("two words share a token vector")
    info = dict(corpus_info(), sentences=len(sents), vocabulary=len(words), d=D_TOK, n=n, N=N, classes=C_CLASSES)
    return TextData(toks, labels, vecs, seed, info)


# ----------------------------------------------------------------------------- model


def _uniform(rng, shape, bound) -> Tuple:
    a = rng.uniform(-bound, bound, size=shape).astype(np.float32)
    if a.ndim == 1:
        return tuple(Fraction(float(x)) for x in a)
    return tuple(tuple(Fraction(float(x)) for x in row) for row in a)


def build_model(blocks: int, seed: int = 0, d: int = D_TOK, m: int = M_DIM, q: int = Q_DIM,
                C: int = C_CLASSES, vocab: int = 0) -> Model:
    """Eq. (165) with ``blocks`` eq.-(3) blocks in each of F₁ and F₂, initial float32 weights
    (PyTorch's default uniform(±1/√fan_in); W₂ also scaled by 1/√(2·blocks) so the residual
    stack starts near the identity), as an exact Model (argmax decoding, read-out last)."""
    rng = np.random.default_rng([seed, blocks, 165])
    s2 = 1.0 / math.sqrt(2 * blocks)

    def ff():
        return FeedForward(_uniform(rng, (q, m), 1 / math.sqrt(m)), _uniform(rng, (q,), 1 / math.sqrt(m)),
                           _uniform(rng, (m, q), s2 / math.sqrt(q)), _uniform(rng, (m,), s2 / math.sqrt(q)))

    if vocab:
        E = rng.standard_normal((vocab, m)).astype(np.float32)  # nn.Embedding's N(0, 1)
        layers: List[Any] = [Embed(tuple(tuple(Fraction(float(x)) for x in row) for row in E))]
    else:
        layers = [Affine(_uniform(rng, (m, d), 1 / math.sqrt(d)))]
    layers += [ff() for _ in range(blocks)]
    head = Head(WV=_uniform(rng, (m, m), 1 / math.sqrt(m)), WO=_uniform(rng, (m, m), 1 / math.sqrt(m)))
    layers.append(Attention((head,), kind="uniform", residual=True))
    layers += [ff() for _ in range(blocks)]
    layers.append(Affine(_uniform(rng, (C, m), 1 / math.sqrt(m))))
    return Model(tuple(layers), "tokens" if vocab else "vectors", vocab or d, "last", "argmax",
                 name=f"kajitsuka-eq165-blocks{blocks}")


def n_params(blocks: int, d: int = D_TOK, m: int = M_DIM, q: int = Q_DIM, C: int = C_CLASSES) -> int:
    """Trainable parameters of `build_model` (E_in on d-dim inputs — d = vocabulary for
    one-hot tokens —, 2·blocks eq.-(3) blocks, W_V, W_O, E_out)."""
    return m * d + 2 * blocks * (2 * m * q + q + m) + 2 * m * m + C * m


def construction(data: TextData, onehot: bool = False, seed: int = 0) -> Dict[str, Any]:
    """Kajitsuka & Sato's own memorizer (Theorem 4.1/B.1, [`exactmem.api.kajitsuka.next_token`][exactmem.api.kajitsuka.next_token])
    built on the same sequences and labels: its exact size. Built on the d = 16 token vectors
    (``onehot=True``: on one-hot tokens, d = V, slow for large V). The two networks differ only in
    E_in's input width — ``params_onehot`` = ``params`` + (V − 16)·(rows of E_in), which
    ``tests/test_experiments_kajitsuka.py`` checks against a one-hot build."""
    from ..api import kajitsuka, make_data
    from ..model.measure import measure

    V = len(data.vectors)
    if onehot:
        idx = {w: i for i, w in enumerate(data.vocab)}
        zero, one = Fraction(0), Fraction(1)
        oh = {w: tuple(one if i == idx[w] else zero for i in range(V)) for w in data.vocab}
        sd = make_data([tuple(oh[w] for w in s) for s in data.tokens], data.labels, C_CLASSES, "next_token",
                       name=f"pydoc-topics N={data.N} one-hot")
    else:
        sd = data.sequence_data()
    t0 = time.perf_counter()
    model = kajitsuka.next_token(sd, seed=seed).model
    me = measure(model)
    rows = model.layers[0].m_out
    out = {"d": V if onehot else D_TOK, "params": me.n_params, "nonzero": me.n_nonzero, "depth": me.depth,
           "width": me.width, "max_bits": me.max_bits, "E_in_rows": rows, "seconds": round(time.perf_counter() - t0, 1)}
    if not onehot:
        out["params_onehot"] = me.n_params + (V - D_TOK) * rows
    return out


# ----------------------------------------------------------------------------- training


@dataclass
class TrainResult:
    """One trained network: its exact model, the torch module, the curves and the float verdict."""

    blocks: int
    lr: float
    warmup: int
    model: Model
    module: Any
    epochs_run: int
    loss: float  # final full-batch training loss (float32)
    float_acc: float  # final float32 training accuracy
    float_correct: List[bool]
    curve: List[Tuple[int, float, float]]  # (epoch, loss, accuracy)
    seconds: float
    pruned: bool = False  # stopped by the ``report`` callback (a hopeless tuning trial)

    @property
    def float_memorized(self) -> bool:
        """The paper's rule: training error (loss) below ε = 0.01."""
        return self.loss < EPS


def train(data: TextData, blocks: int, lr: float, warmup: int, epochs: int, seed: int = 0,
          stop_early: bool = True, log_every: int = 1, weight_decay: float = 0.01,
          onehot: bool = ONEHOT, report: Optional[Callable[[int, float], bool]] = None,
          report_every: int = 50) -> TrainResult:
    """AdamW, full batch, cross-entropy at the read-out token; linear warm-up then cosine decay
    over ``epochs``. With ``stop_early`` training stops once the loss is below ε and every
    example is right in float32 (nothing left for either rule to gain). ``report(epoch, loss)``
    is called every ``report_every`` epochs; when it returns True training stops there and the
    result is marked ``pruned`` (Optuna's pruning of a hopeless trial)."""
    import torch

    from ..export import to_torch
    from ..export.importer import from_state_dict

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = build_model(blocks, seed, vocab=len(data.vectors) if onehot else 0)
    mod = to_torch(model)
    for p in mod.parameters():
        p.requires_grad_(True)
    X = torch.tensor(data.ids(), dtype=torch.long) if onehot else torch.from_numpy(data.array())
    y = torch.tensor(data.labels, dtype=torch.long)
    opt = torch.optim.AdamW(mod.parameters(), lr=lr, weight_decay=weight_decay)

    def factor(e):
        if e < warmup:
            return (e + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (e - warmup) / max(1, epochs - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    curve: List[Tuple[int, float, float]] = []
    t0 = time.perf_counter()
    e = 0
    pruned = False
    for e in range(1, epochs + 1):
        opt.zero_grad()
        logits = mod(X)
        loss = torch.nn.functional.cross_entropy(logits, y)
        if not torch.isfinite(loss):
            break
        loss.backward()
        opt.step()
        sched.step()
        if e % log_every == 0 or e == epochs:
            with torch.no_grad():
                acc = (logits.argmax(-1) == y).float().mean().item()
            curve.append((e - 1, float(loss.item()), acc))  # metrics of the weights before step e
        if stop_early and loss.item() < EPS:
            with torch.no_grad():
                if bool((mod(X).argmax(-1) == y).all()):
                    break
        if report is not None and e % report_every == 0 and e < epochs and report(e, float(loss.item())):
            pruned = True
            break
    with torch.no_grad():
        logits = mod(X)
        fl = float(torch.nn.functional.cross_entropy(logits, y).item())
        corr = (logits.argmax(-1) == y).tolist()
    curve.append((e, fl, sum(corr) / len(corr)))
    exact = from_state_dict(mod.state_dict(), like=model)
    return TrainResult(blocks, lr, warmup, exact, mod, e, fl if math.isfinite(fl) else float("inf"),
                       sum(corr) / len(corr), corr, curve, time.perf_counter() - t0, pruned)


def export_module(module: Any):
    """The export twin of a trained eq.-(165) module ([`exactmem.export.to_torch`][exactmem.export.to_torch] of
    `build_model`): the same float32 tensors and the same real-number function at the
    read-out position, written with the operators ``exactmem verify`` lowers — ``embedding``
    (ONNX ``Gather``) for E_in on token ids, ``mean`` over the n tokens (``ReduceMean``: the
    uniform weights 1/n are exact), matrix products. F₂ and E_out act token-wise, so after the
    attention layer only the read-out (last) token is computed."""
    import torch
    from torch import nn

    spec = module.spec["layers"]
    blocks = (len(spec) - 3) // 2
    kinds = [L["type"] for L in spec]
    att = spec[1 + blocks] if len(spec) >= 3 else {}
    ffs = kinds[1:1 + blocks] + kinds[2 + blocks:-1]
    if (blocks < 1 or len(spec) != 2 * blocks + 3 or ffs != ["feedforward"] * (2 * blocks) or kinds[-1] != "affine"
            or att.get("type") != "attention" or att.get("kind") != "uniform"
            or att.get("heads") != 1 or att.get("keys") != "all" or not att.get("residual")
            or not all(L["residual"] for L in spec if L["type"] == "feedforward")
            or spec[-1]["relu"] or "b" in spec[-1]["tensors"] or module.spec["readout"] != "last"):
        raise ValueError("export_module expects the eq. (165) network of kajitsuka_train.build_model")
    tokens = module.spec["input_type"] == "tokens"
    L = list(module.layers)

    class Eq165Twin(nn.Module):
        """Eq. (165) on [B, n] token ids (or [B, n, d] vectors) -> [B, C] scores at the last token."""

        def __init__(self):
            super().__init__()
            self.blocks = blocks
            self.register_buffer("E_in", (L[0].E if tokens else L[0].W).detach())
            for i, lay in enumerate(L[1:1 + blocks] + L[2 + blocks:-1]):
                for k in ("W1", "b1", "W2", "b2"):
                    self.register_buffer(f"ff{i}_{k}", getattr(lay, k).detach())
            head = L[1 + blocks].heads[0]
            self.register_buffer("WV", head.WV.detach())
            self.register_buffer("WO", head.WO.detach())
            self.register_buffer("E_out", L[-1].W.detach())

        def _ff(self, i, X):
            g = lambda k: getattr(self, f"ff{i}_{k}")  # noqa: E731
            return X + torch.relu(X @ g("W1").T + g("b1")) @ g("W2").T + g("b2")

        def forward(self, x):
            X = nn.functional.embedding(x, self.E_in) if tokens else x @ self.E_in.T
            for i in range(self.blocks):
                X = self._ff(i, X)
            z = X[:, -1, :] + (X.mean(dim=1) @ self.WV.T) @ self.WO.T  # eq. (39) at the read-out token
            for i in range(self.blocks, 2 * self.blocks):
                z = self._ff(i, z)
            return z @ self.E_out.T

    return Eq165Twin().eval()


def certify(result: TrainResult, data: TextData, workers: int = 1, path: Optional[str] = None):
    """Per-example verdicts on the trained weights through ``exactmem verify``
    (`exactmem.experiments.certify_trained.verify_examples`): every example is claimed
    pass/fail/unknown and the kernel re-derives each claim. Uniform attention (weights 1/n,
    n = 8) and ReLU keep the float32 weights' dyadic values exact, so no UNKNOWN is expected."""
    from .certify_trained import verify_examples

    onehot = result.model.input_type == "tokens"
    X = np.asarray(data.ids(), dtype=np.int64) if onehot else data.array()
    return verify_examples(export_module(result.module), X, np.asarray(data.labels, dtype=np.int64),
                           workers=workers, path=path, name=f"kajitsuka-eq165-blocks{result.blocks}-N{data.N}")


def gap(result: TrainResult, verdicts) -> List[int]:
    """Examples right in float32 whose verdict is not CERTIFIED (the float/exact gap)."""
    return [i for i, (ok, v) in enumerate(zip(result.float_correct, verdicts.verdicts)) if ok and v != "certified"]


def fit_power(xs: Sequence[float], ys: Sequence[float]) -> Tuple[float, float]:
    """Least-squares fit of log y = a + b log x: returns (b, e^a), the exponent and the scale."""
    lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    b, a = np.polyfit(lx, ly, 1)
    return float(b), float(math.exp(a))


def fit_scale(xs: Sequence[float], ys: Sequence[float], power: float) -> float:
    """Least-squares c in y ≈ c · x^power."""
    f = np.asarray(xs, float) ** power
    y = np.asarray(ys, float)
    return float((f @ y) / (f @ f))


def fit_power_se(xs: Sequence[float], ys: Sequence[float]) -> Optional[Tuple[float, float, int]]:
    """Least-squares exponent b of log y = a + b log x with its standard error (the usual OLS
    formula, n − 2 degrees of freedom): (b, se, n), or None with fewer than 3 points or one x."""
    lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    n = len(lx)
    if n < 3 or len(set(lx.tolist())) < 2:
        return None
    b, a = np.polyfit(lx, ly, 1)
    resid = ly - (a + b * lx)
    sxx = float(((lx - lx.mean()) ** 2).sum())
    se = math.sqrt(float((resid ** 2).sum()) / (n - 2) / sxx)
    return float(b), se, n
