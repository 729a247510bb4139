"""Issue 37, item 3: one error style, true content. Each user error is one line
``exactmem: error: …`` with exit 3: no raw ``[Errno …]`` text, no temporary file names, the
right argument blamed, one clause, and install hints that work from this repository."""

import os

import pytest

from exactmem.__main__ import main as entry

PREFIX = "exactmem: error: "


def _run(argv, capsys):
    code = entry([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error(argv, capsys) -> str:
    code, out, err = _run(argv, capsys)
    lines = err.splitlines()
    assert code == 3, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err
    assert "Traceback" not in err and "Errno" not in err and ".tmp" not in err and "partial" not in err, err
    return lines[0][len(PREFIX):]


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    out = tmp_path_factory.mktemp("certs")
    assert entry(["certify", "relu_interpolation", "--out", str(out), "--only", "relu_interpolation.steps/N5-d2",
                  "--quiet"]) == 0
    (path,) = out.glob("*.json")
    return path


def test_html_into_a_missing_directory_names_the_users_path(cert, tmp_path, capsys):
    target = tmp_path / "missing" / "dir" / "x.html"
    msg = _one_error(["inspect", cert, "--html", target], capsys)
    assert msg == f"cannot write {target}: no such directory {target.parent}"
    assert not (tmp_path / "missing").exists()


def test_html_under_a_file_says_it_is_not_a_directory(cert, tmp_path, capsys):
    (tmp_path / "plain").write_text("x")
    target = tmp_path / "plain" / "x.html"
    msg = _one_error(["inspect", cert, "--html", target], capsys)
    assert msg == f"cannot write {target}: {tmp_path / 'plain'} is not a directory"


def test_bounds_certificates_into_an_unwritable_place(tmp_path, capsys):
    (tmp_path / "plain").write_text("x")
    target = tmp_path / "plain" / "x.json"
    msg = _one_error(["bounds", "minw", "--n", "8", "--N", "100", "--certificate", target], capsys)
    assert msg == f"--certificate: cannot write {target}: {tmp_path / 'plain'} is not a directory"
    msg = _one_error(["bounds", "run", "lower_bounds", "--only", "thm4_3", "--certificate", tmp_path / "plain"],
                     capsys)
    assert msg.startswith(f"cannot write {tmp_path / 'plain'}{os.sep}") and msg.endswith(
        f": {tmp_path / 'plain'} is not a directory"), msg


def test_write_bytes_atomic_raises_one_clause_naming_the_path(tmp_path):
    from exactmem.certificate.writer import write_bytes_atomic
    from exactmem.errors import WriteError

    (tmp_path / "plain").write_text("x")
    target = tmp_path / "plain" / "sub" / "c.json"
    with pytest.raises(WriteError) as e:
        write_bytes_atomic(b"{}", str(target))
    assert str(e.value) == f"cannot write {target}: {tmp_path / 'plain'} is not a directory"
    with pytest.raises(OSError) as e:  # a WriteError is an OSError: old handlers still catch it
        write_bytes_atomic(b"{}", str(tmp_path))
    assert str(e.value) == f"cannot write {tmp_path}: it is a directory"
    target = tmp_path / "no" / "x.json"
    with pytest.raises(WriteError) as e:
        write_bytes_atomic(b"{}", str(target), make_dirs=False)
    assert str(e.value) == f"cannot write {target}: no such directory {tmp_path / 'no'}"
    assert os.listdir(tmp_path) == ["plain"]  # no temporary file left behind


def test_verify_blames_the_model_argument_not_data(tmp_path, capsys):
    msg = _one_error(["verify", tmp_path, "--data", tmp_path], capsys)
    assert msg == f"{tmp_path} is a directory, not an ONNX model file (give MODEL.onnx)"
    msg = _one_error(["verify", tmp_path / "nope.onnx", "--data", tmp_path], capsys)
    assert msg == f"{tmp_path / 'nope.onnx'}: no such ONNX model file"


def test_verify_data_that_is_a_directory(tmp_path):
    from exactmem.verify.data import load_npz
    from exactmem.verify.onnx_import import VerifyInputError

    with pytest.raises(VerifyInputError) as e:
        load_npz(str(tmp_path))
    assert str(e.value) == f"{tmp_path} is a directory, not a .npz file of inputs and labels"


@pytest.mark.parametrize("html", [False, True], ids=["text", "html"])
def test_inspect_a_missing_or_malformed_file_is_one_clause(html, tmp_path, capsys):
    more = ["--html", tmp_path / "o.html"] if html else []
    assert _one_error(["inspect", tmp_path / "nope.json", *more], capsys) == f"no such certificate file: {tmp_path / 'nope.json'}"
    assert _one_error(["inspect", tmp_path, *more], capsys) == (
        f"{tmp_path} is a directory, not a certificate file (give a .json or .json.gz file)")
    (tmp_path / "bad.json").write_text("{")
    msg = _one_error(["inspect", tmp_path / "bad.json", *more], capsys)
    assert msg == (f"malformed certificate: {tmp_path / 'bad.json'}: invalid or truncated JSON "
                   "(Expecting property name enclosed in double quotes at line 1 column 2)")
