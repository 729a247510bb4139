"""Kajitsuka & Sato Theorem D.1 (deep sets): data checks, the construction, end-to-end
certificates, permutation invariance, planted wrong steps the checker must refute, and the
claims recomputed independently (mpmath, tests only)."""

import os
import random
from dataclasses import replace
from fractions import Fraction as F

import mpmath
import pytest

from exactmem.kernel.checker import check_certificate
from exactmem.certificate.writer import Claim, build_certificate
from exactmem.constructions.kajitsuka import deep_sets
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.data.dataset import DataError, Dataset
from exactmem.data.multiset_data import (check_distinct, check_elementwise_separation, generate,
                                         make_multisets)
from exactmem.model import Model, forward, measure
from exactmem.model.layers import Affine
from exactmem.pipeline.certify import certify_file
from exactmem.proofs import kajitsuka_deep_sets as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "exactmem", "proofs", "kajitsuka_deep_sets.py")


def pt(*xs):
    return tuple(F(x) for x in xs)


def _check(model, ds, claims=(), outputs=None):
    out = forward(model, ds.inputs).outputs if outputs is None else outputs
    return check_certificate(build_certificate("kajitsuka.deep_sets", "t", 0, model, ds, out, list(claims)))


@pytest.fixture(scope="module")
def built():
    data = generate(12, 4, 3, 4, seed=0)
    return data, deep_sets.build(data, seed=0)


# ----------------------------------------------------------------------------- data


def test_data_checks_name_the_culprit():
    a, b = pt(0, 0), pt(3, 4)
    with pytest.raises(DataError, match="multisets 0 and 2 are equal"):
        check_distinct(make_multisets([[a, b], [a], [b, a]], [0, 1, 0], 2))
    with pytest.raises(DataError, match="multiset 1 has cardinality 3 > M = 2"):
        make_multisets([[a], [a, a, b]], [0, 1], 2, M=2)
    with pytest.raises(DataError, match="floats"):
        make_multisets([[(0.5, 1)]], [0], 2)
    with pytest.raises(DataError, match="label 2"):
        make_multisets([[a]], [2], 2)
    close = make_multisets([[a, b], [pt(0, "1/3")]], [0, 1], 2)
    with pytest.raises(DataError, match=r"\(multiset 0, element 0\) and \(multiset 1, element 0\)"):
        check_elementwise_separation(close, delta=F(1, 2))
    s = check_elementwise_separation(close)
    assert s.r2 == 25 and s.delta2 == F(1, 9) and s.max_norm2 == 25


def test_generator_is_seeded_distinct_varied():
    d1, d2 = generate(40, 5, 2, 3, seed=7), generate(40, 5, 2, 3, seed=7)
    assert d1.multisets == d2.multisets and d1.labels == d2.labels
    check_distinct(d1)
    cards = {len(m) for m in d1.multisets}
    assert min(cards) >= 1 and max(cards) == 5 and len(cards) >= 4
    assert any(len(set(m)) < len(m) for m in d1.multisets)  # repeated elements inside a multiset
    assert generate(40, 5, 2, 3, seed=8).multisets != d1.multisets


# ----------------------------------------------------------------------------- the construction


def test_multiplicity_alone_distinguishes_and_padding_is_separated():
    a = pt(0)  # the origin is an element: the padding point must be found elsewhere
    data = make_multisets([[a], [a, a], [a, a, a], []], [1, 0, 1, 0], 2, d=1)
    b = deep_sets.build(data)
    assert b.padding != a and (b.padding[0] - a[0]) ** 2 >= 1 and b.info["p inside the r-ball"]
    assert _check(b.model, b.dataset).status == "CERTIFIED"
    assert _check(b.phi_model, b.phi_dataset).status == "CERTIFIED"


