"""Bit-precision sweeps (exactmem/sweep/, exactmem/sweep/report.py, CLI sweep/report).

Hand-made networks with minimal bits known exactly, a planted monotonicity violation,
resumable sweeps, and the floating-point engines checked against each other and against
Python's own IEEE doubles.
"""

import json
import os
import random
import textwrap
from fractions import Fraction as F

import numpy as np
import pytest

from exactmem import sweep as S
from exactmem.cli.app import main
from exactmem.data.dataset import Dataset
from exactmem.model import Affine, Attention, Embed, FeedForward, Head, Model, affine, forward
from exactmem.arith.numbers import round_to_bits
from exactmem.sweep.report import csv_text, findings, format_reach, latex_table, markdown_table, rows, write_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# out = 2·ReLU(w·x); w = 19/8 = 10.011₂ has 5 significant bits and 3 fractional bits.
TOY_PROOF = '''
from fractions import Fraction as F
from exactmem.certificate.writer import Claim
from exactmem.data.dataset import Dataset
from exactmem.model import Model, affine
from exactmem.proof import Built, Instance, Theorem


def build(params, seed):
    k, w = params["k"], F(params.get("w", "19/8"))
    xs = [4 * (i + 1 + seed) for i in range(k)]
    model = Model([affine([[w]], relu=True), affine([[2]])], input_dim=1)
    ds = Dataset([((F(x),),) for x in xs], [(2 * w * x,) for x in xs], "vectors", seed)
    return Built(model, ds, [Claim("n_examples", "==", k, "k examples"), Claim("max_bits", "<=", 64, "toy")])


THEOREMS = [Theorem("toy.scale", "out = 2 relu(w x)", "test", build,
                    [Instance("k3", {"k": 3}), Instance("k2", {"k": 2}, ("medium",))])]
'''


@pytest.fixture
def toy_proof(tmp_path):
    p = tmp_path / "toy_proof.py"
    p.write_text(TOY_PROOF)
    return str(p)


def toy(w=F(19, 8), xs=(4, 8, 12)):
    model = Model([affine([[w]], relu=True), affine([[2]])], input_dim=1)
    ds = Dataset([((F(x),),) for x in xs], [(2 * w * x,) for x in xs])
    return model, ds


def minimal(model, ds, mode, crit, neighbours=2):
    judge = S.Judge(model, ds)
    cache = {}
    r = S.search_minimal(lambda b: S.evaluate_exact(S.quantize_model(model, mode, b), ds, judge), crit,
                         1 if mode == "float" else 0, S.identity_bits(model, mode), 64, neighbours, cache)
    return r, cache


# ----------------------------------------------------------------------------- quantization


def test_quantize_value_float_and_fixed():
    assert S.quantize_value(F(19, 8), "float", 3) == F(5, 2)  # 10.011 → 10.1 (nearest)
    assert S.quantize_value(F(19, 8), "float", 4) == F(5, 2)  # 10.01|1: tie → even significand 1010
    assert S.quantize_value(F(19, 8), "fixed", 2) == F(5, 2)  # 2.375 → 9/4 or 10/4: tie → even
    assert S.quantize_value(F(19, 8), "fixed", 0) == 2
    assert S.quantize_value(F(-19, 8), "fixed", 1) == F(-5, 2)
    assert S.quantize_value(F(1, 3), "fixed", 3) == F(3, 8)
    assert S.significant_bits(F(19, 8)) == 5 and S.significant_bits(F(40)) == 3 and S.significant_bits(F(32)) == 1 and S.significant_bits(F(1, 3)) is None
    assert S.fraction_bits(F(19, 8)) == 3 and S.fraction_bits(F(40)) == 0


