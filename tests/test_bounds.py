"""Lower bounds (exactmem.bounds): enclosures, the Thm B.3 chain on a grid, minimal-W solvers
against brute-force scans, planted wrong steps, Thm B.2, bit bounds, CLI."""

import dataclasses
import os
import sys
from fractions import Fraction as F
from itertools import product

import pytest

from exactmem.bounds.arch import Architecture, BoundsInputError, parse_architecture, parse_count
from exactmem.bounds.bookkeeping import PAPER
from exactmem.bounds.counting import Factor, amgm_exact, amgm_is_equality, amgm_log2, product_log2
from exactmem.bounds.seq2seq import (Family, chain, factors, min_L_not_ruled_out, min_W, min_W_report, min_W_sharp,
                                     ruled_out_sharp)
from exactmem.cli.app import main
from exactmem.arith.enclosure import (FAILS, HOLDS, Interval, decide, decimal, e_interval, log2_e, log2_interval,
                                show)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------------- enclosures

def test_e_enclosure_brackets_known_digits():
    I = e_interval(40)
    assert F(2718281828, 10 ** 9) < I.lo < I.hi < F(2718281829, 10 ** 9)
    assert I.width < F(1, 2 ** 40)


@pytest.mark.parametrize("x", [F(3), F(10), F(1, 3), F(7, 5), F(384000), F(2 ** 70 + 1), F(5, 2 ** 40), F(99, 100)])
def test_log2_enclosure_is_proven_exactly(x):
    """lo ≤ log2 x ≤ hi checked with integers: 2^p ≤ x^q for lo = p/q (q a power of two)."""
    I = log2_interval(x, 12)
    assert I.width <= F(1, 2 ** 12)
    for bound, upper in ((I.lo, False), (I.hi, True)):
        p, q = bound.numerator, bound.denominator
        lhs = x.denominator ** q * (2 ** p if p >= 0 else 1)  # 2^p · den^q   vs   num^q (· 2^-p)
        rhs = x.numerator ** q * (2 ** (-p) if p < 0 else 1)
        assert (lhs >= rhs) if upper else (lhs <= rhs)


def test_log2_exact_on_powers_of_two_and_rejects_nonpositive():
    assert log2_interval(F(1024), 30) == Interval.exact(10)
    assert log2_interval(F(1, 8), 30) == Interval.exact(-3)
    with pytest.raises(ValueError):
        log2_interval(F(0), 10)
    I = log2_e(30)
    assert I.lo < F(14426950409, 10 ** 10) < I.hi


def test_decide_escalates_and_detects_equality():
    st, L, R, bits = decide(lambda b: log2_interval(F(3), b), "<", F(1585, 1000), bits=4)
    assert st == HOLDS and bits > 4  # log2 3 = 1.58496... needs more than 4 bits
    assert decide(5, "==", 5)[0] == HOLDS and decide(5, "<", 5)[0] == FAILS
    assert decide(F(1, 3), ">=", F(1, 2))[0] == FAILS


def test_decimal_rounds_outward():
    assert decimal(F(22, 7)) == "3.142857" and decimal(F(22, 7), up=True) == "3.142858"
    assert decimal(F(-22, 7)) == "-3.142858"
    assert decimal(F(10 ** 20 + 1, 3)) == "3.333333e+19"
    assert show(Interval(F(1, 3), F(2, 3))) == "[0.3333333, 0.6666667]"


def test_parse_inputs():
    assert parse_count("N", "10^6") == parse_count("N", "1e6") == parse_count("N", "1,000,000") == 10 ** 6
    assert parse_architecture("d=1, m=2,s=1,H=3,q=4,L=5") == Architecture(1, 2, 1, 3, 4, 5)
    for bad in ("0", "-3", "x", "1.5e3", ""):
        with pytest.raises(BoundsInputError):
            parse_count("N", bad)
    with pytest.raises(BoundsInputError, match="missing"):
        parse_architecture("d=1,m=2")
    with pytest.raises(BoundsInputError, match="unknown architecture key"):
        parse_architecture("d=1,m=2,s=1,H=1,q=1,L=1,z=3")
    with pytest.raises(BoundsInputError):
        Architecture(1, 0, 1, 1, 1, 1)


