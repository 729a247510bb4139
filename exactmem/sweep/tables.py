"""Tables of a sweep document, written as ``sweep.csv``, ``sweep.md`` and ``sweep.tex`` next to ``sweep.json``.

One row per theorem instance and seed: the construction's sizes, the minimal bits of each
quantization, the named floating-point formats.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .formats import NAMED_FORMATS
from .results import write_text_atomic
from .spec import _slug


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


def write_tables(doc: Dict[str, Any], out_dir: str, prefix: str = "sweep") -> List[str]:
    """CSV, Markdown and LaTeX tables of a sweep document into ``out_dir``."""
    rs = rows(doc)
    paths = []
    for ext, text in (("csv", csv_text(rs)), ("md", markdown_table(rs) + "\n"),
                      ("tex", latex_table(rs, caption="Bit-precision sweep (exactmem)"))):
        p = os.path.join(out_dir, f"{prefix}.{ext}")
        write_text_atomic(p, text)
        paths.append(p)
    return paths
