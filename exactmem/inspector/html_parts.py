"""The head-to-subset assignment graph and the per-example verdicts of an ``inspect --html`` page.

Parts of the page `exactmem.inspector.html` builds."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Optional, Tuple

from .html_base import MAX_CHECK_SECONDS, clip, esc, png_file_img, table


# ----------------------------------------------------------------------------- the assignment graph


def _partition(meta: dict, T: int) -> Tuple[Optional[List[List[int]]], Dict[int, dict]]:
    """(partition, per-example annotations) from ``meta``, or (None, {}) when it carries none (or
    none that is well formed)."""
    notes: Dict[int, dict] = {}
    part = None
    a = meta.get("assignment")
    if isinstance(a, dict) and isinstance(a.get("edges", a.get("links")), list):
        heads: Dict[int, List[int]] = {}
        for e in a.get("edges", a.get("links")):
            if isinstance(e, dict) and e.get("state") == "active" and isinstance(e.get("head"), int):
                ends = [str(e.get("source")), str(e.get("target"))]
                xs = [s[1:] for s in ends if s.startswith("x") and s[1:].isdigit()]
                if xs:
                    heads.setdefault(e["head"], []).append(int(xs[0]))
        if heads:
            part = [sorted(heads.get(h, [])) for h in range(1, max(heads) + 1)]
        for n in a.get("nodes", []):
            if isinstance(n, dict) and n.get("kind") == "example" and isinstance(n.get("example"), int):
                notes[n["example"]] = {k: n[k] for k in ("dominant_head", "agrees") if k in n}
    if part is None:
        p = meta.get("partition", (meta.get("info") or {}).get("partition") if isinstance(meta.get("info"), dict) else None)
        if isinstance(p, str):
            try:
                p = json.loads(p)
            except ValueError:
                p = None
        part = p
    if not (isinstance(part, list) and part and len(part) <= 64
            and all(isinstance(S, list) and all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < T for t in S)
                    for S in part)):
        return None, {}
    return part, notes


def assignment_html(meta: dict, T: int) -> str:
    part, notes = _partition(meta, T)
    if part is None:
        return ""
    out = [f"<h2>Head-to-subset assignment ({len(part)} heads, {T} examples)</h2>",
           '<p class="note">From the certificate\'s <code>meta</code> (reported by the producer, not checked by the '
           "kernel). Active edge: the head carries a designed pattern on the example; saturated: it attends to one "
           "token (<code>exactmem/constructions/mahdavi/assign.py</code>).</p>"]
    if T <= 400:
        try:
            import tempfile

            from ..constructions.mahdavi.assign import assignment_graph, draw

            G = assignment_graph(part, T)
            for t, d in notes.items():
                if 0 <= t < T:
                    for k, v in d.items():
                        if (k == "agrees" and isinstance(v, bool)) or (k == "dominant_head" and isinstance(v, int)):
                            G.nodes[f"x{t}"][k] = v
            with tempfile.TemporaryDirectory() as tmp:
                path = draw(G, os.path.join(tmp, "assignment.png"))
                out.append(png_file_img(path, "head-to-subset assignment graph"))
        except ImportError:
            out.append('<p class="note">networkx / matplotlib not installed: no drawing.</p>')
    else:
        out.append(f'<p class="note">{T} examples: too many to draw; the table lists the subsets.</p>')
    out.append(table(["head", "|S_h|", "examples S_h"],
                     [[f"h{h + 1}", len(S), clip(", ".join(map(str, S)), 400)] for h, S in enumerate(part)]))
    return "".join(out)


# ----------------------------------------------------------------------------- examples

STATUS_ORDER = {"fail": 0, "undecided": 1, "unchecked": 2, "pass": 3}


class Examples:
    """Per-example verdicts. A CERTIFIED verdict covers every example (the graph model's claimed
    verdicts are confirmed). Otherwise the kernel stopped at its first refutation, so every example
    is re-checked on its own with the kernel's public ``check_examples`` (one shared data-facts
    record, so a repeated input with another label is found), within MAX_CHECK_SECONDS."""

    def __init__(self, doc, cert, verdict, read_chunk, limits):
        from ..kernel.checker import check_examples, new_facts, precision_cap
        from ..kernel.limits import Budget, LimitExceeded
        from ..kernel.schema import parse_chunk

        self.cert, self.verdict, self.graph = cert, verdict, cert.graph is not None
        self.parts, self.statuses, self.details = [], [], {}
        self.facts, self.complete, self.note = None, False, ""
        budget = Budget(limits)
        try:
            if cert.chunks is None:
                self.parts = [cert]
            else:
                self.parts = [parse_chunk(cert, k, read_chunk(c[0]), budget) for k, c in enumerate(cert.chunks)]
        except LimitExceeded as x:
            self.parts, self.note = [], f"examples not shown: {x}"
        n_all = sum(len(p.inputs) for p in self.parts)
        if verdict.status == "CERTIFIED":
            self.statuses = ["pass"] * n_all
            self.complete = True
            return
        self.facts = new_facts(cert)
        cap = precision_cap(cert, None, limits)
        stop = time.perf_counter() + MAX_CHECK_SECONDS
        for part in self.parts:
            for e in range(len(part.inputs)):
                if time.perf_counter() > stop:
                    self.statuses.append("unchecked")
                    continue
                v = check_examples(part, [e], cap, budget, self.facts)
                if v.status == "CERTIFIED":
                    self.statuses.append("pass")
                elif v.status == "REFUTED":
                    self.statuses.append("fail")
                    self.details[len(self.statuses) - 1] = v.message + (
                        "; witness " + json.dumps(v.witness, sort_keys=True, default=str) if v.witness else "")
                else:
                    self.statuses.append("unchecked" if v.limit == "time_limit" else "undecided")
                    self.details[len(self.statuses) - 1] = v.message
        self.complete = "unchecked" not in self.statuses
        if not self.complete:
            self.note = f"the per-example re-check stopped after {MAX_CHECK_SECONDS} s; later examples are not checked"

    def measured(self) -> Dict[str, Any]:
        m = dict(self.verdict.measured or self.cert.measured)
        if self.facts is not None and self.complete:
            m.update(self.facts.quantities())
        return m

    def _row(self, g: int) -> Tuple[Any, Any, Any]:
        from ..kernel.text import fmt

        for p in self.parts:
            if p.first <= g < p.first + len(p.inputs):
                e = g - p.first
                return fmt(p.inputs[e]), fmt(p.labels[e]), fmt(p.outputs[e])
        return "", "", ""

    def html(self, max_rows: int) -> str:
        n = len(self.statuses)
        counts = {s: self.statuses.count(s) for s in STATUS_ORDER}
        order = sorted(range(n), key=lambda g: (STATUS_ORDER[self.statuses[g]], g))[:max_rows]
        label = {"pass": "pass", "fail": "REFUTED", "undecided": "undecided", "unchecked": "not checked"}
        if self.graph:
            label = {"pass": "confirmed", "fail": "contradicted", "undecided": "undecided", "unchecked": "not checked"}
        how = ("the kernel confirmed every claim" if self.verdict.status == "CERTIFIED"
               else "each example re-checked on its own by the kernel (check_examples)")
        out = [f"<h2>Examples ({n} rows)</h2>",
               "<p>" + esc(", ".join(f"{counts[s]} {label[s]}" for s in STATUS_ORDER if counts[s])) + f" — {esc(how)}."
               + (" Failing examples first." if counts["fail"] or counts["undecided"] else "") + "</p>"]
        if self.graph:
            claimed: Dict[str, int] = {}
            for p in self.parts:
                for o in p.outputs:
                    claimed[str(o)] = claimed.get(str(o), 0) + 1
            out.append("<p>claimed verdicts (a trained network memorizes some examples): "
                       + esc(", ".join(f"{v} {k}" for k, v in sorted(claimed.items()))) + "</p>")
        if self.note:
            out.append(f'<p class="note">{esc(self.note)}</p>')
        if len(order) < n:
            out.append(f'<p class="note">showing the first {len(order)} of {n} rows (failures first); the counts '
                       "above cover all rows.</p>")
        rows, cls = [], []
        for g in order:
            x, y, o = self._row(g)
            s = self.statuses[g]
            rows.append([g, label[s], clip(y, 60), clip(o, 60), clip(x), clip(self.details.get(g, ""), 300)])
            cls.append(["num", s, "mono", "mono", "mono", ""])
        out.append(table(["row", "status", "label", "claimed verdict" if self.graph else "claimed output", "input",
                          "detail"], rows, cls))
        return "".join(out)
