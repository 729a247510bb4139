"""Lower-bound certificates, format ``exactmem-lower-bound`` v1 (kernel; ``docs/lower-bound-certificates.md``).

A certificate states a lower bound, cites the results it rests on (``premises``: what a reader
must trust), names expressions (``definitions``) and lists ``steps``, each an exact relation
``lhs rel rhs`` between expressions of integers, rationals, + − × ÷, integer powers, ln, log2,
e, √, floor/ceil, min/max, binom and the Euler–Maclaurin sum ``em_sum``. :func:`check_lower_bound`
validates the document and its hash, then evaluates every step in rational interval arithmetic
(:mod:`elementary`) from 64 bits, doubling up to the verifier's cap: CERTIFIED when every step
holds, REFUTED at the first false step (both sides printed), UNKNOWN when undecided at the cap
or when a budget limit is reached.
"""

from __future__ import annotations

import re
from fractions import Fraction

from . import elementary as el
from .limits import DEFAULT_MAX_PRECISION, LimitExceeded
from .schema import MalformedCertificate, canonical_hash, jtype
from .text import fmt, parse_int

FORMAT, VERSION = "exactmem-lower-bound", 1
START_PRECISION = 64
MAX_DEPTH = 48  # nesting of one expression
MAX_NODES = 1_000_000  # operator and leaf nodes in the whole certificate
MAX_EXPONENT = 1 << 64  # |k| of ["^", a, k]
RELATIONS = ("<=", "<", ">=", ">", "==")
ARITY = {"+": (1, None), "-": (1, 2), "*": (1, None), "/": (2, 2), "^": (2, 2), "log2": (1, 1), "ln": (1, 1),
         "e": (0, 0), "sqrt": (1, 1), "floor": (1, 1), "ceil": (1, 1), "min": (1, None), "max": (1, None),
         "binom": (2, 2), "em_sum": (6, 6)}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")
_RATIONAL = re.compile(r"(-?)([0-9]+)(?:/([0-9]+))?")
TOP = {"required": ("format", "version", "statement", "premises", "definitions", "steps", "conclusion", "hash"),
       "optional": ("producer_checked", "check", "meta")}


def _bad(path: str, what: str):
    raise MalformedCertificate(f"{path}: {what}")


def _obj(x, path: str, required, optional=()) -> dict:
    if not isinstance(x, dict):
        _bad(path, f"expected an object, got {jtype(x)}")
    missing = [k for k in required if k not in x]
    extra = [k for k in x if k not in required and k not in optional]
    if missing:
        _bad(path, f"missing field {missing[0]!r}")
    if extra:
        _bad(path, f"unknown field {str(extra[0])[:40]!r}")
    return x


def _text(x, path: str) -> str:
    if not isinstance(x, str):
        _bad(path, f"expected a string, got {jtype(x)}")
    return x


def _list(x, path: str) -> list:
    if not isinstance(x, list):
        _bad(path, f"expected a list, got {jtype(x)}")
    return x


