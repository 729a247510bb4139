"""Exact expressions in rational interval arithmetic (kernel; standard library only).

The expression language of claim formulas (layer-model certificates, ``docs/certificate.md``
§ *Claim formulas*) and of lower-bound certificates (``lowerbound.py``, which adds e, exp, binom
and ``em_sum``): integers and rationals, names defined earlier, + − × ÷, integer powers, ln, log2,
√, π, floor/ceil, min/max. `Parser` validates an expression's JSON form (shapes, arities, names,
digits, depth and size); `evaluate` encloses it at a precision p; `decide` compares two enclosures;
`render` writes it as text for a verdict's message.

An enclosure is an Interval [lo, hi] of Fractions that contains the real value. An exact (point)
interval stays exact; a non-point result is rounded outward to p bits (enclosure.rounded), and its
size is charged to the budget. `Undecided`: the enclosure is too wide to answer (⌊x⌋ of an interval
that contains an integer, 1/x of one that contains 0): retry at a higher precision. `DomainError`:
certainly undefined.
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import isqrt

from .enclosure import Undecided, pi_fx, sqrt_bound
from .interval import Interval, rounded
from .logarithm import ln2, ln_point
from .fields import _list, _obj, _str, bad, jtype
from .text import parse_int, short

MAX_DEPTH = 48  # nesting of one expression
MAX_NODES = 1_000_000  # operator and leaf nodes in one document
RELATIONS = ("<=", "<", ">=", ">", "==")
_RATIONAL = re.compile(r"(-?)([0-9]+)(?:/([0-9]+))?")
_EXPONENT = re.compile(r"-?[0-9]{1,19}")  # |k| < 10^19 < 2^64
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")


class DomainError(Exception):
    """The value is certainly undefined (the message says why)."""


def point(x) -> Interval:
    x = Fraction(x)
    return Interval(x, x)


def bits(a: Interval) -> int:
    """Bits of the largest numerator or denominator of the endpoints."""
    return max(max(x.numerator.bit_length(), x.denominator.bit_length()) for x in a)


def fit(lo: Fraction, hi: Fraction, p: int, budget) -> Interval:
    """[lo, hi] as a result: exact if lo == hi, else rounded outward to p bits; its size is
    charged to ``budget.value`` (``max_value_bits``) so no value grows without bound."""
    iv = Interval(lo, lo) if lo == hi else rounded(lo, hi, p)
    budget.value(bits(iv), "a value of an expression")
    return iv


def add(a: Interval, b: Interval, p: int, budget) -> Interval:
    return fit(a.lo + b.lo, a.hi + b.hi, p, budget)


def neg(a: Interval) -> Interval:
    return Interval(-a.hi, -a.lo)


def mul(a: Interval, b: Interval, p: int, budget) -> Interval:
    """The product's extremes are among the four endpoint products (charged before they are formed)."""
    budget.value(bits(a) + bits(b), "a product")
    ps = [x * y for x in a for y in b]
    return fit(min(ps), max(ps), p, budget)


def inv(a: Interval, p: int, budget) -> Interval:
    """1/x is decreasing on each side of 0."""
    if a.lo == a.hi == 0:
        raise DomainError("division by zero")
    if a.lo <= 0 <= a.hi:
        raise Undecided("a divisor's enclosure contains 0")
    return fit(1 / a.hi, 1 / a.lo, p, budget)


def ipow(a: Interval, k: int, p: int, budget) -> Interval:
    """a^k for an integer k: x^k is increasing for odd k (and on x ≥ 0), |x|^k for even k; a^−k = 1/a^k."""
    if k < 0:
        return inv(ipow(a, -k, p, budget), p, budget)
    lo = _pow(a.lo, k, p, budget)
    hi = lo if a.lo == a.hi else _pow(a.hi, k, p, budget)
    if k % 2 or a.lo >= 0:
        return Interval(lo.lo, hi.hi)
    return Interval(hi.lo, lo.hi) if a.hi <= 0 else Interval(Fraction(0), max(lo.hi, hi.hi))


def _pow(x: Fraction, k: int, p: int, budget) -> Interval:
    """x^k (k ≥ 0) by repeated squaring of |x| (x ↦ x², x·y are increasing on x, y ≥ 0, so the
    outward-rounded steps enclose), charged to the budget at every step; the sign restored."""
    out, sq, odd_negative = point(1), point(abs(x)), x < 0 and k % 2 == 1
    while k:
        budget.tick()
        if k & 1:
            out = mul(out, sq, p, budget)
        k >>= 1
        if k:
            sq = mul(sq, sq, p, budget)
    return neg(out) if odd_negative else out


