"""Lower-bound certificates, format ``exactmem-lower-bound`` v1 (kernel; ``docs/lower-bound-certificates.md``).

A certificate states a lower bound, cites the results it rests on (``premises``: what a reader
must trust), names expressions (``definitions``) and lists ``steps``, each an exact relation
``lhs rel rhs`` between expressions of integers, rationals, + − × ÷, integer powers, ln, log2,
e, exp, √, floor/ceil, min/max, binom and the Euler–Maclaurin sum ``em_sum``. :func:`check_lower_bound`
validates the document and its hash, then evaluates every step in rational interval arithmetic
(:mod:`elementary`) from 64 bits, doubling up to the verifier's cap: CERTIFIED when every step
holds, REFUTED at the first false (or undefined) step with both sides printed, UNKNOWN when
undecided at the cap or when a budget limit is reached.
"""

from __future__ import annotations

import re
from fractions import Fraction

from . import elementary as el
from .limits import DEFAULT_MAX_PRECISION, LimitExceeded
from .fields import MalformedCertificate, _list, _obj, _str, bad, integer, jtype
from .schema import canonical_hash
from .text import fmt, parse_int
from .verdict import Verdict

FORMAT, VERSION = "exactmem-lower-bound", 1
START_PRECISION = 64
MAX_DEPTH = 48  # nesting of one expression
MAX_NODES = 1_000_000  # operator and leaf nodes in the whole certificate
RELATIONS = ("<=", "<", ">=", ">", "==")
ARITY = {"+": (1, None), "-": (1, 2), "*": (1, None), "/": (2, 2), "^": (2, 2), "log2": (1, 1), "ln": (1, 1),
         "e": (0, 0), "sqrt": (1, 1), "floor": (1, 1), "ceil": (1, 1), "min": (1, None), "max": (1, None),
         "binom": (2, 2), "em_sum": (6, 6), "exp": (1, 1)}
UNARY = {"log2": el.log2, "ln": el.ln, "sqrt": el.sqrt, "exp": el.exp}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")
_RATIONAL = re.compile(r"(-?)([0-9]+)(?:/([0-9]+))?")
_EXPONENT = re.compile(r"-?[0-9]{1,19}")  # |k| < 10^19 < 2^64
TOP = ("format", "version", "statement", "premises", "definitions", "steps", "conclusion", "hash")


class _Parser:
    """Validates expressions: shapes, arities, names defined earlier, digits, depth and size."""

    def __init__(self, budget):
        self.budget, self.names, self.nodes = budget, set(), 0

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
        if not isinstance(x, list) or not x or not isinstance(x[0], str) or x[0] not in ARITY:
            bad(path, f"unknown operator {str(x[0])[:20]!r}" if isinstance(x, list) and x else
                f"expected a number string, a name or [operator, ...], got {jtype(x)}")
        op, args, (lo, hi) = x[0], x[1:], ARITY[x[0]]
        if len(args) < lo or (hi is not None and len(args) > hi):
            bad(path, f"{op!r} takes {lo}{'' if hi == lo else ' or more' if hi is None else f' to {hi}'} arguments")
        if op == "^":
            if not isinstance(args[1], str) or not _EXPONENT.fullmatch(args[1]):
                bad(f"{path}[2]", f"an exponent is an integer literal below 10^19, got {jtype(args[1])}")
            return ("^", self.expr(args[0], f"{path}[1]", depth + 1), int(args[1]))
        return (op,) + tuple(self.expr(a, f"{path}[{i + 1}]", depth + 1) for i, a in enumerate(args))


def _texts(x, path: str, required, optional=()) -> dict:
    """An object whose fields are all strings."""
    for k, v in _obj(x, path, required, optional).items():
        _str(v, f"{path}.{k}")
    return x


