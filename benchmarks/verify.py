"""Benchmark: ``exactmem verify`` and ``check`` on a transformers GPT-2 trained briefly on N random
next-token sequences, against onnxruntime's float forward on the same examples.

``--size small`` (default): 2 layers, width 64, 4 heads, context 16, vocabulary 256, last position;
prints verify / float and the kernel's pure check of 50 examples (the table of docs/verify.md § Speed).

``--size 1m`` (issue 39): 4 layers, width 128, 4 heads, context 64, vocabulary 512 (~0.9 M parameters),
``--position all`` (64 predictions per sequence); prints in one run: verify / float, ``check --engine
fast`` / float (the fast engine's own share: examples it decided and its seconds; the rest goes to the
kernel's ladder), the pure kernel's seconds per example on ``--check`` randomly sampled examples (the
kernel confirms a sample of the large run), and peak memory
(``resource.getrusage``: this process, which runs verify, and the check subprocesses).

    python benchmarks/verify.py [--size small|1m] [--N 1000] [--steps S] [--workers 2] [--check K]
        [--time-limit SECONDS] [--engine auto|arb] [--check-workers 2] [--share]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's exactmem, not an installed one

SIZES = {  # vocab, context, width, layers, heads, position, default training steps
    "small": dict(vocab=256, n=16, embd=64, layers=2, heads=4, position="last", steps=300),
    "1m": dict(vocab=512, n=64, embd=128, layers=4, heads=4, position="all", steps=60),
}


def train(a, s):
    """A GPT2LMHeadModel of size ``s`` trained ``a.steps`` Adam steps on N random sequences: (model, X, y)."""
    import torch
    import transformers as tr

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    V, n = s["vocab"], s["n"]
    if s["position"] == "all":  # next-token labels at every position
        seq = rng.integers(0, V, (a.N, n + 1))
        X, y = seq[:, :-1], seq[:, 1:]
    else:
        X, y = rng.integers(0, V, (a.N, n)), rng.integers(0, V, a.N)
    cfg = tr.GPT2Config(vocab_size=V, n_positions=n, n_embd=a.embd or s["embd"], n_layer=s["layers"],
                        n_head=s["heads"], bos_token_id=0, eos_token_id=0, use_cache=False,
                        attn_implementation="eager")
    m = tr.GPT2LMHeadModel(cfg)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    xt, yt = torch.tensor(X), torch.tensor(y)
    t = time.perf_counter()
    loss = None
    for _ in range(a.steps):
        idx = torch.randint(0, a.N, (min(a.batch, a.N),))
        opt.zero_grad()
        lg = m(xt[idx]).logits
        loss = (torch.nn.functional.cross_entropy(lg.reshape(-1, V), yt[idx].reshape(-1)) if s["position"] == "all"
                else torch.nn.functional.cross_entropy(lg[:, -1, :], yt[idx]))
        loss.backward()
        opt.step()
    m.eval()
    last = f"{loss.item():.3f}" if loss is not None else "-"
    print(f"trained {a.steps} steps in {time.perf_counter() - t:.1f} s (last loss {last})", flush=True)
    return m, X, y


def subset(doc, rows, path):
    """The examples ``rows`` of a version-1 verify certificate, its claims recounted and re-hashed."""
    from exactmem.kernel.schema import canonical_hash

    sub = dict(doc)
    pick = lambda xs: [xs[i] for i in rows]  # noqa: E731
    sub["dataset"] = {"inputs": pick(doc["dataset"]["inputs"]), "labels": pick(doc["dataset"]["labels"])}
    sub["outputs"] = pick(doc["outputs"])
    k = len(rows)
    seen = {}
    for x, v in zip(sub["dataset"]["inputs"], sub["outputs"]):
        seen.setdefault(json.dumps(x), v)
    counts = {"n_pass": sum(v == "pass" for v in seen.values()), "n_fail": sum(v == "fail" for v in seen.values()),
              "n_rows": k, "n_examples": len(seen)}
    sub["claims"] = [dict(c, bound=str(counts[c["quantity"]])) for c in doc["claims"] if c["quantity"] in counts]
    sub["hash"] = canonical_hash(sub)
    json.dump(sub, open(path, "w"))
    return path


def run_check(path, engine, time_limit, workers=1):
    """``python -m exactmem check`` in a subprocess (``--workers`` when > 1: Dask shards): (seconds, exit code,
    first line, stderr tail)."""
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", path, "--engine", engine, "--time-limit",
                        str(time_limit)] + (["--workers", str(workers)] if workers > 1 else []),
                       capture_output=True, text=True, cwd=ROOT)
    first = (r.stdout.strip().splitlines() or [r.stderr.strip()] or [""])[0]
    return time.perf_counter() - t, r.returncode, first, r.stderr.strip()[-300:]


def engine_share(path):
    """The fast engine alone on every example of the certificate (no kernel ladder): (examples decided,
    examples, seconds of the batched evaluation, seconds to parse)."""
    from exactmem.fastgraph.check import BLOCK, fast_block, plan_for
    from exactmem.kernel.checker import parse_certificate
    from exactmem.kernel.limits import Budget

    t = time.perf_counter()
    cert = parse_certificate(json.load(open(path)))
    t_parse = time.perf_counter() - t
    stats, decided, budget = {}, 0, Budget()
    t = time.perf_counter()
    plan = plan_for(cert)
    N = len(cert.inputs)
    for b0 in range(0, N, BLOCK):
        decided += len(fast_block(cert, plan, range(b0, min(N, b0 + BLOCK)), budget, stats))
    return decided, N, time.perf_counter() - t, t_parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--embd", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--check", type=int, default=None, help="examples for the kernel's pure check (0: skip; "
                    "default 50 for small, 2 for 1m)")
    ap.add_argument("--time-limit", type=float, default=3600, help="seconds granted to each check")
    ap.add_argument("--engine", choices=("auto", "arb"), default="auto", help="verify's engine (exactmem verify --engine)")
    ap.add_argument("--check-workers", type=int, default=2, help="check --workers (Dask shards; 1: one process)")
    ap.add_argument("--share", action="store_true", help="also time the fast engine alone in this process")
    a = ap.parse_args()
    s = SIZES[a.size]
    a.steps = s["steps"] if a.steps is None else a.steps
    a.check = (50 if a.size == "small" else 2) if a.check is None else a.check
    warnings.filterwarnings("ignore")
    import onnx
    import onnxruntime as ort

    import exactmem as em
    from exactmem.verify.run import export_torch

    m, X, y = train(a, s)
    out = tempfile.mkdtemp(prefix="verify-bench-")
    path = os.path.join(out, "gpt2.onnx")
    onnx.save(export_torch(m, X[:1]), path)

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    sess.run(None, {name: X[:1].astype(np.int64)})  # warm-up: the first run allocates
    t = time.perf_counter()
    for i in range(a.N):
        sess.run(None, {name: X[i:i + 1].astype(np.int64)})
    t_float = time.perf_counter() - t

    t = time.perf_counter()
    res = em.verify(path, X, y, position=s["position"], out=out, workers=a.workers, quiet=False, name="gpt2",
                    engine=a.engine)
    t_verify = time.perf_counter() - t
    params = sum(p.numel() for p in m.parameters())
    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"client: transformers GPT2LMHeadModel, {params} parameters ({res.n_params} stored rationals in the graph)")
    print(res.summary())
    preds = a.N * (s["n"] if s["position"] == "all" else 1)
    print(f"float: onnxruntime forward of {a.N} sequences ({preds} predictions) {t_float:.2f} s")
    print(f"verify: {t_verify:.1f} s ({a.workers} workers; evaluate {res.seconds['evaluate']:.1f} s), "
          f"ratio {t_verify / t_float:.0f}x; decided by: {res.by_engine}; precision used: "
          f"{ {int(k): int(v) for k, v in zip(*np.unique(res.bits, return_counts=True))} }")
    doc = json.load(open(res.certificate))
    rows = []
    if a.size == "1m":
        if a.share:
            dec, N, t_eng, t_parse = engine_share(res.certificate)
            print(f"fast engine alone (one process): {dec} of {N} examples decided by its enclosures in {t_eng:.1f} s "
                  f"(+ {t_parse:.1f} s to parse the certificate)", flush=True)
        t_fast, code, first, err = run_check(res.certificate, "fast", a.time_limit, a.check_workers)
        print(f"check --engine fast --workers {a.check_workers}: exit {code} in {t_fast:.1f} s, ratio "
              f"{t_fast / t_float:.0f}x: {first[:400]}", flush=True)
        rows.append(("fast check", t_fast))
    if a.check:
        k = min(a.check, a.N)
        rows = sorted(np.random.default_rng(1).choice(a.N, k, replace=False).tolist())  # a random sample
        p = subset(doc, rows, os.path.join(out, f"gpt2-sample{k}.verify.json"))
        t_check, code, first, _ = run_check(p, "pure", a.time_limit)
        print(f"pure kernel check of {k} random examples (rows {rows[:10]}{' ...' if k > 10 else ''}): exit {code} in "
              f"{t_check:.1f} s ({t_check / k:.1f} s per example): {first[:200]}")
    rss_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak memory: {rss_self:.0f} MB (this process: training, verify), {rss_child:.0f} MB (largest check "
          "subprocess)")
    print(f"certificate: {res.certificate}")


if __name__ == "__main__":
    main()
