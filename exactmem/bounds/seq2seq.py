"""Theorem 4.3 / B.3 (hardmax seq-to-seq lower bound): the counting chain, step by step.

Kajitsuka & Sato prove: if a hardmax Transformer with W parameters shatters N sequences of
length n whose nN tokens are pairwise distinct, then ``nN ≤ 9·W²·log2(48·e·n·N)``. The
chain (numbers are the paper's equations, transcribed in ``docs/lower-bounds.md``):

    2^{nN} ≤ K                                                                  (70)
    K ≤ (8e nN(4L+2)/W)^W · Π_l [(8e n³HN(8l−4)/(W_{l−1}+2msH))^{W_{l−1}+2msH}
                                 · (8e nqN·4l/(W_{l−1}+2msH+(m+1)q))^{W_{l−1}+2msH+(m+1)q}]   (72),(89),(90)
      ≤ ([8e nN(4L+2) + Σ_l (8e n³HN(8l−4) + 8e nqN·4l)] / W̄)^{W̄}               (90) AM–GM
    numerator ≤ 48e n³N W̄                                                       (93)
    nN ≤ W̄ log2(48e n³N) ≤ 3W̄ log2(48e nN)                                      (94),(95)
    W̄ ≤ W + 2Σ_l W_l ≤ W + 2LW ≤ 3W²                                             (96)

[`chain`][exactmem.bounds.chain] evaluates every inequality for a concrete architecture and (n, N), exactly
(integers; e and log2 through proven rational enclosures), and checks Lemma B.4's
precondition at every use. [`min_W`][exactmem.bounds.min_W] solves the final inequality for the smallest
admissible W; [`min_W_sharp`][exactmem.bounds.min_W_sharp] does the same for the unsimplified bound (90) over a
family of architectures.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, List, Optional, Tuple

from .arch import SMALLEST_LABEL, Architecture, check_convention, check_positive_int, smallest_W
from .bookkeeping import PAPER, Bookkeeping
from .counting import amgm_is_equality, amgm_log2, product_log2, total_weight
from ..arith.enclosure import FAILS, HOLDS, Interval, decide, e_interval, log2_times_e
from ..arith.steps import Report, Step, check, vacuity_step
from .search import ceil_sqrt, least_in_bracket
from .sharp import (Family, SharpMin, factors, min_L_not_ruled_out, min_W_sharp, product_log2_sharp,  # noqa: F401
                    ruled_out_sharp, sharp_bound_at)

REPAIR_PRECONDITION = (
    "Lemma B.4 is applied with more variables than polynomials. Repair: repeat polynomials "
    "(same sign vectors) so M' = max(M, v); the sharp bound (90) uses M'. For (96) split cases: "
    "a failing precondition forces W > nN, and then nN ≤ 9W²·log2(48e·nN) holds trivially.")


# ------------------------------------------------------------------------------ factors

def cell_variables(arch: Architecture) -> List[int]:
    """For each factor, the number of parameters its polynomials can depend on, on one cell
    of the partition (earlier W^K, W^Q only fix the argmax pattern): same order as
    `factors`. Lemma B.4 needs the counted v to be at least this."""
    out = []
    for l in range(1, arch.L + 1):
        out.append(arch.cell_att_vars(l))
        out.append(arch.cell_ffn_vars(l))
    out.append(arch.cell_out_vars())
    return out


def W_bar_formula(arch: Architecture, convention: str = "paper") -> int:
    """Eq. (91): W̄ = W + Σ_l [W_{l−1} + 2msH + W_{l−1} + 2msH + (m+1)q]."""
    m, s, H, q = arch.m, arch.s, arch.H, arch.q
    return arch.W(convention) + sum(2 * arch.W_l(l - 1, convention) + 4 * m * s * H + (m + 1) * q
                                    for l in range(1, arch.L + 1))


# ---------------------------------------------------------------------- aggregated checks

def _family(eq: str, claim: str, items: Iterable[Tuple[str, int, str, int]], kind: str = "inequality",
            repair: str = "", note: str = "") -> Step:
    """Check ``lhs rel rhs`` for every member (label, lhs, rel, rhs) of an exact integer family;
    report the first failure, else the tightest member (smallest slack)."""
    first_fail, tight, tight_slack = None, None, None
    for label, lhs, rel, rhs in items:
        st = check("", "", lhs, rel, rhs).status
        if st != HOLDS and first_fail is None:
            first_fail = (label, lhs, rel, rhs, st)
        slack = (rhs - lhs) if rel in ("<=", "<") else (lhs - rhs) if rel in (">=", ">") else 0
        if tight is None or slack < tight_slack:
            tight, tight_slack = (label, lhs, rel, rhs), slack
    if tight is None:
        return Step(eq, claim + " (no members)", 0, "==", 0, HOLDS, kind, note)
    if first_fail is not None:
        label, lhs, rel, rhs, st = first_fail
        return Step(eq, f"{claim} [fails at {label}]", lhs, rel, rhs, st, kind, note, repair if st == FAILS else "")
    label, lhs, rel, rhs = tight
    return Step(eq, f"{claim} [all; tightest {label}]", lhs, rel, rhs, HOLDS, kind, note)


# --------------------------------------------------------------------------------- chain

def chain(arch: Architecture, n: int, N: int, convention: str = "paper", bk: Bookkeeping = PAPER) -> Report:
    """Every step of the proof of Theorem B.3 for ``arch`` and (n, N), checked exactly.

    ``results`` holds W, W̄, the log2 of each form of the bound on K, the verdicts (is
    shattering nN distinct tokens ruled out by (90) / by (96)?) and the factor table.
    """
    n, N = check_positive_int("n", n), check_positive_int("N", N)
    check_convention(convention)
    L, H, q = arch.L, arch.H, arch.q
    Ws = arch.W_list(convention)
    W = arch.W(convention)
    fs = factors(arch, n, N, convention, bk)
    Wbar = total_weight(fs)
    nN = n * N
    rep = Report(f"Theorem B.3 chain: {arch.label()}, n={n}, N={N}, convention={convention}")

    # ---- (92), (91): parameter bookkeeping
    rep.add(_family("(92)", "W_l = md + l[block] equals the block-by-block sum",
                    ((f"l={l}", Ws[l], "==", arch.W_l(l, convention)) for l in range(L + 1)), "identity"))
    rep.add(_family("(92)", "W_l ≥ 4lH + 2lq",
                    ((f"l={l}", Ws[l], ">=", 4 * l * H + 2 * l * q) for l in range(1, L + 1))))
    rep.add(check("(92)", "W = W_L + E_out", W, "==", Ws[L] + arch.e_out_params(convention), "identity"))
    ev = cell_variables(arch)
    rep.add(_family("(79),(84),(89)", "counted variables v ≥ parameters the polynomials depend on (on a cell)",
                    ((f.label, f.v, ">=", e) for f, e in zip(fs, ev)), "variables",
                    note=f"exact parameter count W = {arch.W('exact')}, paper's count W = {arch.W('paper')}"))
    rep.add(check("(91)", "W̄ = Σ exponents of (90) equals W + Σ_l[2W_{l−1} + 4msH + (m+1)q]",
                  Wbar, "==", W_bar_formula(arch, convention), "identity"))

    # ---- degree induction and polynomial counts (77)–(88)
    rep.add(check("(73)", "E_in outputs have degree ≥ 1 (block-0 output degree)", bk.block_out_degree(0), ">=", 1,
                  "degree"))
    rep.add(_family("(77)", "score degree ≥ 2·(input degree) + 2 (W^K, W^Q)",
                    ((f"l={l}", bk.score_degree(l), ">=", 2 * bk.block_out_degree(l - 1) + 2)
                     for l in range(1, L + 1)), "degree"))
    rep.add(_family("(82)", "pre-activation degree ≥ input degree + 3 (W^V, W^O, W^(1))",
                    ((f"l={l}", bk.preact_degree(l), ">=", bk.block_out_degree(l - 1) + 3)
                     for l in range(1, L + 1)), "degree"))
    rep.add(_family("(85)", "block output degree ≥ pre-activation degree + 1 (W^(2))",
                    ((f"l={l}", bk.block_out_degree(l), ">=", bk.preact_degree(l) + 1)
                     for l in range(1, L + 1)), "degree"))
    rep.add(check("(88)", "output degree ≥ block-L degree + 1 (E_out)", bk.output_degree(L), ">=",
                  bk.block_out_degree(L) + 1, "degree"))
    rep.add(check("(78)", "score-difference count ≥ #(i, h, k, k', k'') = N·H·n³", bk.score_count(n, N, H), ">=",
                  N * H * n ** 3, "count"))
    rep.add(check("(83)", "pre-activation count ≥ #(i, k, unit) = N·n·q", bk.relu_count(n, N, q), ">=",
                  N * n * q, "count"))
    rep.add(check("(70)", "output count ≥ #(i, k) = nN", bk.output_count(n, N), ">=", nN, "count"))

    # ---- Lemma B.4 preconditions at every use
    pre_ok = True
    for eq, name, sel in (("(80)", "attention refinements: v = W_{l−1}+2msH ≤ M = N·H·n³", "attention"),
                          ("(84)", "ReLU refinements: v = W_{l−1}+2msH+(m+1)q ≤ M = N·q·n", "ReLU"),
                          ("(89)", "output signs: v = W ≤ M = nN", "outputs")):
        st = _family(eq, "Lemma B.4 precondition, " + name,
                     ((f.label, f.v, "<=", f.M) for f in fs if sel in f.label), "precondition", REPAIR_PRECONDITION,
                     note="the written proof does not check this")
        pre_ok = pre_ok and st.status == HOLDS
        rep.add(st)

    # ---- (90): product of factors and weighted AM–GM
    if amgm_is_equality(fs):
        rep.add(Step("(90)", "weighted AM–GM: Π(a_i/w_i)^{w_i} ≤ (Σa_i/Σw_i)^{Σw_i} (log2; equality: all ratios equal)",
                     "log2 Π", "==", "log2 AM", HOLDS))
    else:
        rep.add(check("(90)", "weighted AM–GM: log2 Π(8eM'D/v)^v ≤ W̄·log2(8e·ΣM'D/W̄)",
                      lambda b: product_log2(fs, b), "<=", lambda b: amgm_log2(fs, b)))

    # ---- (93)
    sum_MD_layers = sum(f.M * f.D for f in fs[:-1])
    sum_lin = sum(8 * l * H + 4 * l * q for l in range(1, L + 1))
    sum_2W = sum(2 * Ws[l] for l in range(1, L + 1))
    sum_2Wprev = sum(2 * Ws[l - 1] for l in range(1, L + 1))
    rep.add(check("(93)", "Σ_l[n³HN(8l−4) + nqN·4l] ≤ n³N·Σ_l(8lH + 4lq)", sum_MD_layers, "<=", n ** 3 * N * sum_lin))
    rep.add(check("(93)", "Σ_l(8lH + 4lq) ≤ Σ_l 2W_l", sum_lin, "<=", sum_2W))
    rep.add(check("(93)", "Σ_l 2W_l ≤ 2W + Σ_l 2W_{l−1}", sum_2W, "<=", 2 * W + sum_2Wprev))
    rep.add(check("(93)", "2W + Σ_l 2W_{l−1} ≤ 2W̄", 2 * W + sum_2Wprev, "<=", 2 * Wbar))
    rep.add(check("(93)", "4L + 2 ≤ 4W̄", 4 * L + 2, "<=", 4 * Wbar))
    rep.add(check("(93)", "nN·(4L+2) ≤ 4n³N·W̄", fs[-1].M * fs[-1].D, "<=", 4 * n ** 3 * N * Wbar))
    total_MD = sum(f.M * f.D for f in fs)
    rep.add(check("(93)", "8e·Σ M·D ≤ 48e·n³N·W̄ (e cancels: Σ M·D ≤ 6n³N·W̄)", total_MD, "<=", 6 * n ** 3 * N * Wbar))

    # ---- (94)–(96)
    amgm_paper = lambda b: Wbar * log2_times_e(Fraction(8 * total_MD, Wbar), b)  # noqa: E731
    b94 = lambda b: Wbar * log2_times_e(48 * n ** 3 * N, b)  # noqa: E731
    if 8 * total_MD == 48 * n ** 3 * N * Wbar:
        rep.add(Step("(94)", "W̄·log2(8e·ΣMD/W̄) ≤ W̄·log2(48e·n³N)", "equal", "==", "equal", HOLDS))
    else:
        rep.add(check("(94)", "W̄·log2(8e·ΣMD/W̄) ≤ W̄·log2(48e·n³N)", amgm_paper, "<=", b94))
    rep.add(check("(95)", "48e·n³N ≤ (48e·nN)³", lambda b: 48 * n ** 3 * N * e_interval(b), "<=",
                  lambda b: (48 * nN * e_interval(b)) * (48 * nN * e_interval(b)) * (48 * nN * e_interval(b))))
    b95 = lambda b: 3 * Wbar * log2_times_e(48 * nN, b)  # noqa: E731
    rep.add(check("(95)", "W̄·log2(48e·n³N) ≤ 3W̄·log2(48e·nN)", b94, "<=", b95))
    sum_W = sum(Ws[l] for l in range(1, L + 1))
    rep.add(check("(96)", "W̄ ≤ W + 2Σ_l W_l", Wbar, "<=", W + 2 * sum_W))
    rep.add(check("(96)", "W + 2Σ_l W_l ≤ W + 2LW", W + 2 * sum_W, "<=", W + 2 * L * W))
    rep.add(check("(96)", "L ≤ W", L, "<=", W))
    rep.add(check("(96)", "W + 2LW ≤ 3W²", W + 2 * L * W, "<=", 3 * W * W))
    b96 = lambda b: 9 * W * W * log2_times_e(48 * nN, b)  # noqa: E731

    # ---- composition and the trivial case
    if pre_ok:
        rep.add(check("(90)–(96)", "composed: log2 Π(factors) ≤ 9W²·log2(48e·nN)",
                      lambda b: product_log2(fs, b), "<=", b96))
    else:
        rep.add(check("(96)", "precondition failed ⇒ W > nN (case split)", W, ">", nN))
        rep.add(check("(96)", "trivial case W > nN: nN ≤ 9W²·log2(48e·nN)", nN, "<=", b96))

    # ---- verdicts
    st90, _, P90, _ = decide(nN, "<=", lambda b: product_log2(fs, b))
    st96, _, P96, _ = decide(nN, "<=", b96)
    _, _, P94, _ = decide(0, "<=", b94)
    rep.results.update({
        "W": W, "W (exact count)": arch.W("exact"), "W (paper count)": arch.W("paper"), "W̄": Wbar, "nN": nN,
        "log2 K ≤ (90) product": P90, "log2 K ≤ (94) W̄·log2(48e·n³N)": P94, "log2 K ≤ (96) 9W²·log2(48e·nN)": P96,
        "Lemma B.4 preconditions": "all hold" if pre_ok else "some fail (repaired: M' = max(M, v))",
        "verdict (90)": _verdict(st90), "verdict (96)": _verdict(st96),
    })
    rep.tables["Lemma B.4 applications (72), (89): M polynomials of degree ≤ D in v variables"] = (
        ["factor", "eq.", "M", "D", "v", "v ≤ M", "log2 (8e·max(M,v)·D/v)^v"],
        [[f.label, f.eq, f.M, f.D, f.v, f.precondition, f.log2(24)] for f in fs])
    return rep


def _verdict(status: str) -> str:
    if status == FAILS:
        return "shattering nN distinct tokens is RULED OUT"
    if status == HOLDS:
        return "not ruled out by this bound"
    return "undecided at maximum precision"


# ----------------------------------------------------------------------- minimal W (96)

def final_inequality(W: int, n: int, N: int) -> Tuple[str, Interval, Interval]:
    """Decide nN ≤ 9·W²·log2(48·e·n·N) exactly; returns (status, lhs, rhs enclosure)."""
    st, L, R, _ = decide(n * N, "<=", lambda b: 9 * W * W * log2_times_e(48 * n * N, b), bits=32)
    return st, L, R


def admissible(W: int, n: int, N: int) -> bool:
    """W is allowed by the final inequality (96) (a shattering model could have W parameters)."""
    st, _, _ = final_inequality(W, n, N)
    if st not in (HOLDS, FAILS):
        raise ArithmeticError("undecided final inequality")
    return st == HOLDS


@dataclass
class MinW:
    """Smallest W with nN ≤ 9W²·log2(48e·nN), with both sides at W − 1 (fails) and W (holds)."""

    n: int
    N: int
    W: int
    below: Optional[Tuple[str, Interval, Interval]]
    at: Tuple[str, Interval, Interval]


def min_W(n: int, N: int) -> MinW:
    """Solve the final inequality of Theorem B.3 for the smallest admissible W.

    The predicate ``nN ≤ 9W²·λ``, λ = log2(48e·nN) > 0, is increasing in W. With an
    enclosure λ ∈ [λ_lo, λ_hi], every W with W² < nN/(9λ_hi) fails and every W with
    W² ≥ nN/(9λ_lo) holds, so the answer lies in the bracket (lo, hi] computed with exact
    integer square roots (usually hi − lo ≤ 1); it is then bisected with exact decisions,
    and both sides are returned at W − 1 (fails) and W (holds).
    """
    n, N = check_positive_int("n", n), check_positive_int("N", N)
    lg = log2_times_e(48 * n * N, 32)
    lo = ceil_sqrt(Fraction(n * N) / (9 * lg.hi)) - 1  # lo² < nN/(9λ_hi): fails (or lo = 0)
    hi = max(1, ceil_sqrt(Fraction(n * N) / (9 * lg.lo)))  # hi² ≥ nN/(9λ_lo): holds
    W = least_in_bracket(lambda w: admissible(w, n, N), max(lo, 0), hi)
    return MinW(n, N, W, final_inequality(W - 1, n, N) if W > 1 else None, final_inequality(W, n, N))


# ------------------------------------------------------------- minimal W, sharp bound (90)
# the search over architectures lives in .sharp (closed form of (90) at any depth)


def simplification_cost(n: int, N: int, family: Family = Family(), convention: str = "paper") -> Report:
    """How much the simplifications (93)–(96) cost at (n, N): minimal W under (96) versus under
    the sharp bound (90) over the family, their ratio, and at the sharp optimum the ratio of
    the capacity bounds 9W²·log2(48e·nN) / log2 Π(factors)."""
    mw = min_W(n, N)
    sm = min_W_sharp(n, N, family, convention)
    rep = Report(f"simplified (96) vs unsimplified (90) bound at n={n}, N={N}")
    W = sm.W
    cap96 = lambda b: 9 * W * W * log2_times_e(48 * n * N, b)  # noqa: E731
    a = sm.arch
    rep.add(check("(90)≤(96)", f"at the sharp optimum {a.label()}: log2 Π ≤ 9W²·log2(48e·nN)",
                  lambda b: product_log2_sharp(a, n, N, convention, b), "<=", cap96))
    ratio = cap96(48) / sm.log2_bound
    rep.results.update({
        "min W (96) simplified": mw.W, "min W (90) sharp, over family": W, "sharp optimum": sm.arch.label(),
        "ratio min W (90) / min W (96)": Fraction(W, mw.W),
        "capacity ratio 9W²log2(48e·nN) / log2 Π at the sharp optimum": ratio,
        "family": sm.family, "convention": convention,
    })
    return rep


def min_W_report(n: int, N: int, sharp: bool = True, family: Family = Family()) -> Report:
    """The verdict of Theorem B.3 for (n, N): the smallest W with nN ≤ 9W²·log2(48e·nN),
    both sides shown at W_min (holds) and at W_min − 1 (fails), whether W_min exceeds the
    W = 10 of the smallest architecture under eq. (92) (else the bound is vacuous), and
    (``sharp``) the unsimplified counterpart over ``family``, with the same test against the
    family's smallest member. (The brute-force scan over W that used to cross-check the
    minimum here is a test now: ``tests/test_bounds_scale.py``.)"""
    mw = min_W(n, N)
    W = mw.W
    rep = Report(f"Theorem B.3 minimal W: n={n}, N={N} (nN = {n * N})")
    rhs = lambda W_: (lambda b: 9 * W_ * W_ * log2_times_e(48 * n * N, b))  # noqa: E731
    rep.add(check("(96)", f"at W = {W}: nN ≤ 9W²·log2(48e·nN)", n * N, "<=", rhs(W), "verdict"))
    if W > 1:
        rep.add(check("(96)", f"at W = {W - 1}: nN > 9W²·log2(48e·nN) (so no smaller W is allowed)", n * N, ">",
                      rhs(W - 1), "verdict"))
    W0 = smallest_W("paper")
    rep.add(vacuity_step("(92)", "min W (96)", W, W0, SMALLEST_LABEL))
    rep.results.update({"min W (96)": W, f"smallest architecture ({SMALLEST_LABEL}), W by eq. (92)": W0,
                        "(96) vacuous (rules out no architecture)": W <= W0})
    if W <= W0:
        rep.notes.append(f"(96) is vacuous at nN = {n * N}: it allows W = {W}, but the smallest architecture "
                         f"of eq. (4) ({SMALLEST_LABEL}) already has W = {W0} parameters by eq. (92).")
    if sharp:
        sm = min_W_sharp(n, N, family)
        F0 = family.smallest_W("paper")
        rep.results.update({"min W (90) over family": sm.W, "attained by": sm.arch.label(),
                            "log2 bound (90) there": sm.log2_bound,
                            "ratio min W (90) / min W (96)": Fraction(sm.W, W), "family": sm.family,
                            "(90) vacuous as a lower bound on W (its minimum is the family's smallest W)":
                                sm.W <= F0})
        _, _, P, _ = decide(0, "<=", lambda b: 9 * sm.W * sm.W * log2_times_e(48 * n * N, b))
        rep.results["capacity ratio 9W²log2(48e·nN) / log2 Π at that architecture"] = P.lo / sm.log2_bound.hi
    return rep
