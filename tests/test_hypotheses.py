"""Theorem hypotheses (``Built.hypotheses``): computed exactly, shown in certify's table and
reports, never changing the checker's verdict (issue #15 item 4; Mahdavi et al., note §2.1)."""

import copy
import json
import os
from fractions import Fraction as F
from itertools import combinations

from exactmem.kernel.checker import canonical_hash, check_certificate, load_certificate
from exactmem.cli.app import main as cli_main
from exactmem.data.assumptions import (ASSUMPTION_1, ASSUMPTION_2, N_BELOW_D, assumption1_status,
                                       kruskal_rank_by_kernel, theorem_hypotheses)
from exactmem.data.mahdavi_data import QueryContextData, kruskal_deficient_example, random_query_context
from exactmem.pipeline.certify import Row, certify_instance, format_table, hypothesis_records
from exactmem.proof import Built, Hypothesis
from exactmem.pipeline.loader import load_proof_file
from exactmem.proofs import mahdavi as pm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "proofs", "mahdavi.py")


# ----------------------------------------------------------------------------- an independent oracle

def _rank(rows):
    """Rank over Q by plain Fraction elimination (independent of linalg/flint)."""
    m = [[F(x) for x in r] for r in rows]
    rank, col, ncols = 0, 0, len(m[0]) if m else 0
    while rank < len(m) and col < ncols:
        piv = next((i for i in range(rank, len(m)) if m[i][col] != 0), None)
        if piv is None:
            col += 1
            continue
        m[rank], m[piv] = m[piv], m[rank]
        for i in range(rank + 1, len(m)):
            f = m[i][col] / m[rank][col]
            m[i] = [a - f * b for a, b in zip(m[i], m[rank])]
        rank, col = rank + 1, col + 1
    return rank


def _kruskal(vectors):
    """The Kruskal rank by brute force: the largest r with every r-subset independent."""
    r = 0
    for k in range(1, len(vectors) + 1):
        if all(_rank([vectors[i] for i in idx]) == k for idx in combinations(range(len(vectors)), k)):
            r = k
        else:
            break
    return r


def _by_name(hyps):
    return {h[0]: h for h in hyps}


# ----------------------------------------------------------------------------- computed exactly

def test_in_scope_data_all_hypotheses_hold_and_agree_with_brute_force():
    data = random_query_context(10, 4, 8, seed=0)
    hyps = _by_name(theorem_hypotheses(data))
    assert [h[1] for h in hyps.values()] == [True, True, True]
    assert "Kruskal rank 8 >= 4" in hyps[ASSUMPTION_1][2] and "kernel method" in hyps[ASSUMPTION_1][2]
    assert _kruskal(data.queries) >= data.n  # the oracle agrees
    assert all(_rank(E) == data.n for E in data.contexts) and data.n < data.d


def test_kruskal_deficient_data_fail_assumption1_with_the_exact_kruskal_rank():
    data = kruskal_deficient_example()
    hyps = _by_name(theorem_hypotheses(data))
    holds, detail = hyps[ASSUMPTION_1][1:]
    assert holds is False and detail.startswith("Kruskal rank 2 < n = 3") and "[0, 1, 2]" in detail
    assert _kruskal(data.queries) == 2  # the oracle agrees
    assert hyps[ASSUMPTION_2][1] is True and hyps[N_BELOW_D][1] is True


def test_a_planted_dependency_flips_assumption1():
    data = random_query_context(7, 3, 5, seed=4)
    assert assumption1_status(data)[0] is True
    q = list(data.queries)
    q[6] = tuple(a - 3 * b for a, b in zip(q[2], q[5]))  # x6 = x2 - 3 x5: a dependent 3-subset
    bad = QueryContextData(q, data.contexts, data.labels)
    holds, detail = assumption1_status(bad)
    assert holds is False and "[2, 5, 6]" in detail and _kruskal(bad.queries) == 2


def test_n_not_below_d_and_rank_deficient_contexts_are_reported():
    data = random_query_context(7, 4, 4, seed=0, coord_range=20)
    hyps = _by_name(theorem_hypotheses(data))
    assert hyps[N_BELOW_D][1:] == (False, "n = 4 >= d = 4")
    assert hyps[ASSUMPTION_1][1] is True and hyps[ASSUMPTION_2][1] is True
    E = list(data.contexts)
    E[2] = (E[2][0], E[2][1], tuple(a + b for a, b in zip(E[2][0], E[2][1])), E[2][3])
    hyps = _by_name(theorem_hypotheses(QueryContextData(data.queries, E, data.labels)))
    assert hyps[ASSUMPTION_2][1] is False and "rank E^(2) = 3 < n = 4" in hyps[ASSUMPTION_2][2]


def test_beyond_the_exhaustive_limit_randomized_evidence_is_not_a_decision():
    data = random_query_context(10, 4, 8, seed=0)
    holds, detail = assumption1_status(data, exhaustive_limit=5, trials=50)
    assert holds is None and detail.startswith("not decided: C(10, 4) = 210 subsets and C(10, 1) kernel hyperplanes")
    # ... but a dependent subset the randomized test finds is an exact refutation
    q = list(data.queries)
    for t in range(5):  # x0..x4 in a 2-dimensional plane: most 4-subsets through them are dependent
        q[t] = tuple(t * a + b for a, b in zip(q[8], q[9]))
    holds, detail = assumption1_status(QueryContextData(q, data.contexts, data.labels), exhaustive_limit=5,
                                       trials=50)
    assert holds is False and "randomized test" in detail


