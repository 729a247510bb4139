"""Exact checks of Mahdavi et al.'s assumptions (note ``mahdavi.md`` §2.1, §2.2, §4.6).

* **Assumption 2** (context rank): rank E^(t) = n for every example, decided exactly over Q.
* **Assumption 1** (query Kruskal rank ≥ n): every n of the T queries are linearly
  independent. Deciding it is NP-hard in general (note §2.2), so there are two checks:
  the *exhaustive* one (all C(T, n) subsets, exact ranks — small sets only) and the
  paper's *randomized* subset test (note §2.2, ``check_n_kruskal_rank``) redone with
  **exact** ranks instead of float ``matrix_rank``. A dependent subset found by either is
  an exact refutation (a witness); "all sampled subsets independent" is evidence only, and
  reported as such with the number of subsets tried.
* `kruskal_rank_by_kernel`: the exact Kruskal rank through the kernel of the query
  matrix, C(T, m − 1) rank tests for a kernel of dimension m — polynomial when T − d is
  small (one rank computation when T ≤ d in general position).
* `theorem_hypotheses`: the hypotheses of Theorem 1 (Assumption 1, Assumption 2,
  n < d) evaluated on an instance *without raising*, each as (name, holds, detail) with
  holds True (proved), False (refuted, witness in the detail) or None (not decided: only
  the randomized test was affordable) — shown in ``certify``'s verdict table.
* The **per-partition certificate** of note §4.6 — what the construction really uses, for
  one head-to-subset partition: (i) each X_{S_h} has independent columns; (ii) x^(t) ∉
  span X_{S_h} for h ≥ 2 and t ∉ S_h; (iii) a unique argmax for every saturated pair
  (given the saturating directions u_h, w_h); (iv) rank E^(t) = n. O(H·T) exact tests.

Every failure raises `AssumptionError` naming the assumption and the examples.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from math import comb
from typing import Dict, List, Optional, Sequence, Tuple

from ..arith import linalg
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
    method: str  # "exhaustive" | "randomized" | "kernel"
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


def _normal(rows: List[List[int]]) -> Optional[List[int]]:
    """The normal of the hyperplane spanned by m − 1 integer vectors of Z^m; None if they are dependent."""
    M = linalg.fmpz_matrix(rows)
    N, nullity = M.nullspace()
    if nullity != 1:
        return None
    return [int(N[i, 0]) for i in range(N.nrows())]


def kruskal_rank_by_kernel(vectors: Sequence[Sequence[Fraction]], max_hyperplanes: int = 200_000
                           ) -> Optional[KruskalResult]:
    """The exact Kruskal rank through the kernel of X = [x_1 … x_T] (a dual of the subset search).

    With B (T × m) a basis of ker X, a subset S is dependent iff the rows b_t, t ∉ S, lie in a
    hyperplane of Q^m. So Kruskal rank = T − N* − 1, where N* is the largest number of rows
    b_t in one hyperplane; a largest hyperplane is spanned by m − 1 of the rows (m ≥ 2), so
    C(T, m − 1) exact rank tests decide it — cheap when T is not much larger than rank X
    (and m = 0, T ≤ d in general position, takes a single rank computation). Returns None
    when C(T, m − 1) exceeds ``max_hyperplanes``; the witness is a smallest dependent subset.
    """
    T = len(vectors)
    ints = _integer_vectors(vectors)
    K = linalg.integer_kernel([list(c) for c in zip(*ints)], reduce=False)  # c ∈ Z^T with X c = 0
    m = len(K)
    if m == 0:
        return KruskalResult(T, True, "kernel", 1)
    if comb(T, m - 1) > max_hyperplanes:
        return None
    B = [[k[t] for k in K] for t in range(T)]  # row b_t of the T × m kernel basis
    Bm = linalg.fmpz_matrix(B)
    best: Tuple[int, ...] = tuple(t for t in range(T) if not any(B[t]))  # m = 1: the hyperplane {0}
    checked = 1 if m == 1 else 0
    if m >= 2:
        for idx in combinations(range(T), m - 1):
            checked += 1
            nu = _normal([B[t] for t in idx])
            if nu is None:
                continue
            P = Bm * linalg.fmpz_matrix([[v] for v in nu])
            inside = tuple(t for t in range(T) if P[t, 0] == 0)
            if len(inside) > len(best):
                best = inside
    dependent = tuple(t for t in range(T) if t not in set(best))
    return KruskalResult(T - len(best) - 1, True, "kernel", checked, dependent)


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
    otherwise. Raises `AssumptionError` with the dependent subset when refuted.
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


# ----------------------------------------------------------------------------- Theorem 1's hypotheses

ASSUMPTION_1 = "Assumption 1 (Kruskal rank of the queries >= n)"
ASSUMPTION_2 = "Assumption 2 (rank E^(t) = n)"
N_BELOW_D = "n < d"
HYPOTHESES_EXHAUSTIVE_LIMIT = 100_000  # C(T, n) subsets decided exhaustively (about 12 µs each)
_A1_MEMO: Dict[tuple, Tuple[Optional[bool], str]] = {}  # the same data built by several theorems: decide once


def _kruskal_rank_below(vectors, r: int, limit: int) -> Optional[int]:
    """The exact Kruskal rank when it is < r and every C(T, r') (r' < r) is within ``limit``; else None."""
    for r2 in range(1, r):
        if comb(len(vectors), r2) > limit:
            return None
        if not kruskal_at_least(vectors, r2, max_subsets=limit).holds:
            return r2 - 1
    return r - 1


def assumption1_status(data: QueryContextData, exhaustive_limit: int = HYPOTHESES_EXHAUSTIVE_LIMIT,
                       trials: int = 2000, seed: int = 0) -> Tuple[Optional[bool], str]:
    """Assumption 1 (note §2.1), decided exactly by `kruskal_rank_by_kernel` when C(T, m − 1)
    ≤ ``exhaustive_limit`` (m = T − rank of the queries), else exhaustively when C(T, r) ≤
    ``exhaustive_limit`` (r = min(n, T)). Otherwise the paper's randomized test with exact
    ranks: a dependent subset refutes (False), "all sampled subsets independent" is evidence only (None, not decided). For
    T < n the assumption is read as "Kruskal rank ≥ min(n, T)" (all T queries independent)."""
    key = (tuple(data.queries), data.n, exhaustive_limit, trials, seed)
    if key not in _A1_MEMO:
        if len(_A1_MEMO) >= 8:
            _A1_MEMO.clear()
        _A1_MEMO[key] = _assumption1(data, exhaustive_limit, trials, seed)
    return _A1_MEMO[key]


def _assumption1(data: QueryContextData, exhaustive_limit: int, trials: int, seed: int) -> Tuple[Optional[bool], str]:
    n, T = data.n, data.T
    r = min(n, T)
    total = comb(T, r)
    short = f" (T = {T} < n: read as Kruskal rank >= min(n, T) = {T})" if T < n else ""
    dual = kruskal_rank_by_kernel(data.queries, max_hyperplanes=exhaustive_limit)
    if dual is not None:
        k = dual.subsets_checked
        how = (f"all T = {T} queries linearly independent, exact rank" if dual.r == T and dual.method == "kernel"
               and k == 1 else f"kernel method, {k} hyperplane{'s' if k != 1 else ''}, exact ranks")
        if dual.r >= r:
            return True, f"exact: Kruskal rank {dual.r} >= {r} ({how}){short}"
        return False, (f"Kruskal rank {dual.r} < n = {n}: the queries of examples {list(dual.witness)} are linearly "
                       f"dependent ({how}){short}")
    if total <= exhaustive_limit:
        res = kruskal_at_least(data.queries, r, max_subsets=exhaustive_limit)
        if res.holds:
            return True, (f"exhaustive: all C({T}, {r}) = {total} subsets of {r} queries independent "
                          f"(exact ranks){short}")
        kr = _kruskal_rank_below(data.queries, r, exhaustive_limit)
        rank = f"Kruskal rank {kr} < n = {n}" if kr is not None else f"Kruskal rank < {r}"
        return False, (f"{rank}: the queries of examples {list(res.witness)} are linearly dependent "
                       f"(exhaustive, exact ranks){short}")
    res = kruskal_randomized(data.queries, r, trials, seed)
    if res.holds is False:
        return False, (f"Kruskal rank < n = {n}: the queries of examples {list(res.witness)} are linearly dependent "
                       f"(randomized test, seed {seed}, exact ranks)")
    m = T - linalg.rank(data.queries)
    return None, (f"not decided: C({T}, {r}) = {total} subsets and C({T}, {m - 1}) kernel hyperplanes (kernel "
                  f"dimension {m}) exceed the exhaustive limit {exhaustive_limit}; "
                  f"the randomized test (seed {seed}) found all {trials} sampled subsets independent (exact ranks) "
                  "- evidence only")


def assumption2_status(data: QueryContextData) -> Tuple[bool, str]:
    """Assumption 2 (note §2.1): rank E^(t) = n for every t, decided exactly; never raises."""
    n = data.n
    ranks = context_ranks(data)
    bad = [t for t, r in enumerate(ranks) if r < n]
    if bad:
        return False, "; ".join(f"rank E^({t}) = {ranks[t]}" for t in bad[:5]) + f" < n = {n} (examples {_shown(bad)})"
    distinct = len(data.context_classes()[0])
    return True, f"exact: rank E^(t) = n = {n} for all {data.T} examples ({distinct} distinct contexts)"


def theorem_hypotheses(data: QueryContextData, exhaustive_limit: int = HYPOTHESES_EXHAUSTIVE_LIMIT,
                       trials: int = 2000, seed: int = 0) -> List[Tuple[str, Optional[bool], str]]:
    """Theorem 1's hypotheses (note §2.1, §3.1) on ``data``: Assumption 1, Assumption 2 and n < d,
    each as (name, holds, detail). Exact, except Assumption 1 beyond ``exhaustive_limit``
    subsets, which is refuted with a witness or left undecided (None)."""
    a1 = assumption1_status(data, exhaustive_limit, trials, seed)
    a2 = assumption2_status(data)
    nd = (data.n < data.d, f"n = {data.n} {'<' if data.n < data.d else '>='} d = {data.d}")
    return [(ASSUMPTION_1, *a1), (ASSUMPTION_2, *a2), (N_BELOW_D, *nd)]


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
    `AssumptionError` naming the pair and the tied rows when g has a tie.
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
    unique argmax of every saturated pair. Raises `AssumptionError` on the first
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
