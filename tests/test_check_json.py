"""`check --json` on every certificate the proof files write (issue 38, item 1).

Every value of ``Verdict.to_json()`` is JSON-encodable and exact: measured quantities that are
Fractions (``max_norm2``, ``min_sep2``) are "p/q" texts, integers past 2^64 exact decimal texts.
Each proof file is certified once (module-scoped); the default suite checks one certificate of each
theorem of ``kajitsuka`` (layer models) and ``lower_bounds`` (lower-bound certificates) and a graph
model; every certificate of every proof file is ``slow``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactmem.cli import check as command
from exactmem.kernel.text import parse_int
from exactmem.kernel.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
BOUNDS = ("lower_bounds", "dana_encoders")  # lower-bound files: `bounds run FILE --certificate DIR`
DEFAULT = ("kajitsuka", "lower_bounds")
SLOW = tuple(sorted(p.stem for p in (ROOT / "proofs").glob("*.py") if p.stem not in DEFAULT))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """name -> the folder of certificates proof file ``name`` writes at --size small (certified once)."""
    base, cache = tmp_path_factory.mktemp("proofs"), {}

    def get(name):
        if name not in cache:
            out = base / name
            argv = ["bounds", "run", f"proofs/{name}.py", "--certificate", str(out)] if name in BOUNDS else \
                ["certify", f"proofs/{name}.py", "--size", "small", "--out", str(out), "--quiet"]
            r = subprocess.run([sys.executable, "-m", "exactmem", *argv], cwd=ROOT, capture_output=True, text=True,
                               timeout=600)
            assert r.returncode in (0, 1), r.stderr[-2000:]  # 1: an errata file's refutations
            cache[name] = out
        return cache[name]
    return get


def _check(path, *extra):
    """(exit code, stdout, stderr) of `exactmem check PATH` in this process."""
    import contextlib
    import io
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = command.main(["check", str(path), "--quiet", *extra])
    return code, o.getvalue(), e.getvalue()


def _theorem(p: Path) -> str:
    """kajitsuka.next_token.N12-n4-d3-C4.json -> kajitsuka.next_token (instance names have no dots)."""
    return p.name.split(".json")[0].rsplit(".", 1)[0]


def _all_json(folder: Path, one_per_theorem: bool = False):
    certs = sorted(p for p in folder.glob("*.json*") if "chunk" not in p.name) if folder.is_dir() else []
    if one_per_theorem:  # the default run's sample: the first certificate of each theorem
        certs = [p for k, p in enumerate(certs) if k == 0 or _theorem(p) != _theorem(certs[k - 1])]
    for p in certs:
        code, out, err = _check(p)
        jcode, jout, jerr = _check(p, "--json")
        assert jcode == code and not jerr, (p.name, jerr)
        v = json.loads(jout)
        assert out.startswith(v["status"] + ":"), (p.name, out[:200], v["status"])
        assert {"CERTIFIED": 0, "REFUTED": 1, "UNKNOWN": 2}[v["status"]] == code
    return certs


@pytest.mark.parametrize("name", DEFAULT)
def test_check_json_on_one_certificate_of_each_theorem(written, name):
    certs = _all_json(written(name), one_per_theorem=True)
    assert certs, f"proofs/{name}.py wrote no certificate"
    assert len({_theorem(p) for p in certs}) == len(certs) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFAULT + SLOW)
def test_check_json_on_every_certificate_slow(written, name):
    _all_json(written(name))  # proofs/dana_encoders.py writes none: its bounds are checked by the producer


def test_check_json_end_to_end_on_the_main_jobs_certificate(written):
    p = written("kajitsuka") / "kajitsuka.next_token.N12-n4-d3-C4.json"
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(p), "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    v = json.loads(r.stdout)
    assert r.returncode == 0 and v["status"] == "CERTIFIED" and not r.stderr
    assert "/" in v["measured"]["max_norm2"] or v["measured"]["max_norm2"].lstrip("-").isdigit()


def test_check_json_on_a_graph_model(tmp_path):
    from test_graph_kernel import INPUTS, attention_graph, doc, true_verdicts
    g, labels = attention_graph(), [0, 1, 2, 3, 0, 1]
    (tmp_path / "g.json").write_text(json.dumps(doc(g, INPUTS, labels, true_verdicts(g, INPUTS, labels))))
    code, out, _ = _check(tmp_path / "g.json", "--json")
    assert code == 0 and json.loads(out)["status"] == "CERTIFIED"


def test_verdict_to_json_is_exact_for_huge_numbers():
    big = 7 ** 20000  # 16,900 digits: past CPython's int-str limit
    v = Verdict("CERTIFIED", None, "ok", None, {"a": Fraction(big, 3), "b": big, "c": 5, "d": [Fraction(1, 2)]})
    j = json.loads(json.dumps(v.to_json()))
    num, den = j["measured"]["a"].split("/")
    assert den == "3" and parse_int(num) == big
    assert j["measured"]["b"] == num and j["measured"]["c"] == 5 and j["measured"]["d"] == ["1/2"]


def test_check_output_read_by_a_reader_that_leaves_early(written):
    """`exactmem check CERT --json | head -c 0`: the reader leaves; exit 141 (128 + SIGPIPE), as
    the other commands, and no traceback."""
    cert = next(p for p in sorted(written("kajitsuka").glob("*.json")))
    with subprocess.Popen([sys.executable, "-m", "exactmem", "check", str(cert), "--json", "--quiet"], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        proc.stdout.close()  # before the check answers (it reads and checks the file first)
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=300)
    assert "Traceback" not in err and code == 141, (code, err[-500:])
