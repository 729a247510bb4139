"""Dana, Pydi & Chevaleyre: Proposition 1, Theorem 2 and Theorem 3 / Lemma 4 evaluated on explicit instances.

Paper §3, §6, App. A.3–A.4; note ``papers/dana.md`` §1.4, §2.

* **Prop. 1** (`prop1_family`, `prop1_obstruction`, `verify_prop1_obstruction`):
  any Transformer of embedding dimension d has logits W_U z(t), z(t) ∈ R^d. Exact distribution
  memorization softmax T(t) = π(·|t) forces the centred log-probability vectors into
  the d-dimensional space P·col(W_U) (P = I − 11ᵀ/N). With dyadic conditionals
  π(j|t) = 2^{k_tj}/Σ_i 2^{k_ti} that matrix is ln 2 times the centred integer matrix K̄, so a
  nonzero (d+1)×(d+1) minor of K̄ (an exact integer) proves that *no* such Transformer
  memorizes the family exactly, i.e. d_KL(π, T) > 0 for every T. The positive side: a family
  with rank K̄ = d is realised exactly by an AoT of embedding dimension d.
* **Thm 2** (`theorem2_encoder`, `theorem2_report`): the encoder
  E(t) = λ(t) W_{g(t)} with λ(t) solving −H(π_t) = log Σ_j exp(λ (W_j − W_g)ᵀW_g), λ enclosed by
  rigorous bisection; the bound evaluated with the measured coherence c = ‖WWᵀ − I‖_max and with
  the paper's C = √(32 log(N+1)/d), compared with the certified KL.
* **Thm 3 / Lemma 4** (`theorem3_family`, `theorem3_report`): an explicit
  polynomially approximable family f_δ for π with zeros (eq. (15) with c = 1/4, α = 1,
  verified rigorously), Lemma 4's range bound, and the KL of the AoT realising f_δ.

Every verdict is an exact computation (integer determinants, exact rationals, Arb balls).
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...data.dana_data import Conditionals, all_sequences, random_conditionals
from ...data.dataset import DataError
from .association import Mat, Vec, _arb, _det_exact, exact_rank_columns

# ============================================================================ Proposition 1

DyadicFamily = Tuple[Conditionals, List[List[int]]]


def dyadic_data(N: int, S: int, seqs: Sequence[Tuple[int, ...]], K: Sequence[Sequence[int]],
                prior: Optional[Sequence[Fraction]] = None) -> Conditionals:
    """Conditionals π(j|t) = 2^{k_tj} / Σ_i 2^{k_ti} (exact), uniform prior by default."""
    conds = []
    for k in K:
        m = min(k)
        w = [2 ** (x - m) for x in k]
        conds.append(tuple(Fraction(x, sum(w)) for x in w))
    prior = list(prior) if prior is not None else [Fraction(1, len(seqs))] * len(seqs)
    return Conditionals(N, S, list(seqs), prior, conds)


def centred(k: Sequence[int]) -> List[Fraction]:
    """k − mean(k)·1 (the centring P = I − 11ᵀ/N)."""
    m = Fraction(sum(k), len(k))
    return [Fraction(x) - m for x in k]


def prop1_family(N: int, S: int, d: int, T: int, seed: int = 0, extra: int = 1) -> Dict[str, object]:
    """T sequences whose exponent vectors k_t = B c_t (B ∈ Z^{N×d} of rank d, c_t ∈ Z^d) have
    rank K̄ = d — realisable with embedding dimension d (W = B, E(t) = c_t) — plus ``extra``
    sequences with random exponents that raise the centred rank to d + 1 (checked exactly)."""
    if not 1 <= d <= N - 2:
        raise DataError(f"Prop. 1's obstruction needs 1 ≤ d ≤ N − 2 (d = {d}, N = {N}): for d ≥ N − 1 every "
                        "family is realisable (Prop. 2)")
    seqs_all = all_sequences(N, S)
    if T + extra > len(seqs_all):
        raise DataError(f"T + extra = {T + extra} > N^S = {len(seqs_all)}")
    rng = random.Random(seed)
    for _ in range(100):
        B = [[rng.randint(-2, 2) for _ in range(d)] for _ in range(N)]
        Bc = [centred(col) for col in zip(*B)]  # centred columns of B
        if exact_rank_columns(Bc) == d:
            break
    else:
        raise DataError("no centred-rank-d B found")
    seqs = rng.sample(seqs_all, T + extra)
    C = [[rng.randint(-2, 2) for _ in range(d)] for _ in range(T)]
    K = [[sum(b * c for b, c in zip(row, ct)) for row in B] for ct in C]
    for _ in range(extra):
        for _ in range(100):
            k = [rng.randint(0, 3) for _ in range(N)]
            if exact_rank_columns([centred(x) for x in K + [k]]) == d + 1:
                break
        K.append(k)
    return {"B": B, "C": C, "K": K, "sequences": seqs, "T": T, "d": d}


def prop1_obstruction(K: Sequence[Sequence[int]], d: int) -> Tuple[List[int], List[int], Fraction]:
    """A nonzero (d+1)×(d+1) minor of the centred matrix K̄ (rows: sequences; columns: tokens):
    (sequence indices, token indices, determinant). Exact search (greedy independent rows, then
    independent columns)."""
    rows: List[int] = []
    Kc = [centred(k) for k in K]
    for i, k in enumerate(Kc):
        if exact_rank_columns([Kc[r] for r in rows + [i]]) == len(rows) + 1:
            rows.append(i)
        if len(rows) == d + 1:
            break
    if len(rows) < d + 1:
        raise DataError(f"rank K̄ = {len(rows)} ≤ d = {d}: no obstruction (the family is realisable)")
    cols: List[int] = []
    for j in range(len(K[0])):
        trial = cols + [j]
        if exact_rank_columns([[Kc[r][c] for r in rows] for c in trial]) == len(trial):
            cols.append(j)
        if len(cols) == d + 1:
            break
    det = _det_exact([[Kc[r][c] for c in cols] for r in rows])
    return rows, cols, det


def verify_prop1_obstruction(K: Sequence[Sequence[int]], d: int, rows: Sequence[int], cols: Sequence[int],
                             det: Fraction) -> bool:
    """Exact check: d + 1 distinct sequences and tokens, and det of the centred minor = ``det`` ≠ 0."""
    if len(set(rows)) != d + 1 or len(set(cols)) != d + 1 or det == 0:
        return False
    if not all(0 <= r < len(K) for r in rows) or not all(0 <= c < len(K[0]) for c in cols):
        return False
    Kc = [centred(k) for k in K]
    return _det_exact([[Kc[r][c] for c in cols] for r in rows]) == det


def prop1_encoder(fam: Dict[str, object], data: Conditionals) -> Tuple[Mat, List[Vec]]:
    """W = B and E(t) = c_t on the realisable part (W E(t) = k_t exactly); the sequences of
    ``data`` must be the family's first T."""
    W = [[Fraction(x) for x in row] for row in fam["B"]]
    return W, [[Fraction(x) for x in c] for c in fam["C"][:len(data)]]


