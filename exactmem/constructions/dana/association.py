"""Dana, Pydi & Chevaleyre (AISTATS 2025): an attention-only Transformer memorizes H·d_h + d associations.

Reference: the technical note ``papers/dana.md`` (the paper itself is not in the repository).
Section numbers below (§1.1, §3.4, ...) are the note's.

The construction (note §3.1), for T0 token sequences t with next tokens g(t):

1. **Target sequence encoder** f_{W,E} (Prop. 3, note §1.4): unembedding vectors W_j on the
   unit circle — here *rational* points on the circle (`circle_points`), exactly of norm
   1 — and targets E(t) = λ_t W_{g(t)} (λ_t > 0), so the logit margin of t is
   λ_t (1 − max_{j≠g} ⟨W_j, W_g⟩), an exact rational (Prop. 3's λ(1 − cos 2π/N)).
2. **Embeddings and query-key matrices** (Lemma 2, note §3.2–§3.3, §3.6), chosen seeded.
3. **Feature matrix** F = [x(t,S); W_V^1 A^1(t); …; W_V^H A^H(t)] ((d + H·d_h) × T0) with
   A^h(t) = Σ_s a^h(t)_s x(t,s) (eq. (1)); its column rank T0 is *checked*, never assumed.
4. **Finite-weight reparametrisation** (note §3.4, derived): solve [M | W_O'] F = E, then
   W_O := M⁻¹ W_O' and W_U := W M, so T(t) = W E(t) with no λ → ∞ skip head.

Two softmax modes (see ``docs/dana.md``):

* ``mode="base2"`` — mode (a), exact base-b softmax: integer embeddings and integer
  query-key matrices Q_h, K_h with W_QK^h = (ln b_h)·Q_hᵀK_h, so the scores are integers k_s
  times ln b_h and the attention weights b^{k_s}/Σ_j b^{k_j} are rational (note §3.7's
  exactness tip; b = 2 by default). F, its rank and the solve are exact over Q, and the
  network with weights exactly b^k/Σb^k outputs W E(t) exactly. For b = 2 (the default) it
  is stored as it is — attention kind ``softmax2``, WQ = Q_h, WK = K_h, the exact W_O and
  W_U (or, with ``round_readout``, the smallest B-bit rounding that the *exact* evaluation
  still certifies) — and the independent checker certifies it exactly, no intervals. Other
  bases have no core attention kind: that network replaces ln b by a dyadic ρ_h close to it
  (WQ = ρ_h Q_h, kind ``softmax``) and is certified in mode (b).
* ``mode="rational"`` — mode (b), arbitrary rational weights: random rational embeddings and
  query-key matrices; softmax weights are transcendental, F is enclosed in Arb balls, its full
  column rank is certified by a ball determinant that excludes 0, and the readout is solved
  on the ball midpoints.

In mode (b) (and mode (a) with a base ≠ 2) the readout (W_O, W_U, and ρ) is rounded to B
significant bits, with B the smallest number found by doubling and bisection for which a
rigorous Arb enclosure of the rounded network's margins stays positive (the *design check*,
used only to choose B). The verdict is always the independent checker's (``exactmem check``).

Everything the construction computes from the data is exact or a rigorous ball; floating
point appears only in `float_condition_estimate`, a labelled estimate for reports.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...data.dana_data import LookupTable
from ...data.dataset import DataError, Dataset
from ...model.layers import Affine, Attention, Embed, Head, Model
from ...arith.numbers import bits, least_true, round_to_bits

from .design import (MODES, QK_SCHEMES, Design, HeadChoice, Mat, Vec,  # noqa: F401 - re-exported
                          _arb, _arb_mat_of, _det_exact, _dot, _independent_rows, _matvec, _solve_rows,
                          association_targets,
                          attention_average_exact, attention_columns_exact, attention_matrices_ball,
                          base_weights, capacity, check_architecture, choose_design, circle_margin,
                          circle_points, corollary2_accuracy, cos_margin_enclosure, exact_rank_columns,
                          feature_columns_exact, feature_matrix_ball, integer_scores, log2_abs_interval,
                          mahdavi_capacity, paper_param_count, rank_bound, score_table, sequence_rank_bound,
                          target_margins, target_unembedding)


class RankDeficient(DataError):
    """F does not have full column rank T0 for the chosen embeddings (the message says why)."""


# ============================================================================ the solve (note §3.4)

@dataclass
class Readout:
    """Output matrices: W_O (d × H·d_h, heads side by side) and W_U (N × d), plus M and the rows used."""

    M: Mat
    WO: Mat
    WU: Mat
    rows: List[int]


def _mat_mul(A: Mat, B: Mat) -> Mat:
    """Exact product (flint fmpq_mat)."""
    from flint import fmpq, fmpq_mat

    fa = fmpq_mat([[fmpq(x.numerator, x.denominator) for x in r] for r in A])
    fb = fmpq_mat([[fmpq(x.numerator, x.denominator) for x in r] for r in B])
    C = fa * fb
    return [[Fraction(int(C[i, j].p), int(C[i, j].q)) for j in range(C.ncols())] for i in range(C.nrows())]


def _inverse(M: Mat) -> Mat:
    n = len(M)
    I = [[Fraction(int(i == j)) for j in range(n)] for i in range(n)]
    return _solve_rows(M, I)


def solve_readout(F_cols: Sequence[Vec], E_cols: Sequence[Vec], W: Mat, d: int, rows: List[int]) -> Readout:
    """Exact [M | W_O'] F = E on the rows ``rows`` of F (an invertible T×T block), then
    W_O = M⁻¹ W_O' and W_U = W M (note §3.4, derived — not in the paper).

    Unknowns outside ``rows`` are fixed: a skip row i not used gets M's column e_i, an unused
    head row gets a zero column of W_O'. Raises `RankDeficient` if M is singular.
    """
    R = len(F_cols[0])
    used = set(rows)
    fixed = [[Fraction(int(i == k)) if (k < d and k not in used) else Fraction(0) for k in range(R)]
             for i in range(d)]
    rhs = []  # row t of (E − X_fixed F)ᵀ
    for col, e in zip(F_cols, E_cols):
        rhs.append([e[i] - sum((fixed[i][k] * col[k] for k in range(d) if k not in used), Fraction(0))
                    for i in range(d)])
    A = [[col[k] for k in rows] for col in F_cols]  # F_selᵀ
    try:
        Xt = _solve_rows(A, rhs)  # len(rows) × d
    except ZeroDivisionError:
        raise RankDeficient("the selected rows of F are singular") from None
    X = [list(r) for r in fixed]
    for a, k in enumerate(rows):
        for i in range(d):
            X[i][k] = Xt[a][i]
    M = [r[:d] for r in X]
    WOp = [r[d:] for r in X]
    if _det_exact(M) == 0:
        raise RankDeficient("M is singular; re-draw the target scales (note §3.4)")
    Minv = _inverse(M)
    return Readout(M, _mat_mul(Minv, WOp), _mat_mul(W, M), list(rows))


def solve_readout_ball(Fb, E_cols: Sequence[Vec], W: Mat, d: int, rows: List[int], prec: int) -> Readout:
    """Mode (b): the same solve on the Arb feature matrix; the solution's ball midpoints
    (exact dyadics) give M and W_O'; then W_O = M⁻¹W_O' and W_U = W M exactly over Q."""
    from flint import arb_mat, ctx

    from ...arith.linalg import mid_fraction

    R, T = Fb.nrows(), Fb.ncols()
    used = set(rows)
    old = ctx.prec
    ctx.prec = prec
    try:
        A = arb_mat([[Fb[k, t] for k in rows] for t in range(T)])
        rhs = []
        for t in range(T):
            rhs.append([_arb(E_cols[t][i]) - (Fb[i, t] if (i < d and i not in used) else 0) for i in range(d)])
        Xt = A.solve(arb_mat(rhs))
        X = [[Fraction(int(i == k)) if (k < d and k not in used) else Fraction(0) for k in range(R)]
             for i in range(d)]
        for a, k in enumerate(rows):
            for i in range(d):
                X[i][k] = mid_fraction(Xt[a, i])
    except ZeroDivisionError:
        raise RankDeficient("the feature matrix is numerically singular at this precision") from None
    finally:
        ctx.prec = old
    M = [r[:d] for r in X]
    if _det_exact(M) == 0:
        raise RankDeficient("M is singular; re-draw the target scales (note §3.4)")
    return Readout(M, _mat_mul(_inverse(M), [r[d:] for r in X]), _mat_mul(W, M), list(rows))


# ============================================================================ rounding and the design check

def dyadic_ln(base: Fraction, B: int) -> Fraction:
    """ρ ≈ ln(base), a dyadic with B significant bits (Arb's rigorous log, then rounded)."""
    from flint import ctx

    from ...arith.linalg import mid_fraction

    old = ctx.prec
    ctx.prec = B + 64
    try:
        r = mid_fraction(_arb(Fraction(base)).log())
    finally:
        ctx.prec = old
    return round_to_bits(r, B)


def round_sig(x: Fraction, B: int) -> Fraction:
    """x rounded to a dyadic m·2^e with |m| ≈ 2^B (B or B + 1 significant bits, nearest), by
    integer shifts — fast for rationals with huge numerators and denominators."""
    if x == 0:
        return x
    p, q = x.numerator, x.denominator
    a = abs(p)
    e = a.bit_length() - q.bit_length() - B
    num, den = (a, q << e) if e >= 0 else (a << -e, q)
    m = (2 * num + den) // (2 * den)
    m = -m if p < 0 else m
    return Fraction(m << e) if e >= 0 else Fraction(m, 1 << -e)


def _round_mat(M: Mat, B: Optional[int]) -> Mat:
    return [[round_sig(x, B) if B else x for x in r] for r in M]


def model_rhos(design: Design, B: Optional[int]) -> List[Fraction]:
    """ρ_h per head: a B-bit dyadic next to ln b_h in mode (a); 1 in mode (b)."""
    if design.mode == "rational":
        return [Fraction(1)] * design.H
    return [dyadic_ln(h.base, B or 96) for h in design.heads]


def model_query_matrices(design: Design, rhos: Sequence[Fraction]) -> List[Mat]:
    """WQ per head as stored in the model: ρ_h·Q_h (so W_QK^h = ρ_h Q_hᵀK_h)."""
    return [[[rho * x for x in r] for r in h.Q] for rho, h in zip(rhos, design.heads)]


def _logit_check(design: Design, As, WO: Mat, WU: Mat, seqs, labels, prec: int,
                 targets: Optional[Sequence[Vec]] = None) -> List[Fraction]:
    """Rigorous (Arb) lower bounds of each sequence's logit margin, given the attention averages
    ``As`` of the real softmax; with ``targets`` (identity decoding) upper bounds on
    max_j |T(t)_j − target_j| instead. Used only to choose the number of bits (the design
    check); the verdict is the independent checker's.
    """
    from flint import ctx

    from ...arith.linalg import lower_fraction, upper_fraction

    old = ctx.prec
    ctx.prec = prec
    try:
        T = len(seqs)
        d, dh = design.d, design.dh
        Z = _arb_mat_of([[design.x(t)[-1][i] for t in seqs] for i in range(d)])
        for h, (hc, A) in enumerate(zip(design.heads, As)):
            WOh = [r[h * dh:(h + 1) * dh] for r in WO]
            Z = Z + (_arb_mat_of(WOh) * _arb_mat_of(hc.V)) * A
        L = _arb_mat_of(WU) * Z
        out = []
        for t in range(T):
            if targets is not None:
                out.append(max(upper_fraction(abs(L[j, t] - _arb(targets[t][j]))) for j in range(L.nrows())))
                continue
            g = labels[t]
            out.append(min((lower_fraction(L[g, t] - L[j, t]) for j in range(L.nrows()) if j != g),
                           default=Fraction(1)))
        return out
    finally:
        ctx.prec = old


def _smallest_bits(ok, start: int = 8, cap: int = 8192) -> int:
    """Smallest B (doubling from ``start``, then bisection) with ok(B) true; DataError past ``cap``."""
    B = start
    while not ok(B):
        B *= 2
        if B > cap:
            raise DataError(f"no precision up to {cap} bits passes the design check (F too ill-conditioned)")
    if B // 2 < start:
        return B
    return least_true(ok, B // 2, B)


# ============================================================================ the association construction

@dataclass
class DanaBuild:
    """What `build_association` / `build_distribution` return."""

    model: Model
    dataset: Dataset
    design: Design
    exact_readout: Optional[Readout]  # mode (a): exact solution (the base-b network outputs W E(t))
    readout: Readout  # rounded, as stored in the model
    W: Mat  # target unembedding (circle)
    targets: List[Vec]  # E(t) columns
    info: Dict[str, object] = field(default_factory=dict)
    features: Optional[List[Vec]] = field(default=None, repr=False)  # mode (a): exact F columns
    E_all: Optional[List[Vec]] = field(default=None, repr=False)  # distributions: E(t) on every sequence


def with_rounded_readout(build: DanaBuild, B: Optional[int] = None, tol: Optional[Fraction] = None) -> DanaBuild:
    """A softmax2 build (mode (a), base 2) with W_O, W_U rounded to B significant bits — by
    default the smallest B (doubling, then bisection) for which the *exact* logits still give
    every argmax (identity decoding: stay within ``tol`` of the labels). No new solve."""
    if build.features is None or build.exact_readout is None or not uses_softmax2(build.design):
        raise DataError("rounding with an exact check needs a mode (a) base-2 (softmax2) build")
    design, base, d = build.design, build.exact_readout, build.design.d
    ident = build.model.decode == "identity"
    labels = None if ident else list(build.dataset.labels)
    targets = [list(lab) for lab in build.dataset.labels] if ident else None
    if ident and tol is None:
        raise DataError("identity decoding needs the tolerance tol")
    if B is None:
        B = _choose_bits_exact(build.features, base, d, labels, targets, tol, start=16 if ident else 8)
    elif not _exact_ok(build.features, base, d, B, labels, targets, tol):
        raise DataError(f"the exact check of the {B}-bit readout fails (softmax2)")
    model, readout, _ = _finish(design, base, base.rows, B, build.model.decode)
    info = dict(build.info, bits=B)
    return DanaBuild(model, build.dataset, design, base, readout, build.W, build.targets, info, build.features,
                     build.E_all)


def uses_softmax2(design: Design) -> bool:
    """Mode (a) with base 2 on every head: the network is stored exactly with attention kind
    ``softmax2`` (weights 2^{k_s}/Σ_j 2^{k_j}, note §3.7), WQ = Q_h, WK = K_h."""
    return design.mode == "base2" and all(h.base == 2 for h in design.heads)


def assemble_model(design: Design, WQs: Sequence[Mat], readout: Readout, decode: str = "argmax",
                   kind: str = "softmax") -> Model:
    """Model([Embed(e, pos), Attention(H heads, ``kind``, residual, last query), Affine(W_U)]) (eq. (2))."""
    dh = design.dh
    heads = []
    for h, (hc, WQ) in enumerate(zip(design.heads, WQs)):
        WOh = [r[h * dh:(h + 1) * dh] for r in readout.WO]
        heads.append(Head(WV=hc.V, WO=WOh, WQ=WQ, WK=hc.K))
    layers = [Embed(design.E, design.P),
              Attention(heads, kind=kind, residual=True, query="last", keys="all"),
              Affine(readout.WU)]
    return Model(layers, input_type="tokens", input_dim=design.N, readout="last", decode=decode,
                 name="dana")


def _certify_rank_ball(Fb, rows: List[int], prec: int) -> Tuple[bool, Optional[Tuple[int, int]]]:
    """Ball determinant of the selected rows of F excludes 0 ⇒ full column rank (rigorous)."""
    from flint import arb_mat, ctx

    from ...arith.linalg import lower_fraction, upper_fraction

    old = ctx.prec
    ctx.prec = prec
    try:
        A = arb_mat([[Fb[k, t] for t in range(Fb.ncols())] for k in rows])
        D = A.det()
        if not D.is_finite():
            return False, None
        lo, hi = lower_fraction(D), upper_fraction(D)
        if lo > 0 or hi < 0:
            a = min(abs(lo), abs(hi))
            return True, (log2_abs_interval(a)[0], log2_abs_interval(max(abs(lo), abs(hi)))[1])
        return False, None
    finally:
        ctx.prec = old


def _weights_bits(M: Mat) -> Tuple[int, Fraction]:
    xs = [x for r in M for x in r]
    b = [bits(x) for x in xs]
    return max(b), Fraction(sum(b), len(b))


def _solve_design(design: Design, seqs, E_cols: Sequence[Vec], W: Mat, prec: int, info: Dict[str, object]):
    """Feature matrix, rank certificate and readout solve for one design (note §3.1 steps 2–3).

    Returns (rows used, readout before rounding, exact readout or None, score table, exact F
    columns or None) and fills ``info``; raises `RankDeficient` when rank F < T0.
    """
    d, T0 = design.d, len(seqs)
    rows_total = d + design.H * design.dh
    sc = score_table(design, seqs)
    if design.mode == "base2":
        F = feature_columns_exact(design, seqs)
        r = exact_rank_columns(F)
        info["rank"] = r
        if r < T0:
            raise RankDeficient(f"exact rank F = {r} < T0 = {T0}")
        rows = _independent_rows(F, d) if T0 < rows_total else list(range(rows_total))
        exact = solve_readout(F, E_cols, W, d, rows)
        det = _det_exact([[c[k] for k in rows] for c in F])
        ex_bits = _weights_bits(exact.WO + exact.WU)
        info.update(rank_certificate="exact rank over Q (flint fmpz_mat)", log2_det_F=log2_abs_interval(det),
                    exact_max_bits=ex_bits[0], exact_mean_bits=ex_bits[1])
        return rows, exact, exact, sc, F
    Fb = feature_matrix_ball(design, model_rhos(design, None), seqs, prec, sc)
    rows = _independent_rows(_ball_mids(Fb), d)[:T0] if T0 < rows_total else list(range(rows_total))
    if len(rows) < T0:
        info["rank"] = len(rows)
        raise RankDeficient(f"midpoint rank {len(rows)} < T0 = {T0}")
    ok, logdet = _certify_rank_ball(Fb, rows, prec)
    if not ok:
        raise RankDeficient(f"the Arb determinant of F does not exclude 0 at precision {prec}")
    info.update(rank=T0, rank_certificate=f"Arb determinant of a {T0}×{T0} block of F excludes 0 "
                                          f"(precision {prec})", log2_det_F=logdet)
    return rows, solve_readout_ball(Fb, E_cols, W, d, rows, prec), None, sc, None


def _choose_bits(design: Design, base: Readout, seqs, prec: int, sc, labels=None, targets=None, tol=None,
                 fixed_bits: Optional[int] = None, start: int = 8) -> int:
    """Smallest B for which the rounded network passes the design check (argmax margins > 0, or
    |T(t) − target| ≤ tol/2 for identity decoding). Mode (b)'s attention does not depend on B."""
    cache = {}

    def As_for(B):
        key = B if design.mode == "base2" else None
        if key not in cache:
            cache.clear()
            cache[key] = attention_matrices_ball(design, model_rhos(design, B), seqs, prec, sc)
        return cache[key]

    def ok(B):
        WO, WU = _round_mat(base.WO, B), _round_mat(base.WU, B)
        vals = _logit_check(design, As_for(B), WO, WU, seqs, labels, prec, targets)
        return min(vals) > 0 if targets is None else max(vals) <= tol / 2

    if fixed_bits is not None:
        if not ok(fixed_bits):
            raise DataError(f"the design check fails at the requested {fixed_bits} bits")
        return fixed_bits
    return _smallest_bits(ok, start=start)


def exact_logits(F_cols: Sequence[Vec], WO: Mat, WU: Mat, d: int) -> Mat:
    """Logits of the stored network on the memorized sequences, exactly: column t is
    W_U (x(t,S) + W_O [W_V^h A^h(t)]_h) = W_U [I_d | W_O] F(t) (eq. (2); mode (a), base 2)."""
    G = _mat_mul(WU, [[Fraction(int(i == k)) for k in range(d)] + list(WO[i]) for i in range(d)])
    return _mat_mul(G, [list(r) for r in zip(*F_cols)])


def _choose_bits_exact(F_cols, base: Readout, d: int, labels=None, targets=None, tol=None,
                       start: int = 8) -> int:
    """Smallest B (doubling, then bisection) for which the B-bit rounded readout passes on the
    *exact* logits (softmax2): strict argmax margins, or |T(t) − target| ≤ tol. Exact, so the
    independent checker then certifies the same network exactly."""
    return _smallest_bits(lambda B: _exact_ok(F_cols, base, d, B, labels, targets, tol), start=start)


def _exact_ok(F_cols, base: Readout, d: int, B: Optional[int], labels=None, targets=None, tol=None) -> bool:
    """Does the B-bit rounded readout (B None: exact) pass on the exact logits? (softmax2)"""
    L = exact_logits(F_cols, _round_mat(base.WO, B), _round_mat(base.WU, B), d)
    if targets is not None:
        return all(abs(L[j][t] - targets[t][j]) <= tol for t in range(len(targets)) for j in range(len(L)))
    return all(L[g][t] > L[j][t] for t, g in enumerate(labels) for j in range(len(L)) if j != g)


def _finish(design: Design, base: Readout, rows: List[int], B: Optional[int], decode: str = "argmax"):
    """The stored network: readout rounded to B bits (B None: exact). softmax2 for mode (a)
    with base 2 (WQ = Q_h, ρ = 1); otherwise kind softmax with WQ = ρ_h Q_h."""
    readout = Readout(base.M, _round_mat(base.WO, B), _round_mat(base.WU, B), rows)
    if uses_softmax2(design):
        rhos = [Fraction(1)] * design.H
        return (assemble_model(design, model_query_matrices(design, rhos), readout, decode, kind="softmax2"),
                readout, rhos)
    rhos = model_rhos(design, B)
    return assemble_model(design, model_query_matrices(design, rhos), readout, decode), readout, rhos


def build_association(table: LookupTable, d: int, dh: int, H: int, mode: str = "rational",
                      qk: Optional[str] = None, seed: int = 0, bases=None, rank1_shape: bool = False,
                      tries: int = 4, prec: int = 256, fixed_bits: Optional[int] = None,
                      sigma_min: bool = True, design: Optional[Design] = None,
                      round_readout: bool = False) -> DanaBuild:
    """Corollary 1 (general d): an AoT with H heads of dimension d_h memorizing the table's
    T0 ≤ H·d_h + d associations, built with exact/certified rank and the §3.4 solve.

    Mode (a) with base 2 stores a ``softmax2`` network with the exact W_O, W_U (``info['bits']``
    is None); ``round_readout=True`` (or ``fixed_bits``) rounds them to the smallest B (or the
    given B) for which the exact logits still certify every association.

    ``design`` fixes the embeddings and query-key/value matrices (one attempt only);
    otherwise ``tries`` seeded designs are drawn by `choose_design`.

    Raises `RankDeficient` (a `DataError`) when T0 exceeds the rank bound
    d + H·min(d_h, d) (note §3.6) or when ``tries`` seeded designs all give rank F < T0.
    """
    N, S = table.N, table.S
    check_architecture(N, S, d, dh, H)
    T0 = len(table)
    if T0 == 0:
        raise DataError("the look-up table is empty")
    if T0 > rank_bound(d, dh, H):
        raise RankDeficient(f"T0 = {T0} associations exceed the rank bound d + H·min(d_h, d) = "
                            f"{rank_bound(d, dh, H)} of F (note §3.6; Corollary 1 claims H·d_h + d = "
                            f"{capacity(d, dh, H)})")
    sb = sequence_rank_bound(table.sequences, d, dh, H)
    if T0 > sb:
        raise RankDeficient(f"T0 = {T0} associations exceed rank F ≤ min(d, distinct last tokens) + H·min(d_h, d) "
                            f"= {sb}: the skip rows x(t,S) see only the last token, and these sequences have "
                            f"{len({t[-1] for t in table.sequences})} distinct last tokens (docs/errata.md)")
    rng = random.Random(seed)
    W = target_unembedding(N, d, table.labels)
    seqs, labels = table.sequences, table.labels
    why = []
    fixed = design
    if fixed is not None and (fixed.N, fixed.S, fixed.d, fixed.dh, fixed.H) != (N, S, d, dh, H):
        raise DataError("the given design's (N, S, d, d_h, H) differ from the requested architecture")
    for attempt in range(1 if fixed is not None else tries):
        design = fixed or choose_design(N, S, d, dh, H, mode, qk, seed + 7919 * attempt, bases, rank1_shape)
        mode = design.mode
        E_cols = association_targets(W, labels, d, rng)
        info: Dict[str, object] = {"mode": mode, "qk": design.qk, "T0": T0, "rows": d + H * dh,
                                   "design_seed": design.seed, "attempts": attempt + 1}
        try:
            rows, base, exact, sc, F = _solve_design(design, seqs, E_cols, W, prec, info)
        except RankDeficient as e:
            why.append(str(e))
            continue
        info["target_margin_min"] = min(target_margins(W, E_cols, labels))
        s2 = uses_softmax2(design)
        if s2:
            B = None
            info["attention"] = "softmax2 (exact)"
        else:
            B = _choose_bits(design, base, seqs, prec, sc, labels=labels, fixed_bits=fixed_bits)
        model, readout, rhos = _finish(design, base, rows, B)
        info["bits"] = B
        if sigma_min:
            info["sigma_min_lower"] = (sigma_min_exact(F, rows, prec) if F is not None
                                       else sigma_min_certified(design, rhos, seqs, rows, prec, sc))
        b = DanaBuild(model, table.to_dataset(), design, exact, readout, W, E_cols, info, F)
        if s2 and (round_readout or fixed_bits is not None):
            b = with_rounded_readout(b, fixed_bits)
        return b
    raise RankDeficient(f"rank F < T0 = {T0} in {tries} seeded designs (mode {mode}; {why[-1]}); mode (a)'s "
                        f"integer scores take few values when d is small — try mode 'rational', more "
                        f"bases, or fewer associations")


def _ball_mids(Fb) -> List[Vec]:
    """Columns of the midpoint matrix (exact dyadics) of an arb_mat."""
    from ...arith.linalg import mid_fraction

    return [[mid_fraction(Fb[i, t]) for i in range(Fb.nrows())] for t in range(Fb.ncols())]


def sigma_min_certified(design: Design, rhos, seqs, rows: List[int], prec: int, scores=None) -> Optional[Fraction]:
    """Certified lower bound on σ_min of the T0×T0 block of F used by the solve (exactmem.arith.linalg),
    None when it cannot be certified at ``prec``. For the real softmax network (ρ in mode (a))."""
    from flint import ctx

    from ...arith.linalg import sigma_min_lower

    Fb = feature_matrix_ball(design, rhos, seqs, prec, scores)
    from flint import arb_mat

    old = ctx.prec
    ctx.prec = prec
    try:
        A = arb_mat([[Fb[k, t] for t in range(Fb.ncols())] for k in rows])
        return sigma_min_lower(A)
    finally:
        ctx.prec = old


def sigma_min_exact(F_cols: Sequence[Vec], rows: List[int], prec: int) -> Optional[Fraction]:
    """Certified lower bound on σ_min of the T0×T0 block ``rows`` of an exact F (mode (a))."""
    from flint import ctx

    from ...arith.linalg import sigma_min_lower

    old = ctx.prec
    ctx.prec = prec
    try:
        return sigma_min_lower(_arb_mat_of([[c[k] for c in F_cols] for k in rows]))
    finally:
        ctx.prec = old


def float_condition_estimate(cols: Sequence[Sequence]) -> Tuple[float, float]:
    """FLOAT ESTIMATE (for reports only, never a verdict): (σ_min, σ_max) of F by NumPy SVD."""
    import numpy as np

    A = np.array([[float(x) for x in c] for c in cols]).T
    s = np.linalg.svd(A, compute_uv=False)
    return float(s[-1]), float(s[0])


# ============================================================================ exact reference evaluator (mode (a))

def base2_logits(E: Mat, P: Mat, heads: Sequence[Tuple[Mat, Mat, Mat, Mat, Fraction]], WU: Mat,
                 seq: Sequence[int]) -> List[Fraction]:
    """Exact logits of the ideal mode-(a) network on one sequence (eq. (2) with base-b softmax).

    ``heads``: (Q, K, W_V, W_O, b) with integer scores (Q x_S)·(K x_s) and weights
    b^{k_s}/Σ_j b^{k_j}. Self-contained (reads only the weights): a reference, independent of
    the core's ``softmax2`` attention kind, to test it against (``tests/test_softmax2.py``).
    """
    xs = [[a + b for a, b in zip(E[tok], P[s])] for s, tok in enumerate(seq)]
    z = list(xs[-1])
    for Q, K, V, WO, b in heads:
        q = [sum((a * c for a, c in zip(r, xs[-1])), Fraction(0)) for r in Q]
        ks = []
        for x in xs:
            kx = [sum((a * c for a, c in zip(r, x)), Fraction(0)) for r in K]
            k = sum((a * c for a, c in zip(q, kx)), Fraction(0))
            if k.denominator != 1:
                raise ValueError(f"score {k} is not an integer")
            ks.append(int(k))
        m = min(ks)
        w = [Fraction(b) ** (k - m) for k in ks]
        tot = sum(w)
        A = [sum((wi * x[i] for wi, x in zip(w, xs)), Fraction(0)) / tot for i in range(len(z))]
        vA = [sum((a * c for a, c in zip(r, A)), Fraction(0)) for r in V]
        o = [sum((a * c for a, c in zip(r, vA)), Fraction(0)) for r in WO]
        z = [a + c for a, c in zip(z, o)]
    return [sum((a * c for a, c in zip(r, z)), Fraction(0)) for r in WU]


def ideal_heads(build: DanaBuild, readout: Optional[Readout] = None):
    """The (Q, K, W_V, W_O^h, b) tuples of a mode-(a) build for `base2_logits`."""
    r = readout or build.exact_readout
    dh = build.design.dh
    return [(h.Q, h.K, h.V, [row[i * dh:(i + 1) * dh] for row in r.WO], h.base)
            for i, h in enumerate(build.design.heads)]
