"""Generate the measured table of docs/mahdavi.md (Mahdavi et al., note mahdavi.md §3–§4).

    python benchmarks/mahdavi_table.py                 # the H × n × d_h grid, written into docs/mahdavi.md
    python benchmarks/mahdavi_table.py --quick         # a small grid, printed only
    python benchmarks/mahdavi_table.py --search 60     # largest T certified within 60 s at d = 64
    python benchmarks/mahdavi_table.py --graph         # the assignment-graph picture (docs/img/)
    python benchmarks/mahdavi_table.py --extra         # only the rows isolating one effect each

Every row is a full ``certify`` run (build → forward pass → certificate → independent pure
checker); the verdict, the claims (T = H(min(n,d_h)−1)+1, P = H(2 d d_h + d d_v + d_v d_o))
and the bits are the checker's. Timings are wall-clock seconds on this machine (never
asserted anywhere). Seeds are fixed (``--seed``, default 0).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.pipeline.certify import certify_instance  # noqa: E402
from exactmem.proof import Instance
from exactmem.pipeline.loader import load_proof_file  # noqa: E402

DOC = os.path.join(ROOT, "docs", "mahdavi.md")
START, END = "<!-- mahdavi-table:start -->", "<!-- mahdavi-table:end -->"
SSTART, SEND = "<!-- mahdavi-search:start -->", "<!-- mahdavi-search:end -->"


def _proof():
    return {t.name: t for t in load_proof_file(os.path.join(ROOT, "proofs", "mahdavi.py"))}


def run(theorems, H, n, d_h, d=64, shared=True, mode="softmax", seed=0, out_dir=None, classes=None, coord_den=1,
        coord_range=5):
    """One full certify run; returns a dict row."""
    name = "mahdavi.softmax_classes" if classes else f"mahdavi.{mode}"
    params = dict(H=H, n=n, d=d, d_h=d_h, shared=shared, design="factored" if mode == "softmax" else "solve",
                  coord_den=coord_den, coord_range=coord_range)
    if classes:
        params["classes"] = classes
    inst = Instance(f"H{H}-n{n}-d{d}-dh{d_h}{'-shared' if shared else ''}", params, ("small",))
    out_dir = out_dir or tempfile.mkdtemp(prefix="mahdavi-bench-")
    t0 = time.perf_counter()
    row = certify_instance(theorems[name], inst, seed, out_dir, quiet=True, checker="pure")
    wall = time.perf_counter() - t0
    info = row.info
    c = Fraction(info.get("c", "1"))
    cb = info.get("c_bound")
    return {"H": H, "n": n, "d_h": d_h, "d": d, "T": info.get("T"), "verdict": row.verdict, "params": row.params,
            "c_bound": (f"{float(Fraction(cb)):.3g}" if Fraction(cb) else "— (no saturated pair)") if cb else "—",
            "c": str(c), "log2c": f"{math.log2(c):.1f}", "classes": classes, "coord_den": coord_den,
            "sigma": info.get("sigma_min_Zinf_lower", info.get("exact_rank", "-")),
            "delta": info.get("delta_min", "-"), "bits_WQ": info.get("bits_WQ"), "bits_WK": info.get("bits_WK"),
            "bits_c": info.get("bits_c"), "bits_WV": info.get("bits_WV"), "max_bits": row.max_bits,
            "time": wall, "timings": getattr(row, "timings", {}), "mode": mode, "shared": shared}


def table(rows) -> str:
    head = ["H", "n", "d_h", "T", "params", "c (§4.4 bound)", "c", "log2 c", "σ_min(Z^∞) ≥", "bits W_Q",
            "bits W_K (c·u)", "bits W_V (readout)", "max bits", "verdict", "time (s)"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x) for x in [
            r["H"], r["n"], r["d_h"], r["T"], r["params"], r["c_bound"], r["c"], r["log2c"], r["sigma"], r["bits_WQ"],
            r["bits_WK"], r["bits_WV"], r["max_bits"], r["verdict"], f"{r['time']:.1f}"]) + " |")
    return "\n".join(out)


def grid(quick: bool, seed: int):
    th = _proof()
    Hs = [1, 2, 4] if quick else [1, 2, 4, 8, 16]
    ns = [2, 4] if quick else [2, 4, 8, 16]
    rows = []
    for n in ns:
        for H in Hs:
            for d_h in sorted({max(1, n // 2), n, 2 * n}):
                r = run(th, H, n, d_h, seed=seed)
                print(f"H={H} n={n} d_h={d_h}: T={r['T']} {r['verdict']} {r['time']:.1f}s bits {r['max_bits']}",
                      file=sys.stderr, flush=True)
                rows.append(r)
    return rows


def extra(seed: int):
    """Rows that isolate one effect each: class labels (the readout needs no ε bits), distinct
    contexts, a finer data grid (coordinates k/den: Δ shrinks like den⁻², c grows like den²,
    note §4.6), and the exact hardmax limit."""
    th = _proof()
    rows = []
    specs = [dict(H=8, n=8, d_h=8, classes=100, label="classes C = 100"),
             dict(H=8, n=8, d_h=8, shared=False, label="distinct contexts")]
    specs += [dict(H=4, n=4, d_h=4, coord_den=den, coord_range=5 * den, label=f"finer grid: coords k/{den}, −{5 * den} ≤ k ≤ {5 * den}")
              for den in (16, 256)]
    specs += [dict(H=4, n=4, d_h=4, coord_den=s_, label=f"data scaled by 1/{s_}") for s_ in (16, 256)]
    specs += [dict(H=4, n=8, d_h=8, mode="hardmax", label="hardmax, exact"),
              dict(H=8, n=8, d_h=8, mode="hardmax", label="hardmax, exact"),
              dict(H=8, n=8, d_h=8, mode="hardmax", shared=False, label="hardmax, exact, distinct")]
    for sp in specs:
        label = sp.pop("label")
        r = run(th, seed=seed, **sp)
        r["label"] = label
        print(f"{label} H={r['H']} n={r['n']}: T={r['T']} {r['verdict']} {r['time']:.1f}s", file=sys.stderr, flush=True)
        rows.append(r)
    return rows


def extra_table(rows) -> str:
    head = ["case", "H", "n", "d_h", "T", "c (§4.4 bound)", "c", "log2 c", "Δ_min", "bits W_Q", "bits W_K (c·u)",
            "bits W_V (readout)", "max bits", "verdict", "time (s)"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x) for x in [
            r["label"], r["H"], r["n"], r["d_h"], r["T"], r["c_bound"], r["c"], r["log2c"], r["delta"], r["bits_WQ"],
            r["bits_WK"], r["bits_WV"], r["max_bits"], r["verdict"], f"{r['time']:.1f}"]) + " |")
    return "\n".join(out)


def search(limit: float, seed: int):
    """For each n, grow H by ×1.5 until a full certify run takes longer than ``limit`` seconds,
    then bisect H between the last success and the failure (to within 10 %)."""
    th = _proof()
    best = []
    for n, H in ((2, 60), (4, 27), (8, 12), (16, 8)):
        last_ok = None
        while True:
            r = run(th, H, n, n, seed=seed)
            print(f"search n={n} H={H}: T={r['T']} {r['verdict']} {r['time']:.1f}s {r['timings']}", file=sys.stderr,
                  flush=True)
            if r["time"] > limit or r["verdict"] != "CERTIFIED":
                lo, hi, fail = (last_ok["H"] if last_ok else 1), H, r
                while hi - lo > max(1, lo // 10):  # refine between the last success and the failure
                    mid = (lo + hi) // 2
                    rm = run(th, mid, n, n, seed=seed)
                    print(f"search n={n} H={mid}: T={rm['T']} {rm['verdict']} {rm['time']:.1f}s", file=sys.stderr,
                          flush=True)
                    if rm["time"] > limit or rm["verdict"] != "CERTIFIED":
                        hi, fail = mid, rm
                    else:
                        lo, last_ok = mid, rm
                best.append((n, last_ok, fail))
                break
            last_ok = r
            H = int(H * 1.5)
    return best


def search_table(best, limit) -> str:
    out = [f"| n = d_h | largest certified T within {limit:g} s | H | time (s) | build / forward / check (s) | "
           "max bits | bits W_K | next size tried (T, time) |", "|---|---|---|---|---|---|---|---|"]
    for n, ok, nxt in best:
        if ok is None:
            out.append(f"| {n} | — | — | — | — | — | — | {nxt['T']}, {nxt['time']:.0f} s |")
            continue
        tm = ok["timings"]
        parts = " / ".join(f"{tm.get(k, 0):.0f}" for k in ("build", "forward", "check"))
        out.append(f"| {n} | {ok['T']} | {ok['H']} | {ok['time']:.0f} | {parts} | {ok['max_bits']} | {ok['bits_WK']} | "
                   f"{nxt['T']}, {nxt['time']:.0f} s |")
    return "\n".join(out)


def graph(seed: int):
    """The small-case picture of docs/mahdavi.md: H = 3, n = 4, d = 8, softmax; annotated with
    the built model's measured saturation (note §5.4)."""
    from exactmem.constructions.mahdavi import assign
    from exactmem.constructions.mahdavi import construction as mahdavi
    from exactmem.data.mahdavi_data import random_query_context

    H, n, d = 3, 4, 8
    data = random_query_context(mahdavi.capacity(H, n, n), n, d, seed, shared=True)
    model, info = mahdavi.build(data, H, n, design="factored", seed=seed)
    prof = assign.attention_profile(model, data)
    dom = assign.dominance(prof, info.partition)
    G = assign.annotate(assign.assignment_graph(info.partition, data.T), prof, dom)
    assign.validate_graph(G, info.k)
    img = os.path.join(ROOT, "docs", "img")
    os.makedirs(img, exist_ok=True)
    base = os.path.join(img, "mahdavi_assignment")
    assign.draw(G, base + ".png", f"H = {H} heads, n = {n}, T = {data.T} (shared context): head-to-subset assignment")
    assign.write_graphml(G, base + ".graphml")
    assign.write_json(G, base + ".json")
    agree = sum(d.agrees for d in dom)
    print(f"graph: {base}.png; built model agrees with the design on {agree}/{len(dom)} examples", file=sys.stderr)
    lines = ["| example | designed head | saturated heads (> 99/100, certified) | dominant head |", "|---|---|---|---|"]
    for d_ in dom:
        lines.append(f"| {d_.example} | {d_.designed_head + 1} | {', '.join(str(h + 1) for h in d_.saturated_heads)} | "
                     f"{(d_.dominant_head + 1) if d_.dominant_head is not None else '?'} |")
    return "\n".join(lines)


