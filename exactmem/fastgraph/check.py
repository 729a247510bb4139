"""``check --engine fast`` of graph models: the engine computes enclosures, the kernel decides.

`check_graph_examples` is `checker.check_examples` for a graph model's examples lo..hi−1: the same
verdict classes, in the same order (the first refutation, a label conflict at its later row, UNKNOWN
if an example stays undecided or a limit stops the check). Each example's scores come from the batched
float64 engine (`evaluate.evaluate`), turned into outward integer bounds over 2^s and judged by the
kernel's own `checker.judge_verdict`; an example those bounds do not decide (or that the engine does
not evaluate: unsupported ops, special values, a limit, a non-finite bound, a shape the kernel
refuses) is re-derived by the kernel itself (`checker.check_examples` on that one example: the
precision ladder), so the fast engine never answers UNKNOWN, or malformed, where the kernel would not.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Dict, Optional

from ..kernel.checker import (Budget, MalformedCertificate, ParsedCertificate, Undecided, Verdict, check_examples,
                              conflict_verdict, judge_verdict)
from ..kernel.limits import LimitExceeded
from .codelength import confirms
from .engine import Plan, Unsupported, integer_bounds
from .evaluate import evaluate

BLOCK = 256  # examples evaluated before they are judged in order
PRECISE = True  # examples float64 leaves undecided get double-float midpoints before the kernel's ladder
SKIP_LEVEL = 0.1  # a pass of `levels` that decides less than this share of a batch: later batches skip it
BATCH_ELEMENTS = 1 << 21  # elements of the widest tensor of one batch (memory: a few such tensors live)


def plan_for(cert: ParsedCertificate) -> Plan:
    """The engine's plan of ``cert.graph`` (built once per graph; Unsupported if it cannot run it)."""
    G = cert.graph
    plan = getattr(G, "_fast_plan", None)
    if plan is None:
        try:
            plan = Plan(G)
        except Unsupported as e:
            plan = e
        G._fast_plan = plan
    if isinstance(plan, Unsupported):
        raise plan
    return plan


