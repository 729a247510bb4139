"""Reports of bit-precision sweeps (:mod:`exactmem.sweep`): tables and plots.

* :func:`write_tables` — ``sweep.csv``, ``sweep.md`` and ``sweep.tex`` next to ``sweep.json``
  (one row per theorem instance and seed: the construction's sizes, the minimal bits of
  each quantization, the named floating-point formats);
* :func:`write_report` — one Markdown page (``docs/precision.md``) with the method, a
  section per theorem (table, findings, PNG plots under ``img_dir``), the commands that made
  the sweeps and the versions. Plots need matplotlib (the ``plot`` extra), imported only
  when a plot is drawn.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from fractions import Fraction
from statistics import median
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .sweep import FORMATS, NAMED_FORMATS, OPERATION_ORDER, SWEEP_FILE, _slug, sweep_document

COMMANDS_FILE = "commands.txt"


# ----------------------------------------------------------------------------- loading


def load_sweep(path: str) -> Dict[str, Any]:
    """A sweep document from a sweep directory (its ``sweep.json``) or a JSON file."""
    p = os.path.join(path, SWEEP_FILE) if os.path.isdir(path) else path
    if not os.path.exists(p):
        raise FileNotFoundError(f"no sweep results at {p} (run `python -m exactmem sweep ... --out DIR` first)")
    with open(p, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != "exactmem-sweep":
        raise ValueError(f"{p} is not an exactmem sweep document")
    return doc


def merge(docs: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    recs: Dict[str, Dict[str, Any]] = {}
    secs: Dict[str, Any] = {}
    vers: List[Dict[str, Any]] = []
    for d in docs:
        for r in d["points"]:
            recs[r["key"]] = dict(r, versions=None)
        secs.update(d.get("seconds", {}))
        for v in d.get("versions", []):
            if v not in vers:
                vers.append(v)
    out = sweep_document([{k: v for k, v in r.items() if k != "versions"} for r in recs.values()])
    out["versions"], out["seconds"] = vers, secs
    return out


# ----------------------------------------------------------------------------- rows


def _params_text(p: Dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(p.items()))


def formula_bound(claims: Sequence[Dict[str, str]]) -> Tuple[Optional[int], str]:
    """The smallest ``max_bits <= B`` claim (the paper's formula for this instance)."""
    best, src = None, ""
    for c in claims:
        if c["quantity"] == "max_bits" and c["op"] == "<=":
            b = math.floor(Fraction(c["bound"]))
            if best is None or b < best:
                best, src = b, c.get("source", "")
    return best, src


def _richness(r: Dict[str, Any]) -> Tuple:
    """Which of several records of one point (different settings) a row shows: the one with
    certificates, the mantissa search, more formats, more neighbours."""
    s = r["point"].get("settings", {})
    return (bool(s.get("certify")), bool(s.get("arith_min")), len(s.get("formats", [])), s.get("neighbours", 0),
            len(s.get("bits", [])), r["key"])


def rows(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per (proof, theorem, parameters, seed), combining its tasks."""
    groups: Dict[Tuple, Dict[str, Any]] = {}
    order: List[Tuple] = []
    for r in doc["points"]:
        p = r["point"]
        k = (p["proof"], p["theorem"], json.dumps(p["params"], sort_keys=True), p["seed"])
        if k not in groups:
            groups[k] = {"records": {}}
            order.append(k)
        old = groups[k]["records"].get(p["task"])
        if old is None or _richness(r) > _richness(old):  # the same point swept with other settings
            groups[k]["records"][p["task"]] = r
    out = []
    for k in order:
        recs = groups[k]["records"]
        any_r = next(iter(recs.values()))
        p, m = any_r["point"], any_r["model"]
        bound, bsrc = formula_bound(any_r.get("claims", []))
        ov = sorted((p.get("overrides") or {}).keys())
        series = (f"{p['theorem']} [{p['instance']}] varying {', '.join(ov)}" if ov
                  else f"{p['theorem']} (the proof file's instances)")
        row: Dict[str, Any] = {
            "proof": p["proof"], "theorem": p["theorem"], "instance": _slug(p), "params": _params_text(p["params"]),
            "series": series, "base": p["instance"], "varied": ov,
            "seed": p["seed"], "N": m["n_examples"], "n_params": m["n_params"], "n_nonzero": m["n_nonzero"],
            "width": m["width"], "depth": m["depth"], "max_bits": m["max_bits"], "total_bits": m["total_bits"],
            "sig_bits": m.get("identity_b_float"), "frac_bits": m.get("identity_b_fixed"),
            "formula_bits": bound, "formula_source": bsrc, "decode": m["decode"], "softmax": m.get("softmax"),
            "info_bits": any_r["information"]["bits"], "C": any_r["information"]["C"],
            "label_entries": any_r["information"]["labels"],
        }
        violations = []
        for mode in ("float", "fixed"):
            r = recs.get(f"quant-{mode}")
            if not r:
                continue
            res = r["result"]
            for crit in ("exact", "nearest"):
                c = res["criteria"][crit]
                row[f"{mode}_{crit}"] = c["min_b"]
                row[f"{mode}_{crit}_status"] = c["status"]
                if c.get("at_min"):
                    row[f"{mode}_{crit}_storage"] = c["at_min"]["storage_bits"]
                    row[f"{mode}_{crit}_total"] = c["at_min"]["storage_bits"] * m["n_params"]
                    row[f"{mode}_{crit}_qmax"] = c["at_min"]["max_bits"]
                    row[f"{mode}_{crit}_qtotal"] = c["at_min"]["total_bits"]
                for v in c["violations"]:
                    violations.append(f"{mode}/{crit} b={v['b']} {'ok' if v['ok'] else 'fails'}")
                if crit == "exact" and c.get("certificates"):
                    row[f"{mode}_certified"] = "; ".join(f"{x['verdict']} at b={x['b']}" for x in c["certificates"])
            row[f"{mode}_evals"] = len(res["evals"])
        row["violations"] = violations
        a = recs.get("arith")
        if a:
            for name, f in a["result"]["formats"].items():
                row[f"fmt_{name}_fail"] = f["exact"]["fail"]
                row[f"fmt_{name}_nearest_fail"] = f["nearest"]["fail"]
                row[f"fmt_{name}_nonfinite"] = f["first_nonfinite_layer"] is not None
                row[f"fmt_{name}_failing"] = f["exact"]["failing"]
            mt = a["result"].get("mantissa")
            if mt:
                row["mantissa_exact"] = mt["criteria"]["exact"]["min_b"]
                row["mantissa_nearest"] = mt["criteria"]["nearest"]["min_b"]
                for crit in ("exact", "nearest"):
                    for v in mt["criteria"][crit]["violations"]:
                        violations.append(f"mantissa/{crit} b={v['b']} {'ok' if v['ok'] else 'fails'}")
        row["seconds"] = sum((doc.get("seconds", {}).get(r["key"]) or 0) for r in recs.values())
        out.append(row)
    return out


def _fmt_cell(row, name) -> str:
    k = f"fmt_{name}_fail"
    if k not in row:
        return ""
    n = row["N"]
    f = row[k]
    s = "ok" if f == 0 else f"{f}/{n} wrong"
    if row.get(f"fmt_{name}_nonfinite"):
        s += " (inf)"
    return s


def _num(x) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:,.0f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _min_cell(row, mode) -> str:
    e, n = row.get(f"{mode}_exact", "missing"), row.get(f"{mode}_nearest", "missing")
    if e == "missing":
        return ""
    es = _num(e) if e is not None else "none"
    ns = _num(n) if n is not None else "none"
    return es if es == ns else f"{es} / {ns}"


TABLE_COLUMNS = [
    ("theorem", "theorem"), ("instance", "instance"), ("seed", "seed"), ("N", "N"), ("n_params", "params"),
    ("max_bits", "max bits"), ("formula_bits", "formula bound"), ("float_min", "min float b (exact / nearest)"),
    ("float_storage", "float bits/weight"), ("fixed_min", "min fixed b (exact / nearest)"),
    ("fixed_storage", "fixed bits/weight"), ("total_at_min", "total bits at min"), ("info_bits", "N·log₂C"),
    ("violations", "monotonicity violations"), ("certified", "checker at b*, b* − 1"),
] + [(f"fmt_{f}", f) for f in NAMED_FORMATS] + [("mantissa", "min mantissa (exact / nearest)")]


def table_cells(row: Dict[str, Any]) -> Dict[str, str]:
    c = {
        "theorem": row["theorem"], "instance": row["instance"], "seed": str(row["seed"]), "N": _num(row["N"]),
        "n_params": _num(row["n_params"]), "max_bits": _num(row["max_bits"]), "formula_bits": _num(row["formula_bits"]),
        "float_min": _min_cell(row, "float"), "fixed_min": _min_cell(row, "fixed"),
        "float_storage": _num(row.get("float_exact_storage")) if "float_exact" in row else "",
        "fixed_storage": _num(row.get("fixed_exact_storage")) if "fixed_exact" in row else "",
        "total_at_min": _num(row.get("float_exact_total")) if "float_exact" in row else "",
        "info_bits": _num(row["info_bits"]),
        "violations": str(len(row["violations"])) if row["violations"] else "0",
        "certified": " / ".join(x.split(" at ")[0] for x in row["float_certified"].split("; "))
        if row.get("float_certified") else "",
        "mantissa": (_num(row.get("mantissa_exact")) if row.get("mantissa_exact") == row.get("mantissa_nearest")
                     else f"{_num(row.get('mantissa_exact'))} / {_num(row.get('mantissa_nearest'))}")
        if "mantissa_exact" in row else "",
    }
    for f in NAMED_FORMATS:
        c[f"fmt_{f}"] = _fmt_cell(row, f)
    return c


def _used_columns(rs: Sequence[Dict[str, Any]], columns=TABLE_COLUMNS):
    cells = [table_cells(r) for r in rs]
    keep = [(k, h) for k, h in columns if any(c[k] not in ("", "—") for c in cells) or k in ("theorem", "N")]
    return keep, cells


def markdown_table(rs: Sequence[Dict[str, Any]], columns=TABLE_COLUMNS) -> str:
    keep, cells = _used_columns(rs, columns)
    out = ["| " + " | ".join(h for _, h in keep) + " |", "|" + "|".join("---" for _ in keep) + "|"]
    for c in cells:
        out.append("| " + " | ".join(c[k].replace("|", "\\|") for k, _ in keep) + " |")
    return "\n".join(out)


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "—": "--", "·": r"$\cdot$",
        "₂": r"$_2$"}


def tex_escape(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def latex_table(rs: Sequence[Dict[str, Any]], columns=TABLE_COLUMNS, caption: str = "") -> str:
    """A booktabs ``tabular`` (``\\usepackage{booktabs}``) with the same columns as the Markdown table."""
    keep, cells = _used_columns(rs, columns)
    align = "".join("l" if k in ("theorem", "instance") else "r" for k, _ in keep)
    out = [r"\begin{table}[ht]", r"\centering", r"\scriptsize", r"\begin{tabular}{" + align + "}", r"\toprule",
           " & ".join(tex_escape(h) for _, h in keep) + r" \\", r"\midrule"]
    for c in cells:
        out.append(" & ".join(tex_escape(c[k]) for k, _ in keep) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        out.append(r"\caption{" + tex_escape(caption) + "}")
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"


CSV_FIELDS = ["proof", "theorem", "instance", "params", "seed", "N", "label_entries", "C", "n_params", "n_nonzero",
              "width", "depth", "max_bits", "total_bits", "sig_bits", "frac_bits", "formula_bits", "info_bits"] + \
    [f"{m}_{c}{s}" for m in ("float", "fixed") for c in ("exact", "nearest")
     for s in ("", "_status", "_storage", "_total", "_qmax", "_qtotal")] + \
    ["float_certified", "fixed_certified", "float_evals", "fixed_evals", "violations"] + \
    [f"fmt_{f}_{s}" for f in NAMED_FORMATS for s in ("fail", "nearest_fail", "nonfinite")] + \
    ["mantissa_exact", "mantissa_nearest", "seconds"]


def csv_text(rs: Sequence[Dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rs:
        r2 = dict(r)
        r2["violations"] = "; ".join(r["violations"])
        if isinstance(r2.get("info_bits"), float):
            r2["info_bits"] = f"{r2['info_bits']:.3f}"
        if isinstance(r2.get("seconds"), float):
            r2["seconds"] = f"{r2['seconds']:.2f}"
        w.writerow(r2)
    return buf.getvalue()


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".partial"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_tables(doc: Dict[str, Any], out_dir: str, prefix: str = "sweep") -> List[str]:
    """CSV, Markdown and LaTeX tables of a sweep document into ``out_dir``."""
    rs = rows(doc)
    paths = []
    for ext, text in (("csv", csv_text(rs)), ("md", markdown_table(rs) + "\n"),
                      ("tex", latex_table(rs, caption="Bit-precision sweep (exactmem)"))):
        p = os.path.join(out_dir, f"{prefix}.{ext}")
        _write(p, text)
        paths.append(p)
    return paths


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
            skipped = "matplotlib is not installed (pip install -e '.[plot]'); no plots"
        else:
            made = make_plots(rows(doc), img_dir, prefix)
    kw = {"title": title} if title else {}
    text = report_markdown(doc, made, md_dir, read_commands(paths), report_command=report_command, **kw)
    _write(out, text)
    return {"out": out, "plots": [p for v in made.values() for p in v], "skipped": skipped, "rows": len(rows(doc))}


def records_of(doc: Dict[str, Any]) -> Iterable[Dict[str, Any]]:
    return doc["points"]
