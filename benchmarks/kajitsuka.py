"""Kajitsuka & Sato Theorem B.1 / Corollary 4.1: build + certify times, memory, and float64.

For each case (default: next-token N = 1,000 and N = 10,000, seq-to-seq N = 1,000; n = 8,
d = 16, C = 4, seed 0 — the instances of ``proofs/kajitsuka.py``), in a fresh subprocess:

* wall time of build, exact forward pass, certificate write and independent check (the
  shares of the total), and the process's peak resident memory (``ru_maxrss``);
* a float64 evaluation of the *same* network (NumPy; weights converted beforehand, not
  timed; uniform attention = column mean per sequence; best of 3): its time, the ratio
  exact certification / float64, and how many labels float64 gets exactly right.

Usage: ``python benchmarks/kajitsuka.py [--cases nt1000,nt10000,s2s1000] [--checker auto|pure|fast]``
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


CASES = {
    "nt1000": ("kajitsuka.next_token", "N1000-n8-d16-C4"),
    "nt10000": ("kajitsuka.next_token", "N10000-n8-d16-C4"),
    "s2s1000": ("kajitsuka.seq2seq", "N1000-n8-d16-C4"),
    "hm1000": ("kajitsuka.next_token_hardmax", "N1000-n8-d16-C4-hardmax"),
}


def _proof():
    return importlib.import_module("exactmem.proofs.kajitsuka")  # proofs/kajitsuka.py re-exports it


def _f(q) -> float:
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def float_eval(model, ds, repeat=3):
    """float64 forward of the same weights: (best seconds, labels exactly right).

    Not ``exactmem.export.FloatNet``: that general evaluator rounds inputs in Python and runs
    B × n × d batched matmuls, ~10× slower here (same labels right: 237/1,000 and 2,485/10,000),
    which would flatter the exact/float64 ratio; this one is two-dimensional NumPy only."""
    import numpy as np

    from exactmem.model.layers import Affine, Attention

    steps = []
    for layer in model.layers:
        if isinstance(layer, Affine):
            W = np.array([[_f(x) for x in row] for row in layer.W])
            b = None if layer.b is None else np.array([_f(x) for x in layer.b])[:, None]
            steps.append(("affine", W, b, layer.relu))
        elif isinstance(layer, Attention) and all(
                h.WQ is None or not any(x for r in h.WQ for x in r) for h in layer.heads):
            M = sum(np.array([[_f(x) for x in r] for r in h.WO]) @ np.array([[_f(x) for x in r] for r in h.WV])
                    for h in layer.heads)
            steps.append(("mean", M, None, layer.residual))
        else:
            raise TypeError("float64 evaluator: affine layers and averaging attention only")
    n = len(ds.inputs[0])
    X = np.array([[_f(v) for v in tok] for seq in ds.inputs for tok in seq]).T  # d × (N·n), sequence-major
    best, H = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        H = X
        with np.errstate(all="ignore"):
            for kind, W, b, flag in steps:
                if kind == "affine":
                    H = W @ H
                    if b is not None:
                        H = H + b
                    if flag:
                        H = np.maximum(H, 0.0)
                else:
                    mean = H.reshape(H.shape[0], -1, n).mean(axis=2)
                    A = W @ np.repeat(mean, n, axis=1)
                    H = H + A if flag else A
        best = min(best, time.perf_counter() - t)
    out = H[0].reshape(-1, n)
    if model.readout == "last":
        want = np.array([_f(y[0]) for y in ds.labels])
        ok = int(np.sum(out[:, -1] == want))
    else:
        want = np.array([[_f(c[0]) for c in y] for y in ds.labels])
        ok = int(np.sum(np.all(out == want, axis=1)))
    return best, ok


def run_case(key, checker):
    from exactmem.pipeline.certify import certify_instance, resolve_checker

    pk = _proof()
    thm_name, inst_name = CASES[key]
    thm = [t for t in pk.THEOREMS if t.name == thm_name][0]
    inst = [i for i in thm.instances if i.name == inst_name][0]
    chk = resolve_checker(checker, "large") if checker == "auto" else checker
    with tempfile.TemporaryDirectory() as out:
        row = certify_instance(thm, inst, 0, out, quiet=True, checker=chk)
    built = thm.build(dict(inst.params), 0)  # the same model and data again, for float64
    t_float, ok = float_eval(built.model, built.dataset)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"case": key, "verdict": row.verdict, "timings": row.timings, "total": row.seconds, "checker": chk,
            "params": row.params, "depth": row.depth, "max_bits": row.max_bits, "float64_s": t_float,
            "float64_right": ok, "N": len(built.dataset), "maxrss_mib": maxrss}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="nt1000,nt10000,s2s1000")
    ap.add_argument("--checker", default="auto", choices=["auto", "pure", "fast"])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(run_case(a.one, a.checker), default=str))
        return
    for key in a.cases.split(","):
        p = subprocess.run([sys.executable, __file__, "--one", key, "--checker", a.checker],
                           capture_output=True, text=True)
        if p.returncode:
            print(f"{key}: failed\n{p.stderr}")
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        tm, tot = r["timings"], r["total"]
        share = ", ".join(f"{k} {v:.1f} s ({100 * v / tot:.0f} %)" for k, v in tm.items())
        print(f"{key}: {r['verdict']} ({r['checker']} checker), N = {r['N']}, {r['params']:,} params, "
              f"depth {r['depth']}, {r['max_bits']} max bits")
        print(f"  total {tot:.1f} s: {share}; peak RSS {r['maxrss_mib']:.0f} MiB")
        print(f"  float64 forward of the same weights: {r['float64_s'] * 1e3:.1f} ms, "
              f"{r['float64_right']}/{r['N']} examples right; exact certify / float64 = "
              f"{tot / r['float64_s']:.0f}x, exact forward / float64 = {tm['forward'] / r['float64_s']:.0f}x")


if __name__ == "__main__":
    main()
