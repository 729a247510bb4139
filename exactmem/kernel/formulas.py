"""Claim formulas of layer-model certificates (kernel; ``docs/certificate.md`` § *Claim formulas*).

A claim may name its bound (``"name": "C"`` on ``label_classes <= 4`` binds C = 4, a number the
data is then checked against) and say where its bound comes from (``"formula"``: an expression of
`expression`'s language over named bounds and the certificate's ``definitions``). The kernel
evaluates every formula, and it must equal its claim's bound exactly: a bound printed as eq. (41)
is eq. (41) evaluated by the kernel at the instance, not a number the producer computed. Only
layer-model certificates carry formulas (``schema.py`` refuses them in a graph model), so the
graph-model base does not run this module.
"""

from __future__ import annotations

from typing import Optional

from .enclosure import Undecided
from .expression import NAME, DomainError, Parser, decide, definitions, evaluate, point, render
from .fields import _str, bad
from .limits import START_PRECISION
from .text import fmt
from .verdict import Verdict



def parse_formulas(definitions, claims: list, budget) -> dict:
    """The named bounds, the certificate's ``definitions`` and the claim formulas, validated
    (MalformedCertificate if not): {"names": {name: bound}, "defs": [(name, expr)], "formulas":
    [(claim index, expr)]}."""
    rd, names = Parser(budget), {}
    for c, (raw, _, _, bound) in enumerate(claims):
        if "name" in raw:
            n = _str(raw["name"], f"claims[{c}].name")
            if not NAME.fullmatch(n) or n in names:
                bad(f"claims[{c}].name", f"{n[:40]!r} is not a new name ([A-Za-z_][A-Za-z0-9_.]*)")
            names[n] = bound
    rd.names = set(names)
    defs = rd.definitions(definitions)
    formulas = [(c, rd.expr(raw["formula"], f"claims[{c}].formula")) for c, (raw, *_) in enumerate(claims)
                if "formula" in raw]
    return {"names": names, "defs": defs, "formulas": formulas}


def check_formulas(cert, cap: int, budget) -> Optional[Verdict]:
    """None when every claim formula equals its claim's bound; REFUTED (with the formula's value or
    why it is undefined) at the first that does not; UNKNOWN when one stays undecided at ``cap``
    bits. Precision 64, doubling up to ``cap``, as for examples."""
    f, p = cert.formulas, min(START_PRECISION, cap)
    f.update(parse_formulas(f["definitions"], cert.claims, budget))
    pending = f["formulas"]
    while True:
        env, left = definitions(f["defs"], {n: point(v) for n, v in f["names"].items()}, p, budget), []
        for c, e in pending:
            raw, q, op, bound = cert.claims[c]
            try:
                value = evaluate(e, env, p, budget)
                ok = decide(value, "==", point(bound))
            except DomainError as x:
                value, ok = f"undefined ({x})", False
            except Undecided:
                ok = None
            if ok is False:
                value = value if isinstance(value, str) else fmt(value.lo if value.lo == value.hi else [value.lo, value.hi])
                return Verdict("REFUTED", {"claim": dict(raw), "index": c, "quantity": q, "bound": fmt(bound),
                                           "formula_value": value, "precision": p},
                               f"claims[{c}] ({q} {op} {fmt(bound)}): its formula {render(raw['formula'], set(), 80)} "
                               f"is {value}, not {fmt(bound)}", p, cert.measured)
            if ok is None:
                left.append((c, e))
        if not left:
            f["text"] = formula_text(cert)  # rendered here: the layer-model base does not run `expression`
            return None
        if p >= cap:
            c = left[0][0]
            return Verdict("UNKNOWN", None, f"the formula of claims[{c}] ({cert.claims[c][1]}) is undecided at the "
                                            f"maximum precision of {p} bits; the examples were not checked", p,
                           cert.measured, "max_precision")
        pending, p = left, min(2 * p, cap)


def formula_text(cert) -> str:
    """What the formulas proved, rendered by the kernel: each bound with its formula (cut), and the
    named numbers the shown text mentions (at most 8)."""
    names, shown = set(), []
    for c, _ in cert.formulas["formulas"][:4]:
        raw, q, op, bound = cert.claims[c]
        shown.append(f"{q} {op} {fmt(bound)} = {render(raw['formula'], names, 48)}")
    more = len(cert.formulas["formulas"]) - len(shown)
    values = {**cert.formulas["names"], **{n: e for n, e in cert.formulas["defs"] if not isinstance(e, tuple)}}
    where = [f"{n} = {fmt(values[n])}" for n in sorted(names) if n in values]
    return "; by formula: " + "; ".join(shown) + (f"; and {more} more" if more else "") + (
        f" (where {', '.join(where[:8])}{', …' if len(where) > 8 else ''})" if where else "")
