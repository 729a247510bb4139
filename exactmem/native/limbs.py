"""numba kernels: exact integers as fixed-width limbs (base 2^30) in int64 arrays.

Representation (*canonical form*): an integer v is K limbs ``L[0..K-1]`` with
``v = Σ_l L[l]·2^(30·l)``, the lower limbs ``0 <= L[l] < 2^30`` (l < K-1) and a signed top limb
``-2^30 <= L[K-1] < 2^30``. The sign of v is the sign of its top limb. A batch of m rows of T
entries is an int64 array of shape (m, T, K) (the limbs of one entry are contiguous).

Why int64 never overflows
-------------------------
* A product of a weight limb (``0 <= w < 2^30``) and a data limb (``|x| <= 2^30``, top
  included) is below 2^60 in magnitude. It is split at once into ``prod & MASK`` (in
  ``[0, 2^30)``) and ``prod >> 30`` (arithmetic shift: ``|.| <= 2^30``), added to two
  accumulator limbs; ``prod == (prod >> 30)·2^30 + (prod & MASK)`` holds for negative ``prod``
  too (two's complement). An accumulator limb therefore receives at most
  ``2·(terms)·(limbs)`` additions of magnitude <= 2^30; :func:`check_sizes` (called by every
  caller before a step) makes sure that count stays below 2^32, so every partial sum is below
  2^62.
* Signed sums of canonical rows (``y = Σ ±x_j``) add n limbs of magnitude <= 2^30 (n < 2^32).
* Carry normalization ``c = L >> 30; L -= c << 30; L[next] += c`` is exact for any int64 L and
  leaves ``0 <= L < 2^30``.
No floating-point value is formed anywhere in this module.
"""

from __future__ import annotations

import numpy as np
from numba import njit

S = 30
MASK = (1 << S) - 1
BASE = 1 << S
INF = 1 << 62


# ----------------------------------------------------------------------------- conversions


@njit(cache=True, nogil=True)
def bytes_to_limbs(buf, n, nb, K):
    """n little-endian two's-complement integers of nb bytes each -> canonical (n, K) limbs.
    Needs ``8·nb >= 30·(K-1)`` and every value in ``[-2^(30K-1), 2^(30K-1))``."""
    out = np.empty((n, K), np.int64)
    for i in range(n):
        base = i * nb
        acc = np.int64(0)
        nbits = 0
        l = 0
        for b in range(nb):
            acc |= np.int64(buf[base + b]) << nbits
            nbits += 8
            if l < K - 1 and nbits >= S:
                out[i, l] = acc & MASK
                acc >>= S
                nbits -= S
                l += 1
        if nbits > 0 and (acc >> (nbits - 1)) & 1:
            acc -= np.int64(1) << nbits
        out[i, K - 1] = acc
    return out


@njit(cache=True, nogil=True)
def limbs_to_bytes(L, nb):
    """Canonical (n, K) limbs -> n little-endian two's-complement integers of nb bytes
    (``8·nb >= 30·K + 1``), as one uint8 array."""
    n, K = L.shape
    out = np.empty(n * nb, np.uint8)
    for i in range(n):
        acc = np.int64(0)
        nbits = 0
        o = i * nb
        for l in range(K - 1):
            acc |= L[i, l] << nbits
            nbits += S
            while nbits >= 8:
                out[o] = acc & 255
                o += 1
                acc >>= 8
                nbits -= 8
        acc |= L[i, K - 1] << nbits  # signed top: sign-extends from here on
        end = (i + 1) * nb
        while o < end:
            out[o] = acc & 255
            o += 1
            acc >>= 8
    return out


# ----------------------------------------------------------------------------- one step


