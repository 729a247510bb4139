"""Compiled (numba) elementwise kernels of the double-float balls, bit for bit dd.py's (an accelerator).

`dd.add`, `dd.mul`, `dd.recip`, `dd.rsqrt` and `dd.exp_point`, each fused into one pass over the elements;
`dd.matmul`'s sums of its slice products (`matmul_sum`); the float64 `rounding.up`, `rounding.dn` and
`rounding.exp_point` (`up_k`, `dn_k`, `exp64_k`: ``rounding.JIT`` switches these).
``docs/certificate.md`` § The fast graph engine, *Double-float midpoints*.

Each kernel performs, per element, exactly the IEEE-754 binary64 operations of the NumPy code in
``dd.py``, in the same order and on the same operands (a missing m2 is the 0.0 that ``dd.z`` adds; a
missing radius skips the same `up` steps as ``dd.radd``), so its results are bit for bit those of
NumPy (a NaN's sign may differ: it only ever means undecided) and the proofs of ``dd.py`` apply unchanged. numba compiles without fastmath: no
reassociation, no FMA contraction (Dekker's splitting needs every product rounded), no flush to
zero; ``error_model="numpy"`` gives IEEE division (the callers never divide by 0). Tested:
``tests/test_ddjit.py`` (bit identity with the NumPy path, and no FMA instruction in any kernel).

Operands are strided views of at most four dimensions after broadcasting (`views`); exp works on
contiguous arrays a block at a time so that its loops vectorize (`exp_k`). The module
imports nothing of exactmem (``dd`` loads it lazily), so its constants are its own, checked equal
to ``dd``'s when it is loaded.
"""

from __future__ import annotations

import numpy as np
from numba import njit

ETA = 2.0 ** -1074  # rounding.ETA
TWO52 = 2.0 ** -52  # rounding.TWO52
ETA2 = 2 * ETA  # 2·2^-1074, exact
ETA3 = 3 * ETA  # dd.bnd(s, 2): (2 + 1)·2^-1074
SPLITTER = 134217729.0  # dd.SPLITTER: 2^27 + 1
TINY = 2.0 ** -900  # dd.TINY
HUGE = 2.0 ** 995  # dd.HUGE
INV_LN2 = 1.4426950408889634  # dd.exp_point's choice of k
ND = 4  # dimensions of the kernels' strided views

jit = njit(cache=True, error_model="numpy", fastmath=False)
inline = njit(cache=True, error_model="numpy", fastmath=False, inline="always")  # scalar steps: inlined in numba IR


# ----------------------------------------------------------------------------- scalar steps (dd.py's, one element)


@inline
def up(y):
    """`rounding.up` of one float (Lemma U), its operations in the array path's order."""
    return (abs(y) * TWO52 + ETA) + y


@inline
def dn(y):
    """`rounding.dn` of one float (Lemma U)."""
    return y - (abs(y) * TWO52 + ETA)


