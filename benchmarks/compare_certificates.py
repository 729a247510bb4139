"""Are a proof file's certificates byte-identical between two versions of exactmem?

A restructuring (issue 34, "the house") must not change what ``certify`` writes. This script runs
``python -m exactmem certify PROOF --out DIR`` twice — once in a temporary git worktree of
``--before`` (a commit, default: the last commit before the move), once in this checkout — and
compares every certificate file byte for byte, and the set of file names.

    python benchmarks/compare_certificates.py                       # proofs/kajitsuka.py, small
    python benchmarks/compare_certificates.py --before HEAD~3 --proof proofs/relu_interpolation.py

Prints one line per differing or missing file and a summary; exits 0 only if every file is identical.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEFORE_THE_HOUSE = "53c9f95"  # main before issue 34's move


def certify(tree: str, proof: str, size: str, out: str) -> float:
    """Run certify with ``tree``'s exactmem first on the path; the seconds it took."""
    env = dict(os.environ, PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", proof, "--size", size, "--out", out, "--quiet"],
                       cwd=tree, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"certify failed in {tree} (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default=BEFORE_THE_HOUSE, help="the commit to compare with (default: %(default)s)")
    p.add_argument("--proof", default="proofs/kajitsuka.py")
    p.add_argument("--size", default="small")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = os.path.join(tmp, "before")
        subprocess.run(["git", "worktree", "add", "--detach", "-q", old_tree, args.before], cwd=ROOT, check=True)
        try:
            old_out, new_out = os.path.join(tmp, "old"), os.path.join(tmp, "new")
            t_old = certify(old_tree, args.proof, args.size, old_out)
            t_new = certify(ROOT, args.proof, args.size, new_out)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", old_tree], cwd=ROOT, check=False)
        old_files, new_files = set(os.listdir(old_out)), set(os.listdir(new_out))
        bad = [f"only before: {f}" for f in sorted(old_files - new_files)]
        bad += [f"only after: {f}" for f in sorted(new_files - old_files)]
        same = 0
        for f in sorted(old_files & new_files):
            if filecmp.cmp(os.path.join(old_out, f), os.path.join(new_out, f), shallow=False):
                same += 1
            else:
                bad.append(f"differs: {f}")
    for line in bad:
        print(line)
    print(f"{args.proof} --size {args.size}: {same} of {len(old_files | new_files)} certificate files byte-identical "
          f"between {args.before} ({t_old:.1f} s) and this checkout ({t_new:.1f} s)")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
