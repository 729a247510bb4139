"""Batched float64 interval evaluation of a kernel-parsed graph model (untrusted accelerator).

`evaluate(G, inputs, ...)` runs the graph of ``docs/verify-format.md`` on many examples of one input
length at once: every tensor is a pair of float64 arrays ``lo``, ``hi`` with a leading example axis
(constants have none), and every op returns bounds that contain the real-number value the kernel's
`run_graph` encloses, by the rounding lemmas of `rounding` (``docs/certificate.md`` § The fast graph
engine). Shape work is the kernel's own: the index moves (Reshape, Transpose, Slice, Split, Concat,
Squeeze, Unsqueeze, Gather of constant indices) are found by running the kernel's op on a tensor of
flat indices, and broadcasting, axes and the element limits (`graph.bound`, `Budget.room`) are the
kernel's functions. Anything this engine does not evaluate raises `Unsupported`; an example whose
bounds stop being finite, or that needs a sign the bounds do not give (1/x of an interval holding 0,
√ of one reaching below 0), is marked undecided. Either way the kernel evaluates it itself.
"""

from __future__ import annotations

from fractions import Fraction
from math import prod
from types import SimpleNamespace

import numpy as np

from ..kernel.graph import OPS as KOPS, T, axes_of, axis, bshape
from . import rounding
from .rounding import (dn, erf_interval, erf_point, exp_interval, fdn, fup, matmul_bounds, mid_rad, pos_sum_dn,
                       pos_sum_up, sigmoid_interval, sum_bounds, tanh_interval, up)

START_PRECISION = 64  # the kernel's first rung: the value-size estimates below are made for it


class Unsupported(Exception):
    """This engine does not evaluate the model (or this batch): the kernel does."""


class FT:
    """A float interval tensor: ``lo``, ``hi`` (the same array for a point), ``ints`` (int64 values:
    ids, indices, 0/1 conditions), ``b`` (batched: a leading example axis)."""

    __slots__ = ("lo", "hi", "ints", "b")

    def __init__(self, lo, hi=None, ints=False, b=False):
        lo = np.asarray(lo)
        hi = lo if hi is None or hi is lo else np.asarray(hi)
        self.lo, self.hi, self.ints, self.b = lo, hi, ints, b

    @property
    def kshape(self):
        return tuple(self.lo.shape[1:] if self.b else self.lo.shape)


def rational_bounds(q: Fraction):
    """(lo, hi) floats around a rational: equal when q is a float; OverflowError past the float range."""
    return fdn(q), fup(q)


def const_tensor(c) -> FT:
    """A kernel constant (``T``, or (shape, Fractions, codes) for a non-dyadic one) as an FT: dyadic
    values that fit a float exactly (|numerator| < 2^53, scale <= 1000) are points; others are enclosed."""
    if isinstance(c, T):
        if c.sp is not None:
            raise Unsupported("special values")
        if c.ints:
            if max(map(abs, c.lo), default=0) >= 1 << 62:
                raise Unsupported("an integer past int64")
            return FT(np.array(c.lo, dtype=np.int64).reshape(c.shape), ints=True)
        if max(map(abs, c.lo), default=0) < 1 << 53 and c.s <= 1000:
            return FT(np.ldexp(np.array(c.lo, dtype=np.float64), -c.s).reshape(c.shape))
        qs = [Fraction(v, 1 << c.s) for v in c.lo]
    else:
        shape, qs, sp = c
        if sp and any(sp):
            raise Unsupported("special values")
        c = SimpleNamespace(shape=shape)
    try:
        b = [rational_bounds(q) for q in qs]
    except OverflowError:
        raise Unsupported("a constant past the float range") from None
    lo = np.array([x for x, _ in b], dtype=np.float64).reshape(c.shape)
    hi = np.array([y for _, y in b], dtype=np.float64).reshape(c.shape)
    return FT(lo, lo if np.array_equal(lo, hi) else hi)


def as_float(t: FT) -> FT:
    if not t.ints:
        return t
    if t.lo.size and int(np.abs(t.lo).max()) >= 1 << 53:
        raise Unsupported("an integer past 2^53 used as a value")
    return FT(t.lo.astype(np.float64), b=t.b)


