"""Lower-bound certificates, format ``exactmem-lower-bound`` v2 (kernel; ``docs/lower-bound-certificates.md``).

A certificate states a lower bound (its ``statement``: the instance, names defined as exact numbers;
its ``conclusion``: steps restated exactly, so what CERTIFIED prints is the kernel's rendering of
checked relations, never the producer's words), cites the results it rests on (``premises``: what a
reader must trust), names expressions (``definitions``) and lists ``steps``, each an exact relation
``lhs rel rhs`` between expressions of integers, rationals, + − × ÷, integer powers, ln, log2,
e, exp, √, floor/ceil, min/max, binom and the Euler–Maclaurin sum ``em_sum``. `check_lower_bound`
validates the document and its hash, then evaluates every step in rational interval arithmetic
(the operations below, on `enclosure`) from 64 bits, doubling up to the verifier's cap:
CERTIFIED when every step holds, REFUTED at the first false (or undefined) step with both sides
printed, UNKNOWN when undecided at the cap or when a budget limit is reached.
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import comb, factorial

from .enclosure import Undecided, exp_bound
from .interval import Interval
from .logarithm import e_interval
from .expression import (ARITY as CORE, RELATIONS, DomainError, Parser, add, decide, definitions, evaluate,
                         exact_int, fit, log2, mul, point, render)
from .limits import DEFAULT_MAX_PRECISION, START_PRECISION, LimitExceeded
from .fields import MalformedCertificate, _list, _obj, _str, bad, integer, jtype
from .schema import canonical_hash
from .text import fmt, short
from .verdict import Verdict

# ------------------------------------------- the operators lower bounds add to `expression`'s language


def exp(a: Interval, p: int, budget) -> Interval:
    """exp is increasing: [exp lo, exp hi] by `exp_bound`; e^{±x} needs about 1.45·x
    bits, charged before it is formed."""
    budget.value(2 * max(-(-abs(x).numerator // abs(x).denominator) for x in a) + p, "exp of a large number")
    return fit(exp_bound(a.lo, p, False, budget.tick), exp_bound(a.hi, p, True, budget.tick), p, budget)


def binom(a: Interval, k: Interval, budget) -> Interval:
    """C(n, k) of exact integers 0 ≤ k ≤ n (``math.comb``); C(n, k) ≤ n^min(k, n−k) is charged first."""
    n, k = exact_int(a, "binom"), exact_int(k, "binom")
    if not 0 <= k <= n:
        raise DomainError("binom(n, k) needs 0 ≤ k ≤ n")
    budget.value(min(k, n - k) * n.bit_length(), "binom(n, k)")
    return point(comb(n, k))


_B = [Fraction(1)]  # B_0, B_1, ... computed so far


def bernoulli(n: int) -> Fraction:
    """B_n (B_1 = −1/2) by Σ_{j≤m} C(m+1, j) B_j = 0, extended as needed."""
    while len(_B) <= n:
        m = len(_B)
        _B.append(-sum(comb(m + 1, j) * _B[j] for j in range(m)) / (m + 1))
    return _B[n]


ZETA2 = Fraction(33, 10)  # 2ζ(2K) ≤ 2ζ(2) = π²/3 < 3.3
TWO_PI = Fraction(6283, 1000)  # 2π > 6.283


def em_sum(al: Fraction, be: Fraction, ga: Fraction, de: Fraction, a: int, b: int, p: int, budget) -> Interval:
    """Σ_{l=a}^{b} (α + βl)·log2(γl + δ) (0 if b < a; needs γ > 0, γa + δ > 0).

    Terms with (γl + δ)/γ < H = max(32, p/8) are summed directly (the remainder's minimum over K,
    about e^{−2πH} < 2^{−9H}, is then below 2^{−p}). The rest, l = c..b, by
    Euler–Maclaurin with K ≥ 2 corrections: with u = γx + δ, α + βx = P·u + R (P = β/γ,
    R = α − βδ/γ), f = (α + βx)·log2 u,
    ∫_c^b f = (1/γ)[P(u²/2·log2 u − u²/4·log2 e) + R(u·log2 u − u·log2 e)]_{u_c}^{u_b},
    f^{(k)} = log2 e·γ^k·(−1)^k·[P(k−2)!/u^{k−1} − R(k−1)!/u^k] (k ≥ 2), f' = γ[P log2 u + (P + R/u) log2 e];
    Σ = ∫ + (f(c) + f(b))/2 + Σ_{k≤K} B_{2k}/(2k)!·(f^{(2k−1)}(b) − f^{(2k−1)}(c)) + ρ,
    |ρ| ≤ 2ζ(2K)/(2π)^{2K}·∫|f^{(2K)}| ≤ 3.3/6.283^{2K}·log2 e·γ^{2K−1}[|P|(2K−3)!/u_c^{2K−2} + |R|(2K−2)!/u_c^{2K−1}]
    (DLMF 2.10.1; ``exactmem/bounds/sums.py`` has the derivation). K grows while ρ shrinks, up to ρ ≤ 2^−p."""
    if b < a:
        return point(0)
    if ga <= 0 or ga * a + de <= 0:
        raise DomainError("em_sum needs γ > 0 and γa + δ > 0")
    t = max(32, p // 8) - de / ga
    c = max(a, -((-t.numerator) // t.denominator))
    tot = point(0)
    for l in range(a, min(b, c - 1) + 1):
        budget.tick()
        tot = add(tot, mul(point(al + be * l), log2(point(ga * l + de), p + 8, budget), p + 8, budget), p + 8, budget)
    if c > b:
        return fit(tot.lo, tot.hi, p, budget)
    P, R = be / ga, al - be * de / ga
    uc, ub = ga * c + de, ga * b + de
    q = p + 16 + max(abs(x).numerator.bit_length() for x in (al, be, ga, de, ub, Fraction(1))) * 2
    l2e = log2(e_interval(q), q, budget)

    def rho(K):
        integral = l2e.hi * ga ** (2 * K - 1) * (abs(P) * factorial(2 * K - 3) / uc ** (2 * K - 2) +
                                               abs(R) * factorial(2 * K - 2) / uc ** (2 * K - 1))
        return ZETA2 * integral / TWO_PI ** (2 * K)

    c_ub = (P * ub * ub / 2 + R * ub) / ga + (al + be * b) / 2 + ga * P / 12  # coefficient of log2 u_b
    c_uc = -(P * uc * uc / 2 + R * uc) / ga + (al + be * c) / 2 - ga * P / 12  # of log2 u_c
    c_e = (-P * ub * ub / 4 - R * ub + P * uc * uc / 4 + R * uc) / ga + ga * (R / ub - R / uc) / 12  # of log2 e
    # the width asked is relative to the size of the sum (≈ c_ub·log2 u_b); any K is rigorous
    mag = max(0, abs(c_ub).numerator.bit_length() - c_ub.denominator.bit_length())
    K, r = 2, rho(2)
    while r > Fraction(1 << mag, 1 << p) and K < max(64, p):
        budget.tick()
        nxt = rho(K + 1)
        if nxt >= r:
            break
        K, r = K + 1, nxt
    for k in range(2, K + 1):
        budget.tick()
        g = [-P * factorial(2 * k - 3) / u ** (2 * k - 2) + R * factorial(2 * k - 2) / u ** (2 * k - 1) for u in (ub, uc)]
        c_e += bernoulli(2 * k) / factorial(2 * k) * ga ** (2 * k - 1) * (g[0] - g[1])
    parts = [mul(point(c), x, q, budget) for c, x in ((c_ub, log2(point(ub), q, budget)),
                                                      (c_uc, log2(point(uc), q, budget)), (c_e, l2e))]
    parts += [Interval(-r, r), tot]
    return fit(sum(x.lo for x in parts), sum(x.hi for x in parts), p, budget)


FORMAT, VERSION = "exactmem-lower-bound", 2  # 2: statement and conclusion are formal (version 1's were words)
ARITY = {**CORE, "e": (0, 0), "exp": (1, 1), "binom": (2, 2), "em_sum": (6, 6)}


def _em_sum(a, p: int, budget) -> Interval:
    if any(x.lo != x.hi for x in a[:4]):
        raise DomainError("em_sum needs exact coefficients")
    return em_sum(*(x.lo for x in a[:4]), exact_int(a[4], "em_sum"), exact_int(a[5], "em_sum"), p, budget)


EXTRA = {"e": lambda a, p, budget: e_interval(p), "exp": lambda a, p, budget: exp(a[0], p, budget),
         "binom": lambda a, p, budget: binom(a[0], a[1], budget), "em_sum": _em_sum}
TOP = ("format", "version", "statement", "premises", "definitions", "steps", "conclusion", "hash")


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
    _str(_obj(doc["statement"], "statement", ("text", "instance"))["text"], "statement.text")
    _str(_obj(doc["conclusion"], "conclusion", ("text", "steps"))["text"], "conclusion.text")
    cites = {_texts(p, f"premises[{i}]", ("cite", "statement"), ("eq",))["cite"]
             for i, p in enumerate(_list(doc["premises"], "premises"))}
    for i, p in enumerate(_list(doc.get("producer_checked", []), "producer_checked")):
        _texts(p, f"producer_checked[{i}]", ("eq", "claim"), ("note",))
    cap = budget.limits.max_precision or DEFAULT_MAX_PRECISION
    if "check" in doc:
        cap = min(cap, integer(_obj(doc["check"], "check", ("max_precision",))["max_precision"],
                               "check.max_precision", START_PRECISION))
    rd, steps, ids = Parser(budget, ARITY), [], set()
    defs = rd.definitions(doc["definitions"])
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
    return {"defs": defs, "steps": steps, "cap": cap, "instance": _instance(doc, dict(defs), rd),
            "concludes": _concludes(doc, {s["id"]: s for s, _, _, _ in steps})}


def _instance(doc, defs: dict, rd) -> list:
    """``statement.instance``: each name is a definition that is exactly this number (so the instance
    the kernel prints is the one the steps use); [(name, value)]."""
    out = []
    for name, v in _obj(doc["statement"]["instance"], "statement.instance", (), None).items():
        value = rd.number(_str(v, f"statement.instance.{name[:40]}"), f"statement.instance.{name[:40]}")
        if defs.get(name) != value:
            bad(f"statement.instance.{name[:40]}", f"{name[:40]!r} is not a definition whose expression is {short(v)}")
        out.append((name, value))
    return out


def _concludes(doc, steps: dict) -> list:
    """``conclusion.steps``: each item restates a step (its id, lhs, rel and rhs, exactly): the
    conclusion the kernel prints is a checked step, never the producer's words."""
    out = []
    for i, c in enumerate(_list(doc["conclusion"]["steps"], "conclusion.steps", nonempty=True)):
        path = f"conclusion.steps[{i}]"
        sid = _str(_obj(c, path, ("step", "lhs", "rel", "rhs"))["step"], f"{path}.step")
        s = steps.get(sid)
        if s is None or any(c[k] != s[k] for k in ("lhs", "rel", "rhs")):
            bad(path, f"does not restate a step: {sid[:40]!r} " + ("is no step's id" if s is None else
                                                                  "has another relation or other sides"))
        out.append(s)
    return out


