"""Query/context datasets of Mahdavi, Liao & Thrampoulidis (note ``mahdavi.md`` §1.1, §5.1).

Example t is a query vector x^(t) ∈ Q^d and a context matrix E^(t) ∈ Q^{n×d} (its rows are
the n context tokens), with a label y^(t): a rational (regression, "real" labels) or a class
index (classification). As an exactmem sequence the example is the n context rows followed
by the query as the **last** token, which is what
``Attention(query="last", keys="others")`` expects (note §1.1: "the synthetic model masks
the query token out of the keys").

Generators are seeded (``random.Random(seed)``) and draw integer coordinates; a *shared*
context (the paper's ``context_type = fixed``, note §5.1) uses one E for every example.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..arith.numbers import to_rational
from .dataset import DataError, Dataset

Vec = Tuple[Fraction, ...]


@dataclass
class QueryContextData:
    """T examples (x^(t), E^(t), y^(t)); all contexts have n rows of dimension d.

    ``label_kind`` is ``"real"`` (labels are rationals) or ``"class"`` (labels are integers in
    ``[0, num_classes)``).
    """

    queries: Tuple[Vec, ...]
    contexts: Tuple[Tuple[Vec, ...], ...]
    labels: Tuple[Any, ...]
    label_kind: str = "real"
    num_classes: Optional[int] = None
    seed: Optional[int] = None
    name: str = ""
    info: Dict[str, Any] = field(default_factory=dict)
    _classes: Any = field(default=None, init=False, repr=False, compare=False)
    _int_queries: Any = field(default=None, init=False, repr=False, compare=False)
    cache: Dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        self.queries = tuple(tuple(to_rational(v) for v in x) for x in self.queries)
        self.contexts = tuple(tuple(tuple(to_rational(v) for v in row) for row in E) for E in self.contexts)
        T = len(self.queries)
        if T == 0:
            raise DataError("no examples")
        if len(self.contexts) != T or len(self.labels) != T:
            raise DataError(f"{T} queries, {len(self.contexts)} contexts and {len(self.labels)} labels: "
                            "need one context and one label per query")
        d = len(self.queries[0])
        n = len(self.contexts[0])
        if d == 0 or n == 0:
            raise DataError("queries and context rows need dimension d >= 1 and contexts n >= 1 rows")
        for t, (x, E) in enumerate(zip(self.queries, self.contexts)):
            if len(x) != d:
                raise DataError(f"example {t}: query has dimension {len(x)}, expected d = {d}")
            if len(E) != n:
                raise DataError(f"example {t}: context has {len(E)} rows, expected n = {n}")
            for i, row in enumerate(E):
                if len(row) != d:
                    raise DataError(f"example {t}: context row {i} has dimension {len(row)}, expected d = {d}")
        if self.label_kind == "real":
            self.labels = tuple(to_rational(y) for y in self.labels)
        elif self.label_kind == "class":
            if self.num_classes is None or self.num_classes < 1:
                raise DataError("class labels need num_classes >= 1")
            bad = [t for t, y in enumerate(self.labels)
                   if isinstance(y, bool) or not isinstance(y, int) or not 0 <= y < self.num_classes]
            if bad:
                raise DataError(f"class labels must be integers in [0, {self.num_classes}); examples {bad[:5]} "
                                f"are not")
            self.labels = tuple(int(y) for y in self.labels)
        else:
            raise DataError(f"label_kind must be 'real' or 'class', not {self.label_kind!r}")

    @property
    def T(self) -> int:
        return len(self.queries)

    @property
    def n(self) -> int:
        return len(self.contexts[0])

    @property
    def d(self) -> int:
        return len(self.queries[0])

    def context_classes(self) -> Tuple[List[Tuple[Vec, ...]], List[int]]:
        """(the distinct context matrices, the index of each example's context among them); cached."""
        if self._classes is None:
            seen: Dict[tuple, int] = {}
            distinct: List[Tuple[Vec, ...]] = []
            key: List[int] = []
            for E in self.contexts:
                if distinct and E is distinct[key[-1]]:
                    key.append(key[-1])
                    continue
                k = tuple((x.numerator, x.denominator) for row in E for x in row)
                if k not in seen:
                    seen[k] = len(distinct)
                    distinct.append(E)
                key.append(seen[k])
            self._classes = (distinct, key)
        return self._classes

    def integer_queries(self) -> List[List[int]]:
        """Each query scaled by the lcm of its denominators (same direction, integer entries); cached."""
        if self._int_queries is None:
            out = []
            for x in self.queries:
                L = 1
                for v in x:
                    L = L * v.denominator // math.gcd(L, v.denominator)
                out.append([v.numerator * (L // v.denominator) for v in x])
            self._int_queries = out
        return self._int_queries

    @property
    def shared(self) -> bool:
        """True when every example has the same context matrix (note §3.2)."""
        return len(self.context_classes()[0]) == 1

    def sequence(self, t: int) -> Tuple[Vec, ...]:
        """Example t as an exactmem sequence: the n context rows, then the query (last token)."""
        return tuple(self.contexts[t]) + (self.queries[t],)

    def label_values(self) -> List[Fraction]:
        """Labels as rationals (a class index c becomes the rational c)."""
        return [Fraction(y) for y in self.labels]

    def to_dataset(self) -> Dataset:
        """The exactmem `Dataset`: identity labels (y,) for real labels, class indices otherwise."""
        inputs = [self.sequence(t) for t in range(self.T)]
        labels = [(y,) for y in self.labels] if self.label_kind == "real" else list(self.labels)
        return Dataset(inputs, labels, "vectors", self.seed, self.name or f"query-context T={self.T} n={self.n} "
                                                                        f"d={self.d}")

    def with_labels(self, labels: Sequence, label_kind: Optional[str] = None,
                    num_classes: Optional[int] = None) -> "QueryContextData":
        """The same inputs with other labels (e.g. planted wrong ones in tests)."""
        kind = label_kind or self.label_kind
        return QueryContextData(self.queries, self.contexts, tuple(labels), kind,
                                num_classes if num_classes is not None else self.num_classes, self.seed, self.name)


def _int_vec(rng: random.Random, d: int, lo: int, hi: int) -> Vec:
    return tuple(Fraction(rng.randint(lo, hi)) for _ in range(d))


def random_query_context(T: int, n: int, d: int, seed: int, shared: bool = False, coord_range: int = 5,
                         nonnegative: bool = False, label_kind: str = "real", num_classes: Optional[int] = None,
                         label_range: int = 100, label_den: int = 1, coord_den: int = 1) -> QueryContextData:
    """Seeded synthetic data in the spirit of the paper's ``RandomDataset`` (note §5.1).

    Coordinates are integers in [−R, R] (or [0, R] if ``nonnegative``, like the paper's
    U[0, 1] draws) with R = ``coord_range``, divided by ``coord_den`` (a finer grid: smaller
    gaps, which is what makes the saturation scale c grow, note §4.6). ``shared=True`` draws
    one context for all examples. Labels: rationals k/label_den with |k| ≤ label_range·label_den,
    or classes.
    """
    if T < 1 or n < 1 or d < 1:
        raise DataError("need T, n, d >= 1")
    rng = random.Random(seed)
    lo = 0 if nonnegative else -coord_range
    vec = lambda: tuple(x / coord_den for x in _int_vec(rng, d, lo, coord_range))  # noqa: E731
    queries = tuple(vec() for _ in range(T))
    if shared:
        E = tuple(vec() for _ in range(n))
        contexts = tuple(E for _ in range(T))
    else:
        contexts = tuple(tuple(vec() for _ in range(n)) for _ in range(T))
    if label_kind == "class":
        if num_classes is None:
            raise DataError("class labels need num_classes")
        labels = tuple(rng.randrange(num_classes) for _ in range(T))
    else:
        labels = tuple(Fraction(rng.randint(-label_range * label_den, label_range * label_den), label_den)
                       for _ in range(T))
    name = f"{'shared' if shared else 'distinct'} contexts, T={T} n={n} d={d}, seed {seed}"
    return QueryContextData(queries, contexts, labels, label_kind, num_classes, seed, name)


def note_tiny_example() -> QueryContextData:
    """The tiny test vector of note §4.7: d = 3, n = 2, T = 3, queries e₁, e₂, e₃, y = (1, −2, 3)."""
    e = lambda i: tuple(Fraction(int(i == j)) for j in range(3))  # noqa: E731
    contexts = (((1, 0, 0), (0, 1, 1)), ((1, 1, 0), (0, 0, 1)), ((2, 0, 1), (0, 1, 0)))
    return QueryContextData((e(0), e(1), e(2)), contexts, (1, -2, 3), "real", None, None,
                            "note §4.7 tiny example")


def kruskal_deficient_example() -> QueryContextData:
    """T = 5 examples with n = 3, d = 4 *outside* Assumption 1 (note §2.1): x^(2) = x^(0) + x^(1),
    so the queries' Kruskal rank is 2 < n = 3. Assumption 2 and n < d hold, and the note §4.6
    per-partition certificate holds for a non-consecutive partition (H = 2, d_h = 3), so the
    construction still memorizes — of a statement outside Theorem 1's hypotheses."""
    q = ((1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (0, 0, 1, 0), (1, 2, 3, 5))
    contexts = (((1, 0, 2, 0), (0, 1, 0, 3), (2, 1, 1, 1)), ((1, 1, 0, 0), (0, 1, 1, 0), (0, 0, 1, 1)),
                ((2, 0, 0, 1), (0, 2, 1, 0), (1, 0, 2, 0)), ((1, 2, 0, 0), (0, 0, 1, 2), (3, 0, 0, 1)),
                ((0, 1, 2, 0), (1, 0, 0, 2), (2, 2, 1, 0)))
    return QueryContextData(tuple(tuple(Fraction(v) for v in x) for x in q),
                            tuple(tuple(tuple(Fraction(v) for v in row) for row in E) for E in contexts),
                            (Fraction(1), Fraction(-2), Fraction(3), Fraction(1, 2), Fraction(5)), "real", None, None,
                            "Kruskal rank 2 < n = 3 (x2 = x0 + x1)")