class Batch:
    """One evaluation: E examples, the per-example undecided mask, the budget."""

    def __init__(self, E: int, budget, smax: int):
        self.E, self.bad, self.budget, self.smax = E, np.zeros(E, dtype=bool), budget, smax
        self.cx = SimpleNamespace(F=START_PRECISION, budget=budget, tick=budget.tick)

    def arr(self, t: FT, R: int, which: str = "lo"):
        """t's array (lo or hi) aligned for broadcasting against a batched result of kernel rank R."""
        a = getattr(t, which)
        if t.b:
            k = a.shape[1:]
            return a.reshape((self.E,) + (1,) * (R - len(k)) + k)
        return a

    def mark(self, cond, b: bool):
        """Examples where ``cond`` (an array over a batched tensor's elements) holds become undecided."""
        if not b:
            if np.any(cond):
                self.bad[:] = True
            return
        self.bad |= cond.reshape(self.E, -1).any(axis=1)

    def finite(self, t: FT):
        """Examples whose bounds are not all finite become undecided (a sum overflowing counts too)."""
        if t.ints or not t.lo.size:
            return
        if t.b:
            s = t.lo.reshape(self.E, -1).sum(axis=1)
            if t.hi is not t.lo:
                s = s + t.hi.reshape(self.E, -1).sum(axis=1)
            self.bad |= ~np.isfinite(s)
        elif not (np.isfinite(t.lo).all() and np.isfinite(t.hi).all()):
            raise Unsupported("a constant expression overflows")


# ----------------------------------------------------------------------------- element-wise ops


def _out(bt, *ts):
    shape = bshape(*(t.kshape for t in ts))
    return shape, len(shape), any(t.b for t in ts)


def _ab(bt, ts, R):
    return [(bt.arr(t, R, "lo"), bt.arr(t, R, "hi"), t.lo is t.hi) for t in ts]


def _shape_to(bt, lo, hi, shape, b):
    full = ((bt.E,) if b else ()) + tuple(shape)
    lo = np.broadcast_to(lo, full)
    return FT(lo, lo if hi is lo else np.broadcast_to(hi, full), b=b)


def op_add(bt, a, x, y, neg=False):
    x, y = as_float(x), as_float(y)
    shape, R, b = _out(bt, x, y)
    (xl, xh, _), (yl, yh, _) = _ab(bt, (x, y), R)
    j = rounding.iv()
    out = None if j is None else j.add_bounds(xl, xh, yl, yh, neg, rounding.JIT_MIN)
    if out is not None:
        return _shape_to(bt, *out, shape, b)
    if neg:
        return _shape_to(bt, dn(xl - yh), up(xh - yl), shape, b)
    return _shape_to(bt, dn(xl + yl), up(xh + yh), shape, b)


def _mul(xl, xh, xp, yl, yh, yp):
    """[lo, hi] of the product of two intervals: the extremes of the corner products, each rounded outward."""
    j = rounding.iv()
    mode = 0 if xp and yp else 1 if yp else 2 if xp else 3  # ivjit.mul_bounds_k's cases, as below
    out = None if j is None else j.mul_bounds(xl, xh, yl, yh, mode, rounding.JIT_MIN)
    if out is not None:
        return out
    if xp and yp:
        p = xl * yl
        return dn(p), up(p)
    if yp:
        p, q = xl * yl, xh * yl
        return dn(np.minimum(p, q)), up(np.maximum(p, q))
    if xp:
        return _mul(yl, yh, yp, xl, xh, xp)
    ps = (xl * yl, xl * yh, xh * yl, xh * yh)
    return dn(np.minimum(np.minimum(ps[0], ps[1]), np.minimum(ps[2], ps[3]))), \
        up(np.maximum(np.maximum(ps[0], ps[1]), np.maximum(ps[2], ps[3])))


def op_mul(bt, a, x, y):
    x, y = as_float(x), as_float(y)
    shape, R, b = _out(bt, x, y)
    (xl, xh, xp), (yl, yh, yp) = _ab(bt, (x, y), R)
    return _shape_to(bt, *_mul(xl, xh, xp, yl, yh, yp), shape, b)