class _Parser:
    """Validates expressions: shapes, arities, names defined earlier, digits, depth and size."""

    def __init__(self, budget):
        self.budget, self.names, self.nodes = budget, set(), 0

    def number(self, s: str, path: str) -> Fraction:
        m = _RATIONAL.fullmatch(s)
        if not m:
            _bad(path, f"{s[:40]!r} is neither a number (\"12\", \"-3/8\") nor a defined name")
        cap = self.budget.limits.max_digits
        if max(len(m.group(2)), len(m.group(3) or "")) > cap:
            _bad(path, f"a number of more than {cap} digits (verifier limit max_digits)")
        den = parse_int(m.group(3)) if m.group(3) else 1
        if den == 0:
            _bad(path, "zero denominator")
        return Fraction(parse_int(m.group(1) + m.group(2)), den)

    def expr(self, x, path: str, depth: int = 0):
        """The parsed expression: Fraction | ("name", str) | (op, args...)."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            _bad(path, f"more than {MAX_NODES} expression nodes")
        if depth > MAX_DEPTH:
            _bad(path, f"expression nested deeper than {MAX_DEPTH}")
        if self.nodes & 255 == 0:
            self.budget.tick()
        if isinstance(x, str):
            if _NAME.fullmatch(x):
                if x not in self.names:
                    _bad(path, f"{x!r} is not defined before this point")
                return ("name", x)
            return self.number(x, path)
        if not isinstance(x, list) or not x or not isinstance(x[0], str):
            _bad(path, f"expected a number string, a name or [operator, ...], got {jtype(x)}")
        op, args = x[0], x[1:]
        if op not in ARITY:
            _bad(path, f"unknown operator {op[:20]!r}")
        lo, hi = ARITY[op]
        if len(args) < lo or (hi is not None and len(args) > hi):
            _bad(path, f"{op!r} takes {lo}{'' if hi == lo else ' or more' if hi is None else f' to {hi}'} arguments")
        if op == "^":
            k = args[1]
            if not isinstance(k, str) or not re.fullmatch(r"-?[0-9]{1,20}", k) or abs(int(k)) > MAX_EXPONENT:
                _bad(f"{path}[2]", f"an exponent must be an integer literal of absolute value ≤ 2^64, got {jtype(k)}")
            return ("^", self.expr(args[0], f"{path}[1]", depth + 1), int(k))
        return (op,) + tuple(self.expr(a, f"{path}[{i + 1}]", depth + 1) for i, a in enumerate(args))


def parse_lower_bound(doc, budget) -> dict:
    """The validated certificate: definitions and steps as parsed expressions (MalformedCertificate if invalid)."""
    _obj(doc, "(top level)", TOP["required"], TOP["optional"])
    if doc["format"] != FORMAT:
        _bad("format", f"expected {FORMAT!r}, got {jtype(doc['format'])}")
    if doc["version"] != VERSION or isinstance(doc["version"], bool):
        _bad("version", f"unknown lower-bound certificate version {jtype(doc['version'])} (this checker reads 1)")
    h = doc["hash"]
    if not isinstance(h, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", h):
        _bad("hash", f'expected "sha256:" followed by 64 lowercase hex digits, got {jtype(h)}')
    try:
        actual = canonical_hash(doc)
    except (TypeError, ValueError, RecursionError) as e:
        raise MalformedCertificate(f"content cannot be serialised canonically: {type(e).__name__}") from None
    if actual != h:
        _bad("hash", f"wrong hash: the file says {h} but its content hashes to {actual}")
    for k in ("statement", "conclusion"):
        _text(doc[k], k)
    for i, pr in enumerate(_list(doc["premises"], "premises")):
        for k, v in _obj(pr, f"premises[{i}]", ("cite", "statement"), ("eq",)).items():
            _text(v, f"premises[{i}].{k}")
    for i, pc in enumerate(_list(doc.get("producer_checked", []), "producer_checked")):
        for k, v in _obj(pc, f"producer_checked[{i}]", ("eq", "claim"), ("note",)).items():
            _text(v, f"producer_checked[{i}].{k}")
    cap = budget.limits.max_precision or DEFAULT_MAX_PRECISION
    if "check" in doc:
        mp = _obj(doc["check"], "check", ("max_precision",))["max_precision"]
        if not isinstance(mp, int) or isinstance(mp, bool) or mp < START_PRECISION:
            _bad("check.max_precision", f"expected an integer ≥ {START_PRECISION}, got {jtype(mp)}")
        cap = min(cap, mp)
    rd = _Parser(budget)
    defs = []
    for i, d in enumerate(_list(doc["definitions"], "definitions")):
        _obj(d, f"definitions[{i}]", ("name", "expr"), ("note",))
        name = _text(d["name"], f"definitions[{i}].name")
        if not _NAME.fullmatch(name) or name in rd.names:
            _bad(f"definitions[{i}].name", f"{name[:40]!r} is not a new name ([A-Za-z_][A-Za-z0-9_.]*)")
        _text(d.get("note", ""), f"definitions[{i}].note")
        defs.append((name, rd.expr(d["expr"], f"definitions[{i}].expr")))
        rd.names.add(name)
    steps, ids, cites = [], set(), {p["cite"] for p in doc["premises"]}
    for i, s in enumerate(_list(doc["steps"], "steps")):
        where = f"steps[{i}]"
        _obj(s, where, ("id", "eq", "claim", "lhs", "rel", "rhs"), ("uses",))
        for k in ("id", "eq", "claim"):
            _text(s[k], f"{where}.{k}")
        if s["id"] in ids:
            _bad(f"{where}.id", f"duplicate step id {s['id'][:40]!r}")
        ids.add(s["id"])
        if s["rel"] not in RELATIONS:
            _bad(f"{where}.rel", f"expected one of {', '.join(RELATIONS)}, got {jtype(s['rel'])}")
        for j, u in enumerate(_list(s.get("uses", []), f"{where}.uses")):
            if _text(u, f"{where}.uses[{j}]") not in ids and u not in cites:
                _bad(f"{where}.uses[{j}]", f"{u[:40]!r} is neither an earlier step's id nor a premise's cite")
        steps.append((s, rd.expr(s["lhs"], f"{where}.lhs"), s["rel"], rd.expr(s["rhs"], f"{where}.rhs")))
    if not steps:
        _bad("steps", "a lower-bound certificate needs at least one step")
    return {"defs": defs, "steps": steps, "cap": cap}


def evaluate(e, env: dict, p: int, budget):
    """The enclosure of a parsed expression at precision p (Undecided / DomainError / LimitExceeded)."""
    if isinstance(e, Fraction):
        return el.point(e)
    op = e[0]
    if op == "name":
        v = env[e[1]]
        if isinstance(v, Exception):
            raise v
        return v
    if op == "^":
        return el.ipow(evaluate(e[1], env, p, budget), e[2], p, budget)
    if op == "e":
        return el.e(p)
    a = [evaluate(x, env, p, budget) for x in e[1:]]
    budget.tick()
    if op == "+" or (op == "-" and len(a) == 1):
        out = el.point(0)
        for x in a:
            out = el.add(out, x, p, budget)
        return out if op == "+" else el.neg(out)
    if op == "-":
        return el.add(a[0], el.neg(a[1]), p, budget)
    if op == "*":
        out = a[0]
        for x in a[1:]:
            out = el.mul(out, x, p, budget)
        return out
    if op == "/":
        return el.mul(a[0], el.inv(a[1], p, budget), p, budget)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return el.Interval(f(x.lo for x in a), f(x.hi for x in a))
    if op in ("floor", "ceil"):
        return el.point(el.floor_of(a[0]) if op == "floor" else el.ceil_of(a[0]))
    if op == "binom":
        return el.binom(a[0], a[1], budget)
    if op == "em_sum":
        for x in a:
            if x.lo != x.hi:
                raise el.DomainError("em_sum needs exact arguments")
        return el.em_sum(*(x.lo for x in a[:4]), el.exact_int(a[4], "em_sum"), el.exact_int(a[5], "em_sum"), p, budget)
    return {"log2": el.log2, "ln": el.ln, "sqrt": el.sqrt}[op](a[0], p, budget)


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
    env = {}
    for name, e in defs:
        try:
            env[name] = evaluate(e, env, p, budget)
        except (el.Undecided, el.DomainError) as x:
            env[name] = type(x)(f"in definition {name!r}: {x}")
    return env


def check_lower_bound(doc: dict, budget):
    """Check a lower-bound certificate within ``budget``; a :class:`~.checker.Verdict`."""
    from .checker import Verdict

    try:
        cert = parse_lower_bound(doc, budget)
        pending = list(cert["steps"])
        p = START_PRECISION
        while True:
            env = _definitions(cert["defs"], p, budget)
            left, reasons = [], {}
            for s, lhs, rel, rhs in pending:
                try:
                    L, R = evaluate(lhs, env, p, budget), evaluate(rhs, env, p, budget)
                    ok = decide(L, rel, R)
                except el.DomainError as x:
                    return Verdict("REFUTED", _witness(s, None, None, p, str(x)),
                                   f"step {s['id']} ({s['eq']}) is undefined: {x}", p)
                except el.Undecided as x:
                    ok, reasons[s["id"]] = None, str(x)
                if ok is False:
                    return Verdict("REFUTED", _witness(s, L, R, p), f"step {s['id']} ({s['eq']}) is false: "
                                   f"{s['claim']}", p)
                if ok is None:
                    left.append((s, lhs, rel, rhs))
            pending = left
            if not pending:
                return Verdict("CERTIFIED", None, _certified_message(doc, len(cert["steps"])), p)
            if p >= cert["cap"]:
                s = pending[0][0]
                return Verdict("UNKNOWN", {"step": s["id"], "eq": s["eq"]},
                               f"{len(pending)} step(s) undecided at the maximum precision of {p} bits, first "
                               f"{s['id']} ({s['eq']}){': ' + reasons[s['id']] if s['id'] in reasons else ''}", p,
                               {}, "max_precision")
            p = min(2 * p, cert["cap"])
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, str(x), None, {}, x.limit)


def _witness(s: dict, L, R, p: int, why: str = "") -> dict:
    w = {"step": s["id"], "eq": s["eq"], "claim": s["claim"], "rel": s["rel"], "precision": p}
    if L is not None:
        w.update(lhs=fmt([L.lo, L.hi]), rhs=fmt([R.lo, R.hi]))
    if why:
        w["undefined"] = why
    return w


def _certified_message(doc: dict, n: int) -> str:
    extra = len(doc.get("producer_checked", []))
    return (f"lower bound: all {n} steps hold, from {len(doc['premises'])} cited premises"
            + (f"; {extra} further step(s) were checked by the producer only, not by this kernel" if extra else "")
            + f" — {doc['conclusion']}")