# ============================================================================ Theorem 2

MARGIN = Fraction(1, 2 ** 20)  # C = coherence + MARGIN: any C ≥ the coherence is a valid constant, and the
# bound is strictly increasing in C, so at coherence 0 (where A.3's chain is an equality) the step is decided

def coherence(W: Mat) -> Fraction:
    """‖W Wᵀ − I‖_max (the paper's ‖WWᵀ − I_d‖_∞ read as the N×N Gram, note §2), exact."""
    return max(abs(sum((a * b for a, b in zip(wi, wj)), Fraction(0)) - (i == j))
               for i, wi in enumerate(W) for j, wj in enumerate(W))


def paper_C(N: int, d: int, bits: int = 64) -> Tuple[Fraction, Fraction]:
    """Enclosure of Theorem 2's C = √(32 log(N+1)/d) (Arb log, rational endpoints)."""
    from flint import arb, ctx

    from ...arith.linalg import lower_fraction, upper_fraction

    old = ctx.prec
    ctx.prec = bits + 32
    try:
        c = (arb(32) * arb(N + 1).log() / d).sqrt()
        return lower_fraction(c), upper_fraction(c)
    finally:
        ctx.prec = old


def unembedding(N: int, d: int, kind: str = "identity") -> Mat:
    """W ∈ Q^{N×d}: ``identity`` = [I_N | 0] (d ≥ N, coherence 0); ``centred`` = rows of
    I − 11ᵀ/N, zero-padded (d ≥ N, coherence 1/N, every off-diagonal −1/N < 0)."""
    if d < N:
        raise DataError(f"the explicit W needs d ≥ N (d = {d}, N = {N})")
    if kind == "identity":
        return [[Fraction(int(i == j)) for j in range(d)] for i in range(N)]
    if kind == "centred":
        return [[Fraction(int(i == j)) - Fraction(1, N) if j < N else Fraction(0) for j in range(d)]
                for i in range(N)]
    raise DataError(f"unknown unembedding kind {kind!r}")