@inline
def two_sum(a, b):
    """`dd.two_sum`."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


@inline
def two_prod(a, b):
    """`dd.two_prod`: (p, e, g)."""
    p = a * b
    c = SPLITTER * a
    ah = c - (c - a)
    al = a - ah
    c = SPLITTER * b
    bh = c - (c - b)
    bl = b - bh
    e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
    tiny = abs(p) < TINY
    if abs(a) >= HUGE or abs(b) >= HUGE:
        g = np.inf
    elif tiny:
        g = up(abs(p))
    else:
        g = 0.0
    if tiny:
        return 0.0, 0.0, g
    return p, e, g


@inline
def add(x1, x2, xr, hxr, y1, y2, yr, hyr):
    """`dd.add` of one element (y already negated for x − y; a missing m2 passed as 0.0, a missing
    radius as ``hxr`` / ``hyr`` False): (m1, m2, r)."""
    s, e = two_sum(x1, y1)
    t = e + x2
    t2 = t + y2
    m1, m2 = two_sum(s, t2)
    b = up((abs(t) + abs(t2)) * TWO52 + ETA)
    if hxr and hyr:
        r = up(up(xr + yr) + b)
    elif hxr:
        r = up(xr + b)
    elif hyr:
        r = up(yr + b)
    else:
        r = b
    return m1, m2, r


@inline
def mul(x1, x2, hx2, xr, hxr, y1, y2, hy2, yr, hyr):
    """`dd.mul` of one element (a missing m2 passed as 0.0 with ``hx2`` / ``hy2`` False): (m1, m2, r)."""
    p, e, g = two_prod(x1, y1)
    a = x1 * y2
    c = x2 * y1
    t = a + c
    t2 = t + e
    m1, m2 = two_sum(p, t2)
    err = up((((abs(a) + abs(c)) + abs(t)) + abs(t2)) * TWO52 + ETA3)
    if hx2 and hy2:
        err = up(err + up(up(abs(x2) * abs(y2)) + ETA))
    err = up(err + g)
    if not (hxr or hyr):
        return m1, m2, err
    ax = up(abs(x1) + abs(x2)) if hx2 else abs(x1)
    ay = up(abs(y1) + abs(y2)) if hy2 else abs(y1)
    if hxr and hyr:
        rad = up(up(up(ax * yr) + up(xr * ay)) + up(xr * yr))
    elif hyr:
        rad = up(ax * yr)
    else:
        rad = up(xr * ay)
    return m1, m2, up(rad + err)


@jit
def recip1(y1, y2, hy2, yr, hyr):
    """`dd.recip` of one element: (m1, m2, r, bad)."""
    zz = 1.0 / (1.0 if y1 == 0 else y1)
    p1, p2, pr = mul(y1, y2, hy2, yr, hyr, zz, 0.0, False, 0.0, False)
    r1, r2, rr = add(1.0, 0.0, 0.0, False, -p1, -p2, pr, True)
    rmax = up(up(abs(r1) + abs(r2)) + rr)
    bad = (not (rmax <= 0.5)) or y1 == 0
    a1, a2, ar = add(1.0, 0.0, 0.0, False, r1, r2, rr, True)
    o1, o2, orr = mul(zz, 0.0, False, 0.0, False, a1, a2, True, ar, True)
    tail = up(up(2.0 * abs(zz)) * up(rmax * rmax))
    return o1, o2, up(orr + tail), bad


@jit
def rsqrt1(v1, v2, hv2, vr, hvr):
    """`dd.rsqrt` of one element: (m1, m2, r, bad)."""
    zz = 1.0 / np.sqrt(v1 if v1 > 0 else 1.0)
    q1, q2, qr = mul(zz, 0.0, False, 0.0, False, zz, 0.0, False, 0.0, False)
    p1, p2, pr = mul(v1, v2, hv2, vr, hvr, q1, q2, True, qr, True)
    r1, r2, rr = add(1.0, 0.0, 0.0, False, -p1, -p2, pr, True)
    rmax = up(up(abs(r1) + abs(r2)) + rr)
    bad = (not (rmax <= 0.1)) or not (v1 > 0)
    h1, h2, hr = r1 * 0.5, r2 * 0.5, up(rr * 0.5 + ETA2)
    a1, a2, ar = add(1.0, 0.0, 0.0, False, h1, h2, hr, True)
    o1, o2, orr = mul(zz, 0.0, False, 0.0, False, a1, a2, True, ar, True)
    tail = up(up(0.5 * abs(zz)) * up(rmax * rmax))
    return o1, o2, up(up(orr + tail) + ETA), bad


@inline
def horner(P1, P2, Pr, hPr, s1, s2, sr, c1, c2, cr, hcr):
    """One step P·s + c of `dd.exp_point`'s Horner rule (ball `mul`, then `add`)."""
    M1, M2, Mr = mul(P1, P2, True, Pr, hPr, s1, s2, True, sr, True)
    return add(M1, M2, Mr, True, c1, c2, cr, hcr)


@inline
def reduce1(x1, x2, c):
    """`dd.exp_point`'s range reduction of one element: (s1, s2, sr, k, j, bad) with x = k·ln 2 + j/TABLE + s.
    ``c`` = (L1, L2, L3, LM, rem, smax limit, TABLE, table half-width)."""
    L1, L2, L3, LM, rem, slim, table, half = c
    ok = x1 >= -700.0 and x1 <= 709.0
    bad = not ok
    xs1 = x1 if ok else 0.0
    xs2 = x2 if ok else 0.0
    k = np.rint(xs1 * INV_LN2)
    r1, r2, rr = add(xs1, xs2, 0.0, False, -(k * L1), 0.0, 0.0, False)
    p, e, _ = two_prod(k, L2)
    r1, r2, rr = add(r1, r2, rr, True, -p, -e, 0.0, False)
    q = k * L3
    qr = up((up(abs(q) * TWO52) + up(abs(k) * LM)) + ETA)
    r1, r2, rr = add(r1, r2, rr, True, -q, 0.0, qr, True)
    j = np.rint(r1 * table)
    bad = bad or abs(j) > half
    if not (abs(j) <= half):  # NaN (NumPy's index then fails): any entry, the element undecided
        bad = True
        j = 0.0 if j != j else (half if j > 0 else -half)
    s1, s2, sr = add(r1, r2, rr, True, -(j / table), 0.0, 0.0, False)
    smax = up(up(abs(s1) + abs(s2)) + sr)  # checked after the polynomial in dd.py: the same value
    bad = bad or not (smax <= slim)
    return s1, s2, sr, k, j, bad