def batch_size(cert: ParsedCertificate, n: int) -> int:
    """Examples per batch: the widest constant dimension times the sequence length bounds a tensor."""
    G = cert.graph
    wide = max([max(c.shape[-1:], default=1) if hasattr(c, "shape") else max(c[0][-1:], default=1)
                for c in G.consts.values()] + [1])
    return max(1, min(BLOCK, BATCH_ELEMENTS // max(1, n * max(wide, n) * 4)))


def fast_block(cert: ParsedCertificate, plan: Plan, block, budget: Budget, stats: Dict[str, int], on_batch=None):
    """{example: (status, witness)} for the examples of ``block`` the enclosures decide ('pass': the
    claim holds; 'fail': refuted, witness). LimitExceeded for time passes through; anything else the
    engine meets leaves that batch to the kernel. ``on_batch(k)``: after each batch, k examples of the
    block evaluated so far (progress only)."""
    todo = [e for e in block if cert.outputs[e] != "unknown"]
    by_len: Dict[int, list] = {}
    for e in todo:
        by_len.setdefault(len(cert.inputs[e]), []).append(e)
    res, seen = {}, len(block) - len(todo)  # unknown claims need no evaluation
    for n, es in by_len.items():
        size = batch_size(cert, n)
        for k in range(0, len(es), size):
            part = es[k:k + size]
            through_levels(plan, part, lambda level, todo: _judge_part(cert, plan, todo, budget, stats, res, level))
            if on_batch is not None:
                seen += len(part)
                on_batch(seen)
    return res


def through_levels(plan: Plan, todo: list, attempt) -> list:
    """``attempt(level, examples)`` → the examples it left undecided, over the passes of `levels` cheapest
    first (float64, then double-float midpoints for more of the graph), skipping those in ``plan.skip``;
    a pass other than the last that decides under SKIP_LEVEL of its examples joins ``plan.skip``, so later
    batches skip it (speed only). Returns the examples no pass decided."""
    passes = levels(plan)
    for level in passes:
        if not todo:
            break
        if level in plan.skip:
            continue
        left = attempt(level, todo)
        if level != passes[-1] and len(left) > (1 - SKIP_LEVEL) * len(todo):
            plan.skip.add(level)
        todo = left
    return todo


def decided_text(float64: int, double: int, kernel: int) -> str:
    """How a check's examples were decided, as the verdict's note says it."""
    return f"{float64} by float64 enclosures, {double} by double-float enclosures, {kernel} by the kernel's ladder"


def levels(plan: Plan):
    """The engine's passes, cheapest first, as the node index where double-float midpoints stop: 0
    (float64 throughout); just after the first product (MatMul, Gemm), when that lies in the first half:
    the width a float64 product's rounding bound (γ_k|A||B|) starts there is amplified by every later
    layer, and double-float up to there costs about what float64 does (on the N = 1,000 GPT-2 of
    docs/verify.md float64 decides no example and this pass all); half the nodes (the rounding of the
    last layers grows through fewer ops); every node. Not listed when PRECISE is off: float64 only."""
    n = len(plan.G.nodes)
    if not PRECISE:
        return (0,)
    first = next((i + 1 for i, node in enumerate(plan.G.nodes) if node[0] in ("MatMul", "Gemm")), n)
    return tuple(sorted({0, n // 2, n} | ({first} if first < n // 2 else set())))


def _judge_part(cert, plan, part, budget, stats, res, level: int):
    """Evaluate ``part`` (one input length) with double-float midpoints before node ``level`` (`levels`)
    and judge it; the examples left undecided (a list; all of them when the engine failed and a later
    level may do better)."""
    precise, last = level > 0, level == len(plan.G.nodes)
    key = "precise" if precise else "float64"
    t = time.perf_counter()
    try:
        lo, hi, bad = evaluate(plan, [cert.inputs[e] for e in part], cert.tokens, cert.position, budget,
                               precise=precise, until=level)
    except LimitExceeded as x:
        if x.limit == "time_limit":
            raise
        stats["fallback_batches"] = stats.get("fallback_batches", 0) + 1
        return [] if last else list(part)
    except (MemoryError, RecursionError, Exception):  # noqa: B014 (the kernel evaluates these)
        stats["fallback_batches"] = stats.get("fallback_batches", 0) + 1
        return [] if last else list(part)
    stats["seconds"] = stats.get("seconds", 0.0) + time.perf_counter() - t
    left, verdict_only = [], None if cert.codelengths is None else replace(cert, codelengths=None)
    for j, e in enumerate(part):
        budget.tick()
        if bad[j]:
            left.append(e)
            continue
        judged = cert
        if verdict_only is not None:  # the code length in float64 first (`codelength`); the kernel's at the last pass
            labels = cert.labels[e] if cert.position == "all" else [cert.labels[e]]
            if confirms(lo[j], hi[j], labels, cert.codelengths[e]):
                judged = verdict_only  # the claim holds: the kernel judges the verdict alone
            elif not last:
                left.append(e)
                continue
        L, H, s = integer_bounds(lo[j], hi[j])
        try:
            status, wit = judge_verdict(judged, e, [(a, b, None) for a, b in zip(L, H)], s, budget=budget)
        except MalformedCertificate:
            continue  # the kernel raises it itself, in order
        except (Undecided, LimitExceeded) as x:  # a code length these bounds do not decide, or its value limit
            if isinstance(x, LimitExceeded) and x.limit == "time_limit":
                raise
            left.append(e)  # the kernel's ladder decides it (or names the limit) itself
            continue
        if status != "undecided":
            res[e] = (status, wit)
            stats[key] = stats.get(key, 0) + 1
        else:
            left.append(e)
    return left


def _claims_text(cert: ParsedCertificate) -> str:
    k = len(cert.claims)
    return "no claims are stated" if k == 0 else "the one claim holds" if k == 1 else f"all {k} claims hold"


def check_graph_examples(cert: ParsedCertificate, lo: int, hi: int, cap: int, budget: Budget, progress=None,
                         facts=None, stats: Optional[Dict[str, int]] = None) -> Verdict:
    """`checker.check_examples` for examples lo..hi−1 of a graph model, through the fast engine (see the
    module docstring). ``progress(examples done, examples)`` after each batch of the engine and each
    block; ``stats`` collects counts."""
    stats = {} if stats is None else stats
    try:
        plan = plan_for(cert)
    except Unsupported as e:
        stats["unsupported"] = str(e)
        return check_examples(cert, range(lo, hi), cap, budget, facts)
    m, n, prec0 = cert.measured, hi - lo, stats.get("precise", 0)
    used, undecided, notes, limit = None, [], [], "max_precision"
    fast = pure = 0
    for b0 in range(lo, hi, BLOCK):
        block = range(b0, min(hi, b0 + BLOCK))
        try:
            res = fast_block(cert, plan, block, budget, stats, None if progress is None else
                             (lambda k, b0=b0: progress(b0 - lo + k, n)))
        except LimitExceeded as x:
            return _stopped(cert, str(x), b0 - lo, n, lo)
        for e in block:
            g = e + cert.first
            if budget.on_example is not None:
                budget.on_example(g)
            if facts is not None:
                earlier = facts.add(g, cert.inputs[e], cert.labels[e])
                if earlier is not None:
                    return conflict_verdict(cert, earlier, g, cert.labels[e])
            if cert.outputs[e] == "unknown":
                status = "pass"
            elif e in res:
                status, wit = res[e]
                fast += 1
                if status == "fail":
                    return Verdict("REFUTED", wit, f"example {g}: the claimed verdict {wit['claimed']!r} is "
                                                   "contradicted by the re-derived scores (fast engine)", None, m)
            else:
                pure += 1
                v = check_examples(cert, [e], cap, budget)
                if v.status == "REFUTED":
                    return v
                if v.precision is not None:
                    used = v.precision if used is None else max(used, v.precision)
                if v.status == "UNKNOWN":
                    if v.limit == "time_limit":
                        return _stopped(cert, v.message.split(" after ")[0], e - lo, n, lo)
                    undecided.append(g)
                    if v.limit != "max_precision":
                        notes.append(f"example {g}: {v.message}")
                        limit = v.limit if len(notes) == 1 else limit
                    status = "undecided"
                else:
                    status = "pass"
            if status == "pass" and facts is not None:  # the verdict and, with code-length claims, the code length
                facts.confirm(cert.outputs[e], cert.codelengths and cert.codelengths[e])
        if progress is not None:
            progress(block.stop - lo, n)
    stats["fast"], stats["pure"] = stats.get("fast", 0) + fast, stats.get("pure", 0) + pure
    prec = stats.get("precise", 0) - prec0
    how = f"fast engine: {decided_text(fast - prec, prec, pure)}" + (f" up to {used} bits" if used is not None else "")
    if not undecided:
        return Verdict("CERTIFIED", None, f"all {n} examples pass and {_claims_text(cert)} ({how})", used, m)
    shown = ", ".join(map(str, undecided[:10])) + (", ..." if len(undecided) > 10 else "")
    msg = f"{len(undecided)} of {n} examples undecided at precision {cap} (examples {shown})"
    if notes:
        msg += "; " + "; ".join(notes[:3]) + ("; ..." if len(notes) > 3 else "")
    else:
        msg = str(LimitExceeded("max_precision", msg))
    return Verdict("UNKNOWN", None, f"{msg}; {how}; no refutation found", used, m, limit)


def _stopped(cert: ParsedCertificate, text: str, done: int, n: int, lo: int) -> Verdict:
    """UNKNOWN at the time limit, saying how many examples were re-derived (and which)."""
    first = lo + cert.first
    which = f" (examples {first}..{first + done - 1})" if done else ""
    return Verdict("UNKNOWN", None, f"{text} after {done} of {n} examples{which}; no refutation found among them",
                   None, cert.measured, "time_limit")
