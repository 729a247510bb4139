"""The capacity plane (issue 36, item 3): docs/capacity.md's plane section is what
``exactmem.capacity.plane`` writes from docs/capacity/plane.json, a planted change to the JSON changes
it, and every number of the JSON is what its certificate says (re-checked here by the kernel).

``benchmarks/capacity_plane.py`` generates the JSON by running certify / sweep / bounds / check; these
tests do not re-run it, they hold the page to the JSON and the JSON to the certificates.
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from exactmem.capacity import plane
from exactmem.kernel.checker import check_certificate, load_certificate

ROOT = Path(__file__).resolve().parents[1]
PLANE = ROOT / "docs" / "capacity" / "plane.json"
PAGE = ROOT / "docs" / "capacity.md"
SLOW_EXAMPLES = 500  # certificates of more examples are checked by the slow test only (a minute or more each)

# rows in the field names of the Morris experiment's JSON (exactmem/experiments/morris_capacity.py)
TRAINED = [
    {"model": "L1-d8", "params": 1536, "N": 8, "seed": 0, "weights": "float32", "certified_memorized_bits": 700.5,
     "float_memorized_bits": 702.5, "check": "CERTIFIED", "certificate": "L1-d8-N8-s0-float32.verify.json"},
    {"model": "L1-d8", "params": 1536, "N": 16, "seed": 0, "weights": "float32", "certified_memorized_bits": 1460.25,
     "float_memorized_bits": 1462.25, "check": "CERTIFIED"},
    {"model": "L1-d8", "params": 1536, "N": 16, "seed": 0, "weights": "bfloat16", "certified_memorized_bits": 1458.0,
     "float_memorized_bits": 1460.0, "check": "CERTIFIED"},
    {"model": "L1-d8", "params": 1536, "N": 32, "seed": 0, "weights": "float32", "certified_memorized_bits": 9999.0,
     "float_memorized_bits": 9999.0, "check": "REFUTED"},  # a refuted row is no capacity
]


@pytest.fixture(scope="module")
def doc():
    return plane.load(str(PLANE))


def test_the_page_section_is_what_the_generator_writes_from_the_json(doc):
    have = plane.current_section(PAGE.read_text(encoding="utf-8"))
    assert have is not None, "docs/capacity.md has no <!-- plane:begin --> / <!-- plane:end --> section"
    assert have == plane.section(doc), "docs/capacity.md's plane section is stale: python benchmarks/capacity_plane.py " \
                                       "--render"


def test_the_page_keeps_the_other_sections():
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(plane.BEGIN) == 1 and text.count(plane.END) == 1
    new = plane.replace_section(text, "X\n")
    assert new.split(plane.BEGIN)[0] == text.split(plane.BEGIN)[0]
    assert new.split(plane.END)[1] == text.split(plane.END)[1]


def test_a_planted_change_to_the_json_changes_the_section(doc):
    base = plane.section(doc)
    bad = copy.deepcopy(doc)
    p = next(p for p in bad["constructions"] if p["theorem"] == "kajitsuka.next_token")
    p["n_params"] *= 2  # half the bits per parameter
    changed = plane.section(bad)
    assert changed != base
    y = p["memorized_bits"] / p["n_params"]
    assert f"| {p['n_params']:,} | {plane.sig(y)} |" in changed
    bad = copy.deepcopy(doc)
    bad["constructions"][0]["b_star"]["bits_per_weight"] += 1
    assert plane.section(bad) != base
    bad = copy.deepcopy(doc)
    bad["thm43"][0]["W_min"] += 1
    assert plane.section(bad) != base


def test_trained_rows_enter_the_table_and_the_sentences(doc):
    d = copy.deepcopy(doc)
    d["trained"], d["trained_source"] = plane.normalize_trained_rows(TRAINED), "sample"
    s = plane.section(d)
    pts = {(p["row"]["format"], p["kind"]): p for p in plane.trained_points(d)}
    assert pts[("float32", "trained")]["row"]["N"] == 16  # the capacity: the best CERTIFIED row, not the refuted one
    assert pts[("float32", "trained")]["y"] == 1460.25 / 1536 and pts[("float32", "trained")]["x"] == 32
    assert pts[("bfloat16", "trained")]["x"] == 16
    assert f"| L1-d8 | float32 | 1,536 | N = 16, seed 0 | {plane.sig(1460.25)} | {plane.sig(1460.25 / 1536)} |" in s
    assert "**trained networks**" in s and "9,999" not in s
    assert plane.trained_table(doc) == "" or doc["trained"]


def test_trained_rows_missing_a_field_are_named():
    with pytest.raises(plane.PlaneError, match="parameter count"):
        plane.normalize_trained_rows([{"model": "m", "weights": "float32", "certified_memorized_bits": 1.0}])
    with pytest.raises(plane.PlaneError, match="bits per weight"):
        plane.normalize_trained_rows([{"model": "m", "params": 3, "weights": "int3", "certified_memorized_bits": 1.0}])
    assert plane.normalize_trained_rows([{"model": "m", "params": 3, "weights": "float32"}]) == []  # not measured yet


def test_family_sentences_follow_the_numbers(doc):
    sentences = plane.family_sentences(doc)
    trained = [s for s in sentences if s.startswith("**trained networks**")]
    assert len(trained) == (1 if doc.get("trained") else 0)  # one sentence for the trained networks, when present
    sentences = [s for s in sentences if s not in trained]
    fams = list(dict.fromkeys(p["family"] for p in doc["constructions"]))
    assert len(sentences) == len(fams)
    for fam, s in zip(fams, sentences):
        pts = [p for p in plane.built_points(doc) + plane.bstar_points(doc) if p["family"] == fam]
        ratios = [p["y"] / p["x"] for p in pts]
        assert s.startswith(f"**{fam}**")
        assert f"{plane.sig(1 / max(ratios), 2)}× to {plane.sig(1 / min(ratios), 2)}×" in s


def _docs(path):
    return load_certificate(str(ROOT / path))


def _cited(doc, slow):
    for p in doc["constructions"]:
        big = p["n_examples"] > SLOW_EXAMPLES
        if big == slow:
            yield p


@pytest.mark.parametrize("slow", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_every_construction_number_is_its_certificates(doc, slow):
    """The kernel re-checks each cited certificate: the verdicts, and the JSON's n_params, max_bits,
    distinct inputs, labels and classes equal its measurements; b* is certified and b* − 1 refuted."""
    from exactmem.model.serialize import model_from_json
    from exactmem.sweep.quantize import identity_bits, storage_bits

    for p in _cited(doc, slow):
        cert = _docs(p["certificate"])
        v = check_certificate(cert)
        assert v.status == p["status"] == "CERTIFIED", (p["certificate"], v.message)
        m = v.measured
        assert (m["n_params"], m["max_bits"], m["n_examples"]) == (p["n_params"], p["max_bits"], p["n_examples"])
        per_position = cert["model"]["readout"].get("position") == "all"
        assert p["labels"] == m["n_examples"] * (m["seq_len"] if per_position else 1)
        claim = [c for c in cert["claims"] if c["quantity"] == "label_classes" and c["op"] == "<="]
        assert p["classes"] == (int(Fraction(claim[0]["bound"])) if claim else m["label_classes"])
        assert p["classes"] >= m["label_classes"]
        assert math.isclose(p["memorized_bits"], p["labels"] * math.log2(p["classes"]))
        b = p["b_star"]
        if b is None:
            assert p.get("b_star_why")
            continue
        top, below = _docs(b["certificate"]), _docs(b["below"]["certificate"])
        vt, vb = check_certificate(top), check_certificate(below)
        assert vt.status == b["status"] == "CERTIFIED" and vt.measured["n_params"] == b["n_params"]
        assert vb.status == b["below"]["status"] == "REFUTED", vb.message
        assert top["meta"]["sweep"]["b"] == b["b"] and below["meta"]["sweep"]["b"] == b["b"] - 1
        model = model_from_json(top["model"])
        s = identity_bits(model, "float")
        assert s <= b["b"] and s == b["significand_bits"]
        assert storage_bits(model, "float", s)["per_weight"] == b["bits_per_weight"]


def test_the_thm43_ceilings_are_their_lower_bound_certificates(doc):
    for r in doc["thm43"]:
        cert = _docs(r["certificate"])
        assert check_certificate(cert).status == r["status"] == "CERTIFIED"
        assert cert["statement"]["instance"] == {"n": "1", "N": str(r["P"])}
        assert int(next(d["expr"] for d in cert["definitions"] if d["name"] == "W")) == r["W_min"]
        assert f"W ≥ {r['W_min']} parameters" in cert["statement"]["text"] or r["W_min"] == 1


def test_the_figure_is_drawn_with_extra_points(doc, tmp_path):
    pytest.importorskip("matplotlib")
    d = copy.deepcopy(doc)
    d["trained"] = plane.normalize_trained_rows(TRAINED)
    out = plane.figure(d, str(tmp_path / "p.png"), extra=[{"x": 32, "y": 2.5, "label": "mine"}])
    assert Path(out).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sig_formats_deterministically():
    assert [plane.sig(v) for v in (16.0, 0.00538, 3253.4, 1.234e-5, 2.5e7, None, 0)] == \
        ["16", "0.00538", "3,250", "1.23·10⁻⁵", "2.50·10⁷", "—", "0"]


def test_plane_json_is_the_generators_format(tmp_path):
    raw = json.loads(PLANE.read_text(encoding="utf-8"))
    assert raw["format"] == plane.FORMAT and raw["generated_by"] == "python benchmarks/capacity_plane.py"
    other = tmp_path / "x.json"
    other.write_text(json.dumps({**raw, "format": "exactmem-sweep"}), encoding="utf-8")
    with pytest.raises(plane.PlaneError, match="not a capacity-plane document"):
        plane.load(str(other))
