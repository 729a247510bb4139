"""Claim formulas on the producer's side: build a claim whose bound is its formula's value.

A proof module names the data quantities its theorem takes (``Formulas.named``: ``label_classes
<= 4`` named C), defines the intermediate expressions (``define``: R² of Theorem B.1, eq. (110))
and states size claims as formulas (``claim``): the bound written beside the formula is the
formula's exact value, computed here with the kernel's own evaluator (`exactmem.kernel.expression`,
precision doubled until the value is decided), and the kernel checks it again
(``docs/certificate.md`` § *Claim formulas*). Expressions are the JSON form of the kernel's
language: a number string, a name, or ``[operator, argument, ...]``; the helpers below build them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Dict, List, Optional, Tuple

from .writer import Claim
from ..kernel.enclosure import Undecided
from ..kernel.expression import Parser, definitions, evaluate, point
from ..kernel.limits import Budget

MAX_PRECISION = 1 << 14


def num(x) -> str:
    """A rational as the language's number text."""
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def op(name: str, *args) -> list:
    """``[name, args...]`` with numbers written as number texts."""
    return [name, *(num(a) if isinstance(a, (int, Fraction)) else a for a in args)]


def add(*a): return op("+", *a)  # noqa: E704
def sub(a, b): return op("-", a, b)  # noqa: E704
def mul(*a): return op("*", *a)  # noqa: E704
def div(a, b): return op("/", a, b)  # noqa: E704
def power(a, k: int): return ["^", num(a) if isinstance(a, (int, Fraction)) else a, str(k)]  # noqa: E704
def sqrt(a): return op("sqrt", a)  # noqa: E704
def log2(a): return op("log2", a)  # noqa: E704
def floor(a): return op("floor", a)  # noqa: E704
def ceil(a): return op("ceil", a)  # noqa: E704
def emax(*a): return op("max", *a)  # noqa: E704


PI = ["pi"]


class Formulas:
    """The named numbers and definitions of one certificate's claim formulas."""

    def __init__(self):
        self.names: Dict[str, Fraction] = {}
        self.defs: List[Tuple[str, Any, str]] = []

    def named(self, claim: Claim, name: str) -> Claim:
        """``claim`` with its bound bound to ``name`` (a number the kernel checks against the data)."""
        self.names[name] = claim.bound
        return Claim(claim.quantity, claim.op, claim.bound, claim.source, name=name)

    def define(self, name: str, expr, note: str = "") -> str:
        """A named expression later formulas may use; returns the name."""
        if any(n == name for n, _, _ in self.defs) or name in self.names:
            raise ValueError(f"{name!r} is defined twice")
        self.defs.append((name, num(expr) if isinstance(expr, (int, Fraction)) else expr, note))
        return name

    def value(self, expr) -> Fraction:
        """The exact rational value of ``expr`` (it must be one: wrap irrational values in floor/ceil)."""
        budget = Budget()
        rd = Parser(budget)
        rd.names = set(self.names)
        defs = []
        for n, e, _ in self.defs:
            defs.append((n, rd.expr(e, n)))
            rd.names.add(n)
        parsed, p = rd.expr(expr, "formula"), 64
        while True:
            try:
                env = definitions(defs, {n: point(v) for n, v in self.names.items()}, p, budget)
                v = evaluate(parsed, env, p, budget)
                if v.lo == v.hi:
                    return v.lo
            except Undecided:
                pass
            if p >= MAX_PRECISION:
                raise ArithmeticError(f"formula {expr!r} is not decided to one rational at {p} bits")
            p *= 2

    def claim(self, quantity: str, op_: str, expr, source: str, name: Optional[str] = None) -> Claim:
        """A claim whose bound is the value of ``expr`` and whose formula is ``expr``."""
        bound = self.value(expr)
        if name is not None:
            self.names[name] = bound
        return Claim(quantity, op_, bound, source, name=name, formula=expr, definitions=tuple(self.defs))
