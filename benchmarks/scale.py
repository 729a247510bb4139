"""Scale rows of issues 13 and 27: Kajitsuka & Sato next-token at N = 10^4, 10^5 (and 10^6), 1 and 2 workers.

Each row is one fresh ``python -m exactmem certify proofs/kajitsuka.py --size large|xlarge
--workers W`` under GNU time: the stage times (build, forward, write, check) from ``--json``,
the wall time, and the peak resident memory of the largest single process of the run (the
certify process, Dask nannies and workers: GNU time's maxrss covers waited-for descendants).
Then the growth exponents of forward, check and wall time between consecutive sizes (for each
worker count) and, over three sizes or more, the least-squares exponent of all of them; the ratios 1 worker / 2 workers, and the library's cost against the CLI path
(``benchmarks/library_vs_cli.py``) at N = 10^4.

    python benchmarks/scale.py                  # N = 10^4 and 10^5, workers 1 and 2 (about 25 minutes)
    python benchmarks/scale.py --sizes large    # N = 10^4 only
    python benchmarks/scale.py --sizes large,xlarge,xxlarge --workers 2 --no-library   # 10^4 -> 10^6 (about 40 minutes)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
N_OF = {"large": 10_000, "xlarge": 100_000, "xxlarge": 1_000_000}  # xxlarge: when the proof file has it


def run(size: str, workers: int) -> dict:
    out = tempfile.mkdtemp(prefix=f"scale-{size}-{workers}-")
    cmd = ["/usr/bin/time", "-f", "TIME %e %M", sys.executable, "-m", "exactmem", "certify", "proofs/kajitsuka.py",
           "--size", size, "--only", f"kajitsuka.next_token/N{N_OF[size]}-n8-d16-C4", "--workers", str(workers),
           "--json", "--quiet", "--out", out]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    line = [x for x in r.stderr.splitlines() if x.startswith("TIME ")][-1].split()
    rows = json.loads(r.stdout) if r.stdout.strip() else []
    shutil.rmtree(out, ignore_errors=True)
    row = rows[0] if rows else {"verdict": f"exit {r.returncode}", "timings": {}}
    return {"size": size, "N": N_OF[size], "workers": workers, "verdict": row["verdict"], "wall": float(line[1]),
            "rss_mb": int(line[2]) / 1024, **{k: row["timings"].get(k) for k in ("build", "forward", "write", "check")}}


def slope(ns, ts) -> float:
    """The least-squares exponent a of t ~ c N^a (a line through the points (log N, log t))."""
    xs, ys = [math.log(n) for n in ns], [math.log(t) for t in ts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="large,xlarge")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--no-library", action="store_true", help="skip the library / CLI ratio")
    args = ap.parse_args()
    if not shutil.which("/usr/bin/time"):
        sys.exit("needs GNU time at /usr/bin/time (apt-get install time)")
    res = []
    print("| N | workers | verdict | build s | forward s | write s | check s | wall s | peak RSS (largest process) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        for w in map(int, args.workers.split(",")):
            r = run(size, w)
            res.append(r)
            f = lambda k: f"{r[k]:.1f}" if r[k] is not None else "—"  # noqa: E731
            print(f"| {r['N']:,} | {w} | {r['verdict']} | {f('build')} | {f('forward')} | {f('write')} | "
                  f"{f('check')} | {r['wall']:.1f} | {r['rss_mb']:,.0f} MB |", flush=True)
    sizes = args.sizes.split(",")
    for w in map(int, args.workers.split(",")):  # growth exponents between consecutive sizes
        pts = [r for s in sizes for r in res if r["size"] == s and r["workers"] == w and r["verdict"] == "CERTIFIED"]
        for a, b in zip(pts, pts[1:]):
            k = math.log(b["N"] / a["N"])
            ex = ", ".join(f"{key} N^{math.log(b[key] / a[key]) / k:.2f}" for key in ("forward", "check", "wall")
                           if a.get(key) and b.get(key))
            print(f"growth {a['N']:,} -> {b['N']:,} ({w} worker{'s' if w > 1 else ''}): {ex}, "
                  f"memory x{b['rss_mb'] / a['rss_mb']:.1f}")
        if len(pts) >= 3:
            fit = ", ".join(f"{key} N^{slope([p['N'] for p in pts], [p[key] for p in pts]):.2f}"
                            for key in ("forward", "check", "wall", "rss_mb") if all(p.get(key) for p in pts))
            print(f"growth {pts[0]['N']:,} -> {pts[-1]['N']:,} ({w} worker{'s' if w > 1 else ''}), "
                  f"least squares over {len(pts)} sizes: {fit}")
    for size in args.sizes.split(","):
        one = [r for r in res if r["size"] == size and r["workers"] == 1]
        two = [r for r in res if r["size"] == size and r["workers"] == 2]
        if one and two and two[0]["check"] and one[0]["check"]:
            print(f"N = {N_OF[size]:,}: check 1 worker / 2 workers = {one[0]['check'] / two[0]['check']:.2f}, "
                  f"wall = {one[0]['wall'] / two[0]['wall']:.2f}")
    if not args.no_library:
        r = subprocess.run([sys.executable, os.path.join(HERE, "library_vs_cli.py"), "--N", "10000"], cwd=ROOT,
                           capture_output=True, text=True)
        print("\nlibrary vs CLI (benchmarks/library_vs_cli.py, N = 10,000):")
        print(r.stdout.strip() or r.stderr.strip()[-500:])


if __name__ == "__main__":
    main()
