"""Kajitsuka & Sato Theorem F.1 (limited bits) and Theorem E.1 (embedding layer): end-to-end
certification of small instances, claims recomputed independently (mpmath, measured model),
and planted wrong steps the independent checker must refute."""

import os
from fractions import Fraction as F

import mpmath
import pytest

from exactmem.kernel.checker import check_certificate
from exactmem.certificate.writer import Claim, build_certificate
from exactmem.constructions.kajitsuka import embedding as KE
from exactmem.constructions.kajitsuka import variants as KV
from exactmem.data.dataset import DataError
from exactmem.data.kajitsuka_data import generate
from exactmem.model import Embed, forward, measure
from exactmem.pipeline.certify import certify_file
from exactmem.pipeline.loader import load_proof_file
from exactmem.proofs import kajitsuka_variants as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "exactmem", "proofs", "kajitsuka_variants.py")

mpmath.mp.dps = 60


def _theorem(name):
    return [t for t in P.THEOREMS if t.name == name][0]


def _check(built, claims=None, dataset=None):
    ds = dataset or built.dataset
    out = forward(built.model, built.dataset.inputs, backend="compress").outputs
    doc = build_certificate("kajitsuka_variants", "t", 0, built.model, ds, out,
                            built.claims if claims is None else claims)
    return check_certificate(doc)


def _by(claims):
    out = {}
    for c in claims:
        out.setdefault((c.quantity, c.op), []).append(c.bound)
    return out


def mp_eq110(N, C, R):
    """Eq. (110) in mpmath (log base 2): an independent recomputation of the enclosure."""
    N, lg = mpmath.mpf(N), mpmath.log(N, 2)
    mx = max(mpmath.log(R, 2), mpmath.log(C, 2))
    return 6 + 3 * mpmath.sqrt(N * lg) + 3 * mpmath.sqrt(N / lg) * mx + 2 * mpmath.sqrt(N / lg)


def _floor_close(claimed, exact):
    """A claim from an enclosure's lower end: ⌊lo⌋ ∈ {⌊x⌋ − 1, ⌊x⌋} (never above the real value)."""
    return int(mpmath.floor(exact)) - 1 <= claimed <= int(mpmath.floor(exact))


# ----------------------------------------------------------------------------- end to end


def test_proof_file_small_instances_all_certified(tmp_path):
    rows = certify_file(PROOF, out_dir=str(tmp_path), size="small")
    assert rows and all(r.verdict == "CERTIFIED" for r in rows), [(r.instance, r.verdict) for r in rows]
    assert {r.theorem for r in rows} == {"kajitsuka.limited_bits", "kajitsuka.embedding"}
    assert [t.name for t in load_proof_file(PROOF)] == [t.name for t in P.THEOREMS]


# ----------------------------------------------------------------------------- Theorem F.1


