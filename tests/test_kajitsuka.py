"""Kajitsuka & Sato Theorem B.1 / Corollary 4.1: data checks, Lemmas B.1–B.3, the whole
Transformer certified end to end (next-token, hardmax form, seq-to-seq), claims, errata and
planted errors."""

import math
import os
import random
from collections import Counter
from fractions import Fraction as F

import pytest

from exactmem.kernel.checker import check_certificate
from exactmem.certificate.writer import build_certificate
from exactmem.pipeline.certify import certify_file
from exactmem.constructions.kajitsuka import compact as kajitsuka
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.data.dataset import DataError
from exactmem.data.kajitsuka_data import check_consistency, check_separation, generate, make_data
from exactmem.model import Affine, Attention, Model, forward, measure
from exactmem.pipeline.loader import load_proof_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "proofs", "kajitsuka.py")


def _theorem(name):
    return [t for t in load_proof_file(PROOF) if t.name == name][0]


def _outputs_match(built):
    out = forward(built.model, built.dataset.inputs, backend="compress").outputs
    return out, all((tuple(o) if built.model.readout == "last" else tuple(tuple(c) for c in o)) == lab
                    for o, lab in zip(out, built.dataset.labels))


def _certify(built, name="t"):
    out = forward(built.model, built.dataset.inputs).outputs
    doc = build_certificate("kajitsuka", name, 0, built.model, built.dataset, out, built.claims)
    return check_certificate(doc)


def tok(*xs):
    return tuple(F(x) for x in xs)


# ----------------------------------------------------------------------------- data checks


def test_separation_measured_exactly_and_clamped():
    d = make_data([[tok(0, 0), tok(3, 4)], [tok(3, 4), tok(0, "1/2")]], [0, 1], 2)
    s = check_separation(d)
    assert s.max_norm2 == 25 and s.min_dist2 == F(1, 4)
    assert s.r2 == 25 and s.delta2 == F(1, 4)
    d2 = make_data([[tok("1/10"), tok("2/10")]], [0], 2)
    s2 = check_separation(d2)
    assert s2.r2 == 1 and s2.delta2 == F(1, 100)  # r clamped up to 1; δ = 1/10 ≤ 1


def test_separation_violation_names_the_pair():
    d = make_data([[tok(0, 0), tok(1, 1)], [tok(5, 5), tok("1/3", 0)]], [0, 1], 2)
    with pytest.raises(DataError, match=r"sequence 0, position 0\) and \(sequence 1, position 1\)"):
        check_separation(d, delta=F(1, 2))
    with pytest.raises(DataError, match=r"sequence 1, position 0\) has squared norm 50 > r² = 49"):
        check_separation(d, r=7)
    with pytest.raises(DataError, match="r ≥ 1"):
        check_separation(d, r=F(1, 2))
    with pytest.raises(DataError, match="δ ≤ 1"):
        check_separation(d, delta=2)


def test_consistency_violation_next_token_names_sequences():
    a, b, c = tok(1), tok(2), tok(3)
    d = make_data([[a, b, c], [b, a, c]], [0, 1], 2)  # permutation, same last token, different labels
    with pytest.raises(DataError, match=r"sequences 0 and 1 are permutations .* eq. \(5\)"):
        check_consistency(d)
    ok = make_data([[a, b, c], [b, c, a]], [0, 1], 2)  # different last token: allowed
    check_consistency(ok)


def test_consistency_violation_seq2seq_names_positions():
    a, b = tok(1), tok(2)
    d = make_data([[a, b], [b, a]], [(0, 1), (0, 0)], 2, "seq2seq")
    with pytest.raises(DataError, match=r"\(sequence 0, position 1\) and \(sequence 1, position 0\).*eq. \(10\)"):
        check_consistency(d)


