"""Generate the size table and plot of ``docs/kajitsuka.md`` (never typed by hand).

For N = 10 … 10,000 sequences (n = 8, d = 16, C = 4, seed 0, the generator of
``proofs/kajitsuka.py``): the Theorem B.1 Transformer is built and measured (stored and
non-zero parameters, depth = ReLU + attention layers, max bits per weight, total bits), next to

* the paper's formulas as rigorous lower enclosures, log₂ (the numbers the claims use): the
  per-stage sum of eq. (110) and the theorem form (41) with R = 400·√(3d)·n³·r·N⁵·δ⁻¹·π; the
  bit bound (42); the explicit parameter bound 14(d + 1) + 210·D + 12;
* the O(N) baseline: ``relu_interpolation.steps`` on the N' context ids in R³
  (3 + 6(N' − 1) + 1 parameters, width 2(N' − 1));
* the information bound N·log₂C bits.

With ``--write`` the Markdown replaces the block between ``<!-- kajitsuka-table:begin -->``
and ``<!-- kajitsuka-table:end -->`` in ``docs/kajitsuka.md`` and the plot is written to
``docs/img/kajitsuka_sizes.png`` (matplotlib needed).

Usage: ``python benchmarks/kajitsuka_table.py [--write] [--max-n 10000]``
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.model import measure  # noqa: E402

BEGIN, END = "<!-- kajitsuka-table:begin -->", "<!-- kajitsuka-table:end -->"
NS = [10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000]


def _proof():
    return importlib.import_module("exactmem.proofs.kajitsuka")  # proofs/kajitsuka.py re-exports it


PK = _proof()
NT = [t for t in PK.THEOREMS if t.name == "kajitsuka.next_token"][0]


def row(N, seed=0):
    t0 = time.perf_counter()
    built = NT.build({"N": N, "n": 8, "d": 16, "C": 4}, seed)
    secs = time.perf_counter() - t0
    m = measure(built.model)
    by = {}
    for c in built.claims:
        by.setdefault((c.quantity, c.op), []).append(c.bound)
    depth_b = sorted(by.get(("depth", "<="), [None]))
    bits_b = sorted(by.get(("max_bits", "<="), [None]))
    info = built.info
    Nc = info["F2 N (contexts)"]
    return {
        "N": N, "N'": info["distinct multisets N'"], "|A|": info["witness set |A|"], "V": info["distinct tokens V"],
        "params": m.n_params, "nonzero": m.n_nonzero, "width": m.width, "depth": m.depth,
        "depth (110) stages": depth_b[0], "depth (41)": depth_b[-1], "max bits": m.max_bits,
        "bits (111) stages": bits_b[0], "bits (42)": bits_b[-1], "total bits": m.total_bits,
        "param bound": by[("n_params", "<=")][0] if ("n_params", "<=") in by else None,
        "O(N) baseline params": 3 + 6 * (Nc - 1) + 1, "N log2 C": 2 * N, "build s": round(secs, 1),
    }


def markdown(rows):
    cols = ["N", "N'", "|A|", "V", "params", "nonzero", "width", "depth", "depth (110) stages", "depth (41)",
            "max bits", "bits (111) stages", "bits (42)", "total bits", "param bound", "O(N) baseline params",
            "N log2 C"]
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join("–" if r[c] is None else f"{int(r[c]):,}" for c in cols) + " |")
    return "\n".join(out)


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    Ns = [r["N"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ax = axes[0]
    ax.loglog(Ns, [r["params"] for r in rows], "o-", label="stored parameters")
    ax.loglog(Ns, [r["nonzero"] for r in rows], "s-", label="non-zero parameters")
    ax.loglog(Ns, [r["O(N) baseline params"] for r in rows], "^--", label="O(N) baseline (steps)")
    k = rows[-1]["params"] / math.sqrt(Ns[-1])
    ax.loglog(Ns, [k * math.sqrt(x) for x in Ns], ":", color="gray", label="∝ √N")
    ax.loglog(Ns, Ns, "-.", color="black", label="N")
    ax.set_xlabel("N (sequences, n = 8, d = 16, C = 4)")
    ax.set_ylabel("parameters")
    ax.legend(fontsize=8)
    ax.set_title("Theorem B.1: parameters")
    ax = axes[1]
    ax.loglog(Ns, [r["total bits"] for r in rows], "o-", label="total bits")
    ax.loglog(Ns, [r["N log2 C"] for r in rows], "-.", color="black", label="N·log₂C (information bound)")
    k = rows[-1]["total bits"] / Ns[-1]
    ax.loglog(Ns, [k * x for x in Ns], ":", color="gray", label="∝ N")
    ax.set_xlabel("N")
    ax.set_ylabel("bits")
    ax.legend(fontsize=8)
    ax.set_title("Theorem B.1: total bits")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--max-n", type=int, default=100000)
    a = ap.parse_args(argv)
    rows = []
    for N in [x for x in NS if x <= a.max_n]:
        rows.append(row(N))
        print(f"N = {N}: built in {rows[-1]['build s']} s", file=sys.stderr)
    md = markdown(rows)
    print(md)
    if a.write:
        doc = os.path.join(ROOT, "docs", "kajitsuka.md")
        text = open(doc, encoding="utf-8").read()
        i, j = text.index(BEGIN), text.index(END)
        text = text[:i + len(BEGIN)] + "\n" + md + "\n" + text[j:]
        open(doc, "w", encoding="utf-8").write(text)
        plot(rows, os.path.join(ROOT, "docs", "img", "kajitsuka_sizes.png"))
        print("wrote docs/kajitsuka.md and docs/img/kajitsuka_sizes.png", file=sys.stderr)


if __name__ == "__main__":
    main()