# ----------------------------------------------------------------------------- array kernels (4-d strided views)


@jit
def add_k(x1, x2, xr, y1, y2, yr, hxr, hy2, hyr, neg, o1, o2, orr):
    """`add` over every element (``neg``: x − y, y's m2 negated only when it has one: ``dd.add``)."""
    n0, n1, n2, n3 = o1.shape
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                for d in range(n3):
                    v1, v2 = y1[a, b, c, d], y2[a, b, c, d]
                    if neg:
                        v1 = -v1
                        if hy2:
                            v2 = -v2
                    o1[a, b, c, d], o2[a, b, c, d], orr[a, b, c, d] = add(
                        x1[a, b, c, d], x2[a, b, c, d], xr[a, b, c, d], hxr, v1, v2, yr[a, b, c, d], hyr)


@jit
def mul_k(x1, x2, xr, y1, y2, yr, hx2, hxr, hy2, hyr, o1, o2, orr):
    """`mul` over every element."""
    n0, n1, n2, n3 = o1.shape
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                for d in range(n3):
                    o1[a, b, c, d], o2[a, b, c, d], orr[a, b, c, d] = mul(
                        x1[a, b, c, d], x2[a, b, c, d], hx2, xr[a, b, c, d], hxr,
                        y1[a, b, c, d], y2[a, b, c, d], hy2, yr[a, b, c, d], hyr)


@jit
def quot_k(y1, y2, yr, hy2, hyr, root, o1, o2, orr, bad):
    """`recip1` (``root`` False) or `rsqrt1` over every element; ``bad`` or-ed in place."""
    n0, n1, n2, n3 = o1.shape
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                for d in range(n3):
                    if root:
                        m1, m2, r, bd = rsqrt1(y1[a, b, c, d], y2[a, b, c, d], hy2, yr[a, b, c, d], hyr)
                    else:
                        m1, m2, r, bd = recip1(y1[a, b, c, d], y2[a, b, c, d], hy2, yr[a, b, c, d], hyr)
                    o1[a, b, c, d], o2[a, b, c, d], orr[a, b, c, d] = m1, m2, r
                    if bd:
                        bad[a, b, c, d] = True


@jit
def up_k(y, o):
    """`rounding.up` over a 1-d array: o = up(y)."""
    for i in range(y.shape[0]):
        o[i] = up(y[i])


@jit
def dn_k(y, o):
    """`rounding.dn` over a 1-d array."""
    for i in range(y.shape[0]):
        o[i] = dn(y[i])


@jit
def sum_k(s, P, c, acc, first):
    """One step of `dd.matmul`'s sum of the slice products, in place (1-d arrays of one length):
    s, e = two_sum(s, P); c = e (``first``) or c + e; acc = |c| (``first``) or acc + |c|."""
    for i in range(s.shape[0]):
        s1, e = two_sum(s[i], P[i])
        s[i] = s1
        if first:
            acc[i] = abs(e)
        else:
            e = c[i] + e
            acc[i] = acc[i] + abs(e)
        c[i] = e


@jit
def tail_k(f, c, acc, first):
    """`dd.matmul`'s float products A1·B2, A2·B1 added to the tail, in place: c = f (``first``) or c + f;
    acc = |c| (``first``) or acc + |c|."""
    for i in range(f.shape[0]):
        if first:
            v = f[i]
            acc[i] = abs(v)
        else:
            v = c[i] + f[i]
            acc[i] = acc[i] + abs(v)
        c[i] = v


@jit
def two_sum_k(a, b, o1, o2):
    """`dd.two_sum` over 1-d arrays of one length (o1, o2 may be a, b: each element is read before it is written)."""
    for i in range(a.shape[0]):
        o1[i], o2[i] = two_sum(a[i], b[i])