def test_bad_shapes_and_labels():
    with pytest.raises(DataError, match="sequence 1 has length 1"):
        make_data([[tok(1), tok(2)], [tok(1)]], [0, 0], 2)
    with pytest.raises(DataError, match="label 2 is not an integer in \\[0, 2\\)"):
        make_data([[tok(1)]], [2], 2)
    with pytest.raises(DataError, match="floats are not exact"):
        make_data([[(0.5,)]], [0], 2)
    with pytest.raises(DataError, match="dimension 1"):
        make_data([[tok(1, 2), tok(1)]], [0], 2)


def test_generator_has_repeats_permutations_duplicates_and_big_denominators():
    d = generate(200, 6, 3, 4, seed=3, vocab=30, permuted=0.2, duplicates=0.1, denominator_bits=40)
    check_consistency(d)
    tokens, ids = d.token_index()
    assert any(len(set(X)) < len(X) for X in ids)  # a token repeated inside a sequence
    assert len(tokens) <= 30 < 6 * 200  # tokens shared across sequences
    ms = Counter(tuple(sorted(X)) for X in ids)
    assert any(c > 1 for c in ms.values())  # permuted or exact duplicates
    assert any(X != Y and sorted(X) == sorted(Y) for X in ids[:100] for Y in ids[:100])  # a real permutation
    assert max(x.denominator for t in tokens for x in t).bit_length() == 40


# ----------------------------------------------------------------------------- Lemmas B.1, B.2


@pytest.mark.parametrize("seed", range(5))
def test_witness_set_separates_all_multisets(seed):
    rng = random.Random(seed)
    ms = list({tuple(sorted(rng.randrange(12) for _ in range(rng.randint(1, 6)))) for _ in range(80)})
    multisets = [Counter(m) for m in ms]
    A = kajitsuka.witness_set(multisets)
    assert len(A) <= len(multisets) - 1  # Lemma B.1: at most N (here N' − 1 suffice)
    restricted = {frozenset((x, c) for x, c in m.items() if x in set(A)) for m in multisets}
    assert len(restricted) == len(multisets)


def test_token_weights_give_distinct_sums_within_paper_range():
    rng = random.Random(1)
    ms = list({tuple(sorted(rng.randrange(9) for _ in range(4))) for _ in range(60)})
    multisets = [Counter(m) for m in ms]
    A = kajitsuka.witness_set(multisets)
    f, Fmax, tries = kajitsuka.token_weights(multisets, A, seed=0)
    sums = kajitsuka.weighted_counts(multisets, f)
    assert len(set(sums)) == len(sums)
    assert all(1 <= v <= Fmax for v in f.values())
    assert Fmax <= math.ceil(4 * len(multisets) ** 2 * len(A) * math.sqrt(math.pi))  # paper's range (display)
    assert Fmax == kajitsuka.weight_range(len(multisets), len(A))


# ----------------------------------------------------------------------------- the Transformer


def test_default_proof_file_certifies_everything(tmp_path):
    """The README's main job: every small instance of proofs/kajitsuka.py is CERTIFIED — the
    compact Thm B.1 / Cor. 4.1 theorems on all their small instances, F.1, E.1 and D.1 on the
    instances of ``MAIN_JOB``; the paper-literal networks live in proofs/kajitsuka_paper.py."""
    from exactmem.proofs import kajitsuka as P

    rows = certify_file(PROOF, out_dir=str(tmp_path), seed=0, size="small", quiet=True)
    expected = [(t.name, i.name) for t in load_proof_file(PROOF) for i in t.instances_for("small")]
    assert [(r.theorem, r.instance) for r in rows] == expected and len(rows) == 18
    assert [t for t, _ in expected].count("kajitsuka.next_token") == 4
    assert {t for t, _ in expected} == {"kajitsuka.next_token", "kajitsuka.next_token_hardmax", "kajitsuka.seq2seq",
                                        *P.MAIN_JOB}
    bad = [(r.theorem, r.instance, r.verdict, r.message) for r in rows if r.verdict != "CERTIFIED"]
    assert not bad
    assert all(len(r.claims) >= 6 for r in rows)