@njit(cache=True, nogil=True)
def step_block(X, t0, t1, row_ptr, mag_ptr, mags, term_ptr, term_j, term_sgn, bias_ptr, bias, relu, P):
    """One exact step ``ρ(Σ_g M_g·(Σ_{j∈g} ±x_j) + bias)`` for the tokens t0..t1-1.

    X: canonical (m_in, T, K). Row r has the groups ``row_ptr[r]..row_ptr[r+1]``; group g has the
    magnitude ``M_g`` (limbs ``mags[mag_ptr[g]:mag_ptr[g+1]]``, each in [0, 2^30)) and the signed
    terms ``term_j/term_sgn[term_ptr[g]:term_ptr[g+1]]``. ``bias[bias_ptr[r]:bias_ptr[r+1]]``:
    canonical limbs of row r's bias. Returns Y (m_out, t1-t0, P) normalized (lower limbs in
    [0, 2^30), signed top), the largest trimmed length of an entry and the smallest 2-adic
    valuation of a non-zero entry (INF if all are zero). P must exceed every entry's length.
    """
    m_in, T, K = X.shape
    m_out = len(row_ptr) - 1
    nt = t1 - t0
    Y = np.empty((m_out, nt, P), np.int64)
    acc = np.empty(P, np.int64)
    y = np.empty(K + 1, np.int64)
    maxlen = 1
    minval = INF
    for tt in range(nt):
        t = t0 + tt
        for r in range(m_out):
            for l in range(P):
                acc[l] = 0
            b0 = bias_ptr[r]
            for l in range(bias_ptr[r + 1] - b0):
                acc[l] += bias[b0 + l]
            for g in range(row_ptr[r], row_ptr[r + 1]):
                for l in range(K + 1):
                    y[l] = 0
                for k in range(term_ptr[g], term_ptr[g + 1]):
                    j = term_j[k]
                    if term_sgn[k] > 0:
                        for l in range(K):
                            y[l] += X[j, t, l]
                    else:
                        for l in range(K):
                            y[l] -= X[j, t, l]
                for l in range(K):
                    c = y[l] >> S
                    y[l] -= c << S
                    y[l + 1] += c
                ly = K + 1
                while ly > 1 and (y[ly - 1] == 0 or y[ly - 1] == -1):
                    y[ly - 2] += y[ly - 1] << S
                    ly -= 1
                if ly == 1 and y[0] == 0:
                    continue
                m0 = mag_ptr[g]
                kw = mag_ptr[g + 1] - m0
                if kw == 1 and mags[m0] == 1:
                    for l in range(ly):
                        acc[l] += y[l]
                    continue
                for i in range(kw):
                    w = mags[m0 + i]
                    if w == 0:
                        continue
                    for l in range(ly):
                        prod = w * y[l]
                        acc[i + l] += prod & MASK
                        acc[i + l + 1] += prod >> S
            for l in range(P - 1):
                c = acc[l] >> S
                acc[l] -= c << S
                acc[l + 1] += c
            if relu[r] and acc[P - 1] < 0:
                for l in range(P):
                    Y[r, tt, l] = 0
                continue
            for l in range(P):
                Y[r, tt, l] = acc[l]
            # trimmed length (merged sign-extension limbs) and 2-adic valuation
            ln = P
            top = acc[P - 1]
            while ln > 1 and (top == 0 or top == -1):
                top = acc[ln - 2] + (top << S)
                ln -= 1
            if ln > maxlen:
                maxlen = ln
            if minval > 0:
                for l in range(ln):
                    x = acc[l] if l < ln - 1 else top
                    if x != 0:
                        tz = 0
                        while (x & 1) == 0:
                            x >>= 1
                            tz += 1
                        v = l * S + tz
                        if v < minval:
                            minval = v
                        break
    return Y, maxlen, minval


@njit(cache=True, nogil=True)
def finish_block(Y, Z, t0, v):
    """Entries of Y (m, nt, P), normalized, each of length <= Kc (the limbs Z needs before the
    shift), divided by 2^v (exact: v <= every entry's valuation) into Z[:, t0:t0+nt, :], canonical
    with Z.shape[2] limbs; ``Kc = Z.shape[2] + v // 30``."""
    m, nt, P = Y.shape
    K2 = Z.shape[2]
    q = v // S
    rr = v - q * S
    Kc = K2 + q
    a = np.empty(max(Kc, P), np.int64)
    for r in range(m):
        for tt in range(nt):
            if Kc <= P:  # merge the sign-extension limbs down to Kc
                top = Y[r, tt, P - 1]
                for ln in range(P, Kc, -1):
                    top = Y[r, tt, ln - 2] + (top << S)
                for l in range(Kc - 1):
                    a[l] = Y[r, tt, l]
                a[Kc - 1] = top
            else:  # sign-extend up to Kc
                for l in range(P - 1):
                    a[l] = Y[r, tt, l]
                c = Y[r, tt, P - 1]
                for l in range(P - 1, Kc - 1):
                    a[l] = c & MASK
                    c >>= S
                a[Kc - 1] = c
            t = t0 + tt
            if rr == 0:
                for i in range(K2):
                    Z[r, t, i] = a[i + q]
            else:
                for i in range(K2 - 1):
                    Z[r, t, i] = (a[i + q] >> rr) | ((a[i + q + 1] << (S - rr)) & MASK)
                Z[r, t, K2 - 1] = a[Kc - 1] >> rr


# ----------------------------------------------------------------------------- de-duplication


@njit(cache=True, nogil=True)
def first_index_rows(A):
    """For the rows of an int64 matrix A (n, w): per row, the index (0, 1, ...) of its class in
    order of first occurrence, and the first row of every class. Open-addressing hash table;
    rows are compared in full, so equal classes mean equal rows."""
    n, w = A.shape
    size = 1
    while size < 2 * n + 2:
        size <<= 1
    table = np.full(size, -1, np.int64)
    inv = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        h = np.uint64(1469598103934665603)
        for c in range(w):
            h = (h ^ np.uint64(A[i, c])) * np.uint64(1099511628211)
            h ^= h >> np.uint64(29)
        p = np.int64(h & np.uint64(size - 1))
        while True:
            e = table[p]
            if e < 0:
                table[p] = k
                first[k] = i
                inv[i] = k
                k += 1
                break
            f = first[e]
            same = True
            for c in range(w):
                if A[f, c] != A[i, c]:
                    same = False
                    break
            if same:
                inv[i] = e
                break
            p = (p + 1) & (size - 1)
    return inv, first[:k].copy()
