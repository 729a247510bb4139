"""Double-float midpoints for the fast graph engine (an untrusted accelerator).

``docs/certificate.md`` § The fast graph engine, *Double-float midpoints*.

A `DT` holds a tensor as midpoint–radius balls with a two-float midpoint: every real value lies in
[m1 + m2 − r, m1 + m2 + r] (m1 + m2 an exact real sum of two floats, r >= 0 rounded up). Products and
sums of midpoints are computed with about 106 significant bits by error-free transformations built
from basic IEEE operations only (Knuth's TwoSum, Dekker's splitting TwoProduct, and exact integer
slices for matrix products), and every rounding that remains is bounded and added to r. The radius
carries the input intervals as before (the rules of midpoint–radius arithmetic), so the result of
each op contains the real-number value for every point of its inputs. float64 midpoints lose about
10^4 per transformer layer to the wrapping of intervals; 53 more bits keep research-scale networks
decided.

Conventions: arrays have a leading example axis when ``b``; ``m2`` and ``r`` may be None (0); an
enclosure that stops being finite makes its examples undecided (the engine's finite check).
"""

from __future__ import annotations

import os
from fractions import Fraction
from functools import lru_cache
from math import ceil, factorial, log2

import numpy as np

from .rounding import ETA, ddjit_module, dn, fdn, fup, gamma, inv_one_minus_gamma, up

TWO52 = 2.0 ** -52
SPLITTER = 134217729.0  # 2^27 + 1
TINY = 2.0 ** -900  # products below this go to the radius (Dekker's product needs e_a + e_b >= -970)
HUGE = 2.0 ** 995  # factors above this: the splitting could overflow (undecided)

#: the compiled kernels of `ddjit` (numba) for add, mul, recip, rsqrt, exp_point: the same operations per
#: element, bit for bit the NumPy results; off without numba or with EXACTMEM_NO_JIT=1 (or EXACTMEM_NO_NUMBA=1)
JIT = all(os.environ.get(v, "").strip() in ("", "0") for v in ("EXACTMEM_NO_JIT", "EXACTMEM_NO_NUMBA"))
JIT_MIN = 64  # fewer elements: the NumPy path (the compiled call's set-up costs more)


def _jit():
    """The `ddjit` module when `JIT` is on and numba imports (`rounding.ddjit_module`; the splitting constants
    checked against these), else None (and `JIT` off)."""
    global JIT
    m = ddjit_module() if JIT else None
    JIT = m is not None
    if m is not None:
        assert (m.SPLITTER, m.TINY, m.HUGE) == (SPLITTER, TINY, HUGE)
    return m


class DT:
    """Midpoint m1 + m2 (floats), radius r (float >= 0): ``b`` batched (a leading example axis)."""

    __slots__ = ("m1", "m2", "r", "b")

    def __init__(self, m1, m2=None, r=None, b=False):
        self.m1, self.m2, self.r, self.b = m1, m2, r, b

    @property
    def kshape(self):
        return tuple(self.m1.shape[1:] if self.b else self.m1.shape)


def z(a):
    return 0.0 if a is None else a


def two_sum(a, b):
    """s + e = a + b exactly, s = fl(a + b) (Knuth; no overflow assumed: a non-finite s is undecided)."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


def _split(a):
    c = SPLITTER * a
    h = c - (c - a)
    return h, a - h


def two_prod(a, b):
    """(p, e, g): p + e = a·b exactly where |p| >= 2^-900 and |a|, |b| < 2^995 (Dekker 1971: exact when
    e_a + e_b >= e_min + 52 and nothing overflows); where |p| < 2^-900, p = e = 0 and g = up(|p|) >= |ab|
    (Lemma U), else g = 0; a factor >= 2^995 gives g = ∞ (undecided)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    tiny = np.abs(p) < TINY
    big = (np.abs(a) >= HUGE) | (np.abs(b) >= HUGE)
    g = np.where(big, np.inf, np.where(tiny, up(np.abs(p)), 0.0))
    return np.where(tiny, 0.0, p), np.where(tiny, 0.0, e), g