# --------------------------------------------------------------------- counts (92)

def test_parameter_counts_eq92():
    a = Architecture(d=3, m=4, s=2, H=5, q=7, L=6)
    assert a.block_params("paper") == 4 * 4 * 2 * 5 + 2 * 5 * 7
    assert a.block_params("exact") == 4 * 4 * 2 * 5 + 2 * 4 * 7 + 7 + 4
    assert a.W("paper") == 12 + 6 * a.block_params("paper") + 12
    assert a.W("exact") == 12 + 6 * a.block_params("exact") + 4
    assert sum(r * c for _, r, c in a.layout()) == a.W("exact")
    assert a.W_list("paper") == [a.W_l(l) for l in range(7)]


# ------------------------------------------------------------- the chain on a grid

ARCHS = [Architecture(1, 1, 1, 1, 1, 1), Architecture(1, 2, 1, 1, 4, 3), Architecture(2, 4, 1, 2, 1, 3),
         Architecture(8, 4, 2, 2, 16, 6), Architecture(1, 1, 1, 1, 1, 40), Architecture(16, 8, 4, 4, 32, 2)]
SIZES = [(1, 1), (2, 5), (8, 1000), (64, 10 ** 4), (1, 10 ** 6)]


@pytest.mark.parametrize("arch", ARCHS, ids=lambda a: a.label().replace(" ", ""))
@pytest.mark.parametrize("convention", ["paper", "exact"])
def test_every_inequality_of_the_chain_holds_on_grid(arch, convention):
    for n, N in SIZES:
        rep = chain(arch, n, N, convention)
        assert rep.ok, (n, N, [(s.eq, s.claim) for s in rep.failed])
        for s in rep.steps:
            if s.kind == "precondition":
                continue
            assert s.status == HOLDS, (n, N, s.eq, s.claim, s.lhs, s.rhs)
        W = arch.W(convention)
        pre = [s for s in rep.steps if s.kind == "precondition"]
        if W <= n * N:  # then v ≤ W ≤ nN ≤ every M: the written proof needs no repair
            assert all(s.status == HOLDS for s in pre)
        else:
            assert any(s.status == FAILS and s.repair for s in pre) or all(s.status == HOLDS for s in pre)
        assert all(s.kind == "precondition" for s in rep.repaired)
        # (96) ruling out implies (90) ruling out
        if "RULED OUT" in rep.results["verdict (96)"]:
            assert "RULED OUT" in rep.results["verdict (90)"]


def test_chain_values_match_hand_computation():
    a = Architecture(1, 2, 1, 1, 4, 3)
    rep = chain(a, 8, 1000)
    assert rep.results["W"] == 2 + 3 * (8 + 24) + 2 == 100
    assert rep.results["W̄"] == 100 + sum(2 * (2 + 32 * (l - 1)) + 8 + 12 for l in (1, 2, 3))
    fs = factors(a, 8, 1000)
    assert [(f.M, f.D, f.v) for f in fs[:2]] == [(512000, 4, 2 + 4), (32000, 4, 2 + 4 + 12)]
    assert (fs[-1].M, fs[-1].D, fs[-1].v) == (8000, 14, 100)
    assert "RULED OUT" in rep.results["verdict (90)"] and "not ruled out" in rep.results["verdict (96)"]


def test_precondition_failure_is_reported_with_repair():
    rep = chain(Architecture(2, 4, 1, 2, 1, 3), 2, 5)
    bad = [s for s in rep.steps if s.kind == "precondition" and s.status == FAILS]
    assert {s.eq for s in bad} == {"(80)", "(84)", "(89)"}
    assert all("max(M, v)" in s.repair for s in bad)
    assert any("case split" in s.claim and s.status == HOLDS for s in rep.steps)
    assert rep.ok and "Repairs" in rep.to_markdown()


