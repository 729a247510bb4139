"""Degree and count bookkeeping of Thm B.3 with sympy polynomials; planted wrong degrees."""

import dataclasses

import pytest

from exactmem.bounds.arch import Architecture
from exactmem.bounds.bookkeeping import PAPER
from exactmem.bounds.symbolic import symbolic_report

pytest.importorskip("sympy")


def _degrees(rep):
    return {name: (att, claimed) for name, att, claimed in rep.results["degrees (family, attained, claimed)"]}


def test_degrees_8l_4_4l_4l1_4L2_attained_on_a_cell():
    rep = symbolic_report(Architecture(1, 1, 1, 1, 1, 2), 2, 1)
    assert rep.ok
    deg = _degrees(rep)
    assert deg["scores l=1"] == (4, 4) and deg["scores l=2"] == (12, 12)
    assert deg["pre-activations l=1"] == (4, 4) and deg["pre-activations l=2"] == (8, 8)
    assert deg["block outputs l=1"] == (5, 5) and deg["block outputs l=2"] == (9, 9)
    assert deg["outputs"] == (10, 10)
    assert rep.results["all degree bounds attained on this cell"]


def test_counts_and_variables_multihead():
    arch = Architecture(2, 2, 1, 2, 2, 2)
    rep = symbolic_report(arch, 2, 1)
    assert rep.ok
    formed = [s for s in rep.steps if "differences formed" in s.claim]
    assert all(s.lhs == s.rhs == 1 * 2 * 2 ** 3 for s in formed)  # N·H·n³
    var = {k: (inv, cell) for k, inv, cell in rep.results["variables (family, involved, cell count)"]}
    # on a cell the polynomials involve exactly the "cell" parameters (no earlier W^K, W^Q) ...
    assert var["differences l=1"] == (arch.cell_att_vars(1),) * 2
    assert var["differences l=2"] == (arch.cell_att_vars(2),) * 2
    # ... which the paper's counts W_{l-1} + 2msH always cover
    assert arch.att_vars(2, "paper") > arch.cell_att_vars(2)


def test_paper_count_covers_variables_even_when_m_exceeds_q():
    """The per-block count 4msH + 2(m+1)q is below the true 4msH + 2mq + q + m when m > q, but the
    polynomials never involve earlier W^K, W^Q on a cell, so the counted variables still suffice."""
    arch = Architecture(1, 3, 1, 1, 1, 2)
    assert arch.block_params("paper") < arch.block_params("exact")
    rep = symbolic_report(arch, 2, 1, convention="paper")
    assert rep.ok
    assert all(s.status == "holds" for s in rep.steps if s.kind == "variables")


def test_planted_degree_8l_minus_5_is_detected():
    bad = dataclasses.replace(PAPER, score_degree=lambda l: 8 * l - 5, name="planted 8l-5")
    rep = symbolic_report(Architecture(1, 1, 1, 1, 1, 2), 2, 1, bk=bad)
    assert not rep.ok
    failed = [s for s in rep.failed]
    assert [(s.eq, s.lhs, s.rhs) for s in failed] == [("(77)", 4, 3), ("(77)", 12, 11)]


def test_planted_count_n_squared_is_detected():
    bad = dataclasses.replace(PAPER, score_count=lambda n, N, H: N * H * n ** 2, name="planted n^2")
    rep = symbolic_report(Architecture(1, 1, 1, 1, 1, 1), 3, 1, bk=bad)
    bad_steps = {(s.eq, s.claim.split(":")[1].strip()) for s in rep.failed}
    assert ("(78)", "differences formed = claimed count N·H·n³") in bad_steps
    assert ("(78)", "distinct non-constant differences ≤ claimed count") in bad_steps  # 18 > 9


def test_next_token_degrees_via_one_token():
    """The reduced network of Thm B.2 is the n = 1 case: pre-activations 4l, outputs 4L+2."""
    rep = symbolic_report(Architecture(1, 2, 1, 1, 2, 2), 1, 2)
    assert rep.ok
    deg = _degrees(rep)
    assert deg["pre-activations l=2"] == (8, 8) and deg["outputs"][0] <= 10


@pytest.mark.slow
def test_degrees_three_blocks():
    rep = symbolic_report(Architecture(1, 1, 1, 1, 1, 3), 2, 1)
    assert rep.ok and _degrees(rep)["scores l=3"] == (20, 20)
