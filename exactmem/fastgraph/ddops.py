"""The graph ops on double-float tensors (`dd.DT`): the fast engine's precise mode (untrusted accelerator).

Add, Sub, Mul, Pow (integer k >= 1), MatMul, Gemm, LayerNormalization, Softmax (last axis), Tanh and the
index moves run on `DT`s; every other op converts its inputs to float bounds (`dd.to_bounds`), runs the
float64 op of `engine` and converts back (`dd.from_bounds`): sound either way, precise where it
matters for transformers. Shapes, broadcasting and limits are the kernel's, as in `engine`.
"""

from __future__ import annotations

from fractions import Fraction
from math import prod

import numpy as np

from . import dd
from .dd import DT, add, from_bounds, mul, point, rational, to_bounds, up
from .rounding import dn

DEAD = 650.0  # softmax entries this far below the row's largest midpoint weigh < e^(−649): bounded, not evaluated


def _arr(bt, a, b, R):
    if a is None or not b:
        return a
    k = a.shape[1:]
    return a.reshape((bt.E,) + (1,) * (R - len(k)) + k)


def align(bt, x: DT, R: int) -> DT:
    return DT(_arr(bt, x.m1, x.b, R), _arr(bt, x.m2, x.b, R), _arr(bt, x.r, x.b, R), x.b)


def full(bt, x: DT, shape, b) -> DT:
    """x broadcast to the result's full shape (a leading example axis when ``b``)."""
    f = ((bt.E,) if b else ()) + tuple(shape)
    g = lambda a: None if a is None else np.broadcast_to(a, f)  # noqa: E731
    return DT(g(x.m1), g(x.m2), g(x.r), b)


def _out(x, y):
    from ..kernel.graph import bshape

    shape = bshape(x.kshape, y.kshape)
    return shape, len(shape), x.b or y.b


def d_add(bt, a, x, y, neg=False):
    shape, R, b = _out(x, y)
    return full(bt, add(align(bt, x, R), align(bt, y, R), neg), shape, b)


def d_mul(bt, a, x, y):
    shape, R, b = _out(x, y)
    return full(bt, mul(align(bt, x, R), align(bt, y, R)), shape, b)


def d_pow(bt, a, x, y=None):
    """X^k for an integer k >= 1 by k − 1 ball products (k = 0 is 1)."""
    from ..kernel.graph import bshape
    from .engine import width_bits

    k = a["_k"].numerator
    shape = x.kshape if y is None else bshape(x.kshape, y.kshape)
    bt.budget.value(k * width_bits(bt, to_ft(x)), "a Pow result")
    if k == 0:
        r = DT(np.ones_like(x.m1), None, None, x.b)
    else:
        r = x
        for _ in range(k - 1):
            r = mul(r, x)
    f = ((bt.E,) if r.b else ()) + tuple(shape)
    g = lambda v: None if v is None else v.reshape(f)  # noqa: E731
    return DT(g(r.m1), g(r.m2), g(r.r), r.b)


def _mark(bt, cond, b):
    bt.mark(np.asarray(cond), b)


def d_matmul(bt, a, A, B):
    """MatMul of 2-d or batched matrices (1-d operands: the float64 op) by `dd.matmul`; a batched A times a
    constant 2-d B is one product over all rows of all examples."""
    from ..kernel.graph import bshape

    ka, kb = A.kshape, B.kshape
    if len(ka) < 2 or len(kb) < 2:
        return None
    (n, k), (k2, m) = ka[-2:], kb[-2:]
    if k != k2:
        return None
    batch = bshape(ka[:-2], kb[:-2])
    R = len(batch) + 2
    b = A.b or B.b
    if A.b and not B.b and len(kb) == 2:
        fl = lambda v: None if v is None else v.reshape(-1, k)  # noqa: E731
        C, big = dd.matmul(DT(fl(A.m1), fl(A.m2), fl(A.r)), B, cache=bt.dd_cache)
    else:
        C, big = dd.matmul(align(bt, A, R), align(bt, B, R))
    f = ((bt.E,) if b else ()) + tuple(batch) + (n, m)
    g = lambda v: None if v is None else np.broadcast_to(v, C.m1.shape).reshape(f)  # noqa: E731
    bt.mark(np.broadcast_to(big, C.m1.shape).reshape(f), b)
    return DT(g(C.m1), g(C.m2), g(C.r), b)