# ----------------------------------------------------------------------------- the verdict table

def _row(theorem_name, instance_name, tmp_path):
    th = next(t for t in load_proof_file(PROOF) if t.name == theorem_name)
    inst = next(i for i in th.instances if i.name == instance_name)
    return th, inst, certify_instance(th, inst, 0, str(tmp_path), quiet=True)


def test_outside_instance_is_certified_and_annotated_not_silently(tmp_path):
    _, _, row = _row("mahdavi.softmax", "outside-kruskal2-n3", tmp_path)
    assert row.verdict == "CERTIFIED"  # the construction needs only the §4.6 certificate
    doc = load_certificate(row.path)
    assert check_certificate(doc).status == row.verdict  # the checker's verdict, unchanged
    a1 = _by_name([(h["name"], h["holds"], h["detail"]) for h in row.hypotheses])[ASSUMPTION_1]
    assert a1[1] is False
    table = format_table([row])
    assert "CERTIFIED (outside Thm: Assumption 1 fails - Kruskal rank 2 < n = 3)" in table
    assert "hypotheses" in table.splitlines()[0]
    assert "2/3 hold; fails: Assumption 1" in table
    rec = json.loads(json.dumps([r.__dict__ for r in [row]], default=str))[0]  # what --json prints
    assert {"name": ASSUMPTION_1, "holds": False, "detail": a1[2]} in rec["hypotheses"]
    assert doc["meta"]["hypotheses"] == rec["hypotheses"]  # and the certificate's meta
    # the hypotheses live in meta only: without them the certificate has the same hash and verdict
    stripped = copy.deepcopy(doc)
    del stripped["meta"]["hypotheses"]
    assert canonical_hash(stripped) == doc["hash"] and check_certificate(stripped).status == "CERTIFIED"


def test_n_equal_d_instance_is_annotated(tmp_path):
    _, _, row = _row("mahdavi.hardmax", "outside-n4-d4", tmp_path)
    assert row.verdict == "CERTIFIED"
    assert "CERTIFIED (outside Thm: n < d fails - n = 4 >= d = 4)" in format_table([row])


def test_in_scope_instance_shows_all_hypotheses_hold(tmp_path):
    _, _, row = _row("mahdavi.hardmax", "note-4.7", tmp_path)
    assert [h["holds"] for h in row.hypotheses] == [True, True, True]
    line = format_table([row]).splitlines()[2]
    assert "| CERTIFIED " in line and "outside" not in line and "3/3 hold" in line


def test_undecided_hypothesis_and_tables_without_hypotheses():
    base = dict(theorem="t", instance="i", verdict="CERTIFIED", params=1, width=1, depth=1, max_bits=1,
                total_bits=1, seconds=0.0, path="p")
    undecided = Row(**base, hypotheses=hypothesis_records([("Assumption 1 (x)", None, "not decided: too big"),
                                                           Hypothesis("n < d", True, "n = 2 < d = 3")]))
    plain = Row(**base)
    t = format_table([undecided, plain])
    assert "CERTIFIED (Thm hypotheses not all decided)" in t and "1/2 hold; not decided: Assumption 1" in t
    assert t.splitlines()[3].split("|")[6].strip() == "-"  # a theorem without hypotheses: '-'
    assert "hypotheses" not in format_table([plain])  # tables of theorems without hypotheses are unchanged


def test_built_accepts_hypotheses_and_defaults_to_none():
    assert Built(None, None, []).hypotheses == []
    h = Hypothesis("n < d", False, "n = 4 >= d = 4")
    assert hypothesis_records([h, ("a", None, "")]) == [{"name": "n < d", "holds": False, "detail": "n = 4 >= d = 4"},
                                                         {"name": "a", "holds": None, "detail": ""}]


def test_proof_file_in_scope_instances_satisfy_the_hypotheses():
    """Every small instance except the deliberately outside ones lies inside Theorem 1's hypotheses."""
    for th in load_proof_file(PROOF):
        for inst in th.instances_for("small"):
            data = pm._data(dict(inst.params), 0)
            holds = [h.holds for h in pm.hypotheses(data)]
            assert (holds == [True] * 3) == (not inst.name.startswith("outside-")), (th.name, inst.name, holds)


def test_cli_exit_code_follows_the_verdict_not_the_scope(tmp_path, capsys):
    rc = cli_main(["certify", PROOF, "--only", "outside", "--out", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and out.count("      outside Thm:") == 2  # a note under each row of the summary


def test_kernel_method_and_exhaustive_path_match_brute_force():
    import random

    rng = random.Random(5)
    for _ in range(60):
        d, T = rng.randint(1, 4), rng.randint(1, 7)
        vs = [tuple(F(rng.randint(-1, 1)) for _ in range(d)) for _ in range(T)]
        res = kruskal_rank_by_kernel(vs)
        assert res.r == _kruskal(vs), vs
        if res.r < T:  # the witness is a smallest dependent subset
            assert len(res.witness) == res.r + 1 and _rank([vs[i] for i in res.witness]) == res.r
    data = random_query_context(12, 2, 4, seed=1)  # kernel dimension 8: C(12, 7) = 792 > 100 >= C(12, 2)
    holds, detail = assumption1_status(data, exhaustive_limit=100)
    assert detail.startswith("exhaustive: all C(12, 2) = 66") and holds is (_kruskal(data.queries) >= 2)