def sqrt(a: Interval, p: int, budget) -> Interval:
    """√x, increasing: `sqrt_bound` of both endpoints at k ≥ p + a margin fractional bits."""
    if a.hi < 0:
        raise DomainError("square root of a negative number")
    if a.lo < 0:
        raise Undecided("a square root's argument may be negative")
    if a.lo == a.hi:
        n, d = a.lo.numerator, a.lo.denominator
        rn, rd = isqrt(n), isqrt(d)
        if rn * rn == n and rd * rd == d:
            return point(Fraction(rn, rd))
    k = p + 2 + max(0, (a.lo.denominator.bit_length() - a.lo.numerator.bit_length()) // 2)
    lo, hi = (sqrt_bound(x.numerator, x.denominator, k, up) for x, up in ((a.lo, False), (a.hi, True)))
    return fit(Fraction(lo, 1 << k), Fraction(hi, 1 << k), p, budget)


def ln(a: Interval, p: int, budget) -> Interval:
    """ln is increasing on (0, ∞): [ln lo, ln hi]."""
    if a.hi <= 0:
        raise DomainError("logarithm of a number ≤ 0")
    if a.lo <= 0:
        raise Undecided("a logarithm's argument may be ≤ 0")
    budget.tick()
    lo = ln_point(a.lo, p).lo
    return fit(lo, lo if a.lo == a.hi and a.lo == 1 else ln_point(a.hi, p).hi, p, budget)


def log2(a: Interval, p: int, budget) -> Interval:
    """log2 x = ln x / ln 2 (both enclosed; the quotient of intervals encloses the quotient)."""
    if a.lo == a.hi and a.lo > 0:
        n, d = a.lo.numerator, a.lo.denominator
        if n & (n - 1) == 0 and d & (d - 1) == 0:  # an exact power of two
            return point(n.bit_length() - d.bit_length())
    return mul(ln(a, p + 4, budget), inv(ln2(p + 4), p + 4, budget), p, budget)


def floor_of(a: Interval) -> int:
    """⌊x⌋ when the enclosure decides it (⌊lo⌋ = ⌊hi⌋), else `Undecided`."""
    f = a.lo.numerator // a.lo.denominator
    if f != a.hi.numerator // a.hi.denominator:
        raise Undecided("floor: the enclosure contains an integer")
    return f


def exact_int(a: Interval, what: str) -> int:
    """The integer an exact point interval holds (else the value is not a definite integer)."""
    if a.lo != a.hi or a.lo.denominator != 1:
        raise DomainError(f"{what} needs an exact integer argument")
    return a.lo.numerator

def pi(p: int) -> Interval:
    """π from `pi_fx` (Machin's formula in fixed point, its proof there) at p + 2 fractional bits."""
    lo, hi = pi_fx(p + 2)
    return Interval(Fraction(lo, 1 << p + 2), Fraction(hi, 1 << p + 2))


ARITY = {"+": (1, None), "-": (1, 2), "*": (1, None), "/": (2, 2), "^": (2, 2), "log2": (1, 1), "ln": (1, 1),
         "sqrt": (1, 1), "pi": (0, 0), "floor": (1, 1), "ceil": (1, 1), "min": (1, None), "max": (1, None)}
UNARY = {"log2": log2, "ln": ln, "sqrt": sqrt}


class Parser:
    """Validates expressions: shapes, arities, names defined earlier, digits, depth and size."""

    def __init__(self, budget, arity=None):
        self.budget, self.names, self.nodes, self.arity = budget, set(), 0, arity or ARITY

    def number(self, s: str, path: str) -> Fraction:
        m = _RATIONAL.fullmatch(s)
        if not m:
            bad(path, f"{s[:40]!r} is neither a number (\"12\", \"-3/8\") nor a name defined before this point")
        if max(len(m.group(2)), len(m.group(3) or "")) > self.budget.limits.max_digits:
            bad(path, f"a number of more than {self.budget.limits.max_digits} digits (verifier limit max_digits)")
        den = parse_int(m.group(3) or "1")
        if den == 0:
            bad(path, "zero denominator")
        return Fraction(parse_int(m.group(1) + m.group(2)), den)

    def definitions(self, items) -> list:
        """``definitions``, ``[{"name", "expr", "note"?}]``: each a new name (added to the names
        later expressions may use) and its parsed expression, in order: [(name, expr)]."""
        out = []
        for i, d in enumerate(_list(items, "definitions")):
            name = _str(_obj(d, f"definitions[{i}]", ("name", "expr"), ("note",))["name"], f"definitions[{i}].name")
            _str(d.get("note", ""), f"definitions[{i}].note")
            if not NAME.fullmatch(name) or name in self.names:
                bad(f"definitions[{i}].name", f"{name[:40]!r} is not a new name ([A-Za-z_][A-Za-z0-9_.]*)")
            out.append((name, self.expr(d["expr"], f"definitions[{i}].expr")))
            self.names.add(name)
        return out

    def expr(self, x, path: str, depth: int = 0):
        """The parsed expression: Fraction | ("name", str) | (op, args...) | ("^", arg, int)."""
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            bad(path, f"more than {MAX_NODES} expression nodes" if depth <= MAX_DEPTH else
                f"expression nested deeper than {MAX_DEPTH}")
        if not self.nodes & 255:
            self.budget.tick()
        if isinstance(x, str):
            return ("name", x) if x in self.names else self.number(x, path)
        if not isinstance(x, list) or not x or not isinstance(x[0], str) or x[0] not in self.arity:
            bad(path, f"unknown operator {str(x[0])[:20]!r}" if isinstance(x, list) and x else
                f"expected a number string, a name or [operator, ...], got {jtype(x)}")
        op, args, (lo, hi) = x[0], x[1:], self.arity[x[0]]
        if len(args) < lo or (hi is not None and len(args) > hi):
            bad(path, f"{op!r} takes {lo}{'' if hi == lo else ' or more' if hi is None else f' to {hi}'} arguments")
        if op == "^":
            if not isinstance(args[1], str) or not _EXPONENT.fullmatch(args[1]):
                bad(f"{path}[2]", f"an exponent is an integer literal below 10^19, got {jtype(args[1])}")
            return ("^", self.expr(args[0], f"{path}[1]", depth + 1), int(args[1]))
        return (op,) + tuple(self.expr(a, f"{path}[{i + 1}]", depth + 1) for i, a in enumerate(args))


INFIX = {"+": " + ", "-": " - ", "*": "·", "/": "/"}
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def render(e, names: set, room: int = 160) -> str:
    """An expression as text (infix + − · /, a^k, f(args)), numbers abbreviated, cut at ``room``
    characters; the defined names it mentions are added to ``names``."""
    if isinstance(e, str):
        if not _RATIONAL.fullmatch(e):
            names.add(e)
        return short(e)
    op, args = e[0], e[1:]
    if not args:
        return op
    if op == "^":
        text = f"{_operand(args[0], names, room, 3)}^{args[1]}"
    elif op in INFIX and len(args) > 1:
        text = INFIX[op].join(_operand(a, names, room, PRECEDENCE[op] + (i > 0 and op in "-/"))
                              for i, a in enumerate(args))
    else:
        text = f"{'-' if op == '-' else op}({', '.join(render(a, names, room) for a in args)})"
    return text if len(text) <= room else text[:room] + "…"


def _operand(e, names: set, room: int, binds: int) -> str:
    """An argument of an operator that binds ``binds`` tightly, parenthesised when it binds looser."""
    text = render(e, names, room)
    loose = isinstance(e, list) and e[0] in INFIX and len(e) > 2 and PRECEDENCE[e[0]] < binds
    return f"({text})" if loose else text


def evaluate(e, env: dict, p: int, budget, extra=None):
    """The enclosure of a parsed expression at precision p (Undecided / DomainError / LimitExceeded);
    ``extra`` maps the operators a caller adds (lower bounds: e, exp, binom, em_sum) to functions
    (argument enclosures, p, budget) -> enclosure."""
    if isinstance(e, Fraction):
        return point(e)
    op = e[0]
    if op == "name":
        if isinstance(env[e[1]], Exception):
            raise env[e[1]]
        return env[e[1]]
    if op == "^":
        return ipow(evaluate(e[1], env, p, budget, extra), e[2], p, budget)
    if op == "pi":
        return pi(p)
    a = [evaluate(x, env, p, budget, extra) for x in e[1:]]
    budget.tick()
    if op in ("+", "*"):
        out = a[0]
        for x in a[1:]:
            out = add(out, x, p, budget) if op == "+" else mul(out, x, p, budget)
        return out
    if op == "-":
        return neg(a[0]) if len(a) == 1 else add(a[0], neg(a[1]), p, budget)
    if op == "/":
        return mul(a[0], inv(a[1], p, budget), p, budget)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return Interval(f(x.lo for x in a), f(x.hi for x in a))
    if op in ("floor", "ceil"):
        return point(floor_of(a[0]) if op == "floor" else -floor_of(neg(a[0])))
    if op in UNARY:
        return UNARY[op](a[0], p, budget)
    return extra[op](a, p, budget)


def decide(L, rel: str, R):
    """True / False when the enclosures decide ``L rel R``, None when they do not."""
    if rel in (">=", ">"):
        return decide(R, "<=" if rel == ">=" else "<", L)
    if rel == "<=":
        return True if L.hi <= R.lo else False if L.lo > R.hi else None
    if rel == "<":
        return True if L.hi < R.lo else False if L.lo >= R.hi else None
    if L.lo == L.hi == R.lo == R.hi:
        return True
    return False if L.hi < R.lo or R.hi < L.lo else None


def definitions(defs, env: dict, p: int, budget, extra=None) -> dict:
    """``env`` extended by every definition's enclosure at precision p, in order (or the
    Undecided/DomainError it raised, which an expression that uses the name raises again)."""
    env = dict(env)
    for name, e in defs:
        try:
            env[name] = evaluate(e, env, p, budget, extra)
        except (Undecided, DomainError) as x:
            env[name] = type(x)(f"in definition {name!r}: {x}")
    return env
