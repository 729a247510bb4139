"""Mahdavi, Liao & Thrampoulidis: one multi-head attention layer memorizes T = H(k−1)+1 examples.

The construction of note ``mahdavi.md`` §4 (k = min(n, d_h)), built in exact rational
arithmetic for a concrete query/context dataset:

1. **Assignment** (§4.1): a partition S_1, …, S_H of the examples, |S_1| = k, |S_h| = k − 1
   (``exactmem.assign``; checked with the per-partition certificate of §4.6).
2. **Saturating part** (§4.2 step 4), heads h ≥ 2: an integer w_h ⊥ span X_{S_h} with
   w_hᵀx^(t) ≠ 0 for t ∉ S_h (a random combination of an LLL-reduced integer kernel basis),
   and an integer u_h such that g_{h,t} = (w_hᵀx^(t))·E^(t)u_h has a unique maximum j_h(t).
3. **Interpolating part** (§4.2 steps 2–3), W0_h = L_h R_h of rank |S_h|:
   * ``design="solve"`` (the note verbatim): designed logits a_{h,t} (small integers, or
     given), v_{h,t} = E^(t)ᵀ(E^(t)E^(t)ᵀ)⁻¹a_{h,t}, W0_h = V_h (X_SᵀX_S)⁻¹X_Sᵀ, so
     E^(t)W0_h x^(t) = a_{h,t} for t ∈ S_h;
   * ``design="factored"``: the same family parametrised by its factors — L_h, R_h random
     in {−1, 0, 1}, scaled by a power of two so the active logits are O(1); the designed
     logits are then a_{h,t} = E^(t)W0_h x^(t). Weights W_Q, W_K are then small dyadics and
     c, the only large number, shows how many bits saturation costs.
4. **Key–query matrices** M_h(c) = W0_h + c·u_h w_hᵀ (h ≥ 2), M_1 = W0_1, factored as
   M_h = W_Kᵀ W_Q with d_h rows: W_Q = [R_h; w_hᵀ; 0], W_K = [L_hᵀ; c·u_hᵀ; 0].
5. **Scale c** (§4.4): c ≥ max over saturated pairs of
   [ln(2(n−1)·B_max·√N_sat / σ) + 2‖r_{h,t}‖_∞] / Δ_{h,t}, where σ is a *certified* lower
   bound on σ_min(Z^∞) (ball arithmetic, ``linalg.sigma_min_lower``), so rank Z(c) = T is
   proved (Weyl), not hoped for. c is the least integer ≥ that bound.
6. **Readout** (§4.5): A Z(c) = Y. Softmax values are transcendental, so A is computed from
   the enclosure of Z(c), rounded to a dyadic grid 2^−q, and q is increased until the
   residual max_t |A z_t − y_t| is certified ≤ ε/2; the certificate states ε.

**Modes.** ``mode="softmax"``: the layer of the paper, certified by the independent checker
with rational intervals — identity decode with ``error_bound`` ε for real labels, argmax
decode for classes. ``mode="hardmax"``: the saturation limit, exact in Q — active pairs get
designed logits e_σ (a single designed context token, hardmax picks it), saturated pairs the
hardmax of c·g + r, which equals the limit token once c·(g_j − g_i) > r_i − r_j (checked
exactly; c is the least such integer). Z is rational, its rank T is checked exactly, the
readout is solved exactly and the labels come out exactly. With ``design="solve"`` the
designed tokens σ are chosen following the proof of §4.4 (each new active column avoids the
span of the previous ones; searched modulo a prime, confirmed exactly over Q), so the rank is
guaranteed; with ``design="factored"`` the active columns are the hardmax of the low-bit
W0's logits (uniform over ties), and the rank is only checked (redrawn if short).

Exactmem orientation: a head's score of key e for query x is (W_K e)·(W_Q x) = eᵀ W_Kᵀ W_Q x,
so the note's W_K^h, W_Q^h ∈ R^{d×d_h} are exactmem's ``WK``ᵀ, ``WQ``ᵀ (d_h × d), and
M_h = W_K^h(W_Q^h)ᵀ = ``WK``ᵀ``WQ``. Values: ``WV`` (d_v × d) is (W_V^h)ᵀ, ``WO`` (d_o × d_v)
is W_O^h, so A_h = W_O^h(W_V^h)ᵀ = ``WO``·``WV``. Scalar labels use d_v = d_o = 1; classes add
a fixed decoder ``Affine`` (C × 1) with scores j·y − j²/2, whose argmax is the integer nearest
to the interpolated scalar y.

This module builds; it never decides whether the model memorizes (the checker does). The
rank and scale certificates above are facts *about the construction* (note §4.4), reported in
the info.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import linalg
from ..assign import PartitionChoice, capacity as _capacity, choose_partition, validate_partition
from ..data.assumptions import (AssumptionError, SaturatedPair, check_context_rank, outside_span,
                                partition_certificate, saturated_pairs)
from ..data.mahdavi_data import QueryContextData
from ..model.layers import Affine, Attention, Head, Model
from ..numbers import bits

Vec = Tuple[Fraction, ...]
Matrix = Tuple[Tuple[Fraction, ...], ...]

MODES = ("softmax", "hardmax")
DESIGNS = ("solve", "factored")
DEFAULT_EPS = Fraction(1, 2 ** 20)
CLASS_EPS = Fraction(1, 4)  # |y_out − class| ≤ 1/4 < 1/2 keeps the nearest-integer decoder right


class ConstructionError(ValueError):
    """The construction cannot be completed for these data / parameters; the message says why."""


# ----------------------------------------------------------------------------- formulas

def rank_budget(n: int, d_h: int) -> int:
    """k = min(n, d_h): the rank available to a head's key–query matrix (note §3.1, §4)."""
    return min(n, d_h)


def capacity(H: int, n: int, d_h: int) -> int:
    """T = H(min(n, d_h) − 1) + 1 (note §3.1; unverified form, achieved by §4)."""
    return _capacity(H, rank_budget(n, d_h))


def paper_parameter_count(H: int, d: int, d_h: int, d_v: int = 1, d_o: int = 1) -> int:
    """P = H(2·d·d_h + d·d_v + d_v·d_o) (note §1.2)."""
    return H * (2 * d * d_h + d * d_v + d_v * d_o)


# ----------------------------------------------------------------------------- exact helpers

