"""Dana, Pydi & Chevaleyre (AISTATS 2025): the design half of the association construction.

Parameter checks (Corollary 1's capacity, the rank bounds of docs/errata.md), exact linear algebra,
the seeded embeddings and query-key matrices (Lemma 2, note §3.2–§3.3, §3.6), the attention features
F (eq. (1), note §3.1) exactly or in Arb balls, and the circle targets (Prop. 3, note §1.4).

`exactmem.constructions.dana.association` solves the readout on top of these and re-exports every name.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import List, Optional, Sequence, Tuple

from ...data.dataset import DataError

Vec = List[Fraction]
Mat = List[List[Fraction]]

MODES = ("base2", "rational")
QK_SCHEMES = ("rank1", "random", "lemma2")


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
# (private helpers on flint; exactmem.arith.linalg offers the general versions)

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
    """Exact version of `_independent_rows` (rref over Z of the column-scaled Fᵀ)."""
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

    from ...arith.linalg import lower_fraction, upper_fraction

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
