"""Reports of bit-precision sweeps (`exactmem.sweep`): findings, plots and the report page.

The report reads what a sweep wrote; it never runs one. The tables (`write_tables`,
`rows`, ...) and the loading of sweep documents (`load_sweep`, `merge`)
belong to the sweep package (`exactmem.sweep.tables`, `exactmem.sweep.results`)
and are re-exported here.

* `write_report` — one Markdown page (``docs/precision.md``) with the method, a
  section per theorem (table, findings, PNG plots under ``img_dir``), the commands that made
  the sweeps and the versions. Plots need matplotlib (the ``plot`` extra), imported only
  when a plot is drawn.
"""

from __future__ import annotations

import math
import os
import re
from statistics import median
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..errors import install_hint
from .formats import FORMATS, NAMED_FORMATS, OPERATION_ORDER
from .results import COMMANDS_FILE, load_sweep, merge, write_text_atomic
from .tables import (CSV_FIELDS, TABLE_COLUMNS, csv_text, formula_bound, latex_table,  # noqa: F401 (re-exported)
                           markdown_table, rows, table_cells, tex_escape, write_tables)


# ----------------------------------------------------------------------------- findings


def format_reach(rs: Sequence[Dict[str, Any]], fmt: str) -> Dict[str, Any]:
    """Over the rows of one theorem: the largest N such that the format memorizes every row
    with N' ≤ N, the first N where it fails, and rows that succeed above a failure."""
    by_n: Dict[int, List[bool]] = {}
    for r in rs:
        k = f"fmt_{fmt}_fail"
        if k in r:
            by_n.setdefault(r["N"], []).append(r[k] == 0)
    ns = sorted(by_n)
    largest, first_fail, later_ok = None, None, []
    for n in ns:
        ok = all(by_n[n])
        if first_fail is None:
            if ok:
                largest = n
            else:
                first_fail = n
        elif ok:
            later_ok.append(n)
    return {"largest": largest, "first_fail": first_fail, "later_ok": later_ok, "grid": ns}


def findings(rs: Sequence[Dict[str, Any]]) -> List[str]:
    out = []
    fl = [r for r in rs if r.get("float_exact") is not None]
    if fl:
        same = sum(1 for r in fl if r["float_exact"] == r.get("sig_bits"))
        out.append(f"Minimal significant bits (exact criterion) equal the construction's own significand width in "
                   f"{same} of {len(fl)} rows: rounding any weight by one more bit breaks memorization"
                   + (" there." if same else "."))
        for r in fl:
            if r.get("formula_bits"):
                out.append(f"{r['instance']} (seed {r['seed']}): b* = {r['float_exact']} significant bits "
                           f"({r.get('float_exact_storage')} stored bits/weight with sign and exponent) vs the "
                           f"construction's max {r['max_bits']} bits and the formula's {r['formula_bits']}.")
    fx = [r for r in rs if r.get("fixed_exact") is not None]
    if fx:
        out.append("Fixed point (exact criterion): " + "; ".join(
            f"{r['instance']}: {r['fixed_exact']} fractional bits, {r.get('fixed_exact_storage')} bits/weight"
            for r in fx[:8]) + ("; …" if len(fx) > 8 else "") + ".")
    tot = [r for r in fl if r.get("float_exact_total") and r.get("info_bits")]
    if tot:
        ratios = [r["float_exact_total"] / r["info_bits"] for r in tot]
        out.append(f"Total bits at b* (parameters × bits/weight) are {min(ratios):,.0f}× to {max(ratios):,.0f}× the "
                   f"information bound N·log₂C.")
    none = [r for r in rs if "float_exact" in r and r["float_exact"] is None]
    if none:
        out.append(f"{len(none)} row(s) have no b up to the cap at which the exact criterion holds (non-dyadic "
                   f"weights or labels; see the status column of the CSV).")
    viol = [r for r in rs if r["violations"]]
    if viol:
        out.append("Monotonicity violations (b where the result contradicts the bisection's assumption): "
                   + "; ".join(f"{r['instance']} seed {r['seed']}: " + ", ".join(r["violations"]) for r in viol) + ".")
    else:
        out.append("No monotonicity violation at the evaluated neighbours.")
    for f in NAMED_FORMATS:
        reach = format_reach(rs, f)
        if not reach["grid"] or not rs[0].get("varied"):
            continue
        if reach["first_fail"] is None:
            out.append(f"{f} memorizes every row (N up to {reach['grid'][-1]:,}).")
        else:
            s = f"{f}: " + (f"memorizes every row up to N = {reach['largest']:,}; " if reach["largest"] else
                            "fails already at the smallest N; ")
            s += f"first failure at N = {reach['first_fail']:,}"
            if reach["later_ok"]:
                s += f" (but succeeds again at N = {', '.join(f'{n:,}' for n in reach['later_ok'])})"
            out.append(s + ".")
    return out


