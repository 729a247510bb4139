"""Dana, Pydi & Chevaleyre: attention-only Transformer memorization (note papers/dana.md).

Exact facts only: certified verdicts of the independent checker, exact ranks over Q, exact
logits of the ideal base-2 network, exact obstruction certificates, clear rejections.
"""

import copy
import os
from fractions import Fraction

import pytest

from exactmem.kernel.checker import canonical_hash, check_certificate
from exactmem.certificate.writer import Claim, build_certificate
from exactmem.pipeline.certify import certify_file
from exactmem.constructions.dana import association as dana
from exactmem.constructions.dana import distribution as dana_distribution
from exactmem.constructions.dana import errata as dana_errata
from exactmem.data.dana_data import (Conditionals, LookupTable, random_conditionals, random_table, t_epsilon)
from exactmem.data.dataset import DataError
from exactmem.model import forward, measure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "proofs", "dana.py")


def _certify(build, claims=(), error_bound=None):
    labels = list(build.dataset.labels) if build.model.decode == "argmax" else [None] * len(build.dataset)
    doc = build_certificate("dana.test", "t", 0, build.model, build.dataset, labels, list(claims),
                            error_bound=error_bound)
    return doc, check_certificate(doc)


# ---------------------------------------------------------------- largest T0 certified (Corollary 1)

@pytest.mark.parametrize("N,d,dh,H,mode", [
    (10, 2, 2, 2, "rational"), (10, 2, 2, 6, "rational"), (10, 2, 1, 7, "rational"), (10, 4, 4, 3, "rational"),
    (10, 2, 2, 2, "base2"), (10, 4, 2, 3, "base2"), (20, 6, 6, 3, "base2"), (10, 1, 1, 1, "rational"),
])
def test_largest_T0_certified(N, d, dh, H, mode):
    T0 = dana.capacity(d, dh, H)
    labels = 2 if d == 1 else None  # d = 1 separates at most two next tokens
    table = random_table(N, 2, seed=3, T0=T0, labels=labels)
    b = dana.build_association(table, d, dh, H, mode=mode, seed=1, sigma_min=False)
    claims = [Claim("n_examples", "==", T0), Claim("n_params", "==", dana.paper_param_count(N, 2, d, dh, H)),
              Claim("attention_layers", "==", 1)]
    _, v = _certify(b, claims)
    assert v.status == "CERTIFIED", v.message
    assert b.info["rank"] == T0


def test_base2_network_is_softmax2_and_certified_exactly():
    """Mode (a): the stored network has attention kind softmax2 (weights 2^k/Σ2^k), WQ = Q_h,
    WK = K_h and the exact W_O, W_U; the core's forward pass, the reference evaluator
    base2_logits and the targets W E(t) agree exactly, and the independent checker certifies
    it in exact arithmetic (no intervals)."""
    table = random_table(10, 2, seed=5, T0=10)
    b = dana.build_association(table, 4, 2, 3, mode="base2", seed=2, sigma_min=False)
    att = b.model.layers[1]
    assert att.kind == "softmax2" and not b.model.has_softmax and b.info["bits"] is None
    for h, hc in zip(att.heads, b.design.heads):
        assert [list(r) for r in h.WQ] == hc.Q and [list(r) for r in h.WK] == hc.K
    assert [list(r) for r in b.model.layers[2].W] == b.exact_readout.WU
    res = forward(b.model, b.dataset.inputs)
    assert res.exact
    heads = dana.ideal_heads(b)
    for t, e, g, out in zip(table.sequences, b.targets, table.labels, res.outputs):
        logits = dana.base2_logits(b.design.E, b.design.P, heads, b.exact_readout.WU, t)
        assert logits == [dana._dot(w, e) for w in b.W] == out
        assert all(logits[g] > x for j, x in enumerate(logits) if j != g)
    assert b.info["rank_certificate"].startswith("exact rank over Q")
    doc, v = _certify(b, [Claim("n_params", "==", dana.paper_param_count(10, 2, 4, 2, 3))])
    assert doc["model"]["layers"][1]["kind"] == "softmax2"
    assert v.status == "CERTIFIED" and v.message.endswith("(exact)") and v.precision is None
    bad = copy.deepcopy(doc)
    g = bad["dataset"]["labels"][3]
    bad["dataset"]["labels"][3] = bad["outputs"][3] = (g + 1) % 10
    w = check_certificate(_rehash(bad))
    assert w.status == "REFUTED" and w.witness["example"] == 3 and w.witness["reason"] == "label"