def _entropy_arb(c: Sequence[Fraction]):
    h = _arb(Fraction(0))
    for p in c:
        if p:
            pb = _arb(p)
            h -= pb * pb.log()
    return h


def lambda_enclosure(W: Mat, g: int, c: Sequence[Fraction], bits: int = 64) -> Tuple[Fraction, Fraction]:
    """[lo, hi] ∋ λ solving Shannon h(π_t) = log Σ_j exp(λ a_j), a_j = (W_j − W_g)ᵀW_g (Thm 2).

    φ(λ) = log Σ_j exp(λ a_j) − h decreases (a_g = 0, a_j < 0 otherwise, checked); rigorous
    bisection: φ(lo) > 0 > φ(hi) in Arb ball arithmetic. Needs 0 < h < log N.
    """
    from flint import ctx

    Wg = W[g]
    a = [sum(((x - y) * z for x, y, z in zip(Wj, Wg, Wg)), Fraction(0)) for Wj in W]
    if any(x >= 0 for j, x in enumerate(a) if j != g):
        raise DataError(f"(W_j − W_g)ᵀW_g ≥ 0 for some j ≠ g = {g}: λ is not defined (needs coherence < 1/2)")
    old = ctx.prec
    ctx.prec = bits + 64
    try:
        h = _entropy_arb(c)

        def phi(lam: Fraction):
            lb = _arb(lam)
            return sum((((lb * _arb(x)).exp()) for x in a[1:]), (lb * _arb(a[0])).exp()).log() - h

        return bracket_decreasing_root(phi, bits, "λ(t) = 0 (uniform conditional); Theorem 2's log term is ≤ 0",
                                       "the conditional is (nearly) deterministic")
    finally:
        ctx.prec = old


def bracket_decreasing_root(phi, bits: int, zero_why: str = "", big_why: str = "") -> Tuple[Fraction, Fraction]:
    """[lo, hi] with φ(lo) > 0 > φ(hi), hi − lo ≤ 2^−bits, for a decreasing φ on [0, 2^20] whose
    values are Arb balls (the comparisons are rigorous: a ball that contains 0 is neither > 0
    nor < 0, and the bisection stops there). Theorem 2's λ(t) (App. A.3)."""
    lo, hi = Fraction(0), Fraction(1)
    if not phi(lo) > 0:
        raise DataError("h(π_t) ≥ log N: " + (zero_why or "λ(t) = 0"))
    while not phi(hi) < 0:
        hi *= 2
        if hi > 2 ** 20:
            raise DataError("λ(t) > 2^20" + (f": {big_why}" if big_why else ""))
    while hi - lo > Fraction(1, 2 ** bits):
        mid = (lo + hi) / 2
        v = phi(mid)
        if v > 0:
            lo = mid
        elif v < 0:
            hi = mid
        else:
            break
    return lo, hi


def theorem2_encoder(data: Conditionals, W: Mat, bits: int = 64) -> Dict[str, object]:
    """g(t) = the most likely token; λ(t) enclosures; E(t) = λ̃(t) W_g with λ̃ the lower end."""
    g = data.argmax_table().labels
    lams = [lambda_enclosure(W, gt, c, bits) for gt, c in zip(g, data.conditionals)]
    E = [[lo * x for x in W[gt]] for gt, (lo, _) in zip(g, lams)]
    return {"g": g, "lambda": lams, "E": E, "W": W}


