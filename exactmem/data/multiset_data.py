"""Finite multisets of points in Q^d for Kajitsuka & Sato Theorem D.1 (deep sets): exact checks and a seeded generator.

* `make_multisets` — validate shapes and labels (labels in {0, …, C − 1}; the paper's
  [C] shifted by one, as everywhere in exactmem).
* `check_elementwise_separation` — Assumption A.1 with the theorem's r ≥ 1 ≥ δ > 0,
  decided exactly on squares (‖x‖² ≤ r², ‖x − x'‖² ≥ δ² for distinct elements).
* `check_distinct` — Theorem D.1's condition 2: the N multisets are pairwise distinct
  (equal up to order counts as equal).
* `generate` — seeded distinct multisets over a small pool of separated points, with
  varied cardinalities (1 … M) and repeated elements inside a multiset.

Multiset i, element k are 0-based (the paper's x^{(i+1)}_{k+1}). Every violation raises
`DataError` naming the offending elements or multisets.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from .dataset import DataError
from .geometry import closest_pair
from .kajitsuka_data import check_labelled, rational_entries, token_pool

Point = Tuple[Fraction, ...]


@dataclass
class MultisetData:
    """N finite multisets of points in Q^d (each a tuple of elements, order irrelevant),
    labels in {0, …, C − 1}, and the cardinality bound M (default: the largest cardinality)."""

    multisets: List[Tuple[Point, ...]]
    labels: List[int]
    C: int
    d: int
    M: int
    seed: Optional[int] = None
    name: str = ""
    info: Dict[str, object] = field(default_factory=dict)

    @property
    def N(self) -> int:
        return len(self.multisets)

    def element_index(self) -> Tuple[List[Point], List[Counter]]:
        """(distinct elements in order of first occurrence, each multiset as a Counter of ids)."""
        ids: Dict[Point, int] = {}
        elements: List[Point] = []
        counters = []
        for m in self.multisets:
            c: Counter = Counter()
            for x in m:
                j = ids.get(x)
                if j is None:
                    j = ids[x] = len(elements)
                    elements.append(x)
                c[j] += 1
            counters.append(c)
        return elements, counters


def _point(x, i: int, k: int, d: Optional[int]) -> Point:
    if not isinstance(x, (tuple, list)):
        raise DataError(f"multiset {i}, element {k}: an element must be a vector (tuple of rationals)")
    out = rational_entries(x, f"multiset {i}, element {k}")
    if not out:
        raise DataError(f"multiset {i}, element {k}: empty point")
    if d is not None and len(out) != d:
        raise DataError(f"multiset {i}, element {k}: dimension {len(out)}, expected d = {d}")
    return tuple(out)


def make_multisets(multisets: Sequence[Sequence], labels: Sequence, C: int, d: Optional[int] = None,
                   M: Optional[int] = None, seed: Optional[int] = None, name: str = "") -> MultisetData:
    """Validate shapes, labels and the cardinality bound M (condition 1); not yet separation
    or distinctness. ``d`` is needed only when every multiset is empty."""
    check_labelled(multisets, labels, C, "multisets")
    out = []
    for i, m in enumerate(multisets):
        pts = []
        for k, x in enumerate(m):
            p = _point(x, i, k, d)
            d = len(p)
            pts.append(p)
        out.append(tuple(pts))
    if d is None:
        raise DataError("every multiset is empty: give the dimension d")
    card = max(len(m) for m in out)
    if M is None:
        M = max(card, 1)
    if isinstance(M, bool) or not isinstance(M, int) or M < 1:
        raise DataError(f"M = {M!r}: need a positive integer cardinality bound")
    for i, m in enumerate(out):
        if len(m) > M:
            raise DataError(f"multiset {i} has cardinality {len(m)} > M = {M} (Theorem D.1, condition 1)")
    labs = []
    for i, y in enumerate(labels):
        if isinstance(y, bool) or Fraction(y).denominator != 1 or not 0 <= y < C:
            raise DataError(f"multiset {i}: label {y!r} is not an integer in [0, {C}) (C = {C} classes)")
        labs.append(int(y))
    return MultisetData(out, labs, C, d, M, seed, name)


@dataclass
class ElementSeparation:
    """Measured geometry of the distinct elements and the (r², δ²) the theorem uses."""

    elements: List[Point]
    max_norm2: Fraction
    min_dist2: Fraction  # 1 if there is at most one distinct element
    r2: Fraction
    delta2: Fraction


def _where(data: MultisetData, x: Point) -> str:
    for i, m in enumerate(data.multisets):
        for k, y in enumerate(m):
            if y == x:
                return f"(multiset {i}, element {k})"
    return "(?)"


def check_elementwise_separation(data: MultisetData, r=None, delta=None) -> ElementSeparation:
    """Assumption A.1 with r ≥ 1, 0 < δ ≤ 1, exactly. ``r``/``delta`` default to the tightest
    admissible values (as squares: r² = max(1, max ‖x‖²), δ² = min(1, min ‖x − x'‖²))."""
    elements, _ = data.element_index()
    if not elements:
        return ElementSeparation([], Fraction(0), Fraction(1), Fraction(1) if r is None else Fraction(r) ** 2,
                                 Fraction(1) if delta is None else Fraction(delta) ** 2)
    norms = [(sum((v * v for v in x), Fraction(0)), x) for x in elements]
    max_n2, far = max(norms)
    min_d2, a, b = closest_pair(elements) if len(elements) > 1 else (Fraction(1), 0, 0)
    if r is not None:
        r = Fraction(r)
        if r < 1:
            raise DataError(f"r = {r}: Theorem D.1 needs r ≥ 1")
        if max_n2 > r * r:
            raise DataError(f"element {_where(data, far)} has squared norm {max_n2} > r² = {r * r} (Assumption A.1)")
        r2 = r * r
    else:
        r2 = max(Fraction(1), max_n2)
    if delta is not None:
        delta = Fraction(delta)
        if not 0 < delta <= 1:
            raise DataError(f"delta = {delta}: Theorem D.1 needs 0 < δ ≤ 1")
        if len(elements) > 1 and min_d2 < delta * delta:
            raise DataError(f"elements {_where(data, elements[a])} and {_where(data, elements[b])} are distinct but "
                            f"their squared distance {min_d2} < δ² = {delta * delta} (Assumption A.1)")
        delta2 = delta * delta
    else:
        delta2 = min(Fraction(1), min_d2)
    return ElementSeparation(elements, max_n2, min_d2, r2, delta2)


def check_distinct(data: MultisetData) -> None:
    """Theorem D.1's condition 2: no two multisets are equal (as multisets: order ignored)."""
    _, counters = data.element_index()
    seen: Dict[frozenset, int] = {}
    for i, c in enumerate(counters):
        key = frozenset(c.items())
        if key in seen:
            raise DataError(f"multisets {seen[key]} and {i} are equal (up to order): Theorem D.1 needs distinct "
                            f"multisets")
        seen[key] = i


def generate(N: int, M: int, d: int, C: int, seed: int, vocab: Optional[int] = None, min_card: int = 1,
             repeat: float = 0.3, coord_range: int = 16, denominator_bits: int = 0,
             max_tries: int = 100) -> MultisetData:
    """Seeded distinct multisets: cardinalities uniform in [min_card, M], elements drawn from a
    pool of ``vocab`` separated points (default max(2, ⌈2√(NM)⌉)); with probability ``repeat``
    an element repeats one already in the multiset. Labels are seeded random in {0, …, C − 1}.
    Each multiset is stored in a random order (deep sets ignore it)."""
    if N < 1 or M < 1 or d < 1 or not 0 <= min_card <= M:
        raise DataError("N, M, d must be positive and 0 ≤ min_card ≤ M")
    if vocab is None:
        vocab = max(2, 2 * int((N * M) ** 0.5) + 1)
    pool = token_pool(vocab, d, seed + 1, coord_range, denominator_bits)
    rng = random.Random(seed)
    seen = set()
    idx: List[List[int]] = []
    for _ in range(max_tries * N):
        if len(idx) == N:
            break
        size = rng.randint(min_card, M)
        m: List[int] = []
        for _k in range(size):
            m.append(rng.choice(m) if m and rng.random() < repeat else rng.randrange(vocab))
        key = tuple(sorted(m))
        if key in seen:
            continue
        seen.add(key)
        rng.shuffle(m)
        idx.append(m)
    if len(idx) < N:
        raise DataError(f"could not draw {N} distinct multisets of cardinality ≤ {M} over {vocab} points")
    labels = [rng.randrange(C) for _ in range(N)]
    name = f"multisets N={N} M={M} d={d} C={C} vocab={vocab}" + (
        f" q~2^{denominator_bits}" if denominator_bits else "")
    data = make_multisets([[pool[j] for j in m] for m in idx], labels, C, d, M, seed, name)
    data.info.update({"vocab": vocab, "min_card": min_card, "repeat": repeat, "coord_range": coord_range,
                      "denominator_bits": denominator_bits})
    return data
