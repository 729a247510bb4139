"""Graph models (kernel): ``model.graph`` parsed, validated and evaluated in interval arithmetic.

One example at a time, in rigorous fixed-point interval arithmetic (``docs/verify-format.md``;
ONNX opset 18 semantics).

A tensor (`T`) is a shape and two row-major integer lists ``lo``, ``hi`` over one power of two
``2^s``: element i lies in ``[lo[i], hi[i]] / 2^s``; a point tensor shares one list (``lo is hi``).
Evaluation at precision F keeps scales at most F: a result over 2^s with s > F is rounded outward
(``lo`` down, ``hi`` up) to 2^F, so exact dyadic values stay exact while they fit. Products use the
midpoint–radius form (C-level ``sum(map(mul, ...))`` on integers); irrational steps use the bounds of
`enclosure`. A shape that does not fit makes the certificate malformed, naming the node.
Special values (``docs/verify-format.md`` § Special values): ``sp``, None when a tensor holds none
(the common case), else a code per element — 0 finite, −1 −∞, 1 +∞, 2 NaN — whose bounds are 0.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from itertools import accumulate
from math import prod
from operator import add, mul, sub
from types import SimpleNamespace

from .enclosure import Undecided, cdiv, sqrt_bound
from .fixedpoint import erf_fx, exp_fx, log_fx, phi_fx, sigmoid_fx, sin_fx, softplus_fx, tanh_fx
from .fields import MalformedCertificate, _list, _obj, _str, bad, integer, unexpected
from .limits import LimitExceeded

EXACT_SCALE = 1100  # a dyadic constant over at most 2^1100 is held exactly; others are rounded per precision
INDEX_INPUTS = {"Gather": (1,), "Where": (0,), "Pow": (1,)}  # besides OPS's int-constant inputs: where ints may go
CODES = {"-inf": -1, "inf": 1, "nan": 2}  # special values: their JSON texts and codes (0: finite)
NAMES = {v: k for k, v in CODES.items()}
SPECIAL_OPS = {"Add", "Sub", "Mul", "Div", "Reciprocal", "Neg", "Softmax", "Where", "IsNaN", "IsInf", "Identity", "Gather",
               "Reshape", "Transpose", "Split", "Slice", "Concat", "Unsqueeze", "Squeeze"}  # take special values
MAX_RANK, MAX_OUTPUTS = 64, 4096  # of a node's outputs (docs/verify-format.md): keeps shape work linear
REQUIRED = object()


class T:
    """A tensor: ``shape``, ``lo``/``hi`` over 2^``s``; ``ints``: an integer tensor (ids, shapes, axes)."""

    __slots__ = ("shape", "lo", "hi", "s", "ints", "memo", "sp")

    def __init__(self, shape, lo, hi=None, s=0, ints=False, sp=None):
        self.shape, self.lo, self.hi, self.s, self.ints, self.memo = tuple(shape), lo, lo if hi is None else hi, s, ints, {}
        self.sp = sp if sp and any(sp) else None


def marked(t: T, sp) -> T:
    """t with the special-value codes ``sp`` (None: none): a special element's bounds become 0."""
    if not sp or not any(sp):
        return t
    lo = [0 if c else v for c, v in zip(sp, t.lo)]
    return T(t.shape, lo, lo if t.lo is t.hi else [0 if c else v for c, v in zip(sp, t.hi)], t.s, t.ints, sp)


def codes(t: T, out):
    """The codes of t broadcast to ``out`` (all 0 when it holds no special value)."""
    return [0] * prod(out) if t.sp is None else [t.sp[i] for i in bidx(t.shape, out)]


def sign(lo, hi):
    """The sign of a finite interval: 1, −1, 0 (the point 0), or Undecided when it contains 0."""
    if lo > 0 or hi < 0 or lo == hi == 0:
        return (lo > 0) - (hi < 0)
    raise Undecided()


class ShapeError(Exception):
    """A shape that does not fit (`need`): the certificate is malformed, naming the node."""


def need(ok, msg: str):
    if not ok:
        raise ShapeError(msg)


