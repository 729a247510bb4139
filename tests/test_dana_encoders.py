"""Dana et al. Propositions 2 and 3 and Corollary 2 (exactmem/bounds/dana/encoders.py): every small
instance is checked, each check recomputed independently, and a planted wrong step fails."""

from fractions import Fraction

import pytest
import sympy

from exactmem.bounds.dana import encoders
from exactmem.pipeline.loader import run_bounds_file
from exactmem.data import dana_data

PROOF = "proofs/dana_encoders.py"


def test_every_small_instance_is_checked():
    rows = run_bounds_file(PROOF, "small")
    assert {r.theorem for r in rows} == {"dana.proposition2", "dana.proposition3", "dana.corollary2"}
    assert rows and all(r.ok and r.failed == 0 for r in rows), [(r.theorem, r.instance) for r in rows if not r.ok]


def test_proposition2_converse_rank_matches_sympy():
    data, K = encoders.dyadic_conditionals(5, 2, 0)
    centred = sympy.Matrix([[sympy.Rational(x) - sympy.Rational(sum(r), len(r)) for x in r] for r in K])
    rep = encoders.proposition2_report(5, 2, 2)
    assert rep.results["rank of centred log π"] == centred.rank() == 4
    # the conditionals really are 2^k / Z
    for row, c in zip(K, data.conditionals):
        assert c == tuple(Fraction(2 ** k, sum(2 ** x for x in row)) for k in row)


def test_proposition2_converse_fails_when_the_rank_is_low(monkeypatch):
    real = encoders.dyadic_conditionals

    def low_rank(N, S, seed, spread=3):
        data, K = real(N, S, seed, spread)
        return data, [[0, 1] + [0] * (N - 2) for _ in K]  # rank 1 ≤ d

    monkeypatch.setattr(encoders, "dyadic_conditionals", low_rank)
    rep = encoders.proposition2_report(5, 2, 2)
    assert not rep.ok and rep.failed[0].claim.startswith("rank of the centred")


def test_proposition2_positive_part_refuses_a_too_small_bound(monkeypatch):
    # a wrong encoder (logits off by 1/8 on one token) cannot meet the 2^-(b-4) bound
    from exactmem.constructions.dana import distribution as dana_distribution

    real = dana_distribution.log_prob_targets

    def skewed(data, b):
        out = real(data, b)
        return [[z[0] + Fraction(1, 8), z[1] - Fraction(1, 8)] + z[2:] for z in out]

    monkeypatch.setattr(dana_distribution, "log_prob_targets", skewed)
    rep = encoders.proposition2_report(3, 2, 2, frac_bits=(20,))
    assert not rep.ok


def test_proposition3_off_circle_point_and_small_lambda_fail(monkeypatch):
    from exactmem.constructions.dana import association as dana

    real = dana.circle_points
    monkeypatch.setattr(dana, "circle_points", lambda N: [(Fraction(1), Fraction(1, 1000))] + real(N)[1:])
    rep = encoders.proposition3_report(5, 2, 2)
    assert not rep.ok and rep.failed[0].claim.startswith("every W_j lies exactly")
    monkeypatch.setattr(dana, "circle_points", real)
    margin = dana.circle_margin(real(5))
    # λ just below what the bound needs: the decision must fail, not round up
    bound = encoders.E.LN2 * (encoders.E.log2(4) + 10)
    lam = int(bound.lo / margin)
    from exactmem.arith.steps import check

    assert check("t", "t", lam * margin, ">=", bound).status == "fails"


def test_corollary2_counts_and_floor():
    rep = encoders.corollary2_report(4, 2, 2, 2, 2)
    X, T0, N = 6, 16, 4
    assert rep.results["phi(X)"] == Fraction(1, N) + (1 - Fraction(1, N)) * Fraction(X, T0)
    assert rep.results["E[Acc]"] == (X + Fraction(T0 - X, N)) / T0
    assert rep.results["worst-case Acc"] == Fraction(X, T0)


def test_corollary2_detects_a_network_built_from_a_flipped_label(monkeypatch):
    from exactmem.constructions.dana import association as dana

    real_build = dana.build_association

    def flipped(table, *a, **k):
        labels = list(table.labels)
        labels[0] = (labels[0] + 1) % table.N
        return real_build(dana_data.LookupTable(table.N, table.S, table.sequences, labels, table.seed), *a, **k)

    monkeypatch.setattr(dana, "build_association", flipped)
    rep = encoders.corollary2_report(4, 2, 2, 2, 2)
    assert not rep.ok
    assert any(s.claim.startswith("memorized associations") for s in rep.failed)


@pytest.mark.parametrize("N,d", [(3, 1), (6, 3)])
def test_proposition2_needs_d_below_n_minus_1_for_the_converse(N, d):
    rep = encoders.proposition2_report(N, 2, d)
    assert rep.ok and rep.results["d_KL(π, L)"] == "> 0"
    assert rep.results["rank of centred log π"] > d
