"""Benchmark: the Õ(√N) memorizer (Kajitsuka & Sato Lemma C.1 / Vardi et al.) built and certified
exactly, against float64 evaluation of the same weights.

For each N in ``--sizes`` (default 4096 and 65536; 1-D inputs, C = 16 classes, no extra points,
seeded data exactly as ``proofs/vardi.py``'s ``line`` instances):

* build + certify through the normal pipeline (``certify_instance``: construction, exact
  forward pass with the ``compress`` engine, certificate written to ``--out``, re-read and
  checked by the fast exact checker), with the time of each phase;
* the float64 forward pass of the same weights (NumPy; weights converted beforehand, not
  timed; a weight beyond float64's range becomes ±inf; best of 3) and how many of its outputs
  equal the labels;
* the ratio exact / float64 (whole build+certify, and forward pass alone).

Then the float64 scan: N = 2^4, 2^5, … until float64 gives a wrong label, then every N
between the last good power of two and that one: the first N whose float64 evaluation
misses a label (the data generator is the same, so each N is its own dataset).

Optional: ``--limbs-upto N`` also times the ``limbs`` engine's forward pass for sizes ≤ N,
``--pure-upto N`` the pure checker. Nothing is asserted; timings are printed.

Usage: ``python benchmarks/vardi.py [--sizes 4096 65536] [--out DIR] [--seed S] [--no-scan]``
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.kernel.checker import check_certificate, load_certificate  # noqa: E402
from exactmem.pipeline.certify import certify_instance  # noqa: E402
from exactmem.model import Affine, forward, measure  # noqa: E402
from exactmem.proof import Instance  # noqa: E402


def load_proof():
    return importlib.import_module("exactmem.proofs.vardi")  # proofs/vardi.py re-exports it


PV = load_proof()
C1 = [t for t in PV.THEOREMS if t.name == "vardi.c1"][0]


def _f(q) -> float:
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def float_weights(model):
    """Each Affine layer as float64 arrays (W, b or None, relu)."""
    out = []
    for layer in model.layers:
        if not isinstance(layer, Affine):
            raise TypeError("the Vardi network has affine layers only")
        W = np.array([[_f(x) for x in row] for row in layer.W], dtype=np.float64)
        b = None if layer.b is None else np.array([_f(x) for x in layer.b], dtype=np.float64)[:, None]
        out.append((W, b, layer.relu))
    return out


def float_forward(fw, X):
    H = X
    with np.errstate(all="ignore"):
        for W, b, relu in fw:
            H = W @ H
            if b is not None:
                H = H + b
            if relu:
                H = np.maximum(H, 0.0)
    return H


def float_eval(model, ds, repeat=3):
    """(best time, number of labels float64 gets exactly right)."""
    fw = float_weights(model)
    X = np.array([[_f(v) for v in seq[-1]] for seq in ds.inputs], dtype=np.float64).T
    best, H = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        H = float_forward(fw, X)
        best = min(best, time.perf_counter() - t)
    want = np.array([_f(y[0]) for y in ds.labels])
    return best, int(np.sum(H[0] == want))


def certify_n(N, seed, out, checker="fast"):
    inst = Instance(f"N{N}-line-C16", {"N": N, "C": 16}, ("large",), PV.ENGINE)
    row = certify_instance(C1, inst, seed, out, quiet=True, checker=checker)
    return inst, row


def bench_size(N, seed, out, limbs_upto, pure_upto):
    inst, row = certify_n(N, seed, out)
    built = C1.build(dict(inst.params), seed)  # the same model and data again, for float64
    t_float, ok = float_eval(built.model, built.dataset)
    tm = row.timings
    total = row.seconds
    print(f"\nN = {N}: {row.verdict} ({row.message})")
    print(f"  model: {row.params} stored parameters, width {row.width}, ReLU depth {row.depth}, "
          f"max {row.max_bits} bits per weight, {row.total_bits} bits in all; layout {built.info['layout']}")
    print(f"  exact build {tm['build']:.2f} s + forward ({row.engine}) {tm['forward']:.2f} s + write "
          f"{tm['write']:.2f} s + check ({row.checker}) {tm['check']:.2f} s = {total:.2f} s")
    print(f"  float64 forward of the same weights: {t_float * 1e3:.1f} ms; {ok}/{len(built.dataset)} labels right")
    print(f"  ratio exact build+certify / float64 forward: {total / t_float:.0f}x; "
          f"exact forward / float64 forward: {tm['forward'] / t_float:.0f}x")
    res = {"N": N, "total": total, "float": t_float, "ok": ok, **tm}
    if N <= limbs_upto:
        t = time.perf_counter()
        forward(built.model, built.dataset.inputs, backend="limbs")
        res["limbs"] = time.perf_counter() - t
        print(f"  limbs engine forward: {res['limbs']:.2f} s")
    if N <= pure_upto:
        t = time.perf_counter()
        v = check_certificate(load_certificate(row.path))
        res["pure"] = time.perf_counter() - t
        print(f"  pure checker: {v.status} in {res['pure']:.2f} s")
    return res


def float_scan(seed, top=16):
    """First N (same data generator) at which float64 evaluation gets a label wrong."""
    last_good = None
    for e in range(4, top + 1):
        N = 2 ** e
        built = C1.build({"N": N, "C": 16}, seed)
        _, ok = float_eval(built.model, built.dataset, repeat=1)
        m = measure(built.model)
        lay = built.info["layout"]
        print(f"  N = {N:6d}: float64 right on {ok:6d}/{N} labels (max weight bits {m.max_bits}, "
              f"g*rho = {lay.g * lay.rho})")
        if ok < N:
            lo = last_good + 1 if last_good else N
            for n in range(lo, N + 1):
                b = C1.build({"N": n, "C": 16}, seed)
                _, ok_n = float_eval(b.model, b.dataset, repeat=1)
                if ok_n < n:
                    mb = measure(b.model).max_bits
                    lay = b.info["layout"]
                    print(f"  first failure: N = {n} ({n - ok_n} of {n} labels wrong; g = {lay.g}, rho = {lay.rho}, "
                          f"u_j has g*rho = {lay.g * lay.rho} bits, max weight bits {mb})")
                    return n
            return N
        last_good = N
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[4096, 65536])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="certificate directory (default: a temporary one)")
    ap.add_argument("--limbs-upto", type=int, default=4096, help="also time the limbs engine up to this N")
    ap.add_argument("--pure-upto", type=int, default=4096, help="also time the pure checker up to this N")
    ap.add_argument("--no-scan", action="store_true", help="skip the float64 break scan")
    args = ap.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="vardi-bench-")
    print(f"Vardi / Kajitsuka & Sato Lemma C.1, 1-D points, C = 16, seed {args.seed}; certificates in {out}")
    for N in args.sizes:
        bench_size(N, args.seed, out, args.limbs_upto, args.pure_upto)
    if not args.no_scan:
        print("\nfloat64 scan (same construction, same data generator):")
        first = float_scan(args.seed)
        print(f"first N where float64 evaluation gives a wrong label: {first}")


if __name__ == "__main__":
    main()