def d_gemm(bt, a, A, B, C=None):
    if len(A.kshape) != 2 or len(B.kshape) != 2:
        return None
    t = lambda x, f: DT(*(None if v is None else np.swapaxes(v, -1, -2) for v in (x.m1, x.m2, x.r)), x.b) \
        if f else x  # noqa: E731
    Y = d_matmul(bt, a, t(A, a["transA"]), t(B, a["transB"]))
    if Y is None:
        return None
    if a["alpha"] != 1:
        Y = d_mul(bt, a, Y, rational(a["alpha"]))
    if C is None:
        return Y
    if a["beta"] != 1:
        C = d_mul(bt, a, C, rational(a["beta"]))
    return d_add(bt, a, Y, C)


def _row_sum(bt, x: DT, key: str):
    """Σ over the last axis (keepdims) by a double-float product with a constant column of ones."""
    n = x.m1.shape[-1]
    lead = x.m1.shape[:-1]
    fl = lambda v: None if v is None else np.ascontiguousarray(v).reshape(-1, n)  # noqa: E731
    ones = bt.ones.setdefault(n, DT(np.ones((n, 1))))  # kept by the plan: its slices are cached
    S, big = dd.matmul(DT(fl(x.m1), fl(x.m2), fl(x.r)), ones, cache=bt.dd_cache)
    g = lambda v: None if v is None else v.reshape(lead + (1,))  # noqa: E731
    bt.mark(big.reshape(lead + (1,)), x.b)
    return DT(g(S.m1), g(S.m2), g(S.r), x.b)


def _div_count(S: DT, n: int) -> DT:
    """S/n: an exact scaling for n a power of two, else the product with the ball of 1/n."""
    if n & (n - 1) == 0:
        return dd.scale2(S, -(n.bit_length() - 1))
    return mul(S, rational(Fraction(1, n)))


def d_layernorm(bt, a, x, scale, bias=None):
    """(x − mean)·(var + ε)^(−1/2)·scale + bias over the last axis: the mean and the variance as
    double-float sums (`_row_sum`), d = x − mean one ball per element, (var + ε)^(−1/2) by `dd.rsqrt`."""
    if not x.m1.size:
        return x
    n = x.kshape[-1]
    xf = full(bt, x, x.kshape, x.b)
    mean = _div_count(_row_sum(bt, xf, "mean"), n)
    d = add(xf, mean, neg=True)
    var = _div_count(_row_sum(bt, mul(d, d), "var"), n)
    e = rational(a["epsilon"])
    bad = np.zeros(var.m1.shape, dtype=bool)
    inv = dd.rsqrt(add(var, e), bad)
    _mark(bt, bad, x.b)
    y = d_mul(bt, a, mul(d, inv), scale)
    return y if bias is None else d_add(bt, a, y, bias)


