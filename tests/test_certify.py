"""End to end: certify a proof file, round-trip certificates, planted wrong certificates."""

import copy
import json
import os
import subprocess
import sys
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from exactmem.kernel.checker import canonical_hash, check_certificate, load_certificate
from exactmem.pipeline.certify import certify_file
from exactmem.data.dataset import dataset_from_json
from exactmem.model import decode_output, forward, model_from_json
from exactmem.arith.numbers import format_rational, parse_rational
from exactmem.pipeline.loader import load_proof_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOF = os.path.join(ROOT, "proofs", "relu_interpolation.py")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("certs")
    rows = certify_file(PROOF, out_dir=str(out), seed=0, size="small", quiet=True)
    return rows, out


def test_small_instances_all_certified(small_run):
    rows, _ = small_run
    assert len(rows) == 5
    assert {r.verdict for r in rows} == {"CERTIFIED"}, [(r.theorem, r.instance, r.message) for r in rows]
    steps = [r for r in rows if r.theorem == "relu_interpolation.steps" and r.instance == "N5-d2"][0]
    assert (steps.width, steps.depth, steps.params) == (8, 1, 2 + 6 * 4 + 1)


def test_round_trip_identical_model_and_data(small_run, tmp_path):
    _, out = small_run
    thm = [t for t in load_proof_file(PROOF) if t.name == "relu_interpolation.slopes"][0]
    inst = [i for i in thm.instances if i.name == "N60-d4-rational"][0]
    built = thm.build(dict(inst.params), 0)
    doc = load_certificate(os.path.join(out, "relu_interpolation.slopes.N60-d4-rational.json"))
    assert model_from_json(doc["model"]) == built.model
    ds = dataset_from_json(doc["dataset"], "vectors", "identity")
    assert ds.inputs == built.dataset.inputs and ds.labels == built.dataset.labels
    assert doc["seed"] == 0 and doc["hash"] == canonical_hash(doc)


def _load(out, name):
    return load_certificate(os.path.join(out, name))


def _rehash(doc):
    doc["hash"] = canonical_hash(doc)
    return doc


def _weight_slots(doc):
    """(layer index, field, row, col) of every matrix entry and (layer, field, i, None) of biases."""
    slots = []
    for li, layer in enumerate(doc["model"]["layers"]):
        for fld in ("W", "b"):
            v = layer.get(fld)
            if v is None:
                continue
            if fld == "W":
                slots += [(li, fld, r, c) for r in range(len(v)) for c in range(len(v[0]))]
            else:
                slots += [(li, fld, i, None) for i in range(len(v))]
    return slots


def _first_mismatch(doc):
    """Index of the first example whose exact output differs from its label (producer's engine)."""
    model = model_from_json(doc["model"])
    ds = dataset_from_json(doc["dataset"], "vectors", "identity")
    outs = forward(model, ds.inputs, backend="fraction").outputs
    for i, (o, y) in enumerate(zip(outs, ds.labels)):
        if decode_output(model, o) != list(y):
            return i
    return None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_nudged_weight_is_refuted_with_right_witness(small_run, data):
    _, out = small_run
    name = data.draw(st.sampled_from(["relu_interpolation.steps.N5-d2.json",
                                      "relu_interpolation.slopes.N5-d2.json"]))
    doc = copy.deepcopy(_load(out, name))
    li, fld, r, c = data.draw(st.sampled_from(_weight_slots(doc)))
    delta = data.draw(st.sampled_from([F(1, 1000), F(-1, 7), F(1, 2 ** 40), F(3)]))
    layer = doc["model"]["layers"][li]
    if c is None:
        layer[fld][r] = format_rational(parse_rational(layer[fld][r]) + delta)
    else:
        layer[fld][r][c] = format_rational(parse_rational(layer[fld][r][c]) + delta)
    _rehash(doc)
    expected = _first_mismatch(doc)
    v = check_certificate(doc)
    if expected is None:  # this nudge changes no output on the data: still memorized
        assert v.status == "CERTIFIED"
    else:
        assert v.status == "REFUTED"
        assert v.witness["example"] == expected


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_flipped_label_is_refuted_at_that_example(small_run, data):
    _, out = small_run
    doc = copy.deepcopy(_load(out, "relu_interpolation.steps.N60-d4-rational.json"))
    i = data.draw(st.integers(0, len(doc["dataset"]["labels"]) - 1))
    old = parse_rational(doc["dataset"]["labels"][i][0])
    doc["dataset"]["labels"][i] = [format_rational(old + data.draw(st.sampled_from([F(1), F(-1, 5), F(1, 10 ** 9)])))]
    _rehash(doc)
    v = check_certificate(doc)
    assert v.status == "REFUTED"
    assert v.witness["example"] == i


def test_failing_claim_is_refuted(small_run):
    _, out = small_run
    doc = copy.deepcopy(_load(out, "relu_interpolation.steps.N5-d2.json"))
    doc["claims"].append({"quantity": "width", "op": "<=", "bound": "7", "source": "planted"})
    v = check_certificate(_rehash(doc))
    assert v.status == "REFUTED" and "claim" in v.witness


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "exactmem", *args], cwd=cwd, capture_output=True, text=True)


def test_cli_certify_check_and_errors(tmp_path):
    out = tmp_path / "c"
    p = _cli("certify", PROOF, "--out", str(out), "--only", "steps", "--gzip")
    assert p.returncode == 0, p.stderr
    assert "CERTIFIED" in p.stdout and "theorem / instance" in p.stdout
    assert "[1/3]" in p.stderr  # progress on stderr
    cert = out / "relu_interpolation.steps.N5-d2.json.gz"
    assert _cli("check", str(cert)).returncode == 0
    # tamper: flip a label, re-hash, write back -> REFUTED, exit 1, JSON witness
    doc = load_certificate(str(cert))
    doc["dataset"]["labels"][2] = ["123456789"]
    _rehash(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    p = _cli("check", str(bad), "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout)["witness"]["example"] == 2
    # truncated gzip -> exit 3 with a message, no traceback
    trunc = tmp_path / "trunc.json.gz"
    trunc.write_bytes(cert.read_bytes()[:40])
    p = _cli("check", str(trunc))
    assert p.returncode == 3 and "Traceback" not in p.stderr and p.stderr.strip()
    # missing proof file -> exit 3
    p = _cli("certify", str(tmp_path / "nope.py"))
    assert p.returncode == 3 and "no such proof file" in p.stderr
    # inspect prints the layers and totals
    p = _cli("inspect", str(cert))
    assert p.returncode == 0 and "totals:" in p.stdout
