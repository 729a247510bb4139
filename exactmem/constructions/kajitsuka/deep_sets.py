"""Kajitsuka & Sato (ICLR 2025) Appendix D, Theorem D.1: a width-12 deep set that memorizes multisets exactly.

The deep set (ϕ̃, ρ̃) of width 12 memorizes N distinct, element-wise (r, δ)-separated multisets
exactly, eq. (115):

    (ϕ̃, ρ̃)(m⁽ⁱ⁾) = ρ̃( Σ_{k=1}^{|m⁽ⁱ⁾|} ϕ̃(x⁽ⁱ⁾_k) ) = y⁽ⁱ⁾.

Pipeline (proof of Theorem D.1, eqs. (116)–(126); ``docs/deep-sets.md``):

* **Lemma B.1** (`kajitsuka.witness_set`): a set A of at most N − 1 distinct elements
  on which the N multisets stay distinct.
* **Lemma B.2** (repaired, `kajitsuka.token_weights`): integer f: A → [1, F],
  F = ⌈4N²|A|√π⌉ (√π from below), with pairwise distinct sums Σ_x m(x) f(x), checked exactly.
* **Lemma B.3** (ϕ̃): Lemma C.1 (`vardi.build_c1`) on the points of A labelled f(x),
  every other distinct element — and the padding point p — an extra point with output 0.
* **ρ̃**: Lemma C.1 on the N distinct sums s_i = Σ_k ϕ̃(x⁽ⁱ⁾_k) (points of ℚ¹), labels y⁽ⁱ⁾.

The certificate format has no "sum over a set" layer, so the deep set is written as an
exactmem [`Model`][exactmem.model.Model] on sequences: multiset i is padded to length M with the point p
(`padding_point`: ‖p − x‖ ≥ δ for every element x, so p is an extra point of ϕ̃'s
Lemma C.1 and ϕ̃(p) = 0), ϕ̃'s layers act token-wise, one uniform-attention head (W_V = 1,
W_O = M, no residual) turns the average over the M positions into the sum, and ρ̃'s layers
follow. Since ϕ̃(p) = 0, the padded sum equals Σ over the multiset. ϕ̃(p) = 0 and ϕ̃ = f / 0 on
the elements are certified separately by the model `DeepSetBuild.phi_model` (ϕ̃ alone,
the very same layers) on every distinct element and p.

Only building happens here (the exact data facts of eq. (118) are checked on the way);
the independent checker judges the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import isqrt
from typing import Dict, List, Optional, Tuple

from ...arith import enclosure as E
from ...data.dataset import DataError, Dataset
from ...data.multiset_data import MultisetData, Point, check_distinct, check_elementwise_separation
from ...model.layers import Affine, Attention, Head, Model, zeros
from ...arith.numbers import bits, format_rational
from . import compact as kajitsuka
from ..vardi import memorizer as vardi
from .compact import ConstructionError


@dataclass
class DeepSetBuild:
    """The deep set as one model, ϕ̃ alone, their datasets, and every fact of the proof."""

    model: Model
    dataset: Dataset
    phi_model: Model
    phi_dataset: Dataset
    padding: Point
    info: Dict[str, object] = field(default_factory=dict)
    phi_layout: Optional[vardi.Layout] = None
    rho_layout: Optional[vardi.Layout] = None
    n_phi_layers: int = 0  # ϕ̃'s layers are model.layers[:n_phi_layers]


# ----------------------------------------------------------------------------- the padding point


def _far_from_all(p: Point, elements: List[Point], delta2: Fraction) -> bool:
    return all(sum(((a - b) ** 2 for a, b in zip(p, x)), Fraction(0)) >= delta2 for x in elements)


def padding_point(elements: List[Point], d: int, r2: Fraction, delta2: Fraction) -> Tuple[Point, bool]:
    """A point p with ‖p − x‖² ≥ δ² for every element x (so p is a new, δ-separated point of
    ϕ̃'s Lemma C.1). Tried in order: the origin, then ±t·e_i for t = 1, …, ⌊r⌋ (inside the ball
    of radius r, so ϕ̃'s r is unchanged); otherwise (max first coordinate + 1)·e_1, outside the
    ball (‖p‖ ≤ r + 1). Returns (p, inside the ball)."""
    zero = tuple(Fraction(0) for _ in range(d))
    cands = [zero]
    T = isqrt(r2.numerator // r2.denominator)
    for t in range(1, T + 1):
        for i in range(d):
            for s in (1, -1):
                cands.append(tuple(Fraction(s * t) if j == i else Fraction(0) for j in range(d)))
    for p in cands:
        if _far_from_all(p, elements, delta2):
            return p, True
    top = max((x[0] for x in elements), default=Fraction(0))
    p = (top + 1,) + zero[1:]  # |p_1 − x_1| ≥ 1 ≥ δ for every element
    return p, sum((a * a for a in p), Fraction(0)) <= r2


def pad(multiset, M: int, p: Point) -> tuple:
    """The multiset as a sequence of length M: its elements, then M − |m| copies of p."""
    return tuple(multiset) + (p,) * (M - len(multiset))


# ----------------------------------------------------------------------------- eq. (118), exactly


def _lt_times_pi(a: Fraction, k: Fraction) -> bool:
    """a < k·π for rationals (k > 0), decided with π's enclosure; raises if undecided."""
    if a < k * E.PI.lo:
        return True
    if a >= k * E.PI.hi:
        return False
    raise ConstructionError(f"π's enclosure cannot decide {a} < {k}·π")


def c_phi_holds(F: int, N: int) -> bool:
    """F ≤ C_ϕ = ⌈4N³√π⌉ (eq. (33)), i.e. F − 1 < 4N³√π, i.e. (F − 1)² < 16N⁶π (F ≥ 1)."""
    return F < 1 or _lt_times_pi(Fraction((F - 1) ** 2), Fraction(16 * N ** 6))


def sums_bound_holds(sums: List[int], M: int, N: int) -> bool:
    """|s_i| ≤ 4MN³√π for every sum (eq. (118)): s² < 16M²N⁶π suffices (π is irrational)."""
    top = max((abs(s) for s in sums), default=0)
    return _lt_times_pi(Fraction(top * top), Fraction(16 * M * M * N ** 6))


def min_gap(values: List[int]) -> Optional[int]:
    s = sorted(values)
    return min((b - a for a, b in zip(s, s[1:])), default=None)


# ----------------------------------------------------------------------------- the deep set


def summing_attention(M: int) -> Attention:
    """One uniform head on the scalar ϕ̃(x_k): W_V = (1), W_O = (M), no residual. Every position
    gets M · (1/M) Σ_k ϕ̃(x_k) = Σ_k ϕ̃(x_k) (eq. (39) with the factor M of ρ̃'s first map folded in)."""
    return Attention((Head(WV=((1,),), WO=((M,),)),), kind="uniform", residual=False)


def _phi(elements, A, f, F, p, seed):
    """ϕ̃ (Lemma B.3): Lemma C.1 on A labelled f, every other element and p extra (output 0).
    A = ∅ (N = 1): the zero map, one affine layer."""
    d = len(p)
    if not A:
        return Model((Affine(zeros(1, d)),), "vectors", d, "last", "identity", name="deep_set_phi_zero"), None
    in_A = set(A)
    extra = [elements[j] for j in range(len(elements)) if j not in in_A] + [p]
    model, info = vardi.build_c1([elements[j] for j in A], [f[j] for j in A], F + 1, extra, seed=seed)
    return model, info


def build(data: MultisetData, seed: int = 0, r=None, delta=None, witnesses: Optional[List[int]] = None,
          weights: Optional[Dict[int, int]] = None) -> DeepSetBuild:
    """Theorem D.1 on ``data``: ϕ̃ (Lemma B.3), the summing layer, ρ̃ (Lemma C.1 on the sums).

    ``witnesses`` (element ids, in order of first occurrence) and ``weights`` (id → f) replace
    Lemma B.1's set and Lemma B.2's verified weights — only to replay the paper's printed
    Lemma B.2 recipe for the errata (the build then stops where two sums collide)."""
    sep = check_elementwise_separation(data, r, delta)
    check_distinct(data)
    N, M, d = data.N, data.M, data.d
    elements, counters = data.element_index()
    A = kajitsuka.witness_set(counters) if witnesses is None else list(witnesses)
    if weights is None:
        f, F, tries = kajitsuka.token_weights(counters, A, seed)
    else:
        f, tries = dict(weights), 0
        F = max(f.values(), default=0)
        if set(f) != set(A) or any(v < 1 for v in f.values()):
            raise DataError("weights must give a positive integer f(x) for exactly the witness elements")
    sums = kajitsuka.weighted_counts(counters, f)
    first: Dict[int, int] = {}
    for i, s in enumerate(sums):
        if s in first:
            raise ConstructionError(f"Lemma B.3 fails: multisets {first[s]} and {i} are distinct but have the same "
                                    f"sum {s} of ϕ̃, so no ρ̃ can tell them apart (eq. (118))")
        first[s] = i
    p, inside = padding_point(elements, d, sep.r2, sep.delta2)

    phi_model, phi_info = _phi(elements, A, f, F, p, seed + 12)
    rho_model, rho_info = vardi.build_c1([(Fraction(s),) for s in sums], data.labels, data.C, seed=seed + 13)
    layers = tuple(phi_model.layers) + (summing_attention(M),) + tuple(rho_model.layers)
    model = Model(layers, "vectors", d, "last", "identity", name="kajitsuka_deep_set")
    dataset = Dataset([pad(m, M, p) for m in data.multisets], [(Fraction(y),) for y in data.labels], "vectors",
                      data.seed, data.name, dict(data.info))
    phi_values = [f.get(j, 0) for j in range(len(elements))] + [0]
    phi_dataset = Dataset([(x,) for x in elements] + [(p,)], [(Fraction(v),) for v in phi_values], "vectors",
                          data.seed, f"phi on the {len(elements)} distinct elements and the padding point")

    facts = {
        "(118) phi values in [C_phi] u {0}: F <= ceil(4 N^3 sqrt(pi))": c_phi_holds(F, N),
        "(118) max |sum| <= 4 M N^3 sqrt(pi)": sums_bound_holds(sums, M, N),
        "(118) min gap of distinct sums >= 1": (min_gap(sums) or 1) >= 1,
        "(118) min gap of sums": min_gap(sums),
        "max sum": max(sums),
    }
    if not all(v for k, v in facts.items() if k.endswith("sqrt(pi)") or k.endswith(">= 1")):
        raise ConstructionError(f"eq. (118) fails on this instance: {facts}")
    info: Dict[str, object] = {
        "N": N, "M": M, "d": d, "C": data.C, "distinct elements V": len(elements),
        "cardinalities": (min(len(m) for m in data.multisets), max(len(m) for m in data.multisets)),
        "witness set |A|": len(A), "weight range F = ceil(4 N^2 |A| sqrt(pi))": F,
        "max f": max(f.values(), default=0), "weight draws": tries,
        "r^2 (clamped >= 1)": sep.r2, "delta^2 (clamped <= 1)": sep.delta2, "max ||x||^2": sep.max_norm2,
        "min ||x - x'||^2": sep.min_dist2, "p inside the r-ball": inside,
        "padding point p": "(" + ", ".join(format_rational(x) for x in p) + ")",
        "phi": _stage_info(phi_info), "rho": _stage_info(rho_info), **facts,
    }
    return DeepSetBuild(model, dataset, phi_model, phi_dataset, p, info,
                        phi_info["layout"] if phi_info else None, rho_info["layout"], len(phi_model.layers))


def _stage_info(info) -> Optional[Dict[str, object]]:
    """The Lemma C.1 facts the claims need: N, V, d, C, the lemma's r², δ², projection bits."""
    if info is None:
        return None
    keys = ("N", "V", "d", "C", "lemma r^2 (clamped >= 1)", "lemma delta^2 (clamped <= 1)", "projection bits",
            "slots g", "groups m", "key bits rho", "label bits c")
    return {k: info[k] for k in keys}


# ----------------------------------------------------------------------------- exact sizes


def phi_relu_depth(b: DeepSetBuild) -> int:
    """ϕ̃'s ReLU depth: Lemma C.1's exact depth, 0 for the zero map (A = ∅)."""
    return vardi.relu_depth_c1(b.phi_layout) if b.phi_layout else 0


def relu_depth(b: DeepSetBuild) -> int:
    """ReLU depth of the deep set: ϕ̃'s + ρ̃'s (the summing layer is attention, no ReLU)."""
    return phi_relu_depth(b) + vardi.relu_depth_c1(b.rho_layout)


def phi_max_bits(b: DeepSetBuild) -> int:
    """ϕ̃'s max bits per weight: Lemma C.1's gP + 2 or Stage I's; 1 (the weight 0) if A = ∅."""
    if not b.phi_layout:
        return bits(0)
    return vardi.max_bits_impl(b.phi_layout, b.info["phi"]["projection bits"])


def max_bits(b: DeepSetBuild) -> int:
    """Max bits per weight of the deep set: ϕ̃, ρ̃, and the summing head's W_V = 1, W_O = M."""
    rho = vardi.max_bits_impl(b.rho_layout, b.info["rho"]["projection bits"])
    return max(phi_max_bits(b), rho, bits(1), bits(b.info["M"]))


def paper_R2(N: int, M: int, d: int, r2: Fraction, delta2: Fraction) -> E.Enc:
    """R² for Theorem D.1's R := 80·M²·N⁵·r·δ⁻¹·π·√d (eq. (124)): 6400 M⁴ N¹⁰ r² π² d / δ²."""
    return E.PI * E.PI * (Fraction(6400 * d) * M ** 4 * N ** 10 * r2 / delta2)


def paper_R_phi2(N: int, M: int, d: int, r2: Fraction, delta2: Fraction) -> E.Enc:
    """R_ϕ² for R_ϕ := 20 r (NM)² δ⁻¹ √(πd) (eq. (34)): 400 r² (NM)⁴ π d / δ²."""
    return E.PI * (Fraction(400 * d) * (N * M) ** 4 * r2 / delta2)


def paper_R_rho2(N: int, M: int) -> E.Enc:
    """R_ρ² for R_ρ := 80 M N⁵ π (eq. (120)): 6400 M² N¹⁰ π²."""
    return E.PI * E.PI * Fraction(6400 * M * M * N ** 10)


def paper_C_phi(N: int) -> E.Enc:
    """C_ϕ := ⌈4N³√π⌉ (eq. (33)) as an enclosure."""
    return E.ceil(E.sqrt(E.PI) * (4 * N ** 3))

