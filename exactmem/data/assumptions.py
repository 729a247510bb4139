"""Exact checks of Mahdavi et al.'s assumptions (note ``mahdavi.md`` §2.1, §2.2, §4.6).

* **Assumption 2** (context rank): rank E^(t) = n for every example, decided exactly over Q.
* **Assumption 1** (query Kruskal rank ≥ n): every n of the T queries are linearly
  independent. Deciding it is NP-hard in general (note §2.2), so there are two checks:
  the *exhaustive* one (all C(T, n) subsets, exact ranks — small sets only) and the
  paper's *randomized* subset test (note §2.2, ``check_n_kruskal_rank``) redone with
  **exact** ranks instead of float ``matrix_rank``. A dependent subset found by either is
  an exact refutation (a witness); "all sampled subsets independent" is evidence only, and
  reported as such with the number of subsets tried.
* The **per-partition certificate** of note §4.6 — what the construction really uses, for
  one head-to-subset partition: (i) each X_{S_h} has independent columns; (ii) x^(t) ∉
  span X_{S_h} for h ≥ 2 and t ∉ S_h; (iii) a unique argmax for every saturated pair
  (given the saturating directions u_h, w_h); (iv) rank E^(t) = n. O(H·T) exact tests.

Every failure raises :class:`AssumptionError` naming the assumption and the examples.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from math import comb
from typing import Dict, List, Optional, Sequence, Tuple

from .. import linalg
from .dataset import DataError
from .mahdavi_data import QueryContextData


class AssumptionError(DataError):
    """Data violate an assumption; ``assumption`` names it, ``examples`` lists the culprits (0-based)."""

    def __init__(self, assumption: str, message: str, examples: Sequence[int] = (), witness=None):
        super().__init__(f"{assumption}: {message}")
        self.assumption = assumption
        self.examples = list(examples)
        self.witness = witness


def _shown(xs: Sequence[int], k: int = 10) -> str:
    xs = list(xs)
    return ", ".join(map(str, xs[:k])) + (f", ... ({len(xs)} in all)" if len(xs) > k else "")


# ----------------------------------------------------------------------------- Assumption 2

def context_ranks(data: QueryContextData) -> List[int]:
    """Exact rank of every context matrix E^(t) (computed once for a shared context)."""
    distinct, key = data.context_classes()
    ranks = [linalg.rank(E) for E in distinct]
    return [ranks[k] for k in key]


def check_context_rank(data: QueryContextData) -> Dict[str, object]:
    """Assumption 2 (note §2.1): rank E^(t) = n for all t, exactly. Raises on failure."""
    n, d = data.n, data.d
    ranks = context_ranks(data)
    bad = [t for t, r in enumerate(ranks) if r < n]
    if bad:
        why = f" (n = {n} > d = {d}, so rank <= d < n)" if n > d else ""
        detail = "; ".join(f"rank E^({t}) = {ranks[t]}" for t in bad[:5])
        raise AssumptionError("Assumption 2 (rank E^(t) = n)",
                              f"context matrices of examples {_shown(bad)} are rank-deficient: {detail} < n = {n}"
                              f"{why}", bad)
    return {"assumption": "2", "method": "exact rank over Q", "holds": True, "n": n,
            "distinct_contexts": len(data.context_classes()[0])}


# ----------------------------------------------------------------------------- Assumption 1

def _integer_vectors(vectors: Sequence[Sequence[Fraction]]) -> List[List[int]]:
    """Each vector scaled to integers (scaling does not change independence)."""
    return [linalg.integer_column([Fraction(x) for x in v]) for v in vectors]


def _subset_rank(ints: List[List[int]], idx: Sequence[int]) -> int:
    return int(linalg.fmpz_matrix([ints[i] for i in idx]).rank())


@dataclass
class KruskalResult:
    """Outcome of a Kruskal-rank computation or test (note §2.2)."""

    r: int  # the rank tested (or computed)
    holds: Optional[bool]  # True: proved; False: refuted (witness); None: evidence only
    method: str  # "exhaustive" | "randomized"
    subsets_checked: int
    witness: Optional[Tuple[int, ...]] = None  # a dependent subset (0-based example indices)
    independent_fraction: Optional[Fraction] = None
    histogram: Dict[int, int] = field(default_factory=dict)
    seed: Optional[int] = None

    def to_dict(self) -> Dict[str, object]:
        return {"r": self.r, "holds": self.holds, "method": self.method, "subsets_checked": self.subsets_checked,
                "witness": list(self.witness) if self.witness else None,
                "independent_fraction": str(self.independent_fraction) if self.independent_fraction is not None
                else None, "histogram": dict(self.histogram), "seed": self.seed}


def kruskal_at_least(vectors: Sequence[Sequence[Fraction]], r: int, max_subsets: int = 200_000) -> KruskalResult:
    """Exhaustive exact test of "Kruskal rank ≥ r": every r-subset is linearly independent.

    Independence of all r-subsets implies it for all smaller subsets, so C(T, r) exact rank
    tests decide the question. Raises ``ValueError`` when C(T, r) exceeds ``max_subsets``.
    """
    T = len(vectors)
    if r <= 0:
        return KruskalResult(r, True, "exhaustive", 0)
    if r > T:
        raise ValueError(f"Kruskal rank >= {r} is about r-subsets of {T} vectors: need r <= T")
    total = comb(T, r)
    if total > max_subsets:
        raise ValueError(f"exhaustive Kruskal test needs C({T}, {r}) = {total} subsets > max_subsets = {max_subsets}; "
                         "use the randomized test")
    ints = _integer_vectors(vectors)
    if r > len(ints[0]):
        return KruskalResult(r, False, "exhaustive", 0, tuple(range(r)))
    checked = 0
    for idx in combinations(range(T), r):
        checked += 1
        if _subset_rank(ints, idx) < r:
            return KruskalResult(r, False, "exhaustive", checked, idx)
    return KruskalResult(r, True, "exhaustive", checked)


def kruskal_rank(vectors: Sequence[Sequence[Fraction]], max_subsets: int = 200_000) -> KruskalResult:
    """The exact Kruskal rank: the largest r such that every r-subset is independent.

    Tries r = 1, 2, ... exhaustively; the returned result has ``r`` = the Kruskal rank and,
    unless r = T, the witness = a dependent (r+1)-subset.
    """
    T = len(vectors)
    checked = 0
    for r in range(1, T + 1):
        res = kruskal_at_least(vectors, r, max_subsets)
        checked += res.subsets_checked
        if not res.holds:
            return KruskalResult(r - 1, True, "exhaustive", checked, res.witness)
    return KruskalResult(T, True, "exhaustive", checked)


def kruskal_randomized(vectors: Sequence[Sequence[Fraction]], r: int, trials: int, seed: int) -> KruskalResult:
    """The paper's randomized subset test (note §2.2) with *exact* ranks.

    Draws ``trials`` r-subsets uniformly without replacement (seeded), records the exact rank
    of each in a histogram. A subset of rank < r refutes "Kruskal rank ≥ r" (``holds=False``
    with the witness); otherwise ``holds`` is ``None`` — evidence, not proof.
    """
    T = len(vectors)
    if not 1 <= r <= T:
        raise ValueError(f"need 1 <= r <= T = {T}")
    rng = random.Random(seed)
    ints = _integer_vectors(vectors)
    hist: Dict[int, int] = {}
    witness = None
    good = 0
    for _ in range(trials):
        idx = tuple(sorted(rng.sample(range(T), r)))
        k = _subset_rank(ints, idx)
        hist[k] = hist.get(k, 0) + 1
        if k == r:
            good += 1
        elif witness is None:
            witness = idx
    frac = Fraction(good, trials) if trials else None
    return KruskalResult(r, False if witness else None, "randomized", trials, witness, frac, hist, seed)


def check_query_kruskal(data: QueryContextData, r: Optional[int] = None, exhaustive_limit: int = 20_000,
                        trials: int = 2000, seed: int = 0) -> KruskalResult:
    """Assumption 1 (note §2.1): Kruskal rank of the queries ≥ r (default r = n).

    Exhaustive (a proof) when C(T, r) ≤ ``exhaustive_limit``, randomized with exact ranks
    otherwise. Raises :class:`AssumptionError` with the dependent subset when refuted.
    """
    r = data.n if r is None else r
    r = min(r, data.T)
    if comb(data.T, r) <= exhaustive_limit:
        res = kruskal_at_least(data.queries, r, max_subsets=exhaustive_limit)
    else:
        res = kruskal_randomized(data.queries, r, trials, seed)
    if res.holds is False:
        raise AssumptionError("Assumption 1 (query Kruskal rank >= n)",
                              f"the queries of examples {list(res.witness)} are linearly dependent "
                              f"({res.method} test, {res.subsets_checked} subsets checked), so the Kruskal rank is "
                              f"< {r}", res.witness, res)
    return res


# ----------------------------------------------------------------------------- note §4.6 certificate

@dataclass
class SaturatedPair:
    """A saturated pair (head h ≥ 2, example t ∉ S_h), note §4.2 step 4 and §4.3.

    g = (w_hᵀx^(t))·E^(t)u_h has its unique maximum at row ``j``; ``gap`` = g_j − max_{i≠j} g_i.
    """

    head: int  # 0-based
    example: int
    j: int
    gap: Fraction
    wx: Fraction


def outside_span(data: QueryContextData, S: Sequence[int]) -> Tuple[List[int], List[Tuple[int, ...]]]:
    """The examples t ∉ S whose query lies in span X_S (to be empty), and an integer basis of span(X_S)^⊥.

    x ∈ span X_S iff K x = 0 for a basis K of the kernel of X_Sᵀ (= span(X_S)^⊥).
    """
    S = list(S)
    key = ("span_kernel", tuple(sorted(S)))
    if key not in data.cache:
        XS_T = [data.queries[t] for t in S]  # rows = x^(t)ᵀ, i.e. X_Sᵀ
        data.cache[key] = linalg.integer_kernel(XS_T, reduce=True) if S else [
            tuple(int(i == j) for j in range(data.d)) for i in range(data.d)]
    K = data.cache[key]
    Sset = set(S)
    others = [t for t in range(data.T) if t not in Sset]
    if not others:
        return [], K
    if not K:  # span X_S is everything
        return others, K
    iq = data.integer_queries()
    Xint = linalg.fmpz_matrix([list(c) for c in zip(*(iq[t] for t in others))])
    P = linalg.fmpz_matrix([list(k) for k in K]) * Xint
    inside = [t for col, t in enumerate(others) if all(P[i, col] == 0 for i in range(P.nrows()))]
    return inside, K


def saturated_pairs(data: QueryContextData, head: int, S: Sequence[int], u: Sequence[Fraction],
                    w: Sequence[Fraction], Eu: Optional[Sequence[Sequence[Fraction]]] = None,
                    wx: Optional[Sequence[Fraction]] = None) -> List[SaturatedPair]:
    """Condition (iii) of note §4.6 for one head: the unique argmax of g for every t ∉ S_h.

    ``Eu[t]`` and ``wx[t]`` may pass precomputed E^(t)u and w_hᵀx^(t). Raises
    :class:`AssumptionError` naming the pair and the tied rows when g has a tie.
    """
    Sset = set(S)
    out = []
    for t in range(data.T):
        if t in Sset:
            continue
        x, E = data.queries[t], data.contexts[t]
        wxt = wx[t] if wx is not None else sum((a * b for a, b in zip(w, x)), Fraction(0))
        eu = Eu[t] if Eu is not None else [sum((a * b for a, b in zip(row, u)), Fraction(0)) for row in E]
        if wxt != 0:  # g = wx·Eu: its argmax is that of ±Eu; decide ties before building g
            top = max(eu) if wxt > 0 else min(eu)
            if sum(1 for v in eu if v == top) == 1:
                j = eu.index(top)
                rest = [v for i, v in enumerate(eu) if i != j]
                gap = abs(wxt) * min(abs(top - v) for v in rest) if rest else Fraction(1)
                out.append(SaturatedPair(head, t, j, gap, wxt))
                continue
        wx_ = wxt
        g = [wx_ * v for v in eu]
        top = max(g)
        arg = [i for i, v in enumerate(g) if v == top]
        if len(arg) > 1:
            why = (f"w_{head + 1}ᵀx^({t}) = 0, so every row ties" if wx_ == 0 else
                   f"rows {arg} of E^({t}) tie at g = {top}")
            raise AssumptionError("note §4.6 (iii) unique argmax in the saturating direction",
                                  f"saturated pair (head {head + 1}, example {t}): g = (w_hᵀx)·E u_h has no unique "
                                  f"maximum: {why}; choose another u_{head + 1}", [t], {"head": head, "rows": arg})
        rest = [v for i, v in enumerate(g) if i != arg[0]]
        gap = top - max(rest) if rest else Fraction(1)
        out.append(SaturatedPair(head, t, arg[0], gap, wx_))
    return out


def partition_certificate(data: QueryContextData, partition: Sequence[Sequence[int]],
                          u: Optional[Dict[int, Sequence[Fraction]]] = None,
                          w: Optional[Dict[int, Sequence[Fraction]]] = None) -> Dict[str, object]:
    """The cheaper certificate of note §4.6 for one partition (0-based heads and examples).

    Checks (iv) rank E^(t) = n, (i) X_{S_h} independent, (ii) x^(t) ∉ span X_{S_h} for
    h ≥ 2, t ∉ S_h, and, when saturating directions ``u[h]``, ``w[h]`` are given, (iii) the
    unique argmax of every saturated pair. Raises :class:`AssumptionError` on the first
    failure; returns a summary (number of exact tests) otherwise.
    """
    check_context_rank(data)
    tests = len(data.context_classes()[0])
    for h, S in enumerate(partition):
        S = list(S)
        if S:
            iq = data.integer_queries()
            r = int(linalg.fmpz_matrix([iq[t] for t in S]).rank())
            tests += 1
            if r < len(S):
                raise AssumptionError("note §4.6 (i) independent queries per head",
                                      f"head {h + 1}: the queries of examples {S} are linearly dependent "
                                      f"(rank {r} < {len(S)})", S)
        if h == 0:
            continue
        inside, _ = outside_span(data, S)
        tests += data.T - len(S)
        if inside:
            raise AssumptionError("note §4.6 (ii) queries outside the head's span",
                                  f"head {h + 1}: the queries of examples {_shown(inside)} lie in the span of the "
                                  f"queries of its active examples {S}, so they cannot be saturated", inside)
        if u is not None and w is not None and h in u:
            saturated_pairs(data, h, S, u[h], w[h])
            tests += data.T - len(S)
    return {"certificate": "note §4.6", "holds": True, "exact_tests": tests, "heads": len(partition)}
