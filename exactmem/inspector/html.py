"""``python -m exactmem inspect CERT --html OUT.html``: one self-contained HTML page for a certificate.

The page (no server, no external URL: the CSS is inline and the plots are base64 PNGs) shows

* the header: theorem, instance, seed, hash, source and statement (``meta``), the hypotheses;
* the independent checker's verdict ([`check_certificate`][exactmem.kernel.checker.check_certificate]);
* the claims table: claim, bound, measured, holds;
* the stages and layers with parameters and bits (the facts ``inspect`` prints), and a
  bits-per-layer plot; for a graph model (``model.graph``, ``docs/verify-format.md``) its
  operators and constant tensors instead;
* the head-to-subset assignment graph (`exactmem.constructions.mahdavi.assign`) when ``meta`` carries one
  (``meta.assignment``: node-link JSON as written by ``assign.write_json``, or
  ``meta.partition`` / ``meta.info.partition``: one list of example indices per head);
* the per-example verdicts, failures first, at most ``max_rows`` rows (the counts cover all);
* for a lower-bound certificate (format ``exactmem-lower-bound``) the statement, premises,
  definitions and the steps with the kernel's verdict of each (`exactmem.inspector.html_lower`);
  the assignment and example sections live in `exactmem.inspector.html_parts`.

Everything read from the certificate is untrusted and goes through `html.escape`. This
module only displays: verdicts come from the kernel's public functions, never from here.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Tuple

from ..certificate.writer import write_bytes_atomic
from .html_base import (MAX_LAYER_ROWS, MAX_ROWS, InspectError, clip, esc, page, png_img,  # noqa: F401
                                 table, verdict_html)


def write_html(cert_path: str, out_path: str, max_rows: int = MAX_ROWS, limits=None) -> Tuple[str, str]:
    """Check ``cert_path`` with the kernel and write its page to ``out_path``; returns (out_path,
    a one-line summary). InspectError when the file is unreadable or malformed."""
    from ..kernel.checker import LOWER_BOUND_FORMAT, Limits, MalformedCertificate, load_certificate
    from ..certificate.chunkfiles import chunk_reader

    limits = limits or Limits()
    if os.path.isdir(cert_path):  # the words of `check`, one clause each
        raise InspectError(f"{cert_path} is a directory, not a certificate file (give a .json or .json.gz file)")
    if not os.path.exists(cert_path):
        raise InspectError(f"no such certificate file: {cert_path}")
    try:
        doc = load_certificate(cert_path, limits)
    except MalformedCertificate as e:  # the kernel's message names the file already
        raise InspectError(f"malformed certificate: {e}") from None
    except OSError as e:
        raise InspectError(str(e)) from None
    read_chunk = chunk_reader(os.path.dirname(os.path.abspath(cert_path)), limits)
    try:
        if isinstance(doc, dict) and doc.get("format") == LOWER_BOUND_FORMAT:
            from .html_lower import lower_bound_page

            text, v = lower_bound_page(doc, os.path.basename(cert_path), limits)
        else:
            text, v = certificate_page(doc, os.path.basename(cert_path), read_chunk, limits, max_rows)
    except MalformedCertificate as e:
        raise InspectError(f"malformed certificate {cert_path}: {e}") from None
    # a temporary file, then a rename; an error names out_path and the reason (never the temporary name)
    write_bytes_atomic(text.encode("utf-8"), out_path, make_dirs=False)
    return out_path, f"{v.status}: {v.message}"


# ----------------------------------------------------------------------------- memorization certificates


def certificate_page(doc: dict, name: str, read_chunk, limits, max_rows: int = MAX_ROWS):
    """(the page's HTML, the kernel's Verdict) for an ``exactmem-certificate`` document."""
    from ..kernel.checker import check_certificate
    from ..kernel.limits import Budget
    from ..kernel.schema import parse_certificate

    t0 = time.perf_counter()
    v = check_certificate(doc, limits=limits, read_chunk=read_chunk)
    seconds = time.perf_counter() - t0
    cert = parse_certificate(doc, Budget(limits))
    from .html_parts import Examples, assignment_html

    examples = Examples(doc, cert, v, read_chunk, limits)
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    sections = [verdict_html(v) + f'<p class="note">checked in {seconds:.2f} s by '
                "<code>exactmem.kernel.checker.check_certificate</code> (standard library only, exact)</p>",
                about_html(doc, meta), claims_html(cert, examples.measured()),
                model_html(doc, cert, meta), assignment_html(meta, len(examples.statuses)),
                examples.html(max_rows)]
    sub = (f"{esc(name)} · format {esc(doc.get('format'))} v{esc(doc.get('version'))} · seed {esc(doc.get('seed'))}"
           f" · <span class=\"mono\">{esc(doc.get('hash'))}</span>")
    return page(f"{doc.get('theorem')} [{doc.get('instance')}]", sub, sections), v


def about_html(doc: dict, meta: dict) -> str:
    out = ["<h2>Theorem</h2>"]
    for k in ("source", "statement"):
        if k in meta:
            out.append(f"<p><b>{esc(k)}:</b> {esc(meta[k])}</p>")
    if isinstance(meta.get("params"), dict) and meta["params"]:
        out.append("<p><b>parameters:</b> " + esc(", ".join(f"{k} = {clip(v, 60)}" for k, v in meta["params"].items()))
                   + "</p>")
    hyps = meta.get("hypotheses")
    if isinstance(hyps, list) and hyps:
        rows, cls = [], []
        for h in hyps:
            h = h if isinstance(h, dict) else {"name": h}
            ok = h.get("holds")
            mark = "yes" if ok is True else "no" if ok is False else "na"
            rows.append([clip(h.get("name", ""), 200), {"yes": "holds", "no": "fails", "na": "not decided"}[mark],
                         clip(h.get("detail", ""), 300)])
            cls.append(["", mark, ""])
        out.append("<p><b>hypotheses of the theorem</b> (evaluated by the producer, reported, not checked by the kernel)"
                   "</p>" + table(["hypothesis", "", "detail"], rows, cls))
    if isinstance(meta.get("info"), dict) and meta["info"]:
        out.append("<details><summary>construction facts reported by the producer (<code>meta.info</code>, "
                   f"{len(meta['info'])} entries; not checked)</summary>"
                   + table(["key", "value"], [[clip(k, 80), clip(v, 200)] for k, v in meta["info"].items()])
                   + "</details>")
    return "".join(out)


def claims_html(cert, measured: Dict[str, Any]) -> str:
    from ..kernel.schema import OPS
    from ..kernel.text import fmt

    rows, cls = [], []
    for raw, q, op, bound in cert.claims:
        m = measured.get(q, "missing")
        if m == "missing":
            got, holds = "not measured (the check stopped earlier)", "na"
        elif m is None:
            got, holds = "none (fewer than two distinct tokens)", "yes" if op in (">=", ">") else "no"
        else:
            got, holds = fmt(m), "yes" if OPS[op](m, bound) else "no"
        rows.append([f"{q} {op}", clip(fmt(bound), 60), clip(got, 60),
                     {"yes": "holds", "no": "fails", "na": "—"}[holds], clip(raw.get("source", ""), 200)])
        cls.append(["mono", "num", "num", holds, ""])
    if not rows:
        return "<h2>Claims</h2><p>The certificate states no claims.</p>"
    return (f"<h2>Claims ({len(rows)})</h2><p class=\"note\">Each claim is judged by the kernel against the quantity "
            "it measures from the model and the examples (never taken from the certificate).</p>"
            + table(["claim", "bound", "measured", "holds", "source"], rows, cls))


# ----------------------------------------------------------------------------- the model


def model_html(doc: dict, cert, meta: dict) -> str:
    if cert.graph is not None:
        return graph_model_html(doc)
    from ..model.measure import measure, paper_counts
    from ..model.serialize import model_from_json

    try:
        model = model_from_json(doc["model"])
    except (KeyError, ValueError, TypeError) as e:
        return f"<h2>Model</h2><p>cannot read the model: {esc(e)}</p>"
    rows = layer_rows(model)
    m = measure(model)
    out = ["<h2>Model</h2>", f"<p>input {esc(model.input_type)} ({esc(model.input_dim)}), readout {esc(model.readout)}, "
           f"decode {esc(model.decode)}; {len(rows)} layers</p>",
           table(list(m.as_dict()), [list(m.as_dict().values())])]
    pc = paper_counts(model)
    if pc:
        out.append("<p class=\"note\">papers' own parameter conventions: "
                   + esc("; ".join(f"{k}: {v}" for k, v in pc.items())) + "</p>")
    stages = stage_rows(meta, rows)
    out.append(f"<h2>Stages ({len(stages)})</h2>")
    if not isinstance(meta.get("stages"), list):
        out.append('<p class="note">The certificate names no stages: these are its runs of layers, split at each '
                   "attention layer.</p>")
    out.append(table(["stage", "layers", "count", "params", "nonzero", "max bits", "total bits"],
                     [[s["name"], f"{s['start']}–{s['stop'] - 1}", s["stop"] - s["start"], s["params"], s["nonzero"],
                       s["max_bits"], s["total_bits"]] for s in stages]))
    out.append("<h2>Bits per layer</h2>" + bits_plot(rows, stages))
    shown = rows if len(rows) <= MAX_LAYER_ROWS else rows[:MAX_LAYER_ROWS // 2] + rows[-MAX_LAYER_ROWS // 2:]
    out.append(f"<h2>Layers ({len(rows)})</h2>")
    if len(shown) < len(rows):
        out.append(f'<p class="note">showing the first and last {MAX_LAYER_ROWS // 2} of {len(rows)} layers '
                   "(the plot above shows all)</p>")
    out.append(f"<details{' open' if len(rows) <= 40 else ''}><summary>the {len(rows)} layers</summary>"
               + table(["layer", "type", "shape", "params", "nonzero", "max bits", "total bits"],
                       [[r["index"], r["type"], r["shape"], r["params"], r["nonzero"], r["max_bits"], r["total_bits"]]
                        for r in shown]) + "</details>")
    return "".join(out)


def layer_rows(model) -> List[Dict[str, Any]]:
    """``model.summary._layer_row`` per layer (the facts ``inspect`` prints), plus total bits."""
    from ..model.layers import Attention
    from ..model.measure import _matrices
    from ..model.summary import _layer_row
    from ..arith.numbers import bits

    rows = []
    for i, layer in enumerate(model.layers):
        r = _layer_row(i, layer)
        r["total_bits"] = sum(bits(x) for M in _matrices(layer) for row in M for x in row)
        if isinstance(layer, Attention):
            r["shape"] += f", query={layer.query}, keys={layer.keys}" + (" +residual" if layer.residual else "")
        elif getattr(layer, "residual", False):
            r["shape"] += " +residual"
        rows.append(r)
    return rows


def stage_rows(meta: dict, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``meta.stages`` ([{"name", "start", "stop"}]) when valid, else runs of layers split at attention."""
    spans, given = [], meta.get("stages")
    if isinstance(given, list):
        for s in given:
            if (isinstance(s, dict) and all(isinstance(s.get(k), int) and not isinstance(s.get(k), bool)
                                            for k in ("start", "stop")) and 0 <= s["start"] < s["stop"] <= len(rows)):
                spans.append((str(s.get("name", "")), s["start"], s["stop"]))
    if not spans:
        i = 0
        while i < len(rows):
            j = i + 1
            if rows[i]["type"] in ("attention", "embed"):
                name = f"{rows[i]['type']} ({rows[i]['shape']})"
            else:
                while j < len(rows) and rows[j]["type"] not in ("attention", "embed"):
                    j += 1
                name = "feed-forward stack" if j - i > 1 else rows[i]["type"]
            spans.append((name, i, j))
            i = j
    out = []
    for name, a, b in spans:
        seg = rows[a:b]
        out.append({"name": name, "start": a, "stop": b, "params": sum(r["params"] for r in seg),
                    "nonzero": sum(r["nonzero"] for r in seg), "max_bits": max((r["max_bits"] for r in seg), default=0),
                    "total_bits": sum(r["total_bits"] for r in seg)})
    return out


