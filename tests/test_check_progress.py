"""``exactmem check``: progress inside a single-process check (stderr, only on a terminal or with
``--progress``), and ``--engine auto`` with the line saying which engine ran (issue 37, item 2).
No timings: the plain-mode interval is set to 0 so every report is a line."""

import json
from fractions import Fraction as F

import pytest

from exactmem.certificate.writer import build_certificate
from exactmem.cli import check as command
from exactmem.data.dataset import Dataset
from exactmem.model import Model, affine, forward


def _write(path, n, wrong=None):
    """A certificate of out = 2·relu(x) on n one-dimensional examples (two layers); ``wrong``: an
    example whose label is off by one."""
    model = Model([affine([[1]], relu=True), affine([[2]])], input_dim=1)
    xs = [F(i) for i in range(n)]
    labels = [(2 * x + (1 if i == wrong else 0),) for i, x in enumerate(xs)]
    ds = Dataset([((x,),) for x in xs], labels, "vectors", 0)
    outs = forward(model, ds.inputs).outputs
    path.write_text(json.dumps(build_certificate("toy", f"n{n}", 0, model, ds, outs, [])))
    return str(path)


def _run(capsys, *argv):
    code = command.main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def every_report(monkeypatch):
    monkeypatch.setattr(command, "PROGRESS_INTERVAL", 0)


def test_no_progress_unless_asked_or_a_terminal(tmp_path, capsys, every_report):
    cert = _write(tmp_path / "c.json", 5)
    code, out, err = _run(capsys, cert)
    assert code == 0 and out.startswith("CERTIFIED") and err == ""
    code, out, err = _run(capsys, cert, "--progress", "--quiet")
    assert code == 0 and err == ""


def test_pure_progress_counts_the_examples_re_derived(tmp_path, capsys, every_report):
    cert = _write(tmp_path / "c.json", 5)
    code, out, err = _run(capsys, cert, "--progress")
    assert code == 0 and out.startswith("CERTIFIED: all 5 distinct examples pass")
    lines = err.splitlines()
    assert lines[0] == "[1/1] c.json: checking with the pure engine ..."
    assert [ln.split(": ")[-1].split(" (")[0] for ln in lines[1:]] == [f"example {k}/5" for k in range(1, 6)]
    assert all(ln.startswith("[1/1] c.json: check (pure engine): example ") for ln in lines[1:])
    assert "\r" not in err


def test_progress_stops_at_the_refuted_example_and_the_verdict_is_unchanged(tmp_path, capsys, every_report):
    cert = _write(tmp_path / "bad.json", 6, wrong=2)
    quiet = _run(capsys, cert)
    code, out, err = _run(capsys, cert, "--progress")
    assert (code, out) == quiet[:2] and code == 1 and '"example": 2' in out
    assert err.splitlines()[-1].split(": ")[-1].startswith("example 3/6 (")  # example 2 (row 3) was the last


def test_fast_progress_counts_layers(tmp_path, capsys, every_report):
    pytest.importorskip("numpy")
    cert = _write(tmp_path / "c.json", 5)
    code, out, err = _run(capsys, cert, "--engine", "fast", "--progress")
    assert code == 0 and out.startswith("CERTIFIED")
    lines = err.splitlines()
    assert lines[0] == "[1/1] c.json: checking with the fast engine ..."
    assert [ln.split("): ")[-1].split(" (")[0] for ln in lines[1:]] == ["layer 1/2", "layer 2/2"]


def test_engine_auto_says_which_engine_ran(tmp_path, capsys):
    pytest.importorskip("numpy")
    small, big = _write(tmp_path / "small.json", 5), _write(tmp_path / "big.json", 1000)
    code, out, err = _run(capsys, small, "--engine", "auto")
    assert code == 0 and err == "engine: pure (--engine auto: 5 examples (the fast engine from 1,000))\n"
    assert out == _run(capsys, small)[1]
    code, out, err = _run(capsys, big, "--engine", "auto")
    assert code == 0 and err == "engine: fast (--engine auto: token-wise layers and exact attention)\n"
    assert out.split(":")[0] == "CERTIFIED" and out == _run(capsys, big, "--engine", "fast")[1]
    assert _run(capsys, big, "--engine", "auto", "--quiet")[2] == ""


def test_auto_engine_rule():
    from exactmem.pipeline.certify import AUTO_FAST_MIN_EXAMPLES

    assert command.AUTO_FAST_MIN_EXAMPLES == AUTO_FAST_MIN_EXAMPLES  # one rule for the CLI and the library
    layer = {"type": "affine"}
    many = {"inputs": [[0]] * 1000}
    assert command.auto_engine({"model": {"layers": [layer]}, "dataset": many})[0] == "fast"
    assert command.auto_engine({"model": {"layers": [layer, {"type": "attention", "kind": "hardmax"}]},
                                "dataset": many})[0] == "fast"
    assert command.auto_engine({"model": {"layers": [{"type": "attention", "kind": "softmax"}]}, "dataset": many}) \
        == ("pure", "softmax attention is evaluated by the kernel")
    assert command.auto_engine({"model": {"graph": {}}, "dataset": many})[0] == "fast"  # graph models: the fast engine
    assert command.auto_engine({"model": {"graph": {}}, "dataset": {"inputs": [[0]] * 3}})[0] == "fast"  # at any size
    chunked = {"chunks": [{"examples": 600}, {"examples": 600}]}
    assert command.auto_engine({"model": {"layers": [layer]}, "dataset": chunked})[0] == "fast"
    assert command.auto_engine({"model": {"layers": [layer]}, "dataset": {"inputs": [[0]] * 999}})[0] == "pure"


def test_a_bar_on_a_terminal_and_the_same_stdout(tmp_path, capsys, monkeypatch):
    import io
    import sys

    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    cert = _write(tmp_path / "c.json", 5)
    plain = _run(capsys, cert)
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    code = command.main(["check", cert])
    out = capsys.readouterr().out
    assert (code, out) == plain[:2]
    text = fake.getvalue()
    assert "\r" in text and "1/1 certificates" in text and "c.json" in text
    fake2 = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake2)
    assert command.main(["check", cert, "--quiet"]) == 0 and fake2.getvalue() == ""


def test_the_fast_graph_engine_reports_progress_after_each_batch(monkeypatch):
    """A graph check reports examples done after each batch of the engine, not only at the end of a block of
    256: six examples in batches of two give 2, 4, 6 (then the block's 6), and the verdict is unchanged."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_fastgraph import _gpt2_doc

    from exactmem.fastgraph import check as fc
    from exactmem.kernel.checker import parse_certificate, precision_cap
    from exactmem.kernel.limits import Budget, Limits

    d = _gpt2_doc()
    cert = parse_certificate(d, Budget())
    monkeypatch.setattr(fc, "batch_size", lambda cert, n: 2)
    seen = []
    v = fc.check_graph_examples(cert, 0, 6, precision_cap(cert, None, Limits()), Budget(),
                                progress=lambda k, n: seen.append((k, n)))
    assert v.status == "CERTIFIED", v.message
    assert seen == [(2, 6), (4, 6), (6, 6), (6, 6)]