def op_div(bt, a, x, y):
    """x/y for y of one sign: the extremes of the four corner quotients (x/y is monotone in each
    argument on such a box), rounded outward; y reaching 0: undecided."""
    x, y = as_float(x), as_float(y)
    shape, R, b = _out(bt, x, y)
    (xl, xh, _), (yl, yh, _) = _ab(bt, (x, y), R)
    zero = (yl <= 0) & (yh >= 0)
    bt.mark(np.broadcast_to(zero, ((bt.E,) if b else ()) + shape), b)
    ys, yt = np.where(zero, 1.0, yl), np.where(zero, 1.0, yh)
    qs = (xl / ys, xl / yt, xh / ys, xh / yt)
    lo = dn(np.minimum(np.minimum(qs[0], qs[1]), np.minimum(qs[2], qs[3])))
    hi = up(np.maximum(np.maximum(qs[0], qs[1]), np.maximum(qs[2], qs[3])))
    return _shape_to(bt, lo, hi, shape, b)


def op_recip(bt, a, x):
    x = as_float(x)
    zero = (x.lo <= 0) & (x.hi >= 0)
    bt.mark(zero, x.b)
    return FT(dn(1.0 / np.where(zero, 1.0, x.hi)), up(1.0 / np.where(zero, 1.0, x.lo)), b=x.b)


def op_neg(bt, a, x):
    x = as_float(x)
    return FT(-x.hi, -x.lo, b=x.b)


def op_relu(bt, a, x):
    x = as_float(x)
    lo = np.maximum(x.lo, 0.0)
    return FT(lo, lo if x.lo is x.hi else np.maximum(x.hi, 0.0), b=x.b)


def _sqrt(bt, x):
    neg = x.lo < 0
    bt.mark(neg, x.b)
    return FT(np.maximum(dn(np.sqrt(np.maximum(x.lo, 0.0))), 0.0), up(np.sqrt(np.maximum(x.hi, 0.0))), b=x.b)


def op_sqrt(bt, a, x):
    return _sqrt(bt, as_float(x))


def _power(v, k, upward):
    """|v|^k bounds for v >= 0 by k − 1 rounded products (each rounded in one direction; >= 0)."""
    p = v
    for _ in range(k - 1):
        p = up(p * v) if upward else np.maximum(dn(p * v), 0.0)
    return p


def op_pow(bt, a, x, y=None):
    """X^k, k a constant 1/2 (√) or integer >= 0: odd k increasing, even k on |x| (0 when the interval holds 0)."""
    x = as_float(x)
    k = a["_k"]
    shape = x.kshape if y is None else bshape(x.kshape, y.kshape)
    if k.denominator == 2:
        r = _sqrt(bt, x)
    else:
        k = k.numerator
        bt.budget.value(k * width_bits(bt, x), "a Pow result")
        if k == 0:
            r = FT(np.ones_like(x.lo), b=x.b)
        elif k == 1:
            r = x
        elif (j := rounding.iv()) is not None and (out := j.pow_bounds(x.lo, x.hi, k, rounding.JIT_MIN)) is not None:
            r = FT(*out, b=x.b)
        elif k & 1:
            al, ah = np.abs(x.lo), np.abs(x.hi)
            lo = np.where(x.lo >= 0, _power(al, k, False), -_power(al, k, True))
            hi = np.where(x.hi >= 0, _power(ah, k, True), -_power(ah, k, False))
            r = FT(lo, hi, b=x.b)
        else:
            al, ah = np.abs(x.lo), np.abs(x.hi)
            small = np.where((x.lo <= 0) & (x.hi >= 0), 0.0, np.minimum(al, ah))
            r = FT(_power(small, k, False), _power(np.maximum(al, ah), k, True), b=x.b)
    return FT(r.lo.reshape(((bt.E,) if r.b else ()) + shape), r.hi.reshape(((bt.E,) if r.b else ()) + shape), b=r.b)


def _monotone(f):
    def op(bt, a, x):
        x = as_float(x)
        lo, hi = f(x.lo, x.hi)
        return FT(lo, hi, b=x.b)
    return op


def op_exp(bt, a, x):
    x = as_float(x)
    top = float(x.hi.max()) if x.hi.size else 0.0
    bt.budget.value(START_PRECISION + 2 * max(int(np.ceil(top)) + 1, 0) if np.isfinite(top) else 1 << 62, "an Exp result")
    return _monotone(exp_interval)(bt, a, x)


def _pi_interval():
    from ..kernel.enclosure import pi_fx

    lo, hi = pi_fx(100)
    return Fraction(lo, 1 << 100), Fraction(hi, 1 << 100)