def test_amgm_exact_agrees_with_enclosure():
    fs = factors(Architecture(1, 1, 1, 1, 1, 2), 2, 3)
    assert amgm_exact(fs)
    assert decide(lambda b: product_log2(fs, b), "<=", lambda b: amgm_log2(fs, b))[0] == HOLDS
    eq = [Factor("a", "", 3, 2, 2), Factor("b", "", 6, 2, 4)]  # ratios M'D/v all 3
    assert amgm_is_equality(eq) and amgm_exact(eq)


# ------------------------------------------------------------------ planted errors

def test_planted_degree_8l_minus_5_is_detected_by_the_chain():
    bad = dataclasses.replace(PAPER, score_degree=lambda l: 8 * l - 5, name="8l-5")
    rep = chain(Architecture(1, 2, 1, 1, 2, 3), 4, 100, bk=bad)
    assert not rep.ok
    assert [s.eq for s in rep.failed] == ["(77)"]
    assert rep.failed[0].lhs == 3 and rep.failed[0].rhs == 4  # l = 1: 8·1 − 5 < 2·1 + 2


def test_planted_larger_degree_breaks_eq93():
    bad = dataclasses.replace(PAPER, preact_degree=lambda l: 4 * l + 4, name="4l+4")
    rep = chain(Architecture(1, 1, 1, 1, 4, 2), 1, 1000, bk=bad)
    assert not rep.ok and "(93)" in {s.eq for s in rep.failed}  # (85) fails too: 4l+1 < (4l+4)+1


def test_planted_wrong_polynomial_count_is_detected():
    bad = dataclasses.replace(PAPER, score_count=lambda n, N, H: N * H * n ** 2, name="n^2")
    rep = chain(Architecture(1, 1, 1, 1, 1, 2), 3, 10, bk=bad)
    assert [s.eq for s in rep.failed] == ["(78)"]


# ------------------------------------------------------------------- minimal W (96)

def test_min_W_at_the_reported_sizes():
    assert min_W(8, 1000).W == 7
    assert min_W(64, 10 ** 4).W == 52
    assert min_W(1, 10 ** 6).W == 65
    m = min_W(64, 10 ** 4)
    assert m.at[0] == HOLDS and m.below[0] == FAILS


def test_min_W_depends_on_nN_only():
    assert min_W(8, 1250).W == min_W(1, 10000).W == min_W(10000, 1).W


# -------------------------------------------------------------- sharp bound (90)

def test_sharp_bound_is_monotone_in_L():
    prev = None
    for L in range(1, 25):
        P = product_log2(factors(Architecture(1, 1, 1, 1, 1, L), 4, 250), 32)
        if prev is not None:
            assert P.lo > prev.hi
        prev = P


def test_min_L_bisection_matches_scan():
    shape = (1, 2, 1, 1, 2)
    L = min_L_not_ruled_out(shape, 8, 500)
    assert L is not None and not ruled_out_sharp(Architecture(*shape, L), 8, 500)
    assert all(ruled_out_sharp(Architecture(*shape, l), 8, 500) for l in range(1, L))


def test_sharp_minimum_and_ratio_report():
    sm = min_W_sharp(8, 1000)
    assert sm.W == 58 and sm.arch == Architecture(1, 1, 1, 1, 1, 7)
    small = Family(m=(1,), s=(1,), H=(1,), q=(1,))
    assert min_W_sharp(8, 1000, small).W == 58
    rep = min_W_report(8, 1000)
    assert rep.ok and rep.results["min W (96)"] == 7 and rep.results["ratio min W (90) / min W (96)"] == F(58, 7)


# -------------------------------------------------------------------- next-token

def test_next_token_reduction_all_kinds():
    from exactmem.bounds.next_token import reduction_report

    for kind in ("hardmax", "uniform", "softmax"):
        rep = reduction_report(Architecture(2, 3, 2, 2, 3, 2), 4, 6, kind, seed=3)
        assert rep.ok, kind


