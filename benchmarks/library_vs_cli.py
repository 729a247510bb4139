"""Benchmark: the library (``em.certify``) against the CLI's pipeline on the same instance.

Kajitsuka & Sato next-token, n = 8, d = 16, C = 4, seed 0, N = 1,000 and 10,000 (the
``N1000-n8-d16-C4`` / ``N10000-n8-d16-C4`` instances of ``proofs/kajitsuka.py``):

* **library**: ``em.kajitsuka.next_token(em.sequences(N=N, n=8, d=16, C=4))`` (build), then
  ``em.certify(net)`` with every default (``checker="auto"``, ``backend="auto"``, in memory);
* **pipeline**: ``exactmem.pipeline.certify.certify_instance`` on the proof file's instance, in
  process, with the checker ``python -m exactmem certify --size medium|large`` picks (``auto``:
  fast), writing the certificate to a temporary directory and re-reading it — the path of
  ``python -m exactmem certify`` without the interpreter start-up.

Each measurement runs in a fresh Python process (no shared caches, a clean peak RSS), the two
paths alternately. Printed: build, certify (forward + write + check for the pipeline) and total
seconds, the peak RSS, both verdicts and measured sizes (they must agree: same instance), and
the ratios library / pipeline — the target is total ≤ 1.5.

Usage: ``python benchmarks/library_vs_cli.py [--N 1000,10000] [--repeat R]``
(about 2 minutes for the default on the 2-core machine).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_TOK, D, C, SEED = 8, 16, 4, 0


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_library(N: int) -> dict:
    import exactmem as em

    t0 = time.perf_counter()
    net = em.kajitsuka.next_token(em.sequences(N=N, n=N_TOK, d=D, C=C, seed=SEED), seed=SEED)
    t1 = time.perf_counter()
    v = em.certify(net)
    t2 = time.perf_counter()
    from exactmem.pipeline.certify import auto_checker

    return {"path": "library", "N": N, "build": t1 - t0, "certify": t2 - t1, "total": t2 - t0,
            "verdict": v.status, "measured": v.measured, "checker": auto_checker(net.model, len(net.dataset)),
            "rss_mb": _rss_mb()}


def run_pipeline(N: int) -> dict:
    from exactmem.pipeline.certify import certify_instance, resolve_checker
    from exactmem.proof import Instance
    from exactmem.proofs import kajitsuka

    thm = next(t for t in kajitsuka.THEOREMS if t.name == "kajitsuka.next_token")
    name = f"N{N}-n{N_TOK}-d{D}-C{C}"
    inst = next((i for i in thm.instances if i.name == name), None)
    if inst is None:
        inst = Instance(name, {"N": N, "n": N_TOK, "d": D, "C": C, "setting": "next_token"}, ("large",),
                        engine=kajitsuka.ENGINE)
    size = "small" if "small" in inst.sizes and len(inst.sizes) == 1 else ("medium" if "medium" in inst.sizes
                                                                              else "large")
    checker = resolve_checker("auto", size)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        row = certify_instance(thm, inst, SEED, out, quiet=True, checker=checker)
        t = time.perf_counter() - t0
    tm = row.timings
    measured = {"n_params": row.params, "width": row.width, "depth": row.depth, "max_bits": row.max_bits,
                "total_bits": row.total_bits}
    return {"path": "pipeline", "N": N, "build": tm["build"], "certify": tm["forward"] + tm["write"] + tm["check"],
            "total": t, "verdict": row.verdict, "measured": measured, "checker": checker, "size": size,
            "timings": tm, "rss_mb": _rss_mb()}


def _child(which: str, N: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", which, "--N", str(N)], cwd=str(ROOT),
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{which} N={N} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--N", default="1000,10000", help="comma-separated dataset sizes (default 1000,10000)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each path per N (best time kept)")
    ap.add_argument("--child", choices=("library", "pipeline"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(x) for x in args.N.split(",") if x.strip()]
    if args.child:
        fn = run_library if args.child == "library" else run_pipeline
        print(json.dumps(fn(sizes[0])))
        return
    print(f"Kajitsuka & Sato next-token, n = {N_TOK}, d = {D}, C = {C}, seed {SEED}; one fresh process per run; "
          f"{os.cpu_count()} CPUs")
    print("| N | path | checker | build (s) | certify (s) | total (s) | peak RSS (MB) | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for N in sizes:
        best = {}
        for _ in range(args.repeat):
            for which in ("pipeline", "library"):
                r = _child(which, N)
                if which not in best or r["total"] < best[which]["total"]:
                    best[which] = r
        lib, cli = best["library"], best["pipeline"]
        for r in (cli, lib):
            print(f"| {N:,} | {r['path']} | {r['checker']} | {r['build']:.2f} | {r['certify']:.2f} | "
                  f"{r['total']:.2f} | {r['rss_mb']:.0f} | {r['verdict']} |")
        same = all(lib["measured"].get(k) == v for k, v in cli["measured"].items())
        if not same or lib["verdict"] != cli["verdict"]:
            raise SystemExit(f"N={N}: the two paths disagree: {lib['measured']} vs {cli['measured']}")
        ratios.append((N, lib["total"] / cli["total"], lib["certify"] / cli["certify"]))
    print()
    for N, total, cert in ratios:
        ok = "within" if total <= 1.5 else "ABOVE"
        print(f"N = {N:,}: library / pipeline = {total:.2f} (total), {cert:.2f} (certify only: forward + "
              f"certificate + check) — {ok} the 1.5 target; same verdict and measured sizes")


if __name__ == "__main__":
    main()