def _sqrt_bounds(q_lo: Fraction, q_hi: Fraction):
    """Floats a <= √q_lo and b >= √q_hi (exact comparisons of squares)."""
    a = b = float(q_lo) ** 0.5
    while Fraction(a) ** 2 > q_lo:
        a = float(np.nextafter(a, 0))
    b = float(q_hi) ** 0.5
    while Fraction(b) ** 2 < q_hi:
        b = float(np.nextafter(b, np.inf))
    return a, b


PI_LO, PI_HI = _pi_interval()
S2PI = _sqrt_bounds(2 / PI_HI, 2 / PI_LO)  # √(2/π)
ISQ2 = _sqrt_bounds(Fraction(1, 2), Fraction(1, 2))  # 1/√2
GA = rational_bounds(Fraction(44715, 10 ** 6))


def _pos_const_times(c, v, upward):
    """A bound of c·v for a positive constant c in [c0, c1] and a float point v."""
    if upward:
        return up(np.maximum(c[0] * v, c[1] * v))
    return dn(np.minimum(c[0] * v, c[1] * v))


def _gelu_factor(v, upward, tanh_form):
    """A bound (``upward``: upper) of g(v), GELU = x·g(x), g increasing into [0, 1]: every step is
    rounded in the direction of the bound (the inner argument is increasing in v)."""
    if tanh_form:
        av = np.abs(v)
        p_up, p_dn = _power(av, 3, True), _power(av, 3, False)
        cube = np.where(v >= 0, p_up, -p_dn) if upward else np.where(v >= 0, p_dn, -p_up)  # bound of v³
        w = up(v + _pos_const_times(GA, cube, True)) if upward else dn(v + _pos_const_times(GA, cube, False))
        u = _pos_const_times(S2PI, w, upward)
        lo, hi = tanh_interval(u, u)
    else:
        u = _pos_const_times(ISQ2, v, upward)
        lo, hi = erf_point(u)
    return up(up(1.0 + hi) * 0.5) if upward else np.maximum(dn(dn(1.0 + lo) * 0.5), 0.0)


def op_gelu(bt, a, x):
    x = as_float(x)
    th = a["approximate"] == "tanh"
    gl, gh = _gelu_factor(x.lo, False, th), np.minimum(_gelu_factor(x.hi, True, th), 1.0)
    lo, hi = _mul(x.lo, x.hi, x.lo is x.hi, gl, gh, False)
    return FT(lo, hi, b=x.b)


def op_softmax(bt, a, x):
    """Softmax along ``axis`` (``docs/certificate.md`` § Interval softmax): E_k = exp(x_k − c), c the
    largest upper bound, in [L_k, U_k]; the weight lies in [L_k/(L_k + Σ_{j≠k} U_j), U_k/(U_k + Σ_{j≠k} L_j)],
    the sums bounded by Lemma S, clipped to [0, 1]."""
    x = as_float(x)
    ax = axis(a["axis"], len(x.kshape)) + x.b
    if not x.lo.size:
        return x
    c = x.hi.max(axis=ax, keepdims=True)
    L, U = exp_interval(dn(x.lo - c), up(x.hi - c))
    SL, SU = pos_sum_dn(L, ax), pos_sum_up(U, ax)
    oU, oL = up(SU - U), np.maximum(dn(SL - L), 0.0)
    d_lo = up(L + oU)
    lo = np.where(d_lo > 0, np.maximum(dn(L / np.where(d_lo > 0, d_lo, 1.0)), 0.0), 0.0)
    d_hi = dn(U + oL)
    hi = np.where(d_hi > 0, np.minimum(up(U / np.where(d_hi > 0, d_hi, 1.0)), 1.0), 1.0)
    return FT(lo, hi, b=x.b)


def _mean(bt, x: FT, ax: tuple, keep: bool):
    n = prod(x.kshape[d] for d in ax)
    axes = tuple(d + x.b for d in ax)
    lo, hi = sum_bounds(x.lo, x.hi, axes, keepdims=True)
    lo, hi = (lo, hi) if n == 1 else (dn(lo / n), up(hi / n))
    shape = [1 if d in ax else x.kshape[d] for d in range(len(x.kshape)) if keep or d not in ax]
    full = ((bt.E,) if x.b else ()) + tuple(shape)
    return FT(lo.reshape(full), hi.reshape(full), b=x.b)


