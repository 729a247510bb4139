"""verify's fast path (issue 39, item 1: the engine in the producer; exactmem/verify/fastpath.py).

The fast engine's verdicts equal the arb ladder's on a GPT-2-shaped graph (passes and fails), its code
lengths overlap the arb enclosures and are tight; `decide` on hand-made bounds (ties fail, overlaps stay
undecided); `verify(engine="auto")` writes the same verdicts as ``engine="arb"``, the kernel certifies
both certificates and the code-length claims; rows the engine leaves undecided go to the arb ladder;
and a producer whose fast path lied is caught: the kernel REFUTES its certificate at that row.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exactmem.kernel.checker import check_certificate
from exactmem.verify import fastpath
from exactmem.verify.evaluate import Program, judge

sys.path.insert(0, str(Path(__file__).parent))
from test_fastgraph import _gpt2_doc  # noqa: E402

onnx = pytest.importorskip("onnx")
from test_codelength import lookup_model  # noqa: E402


def test_decide_from_bounds():
    lo = np.array([[3.0, 1.0, 2.0]])
    assert fastpath.decide(lo, lo + 0.5, np.array([0])) == "pass"  # 3 > 2.5 and 3 > 1.5
    assert fastpath.decide(lo, lo + 1.0, np.array([0])) == "unknown"  # 3 > 3 is not sure: [2, 3] reaches 3
    assert fastpath.decide(lo, lo + 0.5, np.array([1])) == "fail"  # 3 >= 1.5
    tie = np.array([[2.0, 2.0]])
    assert fastpath.decide(tie, tie, np.array([0])) == "fail"  # a tie is no argmax (the kernel's rule)
    two = np.array([[3.0, 1.0], [1.0, 3.0]])
    assert fastpath.decide(two, two, np.array([0, 1])) == "pass"
    assert fastpath.decide(two, two, np.array([0, 0])) == "fail"  # one position fails: the example fails


def _gpt2_items():
    d = _gpt2_doc()
    model = d["model"]
    xs, labels = d["dataset"]["inputs"], d["dataset"]["labels"]
    return model, xs, labels


def test_fast_verdicts_equal_the_arb_ladder_on_a_gpt2_graph():
    model, xs, labels = _gpt2_items()
    cert, plan = fastpath.engine_for(model, xs[0], labels[0])
    stats = {}
    out, left = fastpath.fast_results(cert, plan, [(i, x, y) for i, (x, y) in enumerate(zip(xs, labels))], "last",
                                      True, stats=stats)
    assert not left and len(out) == len(xs), stats
    prog, backends = Program(model), {}
    from exactmem.verify.codelength import judge_and_measure

    verdicts = []
    for i, (x, y) in enumerate(zip(xs, labels)):
        ref = judge_and_measure(prog, np.array([x]), y, [64, 128, 256], backends)
        assert out[i][0] == ref[0], (i, out[i], ref)
        (lo_f, hi_f, k_f), (lo_a, hi_a, _) = out[i][3], ref[3]
        assert k_f == 1 and lo_f <= hi_a and lo_a <= hi_f  # both enclose the same real code length
        assert hi_f - lo_f < Fraction(1, 10 ** 4)  # and the fast one is tight (float64 here: ~4e-6 bits)
        verdicts.append(ref[0])
    assert "pass" in verdicts and "fail" in verdicts  # the example has both kinds
    assert stats.get("float64", 0) + stats.get("double-float", 0) == len(xs)


def test_a_loose_code_length_goes_to_the_next_pass(monkeypatch):
    """With ``measure``, a pass before the last keeps an example only when its code length is within CODE_WIDTH
    bits per prediction: with the width 0 every example goes on to the last (double-float) pass, whose
    enclosures are narrower; without ``measure`` the width plays no part."""
    model, xs, labels = _gpt2_items()
    items = [(i, x, y) for i, (x, y) in enumerate(zip(xs, labels))]
    runs = []
    for width, measure in ((fastpath.CODE_WIDTH, True), (Fraction(0), True), (Fraction(0), False)):
        monkeypatch.setattr(fastpath, "CODE_WIDTH", width)
        cert, plan = fastpath.engine_for(model, xs[0], labels[0])
        stats = {}
        out, left = fastpath.fast_results(cert, plan, items, "last", measure, stats=stats)
        assert not left and len(out) == len(xs)
        runs.append((out, stats))
    (loose, s1), (tight, s2), (_, s3) = runs
    assert s1.get("float64") == len(xs) and s3.get("float64") == len(xs)  # float64 decides (and is tight enough)
    assert s2.get("double-float") == len(xs) and not s2.get("float64")
    for i in range(len(xs)):
        assert loose[i][0] == tight[i][0]
        (a, b, _), (c, d, _) = loose[i][3], tight[i][3]
        assert d - c < b - a and a <= d and c <= b  # narrower, and both enclose the same code length


def test_a_code_length_that_is_not_finite_leaves_the_example_to_the_next_pass():
    """Scores enclosed so widely that the enclosure of Σ exp reaches 0 (its log −∞): no code length (None),
    not an exception (a Morris run stopped on one); finite, narrow bounds still give one."""
    labels = np.array([1])
    for w in (1e3, 1e20, 1e300):
        assert fastpath.code_length(np.array([[-w, 0.0, 1.0]]), np.array([[w, 0.5, 2.0]]), labels) is None
    lo, hi, k = fastpath.code_length(np.array([[0.0, 3.0, 1.0]]), np.array([[0.0, 3.0, 1.0]]), labels)
    assert k == 1 and lo <= hi < lo + Fraction(1, 10 ** 6) and 0 < lo < 1


def _lookup_data(N=12, seed=0):
    from test_codelength import V, n

    rng = np.random.default_rng(seed)
    X = rng.integers(0, V, (N, n))
    return X, rng.integers(0, V, (N, n))


def test_verify_auto_equals_arb_and_the_kernel_certifies_both(tmp_path):
    from exactmem.verify.run import verify

    mp, W = lookup_model(scale=4.0)
    X, _ = _lookup_data()
    y = np.argmax(W, axis=1)[X]  # every next-token label is the table's argmax: passes
    y[3, 2] = (y[3, 2] + 1) % W.shape[1]  # one position wrong: example 3 fails
    fast = verify(mp, X, y, position="all", out=str(tmp_path / "f"), measure="bits")
    arb = verify(mp, X, y, position="all", out=str(tmp_path / "a"), measure="bits", engine="arb")
    assert fast.verdicts == arb.verdicts and fast.verdicts[3] == "fail" and fast.verdicts.count("pass") == 11
    assert fast.by_engine["arb ladder"] == 0 and arb.by_engine == {"arb ladder": 12}
    cf, ca = (Fraction(r.memorized["codelength_bits"]) for r in (fast, arb))
    assert abs(cf - ca) < Fraction(1, 10 ** 6), (cf, ca)  # the same total, to a hair
    for r in (fast, arb):
        v = check_certificate(json.load(open(r.certificate)))
        assert v.status == "CERTIFIED", v.message


def test_rows_the_engine_leaves_undecided_go_to_the_arb_ladder(monkeypatch):
    from exactmem.verify.run import verify

    mp, W = lookup_model(scale=4.0)
    X, y = _lookup_data(N=6, seed=2)
    ref = verify(mp, X, y, position="all", engine="arb")
    monkeypatch.setattr(fastpath, "decide", lambda lo, hi, labels: "unknown")
    r = verify(mp, X, y, position="all")
    assert r.by_engine["arb ladder"] == 6 and r.verdicts == ref.verdicts


def test_a_lying_fast_path_is_refuted_by_the_kernel(monkeypatch, tmp_path):
    from exactmem.verify.run import verify

    mp, W = lookup_model(scale=4.0)
    X, _ = _lookup_data(N=5)
    y = np.argmax(W, axis=1)[X]
    honest = fastpath.decide
    calls = []

    def lying(lo, hi, labels):
        calls.append(1)
        v = honest(lo, hi, labels)
        return "fail" if len(calls) == 3 and v == "pass" else v  # the third example: a pass claimed as fail

    monkeypatch.setattr(fastpath, "decide", lying)
    r = verify(mp, X, y, position="all", out=str(tmp_path))
    assert r.verdicts[2] == "fail"
    v = check_certificate(json.load(open(r.certificate)))
    assert v.status == "REFUTED" and v.witness["example"] == 2, v.message


def test_two_workers_give_the_single_process_results():
    model, xs, labels = _gpt2_items()
    cert, plan = fastpath.engine_for(model, xs[0], labels[0])
    items = [(i, x, y) for i, (x, y) in enumerate(zip(xs, labels))]
    one, left1 = fastpath.fast_results(cert, plan, items, "last", True)
    st = {}
    two, left2 = fastpath.fast_results_parallel(cert, plan, items, "last", True, 2, stats=st)
    assert one == two and left1 == left2 == [] and st.get("float64", 0) + st.get("double-float", 0) == len(xs)


@pytest.mark.slow  # a Dask cluster: with -m slow (CI runs it)
def test_verify_on_a_dask_scheduler_equals_one_process(tmp_path):
    """``verify --scheduler``: the fast engine's batches on a Dask cluster's workers give the verdicts and
    code lengths of one process, and the kernel certifies the certificate."""
    pytest.importorskip("distributed")
    from exactmem.distributed.cluster import dask_client
    from exactmem.verify.run import verify

    mp, W = lookup_model(scale=4.0)
    X, y = _lookup_data(N=40, seed=3)
    y[::2] = np.argmax(W, axis=1)[X[::2]]  # half the examples pass, half fail
    one = verify(mp, X, y, position="all", measure="bits")
    with dask_client(workers=2) as c:
        addr = c.scheduler.address
        dist = verify(mp, X, y, position="all", measure="bits", scheduler=addr, out=str(tmp_path))
    assert dist.verdicts == one.verdicts and dist.by_engine == one.by_engine and dist.by_engine["arb ladder"] == 0
    assert dist.memorized["codelength_bits"] == one.memorized["codelength_bits"]
    assert "pass" in dist.verdicts and "fail" in dist.verdicts
    assert check_certificate(json.load(open(dist.certificate))).status == "CERTIFIED"


def test_verify_with_an_unreachable_scheduler_is_one_line(monkeypatch, tmp_path):
    pytest.importorskip("distributed")
    import subprocess

    mp, W = lookup_model(scale=4.0)
    X, y = _lookup_data(N=3)
    onnx.save(mp, str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "d.npz", inputs=X, labels=y)
    env = {**__import__("os").environ, "EXACTMEM_SCHEDULER_TIMEOUT": "2"}
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", str(tmp_path / "m.onnx"), "--data",
                        str(tmp_path / "d.npz"), "--position", "all", "--scheduler", "tcp://127.0.0.1:9", "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=300, env=env,
                       cwd=str(Path(__file__).resolve().parents[1]))
    assert r.returncode == 3 and r.stderr.startswith("exactmem: error: cannot reach the Dask scheduler"), r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
