"""The HTML page of a lower-bound certificate for ``inspect --html``: every step with the kernel's verdict.

Format ``exactmem-lower-bound`` (``docs/lower-bound-certificates.md``): statement, premises,
definitions, and every step with the kernel's verdict.

The kernel's ``check_lower_bound`` stops at the first false step; for a verdict per step this
module runs the kernel's public ``parse_lower_bound``, ``evaluate`` and ``decide`` on each step,
doubling the precision from 64 bits up to the same cap while the step is undecided.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .html_base import clip, esc, page, table, verdict_html

MAX_STEP_ROWS = 2000
INFIX = {"+": " + ", "-": " − ", "*": "·", "/": " / "}


def expr_text(x: Any, depth: int = 0) -> str:
    """A certificate's JSON expression in infix (display only)."""
    if isinstance(x, str):
        return x
    if not isinstance(x, list) or not x or depth > 12:
        return "…"
    op, args = str(x[0]), [expr_text(a, depth + 1) for a in x[1:]]
    if op == "-" and len(args) == 1:
        return f"−({args[0]})"
    if op in INFIX and len(args) >= 2:
        return "(" + INFIX[op].join(args) + ")"
    if op == "^" and len(args) == 2:
        return f"({args[0]})^{args[1]}"
    if op == "e" and not args:
        return "e"
    return f"{op}(" + ", ".join(args) + ")"


def step_verdicts(doc: dict, limits) -> Tuple[List[Tuple[str, str, str]], str]:
    """(status, detail, precision) per step in file order, status one of holds | false | undefined |
    undecided | not decided; and a note (empty, or the limit that stopped the evaluation)."""
    from ..kernel.enclosure import Undecided
    from ..kernel.expression import definitions
    from ..kernel.limits import START_PRECISION, Budget, LimitExceeded
    from ..kernel.lowerbound import EXTRA, DomainError, decide, evaluate, parse_lower_bound
    from ..kernel.text import fmt

    budget = Budget(limits)
    cert = parse_lower_bound(doc, budget)
    out: Dict[int, Tuple[str, str, str]] = {}
    pending, p, note = list(range(len(cert["steps"]))), START_PRECISION, ""
    try:
        while pending:
            env = definitions(cert["defs"], {}, p, budget, EXTRA)
            left = []
            for i in pending:
                s, lhs, rel, rhs = cert["steps"][i]
                try:
                    L, R = evaluate(lhs, env, p, budget, EXTRA), evaluate(rhs, env, p, budget, EXTRA)
                    ok = decide(L, rel, R)
                    sides = f"lhs ∈ {fmt([L.lo, L.hi])}, rhs ∈ {fmt([R.lo, R.hi])}"
                except DomainError as x:
                    out[i] = ("undefined", str(x), str(p))
                    continue
                except Undecided as x:
                    ok, sides = None, str(x)
                if ok is None:
                    left.append(i)
                    out[i] = ("undecided", sides, str(p))
                else:
                    out[i] = ("holds" if ok else "false", sides if not ok else "", str(p))
            if not left or p >= cert["cap"]:
                break
            pending, p = left, min(2 * p, cert["cap"])
    except LimitExceeded as x:
        note = str(x)
        for i in range(len(cert["steps"])):
            if i not in out or out[i][0] == "undecided":
                out[i] = ("not decided", note, str(p))
    return [out.get(i, ("not decided", "", "")) for i in range(len(cert["steps"]))], note


def lower_bound_page(doc: dict, name: str, limits):
    from ..kernel.checker import check_certificate

    v = check_certificate(doc, limits=limits)  # MalformedCertificate propagates
    verdicts, note = step_verdicts(doc, limits)
    sections = [verdict_html(v)]
    sections.append(f"<h2>Statement</h2><p>{esc(doc['statement']['text'])}</p><p><b>conclusion</b> (the producer's "
                    f"words; the kernel's own rendering of the concluding steps is in the verdict above): "
                    f"{esc(doc['conclusion']['text'])}</p>")
    prem = doc["premises"]
    sections.append(f"<h2>Premises ({len(prem)}): what a reader must trust</h2>"
                    + (table(["cite", "eq", "statement"], [[clip(p["cite"], 200), clip(p.get("eq", ""), 40),
                                                           clip(p["statement"], 600)] for p in prem])
                       if prem else "<p>none</p>"))
    defs = doc["definitions"]
    if defs:
        sections.append(f"<h2>Definitions ({len(defs)})</h2><details><summary>show the definitions</summary>"
                        + table(["name", "expression", "note"], [[d["name"], clip(expr_text(d["expr"]), 300),
                                                                   clip(d.get("note", ""), 200)] for d in defs])
                        + "</details>")
    steps = doc["steps"]
    counts: Dict[str, int] = {}
    for s in verdicts:
        counts[s[0]] = counts.get(s[0], 0) + 1
    order = sorted(range(len(steps)), key=lambda i: (verdicts[i][0] == "holds", i))[:MAX_STEP_ROWS]
    cls_of = {"holds": "yes", "false": "no", "undefined": "no", "undecided": "undecided", "not decided": "unchecked"}
    rows, cls = [], []
    for i in order:
        s, (st, detail, p) = steps[i], verdicts[i]
        rows.append([clip(s["id"], 60), clip(s["eq"], 40), clip(s["claim"], 200),
                     clip(f"{expr_text(s['lhs'])} {s['rel']} {expr_text(s['rhs'])}", 240), st, p, clip(detail, 240)])
        cls.append(["mono", "", "", "mono", cls_of[st], "num", "mono"])
    head = (f"<h2>Steps ({len(steps)})</h2><p>" + esc(", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
            + " — each step decided by the kernel's interval evaluation (precision in bits); steps that do not hold "
            "are listed first.</p>")
    if note:
        head += f'<p class="note">{esc(note)}</p>'
    if len(order) < len(steps):
        head += f'<p class="note">showing {len(order)} of {len(steps)} steps</p>'
    sections.append(head + table(["id", "eq", "claim", "relation", "kernel", "bits", "detail"], rows, cls))
    pc = doc.get("producer_checked") or []
    if pc:
        sections.append(f"<h2>Checked by the producer only ({len(pc)})</h2><p class=\"note\">Printed, never checked by "
                        "the kernel.</p>" + table(["eq", "claim", "note"], [[clip(x["eq"], 40), clip(x["claim"], 300),
                                                                              clip(x.get("note", ""), 300)] for x in pc]))
    sub = f"{esc(name)} · format {esc(doc['format'])} v{esc(doc['version'])} · <span class=\"mono\">{esc(doc['hash'])}</span>"
    return page("lower bound: " + clip(doc["statement"]["text"], 100), sub, sections), v