def op_reducemean(bt, a, x, axes=None):
    x = as_float(x)
    r = len(x.kshape)
    ax = tuple(sorted(axes_of(list(axes.lo.ravel()), r))) if axes is not None and axes.lo.size else tuple(range(r))
    gs = prod(x.kshape[d] for d in range(r) if d not in ax)
    if not prod(x.kshape[d] for d in ax) and gs:
        raise Unsupported("a mean over no elements")  # the kernel names it
    return _mean(bt, x, ax, bool(a.get("keepdims", 1)))


def op_layernorm(bt, a, x, scale, bias=None):
    """(x − mean)·(var + ε)^(−1/2)·scale + bias over the last axis, var the mean of (x − mean)²: the
    kernel's steps, each enclosed (mean, difference, square, mean, + ε, √, 1/·, products, sum)."""
    x = as_float(x)
    if not x.lo.size:
        return x
    last = (len(x.kshape) - 1,)
    m = _mean(bt, x, last, True)
    d = op_add(bt, {}, x, m, True)
    v = _mean(bt, op_pow(bt, {"_k": Fraction(2)}, d), last, True)
    e = FT(*rational_bounds(a["epsilon"])) if rational_bounds(a["epsilon"])[0] != rational_bounds(a["epsilon"])[1] else FT(rational_bounds(a["epsilon"])[0])
    r = op_recip(bt, {}, _sqrt(bt, op_add(bt, {}, v, e)))
    y = op_mul(bt, {}, op_mul(bt, {}, d, r), scale)
    return y if bias is None else op_add(bt, {}, y, bias)


# ----------------------------------------------------------------------------- products


class Products:
    """|B| of constant matrices (views of the plan's constant arrays), computed once per plan; the key
    holds the root array alive, so its id is never reused."""

    def __init__(self):
        self.abs = {}

    def absolute(self, B):
        root = B
        while root.base is not None:
            root = root.base
        k = (id(root), B.shape, B.strides, B.__array_interface__["data"][0])
        if k not in self.abs:
            self.abs[k] = (root, np.abs(B))
        return self.abs[k][1]


def op_matmul(bt, a, A, B):
    """MatMul (numpy semantics, 1-d operands included) by `rounding.matmul_bounds`; a batched A times a
    constant 2-d B is one BLAS product over all examples."""
    A, B = as_float(A), as_float(B)
    ka, kb = A.kshape, B.kshape
    if not ka or not kb:
        raise Unsupported("MatMul of a scalar")  # the kernel names it
    A1, B1 = len(ka) == 1, len(kb) == 1
    ka2, kb2 = ((1,) + ka if A1 else ka), (kb + (1,) if B1 else kb)
    (n, k), (k2, m) = ka2[-2:], kb2[-2:]
    if k != k2:
        raise Unsupported("MatMul inner dimensions")
    batch = bshape(ka2[:-2], kb2[:-2])
    R = len(batch) + 2
    b = A.b or B.b
    lead = (bt.E,) if b else ()
    shape = batch + ((n,) if not A1 else ()) + ((m,) if not B1 else ())

    def prep(t, ks):
        lo, hi = t.lo.reshape(((bt.E,) if t.b else ()) + ks), t.hi.reshape(((bt.E,) if t.b else ()) + ks)
        t2 = FT(lo, lo if t.lo is t.hi else hi, b=t.b)
        return bt.arr(t2, R, "lo"), bt.arr(t2, R, "hi"), t.lo is t.hi

    al, ah, ap = prep(A, ka2)
    bl, bh, bp = prep(B, kb2)
    Am, Ar = (al, None) if ap else mid_rad(al, ah)
    Bm, Br = (bl, None) if bp else mid_rad(bl, bh)
    absB = bt.products.absolute(bl) if bp and not B.b else None
    if A.b and not B.b and len(kb2) == 2:  # one product over all rows of all examples
        flat = lambda v: None if v is None else v.reshape(-1, k)  # noqa: E731
        lo, hi = matmul_bounds(flat(Am), flat(Ar), Bm, Br, absB)
    else:
        lo, hi = matmul_bounds(Am, Ar, Bm, Br, absB)
    full = lead + shape
    return FT(lo.reshape(full), hi.reshape(full), b=b)