def test_base2_rounded_readout_certified_exactly():
    """round_readout: the smallest B-bit W_O, W_U that the exact evaluation still certifies;
    the logits are no longer W E(t) but every argmax is, exactly."""
    table = random_table(20, 2, seed=3, T0=dana.capacity(6, 6, 3))
    exact = dana.build_association(table, 6, 6, 3, mode="base2", seed=1, sigma_min=False)
    b = dana.build_association(table, 6, 6, 3, mode="base2", seed=1, sigma_min=True, round_readout=True)
    assert b.model.layers[1].kind == "softmax2" and isinstance(b.info["bits"], int)
    assert measure(b.model).max_bits < 64 < measure(exact.model).max_bits
    assert b.info["sigma_min_lower"] > 0
    out = forward(b.model, b.dataset.inputs).outputs
    assert out != forward(exact.model, exact.dataset.inputs).outputs
    _, v = _certify(b)
    assert v.status == "CERTIFIED" and v.message.endswith("(exact)")


def test_base3_falls_back_to_rho_network():
    """softmax2 is base 2 only: another base keeps the ρ ≈ ln b network, certified with intervals."""
    table = random_table(10, 2, seed=5, T0=10)
    b = dana.build_association(table, 4, 2, 3, mode="base2", seed=2, sigma_min=False, bases=[3])
    assert b.model.layers[1].kind == "softmax"
    rho = b.model.layers[1].heads[0].WQ[0][next(j for j, x in enumerate(b.design.heads[0].Q[0]) if x)] / \
        next(x for x in b.design.heads[0].Q[0] if x)
    assert rho.denominator & (rho.denominator - 1) == 0 and Fraction(108, 100) < rho < Fraction(112, 100)
    _, v = _certify(b)
    assert v.status == "CERTIFIED" and v.precision is not None


def test_rank1_parameter_count_remark2():
    table = random_table(10, 2, seed=1, T0=10)
    b = dana.build_association(table, 4, 2, 3, mode="rational", seed=0, rank1_shape=True, sigma_min=False)
    assert measure(b.model).n_params == dana.paper_param_count(10, 2, 4, 2, 3, rank1=True) == 4 * (2 + 20 + 6 * 3)
    _, v = _certify(b)
    assert v.status == "CERTIFIED"


# ---------------------------------------------------------------- T0 + 1 impossible where the rank bound bites

def test_T0_plus_one_impossible_for_same_embeddings_and_query_keys():
    """d_h = d: the features A′(t) = [x_S; A^1; ...; A^H] live in R^{T0}; T0 + 1 sequences carry a
    dependency c, and labels following sign(c) defeat every W_V, W_O, W_U (exact certificate),
    while the first T0 of them are certified for the very same e, pos and W_QK."""
    N, d, dh, H = 10, 2, 2, 2
    T0 = dana.capacity(d, dh, H)
    design = dana.choose_design(N, 2, d, dh, H, "base2", None, seed=4)
    seqs = random_table(N, 2, seed=9, T0=T0 + 1).sequences
    A = dana.attention_columns_exact(design, seqs)
    assert len(A[0]) == T0 and dana.exact_rank_columns(A) == T0
    ob = dana_errata.radon_obstruction(A, a=3, b=7)
    assert dana_errata.verify_radon_obstruction(A, ob)
    first = LookupTable(N, 2, seqs[:T0], ob.labels[:T0])
    b = dana.build_association(first, d, dh, H, design=design, sigma_min=False)
    assert _certify(b)[1].status == "CERTIFIED"
    with pytest.raises(dana.RankDeficient, match="rank bound"):
        dana.build_association(LookupTable(N, 2, seqs, ob.labels), d, dh, H, design=design)


