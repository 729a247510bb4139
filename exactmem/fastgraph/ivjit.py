"""Compiled (numba) kernels of the float64 interval engine's hot steps, bit for bit the NumPy code (an accelerator).

Each kernel fuses a few NumPy passes of ``engine.py`` / ``rounding.py`` into one pass over the elements:
`engine.op_add`'s outward sum or difference, `engine._mul`'s corner products, `rounding.mid_rad`,
`rounding.matmul_bounds`'s radius and outward ends, and `engine.width_bits`'s largest magnitude. Per
element it performs exactly the IEEE-754 binary64 operations of the NumPy code, in the same order and
on the same operands, with NumPy's NaN rule for minimum and maximum (a NaN operand gives NaN), so the
results are bit for bit NumPy's (a NaN's sign aside: it only ever means undecided) and the lemmas of
``rounding.py`` (``docs/certificate.md`` § The fast graph engine) apply unchanged. Compiled as `ddjit`'s
kernels are: no fastmath (no reassociation, no FMA contraction), IEEE division. Tested:
``tests/test_ivjit.py`` (bit identity with the NumPy path on adversarial values and layouts; no FMA).
"""

from __future__ import annotations

import numpy as np

from .ddjit import dn, inline, jit, new_outputs, up, views_of

# ----------------------------------------------------------------------------- scalar steps


@inline
def nmin(a, b):
    """np.minimum of two floats: a when a <= b or a is NaN, else b."""
    return a if (a <= b or a != a) else b


@inline
def nmax(a, b):
    """np.maximum of two floats: a when a >= b or a is NaN, else b."""
    return a if (a >= b or a != a) else b


# ----------------------------------------------------------------------------- kernels (4-d strided views)


@jit
def add_bounds_k(xl, xh, yl, yh, neg, lo, hi):
    """`engine.op_add`: [dn(xl + yl), up(xh + yh)], or (``neg``) [dn(xl − yh), up(xh − yl)]."""
    n0, n1, n2, n3 = lo.shape
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                for d in range(n3):
                    if neg:
                        lo[a, b, c, d] = dn(xl[a, b, c, d] - yh[a, b, c, d])
                        hi[a, b, c, d] = up(xh[a, b, c, d] - yl[a, b, c, d])
                    else:
                        lo[a, b, c, d] = dn(xl[a, b, c, d] + yl[a, b, c, d])
                        hi[a, b, c, d] = up(xh[a, b, c, d] + yh[a, b, c, d])


@jit
def mul_bounds_k(xl, xh, yl, yh, mode, lo, hi):
    """`engine._mul`: ``mode`` 0 both points (p = xl·yl: [dn p, up p]); 1 y a point (p = xl·yl, q = xh·yl);
    2 x a point (p = yl·xl, q = yh·xl): [dn min(p, q), up max(p, q)]; 3 the four corner products
    (xl·yl, xl·yh, xh·yl, xh·yh): [dn min(min(p0, p1), min(p2, p3)), up max(max(p0, p1), max(p2, p3))]."""
    n0, n1, n2, n3 = lo.shape
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                for d in range(n3):
                    x0, x1, y0, y1 = xl[a, b, c, d], xh[a, b, c, d], yl[a, b, c, d], yh[a, b, c, d]
                    if mode == 0:
                        p = x0 * y0
                        lo[a, b, c, d] = dn(p)
                        hi[a, b, c, d] = up(p)
                    elif mode == 3:
                        p0, p1, p2, p3 = x0 * y0, x0 * y1, x1 * y0, x1 * y1
                        lo[a, b, c, d] = dn(nmin(nmin(p0, p1), nmin(p2, p3)))
                        hi[a, b, c, d] = up(nmax(nmax(p0, p1), nmax(p2, p3)))
                    else:
                        if mode == 1:
                            p, q = x0 * y0, x1 * y0
                        else:
                            p, q = y0 * x0, y1 * x0
                        lo[a, b, c, d] = dn(nmin(p, q))
                        hi[a, b, c, d] = up(nmax(p, q))


@jit
def mid_rad_k(lo, hi, m, r):
    """`rounding.mid_rad`: m = (lo + hi)·0.5, r = max(up(hi − m), up(m − lo))."""
    n0, n1, n2, n3 = m.shape
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                for d in range(n3):
                    v = (lo[a, b, c, d] + hi[a, b, c, d]) * 0.5
                    m[a, b, c, d] = v
                    r[a, b, c, d] = nmax(up(hi[a, b, c, d] - v), up(v - lo[a, b, c, d]))