def test_handmade_network_minimal_bits_known_exactly():
    """w = 19/8: float-style, b = 1, 2 give 2 and b = 3, 4 give 5/2 (outputs 16, 32, 48 or
    20, 40, 60 instead of 19, 38, 57), so exactly b = 5 significant bits are needed; fixed
    point: b = 0 → 2, b = 1, 2 → 5/2, so b = 3 fractional bits. Rounding to the nearest label
    (19, 38, 57: midpoints 28.5 and 47.5) already works with w = 2 (16, 32, 48): b = 1 / b = 0."""
    model, ds = toy()
    r, cache = minimal(model, ds, "float", "exact")
    assert r["min_b"] == 5 and r["status"] == "found" and r["violations"] == []
    assert {b: S._ok(cache[b], "exact") for b in (1, 2, 3, 4, 5, 6, 7)} == {
        1: False, 2: False, 3: False, 4: False, 5: True, 6: True, 7: True}
    assert cache[4]["exact"]["failing"] == [0, 1, 2]
    assert minimal(model, ds, "fixed", "exact")[0]["min_b"] == 3
    assert minimal(model, ds, "float", "nearest")[0]["min_b"] == 1
    assert minimal(model, ds, "fixed", "nearest")[0]["min_b"] == 0
    # storage at the minimum: 1 sign + 5 significand + E (exponents 1 and 1: E = 1 + LEN(1) = 2)
    assert S.storage_bits(S.quantize_model(model, "float", 5), "float", 5) == {"per_weight": 8, "exponent_bits": 2}
    assert S.storage_bits(model, "fixed", 3)["per_weight"] == 1 + (19).bit_length()


def test_monotonicity_violation_detected_and_reported():
    """out = a + c with a = 3, c = 5, label 8. b = 1: 3 → 4 (tie, up), 5 → 4: 8, right;
    b = 2: 3 stays, 5 → 4 (tie to the even significand 10₂): 7, wrong; b ≥ 3: exact.
    The bisection's answer is b = 1, and the neighbour b = 2 contradicts monotonicity."""
    assert round_to_bits(3, 1) == 4 and round_to_bits(5, 2) == 4
    model = Model([affine([[3, 5]])], input_dim=2)
    ds = Dataset([((F(1), F(1)),)], [(F(8),)])
    r, cache = minimal(model, ds, "float", "exact")
    assert r["min_b"] == 1
    assert r["violations"] == [{"b": 2, "ok": False, "expected": True}]
    # without neighbours the violation is not seen: the check is what finds it
    r0, _ = minimal(model, ds, "float", "exact", neighbours=0)
    assert r0["violations"] == []


def test_violation_reaches_the_report(tmp_path):
    # a proof file whose network is the one above (out = 3x + 5y on (1, 1), label 8)
    path = tmp_path / "viol.py"
    path.write_text(TOY_PROOF.replace('model = Model([affine([[w]], relu=True), affine([[2]])], input_dim=1)',
                                      'model = Model([affine([[3, 5]])], input_dim=2)')
                    .replace('ds = Dataset([((F(x),),) for x in xs], [(2 * w * x,) for x in xs], "vectors", seed)',
                             'ds = Dataset([((F(1), F(1)),)], [(F(8),)], "vectors", seed)'))
    spec = S.SweepSpec(str(path), models=("float",))
    run = S.run_sweep(spec, str(tmp_path / "out"), quiet=True)
    (rec,) = run.records
    assert rec["result"]["criteria"]["exact"]["violations"] == [{"b": 2, "ok": False, "expected": True}]
    (row,) = rows(S.sweep_document(run.records))
    # (one label value: every output is "nearest" to it, so that criterion has no violation)
    assert row["violations"] == ["float/exact b=2 fails"]
    assert any(line.startswith("Monotonicity violations") and "float/exact b=2 fails" in line
               for line in findings([row]))


def test_non_dyadic_weights_report_no_exact_minimum():
    model, ds = toy(w=F(1, 3), xs=(3, 6))
    r, _ = minimal(model, ds, "float", "exact")
    assert r["min_b"] is None and r["status"] == "none up to 64"
    assert minimal(model, ds, "float", "nearest")[0]["min_b"] is not None


# ----------------------------------------------------------------------------- floating point


