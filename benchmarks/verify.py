"""Benchmark: ``exactmem verify`` on a transformers GPT-2 (2 layers, width 64, 4 heads, context 16,
vocabulary 256) trained briefly on N random next-token sequences; prints verify time against
onnxruntime's float forward (ratio) and the kernel's pure check of 50 examples.

    python benchmarks/verify.py [--N 1000] [--n 16] [--steps 300] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--check", type=int, default=50, help="examples for the kernel's pure check (0: skip)")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    import onnx
    import onnxruntime as ort
    import torch
    import transformers as tr

    import exactmem as em
    from exactmem.verify.run import export_torch

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, (a.N, a.n))
    y = rng.integers(0, 256, a.N)
    cfg = tr.GPT2Config(vocab_size=256, n_positions=16, n_embd=a.embd, n_layer=2, n_head=4, bos_token_id=0,
                        eos_token_id=0, use_cache=False, attn_implementation="eager")
    m = tr.GPT2LMHeadModel(cfg)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    xt, yt = torch.tensor(X), torch.tensor(y)
    t = time.perf_counter()
    for step in range(a.steps):
        idx = torch.randint(0, a.N, (min(256, a.N),))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(xt[idx]).logits[:, -1, :], yt[idx])
        loss.backward()
        opt.step()
    m.eval()
    print(f"trained {a.steps} steps in {time.perf_counter() - t:.1f} s (last loss {loss.item():.3f})")
    out = tempfile.mkdtemp(prefix="verify-bench-")
    path = os.path.join(out, "gpt2.onnx")
    onnx.save(export_torch(m, X[:1]), path)

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    t = time.perf_counter()
    for i in range(a.N):
        sess.run(None, {name: X[i:i + 1].astype(np.int64)})
    t_float = time.perf_counter() - t

    t = time.perf_counter()
    res = em.verify(path, X, y, out=out, workers=a.workers, quiet=False, name="gpt2")
    t_verify = time.perf_counter() - t
    params = sum(p.numel() for p in m.parameters())
    print(f"client: transformers GPT2LMHeadModel, {params} parameters ({res.n_params} stored rationals in the graph)")
    print(res.summary())
    print(f"verify {t_verify:.1f} s ({a.workers} workers; evaluate {res.seconds['evaluate']:.1f} s), "
          f"onnxruntime float forward {t_float:.2f} s, ratio {t_verify / t_float:.0f}x")
    print(f"precision used: {dict(zip(*np.unique(res.bits, return_counts=True)))}")
    if a.check:
        import json

        doc = json.load(open(res.certificate))
        sub = dict(doc)
        k = min(a.check, a.N)
        sub["dataset"] = {"inputs": doc["dataset"]["inputs"][:k], "labels": doc["dataset"]["labels"][:k]}
        sub["outputs"] = doc["outputs"][:k]
        counts = {"n_pass": 0, "n_fail": 0}
        seen = {}
        for x, lab, v in zip(sub["dataset"]["inputs"], sub["dataset"]["labels"], sub["outputs"]):
            seen.setdefault(json.dumps(x), v)
        counts = {"n_pass": sum(v == "pass" for v in seen.values()), "n_fail": sum(v == "fail" for v in seen.values())}
        sub["claims"] = [c for c in doc["claims"] if c["quantity"] in counts]
        for c in sub["claims"]:
            c["bound"] = str(counts[c["quantity"]])
        from exactmem.kernel.schema import canonical_hash

        sub["hash"] = canonical_hash(sub)
        p50 = os.path.join(out, "gpt2-first50.verify.json")
        json.dump(sub, open(p50, "w"))
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "exactmem", "check", p50], capture_output=True, text=True)
        t_check = time.perf_counter() - t
        print(f"kernel check of {k} examples: exit {r.returncode} in {t_check:.1f} s: "
              f"{(r.stdout.strip().splitlines() or [r.stderr.strip()])[0][:200]}")
    print(f"certificate: {res.certificate}")


if __name__ == "__main__":
    main()
