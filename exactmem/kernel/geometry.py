"""Token geometry of layer-model data: the largest ‖x‖² and the least ‖v − w‖² of the distinct tokens.

Kajitsuka & Sato's (r, δ)-separated tokens (§3, Assumption 4.1): ``max_norm2`` = r² and
``min_sep2`` = δ², computed exactly in integers. Only layer-model certificates claim them (a graph
model may not: ``schema.py``), so this module belongs to the layer-model trusted base alone.
"""

from __future__ import annotations

import sys
from array import array
from fractions import Fraction
from math import lcm
from operator import mul
from typing import Dict, List, Optional

PACK_MIN = 64  # least_sq_distance: fewer distinct tokens are compared pair by pair


def norms_and_gaps(vs: list, tick=None) -> Dict[str, Optional[Fraction]]:
    """``max_norm2`` and ``min_sep2`` (None when fewer than two distinct tokens: no pair) of the
    distinct token vectors ``vs`` (lists of Fractions), over their common denominator L."""
    L = lcm(*(x.denominator for v in vs for x in v)) if vs else 1  # integer coordinates over L
    iv = [[x.numerator * (L // x.denominator) for x in v] for v in vs]
    norms = [sum(map(mul, v, v)) for v in iv]
    best = least_sq_distance(iv, tick)
    return {"max_norm2": Fraction(max(norms, default=0), L * L),
            "min_sep2": None if best is None else Fraction(best, L * L)}


def least_sq_distance(iv: List[List[int]], tick=None) -> Optional[int]:
    """Kajitsuka & Sato's δ² in integers: the least ‖v − w‖² over pairs of the integer vectors
    ``iv`` (None for fewer than two). Shifting every coordinate by c = −min changes no distance,
    so the vectors u = v + c are ≥ 0 with ‖u‖² ≤ M, and ‖u_i − u_j‖² = ‖u_i‖² + M − t_j with
    t_j = M − ‖u_j‖² + 2 u_i·u_j ∈ [0, 3M] (Cauchy–Schwarz). When 3M < 2^64, each i gets every
    t_j at once as the base-2^64 digits of B = Σ_j t_j 2^(64 j) (no digit carries), computed
    from one packed integer per coordinate; otherwise (or for few vectors) pair by pair."""
    if len(iv) < 2:
        return None
    low = min(map(min, iv))
    us = [[x - low for x in v] for v in iv]
    norms = [sum(map(mul, u, u)) for u in us]
    M, best = max(norms), None
    packed = 3 * M < 1 << 64 and len(us) >= PACK_MIN and array("Q").itemsize == 8
    if packed:  # Σ_j row[j] 2^(64 j) for the row of M − ‖u_j‖² and each coordinate's row
        cols = [int.from_bytes(array("Q", row).tobytes(), sys.byteorder) for row in [[M - w for w in norms], *zip(*us)]]
    for i in range(1, len(us)):
        if tick is not None:
            tick()
        if packed:
            B = cols[0] + sum(2 * x * c for x, c in zip(us[i], cols[1:]) if x)
            d = norms[i] + M - max(memoryview(B.to_bytes(8 * len(us), sys.byteorder)).cast("Q")[:i])
        else:
            d = norms[i] + min(nw - 2 * sum(map(mul, us[i], w)) for w, nw in zip(us[:i], norms))
        best = d if best is None or d < best else best
    return best