def test_balanced_split_matches_lemma_f1():
    for N in range(2, 200, 7):
        for B in range(2, int(N ** 0.5) + 1):
            s = KV.balanced_sizes(N, B)
            assert len(s) == -(-N // (B * B)) and sum(s) == N and max(s) <= B * B and min(s) >= 2
            assert max(s) - min(s) <= 1
    assert KV.balanced_sizes(64, 4) == [16] * 4  # B² | N: the paper's split exactly


def test_limited_bits_claims_are_the_formulas():
    thm = _theorem("kajitsuka.limited_bits")
    params = {"N": 40, "n": 8, "d": 16, "C": 4, "B": 2}
    built = thm.build(params, 0)
    m, info, by = measure(built.model), built.info, _by(built.claims)
    assert by[("width", "<=")] == [15] and m.width <= 15
    assert by[("relu_depth", "==")] == [m.relu_depth] and by[("depth", "==")] == [m.depth]
    assert by[("max_bits", "==")] == [m.max_bits] and m.attention_layers == 1
    # subsets: ⌈N/B²⌉ for F₂ (N' contexts), ⌈|A|/B²⌉ for ϕ̃
    assert info["F2 subsets"] == -(-info["F2 N (contexts)"] // 4)
    assert info["phi subsets"] == -(-info["witness set |A|"] // 4)
    # (144): 2⌈N/B²⌉⌊(110)(B², C, R)⌋ − 1 with R = 400√(3d) n³ r N⁵ π/δ (r = δ = 1 clamps here)
    assert info["r^2 (clamped >= 1)"] > 1 and info["delta^2 (clamped <= 1)"] == 1
    R = 400 * mpmath.sqrt(48) * 8 ** 3 * mpmath.sqrt(info["r^2 (clamped >= 1)"]) * mpmath.mpf(40) ** 5 * mpmath.pi
    D = by[("depth", "<=")][-1]
    assert _floor_close((D + 1) // (2 * 10), mp_eq110(4, 4, R))
    assert m.depth <= D
    # (145): g_B m + ⌈log R⌉ dominates here
    g = mpmath.sqrt(4 / mpmath.log(4, 2))
    bits = g * mpmath.log(R, 2) + mpmath.ceil(mpmath.log(R, 2))
    assert _floor_close(by[("max_bits", "<=")][-1], bits)
    assert by[("n_params", "<=")] == [15 * 17 + 240 * D + 12] and m.n_params <= 15 * 17 + 240 * D + 12


def test_limited_bits_fall_as_B_decreases_and_depth_grows():
    data = generate(150, 6, 4, 4, 1)
    rows = []
    for B in (2, 4, 8, 12):
        b = KV.build_limited(data, B, seed=1)
        rows.append((B, b.f2.max_bits(0), measure(b.model).depth))
    bits = [r[1] for r in rows]
    depth = [r[2] for r in rows]
    assert bits == sorted(bits) and bits[0] < bits[-1]  # memorizer bits grow with B
    assert depth == sorted(depth, reverse=True) and depth[0] > depth[-1]
    # B = ⌊√N⌋ with one subset per stack is Theorem B.1's network
    full = KV.build_limited(data, 12, seed=1)
    assert full.info["F2 subsets"] == 1 and full.info["phi subsets"] == 1


def test_limited_bits_B_out_of_range_named():
    data = generate(10, 3, 2, 2, 0)
    with pytest.raises(DataError, match=r"B = 4 is not in \[√N\]"):
        KV.build_limited(data, 4)
    with pytest.raises(DataError, match="next-token"):
        KV.build_limited(generate(10, 3, 2, 2, 0, setting="seq2seq"), 2)


def test_planted_flipped_subset_label_is_refuted():
    data = generate(24, 4, 3, 3, 2)
    good = KV.build_limited(data, 2, seed=0)
    bad = KV.build_limited(data, 2, seed=0, plant=("F2", 1))
    assert bad.model != good.model
    ds = data.to_dataset()
    for b, want in ((good, "CERTIFIED"), (bad, "REFUTED")):
        built = P.Built(b.model, ds, P.f1_claims(b), info=b.info)
        v = _check(built)
        assert v.status == want, v
    assert v.witness["reason"] == "label"


def test_planted_too_small_width_claim_is_refuted():
    built = _theorem("kajitsuka.limited_bits").build({"N": 12, "n": 4, "d": 3, "C": 4, "B": 2}, 0)
    w = measure(built.model).width
    v = _check(built, built.claims + [Claim("width", "<=", w - 1, "planted: one register too few")])
    assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == "width" and v.witness["measured"] == str(w)


# ----------------------------------------------------------------------------- Theorem E.1


def test_embedding_matrix_is_eq135_and_model_takes_token_ids():
    data = KE.generate_tokens(30, 5, 12, 3, 0)
    b = KE.build_embedding(data, seed=0)
    emb = b.model.layers[0]
    assert isinstance(emb, Embed) and b.model.input_type == "tokens" and b.model.input_dim == 12
    ids = KV.sequence_ids(data.sequences, 0)
    for t in range(12):
        assert emb.E[t] == (F(ids.f.get(t, 0)), F(t + 1), F(0))
    assert len(ids.A) <= min(12, 30) and b.info["(Lemma B.1) |A| <= min(omega, N)"]
    assert b.info["max f"] <= b.info["paper range ceil(4 N^2 sqrt(pi) min(omega, N)) (upper enclosure)"]
    out = forward(b.model, data.to_dataset().inputs).outputs
    assert [o[0] for o in out] == [F(y) for y in data.labels]


def test_embedding_consistency_and_ids_checked():
    with pytest.raises(DataError, match=r"sequences 0 and 1 .* eq. \(129\)"):
        KE.build_embedding(KE.make_token_data([(1, 2, 3), (2, 1, 3)], [0, 1], 2, 4))
    KE.build_embedding(KE.make_token_data([(1, 2, 3), (2, 3, 1)], [0, 1], 2, 4))  # other last token: fine
    with pytest.raises(DataError, match=r"sequence 1, position 2: token id 4 is not an integer in \[0, 4\)"):
        KE.make_token_data([(1, 2, 3), (2, 1, 4)], [0, 1], 2, 4)
    with pytest.raises(DataError, match="label 2"):
        KE.make_token_data([(1, 2, 3)], [2], 2, 4)


@pytest.mark.parametrize("omega", [8, 500])
def test_embedding_claims_are_the_formulas(omega):
    N, n, C = 50, 5, 3
    built = _theorem("kajitsuka.embedding").build({"N": N, "n": n, "omega": omega, "C": C}, 0)
    m, info, by = measure(built.model), built.info, _by(built.claims)
    assert by[("n_params", "==")] == [m.n_params] and by[("max_bits", "==")] == [m.max_bits]
    assert by[("depth", "==")] == [m.depth] and by[("width", "<=")] == [12] and m.width <= 12
    # embedding: 3ω stored entries are part of the count
    assert m.n_params - measure(type(built.model)(built.model.layers[1:], "vectors", 3)).n_params == 3 * omega
    # the printed R (r = δ = 1): R = 200√3 n² N⁵ ω π
    R = 200 * mpmath.sqrt(3) * n ** 2 * mpmath.mpf(N) ** 5 * omega * mpmath.pi
    D = by[("depth", "<=")][-1]
    assert _floor_close(D, mp_eq110(N, C, R)) and m.depth <= D
    assert by[("n_params", "<=")] == [3 * omega + 12 + 156 * D] and m.n_params <= 3 * omega + 12 + 156 * D
    g = mpmath.sqrt(N / mpmath.log(N, 2))
    bits = max(g * mpmath.log(R, 2) + mpmath.ceil(mpmath.log(R, 2)), omega.bit_length() + 1)
    assert _floor_close(by[("max_bits", "<=")][-1], bits)
    # the printed R exceeds Lemma C.1's R for the context ids (measured)
    assert info["printed R >= needed R"] is True


def test_planted_wrong_embedding_weight_is_refuted():
    """f(t) of a witness token moved by 2^20: its sequences' context ids leave every Stage-II
    interval of F^(FF), which then outputs 0 for them — refuted on a nonzero label. (A nudge by 1
    is *not* always wrong: Lemma C.1 reads ⌊x⌋ of the projection, and a context moved by less
    than the projection's gap can keep its key — such a network is rightly certified.)"""
    data = KE.generate_tokens(40, 6, 10, 3, 0)
    b = KE.build_embedding(data, seed=0)
    t = sorted(KV.sequence_ids(data.sequences, 0).A)[0]
    row = b.model.layers[0].E[t]
    bad = KE.build_embedding(data, seed=0, embedding_override={t: (int(row[0]) + 2 ** 20, int(row[1]), 0)})
    ds = data.to_dataset()
    for m, want in ((b, "CERTIFIED"), (bad, "REFUTED")):
        v = _check(P.Built(m.model, ds, P.e1_claims(b)))
        assert v.status == want
    assert v.witness["reason"] == "label" and t in ds.inputs[v.witness["example"]]


def test_embedding_flipped_label_is_refuted():
    built = _theorem("kajitsuka.embedding").build({"N": 12, "n": 4, "omega": 50, "C": 4}, 0)
    ds = built.dataset
    labels = list(ds.labels)
    labels[3] = ((labels[3][0] + 1) % 4,)
    v = _check(built, dataset=type(ds)(ds.inputs, labels, "tokens"))
    assert v.status == "REFUTED" and v.witness["example"] == 3