# ----------------------------------------------------------------------------- plots


def _slugify(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower()


def _series(rs, key) -> Tuple[List[int], List[float]]:
    by: Dict[int, List[float]] = {}
    for r in rs:
        v = r.get(key)
        if v is not None:
            by.setdefault(r["N"], []).append(v)
    xs = sorted(by)
    return xs, [median(by[x]) for x in xs]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _log_axes(ax, y=True):
    """Log scales with plain numbers (1,000 rather than 10^3) at 1-2-5 steps."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axes = [ax.xaxis, ax.yaxis] if y else [ax.xaxis]
    ax.set_xscale("log")
    if y:
        ax.set_yscale("log")
    for a, lim in zip(axes, [ax.get_xlim(), ax.get_ylim()]):
        lo, hi = max(lim[0], 1e-12), max(lim[1], 1e-12)
        decades = math.log10(hi / lo) if hi > lo else 0
        a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)))
        a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        a.set_minor_formatter(NullFormatter())



def _finish(plt, fig, ax, path: str, ylabel: str, title: str, title_size: int = 10) -> str:
    """Common labels, grid, legend; save the figure (no timestamped metadata) and close it."""
    ax.set_xlabel("N (examples)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=title_size)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def plot_bits(rs, title: str, path: str) -> Optional[str]:
    xs, ys = _series(rs, "float_exact")
    if len(xs) < 2:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(xs, ys, "o-", label="minimal significant bits b* (exact, float-style)", color="C0")
    xn, yn = _series(rs, "float_nearest")
    if yn != ys or xn != xs:
        ax.plot(xn, yn, "s--", label="b* (nearest-label criterion)", color="C1", alpha=0.8)
    xm, ym = _series(rs, "max_bits")
    ax.plot(xm, ym, "^-", label="construction's max bits per weight", color="C2")
    xf, yf = _series(rs, "formula_bits")
    if xf:
        ax.plot(xf, yf, "v:", label="the paper's bound (max_bits <= claim)", color="C3")
    xa, ya = _series(rs, "mantissa_exact")
    if xa:
        ax.plot(xa, ya, "D-.", label="minimal significand for the arithmetic (unbounded exponent)", color="C5",
                ms=4)
    ref = [ys[-1] * math.sqrt(x / xs[-1]) for x in xs]
    ax.plot(xs, ref, "--", color="grey", label=f"∝ √N (through N = {xs[-1]:,})")
    _log_axes(ax)
    return _finish(plt, fig, ax, path, "bits per weight", title)


def plot_total(rs, title: str, path: str) -> Optional[str]:
    xs, ys = _series(rs, "float_exact_total")
    if len(xs) < 2:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(xs, ys, "o-", color="C0", label="parameters × bits/weight at b* (1 + b* + exponent)")
    xq, yq = _series(rs, "total_bits")
    ax.plot(xq, yq, "^-", color="C2", label="construction's total bits (sum over weights)")
    xi, yi = _series(rs, "info_bits")
    ax.plot(xi, yi, "k--", label="information bound N·log₂C")
    xp, yp = _series(rs, "n_params")
    ax.plot(xp, yp, "x:", color="C4", label="parameters (stored entries)")
    _log_axes(ax)
    return _finish(plt, fig, ax, path, "bits (parameters)", title)


def plot_formats(rs, title: str, path: str) -> Optional[str]:
    have = [f for f in NAMED_FORMATS if any(f"fmt_{f}_fail" in r for r in rs)]
    ns = sorted({r["N"] for r in rs if any(f"fmt_{f}_fail" in r for f in have)})
    if not have or len(ns) < 2:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, f in enumerate(have):
        by: Dict[int, List[float]] = {}
        for r in rs:
            if f"fmt_{f}_fail" in r:
                by.setdefault(r["N"], []).append(1 - r[f"fmt_{f}_fail"] / r["N"])
        xs = sorted(by)
        ax.plot(xs, [min(by[x]) for x in xs], "o-", color=f"C{i}", ms=3,
                label=f"{f} ({FORMATS[f].precision}-bit significand)")
        reach = format_reach(rs, f)
        if reach["largest"] is not None and reach["first_fail"] is not None:
            ax.axvline(reach["largest"], color=f"C{i}", ls=":", alpha=0.8)
    _log_axes(ax, y=False)
    ax.set_ylim(-0.05, 1.05)
    return _finish(plt, fig, ax, path, "fraction of examples right (worst seed)",
                   title + "\n(dotted: largest N up to which the format memorizes every instance)", 9)


def series_of(rs: Sequence[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """Rows grouped into series: one base instance with the same parameters varied (a grid
    over N), or a theorem's plain instances. Reach, findings and plots are per series."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for r in rs:
        out.setdefault(r["series"], []).append(r)
    return dict(sorted(out.items()))


def make_plots(rs: Sequence[Dict[str, Any]], img_dir: str, prefix: str = "precision_") -> Dict[str, List[str]]:
    """PNG plots per series that varies parameters (bits and totals need two N with a
    quantization result, formats two N with a format result); {series: [paths]}."""
    os.makedirs(img_dir, exist_ok=True)
    out: Dict[str, List[str]] = {}
    groups = {k: v for k, v in series_of(rs).items() if v[0]["varied"]}
    per_thm: Dict[str, int] = {}
    for v in groups.values():
        per_thm[v[0]["theorem"]] = per_thm.get(v[0]["theorem"], 0) + 1
    for key, sub in groups.items():
        thm = sub[0]["theorem"]
        s = _slugify(thm) if per_thm[thm] == 1 else _slugify(f"{thm}_{sub[0]['base']}")
        label = thm if per_thm[thm] == 1 else f"{thm} [{sub[0]['base']}]"
        made = [plot_bits(sub, f"{label}: bits per weight", os.path.join(img_dir, f"{prefix}{s}_bits.png")),
                plot_total(sub, f"{label}: total bits", os.path.join(img_dir, f"{prefix}{s}_total.png")),
                plot_formats(sub, f"{label}: floating-point formats", os.path.join(img_dir, f"{prefix}{s}_formats.png"))]
        out[key] = [p for p in made if p]
    return out


# ----------------------------------------------------------------------------- the report page


METHOD = """\
## Method

A *sweep point* is (proof file, theorem, parameters, seed, precision model). The proof file's
`build(params, seed)` gives the model, the dataset and the claims; every construction with a
proof file can be swept, and `--param KEY=V1,V2,…` overrides an instance's parameters (a grid
over N). Nothing below trusts floating point: exact rationals decide every verdict.

**1. Weight quantization** (`quant-float`, `quant-fixed`). Every stored weight (embeddings,
matrices, biases, attention matrices) is rounded to nearest, ties to even, to *b significant
bits* with an unbounded exponent (`float`) or to a multiple of 2^-b (*b fractional bits*,
`fixed`). The quantized network is evaluated **exactly** (`exactmem.model.forward`; after a
softmax, rigorous balls with the precision doubled while undecided). Two criteria:

* **exact** — the theorem's own criterion: output equal to the label (identity decoding;
  within the certificate's error bound when the theorem states one), or strict argmax;
* **nearest** — decoding by rounding to the nearest label: every output component strictly
  closer to its label than to any other label value at that component (for integer labels
  0…C−1: |output − label| < ½). Same as *exact* for argmax decoding.

The minimal b per criterion is found by bisection between a failing b and one that works
(for dyadic weights, b = the construction's own significand width, where quantization is the
identity). The bisection assumes monotonicity in b; this is **checked**: the neighbours
b* − 3 … b* − 2 and b* + 1 … b* + 2 (`--neighbours`) are evaluated too, and every evaluated b
that contradicts monotonicity is listed as a violation (reported, never smoothed away).
`--certify` writes the quantized network at b* and at b* − 1 as certificates and runs the
independent checker on them.

Bits per weight of a stored format at b: float-style 1 (sign) + b + E, E = 1 + LEN(max |e|)
over the weights' binary exponents e = ⌊log₂|w|⌋; fixed point 1 + LEN(max |w·2^b|). The
construction's own *max bits* use exactmem's convention for rationals (`docs/measurement.md`).

**2. Arithmetic precision** (`arith`). Weights and inputs are rounded to the format, then
every operation is rounded, in this fixed order:

{order}

| format | significand bits | exponent range (MPFR emin … emax) | largest finite | smallest subnormal |
|---|---|---|---|---|
{formats}

Overflow gives ±inf (then inf − inf = NaN, 0·inf = NaN; a non-finite output is wrong),
underflow is gradual (subnormals). The reference engine is MPFR (gmpy2 contexts with the
format's precision, exponent range and `subnormalize`; `exp` correctly rounded); for models
without softmax a NumPy engine computes bit-identical results faster (float16 through
float32 and bfloat16 through float32 with re-rounding after every operation; both
double roundings are innocuous since 24 ≥ 2p + 2) and is tested against MPFR. Real kernels
may sum in another order or fuse multiply-adds, so a format's verdict is for this order.
`--arith-min` also finds the smallest significand width b (unbounded exponent) at which
every example is right.
"""


def _formats_table() -> str:
    lines = []
    for f in NAMED_FORMATS:
        F = FORMATS[f]
        mx = F.max_finite
        lines.append(f"| {f} | {F.precision} | {F.emin} … {F.emax} | ≈ 2^{math.log2(float(mx)):.4f} "
                     f"| 2^{F.emin - 1} |")
    return "\n".join(lines)


def read_commands(paths: Sequence[str]) -> List[str]:
    out = []
    for p in paths:
        d = p if os.path.isdir(p) else os.path.dirname(p)
        f = os.path.join(d, COMMANDS_FILE)
        if os.path.exists(f):
            with open(f, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if line and line not in out:
                        out.append(line)
    return out


def report_markdown(doc: Dict[str, Any], plots: Dict[str, List[str]], md_dir: str, commands: Sequence[str] = (),
                    title: str = "Bit precision: how many bits do the constructions need?",
                    report_command: str = "") -> str:
    rs = rows(doc)
    out = [f"# {title}", "",
           "<!-- generated by `python -m exactmem report`; do not edit by hand -->", ""]
    out.append("Generated by `python -m exactmem report` from the sweeps below (`python -m exactmem sweep`, "
               "`docs/cli.md`). Every number is decided in exact arithmetic; see *Method*.")
    out.append("")
    out.append("## Summary")
    out.append("")
    out.append("| series | N | construction max bits | min float b (exact) | formula bound | "
               + " | ".join(f"{f}: memorizes up to N" for f in NAMED_FORMATS) + " |")
    out.append("|---|---|---|---|---|" + "---|" * len(NAMED_FORMATS))
    for key, sub in series_of(rs).items():
        ns = sorted({r["N"] for r in sub})
        nr = f"{ns[0]:,}" if len(ns) == 1 else f"{ns[0]:,} … {ns[-1]:,}"
        q = [r for r in sub if "float_exact" in r]

        def rng(k):
            v = sorted({r[k] for r in q if r.get(k) is not None})
            miss = sum(1 for r in q if r.get(k) is None)
            if not v:
                return ("none" if k == "float_exact" else "—") if q else ""
            s = f"{v[0]:,}" if len(v) == 1 else f"{v[0]:,} … {v[-1]:,}"
            return s + (f" (none for {miss} of {len(q)})" if miss and k == "float_exact" else "")

        cells = [key, nr, rng("max_bits"), rng("float_exact"), rng("formula_bits")]
        for f in NAMED_FORMATS:
            reach = format_reach(sub, f)
            if not reach["grid"]:
                cells.append("")
            elif not sub[0]["varied"]:
                have = [r for r in sub if f"fmt_{f}_fail" in r]
                cells.append(f"{sum(1 for r in have if r[f'fmt_{f}_fail'] == 0)} of {len(have)} instances")
            elif reach["first_fail"] is None:
                cells.append(f"all (≤ {reach['grid'][-1]:,})")
            elif reach["largest"] is None:
                cells.append(f"none (fails at {reach['first_fail']:,})")
            else:
                s = f"{reach['largest']:,} (fails at {reach['first_fail']:,}"
                s += f"; ok again at {', '.join(f'{n:,}' for n in reach['later_ok'])})" if reach["later_ok"] else ")"
                cells.append(s)
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("*memorizes up to N*: the largest N of the series' grid such that the format memorizes every seed "
               "at every N' ≤ N (for a proof file's own instances, which differ in more than N: on how many of "
               "them it memorizes).")
    out.append("")
    out.append(METHOD.format(order=OPERATION_ORDER, formats=_formats_table()))
    for thm in sorted({r["theorem"] for r in rs}):
        sub = [r for r in rs if r["theorem"] == thm]
        out.append(f"## {thm}")
        out.append("")
        proofs = sorted({r["proof"] for r in sub})
        out.append(f"Proof file: {', '.join('`' + p + '`' for p in proofs)}. "
                   f"{len(sub)} instance/seed rows.")
        src = sorted({r["formula_source"] for r in sub if r.get("formula_source")})
        if src:
            out.append(f"Formula bound: the proof file's `max_bits <=` claim ({'; '.join(src)}).")
        out.append("")
        big = len(sub) > 40
        shown = sub if not big else [r for r in sub if "float_exact" in r or "mantissa_exact" in r] or sub[:40]
        out.append(markdown_table(shown))
        if big:
            out.append("")
            out.append(f"({len(sub) - len(shown)} further rows with format evaluations only are in the CSV.)")
        out.append("")
        for key, ser in series_of(sub).items():
            out.append(f"**{key}** ({len(ser)} rows)")
            out.append("")
            for line in findings(ser):
                out.append(f"* {line}")
            out.append("")
            for p in plots.get(key, []):
                rel = os.path.relpath(p, md_dir)
                out.append(f"![{os.path.basename(p)}]({rel})")
                out.append("")
    out.append("## Reproduce")
    out.append("")
    if commands or report_command:
        out.append("```")
        out.extend(commands)
        if report_command:
            out.append(report_command)
        out.append("```")
    else:
        out.append("(the sweep directories recorded no commands)")
    out.append("")
    out.append("Seeds: " + ", ".join(str(s) for s in doc.get("seeds", [])) + ". Versions:")
    out.append("")
    for v in doc.get("versions", []):
        out.append("* " + ", ".join(f"{k} {val}" for k, val in sorted(v.items())))
    out.append("")
    return "\n".join(out)


def write_report(paths: Sequence[str], out: str, img_dir: Optional[str] = None, prefix: str = "precision_",
                 plots: bool = True, title: Optional[str] = None, report_command: str = "") -> Dict[str, Any]:
    """Merge the sweeps at ``paths`` and write the Markdown page ``out`` (and its plots)."""
    docs = [load_sweep(p) for p in paths]
    doc = merge(docs)
    md_dir = os.path.dirname(os.path.abspath(out))
    img_dir = img_dir or os.path.join(md_dir, "img")
    made: Dict[str, List[str]] = {}
    skipped = None
    if plots:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            skipped = f"matplotlib is not installed ({install_hint('plot')}); no plots"
        else:
            made = make_plots(rows(doc), img_dir, prefix)
    kw = {"title": title} if title else {}
    text = report_markdown(doc, made, md_dir, read_commands(paths), report_command=report_command, **kw)
    write_text_atomic(out, text)
    return {"out": out, "plots": [p for v in made.values() for p in v], "skipped": skipped, "rows": len(rows(doc))}


def records_of(doc: Dict[str, Any]) -> Iterable[Dict[str, Any]]:
    return doc["points"]