def test_main_job_lists_no_paper_literal_network_and_loses_no_instance():
    """proofs/kajitsuka.py: the paper-literal theorems only in proofs/kajitsuka_paper.py; every small
    instance of F.1, E.1, D.1 still runs, with --size medium here and --size small in its own file."""
    from exactmem.proofs import kajitsuka as P, kajitsuka_deep_sets, kajitsuka_paper, kajitsuka_variants

    names = [t.name for t in load_proof_file(PROOF)]
    assert not [n for n in names if "paper" in n]
    assert [t.name for t in load_proof_file(os.path.join(ROOT, "proofs", "kajitsuka_paper.py"))] == \
        ["kajitsuka.paper_blocks", "kajitsuka.paper_blocks_seq2seq"] == [t.name for t in kajitsuka_paper.THEOREMS]
    here = {t.name: t for t in P.THEOREMS}
    for own in kajitsuka_variants.THEOREMS + kajitsuka_deep_sets.THEOREMS:
        main = here[own.name]
        assert [i.name for i in main.instances_for("small")] == \
            [i.name for i in own.instances_for("small") if i.name in P.MAIN_JOB[own.name]]
        for size in ("medium", "large", "xlarge"):  # small instances left out of the main job run with medium
            extra = [i.name for i in own.instances_for("small") if i.name not in P.MAIN_JOB[own.name]]
            want = [i.name for i in own.instances if size in i.sizes or (size == "medium" and i.name in extra)]
            assert [i.name for i in main.instances_for(size)] == want, (own.name, size)
        assert main.build is own.build and main.statement == own.statement
    # the theorem's own proof file keeps its sizes (main_job works on a copy)
    assert len(kajitsuka_variants.THEOREMS[0].instances_for("small")) == 5
    with pytest.raises(ValueError, match="no small instance 'nosuch'"):
        P.main_job(kajitsuka_variants.THEOREMS[0], ("nosuch",))


def test_tiny_instance_N1_n1_C1():
    data = make_data([[tok(5)]], [0], 1)
    b = kajitsuka.build(data)
    assert b.info["witness set |A|"] == 0  # one multiset: A = ∅, ϕ̃ ≡ 0
    assert forward(b.model, [[tok(5)]]).outputs == [[F(0)]]


def test_duplicates_and_permutations_with_same_label():
    a, b_, c = tok(0, 1), tok(2, 0), tok(-1, -3)
    seqs = [[a, b_, c], [a, b_, c], [b_, a, c], [c, a, b_], [a, a, a]]
    labels = [2, 2, 2, 0, 1]  # 0, 1, 2 are the same (multiset, last token); 3 ends differently
    data = make_data(seqs, labels, 3)
    b = kajitsuka.build(data)
    assert b.info["distinct multisets N'"] == 2 and b.info["context ids"] == 3
    out = forward(b.model, data.to_dataset().inputs).outputs
    assert [o[0] for o in out] == [F(y) for y in labels]


def test_hardmax_form_gives_identical_outputs():
    data = generate(25, 5, 3, 4, seed=7)
    u = kajitsuka.build(data, seed=1, attention="uniform")
    h = kajitsuka.build(data, seed=1, attention="hardmax")
    att = [l for l in h.model.layers if isinstance(l, Attention)]
    assert len(att) == 1 and att[0].kind == "hardmax" and all(x == 0 for r in att[0].heads[0].WQ for x in r)
    ins = data.to_dataset().inputs
    ru, rh = forward(u.model, ins, trace=True), forward(h.model, ins, trace=True)
    assert ru.outputs == rh.outputs
    # every attention weight is exactly 1/n in both
    for r in (ru, rh):
        w = [e for e in r.trace if e.kind == "attention"][0].attention
        assert all(x == F(1, 5) for seqw in w for head in seqw for row in head for x in row)


