"""Dana, Pydi & Chevaleyre (AISTATS 2025): an attention-only Transformer memorizes H·d_h + d associations.

Reference: the technical note ``papers/dana.md`` (the paper itself is not in the repository).
Section numbers below (§1.1, §3.4, ...) are the note's.

The construction (note §3.1), for T0 token sequences t with next tokens g(t):

1. **Target sequence encoder** f_{W,E} (Prop. 3, note §1.4): unembedding vectors W_j on the
   unit circle — here *rational* points on the circle (:func:`circle_points`), exactly of norm
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
point appears only in :func:`float_condition_estimate`, a labelled estimate for reports.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ..data.dana_data import LookupTable
from ..data.dataset import DataError, Dataset
from ..model.layers import Affine, Attention, Embed, Head, Model
from ..numbers import bits, least_true, round_to_bits

Vec = List[Fraction]
Mat = List[List[Fraction]]

MODES = ("base2", "rational")
QK_SCHEMES = ("rank1", "random", "lemma2")


class RankDeficient(DataError):
    """F does not have full column rank T0 for the chosen embeddings (the message says why)."""


# ============================================================================ parameter checks

def check_architecture(N: int, S: int, d: int, dh: int, H: int) -> None:
    """Positive integer sizes (note §1.1); d_h > d is allowed only to exhibit note §3.6's gap."""
    for name, v in (("N", N), ("S", S), ("d", d), ("d_h", dh), ("H", H)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise DataError(f"{name} must be a positive integer, got {v!r}")


def capacity(d: int, dh: int, H: int) -> int:
    """Corollary 1 / Theorem 1 capacity T0 = H·d_h + d (note §2)."""
    return H * dh + d


def rank_bound(d: int, dh: int, H: int) -> int:
    """Upper bound d + H·min(d_h, d) on rank F (note §3.6): W_V^h A^h(t) has rank ≤ min(d_h, d)."""
    return d + H * min(dh, d)


def sequence_rank_bound(seqs: Sequence[Sequence[int]], d: int, dh: int, H: int) -> int:
    """Sharper bound min(d, #distinct last tokens) + H·min(d_h, d) on rank F (derived — not in
    the paper): the skip rows x(t,S) = e(t_S) + pos_S depend on the last token only."""
    return min(d, len({t[-1] for t in seqs})) + H * min(dh, d)


def mahdavi_capacity(dh: int, H: int) -> int:
    """Mahdavi et al.'s capacity H(d_h − 1) + 1 (note §4.1, Table 1)."""
    return H * (dh - 1) + 1


def corollary2_accuracy(X: int, T0: int, N: int) -> Fraction:
    """φ(X) = 1/N + (1 − 1/N)·X/T0 (Corollary 2, note §2), capped at X = T0."""
    X = min(X, T0)
    return Fraction(1, N) + (1 - Fraction(1, N)) * Fraction(X, T0)


def paper_param_count(N: int, S: int, d: int, dh: int, H: int, rank1: bool = False) -> int:
    """Theorem 1's d(S + 2N + 4·d_h·H), or Remark 2's rank-1 variant d(S + 2N + 2(d_h+1)H)."""
    return d * (S + 2 * N + (2 * (dh + 1) if rank1 else 4 * dh) * H)


# ============================================================================ exact linear algebra
# (private helpers on flint; exactmem.linalg offers the general versions)

def _lcm_den(xs) -> int:
    return math.lcm(*(x.denominator for x in xs)) if xs else 1


def _fmpz_columns(cols: Sequence[Sequence[Fraction]]):
    """fmpz_mat whose column t is column t scaled by the lcm of its denominators (rank-preserving)."""
    from flint import fmpz_mat

    n = len(cols[0])
    ints = []
    for c in cols:
        L = _lcm_den(c)
        ints.append([int(x.numerator * (L // x.denominator)) for x in c])
    return fmpz_mat([[ints[t][i] for t in range(len(cols))] for i in range(n)])


def exact_rank_columns(cols: Sequence[Sequence[Fraction]]) -> int:
    """Exact rank over Q of the matrix with the given columns (flint fmpz_mat)."""
    if not cols:
        return 0
    return int(_fmpz_columns(cols).rank())


def _solve_rows(A_rows: Sequence[Sequence[Fraction]], B_rows: Sequence[Sequence[Fraction]]) -> Mat:
    """Exact X with A X = B for square nonsingular A (rows scaled to integers, flint solve)."""
    from flint import fmpz_mat

    Ai, Bi = [], []
    for a, b in zip(A_rows, B_rows):
        L = _lcm_den(list(a) + list(b))
        Ai.append([int(x * L) for x in a])
        Bi.append([int(x * L) for x in b])
    X = fmpz_mat(Ai).solve(fmpz_mat(Bi))  # raises ZeroDivisionError when A is singular
    return [[Fraction(int(X[i, j].p), int(X[i, j].q)) for j in range(X.ncols())] for i in range(X.nrows())]


def _det_exact(rows: Sequence[Sequence[Fraction]]) -> Fraction:
    from flint import fmpz_mat

    scale = Fraction(1)
    ints = []
    for r in rows:
        L = _lcm_den(r)
        scale *= L
        ints.append([int(x * L) for x in r])
    D = fmpz_mat(ints).det()
    return Fraction(int(D)) / scale


PRIME = (1 << 61) - 1  # a Mersenne prime for rank searches modulo p


def _independent_rows(cols: Sequence[Sequence[Fraction]], prefer_first: int = 0) -> List[int]:
    """Indices of independent rows of the matrix with these columns, greedily from row 0, so
    the skip rows 0..prefer_first−1 are kept when possible.

    Search modulo the prime 2^61 − 1 (pivots of the rref of Fᵀ mod p): rows independent mod p
    are independent over Q, so the selected block is nonsingular — every later use re-checks
    it exactly (mode (a) solve) or with a ball determinant (mode (b)). Falls back to the exact
    rref over Z if p happens to divide a denominator.
    """
    from flint import nmod_mat

    T, R = len(cols), len(cols[0])
    rowsT = []
    for c in cols:
        L = _lcm_den(c)
        if L % PRIME == 0:
            return _independent_rows_exact(cols)
        rowsT.append([int(x.numerator * (L // x.denominator)) % PRIME for x in c])
    M = nmod_mat(T, R, [v for r in rowsT for v in r], PRIME)
    Rr, r = M.rref()
    piv, i = [], 0
    for j in range(R):
        if i < int(r) and int(Rr[i, j]) != 0:
            piv.append(j)
            i += 1
    return piv


def _independent_rows_exact(cols: Sequence[Sequence[Fraction]]) -> List[int]:
    """Exact version of :func:`_independent_rows` (rref over Z of the column-scaled Fᵀ)."""
    G = _fmpz_columns(cols).transpose()
    R, _den, r = G.rref()
    piv, i = [], 0
    for j in range(G.ncols()):
        if i < int(r) and R[i, j] != 0:
            piv.append(j)
            i += 1
    return piv


def log2_abs_interval(q: Fraction) -> Tuple[int, int]:
    """Integers (lo, hi) with lo ≤ log2|q| < hi for q ≠ 0 (from bit lengths, exact)."""
    p, r = abs(q.numerator), q.denominator
    a, b = p.bit_length(), r.bit_length()
    return a - b - 1, a - b + 1


# ============================================================================ design: embeddings, QK, W_V

@dataclass
class HeadChoice:
    """One head's exact choices: Q, K (s×d), W_V (d_h×d), and the softmax base (mode (a) only).

    W_QK^h = Qᵀ K (the paper's (W_Q^h)ᵀ W_K^h, note §1.1): the score of position s is
    (Q x_S)·(K x_s). In mode (a) the real score is (ln base)·(Q x_S)·(K x_s).
    """

    Q: Mat
    K: Mat
    V: Mat
    base: Optional[Fraction] = None


@dataclass
class Design:
    """Embeddings e (N×d), positional embeddings pos (S×d) and the heads' Q, K, W_V (note §3.2–§3.3)."""

    N: int
    S: int
    d: int
    dh: int
    mode: str
    E: Mat
    P: Mat
    heads: List[HeadChoice]
    qk: str
    seed: int
    rank1_shape: bool = False

    @property
    def H(self) -> int:
        return len(self.heads)

    def x(self, t: Sequence[int]) -> List[Vec]:
        """x(t, s) = e(t_s) + pos_s for s = 1..S (note §1.1)."""
        return [[a + b for a, b in zip(self.E[tok], self.P[s])] for s, tok in enumerate(t)]


def _frac_int(rng: random.Random, lo: int, hi: int) -> Fraction:
    return Fraction(rng.randint(lo, hi))


def _distinct_rows(rng: random.Random, n: int, d: int, draw) -> Mat:
    seen, out = set(), []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 1000 * n + 1000:
            raise DataError(f"could not draw {n} distinct embedding vectors in dimension {d}")
        r = tuple(draw() for _ in range(d))
        if r in seen:
            continue
        seen.add(r)
        out.append(list(r))
    return out


def _full_row_rank(rng: random.Random, rows: int, cols: int, draw) -> Mat:
    for _ in range(1000):
        M = [[draw() for _ in range(cols)] for _ in range(rows)]
        if exact_rank_columns([list(c) for c in zip(*M)]) == min(rows, cols):
            return M
    raise DataError(f"could not draw a full-rank {rows}×{cols} value matrix")


def _value_matrix(rng: random.Random, dh: int, d: int, draw) -> Mat:
    """W_V^h: the identity when d_h = d (any invertible choice gives the same rank), else random full rank."""
    if dh == d:
        return [[Fraction(int(i == j)) for j in range(d)] for i in range(d)]
    return _full_row_rank(rng, dh, d, draw)


def choose_design(N: int, S: int, d: int, dh: int, H: int, mode: str = "rational", qk: Optional[str] = None,
                  seed: int = 0, bases: Optional[Sequence] = None, rank1_shape: bool = False) -> Design:
    """Seeded embeddings, positional embeddings, query-key and value matrices.

    * mode ``"base2"`` (mode (a)): integer embeddings in [−R, R] (R smallest with
      (2R+1)^d ≥ 4N, so N distinct rows are easy to draw), positions in {−1, 0, 1}, integer
      Q, K in {−1, 0, 1}; bases b_h (default 2) cycle through ``bases``.
    * mode ``"rational"`` (mode (b)): embeddings and positions k/8 (|k| ≤ 8), Q entries k/2
      (|k| ≤ 8), K entries k/8 — the scaled-up query gave the best conditioning in note
      §3.6's float experiments.
    * ``qk``: ``"rank1"`` (only the first row of Q, K nonzero: W_QK has rank 1, Remark 2),
      ``"random"`` (all s rows random), ``"lemma2"`` (the proof's w_h·E_11 with w_h = h + 1).
      Default: rank1 in mode (a) (keeps integer scores small), random in mode (b).
    * ``rank1_shape``: Q, K of shape 1×d (Remark 2's parameter count) instead of d_h×d.
    """
    check_architecture(N, S, d, dh, H)
    if mode not in MODES:
        raise DataError(f"mode must be one of {MODES}, got {mode!r}")
    qk = qk or ("rank1" if mode == "base2" else "random")
    if qk not in QK_SCHEMES:
        raise DataError(f"qk must be one of {QK_SCHEMES}, got {qk!r}")
    rng = random.Random(seed)
    if mode == "base2":
        R = 1
        while (2 * R + 1) ** d < 4 * N:
            R += 1
        E = _distinct_rows(rng, N, d, lambda: _frac_int(rng, -R, R))
        P = _distinct_rows(rng, S, d, lambda: _frac_int(rng, -1, 1))
        qd = kd = vd = lambda: _frac_int(rng, -1, 1)
        blist = [Fraction(b) for b in (bases or [2])]
        if any(b <= 0 or b == 1 for b in blist):
            raise DataError(f"softmax bases must be positive rationals ≠ 1, got {blist}")
    else:
        E = _distinct_rows(rng, N, d, lambda: Fraction(rng.randint(-8, 8), 8))
        P = _distinct_rows(rng, S, d, lambda: Fraction(rng.randint(-8, 8), 8))
        qd = lambda: Fraction(rng.randint(-8, 8), 2)
        kd = vd = lambda: Fraction(rng.randint(-8, 8), 8)
        blist = [None]
    s = 1 if rank1_shape else dh
    zero = Fraction(0)
    heads = []
    for h in range(H):
        if qk == "lemma2":
            Q = [[Fraction(h + 1) if (i == 0 and j == 0) else zero for j in range(d)] for i in range(s)]
            K = [[Fraction(1) if (i == 0 and j == 0) else zero for j in range(d)] for i in range(s)]
        elif qk == "rank1":
            Q = [[qd() if i == 0 else zero for _ in range(d)] for i in range(s)]
            K = [[kd() if i == 0 else zero for _ in range(d)] for i in range(s)]
        else:
            Q = [[qd() for _ in range(d)] for _ in range(s)]
            K = [[kd() for _ in range(d)] for _ in range(s)]
        V = _value_matrix(rng, dh, d, vd)
        heads.append(HeadChoice(Q, K, V, blist[h % len(blist)]))
    return Design(N, S, d, dh, mode, E, P, heads, qk, seed, rank1_shape)


# ============================================================================ features (eq. (1), note §3.1)

def _dot(a, b):
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def _matvec(M, v):
    return [_dot(r, v) for r in M]


def _int_scaled(M: Mat) -> Tuple[List[List[int]], int]:
    """An exact matrix as (integer matrix, common denominator D): M = ints / D."""
    D = _lcm_den([x for r in M for x in r])
    return [[int(x * D) for x in r] for r in M], D


def _ivec(M: List[List[int]], v: List[int]) -> List[int]:
    return [sum(a * b for a, b in zip(r, v)) for r in M]


def score_table(design: Design, seqs: Sequence[Sequence[int]]) -> List[List[List[Fraction]]]:
    """scores[h][t][s] = (Q_h x(t,S))·(K_h x(t,s)), exact (the bilinear form x_Sᵀ Q_hᵀK_h x_s).

    The real softmax score is ρ_h times this (ρ_h ≈ ln b_h in mode (a), ρ_h = 1 in mode (b)).
    Integer arithmetic over common denominators.
    """
    Eint, DE = _int_scaled(design.E + design.P)
    N = design.N
    out = []
    for h in design.heads:
        Qi, DQ = _int_scaled(h.Q)
        Ki, DK = _int_scaled(h.K)
        den = DE * DE * DQ * DK
        rows = []
        for t in seqs:
            xs = [[a + b for a, b in zip(Eint[tok], Eint[N + s])] for s, tok in enumerate(t)]
            q = _ivec(Qi, xs[-1])
            rows.append([Fraction(sum(a * b for a, b in zip(q, _ivec(Ki, x))), den) for x in xs])
        out.append(rows)
    return out


def integer_scores(head: HeadChoice, xs: List[Vec]) -> List[int]:
    """Mode (a) scores k_s = (Q x_S)·(K x_s); they must be integers (the real score is k_s·ln b)."""
    q = _matvec(head.Q, xs[-1])
    ks = [_dot(q, _matvec(head.K, x)) for x in xs]
    return _as_integers(ks)


def _as_integers(ks: Sequence[Fraction]) -> List[int]:
    for k in ks:
        if k.denominator != 1:
            raise DataError(f"mode (a) needs integer scores, got {k}: use integer embeddings and Q, K")
    return [int(k) for k in ks]


def base_weights(ks: Sequence[int], base: Fraction) -> List[Fraction]:
    """Exact base-b softmax b^{k_s}/Σ_j b^{k_j} (note §3.7), shifted by min k for small numbers."""
    m = min(ks)
    w = [Fraction(base) ** (k - m) for k in ks]
    tot = sum(w)
    return [x / tot for x in w]


def attention_average_exact(head: HeadChoice, xs: List[Vec], ks: Optional[Sequence[int]] = None) -> Vec:
    """A^h(t) = Σ_s a^h(t)_s x(t,s) with exact base-b weights (mode (a))."""
    a = base_weights(ks if ks is not None else integer_scores(head, xs), head.base)
    return [sum((w * x[i] for w, x in zip(a, xs)), Fraction(0)) for i in range(len(xs[0]))]


def feature_columns_exact(design: Design, seqs: Sequence[Sequence[int]], with_values: bool = True) -> List[Vec]:
    """Columns F(t) = [x(t,S); W_V^1 A^1(t); …; W_V^H A^H(t)] (note §3.1 step 2), exact (mode (a)).

    With ``with_values=False``: A′(t) = [x(t,S); A^1(t); …; A^H(t)] (before W_V, note §3.6).
    """
    if design.mode != "base2":
        raise DataError("exact features need mode 'base2' (softmax weights are transcendental otherwise)")
    sc = score_table(design, seqs)
    cols = []
    for ti, t in enumerate(seqs):
        xs = design.x(t)
        col = list(xs[-1])
        for h, hc in enumerate(design.heads):
            A = attention_average_exact(hc, xs, _as_integers(sc[h][ti]))
            col += _matvec(hc.V, A) if with_values else A
        cols.append(col)
    return cols


def attention_columns_exact(design: Design, seqs: Sequence[Sequence[int]]) -> List[Vec]:
    """Columns A′(t) = [x(t,S); A^1(t); …; A^H(t)] (before W_V; note §3.6), exact (mode (a))."""
    return feature_columns_exact(design, seqs, with_values=False)


def _arb(q: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(q.numerator, q.denominator))


def attention_matrices_ball(design: Design, rhos: Sequence[Fraction], seqs, prec: int, scores=None):
    """Per head, the d×T arb_mat of A^h(t) for the real softmax with scores ρ_h·(Q_h x_S)·(K_h x_s)."""
    from flint import arb_mat, ctx

    sc = scores if scores is not None else score_table(design, seqs)
    old = ctx.prec
    ctx.prec = prec
    try:
        out = []
        xs_arb = [[[_arb(v) for v in x] for x in design.x(t)] for t in seqs]
        for h, rho in enumerate(rhos):
            cols = []
            for ti, xa in enumerate(xs_arb):
                ks = sc[h][ti]
                m = max(ks)
                e = [_arb(rho * (k - m)).exp() for k in ks]
                tot = sum(e[1:], e[0])
                a = [x / tot for x in e]
                cols.append([sum((w * x[i] for w, x in zip(a[1:], xa[1:])), a[0] * xa[0][i])
                             for i in range(design.d)])
            out.append(arb_mat([[c[i] for c in cols] for i in range(design.d)]))
        return out
    finally:
        ctx.prec = old


def _arb_mat_of(M: Mat):
    from flint import arb_mat

    return arb_mat([[_arb(x) for x in r] for r in M])


def feature_matrix_ball(design: Design, rhos: Sequence[Fraction], seqs, prec: int, scores=None):
    """F as an arb_mat ((d + H·d_h) × T) for the real softmax (mode (b), or mode (a) with ρ)."""
    from flint import arb_mat, ctx

    As = attention_matrices_ball(design, rhos, seqs, prec, scores)
    old = ctx.prec
    ctx.prec = prec
    try:
        T = len(seqs)
        blocks = [_arb_mat_of([[design.x(t)[-1][i] for t in seqs] for i in range(design.d)])]
        blocks += [_arb_mat_of(h.V) * A for h, A in zip(design.heads, As)]
        rows = []
        for B in blocks:
            for i in range(B.nrows()):
                rows.append([B[i, j] for j in range(T)])
        return arb_mat(rows)
    finally:
        ctx.prec = old


# ============================================================================ targets (Prop. 3, note §1.4)

def circle_points(N: int, frac_bits: int = 24) -> List[Tuple[Fraction, Fraction]]:
    """N distinct rational points *exactly* on the unit circle near the angles 2πj/N (Prop. 3).

    Rational parametrisation ((1 − u²)/(1 + u²), 2u/(1 + u²)) with u a dyadic (2^−frac_bits)
    next to tan(θ_j/2), θ_j ∈ (−π, π]; θ = π gives (−1, 0). Norm 1 is exact.
    """
    from flint import arb, ctx

    if N < 1:
        raise DataError("N must be positive")
    old = ctx.prec
    ctx.prec = 2 * frac_bits + 64
    try:
        pts = []
        for j in range(N):
            num = 2 * j if 2 * j <= N else 2 * j - 2 * N  # θ = π·num/N ∈ (−π, π]
            if num == N:
                pts.append((Fraction(-1), Fraction(0)))
                continue
            u_ball = (arb.pi() * _arb(Fraction(num, 2 * N))).tan()
            m, e = (int(v) for v in u_ball.mid().man_exp())
            u = Fraction(m << e) if e >= 0 else Fraction(m, 1 << -e)
            u = Fraction(round(u * 2 ** frac_bits), 2 ** frac_bits)
            pts.append(((1 - u * u) / (1 + u * u), 2 * u / (1 + u * u)))
    finally:
        ctx.prec = old
    if len(set(pts)) != N:
        raise DataError(f"circle points collide for N = {N}; raise frac_bits")
    return pts


def circle_margin(pts: Sequence[Tuple[Fraction, Fraction]]) -> Fraction:
    """Exact min over g of 1 − max_{j≠g} ⟨W_j, W_g⟩: Prop. 3's margin per unit λ (note §1.4)."""
    N = len(pts)
    if N == 1:
        return Fraction(1)
    return min(1 - max(pts[j][0] * pts[g][0] + pts[j][1] * pts[g][1] for j in range(N) if j != g)
               for g in range(N))


def cos_margin_enclosure(N: int, prec: int = 128) -> Tuple[Fraction, Fraction]:
    """Rational enclosure [lo, hi] of 1 − cos(2π/N) (Arb, rigorous)."""
    from flint import arb, ctx

    from ..linalg import lower_fraction, upper_fraction

    old = ctx.prec
    ctx.prec = prec
    try:
        v = 1 - (2 * arb.pi() / N).cos()
        return lower_fraction(v), upper_fraction(v)
    finally:
        ctx.prec = old


def target_unembedding(N: int, d: int, labels: Sequence[int], frac_bits: int = 24) -> Mat:
    """W (N×d): the circle in the first two coordinates, zeros elsewhere (d ≥ 2).

    d = 1 (the rank-1 bottleneck, Prop. 1): W = +1 for one label, −1 for another, 0 for the
    rest; a table with three or more distinct next tokens cannot be separated (errata).
    """
    if d >= 2:
        pts = circle_points(N, frac_bits)
        return [[pts[j][0], pts[j][1]] + [Fraction(0)] * (d - 2) for j in range(N)]
    used = sorted(set(labels))
    if len(used) > 2:
        raise DataError(f"d = 1 separates at most 2 next tokens by argmax (logits W_U·z with z ∈ R: only "
                        f"the max and the min of W_U can win), but the table uses {len(used)}: {used[:5]}")
    W = [[Fraction(0)] for _ in range(N)]
    W[used[0]][0] = Fraction(1)
    if len(used) == 2:
        W[used[1]][0] = Fraction(-1)
    return W


def association_targets(W: Mat, labels: Sequence[int], d: int, rng: random.Random) -> Mat:
    """Columns E(t) = λ_t W_{g(t)} (+ free coordinates 3..d, which W ignores), λ_t ∈ [1, 2].

    The per-sequence scales and free coordinates make [M | W_O'] generic, so M is invertible
    (note §3.4: "perturb the targets, e.g. per-sequence scales").
    """
    cols = []
    for g in labels:
        lam = Fraction(8 + rng.randint(0, 8), 8)
        col = [lam * w for w in W[g]]
        if d > 2:
            for i in range(2, d):
                col[i] = Fraction(rng.randint(-8, 8), 8)
        cols.append(col)
    return cols


def target_margins(W: Mat, E_cols: Sequence[Vec], labels: Sequence[int]) -> List[Fraction]:
    """Exact logit margins min_{j≠g} (W_g − W_j)·E(t) of the target encoder."""
    N = len(W)
    out = []
    for col, g in zip(E_cols, labels):
        lg = _dot(W[g], col)
        out.append(min((lg - _dot(W[j], col) for j in range(N) if j != g), default=Fraction(1)))
    return out


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
    head row gets a zero column of W_O'. Raises :class:`RankDeficient` if M is singular.
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

    from ..linalg import mid_fraction

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

    from ..linalg import mid_fraction

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

    from ..linalg import lower_fraction, upper_fraction

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
    """What :func:`build_association` / :func:`build_distribution` return."""

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

    from ..linalg import lower_fraction, upper_fraction

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
    columns or None) and fills ``info``; raises :class:`RankDeficient` when rank F < T0.
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
    otherwise ``tries`` seeded designs are drawn by :func:`choose_design`.

    Raises :class:`RankDeficient` (a :class:`DataError`) when T0 exceeds the rank bound
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
    from ..linalg import mid_fraction

    return [[mid_fraction(Fb[i, t]) for i in range(Fb.nrows())] for t in range(Fb.ncols())]


def sigma_min_certified(design: Design, rhos, seqs, rows: List[int], prec: int, scores=None) -> Optional[Fraction]:
    """Certified lower bound on σ_min of the T0×T0 block of F used by the solve (exactmem.linalg),
    None when it cannot be certified at ``prec``. For the real softmax network (ρ in mode (a))."""
    from flint import ctx

    from ..linalg import sigma_min_lower

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

    from ..linalg import sigma_min_lower

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
    """The (Q, K, W_V, W_O^h, b) tuples of a mode-(a) build for :func:`base2_logits`."""
    r = readout or build.exact_readout
    dh = build.design.dh
    return [(h.Q, h.K, h.V, [row[i * dh:(i + 1) * dh] for row in r.WO], h.base)
            for i, h in enumerate(build.design.heads)]