def test_planted_wrong_obstructions_refuted():
    design = dana.choose_design(10, 2, 2, 2, 2, "base2", None, seed=4)
    seqs = random_table(10, 2, seed=9, T0=7).sequences
    A = dana.attention_columns_exact(design, seqs)
    ob = dana_errata.radon_obstruction(A)
    bad_c = copy.deepcopy(ob)
    bad_c.c[0] += 1
    assert not dana_errata.verify_radon_obstruction(A, bad_c)
    k = next(i for i, c in enumerate(ob.c) if c > 0)
    bad_lab = copy.deepcopy(ob)
    bad_lab.labels[k] = ob.b
    assert not dana_errata.verify_radon_obstruction(A, bad_lab)
    zero = copy.deepcopy(ob)
    zero.c = [0] * len(ob.c)
    assert not dana_errata.verify_radon_obstruction(A, zero)


def test_d1_rank_bottleneck_rejects_three_labels():
    table = LookupTable(10, 2, [(0, 1), (2, 3), (4, 5)], [0, 1, 2])
    with pytest.raises(DataError, match="d = 1 separates at most 2 next tokens"):
        dana.build_association(table, 1, 1, 2)


# ---------------------------------------------------------------- errata (note §3.6, §7.3)

def test_corollary1_d2_dh3_rank_bound_bites():
    f = dana_errata.corollary1_small_d_facts(10, 2, 2, 3, 2, seed=0)
    assert (f["claimed_T0"], f["rank_bound"], f["rank_F"]) == (8, 6, 6)
    assert dana_errata.verify_radon_obstruction(f["obstruction_features"], f["obstruction"])
    table = random_table(10, 2, seed=0, T0=8)
    with pytest.raises(dana.RankDeficient, match=r"rank bound d \+ H·min\(d_h, d\) = 6"):
        dana.build_association(table, 2, 3, 2)


def test_experiment6_accuracy_one_is_beyond_the_proof():
    """Erratum 1 on the paper's own Experiment 6 (App. B: N = 10, S = 2, d = 2, d_h = 5, H = 20,
    "exactly 1 accuracy"): Corollary 2 as printed gives φ(102) = 1, but rank F ≤ 42, so the
    proof supports φ(42) = 1/10 + (9/10)·42/100 = 239/500; the drawn design attains rank 42."""
    f = dana_errata.experiment6_facts(seed=0)
    assert (f["T0"], f["paper_X"], f["paper_accuracy"]) == (100, 102, 1)
    assert f["rank_bound"] == f["rows_A_prime"] == f["rank_A_prime"] == f["rank_F"] == 42
    assert f["proof_accuracy"] == Fraction(239, 500) == Fraction(1, 10) + Fraction(9, 10) * Fraction(42, 100)
    with pytest.raises(dana.RankDeficient, match=r"rank bound d \+ H·min\(d_h, d\) = 42"):
        dana.build_association(random_table(10, 2, seed=0), 2, 5, 20)  # all 100 bigrams


def test_block_diagonal_value_step_fails():
    f = dana_errata.block_diagonal_instance(seed=0)
    assert f["rank_A_prime"] == f["T0"] == 7
    assert f["rank_skip_and_head2"] == 4  # head 2 adds one direction to x_S
    assert f["rank_F"] <= f["bound_for_every_W_V"] == 6 < f["T0"]


# ---------------------------------------------------------------- planted wrong certificates

@pytest.fixture(scope="module")
def small_doc():
    table = random_table(10, 2, seed=2, T0=6)
    b = dana.build_association(table, 2, 2, 2, mode="rational", seed=0, sigma_min=False)
    doc, v = _certify(b, [Claim("n_params", "==", dana.paper_param_count(10, 2, 2, 2, 2))])
    assert v.status == "CERTIFIED"
    return doc


def _rehash(doc):
    doc["hash"] = canonical_hash(doc)
    return doc


def test_planted_wrong_label_refuted(small_doc):
    doc = copy.deepcopy(small_doc)
    g = doc["dataset"]["labels"][0]
    doc["dataset"]["labels"][0] = doc["outputs"][0] = (g + 1) % 10
    v = check_certificate(_rehash(doc))
    assert v.status == "REFUTED" and v.witness["example"] == 0


def test_planted_wrong_unembedding_refuted(small_doc):
    doc = copy.deepcopy(small_doc)
    doc["model"]["layers"][2]["W"] = [["0", "0"] for _ in doc["model"]["layers"][2]["W"]]  # all logits tie
    v = check_certificate(_rehash(doc))
    assert v.status == "REFUTED" and v.witness["reason"] == "label"