BLOCK = 256  # elements per block of `exp_k`: its work rows sit at constant distances (vectorizable loops)
(_S1, _S2, _SR, _P1, _P2, _PR, _K, _J, _BAD, _T1, _T2, _TR, _PK, _O1, _O2, _OR) = (i * BLOCK for i in range(16))
POW2 = np.ldexp(1.0, np.arange(-1074, 1024))  # 2^k, every k of a float (exact)


@jit
def exp64_k(m, coef, c, pow2, lo, hi):
    """`rounding.exp_point` over a 1-d array (``c`` = (INV_LN2, L1, L2, LMAX, EH)), its operations per element,
    a block at a time (the range reduction, each Horner step, the scaling: loops that vectorize); ldexp(v, k)
    as v·2^k (k in [−996, 1023] here, see `exp_k`); a NaN m gives NaN bounds (as NumPy's)."""
    inv, L1, L2, LM, EH = c
    nc = coef.shape[0] - 1
    n = m.shape[0]
    W = np.empty(4 * BLOCK)
    for base in range(0, n, BLOCK):
        w = min(BLOCK, n - base)
        for i in range(w):
            x = m[base + i]
            mm = 0.0 if (x < -690.0 or x > 709.0) else x
            k = np.rint(mm * inv)
            t = mm - k * L1
            b = k * L2
            kl = up(abs(k) * LM)
            r_lo = dn(dn(dn(t) - up(b)) - kl)
            r_hi = up(up(up(t) - dn(b)) + kl)
            W[i] = r_lo
            W[BLOCK + i] = up(r_hi - r_lo)
            W[2 * BLOCK + i] = k
            W[3 * BLOCK + i] = coef[nc]
        for j in range(nc - 1, -1, -1):  # Horner: p = p·r_lo, then p + c_j (two roundings, as in NumPy)
            cj = coef[j]
            for i in range(w):
                W[3 * BLOCK + i] = W[3 * BLOCK + i] * W[i] + cj
        for i in range(w):
            x = m[base + i]
            k = W[2 * BLOCK + i]
            p = W[3 * BLOCK + i]
            if k != k:  # m NaN
                lo[base + i] = k
                hi[base + i] = k
                continue
            pk = pow2[int(k) + 1074]
            small = x < -690.0
            lo[base + i] = 0.0 if small else dn(p - EH) * pk
            if small:
                hi[base + i] = 2.0 ** -995
            elif x > 709.0:
                hi[base + i] = np.inf
            else:
                hi[base + i] = up(up(p + EH) * up(1.0 + up(2.0 * W[BLOCK + i]))) * pk


@jit
def exp_k(x1, x2, c, cm1, cm2, cr, chr_, tm1, tm2, tr, pow2, o1, o2, orr, bad):
    """`dd.exp_point` and its `dd.scale2` over every element (1-d contiguous arrays), a block at a time
    through one work array, step by step (`reduce1`, `horner` for each coefficient, the table entry, `mul`;
    each loop the same operations per element, vectorized). scale2's ldexp(v, k) is v·2^k (both are v·2^k
    rounded once: IEEE multiplication by the exact float 2^k, k in [−1074, 1023]); the radius
    up(v·2^k + 2^-1074); one more 2^-1074 everywhere when some k < 0 (scale2's test on the whole array)."""
    n = o1.shape[0]
    half = int(c[7])
    rem = c[4]
    nc = len(cm1) - 1
    W = np.empty(16 * BLOCK)
    kmin = 0
    for base in range(0, n, BLOCK):
        m = min(BLOCK, n - base)
        for i in range(m):
            s1, s2, sr, k, j, bd = reduce1(x1[base + i], x2[base + i], c)
            W[_S1 + i] = s1
            W[_S2 + i] = s2
            W[_SR + i] = sr
            W[_K + i] = k
            W[_J + i] = j
            W[_BAD + i] = 1.0 if bd else 0.0
            W[_P1 + i] = cm1[nc]
            W[_P2 + i] = cm2[nc]
            W[_PR + i] = cr[nc]
        for t in range(nc - 1, -1, -1):  # Horner: P = P·s + c_t
            hp = chr_[nc] if t == nc - 1 else True
            c1, c2, c3, hc = cm1[t], cm2[t], cr[t], chr_[t]
            for i in range(m):
                W[_P1 + i], W[_P2 + i], W[_PR + i] = horner(W[_P1 + i], W[_P2 + i], W[_PR + i], hp, W[_S1 + i],
                                                            W[_S2 + i], W[_SR + i], c1, c2, c3, hc)
        for i in range(m):  # gathers, and what is not elementwise
            ji = int(W[_J + i]) + half
            W[_T1 + i] = tm1[ji]
            W[_T2 + i] = tm2[ji]
            W[_TR + i] = tr[ji]
            k = int(W[_K + i])
            kmin = min(kmin, k)
            W[_PK + i] = pow2[k + 1074]
            if W[_BAD + i] != 0.0:
                bad[base + i] = True
        for i in range(m):
            v1, v2, vr = mul(W[_T1 + i], W[_T2 + i], True, W[_TR + i], True, W[_P1 + i], W[_P2 + i], True,
                             up(W[_PR + i] + rem), True)
            pk = W[_PK + i]
            W[_O1 + i] = v1 * pk
            W[_O2 + i] = v2 * pk
            W[_OR + i] = up(vr * pk + ETA)
        for i in range(m):
            o1[base + i] = W[_O1 + i]
            o2[base + i] = W[_O2 + i]
            orr[base + i] = W[_OR + i]
    if kmin < 0:
        for i in range(n):
            orr[i] = up(orr[i] + ETA)


