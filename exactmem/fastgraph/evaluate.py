"""The fast engine's evaluation of a graph on a batch of examples.

Float64 tensors (`engine`), or double-float ones (`ddops`) for the ops that have them in precise
mode. Split from `engine` so that
`ddops`, which builds on `engine`'s tensors, and `engine` do not import each other."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

import numpy as np

from ..kernel.graph import MAX_OUTPUTS, MAX_RANK, bound, span
from . import ddops
from .engine import (ELEMENTWISE, FT, MOVES, START_PRECISION, Batch, Plan, Unsupported, apply_moves, as_float,
                     index_moves, op_gather_ids, rational_bounds)


def _node(bt, plan, op, a, args, kargs, i, precise):
    """One node's outputs (a list): float64 FTs, or double-float DTs (`ddops`) when ``precise``."""
    if op == "Gather" and args[1].b:
        r = [op_gather_ids(bt, a, *[ddops.to_ft(t) for t in args])]
    elif op in MOVES:
        mv = index_moves(bt, i, op, a, [t for t in args if t is not None] if op == "Concat" else args, kargs)
        return ddops.moves(bt, op, args, mv) if precise else apply_moves(bt, op, args, mv)
    else:
        r = None
        if precise and op in ddops.DD_OPS and (op != "Pow" or ddops.pow_ok(a)) and \
                (op != "Where" or not all(getattr(t, "ints", False) for t in args[1:])):
            r = ddops.DD_OPS[op](bt, a, *[t if t is None or (op == "Where" and j == 0) else
                                          ddops.to_dt(as_float(t) if not isinstance(t, ddops.DT) else t)
                                          for j, t in enumerate(args)])
        if r is None:
            r = ELEMENTWISE[op](bt, a, *[None if t is None else ddops.to_ft(t) for t in args])
        r = r if isinstance(r, list) else [r]
        for t in r:
            ddops.finite(bt, t) if isinstance(t, ddops.DT) else bt.finite(t)
    return [ddops.to_dt(t) for t in r] if precise else r


def evaluate(plan: Plan, xs, tokens: bool, position: str, budget, on_node=None, precise: bool = False,
             until: Optional[int] = None):
    """Scores of the examples ``xs`` (all of one length n): (lo, hi, bad) with lo, hi of shape (E, P, C)
    (P read positions) and ``bad`` the examples left undecided. ``precise``: double-float midpoints
    (`dd`, `ddops`) for the ops that have them, in the nodes before index ``until`` (all when None; the
    later ones in float64: the rounding of the last layers grows through fewer ops). Raises Unsupported,
    a kernel ShapeError, or LimitExceeded (the element and bit limits, as the kernel applies them)."""
    G, E, n = plan.G, len(xs), len(xs[0])
    bt = Batch(E, budget, plan.smax)
    bt.moves, bt.products = plan.moves, plan.products
    bt.dd_cache, bt.ones = plan.dd_cache, plan.ones
    kconsts, held = G.constants(START_PRECISION, budget.tick)
    env = dict(plan.consts)
    if tokens:
        env[G.input] = FT(np.array(xs, dtype=np.int64).reshape(E, 1, n), ints=True, b=True)
    else:
        b = [rational_bounds(q) for x in xs for r in x for q in r]
        lo = np.array([p for p, _ in b]).reshape(E, 1, n, len(xs[0][0]))
        hi = np.array([p for _, p in b]).reshape(lo.shape)
        env[G.input] = FT(lo, lo if np.array_equal(lo, hi) else hi, b=True)
    used = sum(span(t.shape) for t in kconsts.values()) + span((1, n) if tokens else (1, n, len(xs[0][0])))
    held = budget.room(held, 0, "the constants", "max_tensor_bits")
    with np.errstate(all="ignore"):
        for i, (op, _, ins, outs, a) in enumerate(G.nodes):
            budget.tick()
            args = [env[v] if v else None for v in ins]
            stand = [None if t is None else kconsts[v] if v in kconsts else SimpleNamespace(shape=t.kshape)
                     for v, t in zip(ins, args)]
            one, every, rank = bound(op, a, stand, len(outs))
            if rank > MAX_RANK or len(outs) > MAX_OUTPUTS:
                raise Unsupported("rank or outputs")
            used = budget.room(one, used - one + every, f"model.graph.nodes[{i}] ({op}), the outputs")
            dd_here = precise and (until is None or i < until)
            if precise and not dd_here:
                args = [ddops.to_ft(t) for t in args]
            r = _node(bt, plan, op, a, args, [kconsts.get(v) for v in ins], i, dd_here)
            if len(r) != len(outs):
                raise Unsupported("outputs")
            for name, t in zip(outs, r):
                w = ddops.width_bits(bt, t)
                budget.value(w, f"a value of model.graph.nodes[{i}] ({op})")
                v0 = t.m1 if isinstance(t, ddops.DT) else t.lo
                held = budget.room(v0[0].size * w * 2 if t.b else v0.size * w * 2, held,
                                   f"model.graph.nodes[{i}] ({op}), the values held", "max_tensor_bits")
                env[name] = t
            for v in ins:  # free what no later node reads
                if v and plan.last.get(v) == i and v not in plan.consts and v != G.input:
                    env.pop(v, None)
            if on_node is not None:
                on_node(i)
    out = as_float(ddops.to_ft(env[G.output]))
    sh = out.kshape
    if not (len(sh) in (2, 3) and sh[0] == 1 and sh[-1] > 0 and (len(sh) == 2 or sh[1] == n)
            and (len(sh) == 3 or position == "last")):
        raise Unsupported("output shape")  # the kernel names it
    lo = np.broadcast_to(out.lo, (E,) + sh) if not out.b else out.lo
    hi = np.broadcast_to(out.hi, (E,) + sh) if not out.b else out.hi
    lo, hi = lo.reshape(E, -1, sh[-1]), hi.reshape(E, -1, sh[-1])
    if position != "all":
        lo, hi = lo[:, -1:], hi[:, -1:]
    bad = bt.bad | ~np.isfinite(lo).all(axis=(1, 2)) | ~np.isfinite(hi).all(axis=(1, 2))
    return lo, hi, bad