def test_format_parameters_match_ieee():
    import gmpy2

    for bits, name in ((16, "float16"), (32, "float32"), (64, "float64")):
        c = gmpy2.ieee(bits)
        f = S.FORMATS[name]
        assert (f.precision, f.emin, f.emax) == (c.precision, c.emin, c.emax)
    assert S.FORMATS["float16"].max_finite == 65504
    assert S.FORMATS["bfloat16"].max_finite == F(2) ** 127 * F(255, 128)
    assert S.FORMATS["float32"].max_finite == F(np.finfo(np.float32).max.item())


@pytest.mark.parametrize("value,fmt,expected", [
    (F(1) + F(1, 256), "bfloat16", F(1)),  # tie → even significand
    (F(1) + F(3, 256), "bfloat16", F(1) + F(1, 64)),  # tie → even (1.0000010 → 1.0000100)
    (F(65519), "float16", F(65504)),
    (F(65520), "float16", None),  # overflow
    (F(3, 2 ** 26), "float16", F(1, 2 ** 24)),  # subnormal rounding
    (F(1, 2 ** 25), "float16", F(0)),  # half the smallest subnormal: tie → 0
    (F(2) ** 128, "bfloat16", None),
    (F(2) ** 127 * F(511, 256), "bfloat16", None),  # above the overflow threshold 2^128(1 - 2^-9)
    (F(1, 3), "float64", F(1 / 3)),
])
def test_conversions_both_engines(value, fmt, expected):
    model = Model([affine([[1]])], input_dim=1)
    for eng in ("numpy", "mpfr"):
        r = S.float_forward(model, [((value,),)], fmt, eng)
        out = r.outputs[0]
        assert (out[0] if out is not None else None) == expected, (eng, fmt, value)


def test_float64_matches_python_doubles():
    """An independent reference: the same left-to-right order in Python floats."""
    W1 = [[F(1, 3), F(-2, 7)], [F(5, 11), F(1, 10)]]
    b1 = [F(1, 9), F(-1, 5)]
    W2 = [[F(3, 13), F(-7, 17)]]
    model = Model([Affine(W1, b1, True), Affine(W2)], input_dim=2)
    xs = [(F(2, 3), F(5, 7)), (F(-1, 3), F(9, 4)), (F(10, 3), F(1, 6))]
    fl = float
    want = []
    for x in xs:
        h = []
        for i in range(2):
            s = fl(W1[i][0]) * fl(x[0])
            s = s + fl(W1[i][1]) * fl(x[1])
            s = s + fl(b1[i])
            h.append(max(s, 0.0))
        o = fl(W2[0][0]) * h[0]
        o = o + fl(W2[0][1]) * h[1]
        want.append([F(o)])
    for eng in ("numpy", "mpfr"):
        assert S.float_forward(model, [(x,) for x in xs], "float64", eng).outputs == want


def _rand_q(rng, big=False):
    if big and rng.random() < 0.15:
        return F(rng.choice([-1, 1]) * rng.randrange(1, 50) * 2 ** rng.choice([14, 17, 40, 127, 130]))
    return F(rng.randrange(-40, 41), rng.choice([1, 2, 3, 7, 16, 1000]))


def _rand_mat(rng, r, c, big=False, zeros=0.2):
    return [[F(0) if rng.random() < zeros else _rand_q(rng, big) for _ in range(c)] for _ in range(r)]