def _log_term(c: Sequence[Fraction], N: int):
    """log((N − 1)/(e^{h} − 1)) as an Arb ball (h the Shannon entropy)."""
    return (_arb(Fraction(N - 1)) / (_entropy_arb(c).exp() - 1)).log()


def tv_to_uniform(c: Sequence[Fraction], g: int) -> Fraction:
    """d_TV(π̃_t, π_unif) with π̃ = π/(1 − π_g) off g, π_unif = 1/(N − 1) off g (exact)."""
    N, rest = len(c), 1 - c[g]
    return sum((abs(p / rest - Fraction(1, N - 1)) for j, p in enumerate(c) if j != g), Fraction(0)) / 2


def theorem2_rhs(data: Conditionals, g: Sequence[int], C: Tuple[Fraction, Fraction], simplified: bool = False,
                 bits: int = 128, as_printed: bool = False) -> Tuple[Fraction, Fraction]:
    """Enclosure of Theorem 2's right-hand side with constant C ∈ [C_lo, C_hi] (C_hi < 1/2):
    E_t[(1 − π_g)(1 + 2C + C d_TV)/(1 − 2C) log((N−1)/(e^{h_t} − 1))], or the simplified
    E[1 − π_g] log((N−1)/(e^{E h} − 1)) (1 + 4C)/(1 − 2C). The factor is increasing in C on
    [0, 1/2); ``as_printed`` also evaluates C > 1/2 (the endpoints then give the enclosure's ends
    in reverse order, the factor being increasing on (1/2, ∞) too)."""
    from flint import ctx

    from ...arith.linalg import lower_fraction, upper_fraction

    if (C[0] < Fraction(1, 2) <= C[1]) or (C[1] >= Fraction(1, 2) and not as_printed):
        raise DataError("C ≥ 1/2: Theorem 2's factor 1/(1 − 2C) is not positive")
    N = data.N
    old = ctx.prec
    ctx.prec = bits
    try:
        out = []
        for Cv in C:
            Cb = _arb(Cv)
            if simplified:
                miss = sum((w * (1 - c[gt]) for w, c, gt in zip(data.prior, data.conditionals, g)), Fraction(0))
                hbar = sum((_arb(w) * _entropy_arb(c) for w, c in zip(data.prior, data.conditionals)), _arb(0))
                val = _arb(miss) * (_arb(Fraction(N - 1)) / (hbar.exp() - 1)).log() * (1 + 4 * Cb) / (1 - 2 * Cb)
            else:
                val = _arb(Fraction(0))
                for w, c, gt in zip(data.prior, data.conditionals, g):
                    fac = (1 + 2 * Cb + Cb * _arb(tv_to_uniform(c, gt))) / (1 - 2 * Cb)
                    val += _arb(w * (1 - c[gt])) * fac * _log_term(c, N)
            out.append(val)
        return min(lower_fraction(out[0]), lower_fraction(out[1])), max(upper_fraction(out[0]), upper_fraction(out[1]))
    finally:
        ctx.prec = old


def theorem2_kl_exact_lambda(data: Conditionals, enc: Dict[str, object]) -> Tuple[Fraction, Fraction]:
    """d_KL(π, f) at the exact λ(t): A.3's identity d_KL = E_t Σ_j π_j (f_g − f_j)
    = E_t λ(t) Σ_j π_j (W_g − W_j)ᵀW_g (the entropy and LSE terms cancel), with λ ∈ [lo, hi]."""
    W, lo_sum, hi_sum = enc["W"], Fraction(0), Fraction(0)
    for w, c, gt, (lo, hi) in zip(data.prior, data.conditionals, enc["g"], enc["lambda"]):
        s = sum((p * sum(((x - y) * x2 for x, y, x2 in zip(W[gt], W[j], W[gt])), Fraction(0))
                 for j, p in enumerate(c)), Fraction(0))
        lo_sum += w * (lo * s if s >= 0 else hi * s)
        hi_sum += w * (hi * s if s >= 0 else lo * s)
    return lo_sum, hi_sum