# ----------------------------------------------------------------------------- calling them


def views(shape, arrays):
    """The arrays (each broadcastable to ``shape``) as `ND`-dimensional strided views of one common
    shape: dimensions of size 1 dropped, neighbours that every array steps through contiguously merged;
    None when more than `ND` dimensions remain."""
    nd = len(shape)
    sts = []
    for a in arrays:
        st = [0] * nd
        off = nd - a.ndim
        for i in range(a.ndim):
            if a.shape[i] != 1:
                st[off + i] = a.strides[i]
        sts.append(st)
    dims, new = [], [[] for _ in arrays]
    for i in range(nd):
        if shape[i] == 1:
            continue
        if dims and all(s[i] * shape[i] == t[-1] for s, t in zip(sts, new)):
            dims[-1] *= shape[i]
            for s, t in zip(sts, new):
                t[-1] = s[i]
            continue
        dims.append(shape[i])
        for s, t in zip(sts, new):
            t.append(s[i])
    if len(dims) > ND:
        return None
    pad = ND - len(dims)
    shp = (1,) * pad + tuple(dims)
    ast = np.lib.stride_tricks.as_strided
    return [ast(a, shp, (0,) * pad + tuple(t), writeable=False) for a, t in zip(arrays, new)]


ZERO = np.zeros(())


def views_of(parts, min_size):
    """(shape, views) of the float64 parts (None: 0.0), or None when the compiled path does not apply
    (a part not float64, a result of fewer than ``min_size`` elements or 0 dimensions, > `ND` dimensions)."""
    arrs = []
    for p in parts:
        a = ZERO if p is None else p
        if type(a) is not np.ndarray or a.dtype != np.float64:
            a = np.asarray(a)
            if a.dtype != np.float64:
                return None
        arrs.append(a)
    shape = np.broadcast_shapes(*(a.shape for a in arrs))
    size = 1
    for n in shape:
        size *= n
    if not shape or size < max(min_size, 1):
        return None
    v = views(shape, arrs)
    if v is None:  # more than ND dimensions however merged: the broadcast operands copied whole
        v = views(shape, [np.ascontiguousarray(np.broadcast_to(a, shape)) if a.size > 1 else a for a in arrs])
    return None if v is None else (shape, v)


def new_outputs(shape, v, n):
    """n new float64 arrays of ``shape`` and their views of the kernels' shape (that of ``v[0]``)."""
    out = [np.empty(shape) for _ in range(n)]
    return out, [o.reshape(v[0].shape) for o in out]


def add_arrays(x1, x2, xr, y1, y2, yr, neg, min_size):
    """`dd.add` on the parts (None where the DT has none): (m1, m2, r), or None (the NumPy path then)."""
    p = views_of((x1, x2, xr, y1, y2, yr), min_size)
    if p is None:
        return None
    shape, v = p
    out, o = new_outputs(shape, v, 3)
    add_k(*v, xr is not None, y2 is not None, yr is not None, neg, *o)
    return tuple(out)


def mul_arrays(x1, x2, xr, y1, y2, yr, min_size):
    """`dd.mul` on the parts: (m1, m2, r), or None."""
    p = views_of((x1, x2, xr, y1, y2, yr), min_size)
    if p is None:
        return None
    shape, v = p
    out, o = new_outputs(shape, v, 3)
    mul_k(*v, x2 is not None, xr is not None, y2 is not None, yr is not None, *o)
    return tuple(out)


