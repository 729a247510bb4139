"""Generate the size table of ``docs/vardi.md`` (never typed by hand).

For N = 2^4 … 2^16 (``--max-exp``): the Lemma C.1 network on the ``line`` data of
``proofs/vardi.py`` (1-D, C = 16, seed 0), built and certified through the normal pipeline
(compress engine, fast checker; ``--no-certify`` to skip), next to

* the O(N) baseline of ``proofs/relu_interpolation.py`` (``relu_interpolation.steps``, built on
  the same points and labels and measured),
* the information bound N·log₂C bits (what any memorizer of all C^N labelings must store),
* the paper's bounds: eq. (110) (depth) and eq. (111) (bits per weight), log₂, as rigorous
  lower enclosures (the numbers the claims use).

Rows beyond ``--max-exp`` up to ``--extra-exp`` are built and measured only (not certified),
to locate where the stored parameter count drops below N. The script prints the Markdown and,
with ``--write``, replaces the block between ``<!-- vardi-table:begin -->`` and
``<!-- vardi-table:end -->`` in ``docs/vardi.md``.

Usage: ``python benchmarks/vardi_table.py [--write] [--max-exp 16] [--extra-exp 20] [--no-certify]``
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.pipeline.certify import certify_instance  # noqa: E402
from exactmem.constructions import relu_interpolation
from exactmem.constructions.vardi import memorizer as vardi  # noqa: E402
from exactmem.model import measure  # noqa: E402
from exactmem.proof import Instance  # noqa: E402

BEGIN, END = "<!-- vardi-table:begin -->", "<!-- vardi-table:end -->"


def _proof():
    return importlib.import_module("exactmem.proofs.vardi")  # proofs/vardi.py re-exports it


PV = _proof()
C1 = [t for t in PV.THEOREMS if t.name == "vardi.c1"][0]
C = 16


def row(N, seed, out, certify):
    inst = Instance(f"N{N}-line-C16", {"N": N, "C": C}, ("large",), PV.ENGINE)
    t0 = time.perf_counter()
    built = C1.build(dict(inst.params), seed)
    m = measure(built.model)
    verdict, secs = "built only", None
    if certify:
        r = certify_instance(C1, inst, seed, out, quiet=True, checker="fast")
        verdict, secs = r.verdict, r.seconds
    else:
        secs = time.perf_counter() - t0
    pts = [x[0] for x in built.dataset.inputs]
    labels = [y[0] for y in built.dataset.labels]
    base, _ = relu_interpolation.build_steps(pts, labels, seed)
    b = measure(base)
    Nn, V, d, Cc, r2, delta2, R2 = PV.lemma_quantities(built.info)
    d110 = PV.floor_lo(vardi.eq110_depth(N, C, R2))
    b111 = PV.floor_lo(vardi.eq111_bits(N, C, R2, r2, delta2, V, d))
    lay = built.info["layout"]
    return {"N": N, "g": lay.g, "m": lay.m, "rho": lay.rho, "params": m.n_params, "nonzero": m.n_nonzero,
            "depth": m.relu_depth, "d110": d110, "width": m.width, "max_bits": m.max_bits, "b111": b111,
            "total_bits": m.total_bits, "base_params": b.n_params, "base_bits": b.total_bits, "info": N * 4,
            "verdict": verdict, "secs": secs}


def fmt(rows):
    head = ("| N | g | m | ρ | stored params | nonzero | ReLU depth | (110) − 1 | width | max bits/weight | "
            "(111) | total bits | baseline params | baseline total bits | N·log₂C | verdict (s) |")
    sep = "|" + "---|" * 16
    out = [head, sep]
    for r in rows:
        v = f"{r['verdict']} ({r['secs']:.1f})" if r["verdict"] != "built only" else "built only"
        out.append(f"| {r['N']:,} | {r['g']} | {r['m']} | {r['rho']} | {r['params']:,} | {r['nonzero']:,} | "
                   f"{r['depth']:,} | {r['d110'] - 1:,} | {r['width']} | {r['max_bits']:,} | {r['b111']:,} | "
                   f"{r['total_bits']:,} | {r['base_params']:,} | {r['base_bits']:,} | {r['info']:,} | {v} |")
    return "\n".join(out)


def crossings(rows):
    """Sentences: first tabulated N where params < baseline, < N; nonzero < N."""
    def first(pred):
        hit = [r["N"] for r in rows if pred(r)]
        return f"N = {hit[0]:,}" if hit else f"no tabulated N (up to {rows[-1]['N']:,})"

    below_base = first(lambda r: r["params"] < r["base_params"])
    below_n = first(lambda r: r["params"] < r["N"])
    return (f"Stored parameters (zeros included) drop below the O(N) baseline's at "
            f"{below_base} and below N at {below_n}; "
            f"nonzero parameters drop below N at {first(lambda r: r['nonzero'] < r['N'])}. "
            + ("Total bits stay above the information bound N·log₂C at every tabulated N "
               if all(r["total_bits"] >= r["info"] for r in rows) else
               f"Total bits drop below N·log₂C at {first(lambda r: r['total_bits'] < r['info'])} ")
            + f"(ratio {rows[0]['total_bits'] / rows[0]['info']:.0f}× at N = {rows[0]['N']:,}, "
            f"{rows[-1]['total_bits'] / rows[-1]['info']:.0f}× at N = {rows[-1]['N']:,}).")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-exp", type=int, default=4)
    ap.add_argument("--max-exp", type=int, default=16)
    ap.add_argument("--extra-exp", type=int, default=20, help="build-only rows up to 2^this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-certify", action="store_true")
    ap.add_argument("--write", action="store_true", help="replace the table in docs/vardi.md")
    args = ap.parse_args(argv)
    out = tempfile.mkdtemp(prefix="vardi-table-")
    rows = []
    for e in range(args.min_exp, max(args.max_exp, args.extra_exp) + 1):
        certify = e <= args.max_exp and not args.no_certify
        rows.append(row(2 ** e, args.seed, out, certify))
        print(f"N = 2^{e}: {rows[-1]['verdict']}", file=sys.stderr, flush=True)
    text = (f"Generated by `python benchmarks/vardi_table.py --write` (seed {args.seed}; 1-D `line` data, C = {C}; "
            f"rows up to 2^{args.max_exp} certified with the fast checker, rows above built and measured only).\n\n"
            + fmt(rows) + "\n\n" + crossings(rows) + "\n")
    print(text)
    if args.write:
        path = os.path.join(ROOT, "docs", "vardi.md")
        doc = open(path, encoding="utf-8").read()
        a, b = doc.index(BEGIN) + len(BEGIN), doc.index(END)
        with open(path, "w", encoding="utf-8") as f:
            f.write(doc[:a] + "\n" + text + doc[b:])
        print(f"wrote the table into {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