def test_planted_wrong_parameter_claim_refuted(small_doc):
    doc = copy.deepcopy(small_doc)
    doc["claims"][0]["bound"] = str(dana.paper_param_count(10, 2, 2, 2, 2, rank1=True))
    v = check_certificate(_rehash(doc))
    assert v.status == "REFUTED" and v.witness["measured"] == str(2 * (2 + 20 + 16))


# ---------------------------------------------------------------- bad inputs rejected clearly

def test_probabilities_not_summing_to_one_rejected():
    seqs = [(0, 0), (0, 1)]
    with pytest.raises(DataError, match=r"conditional π\(·\|\(0, 1\)\) \(sequence 1\) sums to 9/10, not 1"):
        Conditionals(2, 2, seqs, [Fraction(1, 2)] * 2, [(Fraction(1, 2),) * 2, (Fraction(1, 2), Fraction(2, 5))])
    with pytest.raises(DataError, match="prior probabilities sum to 3/4"):
        Conditionals(2, 2, seqs, [Fraction(1, 2), Fraction(1, 4)], [(Fraction(1, 2),) * 2] * 2)
    with pytest.raises(DataError, match="violates Assumption 2"):
        Conditionals(2, 2, seqs, [Fraction(1, 2)] * 2, [(Fraction(1), Fraction(0)), (Fraction(1, 2),) * 2])
    with pytest.raises(DataError, match="not an exact rational|expected an exact rational"):
        Conditionals(2, 2, seqs, [0.5, 0.5], [(Fraction(1, 2),) * 2] * 2)


def test_token_out_of_range_rejected():
    with pytest.raises(DataError, match=r"sequence 1, position 1: token 5 is out of range \[0, 4\)"):
        LookupTable(4, 2, [(0, 1), (2, 5)], [0, 1])
    with pytest.raises(DataError, match=r"next token 9 is not an id in \[0, 4\)"):
        LookupTable(4, 2, [(0, 1)], [9])
    with pytest.raises(DataError, match="has length 3, the context length is S = 2"):
        LookupTable(4, 2, [(0, 1, 2)], [0])
    with pytest.raises(DataError, match="repeats sequence 0"):
        LookupTable(4, 2, [(0, 1), (0, 1)], [0, 1])


def test_bad_architecture_rejected():
    table = random_table(4, 2, seed=0, T0=4)
    with pytest.raises(DataError, match="d_h must be a positive integer"):
        dana.build_association(table, 2, 0, 1)
    with pytest.raises(DataError, match="mode must be one of"):
        dana.build_association(table, 2, 1, 2, mode="softmax2")
    with pytest.raises(DataError, match="only N\\^S = 16 sequences"):
        random_table(4, 2, seed=0, T0=17)


# ---------------------------------------------------------------- Prop. 3, T_eps, comparison formulas

@pytest.mark.parametrize("N", [2, 3, 10, 50])
def test_circle_points_exact_and_margin(N):
    pts = dana.circle_points(N)
    assert all(x * x + y * y == 1 for x, y in pts) and len(set(pts)) == N
    lo, hi = dana.cos_margin_enclosure(N)
    m = dana.circle_margin(pts)
    assert m > 0 and abs(m - lo) < Fraction(1, 2 ** 18) * N


def test_t_epsilon():
    data = random_conditionals(3, 2, seed=0, uniform_prior=True)
    assert t_epsilon(data, 0) == 9 and t_epsilon(data, Fraction(1, 3)) == 6 and t_epsilon(data, 1) == 0
    assert t_epsilon(data, Fraction(1, 2)) == 5  # ⌈(1 − ε) N^S⌉ for a uniform prior
    with pytest.raises(DataError, match="ε = 2 must be in"):
        t_epsilon(data, 2)


def test_comparison_formulas():
    # note §5.7: Exp. 6 bound lines at H = 21, N = 10, d = d_h = 2, T0 = N^2
    assert dana.corollary2_accuracy(21 * 2 + 2, 100, 10) == Fraction(496, 1000)
    assert dana.corollary2_accuracy(dana.mahdavi_capacity(2, 21), 100, 10) == Fraction(298, 1000)
    assert dana.capacity(10, 10, 31) - dana.mahdavi_capacity(10, 31) == 31 + 10 - 1
    assert dana.paper_param_count(50, 2, 10, 10, 31) == 10 * (2 + 100 + 4 * 10 * 31)


