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
    python benchmarks/scale.py --sizes large,xlarge,xxlarge --workers 2 --no-library   # 10^4 -> 10^6 (over an hour)
    python benchmarks/scale.py --load benchmarks/scale-rows.json --no-library --sizes "" # the recorded rows and their growth
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


def command(size: str, workers: int, out: str) -> list:
    """The measured command: one fresh ``certify`` process under GNU time."""
    return ["/usr/bin/time", "-f", "TIME %e %M", sys.executable, "-m", "exactmem", "certify", "proofs/kajitsuka.py",
            "--size", size, "--only", f"kajitsuka.next_token/N{N_OF[size]}-n8-d16-C4", "--workers", str(workers),
            "--json", "--quiet", "--out", out]


def run(size: str, workers: int) -> dict:
    out = tempfile.mkdtemp(prefix=f"scale-{size}-{workers}-")
    r = subprocess.run(command(size, workers, out), cwd=ROOT, capture_output=True, text=True)
    shutil.rmtree(out, ignore_errors=True)
    return row_of(size, workers, r.stdout, r.stderr, r.returncode)


def row_of(size: str, workers: int, stdout: str, stderr: str, returncode: int = 0) -> dict:
    """A table row from the command's ``--json`` output and GNU time's line on stderr."""
    line = [x for x in stderr.splitlines() if x.startswith("TIME ")][-1].split()
    rows = json.loads(stdout) if stdout.strip() else []
    row = rows[0] if rows else {"verdict": f"exit {returncode}", "timings": {}}
    return {"size": size, "N": N_OF[size], "workers": workers, "verdict": row["verdict"], "wall": float(line[1]),
            "rss_mb": int(line[2]) / 1024, **{k: row["timings"].get(k) for k in ("build", "forward", "write", "check")}}


def show(r: dict) -> None:
    f = lambda k: f"{r[k]:.1f}" if r.get(k) is not None else "—"  # noqa: E731
    print(f"| {r['N']:,} | {r['workers']} | {r['verdict']} | {f('build')} | {f('forward')} | {f('write')} | "
          f"{f('check')} | {r['wall']:.1f} | {r['rss_mb']:,.0f} MB |", flush=True)


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
    ap.add_argument("--load", metavar="FILE", help="rows measured earlier (a --save file): shown and used for "
                                                   "the growth exponents, not re-run")
    ap.add_argument("--save", metavar="FILE", help="write the rows (loaded and measured) to FILE (JSON)")
    ap.add_argument("--import-run", nargs=4, metavar=("SIZE", "WORKERS", "STDOUT", "STDERR"),
                    help="a row from a run of the same command made by hand (its --json output and the "
                         "stderr with GNU time's TIME line), e.g. N = 10^6; then --save it")
    args = ap.parse_args()
    res = json.load(open(args.load)) if args.load else []
    if args.import_run:
        size, w, so, se = args.import_run
        res = [r for r in res if (r["size"], r["workers"]) != (size, int(w))] + \
            [row_of(size, int(w), open(so).read(), open(se).read())]
        args.sizes, args.workers = "", ""
    elif not shutil.which("/usr/bin/time"):
        sys.exit("needs GNU time at /usr/bin/time (apt-get install time)")
    print("| N | workers | verdict | build s | forward s | write s | check s | wall s | peak RSS (largest process) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in res:
        show(r)
    for size in filter(None, args.sizes.split(",")):
        for w in map(int, filter(None, args.workers.split(","))):
            res = [r for r in res if (r["size"], r["workers"]) != (size, w)] + [run(size, w)]
            show(res[-1])
    if args.save:
        with open(args.save, "w") as f:
            json.dump(res, f, indent=1)
    sizes = sorted({r["size"] for r in res}, key=lambda s: N_OF[s])
    for w in sorted({r["workers"] for r in res}):  # growth exponents between consecutive sizes
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
    for size in sizes:
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