def theorem2_vacuity(N: int, base: str = "e") -> Dict[str, object]:
    """C < 1/2 ⇔ d > 128 log(N + 1); the smallest such d, d_min, against N − 1 (Prop. 2: for
    d ≥ N − 1, d_KL(π, L) = 0 and Theorem 2 says nothing). The paper's "log" has no stated
    base: ``base="e"`` (ln, enclosed by Arb; the reading of the kernel-checked chains) or
    ``"2"`` (⌊128 log₂(N+1)⌋ = LEN((N+1)^128) − 1, an exact integer)."""
    if base == "2":
        d_min = ((N + 1) ** 128).bit_length()  # ⌊128 log₂(N+1)⌋ + 1
        return {"N": N, "base": "2", "d_min": d_min, "vacuous": d_min >= N - 1}
    if base != "e":
        raise ValueError(f"log base must be 'e' or '2', not {base!r}")
    from flint import arb, ctx

    from ...arith.linalg import lower_fraction, upper_fraction

    old = ctx.prec
    ctx.prec = 128
    try:
        x = arb(128) * arb(N + 1).log()
        lo, hi = lower_fraction(x), upper_fraction(x)
    finally:
        ctx.prec = old
    if lo.__floor__() != hi.__floor__():
        raise DataError("128 ln(N+1) straddles an integer at this precision")
    d_min = int(lo.__floor__()) + 1
    return {"N": N, "base": "e", "128ln(N+1)": (lo, hi), "d_min": d_min, "vacuous": d_min >= N - 1}


# ============================================================================ Theorem 3 / Lemma 4

def zero_conditionals(N: int, S: int, seed: int, zeros: int = 1) -> Conditionals:
    """Rational conditionals with ``zeros`` zero entries per sequence (Assumption 2 fails) and a
    seeded non-uniform prior over all N^S sequences."""
    rng = random.Random(seed)
    seqs = all_sequences(N, S)
    conds = []
    for _ in seqs:
        w = [rng.randint(1, 8) for _ in range(N)]
        for j in rng.sample(range(N), zeros):
            w[j] = 0
        conds.append(tuple(Fraction(x, sum(w)) for x in w))
    pw = [rng.randint(1, 8) for _ in seqs]
    return Conditionals(N, S, seqs, [Fraction(x, sum(pw)) for x in pw], conds, require_full_support=False, seed=seed)


def _log_mid(q: Fraction, bits: int = 60) -> Fraction:
    from flint import ctx

    from ...arith.linalg import mid_fraction

    old = ctx.prec
    ctx.prec = bits + 64
    try:
        return Fraction(round(mid_fraction(_arb(q).log()) * 2 ** bits), 2 ** bits)
    finally:
        ctx.prec = old


def theorem3_encoder(data: Conditionals, d: int, delta: Fraction) -> Tuple[Mat, List[Vec], Fraction]:
    """f_δ(t)_j = ℓ_j ≈ log π_j (2^−60) where π_j > 0, −M_δ where π_j = 0, with
    M_δ ≈ log(n₀/(e^{δ/2} − 1)) (n₀ = most zeros in a row), so that |log(π_j / softmax f_δ(t)_j)|
    ≈ log(1 + n₀(t)e^{−M_δ}) ≤ δ/2. W = [I_N | 0] (d ≥ N). Returns (W, E, M_δ)."""
    from flint import ctx

    from ...arith.linalg import mid_fraction

    N = data.N
    n0 = max(sum(1 for p in c if p == 0) for c in data.conditionals)
    old = ctx.prec
    ctx.prec = 160
    try:
        half = _arb(Fraction(delta) / 2)
        M = Fraction(round(mid_fraction((_arb(Fraction(n0)) / (half.exp() - 1)).log()) * 2 ** 40), 2 ** 40)
    finally:
        ctx.prec = old
    W = [[Fraction(int(i == j)) for j in range(d)] for i in range(N)]
    E = [[_log_mid(p) if p else -M for p in c] + [Fraction(0)] * (d - N) for c in data.conditionals]
    return W, E, M