def bnd(s, k=0):
    """An upper bound of Σ|δ_i| when s = fl(Σ|t_i|) over K <= 2^40 computed float results t_i, each
    |δ_i| <= u|t_i| (+ 2^-1075 for a product's underflow, k of them): Σ|t_i| <= s/(1 − γ_K) <= 2s, so
    2^-52·s covers u·Σ|t_i| (2^-52·s is exact unless subnormal: + 2^-1074)."""
    return up(s * TWO52 + (k + 1) * ETA)


def renorm(s, t):
    """(m1, m2) = TwoSum(s, t): the same real sum, m2 below half an ulp of m1."""
    return two_sum(s, t)


def radd(*rs):
    """An upper bound of the sum of nonnegative radii (None = 0)."""
    out = None
    for r in rs:
        if r is None:
            continue
        out = r if out is None else up(out + r)
    return out


def add(x: DT, y: DT, neg=False) -> DT:
    """x ± y: TwoSum of the heads, the tails added (two roundings, bounded), renormalised."""
    j = _jit()
    out = None if j is None else j.add_arrays(x.m1, x.m2, x.r, y.m1, y.m2, y.r, neg, JIT_MIN)
    return _add_np(x, y, neg) if out is None else DT(*out, x.b or y.b)


def _add_np(x: DT, y: DT, neg=False) -> DT:
    """`add` in NumPy (the reference of `ddjit`)."""
    y1, y2 = (-y.m1, None if y.m2 is None else -y.m2) if neg else (y.m1, y.m2)
    s, e = two_sum(x.m1, y1)
    t = e + z(x.m2)
    t2 = t + z(y2)
    m1, m2 = renorm(s, t2)
    return DT(m1, m2, radd(x.r, y.r, bnd(np.abs(t) + np.abs(t2))), x.b or y.b)


def mul(x: DT, y: DT) -> DT:
    """x·y: TwoProduct of the heads, the cross terms in floats (bounded), |x2·y2| into the radius; the
    ball rule |xy − m_x m_y| <= |m_x| r_y + r_x |m_y| + r_x r_y for the inputs' radii."""
    j = _jit()
    out = None if j is None else j.mul_arrays(x.m1, x.m2, x.r, y.m1, y.m2, y.r, JIT_MIN)
    return _mul_np(x, y) if out is None else DT(*out, x.b or y.b)


def _mul_np(x: DT, y: DT) -> DT:
    """`mul` in NumPy."""
    p, e, g = two_prod(x.m1, y.m1)
    a = x.m1 * z(y.m2)
    c = z(x.m2) * y.m1
    t = a + c
    t2 = t + e
    m1, m2 = renorm(p, t2)
    err = bnd(np.abs(a) + np.abs(c) + np.abs(t) + np.abs(t2), 2)
    if x.m2 is not None and y.m2 is not None:
        err = up(err + up(up(np.abs(x.m2) * np.abs(y.m2)) + ETA))
    err = up(err + g)
    rad = None
    if x.r is not None or y.r is not None:
        ax, ay = _abs(x), _abs(y)
        rad = radd(None if y.r is None else up(ax * y.r), None if x.r is None else up(x.r * ay),
                   None if x.r is None or y.r is None else up(x.r * y.r))
    return DT(m1, m2, radd(rad, err), x.b or y.b)


def _abs(x: DT):
    """An upper bound of |m1 + m2| (elementwise)."""
    return np.abs(x.m1) if x.m2 is None else up(np.abs(x.m1) + np.abs(x.m2))


def scale2(x: DT, k: int) -> DT:
    """x·2^k (k an int): exact for normal results; the radius and an underflowing tail bounded."""
    m2 = None if x.m2 is None else np.ldexp(x.m2, k)
    err = None if x.m2 is None or np.all(np.asarray(k) >= 0) else np.full(np.shape(x.m1), ETA)
    r = None if x.r is None else up(np.ldexp(x.r, k) + ETA)
    return DT(np.ldexp(x.m1, k), m2, radd(r, err), x.b)


def point(v, b=False) -> DT:
    return DT(np.asarray(v, dtype=np.float64), None, None, b)


def rational(q: Fraction) -> DT:
    """A rational as m1 + m2 ± r (r bounds |q − m1 − m2|, exact comparisons)."""
    m1 = float(q)
    m2 = float(q - Fraction(m1))
    r = fup(abs(q - Fraction(m1) - Fraction(m2)))
    return DT(np.float64(m1), np.float64(m2), None if r == 0 else np.float64(r))


# ----------------------------------------------------------------------------- matrix products