def d_softmax(bt, a, x):
    """Softmax along the last axis (``docs/certificate.md`` § Double-float midpoints): c = the row's
    largest m1; entries whose upper bound is below c − 650 weigh less than n·e^(−649) (absolute, into
    every radius); the others ('live') at their midpoints u_j = fl-ball of m_j − c: E_j = e^(u_j) (`dd.exp_point`),
    w = E_k/Σ_live E; every x of the input box has |x_j − c − u_j| <= R (the row's largest live radius,
    including the ball of u), so w_k(x)/w_k(u) lies in [e^(−2R), e^(2R)]: radius + |w|·4R (2R <= 5/4)."""
    from ..kernel.graph import axis

    ax = axis(a["axis"], len(x.kshape))
    if ax != len(x.kshape) - 1 or not x.m1.size:
        return None
    x = full(bt, x, x.kshape, x.b)
    n = x.kshape[-1]
    m1, m2 = x.m1, x.m2
    c = m1.max(axis=-1, keepdims=True)
    hi = up(m1 + np.abs(m2)) if m2 is not None else m1
    if x.r is not None:
        hi = up(hi + x.r)
    dead = hi <= dn(c - DEAD)
    live = ~dead
    y = add(DT(np.where(dead, c, m1), None if m2 is None else np.where(dead, 0.0, m2), None, x.b), point(-c))
    R = y.r if x.r is None else up(y.r + x.r)
    R = np.where(dead, 0.0, R).max(axis=-1, keepdims=True)
    bad = ~(R <= 0.625)
    bad = np.broadcast_to(bad, m1.shape).copy()
    E = dd.exp_point(DT(y.m1, y.m2, None, x.b), bad)
    E = DT(np.where(dead, 0.0, E.m1), np.where(dead, 0.0, E.m2), np.where(dead, 0.0, E.r), x.b)
    S = _row_sum(bt, E, "softmax")
    bS = np.zeros(S.m1.shape, dtype=bool)
    w = mul(E, dd.recip(S, bS))
    bad |= bS
    _mark(bt, bad, x.b)
    grow = up(4.0 * R)
    rad = up(w.r + up(up(np.abs(w.m1) + np.abs(w.m2) + w.r) * grow))
    rad = up(rad + up(n * 2.0 ** -936))  # the dead entries: n·e^(−649) < n·2^-936
    m1o = np.where(dead, 0.0, w.m1)
    m2o = np.where(dead, 0.0, w.m2)
    return DT(m1o, m2o, rad, x.b)


def d_tanh(bt, a, x):
    """tanh at the midpoint m: tanh|m| = (1 − E)/(1 + E), E = e^(−2|m|) (`dd.exp_point`; 2|m| > 700:
    tanh|m| in [1 − 2^-1000, 1]); odd. The radius r grows by sup |tanh'| <= 1 − (max(|t| − r_t − r, 0))² over
    the ball (tanh is 1-Lipschitz and tanh' = 1 − tanh²)."""
    m1, m2 = x.m1, z2(x)
    s = np.where(m1 != 0, np.sign(m1), np.sign(m2))
    far = np.abs(m1) > 350.0
    neg2 = DT(np.where(far, 0.0, -2.0 * s * m1), np.where(far, 0.0, -2.0 * s * m2), None, x.b)
    bad = np.zeros(m1.shape, dtype=bool)
    E = dd.exp_point(neg2, bad)
    one = point(1.0)
    den = add(one, E)
    bd = np.zeros(m1.shape, dtype=bool)
    t = mul(add(one, E, neg=True), dd.recip(den, bd))
    bad |= bd & ~far
    _mark(bt, bad, x.b)
    tm1 = np.where(far, 1.0, t.m1) * s
    tm2 = np.where(far, 0.0, t.m2) * s
    tr = np.where(far, 2.0 ** -1000, t.r)
    if x.r is not None:
        low = np.maximum(dn(dn(dn(np.abs(tm1) - np.abs(tm2)) - tr) - x.r), 0.0)
        slope = np.minimum(up(1.0 - dn(low * low)), 1.0)
        tr = up(tr + up(x.r * slope))
    return DT(tm1, tm2, tr, x.b)


def d_div(bt, a, x, y):
    """x/y = x·(1/y) for y of one sign (`dd.recip`; y reaching 0 or too wide: undecided)."""
    shape, R, b = _out(x, y)
    yy = align(bt, y, R)
    bad = np.zeros(np.shape(yy.m1), dtype=bool)
    q = dd.recip(yy, bad)
    _mark(bt, bad, y.b)
    return full(bt, mul(align(bt, x, R), q), shape, b)


