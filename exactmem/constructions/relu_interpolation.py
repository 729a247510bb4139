"""The classical O(N)-parameter ReLU memorizers: project to a line, then interpolate.

Stage 1 (cf. Park et al.'s projection, background note §2, exact-arithmetic use): a random
integer direction v with t_i = vᵀx_i pairwise distinct, verified exactly (resampled with a
larger range on failure). With ``integer=True`` each v_k is a multiple of the lcm of the
denominators of coordinate k, so every t_i is an integer and distinct values differ by ≥ 1.

**Steps** (`build_steps`, the default baseline): on integers,
``step_j(t) = ReLU(t − t_(j)) − ReLU(t − t_(j) − 1)`` is 0 for t ≤ t_(j) and 1 for
t ≥ t_(j) + 1, so

    f(t) = y_(1) + Σ_{j=1}^{M-1} (y_(j+1) − y_(j)) · step_j(t)

equals y_(k) at t_(k). Weights are integers and label differences: the common denominator
stays that of the labels, which keeps exact evaluation cheap. Hidden width 2(M − 1),
d + 6(M − 1) + 1 parameters.

**Slopes** (`build`): with the distinct values sorted, t_(1) < … < t_(M), the
continuous piecewise-linear interpolant

    f(t) = y_(1) + Σ_{j=1}^{M-1} c_j · ReLU(t − t_(j)),
    c_1 = s_1, c_j = s_j − s_{j−1},  s_j = (y_(j+1) − y_(j)) / (t_(j+1) − t_(j)),

passes through every (t_(j), y_(j)): at t_(k) only the units j < k are active and the
telescoping sum gives y_(1) + Σ_{j<k} s_j (t_(j+1) − t_(j)) = y_(k).

The network: ``Affine(vᵀ)`` (1 × d), a hidden ReLU layer of width M − 1, an output
``Affine`` — d + 3(M − 1) + 1 parameters, one ReLU layer. Each weight is a small rational,
but the slopes' denominators differ, so their common denominator has thousands of bits
for M ≈ 10³ and exact evaluation slows down: the step form is the scalable baseline.

Both are the baselines the Õ(√N) constructions are compared against. This module only
builds; it never evaluates.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Sequence, Tuple

from ..data.dataset import DataError
from ..model.layers import Affine, Model


@dataclass
class Projection:
    v: Tuple[int, ...]
    values: List[Fraction]  # t_i = vᵀ x_i for every input point
    min_gap: Fraction  # smallest gap between distinct projected values
    tries: int
    coeff_range: int


def merge_duplicates(points: Sequence[tuple], labels: Sequence) -> Tuple[List[tuple], List, List[int]]:
    """Distinct points with their labels; identical points must carry identical labels.

    Returns (distinct points, their labels, index of the distinct point for each input).
    """
    first: Dict[tuple, int] = {}
    pts, labs, where = [], [], []
    for i, (p, y) in enumerate(zip(points, labels)):
        j = first.get(p)
        if j is None:
            first[p] = len(pts)
            where.append(len(pts))
            pts.append(p)
            labs.append(y)
        else:
            if labs[j] != y:
                orig = where.index(j)
                raise DataError(f"examples {orig} and {i} are the same point {tuple(str(x) for x in p)} "
                                f"with different labels {labs[j]} and {y}: no function memorizes both")
            where.append(j)
    return pts, labs, where


def project_distinct(points: Sequence[tuple], seed: int, max_tries: int = 60, integer: bool = False) -> Projection:
    """A random integer direction separating all (distinct) points, verified exactly.

    ``integer=True``: v_k is a multiple of the lcm of coordinate k's denominators, so the
    projected values are integers.
    """
    from ..arith.numbers import lcm_of_denominators

    rng = random.Random(seed)
    d = len(points[0])
    mult = [lcm_of_denominators(p[k] for p in points) if integer else 1 for k in range(d)]
    K = max(4, len(points) ** 2)
    for tries in range(1, max_tries + 1):
        v = tuple(mult[k] * rng.randint(-K, K) for k in range(d))
        t = [sum((a * x for a, x in zip(v, p)), Fraction(0)) for p in points]
        s = sorted(t)
        gaps = [b - a for a, b in zip(s, s[1:])]
        if all(g > 0 for g in gaps):
            return Projection(v, t, min(gaps) if gaps else Fraction(0), tries, K)
        K *= 2
    raise DataError(f"no separating integer direction found in {max_tries} tries (are the points distinct?)")


def _sorted_projection(points, labels, seed, integer):
    if not points:
        raise DataError("no data points")
    d = len(points[0])
    for i, p in enumerate(points):
        if len(p) != d:
            raise DataError(f"point {i} has dimension {len(p)}, point 0 has {d}")
    pts, labs, _ = merge_duplicates([tuple(p) for p in points], [Fraction(y) for y in labels])
    proj = project_distinct(pts, seed, integer=integer)
    order = sorted(range(len(pts)), key=lambda i: proj.values[i])
    ts = [proj.values[i] for i in order]
    ys = [labs[i] for i in order]
    info = {"distinct_points": len(ts), "direction_range": proj.coeff_range, "projection_tries": proj.tries,
            "min_projected_gap": proj.min_gap}
    return d, proj, ts, ys, info


def build_steps(points: Sequence[tuple], labels: Sequence[Fraction], seed: int) -> Tuple[Model, Dict[str, object]]:
    """Step-function interpolant on integer projections (hidden width 2(M − 1))."""
    d, proj, ts, ys, info = _sorted_projection(points, labels, seed, integer=True)
    M = len(ts)
    if M == 1:
        hidden = Affine(((Fraction(0),),) * 2, (Fraction(0),) * 2, relu=True)
        out = Affine(((Fraction(0), Fraction(0)),), (ys[0],))
    else:
        W1, b1, W2 = [], [], []
        for j in range(M - 1):
            W1 += [(Fraction(1),), (Fraction(1),)]
            b1 += [-ts[j], -ts[j] - 1]
            dy = ys[j + 1] - ys[j]
            W2 += [dy, -dy]
        hidden = Affine(tuple(W1), tuple(b1), relu=True)
        out = Affine((tuple(W2),), (ys[0],))
    model = Model((Affine((tuple(Fraction(a) for a in proj.v),)), hidden, out), "vectors", d, "last", "identity",
                  name="relu_interpolation_steps")
    return model, info


def build(points: Sequence[tuple], labels: Sequence[Fraction], seed: int) -> Tuple[Model, Dict[str, object]]:
    """The continuous piecewise-linear interpolant (hidden width M − 1, rational slopes)."""
    d, proj, ts, ys, info = _sorted_projection(points, labels, seed, integer=False)
    M = len(ts)
    slopes = [(ys[j + 1] - ys[j]) / (ts[j + 1] - ts[j]) for j in range(M - 1)]
    coeffs = [slopes[0]] + [slopes[j] - slopes[j - 1] for j in range(1, M - 1)] if M > 1 else []
    if M == 1:  # one point: a single dead unit keeps the architecture uniform
        hidden = Affine(((Fraction(0),),), (Fraction(0),), relu=True)
        out = Affine(((Fraction(0),),), (ys[0],))
    else:
        hidden = Affine(tuple((Fraction(1),) for _ in range(M - 1)), tuple(-t for t in ts[:-1]), relu=True)
        out = Affine((tuple(coeffs),), (ys[0],))
    model = Model((Affine((tuple(Fraction(a) for a in proj.v),)), hidden, out), "vectors", d, "last", "identity",
                  name="relu_interpolation")
    return model, info
