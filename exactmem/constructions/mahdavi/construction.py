"""Mahdavi, Liao & Thrampoulidis: one multi-head attention layer memorizes T = H(k−1)+1 examples.

The construction of note ``mahdavi.md`` §4 (k = min(n, d_h)), built in exact rational
arithmetic for a concrete query/context dataset:

1. **Assignment** (§4.1): a partition S_1, …, S_H of the examples, |S_1| = k, |S_h| = k − 1
   (``exactmem.constructions.mahdavi.assign``; checked with the per-partition certificate of §4.6).
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

The pieces live in ``mahdavi_plan`` (exact helpers, the plan), ``mahdavi_interpolation``
(§4.2 steps 2–3), ``mahdavi_saturation`` (§4.2 step 4, §4.3, §4.4), ``mahdavi_hardmax``
(the exact limit), ``mahdavi_readout`` (§4.5) and ``mahdavi_analysis`` (§3.2); this module
re-exports their public names and builds.

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

from ...arith import linalg
from .assign import PartitionChoice, capacity as _capacity, choose_partition, validate_partition
from ...data.assumptions import (AssumptionError, SaturatedPair, check_context_rank,  # noqa: F401 - re-exported
                                partition_certificate, saturated_pairs)
from ...data.mahdavi_data import QueryContextData
from ...model.layers import Model
from ...arith.numbers import bits
from .analysis import (_base2_weights, certified_rank_at_least, random_weight_features,  # noqa: F401
                               shared_context_rank_bound)
from .hardmax import (_block, _choose_tokens_for_head, _choose_tokens_for_head1, argmax_vector,  # noqa: F401
                              hardmax_scale)
from .interpolation import (_offsets, interpolating_part_factored, interpolating_part_solve,  # noqa: F401
                                    interpolating_part_values, random_designed_logits)
from .plan import (ConstructionError, HeadPlan, Matrix, Plan, Vec, _Contexts, _dot, _hardmax,  # noqa: F401
                           _integer_columns, _matmul_cols, _one_hot, _Retry, _softmax_arb, _sq_norm)
from .readout import (_assemble, _column_l1_bound, _pad, readout_exact,  # noqa: F401
                              readout_from_enclosure)
from .saturation import (ScaleCertificate, attention_weights, certified_scale,  # noqa: F401
                                 feature_matrix_arb, feature_matrix_exact, logits, saturating_key_direction,
                                 saturating_query_direction)

MODES = ("softmax", "hardmax")
DESIGNS = ("solve", "factored")
DEFAULT_EPS = Fraction(1, 2 ** 20)
CLASS_EPS = Fraction(1, 4)  # |y_out − class| ≤ 1/4 < 1/2 keeps the nearest-integer decoder right


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
    Raises `ConstructionError` / `AssumptionError` with the reason.
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
