"""Dana, Pydi & Chevaleyre, Theorem 1 (distribution memorization): the explicit encoder and its certified AoT.

The explicit encoder, the AoT realising it on the T_ε most likely sequences, certified KL
enclosures, and the constant C of bound (4) enclosed rigorously (note ``papers/dana.md`` §2, §3.5,
§7.1; App. A.2 eqs. (13)–(14)).

Moved out of `.dana` (``dana.build_distribution`` etc. still resolve there). The rigorous
C: for the feature matrix F = W_V A′ (r × T, r = d + H·d_h) with the T_ε likely columns F₁
square, eq. (14)'s (P₁VP₁ᵀ)⁻¹P₁VP₂ᵀ is K = F₁⁻¹F₂ (the SVD factors cancel), so
C₁₄ = √(1 + ‖K‖₂²), and the sketch's √(1 + ‖(P₁VP₁ᵀ)⁻¹‖₂²) = √(2 + ‖K‖₂²) (since
V₁₁⁻¹V₁₁⁻ᵀ = I + KKᵀ for V with orthonormal rows). ‖K‖₂² = λ_max(KᵀK) is enclosed by
`lambda_max_enclosure` — exact LDLᵀ certificates on rational matrices, no float.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...data.dana_data import Conditionals, likely_order, t_epsilon
from ...data.dataset import DataError, Dataset
from ...model.layers import Model
from .association import (DanaBuild, Design, Mat, RankDeficient, Vec, _arb, _choose_bits, _finish, _inverse, _mat_mul,
                   _matvec, _solve_design, check_architecture, choose_design, feature_columns_exact,
                   feature_matrix_ball, model_rhos, uses_softmax2, with_rounded_readout)

def log_prob_targets(data: Conditionals, frac_bits: int = 40) -> List[Vec]:
    """Centred rational approximations ℓ(t) of log π(·|t) (Arb logs rounded to 2^−frac_bits)."""
    from flint import ctx

    from ...arith.linalg import mid_fraction

    old = ctx.prec
    ctx.prec = frac_bits + 64
    try:
        out = []
        for c in data.conditionals:
            l = [Fraction(round(mid_fraction(_arb(p).log()) * 2 ** frac_bits), 2 ** frac_bits) for p in c]
            mean = sum(l) / len(l)
            out.append([x - mean for x in l])
        return out
    finally:
        ctx.prec = old


def fit_encoder(data: Conditionals, d: int, seed: int = 0) -> Tuple[Mat, List[Vec]]:
    """A rank-d sequence encoder f_{W,E} (Definition 1, note §1.3) approximating log π.

    d ≥ N − 1: W = [I_{N−1}; −1ᵀ] (zero-padded), E(t) = ℓ(t)'s first N − 1 entries, so W E(t)
    is the centred log-probability approximation (Prop. 2's exact case). d < N − 1: the best
    encoder found by `.dana_optimum.optimized_encoder` (block-coordinate Newton on
    d_KL(π, f) in floats from the SVD start and seeded random starts — a design choice — rounded
    to dyadics); its distance to the optimum is bounded by `.dana_optimum.lower_bound_codim1`
    when d = N − 2. Every bound below is certified for the encoder actually used.
    """
    import numpy as np

    N = data.N
    L = log_prob_targets(data)
    rng = random.Random(seed)
    if d >= N - 1:
        W = [[Fraction(int(i == j)) if j < N - 1 else Fraction(0) for j in range(d)] for i in range(N - 1)]
        W.append([Fraction(-1) if j < N - 1 else Fraction(0) for j in range(d)])
        E = [l[:N - 1] + [Fraction(rng.randint(-8, 8), 8) for _ in range(d - (N - 1))] for l in L]
        return W, E
    from .optimum import optimized_encoder

    return optimized_encoder(data, d, seed, targets=L)


def kl_enclosure_from_logits(data: Conditionals, logits: Sequence, prec: int = 128) -> Tuple[Fraction, Fraction]:
    """A certified enclosure [lo, hi] of d_KL(π, T) = Σ_t π(t) KL(π(·|t) ‖ softmax T(t)) (note §1.2).

    ``logits[i]`` is a list of exact rationals or Arb balls for sequence i. Arb computes
    Σ_j π_j log π_j − Σ_j π_j T_j + log Σ_j exp T_j rigorously (terms with π_j = 0 dropped).
    """
    from flint import arb, ctx

    from ...arith.linalg import lower_fraction, mid_fraction, upper_fraction

    old = ctx.prec
    ctx.prec = prec
    try:
        total = arb(0)
        for w, c, T in zip(data.prior, data.conditionals, logits):
            Tb = [x if isinstance(x, arb) else _arb(Fraction(x)) for x in T]
            m = _arb(max(mid_fraction(x) for x in Tb))  # any real shift: LSE(T) = m + log Σ exp(T_j − m)
            lse = sum(((x - m).exp() for x in Tb[1:]), (Tb[0] - m).exp()).log() + m
            kl = lse
            for p, x in zip(c, Tb):
                if p:
                    pb = _arb(p)
                    kl += pb * (pb.log() - x)
            total += _arb(w) * kl
        return lower_fraction(total), upper_fraction(total)
    finally:
        ctx.prec = old


def kl_difference_enclosure(data: Conditionals, logits_T: Sequence, logits_f: Sequence,
                            prec: int = 128) -> Tuple[Fraction, Fraction]:
    """Enclosure of d_KL(π, T) − d_KL(π, f) = Σ_t π(t) [LSE T(t) − LSE f(t) − Σ_j π_j (T_j − f_j)(t)]
    (the entropy terms cancel); a sequence whose two exact logit vectors are equal adds exactly 0."""
    from flint import arb, ctx

    from ...arith.linalg import lower_fraction, mid_fraction, upper_fraction

    def lse(xs):
        m = _arb(max(mid_fraction(x) for x in xs))
        return sum(((x - m).exp() for x in xs[1:]), (xs[0] - m).exp()).log() + m

    old = ctx.prec
    ctx.prec = prec
    try:
        total, exact_zero = arb(0), True
        for w, c, T, f in zip(data.prior, data.conditionals, logits_T, logits_f):
            if all(not isinstance(x, arb) for x in T) and [Fraction(x) for x in T] == [Fraction(x) for x in f]:
                continue
            exact_zero = False
            Tb = [x if isinstance(x, arb) else _arb(Fraction(x)) for x in T]
            fb = [_arb(Fraction(x)) for x in f]
            term = lse(Tb) - lse(fb)
            for p, x, y in zip(c, Tb, fb):
                if p:
                    term -= _arb(p) * (x - y)
            total += _arb(w) * term
        if exact_zero:
            return Fraction(0), Fraction(0)
        return lower_fraction(total), upper_fraction(total)
    finally:
        ctx.prec = old


def kl_upper_bound_from_logits(data: Conditionals, logits: Sequence, prec: int = 128) -> Fraction:
    """A certified upper bound on d_KL(π, T) (the upper end of `kl_enclosure_from_logits`)."""
    return kl_enclosure_from_logits(data, logits, prec)[1]


def kl_upper_bound(model: Model, data: Conditionals, prec: int = 128) -> Fraction:
    """Certified upper bound on d_KL(π, T) for a network: ``forward`` (Arb balls) on every sequence."""
    from ...model.forward import forward

    res = forward(model, [tuple(t) for t in data.sequences], prec=prec)
    return kl_upper_bound_from_logits(data, res.outputs, prec)


def build_distribution(data: Conditionals, d: int, dh: int, eps, mode: str = "rational", qk: Optional[str] = None,
                       seed: int = 0, tol: Fraction = Fraction(1, 1024), prec: int = 256,
                       H: Optional[int] = None, tries: int = 4, round_readout: bool = False,
                       encoder: Optional[Tuple[Mat, List[Vec]]] = None) -> DanaBuild:
    """Theorem 1 (note §2): an AoT with d_h·H + d ≥ T_ε realising the encoder f_{W,E} on the
    T_ε most likely sequences (within ``tol`` per logit after rounding), decode = identity.

    The returned dataset lists those T_ε sequences with labels W E(t) (the certificate's
    ``error_bound`` is ``tol``); `kl_upper_bound` certifies d_KL(π, T) on all sequences.
    ``encoder`` = (W, E) with E(t) listed in ``data.sequences`` order replaces `fit_encoder`
    (Prop. 1, Theorems 2 and 3 realise their own encoders). Mode (a) (base 2) stores a
    ``softmax2`` network with the exact readout (logits exactly
    W E(t)), or with ``round_readout`` the smallest B-bit readout within ``tol``, exactly.
    """
    N, S = data.N, data.S
    Te = t_epsilon(data, eps)
    Hh = H if H is not None else max(1, -(-(Te - d) // dh))
    check_architecture(N, S, d, dh, Hh)
    if dh * Hh + d < Te:
        raise DataError(f"d_h·H + d = {dh * Hh + d} < T_ε = {Te}: Theorem 1 needs d_h·H + d ≥ T_ε")
    order = likely_order(data)[:Te]
    W, E_all = encoder if encoder is not None else fit_encoder(data, d, seed)
    seqs = [data.sequences[i] for i in order]
    E_cols = [E_all[i] for i in order]
    labels_vec = [_matvec(W, e) for e in E_cols]
    why = []
    for attempt in range(tries):
        design = choose_design(N, S, d, dh, Hh, mode, qk, seed + 7919 * attempt)
        info: Dict[str, object] = {"mode": mode, "T_eps": Te, "eps": Fraction(eps), "H": Hh, "rows": d + Hh * dh}
        try:
            rows, base, exact, sc, F = _solve_design(design, seqs, E_cols, W, prec, info)
        except RankDeficient as e:
            why.append(str(e))
            continue
        s2 = uses_softmax2(design)
        B = None if s2 else _choose_bits(design, base, seqs, prec, sc, targets=labels_vec, tol=Fraction(tol),
                                         start=16)
        model, readout, _ = _finish(design, base, rows, B, decode="identity")
        ds = Dataset([tuple(t) for t in seqs], [tuple(v) for v in labels_vec], "tokens", seed,
                     f"T_eps={Te} most likely sequences, labels W E(t)")
        info["bits"] = B
        b = DanaBuild(model, ds, design, exact, readout, W, E_cols, info, F, list(E_all))
        return with_rounded_readout(b, tol=Fraction(tol)) if s2 and round_readout else b
    raise RankDeficient(f"rank F < T_ε = {Te} in {tries} seeded designs (mode {mode}; {why[-1]})")


def encoder_logits(W: Mat, E_all: Sequence[Vec]) -> List[Vec]:
    """Logits W E(t) of the sequence encoder f_{W,E} on every sequence."""
    return [_matvec(W, e) for e in E_all]


def paper_C_estimates(design: Design, seqs_all, likely: int, prec: int = 128) -> Dict[str, float]:
    """FLOAT ESTIMATES of Theorem 1's constant C, both versions (note §2, §7.1):
    sketch √(1 + ‖(P1VP1ᵀ)⁻¹‖²) and eq. (14) √(1 + ‖(P1VP1ᵀ)⁻¹P1VP2ᵀ‖²), from an SVD of F on
    all sequences (the first ``likely`` columns are S1). Reports only."""
    import numpy as np

    Fb = feature_matrix_ball(design, model_rhos(design, 128), seqs_all, prec)
    A = np.array([[float(Fb[i, t].mid()) for t in range(Fb.ncols())] for i in range(Fb.nrows())])
    r = A.shape[0]
    _, _, Vt = np.linalg.svd(A, full_matrices=True)
    P1VP1 = Vt[:r, :likely]
    P1VP2 = Vt[:r, likely:]
    out = {}
    if P1VP1.shape[0] == P1VP1.shape[1]:
        inv = np.linalg.inv(P1VP1)
        out["C_sketch"] = float(np.sqrt(1 + np.linalg.norm(inv, 2) ** 2))
        out["C_eq14"] = float(np.sqrt(1 + np.linalg.norm(inv @ P1VP2, 2) ** 2)) if P1VP2.size else 1.0
    return out


def _sqrt_upper(q: Fraction) -> Fraction:
    """A rational ≥ √q (integer square root on a 2^-32 grid)."""
    from math import isqrt

    q = Fraction(q)
    k = 32
    n = q.numerator * (1 << (2 * k))
    r = isqrt(n // q.denominator) + 1
    return Fraction(r, 1 << k)


def kl_enclosure(model: Model, data: Conditionals, prec: int = 128) -> Tuple[Fraction, Fraction]:
    """Certified enclosure of d_KL(π, T) for a network on every sequence of ``data``."""
    from ...model.forward import forward

    res = forward(model, [tuple(t) for t in data.sequences], prec=prec)
    return kl_enclosure_from_logits(data, res.outputs, prec)


# ============================================================================ rigorous spectral norms (C of (14))

def sqrt_bounds(q: Fraction, k: int = 64) -> Tuple[Fraction, Fraction]:
    """(lo, hi) with lo ≤ √q ≤ hi, both on the 2^−k grid (integer square roots; q ≥ 0)."""
    from math import isqrt

    q = Fraction(q)
    n = q.numerator << (2 * k)
    lo = isqrt(n // q.denominator)
    hi = lo if lo * lo * q.denominator == n else lo + 1
    return Fraction(lo, 1 << k), Fraction(hi, 1 << k)


def _pivots(A: Mat) -> Optional[bool]:
    """LDLᵀ of the symmetric rational A without pivoting: True if every pivot is > 0 (A is
    positive definite), False if a pivot is < 0 after positive ones (a leading principal
    minor is < 0: A is not positive semidefinite), None on a zero pivot (undecided)."""
    n = len(A)
    M = [list(r) for r in A]
    for k in range(n):
        p = M[k][k]
        if p < 0:
            return False
        if p == 0:
            return None
        for i in range(k + 1, n):
            f = M[i][k] / p
            if f:
                Mi, Mk = M[i], M[k]
                for j in range(k + 1, n):
                    Mi[j] -= f * Mk[j]
    return True


def _shifted(G: Mat, u: Fraction, sign: int = 1) -> Mat:
    """u·I − G (sign 1) or G − u·I (sign −1)."""
    return [[(u * (i == j) - x) * sign for j, x in enumerate(r)] for i, r in enumerate(G)]


def _round_dyadic(G: Mat, bits: int = 96) -> Tuple[Mat, Fraction]:
    """G rounded to a dyadic grid of 2^(top − bits) (top = bit size of max |G_ij|), and an upper
    bound on ‖G − G̃‖_F (Weyl: λ_max moves by at most that)."""
    from ...arith.linalg import sqrt_upper

    big = max((abs(x) for r in G for x in r), default=Fraction(0))
    if big == 0:
        return [list(r) for r in G], Fraction(0)
    top = big.numerator.bit_length() - big.denominator.bit_length() + 1
    step = Fraction(2) ** (top - bits)
    Gt = [[round(x / step) * step for x in r] for r in G]
    err2 = sum((x - y) ** 2 for r, rt in zip(G, Gt) for x, y in zip(r, rt))
    return Gt, sqrt_upper(err2)


def _rayleigh_vector(G: Mat, iters: int = 60) -> Vec:
    """A vector near G's top eigenvector: power iteration on dyadics (a candidate only)."""
    n = len(G)
    v = [Fraction(1) + Fraction(i, 7 * n) for i in range(n)]
    for _ in range(iters):
        w = [sum((a * b for a, b in zip(r, v)), Fraction(0)) for r in G]
        m = max(abs(x) for x in w)
        if m == 0:
            return v
        v = [Fraction(round(x / m * 2 ** 40), 2 ** 40) for x in w]
    return v


def certify_lambda_max_below(G: Mat, u: Fraction) -> bool:
    """Exact: λ_max(G) < u for symmetric rational G (uI − G positive definite by LDLᵀ)."""
    return _pivots(_shifted(G, Fraction(u))) is True


def certify_lambda_max_above(G: Mat, v: Sequence[Fraction], l: Fraction) -> bool:
    """Exact: λ_max(G) ≥ vᵀGv/vᵀv ≥ l for the rational vector v (Rayleigh quotient)."""
    vv = sum(x * x for x in v)
    return vv > 0 and sum(v[i] * sum((a * b for a, b in zip(r, v)), Fraction(0)) for i, r in enumerate(G)) >= l * vv


def lambda_max_enclosure(G: Mat, rad: Fraction = Fraction(0)) -> Tuple[Fraction, Fraction]:
    """[lo, hi] ∋ λ_max(G') for every symmetric G' with ‖G' − G‖_F ≤ ``rad`` (G exact, PSD in use).

    lo: the Rayleigh quotient vᵀGv/vᵀv of a rational v (exact), minus ``rad``; hi: the smallest
    u = lo_G·(1 + 2^−j) for which uI − G is positive definite by an exact LDLᵀ (every pivot
    > 0), plus ``rad`` and the rounding error of G to dyadics. Fallback hi: ‖G‖_F + ``rad``.
    """
    from ...arith.linalg import sqrt_upper

    n = len(G)
    if n == 0:
        return Fraction(0), Fraction(0)
    Gt, err = _round_dyadic(G)
    v = _rayleigh_vector(Gt)
    vv = sum(x * x for x in v)
    R = sum(v[i] * sum((a * b for a, b in zip(G[i], v)), Fraction(0)) for i in range(n)) / vv
    Rt = sum(v[i] * sum((a * b for a, b in zip(Gt[i], v)), Fraction(0)) for i in range(n)) / vv
    hi = sqrt_upper(sum(x * x for r in G for x in r))
    for j in (40, 30, 20, 12, 6, 2, 0):
        u = max(Rt, Fraction(0)) * (1 + Fraction(1, 2 ** j)) + Fraction(1, 2 ** 200)
        if _pivots(_shifted(Gt, u)) is True:
            hi = min(hi, u + err)
            break
    return max(R - rad, Fraction(0)), hi + rad


def _gram(A: Mat, small_side: bool = True) -> Mat:
    """AᵀA or AAᵀ, whichever is smaller (same nonzero eigenvalues)."""
    rows, cols = len(A), len(A[0]) if A else 0
    At = [list(r) for r in zip(*A)]
    return _mat_mul(A, At) if (rows <= cols) == small_side else _mat_mul(At, A)


def spectral_norm_enclosure(A: Mat) -> Tuple[Fraction, Fraction]:
    """[lo, hi] ∋ ‖A‖₂ for an exact rational matrix (√ of `lambda_max_enclosure` of the Gram)."""
    if not A or not A[0]:
        return Fraction(0), Fraction(0)
    lo, hi = lambda_max_enclosure(_gram(A))
    return sqrt_bounds(lo)[0], sqrt_bounds(hi)[1]


def eq14_K_exact(F_cols: Sequence[Vec], likely: int) -> Mat:
    """K = F₁⁻¹F₂ (T_ε × (T − T_ε)) for exact feature columns, F₁ the first ``likely`` (square)."""
    from ...arith.linalg import solve

    r = len(F_cols[0])
    if likely != r:
        raise DataError(f"eq. (14) needs P₁VP₁ᵀ square: T_ε = {likely} ≠ d + H·d_h = {r}")
    F1 = [[c[i] for c in F_cols[:likely]] for i in range(r)]
    F2 = [[c[i] for c in F_cols[likely:]] for i in range(r)]
    if not F2[0]:
        return [[] for _ in range(r)]
    return [list(row) for row in solve(F1, F2)]


def eq14_K_ball(design: Design, seqs_all, likely: int, prec: int = 256) -> Tuple[Mat, Fraction]:
    """Mode (b): K = F₁⁻¹F₂ from Arb balls of F (the true, transcendental F is inside): its
    midpoint (exact dyadics) and an upper bound on ‖K − mid K‖_F over the balls."""
    from flint import arb_mat, ctx

    from ...arith.linalg import mid_fraction, sqrt_upper, upper_fraction

    old = ctx.prec
    ctx.prec = prec
    try:
        Fb = feature_matrix_ball(design, model_rhos(design, None), seqs_all, prec)
        r, T = Fb.nrows(), Fb.ncols()
        if likely != r:
            raise DataError(f"eq. (14) needs P₁VP₁ᵀ square: T_ε = {likely} ≠ d + H·d_h = {r}")
        F1 = arb_mat([[Fb[i, t] for t in range(likely)] for i in range(r)])
        F2 = arb_mat([[Fb[i, t] for t in range(likely, T)] for i in range(r)])
        K = F1.solve(F2)
        mid = [[mid_fraction(K[i, j]) for j in range(K.ncols())] for i in range(K.nrows())]
        rad2 = sum(upper_fraction(K[i, j].rad()) ** 2 for i in range(K.nrows()) for j in range(K.ncols()))
        return mid, sqrt_upper(rad2)
    finally:
        ctx.prec = old


def theorem1_constants(K: Mat, K_rad: Fraction = Fraction(0)) -> Dict[str, Tuple[Fraction, Fraction]]:
    """Rigorous enclosures of ‖K‖₂, C of eq. (14) = √(1 + ‖K‖₂²) and the sketch's
    √(1 + ‖(P₁VP₁ᵀ)⁻¹‖₂²) = √(2 + ‖K‖₂²) (module docstring), as (lo, hi) rationals.

    ``K_rad`` bounds ‖K' − K‖_F for every K' the ball allows (mode (b)); then ‖K'‖₂ ∈ ‖K‖₂ ± K_rad.
    """
    if not K or not K[0]:
        nlo = nhi = Fraction(0)
    else:
        nlo, nhi = spectral_norm_enclosure(K)
        nlo, nhi = max(nlo - K_rad, Fraction(0)), nhi + K_rad
    return {"norm_K": (nlo, nhi),
            "C_eq14": (sqrt_bounds(1 + nlo ** 2)[0], sqrt_bounds(1 + nhi ** 2)[1]),
            "C_sketch": (sqrt_bounds(2 + nlo ** 2)[0], sqrt_bounds(2 + nhi ** 2)[1])}


def theorem1_bound_report(data: Conditionals, build: DanaBuild, eps, prec: int = 256, lower_budget: int = 300):
    """Bound (4) on a mode-(a) exact build (no rounding: T = W [M | W_O′] F on every sequence),
    decided rigorously: d_KL(π, T) ≤ d_KL(π, f) + C·ε·‖W E‖₂ (as printed; d_KL(π, L) ≤ d_KL(π, f)
    is replaced by the explicit encoder's, which the proof's (13)–(14) bound for any f) and the
    proof's 2·C·ε·‖W E‖₂ of eq. (13). When d = N − 2 a rigorous lower bound L ≤ d_KL(π, L(N,S,d))
    (`.dana_optimum.lower_bound_codim1`, ``lower_budget`` boxes; 0 skips it) gives the encoder's
    optimality gap and (4) exactly as printed, with the infimum d_KL(π, L) itself.
    Returns a [`Report`][exactmem.bounds.Report]."""
    from ...arith.steps import Report, check
    from ...arith.enclosure import Interval

    if build.features is None or build.exact_readout is None:
        raise DataError("the rigorous bound (4) needs a mode (a) build with the exact readout")
    order = likely_order(data)
    Te = t_epsilon(data, eps)
    seqs_all = [data.sequences[i] for i in order]
    F_all = feature_columns_exact(build.design, seqs_all)
    K = eq14_K_exact(F_all, Te)
    consts = theorem1_constants(K)
    W = build.W
    E_all = encoder_targets_all(build, data, order)
    WE = [list(r) for r in zip(*[_matvec(W, e) for e in E_all])]
    we = spectral_norm_enclosure(WE)
    f_logits = [None] * len(data)
    for k, i in enumerate(order):
        f_logits[i] = _matvec(W, E_all[k])
    from ...model.forward import forward

    T_logits = forward(build.model, [tuple(t) for t in data.sequences], prec=prec).outputs
    kf = Interval(*kl_enclosure_from_logits(data, f_logits, prec))
    kT = Interval(*kl_enclosure_from_logits(data, T_logits, prec))
    delta = Interval(*kl_difference_enclosure(data, T_logits, f_logits, prec))
    eps = Fraction(eps)
    C = consts["C_eq14"]
    slack = Interval(C[0] * eps * we[0], C[1] * eps * we[1])
    rep = Report(f"Theorem 1 bound (4), T_ε = {Te}, ε = {eps}")
    rep.add(check("(4)", "d_KL(π, T) − d_KL(π, f) ≤ C ε ‖W E‖₂ (C of eq. (14), as printed)", delta, "<=",
                  slack, "verdict"))
    rep.add(check("(13)", "d_KL(π, T) − d_KL(π, f) ≤ 2 C ε ‖W E‖₂ (the proof's factor 2)", delta, "<=",
                  slack * 2, "verdict"))
    if len(W[0]) == data.N - 2 and lower_budget:
        from .optimum import lower_bound_codim1

        lb = lower_bound_codim1(data, budget=lower_budget)
        Lo = lb["lower"]
        rep.add(check("Lemma 1 (gap)", "0 ≤ d_KL(π, f) − L, L ≤ d_KL(π, L(N,S,d)) (Gibbs duality, branch and bound "
                      f"over normals, {lb['evaluations']} boxes)", kf - Lo, ">=", 0, "verdict"))
        rep.add(check("(4) as printed", "d_KL(π, T) ≤ L + C ε ‖W E‖₂ ≤ d_KL(π, L(N,S,d)) + C ε ‖W E‖₂", kT, "<=",
                      slack + Lo, "verdict"))
        rep.results.update({"L <= d_KL(pi, L)": Lo, "optimality gap d_KL(pi, f) - L <=": kf.hi - Lo,
                            "lower-bound boxes": lb["evaluations"]})
    rep.results.update({"T_eps": Te, "||K||_2": Interval(*consts["norm_K"]), "C_eq14": Interval(*C),
                        "C_sketch": Interval(*consts["C_sketch"]), "||W E||_2": Interval(*we),
                        "d_KL(pi, f)": kf, "d_KL(pi, T)": kT, "d_KL(pi, T) - d_KL(pi, f)": delta,
                        "pi(S2)": sum((data.prior[i] for i in order[Te:]), Fraction(0))})
    return rep


def encoder_targets_all(build: DanaBuild, data: Conditionals, order: Sequence[int]) -> List[Vec]:
    """E(t) for every sequence in ``order`` (the build's encoder, ``build.E_all``)."""
    E_all = build.E_all
    if E_all is None:
        raise DataError("the build does not carry its encoder on all sequences (E_all)")
    return [E_all[i] for i in order]