# ---------------------------------------------------------------- Theorem 1 (distribution)

def test_theorem1_base2_exact_logits():
    """Theorem 1 in mode (a): the softmax2 network's logits are exactly W E(t) on the T_ε sequences."""
    data = random_conditionals(4, 2, seed=0)
    tol = Fraction(1, 1024)
    b = dana_distribution.build_distribution(data, 2, 2, 0, mode="base2", seed=0, tol=tol)
    assert b.model.layers[1].kind == "softmax2"
    out = forward(b.model, b.dataset.inputs).outputs
    assert out == [list(lab) for lab in b.dataset.labels]  # exactly W E(t): error 0 ≤ tol
    doc = build_certificate("dana.test", "t", 0, b.model, b.dataset, out, [], error_bound=tol)
    v = check_certificate(doc)
    assert v.status == "CERTIFIED" and v.message.endswith("(exact)")
    doc["dataset"]["labels"][0][0] = str(Fraction(doc["dataset"]["labels"][0][0]) + 2 * tol)
    assert check_certificate(_rehash(doc)).status == "REFUTED"
    r = dana.with_rounded_readout(b, tol=tol)  # smallest B with |T(t) − W E(t)| ≤ tol, exactly
    out = forward(r.model, r.dataset.inputs).outputs
    assert out != [list(lab) for lab in r.dataset.labels] and measure(r.model).max_bits < 64
    assert all(abs(x - y) <= tol for o, lab in zip(out, r.dataset.labels) for x, y in zip(o, lab))


def test_theorem1_kl_bound_certified():
    data = random_conditionals(3, 2, seed=1)
    tol = Fraction(1, 1024)
    b = dana_distribution.build_distribution(data, 2, 2, 0, seed=0, tol=tol)
    _, v = _certify(b, [Claim("n_examples", "==", 9)], error_bound=tol)
    assert v.status == "CERTIFIED", v.message
    W, E = dana_distribution.fit_encoder(data, 2, 0)
    kl_f = dana_distribution.kl_upper_bound_from_logits(data, dana_distribution.encoder_logits(W, E))
    kl_T = dana_distribution.kl_upper_bound(b.model, data)
    # ε = 0: T = W E(t) ± tol on every sequence, and |Δ log softmax| ≤ 2·tol
    assert 0 < kl_T <= kl_f + 2 * tol
    # d ≥ N − 1: the encoder is exact up to the 2^-40 rounding of the logarithms
    data3 = random_conditionals(3, 1, seed=2)
    W3, E3 = dana_distribution.fit_encoder(data3, 2, 0)
    assert dana_distribution.kl_upper_bound_from_logits(data3, dana_distribution.encoder_logits(W3, E3)) < Fraction(1, 2 ** 30)


@pytest.mark.slow  # 6-9 s: with -m slow (CI runs it); keeps the default suite under 10 minutes
def test_proof_file_small_instances_certified(tmp_path):
    rows = certify_file(PROOF, out_dir=str(tmp_path), seed=0, size="small", quiet=True)
    assert rows and {r.verdict for r in rows} == {"CERTIFIED"}, [(r.theorem, r.instance, r.message) for r in rows]
    by = {(r.theorem, r.instance): r for r in rows}
    assert by[("dana.corollary1", "N10-d4-dh4-H3")].params == 4 * (2 + 20 + 4 * 4 * 3)


@pytest.mark.slow
def test_T0_120_both_modes():
    table = random_table(50, 2, seed=1, T0=120)
    for mode in ("rational", "base2"):
        b = dana.build_association(table, 10, 10, 11, mode=mode, seed=0, sigma_min=False)
        assert _certify(b)[1].status == "CERTIFIED"


def test_skip_rows_see_only_the_last_token():
    f = dana_errata.skip_rank_instance(seed=0)
    assert (f["claimed_T0"], f["rank_F_all"], f["bound"]) == (5, 4, 4)
    assert dana_errata.verify_radon_obstruction(f["obstruction_features"], f["obstruction"])
    table = random_table(10, 2, seed=0, T0=11)  # 7 distinct last tokens
    with pytest.raises(dana.RankDeficient, match="7 distinct last tokens"):
        dana.build_association(table, 10, 1, 1)
