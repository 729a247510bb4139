"""numba kernels: exact integers as fixed-width limbs (base 2^30) in int64 arrays.

Representation (*canonical form*): an integer v is K limbs ``L[0..K-1]`` with
``v = Σ_l L[l]·2^(30·l)``, the lower limbs ``0 <= L[l] < 2^30`` (l < K-1) and a signed top limb
``-2^30 <= L[K-1] < 2^30`` (-2^30 only before trimming: a trimmed entry of K limbs has
``|v| < 2^(30·K)``). The sign of v is the sign of its top limb. A batch of m rows of T
entries is an int64 array of shape (m, K, T) (*token-major*: limb l of one row for all tokens
is contiguous, so the loops over tokens vectorize).

Why int64 never overflows
-------------------------
* A product of a weight limb (``0 <= w < 2^30``) and a data limb (``|x| <= 2^30``, top
  included) is below 2^60 in magnitude. It is split at once into ``prod & MASK`` (in
  ``[0, 2^30)``) and ``prod >> 30`` (arithmetic shift: ``|.| <= 2^30``), added to two
  accumulator limbs; ``prod == (prod >> 30)·2^30 + (prod & MASK)`` holds for negative ``prod``
  too (two's complement). An accumulator limb therefore receives at most
  ``2·(terms)·(limbs)`` additions of magnitude <= 2^30; `check_sizes` (called by every
  caller before a step) makes sure that count stays below 2^32, so every partial sum is below
  2^62.
* When at most 7 products can land on one accumulator limb (counted per block: an entry with a
  k-limb weight and an n-limb input puts at most min(k, n) products on one limb), they are added
  whole: ``7·2^60 + (additions of magnitude <= 2^30) < 2^63``, and the carry pass splits them.
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


@njit(cache=True, nogil=True, inline="always")
def _normalize(a, i, lo, n, off, nt):
    """Carry-normalize a[i, lo..n-1, off:off+nt] (every token column; the top limb n-1 stays
    signed); the limbs below lo must already be in [0, 2^30)."""
    for l in range(lo, n - 1):
        for t in range(off, off + nt):
            c = a[i, l, t] >> S
            a[i, l, t] -= c << S
            a[i, l + 1, t] += c


@njit(cache=True, nogil=True, inline="always")
def _trim(a, i, n, off, nt):
    """Merge top limbs that are sign extension in every token column (0 or -1) into the limb
    below; returns the new length (>= 1). Values do not change. A -1 is not merged onto a 0
    (that would make the top -2^30): a trimmed entry of n limbs is below 2^(30·n) in magnitude,
    strictly. (``x ^ (x >> 63)`` is 0 exactly for x in {0, -1}, and for a lower limb y,
    ``(y - 1) >> 63`` is -1 exactly when y = 0: branch-free tests that vectorize.)"""
    while n > 1:
        bad = np.int64(0)
        for t in range(off, off + nt):
            x = a[i, n - 1, t]
            bad |= (x ^ (x >> 63)) | ((x >> 63) & ((a[i, n - 2, t] - 1) >> 63))
        if bad != 0:
            break
        for t in range(off, off + nt):
            a[i, n - 2, t] += a[i, n - 1, t] << S
        n -= 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _all_zero(a, i, nt):
    o = np.int64(0)
    for t in range(nt):
        o |= a[i, 0, t]
    return o == 0


@njit(cache=True, nogil=True, inline="always")
def _linear_part(D, d, off, nt, e0, e1, X, b0, ys, ly, direct, cm_list, cm_sgn, mag_ptr, mags):
    """One block of the linear part ``Σ_e cm_sgn[e]·M_e·y_{cm_list[e]}`` (entries e0..e1-1 of a
    combo, see `step_block`) into ``D[d, :, off:off+nt]``, carry-normalized and trimmed;
    returns its length.

    The first ``+1·y`` entry is copied rather than added (``y`` is canonical, so the limbs of
    the copy below its top are already in [0, 2^30)), only the limbs it does not cover are
    zeroed, and the carry pass starts at the lowest limb anything was added to: for the
    selection rows ``ρ(2^M·s + U)`` of a wide U this is one copy of U and work on its top limbs
    only."""
    hi = 1
    full = 0  # products that can land on one output limb, at most
    first = -1  # the entry copied
    for e in range(e0, e1):
        n = ly[cm_list[e]]
        if n:
            kw = mag_ptr[e + 1] - mag_ptr[e]
            h = kw + n + 1
            if h > hi:
                hi = h
            if not (kw == 1 and mags[mag_ptr[e]] == 1):
                full += min(kw, n)
            elif first < 0 and cm_sgn[e] > 0:
                first = e
    # at most 7 products (each |.| <= 2^60) per limb: add them whole, carry once afterwards
    unsplit = full <= 7
    lo = hi  # the lowest limb that may be outside [0, 2^30)
    n0 = 0
    if first >= 0:
        li = cm_list[first]
        n0 = ly[li]
        j = direct[li]
        for l in range(n0):
            if j >= 0:
                for t in range(nt):
                    D[d, l, off + t] = X[j, l, b0 + t]
            else:
                for t in range(nt):
                    D[d, l, off + t] = ys[li, l, t]
        lo = n0 - 1  # the copy's top limb is signed
    for l in range(n0, hi):
        for t in range(nt):
            D[d, l, off + t] = 0
    for e in range(e0, e1):
        li = cm_list[e]
        n = ly[li]
        if n == 0 or e == first:
            continue
        sg = cm_sgn[e]
        m0 = mag_ptr[e]
        kw = mag_ptr[e + 1] - m0
        j = direct[li]
        if kw == 1 and mags[m0] == 1:
            lo = 0
            for l in range(n):
                if j >= 0:
                    for t in range(nt):
                        D[d, l, off + t] += sg * X[j, l, b0 + t]
                else:
                    for t in range(nt):
                        D[d, l, off + t] += sg * ys[li, l, t]
            continue
        for i in range(kw):
            w = mags[m0 + i] * sg
            if w == 0:
                continue
            if i < lo:
                lo = i
            for l in range(n):
                if unsplit:
                    if j >= 0:
                        for t in range(nt):
                            D[d, i + l, off + t] += w * X[j, l, b0 + t]
                    else:
                        for t in range(nt):
                            D[d, i + l, off + t] += w * ys[li, l, t]
                elif j >= 0:
                    for t in range(nt):
                        prod = w * X[j, l, b0 + t]
                        D[d, i + l, off + t] += prod & MASK
                        D[d, i + l + 1, off + t] += prod >> S
                else:
                    for t in range(nt):
                        prod = w * ys[li, l, t]
                        D[d, i + l, off + t] += prod & MASK
                        D[d, i + l + 1, off + t] += prod >> S
    _normalize(D, d, lo, hi, off, nt)
    return _trim(D, d, hi, off, nt)


@njit(cache=True, nogil=True)
def step_block(X, Xlen, K, list_ptr, term_j, term_sgn, combo_ptr, cm_list, cm_sgn, mag_ptr, mags, row_combo,
               bias_ptr, bias, relu, Y, Ylen, vcap, B):
    """One exact step ``ρ(Σ ±M·(Σ ±x_j) + bias)`` on all tokens, with shared work.

    Token-major with per-block lengths: the tokens are cut in blocks of B; entry (j, t) of the
    input is canonical in X[j, :Xlen[j, t // B], t] (a length 0 means the value 0), and K is the
    largest length. Every inner loop runs over the tokens of one block and vectorizes.

    *Lists* (``list_ptr``): the signed sums ``y = Σ ±x_j`` (terms ``term_j/term_sgn``) of the
    rows' weight groups, each computed once (a single + term is read from X in place).
    *Combos* (``combo_ptr``): linear parts ``Σ cm_sgn·M·y_{cm_list}`` (M the magnitude
    ``mags[mag_ptr[e]:mag_ptr[e+1]]``, limbs in [0, 2^30)), each computed once; a list that is
    zero on the whole block is skipped and lengths are trimmed per block. Row r is combo
    ``row_combo[r]`` (-1: none) plus its bias (canonical limbs ``bias[bias_ptr[r]:bias_ptr[r+1]]``),
    then ReLU if ``relu[r]``. A combo that only one row reads, and that row without a bias, is
    computed straight into that row of Y (`_linear_part`), not into a scratch block.

    Writes the output the same way into Y (m_out, P, T) / Ylen (m_out, blocks) (P must exceed
    every entry's un-trimmed length) and returns the largest length and min(vcap, the smallest
    2-adic valuation of a non-zero output entry).
    """
    T = X.shape[2]
    m_out = len(row_combo)
    P = Y.shape[1]
    nl = len(list_ptr) - 1
    nc = len(combo_ptr) - 1
    nblocks = (T + B - 1) // B
    ys = np.empty((nl, K + 1, B), np.int64)
    ly = np.zeros(nl, np.int64)
    direct = np.full(nl, -1, np.int64)
    for li in range(nl):
        if list_ptr[li + 1] - list_ptr[li] == 1 and term_sgn[list_ptr[li]] > 0:
            direct[li] = term_j[list_ptr[li]]
    comb = np.empty((nc, P + 1, B), np.int64)
    clen = np.zeros(nc, np.int64)
    solo = np.full(nc, -1, np.int64)  # the one row of a combo read by one row only, without bias
    users = np.zeros(nc, np.int64)
    for r in range(m_out):
        if row_combo[r] >= 0:
            users[row_combo[r]] += 1
    for r in range(m_out):
        ci = row_combo[r]
        if ci >= 0 and users[ci] == 1 and bias_ptr[r + 1] == bias_ptr[r]:
            solo[ci] = r
    maxlen = 0
    minval = vcap
    for blk in range(nblocks):
        b0 = blk * B
        nt = min(B, T - b0)
        for li in range(nl):  # the signed sums
            if direct[li] >= 0:
                ly[li] = Xlen[direct[li], blk]
                continue
            n = 0
            for k in range(list_ptr[li], list_ptr[li + 1]):
                n = max(n, Xlen[term_j[k], blk])
            for l in range(n + 1):
                for t in range(nt):
                    ys[li, l, t] = 0
            for k in range(list_ptr[li], list_ptr[li + 1]):
                j = term_j[k]
                nj = Xlen[j, blk]
                if term_sgn[k] > 0:
                    for l in range(nj):
                        for t in range(nt):
                            ys[li, l, t] += X[j, l, b0 + t]
                else:
                    for l in range(nj):
                        for t in range(nt):
                            ys[li, l, t] -= X[j, l, b0 + t]
            _normalize(ys, li, 0, n + 1, 0, nt)
            n = _trim(ys, li, n + 1, 0, nt)
            ly[li] = 0 if (n == 1 and _all_zero(ys, li, nt)) else n
        for ci in range(nc):  # the linear parts (a solo one straight into its row of Y)
            r = solo[ci]
            if r >= 0:
                clen[ci] = _linear_part(Y, r, b0, nt, combo_ptr[ci], combo_ptr[ci + 1], X, b0, ys, ly, direct,
                                        cm_list, cm_sgn, mag_ptr, mags)
            else:
                clen[ci] = _linear_part(comb, ci, 0, nt, combo_ptr[ci], combo_ptr[ci + 1], X, b0, ys, ly, direct,
                                        cm_list, cm_sgn, mag_ptr, mags)
        for r in range(m_out):
            ci = row_combo[r]
            q0 = bias_ptr[r]
            nb = bias_ptr[r + 1] - q0
            if nb == 0:  # the combo itself (already normalized and trimmed), ReLU on the way
                if ci < 0:
                    n = 1
                    for t in range(nt):
                        Y[r, 0, b0 + t] = 0
                elif solo[ci] == r:  # computed in place: ReLU zeroes the negative entries, top limb last
                    n = clen[ci]
                    if relu[r]:
                        neg = np.int64(0)
                        for t in range(nt):
                            neg |= Y[r, n - 1, b0 + t]
                        if neg < 0:
                            for l in range(n - 2, -1, -1):
                                for t in range(nt):
                                    Y[r, l, b0 + t] = Y[r, l, b0 + t] if Y[r, n - 1, b0 + t] >= 0 else 0
                            for t in range(nt):
                                Y[r, n - 1, b0 + t] = max(Y[r, n - 1, b0 + t], 0)
                else:
                    n = clen[ci]
                    for l in range(n):
                        if relu[r]:
                            for t in range(nt):
                                Y[r, l, b0 + t] = comb[ci, l, t] if comb[ci, n - 1, t] >= 0 else 0
                        else:
                            for t in range(nt):
                                Y[r, l, b0 + t] = comb[ci, l, t]
            else:  # combo + bias, normalized in place in Y
                n = nb
                if ci >= 0 and clen[ci] > n:
                    n = clen[ci]
                n += 1
                for l in range(n):
                    if ci >= 0 and l < clen[ci]:
                        for t in range(nt):
                            Y[r, l, b0 + t] = comb[ci, l, t]
                    else:
                        for t in range(nt):
                            Y[r, l, b0 + t] = 0
                for l in range(nb):
                    bl = bias[q0 + l]
                    if bl:
                        for t in range(nt):
                            Y[r, l, b0 + t] += bl
                for l in range(n - 1):
                    for t in range(nt):
                        c = Y[r, l, b0 + t] >> S
                        Y[r, l, b0 + t] -= c << S
                        Y[r, l + 1, b0 + t] += c
                if relu[r]:  # the top limb last: it decides for the limbs below
                    for l in range(n - 2, -1, -1):
                        for t in range(nt):
                            Y[r, l, b0 + t] = Y[r, l, b0 + t] if Y[r, n - 1, b0 + t] >= 0 else 0
                    for t in range(nt):
                        Y[r, n - 1, b0 + t] = max(Y[r, n - 1, b0 + t], 0)
                while n > 1:  # as _trim
                    bad = np.int64(0)
                    for t in range(nt):
                        x = Y[r, n - 1, b0 + t]
                        bad |= (x ^ (x >> 63)) | ((x >> 63) & ((Y[r, n - 2, b0 + t] - 1) >> 63))
                    if bad != 0:
                        break
                    for t in range(nt):
                        Y[r, n - 2, b0 + t] += Y[r, n - 1, b0 + t] << S
                    n -= 1
            Ylen[r, blk] = n
            if n > maxlen:
                maxlen = n
            if minval > 0:  # 2-adic valuation of the block: of the OR of its entries, limb by limb
                for l in range(n):
                    if l * S >= minval:
                        break
                    x = np.int64(0)
                    for t in range(nt):
                        x |= Y[r, l, b0 + t]
                    if x != 0:
                        tz = l * S
                        while (x & 1) == 0 and tz < minval:
                            x >>= 1
                            tz += 1
                        if tz < minval:
                            minval = tz
                        break
    return maxlen, minval


@njit(cache=True, nogil=True)
def extend(Y, Ylen, B, Krow):
    """Entries in the per-block form of `step_block` (Y, Ylen) made uniform in place:
    every entry of row r canonical in exactly ``Krow[r]`` limbs (``Krow[r]`` >= the row's
    lengths, <= Y.shape[1]) by sign extension, in Y[r, :Krow[r]]; a block already ``Krow[r]``
    limbs long is not touched."""
    m, P, T = Y.shape
    for r in range(m):
        K = Krow[r]
        for blk in range(Ylen.shape[1]):
            n = Ylen[r, blk]
            if n == K:
                continue
            b0 = blk * B
            nt = min(B, T - b0)
            if n == 0:
                for l in range(K):
                    for t in range(nt):
                        Y[r, l, b0 + t] = 0
                continue
            for t in range(nt):
                c = Y[r, n - 1, b0 + t]
                for l in range(n - 1, K - 1):
                    Y[r, l, b0 + t] = c & MASK
                    c >>= S
                Y[r, K - 1, b0 + t] = c


@njit(cache=True, nogil=True)
def max_bit_length(L):
    """The largest bit length of |v| over the canonical values of a limb array L (K, n). The
    magnitudes' limbs are made one limb row at a time (negative values negated, their carries
    kept per value), so the array is read in memory order; the highest limb row that is not all
    zero decides: its largest limb x gives bit_length(x) + S * row."""
    K, n = L.shape
    neg = np.empty(n, np.bool_)
    for t in range(n):
        neg[t] = L[K - 1, t] < 0
    c = np.zeros(n, np.int64)
    top_l = -1
    top_x = np.int64(0)
    for l in range(K):
        m = np.int64(0)
        inner = l < K - 1
        for t in range(n):
            x = L[l, t]
            if neg[t]:
                x = c[t] - x
                if inner:
                    q = x >> S
                    c[t] = q
                    x -= q << S
            if x > m:
                m = x
        if m > 0:
            top_l, top_x = l, m
    if top_l < 0:
        return 0
    b = 0
    while top_x > 0:
        top_x >>= 1
        b += 1
    return b + top_l * S


# ----------------------------------------------------------------------------- de-duplication


@njit(cache=True, nogil=True)
def first_index_cols(A):
    """For the columns of an int64 matrix A (w, n): per column, the index (0, 1, ...) of its class
    in order of first occurrence, and the first column of every class. The hashes are built one
    row of A at a time (memory order for a C-contiguous A), then the columns are placed in an
    open-addressing table and compared in full, so equal classes mean equal columns."""
    w, n = A.shape
    h = np.full(n, np.uint64(1469598103934665603))
    for c in range(w):
        for i in range(n):
            x = (h[i] ^ np.uint64(A[c, i])) * np.uint64(1099511628211)
            h[i] = x ^ (x >> np.uint64(29))
    size = 1
    while size < 2 * n + 2:
        size <<= 1
    table = np.full(size, -1, np.int64)
    inv = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        p = np.int64(h[i] & np.uint64(size - 1))
        while True:
            e = table[p]
            if e < 0:
                table[p] = k
                first[k] = i
                inv[i] = k
                k += 1
                break
            f = first[e]
            same = h[f] == h[i]
            if same:
                for c in range(w):
                    if A[c, f] != A[c, i]:
                        same = False
                        break
            if same:
                inv[i] = e
                break
            p = (p + 1) & (size - 1)
    return inv, first[:k].copy()


@njit(cache=True, nogil=True)
def first_index_rows(A):
    """`first_index_cols` of the rows of an int64 matrix A (n, w) (its transpose, a view)."""
    return first_index_cols(A.T)
