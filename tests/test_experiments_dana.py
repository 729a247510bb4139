"""dana-fig1 (Dana et al. Exps. 1, 2, 6): tiny trained AoTs, certified example by example."""

import json
import os

import pytest

torch = pytest.importorskip("torch")

from exactmem.experiments import dana_fig1  # noqa: E402
from exactmem.experiments.certify_trained import verify_examples  # noqa: E402
from exactmem.experiments.dana_train import (TrainConfig, all_bigrams, exact_model, export_module,  # noqa: E402
                                             float_logits, train_aot)

TINY = dict(N=6, d=2, H=3, dh=2, n_batches=8, batch=64, epochs=12, lr0=0.05, lr1=0.01)


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(1)
    return train_aot(TrainConfig(**TINY, seeds=(0, 1)))


def _verify(res, r=0, path=None):
    """Replica r through exactmem verify (its export twin), every verdict re-derived by the kernel."""
    return verify_examples(export_module(res.module, r), all_bigrams(res.config.N), res.replicas[r].table, path=path)


def test_float_forward_agrees_with_exact_forward(trained):
    """The stacked torch module and the exact exactmem Model compute the same function (eq. (2))."""
    from exactmem.model.forward import forward
    from exactmem.arith.linalg import mid_fraction

    import random

    rng = random.Random(3)
    seqs = [(rng.randrange(6), rng.randrange(6)) for _ in range(12)]
    for r in (0, 1):
        exact = forward(exact_model(trained.module, r), seqs).outputs
        fl = float_logits(trained.module, seqs, r)
        for e, f in zip(exact, fl):
            for x, y in zip(e, f):
                xv = float(mid_fraction(x)) if not isinstance(x, (int, float)) and hasattr(x, "mid") else float(x)
                assert abs(xv - float(y)) <= 1e-4 * (1 + abs(xv))  # float32 rounding only (a test, not a verdict)


def test_replicas_are_independent_runs():
    """Replica r of a side-by-side run is the run of seed r alone (Adam is elementwise)."""
    torch.set_num_threads(1)
    cfg = dict(TINY, epochs=3)
    both = train_aot(TrainConfig(**cfg, seeds=(0, 1)))
    one = train_aot(TrainConfig(**cfg, seeds=(1,)))
    assert both.replicas[1].table == one.replicas[0].table
    assert torch.allclose(both.module.WU[1], one.module.WU[0], atol=1e-5)


def test_export_twin_is_the_replica(trained):
    """export_module(module, r) computes replica r's function (float32 rounding order only)."""
    tok = torch.tensor(all_bigrams(6))
    for r in (0, 1):
        with torch.no_grad():
            a = export_module(trained.module, r)(tok).numpy()
        assert abs(a - float_logits(trained.module, all_bigrams(6), r)).max() <= 1e-5


def test_verify_agrees_with_the_exact_model(trained):
    """The ONNX door and the exact exactmem Model of the same weights give the same verdict on
    every bigram (the exact model's argmax in Arb balls: the label, another token, or undecided)."""
    from exactmem.model.forward import forward

    for r in (0, 1):
        v = _verify(trained, r)
        out = forward(exact_model(trained.module, r), all_bigrams(6), prec=128).outputs
        for o, g, verdict in zip(out, trained.replicas[r].table, v.verdicts):
            win = [k for k, x in enumerate(o) if all(x > z for j, z in enumerate(o) if j != k)]
            assert win, "undecided at 128 bits"
            assert verdict == ("certified" if win[0] == g else "refuted")


def test_certified_at_most_float_correct_and_checker_rechecks(trained, tmp_path):
    from exactmem.kernel.checker import check_certificate
    from exactmem.kernel.schema import load_certificate

    for r, rep in enumerate(trained.replicas):
        path = str(tmp_path / f"cert{r}.json")
        v = _verify(trained, r, path=path)
        assert v.certified + v.refuted + v.unknown == 36
        assert v.counts["n_pass"] == v.certified and v.counts["n_examples"] == 36
        assert v.certified > 0
        # certified ≤ float-correct need not hold in general (float32 may misrank a tiny exact margin
        # the other way); on these networks every certified example is also float-correct:
        assert all(rep.float_correct[i] for i in v.certified_indices)
        assert v.certified <= sum(rep.float_correct)
        verdict = check_certificate(load_certificate(path))
        assert verdict.status == "CERTIFIED"


def test_corrupted_weight_lowers_certified_count(trained):
    base = _verify(trained, 0)
    rep = trained.replicas[0]
    label = max(set(rep.table[i] for i in base.certified_indices),
                key=lambda g: sum(rep.table[i] == g for i in base.certified_indices))
    with torch.no_grad():
        saved = trained.module.WU[0, label].clone()
        trained.module.WU[0, label] = -10 * saved  # the unembedding row of the most memorized label
        try:
            bad = _verify(trained, 0)
        finally:
            trained.module.WU[0, label] = saved
    assert bad.certified < base.certified


def test_bounds_match_the_paper():
    b = dana_fig1.bounds(10, 2, 5, 20)
    assert b["capacity"] == 102 and b["proof_rank_bound"] == 42
    assert b["cor2_floor"] == 1.0  # Corollary 2 at Exp. 6's App. B text (capped at T0 = 100)
    assert abs(b["proof_floor"] - 239 / 500) < 1e-12  # docs/errata.md, Dana item 1
    assert dana_fig1.bounds(50, 10, 10, 31)["mahdavi_capacity"] == 280


def test_experiment_writes_json_csv_png(tmp_path, monkeypatch):
    from exactmem.experiments.base import RunConfig, run_experiment

    tiny = {"exp1": dict(N=5, d=2, dh=2, H=[1, 2], seeds=1, certify_seeds=1),
            "exp2": dict(N=5, d=2, H=2, dh=[1, 2], seeds=1, certify_seeds=1),
            "exp6": dict(N=4, d=2, dh=[2, 5], H=[1, 2], seeds=2, certify_seeds=1),
            "lr_text": dict(N=5, d=2, dh=2, H=1), "epochs": 2}
    for k, v in tiny.items():
        monkeypatch.setitem(dana_fig1.QUICK, k, v)
    rec = run_experiment("dana-fig1", RunConfig(quick=True, out=str(tmp_path)))
    for f in ("dana-fig1.json", "dana-fig1.csv", "dana-fig1-fig1.png", "dana-fig1-fig4.png"):
        assert os.path.getsize(tmp_path / f) > 0
    doc = json.loads((tmp_path / "dana-fig1.json").read_text())
    assert doc["summary"]["networks_trained"] == len(rec.rows) == 2 + 2 + 8 + 1
    for row in rec.rows:
        if "certified" in row:
            assert row["certified"] + row["refuted"] + row["unknown"] == row["T0"]