def _random_model(rng):
    d = rng.randrange(1, 4)
    m = rng.randrange(2, 5)
    layers = [Affine(_rand_mat(rng, m, d, True), [_rand_q(rng) for _ in range(m)], True)]
    kind = rng.choice(["uniform", "hardmax"])
    heads = []
    for _ in range(rng.randrange(1, 3)):
        s = rng.randrange(1, 3)
        WQ = None if kind == "uniform" else (_rand_mat(rng, s, m) if rng.random() < 0.7 else [[0] * m] * s)
        WK = None if kind == "uniform" else _rand_mat(rng, s, m)
        heads.append(Head(_rand_mat(rng, 2, m), _rand_mat(rng, m, 2), WQ, WK))
    layers.append(Attention(heads, kind=kind, residual=rng.random() < 0.7, query=rng.choice(["all", "last"]),
                            keys=rng.choice(["all", "others"])))
    q = rng.randrange(1, 4)
    layers.append(FeedForward(_rand_mat(rng, q, m), [_rand_q(rng) for _ in range(q)], _rand_mat(rng, m, q),
                              [_rand_q(rng) for _ in range(m)], residual=rng.random() < 0.5))
    layers.append(Affine(_rand_mat(rng, 2, m, True)))
    readout = "all" if layers[1].query == "all" and rng.random() < 0.5 else "last"
    model = Model(layers, "vectors", d, readout)
    inputs = [tuple(tuple(_rand_q(rng) for _ in range(d)) for _ in range(rng.choice([2, 3, 3, 4])))
              for _ in range(rng.randrange(1, 6))]
    return model, inputs


@pytest.mark.parametrize("seed", range(12))
def test_numpy_engine_matches_mpfr_on_random_networks(seed):
    """Bit-identical results, overflow and NaN included, in all four formats."""
    rng = random.Random(seed)
    model, inputs = _random_model(rng)
    for fmt in S.NAMED_FORMATS:
        a = S.float_forward(model, inputs, fmt, "numpy")
        b = S.float_forward(model, inputs, fmt, "mpfr")
        assert a.outputs == b.outputs, fmt
        assert (a.first_nonfinite_layer, a.weights_nonfinite, a.weights_zeroed) == \
            (b.first_nonfinite_layer, b.weights_nonfinite, b.weights_zeroed), fmt


def test_random_networks_reach_overflow_and_nan():
    """The random networks above do exercise inf and NaN (else the comparison proves little)."""
    bad = {f: 0 for f in S.NAMED_FORMATS}
    for seed in range(12):
        model, inputs = _random_model(random.Random(seed))
        for f in S.NAMED_FORMATS:
            r = S.float_forward(model, inputs, f, "mpfr")
            bad[f] += r.first_nonfinite_layer is not None
    assert bad["float16"] >= 3 and bad["float32"] >= 1 and bad["float64"] < 12


def test_exact_results_when_the_format_is_wide_enough():
    """Small integer networks are exact in every format; a 200-bit significand reproduces a
    random network's exact outputs up to rounding far below its scale."""
    model = Model([Affine([[1, 2], [3, -1]], [1, 0], True), Affine([[2, -1]])], input_dim=2)
    inputs = [((F(1), F(2)),), ((F(-3), F(4)),)]
    exact = forward(model, inputs).outputs
    for fmt in S.NAMED_FORMATS:
        assert S.float_forward(model, inputs, fmt).outputs == exact


def test_overflow_inf_and_nan_through_zero_weights():
    """70000 overflows float16 to inf; the next layer's 0·inf is NaN (dense semantics), so the
    output is not finite although its weight is zero."""
    model = Model([Affine([[70000], [1]], None, True), Affine([[0, 1]])], input_dim=1)
    for eng in ("numpy", "mpfr"):
        r = S.float_forward(model, [((F(1),),)], "float16", eng)
        assert r.outputs == [None] and r.first_nonfinite_layer == 0 and r.weights_nonfinite == 1
        r32 = S.float_forward(model, [((F(1),),)], "float32", eng)
        assert r32.outputs == [[F(1)]] and r32.first_nonfinite_layer is None
    ds = Dataset([((F(1),),)], [(F(1),)])
    ev = S.evaluate_format(model, ds, S.Judge(model, ds), S.FORMATS["float16"])
    assert ev["exact"]["fail"] == 1 and ev["nonfinite_outputs"] == 1 and ev["weights_nonfinite"] == 1
    tiny = Model([affine([[F(1, 2 ** 30)]])], input_dim=1)
    assert S.float_forward(tiny, [((F(1),),)], "float16").weights_zeroed == 1