def beta_bits(k: int) -> int:
    """Slice width: with |slice integers| <= 2^β and k terms, every partial sum is an integer below 2^53."""
    return (53 - ceil(log2(max(k, 1)))) // 2


def slices(X, axis, beta, n):
    """X = Σ_{i<n} S_i + R exactly, S_i integers times 2^(e − β(i+1)) with |integer| <= 2^β, e per line along
    ``axis`` (2^e >= the line's max |x|); R the exact remainder (|R| <= 2^(e − βn)). Lines whose max is
    below 2^-400 are returned with ``low`` (S and e at 0, the whole line in R); e > 400: ``big``.
    Each step: v = X_rem·2^(−sc) (exact scaling up), N = rint(v) (exact), S = N·2^sc (exact:
    sc >= −1074), X_rem − S exact (a multiple of ulp(X_rem) of magnitude <= |X_rem|)."""
    mu = np.max(np.abs(X), axis=axis, keepdims=True)
    _, e = np.frexp(mu)  # mu < 2^e
    low = mu < 2.0 ** -400
    big = e > 400
    e = np.where(low | big, 0, e)
    rem = np.where(low | big, 0.0, X)
    out = []
    for i in range(n):
        sc = e - beta * (i + 1)
        q = np.ldexp(np.rint(np.ldexp(rem, -sc)), sc)
        rem = rem - q
        out.append(q)
    rem = np.where(low | big, X, rem)
    return out, rem, e, big


def _pos_matmul_up(X, Y):
    """An upper bound of X @ Y for X, Y >= 0 (Lemma S: fl >= (1 − γ_k)·exact − k·2^-1074)."""
    k = X.shape[-1]
    return up(up(np.matmul(X, Y) + k * ETA) * inv_one_minus_gamma(k))


def _key(B):
    root = B
    while root.base is not None:
        root = root.base
    return (id(root), B.shape, B.strides, B.__array_interface__["data"][0]), root


def _matmul_sum_np(s, prods, extra):
    """`matmul`'s exact slice products (the first ``s``, the others from the iterator ``prods``) summed by
    TwoSum into s + c, then the float products ``extra`` added to c: (m1, m2, acc) with m1 + m2 = s + c
    renormalised and acc = fl(Σ|c|) over every value c took (it bounds the roundings of c)."""
    c, acc = None, None
    for P in prods:
        s, e = two_sum(s, P)
        c = e if c is None else c + e
        acc = np.abs(c) if acc is None else acc + np.abs(c)
    for f in extra:
        c = f if c is None else c + f
        acc = np.abs(c) if acc is None else acc + np.abs(c)
    m1, m2 = (s, None) if c is None else renorm(s, c)
    return m1, m2, acc


