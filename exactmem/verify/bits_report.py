"""Tables, the plot and the command line of the bit-width sweep of a trained network (`exactmem.verify.bits`).

The command is ``python -m exactmem sweep MODEL.onnx --data DATA.npz``.

Floats appear here only to draw the plot; every number in a table is an exact count.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from ..errors import install_hint
from . import bits as _bits
from .bits import DEFAULT_BITS, FORMAT_MARKS, BitsResult

__all__ = ["sweep_bits", "markdown_table", "side_by_side", "construction_rows", "plot_counts", "write_outputs", "write_json", "cli"]

BITS_JSON, BITS_MD, BITS_PNG = "bits.json", "bits.md", "bits.png"


def _rows_list(rows: List[int], limit: int = 8) -> str:
    """Row indices for a table cell, the first ``limit`` of them."""
    if not rows:
        return "—"
    head = ", ".join(str(r) for r in rows[:limit])
    return head + (f", … ({len(rows)})" if len(rows) > limit else "")


def markdown_table(res: BitsResult) -> str:
    """One row per evaluated b (and full precision): counts, lost/gained examples, marks."""
    head = ("| b | format | certified | refuted | unknown | keeps all memorized | lost (rows) | gained | "
            "weights changed | bits/weight stored | float count |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    f = res.full
    fc = lambda p: "n/a" if p.float_count is None else str(p.float_count)
    lines.append(f"| full | stored | {f.certified} | {f.refuted} | {f.unknown} | yes | — | — | 0 | — | {fc(f)} |")
    for b in sorted(res.points, reverse=True):
        p = res.points[b]
        mark = FORMAT_MARKS.get(b, "")
        star = " **b\\***" if b == res.b_star else (" b\\*−1" if res.b_star and b == res.b_star - 1 else "")
        viol = " (violation)" if b in res.violations else ""
        lines.append(f"| {b}{star} | {mark} | {p.certified} | {p.refuted} | {p.unknown} | "
                     f"{'yes' if p.ok else 'no'}{viol} | {_rows_list(p.lost)} | {len(p.gained)} | {p.changed} | "
                     f"{res.storage_bits(b)} | {fc(p)} |")
    return "\n".join(lines)


def headline(res: BitsResult) -> List[str]:
    """The summary lines: b*, the kernel's verdicts on the certificates, violations, notes."""
    out = [res.summary()]
    if res.b_star is not None:
        out.append(f"stored float-style: {res.storage_bits(res.b_star)} bits per weight (sign + {res.b_star} + "
                   f"{res.exponent_bits} exponent bits) over {res.n_weights} weights; every weight kept exactly "
                   f"needs {res.identity_bits} significant bits")
    for role, v in res.kernel.items():
        out.append(f"kernel on {res.certificates[role]}: {v['status']} ({v['seconds']:.1f} s)")
    for role, path in res.certificates.items():
        if role not in res.kernel:
            out.append(f"certificate ({role}): {path} (not checked)")
    out.append("monotonicity violations: " + (", ".join(f"b = {b}" for b in res.violations) or "none")
               + f" among the {len(res.points)} evaluated widths")
    if res.kept:
        out.append(f"kept exact (structure, not weights): {len(res.kept)} initializers ("
                   + ", ".join(f"{k}: {v}" for k, v in list(res.kept.items())[:6])
                   + (", …" if len(res.kept) > 6 else "") + ")")
    return out + list(res.notes)