def _figure(**kw):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure(**kw)


def bits_plot(rows: List[Dict[str, Any]], stages: List[Dict[str, Any]]) -> str:
    fig = _figure(figsize=(11, 4.8), layout="constrained")
    if fig is None:
        return '<p class="note">matplotlib is not installed (the <code>plot</code> extra): no plot.</p>'
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    x = [r["index"] for r in rows]
    colour = {"attention": "#d95f02", "embed": "#7570b3", "affine": "#1b9e77", "feedforward": "#66a61e"}
    cs = [colour.get(r["type"], "#888888") for r in rows]
    ax1.bar(x, [r["max_bits"] for r in rows], color=cs, width=0.85)
    ax1.set_ylabel("max bits per weight")
    ax2.bar(x, [max(r["total_bits"], 1) for r in rows], color=cs, width=0.85)
    ax2.set_yscale("log")
    ax2.set_ylabel("total bits (log)")
    ax2.set_xlabel("layer")
    from matplotlib.ticker import MaxNLocator

    ax2.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax2.set_xlim(min(x, default=0) - 0.6, max(x, default=0) + 0.6 + max(0, 4 - len(x)))  # one layer: no ±0.4 ticks
    for k, s in enumerate(stages):
        if k % 2:
            for ax in (ax1, ax2):
                ax.axvspan(s["start"] - 0.5, s["stop"] - 0.5, color="0.93", zorder=0)
    from matplotlib.patches import Patch

    kinds = sorted({r["type"] for r in rows})
    ax1.legend(handles=[Patch(color=colour.get(k, "#888888"), label=k) for k in kinds], fontsize=8, loc="upper right")
    ax1.set_title("bit complexity per layer (shaded bands: stages)", fontsize=10)
    return png_img(fig, "bits per layer")