def matmul(A: DT, B: DT, L: int = 5, n: int = 5, cache=None):
    """A @ B (matrices in the last two axes, numpy broadcasting) with double-float midpoints:
    A1 @ B1 by exact slice products S^A_i @ S^B_j for i + j < L (each computed exactly by BLAS in any
    order, `slices`), summed by TwoSum; A1 @ B2 + A2 @ B1 in floats (γ_k); what is dropped — pairs
    i + j >= L (each entry below 2^(eA + eB − βL)·k·n²), the remainders R_A @ B, (A1 − R_A) @ R_B, |A2||B2| —
    and the ball radius |A_m| B_r + A_r |B_m| + A_r B_r are bounded by nonnegative products rounded up.
    Returns (DT, big) with ``big`` the lines past 2^400 (undecided)."""
    k = A.m1.shape[-1]
    beta = beta_bits(k)
    SA, RA, eA, bigA = slices(A.m1, -1, beta, n)
    if cache is not None and B.m2 is None and B.r is None and not B.b:  # a constant: split once per plan
        key, root = _key(B.m1)
        if key not in cache:
            SB, RB, eB, bigB = slices(B.m1, -2, beta, n)
            cache[key] = (root, SB, RB, eB, bigB, [bool(np.any(s)) for s in SB], bool(np.any(RB)), np.abs(B.m1))
        _, SB, RB, eB, bigB, nzB, anyRB, aB1 = cache[key]
    else:
        SB, RB, eB, bigB = slices(B.m1, -2, beta, n)
        nzB, anyRB, aB1 = [bool(np.any(s)) for s in SB], bool(np.any(RB)), np.abs(B.m1)
    prods = (np.matmul(SA[i], SB[tot - i]) for tot in range(L) for i in range(min(tot + 1, n))
             if tot - i < n and nzB[tot - i])
    s = next(prods, None)
    extra = []
    if B.m2 is not None:
        extra.append(np.matmul(A.m1, B.m2))
    if A.m2 is not None:
        extra.append(np.matmul(A.m2, B.m1))
    j = _jit()
    out = None if j is None else j.matmul_sum(s, prods, extra, JIT_MIN)
    m1, m2, acc = _matmul_sum_np(s, prods, extra) if out is None else out
    gk = gamma(k)
    # what is bounded: dropped pairs, remainders, float products, tails, radii
    eAB = eA + eB  # broadcast: rows of A (…, n, 1) + columns of B (…, 1, m)
    drop = np.ldexp(np.float64(k * n * n), eAB - beta * L)
    aA1 = np.abs(A.m1)
    X = np.abs(RA)
    if A.r is not None:
        X = up(X + A.r)
    if A.m2 is not None:
        X = up(X + up(np.abs(A.m2) * gk))
    rad = _pos_matmul_up(X, aB1)
    if anyRB:
        rad = up(rad + _pos_matmul_up(up(aA1 + np.abs(RA)), np.abs(RB)))
    if B.m2 is not None:
        Y = up(aA1 * gk)
        if A.m2 is not None:
            Y = up(Y + np.abs(A.m2))
        if A.r is not None:
            Y = up(Y + A.r)
        rad = up(rad + _pos_matmul_up(Y, np.abs(B.m2)))
    if B.r is not None:
        Am = aA1 if A.m2 is None else up(aA1 + np.abs(A.m2))
        if A.r is not None:
            Am = up(Am + A.r)
        rad = up(rad + _pos_matmul_up(Am, B.r))
    err = drop if acc is None else up(drop + bnd(acc))
    if extra:
        err = up(err + (len(extra) + 1) * k * ETA)
    big = np.broadcast_to(bigA, m1.shape[:-1] + (1,)) | np.broadcast_to(bigB, m1.shape[:-2] + (1, m1.shape[-1]))
    return DT(m1, m2, up(rad + err), A.b or B.b), big


# ----------------------------------------------------------------------------- quotients, roots


def recip(y: DT, bad):
    """1/y for y of one sign: z = fl(1/m1), ρ = 1 − y·z as a ball (every y of the input), and
    1/y = z/(1 − ρ) = z(1 + ρ) + zρ²/(1 − ρ), the last term at most 2|z|ρmax² for ρmax = |ρ̂| + r_ρ <= 1/2
    (else undecided: ``bad`` marks those elements)."""
    j = _jit()
    out = None if j is None else j.quot_arrays(y.m1, y.m2, y.r, bad, False, JIT_MIN)
    return _recip_np(y, bad) if out is None else DT(*out, y.b)


def _recip_np(y: DT, bad):
    """`recip` in NumPy."""
    zz = 1.0 / np.where(y.m1 == 0, 1.0, y.m1)
    Z = DT(zz, None, None, y.b)
    rho = add(point(1.0), mul(y, Z), neg=True)
    rmax = up(up(np.abs(rho.m1) + np.abs(z(rho.m2))) + z(rho.r))
    bad |= ~(rmax <= 0.5) | (y.m1 == 0)
    out = mul(Z, add(point(1.0), rho))
    tail = up(up(2.0 * np.abs(zz)) * up(rmax * rmax))
    return DT(out.m1, out.m2, radd(out.r, tail), y.b)


def rsqrt(v: DT, bad):
    """v^(−1/2) for v > 0: z = fl(1/fl(√m1)) (any float), ρ = 1 − v z² as a ball, and
    v^(−1/2) = z(1 − ρ)^(−1/2) = z(1 + ρ/2) + T, |T| <= |z|ρmax²/2 for ρmax <= 1/10 (Taylor with the
    remainder (3/8)ρ²(1 − θρ)^(−5/2) <= ρ²/2); else undecided."""
    j = _jit()
    out = None if j is None else j.quot_arrays(v.m1, v.m2, v.r, bad, True, JIT_MIN)
    return _rsqrt_np(v, bad) if out is None else DT(*out, v.b)


