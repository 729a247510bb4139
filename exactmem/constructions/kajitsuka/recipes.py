"""The paper's own recipes for Kajitsuka & Sato's projections (Lemmas C.2 and B.2), in exact arithmetic.

See ``docs/kajitsuka-paper.md``: Lemma C.2's direction and shift (Stage I of every Lemma C.1
memorizer and the token id) and Lemma B.2's rounded-and-shifted Park direction (the token weights
f), instead of `kajitsuka`/`vardi`'s random draws.

**Park's direction (Lemma G.1).** Park et al. give a real unit vector existentially; an exact
unit vector need not be rational. We draw *rational* unit vectors from the inverse
stereographic parametrisation v = (2Qp, |p|² − Q²)/(|p|² + Q²) (p ∈ Z^(k−1), Q ∈ N; ‖v‖ = 1
exactly) and keep the first one for which the consequence of (151) that the proof uses is
verified exactly, with π enclosed ([`exactmem.arith.enclosure`][exactmem.arith.enclosure]).

**Lemma C.2** (Vardi et al.; note ``kajitsuka.md`` §4.5): with Park's v for the V points,
scale s = V²√(πd)/(√2 δ) — rounded *up* to the integer s' ≥ s (so the gaps stay ≥ 2) — and
shift β = ⌈s'·r⌉ + 2 (Lemma C.1's "slight modification of the bias"): x = σ(s' vᵀz + β) lies
in [2, R], R = 20 r V² δ⁻¹ √(πd), with gaps ≥ 2. Verified: Park's gap
|vᵀ(z − z')| ≥ √(8/(πd))·δ/V² on the sorted projections, x ≥ 2, gaps ≥ 2, x ≤ R.

**Lemma B.2** (eqs. (17)–(27)): h = ⌈N²|S|√π·v⌉ and the printed shift c = ⌊2N²|S|√π⌋
(`exactmem.constructions.kajitsuka.compact.paper_shifted_weights`). The shift breaks the
separation when the restricted multisets have different sizes (``docs/errata.md``), so the
conclusion is checked exactly and, where it fails, the **repaired shift**
c' = max(2·max_i |h·m̃⁽ⁱ⁾| + ⌈√|S|⌉, 1 − min h) is used — sums of multisets of different
sizes then differ by ≥ c' − 2 max|h·m̃| ≥ √|S|, sums of equal sizes by the h-gaps (25) —
and recorded (``b2 shift used``).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from math import isqrt
from typing import Dict, List, Sequence, Tuple

from ...arith import enclosure as E
from ..vardi import memorizer as vardi
from .compact import ConstructionError, weighted_counts


# ----------------------------------------------------------------------------- rational unit vectors


def rational_unit_vector(rng: random.Random, k: int, K: int) -> Tuple[Tuple[int, ...], int]:
    """A random rational unit vector in R^k as (integer numerators, common denominator D):
    inverse stereographic projection of p ∈ [−K, K]^(k−1) with a random Q ≥ 1 (so the last
    coordinate (|p|² − Q²)/D is spread over (−1, 1)). Σ numerators² = D² exactly."""
    if k == 1:
        return ((rng.choice((1, -1)),), 1)
    while True:
        p = [rng.randint(-K, K) for _ in range(k - 1)]
        n2 = sum(a * a for a in p)
        Q = rng.randint(1, 2 * isqrt(n2) + 1)
        D = n2 + Q * Q
        nums = tuple(2 * Q * a for a in p) + (n2 - Q * Q,)
        if any(nums):
            from math import gcd

            g = 0
            for a in nums + (D,):
                g = gcd(g, a)
            return tuple(a // g for a in nums), D // g


def _ceil_hi(x: E.Enc) -> int:
    """An integer ≥ the enclosed real (ceiling of the upper end)."""
    q = Fraction(x.hi)
    return -((-q.numerator) // q.denominator)


def _sorted_min_gap(values: Sequence) -> Fraction:
    s = sorted(values)
    return min((b - a for a, b in zip(s, s[1:])), default=None)


# ----------------------------------------------------------------------------- Lemma C.2


@dataclass
class C2Record:
    """What the Lemma C.2 recipe did: draws of Park's direction, scale, shift, checks."""

    tries: int
    K: int
    scale: int
    facts: Dict[str, object] = field(default_factory=dict)