def eq15_enclosures(data: Conditionals, logits: Sequence[Vec], bits: int = 160) -> Tuple[Fraction, Fraction]:
    """min and max over (t, j) with π_j > 0 of |log(π_j / softmax f(t)_j)|: (lower of the min,
    upper of the max), rigorous (Arb)."""
    from flint import ctx

    from ...arith.linalg import lower_fraction, upper_fraction

    old = ctx.prec
    ctx.prec = bits
    try:
        lo, hi = None, None
        for c, f in zip(data.conditionals, logits):
            fb = [_arb(Fraction(x)) for x in f]
            m = _arb(max(Fraction(x) for x in f))
            lse = sum(((x - m).exp() for x in fb[1:]), (fb[0] - m).exp()).log() + m
            for p, x in zip(c, fb):
                if p:
                    v = abs(_arb(p).log() - x + lse)
                    a, b = lower_fraction(v), upper_fraction(v)
                    lo = a if lo is None else min(lo, a)
                    hi = b if hi is None else max(hi, b)
        return lo, hi
    finally:
        ctx.prec = old


def logit_range(logits: Sequence[Vec]) -> Fraction:
    """max_t (max_j f(t)_j − min_j f(t)_j), exact (Lemma 4's quantity)."""
    return max(max(f) - min(f) for f in logits)


def lemma4_bound(data: Conditionals, delta: Fraction) -> Fraction:
    """An explicit form of Lemma 4 for this family: range f_δ ≤ max_{π_j>0} |log π_j| + 2^−59
    + log(2n₀/δ) + 2^−39 (e^x − 1 ≥ x gives M_δ ≤ log(2n₀/δ)); returned as a rational upper bound."""
    from ...arith.linalg import log_upper

    n0 = max(sum(1 for p in c if p == 0) for c in data.conditionals)
    worst = max(-_log_mid(p) for c in data.conditionals for p in c if p)
    return max(worst, Fraction(0)) + Fraction(1, 2 ** 59) + log_upper(2 * n0 / Fraction(delta)) + Fraction(1, 2 ** 39)


# ============================================================================ checked-step reports

def _report(title: str):
    from ...arith.steps import Report

    return Report(title)


def prop1_report(N: int, S: int, d: int, dh: int, H: int, seed: int = 0) -> Tuple[object, Dict[str, object]]:
    """Prop. 1 on a family: T = d + H·d_h dyadic distributions of centred rank d (realisable)
    plus one of rank d + 1 (the obstruction). Returns (report, family)."""
    from ...arith.steps import check

    T = d + H * dh
    fam = prop1_family(N, S, d, T, seed)
    K = fam["K"]
    rows, cols, det = prop1_obstruction(K, d)
    rep = _report(f"Proposition 1: N = {N}, S = {S}, d = {d}, {T} + 1 dyadic distributions")
    rep.add(check("Prop. 1", f"centred rank of the first {T} exponent vectors = d (realisable)",
                  exact_rank_columns([centred(k) for k in K[:T]]), "==", d, "count"))
    rep.add(check("Prop. 1", f"abs(det) of the centred ({d + 1})×({d + 1}) minor, sequences {rows}, tokens {cols}",
                  abs(det), ">", 0, "verdict",
                  note="so rank K̄ ≥ d + 1: no W_U z(t), z ∈ R^d, has softmax = π(·|t) on all sequences"))
    rep.add(check("Prop. 1", "the minor re-verified independently (exact)",
                  int(verify_prop1_obstruction(K, d, rows, cols, det)), "==", 1, "check"))
    rep.results.update({"obstruction": {"sequences": rows, "tokens": cols, "det": det}, "T": T})
    return rep, fam


