"""Dana et al. capacity table: certified associations, parameters, bits, condition of F.

For N ∈ {10, 50}, S = 2, d ∈ {2, 4, 10}, d_h ∈ {1, 2, d}, H ∈ {1, …, 31} (issue 7), on a seeded
random look-up table: build the AoT of ``exactmem.constructions.dana.association`` for
T0 = min(H·d_h + d, N^S) sequences, write the certificate and run the independent checker.

Mode (b) (rational weights) runs on every row; mode (a) (exact base-2 softmax, attention kind
``softmax2``) on the paper's grid H ∈ {1, 6, …, 31} by default (``--base2-all`` for every H):
its exact rank of F is reported, and when it is full the network is built and certified
twice, exactly — with the exact readout W_O, W_U and with the smallest B-bit rounding of it
that the exact evaluation still certifies (``dana.with_rounded_readout``).

    python benchmarks/dana_table.py                 # full table, writes docs/dana.md's table
    python benchmarks/dana_table.py --quick         # N = 10 only, H ∈ {1, 6, ..., 31}
    python benchmarks/dana_table.py --no-write      # print only
    python benchmarks/dana_table.py --timing 11,16,21,26   # mode (a) seconds at N = 50, d = d_h = 10

The table goes between the markers ``<!-- dana-table:start -->`` and ``<!-- dana-table:end -->``
of docs/dana.md. Times are printed, never asserted. Seeds: table seed = construction seed =
``--seed`` (default 0).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.kernel.checker import check_certificate  # noqa: E402
from exactmem.certificate.writer import Claim, build_certificate  # noqa: E402
from exactmem.constructions.dana import association as dana  # noqa: E402
from exactmem.constructions.dana import distribution as DD  # noqa: E402
from exactmem.data.dana_data import spread_table  # noqa: E402
from exactmem.model import measure  # noqa: E402

START, END = "<!-- dana-table:start -->", "<!-- dana-table:end -->"
XSTART, XEND = "<!-- dana-extras:start -->", "<!-- dana-extras:end -->"
ESTART, EEND = "<!-- dana-experiments:start -->", "<!-- dana-experiments:end -->"
TSTART, TEND = "<!-- dana-theory:start -->", "<!-- dana-theory:end -->"

# Training accuracies from the note's §5 (the official repository's CSVs): (experiment, N, d, d_h, H, accuracy)
EXPERIMENTS = (
    [("Exp. 1", 50, 10, 10, H, a) for H, a in zip((1, 6, 11, 16, 21, 26, 31),
                                                  (0.1298, 0.3243, 0.5063, 0.6852, 0.8608, 0.9634, 0.9974))]
    + [("Exp. 6 (d_h = 2 as in the figure/code)", 10, 2, 2, H, a)
       for H, a in zip((1, 5, 9, 13, 17, 21), (0.3305, 0.4969, 0.6334, 0.7340, 0.8567, 0.8578))]
    + [("Exp. 6, all 100 pairs", 10, 2, 2, 49, None)]
    + [("Exp. 2", 50, 10, dh, 20, a) for dh, a in ((1, 0.0815), (2, 0.1096), (5, 0.2879), (10, 0.8044))]
)
PAPER_GRID = (1, 6, 11, 16, 21, 26, 31)


def configs(quick: bool):
    for N in ((10,) if quick else (10, 50)):
        for d in (2, 4, 10):
            for dh in sorted({1, 2, d}):
                yield N, d, dh


def log2_of(q: Fraction) -> str:
    if q is None or q <= 0:
        return "—"
    return f"{math.log2(q.numerator) - math.log2(q.denominator):.1f}"  # display only


def _check(b, N, d, dh, H, T0, mode, seed):
    claims = [Claim("n_examples", "==", T0), Claim("n_params", "==", dana.paper_param_count(N, 2, d, dh, H)),
              Claim("attention_layers", "==", 1)]
    doc = build_certificate("dana.table", f"N{N}-d{d}-dh{dh}-H{H}-{mode}", seed, b.model, b.dataset,
                            list(b.dataset.labels), claims)
    t = time.perf_counter()
    v = check_certificate(doc)
    m = measure(b.model)
    return {"T0": T0, "verdict": v.status, "exact": v.precision is None, "B": b.info["bits"],
            "max_bits": m.max_bits, "mean_bits": m.total_bits / m.n_params, "params": m.n_params,
            "logdet": b.info.get("log2_det_F"), "sigma": b.info.get("sigma_min_lower"),
            "exact_bits": b.info.get("exact_max_bits"), "check_s": time.perf_counter() - t}


def certify_row(N, d, dh, H, mode, seed, sigma):
    """Build and certify one row. Mode (a) (base 2, softmax2): the exact network, and its
    B-bit rounded readout as ``rec["rounded"]`` — both certified in exact arithmetic."""
    T0 = min(dana.capacity(d, dh, H), N * N)
    table = spread_table(N, 2, seed, T0=T0)
    t0 = time.perf_counter()
    b = dana.build_association(table, d, dh, H, mode=mode, seed=seed, sigma_min=sigma)
    rec = _check(b, N, d, dh, H, T0, mode, seed)
    rec["build_s"] = time.perf_counter() - t0 - rec["check_s"]
    if mode == "base2" and dana.uses_softmax2(b.design):
        t1 = time.perf_counter()
        r = dana.with_rounded_readout(b)
        rec["rounded"] = _check(r, N, d, dh, H, T0, "base2-rounded", seed)
        rec["rounded"]["build_s"] = time.perf_counter() - t1 - rec["rounded"]["check_s"]
    return rec


def base2_rank(N, d, dh, H, seed):
    T0 = min(dana.capacity(d, dh, H), N * N)
    table = spread_table(N, 2, seed, T0=T0)
    design = dana.choose_design(N, 2, d, dh, H, "base2", None, seed)
    return dana.exact_rank_columns(dana.feature_columns_exact(design, table.sequences)), T0


def fmt_logdet(ld):
    return "—" if not ld else f"[{ld[0]}, {ld[1]}]"


def run(args):
    rows = []
    Hs = list(range(1, 32)) if not args.quick else list(PAPER_GRID)
    for N, d, dh in configs(args.quick):
        for H in Hs:
            rec = {"N": N, "d": d, "dh": dh, "H": H}
            try:
                rec["b"] = certify_row(N, d, dh, H, "rational", args.seed, sigma=not args.no_sigma)
            except dana.RankDeficient as e:
                rec["b"] = {"verdict": f"rank deficient: {e}"}
            if args.base2_all or H in PAPER_GRID:
                r, T0 = base2_rank(N, d, dh, H, args.seed)
                rec["a_rank"] = (r, T0)
                if r == T0 and not args.no_base2_certify:
                    try:
                        rec["a"] = certify_row(N, d, dh, H, "base2", args.seed, sigma=False)
                    except dana.RankDeficient as e:
                        rec["a"] = {"verdict": f"rank deficient: {e}"}
            rows.append(rec)
            b = rec["b"]
            print(f"N={N} d={d} dh={dh} H={H}: (b) {b.get('verdict')} T0={b.get('T0')} B={b.get('B')} "
                  f"build {b.get('build_s', 0):.1f}s check {b.get('check_s', 0):.1f}s"
                  + (f" | (a) rank {rec['a_rank'][0]}/{rec['a_rank'][1]} {rec.get('a', {}).get('verdict', '')} "
                     f"build {rec.get('a', {}).get('build_s', 0):.1f}s check {rec.get('a', {}).get('check_s', 0):.1f}s"
                     if 'a_rank' in rec else ""), file=sys.stderr, flush=True)
    return rows


def table_markdown(rows, only_grid: bool) -> str:
    head = ["N", "d", "d_h", "H", "T0 = min(H d_h + d, N²)", "(b) verdict", "(b) bits B", "(b) max / mean bits",
            "params = d(S+2N+4d_hH)", "rank-1 params", "log2 abs(det F) (b)", "σ_min(F) ≥ (b)",
            "(a) exact rank F", "(a) softmax2, exact W_O, W_U: verdict, max / mean bits",
            "(a) softmax2, rounded: verdict, B, max / mean bits", "Mahdavi H(d_h−1)+1",
            "Cor. 2 φ(certified)", "φ(Mahdavi)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if only_grid and r["H"] not in PAPER_GRID:
            continue
        N, d, dh, H = r["N"], r["d"], r["dh"], r["H"]
        b = r["b"]
        T0 = b.get("T0", min(dana.capacity(d, dh, H), N * N))
        ok = b.get("verdict") == "CERTIFIED"
        cert = T0 if ok else 0
        a = r.get("a", {})
        ar = a.get("rounded", {})
        a_rank = f"{r['a_rank'][0]}/{r['a_rank'][1]}" if "a_rank" in r else "—"
        a_cell = (f"{a['verdict']}{' (exact)' if a['exact'] else ''}, {a['max_bits']} / {a['mean_bits']:.0f}"
                  if a.get("verdict") == "CERTIFIED" else (a.get("verdict", "—")[:20] if a else "—"))
        ar_cell = (f"{ar['verdict']}{' (exact)' if ar['exact'] else ''}, {ar['B']}, {ar['max_bits']} / "
                   f"{ar['mean_bits']:.1f}" if ar.get("verdict") == "CERTIFIED" else (ar.get("verdict", "—")[:20]
                                                                                    if ar else "—"))
        mah = dana.mahdavi_capacity(dh, H)
        cells = [N, d, dh, H, T0, b.get("verdict", "?")[:24], b.get("B", "—"),
                 f"{b['max_bits']} / {b['mean_bits']:.1f}" if ok else "—",
                 b.get("params", "—"), dana.paper_param_count(N, 2, d, dh, H, rank1=True),
                 fmt_logdet(b.get("logdet")), ("2^" + log2_of(b.get("sigma"))) if b.get("sigma") else "—",
                 a_rank, a_cell, ar_cell, mah, f"{float(dana.corollary2_accuracy(cert, N * N, N)):.3f}",
                 f"{float(dana.corollary2_accuracy(mah, N * N, N)):.3f}"]
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def write_doc(md: str, path: str, start: str = START, end: str = END):
    text = open(path).read()
    if start not in text or end not in text:
        raise SystemExit(f"{path} lacks the markers {start} ... {end}")
    a, b = text.index(start) + len(start), text.index(end)
    open(path, "w").write(text[:a] + "\n" + md + "\n" + text[b:])


def prop3_markdown() -> str:
    """Prop. 3 (note §1.4): rational circle points, exact margin, certified d_KL(π, f_λ)."""
    from exactmem.data.dana_data import Conditionals, all_sequences

    out = ["| N | exact margin 1 − max⟨W_j, W_g⟩ (rational circle) | 1 − cos(2π/N) ∈ | "
           "d_KL(π, f_λ) ≤ (λ = 10) | (λ = 100) | (λ = 1000) |", "|---|---|---|---|---|---|"]
    for N in (10, 50):
        pts = dana.circle_points(N)
        m = dana.circle_margin(pts)
        lo, hi = dana.cos_margin_enclosure(N)
        seqs = all_sequences(N, 1)
        onehot = [tuple(Fraction(int(j == t[0])) for j in range(N)) for t in seqs]
        data = Conditionals(N, 1, seqs, [Fraction(1, N)] * N, onehot, require_full_support=False)
        kls = []
        for lam in (10, 100, 1000):
            logits = [[lam * (x * pts[g][0] + y * pts[g][1]) for x, y in pts] for g in range(N)]
            kls.append(DD.kl_upper_bound_from_logits(data, logits))
        out.append(f"| {N} | {float(m):.6f} (exact rational, {m.denominator.bit_length()}-bit denominator) | "
                   f"[{float(lo):.6f}, {float(hi):.6f}] | " + " | ".join(f"{float(k):.3e}" for k in kls) + " |")
    return "\n".join(out)


def conditioning_markdown(seed: int = 0) -> str:
    """Note §3.6: query-key choices vs rank / conditioning of F, both modes, same sequences."""
    from exactmem.arith.linalg import sigma_min_lower

    out = ["| N | d | d_h | H | T0 | W_QK choice | (a) exact rank F (base 2) | (a) log2 abs(det F) | "
           "(b) certified σ_min(F) ≥ | (b) log2 abs(det F) |", "|" + "---|" * 10]
    for N, d, dh, H in ((10, 2, 2, 4), (10, 2, 1, 12), (50, 4, 4, 6), (50, 10, 10, 4)):
        T0 = dana.capacity(d, dh, H)
        table = spread_table(N, 2, seed, T0=T0)
        for qk in ("lemma2", "rank1", "random"):
            da = dana.choose_design(N, 2, d, dh, H, "base2", qk, seed)
            Fa = dana.feature_columns_exact(da, table.sequences)
            ra = dana.exact_rank_columns(Fa)
            lda = dana.log2_abs_interval(dana._det_exact([list(r) for r in zip(*Fa)])) if ra == T0 else None
            db = dana.choose_design(N, 2, d, dh, H, "rational", qk, seed)
            Fb = dana.feature_matrix_ball(db, dana.model_rhos(db, None), table.sequences, 256)
            sig = sigma_min_lower(Fb)
            ok, ldb = dana._certify_rank_ball(Fb, list(range(T0)), 256)
            out.append(f"| {N} | {d} | {dh} | {H} | {T0} | {qk} | {ra}/{T0} | {fmt_logdet(lda)} | "
                       f"{'2^' + log2_of(sig) if sig else 'not certified'} | {fmt_logdet(ldb) if ok else 'det ∋ 0'} |")
    return "\n".join(out)


def experiments_markdown(seed: int = 0) -> str:
    """Note §5's trained accuracies next to certified capacities (each row certified here, mode (b))."""
    out = ["| experiment (note §5) | N | d | d_h | H | trained accuracy | certified T0 | verdict | T0/N² | "
           "φ(T0) (Cor. 2) | Mahdavi H(d_h−1)+1 | φ(Mahdavi) | trained / φ(T0) |", "|" + "---|" * 13]
    for name, N, d, dh, H, acc in EXPERIMENTS:
        r = certify_row(N, d, dh, H, "rational", seed, sigma=False)
        T0 = r["T0"]
        phi = dana.corollary2_accuracy(T0, N * N, N)
        mah = dana.mahdavi_capacity(dh, H)
        ratio = f"{acc / float(phi):.2f}" if acc is not None else "—"
        out.append(f"| {name} | {N} | {d} | {dh} | {H} | {acc if acc is not None else '—'} | {T0} | {r['verdict']} | "
                   f"{T0 / (N * N):.3f} | {float(phi):.3f} | {mah} | "
                   f"{float(dana.corollary2_accuracy(mah, N * N, N)):.3f} | {ratio} |")
    return "\n".join(out)


