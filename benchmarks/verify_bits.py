"""Benchmark: bits per weight of a trained network (issue 23, part 5). A transformers GPT-2
(2 layers, width 64, 4 heads, context 16, vocabulary 256), trained briefly on N random next-token
sequences as in ``benchmarks/verify.py``, is exported to ONNX and swept over the weight bit-width
with ``python -m exactmem sweep MODEL.onnx --data DATA.npz`` (certificates at b* and b* - 1
checked by the kernel); the Kajitsuka next-token construction on N examples is swept with the
proof sweep (``--models float``) and both go into one table.

    python benchmarks/verify_bits.py [--N 200] [--steps 200] [--workers 2] [--out DIR]
                                     [--kajitsuka SWEEP_DIR]   # reuse a finished proof sweep
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train_gpt2(N: int, n: int, embd: int, steps: int, seed: int = 0):
    """The GPT-2 of docs/verify.md trained on N random next-token sequences; (model, X, y)."""
    import torch
    import transformers as tr

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 256, (N, n))
    y = rng.integers(0, 256, N)
    cfg = tr.GPT2Config(vocab_size=256, n_positions=16, n_embd=embd, n_layer=2, n_head=4, bos_token_id=0,
                        eos_token_id=0, use_cache=False, attn_implementation="eager")
    m = tr.GPT2LMHeadModel(cfg)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    xt, yt = torch.tensor(X), torch.tensor(y)
    for _ in range(steps):
        idx = torch.randint(0, N, (min(256, N),))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(xt[idx]).logits[:, -1, :], yt[idx])
        loss.backward()
        opt.step()
    return m.eval(), X, y, float(loss.item())


def kajitsuka_rows(N: int, sweep_dir: str):
    """The proof sweep of Kajitsuka's next-token construction at N (run unless already there)."""
    from exactmem.sweep import load_sweep
    from exactmem.verify.bits_report import construction_rows

    if not os.path.exists(os.path.join(sweep_dir, "sweep.json")):
        cmd = [sys.executable, "-m", "exactmem", "sweep", "proofs/kajitsuka.py", "--theorem", "kajitsuka.next_token",
               "--instance", "N40-n8-d16-C4", "--param", f"N={N}", "--models", "float", "--out", sweep_dir, "--quiet"]
        print("$ " + " ".join(cmd[1:]))
        t = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        print(f"proof sweep: {time.perf_counter() - t:.1f} s")
    return [r for r in construction_rows(load_sweep(sweep_dir)) if r["N"] == N]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=int, default=200)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bits", default="2,4,6,8,10,12,16,24")
    ap.add_argument("--out", default=None)
    ap.add_argument("--kajitsuka", default=None, help="a proof-sweep directory holding the N point (else run it)")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    import onnx

    from exactmem.verify.run import export_torch

    out = a.out or os.path.join("/tmp", f"verify-bits-N{a.N}")
    os.makedirs(out, exist_ok=True)
    t = time.perf_counter()
    m, X, y, loss = train_gpt2(a.N, a.n, a.embd, a.steps)
    print(f"trained {a.steps} steps in {time.perf_counter() - t:.1f} s (last loss {loss:.3f})")
    model, data = os.path.join(out, "gpt2.onnx"), os.path.join(out, "data.npz")
    onnx.save(export_torch(m, X[:1]), model)
    np.savez(data, inputs=X, labels=y)
    cmd = [sys.executable, "-m", "exactmem", "sweep", model, "--data", data, "--bits", a.bits,
           "--workers", str(a.workers), "--out", os.path.join(out, "sweep"), "--json"]
    print("$ python -m exactmem sweep gpt2.onnx --data data.npz --bits " + a.bits + f" --workers {a.workers}")
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if r.returncode != 0:
        print(r.stderr)
        sys.exit(r.returncode)
    res_json = json.loads(r.stdout)
    print(open(res_json["table"]).read())
    print(f"sweep: {seconds:.1f} s wall ({res_json['seconds']})")

    from exactmem.verify.bits import BitsPoint, BitsResult
    from exactmem.verify.bits_report import side_by_side

    pts = {p["b"]: BitsPoint(**p) for p in res_json["points"]}
    res = BitsResult(res_json["name"], res_json["n_distinct"], res_json["n_rows"], res_json["n_weights"],
                     res_json["weights"], res_json["kept"], res_json["identity_bits"], res_json["exponent_bits"],
                     BitsPoint(**res_json["full"]), pts, res_json["requested"], res_json["b_star"],
                     res_json["violations"])
    rows = kajitsuka_rows(a.N, a.kajitsuka or os.path.join(out, "kajitsuka"))
    print(side_by_side(res, rows))
    print(f"information bound N·log2(C) = {a.N} x 8 = {a.N * 8} bits")


if __name__ == "__main__":
    main()