def graph_model_html(doc: dict) -> str:
    """A graph model (a trained network): operators and constant tensors with their bits."""
    from ..arith.numbers import bits, parse_rational

    g = doc["model"]["graph"]
    ops: Dict[str, int] = {}
    for n in g.get("nodes", []):
        ops[str(n.get("op"))] = ops.get(str(n.get("op")), 0) + 1
    consts = []
    for cname, c in (g.get("constants") or {}).items():
        vals = c.get("values")
        if vals is not None:
            bs = [bits(parse_rational("0" if s in ("-inf", "inf", "nan") else s)) for s in vals]  # as the kernel counts
            consts.append({"name": cname, "shape": c.get("shape"), "n": len(bs), "max": max(bs, default=0),
                           "total": sum(bs), "kind": "rational"})
        else:
            consts.append({"name": cname, "shape": c.get("shape"), "n": len(c.get("ints") or []), "max": 0, "total": 0,
                           "kind": "ints"})
    out = ["<h2>Model: a graph (trained network, <code>docs/verify-format.md</code>)</h2>",
           f"<p>input {esc(clip(doc['model'].get('input'), 200))}, readout {esc(clip(doc['model'].get('readout'), 200))}; "
           f"{sum(ops.values())} nodes, {len(consts)} constant tensors, "
           f"{sum(c['n'] for c in consts if c['kind'] == 'rational')} stored weights, "
           f"{sum(c['total'] for c in consts)} bits in all</p>",
           "<h2>Operators</h2>", table(["op", "nodes"], sorted(([k, v] for k, v in ops.items()), key=lambda r: -r[1]))]
    weights = [c for c in consts if c["kind"] == "rational"]
    if weights:
        fig = _figure(figsize=(11, 3.6), layout="constrained")
        if fig is not None:
            ax = fig.subplots()
            shown = weights[:120]
            ax.bar(range(len(shown)), [c["max"] for c in shown], color="#1b9e77")
            ax.set_ylabel("max bits per weight")
            ax.set_xlabel("constant tensor (in file order)" + (", first 120" if len(weights) > 120 else ""))
            ax.set_title("bit complexity per weight tensor", fontsize=10)
            out.append("<h2>Bits per weight tensor</h2>" + png_img(fig, "bits per weight tensor"))
    shown = consts[:MAX_LAYER_ROWS]
    out.append(f"<h2>Constant tensors ({len(consts)})</h2>")
    if len(shown) < len(consts):
        out.append(f'<p class="note">showing the first {len(shown)} of {len(consts)}</p>')
    out.append(table(["name", "shape", "entries", "max bits", "total bits"],
                     [[clip(c["name"], 80), clip(c["shape"], 60), c["n"], c["max"], c["total"]] for c in shown]))
    return "".join(out)
