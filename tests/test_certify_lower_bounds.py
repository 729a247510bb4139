"""Issue 37, item 4: ``certify`` runs a proof file of lower bounds (``LOWER_BOUNDS``) too, with
certify's options: ``--size``, ``--only``, ``--out`` (the lower-bound certificates it can write,
which ``check`` certifies), ``--quiet``, ``--json``. ``bounds run`` keeps working."""

import json
import os
import subprocess
import sys

from exactmem.__main__ import main as entry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_certify_a_lower_bound_file_writes_certificates_that_check_certifies(tmp_path):
    out = tmp_path / "lb"
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", "proofs/lower_bounds.py", "--size", "small",
                        "--out", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # --quiet: no progress lines
    assert "must define THEOREMS" not in r.stdout and "| CHECKED |" in r.stdout
    certs = sorted(out.glob("*.json"))
    assert len(certs) >= 5
    assert f"{len(certs)} lower-bound certificates in {out}/" in r.stdout.splitlines()[-1]
    for c in certs[:3]:
        assert entry(["check", str(c)]) == 0, c


def test_certify_dana_encoders_runs(tmp_path, capsys):
    assert entry(["certify", os.path.join(ROOT, "proofs", "dana_encoders.py"), "--out", str(tmp_path / "d"),
                  "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "dana.corollary2" in out and "FAILED" not in out and err == ""
    assert out.splitlines()[-1] == ("no certificates: every row is checked by the producer (size small; these "
                                    "lower bounds have no certificate form)")


def test_certify_lower_bounds_only_and_json(tmp_path, capsys):
    assert entry(["certify", "lower_bounds", "--only", "thm4_2.bounds", "--out", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["theorem"] for r in rows} == {"kajitsuka.thm4_2.bounds"} and all(r["ok"] for r in rows)


def test_certify_lower_bounds_bad_options_are_one_line(tmp_path, capsys):
    for argv, msg in [
        (["--gzip"], "lower_bounds is a lower-bound file: --gzip does not apply (its options: --size, --only, "
                     "--out, --quiet, --json)"),
        (["--size", "xlarge"], "lower_bounds is a lower-bound file: --size xlarge is not one of its sizes "
                               "(small, medium, large)"),
        (["--only", "no-such"], "lower_bounds has no instances for --size small matching --only 'no-such'"),
    ]:
        assert entry(["certify", "lower_bounds", "--out", str(tmp_path), *argv]) == 3
        out, err = capsys.readouterr()
        assert err == f"exactmem: error: {msg}\n", err


def test_bounds_run_still_works(capsys):
    assert entry(["bounds", "run", "lower_bounds", "--only", "thm4_2.bounds"]) == 0
    assert "| kajitsuka.thm4_2.bounds |" in capsys.readouterr().out


def test_load_proof_file_names_both_verbs_for_a_lower_bound_file():
    import pytest

    from exactmem.pipeline.loader import LowerBoundFile, load_proof_file

    with pytest.raises(LowerBoundFile) as e:
        load_proof_file("dana_encoders")
    assert str(e.value) == ("dana_encoders is a lower-bound file (it defines LOWER_BOUNDS, not THEOREMS): run it "
                            "with `exactmem certify dana_encoders` or `exactmem bounds run dana_encoders`")
    assert e.value.bounds