def theorem2_report(data: Conditionals, W: Mat, bits: int = 64) -> Tuple[object, Dict[str, object]]:
    """Theorem 2 on ``data`` with the explicit W: the exact-λ encoder's KL against the bound with
    the measured coherence, the simplified bound, and the paper's C. Returns (report, encoder)."""
    from ...arith.steps import check
    from ...arith.enclosure import Interval

    N, d = data.N, len(W[0])
    enc = theorem2_encoder(data, W, bits)
    c = coherence(W) + MARGIN
    kl = Interval(*theorem2_kl_exact_lambda(data, enc))
    rep = _report(f"Theorem 2: N = {N}, d = {d}, C = ‖WWᵀ − I‖_max + 2^-20 = {c}")
    rep.add(check("Thm 2", "d_KL(π, f_λ) ≤ E[(1 − π_g)(1 + 2C + C d_TV)/(1 − 2C) log((N−1)/(e^h − 1))], "
                  "C = measured coherence + 2^-20", kl, "<=", Interval(*theorem2_rhs(data, enc["g"], (c, c))), "verdict"))
    rep.add(check("Thm 2 (simplified)", "d_KL(π, f_λ) ≤ E[1 − π_g] log((N−1)/(e^{E h} − 1)) (1 + 4C)/(1 − 2C)",
                  kl, "<=", Interval(*theorem2_rhs(data, enc["g"], (c, c), simplified=True)), "verdict",
                  repair_if_fails="the 'simpler bound' moves E_t inside the convex, decreasing "
                                  "h ↦ log((N−1)/(e^h − 1)) (Jensen goes the other way): keep the per-sequence form"))
    pc = paper_C(N, d)
    rep.add(check("Thm 2", "the paper's C = √(32 log(N+1)/d) < 1/2 (needed for 1/(1 − 2C) > 0)", Interval(*pc), "<",
                  Fraction(1, 2), "precondition",
                  repair_if_fails="as printed (no hypothesis on d) the right-hand side is negative when C > 1/2, "
                                  "below d_KL ≥ 0: Theorem 2 needs d > 128 log(N+1); the proof works with any "
                                  "coherence c < 1/2 in place of C"))
    if pc[0] > Fraction(1, 2):
        rep.add(check("Thm 2 (as printed)", "right-hand side with the paper's C ≥ d_KL(π, L) ≥ 0",
                      Interval(*theorem2_rhs(data, enc["g"], pc, as_printed=True)), ">=", 0, "verdict",
                      repair_if_fails="the statement fails for every d < 128 log(N+1) (C > 1/2: the right-hand "
                                      "side is negative); add the hypothesis d > 128 log(N+1)"))
    vac = theorem2_vacuity(N)
    rep.add(check("Thm 2 / Prop. 2", f"d_min = ⌊128 ln(N+1)⌋ + 1 = {vac['d_min']} vs N − 1 = {N - 1} (vacuous if ≥: "
                  "d ≥ N − 1 gives d_KL(π, L) = 0)", vac["d_min"], ">=" if vac["vacuous"] else "<", N - 1, "check"))
    rep.results.update({"coherence": c, "paper C": Interval(*pc), "d_KL(pi, f_lambda)": kl,
                        "lambda widths <= 2^-bits": bits})
    return rep, enc


def theorem3_report(data: Conditionals, d: int, deltas: Sequence[Fraction]) -> object:
    """Eq. (15) (c = 1/4, α = 1) and Lemma 4's range bound for f_δ on each δ; (17)."""
    from ...arith.steps import check
    from ...arith.enclosure import Interval
    from .distribution import encoder_logits, kl_enclosure_from_logits

    rep = _report(f"Theorem 3 / Lemma 4: N = {data.N}, S = {data.S}, π with zeros, d = {d}")
    for delta in deltas:
        W, E, M = theorem3_encoder(data, d, delta)
        lg = encoder_logits(W, E)
        lo, hi = eq15_enclosures(data, lg)
        rep.add(check("(15) left", f"δ = {delta}: (1/4)·δ ≤ min abs(log(π_j/softmax f_δ(t)_j))", Fraction(delta) / 4, "<=",
                      lo, "verdict"))
        rep.add(check("(15) right", f"δ = {delta}: max abs(log(π_j/softmax f_δ(t)_j)) ≤ δ", hi, "<=", Fraction(delta),
                      "verdict"))
        rep.add(check("Lemma 4", f"δ = {delta}: max_t range f_δ(t) ≤ max abs(log π_j) + log(2n₀/δ) + 2^-38",
                      logit_range(lg), "<=", lemma4_bound(data, delta), "verdict"))
        kl = Interval(*kl_enclosure_from_logits(data, lg))
        rep.add(check("(17)", f"δ = {delta}: d_KL(π, f_δ) ≤ δ (π₀ = π)", kl, "<=", Fraction(delta), "verdict"))
    return rep


