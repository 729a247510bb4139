"""Issue 26, item 3: one error style. Every user error of every command is one line
``exactmem: error: …`` on stderr naming the file or option, exit 3 (docs/cli.md § Exit codes),
never a traceback; ``--debug`` shows the traceback instead."""

import gzip
import json
import os

import pytest

from exactmem.__main__ import main as entry
from exactmem.errors import plural, report_error

PREFIX = "exactmem: error: "


def _run(argv, capsys):
    code = entry(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _bad_files(tmp):
    (tmp / "empty.json").write_text("")
    (tmp / "notjson.json").write_text("{not json")
    (tmp / "list.json").write_text("[1, 2]")
    with gzip.open(tmp / "trunc.json.gz", "wb") as f:
        f.write(b'{"format": "exactmem-certificate"')
    (tmp / "proof_syntax.py").write_text("def build(:\n")
    (tmp / "noproof.py").write_text("x = 1\n")
    (tmp / "sweepdir").mkdir()


# (argv with {t} for the temp folder, a word the message must contain)
CASES = [
    (["check", "{t}/missing.json"], "missing.json"),
    (["check", "{t}"], "directory"),
    (["check", "{t}/empty.json"], "malformed certificate"),
    (["check", "{t}/notjson.json"], "malformed certificate"),
    (["check", "{t}/list.json"], "malformed certificate"),
    (["check", "{t}/trunc.json.gz"], "malformed certificate"),
    (["check"], "usage"),
    (["check", "{t}/empty.json", "--time-limit", "soon"], "--time-limit"),
    (["certify", "{t}/missing.py"], "missing.py"),
    (["certify", "{t}"], "directory"),
    (["certify", "{t}/proof_syntax.py"], "proof_syntax.py"),
    (["certify", "{t}/noproof.py"], "noproof.py"),
    (["certify", "kajitsuka", "--only", "no-such-theorem"], "--only"),
    (["certify", "kajitsuka", "--size", "huge"], "--size"),
    (["certify", "kajitsuka", "--workers", "0"], "--workers"),
    (["certify"], "usage"),
    (["inspect", "{t}/missing.json"], "missing.json"),
    (["inspect", "{t}/notjson.json", "--html", "{t}/o.html"], "notjson.json"),
    (["sweep", "{t}/missing.py"], "missing.py"),
    (["sweep", "kajitsuka", "--seeds", "a,b"], "--seeds"),
    (["report", "{t}/sweepdir"], "sweepdir"),
    (["bounds", "minw", "--N", "1e300x"], "--N"),
    (["bounds", "minw", "--n", "0", "--N", "10"], "n"),
    (["bounds", "run", "{t}/missing.py"], "missing.py"),
    (["export", "{t}/missing.json", "--out", "{t}/o.npz"], "missing.json"),
    (["verify", "{t}/missing.onnx", "--data", "{t}/missing.npz"], "missing"),
    (["experiment", "no-such-experiment"], "no-such-experiment"),
    (["nosuchcommand"], "nosuchcommand"),
    ([], "usage"),
]


@pytest.mark.parametrize("argv,says", CASES, ids=[" ".join(a) or "(none)" for a, _ in CASES])
def test_every_user_error_is_one_prefixed_line_and_exit_3(argv, says, tmp_path, capsys):
    _bad_files(tmp_path)
    argv = [a.replace("{t}", str(tmp_path)) for a in argv]
    code, out, err = _run(argv, capsys)
    lines = err.splitlines()
    assert code == 3, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err
    assert "Traceback" not in err and says in lines[0], err


def test_debug_shows_the_traceback_instead(tmp_path, capsys):
    (tmp_path / "proof_syntax.py").write_text("def build(:\n")
    with pytest.raises(Exception):
        entry(["certify", str(tmp_path / "proof_syntax.py"), "--debug"])


def test_a_huge_number_is_an_answer_not_a_traceback(capsys):
    code, out, err = _run(["bounds", "minw", "--n", "8", "--N", "1e300"], capsys)
    assert code == 0 and err == "" and "Theorem B.3" in out


def test_report_error_folds_to_one_line_and_plurals_agree(capsys):
    assert report_error("two\nlines   here") == 3
    assert capsys.readouterr().err == "exactmem: error: two lines here\n"
    assert [plural(k, "point") for k in (0, 1, 2, 1000)] == ["0 points", "1 point", "2 points", "1,000 points"]
    assert plural(3, "child", "children") == "3 children"


def test_check_of_a_missing_chunk_is_malformed_not_missing(tmp_path, capsys):
    """A certificate that names a chunk file which is not there is malformed (its index is false);
    only the certificate file itself can be 'missing'."""
    doc = {"format": "exactmem-certificate", "version": 2, "chunks": [{"file": "c0.json", "sha256": "0" * 64,
                                                                       "first": 0, "count": 1}]}
    p = tmp_path / "v2.json"
    p.write_text(json.dumps(doc))
    code, out, err = _run(["check", str(p)], capsys)
    assert code == 3 and err.startswith(PREFIX + "malformed certificate:") and len(err.splitlines()) == 1
    assert os.path.exists(p)
