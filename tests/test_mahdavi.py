"""Mahdavi et al. (note mahdavi.md): data checks, the construction, certificates, planted errors."""

import copy
import importlib.util
import os
from fractions import Fraction as F

import pytest

from exactmem.constructions.mahdavi import assign
from exactmem.arith import linalg
from exactmem.kernel.checker import canonical_hash, check_certificate
from exactmem.certificate.writer import build_certificate
from exactmem.pipeline.certify import certify_file
from exactmem.constructions.mahdavi import construction as M
from exactmem.data.assumptions import (AssumptionError, check_context_rank, check_query_kruskal, kruskal_at_least,
                                       kruskal_randomized, kruskal_rank, partition_certificate)
from exactmem.data.mahdavi_data import QueryContextData, note_tiny_example, random_query_context
from exactmem.model import forward, measure
from exactmem.proofs import mahdavi as pm  # the proof file's helpers (proofs/mahdavi.py re-exports it)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "proofs", "mahdavi.py")


def _cert(model, data, error_bound=None):
    ds = data.to_dataset()
    outs = [None] * data.T if (model.has_softmax and model.decode == "identity") else None
    if outs is None:
        res = forward(model, ds.inputs)
        from exactmem.model import decode_output
        outs = [decode_output(model, o) for o in res.outputs] if res.exact else list(ds.labels)
    return build_certificate("mahdavi.test", "t", 0, model, ds, outs, [], error_bound=error_bound)


def _rehash(doc):
    doc["hash"] = canonical_hash(doc)
    return doc


# ----------------------------------------------------------------------------- note §4.7, exactly

@pytest.fixture(scope="module")
def tiny_plan():
    return M.make_plan(note_tiny_example(), 2, 2, **pm.NOTE_47)


def test_note_47_design_is_reproduced_exactly(tiny_plan):
    h1, h2 = tiny_plan.heads
    # v_{1,1} = E1ᵀ(E1E1ᵀ)⁻¹(0,1) = (0, 1/2, 1/2), v_{1,2} = (1/2, 1/2, 0), X_S = [e1 e2]: W0_1 = [v11 v12][e1 e2]ᵀ
    assert h1.L == ((0, F(1, 2)), (F(1, 2), F(1, 2)), (F(1, 2), 0))
    assert h1.R == ((1, 0, 0), (0, 1, 0))
    assert h2.L == ((0,), (2,), (0,)) and h2.R == ((0, 0, 1),)  # v_{2,3} = (0, 2, 0)
    assert h1.designed == {0: (0, 1), 1: (1, 0)} and h2.designed == {2: (0, 2)}
    # saturated pairs (head 2, examples 1, 2): g = (wᵀx)·E u = (3, −1) and (2, 0), gaps 4 and 2, r = 0
    assert {t: (sp.j, sp.gap) for t, sp in h2.sat.items()} == {0: (0, 4), 1: (0, 2)}
    assert h2.r[0] == (0, 0) and h2.r[1] == (0, 0)


@pytest.mark.parametrize("c,printed", [(0, "0.38983"), (5, "0.50300"), (50, "0.50303")])
def test_note_47_sigma_min_matches_the_printed_digits(tiny_plan, c, printed):
    with linalg.arb_precision(200):
        s = linalg.singular_values_enclosure(M.feature_matrix_arb(tiny_plan, F(c)))[0]
    half = F(1, 2 * 10 ** 5)
    assert F(printed) - half <= linalg.lower_fraction(s) and linalg.upper_fraction(s) <= F(printed) + half


def test_note_47_saturated_entries_at_c50(tiny_plan):
    with linalg.arb_precision(200):
        W = M.attention_weights(tiny_plan, F(50))
        a, b = W[0][1][1], W[1][1][1]  # off-target weights of the two saturated pairs
        assert F(135, 100) * F(1, 10 ** 87) <= linalg.lower_fraction(a) <= linalg.upper_fraction(a) <= \
            F(145, 100) * F(1, 10 ** 87)
        assert F(365, 100) * F(1, 10 ** 44) <= linalg.lower_fraction(b) <= linalg.upper_fraction(b) <= \
            F(375, 100) * F(1, 10 ** 44)
        # and exactly e^-200, e^-100 up to the tiny normalisation: the rate of note §4.3
        assert W[0][1][1].overlaps(linalg.arb_of(-200).exp() / (1 + linalg.arb_of(-200).exp()))


def test_note_47_certified_scale_and_memorization():
    data = note_tiny_example()
    model, info = M.build(data, 2, 2, **pm.NOTE_47)
    sc = info.scale
    assert sc.n_sat == 2 and sc.delta_min == 2 and sc.rho_max == 0
    assert F(1) < sc.c_bound < F(3, 2) and info.c == 2  # least integer >= the certified bound of §4.4
    assert F(2, 5) < sc.sigma_lower <= F(50303, 100000)  # certified, below the true σ_min(Z^∞) ≈ 0.50303
    v = check_certificate(_cert(model, data, info.error_bound))
    assert v.status == "CERTIFIED"