def theorem3_network_report(data: Conditionals, build, eps: Fraction, delta: Fraction) -> object:
    """Theorem 3 on the AoT realising f_δ on the T_ε likely sequences (mode (a), exact readout):
    (13)–(14) with the rigorous C, the paper's (18) form ε C max range f_δ, and the total
    d_KL(π, T*) ≤ δ + 2 C ε ‖W E‖₂."""
    from ...arith.steps import check
    from ...arith.enclosure import Interval
    from .distribution import encoder_logits, theorem1_bound_report

    rep = theorem1_bound_report(data, build, eps)
    rep.title = f"Theorem 3: AoT T* realising f_δ (δ = {delta}) on T_ε = {rep.results['T_eps']} sequences, ε = {eps}"
    delta_kl = rep.results["d_KL(pi, T) - d_KL(pi, f)"]
    C = rep.results["C_eq14"]
    rng = logit_range(encoder_logits(build.W, build.E_all))
    rep.add(check("(18)", "d_KL(π, T*) − d_KL(π, f_δ) ≤ ε C max_t range f_δ(t) (the paper's form)", delta_kl, "<=",
                  Interval(eps * C.lo * rng, eps * C.hi * rng), "verdict",
                  repair_if_fails="(18) replaces ‖W E‖₂ of (14) by the largest logit range; use (14)'s "
                                  "2 C ε ‖W E‖₂"))
    we = rep.results["||W E||_2"]
    kT = rep.results["d_KL(pi, T)"]
    rep.add(check("(19)", "d_KL(π, T*) ≤ δ + 2 C ε ‖W E‖₂ (with d_KL(π, π₀) = 0, π₀ = π)", kT, "<=",
                  Interval(delta + 2 * eps * C.lo * we.lo, delta + 2 * eps * C.hi * we.hi), "verdict"))
    rep.results["max range f_delta"] = rng
    return rep


def theorem2_network_step(rep, data: Conditionals, build, enc: Dict[str, object]) -> None:
    """Add the AoT's step to a Theorem 2 report: d_KL(π, T) ≤ RHS(c) + slack, where T's logits
    are exactly W E(t) with λ̃ = the lower end of λ's enclosure, and
    slack = Σ_t π(t) (λ_hi − λ_lo)(max_j a_j − min_j a_j) bounds |d_KL(π, f_λ̃) − d_KL(π, f_λ)|
    (d/dλ KL_t = Σ_j (softmax_j − π_j) a_j)."""
    from ...arith.steps import check
    from ...arith.enclosure import Interval
    from .distribution import kl_enclosure

    W, c = enc["W"], coherence(enc["W"]) + MARGIN
    slack = Fraction(0)
    for w, gt, (lo, hi) in zip(data.prior, enc["g"], enc["lambda"]):
        a = [sum(((x - y) * z for x, y, z in zip(Wj, W[gt], W[gt])), Fraction(0)) for Wj in W]
        slack += w * (hi - lo) * (max(a) - min(a))
    kT = Interval(*kl_enclosure(build.model, data))
    rhs = theorem2_rhs(data, enc["g"], (c, c))
    rep.add(check("Thm 2 (AoT)", "d_KL(π, T) ≤ the bound (C = coherence + 2^-20) + slack(λ̃ vs λ); T realises f_λ̃ "
                  "exactly",
                  kT, "<=", Interval(rhs[0] + slack, rhs[1] + slack), "verdict"))
    rep.results["d_KL(pi, T)"] = kT


# ------------------------------------------------------------------ Theorem 2 on the proof files' instances

def theorem2_data(params, seed) -> Conditionals:
    """``jensen``: the fixed instance on which Theorem 2's simplified bound fails for the proof's
    encoder; otherwise seeded near-look-up-table conditionals."""
    if params.get("jensen"):
        A = (Fraction(61, 100), Fraction(9, 100), Fraction(1, 50000), Fraction(11, 100))
        B = (Fraction(1, 200000), Fraction(4876, 10000), Fraction(5124, 10000) - Fraction(2, 200000), Fraction(1, 200000))
        return Conditionals(5, 1, [(0,), (1,)], [Fraction(5167, 10000), Fraction(4833, 10000)],
                            [A + (1 - sum(A),), B + (1 - sum(B),)], require_full_support=False)
    return random_conditionals(params["N"], params["S"], seed, peaked=params.get("peaked", 20))


def run_theorem2(p):
    data = theorem2_data(p, p.get("seed", 0))
    return theorem2_report(data, unembedding(data.N, p["d"], p.get("W", "identity")))[0]