def construction_rows(sweep_doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The ``quant-float`` points of a proof sweep document (``exactmem.sweep.load_sweep``) as
    rows for [`side_by_side`][exactmem.verify.bits_report.side_by_side]: N, parameters, max bits, b*, stored bits/weight, the formula."""
    from ..sweep.tables import formula_bound

    rows = []
    for rec in sweep_doc.get("points", []):
        if rec.get("point", {}).get("task") != "quant-float" or rec.get("status", "done") != "done":
            continue
        crit = rec["result"]["criteria"]["exact"]
        m = rec["model"]
        bound, _ = formula_bound(rec.get("claims", []))
        distinct = next((int(c["bound"]) for c in rec.get("claims", [])
                         if c["quantity"] == "n_examples" and c["op"] == "=="), None)
        rows.append({"name": f"{rec['point']['theorem']} {rec['point']['instance']}",
                     "N": rec["point"]["params"].get("N"), "n_distinct": distinct,
                     "n_params": m["n_params"], "max_bits": m["max_bits"], "b_star": crit.get("min_b"),
                     "storage_bits": (crit.get("at_min") or {}).get("storage_bits"), "formula": bound})
    return rows


def side_by_side(res: BitsResult, constructions: List[Dict[str, Any]]) -> str:
    """The trained network's b* next to the constructions' (Markdown)."""
    head = ("| network | N (distinct) | weights | bits to hold every weight exactly | certified minimal b | "
            "stored bits/weight at b | total bits | paper's formula (max bits) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    if res.b_star is not None:
        sb = res.storage_bits(res.b_star)
        lines.append(f"| trained: {res.name} ({res.memorized} memorized) | {res.n_rows} ({res.n_distinct}) | "
                     f"{res.n_weights:,} | {res.identity_bits} | {res.b_star} | {sb} | {sb * res.n_weights:,} | — |")
    for c in constructions:
        sb = c.get("storage_bits")
        total = f"{sb * c['n_params']:,}" if sb else "—"
        lines.append(f"| construction: {c['name']} | {c['N']} ({c.get('n_distinct')}) | {c['n_params']:,} | "
                     f"{c['max_bits']} | {c['b_star']} | {sb or '—'} | {total} | {c.get('formula') or '—'} |")
    return "\n".join(lines)


def plot_counts(res: BitsResult, path: str) -> Optional[str]:
    """Certified count vs b (PNG), the bfloat16/float16/float32 significands marked; None (and a
    note in ``res.notes``) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        res.notes.append(f"plot skipped: matplotlib is not installed ({install_hint('plot')})")
        return None
    bs = sorted(res.points)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(bs, [res.points[b].certified for b in bs], "o-", label="certified")
    ax.plot(bs, [res.points[b].certified - len(res.points[b].gained) for b in bs], "s--", ms=3,
            label="of those memorized at full precision")
    ax.axhline(res.full.certified, color="grey", lw=0.8, ls=":", label=f"full precision ({res.full.certified})")
    for b, fmt in FORMAT_MARKS.items():
        if bs and bs[0] <= b <= max(bs[-1], 24):
            ax.axvline(b, color="tab:red", lw=0.6, ls="--")
            ax.text(b, 0.02, f" {fmt}", rotation=90, transform=ax.get_xaxis_transform(), fontsize=8,
                    color="tab:red", va="bottom")
    if res.b_star is not None:
        ax.axvline(res.b_star, color="tab:green", lw=1.2, label=f"b* = {res.b_star}")
    ax.set_xlabel("significant bits per weight (b)")
    ax.set_ylabel(f"certified examples (of {res.n_distinct})")
    ax.set_title(f"{res.name}: certified count vs weight bit-width")
    ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_outputs(res: BitsResult, out: str, plot: bool = True) -> None:
    """``bits.md`` (table and headline) and ``bits.png`` (when ``plot``) in ``out``."""
    if plot:
        res.plot = plot_counts(res, os.path.join(out, BITS_PNG))
    path = os.path.join(out, BITS_MD)
    with open(path, "w", encoding="utf-8") as f:
        f.write(markdown_table(res) + "\n\n" + "\n".join(f"* {h}" for h in headline(res)) + "\n")
    res.table_path = path



def write_json(res: BitsResult, out: str) -> str:
    """``bits.json``: everything of the result (counts are integers; no floats but seconds)."""
    path = os.path.join(out, BITS_JSON)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(res.to_json(), f, indent=1)
    return path


def _error(text: str) -> int:
    from ..errors import report_error

    return report_error(text)


def parse_bits(text: Optional[str]) -> List[int]:
    """``--bits 2,4,8`` (also ``a:b`` ranges) as integers >= 1; a VerifyInputError otherwise."""
    from ..sweep.formats import SweepError
    from ..sweep.spec import parse_values
    from .onnx_import import VerifyInputError

    if text is None:

        return list(DEFAULT_BITS)
    try:
        vals = parse_values(text)
    except SweepError as e:
        raise VerifyInputError(f"--bits: {e}") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in vals):
        raise VerifyInputError(f"--bits takes integers >= 1 (significant bits per weight), got {text!r}")
    return vals


def cli(args) -> int:
    """``sweep MODEL.onnx --data DATA.npz [--bits …] [--out DIR] [--json] [--workers N]``: exit 0
    when the sweep ran (whatever the counts), 3 for bad input (one line)."""
    from .onnx_import import VerifyInputError

    try:
        if not getattr(args, "data", None):
            raise VerifyInputError(f"sweeping an ONNX model needs --data DATA.npz (inputs and labels) for {args.proof}")
        bits = parse_bits(args.bits)
        out = args.out or os.path.join("sweeps", os.path.splitext(os.path.basename(args.proof))[0] + "-bits")
        res = sweep_bits(args.proof, data=args.data, bits=bits, position=getattr(args, "position", "last"),
                         out=out, workers=args.workers, neighbours=args.neighbours,
                         check=not getattr(args, "no_check", False), plot=True,
                         max_precision=getattr(args, "max_precision", 4096), quiet=args.quiet or args.json)
    except (VerifyInputError, OSError) as e:
        if getattr(args, "debug", False):
            raise
        return _error(e)
    if args.json:
        print(json.dumps(res.to_json()))
        return 0
    print(markdown_table(res))
    print()
    for h in headline(res):
        print(h)
    print(f"results: {res.table_path}, {os.path.join(out, BITS_JSON)}" + (f", {res.plot}" if res.plot else ""))
    return 0


def _write_all(res: BitsResult, out: str, plot: bool) -> None:
    """The table, headline and plot (``write_outputs``), then ``bits.json`` (with the timings)."""
    write_outputs(res, out, plot=plot)
    write_json(res, out)


def sweep_bits(*args, **kwargs) -> BitsResult:
    """``em.sweep_bits``: `exactmem.verify.bits.sweep_bits`, writing ``bits.md``,
    ``bits.png`` and ``bits.json`` into ``out`` when one is given."""
    return _bits.sweep_bits(*args, write=_write_all, **kwargs)