def test_phi_layers_are_the_deep_sets_first_layers_and_sums_are_exact(built):
    data, b = built
    assert b.model.layers[:b.n_phi_layers] == b.phi_model.layers
    # ϕ̃ on every element (its own forward pass), summed per multiset, equals the summing layer's output
    phi = {x[0]: o[0] for x, o in zip(b.phi_dataset.inputs, forward(b.phi_model, b.phi_dataset.inputs).outputs)}
    assert phi[b.padding] == 0
    prefix = Model(b.model.layers[:b.n_phi_layers + 1], "vectors", data.d, "last", "identity")
    summed = forward(prefix, b.dataset.inputs).outputs
    for m, s in zip(data.multisets, summed):
        assert s[0] == sum(phi[x] for x in m)
    sums = [s[0] for s in summed]
    assert len(set(sums)) == data.N and all(v.denominator == 1 for v in sums)
    # eq. (118) recomputed with mpmath: values in [C_phi] ∪ {0}, sums (4MN³√π, 1)-separated
    N, M = data.N, data.M
    with mpmath.workdps(50):
        c_phi = mpmath.ceil(4 * N ** 3 * mpmath.sqrt(mpmath.pi))
        assert all(v == 0 or 1 <= int(v) <= c_phi for v in phi.values())
        assert int(max(abs(v) for v in sums)) <= 4 * M * N ** 3 * mpmath.sqrt(mpmath.pi)


def test_permutation_invariance(built):
    data, b = built
    rng = random.Random(3)
    base = forward(b.model, b.dataset.inputs).outputs
    perms = []
    for X in b.dataset.inputs:
        Y = list(X)
        rng.shuffle(Y)  # padding points interleaved with the elements
        perms.append(tuple(Y))
    rev = [tuple(reversed(X)) for X in b.dataset.inputs]
    assert forward(b.model, perms).outputs == base == forward(b.model, rev).outputs
    ds = Dataset(perms, b.dataset.labels, "vectors")
    assert _check(b.model, ds, P.claims(b)).status == "CERTIFIED"


def test_certify_small_instances_end_to_end(tmp_path):
    rows = certify_file(PROOF, out_dir=str(tmp_path), seed=0, size="small", quiet=True)
    assert len(rows) == 2 * len(P.INSTANCES) - 2  # the N = 1000 instance is medium only
    assert all(r.verdict == "CERTIFIED" for r in rows), [(r.instance, r.message) for r in rows]
    assert all(r.width <= 12 for r in rows)


# ----------------------------------------------------------------------------- planted wrong steps


def _nudge_phi_output(model: Model, at: int) -> Model:
    """ϕ̃'s affine output layer (layer at − 1): its first nonzero weight + 1."""
    layers = list(model.layers)
    L = layers[at - 1]
    assert isinstance(L, Affine) and not L.relu
    j = next(j for j, w in enumerate(L.W[0]) if w)
    W = (tuple(w + 1 if k == j else w for k, w in enumerate(L.W[0])),) + L.W[1:]
    layers[at - 1] = replace(L, W=W)
    return Model(tuple(layers), model.input_type, model.input_dim, model.readout, model.decode)


def test_nudged_phi_weight_is_refuted(built):
    _, b = built
    bad = _nudge_phi_output(b.model, b.n_phi_layers)
    v = _check(bad, b.dataset)
    assert v.status == "REFUTED" and v.witness["reason"] == "label"
    v = _check(_nudge_phi_output(b.phi_model, b.n_phi_layers), b.phi_dataset)
    assert v.status == "REFUTED"


def test_flipped_label_is_refuted(built):
    data, b = built
    labels = list(b.dataset.labels)
    labels[5] = (F((int(labels[5][0]) + 1) % data.C),)
    ds = Dataset(b.dataset.inputs, labels, "vectors")
    v = _check(b.model, ds, outputs=forward(b.model, b.dataset.inputs).outputs)
    assert v.status == "REFUTED" and v.witness["example"] == 5


