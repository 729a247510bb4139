"""Claim formulas (issue 38, build item 5): a construction's size bound is an expression the kernel
evaluates (eq. (41) from the named N, n, d, C, r², δ²), and it must equal the stated bound exactly.

Planted changes to a formula, to a definition, to a named data bound or to the bound itself are
REFUTED; invalid formulas are malformed; a formula the kernel cannot decide is UNKNOWN; the
producer's builders (`exactmem.constructions.vardi.formulas`) agree with the independent integer
and enclosure code of `exactmem.constructions.vardi.sizes` on a grid.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactmem.arith.enclosure import floor_lower
from exactmem.certificate.formulas import Formulas, floor
from exactmem.constructions.vardi import formulas as vf
from exactmem.constructions.vardi import sizes
from exactmem.kernel.checker import MalformedCertificate, check_certificate
from exactmem.kernel.schema import canonical_hash

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def kajitsuka_doc(tmp_path_factory):
    """The main job's N12 certificate (claim formulas: stage (110)/(111), eqs. (41), (42), n_params)."""
    out = tmp_path_factory.mktemp("formulas")
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", "proofs/kajitsuka.py", "--only",
                        "kajitsuka.next_token/N12-n4-d3-C4", "--out", str(out), "--quiet"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (path,) = out.glob("*.json")
    return json.loads(path.read_text())


def rehashed(doc: dict) -> dict:
    doc["hash"] = canonical_hash(doc)
    return doc


def formula_claim(doc: dict, quantity: str, name=None) -> dict:
    return next(c for c in doc["claims"] if c["quantity"] == quantity and "formula" in c
                and (name is None or c.get("name") == name))


def test_the_main_jobs_certificate_states_its_bounds_as_formulas(kajitsuka_doc):
    claims = [c for c in kajitsuka_doc["claims"] if "formula" in c]
    assert {c["quantity"] for c in claims} == {"depth", "max_bits", "n_params"} and len(claims) == 5
    assert {c["name"] for c in kajitsuka_doc["claims"] if "name" in c} >= {"N", "n", "C", "r2", "delta2", "d", "D"}
    v = check_certificate(kajitsuka_doc)
    assert v.status == "CERTIFIED", v.message
    d41 = formula_claim(kajitsuka_doc, "depth", "D")
    assert f"depth <= {d41['bound']} = 2·floor(6 + 3·sqrt(N·log2(N))" in v.message
    assert "where C = 4" in v.message and "by formula" in v.message


def test_a_changed_bound_is_refuted_even_when_the_measured_value_still_meets_it(kajitsuka_doc):
    doc = copy.deepcopy(kajitsuka_doc)
    c = formula_claim(doc, "depth", "D")
    c["bound"] = str(int(c["bound"]) + 1)  # depth <= bound + 1 still holds; the formula does not give it
    v = check_certificate(rehashed(doc))
    assert v.status == "REFUTED" and "its formula" in v.message, v.message
    assert v.witness["formula_value"] == str(int(c["bound"]) - 1)


def test_a_changed_formula_is_refuted(kajitsuka_doc):
    doc = copy.deepcopy(kajitsuka_doc)
    c = formula_claim(doc, "depth", "D")
    assert c["formula"][0] == "-" and c["formula"][1][:2] == ["*", "2"]
    c["formula"][1][1] = "3"  # 3·floor((110)) − 1 instead of eq. (41)'s 2·floor((110)) − 1
    v = check_certificate(rehashed(doc))
    assert v.status == "REFUTED" and v.witness["quantity"] == "depth", v.message


def test_a_changed_definition_or_named_data_bound_is_refuted(kajitsuka_doc):
    doc = copy.deepcopy(kajitsuka_doc)
    d = next(x for x in doc["definitions"] if x["name"] == "F2.N")
    d["expr"] = str(int(d["expr"]) + 1)
    assert check_certificate(rehashed(doc)).status == "REFUTED"
    doc = copy.deepcopy(kajitsuka_doc)
    c = next(x for x in doc["claims"] if x.get("name") == "N")
    c["bound"] = str(int(c["bound"]) * 4)  # n_rows == 48: the formulas' value changes first
    v = check_certificate(rehashed(doc))
    assert v.status == "REFUTED" and "formula" in v.message, v.message