def _rsqrt_np(v: DT, bad):
    """`rsqrt` in NumPy."""
    zz = 1.0 / np.sqrt(np.where(v.m1 > 0, v.m1, 1.0))
    Z = DT(zz, None, None, v.b)
    rho = add(point(1.0), mul(v, mul(Z, Z)), neg=True)
    rmax = up(up(np.abs(rho.m1) + np.abs(z(rho.m2))) + z(rho.r))
    bad |= ~(rmax <= 0.1) | ~(v.m1 > 0)
    half = DT(rho.m1 * 0.5, None if rho.m2 is None else rho.m2 * 0.5, up(z(rho.r) * 0.5 + 2 * ETA), rho.b)
    out = mul(Z, add(point(1.0), half))
    tail = up(up(0.5 * np.abs(zz)) * up(rmax * rmax))
    return DT(out.m1, out.m2, radd(out.r, tail, np.full(np.shape(zz), ETA)), v.b)


# ----------------------------------------------------------------------------- exp


@lru_cache(maxsize=None)
def _ln2_parts():
    """ln 2 = L1 + L2 + L3 + ℓ: L1 with 32 significant bits (k·L1 exact for |k| < 2^21), L2, L3 floats,
    |ℓ| <= LM (the 2·atanh(1/3) series with its geometric tail, exact Fractions)."""
    J = 120
    s = sum(Fraction(2, (2 * j + 1) * 3 ** (2 * j + 1)) for j in range(J))
    hi = s + Fraction(9, 4 * 3 ** (2 * J + 1))
    L1 = Fraction(int(s * (1 << 32)), 1 << 32)
    L2 = float(s - L1)
    L3 = float(s - L1 - Fraction(L2))
    rest = s - L1 - Fraction(L2) - Fraction(L3)
    LM = fup(max(abs(rest), abs(hi - L1 - Fraction(L2) - Fraction(L3))))
    return float(L1), L2, L3, LM


TABLE = 256  # e^r = e^(j/256)·e^s, |s| <= 1/512 + tiny
N_TAYLOR = 9  # |s|^10/10!·e^|s| < 2^-111


def _exp_rational(q: Fraction, bits=140):
    """A Fraction interval around e^q (|q| <= 1/2): the Taylor series to 2^-bits with the tail bound
    |q|^N/N!·2 (|q| <= 1/2, N >= 2)."""
    s, t, i = Fraction(0), Fraction(1), 0
    while True:
        s += t
        i += 1
        t = t * q / i
        if abs(t) * 2 < Fraction(1, 1 << bits):
            break
    tail = abs(t) * 2
    return s - tail, s + tail


@lru_cache(maxsize=None)
def _table():
    """e^(j/256) for |j| <= 92 as (m1, m2, r): m1 + m2 − r <= e^(j/256) <= m1 + m2 + r (exact comparisons)."""
    m1, m2, r = [], [], []
    for j in range(-92, 93):
        lo, hi = _exp_rational(Fraction(j, TABLE))
        mid = (lo + hi) / 2
        a = float(mid)
        b = float(mid - Fraction(a))
        m1.append(a)
        m2.append(b)
        r.append(fup(max(abs(hi - Fraction(a) - Fraction(b)), abs(lo - Fraction(a) - Fraction(b)))))
    return np.array(m1), np.array(m2), np.array(r)


@lru_cache(maxsize=None)
def _coefs():
    """1/i! as rational DTs (i <= N_TAYLOR) and the Taylor remainder bound (1/512 + 2^-40)^(N+1)/(N+1)!·1.01."""
    cs = [rational(Fraction(1, factorial(i))) for i in range(N_TAYLOR + 1)]
    smax = Fraction(1, 2 * TABLE) + Fraction(1, 1 << 40)
    rem = fup(smax ** (N_TAYLOR + 1) / factorial(N_TAYLOR + 1) * Fraction(101, 100))
    return cs, rem


