"""Vardi et al. / Kajitsuka & Sato Lemma C.1 and F.1: exact memorization, zeros on extra points,
rounding choices, the paper's formulas as enclosures, claims, errata, and planted errors."""

import math
import os
import random
from fractions import Fraction as F

import mpmath
import pytest

from exactmem.arith import enclosure as E
from exactmem.kernel.checker import check_certificate, load_certificate
from exactmem.certificate.fastcheck import check_certificate_fast
from exactmem.certificate.writer import build_certificate
from exactmem.pipeline.certify import certify_file
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.data.dataset import DataError, Dataset
from exactmem.model import Affine, Model, forward, measure
from exactmem.pipeline.loader import load_proof_file
from exactmem.proofs import vardi as PV  # the proof file's helpers (proofs/vardi.py re-exports it)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "proofs", "vardi.py")
ERRATA = os.path.join(ROOT, "proofs", "vardi_errata.py")


# ----------------------------------------------------------------------------- the gadget, exhaustively


@pytest.mark.parametrize("b", range(1, 11))
def test_doubling_extractor_every_b_bit_input(b):
    """All 2^b inputs: the b bits, most significant first, and remainder 0 — exactly."""
    model = vardi.bit_extractor(b)
    us = list(range(2 ** b))
    out = forward(model, [((F(u),),) for u in us]).outputs
    for u, o in zip(us, out):
        assert o == [F((u >> (b - 1 - i)) & 1) for i in range(b)] + [F(0)], u
    m = measure(model)
    assert m.relu_depth == b + 1 and m.max_bits == b + 2  # one layer per bit; weights 2^b


@pytest.mark.parametrize("M,k", [(6, 2), (9, 4), (10, 9)])
def test_doubling_extractor_prefix_and_remainder(M, k):
    model = vardi.bit_extractor(M, k)
    out = forward(model, [((F(u),),) for u in range(2 ** M)], backend="compress").outputs
    for u, o in enumerate(out):
        assert o[:k] == [F((u >> (M - 1 - i)) & 1) for i in range(k)]
        assert o[k] == F((u << k) % 2 ** M)


def test_extractor_certificate_and_planted_flip():
    """Through the independent checker; a flipped bias (2^(M-1) -> 2^(M-1) + 1) is refuted."""
    M = 6
    model = vardi.bit_extractor(M)
    xs = [((F(u),),) for u in range(2 ** M)]
    labels = [tuple(F((u >> (M - 1 - i)) & 1) for i in range(M)) + (F(0),) for u in range(2 ** M)]
    ds = Dataset(xs, labels)
    out = forward(model, xs).outputs
    doc = build_certificate("gadget", "M6", 0, model, ds, out, [])
    assert check_certificate(doc).status == "CERTIFIED"
    layers = list(model.layers)
    first = layers[0]
    b = list(first.b)
    b[1] += 1  # s1's threshold off by one: U = 2^(M-1) - 1 now reads as bit 1... or not at all
    layers[0] = Affine(first.W, tuple(b), True)
    bad = Model(tuple(layers), "vectors", 1, "last", "identity")
    doc = build_certificate("gadget", "M6-bad", 0, bad, ds, forward(bad, xs).outputs, [])
    v = check_certificate(doc)
    assert v.status == "REFUTED" and v.witness["reason"] == "label"


# ----------------------------------------------------------------------------- memorization


def _data(kind, N, V, d, C, seed, label_range=None):
    pts = PV.make_points(kind, V, d, seed)
    rng = random.Random(seed + 1)
    labels = [rng.randrange(label_range or C) for _ in range(N)]
    return pts[:N], labels, pts[N:]


CASES = [
    ("line", 1, 1, 1, 2), ("line", 2, 2, 1, 2), ("line", 3, 9, 1, 2), ("line", 37, 80, 1, 16),
    ("line", 100, 100, 1, 1000), ("cloud", 25, 50, 3, 2), ("cloud", 60, 61, 5, 1000),
    ("lattice", 40, 70, 2, 16), ("lattice", 30, 30, 3, 2), ("lattice", 20, 64, 1, 3),
]