def from_fracs(shape, xs, F, tick=lambda: None):
    """Rationals as a tensor: exact over 2^s if every denominator is a power of two 2^k, k <= EXACT_SCALE;
    else rounded outward to 2^F (``tick`` between divisions)."""
    ks = [x.denominator.bit_length() - 1 for x in xs]
    if all(x.denominator == 1 << k for x, k in zip(xs, ks)) and max(ks, default=0) <= EXACT_SCALE:
        s = max(ks, default=0)
        return T(shape, [x.numerator << (s - k) for x, k in zip(xs, ks)], s=s)
    return T(shape, [tick() or (x.numerator << F) // x.denominator for x in xs],
             [tick() or cdiv(x.numerator << F, x.denominator, True) for x in xs], F)


def fit(shape, lo, hi, s, F, ints=False) -> T:
    """Rounded outward to 2^F when s > F; equal bounds become one shared list (a point)."""
    if s > F:
        d, s = s - F, F
        lo, hi = [x >> d for x in lo], [-(-x >> d) for x in hi]
    return T(shape, lo, lo if hi is lo or hi == lo else hi, s, ints)


def at(t: T, s: int):
    """(lo, hi) of t over 2^s, s >= t.s (exact shifts, memoised)."""
    if s != t.s and s not in t.memo:
        lo = [x << (s - t.s) for x in t.lo]
        t.memo[s] = lo, lo if t.lo is t.hi else [x << (s - t.s) for x in t.hi]
    return (t.lo, t.hi) if s == t.s else t.memo[s]


def fx(t: T, F: int):
    """(lo, hi) of t over exactly 2^F."""
    return at(fit(t.shape, t.lo, t.hi, t.s, F), F) if t.s > F else at(t, F)


def strides(shape):
    return [prod(shape[i + 1:]) for i in range(len(shape))]


def span(shape) -> int:
    """Elements of ``shape`` with a zero dimension counted as 1: bounds each tensor derived from it."""
    return prod(max(d, 1) for d in shape)


def bound(op, a, xs, n_out):
    """(largest output, all outputs, rank) of a node, from its inputs' shapes, before it runs: each
    dimension at most the largest aligned one (broadcasting); Gather, MatMul, Gemm, Concat, Reshape and
    Unsqueeze by their own rules; a Split's outputs together as large as its input, plus one each."""
    ts = [x.shape for x in xs if x is not None]
    r = max(map(len, ts), default=0)
    big = [max(s[d - r + len(s)] if d >= r - len(s) else 1 for s in ts) for d in range(r)]
    n = span(big)
    if op == "Gather" and len(ts) == 2:
        x, ix = ts
        ax = a["axis"] % len(x) if -len(x) <= a["axis"] < len(x) else 0
        n, r = span(x[:ax] + x[ax + 1:]) * span(ix), len(x) + len(ix) - 1
    elif op == "MatMul" and len(ts) == 2:
        n = span(big[:-2]) * max(ts[0][-2:-1] or (1,)) * max(ts[1][-1:] if len(ts[1]) > 1 else (1,))
    elif op == "Gemm":
        n = span(big) + max(ts[0], default=1) * max(ts[1], default=1)
    elif op == "Concat":
        n = sum(map(span, ts))
    elif op in ("Reshape", "Unsqueeze"):
        r = len(xs[1].lo) + (op == "Unsqueeze") * len(xs[0].shape)
    return n, n + n_out if op == "Split" else n, r


def walk(pairs) -> list:
    """Flat indices of a row-major walk over (count, stride) pairs."""
    idx = [0]
    for n, st in pairs:
        idx = [i + st * j for i in idx for j in range(n)]
    return idx


@lru_cache(maxsize=1024)
def bshape(*shapes):
    """The numpy broadcast shape."""
    r = max(map(len, shapes))
    out = tuple(0 if 0 in ds else max(ds) for ds in zip(*((1,) * (r - len(s)) + s for s in shapes)))
    need(all(d in (1, m) for s in shapes for d, m in zip(s[::-1], out[::-1])),
         "shapes " + " and ".join(str(list(s)) for s in shapes) + " do not broadcast")
    return out


@lru_cache(maxsize=1024)
def bidx(shape, out):
    """For each element of the broadcast shape ``out``, its flat index in a tensor of ``shape``."""
    full = (1,) * (len(out) - len(shape)) + shape
    return walk((o, 0 if d == 1 else st) for o, d, st in zip(out, full, strides(full)))


@lru_cache(maxsize=1024)
def groups(shape, axes):
    """Flat indices of each fibre over ``axes``, one list per remaining index (row-major)."""
    st = strides(shape)
    inner = walk((shape[d], st[d]) for d in axes)
    return [[o + i for i in inner] for o in walk((shape[d], st[d]) for d in range(len(shape)) if d not in axes)]


def take(t: T, idx, shape) -> T:
    lo = [t.lo[i] for i in idx]
    return T(shape, lo, lo if t.lo is t.hi else [t.hi[i] for i in idx], t.s, t.ints, t.sp and [t.sp[i] for i in idx])


def spread(t: T, out, s):
    """(lo, hi) of t broadcast to ``out`` over 2^s."""
    return at(t if t.shape == out else take(t, bidx(t.shape, out), out), s)


def axis(v, r):
    need(-r <= v < r, f"axis {v} out of range for rank {r}")
    return v % r


def axes_of(vals, r):
    """ONNX axes: each in [-r, r) (negative counts from the end), none repeated."""
    ax = [axis(v, r) for v in vals]
    need(len(set(ax)) == len(ax), f"axes {list(vals)} repeat an axis of rank {r}")
    return ax


def ints(vals) -> T:
    return T((len(vals),), list(vals), ints=True)


# ----------------------------------------------------------------------------- element-wise ops


def op_add(cx, a, x, y):
    """Add: [xl + yl, xh + yh], numpy broadcasting (Sub: x + (−y), `op_neg`)."""
    out, s = bshape(x.shape, y.shape), max(x.s, y.s)
    (xl, xh), (yl, yh) = spread(x, out, s), spread(y, out, s)
    lo = list(map(add, xl, yl))
    r = fit(out, lo, lo if xl is xh and yl is yh else list(map(add, xh, yh)), s, cx.F, x.ints and y.ints)
    if x.sp is None and y.sp is None:
        return r  # IEEE: NaN wins; ∞ + finite = ∞; (−∞) + (+∞) = NaN
    return marked(r, [2 if 2 in (p, q) or p * q == -1 else p or q for p, q in zip(codes(x, out), codes(y, out))])


def op_mul(cx, a, x, y):
    """Mul: the extremes of the four endpoint products, over 2^(sx + sy)."""
    out = bshape(x.shape, y.shape)
    (xl, xh), (yl, yh) = spread(x, out, x.s), spread(y, out, y.s)
    if xl is xh and yl is yh:
        lo = hi = list(map(mul, xl, yl))
    else:
        ps = list(zip(map(mul, xl, yl), map(mul, xl, yh), map(mul, xh, yl), map(mul, xh, yh)))
        lo, hi = list(map(min, ps)), list(map(max, ps))
    r = fit(out, lo, hi, x.s + y.s, cx.F, x.ints and y.ints)
    if x.sp is None and y.sp is None:
        return r  # IEEE: NaN wins; ∞ × ∞ and ∞ × (finite ≠ 0) by the signs; ∞ × 0 = NaN
    return marked(r, [2 if 2 in (p, q) else p * q if p and q else (p or q) * sign(*(b if p else a)) or 2 if p or q else 0
                      for p, q, a, b in zip(codes(x, out), codes(y, out), zip(xl, xh), zip(yl, yh))])


def op_recip(cx, a, x):
    """Reciprocal: 1/x is decreasing on each side of 0: [1/hi, 1/lo] (2^(s+F)/n over 2^F); an
    interval that contains 0 is undecided. 1/±∞ = 0, 1/NaN = NaN."""
    sp = x.sp or [0] * len(x.lo)
    if any(l <= 0 <= h and not c for l, h, c in zip(x.lo, x.hi, sp)):
        raise Undecided()
    one = 1 << (x.s + cx.F)  # a bound is 0 only for a special value here: its result is marked below
    r = fit(x.shape, [cdiv(one, h, False) if h else 0 for h in x.hi], [cdiv(one, l, True) if l else 0 for l in x.lo],
            cx.F, cx.F)
    return marked(r, x.sp and [2 * (c == 2) for c in x.sp])


def op_div(cx, a, x, y):
    bshape(x.shape, y.shape)  # shapes first: inputs that do not fit are malformed even when y reaches 0
    return op_mul(cx, a, x, op_recip(cx, a, y))


def op_neg(cx, a, x, ints=False):
    """Neg: [−hi, −lo]; ±∞ flip, NaN stays. ``ints``: an integer tensor stays one (Sub's y; Neg's result is not)."""
    return marked(fit(x.shape, [-v for v in x.hi], [-v for v in x.lo], x.s, x.s, ints and x.ints),
                  x.sp and [c if c == 2 else -c for c in x.sp])


def monotone(f, domain=None):
    """An increasing function applied to the endpoints over 2^F; ``domain(lo)`` False: undecided
    (e.g. √ of an interval reaching below 0)."""
    def op(cx, a, x):
        lo, hi = fx(x, cx.F)
        if domain is not None and not all(map(domain, lo)):
            raise Undecided()
        t, F = cx.tick, cx.F
        return fit(x.shape, [t() or f(v, F, False, t) for v in lo], [t() or f(v, F, True, t) for v in hi], F, F)
    return op


def op_exp(cx, a, x):
    """Exp; e^x < 2^(2x): the result's size is charged to the value limit before it is computed."""
    cx.budget.value(cx.F + 2 * max(max(x.hi, default=0) >> x.s, 0), "an Exp result")
    return monotone(exp_fx)(cx, a, x)


def op_pow(cx, a, x, y=None):
    """Pow with a constant exponent k: 1/2 is Sqrt; an integer k maps the endpoints (odd k: increasing;
    even k: x^k on |x|, 0 when the interval contains 0)."""
    k, out = a["_k"], x.shape if y is None else bshape(x.shape, y.shape)  # Y has one element: out reshapes X
    if k.denominator == 2:
        r = sqrt(cx, a, x)
        return T(out, r.lo, r.hi, r.s)
    k = k.numerator
    cx.budget.value(k * widest(x), "a Pow result")
    b = [(l ** k, h ** k) if k & 1 or l >= 0 or not k else (h ** k, l ** k) if h <= 0 else (0, max(l ** k, h ** k))
         for l, h in zip(x.lo, x.hi)]
    return fit(out, [v for v, _ in b], [v for _, v in b], x.s * k, cx.F)


def op_gelu(cx, a, x):
    """Gelu = x·g(x), g increasing in [0, 1] (`enclosure.phi_fx`): for x in [l, h] the value lies
    in the product of the intervals [l, h] and [g(l), g(h)] (GELU itself is not monotone)."""
    t, F, th = cx.tick, cx.F, a["approximate"] == "tanh"
    ps = [(l * gl, l * gh, h * gl, h * gh) for l, h in zip(*fx(x, F))
          for gl, gh in [(t() or phi_fx(l, F, False, th, t), phi_fx(h, F, True, th, t))]]
    return fit(x.shape, list(map(min, ps)), list(map(max, ps)), 2 * F, F)


def op_softmax(cx, a, x):
    """Softmax along ``axis``: with E_k = exp(x_k − max_j hi_j) in [L_k, U_k], the weight
    E_k / Σ_j E_j lies in [L_k/(L_k + Σ_{j≠k} U_j), U_k/(U_k + Σ_{j≠k} L_j)] (increasing in E_k,
    decreasing in the others; ``docs/certificate.md`` § Interval softmax), clipped to 1. A −∞ position
    weighs exactly 0 and the others are the softmax of the rest; a row of only −∞, or holding +∞ or
    NaN, is NaN (ONNX: exp(x − max) with max ∞)."""
    F, t, sp = cx.F, cx.tick, x.sp
    xl, xh = fx(x, F)
    lo, hi, out = [0] * len(xl), [0] * len(xl), sp and [0] * len(sp)
    for g in groups(x.shape, (axis(a["axis"], len(x.shape)),)):
        t()
        if g and sp and max(sp[i] for i in g):  # −1: every position −∞; 1, 2: +∞ or NaN
            for i in g:
                out[i] = 2
            continue
        g = [i for i in g if not sp or not sp[i]]
        if not g:  # an empty axis: no weights
            continue
        c = max(xh[i] for i in g)
        E = [(exp_fx(xl[i] - c, F, False, t), exp_fx(xh[i] - c, F, True, t)) for i in g]
        sl, sh = sum(e for e, _ in E), sum(e for _, e in E)
        for i, (l, h) in zip(g, E):
            lo[i] = (l << F) // (l + sh - h) if l else 0
            hi[i] = min(1 << F, cdiv(h << F, h + sl - l, True))
    return marked(fit(x.shape, lo, hi, F, F), out)


def op_reducemean(cx, a, x, axes=None):
    """ReduceMean over ``axes`` (all when absent): the sum's bounds divided by the count, rounded outward."""
    r = len(x.shape)
    ax = tuple(sorted(axes_of(axes.lo, r))) if axes is not None and axes.lo else tuple(range(r))
    s, gs, n = max(x.s, cx.F), groups(x.shape, ax), prod(x.shape[d] for d in ax)
    xl, xh = at(x, s)
    need(n or not gs, "a mean over no elements (ONNX: NaN)")
    lo, hi = [sum(xl[i] for i in g) // n for g in gs], [cdiv(sum(xh[i] for i in g), n, True) for g in gs]
    shape = [1 if d in ax else x.shape[d] for d in range(r) if a.get("keepdims", 1) or d not in ax]
    return fit(shape, lo, hi, s, cx.F)


def op_layernorm(cx, a, x, scale, bias=None):
    """LayerNormalization over the last axis: d = x − mean, var = mean(d²) (biased), then
    d·(var + ε)^(−1/2)·scale + bias, each step an enclosure."""
    last, keep = ints([len(x.shape) - 1]), {"keepdims": 1}
    if not x.lo:  # no elements: an empty result
        return x
    d = op_add(cx, a, x, op_neg(cx, a, op_reducemean(cx, keep, x, last)))
    v = op_reducemean(cx, keep, op_pow(cx, {"_k": Fraction(2)}, d), last)
    r = op_recip(cx, a, sqrt(cx, a, op_add(cx, a, v, from_fracs((), [a["epsilon"]], cx.F))))
    y = op_mul(cx, a, op_mul(cx, a, d, r), scale)
    return y if bias is None else op_add(cx, a, y, bias)


# ----------------------------------------------------------------------------- products


def panel(t: T, j: int, r: int, c: int, cols: bool):
    """Rows (or columns) of the j-th r×c matrix of t in midpoint–radius form: (mids, |mids|, radii or
    None, e), value = (mid ± rad)/2^(s+e); memoised (constant weights are split once)."""
    key = (j, cols)
    if key not in t.memo:
        lo, hi = t.lo[j * r * c:(j + 1) * r * c], t.hi[j * r * c:(j + 1) * r * c]
        cut = (lambda L: [L[i::c] for i in range(c)]) if cols else (lambda L: [L[i * c:(i + 1) * c] for i in range(r)])
        if t.lo is t.hi:
            m, rad, e = cut(lo), None, 0
        else:
            m, rad, e = cut(list(map(add, lo, hi))), cut(list(map(sub, hi, lo))), 1
        t.memo[key] = m, [list(map(abs, v)) for v in m], rad, e
    return t.memo[key]


def op_matmul(cx, a, A, B):
    """MatMul (N-d, leading dimensions broadcast; 1-d operands as in numpy). Per entry the midpoint
    product Σ a_m b_m and the radius Σ (|a_m| + a_r) b_r + a_r |b_m| >= |A B − A_m B_m| (exact integers)."""
    need(A.shape and B.shape, "MatMul of a scalar")
    A1, B1 = len(A.shape) == 1, len(B.shape) == 1
    A = T((1,) + A.shape, A.lo, A.hi, A.s) if A1 else A
    B = T(B.shape + (1,), B.lo, B.hi, B.s) if B1 else B
    (n, k), (k2, m) = A.shape[-2:], B.shape[-2:]
    need(k == k2, f"MatMul of shapes {list(A.shape)} and {list(B.shape)}: inner dimensions {k} and {k2} differ")
    batch = bshape(A.shape[:-2], B.shape[:-2])
    lo, hi = [], []
    for i, j in zip(bidx(A.shape[:-2], batch), bidx(B.shape[:-2], batch)):
        am, aa, ar, ea = panel(A, i, n, k, False)
        bm, ba, br, eb = panel(B, j, k, m, True)
        for r in range(n):
            cx.tick()
            mids = [sum(map(mul, am[r], c)) for c in bm]
            terms = ([(aa[r] if ar is None else list(map(add, aa[r], ar[r])), br)] if br else []) + \
                ([(ar[r], ba)] if ar else [])  # (|a_m| + a_r)·b_r and a_r·|b_m|
            rads = [sum(sum(map(mul, x, cs[j])) for x, cs in terms) for j in range(m)] if terms else [0] * m
            lo.extend(map(sub, mids, rads))
            hi.extend(map(add, mids, rads))
    shape = batch + ((n,) if not A1 else ()) + ((m,) if not B1 else ())
    return fit(shape, lo, hi, A.s + B.s + ea + eb, cx.F)


def op_gemm(cx, a, A, B, C=None):
    """Gemm: alpha·A'·B' + beta·C with A' = Aᵀ if transA, B' = Bᵀ if transB (2-d)."""
    need(len(A.shape) == 2 and len(B.shape) == 2, "Gemm needs 2-d A and B")
    A, B = (op_transpose(cx, {"perm": [1, 0]}, t) if a[k] else t for t, k in ((A, "transA"), (B, "transB")))
    Y = op_mul(cx, a, op_matmul(cx, a, A, B), from_fracs((), [a["alpha"]], cx.F))
    return Y if C is None else op_add(cx, a, Y, op_mul(cx, a, C, from_fracs((), [a["beta"]], cx.F)))


# ----------------------------------------------------------------------------- shapes and indexing


def op_gather(cx, a, x, ix):
    """Gather along ``axis``: out[..., i, ...] = x[..., ix[i], ...] (negative indices count from the end)."""
    need(ix.ints, "Gather indices must be integers")
    ax = axis(a["axis"], len(x.shape))
    d, inner = x.shape[ax], prod(x.shape[ax + 1:])
    need(all(-d <= v < d for v in ix.lo), f"a Gather index is out of range for dimension {d}")
    idx = [(o * d + v % d) * inner + q for o in range(prod(x.shape[:ax])) for v in ix.lo for q in range(inner)]
    return take(x, idx, x.shape[:ax] + ix.shape + x.shape[ax + 1:])


def op_transpose(cx, a, x):
    r = len(x.shape)
    perm = list(range(r))[::-1] if a["perm"] is None else a["perm"]
    need(sorted(perm) == list(range(r)), f"perm {perm} is not a permutation of {r} axes")
    st = strides(x.shape)
    return take(x, walk((x.shape[p], st[p]) for p in perm), tuple(x.shape[p] for p in perm))


def op_reshape(cx, a, x, shape):
    """Reshape: 0 copies the input's dimension, −1 is inferred."""
    sh = [x.shape[i] if v == 0 and i < len(x.shape) else v for i, v in enumerate(shape.lo)]
    n = len(x.lo)
    if -1 in sh:
        rest = prod(v for v in sh if v != -1)
        need(sh.count(-1) == 1 and rest > 0 and n % rest == 0, f"cannot reshape {list(x.shape)} to {shape.lo}")
        sh[sh.index(-1)] = n // rest
    need(all(v >= 0 for v in sh) and prod(sh) == n, f"cannot reshape {list(x.shape)} to {shape.lo}")
    return T(sh, x.lo, x.hi, x.s, x.ints, x.sp)


def op_slice(cx, a, x, starts, ends, axes=None, steps=None):
    """Slice, clamped as ONNX says: a negative start or end counts from the end (+ dim), then a positive
    step clamps the start and end to [0, dim], a negative step the start to [0, dim − 1] and the end to
    [−1, dim − 1]; the axis takes start, start + step, … while before the end."""
    ax = axes_of(axes.lo, len(x.shape)) if axes is not None else list(range(len(starts.lo)))
    st = steps.lo if steps is not None else [1] * len(ax)
    need(len(ax) == len(starts.lo) == len(ends.lo) == len(st) and 0 not in st, "bad Slice arguments")
    rng = [range(d) for d in x.shape]
    for d, b, e, s in zip(ax, starts.lo, ends.lo, st):
        n = x.shape[d]
        b, e = (v + n if v < 0 else v for v in (b, e))
        b, e = (min(max(b, 0), n), min(max(e, 0), n)) if s > 0 else (min(max(b, 0), n - 1), min(max(e, -1), n - 1))
        rng[d] = range(b, e, s)
    strd = strides(x.shape)
    off = sum(q.start * s for q, s in zip(rng, strd) if len(q))
    return take(x, [off + i for i in walk((len(q), q.step * s) for q, s in zip(rng, strd))], tuple(map(len, rng)))


def op_split(cx, a, x, split=None):
    """Split along ``axis`` into the ``split`` sizes (absent: equal parts, the last one smaller)."""
    ax = axis(a["axis"], len(x.shape))
    d, n = x.shape[ax], a["_n"]
    sizes = split.lo if split is not None else [-(-d // n)] * (n - 1) + [d - -(-d // n) * (n - 1)]
    need(len(sizes) == n and min(sizes) >= 0 and sum(sizes) == d, f"cannot split {d} into {sizes}")
    return [op_slice(cx, a, x, ints([e - z]), ints([e]), ints([ax])) for z, e in zip(sizes, accumulate(sizes))]


def op_concat(cx, a, *xs):
    sh = xs[0].shape
    r, ax = len(sh), axis(a["axis"], len(sh))
    need(all(len(x.shape) == r and x.shape[:ax] == sh[:ax] and x.shape[ax + 1:] == sh[ax + 1:] for x in xs),
         "Concat of shapes " + ", ".join(str(list(x.shape)) for x in xs))
    s, outer = max(x.s for x in xs), prod(sh[:ax])
    lo, hi, sp = ([v for o in range(outer) for x in xs for n in [prod(x.shape[ax:])]
                   for v in (at(x, s)[e] if e < 2 else x.sp or [0] * len(x.lo))[o * n:(o + 1) * n]] for e in (0, 1, 2))
    return marked(fit(sh[:ax] + (sum(x.shape[ax] for x in xs),) + sh[ax + 1:], lo, hi, s, s, all(x.ints for x in xs)), sp)


def op_unsqueeze(cx, a, x, axes):
    r, it = len(x.shape) + len(axes.lo), iter(x.shape)
    ax = axes_of(axes.lo, r)
    return T([1 if d in ax else next(it) for d in range(r)], x.lo, x.hi, x.s, x.ints, x.sp)


def op_squeeze(cx, a, x, axes=None):
    ax = set(axes_of(axes.lo, len(x.shape))) if axes is not None else {d for d, n in enumerate(x.shape) if n == 1}
    need(all(x.shape[d] == 1 for d in ax), f"cannot squeeze axes {sorted(ax)} of {list(x.shape)}")
    return T([n for d, n in enumerate(x.shape) if d not in ax], x.lo, x.hi, x.s, x.ints, x.sp)


def op_where(cx, a, c, x, y):
    """Where: x where the 0/1 condition (ints: a constant, or computed: IsNaN, Equal, …) is 1, else y; broadcast."""
    need(c.ints and set(c.lo) <= {0, 1}, "the condition of Where must be 0/1 ints")
    out, s = bshape(c.shape, x.shape, y.shape), max(x.s, y.s)
    cc, (xl, xh), (yl, yh) = spread(c, out, c.s)[0], spread(x, out, s), spread(y, out, s)
    lo = [p if k else q for k, p, q in zip(cc, xl, yl)]
    hi = lo if xl is xh and yl is yh else [p if k else q for k, p, q in zip(cc, xh, yh)]
    sp = None if x.sp is None and y.sp is None else [p if k else q for k, p, q in zip(cc, codes(x, out), codes(y, out))]
    return T(out, lo, hi, s, x.ints and y.ints, sp)


def op_compare(cx, a, x, y):
    """Equal, Less, Greater, LessOrEqual, GreaterOrEqual (Greater*: Less* with x and y swapped): 0/1 ints
    decided from the intervals: x < y holds when x's upper bound is below y's lower bound and fails when
    x's lower bound is >= y's upper bound (<=: the same with <= and >); x = y holds when both are the
    same point and fails when they are disjoint; otherwise undecided."""
    op, (x, y) = a["_op"], (y, x) if a["_op"].startswith("Greater") else (x, y)
    out, s = bshape(x.shape, y.shape), max(x.s, y.s)
    r = [(p == q == u == v, q < u or v < p) if op == "Equal" else (q < u, p >= v) if op in ("Less", "Greater") else
         (q <= u, p > v) for p, q, u, v in zip(*spread(x, out, s), *spread(y, out, s))]
    if any(yes == no for yes, no in r):
        raise Undecided()
    return T(out, [int(yes) for yes, _ in r], ints=True)


def op_logic(cx, a, x, y=None):
    """Not, And, Or of 0/1 ints (ONNX's booleans): 1 − x, min(x, y), max(x, y)."""
    y = y or x
    need(x.ints and y.ints and set(x.lo) | set(y.lo) <= {0, 1}, f"{a['_op']} takes 0/1 ints")
    out, f = bshape(x.shape, y.shape), {"Not": lambda p, q: 1 - p, "And": min, "Or": max}[a["_op"]]
    return T(out, list(map(f, spread(x, out, 0)[0], spread(y, out, 0)[0])), ints=True)


def op_cumsum(cx, a, x, ax):
    """CumSum along the axis ``ax`` (one int): running sums of each bound, from the end with ``reverse``,
    of the elements before (not including) each one with ``exclusive``."""
    need(len(ax.lo) == 1, "CumSum takes one axis")
    gs, out = groups(x.shape, (axis(ax.lo[0], len(x.shape)),)), []
    for src in (x.lo,) if x.lo is x.hi else (x.lo, x.hi):
        out.append([0] * len(src))
        for g in (g[::-1] if a["reverse"] else g for g in gs):
            for i, v in zip(g, list(accumulate((src[i] for i in g), initial=cx.tick() or 0))[1 - a["exclusive"]:]):
                out[-1][i] = v
    return fit(x.shape, out[0], out[-1], x.s, cx.F, x.ints)


def op_sin(cx, a, x):
    """Sin, Cos: `fixedpoint.sin_fx` from each lower bound and the interval's width."""
    b = [cx.tick() or sin_fx(l, h - l, cx.F, a["_op"] == "Cos") for l, h in zip(*fx(x, cx.F))]
    return fit(x.shape, [v for v, _ in b], [v for _, v in b], cx.F, cx.F)


def op_isnan(cx, a, x, want=(2,)):
    """IsNaN: 1 where x is NaN, else 0 (ints); IsInf: 1 where −∞ (``detect_negative``) or +∞ (``detect_positive``)."""
    want = (-1,) * bool(a["detect_negative"]) + (1,) * bool(a["detect_positive"]) if "detect_negative" in a else want
    return T(x.shape, [int(c in want) for c in x.sp] if x.sp else [0] * len(x.lo), ints=True)


# op: (function, least inputs, most inputs, {attr: (kind, default)}, inputs that must be int constants).
# Kinds: "i" int, "is" list of ints, "r" rational string, a tuple: one of these strings.
sqrt = monotone(lambda n, F, up, t: sqrt_bound(n, 1 << F, F, up), lambda v: v >= 0)
OPS = {
    **{k: (f, 2, 2, {}, ()) for k, f in (("MatMul", op_matmul), ("Add", op_add), ("Mul", op_mul), ("Div", op_div),
                                         ("Sub", lambda cx, a, x, y: op_add(cx, a, x, op_neg(cx, a, y, True))),
                                         ("Pow", op_pow), ("And", op_logic), ("Or", op_logic))},
    **{k: (f, 1, 1, {}, ()) for k, f in (("Neg", op_neg), ("Relu", monotone(lambda v, F, up, t: max(v, 0))), ("Sqrt", sqrt), ("Reciprocal", op_recip),
                                         ("Exp", op_exp), ("Tanh", monotone(tanh_fx)), ("Erf", monotone(erf_fx)),
                                         ("Sigmoid", monotone(sigmoid_fx)), ("Identity", lambda cx, a, x: x), ("Not", op_logic),
                                         ("Log", monotone(log_fx, lambda v: v > 0)), ("Softplus", monotone(softplus_fx)),
                                         ("Sin", op_sin), ("Cos", op_sin))},
    **{k: (op_compare, 2, 2, {}, ()) for k in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")},
    "Gather": (op_gather, 2, 2, {"axis": ("i", 0)}, ()),
    "Gemm": (op_gemm, 2, 3, {"alpha": ("r", Fraction(1)), "beta": ("r", Fraction(1)), "transA": ("i", 0),
                             "transB": ("i", 0)}, ()),
    "Gelu": (op_gelu, 1, 1, {"approximate": (("none", "tanh"), "none")}, ()),
    "Softmax": (op_softmax, 1, 1, {"axis": ("i", -1)}, ()),
    "LayerNormalization": (op_layernorm, 2, 3, {"axis": ("i", -1), "epsilon": ("r", Fraction(0xA7C5AC, 1 << 40))}, ()),
    "ReduceMean": (op_reducemean, 1, 2, {"keepdims": ("i", 1)}, (1,)),
    "Reshape": (op_reshape, 2, 2, {}, (1,)),
    "Transpose": (op_transpose, 1, 1, {"perm": ("is", None)}, ()),
    "Split": (op_split, 1, 2, {"axis": ("i", 0)}, (1,)),
    "Slice": (op_slice, 3, 5, {}, (1, 2, 3, 4)),
    "Concat": (op_concat, 1, 1 << 30, {"axis": ("i", REQUIRED)}, ()),
    "Unsqueeze": (op_unsqueeze, 2, 2, {}, (1,)),
    "Squeeze": (op_squeeze, 1, 2, {}, (1,)),
    "Where": (op_where, 3, 3, {}, ()),
    "IsNaN": (op_isnan, 1, 1, {}, ()),
    "IsInf": (op_isnan, 1, 1, {"detect_negative": ("i", 1), "detect_positive": ("i", 1)}, ()),
    "CumSum": (op_cumsum, 2, 2, {"exclusive": ("i", 0), "reverse": ("i", 0)}, (1,)),
}


class Graph:
    """A parsed ``model.graph``: constants (tensors; non-dyadic ones as (shape, Fractions), rounded per
    precision) and nodes (op, function, input names, output names, attributes) in order."""

    def __init__(self, inp, out):
        self.input, self.output, self.consts, self.nodes, self.memo, self.shape = inp, out, {}, [], {}, None

    def constants(self, F, tick=lambda: None):
        """The constants at precision F, and (elements, bits) they hold."""
        if F not in self.memo:
            cs = {k: c if isinstance(c, T) else marked(from_fracs(*c[:2], F, tick), c[2]) for k, c in self.consts.items()}
            self.memo = {F: (cs, sum(map(bits, cs.values())))}
        return self.memo[F]


def _attr(rd, kind, v, path):
    if kind == "i":
        return integer(v, path)
    if kind == "r":
        return rd.rat(v, path)
    return _str(v, path, kind) if isinstance(kind, tuple) else [integer(x, f"{path}[{j}]") for j, x in enumerate(_list(v, path))]


def widest(t: T) -> int:
    """Bits of the widest value of a tensor (either bound)."""
    return max(map(int.bit_length, t.lo if t.hi is t.lo else t.lo + t.hi), default=0)


def bits(t: T, w=None) -> int:
    """Bits held by a tensor: its elements times its widest value ``w``, twice for an interval (lo, hi)."""
    return len(t.lo) * (widest(t) if w is None else w) * (1 + (t.hi is not t.lo))


def parse_graph(g, rd):
    """Validate ``model.graph`` (``rd``: the schema's reader; values join its parameters); return
    (Graph, measured model quantities)."""
    P, tick, held = "model.graph", rd.budget.tick, 0
    _obj(g, P, ("input", "output", "constants", "nodes"))
    G, width, counts = Graph(_str(g["input"], f"{P}.input"), _str(g["output"], f"{P}.output")), 0, {}
    for name, c in _obj(g["constants"], f"{P}.constants", (), None).items():
        p = f"{P}.constants.{name[:40]}"
        tick()
        key = "ints" if "ints" in _obj(c, p, ("shape",), ("values", "ints")) else "values"
        if ("ints" in c) == ("values" in c):
            bad(p, "needs exactly one of 'values' and 'ints'")
        shape = tuple(integer(v, f"{p}.shape[{i}]", 0) for i, v in enumerate(_list(c["shape"], f"{p}.shape")))
        held = rd.budget.room(span(shape), held, f"{p} (shape with zero dimensions counted as 1)")  # before reading it
        xs, vals = _list(c[key], f"{p}.{key}", prod(shape)), []
        sp = [CODES.get(v, 0) if type(v) is str else 0 for v in xs] if key == "values" else None  # -inf, inf, nan
        for j in range(0, len(xs), 4096):  # a tick per chunk, and per long value (rat: up to max_digits digits)
            tick()
            vals += [integer(v, f"{p}.ints[{j + i}]") for i, v in enumerate(xs[j:j + 4096])] if key == "ints" else \
                [rd.rat("0" if sp[j + i] else v, f"{p}.values[{j + i}]") for i, v in enumerate(xs[j:j + 4096])]
        rd.params.extend(vals if key == "values" else ())
        t = T(shape, vals, ints=True) if key == "ints" else marked(from_fracs(shape, vals, 0), sp)
        G.consts[name] = t if t.lo is t.hi else (shape, vals, sp)
        width = width if key == "ints" else max(width, shape[-1] if shape else 1)
    defined = set(G.consts) | {G.input}
    for i, nd in enumerate(_list(g["nodes"], f"{P}.nodes")):
        p = f"{P}.nodes[{i}]"
        tick()
        op = _str(_obj(nd, p, ("op", "inputs", "outputs"), ("attrs",))["op"], f"{p}.op")
        if op not in OPS:
            bad(f"{p}.op", f"unsupported op {op[:40]!r} (docs/verify-format.md lists the ops)")
        fn, least, most, spec, cpos = OPS[op]
        ins = [_str(v, f"{p}.inputs[{k}]") for k, v in enumerate(_list(nd["inputs"], f"{p}.inputs"))]
        if not least <= len(ins) <= most:
            bad(f"{p}.inputs", f"{op} takes {least} to {most} inputs, got {len(ins)}")
        for k, v in enumerate(ins):
            if (v or k < least) and v not in defined:
                bad(f"{p}.inputs[{k}]", f"{v[:40]!r} is used before it is defined" if v else "a required input is empty")
            if v and k in cpos and not (isinstance(G.consts.get(v), T) and G.consts[v].ints):
                bad(f"{p}.inputs[{k}]", f"{op} needs a constant of ints here, got {v[:40]!r}")
        outs = [_str(v, f"{p}.outputs[{k}]") for k, v in enumerate(_list(nd["outputs"], f"{p}.outputs", nonempty=True))]
        for k, v in enumerate(outs):
            if v in defined or not v or (k and op != "Split"):
                bad(f"{p}.outputs[{k}]", f"{v[:40]!r} is already defined" if v in defined else "not a new name")
            defined.add(v)
        given, a = _obj(nd.get("attrs", {}), f"{p}.attrs", (), tuple(spec)), {"_n": len(outs), "_op": op}
        for k, (kind, default) in spec.items():
            a[k] = _attr(rd, kind, given[k], f"{p}.attrs.{k}") if k in given else default
            if a[k] is REQUIRED:
                bad(f"{p}.attrs", f"missing attribute {k!r}")
        if op == "LayerNormalization" and a["axis"] != -1:
            bad(f"{p}.attrs.axis", "LayerNormalization is supported over the last axis (-1) only")
        if op == "Pow":
            c = G.consts.get(ins[1])
            vals = [] if c is None else [Fraction(v, 1 << c.s) for v in c.lo] if isinstance(c, T) else c[1]
            k = vals[0] if len(vals) == 1 and not (isinstance(c, T) and c.sp) else None
            if k is None or not (k == Fraction(1, 2) or (k.denominator == 1 and k >= 0)):
                bad(f"{p}.inputs[1]", "Pow needs a constant exponent: an integer >= 0 or 1/2")
            a["_k"] = k
        c = G.consts.get(ins[0])
        if op == "Where" and c is not None and not (isinstance(c, T) and c.ints and set(c.lo) <= {0, 1}):
            bad(f"{p}.inputs[0]", "the condition of Where must be 0/1 ints")
        G.nodes.append((op, fn, ins, outs, a))
        counts[op] = counts.get(op, 0) + 1
    read = {v for op, _, ins, _, _ in G.nodes for k, v in enumerate(ins)  # ints constants read as values
            if isinstance(G.consts.get(v), T) and G.consts[v].ints and k not in OPS[op][4] + INDEX_INPUTS.get(op, ())}
    for v in sorted(read):  # ... are parameters like 'values' (n_params, max_bits): no uncounted lookup tables
        tick()
        rd.params.extend(map(Fraction, G.consts[v].lo))
    if G.output not in defined:
        bad(f"{P}.output", f"{G.output[:40]!r} is not defined")
    return G, {"width": width, "relu_depth": counts.get("Relu", 0) + counts.get("Gelu", 0),
               "attention_layers": counts.get("Softmax", 0), "depth": counts.get("MatMul", 0) + counts.get("Gemm", 0)}


def run_graph(G: Graph, x, tokens: bool, F: int, budget, position: str):
    """The output scores of one example at precision F: ([(lo, hi) per read position], s)."""
    consts, held = G.constants(F, budget.tick)
    env, n = dict(consts), len(x)
    env[G.input] = T((1, n), list(x), ints=True) if tokens else \
        from_fracs((1, *(G.shape or (n, len(x[0])))), [v for r in x for v in r], F)  # G.shape: a tensor input's
    used, held = sum(span(t.shape) for t in env.values()), budget.room(held, 0, "the constants", "max_tensor_bits")
    cx = SimpleNamespace(F=F, budget=budget, tick=budget.tick)  # one evaluation: precision and budget
    for i, (op, fn, ins, outs, a) in enumerate(G.nodes):
        budget.tick()
        try:
            args = [env[v] if v else None for v in ins]
            for t in args if op not in SPECIAL_OPS else ():  # no rule for special values: refused, one line
                if t is not None and t.sp:
                    bad(f"model.graph.nodes[{i}] ({op})", f"{NAMES[next(filter(None, t.sp))]} reaches {op}, which "
                                                          "takes no special values (docs/verify-format.md)")
            one, every, rank = bound(op, a, args, len(outs))
            need(rank <= MAX_RANK and len(outs) <= MAX_OUTPUTS, f"an output of rank {rank} or {len(outs)} outputs "
                                                                f"(at most {MAX_RANK}, {MAX_OUTPUTS})")
            used = budget.room(one, used - one + every, f"model.graph.nodes[{i}] ({op}), the outputs")  # from shapes
            r = fn(cx, a, *args)
            r = r if isinstance(r, list) else [r]
            need(len(r) == len(outs), f"{len(r)} outputs, the node names {len(outs)}")
        except ShapeError as e:
            raise MalformedCertificate(f"model.graph.nodes[{i}] ({op}): {e} (for an input of length {n})") from None
        except (LimitExceeded, MalformedCertificate, Undecided, MemoryError, RecursionError):
            raise
        except Exception as e:  # whatever else an op raises: malformed, naming the node
            raise MalformedCertificate(unexpected(e, f"model.graph.nodes[{i}] ({op}), input of length {n}")) from None
        for name, t in zip(outs, r):
            budget.tick()
            w = widest(t)  # once: it bounds the value size and, with the element count, the bits held
            budget.value(w, f"a value of model.graph.nodes[{i}] ({op})")
            held = budget.room(bits(t, w), held, f"model.graph.nodes[{i}] ({op}), the values held", "max_tensor_bits")
            env[name] = t
    out = env[G.output]
    sh = out.shape
    if not (len(sh) in (2, 3) and sh[0] == 1 and sh[-1] > 0 and (len(sh) == 2 or sh[1] == n) and (len(sh) == 3 or position == "last")):
        bad("model.graph.output", f"shape {list(sh)}: expected [1, {n}, C], or [1, C] with position 'last'")
    C, rows = sh[-1], range(n) if position == "all" else [len(out.lo) // sh[-1] - 1]
    return [(out.lo[r * C:(r + 1) * C], out.hi[r * C:(r + 1) * C], out.sp and out.sp[r * C:(r + 1) * C]) for r in rows], out.s
