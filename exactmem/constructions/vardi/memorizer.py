"""Vardi, Yehudai & Shamir's Õ(√N) ReLU memorizer as Kajitsuka & Sato Lemma C.1, and its Lemma F.1 variant.

The memorizer of Vardi, Yehudai & Shamir (2022), as extended in Kajitsuka & Sato Lemma C.1, puts
labels on N points and exactly 0 on V − N extra points; Kajitsuka & Sato Lemma F.1 is the
limited-bit variant. Exact rational weights; see ``docs/vardi.md``.

The network is F = F₃ ∘ F₂ ∘ F₁ (Lemma C.1's three stages):

* **Stage I** (Lemma C.2, `project_to_line`): ``x = σ(wᵀz + β)``, width 1. A random
  integer direction v, the scale λ = ⌈2/γ⌉ (γ the smallest gap of vᵀz over all V points) and
  the integer shift β put every projected point in [2, R] with pairwise gaps ≥ 2; all three
  facts are verified exactly (resampled on failure).
* **Stage II** (Lemmas G.2, G.3, `emit_selection`): the N labelled points, sorted,
  form m groups of g consecutive points. Group j's interval indicator
  ``T_j(x) = σ(1 − σ(2(a_j − x)) − σ(2(x − b_j)))`` (Lemma G.2, a_j = ⌊x_first⌋,
  b_j = ⌊x_last⌋ + 1) selects the two crafted integers of the group: u_j (g keys ⌊x_i⌋ of ρ
  bits) and w_j (g labels of c bits), eqs. (99)–(100): ``u ← u + u_j T_j``, ``w ← w + w_j T_j``.
  The three layers per group of Lemma G.3 are pipelined: one layer per group.
* **Stage III** (Lemma G.6, `_emit_extraction`): bit extraction by the *doubling map*
  (background note §1.3(c); the issue allows "an equivalent exact gadget with the same
  asymptotic cost" in place of Vardi's two-trajectory triangle map): for an integer
  0 ≤ U < 2^M, ``s₁ = σ(U − 2^(M−1) + 1)``, ``s₂ = σ(U − 2^(M−1))``, bit ``s₁ − s₂``,
  ``U ← 2U − 2^M (s₁ − s₂)`` — one layer per bit, for the key stream (M = gρ) and the label
  stream (M = gc) in parallel. Each slot's key A and label L are compared and gated:
  ``e₁ = σ(A − x)``, ``e₂ = σ(x − A − 1)`` (both 0 iff ⌊x⌋ = A on the data, else e₁ + e₂ ≥ 1),
  ``o = σ(L − 2^c (e₁ + e₂))`` (= L or 0, since L < 2^c), ``acc ← acc + o``.

Integer rounding choices (all recorded in ``info``): slot count g = ⌈√(N / log₂ N)⌉ (g = 1
for N = 1), group count m = ⌈N / g⌉, key width ρ = LEN(max key), label width
c = max(1, ⌈log₂ C⌉) for labels in {0, …, C − 1}, fixed-width g·ρ- and g·c-bit strings u_j,
w_j (slot 0 in the most significant block), the last group padded with slots of key 0 and
label 0 (key 0 never matches: every projected point is ≥ 2).

Only building happens here; [`exactmem.pipeline.certify`][exactmem.pipeline.certify] evaluates and the independent checker
judges. The paper's size formulas (110)/(111) and the rounding of its lemmas live in
`exactmem.constructions.vardi.sizes` (re-exported here): rigorous rational enclosures
([`exactmem.arith.enclosure`][exactmem.arith.enclosure]) for `eq110_depth` and `eq111_bits`, an exact integer for
`eq110_integer`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from math import lcm
from operator import mul
from typing import Dict, List, Optional, Sequence, Tuple

from ...arith import enclosure as E
from ...data.dataset import DataError
from ...data.geometry import closest_pair
from ...model.layers import Affine, Model
from ...arith.numbers import bits, integer_points, lcm_of_denominators
from .sizes import (Eq110Integers, ceil_sqrt_n_log2n, eq110_depth, eq110_integer, eq110_stage3, eq111_bits,  # noqa: F401
                          label_width, lemma_c2_bits, paper_R2, slot_count)

READINGS = ("paper", "literal_rho_c", "literal_w_blocks", "len_scaled")

# ----------------------------------------------------------------------------- data checks


@dataclass
class Prepared:
    """Distinct points (labelled first), their labels (0 on extra points) and geometry."""

    points: List[tuple]
    labels: List[int]
    n_labelled: int
    d: int
    r2: Fraction  # max(1, max ‖z‖²): the lemma's r², clamped to r ≥ 1
    delta2: Fraction  # min(1, min ‖z − z'‖²): the lemma's δ², clamped to δ ≤ 1
    raw_r2: Fraction
    raw_delta2: Fraction
    scaled: Tuple[int, List[Tuple[int, ...]]]  # (L, the points times L as integers): L = lcm of their denominators


def _as_point(p, i: int, d: Optional[int]) -> tuple:
    try:
        q = tuple(x if type(x) is Fraction else Fraction(x) if not isinstance(x, float) else _float_error(i) for x in p)
    except TypeError:
        raise DataError(f"example {i}: a point must be a sequence of rationals") from None
    if d is not None and len(q) != d:
        raise DataError(f"example {i}: point has dimension {len(q)}, example 0 has {d}")
    if not q:
        raise DataError(f"example {i}: empty point")
    return q


def _float_error(i):
    raise DataError(f"example {i}: floats are not exact data; use Fraction or 'p/q' strings")


def min_sq_distance(points: Sequence[tuple]) -> Fraction:
    """Smallest squared distance between two of the (distinct) points, exactly (1 for fewer
    than two points); see `exactmem.data.geometry.closest_pair`."""
    if len(points) < 2:
        return Fraction(1)
    return closest_pair(points)[0]


def prepare(points: Sequence, labels: Sequence, extra: Sequence = (), C: int = 2,
            min_dist2: Optional[Fraction] = None) -> Prepared:
    """Validate Lemma C.1's data: labels in {0,…,C−1}, one dimension, distinct points.

    Identical labelled points with equal labels are merged; identical points with different
    labels (an extra point counts as label 0) are an error naming both examples.
    ``min_dist2``: the exact smallest squared distance of these (distinct) points when the
    caller has already computed it for the same point set, so it is not searched again.
    """
    if C < 1:
        raise DataError(f"C = {C}: need at least one class")
    if len(points) != len(labels):
        raise DataError(f"{len(points)} points but {len(labels)} labels")
    if not points:
        raise DataError("no labelled points")
    d = len(_as_point(points[0], 0, None))
    first: Dict[Tuple[int, ...], int] = {}
    pts, labs, origin, ints = [], [], [], []
    n_lab = 0
    items = list(zip(points, labels)) + [(e, None) for e in extra]
    qs = [_as_point(p, i, d) for i, (p, _) in enumerate(items)]
    L, keys = integer_points(qs)  # equal points ⇔ equal integer tuples (one common denominator)
    for i, ((_, y), q, key) in enumerate(zip(items, qs, keys)):
        if y is not None:
            yf = Fraction(y)
            if yf.denominator != 1 or not 0 <= yf < C:
                raise DataError(f"example {i}: label {y} is not an integer in [0, {C}) (C = {C} classes)")
            y = int(yf)
        lab = 0 if y is None else y
        j = first.get(key)
        if j is not None:
            if labs[j] != lab:
                kind = lambda k: "extra" if k >= len(points) else "labelled"  # noqa: E731
                raise DataError(f"examples {origin[j]} ({kind(origin[j])}) and {i} ({kind(i)}) are the same point "
                                f"with labels {labs[j]} and {lab} (extra points have label 0): no function "
                                f"memorizes both")
            continue
        first[key] = len(pts)
        pts.append(q)
        ints.append(key)  # the distinct points' denominators have the same lcm L as all of them
        labs.append(lab)
        origin.append(i)
        if y is not None:
            n_lab += 1
    raw_r2 = Fraction(max(sum(x * x for x in p) for p in ints), L * L)
    if min_dist2 is not None:
        raw_d2 = Fraction(min_dist2)
    else:
        raw_d2 = min_sq_distance(pts) if len(pts) > 1 else Fraction(1)
    return Prepared(pts, labs, n_lab, d, max(Fraction(1), raw_r2), min(Fraction(1), raw_d2), raw_r2, raw_d2,
                    (L, ints))


# ----------------------------------------------------------------------------- Stage I


@dataclass
class Projection:
    """Stage I (Lemma C.2): x = σ(wᵀz + β) with w = λ v, all points in [2, R], gaps ≥ 2."""

    v: Tuple[int, ...]
    lam: Fraction  # an integer ⌈2/γ⌉ ≥ 1, or 2^-e when the gaps are already ≥ 4
    beta: int
    values: List[Fraction]  # x_i for every prepared point
    gamma: Fraction  # smallest gap of vᵀz
    tries: int
    K: int

    @property
    def w(self) -> Tuple[Fraction, ...]:
        return tuple(self.lam * a for a in self.v)

    @property
    def bits(self) -> int:
        return max(bits(a) for a in self.w + (self.beta,))


def projection_scale(gamma: Fraction) -> Fraction:
    """λ with λγ ≥ 2 and few bits: ⌈2/γ⌉ if γ < 4 (an integer), else 2^-e with
    e = ⌊log₂(γ/2)⌋ ≥ 1 (so 2 ≤ λγ < 4: gaps just above 2, which keeps the key width ρ small)."""
    if gamma < 4:
        return Fraction(_ceil_frac(Fraction(2) / gamma))
    e = 0
    while 2 ** (e + 1) * 2 <= gamma:
        e += 1
    return Fraction(1, 2 ** e)


def dot(v: Sequence[int], p: tuple) -> Fraction:
    """vᵀp exactly, in integers over the lcm of p's denominators (one Fraction per point)."""
    D = lcm(*(x.denominator for x in p))  # entries are ints or Fractions
    return Fraction(sum(a * (x.numerator * (D // x.denominator)) for a, x in zip(v, p)), D)


def _gaps(v: Sequence[int], scaled: Tuple[int, List[Tuple[int, ...]]]) -> Tuple[List[Fraction], Fraction]:
    """Projections vᵀz of all points and their smallest gap γ (0 if two collide; 2 for one
    point), from the points as integers over their common denominator L (``Prepared.scaled``):
    one sort of integers."""
    L, P = scaled
    s = [sum(map(mul, v, p)) for p in P]
    ss = sorted(s)
    gap = min((b - a for a, b in zip(ss, ss[1:])), default=2 * L)
    return ([Fraction(t) for t in s] if L == 1 else [Fraction(t, L) for t in s]), Fraction(gap, L)


def _shrink_direction(v: Tuple[int, ...], s: List[Fraction], gamma: Fraction, scaled: Tuple[int, List[tuple]]):
    """While γ ≥ 4, replace v by ⌊v / 2^e⌋ (e = ⌊log₂(γ/2)⌋), if it still separates the points:
    smaller integer weights instead of a dyadic scale 2^-e (a slightly different direction,
    so its gaps are recomputed exactly)."""
    while gamma >= 4:
        e = (floor_frac(gamma / 2)).bit_length() - 1
        v2 = tuple(a >> e for a in v)
        if not any(v2):
            break
        s2, g2 = _gaps(v2, scaled)
        if g2 == 0 or g2 >= gamma:
            break
        v, s, gamma = v2, s2, g2
    return v, s, gamma


def project_to_line(prep: Prepared, seed: int, max_tries: int = 40) -> Projection:
    """A random integer direction v (v = (1) for d = 1; entries in [−K, K], K = max(16, V²),
    doubled after a collision), shrunk while its gaps are ≥ 4 (`_shrink_direction`), the
    scale λ of `projection_scale` and the integer shift β = ⌈2 − λ·min vᵀz⌉: then
    x_i = λ vᵀz_i + β ≥ 2 and the pairwise gaps are ≥ λγ ≥ 2.

    Resampled when two points collide (γ = 0) or when max x_i > R = 20 r V² δ⁻¹ √(πd)
    (checked exactly with π > 3: x² δ² ≤ 1200 r² V⁴ d).
    """
    rng = random.Random(seed)
    V, d = len(prep.points), prep.d
    K = max(16, V * V)
    for tries in range(1, max_tries + 1):
        v = (1,) if d == 1 else tuple(rng.randint(-K, K) for _ in range(d))
        if not any(v):
            continue
        s, gamma = _gaps(v, prep.scaled)
        if gamma == 0:
            K *= 2
            continue
        if d > 1:
            v, s, gamma = _shrink_direction(v, s, gamma, prep.scaled)
        lam = projection_scale(gamma)
        beta = _ceil_frac(2 - lam * min(s))
        xs = [lam * si + beta for si in s]
        top = max(xs)
        if top * top * prep.delta2 <= 1200 * prep.r2 * V ** 4 * d:
            return Projection(v, lam, beta, xs, gamma, tries, K)
        if d == 1:
            break
    raise DataError(f"Stage I: no direction put the {V} points in [2, R] with gaps ≥ 2 in {max_tries} tries")


def _ceil_frac(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def floor_frac(q: Fraction) -> int:
    return q.numerator // q.denominator


# ----------------------------------------------------------------------------- encoding (99)–(100)


@dataclass
class Group:
    """One Stage II group: interval [a, b], keys and labels per slot, crafted integers u, w."""

    a: int
    b: int
    keys: List[int]
    labels: List[int]
    u: int
    w: int


def pack(blocks: Sequence[int], width: int) -> int:
    """Σ_k blocks[k]·2^(width·(n−1−k)): block 0 is the most significant (BIN from the left)."""
    out = 0
    for x in blocks:
        if not 0 <= x < 2 ** width:
            raise ValueError(f"block {x} does not fit in {width} bits")
        out = (out << width) | x
    return out


def encode_groups(xs: Sequence[Fraction], ys: Sequence[int], g: int, rho: int, c: int) -> List[Group]:
    """Eqs. (99)–(100): sorted points in groups of g slots; the last group padded with
    (key 0, label 0) slots. Keys ⌊x_i⌋ in ρ bits, labels in c bits, fixed width gρ and gc."""
    groups = []
    for j in range(0, len(xs), g):
        gx, gy = list(xs[j:j + g]), list(ys[j:j + g])
        keys = [floor_frac(x) for x in gx] + [0] * (g - len(gx))
        labs = list(gy) + [0] * (g - len(gy))
        groups.append(Group(floor_frac(gx[0]), floor_frac(gx[-1]) + 1, keys, labs, pack(keys, rho), pack(labs, c)))
    return groups


# ----------------------------------------------------------------------------- register programs

Terms = Dict[str, int]
Expr = Tuple[Terms, int]

ORDER = ["x", "r", "p", "q", "T", "u", "w", "U", "s1u", "s2u", "A", "W", "s1w", "s2w", "L", "e1", "e2", "o",
         "acc", "out"]


class Program:
    """A deep ReLU network written as named registers, one layer at a time.

    ``layer(assign)`` adds a ReLU layer whose registers are ``assign`` (name → (terms over the
    previous layer's registers, bias)) plus, by default, a carry ``n ← n`` of every register
    not reassigned (exact under ReLU: every carried value is itself a ReLU output, ≥ 0).
    `compile` drops the registers nothing reads (backwards from the outputs) and turns
    each layer into an exact [`Affine`][exactmem.model.Affine].
    """

    def __init__(self, inputs: Sequence[str]):
        self.inputs = list(inputs)
        self.names: List[str] = list(inputs)
        self.layers: List[Tuple[Dict[str, Expr], bool]] = []

    def layer(self, assign: Dict[str, Expr], relu: bool = True, carry: bool = True) -> None:
        full: Dict[str, Expr] = {n: ({n: 1}, 0) for n in self.names} if carry else {}
        full.update(assign)
        known = set(self.names)
        for n, (terms, _) in full.items():
            bad = [s for s in terms if s not in known]
            if bad:
                raise KeyError(f"layer {len(self.layers)}: register {n} reads unknown {bad[0]!r}")
        self.layers.append((full, relu))
        self.names = list(full)

    @staticmethod
    def _order(names) -> List[str]:
        rank = {n: i for i, n in enumerate(ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(ORDER)), n))

    def compile(self, outputs: Sequence[str]) -> List[Affine]:
        needed = set(outputs)
        kept: List[Tuple[List[str], Dict[str, Expr], bool]] = []
        for assign, relu in reversed(self.layers):
            missing = needed - set(assign)
            if missing:
                raise KeyError(f"register {sorted(missing)[0]!r} is read but not computed")
            names = self._order(needed) if len(kept) else list(outputs)
            kept.append((names, {n: assign[n] for n in names}, relu))
            needed = {s for n in names for s, a in assign[n][0].items() if a}
        if not needed <= set(self.inputs):
            raise KeyError(f"the first layer reads non-inputs {sorted(needed - set(self.inputs))}")
        kept.reverse()
        out, prev = [], self.inputs
        for names, assign, relu in kept:
            col = {n: i for i, n in enumerate(prev)}
            W = [[0] * len(prev) for _ in names]
            for r, n in enumerate(names):
                for s, a in assign[n][0].items():
                    if a:
                        W[r][col[s]] += a
            b = [assign[n][1] for n in names]
            out.append(Affine(tuple(tuple(Fraction(a) for a in row) for row in W),
                              tuple(Fraction(x) for x in b) if any(b) else None, relu))
            prev = names
        return out


def plus_expr(e: Expr, terms: Terms, bias: int = 0) -> Expr:
    t = dict(e[0])
    for k, a in terms.items():
        t[k] = t.get(k, 0) + a
    return ({k: a for k, a in t.items() if a}, e[1] + bias)


def _comparators(z: Expr, h: int, s1: str, s2: str) -> Dict[str, Expr]:
    """Doubling-map comparators (background §1.3(c)): s₁ = σ(z − h + 1), s₂ = σ(z − h); for an
    integer z, s₁ − s₂ = 1[z ≥ h]."""
    return {s1: plus_expr(z, {}, 1 - h), s2: plus_expr(z, {}, -h)}


def _doubled(reg: str, s1: str, s2: str, K: int) -> Expr:
    """One doubling step z' = 2z − K (s₁ − s₂) (drop the top bit of an M-bit z, K = 2^M)."""
    return ({reg: 2, s1: -K, s2: K}, 0)


# ----------------------------------------------------------------------------- Stage II


def emit_selection(prog: Program, groups: Sequence[Group], first_extra: Optional[Dict[str, Expr]] = None
                    ) -> Tuple[Expr, Expr]:
    """Lemmas G.2/G.3, pipelined: layer t computes the indicator inputs p = σ(2(a_t − x)),
    q = σ(2(x − b_t)) of group t, the indicator T = σ(1 − p − q) of group t − 1, and adds
    u_{t−2}·T, w_{t−2}·T to the registers u, w. Returns the expressions u + u_{m−1}T and
    w + w_{m−1}T read by the first Stage III layer (m + 1 layers in all)."""
    m = len(groups)
    for t in range(m + 1):
        a: Dict[str, Expr] = dict(first_extra or {}) if t == 0 else {}
        if t < m:
            a["p"] = ({"x": -2}, 2 * groups[t].a)
            a["q"] = ({"x": 2}, -2 * groups[t].b)
        if t >= 1:
            a["T"] = ({"p": -1, "q": -1}, 1)
        if t >= 2:
            gr = groups[t - 2]
            a["u"] = ({**({"u": 1} if t >= 3 else {}), "T": gr.u}, 0)
            a["w"] = ({**({"w": 1} if t >= 3 else {}), "T": gr.w}, 0)
        prog.layer(a)
    last = groups[-1]
    load_u = ({**({"u": 1} if m >= 2 else {}), "T": last.u}, 0)
    load_w = ({**({"w": 1} if m >= 2 else {}), "T": last.w}, 0)
    return load_u, load_w


# ----------------------------------------------------------------------------- Stage III


@dataclass
class Schedule:
    """Layer timing of Stage III (relative to its first layer, which loads u and w).

    Slot k's key is complete at E_k − 1, compared at E_k (e₁, e₂), gated at E_k + 1 (o) and
    added at E_k + 2; E_k = E_0 + kP with P = max(ρ, c), E_0 = 1 + max(ρ, c − 1). Key bits of
    slot k are consumed at layers E_k − ρ … E_k − 1, label bits at E_k − c + 1 … E_k.
    """

    g: int
    rho: int
    c: int

    @property
    def P(self) -> int:
        return max(self.rho, self.c)

    def E(self, k: int) -> int:
        return 1 + max(self.rho, self.c - 1) + k * self.P

    @property
    def n_layers(self) -> int:
        return self.E(self.g - 1) + 2

    def key_step(self) -> Dict[int, bool]:
        """layer → True if it consumes the first key bit of a slot (reset A)."""
        return {self.E(k) - self.rho + i: i == 0 for k in range(self.g) for i in range(self.rho)}

    def label_step(self) -> Dict[int, bool]:
        return {self.E(k) - self.c + 1 + i: i == 0 for k in range(self.g) for i in range(self.c)}


def _emit_extraction(prog: Program, load_u: Expr, load_w: Expr, sch: Schedule, Mu: int, Mw: int, gate_bits: int
                     ) -> Expr:
    """Lemma G.6 with the doubling map: two bit streams (keys from u: Mu bits, labels from w:
    Mw bits), per slot a key A and label L, comparator e₁ = σ(A − x), e₂ = σ(x − A − 1),
    gate o = σ(L − 2^gate_bits (e₁ + e₂)), accumulator acc. Returns the output expression."""
    Ku, hu, Kw, hw = 2 ** Mu, 2 ** (Mu - 1), 2 ** Mw, 2 ** (Mw - 1)
    ksteps, lsteps = sch.key_step(), sch.label_step()
    E_layers = {sch.E(k): k for k in range(sch.g)}
    for tau in range(sch.n_layers):
        a: Dict[str, Expr] = {}
        if tau == 0:
            zu, zw = load_u, load_w
        else:
            zu = _doubled("U", "s1u", "s2u", Ku) if tau in ksteps else ({"U": 1}, 0)
            zw = _doubled("W", "s1w", "s2w", Kw) if tau in lsteps else ({"W": 1}, 0)
            if tau in ksteps:
                a["A"] = ({**({} if ksteps[tau] else {"A": 2}), "s1u": 1, "s2u": -1}, 0)
            if tau in lsteps:
                a["L"] = ({**({} if lsteps[tau] else {"L": 2}), "s1w": 1, "s2w": -1}, 0)
        a["U"], a["W"] = zu, zw
        a.update(_comparators(zu, hu, "s1u", "s2u"))
        a.update(_comparators(zw, hw, "s1w", "s2w"))
        if tau in E_layers:
            a["e1"] = ({"A": 1, "x": -1}, 0)
            a["e2"] = ({"x": 1, "A": -1}, -1)
        if tau - 1 in E_layers:
            a["o"] = ({"L": 1, "e1": -2 ** gate_bits, "e2": -2 ** gate_bits}, 0)
        if tau - 2 in E_layers:
            a["acc"] = ({"acc": 1, "o": 1} if E_layers[tau - 2] > 0 else {"o": 1}, 0)
        prog.layer(a)
    return ({"acc": 1, "o": 1} if sch.g > 1 else {"o": 1}, 0)


# ----------------------------------------------------------------------------- Lemma C.1


@dataclass
class Layout:
    """The integer rounding choices of one Lemma C.1 memorizer (documented in docs/vardi.md)."""

    N: int
    g: int  # slots per group
    m: int  # groups
    rho: int  # key width
    c: int  # label width
    padding: int  # padded (key 0, label 0) slots in the last group

    @property
    def P(self) -> int:
        return max(self.rho, self.c)

    @property
    def relu_layers(self) -> int:
        """Stage II (m + 1) + Stage III (3 + max(ρ, c − 1) + (g − 1)P) ReLU layers."""
        return (self.m + 1) + (3 + max(self.rho, self.c - 1) + (self.g - 1) * self.P)


def relu_depth_c1(lay: Layout) -> int:
    """Exact ReLU depth of `build_c1`: Stage I (1) + Stage II + Stage III."""
    return 1 + lay.relu_layers


def max_bits_impl(lay: Layout, proj_bits: int) -> int:
    """Exact max bits: the doubling weights 2^(gρ), 2^(gc) cost gP + 2 bits; Stage I its own."""
    return max(lay.g * lay.P + 2, proj_bits)


def plan_layout(N: int, rho: int, c: int, slots: Optional[int]) -> Layout:
    g = slot_count(N) if slots is None else slots
    if g < 1:
        raise DataError(f"slots = {g}: need at least one slot per group")
    m = -(-N // g)
    return Layout(N, g, m, rho, c, m * g - N)


def _stream_bits(groups: Sequence[Group], lay: Layout, reading: str) -> Tuple[int, int, int, int, int]:
    """(key block, label block, M_u, M_w, gate bits) as read by Stage III.

    ``paper``: (ρ, c, gρ, gc, c) — the roles of (99)–(100). ``literal_rho_c``: Lemma C.1's
    printed "ρ = log C, c = log R" (blocks swapped). ``literal_w_blocks``: Lemma G.6 eq. (153)
    as printed, the label block BIN_{ρj+1:ρ(j+1)}(w) (ρ-bit blocks of w). ``len_scaled``:
    streams scaled by 2^LEN(u_j), 2^LEN(w_j) (max over groups) instead of the fixed widths
    2^(gρ), 2^(gc) (G.6's "LEN(u) = ρn" read literally).
    """
    if reading == "paper":
        return lay.rho, lay.c, lay.g * lay.rho, lay.g * lay.c, lay.c
    if reading == "literal_rho_c":
        return lay.c, lay.rho, lay.g * lay.c, lay.g * lay.rho, lay.rho
    if reading == "literal_w_blocks":
        return lay.rho, lay.rho, lay.g * lay.rho, lay.g * lay.c, lay.rho
    if reading == "len_scaled":
        Mu = max(max(gr.u.bit_length() for gr in groups), 1)
        Mw = max(max(gr.w.bit_length() for gr in groups), 1)
        return lay.rho, lay.c, Mu, Mw, lay.c
    raise ValueError(f"unknown reading {reading!r}; use one of {READINGS}")


def emit_memorizer(prog: Program, xs: Sequence[Fraction], ys: Sequence[int], lay: Layout, reading: str,
                    first_extra: Optional[Dict[str, Expr]] = None) -> Tuple[Expr, List[Group]]:
    """Stages II and III of one Lemma C.1 memorizer on sorted labelled points (x already in
    the register ``x``). Returns its output expression and the groups."""
    groups = encode_groups(xs, ys, lay.g, lay.rho, lay.c)
    kb, lb, Mu, Mw, gate = _stream_bits(groups, lay, reading)
    load_u, load_w = emit_selection(prog, groups, first_extra)
    out = _emit_extraction(prog, load_u, load_w, Schedule(lay.g, kb, lb), Mu, Mw, gate)
    return out, groups


def emit_stage1(prog: Program, proj: Projection) -> None:
    prog.layer({"x": ({f"z{k}": a for k, a in enumerate(proj.w)}, proj.beta)}, carry=False)


def sorted_labelled(prep: Prepared, proj: Projection) -> Tuple[List[Fraction], List[int]]:
    """The labelled points' projections x_i in increasing order, and their labels in that order."""
    xs = proj.values[:prep.n_labelled]
    L = lcm_of_denominators(xs)
    keys = [x.numerator * (L // x.denominator) for x in xs]  # integers in the order of the x_i
    order = sorted(range(prep.n_labelled), key=keys.__getitem__)
    return [proj.values[i] for i in order], [prep.labels[i] for i in order]


def common_info(prep: Prepared, proj: Projection, C: int) -> Dict[str, object]:
    xs = proj.values
    V, N, d = len(prep.points), prep.n_labelled, prep.d
    R2 = paper_R2(prep.r2, prep.delta2, V, d)
    return {
        "N": N, "V": V, "d": d, "C": C,
        "r^2": prep.raw_r2, "delta^2": prep.raw_delta2,
        "lemma r^2 (clamped >= 1)": prep.r2, "lemma delta^2 (clamped <= 1)": prep.delta2,
        "log2 R (enclosure)": str(E.log2(R2) * Fraction(1, 2)),
        "projection v": proj.v, "projection scale lambda": proj.lam, "projection shift beta": proj.beta,
        "projection min gap gamma": proj.gamma, "projection tries": proj.tries, "direction range K": proj.K,
        "projected min": min(xs), "projected max": max(xs),
        "projection bits": proj.bits,
        "Lemma C.2 budget log2(3 d r V^2 sqrt(pi)/delta)":
            str(lemma_c2_bits(d, prep.r2, prep.delta2, V)),
        "park gap bound (display)": _park_display(proj, prep, V, d),
    }


def _park_display(proj: Projection, prep: Prepared, V: int, d: int) -> str:
    """Park et al.'s guaranteed gap ‖v‖ δ √(8/(πd)) / V² next to the measured γ (display only)."""
    import math

    nv = math.sqrt(sum(a * a for a in proj.v))
    bound = nv * math.sqrt(float(prep.raw_delta2)) * math.sqrt(8 / (math.pi * d)) / V ** 2
    return f"gamma = {float(proj.gamma):.4g}, Park bound {bound:.4g} (ratio {float(proj.gamma) / bound:.3g})"


def stage1_expr(proj: Projection, inputs: Sequence[str]) -> Expr:
    """Stage I's pre-activation wᵀz + β over the input registers (Lemma C.2)."""
    return ({name: a for name, a in zip(inputs, proj.w)}, proj.beta)


def emit_stages_2_3(prog: Program, prep: Prepared, proj: Projection, C: int, slots: Optional[int] = None,
                    reading: str = "paper") -> Tuple[Expr, Layout]:
    """Lemma C.1 Stages II–III on the projected labelled points (register ``x`` must hold
    Stage I's output): the rounding choices (ρ = LEN(max key), c, g, m) and the emitted layers.
    Returns the output expression and the layout. Every register already in ``prog`` is
    carried along (Kajitsuka & Sato Thm B.1 attaches the token id F this way)."""
    xs, ys = sorted_labelled(prep, proj)
    rho = max(2, max(floor_frac(x) for x in xs).bit_length())
    lay = plan_layout(len(xs), rho, label_width(C), slots)
    out, _ = emit_memorizer(prog, xs, ys, lay, reading)
    return out, lay


def build_c1(points: Sequence, labels: Sequence, C: int, extra: Sequence = (), seed: int = 0,
             slots: Optional[int] = None, reading: str = "paper") -> Tuple[Model, Dict[str, object]]:
    """Kajitsuka & Sato Lemma C.1 (Vardi et al.'s Õ(√N) memorizer, zero on extra points).

    ``points``/``labels``: the N labelled points (labels in {0,…,C−1}); ``extra``: the V − N
    points that must map to 0. ``slots`` overrides g; ``reading`` builds a literal misreading
    of the lemma for ``docs/errata.md`` (never the default).
    """
    prep = prepare(points, labels, extra, C)
    proj = project_to_line(prep, seed)
    prog = Program([f"z{k}" for k in range(prep.d)])
    emit_stage1(prog, proj)
    out, lay = emit_stages_2_3(prog, prep, proj, C, slots, reading)
    prog.layer({"out": out}, relu=False, carry=False)
    model = Model(tuple(prog.compile(["out"])), "vectors", prep.d, "last", "identity", name="vardi_c1")
    info = common_info(prep, proj, C)
    info.update({"reading": reading, "slots g": lay.g, "groups m": lay.m, "key bits rho": lay.rho,
                 "label bits c": lay.c, "padded slots": lay.padding, "u_j bits (g*rho)": lay.g * lay.rho,
                 "w_j bits (g*c)": lay.g * lay.c, "layout": lay})
    return model, info


# ----------------------------------------------------------------------------- Lemma F.1


def subset_sizes(N: int, B: int) -> List[int]:
    """Lemma F.1's split: ⌈N/B²⌉ subsets of B² consecutive sorted points, the last one shorter."""
    if B < 1:
        raise DataError(f"B = {B}: need B ≥ 1")
    s = B * B
    return [min(s, N - i) for i in range(0, N, s)]


def build_f1(points: Sequence, labels: Sequence, C: int, B: int, extra: Sequence = (), seed: int = 0
             ) -> Tuple[Model, Dict[str, object]]:
    """Kajitsuka & Sato Lemma F.1 (Vardi et al. Thm 6.2 extended): one shared Stage I, then one
    Lemma C.1 memorizer per subset of B² sorted labelled points (every other point is an
    extra point of that memorizer), their outputs summed in a carried register r
    (eq. (140): F_i(x, r) = (x, r + F̃_i(x)))."""
    prep = prepare(points, labels, extra, C)
    N = prep.n_labelled
    if not 1 <= B or B * B > N:
        raise DataError(f"B = {B} is not in [√N] = [1, ⌊√{N}⌋] (Lemma F.1 needs 1 ≤ B ≤ √N)")
    proj = project_to_line(prep, seed)
    xs, ys = sorted_labelled(prep, proj)
    rho = max(2, max(floor_frac(x) for x in xs).bit_length())
    c = label_width(C)
    prog = Program([f"z{k}" for k in range(prep.d)])
    emit_stage1(prog, proj)
    layouts: List[Layout] = []
    prev: Optional[Expr] = None  # output expression of the previous subset's memorizer
    start = 0
    for i, n_i in enumerate(subset_sizes(N, B)):
        lay = plan_layout(n_i, rho, c, None)
        # r ← r + (previous subset's output), inside this subset's first layer (no extra depth)
        first = None if i == 0 else {"r": prev if i == 1 else plus_expr(prev, {"r": 1})}
        prev, _ = emit_memorizer(prog, xs[start:start + n_i], ys[start:start + n_i], lay, "paper", first)
        layouts.append(lay)
        start += n_i
    final = prev if len(layouts) == 1 else plus_expr(prev, {"r": 1})
    prog.layer({"out": final}, relu=False, carry=False)
    model = Model(tuple(prog.compile(["out"])), "vectors", prep.d, "last", "identity", name="vardi_f1")
    info = common_info(prep, proj, C)
    info.update({"B": B, "subsets": len(layouts), "subset sizes": [l.N for l in layouts],
                 "slots per subset": [l.g for l in layouts], "groups per subset": [l.m for l in layouts],
                 "key bits rho": rho, "label bits c": c, "layouts": layouts})
    return model, info


def relu_depth_f1(layouts: Sequence[Layout]) -> int:
    """Exact ReLU depth of `build_f1`: Stage I + each subset's Stages II–III (the sum
    register r is updated inside the next subset's first layer, so it costs no layer)."""
    return 1 + sum(l.relu_layers for l in layouts)


# ----------------------------------------------------------------------------- the gadget alone


def bit_extractor(M: int, nbits: Optional[int] = None) -> Model:
    """The doubling-map extractor alone (background §1.3(c)): input an integer 0 ≤ U < 2^M,
    output its top ``nbits`` bits (most significant first) and the shifted remainder
    2^nbits·U mod 2^M. One ReLU layer per bit after the first comparator layer."""
    nbits = M if nbits is None else nbits
    K, h = 2 ** M, 2 ** (M - 1)
    prog = Program(["z0"])
    z0: Expr = ({"z0": 1}, 0)
    prog.layer({"U": z0, **_comparators(z0, h, "s1u", "s2u")}, carry=False)
    for i in range(nbits):
        z = _doubled("U", "s1u", "s2u", K)
        prog.layer({"U": z, f"b{i:04d}": ({"s1u": 1, "s2u": -1}, 0), **_comparators(z, h, "s1u", "s2u")})
    outs = [f"b{i:04d}" for i in range(nbits)] + ["U"]
    prog.layer({n: ({n: 1}, 0) for n in outs}, relu=False, carry=False)
    return Model(tuple(prog.compile(outs)), "vectors", 1, "last", "identity", name="doubling_extractor")