def _splice(text: str, start: str, end: str, body: str) -> str:
    a, b = text.index(start) + len(start), text.index(end)
    return text[:a] + "\n" + body + "\n" + text[b:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--search", type=float, default=None, metavar="SECONDS")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--extra", action="store_true", help="only the rows that isolate one effect each")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-write", action="store_true", help="print only; do not update docs/mahdavi.md")
    args = ap.parse_args(argv)
    doc = open(DOC).read() if os.path.exists(DOC) else None
    if args.graph:
        body = graph(args.seed)
        print(body)
        if doc and not args.no_write and "<!-- mahdavi-dominance:start -->" in doc:
            doc = _splice(doc, "<!-- mahdavi-dominance:start -->", "<!-- mahdavi-dominance:end -->", body)
    if args.search is not None:
        body = search_table(search(args.search, args.seed), args.search)
        print(body)
        if doc and not args.no_write and SSTART in doc:
            doc = _splice(doc, SSTART, SEND, body)
    if not args.graph and args.search is None:
        if not args.extra:
            body = table(grid(args.quick, args.seed))
            print(body)
            if doc and not args.no_write and not args.quick and START in doc:
                doc = _splice(doc, START, END, body)
        if not args.quick:
            body = extra_table(extra(args.seed))
            print(body)
            if doc and not args.no_write and "<!-- mahdavi-extra:start -->" in doc:
                doc = _splice(doc, "<!-- mahdavi-extra:start -->", "<!-- mahdavi-extra:end -->", body)
    if doc and not args.no_write:
        with open(DOC, "w") as f:
            f.write(doc)


if __name__ == "__main__":
    main()