def _iv(x, digits: int = 4) -> str:
    """An enclosure [lo, hi] (or an exact number) printed outward-rounded (display only)."""
    from exactmem.arith.enclosure import Interval, decimal

    if isinstance(x, Interval):
        if x.lo == x.hi:
            return decimal(x.lo, digits)
        return f"[{decimal(x.lo, digits)}, {decimal(x.hi, digits, up=True)}]"
    return decimal(Fraction(x), digits)


def theorem1_markdown(seed: int = 0) -> str:
    """Theorem 1 (note §2), mode (a) exact networks: certified verdict, d_KL enclosures, C of eq. (14)
    and the sketch's C enclosed rigorously (``dana_distribution.theorem1_bound_report``), bound (4)
    decided. Rows with T_ε < d + H·d_h have no square P₁VP₁ᵀ: the paper's C is undefined there."""
    from exactmem.constructions.dana import distribution as DD
    from exactmem.data.dana_data import random_conditionals, t_epsilon

    head = ["N", "S", "d", "d_h", "ε", "T_ε", "H", "verdict (logits = W E(t) exactly on the T_ε sequences)",
            "d_KL(π, T) ∈", "d_KL(π, f) ∈", "π(S₂)", "C of eq. (14) ∈", "sketch's C ∈", "‖W E‖₂ ∈",
            "d_KL(π,T) − d_KL(π,f) ∈", "C ε ‖W E‖₂ ∈", "(4) with d_KL(π, f)", "(13) with factor 2",
            "L ≤ d_KL(π, L) (d = N − 2; boxes)", "(4) as printed, with L"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for N, d, dh in ((4, 2, 2), (4, 3, 3), (6, 4, 2)):
        data = random_conditionals(N, 2, seed)
        for eps in (Fraction(0), Fraction(1, 4), Fraction(1, 2)):
            b = DD.build_distribution(data, d, dh, eps, mode="base2", seed=seed)
            doc = build_certificate("dana.theorem1", "x", seed, b.model, b.dataset, list(map(list, b.dataset.labels)),
                                    [], error_bound=Fraction(0))
            v = check_certificate(doc)
            Te = t_epsilon(data, eps)
            cells = [N, 2, d, dh, eps, Te, b.design.H, v.status + (" (exact)" if v.precision is None else "")]
            if d + b.design.H * dh != Te:
                from exactmem.arith.enclosure import Interval

                kT = Interval(*DD.kl_enclosure(b.model, data))
                cells += [_iv(kT), "—", "—", "— (T_ε < d + H d_h)", "—", "—", "—", "—", "—", "—", "—", "—"]
            else:
                rep = DD.theorem1_bound_report(data, b, eps)
                r = rep.results
                C, we = r["C_eq14"], r["||W E||_2"]
                cells += [_iv(r["d_KL(pi, T)"]), _iv(r["d_KL(pi, f)"]), _iv(r["pi(S2)"]), _iv(C),
                          _iv(r["C_sketch"]), _iv(we), _iv(r["d_KL(pi, T) - d_KL(pi, f)"]),
                          _iv(type(C)(C.lo * eps * we.lo, C.hi * eps * we.hi)),
                          rep.steps[0].status.upper(), rep.steps[1].status.upper()]
                if "L <= d_KL(pi, L)" in r:
                    st = rep.steps[3]
                    # (4) carries + γ (any γ > 0): at ε = 0 this T realises the encoder f, not the optimum,
                    # so it needs γ ≥ d_KL(π, T) − L (the optimality gap), which the comparison with L shows
                    cells += [f"{_iv(r['L <= d_KL(pi, L)'])} ({r['lower-bound boxes']})",
                              "HOLDS" if st.status == "holds" else
                              f"with γ ≥ {_iv(r['d_KL(pi, T)'].hi - r['L <= d_KL(pi, L)'], 2)} (the gap)"]
                else:
                    cells += ["—", "—"]
            out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def theory_markdown(seed: int = 0) -> str:
    """Prop. 1, Theorem 2 and Theorem 3 / Lemma 4: every step of the proof file's reports, as tables."""
    from exactmem.proofs import dana as P

    parts = ["### Theorem 1: bound (4) with C enclosed rigorously (mode (a), exact readout)",
             theorem1_markdown(seed)]
    runs = [("Proposition 1", P.run_prop1, {"N": 4, "S": 2, "d": 2, "dh": 2, "H": 2}),
            ("Proposition 1", P.run_prop1, {"N": 8, "S": 2, "d": 4, "dh": 4, "H": 3}),
            ("Theorem 2", P.run_theorem2, {"N": 3, "S": 2, "d": 3}),
            ("Theorem 2", P.run_theorem2, {"N": 3, "S": 2, "d": 3, "W": "centred"}),
            ("Theorem 2", P.run_theorem2, {"d": 5, "jensen": True}),
            ("Theorem 3 / Lemma 4", P.run_theorem3, {"N": 3, "S": 2, "d": 3})]
    for _, run, p in runs:
        parts.append(run(dict(p, seed=seed)).to_markdown().replace("## ", "### ", 1))
    from exactmem.constructions.dana import bounds as DB
    from exactmem.constructions.dana import distribution as DD

    for N, d, eps in ((3, 3, Fraction(1, 4)), (4, 4, Fraction(1, 8))):
        data = DB.zero_conditionals(N, 2, seed)
        W, E, _ = DB.theorem3_encoder(data, d, eps)
        b = DD.build_distribution(data, d, 1, eps, mode="base2", seed=seed, tol=Fraction(0), encoder=(W, E))
        parts.append(DB.theorem3_network_report(data, b, eps, eps).to_markdown().replace("## ", "### ", 1))
    from exactmem.bounds.dana.certificates import theorem3_small_d_report

    parts.append(theorem3_small_d_report({"instance": "N5-S2-d2"}).to_markdown().replace("## ", "### ", 1))
    return "\n\n".join(parts)


def timing(Hs, seed: int = 0, N: int = 50, d: int = 10, dh: int = 10):
    """Mode (a) seconds per stage (one core) on the spread table: build (exact solve), producer
    forward pass, certificate write, independent pure check — for the exact softmax2 network
    and for its rounded readout (its build = the exact build + the exact search for B)."""
    import tempfile

    from exactmem.kernel.checker import load_certificate
    from exactmem.certificate.writer import write_certificate
    from exactmem.model import decode_output, forward

    print("| H | T0 | network | verdict | max / mean bits | file MB | build s | forward s | write s | check s | "
          "build + check s | total s |\n|" + "---|" * 12)
    for H in Hs:
        T0 = min(dana.capacity(d, dh, H), N * N)
        table = spread_table(N, 2, seed, T0=T0)
        t0 = time.perf_counter()
        b = dana.build_association(table, d, dh, H, mode="base2", seed=seed, sigma_min=False)
        build = time.perf_counter() - t0
        for name, net in (("exact", b), ("rounded", None)):
            if net is None:  # the rounded network's build = the exact build + the exact B search
                t0 = time.perf_counter()
                net = dana.with_rounded_readout(b)
                build += time.perf_counter() - t0
                name = f"rounded, B = {net.info['bits']}"
            t1 = time.perf_counter()
            res = forward(net.model, net.dataset.inputs)
            outs = [decode_output(net.model, o) for o in res.outputs]
            t2 = time.perf_counter()
            doc = build_certificate("dana.timing", f"H{H}", seed, net.model, net.dataset, outs,
                                    [Claim("n_examples", "==", T0)])
            with tempfile.TemporaryDirectory() as tmp:
                path = write_certificate(doc, os.path.join(tmp, "c.json"))
                mb = os.path.getsize(path) / 1e6
                t3 = time.perf_counter()
                v = check_certificate(load_certificate(path))
                t4 = time.perf_counter()
            m = measure(net.model)
            print(f"| {H} | {T0} | {name} | {v.status}{' (exact)' if v.precision is None else ''} | "
                  f"{m.max_bits} / {m.total_bits / m.n_params:.1f} | {mb:.1f} | {build:.1f} | {t2 - t1:.1f} | "
                  f"{t3 - t2:.1f} | {t4 - t3:.1f} | {build + t4 - t3:.1f} | {build + t4 - t1:.1f} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base2-all", action="store_true", help="mode (a) rank on every H (slow)")
    ap.add_argument("--no-base2-certify", action="store_true")
    ap.add_argument("--no-sigma", action="store_true", help="skip the certified σ_min bound")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--extras", action="store_true", help="only the conditioning, Prop. 3 and experiments tables")
    ap.add_argument("--theory", action="store_true", help="only Theorem 1's rigorous C, Prop. 1, Thm 2, Thm 3")
    ap.add_argument("--timing", metavar="H,H,...", help="mode (a) seconds per stage at N = 50, d = d_h = 10")
    args = ap.parse_args(argv)
    if args.timing:
        timing([int(h) for h in args.timing.split(",")], args.seed)
        return
    if args.theory:
        md = theory_markdown(args.seed)
        print(md)
        if not args.no_write:
            write_doc(md, os.path.join(ROOT, "docs", "dana.md"), TSTART, TEND)
        return
    if args.extras:
        md = ("### Query-key choices and conditioning (note §3.6)\n\n" + conditioning_markdown(args.seed)
              + "\n\n### Proposition 3 (circle target)\n\n" + prop3_markdown())
        ex = experiments_markdown(args.seed)
        print(md + "\n\n" + ex)
        if not args.no_write:
            write_doc(md, os.path.join(ROOT, "docs", "dana.md"), XSTART, XEND)
            write_doc(ex, os.path.join(ROOT, "docs", "dana.md"), ESTART, EEND)
        return
    t = time.perf_counter()
    rows = run(args)
    grid = table_markdown(rows, True)
    full = table_markdown(rows, False)
    md = (f"Generated by `python benchmarks/dana_table.py{' --quick' if args.quick else ''}` (seed {args.seed}, "
          f"{time.perf_counter() - t:.0f} s on this machine).\n\n" + grid +
          "\n\n<details><summary>Every H ∈ {1, …, 31}</summary>\n\n" + full + "\n\n</details>")
    print(md)
    if not args.no_write:
        write_doc(md, os.path.join(ROOT, "docs", "dana.md"))


if __name__ == "__main__":
    main()
