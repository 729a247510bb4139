"""The verify zoo (issue 35, build item 5): common architectures, trained briefly, exported and verified.

Each row of ``benchmarks/zoo_models.py`` (a tiny ``transformers`` / ``torch.nn`` model with its
default configuration) is trained, exported (TorchScript, dynamo, or passed as a module) and run
through ``exactmem verify`` and ``exactmem check`` by ``benchmarks/verify_zoo.py``. A row that works
must certify exactly what onnxruntime's float argmax gets right, except examples listed as UNKNOWN or
as (near-)ties, and ``check`` must re-derive the certificate. A row recorded in
``benchmarks/verify_zoo.json`` with an error is expected to stop at that same first error line
(strict xfail: a row that starts working fails the run until the JSON is refreshed with
``python benchmarks/verify_zoo.py --only ROW``; a row that stops at another line fails too).

The table of ``docs/verify.md`` is the JSON's (checked without PyTorch).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


vz = _load("verify_zoo")  # imports no torch at module level
RECORDED = {(r["row"], r["exporter"]): r for r in vz.load_rows()}
# the TorchScript exporter's rows (deprecated exporter; dynamo is what em.verify uses): -m slow
SLOW_EXPORTERS = {"torchscript"}


class RowFails(AssertionError):
    """The row stopped at its recorded first error line (the expected failure of today)."""


def test_docs_table_is_the_json():
    assert RECORDED, "benchmarks/verify_zoo.json is missing: run python benchmarks/verify_zoo.py"
    assert vz.doc_block() == vz.markdown(vz.load_rows()), \
        "docs/verify.md's zoo table is not benchmarks/verify_zoo.json's: python benchmarks/verify_zoo.py --docs-only"


def test_the_zoo_is_at_least_25_architectures_and_records_each_failure():
    rows = vz.load_rows()
    assert len({r["row"] for r in rows}) >= 25
    for r in rows:
        if r["error"] is not None:
            assert r["certified"] is None or r["check"] != "CERTIFIED", r
            assert "\n" not in r["error"] and r["error"].strip() == r["error"] and "Traceback" not in r["error"]
        else:
            assert r["check"] == "CERTIFIED" and r["certified"] + r["refuted"] + r["unknown"] == r["N"], r


def test_the_json_has_every_row_of_the_zoo():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    zoo = vz.zoo().ZOO
    assert set(RECORDED) == {(k, e) for k, s in zoo.items() for e in s.exporters}, \
        "benchmarks/verify_zoo.json is stale: python benchmarks/verify_zoo.py --only NEW_ROWS"


def _zoo_params():
    """One case per recorded row and exporter; a recorded error makes it a strict xfail with that line."""
    out = []
    for key, rec in RECORDED.items():
        marks = [pytest.mark.xfail(raises=RowFails, strict=True, reason=rec["error"])] if rec["error"] else []
        if key[1] in SLOW_EXPORTERS:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(*key, id=f"{key[0]}-{key[1]}", marks=marks))
    return out


def _midpoint(margin: str) -> float:
    """The midpoint of an arb ball printed as ``[m +/- r]``, ``m``, or ``[+/- r]`` (0): which listed
    differences are near-ties (a test-side reading of what verify printed, never a verdict)."""
    t = margin.strip().strip("[]").split("+/-")[0].strip()
    return 0.0 if t == "" else float(t)


def certified_matches_float(rec) -> None:
    """certified = float count, except the listed differences: UNKNOWN, or a float/real disagreement at a
    (near-)tie of the real network (|margin| below float32 rounding of these tiny networks' scores)."""
    diffs = rec["differences"]
    for d in diffs:
        if d["verdict"] != "unknown":
            assert d["margin"] and abs(_midpoint(d["margin"])) < 1e-4, d  # a decided disagreement is a tie
    float_only = sum(d["float_argmax_is_label"] is True and d["verdict"] != "pass" for d in diffs)
    real_only = sum(d["float_argmax_is_label"] is False and d["verdict"] == "pass" for d in diffs)
    assert rec["certified"] == rec["float_count"] - float_only + real_only, rec


@pytest.mark.parametrize("name,exporter", _zoo_params())
def test_zoo_row(name, exporter, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    rec = vz.run_row(name, exporter, str(tmp_path))
    recorded = RECORDED[(name, exporter)]
    if rec["error"] is not None:
        if rec["error"] == recorded["error"]:
            raise RowFails(rec["error"])
        pytest.fail(f"{name} ({exporter}) now stops at: {rec['error']!r}; recorded: {recorded['error']!r} "
                    f"(python benchmarks/verify_zoo.py --only {name})")
    assert rec["check"] == "CERTIFIED"
    assert rec["certified"] + rec["refuted"] + rec["unknown"] == rec["N"]  # N distinct inputs, each decided or not
    assert rec["float_count"] is not None and rec["torch_count"] >= 0
    certified_matches_float(rec)
    fast = _check_json(next(tmp_path.glob("*.verify.json")), "fast")  # the fast graph engine agrees (issue 39)
    assert fast["status"] == rec["check"], fast


def _check_json(path, engine):
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(path), "--json", "--engine", engine], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", ["gpt2", "bloom", "nanogpt_manual"])
def test_a_planted_label_is_refuted_by_check(name, tmp_path):
    """A wrong answer is caught on zoo certificates: one certified example's label moved to another class
    (its claimed verdict still pass) makes ``check`` REFUTE, with that example as the witness."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("onnxscript")
    rec = vz.run_row(name, "dynamo", str(tmp_path), check=False)
    assert rec["error"] is None, rec["error"]
    from exactmem.kernel.schema import canonical_hash

    cert = next(tmp_path.glob("*.verify.json"))
    doc = json.loads(cert.read_text())
    i = doc["outputs"].index("pass")
    C = vz.zoo().ZOO[name].n_classes
    doc["dataset"]["labels"][i] = (doc["dataset"]["labels"][i] + 1) % C
    doc.pop("hash")
    doc["hash"] = canonical_hash(doc)
    bad = tmp_path / "planted.verify.json"
    bad.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(bad), "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["status"] == "REFUTED", r.stdout + r.stderr
    assert out["witness"]["example"] == i, out["witness"]
    fast = _check_json(bad, "fast")  # the fast graph engine refutes at the same example
    assert fast["status"] == "REFUTED" and fast["witness"]["example"] == i, fast