def test_note_47_hardmax_is_exact():
    data = note_tiny_example()
    model, info = M.build(data, 2, 2, mode="hardmax", partition=pm.NOTE_47["partition"])
    out = forward(model, [data.sequence(t) for t in range(3)])
    assert out.exact and out.outputs == [[F(1)], [F(-2)], [F(3)]]
    assert info.exact_rank == 3
    doc = _cert(model, data)
    assert check_certificate(doc).status == "CERTIFIED"


# ----------------------------------------------------------------------------- assumptions

def test_assumption2_rank_deficient_context_is_named():
    data = random_query_context(4, 3, 5, seed=0)
    E = list(data.contexts)
    E[2] = (E[2][0], E[2][1], tuple(a + b for a, b in zip(E[2][0], E[2][1])))
    bad = QueryContextData(data.queries, E, data.labels)
    with pytest.raises(AssumptionError, match=r"Assumption 2.*examples 2 .*rank E\^\(2\) = 2 < n = 3") as ei:
        check_context_rank(bad)
    assert ei.value.examples == [2]
    with pytest.raises(AssumptionError, match="Assumption 2"):
        M.build(bad, 2, 3)


def test_context_longer_than_dimension_is_explained():
    data = random_query_context(2, 4, 3, seed=0)
    with pytest.raises(AssumptionError, match="n = 4 > d = 3"):
        check_context_rank(data)


def test_kruskal_exact_and_randomized_with_exact_ranks():
    vs = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0)]
    res = kruskal_rank(vs)
    assert res.r == 2 and res.witness == (0, 1, 3)  # e1, e2, e1+e2 are dependent
    assert kruskal_at_least(vs, 2).holds is True
    r = kruskal_randomized(vs, 3, trials=40, seed=3)
    assert r.holds is False and set(r.witness) == {0, 1, 3}
    assert sum(r.histogram.values()) == 40 and set(r.histogram) == {2, 3}
    assert r.independent_fraction == F(r.histogram[3], 40)


def test_assumption1_violation_is_rejected_with_witness():
    data = random_query_context(6, 3, 5, seed=1)
    q = list(data.queries)
    q[4] = tuple(a - 2 * b for a, b in zip(q[0], q[1]))
    bad = QueryContextData(q, data.contexts, data.labels)
    with pytest.raises(AssumptionError, match=r"Assumption 1.*examples \[0, 1, 4\]"):
        check_query_kruskal(bad)
    assert check_query_kruskal(data).holds is True  # C(6,3) = 20 subsets: exhaustive, a proof


def test_randomized_kruskal_is_evidence_not_proof():
    data = random_query_context(40, 3, 6, seed=2)
    res = check_query_kruskal(data, exhaustive_limit=100, trials=50, seed=0)
    assert res.method == "randomized" and res.holds is None and res.subsets_checked == 50


def test_partition_certificate_conditions():
    data = random_query_context(7, 3, 5, seed=4)
    assert partition_certificate(data, [[0, 1, 2], [3, 4], [5, 6]])["holds"]
    q = list(data.queries)
    q[0] = tuple(a + b for a, b in zip(q[3], q[4]))  # x0 ∈ span(x3, x4): head 2 cannot saturate it
    bad = QueryContextData(q, data.contexts, data.labels)
    with pytest.raises(AssumptionError, match=r"\(ii\).*head 2.*examples 0"):
        partition_certificate(bad, [[0, 1, 2], [3, 4], [5, 6]])
    with pytest.raises(AssumptionError, match=r"\(i\).*head 1"):
        partition_certificate(bad, [[0, 3, 4], [1, 2], [5, 6]])


def test_ties_in_the_saturating_direction_are_rejected():
    data = note_tiny_example()
    # u = (1, 1, 0): E^(1)u = (1, 1) -> rows 0 and 1 tie for the saturated pair (head 2, example 0)
    with pytest.raises(AssumptionError, match=r"\(iii\).*head 2, example 0.*rows \[0, 1\]"):
        M.build(data, 2, 2, partition=[[0, 1], [2]], u={1: (1, 1, 0)}, w={1: (1, 1, 0)})
    with pytest.raises(AssumptionError, match=r"w_2ᵀx\^\(1\) = 0"):
        M.build(data, 2, 2, partition=[[0, 1], [2]], u={1: (3, -1, 0)}, w={1: (1, 0, 0)})