def d_where(bt, a, c, x, y):
    """Where(c, x, y) part by part (c 0/1 ints, as the float op checks)."""
    from ..kernel.graph import bshape

    if not c.ints or not np.isin(c.lo, (0, 1)).all():
        return None
    shape = bshape(c.kshape, x.kshape, y.kshape)
    R, b = len(shape), c.b or x.b or y.b
    cc = _arr(bt, c.lo, c.b, R) != 0
    X, Y = align(bt, x, R), align(bt, y, R)
    pick = lambda u, v: None if u is None and v is None else np.where(cc, 0.0 if u is None else u,  # noqa: E731
                                                                       0.0 if v is None else v)
    return full(bt, DT(np.where(cc, X.m1, Y.m1), pick(X.m2, Y.m2), pick(X.r, Y.r), b), shape, b)


def z2(x):
    return np.zeros_like(x.m1) if x.m2 is None else x.m2


DD_OPS = {"Add": d_add, "Sub": lambda bt, a, x, y: d_add(bt, a, x, y, True), "Mul": d_mul, "Pow": d_pow,
          "MatMul": d_matmul, "Gemm": d_gemm, "LayerNormalization": d_layernorm, "Softmax": d_softmax,
          "Tanh": d_tanh, "Div": d_div, "Where": d_where}


def pow_ok(a) -> bool:
    k = a.get("_k")
    return k is not None and k.denominator == 1 and k >= 0


# ----------------------------------------------------------------------------- conversions


def to_dt(t):
    """An engine FT (float) as a DT; int tensors are returned as they are."""
    if isinstance(t, DT) or t is None or t.ints:
        return t
    return from_bounds(t.lo, t.hi, t.b)


def to_ft(t):
    from .engine import FT

    if not isinstance(t, DT):
        return t
    lo, hi = to_bounds(t)
    return FT(np.asarray(lo), None if lo is hi else np.asarray(hi), b=t.b)


def finite(bt, t: DT):
    """Examples whose balls are not all finite become undecided."""
    if not t.m1.size:
        return
    s = t.m1 if t.m2 is None else t.m1 + t.m2
    if t.r is not None:
        s = s + t.r
    if t.b:
        bt.bad |= ~np.isfinite(s.reshape(bt.E, -1).sum(axis=1))
    elif not np.isfinite(s).all():
        from .engine import Unsupported

        raise Unsupported("a constant expression overflows")


def moves(bt, op, args, mv):
    """Index moves on the three parts of DTs (int tensors as the float engine)."""
    from .engine import FT, apply_moves

    data = [t for j, t in enumerate(args) if (op == "Concat" or j == 0)]
    if all(not isinstance(t, DT) for t in data):
        return apply_moves(bt, op, args, mv)
    data = [to_dt(t) if not isinstance(t, DT) else t for t in data]
    parts = {}
    for part in ("m1", "m2", "r"):
        if part != "m1" and all(getattr(t, part) is None for t in data):
            parts[part] = [None] * len(mv)
            continue
        fts = [FT(np.zeros_like(t.m1) if getattr(t, part) is None else np.broadcast_to(getattr(t, part), t.m1.shape),
                  b=t.b) for t in data]
        a2 = fts if op == "Concat" else [fts[0]] + list(args[1:])
        parts[part] = [o.lo for o in apply_moves(bt, op, a2, mv)]
    b = any(t.b for t in data)
    return [DT(m1, m2, r, b) for m1, m2, r in zip(parts["m1"], parts["m2"], parts["r"])]


def width_bits(bt, t):
    """`engine.width_bits`; for a DT from max |m1| + max r (+ 1 bit for m2 and the rounding)."""
    from .engine import START_PRECISION, width_bits as wb

    if not isinstance(t, DT):
        return wb(bt, t)
    if not t.m1.size:
        return 0
    m = float(np.abs(t.m1).max()) + (0.0 if t.r is None else float(np.max(t.r)))
    if not np.isfinite(m):
        return 0  # the examples concerned are undecided (finite check)
    return (np.frexp(m)[1] if m else 0) + 1 + max(START_PRECISION, bt.smax) + 2


__all__ = ["DD_OPS", "to_dt", "to_ft", "finite", "moves", "width_bits", "prod"]