def c2_projection(prep: vardi.Prepared, seed: int, max_tries: int = 200) -> Tuple[vardi.Projection, C2Record]:
    """Lemma C.2's recipe on the prepared points (r² = ``prep.r2`` ≥ 1, δ² = ``prep.delta2`` ≤ 1):
    Park's direction v (verified), w = s'·v, β = ⌈s' r⌉ + 2; see the module docstring.
    Returns a `vardi.Projection` (v = integer numerators, λ = s'/D) and the record."""
    rng = random.Random(seed)
    V, d = len(prep.points), prep.d
    r2, d2 = prep.r2, prep.delta2
    s_enc = E.sqrt(E.PI * (Fraction(V ** 4 * d, 2) / d2))  # s = V²√(πd)/(√2 δ)
    scale = _ceil_hi(s_enc)
    K = 2
    for tries in range(1, max_tries + 1):
        nums, D = rational_unit_vector(rng, d, K)
        proj = [vardi.dot(nums, p) for p in prep.points]  # D·vᵀz
        gamma = _sorted_min_gap(proj) if V > 1 else None
        # Park's consequence (151) with ||z - z'|| >= δ: (γ/D)² π d V⁴ >= 8 δ², π from below
        if gamma is not None:
            if gamma == 0 or (gamma / D) ** 2 * d * V ** 4 * E.PI.lo < 8 * d2:
                if tries % 20 == 0:
                    K *= 2
                continue
        lam = Fraction(scale, D)
        beta = _ceil_hi(E.sqrt(r2) * scale) + 2
        xs = [lam * a + beta for a in proj]
        facts = {
            "park gap >= sqrt(8/(pi d)) delta/V^2": True,
            "min x >= 2": min(xs) >= 2,
            "gaps >= 2": V == 1 or lam * gamma >= 2,
            "max x <= R = 20 r V^2 sqrt(pi d)/delta": max(xs) ** 2 * d2 <= 400 * r2 * V ** 4 * d * E.PI.lo,
            "max x - 2 <= 10 r V^2 sqrt(pi d)/delta (C.2 range)": (max(xs) - 2) ** 2 * d2 <= 100 * r2 * V ** 4 * d * E.PI.lo,
        }
        bad = [k for k, ok in facts.items() if not ok]
        if bad:
            raise ConstructionError(f"Lemma C.2 recipe: {bad[0]} fails with a verified Park direction")
        return (vardi.Projection(nums, lam, beta, xs, gamma if gamma is not None else Fraction(0), tries, K),
                C2Record(tries, K, scale, facts))
    raise ConstructionError(f"Lemma C.2 recipe: no Park direction among {max_tries} rational unit vectors")


# ----------------------------------------------------------------------------- Lemma B.2


