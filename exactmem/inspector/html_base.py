"""The building blocks of the HTML view of a certificate (`exactmem.inspector.html`).

Escaping, tables, inline images, the page frame and the verdict badge. Everything from a certificate
is untrusted and goes through `html.escape`."""

from __future__ import annotations

import base64
import html
import io
import json
from typing import Any, List, Optional

MAX_ROWS = 200  # per-example rows shown
MAX_LAYER_ROWS = 400  # layer rows shown (the plot shows every layer)
MAX_CHECK_SECONDS = 600  # per-example re-check of a certificate that is not CERTIFIED
CELL = 120  # characters of an input / output / witness cell

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1b1f23;background:#fafbfc}
header{background:#24292e;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px;font-weight:600}
header .sub{color:#c8cdd3;font-size:13px;margin-top:4px}
main{padding:8px 24px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e1e4e8;border-radius:6px;padding:10px 16px;margin:14px 0}
h2{font-size:16px;margin:6px 0 10px;border-bottom:1px solid #eaecef;padding-bottom:4px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}
th,td{border:1px solid #dfe2e5;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:SFMono-Regular,Consolas,"Liberation Mono",monospace;font-size:12px;overflow-wrap:anywhere}
.verdict{display:inline-block;padding:4px 12px;border-radius:4px;font-weight:700;color:#fff;margin-right:10px}
.CERTIFIED,.pass,.yes{background:#2a9d4b} .REFUTED,.fail,.no{background:#cb2431} .UNKNOWN,.undecided{background:#b08800}
.MALFORMED,.unchecked,.na{background:#6a737d}
td.pass,td.fail,td.undecided,td.unchecked,td.yes,td.no,td.na{color:#fff;font-weight:600;text-align:center}
.note{color:#586069;font-size:12.5px} img{max-width:100%;border:1px solid #eaecef}
details summary{cursor:pointer;color:#0366d6;font-size:13px}
"""


def esc(x: Any) -> str:
    """Text for the page: every string read from a certificate passes here."""
    return html.escape(str(x), quote=True)


def compact(x: Any) -> str:
    """A value for a cell: lists in brackets, strings without quotes."""
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(compact(y) for y in x) + "]"
    return x if isinstance(x, str) else json.dumps(x, default=str, ensure_ascii=False)


def clip(x: Any, n: int = CELL) -> str:
    s = compact(x)
    return s if len(s) <= n else s[:n - 1] + "…"


def table(head: List[str], rows: List[List[Any]], classes: Optional[List[List[str]]] = None) -> str:
    """An HTML table; cells are escaped unless given as ``("raw", html)``."""
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for i, r in enumerate(rows):
        cells = []
        for j, c in enumerate(r):
            cls = classes[i][j] if classes and classes[i][j] else ("num" if isinstance(c, int) and not isinstance(c, bool) else "")
            body = c[1] if isinstance(c, tuple) and c and c[0] == "raw" else esc(c)
            cells.append(f'<td class="{cls}">{body}</td>' if cls else f"<td>{body}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


def png_img(fig, alt: str) -> str:
    """A matplotlib Figure as an inline base64 PNG ``<img>``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode("ascii")}">'


def png_file_img(path: str, alt: str) -> str:
    with open(path, "rb") as f:
        data = f.read()
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}">'


def page(title: str, subtitle: str, sections: List[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
            f"<header><h1>{esc(title)}</h1><div class=\"sub\">{subtitle}</div></header>\n<main>\n"
            + "\n".join(f"<section>{s}</section>" for s in sections if s)
            + "\n</main></body></html>\n")


def verdict_html(v) -> str:
    st = v.status if v.status in ("CERTIFIED", "REFUTED", "UNKNOWN") else "MALFORMED"
    out = [f'<h2>Verdict of the independent checker</h2><p><span class="verdict {st}">{esc(v.status)}</span>'
           f"{esc(v.message)}</p>"]
    if v.witness is not None:
        out.append(f"<p>witness: <code>{esc(json.dumps(v.witness, sort_keys=True, default=str))}</code></p>")
    if v.precision is not None:
        out.append(f'<p class="note">interval precision used: up to {esc(v.precision)} bits</p>')
    return "".join(out)


# ----------------------------------------------------------------------------- entry point


class InspectError(ValueError):
    """The certificate cannot be read (the message names the file and the problem)."""