def test_context_ids_match_eq53_and_separation_facts():
    data = generate(30, 4, 2, 3, seed=2)
    b = kajitsuka.build(data, seed=0)
    assert b.info["(54)-(55) min gap >= 1/n"] is True
    assert b.info["(54)-(55) min ||s - s'||^2"] >= F(1, 16)
    assert b.info["(56) max ||s|| <= 20 r n^2 N^3 sqrt(pi d)/delta"] is True
    k = [i for i, l in enumerate(b.model.layers) if isinstance(l, Attention)][0]
    ins = data.to_dataset().inputs
    s = forward(Model(b.model.layers[:k + 1], "vectors", data.d, "all"), ins).outputs
    phi = forward(Model(b.model.layers[:k], "vectors", data.d, "all"), ins).outputs
    for X, si, ph in zip(ins, s, phi):
        avg = sum(p[0] for p in ph) / len(X)
        for col, p in zip(si, ph):
            assert col == [p[0], p[1], avg]  # eq. (53): (ϕ̃(x_k), F(x_k), mean ϕ̃)
            assert p[2] == 0
        assert avg.denominator in (1, 2, 4) and (avg * 4).denominator == 1  # Σϕ̃ integer (Lemma B.3)


def test_seq2seq_every_position():
    data = generate(15, 4, 3, 3, seed=4, setting="seq2seq")
    b = kajitsuka.build(data, seed=0)
    assert b.model.readout == "all"
    out = forward(b.model, data.to_dataset().inputs).outputs
    for o, ys in zip(out, data.labels):
        assert [c[0] for c in o] == [F(y) for y in ys]
    assert b.info["context ids"] <= 15 * 4