def parse_lower_bound(doc, budget) -> dict:
    """The validated certificate: definitions and steps as parsed expressions (MalformedCertificate if invalid)."""
    _obj(doc, "(top level)", TOP, ("producer_checked", "check", "meta"))
    _str(doc["format"], "format", (FORMAT,))
    integer(doc["version"], "version", VERSION, VERSION)
    if not isinstance(doc["hash"], str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", doc["hash"]):
        bad("hash", f'expected "sha256:" followed by 64 lowercase hex digits, got {jtype(doc["hash"])}')
    try:
        actual = canonical_hash(doc)
    except (TypeError, ValueError, RecursionError) as e:
        raise MalformedCertificate(f"content cannot be serialised canonically: {type(e).__name__}") from None
    if actual != doc["hash"]:
        bad("hash", f"wrong hash: the file says {doc['hash']} but its content hashes to {actual}")
    _str(doc["statement"], "statement"), _str(doc["conclusion"], "conclusion")
    cites = {_texts(p, f"premises[{i}]", ("cite", "statement"), ("eq",))["cite"]
             for i, p in enumerate(_list(doc["premises"], "premises"))}
    for i, p in enumerate(_list(doc.get("producer_checked", []), "producer_checked")):
        _texts(p, f"producer_checked[{i}]", ("eq", "claim"), ("note",))
    cap = budget.limits.max_precision or DEFAULT_MAX_PRECISION
    if "check" in doc:
        cap = min(cap, integer(_obj(doc["check"], "check", ("max_precision",))["max_precision"],
                               "check.max_precision", START_PRECISION))
    rd, defs, steps, ids = _Parser(budget), [], [], set()
    for i, d in enumerate(_list(doc["definitions"], "definitions")):
        name = _str(_obj(d, f"definitions[{i}]", ("name", "expr"), ("note",))["name"], f"definitions[{i}].name")
        _str(d.get("note", ""), f"definitions[{i}].note")
        if not _NAME.fullmatch(name) or name in rd.names:
            bad(f"definitions[{i}].name", f"{name[:40]!r} is not a new name ([A-Za-z_][A-Za-z0-9_.]*)")
        defs.append((name, rd.expr(d["expr"], f"definitions[{i}].expr")))
        rd.names.add(name)
    for i, s in enumerate(_list(doc["steps"], "steps", nonempty=True)):
        where = f"steps[{i}]"
        _obj(s, where, ("id", "eq", "claim", "lhs", "rel", "rhs"), ("uses",))
        for k in ("id", "eq", "claim"):
            _str(s[k], f"{where}.{k}")
        _str(s["rel"], f"{where}.rel", RELATIONS)
        if s["id"] in ids:
            bad(f"{where}.id", f"duplicate step id {s['id'][:40]!r}")
        for j, u in enumerate(_list(s.get("uses", []), f"{where}.uses")):
            if _str(u, f"{where}.uses[{j}]") not in ids and u not in cites:
                bad(f"{where}.uses[{j}]", f"{u[:40]!r} is neither an earlier step's id nor a premise's cite")
        ids.add(s["id"])
        steps.append((s, rd.expr(s["lhs"], f"{where}.lhs"), s["rel"], rd.expr(s["rhs"], f"{where}.rhs")))
    return {"defs": defs, "steps": steps, "cap": cap}


def evaluate(e, env: dict, p: int, budget):
    """The enclosure of a parsed expression at precision p (Undecided / DomainError / LimitExceeded)."""
    if isinstance(e, Fraction):
        return el.point(e)
    op = e[0]
    if op == "name":
        if isinstance(env[e[1]], Exception):
            raise env[e[1]]
        return env[e[1]]
    if op == "^":
        return el.ipow(evaluate(e[1], env, p, budget), e[2], p, budget)
    if op == "e":
        return el.e(p)
    a = [evaluate(x, env, p, budget) for x in e[1:]]
    budget.tick()
    if op in ("+", "*"):
        out = a[0]
        for x in a[1:]:
            out = el.add(out, x, p, budget) if op == "+" else el.mul(out, x, p, budget)
        return out
    if op == "-":
        return el.neg(a[0]) if len(a) == 1 else el.add(a[0], el.neg(a[1]), p, budget)
    if op == "/":
        return el.mul(a[0], el.inv(a[1], p, budget), p, budget)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return el.Interval(f(x.lo for x in a), f(x.hi for x in a))
    if op in ("floor", "ceil"):
        return el.point(el.floor_of(a[0]) if op == "floor" else -el.floor_of(el.neg(a[0])))
    if op == "binom":
        return el.binom(a[0], a[1], budget)
    if op == "em_sum":
        if any(x.lo != x.hi for x in a[:4]):
            raise el.DomainError("em_sum needs exact coefficients")
        return el.em_sum(*(x.lo for x in a[:4]), el.exact_int(a[4], "em_sum"), el.exact_int(a[5], "em_sum"), p, budget)
    return UNARY[op](a[0], p, budget)


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


def _definitions(defs, p: int, budget) -> dict:
    """Every definition's enclosure at precision p, in order (or the Undecided/DomainError it raised)."""
    env = {}
    for name, e in defs:
        try:
            env[name] = evaluate(e, env, p, budget)
        except (el.Undecided, el.DomainError) as x:
            env[name] = type(x)(f"in definition {name!r}: {x}")
    return env


def check_lower_bound(doc: dict, budget):
    """Check a lower-bound certificate within ``budget``: a :class:`~.verdict.Verdict`
    (MalformedCertificate if the document is invalid); ``checker.check_certificate`` dispatches here."""

    p, why = START_PRECISION, {}
    try:  # a time limit reached while parsing is UNKNOWN too
        pending = (cert := parse_lower_bound(doc, budget))["steps"]
        while True:
            env, left = _definitions(cert["defs"], p, budget), []
            for s, lhs, rel, rhs in pending:
                try:
                    L, R = evaluate(lhs, env, p, budget), evaluate(rhs, env, p, budget)
                    ok = decide(L, rel, R)
                except el.DomainError as x:
                    return Verdict("REFUTED", _witness(s, p, undefined=str(x)), f"step {s['id']} ({s['eq']}) is "
                                   f"undefined: {x}", p)
                except el.Undecided as x:
                    ok, why[s["id"]] = None, f": {x}"
                if ok is False:
                    return Verdict("REFUTED", _witness(s, p, lhs=fmt([L.lo, L.hi]), rhs=fmt([R.lo, R.hi])),
                                   f"step {s['id']} ({s['eq']}) is false: {s['claim']}", p)
                if ok is None:
                    left.append((s, lhs, rel, rhs))
            if not left:
                n, extra = len(cert["steps"]), len(doc.get("producer_checked", []))
                return Verdict("CERTIFIED", None, f"lower bound: all {n} steps hold, from {len(doc['premises'])} cited "
                               "premises" + (f"; {extra} further step(s) were checked by the producer only, not by "
                                             "this kernel" if extra else "") + f" — {doc['conclusion']}", p)
            if p >= cert["cap"]:
                s = left[0][0]
                return Verdict("UNKNOWN", _witness(s, p), f"{len(left)} step(s) undecided at the maximum precision of "
                               f"{p} bits, first {s['id']} ({s['eq']}){why.get(s['id'], '')}", p, {}, "max_precision")
            pending, p = left, min(2 * p, cert["cap"])
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, str(x), p, {}, x.limit)


def _witness(s: dict, p: int, **sides) -> dict:
    return {"step": s["id"], "eq": s["eq"], "claim": s["claim"], "rel": s["rel"], "precision": p, **sides}
