"""The experiments' trained networks go through ``exactmem verify`` (issue 23, item 4(d)).

The smallest configuration of ``dana-fig1`` (a trained attention-only Transformer on 36 bigrams):
its export twin is exported by ``torch.onnx.export(..., dynamo=True)`` inside ``exactmem.verify``,
every example gets a claimed verdict, and the kernel (``check_certificate``) re-derives all of
them — CERTIFIED, with the counts the experiment reports. A planted wrong claimed verdict (a
``pass`` claimed ``fail``, a ``fail`` claimed ``pass``, counts adjusted, hash recomputed) and a
flipped label are REFUTED, naming the example.
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

import exactmem  # noqa: E402
from exactmem.kernel.checker import check_certificate  # noqa: E402
from exactmem.kernel.schema import canonical_hash, load_certificate  # noqa: E402
from exactmem.experiments import dana_fig1  # noqa: E402
from exactmem.experiments.certify_trained import verify_examples  # noqa: E402
from exactmem.experiments.dana_train import TrainConfig, all_bigrams, export_module, train_aot  # noqa: E402

TINY = dict(N=6, d=2, H=3, dh=2, n_batches=8, batch=64, epochs=12, lr0=0.05, lr1=0.01)


@pytest.fixture(scope="module")
def run():
    torch.set_num_threads(1)
    trained = train_aot(TrainConfig(**TINY, seeds=(0,)))
    X = np.array(all_bigrams(6), dtype=np.int64)
    y = np.array(trained.replicas[0].table, dtype=np.int64)
    res = exactmem.verify(export_module(trained.module, 0), X, y, float_count=False)
    return trained, X, y, res


def _claims(doc):
    return {c["quantity"]: int(c["bound"]) for c in doc["claims"]}


def _replant(doc, outputs, claims):
    bad = copy.deepcopy(doc)
    bad["outputs"] = outputs
    for c in bad["claims"]:
        if c["quantity"] in claims:
            c["bound"] = str(claims[c["quantity"]])
    bad.pop("hash")
    bad["hash"] = canonical_hash(bad)
    return bad


def test_twin_is_the_trained_function(run):
    trained, X, _, _ = run
    with torch.no_grad():
        a = export_module(trained.module, 0)(torch.from_numpy(X))
        b = trained.module(torch.from_numpy(X))
    assert a.shape == b.shape == (36, 6)
    assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)  # float32 rounding order only


def test_experiment_network_certified_by_the_kernel(run, tmp_path):
    trained, X, y, res = run
    assert res.n_distinct == res.n_rows == 36
    assert res.certified + res.refuted + res.unknown == 36 and res.certified > 0 and res.refuted > 0
    doc = res.doc
    assert doc["model"]["graph"]["nodes"] and doc["outputs"] == res.verdicts
    assert set(doc["outputs"]) <= {"pass", "fail", "unknown"} and "fail" in doc["outputs"]  # REFUTED ones too
    v = check_certificate(doc)
    assert v.status == "CERTIFIED", v.message
    claims = _claims(doc)
    assert claims["n_pass"] == res.certified and claims["n_fail"] == res.refuted and claims["n_examples"] == 36
    # the experiment's own route (written certificate, re-read and re-checked) reports the same counts
    ev = dana_fig1.certify_replica(trained, 0, 1, str(tmp_path), "tiny")[0]
    assert (ev.certified, ev.refuted, ev.unknown) == (res.certified, res.refuted, res.unknown)
    assert ev.checker_status == "CERTIFIED" and ev.counts["n_pass"] == res.certified
    assert [{"certified": "pass", "refuted": "fail", "unknown": "unknown"}[x] for x in ev.verdicts] == res.verdicts
    assert check_certificate(load_certificate(ev.certificate)).status == "CERTIFIED"
    # certified examples are the float-correct ones here (no near-ties on this network)
    rep = trained.replicas[0]
    assert all(rep.float_correct[i] for i in ev.certified_indices)


@pytest.mark.parametrize("flip", ["pass", "fail"])
def test_planted_wrong_claimed_verdict_is_refuted(run, flip):
    _, _, _, res = run
    doc = res.doc
    i = doc["outputs"].index(flip)
    outs = list(doc["outputs"])
    outs[i] = "fail" if flip == "pass" else "pass"
    c = _claims(doc)
    d = 1 if flip == "fail" else -1
    bad = _replant(doc, outs, {"n_pass": c["n_pass"] + d, "n_fail": c["n_fail"] - d})
    v = check_certificate(bad)
    assert v.status == "REFUTED", v.message
    assert v.witness["example"] == i and v.witness["reason"] == "verdict"


def test_flipped_label_is_refuted(run):
    _, _, y, res = run
    doc = copy.deepcopy(res.doc)
    i = doc["outputs"].index("pass")
    doc["dataset"]["labels"][i] = (int(y[i]) + 1) % 6  # the claimed pass now names another token
    doc.pop("hash")
    doc["hash"] = canonical_hash(doc)
    v = check_certificate(doc)
    assert v.status == "REFUTED" and v.witness["example"] == i


def test_verify_examples_raises_when_kernel_disagrees(run, monkeypatch):
    """A producer whose claims the kernel does not confirm is an error, never a silent count."""
    from exactmem.experiments import certify_trained as ct

    trained, X, y, _ = run
    real = ct.kernel_check

    def planted(doc, path=None, workers=1):
        outs = list(doc["outputs"])
        outs[outs.index("pass")] = "fail"
        return real(_replant(doc, outs, {}), path, workers)

    monkeypatch.setattr(ct, "kernel_check", planted)
    with pytest.raises(RuntimeError, match="does not confirm"):
        verify_examples(export_module(trained.module, 0), X, y)