@pytest.mark.parametrize("edit, why", [
    (lambda d: formula_claim(d, "n_params").__setitem__("formula", ["+", "nobody", "1"]), "neither a number"),
    (lambda d: d["claims"][2].__setitem__("name", "N"), "not a new name"),
    (lambda d: d["definitions"].append({"name": "N", "expr": "1"}), "not a new name"),
    (lambda d: formula_claim(d, "n_params").__setitem__("formula", ["gamma", "1"]), "unknown operator"),
    (lambda d: formula_claim(d, "n_params").__setitem__("formula", ["^", "2", "x"]), "exponent"),
])
def test_invalid_formulas_are_malformed(kajitsuka_doc, edit, why):
    doc = copy.deepcopy(kajitsuka_doc)
    edit(doc)
    with pytest.raises(MalformedCertificate, match=why):
        check_certificate(rehashed(doc))


def test_an_undefined_formula_is_refuted_and_an_undecidable_one_unknown(kajitsuka_doc):
    doc = copy.deepcopy(kajitsuka_doc)
    formula_claim(doc, "n_params")["formula"] = ["log2", "0"]
    v = check_certificate(rehashed(doc))
    assert v.status == "REFUTED" and "undefined" in v.witness["formula_value"], v.message
    doc = copy.deepcopy(kajitsuka_doc)
    c = formula_claim(doc, "n_params")
    c["bound"], c["formula"] = "0", ["-", ["sqrt", "2"], ["sqrt", "2"]]  # 0, but no enclosure is the point 0
    v = check_certificate(rehashed(doc))
    assert v.status == "UNKNOWN" and v.limit == "max_precision" and "undecided" in v.message, v.message


def test_the_fast_engine_checks_the_formulas_too(kajitsuka_doc):
    from exactmem.certificate.fastcheck import check_certificate_fast

    doc = copy.deepcopy(kajitsuka_doc)
    c = formula_claim(doc, "max_bits")
    c["bound"] = str(int(c["bound"]) + 1)
    assert check_certificate_fast(rehashed(doc)).status == "REFUTED"
    assert check_certificate_fast(copy.deepcopy(kajitsuka_doc)).status == "CERTIFIED"


def test_a_graph_model_may_not_carry_claim_formulas():
    from test_graph_kernel import INPUTS, attention_graph, doc as graph_doc, true_verdicts

    g = attention_graph()
    labels = [0, 1, 2, 3, 0, 1]
    d = graph_doc(g, INPUTS, labels, true_verdicts(g, INPUTS, labels))
    d["claims"].append({"quantity": "n_params", "op": ">=", "bound": "1", "formula": "1"})
    with pytest.raises(MalformedCertificate, match="for layer models"):
        check_certificate(rehashed(d))


@pytest.mark.parametrize("N, C, r2, d2, V, d", [
    (2, 2, 1, 1, 2, 1), (7, 3, Fraction(9, 4), Fraction(1, 16), 12, 3), (16, 4, 2, Fraction(1, 2), 16, 2),
    (37, 4, Fraction(9, 4), Fraction(1, 16), 12, 3), (64, 16, 5, Fraction(1, 9), 80, 4),
    (1000, 2, 1, Fraction(1, 100), 50, 8), (4096, 1000, 3, Fraction(1, 1024), 5000, 16)])
def test_the_formula_builders_agree_with_the_sizes_module(N, C, r2, d2, V, d):
    """Two implementations: `sizes` (integer tests for ⌈√(N log₂ N)⌉, the enclosure code) and the
    formula language evaluated by the kernel. The integer (110), (111) and Lemma C.2's bits agree
    exactly; the real-valued (110)'s floor agrees wherever `sizes`' enclosure decides it."""
    F = Formulas()
    R2 = vf.paper_R2(r2, d2, V, d)
    R2e = sizes.paper_R2(r2, d2, V, d)
    assert F.value(vf.eq110_integer(N, C, R2)) == sizes.eq110_integer(N, C, R2e).depth
    real = sizes.eq110_depth(N, C, R2e)
    kernel_floor = F.value(floor(vf.eq110_real(N, C, R2)))
    assert floor_lower(real) <= kernel_floor <= floor_lower(real) + 1
    if floor_lower(real) == math.floor(Fraction(real.hi)):  # the enclosure decides the floor
        assert kernel_floor == floor_lower(real)
    bits = sizes.eq111_bits(N, C, R2e, r2, d2, V, d)
    assert floor_lower(bits) <= F.value(floor(vf.eq111_bits(N, C, R2, r2, d2, V, d))) <= floor_lower(bits) + 1