def test_capacity_is_enforced():
    data = random_query_context(M.capacity(2, 3, 3) + 1, 3, 6, seed=0)
    with pytest.raises(M.ConstructionError, match=r"exceed the construction's capacity H\(min\(n,d_h\)-1\)\+1 = 5"):
        M.build(data, 2, 3)


# ----------------------------------------------------------------------------- the construction

@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("n,d_h", [(4, 4), (4, 2), (4, 6)])
def test_capacity_formula_and_parameter_count(shared, n, d_h):
    H, d = 3, 8
    T = M.capacity(H, n, d_h)
    assert T == H * (min(n, d_h) - 1) + 1
    data = random_query_context(T, n, d, seed=5, shared=shared)
    model, info = M.build(data, H, d_h, mode="hardmax", seed=1)
    assert measure(model).n_params == M.paper_parameter_count(H, d, d_h) == H * (2 * d * d_h + d + 1)
    out = forward(model, [data.sequence(t) for t in range(T)])
    assert out.exact and out.outputs == [[y] for y in data.labels]  # exact memorization in Q
    assert info.exact_rank == T


def test_softmax_real_labels_certified_with_stated_bound():
    data = random_query_context(M.capacity(3, 4, 4), 4, 8, seed=7, shared=True)
    model, info = M.build(data, 3, 4, design="factored", seed=0, certify_Zc=True)
    assert info.error_bound == M.DEFAULT_EPS and info.residual_upper <= info.error_bound / 2
    assert info.scale.c >= info.scale.c_bound and info.sigma_Zc_lower > 0
    assert info.bits["WQ"] <= 8 and info.bits["WK"] <= 8 + info.bits["c"] + 8  # small dyadics; c and u dominate W_K
    doc = _cert(model, data, info.error_bound)
    assert check_certificate(doc).status == "CERTIFIED"
    # planted wrong readout: one readout weight moved -> some label missed by more than the bound
    bad = copy.deepcopy(doc)
    WV = bad["model"]["layers"][0]["heads"][1]["WV"][0]
    WV[0] = str(F(WV[0]) + F(1, 64))
    v = check_certificate(_rehash(bad))
    assert v.status == "REFUTED" and v.witness["reason"] == "label"
    # a bound below the real residual is refuted, not silently accepted
    tight = copy.deepcopy(doc)
    tight["check"]["error_bound"] = "1/" + str(2 ** 80)
    assert check_certificate(_rehash(tight)).status == "REFUTED"


def test_softmax_classes_argmax_certified_and_wrong_class_refuted():
    data = random_query_context(M.capacity(3, 3, 3), 3, 8, seed=8, label_kind="class", num_classes=5)
    model, info = M.build(data, 3, 3, design="factored", seed=0)
    assert model.decode == "argmax" and info.residual_upper <= M.CLASS_EPS
    doc = _cert(model, data)
    assert check_certificate(doc).status == "CERTIFIED"
    bad = copy.deepcopy(doc)
    bad["dataset"]["labels"][3] = (bad["dataset"]["labels"][3] + 1) % 5
    bad["outputs"][3] = bad["dataset"]["labels"][3]
    v = check_certificate(_rehash(bad))
    assert v.status == "REFUTED" and v.witness["example"] == 3


def test_hardmax_planted_wrong_readout_refuted():
    data = random_query_context(M.capacity(2, 3, 3), 3, 6, seed=9)
    model, info = M.build(data, 2, 3, mode="hardmax")
    doc = _cert(model, data)
    assert check_certificate(doc).status == "CERTIFIED"
    bad = copy.deepcopy(doc)
    row = bad["model"]["layers"][0]["heads"][0]["WV"][0]
    k = next(i for i, x in enumerate(row) if x != "0")
    row[k] = str(F(row[k]) * 2)
    bad["outputs"] = copy.deepcopy(bad["dataset"]["labels"])
    v = check_certificate(_rehash(bad))
    assert v.status == "REFUTED" and v.witness["reason"] == "label"


def test_scale_below_the_certified_bound_is_refused():
    data = note_tiny_example()
    with pytest.raises(M.ConstructionError, match="below the certified bound"):
        M.build(data, 2, 2, scale=F(1), **pm.NOTE_47)