def test_reduction_parameter_count_repair_when_m_exceeds_4sH():
    from exactmem.bounds.next_token import reduction_report

    rep = reduction_report(Architecture(2, 8, 1, 1, 4, 2), 3, 5)
    assert rep.ok and [s.eq for s in rep.repaired] == ["(65)"]
    assert rep.repaired[0].lhs == 240 - 2 * 32 + 2 * 64 and rep.repaired[0].rhs == 240


def test_reduction_fails_on_non_repeated_tokens():
    """Control: with distinct tokens in a sequence the reduced network is not the Transformer."""
    from exactmem.bounds.next_token import random_transformer, reduce_to_relu
    from exactmem.model.forward import forward

    arch = Architecture(1, 2, 1, 1, 2, 1)
    model = random_transformer(arch, "hardmax", 0)
    red = reduce_to_relu(model)
    seqs = [[(F(k),), (F(k + 3),), (F(-k),)] for k in range(1, 8)]
    full = forward(model, seqs).outputs
    lin = forward(red, [[s[-1]] for s in seqs]).outputs
    assert any(full[i][-1] != lin[i] for i in range(len(seqs)))


def test_next_token_chain_and_min_W():
    from exactmem.bounds.next_token import min_W_next_token, min_W_next_token_report, next_token_chain, operation_count

    for arch in ARCHS:
        for N in (1, 10, 1000, 10 ** 5):
            assert next_token_chain(arch, N).ok
            assert operation_count(arch) <= 3 * arch.W("exact") + 3
    assert min_W_next_token(10 ** 4).best == 59 and min_W_next_token(10 ** 4).algorithm == 29
    assert min_W_next_token(10 ** 6).algorithm == 288
    assert min_W_next_token_report(10 ** 6).ok


# ----------------------------------------------------- vacuous bounds (issue 15, item 5)

def test_smallest_architecture_has_W_10_under_both_conventions():
    """Every shape of eq. (4) on a grid has at least the W of d=m=s=H=q=L=1, which is 10."""
    from exactmem.bounds.arch import smallest_W

    assert smallest_W("paper") == smallest_W("exact") == 10
    for conv in ("paper", "exact"):
        assert min(Architecture(*dims).W(conv) for dims in product((1, 2), repeat=6)) == 10
    assert Family().smallest_W() == 10 and Family(m=(2,), q=(3,)).smallest_W() == Architecture(1, 2, 1, 1, 3, 1).W()


def test_min_W_report_says_when_96_is_vacuous():
    """Thm B.3 at n = 1, N = 100 allows W = 1 < 10: the report says the bound rules out nothing;
    the switch from vacuous to informative is exactly where (96) first fails at W = 10."""
    from exactmem.bounds.seq2seq import admissible

    rep = min_W_report(1, 100)
    assert rep.ok and rep.results["min W (96)"] == 1
    vac = rep.steps[-1]
    assert (vac.eq, vac.lhs, vac.rel, vac.rhs, vac.status) == ("(92)", 1, "<=", 10, HOLDS) and "VACUOUS" in vac.claim
    assert rep.results["(96) vacuous (rules out no architecture)"] is True
    assert rep.results["min W (90) over family"] == 10  # the family's smallest member: (90) is vacuous too
    assert rep.results["(90) vacuous as a lower bound on W (its minimum is the family's smallest W)"] is True
    assert min_W_report(8, 1000, sharp=False).results["(96) vacuous (rules out no architecture)"] is True  # W = 7
    informative = min_W_report(64, 10 ** 4)
    assert informative.steps[-1].rel == ">" and informative.steps[-1].lhs == 52
    assert informative.results["(90) vacuous as a lower bound on W (its minimum is the family's smallest W)"] is False
    lo, hi = 1, 10 ** 6  # largest nN where W = 10 is admissible: (96) vacuous up to it, informative after
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if admissible(10, 1, mid) else (lo, mid)
    assert min_W(1, lo).W == 10 and min_W(1, lo + 1).W == 11
    key = "(96) vacuous (rules out no architecture)"
    assert min_W_report(1, lo, sharp=False).results[key] and not min_W_report(1, lo + 1, sharp=False).results[key]