def test_softmax_uses_mpfr_and_equal_scores_are_exact():
    heads = [Head([[1, 0]], [[1], [0]], [[0, 0]], [[0, 0]])]  # all scores 0: weights exactly 1/2
    model = Model([Attention(heads, kind="softmax", residual=False, query="last")], "vectors", 2)
    inputs = [((F(2), F(0)), (F(4), F(1)))]
    with pytest.raises(S.SweepError):
        S.make_arith(S.FORMATS["float32"], model, "numpy")
    r = S.float_forward(model, inputs, "float32")
    assert r.engine == "mpfr" and r.outputs == [[F(3), F(0)]]
    ds = Dataset(inputs, [(F(3), F(0))])
    judge = S.Judge(model, ds, F(1, 1000))
    ev = S.evaluate_exact(model, ds, judge)  # balls: exact here, decided
    assert ev["exact"]["fail"] == 0 and ev["exact"]["undecided"] == 0


def test_tokens_model_with_embedding():
    E = [[F(1, 3), 1], [2, F(-1, 7)], [F(5, 2), 0]]
    P = [[0, 1], [1, 0], [F(1, 5), F(1, 5)]]
    model = Model([Embed(E, P), Attention([Head([[1, 1]], [[1], [1]])], kind="uniform"), Affine([[1, -1]])],
                  "tokens", 3, "last", "identity")
    inputs = [(0, 1, 2), (2, 2), (1,)]
    for fmt in S.NAMED_FORMATS:
        assert S.float_forward(model, inputs, fmt, "numpy").outputs == \
            S.float_forward(model, inputs, fmt, "mpfr").outputs


# ----------------------------------------------------------------------------- judge


def test_nearest_label_and_argmax_criteria():
    model = Model([affine([[1]])], input_dim=1)
    ds = Dataset([((F(0),),), ((F(1),),), ((F(3),),)], [(F(0),), (F(1),), (F(3),)])
    j = S.Judge(model, ds)
    assert j.nearest([F(1, 3)], 0) is True  # midpoint to 1 is 1/2
    assert j.nearest([F(1, 2)], 0) is False  # on the midpoint: not strictly closer
    assert j.nearest([F(-100)], 0) is True and j.nearest([F(100)], 2) is True
    assert j.nearest([F(19, 10)], 1) is True and j.nearest([F(2)], 1) is False
    assert j.exact([F(1)], 1) is True and j.exact([F(1) + F(1, 10 ** 9)], 1) is False
    assert j.exact(None, 1) is False and j.nearest(None, 1) is False
    am = Model([affine([[1], [2]])], input_dim=1, decode="argmax")
    dsa = Dataset([((F(1),),)], [1])
    ja = S.Judge(am, dsa)
    assert ja.exact([F(1), F(2)], 0) is True and ja.exact([F(2), F(2)], 0) is False  # a tie is not memorized


# ----------------------------------------------------------------------------- sweeps, resume, CLI


def _results(doc):
    return [(p["key"], json.dumps(p, sort_keys=True)) for p in doc["points"]]


def test_resumed_sweep_gives_identical_results(toy_proof, tmp_path):
    full = S.SweepSpec(toy_proof, params=[("k", [2, 3])], seeds=[0, 1])
    a = S.run_sweep(full, str(tmp_path / "a"), quiet=True)
    assert a.ran == 12 and a.skipped == 0 and not a.errors
    part = S.SweepSpec(toy_proof, params=[("k", [2])], seeds=[0, 1])
    b1 = S.run_sweep(part, str(tmp_path / "b"), quiet=True)
    assert b1.ran == 6
    # a killed run leaves a torn last line: it is dropped and the file repaired
    with open(tmp_path / "b" / S.POINTS_FILE, "a") as f:
        f.write('{"key": "torn')
    b2 = S.run_sweep(full, str(tmp_path / "b"), quiet=True)
    assert b2.ran == 6 and b2.skipped == 6
    b3 = S.run_sweep(full, str(tmp_path / "b"), quiet=True)
    assert b3.ran == 0 and b3.skipped == 12
    da = S.load_records(str(tmp_path / "a"))
    db = S.load_records(str(tmp_path / "b"))
    assert sorted(da) == sorted(db)
    doc_a = json.load(open(tmp_path / "a" / S.SWEEP_FILE))
    doc_b = json.load(open(tmp_path / "b" / S.SWEEP_FILE))
    assert _results(doc_a) == _results(doc_b)
    # and the numbers themselves: the toy's known minima for both seeds
    for r in doc_a["points"]:
        if r["point"]["task"] == "quant-float":
            assert r["result"]["criteria"]["exact"]["min_b"] == 5
    # a changed setting is a different point: the quantization points are not reused (the
    # floating-point points do not depend on --neighbours and are)
    other = S.plan(S.SweepSpec(toy_proof, params=[("k", [2, 3])], seeds=[0, 1], neighbours=1))
    assert not {p["key"] for p in other if p["task"] != "arith"} & set(da)
    assert {p["key"] for p in other if p["task"] == "arith"} <= set(da)