def test_claims_are_the_formulas():
    thm = _theorem("kajitsuka.next_token")
    built = thm.build({"N": 20, "n": 4, "d": 3, "C": 4}, 0)
    m = measure(built.model)
    by = {}
    for c in built.claims:
        by.setdefault((c.quantity, c.op), []).append(c.bound)
    assert by[("width", "<=")] == [14] and m.width <= 14
    assert by[("relu_depth", "==")] == [m.relu_depth] and by[("depth", "==")] == [m.relu_depth + 1]
    assert by[("max_bits", "==")] == [m.max_bits]
    assert m.attention_layers == 1
    # theorem-level depth bound: 2⌊(110)(N, C, R)⌋ − 1 with R from Thm B.1
    info = built.info
    R2 = kajitsuka.paper_R2(4, 20, 3, info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"])
    D = 2 * math.floor(vardi.eq110_depth(20, 4, R2).lo) - 1
    assert D in by[("depth", "<=")]
    assert 14 * 4 + 210 * D + 12 in by[("n_params", "<=")]
    # and R really is 400·√(3d)·n³·r·N⁵·π/δ (float display check, r = δ = 1 clamps here)
    r, dl = math.sqrt(info["r^2 (clamped >= 1)"]), math.sqrt(info["delta^2 (clamped <= 1)"])
    R = 400 * math.sqrt(9) * 4 ** 3 * r * 20 ** 5 * math.pi / dl
    assert float(R2.lo) <= R * R * (1 + 1e-12) and float(R2.hi) >= R * R * (1 - 1e-12)


# ----------------------------------------------------------------------------- planted errors


def test_planted_nudged_weight_and_flipped_label_are_refuted():
    thm = _theorem("kajitsuka.next_token")
    built = thm.build({"N": 12, "n": 4, "d": 3, "C": 4}, 0)
    assert _certify(built).status == "CERTIFIED"
    # one label flipped
    ds = built.dataset
    labels = list(ds.labels)
    labels[5] = (labels[5][0] + 1,) if labels[5][0] < 3 else (F(0),)
    from exactmem.data.dataset import Dataset

    bad_ds = Dataset(ds.inputs, labels, "vectors")
    out = forward(built.model, ds.inputs).outputs
    v = check_certificate(build_certificate("kajitsuka", "flip", 0, built.model, bad_ds, out, built.claims))
    assert v.status == "REFUTED" and v.witness["example"] == 5
    # one weight nudged: the largest crafted integer of ϕ̃ (a key or label string u_j / w_j) + 1
    layers = list(built.model.layers)
    k_att = [i for i, l in enumerate(layers) if isinstance(l, Attention)][0]
    k, r, c = max(((k, r, c) for k in range(k_att) for r, row in enumerate(layers[k].W) for c in range(len(row))),
                  key=lambda t: abs(layers[t[0]].W[t[1]][t[2]]))
    W = [list(row) for row in layers[k].W]
    W[r][c] += 1
    layers[k] = Affine(tuple(tuple(row) for row in W), layers[k].b, layers[k].relu)
    bad = Model(tuple(layers), "vectors", 3, "last", "identity")
    v = check_certificate(build_certificate("kajitsuka", "nudge", 0, bad, ds, forward(bad, ds.inputs).outputs,
                                            built.claims))
    assert v.status == "REFUTED" and v.witness["reason"] == "label"


def test_planted_uniform_to_nonzero_hardmax_is_refuted():
    """Hard attention with a non-zero query/key no longer averages: the checker refutes."""
    thm = _theorem("kajitsuka.next_token_hardmax")
    built = thm.build({"N": 12, "n": 4, "d": 3, "C": 4, "attention": "hardmax"}, 0)
    layers = list(built.model.layers)
    k = [i for i, l in enumerate(layers) if isinstance(l, Attention)][0]
    h = layers[k].heads[0]
    from exactmem.model.layers import Head

    layers[k] = Attention((Head(h.WV, h.WO, ((0, 1, 0),), ((0, 1, 0),)),), kind="hardmax", residual=True)
    bad = Model(tuple(layers), "vectors", 3, "last", "identity")
    ds = built.dataset
    v = check_certificate(build_certificate("kajitsuka", "hm", 0, bad, ds, forward(bad, ds.inputs).outputs,
                                            built.claims))
    assert v.status == "REFUTED"


# ----------------------------------------------------------------------------- errata


def test_lemma_b2_shift_as_printed_is_refuted_and_repair_certifies(tmp_path):
    rows = certify_file(os.path.join(ROOT, "proofs", "kajitsuka_errata.py"), out_dir=str(tmp_path), quiet=True)
    assert [(r.theorem, r.verdict) for r in rows] == [("kajitsuka_errata.b2_proof_recipe_as_printed", "REFUTED"),
                                                      ("kajitsuka_errata.b2_statement_holds", "CERTIFIED")]
    assert rows[0].witness == {"example": 1, "expected": ["1"], "got": ["0"], "reason": "label"}
    assert rows[0].info["Lemma B.2 conclusion holds for f"] is False
    assert rows[1].info["f on (x, y)"] == (1, 2) and rows[1].instance == "N2-n3-S2-f(1,2)"
    f, c = kajitsuka.paper_shifted_weights((F(0), F(-1)), 2)
    assert (f, c) == ([28, 14], 28)  # h = (0, −14): sums −28 vs 0 before the shift, 28 = 28 after
    # the same data with exactmem's verified weights is memorized
    from exactmem.proofs.kajitsuka_errata import shift_data

    data = shift_data()
    b = kajitsuka.build(data)
    assert forward(b.model, data.to_dataset().inputs).outputs == [[F(0)], [F(1)]]
    with pytest.raises(kajitsuka.ConstructionError, match="share the context id"):
        tokens, _ = data.token_index()
        ids = {t[0]: j for j, t in enumerate(tokens)}
        kajitsuka.build(data, witnesses=[ids[1], ids[2]], weights={ids[1]: 28, ids[2]: 14})


def test_lemma_b2_statement_holds_where_the_recipe_fails():
    """Lemma B.2, eq. (16): on the errata instance the recipe's f = (28, 14) gives equal sums,
    while the f found by exact search satisfies the conclusion — re-checked here from the
    definitions with integers only (π between two rationals), independently of lemma_b2_holds."""
    from exactmem.proofs.kajitsuka_errata import b2_witness, restricted_multisets

    ms, A = restricted_multisets()
    assert [dict(m) for m in ms] == [{A[1]: 2}, {A[0]: 1}]  # {y, y} and {x}
    f = b2_witness()
    assert f == (1, 2)
    N, S, M = 2, 2, 2
    pi_lo, pi_hi = F(314159, 100000), F(314160, 100000)
    a = [sum(c * dict(zip(A, f))[t] for t, c in m.items()) for m in ms]
    assert a == [4, 1]
    assert (a[0] - a[1]) ** 2 >= S  # |a_0 − a_1| ≥ √|S|
    assert all(x * x <= 16 * M * M * N ** 4 * S * S * pi_lo for x in a)  # |a_i| ≤ 4MN²|S|√π
    assert all(1 <= v and (v - 1) ** 2 < 16 * N ** 4 * S * S * pi_lo for v in f)  # f(x) ≤ ⌈4N²|S|√π⌉ = 57
    assert kajitsuka.lemma_b2_holds(ms, dict(zip(A, f)))
    # the search is exact: every candidate before it fails, and the range test sits at ⌈32√π⌉ = 57
    assert not kajitsuka.lemma_b2_holds(ms, dict(zip(A, (1, 1))))  # sums 2 and 1: gap 1 < √2
    assert not kajitsuka.lemma_b2_holds(ms, dict(zip(A, (28, 14))))  # the recipe: sums 28 and 28
    assert 56 ** 2 < 16 * N ** 4 * S * S * pi_lo and 57 ** 2 > 16 * N ** 4 * S * S * pi_hi
    assert kajitsuka.lemma_b2_holds(ms, dict(zip(A, (57, 1))))
    assert not kajitsuka.lemma_b2_holds(ms, dict(zip(A, (58, 1))))


@pytest.mark.parametrize("count", [40, pytest.param(400, marks=pytest.mark.slow)])
def test_log2_enclosure_for_huge_rationals_brackets_the_exact_value(count, monkeypatch):
    """The squaring path of enclosure.log2 (used for huge q, e.g. δ² with 40-bit denominators;
    enclosure.log2_interval) encloses the exact cell [a, a + 1]/2^k, a = ⌊2^k log2 q⌋
    from the q^(2^k) comparison, and is at most two cells wide. ``count`` random q: 40 by
    default, 400 with ``-m slow`` (each exact q^4096 of a 300-bit q takes ~0.07 s)."""
    from exactmem.arith import enclosure as E

    monkeypatch.setattr(E, "EXACT_LOG_BITS", 0)  # force the squaring path on every q
    rng = random.Random(5)
    for _ in range(count):
        q = F(rng.getrandbits(rng.randint(1, 300)) + 1, rng.getrandbits(rng.randint(1, 300)) + 1)
        exact = E._log2_floor_scaled(q, 12)
        enc = E._log2_enclosure(q, 12)
        assert enc.lo <= F(exact, 4096) and F(exact + 1, 4096) <= enc.hi <= enc.lo + F(2, 4096)
    monkeypatch.undo()
    big = F(3 ** 500, 7 ** 300)
    enc = E.log2(big)
    assert enc.lo <= F(math.log2(3) * 500 - math.log2(7) * 300) <= enc.hi and enc.hi - enc.lo <= F(3, 4096)


def test_closest_pair_all_three_paths_agree_with_brute_force():
    """exactmem.data.geometry.closest_pair: 1-D, int64 blocks and the exact sweep (huge
    coordinates) give the brute-force minimum and a pair attaining it."""
    from itertools import combinations

    from exactmem.data.geometry import closest_pair

    rng = random.Random(11)
    for d, scale in [(1, 1), (3, 1), (3, 2 ** 70), (5, F(1, 3 ** 40))]:
        pts = list({tuple(F(rng.randint(-50, 50)) * scale for _ in range(d)) for _ in range(60)})
        best = min(sum((a - b) ** 2 for a, b in zip(p, q)) for p, q in combinations(pts, 2))
        m, i, j = closest_pair(pts)
        assert m == best and i != j
        assert sum((a - b) ** 2 for a, b in zip(pts[i], pts[j])) == best