def _ceil_sqrt(q: Fraction) -> int:
    """⌈√q⌉ for a rational q ≥ 0, exactly (the smallest integer t ≥ 0 with t² ≥ ⌈q⌉)."""
    c = -((-q.numerator) // q.denominator)
    return 0 if c <= 0 else isqrt(c - 1) + 1


def ceil_times_sqrt_pi(a: Fraction):
    """⌈a·√π⌉ decided with π's enclosure (squares compared), or None if the enclosure cannot
    decide it. For a < 0: −⌊|a|√π⌋."""
    a = Fraction(a)
    if a >= 0:
        lo, hi = _ceil_sqrt(a * a * E.PI.lo), _ceil_sqrt(a * a * E.PI.hi)
        return lo if lo == hi else None
    b2 = a * a
    lo, hi = isqrt(b2 * E.PI.lo // 1), isqrt(b2 * E.PI.hi // 1)
    return -lo if lo == hi else None


def paper_h_and_shift(v: Sequence[Fraction], N: int):
    """Lemma B.2 as printed for a rational unit vector v over |S| = len(v) tokens:
    h = ⌈N²|S|√π·v⌉ and c = ⌊2N²|S|√π⌋ (None where π's enclosure cannot decide a rounding)."""
    k = N * N * len(v)
    h = [ceil_times_sqrt_pi(k * x) for x in v]
    b = Fraction(2 * k) ** 2
    lo, hi = isqrt(b * E.PI.lo // 1), isqrt(b * E.PI.hi // 1)
    if None in h or lo != hi:
        return None
    return h, lo


@dataclass
class B2Record:
    """What the Lemma B.2 recipe did (``shift`` is "printed" or "repaired")."""

    shift: str
    printed_c: int
    c: int
    tries: int
    h: Dict[int, int]
    printed_failure: str = ""


def _separated(sums: Sequence[int], k: int) -> bool:
    """Distinct sums, pairwise gaps ≥ √k (squares compared), via the sorted order."""
    s = sorted(sums)
    return all((b - a) ** 2 >= k and b != a for a, b in zip(s, s[1:]))


def b2_conclusion(multisets: Sequence[Counter], f: Dict[int, int]) -> str:
    """Lemma B.2's conclusion for f on S = ∪ supp (the empty string if it holds, else which part
    fails): f(x) ∈ [⌈4N²|S|√π⌉], |a_i| ≤ 4MN²|S|√π, distinct sums with gaps ≥ √|S| (the reading
    of `kajitsuka.lemma_b2_holds`, decided by sorting; π enclosed — undecided counts as
    failing)."""
    N, k = len(multisets), len(f)
    M = max((sum(m.values()) for m in multisets), default=0)
    if any(v < 1 or Fraction((v - 1) ** 2) >= 16 * N ** 4 * k * k * E.PI.lo for v in f.values()):
        return "f(x) outside [ceil(4 N^2 |S| sqrt(pi))]"
    a = weighted_counts(multisets, f)
    if any(Fraction(x * x) > 16 * M * M * N ** 4 * k * k * E.PI.lo for x in a):
        return "a weighted count exceeds 4 M N^2 |S| sqrt(pi)"
    if not _separated(a, k):
        return "two weighted counts are closer than sqrt(|S|) (or equal)"
    return ""


def b2_weights(multisets: Sequence[Counter], order: Sequence[int], seed: int, max_tries: int = 200,
               direction: Tuple[Fraction, ...] = None) -> Tuple[Dict[int, int], B2Record]:
    """Lemma B.2's recipe on the (distinct, restricted) multisets over the tokens ``order``
    (the bijection g: S → [|S|]). ``direction`` forces Park's v (errata instances)."""
    k, N = len(order), len(multisets)
    if k == 0:
        return {}, B2Record("printed", 0, 0, 0, {})
    rng = random.Random(seed)
    Kp = max(2, 4 * k * k)  # enough distinct coordinates for distinct h-sums
    for tries in range(1, max_tries + 1):
        if direction is not None:
            v = tuple(Fraction(x) for x in direction)
        else:
            nums, D = rational_unit_vector(rng, k, Kp)
            v = tuple(Fraction(a, D) for a in nums)
        got = paper_h_and_shift(v, N)
        if got is None:  # a rounding π's enclosure cannot decide: another direction
            continue
        h = dict(zip(order, got[0]))
        c = got[1]
        f_printed = [h[x] + c for x in order]
        H = weighted_counts(multisets, h)
        if not _separated(H, k):  # v is not a Park direction for the m̃ (eq. (25) needs one)
            if direction is not None:
                raise ConstructionError("Lemma B.2: the given direction does not separate the h-sums (25)")
            if tries % 20 == 0:
                Kp *= 2
            continue
        f = dict(zip(order, f_printed))
        why = b2_conclusion(multisets, f)
        if not why:
            return f, B2Record("printed", c, c, tries, h)
        c2 = max(2 * max(abs(x) for x in H) + _isqrt_ceil(k), 1 - min(h.values()))
        f = {x: hx + c2 for x, hx in h.items()}
        a = weighted_counts(multisets, f)
        if min(f.values()) < 1 or not _separated(a, k):
            raise ConstructionError("Lemma B.2: the repaired shift failed (never expected)")
        return f, B2Record("repaired", c, c2, tries, h, why)
    raise ConstructionError(f"Lemma B.2 recipe: no Park direction among {max_tries} rational unit vectors")


def _isqrt_ceil(k: int) -> int:
    r = isqrt(k)
    return r if r * r == k else r + 1


def restrict(multisets: Sequence[Counter], A: Sequence[int]) -> List[Counter]:
    """m⁽ⁱ⁾|_A (Lemma B.3 applies Lemma B.2 to the restrictions)."""
    keep = set(A)
    return [Counter({x: c for x, c in m.items() if x in keep}) for m in multisets]