@jit
def ball_ends_k(C, R, add1, scale, add2, lo, hi):
    """`rounding.matmul_bounds`'s last steps over 1-d arrays: ρ = up(up(up(R + add1)·scale) + add2),
    lo = dn(C − ρ), hi = up(C + ρ)."""
    for i in range(C.shape[0]):
        rho = up(up(up(R[i] + add1) * scale) + add2)
        lo[i] = dn(C[i] - rho)
        hi[i] = up(C[i] + rho)


@inline
def power(v, k, upward):
    """`engine._power`: |v|^k by k − 1 products, each rounded up (``upward``) or down and clipped at 0."""
    p = v
    for _ in range(k - 1):
        p = up(p * v) if upward else nmax(dn(p * v), 0.0)
    return p


@jit
def pow_bounds_k(xl, xh, k, lo, hi):
    """`engine.op_pow` for an integer k >= 2: odd k increasing ([±|lo|^k, ±|hi|^k] by the signs), even k on
    |x| (from 0 when [xl, xh] holds 0, else from min(|xl|, |xh|), to max(|xl|, |xh|))."""
    n0, n1, n2, n3 = lo.shape
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                for d in range(n3):
                    x0, x1 = xl[a, b, c, d], xh[a, b, c, d]
                    al, ah = abs(x0), abs(x1)
                    if k & 1:
                        lo[a, b, c, d] = power(al, k, False) if x0 >= 0 else -power(al, k, True)
                        hi[a, b, c, d] = power(ah, k, True) if x1 >= 0 else -power(ah, k, False)
                    else:
                        small = 0.0 if (x0 <= 0 and x1 >= 0) else nmin(al, ah)
                        lo[a, b, c, d] = power(small, k, False)
                        hi[a, b, c, d] = power(nmax(al, ah), k, True)


# ----------------------------------------------------------------------------- calling them


def _elementwise(kernel, parts, flags, min_size):
    """``kernel(*views of parts, *flags, lo, hi)`` on the broadcast float64 ``parts``: (lo, hi), or None (the NumPy
    path then: a part not float64, fewer than ``min_size`` elements, more than `ddjit.ND` dimensions)."""
    p = views_of(parts, min_size)
    if p is None:
        return None
    shape, v = p
    out, o = new_outputs(shape, v, 2)
    kernel(*v, *flags, *o)
    return tuple(out)


def add_bounds(xl, xh, yl, yh, neg, min_size):
    """`engine.op_add`'s (lo, hi) of the broadcast operands, or None."""
    return _elementwise(add_bounds_k, (xl, xh, yl, yh), (neg,), min_size)


def mul_bounds(xl, xh, yl, yh, mode, min_size):
    """`engine._mul`'s (lo, hi) (``mode``: `mul_bounds_k`), or None."""
    return _elementwise(mul_bounds_k, (xl, xh, yl, yh), (mode,), min_size)


def mid_rad(lo, hi, min_size):
    """`rounding.mid_rad`'s (m, r) for lo is not hi, or None."""
    return _elementwise(mid_rad_k, (lo, hi), (), min_size)


def pow_bounds(xl, xh, k, min_size):
    """`engine.op_pow`'s (lo, hi) for an integer k >= 2 (xl, xh of one shape), or None."""
    return _elementwise(pow_bounds_k, (xl, xh), (k,), min_size)


def ball_ends(C, R, add1, scale, add2, min_size):
    """(lo, hi) of `ball_ends_k` for C, R float64 C-contiguous arrays of one shape, or None."""
    if type(C) is not np.ndarray or type(R) is not np.ndarray or C.shape != R.shape or C.size < max(min_size, 1) \
            or C.dtype != np.float64 or R.dtype != np.float64 or not (C.flags.c_contiguous and R.flags.c_contiguous):
        return None
    lo, hi = np.empty(C.shape), np.empty(C.shape)
    ball_ends_k(C.reshape(-1), R.reshape(-1), float(add1), float(scale), float(add2), lo.reshape(-1), hi.reshape(-1))
    return lo, hi


KERNELS3 = (add_bounds_k, mul_bounds_k, mid_rad_k, ball_ends_k, pow_bounds_k)