def _bad_view(bad, shape, v):
    """``bad`` as a view of the kernels' shape, or None unless it is a writable C-contiguous bool array of ``shape``."""
    if type(bad) is not np.ndarray or bad.dtype != np.bool_ or bad.shape != shape or not bad.flags.c_contiguous \
            or not bad.flags.writeable:
        return None
    return bad.reshape(v[0].shape)


def quot_arrays(y1, y2, yr, bad, root, min_size):
    """`dd.recip` (``root`` False) or `dd.rsqrt` on the parts, ``bad`` or-ed in place: (m1, m2, r), or None."""
    p = views_of((y1, y2, yr), min_size)
    if p is None:
        return None
    shape, v = p
    bv = _bad_view(bad, shape, v)
    if bv is None:
        return None
    out, o = new_outputs(shape, v, 3)
    quot_k(*v, y2 is not None, yr is not None, root, *o, bv)
    return tuple(out)


def _flat(a, shape):
    """a broadcast to ``shape`` as a read-only 1-d C-contiguous array (a copy only when it is not one already)."""
    if a.shape != shape or not a.flags.c_contiguous:
        a = np.ascontiguousarray(np.broadcast_to(a, shape))
    return np.lib.stride_tricks.as_strided(a, (a.size,), (8,), writeable=False)


def exp_arrays(x1, x2, consts, coefs, table, bad, min_size):
    """`dd.exp_point` on the parts (its radius ignored, as there), ``bad`` or-ed in place: (m1, m2, r), or None.
    ``consts`` = (L1, L2, L3, LM, rem, smax limit, TABLE, table half-width); ``coefs`` = (m1, m2, r, has r)
    of the balls 1/i!, arrays; ``table`` = (m1, m2, r) of e^(j/TABLE)."""
    p = views_of((x1, x2), min_size)
    if p is None:
        return None
    shape, v = p
    if type(bad) is not np.ndarray or bad.dtype != np.bool_ or bad.shape != shape or not bad.flags.c_contiguous \
            or not bad.flags.writeable:
        return None
    out = [np.empty(shape) for _ in range(3)]
    a1 = _flat(np.asarray(x1), shape)
    a2 = _flat(ZERO if x2 is None else x2, shape)
    exp_k(a1, a2, consts, *coefs, *table, POW2, *(o.reshape(-1) for o in out), bad.reshape(-1))
    return tuple(out)


def _own(a, shape, min_size):
    """a float64 C-contiguous array of ``shape`` and at least ``min_size`` elements, as a 1-d view."""
    if type(a) is not np.ndarray or a.dtype != np.float64 or a.shape != shape or not a.flags.c_contiguous \
            or a.size < max(min_size, 1):
        return None
    return a.reshape(-1)


def matmul_sum(s, prods, extra, min_size):
    """`dd._matmul_sum_np` (the first slice product ``s``, the others from ``prods``, the float products
    ``extra``): (m1, m2, acc), s overwritten; or None (nothing consumed) unless s and the extras are
    C-contiguous float64 arrays of one shape (the products, all from one matmul of same-shaped slices, are
    then too)."""
    if s is None:
        return None
    shape = s.shape
    sf = _own(s, shape, min_size)
    ef = [_own(f, shape, min_size) for f in extra]
    if sf is None or not s.flags.writeable or any(f is None for f in ef):
        return None
    c = acc = None
    for P in prods:
        Pf = _own(P, shape, 1)
        assert Pf is not None, "a slice product of another shape or layout"
        first = c is None
        if first:
            c, acc = np.empty(shape), np.empty(shape)
        sum_k(sf, Pf, c.reshape(-1), acc.reshape(-1), first)
    for f in ef:
        first = c is None
        if first:
            c, acc = np.empty(shape), np.empty(shape)
        tail_k(f, c.reshape(-1), acc.reshape(-1), first)
    if c is None:
        return s, None, None
    two_sum_k(sf, c.reshape(-1), sf, c.reshape(-1))  # in place: each element read, then written
    return s, c, acc


KERNELS = (add_k, mul_k, quot_k, exp_k)
KERNELS2 = (up_k, dn_k, sum_k, tail_k, two_sum_k, exp64_k)  # the second round: rounding's up, dn, exp_point; dd.matmul's sums
