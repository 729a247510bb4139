"""Checked steps and reports: each inequality with both sides and a holds/fails verdict.

A [`Step`][exactmem.bounds.Step] is one inequality (or identity, or precondition) of a written proof,
evaluated exactly: both sides are exact integers/rationals or proven rational enclosures
([`Interval`][exactmem.arith.enclosure.Interval]). Its ``status`` is ``holds``, ``fails`` or
``undecided`` (enclosures not separated at the maximum precision — never a tolerance).
A failing step may carry a ``repair``: the change that makes the argument valid again
(reported, never applied silently).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Tuple

from .enclosure import FAILS, HOLDS, UNDECIDED, Interval, compare, decide, decimal, show

KINDS = ("identity", "inequality", "precondition", "degree", "count", "variables", "verdict", "check")


@dataclass
class Step:
    """One checked step: ``lhs rel rhs``, with the equation it comes from."""

    eq: str
    claim: str
    lhs: Any
    rel: str
    rhs: Any
    status: str
    kind: str = "inequality"
    note: str = ""
    repair: str = ""
    bits: int = 0

    @property
    def ok(self) -> bool:
        """Holds, or fails with a documented repair."""
        return self.status == HOLDS or (self.status == FAILS and bool(self.repair))

    def as_dict(self) -> Dict[str, Any]:
        return {"eq": self.eq, "claim": self.claim, "lhs": _jsonable(self.lhs), "rel": self.rel,
                "rhs": _jsonable(self.rhs), "status": self.status, "kind": self.kind, "note": self.note,
                "repair": self.repair}


def _jsonable(v):
    from ..kernel.text import int_str

    if isinstance(v, Interval):
        return {"lo": _jsonable(v.lo), "hi": _jsonable(v.hi)}
    if isinstance(v, Fraction):
        return int_str(v.numerator) if v.denominator == 1 else f"{int_str(v.numerator)}/{int_str(v.denominator)}"
    if isinstance(v, int) and not isinstance(v, bool):
        return int_str(v) if abs(v) >= 2 ** 53 else v
    return v


PRINT_BITS = 3000  # exact values with more bits are printed through a 64-bit outward enclosure
HUGE_BITS = 14000  # values of more bits (above ~10^4200) are printed by their leading and trailing digits


def _printable(v):
    """A value ``show`` can print at any size (CPython's int-to-decimal limit is 4,300 digits):
    an exact value over PRINT_BITS bits becomes its outward 64-bit enclosure (still a true
    enclosure when printed), one over HUGE_BITS bits its abbreviated digits (``text.fmt``)."""
    from ..kernel.enclosure import round_ratio
    from ..kernel.text import fmt

    if isinstance(v, bool):
        return v
    if isinstance(v, Interval):
        if v.is_exact:
            return _printable(v.lo)
        if max(_nbits(v.lo), _nbits(v.hi)) <= PRINT_BITS:
            return v
        if max(abs(v.lo), abs(v.hi)) >= 2 ** HUGE_BITS:
            return f"[{fmt(_floor(v.lo))}, {fmt(-_floor(-v.hi))}]"
        return Interval(round_ratio(v.lo.numerator, v.lo.denominator, 64, False),
                        round_ratio(v.hi.numerator, v.hi.denominator, 64, True))
    if isinstance(v, (int, Fraction)) and _nbits(v) > PRINT_BITS:
        x = Fraction(v)
        if abs(x) >= 2 ** HUGE_BITS:
            return ("" if x.denominator == 1 else "≈") + str(fmt(Fraction(_floor(x))))
        return Interval(round_ratio(x.numerator, x.denominator, 64, False),
                        round_ratio(x.numerator, x.denominator, 64, True))
    return v


def _nbits(x) -> int:
    x = Fraction(x)
    return max(x.numerator.bit_length(), x.denominator.bit_length())


def _floor(x) -> int:
    x = Fraction(x)
    return x.numerator // x.denominator


def _as_shown(text: str) -> Optional[Interval]:
    """The enclosure a printed side stands for: "[a, b]"; an integer, "p/q" or a decimal
    exactly; "≈d" (``show`` rounds to 7 significant digits, downwards) as [d, d + |d|·10⁻⁶]
    (the last digit is worth at most |d|·10⁻⁶). None if the text is not one of these."""
    try:
        if text.startswith("["):
            lo, hi = text[1:-1].split(", ")
            return Interval(Fraction(lo), Fraction(hi))
        if text.startswith("≈"):
            d = Fraction(text[1:])
            return Interval(d, d + abs(d) / 10 ** 6)
        return Interval.exact(Fraction(text))
    except (ValueError, ZeroDivisionError):
        return None


def _show_digits(v, digits: int) -> str:
    """Like ``show`` with ``digits`` significant digits; exact integers in full."""
    if isinstance(v, Interval) and not v.is_exact:
        return f"[{decimal(v.lo, digits)}, {decimal(v.hi, digits, up=True)}]"
    x = v.lo if isinstance(v, Interval) else v
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool) and Fraction(x).denominator == 1:
        return str(int(x))
    return show(v)


def _show(v) -> str:
    """``show`` of a value of any size (`_printable`)."""
    v = _printable(v)
    return v if isinstance(v, str) else show(v)


def show_sides(lhs, rel: str, rhs, status: str) -> Tuple[str, str]:
    """Both sides of a decided step as printed: with ``show``'s 7 digits when the printed
    enclosures (rounded outward) already settle ``lhs rel rhs`` as decided, else with more
    digits (exact integers in full) until they do — so every printed inequality is itself a
    true statement a reader can check (nN ≈ 10²¹ needs more than 7 digits)."""
    lhs, rhs = _printable(lhs), _printable(rhs)
    if isinstance(lhs, str) or isinstance(rhs, str):
        return (lhs if isinstance(lhs, str) else show(lhs)), (rhs if isinstance(rhs, str) else show(rhs))
    texts = show(lhs), show(rhs)
    if status not in (HOLDS, FAILS):
        return texts
    for digits in (7, 10, 13, 16, 20, 25, 30, 40):
        if digits > 7:
            texts = _show_digits(lhs, digits), _show_digits(rhs, digits)
        L, R = _as_shown(texts[0]), _as_shown(texts[1])
        if L is not None and R is not None and compare(L, rel, R) == status:
            return texts
    return texts


def check(eq: str, claim: str, lhs, rel: str, rhs, kind: str = "inequality", note: str = "",
          repair_if_fails: str = "") -> Step:
    """Evaluate ``lhs rel rhs`` exactly (escalating enclosures) and return the Step."""
    st, L, R, bits = decide(lhs, rel, rhs)
    lv = L.lo if L.is_exact else L
    rv = R.lo if R.is_exact else R
    return Step(eq, claim, lv, rel, rv, st, kind, note, repair_if_fails if st == FAILS else "", bits)


def vacuity_step(eq: str, what: str, W: int, W0: int, smallest: str) -> Step:
    """Is the lower bound ``W ≥ W_min`` informative? Every architecture of the family counted
    has at least ``W0`` parameters (``arch.smallest_W``: the one named ``smallest``), so
    W_min ≤ W0 rules out no architecture: the bound is vacuous there. An exact integer
    comparison, shown either way."""
    if W <= W0:
        return check(eq, f"{what} = {W} ≤ {W0}, the W of the smallest architecture ({smallest}): "
                         f"VACUOUS, the bound rules out no architecture", W, "<=", W0, "verdict")
    return check(eq, f"{what} = {W} > {W0}, the W of the smallest architecture ({smallest}): "
                     f"the bound rules out every architecture with fewer than {W} parameters", W, ">", W0, "verdict")


@dataclass
class Report:
    """A titled list of steps plus named results (verdicts, minimal counts)."""

    title: str
    steps: List[Step] = field(default_factory=list)
    results: Dict[str, Any] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    tables: Dict[str, Any] = field(default_factory=dict)  # name -> (header, rows)

    def add(self, step: Step) -> Step:
        self.steps.append(step)
        return step

    def extend(self, steps) -> None:
        self.steps.extend(steps)

    @property
    def failed(self) -> List[Step]:
        """Steps that fail with no repair, or are undecided."""
        return [s for s in self.steps if not s.ok]

    @property
    def repaired(self) -> List[Step]:
        return [s for s in self.steps if s.status == FAILS and s.repair]

    @property
    def ok(self) -> bool:
        return not self.failed

    def as_dict(self) -> Dict[str, Any]:
        return {"title": self.title, "ok": self.ok, "steps": [s.as_dict() for s in self.steps],
                "results": {k: _jsonable(v) for k, v in self.results.items()}, "notes": self.notes,
                "repairs": [f"{s.eq}: {s.repair}" for s in self.repaired],
                "tables": {k: {"header": h, "rows": [[_jsonable(c) for c in r] for r in rows]}
                           for k, (h, rows) in self.tables.items()}}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1, ensure_ascii=False, default=str)

    def to_markdown(self, max_steps: Optional[int] = None) -> str:
        """A Markdown table: equation | claim | lhs | rel | rhs | status (+ repairs, results)."""
        lines = [f"## {self.title}", ""]
        if self.steps:
            lines += ["| eq. | claim | lhs | rel | rhs | status |", "|---|---|---|---|---|---|"]
            steps = self.steps
            if max_steps is not None and len(steps) > max_steps:
                keep = max_steps // 2
                steps = steps[:keep] + [None] + steps[-keep:]
            for s in steps:
                if s is None:
                    lines.append(f"| … | ({len(self.steps) - 2 * keep} more steps) | | | | |")
                    continue
                status = s.status.upper() + (" (repaired)" if s.repair else "")
                lhs, rhs = show_sides(s.lhs, s.rel, s.rhs, s.status)
                lines.append(f"| {s.eq} | {s.claim} | {lhs} | {s.rel} | {rhs} | {status} |")
        if self.repaired:
            lines += ["", "Repairs (the written proof needs these):"]
            groups: Dict[str, List[str]] = {}
            for s in self.repaired:
                groups.setdefault(s.repair, []).append(s.eq)
            for text, eqs in groups.items():
                lines.append(f"* {', '.join(eqs)}: {text}")
        bad = self.failed
        if bad:
            lines += ["", "FAILED (no repair):"]
            for s in bad:
                lines.append(f"* {s.eq}: {s.claim} — {_show(s.lhs)} {s.rel} {_show(s.rhs)} is {s.status}"
                             + (f" ({s.note})" if s.note else ""))
        if self.results:
            lines += ["", "Results:"]
            for k, v in self.results.items():
                lines.append(f"* {k}: {_show(v) if isinstance(v, (bool, int, Fraction, Interval)) else v}")
        for name, (header, rows) in self.tables.items():
            lines += ["", f"{name}:", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            for r in rows:
                lines.append("| " + " | ".join(_show(c) for c in r) + " |")
        for n in self.notes:
            lines += ["", n]
        return "\n".join(lines)


__all__ = ["Step", "Report", "check", "vacuity_step", "HOLDS", "FAILS", "UNDECIDED"]