@pytest.mark.parametrize("kind,N,V,d,C", CASES)
def test_c1_memorizes_labels_and_zeros_extra_points(kind, N, V, d, C):
    pts, labels, extra = _data(kind, N, V, d, C, seed=N + V)
    model, info = vardi.build_c1(pts, labels, C, extra, seed=3)
    xs = [(p,) for p in pts + extra]
    want = [[F(y)] for y in labels] + [[F(0)]] * len(extra)
    assert forward(model, xs, backend="compress").outputs == want
    assert forward(model, xs, backend="flint").outputs == want
    m, lay = measure(model), info["layout"]
    assert m.width <= 12
    assert m.relu_depth == vardi.relu_depth_c1(lay)
    assert m.max_bits == vardi.max_bits_impl(lay, info["projection bits"])
    assert lay.g == vardi.slot_count(N) and lay.m == -(-N // lay.g) and lay.padding == lay.m * lay.g - N
    assert lay.c == vardi.label_width(C)


def test_duplicate_labels_and_all_equal_labels():
    pts, _, extra = _data("line", 50, 70, 1, 2, seed=5)
    for labels in ([1] * 50, [0] * 50, [i % 2 for i in range(50)]):
        model, _ = vardi.build_c1(pts, labels, 2, extra, seed=0)
        out = forward(model, [(p,) for p in pts + extra]).outputs
        assert out == [[F(y)] for y in labels] + [[F(0)]] * 20


def test_rational_points_with_small_gaps():
    rng = random.Random(4)
    pts = sorted({F(rng.randint(-10 ** 6, 10 ** 6), rng.choice([1, 7, 1000])) for _ in range(60)})
    pts = [(p,) for p in pts]
    labels = [rng.randrange(5) for _ in range(40)]
    model, info = vardi.build_c1(pts[:40], labels, 5, pts[40:], seed=1)
    assert info["projection scale lambda"] > 1  # gaps < 2 needed scaling
    out = forward(model, [(p,) for p in pts]).outputs
    assert out == [[F(y)] for y in labels] + [[F(0)]] * 20


def test_slots_override_and_single_group():
    pts, labels, extra = _data("cloud", 12, 20, 2, 16, seed=9)
    for slots in (1, 5, 12, 20):
        model, info = vardi.build_c1(pts, labels, 16, extra, seed=0, slots=slots)
        assert info["layout"].g == slots
        out = forward(model, [(p,) for p in pts + extra], backend="compress").outputs
        assert out == [[F(y)] for y in labels] + [[F(0)]] * 8


@pytest.mark.parametrize("N,V,B,d", [(48, 56, 4, 2), (30, 30, 5, 1), (50, 60, 3, 3), (10, 25, 1, 1)])
def test_f1_memorizes_and_sums_subsets(N, V, B, d):
    pts, labels, extra = _data("cloud" if d > 1 else "line", N, V, d, 16, seed=N * B)
    model, info = vardi.build_f1(pts, labels, 16, B, extra, seed=2)
    out = forward(model, [(p,) for p in pts + extra], backend="compress").outputs
    assert out == [[F(y)] for y in labels] + [[F(0)]] * (V - N)
    m = measure(model)
    assert m.width <= 13
    assert info["subset sizes"] == vardi.subset_sizes(N, B) and sum(info["subset sizes"]) == N
    assert m.relu_depth == vardi.relu_depth_f1(info["layouts"])


def test_stage1_projection_facts():
    pts, labels, extra = _data("cloud", 30, 45, 4, 2, seed=1)
    prep = vardi.prepare(pts, labels, extra, 2)
    proj = vardi.project_to_line(prep, seed=0)
    xs = sorted(proj.values)
    assert xs[0] >= 2 and all(b - a >= 2 for a, b in zip(xs, xs[1:]))
    R2 = vardi.paper_R2(prep.r2, prep.delta2, 45, 4)
    assert xs[-1] ** 2 <= R2.lo  # within the lemma's R
    assert 2 <= proj.lam * proj.gamma and (proj.lam * proj.gamma < 4 or proj.lam == math.ceil(F(2) / proj.gamma))
    assert [vardi.projection_scale(g) for g in (F(1, 3), F(1), F(3), F(4), F(7), F(9000))] == \
        [6, 2, 1, F(1, 2), F(1, 2), F(1, 4096)]


@pytest.mark.parametrize("scale", [1, 2 ** 40])  # int64 blocks, and the exact sweep for huge coordinates
def test_min_sq_distance_matches_brute_force(scale):
    rng = random.Random(2)
    for d in (1, 2, 3):
        pts = list({tuple(F(rng.randint(-30, 30) * scale, rng.choice([1, 2])) for _ in range(d)) for _ in range(80)})
        brute = min(sum((a - b) ** 2 for a, b in zip(p, q)) for i, p in enumerate(pts) for q in pts[i + 1:])
        assert vardi.min_sq_distance(pts) == brute


# ----------------------------------------------------------------------------- rounding and formulas


def test_slot_count_is_the_ceiling_of_sqrt_n_over_log2_n():
    assert [vardi.slot_count(n) for n in (1, 2, 3, 16, 4096, 65536)] == [1, 2, 2, 2, 19, 64]
    for n in range(2, 3000):
        g = vardi.slot_count(n)
        t = n / math.log2(n)
        if abs(math.sqrt(t) - round(math.sqrt(t))) > 1e-9:  # away from ties, floats decide
            assert g == math.ceil(math.sqrt(t)), n


def test_pack_is_most_significant_block_first():
    assert vardi.pack([1, 2, 3], 4) == 0x123
    assert vardi.pack([0, 0, 5], 3) == 5  # leading zero blocks stay in the fixed width
    with pytest.raises(ValueError):
        vardi.pack([8], 3)


def mp(q):
    return mpmath.mpf(q.numerator) / q.denominator


def inside(e, x):
    return mp(e.lo) <= x <= mp(e.hi)


def test_enclosures_contain_the_true_values():
    mpmath.mp.dps = 60
    assert inside(E.PI, mpmath.pi) and inside(E.LN2, mpmath.log(2))
    for q in (F(1), F(2), F(3, 7), F(10 ** 30 + 7, 3), F(65536), F(1, 10 ** 12)):
        e = E.log2(q)
        assert inside(e, mpmath.log(mp(q), 2))
        assert e.width() <= F(1, 2 ** 11)
        assert inside(E.sqrt(q), mpmath.sqrt(mp(q)))
        assert inside(E.ln(q), mpmath.log(mp(q)))
    assert E.log2(F(1024)).lo == 10


def _mp_110(N, C, R):
    ell = mpmath.log(N, 2)
    lr, lc = mpmath.log(R, 2), mpmath.log(C, 2)
    return 6 + 3 * mpmath.sqrt(N * ell) + 3 * mpmath.sqrt(N / ell) * max(lr, lc) + 2 * mpmath.sqrt(N / ell)


def test_eq110_and_eq111_enclosures_against_mpmath():
    mpmath.mp.dps = 50
    for N, C, r2, d2, V, d in [(16, 16, F(900), F(1), 24, 1), (4096, 16, F(10 ** 8), F(1, 4), 5000, 8),
                               (200, 1000, F(3), F(1, 9), 300, 3)]:
        R2 = vardi.paper_R2(r2, d2, V, d)
        R = 20 * mpmath.sqrt(mp(r2)) * V ** 2 * mpmath.sqrt(mpmath.pi * d) / mpmath.sqrt(mp(d2))
        e = vardi.eq110_depth(N, C, R2)
        assert inside(e, _mp_110(N, C, R)) and e.width() < F(1, 10)
        g = mpmath.sqrt(N / mpmath.log(N, 2))
        mx = max(mpmath.log(R, 2), mpmath.log(C, 2))
        first = mpmath.log(3 * d * mpmath.sqrt(mp(r2)) * V ** 2 * mpmath.sqrt(mpmath.pi) / mpmath.sqrt(mp(d2)), 2)
        val = max(first, g * mx + mpmath.ceil(mpmath.log(R, 2)), g * mx + 2)
        assert inside(vardi.eq111_bits(N, C, R2, r2, d2, V, d), val)


# ----------------------------------------------------------------------------- proof file, claims, errata


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("vardi")
    return certify_file(PROOF, out_dir=str(out), seed=0, size="small", quiet=True), out


def test_small_proof_file_certified(small_run):
    rows, _ = small_run
    assert [r.theorem for r in rows].count("vardi.c1") == 4 and [r.theorem for r in rows].count("vardi.f1") == 1
    assert {r.verdict for r in rows} == {"CERTIFIED"}, [(r.instance, r.message) for r in rows]
    for r in rows:
        kinds = {c.split()[0] for c in r.claims}
        assert {"width", "relu_depth", "depth", "max_bits", "n_examples"} <= kinds


def test_fast_checker_agrees_on_small_certificates(small_run):
    _, out = small_run
    for name in os.listdir(out):
        doc = load_certificate(os.path.join(out, name))
        a, b = check_certificate(doc), check_certificate_fast(doc)
        assert (a.status, a.witness, a.measured) == (b.status, b.witness, b.measured)


def test_claims_are_computed_not_copied():
    """The (110) bound is eq. (110) with the integers of Lemmas G.3 and G.6, the (111) bound the
    rigorous lower enclosure, and the depth claim subtracts the affine output layer."""
    thm = [t for t in load_proof_file(PROOF) if t.name == "vardi.c1"][0]
    built = thm.build({"N": 16, "V": 24, "C": 16}, 0)
    N, V, d, C, r2, delta2, R2 = PV.lemma_quantities(built.info)
    by = {(c.quantity, c.op, c.source.split(",")[0]): c.bound for c in built.claims}
    e = vardi.eq110_integer(N, C, R2)
    assert (e.m, e.n) == (vardi.ceil_sqrt_n_log2n(16), vardi.slot_count(16)) == (8, 2)
    assert by[("depth", "<=", "eq. (110)")] == e.depth - 1 >= math.floor(vardi.eq110_depth(N, C, R2).hi) - 1
    assert by[("max_bits", "<=", "eq. (111)")] == math.floor(vardi.eq111_bits(N, C, R2, r2, delta2, V, d).lo)


def test_flipped_bit_in_u_j_is_refuted(tmp_path):
    """Planted wrong construction: one key bit of u_0 flipped; the checker refutes it."""
    thm = [t for t in load_proof_file(PROOF) if t.name == "vardi.c1"][0]
    built = thm.build({"N": 16, "V": 24, "C": 16}, 0)
    lay = built.info["layout"]
    layers = list(built.model.layers)
    k = 3  # Stage I, then Stage II layers t = 0, 1, 2: t = 2 adds u_0·T_0
    W = [list(r) for r in layers[k].W]
    big = max(((i, j) for i in range(len(W)) for j in range(len(W[0]))), key=lambda ij: abs(W[ij[0]][ij[1]]))
    u0 = int(W[big[0]][big[1]])
    assert u0.bit_length() > lay.g * lay.c  # the key string, not the label string
    W[big[0]][big[1]] = F(u0 ^ (1 << (lay.rho * (lay.g - 1))))  # lowest bit of slot 0's key
    layers[k] = Affine(tuple(tuple(r) for r in W), layers[k].b, layers[k].relu)
    bad = Model(tuple(layers), "vectors", 1, "last", "identity")
    ds = built.dataset
    doc = build_certificate("vardi.c1", "flipped", 0, bad, ds, forward(bad, ds.inputs).outputs, built.claims)
    for check in (check_certificate, check_certificate_fast):
        v = check(doc)
        assert v.status == "REFUTED" and v.witness["reason"] == "label"
        assert v.witness["got"] != v.witness["expected"]


def test_errata_literal_readings_are_refuted(tmp_path):
    rows = certify_file(ERRATA, out_dir=str(tmp_path), seed=0, size="small", quiet=True)
    by = {r.theorem: r for r in rows}
    assert {r.verdict for r in rows} == {"REFUTED"}
    assert set(by) == {"vardi_errata.rho_c_as_printed", "vardi_errata.w_blocks_as_printed", "vardi_errata.len_scaled"}
    for r in rows:  # every claim holds; an example exposes the misreading
        assert r.witness["reason"] == "label" and r.witness["got"] != r.witness["expected"], r.theorem


def test_bad_input_names_the_problem():
    p = [(F(1),), (F(5),)]
    with pytest.raises(DataError, match=r"examples 0 \(labelled\) and 2 \(extra\)"):
        vardi.build_c1(p, [3, 1], 4, extra=[(F(1),)])
    with pytest.raises(DataError, match="label 4 is not an integer in \\[0, 4\\)"):
        vardi.build_c1(p, [4, 1], 4)
    with pytest.raises(DataError, match="floats"):
        vardi.build_c1([(1.5,)], [0], 2)
    with pytest.raises(DataError, match="dimension"):
        vardi.build_c1([(F(1),), (F(1), F(2))], [0, 1], 2)
    with pytest.raises(DataError, match="Lemma F.1 needs"):
        vardi.build_f1(p, [0, 1], 2, B=2)
    model, _ = vardi.build_c1(p + [(F(1),)], [3, 1, 3], 4)  # a consistent duplicate is merged
    assert forward(model, [(x,) for x in p]).outputs == [[F(3)], [F(1)]]


# ----------------------------------------------------------------------------- larger runs


@pytest.mark.slow
def test_medium_proof_file_certified_with_fast_checker(tmp_path):
    rows = certify_file(PROOF, out_dir=str(tmp_path), seed=0, size="medium", quiet=True, checker="fast")
    assert {r.verdict for r in rows} == {"CERTIFIED"}, [(r.instance, r.message) for r in rows]


@pytest.mark.slow
def test_pure_checker_on_n1024(tmp_path):
    rows = certify_file(PROOF, out_dir=str(tmp_path), seed=0, size="medium", quiet=True, checker="pure",
                        only="vardi.c1")
    rows = [r for r in rows if r.instance.startswith("N1024")]
    assert rows and rows[0].verdict == "CERTIFIED"