def test_kruskal_deficient_data_still_built_via_heuristic_partition():
    """Assumption 1 fails (x2 = x0 + x1, n = 3) but the note §4.6 certificate holds for another
    partition: the construction goes through and memorizes exactly."""
    q = [(1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (0, 0, 1, 0), (1, 2, 3, 5)]
    Es = [((1, 0, 2, 0), (0, 1, 0, 3), (2, 1, 1, 1)), ((1, 1, 0, 0), (0, 1, 1, 0), (0, 0, 1, 1)),
          ((2, 0, 0, 1), (0, 2, 1, 0), (1, 0, 2, 0)), ((1, 2, 0, 0), (0, 0, 1, 2), (3, 0, 0, 1)),
          ((0, 1, 2, 0), (1, 0, 0, 2), (2, 2, 1, 0))]
    data = QueryContextData(q, Es, (1, -2, 3, F(1, 2), 5))
    with pytest.raises(AssumptionError, match="Assumption 1"):
        check_query_kruskal(data)
    model, info = M.build(data, 2, 3, mode="hardmax")
    assert info.partition_strategy in ("shuffle", "greedy")
    assert forward(model, [data.sequence(t) for t in range(5)]).outputs == [[y] for y in data.labels]


# ----------------------------------------------------------------------------- structural claims (note §3.2)

def test_shared_context_rank_bound_exact_and_certified():
    H, n, d, T = 3, 3, 6, 12
    shared = random_query_context(T, n, d, seed=2, shared=True)
    distinct = random_query_context(T, n, d, seed=2)
    bound = M.shared_context_rank_bound(H, n)
    for att in ("base2", "hardmax"):
        assert linalg.rank(M.random_weight_features(shared, H, 5, seed=1, attention=att)) == bound == 7
        assert linalg.rank(M.random_weight_features(distinct, H, 5, seed=1, attention=att)) == min(T, H * d)
    with linalg.arb_precision(128):
        Z = M.random_weight_features(shared, H, 5, seed=1, attention="softmax")
        assert M.certified_rank_at_least(Z, bound)  # with the proved upper bound: rank = H(n-1)+1 exactly
        Zd = M.random_weight_features(distinct, H, 5, seed=1, attention="softmax")
        assert M.certified_rank_at_least(Zd, T)


def test_construction_reaches_the_shared_context_bound():
    H, n = 3, 4
    data = random_query_context(M.capacity(H, n, n + 2), n, 8, seed=3, shared=True)
    _, info = M.build(data, H, n + 2, mode="hardmax")  # d_h > n gives nothing more: k = min(n, d_h) = n
    assert info.exact_rank == info.T == M.shared_context_rank_bound(H, n)


# ----------------------------------------------------------------------------- built-model analysis

@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs the plot extra (matplotlib)")
def test_dominance_in_the_built_softmax_model(tmp_path):
    data = random_query_context(M.capacity(3, 3, 3), 3, 6, seed=11)
    model, info = M.build(data, 3, 3, design="factored")
    prof = assign.attention_profile(model, data)
    dom = assign.dominance(prof, info.partition)
    assert all(d.agrees for d in dom), [(d.example, d.designed_head, d.dominant_head) for d in dom]
    for t, row in enumerate(prof):  # heads h >= 2 not active on t are saturated (> 99/100, certified)
        for h in range(1, 3):
            assert (row[h].saturated is True) == (t not in info.partition[h])
    G = assign.annotate(assign.assignment_graph(info.partition, data.T), prof, dom)
    assign.validate_graph(G, info.k)
    assert all(G.nodes[f"x{t}"]["agrees"] for t in range(data.T))
    assert assign.draw(G, str(tmp_path / "dom.png")).endswith(".png")


# ----------------------------------------------------------------------------- end to end

def test_certify_small_instances_of_the_proof_file(tmp_path):
    rows = certify_file(PROOF, out_dir=str(tmp_path), seed=0, size="small", quiet=True)
    assert len(rows) == 11  # 9 in-scope instances + 2 deliberately outside the hypotheses
    assert {r.verdict for r in rows} == {"CERTIFIED"}, [(r.theorem, r.instance, r.message) for r in rows]
    tiny = [r for r in rows if r.theorem == "mahdavi.softmax" and r.instance == "note-4.7"][0]
    assert tiny.params == 2 * (2 * 3 * 2 + 3 + 1)


def test_reconstructed_form_is_loose_at_head_dimension_one():
    """docs/mahdavi.md 'Which statement is certified': for d_h = 1 the reconstructed T = H(min(n, d_h) - 1) + 1
    is 1 for every H, yet random rank-1 key-query weights already give a feature matrix of rank 7 (distinct
    contexts; 5 with a shared one), so a d_v = 1 readout memorizes 7 arbitrary labels."""
    H, n, d = 3, 3, 6
    assert M.capacity(H, n, 1) == 1
    distinct = random_query_context(7, n, d, seed=2)
    shared = random_query_context(7, n, d, seed=2, shared=True)
    assert linalg.rank(M.random_weight_features(distinct, H, 1, seed=1, attention="base2")) == 7
    assert linalg.rank(M.random_weight_features(shared, H, 1, seed=1, attention="hardmax")) == 5
    with linalg.arb_precision(128):
        assert M.certified_rank_at_least(M.random_weight_features(distinct, H, 1, seed=1, attention="softmax"), 7)