def test_two_workers_same_results(toy_proof, tmp_path):
    spec = S.SweepSpec(toy_proof, params=[("k", [2, 3, 4])], models=("float", "arith"))
    one = S.run_sweep(spec, str(tmp_path / "one"), quiet=True)
    two = S.run_sweep(spec, str(tmp_path / "two"), workers=2, quiet=True)
    assert two.ran == 6 and not two.errors
    assert _results(S.sweep_document(one.records)) == _results(S.sweep_document(two.records))
    # resume on Dask: a sweep stopped after part of its grid runs only the rest, same results
    part = S.SweepSpec(toy_proof, params=[("k", [3])], models=("float", "arith"))
    S.run_sweep(part, str(tmp_path / "resumed"), quiet=True)
    resumed = S.run_sweep(spec, str(tmp_path / "resumed"), workers=2, quiet=True)
    assert (resumed.ran, resumed.skipped) == (4, 2) and not resumed.errors
    assert _results(S.sweep_document(one.records)) == _results(S.sweep_document(resumed.records))


def test_plan_params_ranges_and_errors(toy_proof):
    assert S.parse_values("2:5,10^2,1e3,2^4,1/4,true") == [2, 3, 4, 5, 100, 1000, 16, "1/4", True]
    assert S.parse_values("0:10:5") == [0, 5, 10]
    with pytest.raises(S.SweepError):
        S.parse_values("1:x")
    with pytest.raises(S.SweepError):
        S.parse_param("N100")
    pts = S.plan(S.SweepSpec(toy_proof, params=[("k", [2, 3])], seeds=[0, 1], models=("float",)))
    assert [(p["params"]["k"], p["seed"]) for p in pts] == [(2, 0), (2, 1), (3, 0), (3, 1)]
    assert len({p["key"] for p in pts}) == 4
    with pytest.raises(S.SweepError):
        S.plan(S.SweepSpec(toy_proof, theorems=["nope"]))
    with pytest.raises(S.SweepError):
        S.plan(S.SweepSpec(toy_proof, formats=["float8"]))
    assert [p["instance"] for p in S.plan(S.SweepSpec(toy_proof, instances=["k2"], models=("float",)))] == ["k2"]


def test_vardi_minimum_certified_and_refuted(tmp_path):
    """The √N memorizer at N = 16 needs every one of its significant bits; the quantized network
    at the minimum is CERTIFIED by the independent checker and one bit less is REFUTED."""
    spec = S.SweepSpec(os.path.join(ROOT, "proofs", "vardi.py"), theorems=["vardi.c1"],
                       instances=["N4096-line-C16"], params=[("N", [16])], models=("float", "arith"), certify=True)
    run = S.run_sweep(spec, str(tmp_path / "v"), quiet=True)
    q, a = run.records
    m = q["model"]
    crit = q["result"]["criteria"]["exact"]
    assert crit["min_b"] == m["identity_b_float"] and crit["violations"] == []
    assert [c["verdict"] for c in crit["certificates"]] == ["CERTIFIED", "REFUTED"]
    assert m["max_bits"] >= crit["min_b"]
    bound = min(int(c["bound"]) for c in q["claims"] if c["quantity"] == "max_bits" and c["op"] == "<=")
    assert crit["min_b"] < bound
    assert a["result"]["formats"]["float64"]["exact"]["fail"] == 0  # float64 memorizes N = 16
    assert a["result"]["formats"]["float16"]["first_nonfinite_layer"] is not None  # weights above 65504