def op_gemm(bt, a, A, B, C=None):
    """alpha·A'·B' + beta·C (2-d; A' = Aᵀ if transA, B' = Bᵀ if transB)."""
    if len(A.kshape) != 2 or len(B.kshape) != 2:
        raise Unsupported("Gemm needs 2-d A and B")
    t = lambda x, f: FT(np.swapaxes(x.lo, -1, -2), np.swapaxes(x.hi, -1, -2), x.ints, x.b) if f else x  # noqa: E731
    Y = op_matmul(bt, a, t(A, a["transA"]), t(B, a["transB"]))
    if a["alpha"] != 1:
        Y = op_mul(bt, a, Y, FT(*rational_bounds(a["alpha"])))
    if C is None:
        return Y
    if a["beta"] != 1:
        C = op_mul(bt, a, C, FT(*rational_bounds(a["beta"])))
    return op_add(bt, a, Y, C)


# ----------------------------------------------------------------------------- selection


def op_where(bt, a, c, x, y):
    if not c.ints or not np.isin(c.lo, (0, 1)).all():
        raise Unsupported("a Where condition that is not 0/1")  # the kernel names it
    if not (x.ints and y.ints):
        x, y = as_float(x), as_float(y)
    shape, R, b = _out(bt, c, x, y)
    cc = bt.arr(c, R) != 0
    lo = np.where(cc, bt.arr(x, R, "lo"), bt.arr(y, R, "lo"))
    point = x.lo is x.hi and y.lo is y.hi
    hi = lo if point else np.where(cc, bt.arr(x, R, "hi"), bt.arr(y, R, "hi"))
    r = _shape_to(bt, lo, hi, shape, b)
    r.ints = x.ints and y.ints
    return r


def op_isnan(bt, a, x):
    """No special value reaches this engine (`Unsupported` otherwise): IsNaN and IsInf are 0."""
    return FT(np.zeros(x.lo.shape, dtype=np.int64), ints=True, b=x.b)


def op_gather_ids(bt, a, x, ix):
    """Gather of a constant along ``axis`` at per-example indices (token ids)."""
    if x.b:
        raise Unsupported("Gather with computed data and computed indices")
    ax = axis(a["axis"], len(x.kshape))
    d = x.kshape[ax]
    if ix.lo.size and not (ix.lo.min() >= -d and ix.lo.max() < d):
        raise Unsupported("a Gather index out of range")  # the kernel names it
    idx = ix.lo % d if d else ix.lo
    lo = np.moveaxis(np.take(x.lo, idx, axis=ax), ax, 0)
    hi = lo if x.lo is x.hi else np.moveaxis(np.take(x.hi, idx, axis=ax), ax, 0)
    return FT(np.ascontiguousarray(lo), None if x.lo is x.hi else np.ascontiguousarray(hi), x.ints, True)


MOVES = {"Reshape", "Transpose", "Split", "Slice", "Concat", "Unsqueeze", "Squeeze", "Identity", "Gather"}
RESHAPES = {"Reshape", "Unsqueeze", "Squeeze", "Identity"}  # the kernel keeps the row-major order
DATA_INPUTS = {"Concat": None, "Gather": (0,)}  # inputs whose values move (None: all); others: (0,)


def index_moves(bt, i, op, a, args, kargs):
    """Run the kernel's op on tensors of flat indices: [(flat index map or None, shape)] per output."""
    key = (i, tuple(t.kshape if t is not None else None for t in args))
    if key in bt.moves:
        return bt.moves[key]
    data = range(len(args)) if op == "Concat" else (0,)
    stand, off = [], 0
    for j, (t, kt) in enumerate(zip(args, kargs)):
        if j in data:
            n = prod(t.kshape)
            stand.append(T(t.kshape, list(range(off, off + n)), ints=True))
            off += n
        else:
            stand.append(kt)
    r = KOPS[op][0](bt.cx, a, *stand)
    r = r if isinstance(r, list) else [r]
    res = [(None if op in RESHAPES else np.array(o.lo, dtype=np.int64), o.shape) for o in r]
    bt.moves[key] = res
    return res


