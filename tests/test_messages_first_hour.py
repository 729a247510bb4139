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


# ----------------------------------------------------------------------------- install hints

def test_every_install_hint_works_from_this_repository():
    """No ``pip install 'exactmem[...]'`` anywhere (exactmem is not on the package index): the
    hints in the package and the docs are ``pip install -e '.[EXTRA]'`` (or packages by name)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    bad = []
    for p in [*root.joinpath("exactmem").rglob("*.py"), *root.joinpath("docs").rglob("*.md"), root / "README.md"]:
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"pip install\s+['\"]?exactmem\[", line):
                bad.append(f"{p.relative_to(root)}:{i}: {line.strip()}")
    assert not bad, bad


def test_install_hint_has_one_form():
    from exactmem.errors import install_hint, missing_extra

    assert install_hint("verify") == "pip install -e '.[verify]' (from the repository root)"
    assert str(missing_extra("reading ONNX", "onnx", "verify")) == (
        "reading ONNX needs onnx, which is not installed: pip install -e '.[verify]' (from the repository root)")


def _hide(monkeypatch, *names):
    """Make ``names`` look uninstalled: ``find_spec`` says None and importing fails."""
    import builtins
    import importlib.util
    import sys

    real_find, real_import = importlib.util.find_spec, builtins.__import__
    for n in list(sys.modules):
        if n.split(".")[0] in names:
            monkeypatch.delitem(sys.modules, n)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a, **k: None if n.split(".")[0] in names else real_find(n, *a, **k))

    def imp(name, *a, **k):
        if name.split(".")[0] in names:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", imp)


def test_tutorial_1_figures_without_matplotlib_name_the_plot_extra(monkeypatch):
    """Tutorial 1's figures (``attention_figure``, ``activations_figure``) without matplotlib:
    one clear error naming the ``plot`` extra, not a raw ``ModuleNotFoundError``."""
    from exactmem.errors import MissingExtra
    from exactmem.inspector.text import activations_figure, attention_figure

    _hide(monkeypatch, "matplotlib")
    for fn in (attention_figure, activations_figure):
        with pytest.raises(MissingExtra) as e:
            fn(None)
        assert str(e.value) == (f"{fn.__name__} needs matplotlib, which is not installed: "
                                "pip install -e '.[plot]' (from the repository root)")


def test_library_entry_points_name_their_extra(monkeypatch):
    from exactmem.errors import MissingExtra
    from exactmem.export.torch_module import to_torch
    from exactmem.verify.onnx_import import VerifyInputError, load_onnx

    _hide(monkeypatch, "onnx", "torch")
    with pytest.raises(VerifyInputError) as e:
        load_onnx("model.onnx")
    assert str(e.value) == "reading ONNX needs onnx, which is not installed: pip install -e '.[verify]' (from the repository root)"
    with pytest.raises(MissingExtra) as e:
        to_torch(None)
    assert str(e.value) == "to_torch needs torch, which is not installed: pip install -e '.[torch]' (from the repository root)"


def test_verify_without_onnx_is_one_line(tmp_path, capsys, monkeypatch):
    import numpy as np

    (tmp_path / "m.onnx").write_bytes(b"x")
    np.savez(tmp_path / "d.npz", inputs=np.array([[0, 1]]), labels=np.array([1]))
    _hide(monkeypatch, "onnx")
    msg = _one_error(["verify", tmp_path / "m.onnx", "--data", tmp_path / "d.npz"], capsys)
    assert msg == "reading ONNX needs onnx, which is not installed: pip install -e '.[verify]' (from the repository root)"