def conclusion_text(cert: dict) -> str:
    """What a CERTIFIED lower bound proves, rendered by the kernel: the instance, each concluding
    step's relation, and the value of every name they mention that is defined as a number."""
    names, rels = set(), []
    for s in cert["concludes"][:6]:
        rels.append(f"{render(s['lhs'], names)} {s['rel']} {render(s['rhs'], names)} ({s['id']}, {s['eq']})")
    more = len(cert["concludes"]) - len(rels)
    consts = {n: e for n, e in cert["defs"] if isinstance(e, Fraction)}
    shown = {n for n, _ in cert["instance"]}
    where = [f"{n} = {fmt(consts[n])}" for n in sorted(names) if n in consts and n not in shown]
    inst = ", ".join(f"{n} = {fmt(v)}" for n, v in cert["instance"])
    return (f"at {inst}: " if inst else "") + "; ".join(rels) + (f"; and {more} more concluding step(s)" if more
                                                                 else "") + (f" — where {', '.join(where)}" if where
                                                                             else "")


def check_lower_bound(doc: dict, budget):
    """Check a lower-bound certificate within ``budget``: a `Verdict`
    (MalformedCertificate if the document is invalid); ``checker.check_certificate`` dispatches here."""

    p, why = START_PRECISION, {}
    try:  # a time limit reached while parsing is UNKNOWN too
        pending = (cert := parse_lower_bound(doc, budget))["steps"]
        while True:
            env, left = definitions(cert["defs"], {}, p, budget, EXTRA), []
            for s, lhs, rel, rhs in pending:
                try:
                    L, R = evaluate(lhs, env, p, budget, EXTRA), evaluate(rhs, env, p, budget, EXTRA)
                    ok = decide(L, rel, R)
                except DomainError as x:
                    return Verdict("REFUTED", _witness(s, p, undefined=str(x)), f"step {s['id']} ({s['eq']}) is "
                                   f"undefined: {x}", p)
                except Undecided as x:
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
                                             "this kernel" if extra else "") + f"; it concludes {conclusion_text(cert)}", p)
            if p >= cert["cap"]:
                s = left[0][0]
                return Verdict("UNKNOWN", _witness(s, p), f"{len(left)} step(s) undecided at the maximum precision of "
                               f"{p} bits, first {s['id']} ({s['eq']}){why.get(s['id'], '')}", p, {}, "max_precision")
            pending, p = left, min(2 * p, cert["cap"])
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, str(x), p, {}, x.limit)


def _witness(s: dict, p: int, **sides) -> dict:
    return {"step": s["id"], "eq": s["eq"], "claim": s["claim"], "rel": s["rel"], "precision": p, **sides}
