"""Exported float models mislabel once the construction needs more bits than the format has.

For Kajitsuka & Sato's next-token Transformer (n = 8, d = 16, C = 4, seed 0, the generator of
``proofs/kajitsuka.py``) at each N: the exact network's max bits per weight; then for
float16, float32 and float64 (``exactmem.export``):

* ``rounded``: weights not exactly representable (``overflow``: rounded to ±inf);
* ``float``: labels right when the rounded network is evaluated in that float arithmetic
  (``FloatNet``; an output that rounds to its label counts as right);
* ``exact``: labels right when the *rounded* weights are read back exactly
  (``exactmem.export.importer``) and evaluated in exact arithmetic — ``-`` when a weight overflowed
  (no exact model has an infinite weight).

Usage: ``python benchmarks/float_export.py [--N 5,10,30,100,300,1000] [--markdown]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import exactmem as em  # noqa: E402
from exactmem.export import FloatNet, float_accuracy, to_arrays  # noqa: E402
from exactmem.export.importer import from_arrays  # noqa: E402

DTYPES = ("float16", "float32", "float64")


def row(N: int) -> dict:
    data = em.sequences(N=N, n=8, d=16, C=4, seed=0)
    net = em.kajitsuka.next_token(data)
    m = em.measure(net.model)
    out = {"N": N, "max_bits": m.max_bits, "params": m.n_params}
    for dt in DTYPES:
        arrays, rep = to_arrays(net.model, dt)
        fl = float_accuracy(FloatNet(_spec(net), arrays, dt), net.dataset)
        exact = None
        if rep.overflow == 0:
            back = from_arrays(arrays, _spec(net))
            outs = em.run(back, net.dataset, backend="compress")
            exact = sum(o == [y] for o, y in zip(outs, data.labels))
        out[dt] = {"rounded": rep.rounded, "overflow": rep.overflow, "float": fl.nearest, "exact": exact}
    return out


def _spec(net):
    from exactmem.export import architecture

    return architecture(net.model)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--N", default="5,10,30,100,300,1000")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args(argv)
    Ns = [int(x) for x in args.N.split(",")]
    head = ["N", "max bits"] + [f"{dt} {k}" for dt in DTYPES for k in ("rounded", "float", "exact")]
    rows = []
    for N in Ns:
        t = time.perf_counter()
        r = row(N)
        cells = [f"{N:,}", str(r["max_bits"])]
        for dt in DTYPES:
            d = r[dt]
            rnd = f"{d['rounded']}" + (f" ({d['overflow']} inf)" if d["overflow"] else "")
            cells += [rnd, f"{d['float']}/{N}", "-" if d["exact"] is None else f"{d['exact']}/{N}"]
        rows.append(cells)
        print(f"  N = {N}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---:|" * len(head))
        for c in rows:
            print("| " + " | ".join(c) + " |")
    else:
        w = [max(len(h), *(len(c[i]) for c in rows)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(k) for h, k in zip(head, w)))
        for c in rows:
            print("  ".join(x.rjust(k) for x, k in zip(c, w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
