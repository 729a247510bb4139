"""Exact closest pair of a finite point set in Q^d (Assumption 4.1's δ, Lemma C.1's gaps)."""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence, Tuple

from ..arith.numbers import integer_points


def closest_pair(points: Sequence[tuple]) -> Tuple[Fraction, int, int]:
    """(smallest squared distance, i, j) over pairs of the (distinct, ≥ 2) points, exactly.

    The points are scaled to integers by the lcm L of all denominators. 1-D: sorted gaps.
    Otherwise: all pairs in int64 NumPy blocks when a bound proves d·(2·max|coord|)² < 2^62 and
    there are at most 2^31 pair-coordinates; else a sweep over the points sorted by the
    coordinate with the most distinct values (a pair is skipped once that coordinate alone is
    farther apart than the best distance so far). Exact Python integers throughout.
    """
    if len(points) < 2:
        raise ValueError("closest_pair needs at least two points")
    L, P = integer_points(points)
    n, d = len(P), len(P[0])
    if d == 1:
        order = sorted(range(n), key=lambda i: P[i][0])
        k = min(range(n - 1), key=lambda k: P[order[k + 1]][0] - P[order[k]][0])
        i, j = order[k], order[k + 1]
        return Fraction((P[j][0] - P[i][0]) ** 2, L * L), i, j
    big = max(abs(x) for p in P for x in p)
    if d * (2 * big) ** 2 < 2 ** 62 and n * n * d <= 2 ** 31:
        import numpy as np

        A = np.array(P, dtype=np.int64)
        step = max(1, (1 << 22) // (n * d))
        best = None
        for s in range(0, n, step):
            blk = A[s:s + step]
            D = ((blk[:, None, :] - A[None, :, :]) ** 2).sum(axis=2)
            D[np.arange(len(blk)), np.arange(s, s + len(blk))] = np.iinfo(np.int64).max
            a = int(D.argmin())
            m = int(D.flat[a])
            if best is None or m < best[0]:
                best = (m, s + a // n, a % n)
        return Fraction(best[0], L * L), best[1], best[2]
    ax = max(range(d), key=lambda k: len({p[k] for p in P}))
    order = sorted(range(n), key=lambda i: P[i][ax])
    best, bi, bj = None, -1, -1
    for a in range(1, n):
        pi = P[order[a]]
        for b in range(a - 1, -1, -1):
            pj = P[order[b]]
            dx = pi[ax] - pj[ax]
            if best is not None and dx * dx >= best:
                break
            d2 = sum((x - y) ** 2 for x, y in zip(pi, pj))
            if best is None or d2 < best:
                best, bi, bj = d2, order[b], order[a]
    return Fraction(best, L * L), bi, bj