def test_padding_not_mapped_to_zero_is_refuted(built):
    data, b = built
    # ϕ̃'s certificate claiming ϕ̃(p) = 1: refuted at the padding example (the last one)
    labels = list(b.phi_dataset.labels)
    labels[-1] = (F(1),)
    v = _check(b.phi_model, Dataset(b.phi_dataset.inputs, labels, "vectors"))
    assert v.status == "REFUTED" and v.witness["example"] == len(labels) - 1
    # ϕ̃(p) = 1 only shifts a padded sum by M − |m| ≤ M: ρ̃'s Stage I (gaps scaled to [2, 4)) absorbs
    # that, so the deep set's certificate alone cannot pin ϕ̃(p) = 0 — the ϕ̃ certificate does (above).
    # With ϕ̃(p) = F (p labelled F) the padded sums move far: the deep set's certificate is refuted.
    elements, counters = data.element_index()
    from exactmem.constructions.kajitsuka import compact as kajitsuka
    A = kajitsuka.witness_set(counters)
    f, Fr, _ = kajitsuka.token_weights(counters, A, 0)
    others = [elements[j] for j in range(len(elements)) if j not in f]
    bad_phi, _ = vardi.build_c1([elements[j] for j in A] + [b.padding], [f[j] for j in A] + [Fr], Fr + 1, others,
                                seed=12)
    layers = tuple(bad_phi.layers) + b.model.layers[b.n_phi_layers:]
    bad = Model(layers, "vectors", data.d, "last", "identity")
    assert any(len(m) < data.M for m in data.multisets)
    v = _check(bad, b.dataset)
    assert v.status == "REFUTED"
    assert len(data.multisets[v.witness["example"]]) < data.M  # a padded multiset is the witness


def test_wrong_claims_are_refuted(built):
    _, b = built
    meas = measure(b.model)
    for wrong in (Claim("width", "==", meas.width + 1), Claim("depth", "<=", deep_sets.relu_depth(b)),
                  Claim("max_bits", "==", deep_sets.max_bits(b) - 1), Claim("n_examples", "==", b.info["N"] + 1)):
        v = _check(b.model, b.dataset, P.claims(b) + [wrong])
        assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == wrong.quantity, wrong


# ----------------------------------------------------------------------------- claims, independently


def _mp_log2(x):
    return mpmath.log(x, 2)


def _mp_eq110(N, C, R):
    ell = _mp_log2(N)
    mx = max(_mp_log2(R), _mp_log2(C))
    return 6 + 3 * mpmath.sqrt(N * ell) + 3 * mpmath.sqrt(N / ell) * mx + 2 * mpmath.sqrt(N / ell)


def test_claims_match_independent_recomputation(built):
    data, b = built
    meas = measure(b.model)
    cl = P.claims(b)
    exact = {c.quantity: c.bound for c in cl if c.op == "=="}
    assert exact["width"] == meas.width <= 12 and exact["n_params"] == meas.n_params
    assert exact["relu_depth"] == meas.relu_depth and exact["depth"] == meas.depth
    assert exact["max_bits"] == meas.max_bits and exact["n_examples"] == data.N
    # ReLU layers of ϕ̃ and ρ̃ separately, against the Lemma C.1 layouts
    phi_relu = sum(1 for L in b.model.layers[:b.n_phi_layers] if getattr(L, "relu", False))
    assert phi_relu == vardi.relu_depth_c1(b.phi_layout)
    assert meas.relu_depth - phi_relu == vardi.relu_depth_c1(b.rho_layout)
    # (113)/(114) with R = 80 M² N⁵ r δ⁻¹ π √d, in mpmath
    N, M, d, C = data.N, data.M, data.d, data.C
    r2, d2 = b.info["r^2 (clamped >= 1)"], b.info["delta^2 (clamped <= 1)"]
    with mpmath.workdps(60):
        R = 80 * M ** 2 * N ** 5 * mpmath.sqrt(mpmath.mpf(r2.numerator) / r2.denominator) * mpmath.pi * \
            mpmath.sqrt(d) / mpmath.sqrt(mpmath.mpf(d2.numerator) / d2.denominator)
        D_true = 2 * (int(mpmath.floor(_mp_eq110(N, C, R))) - 1) + 1
        g, mx = mpmath.sqrt(N / _mp_log2(N)), max(_mp_log2(R), _mp_log2(C))
        rp2 = b.info["phi"]["lemma r^2 (clamped >= 1)"]
        c2_phi = _mp_log2(3 * d * mpmath.sqrt(mpmath.mpf(rp2.numerator) / rp2.denominator) * (N * M + 1) ** 2 *
                          mpmath.sqrt(mpmath.pi) / mpmath.sqrt(mpmath.mpf(d2.numerator) / d2.denominator))
        c2_rho = _mp_log2(12 * M * N ** 5 * mpmath.pi)
        top = max(c2_phi, c2_rho, g * mx + mpmath.ceil(_mp_log2(R)), g * mx + 2, 1 + M.bit_length())
        B_true = int(mpmath.floor(top))
    D, B = P.theorem_bounds(b.info)
    assert 0 <= D_true - D <= 2 and 0 <= B_true - B <= 1
    assert meas.depth <= D and meas.max_bits <= B
    theorem = [c for c in cl if c.source.startswith("(113)") or c.source.startswith("(114)")]
    assert [c.bound for c in theorem] == [D, B]