def test_cli_minw_and_next_token_flag_vacuous_bounds(capsys):
    import json

    assert main(["bounds", "minw", "--n", "1", "--N", "100", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)[0]
    assert rep["results"]["min W (96)"] == 1
    assert rep["results"]["smallest architecture (d=m=s=H=q=L=1), W by eq. (92)"] == 10
    assert [(s["lhs"], s["rel"], s["rhs"], s["status"]) for s in rep["steps"] if s["eq"] == "(92)"] == [
        ("1", "<=", "10", HOLDS)]
    assert main(["bounds", "next-token", "--N", "1000", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)[0]["steps"]
    assert [(s["lhs"], s["rel"], s["rhs"]) for s in steps] == [("19", ">", "10"), ("9", "<=", "10")]  # GJ: vacuous


# -------------------------------------------------------------------------- bits

def test_rational_bit_counts():
    from exactmem.bounds.bits import count_rationals_bruteforce, rationals_with_bits_at_most

    for b in range(1, 8):
        assert count_rationals_bruteforce(b) <= rationals_with_bits_at_most(b)
    assert [rationals_with_bits_at_most(b) for b in (1, 2, 3)] == [1, 3, 11]
    assert [count_rationals_bruteforce(b) for b in (1, 2, 3)] == [1, 3, 11]


def test_total_bits_capacity_against_enumeration():
    from fractions import Fraction

    from exactmem.bounds.bits import total_bits_capacity
    from exactmem.arith.numbers import bits

    per = {}
    for p in range(-32, 33):
        for q in range(1, 33):
            x = Fraction(p, q)
            per.setdefault(bits(x), set()).add(x)
    exact = {k: len(v) for k, v in per.items() if k <= 6}  # complete for bits ≤ 6
    for W in (1, 2, 3):
        for T in range(W, 7):
            count = sum(_prod(exact[k] for k in ks) for ks in product(exact, repeat=W) if sum(ks) <= T)
            assert count <= total_bits_capacity(W, T), (W, T)


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def test_min_bits_solvers_against_scans():
    from exactmem.bounds.bits import (min_exactmem_bits, min_fixed_bits, min_total_bits, rationals_with_bits_at_most,
                                      total_bits_capacity)

    for W, N, C in [(1, 1, 2), (10, 100, 2), (7, 50, 3), (60, 8000, 2), (100, 1000, 10)]:
        b = min_fixed_bits(W, N, C)
        assert 2 ** (W * b) >= C ** N and (b == 1 or 2 ** (W * (b - 1)) < C ** N)
        e = min_exactmem_bits(W, N, C)
        assert rationals_with_bits_at_most(e) ** W >= C ** N
        assert e == 1 or rationals_with_bits_at_most(e - 1) ** W < C ** N
        T = min_total_bits(W, N, C)
        assert total_bits_capacity(W, T) >= C ** N and total_bits_capacity(W, T - 1) < C ** N


def test_bits_against_the_baseline():
    from exactmem.bounds.bits import baseline_rows

    rows = baseline_rows([20, 200], C=2)
    assert {r["construction"] for r in rows} == {"relu_interpolation.steps", "relu_interpolation.slopes",
                                                 "kajitsuka.next_token"}
    for r in rows:
        assert r["report"].ok
        assert r["total_bits"] >= r["N"]  # at least N·log2 2


# --------------------------------------------------------------------------- CLI

def test_cli_minw(capsys):
    assert main(["bounds", "minw", "--n", "64", "--N", "10^4", "--no-sharp"]) == 0
    out = capsys.readouterr().out
    assert "min W (96): 52" in out and "HOLDS" in out


def test_cli_chain_and_exit_codes(capsys):
    assert main(["bounds", "chain", "--n", "8", "--N", "1000", "--arch", "d=1,m=2,s=1,H=1,q=4,L=3"]) == 0
    assert "RULED OUT" in capsys.readouterr().out
    for argv in (["bounds", "minw", "--n", "0"], ["bounds", "chain", "--arch", "d=1"],
                 ["bounds", "bits", "--N", "many"], ["bounds", "run", "no/such/file.py"],
                 ["bounds", "degrees", "--arch", "d=4,m=4,s=4,H=4,q=4,L=3"],
                 ["bounds", "brute", "--values", "a,b"], ["bounds", "plot", "--out", "/no/such/dir/x.png"]):
        assert main(argv) == 3, argv
        err = capsys.readouterr().err
        assert err.startswith("exactmem: error: ") and "Traceback" not in err


def test_cli_usage_errors_exit_3(capsys):
    for argv in (["bounds"], ["bounds", "minw", "--bogus"], ["bounds", "frobnicate"],
                 ["bounds", "chain", "--arch", "d=1,m=1,s=1,H=1,q=1,L=1", "--convention", "nope"],
                 ["bounds", "next-token", "--reduction", "--kind", "max"], ["bounds", "run", "--size", "huge"]):
        assert main(argv) == 3, argv
        err = capsys.readouterr().err
        assert err.startswith("exactmem: error: bounds") and len(err.splitlines()) == 1, err


def test_cli_next_token_bits_degrees_brute(capsys):
    assert main(["bounds", "next-token", "--N", "10000", "--arch", "d=1,m=1,s=1,H=1,q=1,L=3", "--reduction",
                 "--kind", "uniform"]) == 0
    out = capsys.readouterr().out
    assert "minimal parameter count (the larger): 59" in out
    assert main(["bounds", "bits", "--N", "1000", "--n", "8", "--W", "60", "--json"]) == 0
    assert '"title"' in capsys.readouterr().out
    assert main(["bounds", "degrees"]) == 0
    assert main(["bounds", "brute", "--samples", "300"]) == 0
    capsys.readouterr()


def test_cli_run_lower_bounds_file(capsys):
    assert main(["bounds", "run", os.path.join(ROOT, "proofs", "lower_bounds.py"), "--only", "thm4_3.chain"]) == 0
    out = capsys.readouterr().out
    assert "CHECKED" in out and "FAILED" not in out and "max(M, v)" in out


def test_plot_missing_matplotlib_message(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["bounds", "plot", "--quick", "--out", str(tmp_path / "p.png")]) == 3
    assert capsys.readouterr().err == ("exactmem: error: bounds plot needs matplotlib, which is not installed: "
                                       "pip install -e '.[plot]' (from the repository root)\n")
    assert not (tmp_path / "p.png").exists()


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    from exactmem.bounds.plot import make_plot, slopes_params, steps_params

    S = make_plot(str(tmp_path / "p.png"), N_values=(10, 1000), nN_values=(8, 800), sharp_n=(1,))
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert S["baseline steps d+6(N−1)+1"] == [(10, steps_params(10, 16)), (1000, 16 + 6 * 999 + 1)]
    assert slopes_params(1000, 16) == 16 + 3 * 999 + 1
    assert S["Thm 4.3 (96): nN ≤ 9W²log2(48e·nN)"] == [(8, 1), (800, 3)]


def test_lower_bound_file_sizes_match_proof_protocol():
    from exactmem.bounds.protocol import SIZES as BOUND_SIZES
    from exactmem.pipeline.loader import load_bounds_file
    from exactmem.proof import SIZES

    assert BOUND_SIZES == SIZES
    names = {t.name for t in load_bounds_file(os.path.join(ROOT, "proofs", "lower_bounds.py"))}
    assert {"kajitsuka.thm4_3.chain", "kajitsuka.thm4_3.min_W", "kajitsuka.thm4_2.reduction", "kajitsuka.bits"} <= names
