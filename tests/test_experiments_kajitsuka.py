"""Kajitsuka & Sato App. H experiments (``kajitsuka-fig3``, ``kajitsuka-fig1``) on tiny sizes:
training, the float/exact agreement, a corrupted weight, the certificate re-check and the
written record (JSON, CSV, PNG)."""

import json
import os
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")

from exactmem.experiments import kajitsuka_train as K  # noqa: E402
from exactmem.experiments.base import RunConfig, run_experiment  # noqa: E402
from exactmem.experiments.certify_trained import verify_examples  # noqa: E402


@pytest.fixture(scope="module")
def trained():
    data = K.corpus_examples(60, seed=0)
    r = K.train(data, blocks=1, lr=3e-2, warmup=20, epochs=300, seed=0)
    return data, r


def test_data_nested_consistent_and_readout_last():
    a, b = K.corpus_examples(40, seed=3), K.corpus_examples(70, seed=3)
    assert b.tokens[:40] == a.tokens and b.labels[:40] == a.labels  # nested datasets (Fig. 3 search)
    keys = {(tuple(sorted(s)), s[-1]) for s in b.tokens}
    assert len(keys) == b.N  # distinguishable by a permutation-equivariant model: consistent labels
    assert set(b.labels) <= {0, 1, 2} and all(len(s) == K.N_LEN for s in b.tokens)
    assert K.corpus_examples(40, seed=3).tokens == a.tokens  # reproducible


def test_model_is_eq165_and_torch_agrees_with_exact():
    m = K.build_model(2, seed=1, vocab=30)
    kinds = [type(l).__name__ for l in m.layers]
    assert kinds == ["Embed", "FeedForward", "FeedForward", "Attention", "FeedForward", "FeedForward", "Affine"]
    assert m.layers[3].kind == "uniform" and all(l.residual for l in m.layers[1:6])
    assert m.layers[1].q == 4 * K.M_DIM and m.layers[0].m_out == K.M_DIM
    from exactmem.api import dataset
    from exactmem.export import to_torch
    from exactmem.model.forward import forward

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 30, (25, K.N_LEN), generator=g)
    with torch.no_grad():
        fl = to_torch(m)(ids).double()
    ex = forward(m, dataset(ids.tolist(), [0] * 25, input_type="tokens").inputs).outputs
    exf = torch.tensor([[float(x) for x in o] for o in ex], dtype=torch.float64)
    assert torch.allclose(fl, exf, atol=1e-5)
    # the fixed-vector variant (E_in on d-dim vectors) agrees too
    mv = K.build_model(1, seed=1)
    X = torch.randn(10, K.N_LEN, K.D_TOK, generator=g)
    with torch.no_grad():
        flv = to_torch(mv)(X).double()
    inputs = [[tuple(Fraction(float(x)) for x in t) for t in s] for s in X.tolist()]
    exv = forward(mv, inputs).outputs
    assert torch.allclose(flv, torch.tensor([[float(x) for x in o] for o in exv], dtype=torch.float64), atol=1e-5)
    assert K.n_params(2, d=30) == sum(p.numel() for p in to_torch(m).parameters())


