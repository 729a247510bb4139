"""Benchmark: wall time of a bit-precision sweep with 1 and with 2 worker processes.

Runs the same sweep (default: the Õ(√N) memorizer ``vardi.c1``, 1-D line points, C = 16,
N = 100, 1,000, 10,000, seed 0; weight quantization float and fixed, the four named
floating-point formats) twice, each into a fresh temporary directory, once with
``--workers 1`` and once with ``--workers 2``; prints both wall times, their ratio, and
checks that the two result documents are identical. Nothing is asserted about timings.

Points are the unit of parallel work, so the slowest point (here N = 10,000, float
quantization) bounds the gain; ``--seeds 0,1`` gives the workers two such points. The load
average is printed too (timings on a shared machine vary).

Usage: ``python benchmarks/sweep.py [--quick] [--param N=100,1000,10000] [--seeds 0] [--proof proofs/vardi.py]
[--theorem vardi.c1] [--instance N4096-line-C16] [--models float,fixed,arith] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.sweep import SweepSpec, parse_param, parse_values, run_sweep, sweep_document  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proof", default=os.path.join(ROOT, "proofs", "vardi.py"))
    ap.add_argument("--theorem", default="vardi.c1")
    ap.add_argument("--instance", default="N4096-line-C16")
    ap.add_argument("--param", action="append", default=None)
    ap.add_argument("--models", default="float,fixed,arith")
    ap.add_argument("--seeds", default="0", help="seeds (default 0); two seeds give the workers balanced work")
    ap.add_argument("--quick", action="store_true", help="N = 100, 1,000 only")
    ap.add_argument("--keep", default=None, help="keep the two sweep directories under DIR")
    args = ap.parse_args(argv)
    params = args.param or (["N=100,1000"] if args.quick else ["N=100,1000,10000"])
    spec = SweepSpec(args.proof, theorems=[args.theorem], instances=[args.instance],
                     params=[parse_param(p) for p in params], models=args.models.split(","),
                     seeds=parse_values(args.seeds))
    base = args.keep or tempfile.mkdtemp(prefix="exactmem-sweep-bench-")
    times, docs = {}, {}
    print(f"sweep {args.theorem} [{args.instance}] {' '.join(params)}, models {args.models}, seeds {args.seeds}; "
          f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    for workers in (1, 2):
        out = os.path.join(base, f"workers{workers}")
        if os.path.exists(out):
            shutil.rmtree(out)
        t = time.perf_counter()
        run = run_sweep(spec, out, workers=workers, quiet=True)
        times[workers] = time.perf_counter() - t
        doc = sweep_document(run.records)
        docs[workers] = [json.dumps(p, sort_keys=True) for p in doc["points"]]
        per = sorted(((r["seconds"], r["point"]["params"].get("N"), r["point"]["task"]) for r in run.records),
                     reverse=True)
        print(f"  --workers {workers}: {times[workers]:.1f} s wall ({run.ran} points, {sum(s for s, _, _ in per):.1f} s "
              f"summed; slowest: " + ", ".join(f"N={n} {t} {s:.1f} s" for s, n, t in per[:3]) + ")")
        if workers == 1:
            crit = per[0][0] if per else 0.0
            print(f"  (no number of workers can beat the slowest point: best possible ratio with 2 workers "
                  f"{times[1] / max(crit, times[1] / 2):.2f}x)")
    same = docs[1] == docs[2]
    print(f"  ratio 1 worker / 2 workers: {times[1] / times[2]:.2f}x; results identical: {same}")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