def exp_point(x: DT, bad):
    """e^x for the midpoints of x (its radius is ignored: callers handle it), x1 in [−700, 709]
    (outside: undecided via ``bad``; callers exclude what they bound otherwise). x = k ln 2 + j/256 + s:
    k = rint(x1/ln 2), r = x − k(L1 + L2 + L3) (TwoSum / TwoProduct, k·L1 exact, |k·ℓ| into the radius),
    j = rint(256 r1), s = r − j/256 (|s| <= 1/512 + 2^-40); e^s by Horner's rule on Σ_{i<=9} s^i/i! in
    ball arithmetic (the coefficients' and every rounding's error kept), + the Taylor remainder;
    e^x = 2^k · e^(j/256) · e^s, the table entry an enclosure (`_table`)."""
    j = _jit()
    out = None if j is None else j.exp_arrays(x.m1, x.m2, *_exp_args(), bad, JIT_MIN)
    return _exp_point_np(x, bad) if out is None else DT(*out, x.b)


@lru_cache(maxsize=None)
def _exp_args():
    """`exp_point`'s constants, coefficients and table as `ddjit.exp_arrays` takes them."""
    L1, L2, L3, LM = _ln2_parts()
    cs, rem = _coefs()
    tm1, _, _ = _table()
    consts = (L1, L2, L3, LM, rem, 1.0 / (2 * TABLE) + 2.0 ** -40, float(TABLE), float((len(tm1) - 1) // 2))
    coefs = (np.array([float(c.m1) for c in cs]), np.array([float(c.m2) for c in cs]),
             np.array([0.0 if c.r is None else float(c.r) for c in cs]), np.array([c.r is not None for c in cs]))
    assert all(c.m2 is not None for c in cs)  # the kernel takes every coefficient's m2 as present
    return consts, coefs, _table()


def _exp_point_np(x: DT, bad):
    """`exp_point` in NumPy."""
    L1, L2, L3, LM = _ln2_parts()
    x1 = x.m1
    ok = (x1 >= -700.0) & (x1 <= 709.0)
    bad |= ~ok
    xs = DT(np.where(ok, x1, 0.0), None if x.m2 is None else np.where(ok, x.m2, 0.0), None, x.b)
    k = np.rint(xs.m1 * 1.4426950408889634)
    r = add(xs, point(-(k * L1)))
    p, e, _ = two_prod(k, np.full_like(k, L2))
    r = add(r, DT(p, e, None), neg=True)
    q = k * L3
    r = add(r, DT(q, None, up(up(np.abs(q) * TWO52) + up(np.abs(k) * LM) + ETA)), neg=True)
    j = np.rint(r.m1 * TABLE)
    bad |= np.abs(j) > 92
    j = np.clip(j, -92, 92)
    s = add(r, point(j / TABLE), neg=True)
    cs, rem = _coefs()
    P = cs[N_TAYLOR]
    for i in range(N_TAYLOR - 1, -1, -1):
        P = add(mul(P, s), cs[i])
    P = DT(P.m1, P.m2, radd(P.r, np.full(np.shape(P.m1), rem)), x.b)
    tm1, tm2, tr = _table()
    ji = (j + 92).astype(np.int64)
    T = DT(tm1[ji], tm2[ji], tr[ji], x.b)
    out = mul(T, P)
    smax = up(up(np.abs(s.m1) + np.abs(z(s.m2))) + z(s.r))
    bad |= ~(smax <= 1.0 / (2 * TABLE) + 2.0 ** -40)
    return scale2(out, k.astype(np.int32))


# ----------------------------------------------------------------------------- conversions


def from_bounds(lo, hi, b):
    """A DT of [lo, hi] (floats): m1 = fl((lo + hi)/2), r >= both distances (Lemma U)."""
    if lo is hi:
        return DT(lo, None, None, b)
    m = (lo + hi) * 0.5
    return DT(m, None, np.maximum(up(hi - m), up(m - lo)), b)


def to_bounds(x: DT):
    """(lo, hi) floats with lo <= m1 + m2 − r and m1 + m2 + r <= hi."""
    if x.m2 is None and x.r is None:
        return x.m1, x.m1
    s, e = (x.m1, None) if x.m2 is None else two_sum(x.m1, x.m2)
    lo, hi = s, s
    if e is not None:
        lo, hi = np.where(e < 0, dn(s + e), s), np.where(e > 0, up(s + e), s)
    if x.r is not None:
        lo, hi = dn(lo - x.r), up(hi + x.r)
    return lo, hi


__all__ = ["DT", "add", "mul", "matmul", "recip", "rsqrt", "exp_point", "from_bounds", "to_bounds", "two_sum",
           "two_prod", "slices", "rational", "point", "scale2", "fdn"]