def test_export_twin_is_the_trained_function(trained):
    data, r = trained
    ids = torch.tensor(data.ids())
    with torch.no_grad():
        assert torch.allclose(K.export_module(r.module)(ids), r.module(ids), atol=1e-5)
    mv = K.build_model(2, seed=1)  # the fixed-vector variant (E_in on d-dim vectors) too
    from exactmem.export import to_torch

    X = torch.randn(7, K.N_LEN, K.D_TOK, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(K.export_module(to_torch(mv))(X), to_torch(mv)(X), atol=1e-5)
    with pytest.raises(ValueError, match="eq. \\(165\\)"):
        K.export_module(_NotEq165())


class _NotEq165:
    spec = {"layers": [{"type": "affine", "relu": False, "tensors": {"W": [2, 2]}}], "readout": "last",
            "input_type": "vectors"}


def test_trained_certified_not_above_float_correct(trained):
    data, r = trained
    v = K.certify(r, data)
    assert v.unknown == 0  # uniform attention and ReLU: exact verdicts
    assert v.certified + v.refuted == data.N
    # exact and float32 argmax can differ only on near-ties; count the float margins below 1e-4
    with torch.no_grad():
        logits = r.module(torch.tensor(data.ids()))
    top2 = logits.topk(2, dim=-1).values
    near = int(((top2[:, 0] - top2[:, 1]) < 1e-4).sum())
    assert v.certified <= sum(r.float_correct) + near
    assert v.certified > data.N // 2  # training did memorize most of the 60 examples


def test_corrupted_weight_lowers_certified_count(trained):
    data, r = trained
    v = K.certify(r, data)
    assert v.certified > 0
    import copy

    bad = copy.deepcopy(r.module)
    with torch.no_grad():
        W = bad.layers[-1].W  # E_out: swap the rows of classes 0 and 1
        W[[0, 1]] = W[[1, 0]].clone()
    v2 = verify_examples(K.export_module(bad), data.ids(), data.labels)
    assert v2.certified < v.certified


def test_certificate_rechecks(trained, tmp_path):
    from exactmem.cli.app import main

    data, r = trained
    path = tmp_path / "cert.json"
    v = K.certify(r, data, path=str(path))
    assert v.checker_status == "CERTIFIED" and path.exists()
    assert main(["check", str(path)]) == 0
    # the exact exactmem Model of the same weights (Fractions: uniform attention and ReLU are exact)
    # has the same verdict on every example as the ONNX door
    from exactmem.model.forward import forward

    out = forward(r.model, data.dataset(onehot=True).inputs).outputs
    for o, y, verdict in zip(out, data.labels, v.verdicts):
        strict = [k for k, x in enumerate(o) if all(x > z for j, z in enumerate(o) if j != k)]
        assert verdict == ("certified" if strict == [y] else "refuted")


def _tiny(monkeypatch, module, settings):
    monkeypatch.setattr(module, "settings", lambda config: settings)


def test_fig3_record_written(monkeypatch, tmp_path):
    pytest.importorskip("optuna")
    from exactmem.experiments import kajitsuka_fig3 as F3

    _tiny(monkeypatch, F3, {"seeds": [0, 1], "trials": 2, "epochs": 60, "construction": True,
                            "budget_s": 600, "budget_cell_s": 60,
                            "maps": {"table": {"Ns": [30], "grid": [1, 2]}, "fixed": {"Ns": [20], "grid": [1]}}})
    rec = run_experiment("kajitsuka-fig3", RunConfig(out=str(tmp_path)))
    for f in ("kajitsuka-fig3.json", "kajitsuka-fig3.csv", "kajitsuka-fig3-blocks.png"):
        assert os.path.getsize(tmp_path / f) > 0
    js = json.loads((tmp_path / "kajitsuka-fig3.json").read_text())
    table = js["summary"]["table"]
    assert [e["N"] for e in table["table"]] == [30] and [e["N"] for e in table["fixed"]] == [20]
    for e in table["table"] + table["fixed"]:  # one value per seed, for each rule
        assert len(e["float"]["per_seed"]) == len(e["certified"]["per_seed"]) == 2
    assert all(e["construction_seed0"]["params"] > 0 for e in table["table"])
    assert table["table"][0]["paper_recovered_from_figure"] is None and js["summary"]["pilots"]["runs"]
    assert {r["map"] for r in rec.rows} == {"table", "fixed"} and {r["seed"] for r in rec.rows} == {0, 1}
    for row in rec.rows:  # every judged network: verdict counts add up, and float ⊇ certified on counts
        if row.get("certified") is not None:
            assert row["certified"] + row["refuted"] + row["unknown"] == row["N"]
        assert row["state"] in ("complete", "pruned") and row["trial"] < 2
    text = F3.page_tables(js)  # the docs page's tables render from any record
    assert "| 30 |" in text and "| 20 |" in text


def test_fig3_without_optuna_is_one_line_error_exit_3(monkeypatch, capsys):
    import builtins

    from exactmem.cli.app import main

    real = builtins.__import__

    def no_optuna(name, *a, **k):
        if name == "optuna" or name.startswith("optuna."):
            raise ImportError("No module named 'optuna'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_optuna)
    assert main(["experiment", "kajitsuka-fig3", "--quick", "--out", "/nonexistent/never-written"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("exactmem: error:") and "experiments" in err[0]


def test_power_fit_with_standard_error():
    b, se, n = K.fit_power_se([100, 200, 400, 800], [1, 2, 4, 8])
    assert abs(b - 1) < 1e-9 and se < 1e-6 and n == 4
    assert K.fit_power_se([100, 200], [1, 2]) is None


def test_fig1_record_written(monkeypatch, tmp_path):
    from exactmem.experiments import kajitsuka_fig1 as F1

    _tiny(monkeypatch, F1, {"N": 40, "blocks": [1, 2], "trials": 1, "epochs": 60})
    run_experiment("kajitsuka-fig1", RunConfig(out=str(tmp_path)))
    js = json.loads((tmp_path / "kajitsuka-fig1.json").read_text())
    assert [f["blocks"] for f in js["summary"]["final"]] == [1, 2]
    assert os.path.getsize(tmp_path / "kajitsuka-fig1-curves.png") > 0
    assert (tmp_path / "kajitsuka-fig1.csv").read_text().startswith("blocks,")


def test_construction_onehot_differs_only_in_E_in():
    data = K.corpus_examples(8, seed=0)
    a, b = K.construction(data), K.construction(data, onehot=True)
    assert b["d"] == len(data.vectors) and a["params_onehot"] == b["params"]
    assert a["depth"] == b["depth"]


def test_fig3_page_shows_the_committed_json():
    """docs/experiments/kajitsuka-fig3.md embeds the tables generated from the committed JSON, so the
    page cannot disagree with the data."""
    from pathlib import Path

    from exactmem.experiments import kajitsuka_fig3 as F3

    root = Path(__file__).resolve().parents[1]
    js = json.loads((root / "docs/img/experiments/kajitsuka-fig3.json").read_text())
    page = (root / "docs/experiments/kajitsuka-fig3.md").read_text()
    assert F3.page_block(js) in page
    assert "recovered from the figure" in page