def _sq_norm(row: Sequence[Fraction]) -> Fraction:
    """‖row‖², computed on integers over the row's common denominator."""
    L = math.lcm(*(x.denominator for x in row))
    return Fraction(sum((x.numerator * (L // x.denominator)) ** 2 for x in row), L * L)


def _dot(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return sum((x * y for x, y in zip(a, b) if x and y), Fraction(0))


class _Contexts:
    """The context matrices as integer flint matrices (E^(t) = N_g / L_g, one per distinct context)."""

    def __init__(self, data: QueryContextData):
        self.data = data
        distinct, key = data.context_classes()
        self.key: List[int] = list(key)
        self.rows: List[Tuple[Vec, ...]] = list(distinct)
        self.mats: List[Any] = []
        self.dens: List[int] = []
        for E in distinct:
            L = math.lcm(*(x.denominator for row in E for x in row))
            self.mats.append(linalg.fmpz_matrix([[x.numerator * (L // x.denominator) for x in row] for row in E]))
            self.dens.append(L)
        self._arbT: Dict[Any, Any] = {}

    def times_columns(self, Y: Sequence[Vec]) -> List[Vec]:
        """[E^(t) y_t for t] for d-vectors y_t, exactly (integer products over common denominators)."""
        out: List[Optional[Vec]] = [None] * len(Y)
        groups: Dict[int, List[int]] = {}
        for t in range(len(Y)):
            groups.setdefault(self.key[t], []).append(t)
        for g, ts in groups.items():
            D = math.lcm(*(x.denominator for t in ts for x in Y[t]))
            B = linalg.fmpz_matrix([list(c) for c in zip(*([x.numerator * (D // x.denominator) for x in Y[t]]
                                                           for t in ts))])
            P = self.mats[g] * B
            den = D * self.dens[g]
            ent = [int(v) for v in P.entries()]
            nc = P.ncols()
            for col, t in enumerate(ts):
                out[t] = tuple(Fraction(ent[i * nc + col], den) for i in range(P.nrows()))
        return out  # type: ignore[return-value]

    def arb_transpose(self, t: int):
        """E^(t)ᵀ as an arb_mat (d × n), cached per distinct context and precision."""
        from flint import ctx

        k = (self.key[t], ctx.prec)
        if k not in self._arbT:
            self._arbT[k] = linalg.arb_matrix(linalg.transpose(self.rows[self.key[t]]))
        return self._arbT[k]


_COLS_CACHE: Dict[int, Tuple[Any, Any, int]] = {}


def _integer_columns(X: Sequence[Vec]):
    """(fmpz matrix with columns D·x, D) for a list of rational vectors; the last few inputs are
    cached by identity (the query list is multiplied by every head's factors)."""
    hit = _COLS_CACHE.get(id(X))
    if hit is not None and hit[0] is X:
        return hit[1], hit[2]
    D = math.lcm(*(v.denominator for x in X for v in x))
    Xi = linalg.fmpz_matrix([list(c) for c in zip(*([v.numerator * (D // v.denominator) for v in x] for x in X))])
    if len(_COLS_CACHE) > 8:
        _COLS_CACHE.clear()
    _COLS_CACHE[id(X)] = (X, Xi, D)
    return Xi, D


def _matmul_cols(A: Matrix, X: Sequence[Vec]) -> List[Vec]:
    """[A x for x in X] exactly (A r × d): integer products over common denominators."""
    if not A:
        return [() for _ in X]
    LA = math.lcm(*(x.denominator for row in A for x in row))
    Ai = linalg.fmpz_matrix([[x.numerator * (LA // x.denominator) for x in row] for row in A])
    Xi, D = _integer_columns(X)
    P = Ai * Xi
    ent = [int(v) for v in P.entries()]
    nr, nc, den = P.nrows(), P.ncols(), LA * D
    return [tuple(Fraction(ent[i * nc + j], den) for i in range(nr)) for j in range(nc)]


# ----------------------------------------------------------------------------- the plan

@dataclass
class HeadPlan:
    """One head's pieces (0-based ``index``): W0 = L R, the saturating pair (u, w), exact logits."""

    index: int
    S: Tuple[int, ...]
    L: Matrix  # d × |S|
    R: Matrix  # |S| × d
    u: Optional[Vec] = None
    w: Optional[Vec] = None
    designed: Dict[int, Vec] = field(default_factory=dict)  # a_{h,t}, t ∈ S
    sat: Dict[int, SaturatedPair] = field(default_factory=dict)  # t ∉ S (h ≥ 2)
    r: List[Vec] = field(default_factory=list)  # r_{h,t} = E^(t) W0_h x^(t), every t
    g: Dict[int, Vec] = field(default_factory=dict)  # g_{h,t} = (wᵀx) E^(t) u, t ∉ S
    sigma: Dict[int, int] = field(default_factory=dict)  # hardmax design: designed token per active t


@dataclass
class Plan:
    data: QueryContextData
    H: int
    d_h: int
    k: int
    partition: List[List[int]]
    heads: List[HeadPlan]
    ctx: _Contexts
    mode: str
    design: str


# ----------------------------------------------------------------------------- checks

def check_instance(data: QueryContextData, H: int, d_h: int) -> Dict[str, Any]:
    """Preconditions: Assumption 2 exactly, T ≤ H(k−1)+1, and k ≤ d (note §4.2 needs |S_h| + 1 ≤ d)."""
    if H < 1 or d_h < 1:
        raise ConstructionError(f"need H >= 1 heads and head dimension d_h >= 1 (got H = {H}, d_h = {d_h})")
    rep = check_context_rank(data)
    k = rank_budget(data.n, d_h)
    cap = capacity(H, data.n, d_h)
    if data.T > cap:
        raise ConstructionError(f"T = {data.T} examples exceed the construction's capacity H(min(n,d_h)-1)+1 = {cap} "
                                f"(H = {H}, n = {data.n}, d_h = {d_h}); with a shared context no weights can do "
                                f"better (note §3.2)")
    if k > data.d:
        raise ConstructionError(f"k = min(n, d_h) = {k} > d = {data.d}: a head's {k} queries cannot be independent")
    return rep


# ----------------------------------------------------------------------------- §4.2 step 4

def saturating_query_direction(data: QueryContextData, head: int, S: Sequence[int], rng: random.Random,
                               tries: int = 50) -> Vec:
    """w_h ⊥ span X_{S_h}, integer, with w_hᵀx^(t) ≠ 0 for every t ∉ S_h (note §4.2 step 4).

    A random small-integer combination of an LLL-reduced integer basis of span(X_S)^⊥ (the
    coefficient range doubles every 4 draws). Raises
    :class:`AssumptionError` (note §4.6 (ii)) when some x^(t), t ∉ S_h, lies in span X_S.
    """
    inside, K = outside_span(data, S)
    if inside:
        raise AssumptionError("note §4.6 (ii) queries outside the head's span",
                              f"head {head + 1}: the queries of examples {inside[:10]} lie in the span of the queries "
                              f"of its active examples {list(S)}, so no saturating direction exists", inside)
    others = [t for t in range(data.T) if t not in set(S)]
    iq = data.integer_queries()
    for attempt in range(tries):
        s = 2 ** (attempt // 4)  # wider coefficients when many examples must avoid w^⊥
        coef = [rng.randint(-s, s) if rng.random() < 0.7 else 0 for _ in K]
        if not any(coef):
            coef[rng.randrange(len(K))] = 1
        wi = [sum(c * k[i] for c, k in zip(coef, K)) for i in range(data.d)]
        if all(sum(a * b for a, b in zip(wi, iq[t]) if a) != 0 for t in others):
            return tuple(Fraction(v) for v in wi)
    raise ConstructionError(f"head {head + 1}: no saturating query direction w found in {tries} draws")


def saturating_key_direction(data: QueryContextData, head: int, S: Sequence[int], w: Vec, rng: random.Random,
                             tries: int = 24, span: int = 3, ctx: Optional["_Contexts"] = None
                             ) -> Tuple[Vec, List[SaturatedPair]]:
    """u_h with a unique argmax of g_{h,t} = (w_hᵀx^(t))·E^(t)u_h for every t ∉ S_h (note §4.2 step 4).

    Random integer vectors in [−s, s]^d, redrawn on ties (integer data do produce ties); the
    range s starts at ``span`` and doubles with every draw, since many saturated pairs need a
    finer set of directions to avoid every tie (each doubling costs one bit in W_K).
    """
    last: Optional[AssumptionError] = None
    ctx = ctx or _Contexts(data)
    wx = [col[0] for col in _matmul_cols((tuple(w),), data.queries)]
    for attempt in range(tries):
        s = span * 2 ** attempt
        u = tuple(Fraction(rng.randint(-s, s)) for _ in range(data.d))
        try:
            return u, saturated_pairs(data, head, S, u, w, ctx.times_columns([u] * data.T), wx)
        except AssumptionError as e:
            last = e
    raise ConstructionError(f"head {head + 1}: every one of {tries} random u_h gave a tie ({last})")


# ----------------------------------------------------------------------------- §4.2 steps 2–3

def interpolating_part_solve(data: QueryContextData, S: Sequence[int], designed: Dict[int, Vec]) -> Tuple[Matrix, Matrix]:
    """W0 = V (X_SᵀX_S)⁻¹ X_Sᵀ with v_t = E^(t)ᵀ(E^(t)E^(t)ᵀ)⁻¹ a_t (note §4.2 steps 2–3): factors (L, R).

    L = V (X_SᵀX_S)⁻¹ (d × |S|), R = X_Sᵀ (|S| × d); then W0 x^(t) = v_t for t ∈ S.
    """
    S = list(S)
    if not S:
        return (), ()
    XS_T = tuple(data.queries[t] for t in S)  # |S| × d
    G = linalg.gram(linalg.transpose(XS_T))
    if linalg.rank(G) < len(S):
        raise AssumptionError("note §4.6 (i) independent queries per head",
                              f"the queries of examples {S} are linearly dependent", S)
    V = [linalg.least_norm_solution(data.contexts[t], designed[t]) for t in S]  # columns v_t
    Ginv = linalg.inverse(G)
    L = linalg.matmul(linalg.transpose(V), Ginv)  # d × |S|
    return L, XS_T


def interpolating_part_values(data: QueryContextData, S: Sequence[int], V: Dict[int, Vec]) -> Tuple[Matrix, Matrix]:
    """W0 = V (X_SᵀX_S)⁻¹ X_Sᵀ for given values v_t = W0 x^(t), t ∈ S (note §4.2 step 3): (L, R)."""
    S = list(S)
    if not S:
        return (), ()
    XS_T = tuple(data.queries[t] for t in S)
    G = linalg.gram(linalg.transpose(XS_T))
    if linalg.rank(G) < len(S):
        raise AssumptionError("note §4.6 (i) independent queries per head",
                              f"the queries of examples {S} are linearly dependent", S)
    L = linalg.matmul(linalg.transpose([V[t] for t in S]), linalg.inverse(G))
    return L, XS_T


def argmax_vector(E: Sequence[Vec], sigma: int, rng: random.Random, tries: int = 400) -> Vec:
    """A small integer v with E v having its unique maximum at row ``sigma`` (designed logits
    a = E v for a one-hot design, without the (EEᵀ)⁻¹ denominators of the least-norm solution);
    falls back to v = Eᵀ(EEᵀ)⁻¹e_σ."""
    d = len(E[0])
    for attempt in range(tries):
        s = 1 + attempt // 50
        v = tuple(Fraction(rng.randint(-s, s)) for _ in range(d))
        a = [_dot(row, v) for row in E]
        top = max(a)
        if a[sigma] == top and a.count(top) == 1:
            return v
    return linalg.least_norm_solution(E, _one_hot(len(E), sigma))


def interpolating_part_factored(data: QueryContextData, S: Sequence[int], rng: random.Random,
                                target: int = 2, nnz: int = 3, ctx: Optional["_Contexts"] = None
                                ) -> Tuple[Matrix, Matrix]:
    """W0 = λ·L'R' with R' random in {−1, 0, 1}, L' with ``nnz`` random ±1 entries per column,
    and λ = 2^−e so that the active logits E^(t)W0x^(t), t ∈ S, are at most ``target`` in
    absolute value (a low-bit parametrisation of the family of note §4.2). L' is sparse
    because W_K = [λL'ᵀ; c·uᵀ] is applied to every context token."""
    S = list(S)
    if not S:
        return (), ()
    d, r = data.d, len(S)
    for _ in range(20):
        Lt = [[Fraction(0)] * d for _ in range(r)]  # L'ᵀ: r sparse rows (the key side)
        for row in Lt:
            for i in rng.sample(range(d), min(d, nnz)):
                row[i] = Fraction(rng.choice((-1, 1)))
        Lp = linalg.transpose(Lt)
        Rp = tuple(tuple(Fraction(rng.choice((-1, 0, 1))) for _ in range(d)) for _ in range(r))
        if linalg.rank(Lp) == r and linalg.rank(Rp) == r:
            break
    else:
        raise ConstructionError("could not draw full-rank {-1,0,1} factors")
    W0x = _matmul_cols(Lp, _matmul_cols(Rp, [data.queries[t] for t in S]))
    sub = ctx or _Contexts(data)
    full = [W0x[S.index(t)] if t in S else tuple(Fraction(0) for _ in range(d)) for t in range(data.T)]
    act = sub.times_columns(full)
    top = max((abs(x) for t in S for x in act[t]), default=0)
    e = 0
    while top > target * (2 ** e):
        e += 1
    lam = Fraction(1, 2 ** e)
    return tuple(tuple(x * lam for x in row) for row in Lp), Rp


def random_designed_logits(n: int, rng: random.Random, span: int = 1) -> Vec:
    """Designed logits a_{h,t}: small random integers (note §4.2 step 2), not all equal."""
    while True:
        a = tuple(Fraction(rng.randint(-span, span)) for _ in range(n))
        if len(set(a)) > 1 or n == 1:
            return a


def _offsets(plan_ctx: _Contexts, data: QueryContextData, L: Matrix, R: Matrix) -> List[Vec]:
    """r_{h,t} = E^(t) W0_h x^(t) for every t, exactly."""
    if not L:
        return [tuple(Fraction(0) for _ in range(data.n)) for _ in range(data.T)]
    Rx = _matmul_cols(R, data.queries)
    W0x = _matmul_cols(L, Rx)
    return plan_ctx.times_columns(W0x)


# ----------------------------------------------------------------------------- Z matrices

def _softmax_arb(logits: Sequence[Fraction]):
    from flint import arb

    top = max(logits)
    e = [linalg.arb_of(x - top).exp() for x in logits]
    s = sum(e, arb(0))
    return [x / s for x in e]


def _hardmax(logits: Sequence[Fraction]) -> List[Fraction]:
    top = max(logits)
    idx = [i for i, x in enumerate(logits) if x == top]
    return [Fraction(1, len(idx)) if x == top else Fraction(0) for x in logits]


def logits(plan: Plan, h: int, t: int, c: Optional[Fraction]) -> Optional[Vec]:
    """ℓ_{h,t}(c) = r_{h,t} + c·g_{h,t} exactly (g = 0 on active pairs and for head 1);
    ``c=None`` (the limit) returns ``None`` for saturated pairs."""
    hp = plan.heads[h]
    if t in hp.g:
        if c is None:
            return None
        return tuple(a + c * b for a, b in zip(hp.r[t], hp.g[t]))
    return hp.r[t]


def attention_weights(plan: Plan, c: Optional[Fraction]) -> List[List[list]]:
    """s_{h,t}(c): arb balls (softmax mode) or Fractions (hardmax mode); ``c=None`` is the
    limit c → ∞ (saturated pairs become e_{j_h(t)}, note §4.3). Returns ``[t][h]``."""
    out = []
    for t in range(plan.data.T):
        row = []
        for h, hp in enumerate(plan.heads):
            ell = logits(plan, h, t, c)
            if ell is None:
                j = hp.sat[t].j
                row.append([Fraction(int(i == j)) for i in range(plan.data.n)])
            elif plan.mode == "hardmax":
                row.append(_hardmax(ell))
            else:
                row.append(_softmax_arb(ell))
        out.append(row)
    return out


def feature_matrix_arb(plan: Plan, c: Optional[Fraction]):
    """Z(c) (note §1.4) as an arb_mat (Hd × T): z_{h,t} = E^(t)ᵀ s_{h,t}(c); ``c=None`` gives Z^∞."""
    from flint import arb_mat

    d, H, T = plan.data.d, plan.H, plan.data.T
    Z = arb_mat(H * d, T)
    W = attention_weights(plan, c)
    for t in range(T):
        Et = plan.ctx.arb_transpose(t)
        for h in range(H):
            s = W[t][h]
            col = arb_mat([[x if not isinstance(x, Fraction) else linalg.arb_of(x)] for x in s])
            z = Et * col
            for i in range(d):
                Z[h * d + i, t] = z[i, 0]
    return Z


def feature_matrix_exact(plan: Plan, c: Optional[Fraction]) -> List[List[Fraction]]:
    """Z(c) exactly (hardmax mode): columns z_t = [E^(t)ᵀ s_{h,t}]_h as a list of T columns."""
    if plan.mode != "hardmax":
        raise ConstructionError("exact feature matrices exist only for hardmax attention")
    W = attention_weights(plan, c)
    cols = []
    for t in range(plan.data.T):
        E = plan.data.contexts[t]
        col: List[Fraction] = []
        for h in range(plan.H):
            s = W[t][h]
            col.extend(sum((p * row[i] for p, row in zip(s, E) if p), Fraction(0)) for i in range(plan.data.d))
        cols.append(col)
    return cols


# ----------------------------------------------------------------------------- §4.4 the scale

@dataclass
class ScaleCertificate:
    """The certified bound of note §4.4 and the inputs that produced it (all exact rationals)."""

    sigma_lower: Fraction  # certified σ_min(Z^∞) ≥ sigma_lower
    B_max: Fraction  # ≥ max context-token 2-norm
    n_sat: int
    delta_min: Fraction
    rho_max: Fraction  # max ‖r_{h,t}‖_∞ over saturated pairs
    c_bound: Fraction  # the right-hand side of §4.4 (an upper bound of it)
    c: Fraction  # the chosen scale, least integer ≥ max(1, c_bound)

    def to_dict(self) -> Dict[str, str]:
        return {k: str(v) for k, v in self.__dict__.items()}


def certified_scale(plan: Plan, sigma_lower: Fraction) -> ScaleCertificate:
    """c from note §4.4: c ≥ max_{sat (h,t)} [ln(2(n−1)·B_max·√N_sat/σ) + 2‖r_{h,t}‖_∞]/Δ_{h,t}.

    Every ingredient is an exact rational or a rigorous upper bound (√ and ln from Arb), so
    c ≥ the true bound; with σ ≤ σ_min(Z^∞) Weyl's inequality gives rank Z(c) = T.
    """
    data = plan.data
    n = data.n
    B2 = max(_sq_norm(row) for E in data.context_classes()[0] for row in E)
    B = linalg.sqrt_upper(B2)
    pairs = [(hp, t) for hp in plan.heads for t in hp.sat]
    N = len(pairs)
    if N == 0 or n == 1:
        return ScaleCertificate(sigma_lower, B, N, Fraction(0), Fraction(0), Fraction(0), Fraction(1))
    arg = 2 * (n - 1) * B * linalg.sqrt_upper(N) / sigma_lower
    lg = linalg.log_upper(arg)
    bound = None
    dmin = rmax = None
    for hp, t in pairs:
        sp = hp.sat[t]
        rho = max(abs(x) for x in hp.r[t])
        val = (lg + 2 * rho) / sp.gap
        bound = val if bound is None else max(bound, val)
        dmin = sp.gap if dmin is None else min(dmin, sp.gap)
        rmax = rho if rmax is None else max(rmax, rho)
    c = Fraction(max(1, math.ceil(bound)))
    return ScaleCertificate(sigma_lower, B, N, dmin, rmax, bound, c)


def hardmax_scale(plan: Plan) -> Fraction:
    """The least integer c ≥ 1 with c·(g_j − g_i) > r_i − r_j for every saturated pair and i ≠ j:
    exactly the condition under which hardmax(c·g + r) = e_j (the limit token)."""
    need = Fraction(0)
    for hp in plan.heads:
        for t, sp in hp.sat.items():
            g, r = hp.g[t], hp.r[t]
            for i in range(plan.data.n):
                if i != sp.j:
                    need = max(need, (r[i] - r[sp.j]) / (g[sp.j] - g[i]))
    return Fraction(max(1, math.floor(need) + 1))


# ----------------------------------------------------------------------------- §4.5 readout

def readout_from_enclosure(Z, y: Sequence[Fraction], eps: Fraction, col_l1: Fraction = Fraction(1),
                           q0: Optional[int] = None, max_rounds: int = 12) -> Tuple[List[Fraction], int, Fraction]:
    """A dyadic readout A (grid 2^−q) with max_t |A z_t − y_t| certified ≤ eps/2 for every Z in the balls.

    A is the least-norm solution for the midpoint matrix (computed in Arb, then frozen),
    rounded to multiples of 2^−q; q grows until Arb certifies the residual bound.
    Returns (A, q, certified residual upper bound).
    """
    from flint import arb_mat

    Zm = Z.mid()
    G = Zm.transpose() * Zm
    Y = arb_mat([[linalg.arb_of(v)] for v in y])
    try:
        alpha = G.solve(Y)
    except (ZeroDivisionError, ValueError) as e:
        raise ConstructionError(f"readout: the Gram matrix of Z(c) is not invertible at this precision ({e})")
    Za = Zm * alpha
    A_mid = [linalg.mid_fraction(Za[i, 0]) for i in range(Zm.nrows())]
    if q0 is None:  # a starting grid: rounding A by 2^-(q+1) moves A z_t by <= 2^-(q+1)·‖z_t‖₁
        q0 = max(1, math.ceil(math.log2(max(col_l1 / eps, 1)))) + 2
    q = q0
    for _ in range(max_rounds):
        scale = 2 ** q
        A = [Fraction(round(a * scale), scale) for a in A_mid]
        Ar = arb_mat([[linalg.arb_of(a) for a in A]])
        res = Ar * Z
        worst = max(linalg.upper_fraction(abs(res[0, t] - linalg.arb_of(v))) for t, v in enumerate(y))
        if worst <= eps / 2:
            return A, q, worst
        q += 4
    raise ConstructionError(f"readout: residual {float(worst):.3g} not certified below eps/2 = {eps / 2} "
                            "(Z(c) too ill-conditioned for the working precision)")


def readout_exact(cols: List[List[Fraction]], y: Sequence[Fraction]) -> Tuple[List[Fraction], List[int]]:
    """Exact readout for an exact Z (columns): A supported on T independent rows I, A_I = Y Z_I⁻¹."""
    rows = linalg.independent_rows(linalg.transpose(cols))  # rows of Z = transpose of the column list
    T = len(cols)
    if len(rows) < T:
        raise ConstructionError(f"exact rank of Z is {len(rows)} < T = {T}: no exact readout")
    ZI_T = [[cols[t][i] for i in rows] for t in range(T)]  # Z_Iᵀ (T × T)
    sol = linalg.solve(ZI_T, [[v] for v in y])
    A = [Fraction(0)] * len(cols[0])
    for i, r in zip(rows, sol):
        A[i] = r[0]
    return A, rows


# ----------------------------------------------------------------------------- hardmax designs

def _choose_tokens_for_head1(plan: Plan, rng: random.Random) -> None:
    """Designed tokens σ(1,t), t ∈ S_1, with independent rows (base case of note §4.4)."""
    data, hp = plan.data, plan.heads[0]
    span = linalg.SpanModP(data.d)
    for t in hp.S:
        start = rng.randrange(data.n)
        for s in range(data.n):
            i = (start + s) % data.n
            if span.try_add(linalg.integer_column(data.contexts[t][i])):
                hp.sigma[t] = i
                break
        else:
            raise ConstructionError(f"head 1: no context token of example {t} is independent of the other designed "
                                    "tokens (should not happen under Assumption 2)")


def _block(plan: Plan, h: int, t: int) -> List[Fraction]:
    """Head h's block of column z_t where it is already fixed (limit values)."""
    hp = plan.heads[h]
    E = plan.data.contexts[t]
    if t in hp.sat:
        return list(E[hp.sat[t].j])
    if t in hp.sigma:
        return list(E[hp.sigma[t]])
    s = _hardmax(hp.r[t])  # head 1 on t ∉ S_1
    return [sum((p * row[i] for p, row in zip(s, E) if p), Fraction(0)) for i in range(plan.data.d)]


def _choose_tokens_for_head(plan: Plan, h: int, rng: random.Random) -> None:
    """Designed tokens σ(h,t), t ∈ S_h: each new column of Z^∞[heads ≤ h, U_{h−1} ∪ S_h] must
    leave the span of the previous ones — the induction step of note §4.4, where some token
    always works (the n tokens are affinely independent, the span has dimension ≤ n − 2)."""
    data, hp = plan.data, plan.heads[h]
    span = linalg.SpanModP((h + 1) * data.d)
    done = [t for S in plan.partition[:h] for t in S]
    for t in done:
        col = [x for g in range(h + 1) for x in _block(plan, g, t)]
        if not span.try_add(linalg.integer_column(col)):
            raise _Retry(f"head {h + 1}: earlier columns became dependent modulo p")
    for t in hp.S:
        fixed = [x for g in range(h) for x in _block(plan, g, t)]
        start = rng.randrange(data.n)
        for s in range(data.n):
            i = (start + s) % data.n
            if span.try_add(linalg.integer_column(fixed + list(data.contexts[t][i]))):
                hp.sigma[t] = i
                break
        else:
            raise _Retry(f"head {h + 1}, example {t}: no designed token extends the rank modulo p")


def _one_hot(n: int, i: int) -> Vec:
    return tuple(Fraction(int(j == i)) for j in range(n))


# ----------------------------------------------------------------------------- build

@dataclass
class MahdaviInfo:
    """Construction facts (reported by proofs, tables and tests; not verdicts)."""

    mode: str
    design: str
    H: int
    n: int
    d: int
    d_h: int
    k: int
    T: int
    capacity: int
    partition: List[List[int]]
    partition_strategy: str
    c: Fraction
    scale: Optional[ScaleCertificate] = None
    sigma_Zc_lower: Optional[Fraction] = None  # certified σ_min(Z(c)) lower bound (softmax, if asked)
    exact_rank: Optional[int] = None  # hardmax: exact rank of Z
    error_bound: Optional[Fraction] = None
    residual_upper: Optional[Fraction] = None
    readout_grid_bits: Optional[int] = None
    precision: Optional[int] = None
    bits: Dict[str, int] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)
    designs: Dict[str, Any] = field(default_factory=dict)
    tries: int = 1
    checks: Dict[str, str] = field(default_factory=dict)

    def summary(self) -> Dict[str, Any]:
        out = {"mode": self.mode, "design": self.design, "H": self.H, "n": self.n, "d": self.d, "d_h": self.d_h,
               "k": self.k, "T": self.T, "capacity": self.capacity, "partition_strategy": self.partition_strategy,
               "c": str(self.c), "log2_c": f"{math.log2(self.c):.2f}" if self.c > 0 else "-", "tries": self.tries}
        if self.scale is not None:
            out.update({"c_bound": str(self.scale.c_bound), "sigma_min_Zinf_lower": _short(self.scale.sigma_lower),
                        "delta_min": str(self.scale.delta_min), "rho_max": str(self.scale.rho_max),
                        "n_saturated_pairs": self.scale.n_sat})
        for k in ("sigma_Zc_lower", "exact_rank", "error_bound", "residual_upper", "readout_grid_bits", "precision"):
            v = getattr(self, k)
            if v is not None:
                out[k] = _short(v) if isinstance(v, Fraction) else v
        out.update({f"bits_{k}": v for k, v in self.bits.items()})
        out.update(self.checks)
        return out


def _short(x: Fraction) -> str:
    if x.denominator == 1 or x.denominator.bit_length() < 40:
        return str(x)
    return f"~{float(x):.6g}"


def _max_bits(rows) -> int:
    return max((bits(x) for r in rows for x in r), default=0)


def _instance_partition(data: QueryContextData, H: int, d_h: int, partition, seed: int, certify: bool
                        ) -> Tuple[int, PartitionChoice]:
    """Check the instance; return (rank budget k, the head-to-subset partition): chosen, or the
    given one validated (with the note §4.6 per-partition certificate if ``certify``)."""
    check_instance(data, H, d_h)
    k = rank_budget(data.n, d_h)
    if partition is None:
        return k, choose_partition(data, H, k, seed)
    part = [sorted(int(t) for t in S) for S in partition]
    validate_partition(part, data.T, H, k)
    cert = partition_certificate(data, part) if certify else None
    return k, PartitionChoice(part, "given", 1, certificate=cert)


def build(data: QueryContextData, H: int, d_h: int, mode: str = "softmax", design: str = "solve",
          partition: Optional[Sequence[Sequence[int]]] = None, designed_logits: Optional[Dict[Tuple[int, int], Sequence]] = None,
          u: Optional[Dict[int, Sequence]] = None, w: Optional[Dict[int, Sequence]] = None,
          eps: Fraction = DEFAULT_EPS, seed: int = 0, scale: Optional[Fraction] = None,
          prec: int = 128, max_tries: int = 4, certify_Zc: bool = False) -> Tuple[Model, MahdaviInfo]:
    """Build the memorizing layer for ``data`` (note §4). See the module docstring.

    ``partition`` (0-based example lists, one per head), ``designed_logits`` (keys (h, t),
    0-based), ``u``/``w`` (keys h, 0-based, h ≥ 1) override the seeded random choices (used to
    reproduce note §4.7). ``scale`` overrides the certified c (softmax mode: only allowed if
    it is ≥ the certified bound). ``eps`` is the stated error bound for real labels in softmax
    mode. ``certify_Zc`` also certifies σ_min(Z(c)) > 0 directly (Weyl already implies it).
    Raises :class:`ConstructionError` / :class:`AssumptionError` with the reason.
    """
    if mode not in MODES:
        raise ConstructionError(f"unknown mode {mode!r}; use one of {MODES}")
    if design not in DESIGNS:
        raise ConstructionError(f"unknown design {design!r}; use one of {DESIGNS}")
    t0 = time.perf_counter()
    k, choice = _instance_partition(data, H, d_h, partition, seed, certify=True)
    secs = {"checks_and_partition": time.perf_counter() - t0}
    last: Optional[Exception] = None
    explicit = designed_logits is not None or u is not None or w is not None
    for attempt in range(1 if explicit else max_tries):
        rng = random.Random(seed * 7919 + attempt)
        try:
            model, info = _build_once(data, H, d_h, k, choice, mode, design, designed_logits, u, w, eps, rng, scale,
                                      prec, secs, certify_Zc)
            info.tries = attempt + 1
            info.seconds["total"] = time.perf_counter() - t0
            return model, info
        except _Retry as e:  # a random design was degenerate: redraw
            last = e
    raise ConstructionError(f"construction failed after {max_tries} seeded draws: {last}")


class _Retry(ConstructionError):
    """A random choice was unlucky (e.g. Z^∞ not certified full rank); redraw."""


def _make_plan(data, H, d_h, k, choice, mode, design, designed_logits, u_given, w_given, rng) -> Plan:
    ctx = _Contexts(data)
    part = choice.partition
    heads: List[HeadPlan] = []
    for h, S in enumerate(part):
        hp = HeadPlan(h, tuple(S), (), ())
        if h >= 1:
            if w_given is not None and h in w_given:
                hp.w = tuple(Fraction(x) for x in w_given[h])
                bad = [t for t in S if _dot(hp.w, data.queries[t]) != 0]
                if bad:
                    raise ConstructionError(f"given w_{h + 1} is not orthogonal to the queries of its active examples "
                                            f"{bad}")
            else:
                hp.w = saturating_query_direction(data, h, S, rng)
            if u_given is not None and h in u_given:
                hp.u = tuple(Fraction(x) for x in u_given[h])
                sat = saturated_pairs(data, h, S, hp.u, hp.w)
            else:
                hp.u, sat = saturating_key_direction(data, h, S, hp.w, rng, ctx=ctx)
            hp.sat = {sp.example: sp for sp in sat}
            Eu = ctx.times_columns([hp.u] * data.T)
            for t, sp in hp.sat.items():
                hp.g[t] = tuple(sp.wx * x for x in Eu[t])
        heads.append(hp)
    plan = Plan(data, H, d_h, k, part, heads, ctx, mode, design)
    # interpolating parts (head order matters for the hardmax token choice, note §4.4)
    for h, hp in enumerate(heads):
        if mode == "hardmax" and design == "solve":
            if h == 0:
                _choose_tokens_for_head1(plan, rng)
            else:
                _choose_tokens_for_head(plan, h, rng)
            V = {t: argmax_vector(data.contexts[t], hp.sigma[t], rng) for t in hp.S}
        elif design == "solve":
            hp.designed = {t: (tuple(Fraction(x) for x in designed_logits[(h, t)])
                               if designed_logits is not None and (h, t) in designed_logits
                               else random_designed_logits(data.n, rng)) for t in hp.S}
        if mode == "hardmax" and design == "solve":
            hp.L, hp.R = interpolating_part_values(data, hp.S, V)
        elif design == "solve":
            hp.L, hp.R = interpolating_part_solve(data, hp.S, hp.designed)
        else:
            hp.L, hp.R = interpolating_part_factored(data, hp.S, rng, ctx=ctx)
        hp.r = _offsets(ctx, data, hp.L, hp.R)
        for t in hp.S:
            if mode == "hardmax" and design == "solve":
                if _hardmax(hp.r[t]) != list(_one_hot(data.n, hp.sigma[t])):
                    raise ConstructionError(f"internal: head {h + 1}, example {t}: logits {hp.r[t]} do not pick the "
                                            f"designed token {hp.sigma[t]}")
            elif design == "solve" and hp.r[t] != hp.designed[t]:
                raise ConstructionError(f"internal: head {h + 1}, example {t}: logits {hp.r[t]} differ from the design")
            hp.designed[t] = hp.r[t]
    return plan


def _build_once(data, H, d_h, k, choice, mode, design, designed_logits, u_given, w_given, eps, rng, scale, prec, secs,
                certify_Zc=False):
    t0 = time.perf_counter()
    plan = _make_plan(data, H, d_h, k, choice, mode, design, designed_logits, u_given, w_given, rng)
    secs["design"] = time.perf_counter() - t0
    info = MahdaviInfo(mode, design, H, data.n, data.d, d_h, k, data.T, capacity(H, data.n, d_h),
                       [list(S) for S in plan.partition], choice.strategy, Fraction(1), seconds=secs)
    n_sat = sum(len(hp.sat) for hp in plan.heads)
    info.checks = {"assumption_2": "rank E^(t) = n for every t (exact)",
                   "partition_certificate": f"note §4.6 (i), (ii), (iv): {(choice.certificate or {}).get('exact_tests')} "
                                            f"exact tests; (iii): unique argmax for all {n_sat} saturated pairs"}
    y = data.label_values()
    if mode == "hardmax":
        t1 = time.perf_counter()
        c = hardmax_scale(plan) if scale is None else Fraction(scale)
        if c < hardmax_scale(plan):
            raise ConstructionError(f"scale c = {c} is below the exact hardmax threshold {hardmax_scale(plan)}")
        cols = feature_matrix_exact(plan, c)
        r = linalg.rank(cols)
        info.exact_rank = r
        if r < data.T:
            raise _Retry(f"exact rank of Z is {r} < T = {data.T}")
        A, _rows = readout_exact(cols, y)
        info.c = c
        secs["rank_and_readout"] = time.perf_counter() - t1
    else:
        A, c = _softmax_scale_and_readout(plan, info, y, eps, scale, prec, secs, certify_Zc)
    model = _assemble(plan, c, A)
    _bit_report(info, model)
    info.designs = {"u": {h + 1: [str(x) for x in hp.u] for h, hp in enumerate(plan.heads) if hp.u is not None},
                    "w": {h + 1: [str(x) for x in hp.w] for h, hp in enumerate(plan.heads) if hp.w is not None},
                    "sigma": {h + 1: dict(hp.sigma) for h, hp in enumerate(plan.heads) if hp.sigma}}
    info._plan = plan  # for analysis helpers (not part of the summary)
    return model, info


def _softmax_scale_and_readout(plan: Plan, info: MahdaviInfo, y, eps, scale, prec, secs, certify_Zc=False):
    data = plan.data
    target = CLASS_EPS if data.label_kind == "class" else eps
    p = prec
    while True:
        with linalg.arb_precision(p):
            t1 = time.perf_counter()
            Zinf = feature_matrix_arb(plan, None)
            sig = linalg.sigma_min_lower(Zinf)
            secs["Zinf_certify"] = time.perf_counter() - t1
            if sig is None:
                if p < 1024:
                    p *= 2
                    continue
                raise _Retry("σ_min(Z^∞) > 0 could not be certified (degenerate design)")
            cert = certified_scale(plan, sig)
            c = cert.c
            if scale is not None:
                if Fraction(scale) < cert.c_bound:
                    raise ConstructionError(f"scale c = {scale} is below the certified bound {cert.c_bound} of note "
                                            "§4.4")
                c = Fraction(scale)
            t2 = time.perf_counter()
            Zc = feature_matrix_arb(plan, c)
            sig_c = linalg.sigma_min_lower(Zc) if certify_Zc else None
            try:
                A, q, worst = readout_from_enclosure(Zc, y, target, _column_l1_bound(plan))
            except ConstructionError:
                if p < 1024:
                    p *= 2
                    continue
                raise
            secs["Zc_and_readout"] = time.perf_counter() - t2
        break
    info.scale, info.c, info.sigma_Zc_lower = cert, c, sig_c
    info.error_bound = None if data.label_kind == "class" else eps
    info.residual_upper, info.readout_grid_bits, info.precision = worst, q, p
    return A, c


def _column_l1_bound(plan: Plan) -> Fraction:
    """‖z_t‖₁ ≤ H·max ‖context row‖₁ (each z_{h,t} is a convex combination of context rows)."""
    best = Fraction(0)
    for E in plan.data.context_classes()[0]:
        for row in E:
            L = math.lcm(*(x.denominator for x in row))
            best = max(best, Fraction(sum(abs(x.numerator) * (L // x.denominator) for x in row), L))
    return plan.H * best


def _pad(rows: List[Vec], d_h: int, d: int) -> Matrix:
    if len(rows) > d_h:
        raise ConstructionError(f"a head needs {len(rows)} query/key rows but d_h = {d_h}")
    zero = tuple(Fraction(0) for _ in range(d))
    return tuple(rows) + (zero,) * (d_h - len(rows))


def _assemble(plan: Plan, c: Fraction, A: Sequence[Fraction]) -> Model:
    """Factor M_h(c) = W_Kᵀ W_Q (d_h rows, zero-padded) and attach the readout blocks A_h = W_V (note §4.5)."""
    data, d = plan.data, plan.data.d
    heads = []
    for h, hp in enumerate(plan.heads):
        q_rows = [tuple(r) for r in hp.R]
        k_rows = [tuple(r) for r in linalg.transpose(hp.L)] if hp.L else []
        if hp.w is not None:
            q_rows.append(hp.w)
            k_rows.append(tuple(c * x for x in hp.u))
        WQ = _pad(q_rows, plan.d_h, d)
        WK = _pad(k_rows, plan.d_h, d)
        WV = (tuple(A[h * d:(h + 1) * d]),)
        heads.append(Head(WV=WV, WO=((Fraction(1),),), WQ=WQ, WK=WK))
    kind = "hardmax" if plan.mode == "hardmax" else "softmax"
    layers: List[Any] = [Attention(tuple(heads), kind=kind, residual=False, query="last", keys="others")]
    decode = "identity"
    if data.label_kind == "class":
        C = data.num_classes
        layers.append(Affine(tuple((Fraction(j),) for j in range(C)), tuple(Fraction(-j * j, 2) for j in range(C))))
        decode = "argmax"
    return Model(tuple(layers), input_type="vectors", input_dim=d, readout="last", decode=decode,
                 name=f"mahdavi-{plan.mode}-H{plan.H}-n{data.n}-d{d}-dh{plan.d_h}")


def _bit_report(info: MahdaviInfo, model: Model) -> None:
    att = model.layers[0]
    info.bits = {"WQ": max(_max_bits(h.WQ) for h in att.heads), "WK": max(_max_bits(h.WK) for h in att.heads),
                 "WV": max(_max_bits(h.WV) for h in att.heads), "WO": max(_max_bits(h.WO) for h in att.heads),
                 "c": bits(info.c)}
    if len(model.layers) > 1:
        info.bits["decoder"] = max(_max_bits(model.layers[1].W), _max_bits([model.layers[1].b]))
    info.bits["max"] = max(v for k, v in info.bits.items() if k != "c")


# ----------------------------------------------------------------------------- analysis helpers

def make_plan(data: QueryContextData, H: int, d_h: int, mode: str = "softmax", design: str = "solve",
              partition: Optional[Sequence[Sequence[int]]] = None,
              designed_logits: Optional[Dict[Tuple[int, int], Sequence]] = None,
              u: Optional[Dict[int, Sequence]] = None, w: Optional[Dict[int, Sequence]] = None,
              seed: int = 0) -> Plan:
    """The construction's pieces before the scale and readout (for studying Z(c) as c varies,
    e.g. note §4.7's σ_min(Z(c)) at c = 0, 5, 50)."""
    k, choice = _instance_partition(data, H, d_h, partition, seed, certify=False)
    return _make_plan(data, H, d_h, k, choice, mode, design, designed_logits, u, w, random.Random(seed * 7919))


def shared_context_rank_bound(H: int, n: int) -> int:
    """rank Z ≤ H(n − 1) + 1 for any weights when all examples share one context (note §3.2)."""
    return H * (n - 1) + 1


def _base2_weights(logits: Sequence[Fraction]) -> List[Fraction]:
    """Base-2 softmax 2^ℓ_i / Σ_j 2^ℓ_j for integer logits: exact rationals."""
    if any(x.denominator != 1 for x in logits):
        raise ConstructionError("base-2 softmax is rational only for integer logits")
    top = max(logits)
    p = [Fraction(2) ** int(x - top) for x in logits]
    s = sum(p)
    return [x / s for x in p]


def random_weight_features(data: QueryContextData, H: int, d_h: int, seed: int, attention: str = "base2",
                           weight_range: int = 1):
    """Z for *random* integer key/query weights (W_Q, W_K ∈ [−r, r]^{d_h×d}), note §3.2's setting.

    ``attention``: ``"base2"`` (2^ℓ/Σ2^ℓ, exact rationals for integer logits), ``"hardmax"``
    (exact) — returns the exact columns; ``"softmax"`` returns an arb_mat (balls).
    """
    rng = random.Random(seed)
    ctx = _Contexts(data)
    logits_all = []
    for _ in range(H):
        WQ = [[Fraction(rng.randint(-weight_range, weight_range)) for _ in range(data.d)] for _ in range(d_h)]
        WK = [[Fraction(rng.randint(-weight_range, weight_range)) for _ in range(data.d)] for _ in range(d_h)]
        M = linalg.matmul(linalg.transpose(WK), WQ)  # d × d, M = WKᵀ WQ
        logits_all.append(ctx.times_columns(_matmul_cols(M, data.queries)))
    if attention == "softmax":
        from flint import arb_mat

        Z = arb_mat(H * data.d, data.T)
        for t in range(data.T):
            Et = ctx.arb_transpose(t)
            for h in range(H):
                s = _softmax_arb(logits_all[h][t])
                z = Et * arb_mat([[x] for x in s])
                for i in range(data.d):
                    Z[h * data.d + i, t] = z[i, 0]
        return Z
    weight = {"base2": _base2_weights, "hardmax": _hardmax}.get(attention)
    if weight is None:
        raise ConstructionError(f"unknown attention {attention!r}; use base2, hardmax or softmax")
    cols = []
    for t in range(data.T):
        E = data.contexts[t]
        col: List[Fraction] = []
        for h in range(H):
            s = weight(logits_all[h][t])
            col.extend(sum((p * row[i] for p, row in zip(s, E) if p), Fraction(0)) for i in range(data.d))
        cols.append(col)
    return cols


def certified_rank_at_least(Z, r: int) -> bool:
    """True if the first r columns of the ball matrix Z are certified independent (σ_min > 0),
    hence rank Z ≥ r for every matrix in the balls."""
    if r == 0:
        return True
    from flint import arb_mat

    S = arb_mat(Z.nrows(), r)
    for i in range(Z.nrows()):
        for j in range(r):
            S[i, j] = Z[i, j]
    return linalg.sigma_min_lower(S) is not None

