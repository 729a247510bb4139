"""Planted-wrong lower-bound certificates (``docs/lower-bound-certificates.md``).

:func:`bound_mutants` turns one CERTIFIED lower-bound certificate into many re-hashed variants:
relations negated, a side pushed past the other, numbers nudged in steps and definitions, a
definition or a step that a later one relies on dropped, unknown operators and fields. Each
comes with whether it is **certainly wrong**, decided without the kernel:

* by construction (negated relation of a true step; ``lhs`` replaced by ``rhs ± 1``; a dropped
  definition or step that a later one names; an unknown operator or field), or
* by an independent oracle (:func:`oracle_false`): the producer's own rigorous interval
  arithmetic (``exactmem.arith.enclosure``: log2 by squaring, e by its series; ``bounds.sums`` for
  ``em_sum``) finds some step false. A nudge the oracle cannot refute may be a true certificate
  still (steps have slack) and is not counted.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from math import comb
from typing import List, Optional, Tuple

from exactmem.arith import enclosure as E
from exactmem.bounds.sums import linear_log2_sum
from exactmem.kernel.schema import canonical_hash

NEGATE = {"<=": ">", "<": ">=", ">=": "<", ">": "<=", "==": "<"}


def rehash(doc: dict, restate: bool = True) -> dict:
    """Stamp ``doc`` with its hash; with ``restate``, first make the conclusion restate the (possibly
    mutated) steps it names, as a forger would, so a mutant tests the steps, not the restatement
    (tests of the restatement itself pass ``restate=False``)."""
    if restate and isinstance(doc.get("conclusion"), dict):
        steps = {s.get("id"): s for s in doc.get("steps", []) if isinstance(s, dict)}
        for c in doc["conclusion"].get("steps", []):
            s = steps.get(c.get("step")) if isinstance(c, dict) else None
            if s is not None:
                c.update({k: copy.deepcopy(s[k]) for k in ("lhs", "rel", "rhs") if k in s})
    doc["hash"] = canonical_hash(doc)
    return doc


# ---------------------------------------------------------------- the independent oracle

def _ev(e, env, bits):
    """An exactmem.arith.enclosure Interval for an expression (None if it cannot be enclosed here)."""
    if isinstance(e, str):
        if e in env:
            return env[e]
        return E.Interval(Fraction(e), Fraction(e))
    op, args = e[0], e[1:]
    if op == "e":
        return E.e_interval(bits)
    if op == "^":
        a, k = _ev(args[0], env, bits), int(args[1])
        if a is None or abs(k) > 64:
            return None
        out = E.Interval(1, 1)
        for _ in range(abs(k)):
            out = out * a
        if k % 2 == 0 and a.lo < 0 < a.hi:
            out = E.Interval(0, max(abs(a.lo), abs(a.hi)) ** abs(k))
        return out if k >= 0 else 1 / out
    xs = [_ev(a, env, bits) for a in args]
    if any(x is None for x in xs):
        return None
    if op == "+":
        out = E.Interval(0, 0)
        for x in xs:
            out = out + x
        return out
    if op == "-":
        return -xs[0] if len(xs) == 1 else xs[0] - xs[1]
    if op == "*":
        out = xs[0]
        for x in xs[1:]:
            out = out * x
        return out
    if op == "/":
        if xs[1].lo <= 0 <= xs[1].hi:
            return None
        return xs[0] / xs[1]
    if op == "exp":
        lo, hi = E.Interval(xs[0].lo, xs[0].lo), E.Interval(xs[0].hi, xs[0].hi)
        return None if abs(xs[0].lo) > 64 or abs(xs[0].hi) > 64 else _exp(lo, hi, bits)
    if op in ("log2", "ln"):
        if xs[0].lo <= 0:
            return None
        r = E.Interval(E.log2_interval(xs[0].lo, bits).lo, E.log2_interval(xs[0].hi, bits).hi)
        return r if op == "log2" else r / E.log2_e(bits)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return E.Interval(f(x.lo for x in xs), f(x.hi for x in xs))
    if op in ("floor", "ceil"):
        import math
        lo, hi = (math.floor(xs[0].lo), math.floor(xs[0].hi)) if op == "floor" else (math.ceil(xs[0].lo),
                                                                                    math.ceil(xs[0].hi))
        return E.Interval(lo, lo) if lo == hi else None
    if op in ("binom", "em_sum", "sqrt"):
        if any(x.lo != x.hi for x in xs):
            return None
        v = [x.lo for x in xs]
        if op == "binom":
            return E.Interval(comb(int(v[0]), int(v[1])), comb(int(v[0]), int(v[1])))
        if op == "sqrt":
            s = E.sqrt(v[0])
            return E.Interval(s.lo, s.hi)
        r = linear_log2_sum(v[0], v[1], v[2], v[3], int(v[4]), int(v[5]), bits)
        return E.Interval(r.lo, r.hi)
    return None


def _exp(lo, hi, bits):
    """exp of [lo, hi] by the Taylor series of e^{x/2^s} (|x|/2^s ≤ 1/2, remainder ≤ 2·term), squared back."""
    def one(x: Fraction, up: bool) -> Fraction:
        s = 0
        while abs(x) / 2 ** s > Fraction(1, 2):
            s += 1
        y, term, tot, k = x / 2 ** s, Fraction(1), Fraction(1), 0
        while abs(term) > Fraction(1, 2 ** (bits + s + 8)):
            k += 1
            term = term * y / k
            tot += term
        tot = tot + (2 * abs(term) if up else -2 * abs(term))
        return tot ** (2 ** s)
    return E.Interval(one(lo.lo, False), one(hi.hi, True))


def oracle_false(doc: dict, bits: int = 96) -> Optional[str]:
    """The id of a step the independent arithmetic shows false, or None (not shown)."""
    env = {}
    try:
        for d in doc["definitions"]:
            v = _ev(d["expr"], env, bits)
            if v is None:
                return None
            env[d["name"]] = v
        for s in doc["steps"]:
            L, R = _ev(s["lhs"], env, bits), _ev(s["rhs"], env, bits)
            if L is None or R is None:
                continue
            rel = s["rel"]
            false = {"<=": L.lo > R.hi, "<": L.lo >= R.hi, ">=": L.hi < R.lo, ">": L.hi <= R.lo,
                     "==": L.hi < R.lo or R.hi < L.lo}[rel]
            if false:
                return s["id"]
    except (ValueError, ZeroDivisionError, KeyError, TypeError, OverflowError):
        return None
    return None


# ------------------------------------------------------------------------ mutations

def _numbers(e, path=()):
    """Paths of the number literals of an expression (not ^'s exponent)."""
    if isinstance(e, str):
        try:
            Fraction(e)
            yield path
        except ValueError:
            pass
        return
    for i, a in enumerate(e[1:], 1):
        if not (e[0] == "^" and i == 2):
            yield from _numbers(a, path + (i,))


def _set(e, path, value):
    if not path:
        return value
    e = list(e)
    e[path[0]] = _set(e[path[0]], path[1:], value)
    return e


def _get(e, path):
    for i in path:
        e = e[i]
    return e


def _names(e):
    if isinstance(e, str):
        yield e
    else:
        for a in e[1:]:
            yield from _names(a)


def bound_mutants(doc: dict, limit_per_kind: int = 10 ** 9, use_oracle: bool = True) -> List[Tuple[str, dict, bool]]:
    """(description, re-hashed mutant, certainly wrong) for one CERTIFIED certificate; without
    ``use_oracle`` nudged numbers are generated but not counted as certainly wrong (faster)."""
    def refuted(m) -> bool:
        return use_oracle and oracle_false(m) is not None

    out = []

    def emit(what, m, wrong):
        out.append((what, rehash(m), wrong))

    steps, defs = doc["steps"], doc["definitions"]
    for k, s in enumerate(steps[:limit_per_kind]):
        m = copy.deepcopy(doc)
        m["steps"][k]["rel"] = NEGATE[s["rel"]]
        emit(f"step {s['id']}: relation {s['rel']} negated", m, True)
        m = copy.deepcopy(doc)
        push = "+" if s["rel"] in ("<=", "<", "==") else "-"
        m["steps"][k]["lhs"] = [push, s["rhs"], "1"]
        emit(f"step {s['id']}: lhs := rhs {push} 1", m, True)
    for k, s in enumerate(steps[:limit_per_kind]):  # nudged numbers in steps
        for side in ("lhs", "rhs"):
            for path in list(_numbers(s[side]))[:2]:
                old = Fraction(_get(s[side], path) if path else s[side])
                for new in (old + 1, old * 2 + 1, -old):
                    if new == old:
                        continue
                    m = copy.deepcopy(doc)
                    m["steps"][k][side] = _set(s[side], path, str(new))
                    emit(f"step {s['id']}.{side}: {old} -> {new}", m, refuted(m))
    for k, d in enumerate(defs[:limit_per_kind]):  # nudged numbers in definitions
        for path in list(_numbers(d["expr"]))[:1]:
            old = Fraction(_get(d["expr"], path) if path else d["expr"])
            for new in (old + 1, old - 1, old * 3):
                if new == old:
                    continue
                m = copy.deepcopy(doc)
                m["definitions"][k]["expr"] = _set(d["expr"], path, str(new))
                emit(f"definition {d['name']}: {old} -> {new}", m, refuted(m))
    used = {n for s in steps for side in ("lhs", "rhs") for n in _names(s[side])}
    used |= {n for d in defs for n in _names(d["expr"])}
    for k, d in enumerate(defs[:limit_per_kind]):  # a definition something relies on, dropped
        if d["name"] in used:
            m = copy.deepcopy(doc)
            del m["definitions"][k]
            emit(f"definition {d['name']} dropped", m, True)
    relied = {u for s in steps for u in s.get("uses", ())}
    for k, s in enumerate(steps):  # a step a later step uses, dropped
        if s["id"] in relied:
            m = copy.deepcopy(doc)
            del m["steps"][k]
            emit(f"step {s['id']} (used later) dropped", m, True)
    for what, change in (("unknown operator", lambda m: m["steps"][0].update(lhs=["exp10", m["steps"][0]["lhs"]])),
                         ("unknown step field", lambda m: m["steps"][0].update(status="holds")),
                         ("unknown top-level field", lambda m: m.update(trusted=True)),
                         ("wrong format", lambda m: m.update(format="exactmem-certificate")),
                         ("relation text", lambda m: m["steps"][0].update(rel="≤")),
                         ("no steps", lambda m: m.update(steps=[])),
                         ("step id repeated", lambda m: m["steps"].append(copy.deepcopy(m["steps"][0]))),
                         ("exponent bomb", lambda m: m["steps"][0].update(
                             **{"rhs" if m["steps"][0]["rel"] in (">", ">=") else "lhs": ["^", "10", "100000000000"]})),
                         ("float literal", lambda m: m["steps"][0].update(rhs="1.5")),
                         ("JSON number", lambda m: m["steps"][0].update(rhs=3))):
        m = copy.deepcopy(doc)
        change(m)
        emit(what, m, True)
    m = copy.deepcopy(doc)
    m["steps"][0]["claim"] += " (edited)"
    out.append(("edited without re-hashing", m, True))
    return out