def test_padding_point_outside_the_ball_when_the_ball_is_full():
    data = make_multisets([[pt(-1)], [pt(0)], [pt(1), pt(1)]], [0, 1, 1], 2)  # r = 1: 0, ±1 are all taken
    b = deep_sets.build(data)
    assert b.padding == pt(2) and not b.info["p inside the r-ball"]
    assert _check(b.model, b.dataset, P.claims(b)).status == "CERTIFIED"
    assert _check(b.phi_model, b.phi_dataset, P.phi_claims(b)).status == "CERTIFIED"


def test_lemma_b2_recipe_breaks_theorem_d1_proof_not_its_statement():
    """The errata's Lemma B.2 instance as multisets: {y, y, z} and {x, w, z} (x, y, z, w = 1, 2, 3, 4),
    A = {x, y}, Park direction v = (0, −1): the printed recipe gives f = (28, 14) and both sums are
    28, so eq. (118) fails and no ρ̃ exists; the repaired weights certify the same data."""
    from exactmem.constructions.kajitsuka import compact as kajitsuka
    from exactmem.constructions.kajitsuka.compact import ConstructionError

    x, y, z, w = pt(1), pt(2), pt(3), pt(4)
    data = make_multisets([[y, y, z], [x, w, z]], [0, 1], 2)
    elements, _ = data.element_index()  # ids: y 0, z 1, x 2, w 3
    f, c = kajitsuka.paper_shifted_weights([F(0), F(-1)], 2)
    assert (f, c) == ([28, 14], 28)
    ids = [elements.index(x), elements.index(y)]
    with pytest.raises(ConstructionError, match="multisets 0 and 1 are distinct but have the same sum 28"):
        deep_sets.build(data, witnesses=ids, weights=dict(zip(ids, f)))
    b = deep_sets.build(data)
    assert _check(b.model, b.dataset, P.claims(b)).status == "CERTIFIED"


def test_mutant_campaign_finds_no_false_certificate():
    """tests/mutants.py's planted edits (weights of every layer, labels, outputs, claims,
    structure) on a deep-set certificate and its ϕ̃ certificate: every wrong one is refuted, the
    verdicts agree with the independent oracle."""
    import mutants as MU

    data = generate(8, 3, 2, 3, seed=0, min_card=0)
    b = deep_sets.build(data)
    for model, ds, cl in ((b.model, b.dataset, P.claims(b)), (b.phi_model, b.phi_dataset, P.phi_claims(b))):
        doc = build_certificate("kajitsuka.deep_sets", "t", 0, model, ds, forward(model, ds.inputs).outputs, cl)
        muts = MU.generate(doc, seed=1, per_kind=2, source="deep_sets")
        camp = MU.run_campaign(muts, [MU.oracle(m.doc) for m in muts], agree_every=5)
        assert camp.kills >= len(muts) // 2
        assert not camp.false_certified and not camp.problems, list(MU.iter_problems(camp))