def apply_moves(bt, op, args, moves):
    data = [t for j, t in enumerate(args) if (op == "Concat" or j == 0)]
    b = any(t.b for t in data)
    ints = all(t.ints for t in data)
    if not ints:
        data = [as_float(t) for t in data]

    def flat(which):
        parts = []
        for t in data:
            v = getattr(t, which)
            v = v.reshape((bt.E, -1)) if t.b else np.broadcast_to(v.reshape(1, -1), (bt.E if b else 1, v.size))
            parts.append(v)
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    point = all(t.lo is t.hi for t in data)
    lo = flat("lo")
    hi = lo if point else flat("hi")
    out = []
    for idx, shape in moves:
        full = ((bt.E,) if b else ()) + tuple(shape)
        L = (lo if idx is None else lo[:, idx]).reshape(full)
        H = L if point else (hi if idx is None else hi[:, idx]).reshape(full)
        out.append(FT(L, H, ints, b))
    return out


# ----------------------------------------------------------------------------- the graph


ELEMENTWISE = {
    "Add": op_add, "Sub": lambda bt, a, x, y: op_add(bt, a, x, y, True), "Mul": op_mul, "Div": op_div,
    "Pow": op_pow, "Neg": op_neg, "Relu": op_relu, "Sqrt": op_sqrt, "Reciprocal": op_recip, "Exp": op_exp,
    "Tanh": _monotone(tanh_interval), "Erf": _monotone(erf_interval), "Sigmoid": _monotone(sigmoid_interval),
    "Gelu": op_gelu, "Softmax": op_softmax, "LayerNormalization": op_layernorm, "ReduceMean": op_reducemean,
    "MatMul": op_matmul, "Gemm": op_gemm, "Where": op_where, "IsNaN": op_isnan, "IsInf": op_isnan,
}
SUPPORTED = set(ELEMENTWISE) | MOVES


def _abs_max(x) -> float:
    """max |x| as a float (NaN when x holds one, as np.abs(x).max()), by two reductions and no temporary."""
    return max(float(x.max()), -float(x.min()))


def width_bits(bt, t: FT) -> int:
    """An upper estimate of the bits of t's widest value in the kernel at its first precision (integer
    numerators over 2^s, s <= max(64, the constants' scales)): used only to apply the verifier's
    value and tensor-bit limits no later than the kernel would."""
    if not t.lo.size:
        return 0
    m = max(_abs_max(t.lo), _abs_max(t.hi))
    if t.ints:
        return int(m).bit_length()
    if not np.isfinite(m):
        return 0  # the examples concerned are undecided (finite check)
    return (np.frexp(m)[1] if m else 0) + max(START_PRECISION, bt.smax) + 2


class Plan:
    """A graph prepared for the engine: constants as FTs, nodes, the last use of each name."""

    def __init__(self, G):
        for op, *_ in G.nodes:
            if op not in SUPPORTED:
                raise Unsupported(f"op {op}")
        self.G, self.consts, self.smax = G, {}, 0
        self.skip = set()  # passes of `check.levels` that decided (almost) nothing here: later batches skip them
        for name, c in G.consts.items():
            self.consts[name] = const_tensor(c)
            if isinstance(c, T) and not c.ints:
                self.smax = max(self.smax, c.s)
        last = {}
        for i, (_, _, ins, _, _) in enumerate(G.nodes):
            for v in ins:
                last[v] = i
        last[G.output] = len(G.nodes)
        self.last = last
        self.moves, self.products = {}, Products()
        self.dd_cache, self.ones = {}, {}  # precise mode: constant matrices split into slices, columns of ones


def integer_bounds(lo, hi):
    """Outward integer bounds over 2^s of one example's float scores: ([lo ints], [hi ints], s) per row;
    floor(x·2^s) − 1 and ceil(x·2^s) + 1 (the scaling is exact unless subnormal, and then off by < 1)."""
    M = max(float(np.abs(lo).max()), float(np.abs(hi).max()), 1e-300)
    s = max(0, 61 - int(np.frexp(M)[1]))
    L, H = np.floor(np.ldexp(lo, s)) - 1, np.ceil(np.ldexp(hi, s)) + 1
    if s == 0 and M >= 2.0 ** 61:
        return [[int(v) for v in row] for row in L], [[int(v) for v in row] for row in H], 0
    return L.astype(np.int64).tolist(), H.astype(np.int64).tolist(), s