def test_cli_sweep_report_and_tables(toy_proof, tmp_path, capsys):
    out = str(tmp_path / "sw")
    assert main(["sweep", toy_proof, "--param", "k=2,3", "--out", out, "--quiet", "--seeds", "0,1"]) == 0
    text = capsys.readouterr().out
    assert "| toy.scale |" in text and "min float b" in text
    for f in ("points.jsonl", "sweep.json", "sweep.csv", "sweep.md", "sweep.tex", "commands.txt"):
        assert os.path.exists(os.path.join(out, f)), f
    assert "--param k=2,3" in open(os.path.join(out, "commands.txt")).read()
    doc = json.load(open(os.path.join(out, "sweep.json")))
    assert doc["seeds"] == [0, 1] and doc["versions"][0]["exactmem"]
    rs = rows(doc)
    assert len(rs) == 4 and {r["float_exact"] for r in rs} == {5} and {r["fixed_exact"] for r in rs} == {3}
    assert "\\begin{tabular}" in latex_table(rs) and "toy.scale" in markdown_table(rs)
    assert csv_text(rs).splitlines()[0].startswith("proof,theorem,instance")
    md = str(tmp_path / "doc" / "precision.md")
    assert main(["report", out, "--out", md, "--no-plots"]) == 0
    page = open(md).read()
    assert "## toy.scale" in page and "python -m exactmem sweep" in page and "## Method" in page
    # bad input: exit 3, one message
    assert main(["sweep", toy_proof, "--param", "k=2", "--formats", "float8", "--out", out, "--quiet"]) == 3
    assert main(["sweep", toy_proof, "--param", "k=x", "--out", out, "--quiet"]) == 3  # build fails: TypeError
    assert "error" in capsys.readouterr().err


def test_report_plots(toy_proof, tmp_path):
    pytest.importorskip("matplotlib")
    out = str(tmp_path / "sw")
    S.run_sweep(S.SweepSpec(toy_proof, params=[("k", [2, 3, 4])]), out, quiet=True)
    res = write_report([out], str(tmp_path / "p.md"), img_dir=str(tmp_path / "img"))
    names = sorted(os.path.basename(p) for p in res["plots"])
    assert names == ["precision_toy_scale_bits.png", "precision_toy_scale_formats.png",
                     "precision_toy_scale_total.png"]
    for p in res["plots"]:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert "![precision_toy_scale_bits.png](img/precision_toy_scale_bits.png)" in open(tmp_path / "p.md").read()


def test_format_reach():
    rs = [{"N": n, "fmt_float64_fail": f} for n, f in ((2, 0), (3, 0), (5, 1), (8, 0))]
    assert format_reach(rs, "float64") == {"largest": 3, "first_fail": 5, "later_ok": [8], "grid": [2, 3, 5, 8]}


def test_sweep_file_is_deterministic(toy_proof, tmp_path):
    spec = S.SweepSpec(toy_proof, params=[("k", [3])], models=("fixed",))
    S.run_sweep(spec, str(tmp_path / "x"), quiet=True)
    S.run_sweep(spec, str(tmp_path / "y"), quiet=True)
    a = json.load(open(tmp_path / "x" / S.SWEEP_FILE))
    b = json.load(open(tmp_path / "y" / S.SWEEP_FILE))
    a.pop("seconds"), b.pop("seconds")
    assert a == b
    assert textwrap.dedent(open(tmp_path / "x" / "sweep.md").read()) == open(tmp_path / "y" / "sweep.md").read()
