"""Lower bounds at any scale (issue 13, item 7): time of ``bounds minw`` and ``bounds next-token``.

    python benchmarks/bounds_scale.py [--timeout 60] [--no-before] [--before-rev REV]

For n ∈ {8, 2048, 10^6} × N ∈ {10^3, 10^9, 10^15} it runs ``python -m exactmem bounds minw
--n n --N N`` (and ``bounds next-token --N N`` for each N) in a fresh process and prints the wall
time (process start included). "before" is the same command on the code of ``--before-rev``
(default: the last commit before the scans were replaced), extracted with ``git archive`` into
a temporary directory; runs longer than ``--timeout`` seconds are stopped and shown as
"> T". Where both finish, the ratio before/after and whether the answers (the minimal W
lines) agree are printed. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEFORE_REV = "51093f50d85aca0d898ec08d6f9c3ca0ae5dbeed"  # scans: min_W_scan, doubling over L with Σ factors
NS = (8, 2048, 10 ** 6)
NS_BIG = (10 ** 3, 10 ** 9, 10 ** 15)
ANSWER = re.compile(r"^\* (min W[^:]*|attained by|minimal parameter count[^:]*): (.*)$", re.M)


def _count(x: int) -> str:
    k = len(str(x)) - 1
    return f"10^{k}" if x == 10 ** k else str(x)


def _short(key: str) -> str:
    """A short name for an answer line ("" to leave it out)."""
    for head, short in (("min W (96)", "W (96)"), ("min W (90)", "W (90)"), ("min W, sign-count", "sign-count"),
                        ("min W, GJ", "GJ")):
        if key.startswith(head):
            return short
    return ""


def run(args, pythonpath: str, timeout: float):
    """(seconds or None if stopped, the answer lines) of ``python -m exactmem bounds ARGS``."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    t = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-m", "exactmem", "bounds", *args], capture_output=True, text=True,
                             env=env, timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return None, None
    dt = time.perf_counter() - t
    if out.returncode != 0:
        return dt, [f"exit {out.returncode}: {out.stderr.strip()[-200:]}"]
    return dt, ANSWER.findall(out.stdout)


def old_tree(rev: str, into: str):
    """The package at ``rev`` in a directory, or None (no git, unknown revision)."""
    try:
        arch = subprocess.run(["git", "-C", ROOT, "archive", rev, "exactmem"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", into], input=arch.stdout, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a 'before' run is stopped")
    ap.add_argument("--no-before", action="store_true", help="time the current code only")
    ap.add_argument("--before-rev", default=BEFORE_REV)
    a = ap.parse_args()
    cases = [("minw", ["minw", "--n", str(n), "--N", str(N)], n, N) for n in NS for N in NS_BIG]
    cases += [("next-token", ["next-token", "--N", str(N)], None, N) for N in NS_BIG]
    with tempfile.TemporaryDirectory() as tmp:
        before = None if a.no_before else old_tree(a.before_rev, tmp)
        if not a.no_before and before is None:
            print(f"(no 'before': git archive {a.before_rev} failed)\n")
        print("| command | n | N | before (s) | after (s) | before / after | same answer | answer (after) |")
        print("|---|---|---|---|---|---|---|---|")
        for name, args, n, N in cases:
            t1, ans1 = run(args, ROOT, 600)
            t0, ans0 = run(args, before, a.timeout) if before else (None, None)
            b = "—" if before is None else (f"> {a.timeout:g}" if t0 is None else f"{t0:.2f}")
            ratio = f"{t0 / t1:.1f}×" if t0 is not None and t1 else "—"
            same = "—" if ans0 is None else ("yes" if ans0 == ans1 else "NO")
            shown = "; ".join(f"{_short(k)} {v}" for k, v in (ans1 or []) if _short(k)) or "?"
            print(f"| {name} | {'—' if n is None else _count(n)} | {_count(N)} | {b} | "
                  f"{'> 600' if t1 is None else f'{t1:.2f}'} | {ratio} | {same} | {shown} |", flush=True)


if __name__ == "__main__":
    main()
