"""Progress of long runs (exactmem/progress.py; certify pipeline and sweeps): stderr only, a
tqdm bar on a terminal, plain lines (no carriage returns) otherwise, nothing with --quiet —
and never a change to stdout or to the results."""

import io
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from exactmem import sweep as S
from exactmem.cli import main
from exactmem.progress import Progress, choose_mode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOY_PROOF = textwrap.dedent('''
    from fractions import Fraction as F
    from exactmem.certificate.writer import Claim
    from exactmem.data.dataset import Dataset
    from exactmem.model import Model, affine
    from exactmem.proof import Built, Instance, Theorem


    def build(params, seed):
        k = params["k"]
        xs = [4 * (i + 1 + seed) for i in range(k)]
        model = Model([affine([[F(19, 8)]], relu=True), affine([[2]])], input_dim=1)
        ds = Dataset([((F(x),),) for x in xs], [(F(19, 4) * x,) for x in xs], "vectors", seed)
        return Built(model, ds, [Claim("n_examples", "==", k, "k examples")])


    THEOREMS = [Theorem("toy.scale", "out = 2 relu(w x)", "test", build,
                        [Instance("k3", {"k": 3}), Instance("k2", {"k": 2})])]
''')


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def toy_proof(tmp_path):
    p = tmp_path / "toy_proof.py"
    p.write_text(TOY_PROOF)
    return str(p)


def _table(stdout: str) -> str:
    """stdout without the run-dependent time column."""
    return re.sub(r"\| [0-9.]+ +\|$", "| t |", stdout, flags=re.M)


# ----------------------------------------------------------------------------- the helper


def test_modes():
    assert choose_mode(quiet=True, file=FakeTTY()) == "quiet"
    assert choose_mode(file=FakeTTY()) == "bar"
    assert choose_mode(file=io.StringIO()) == "plain"
    assert choose_mode(file=io.StringIO(), mode="bar") == "bar"
    with pytest.raises(ValueError, match="progress mode"):
        choose_mode(mode="fancy")


def test_plain_lines_have_counts_rate_and_eta_and_no_carriage_return():
    f = io.StringIO()
    with Progress(3, "work", "item", file=f, interval=0) as p:
        p.stage("build", "building the first one ...")
        p.update(1, "first: ok")
        p.stage("quiet stage")  # no line in plain mode
        p.update(1)  # count line (interval 0)
        p.note("a note")
        p.update(1, "third: ok")
    text = f.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "building the first one ..."
    assert lines[1].startswith("[######..............] 1/3 first: ok (elapsed ") and "ETA" in lines[1]
    assert lines[2].startswith("[#############.......] 2/3 item (elapsed ")
    assert lines[3] == "a note"
    assert lines[4].startswith("[####################] 3/3 third: ok (elapsed ") and "ETA" not in lines[4]
    assert re.search(r"(item/s|s/item)", lines[4])
    assert len(lines) == 5


def test_plain_count_lines_are_rate_limited():
    f = io.StringIO()
    with Progress(1000, "many", file=f, interval=3600) as p:
        for _ in range(1000):
            p.update()
    assert f.getvalue().count("\n") == 1 and "1000/1000" in f.getvalue()  # only the final count line


def test_quiet_prints_nothing():
    f = FakeTTY()
    with Progress(2, "work", file=f, quiet=True) as p:
        p.stage("build", "building ...")
        p.update(1, "done")
        p.note("note")
        with p.suspended():
            pass
        p.update(1)
    assert f.getvalue() == "" and p.done == 2


def test_bar_on_a_terminal_has_rate_and_eta():
    f = FakeTTY()
    with Progress(4, "work", "item", file=f) as p:
        p.describe("work [1/4]")
        p.stage("forward")
        p.update(1, "first: ok")
        p.update(3)
    text = f.getvalue()
    assert "\r" in text and "first: ok\n" in text
    assert "4/4" in text and "item/s" in text and "<" in text  # elapsed<remaining (ETA), rate
    assert "forward" in text


# ----------------------------------------------------------------------------- certify


def test_certify_progress_goes_to_stderr_only(toy_proof, tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "certs")
    args = ["certify", toy_proof, "--out", out]
    assert main(args + ["--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    assert main(args) == 0  # capsys: stderr is not a terminal, so plain lines
    plain = capsys.readouterr()
    assert "\r" not in plain.err
    lines = plain.err.splitlines()
    assert lines[0] == "[1/2] toy.scale [k3] building ..."
    assert any(l.startswith("[2/2] toy.scale [k2] checking ") for l in lines)
    assert any(l.startswith("[####################] 2/2 toy.scale [k2] CERTIFIED in ") and "check" in l
               for l in lines)
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    assert main(args) == 0
    bar = capsys.readouterr()
    assert "\r" in fake.getvalue() and "instance/s" in fake.getvalue()
    assert _table(quiet.out) == _table(plain.out) == _table(bar.out)
    assert "| toy.scale | k3" in quiet.out.replace("  ", " ") or "toy.scale" in quiet.out


def test_certify_file_results_do_not_depend_on_progress(toy_proof, tmp_path, capsys, monkeypatch):
    from exactmem.pipeline import certify_file

    a = certify_file(toy_proof, out_dir=str(tmp_path / "a"), quiet=True)
    monkeypatch.setattr(sys, "stderr", FakeTTY())
    b = certify_file(toy_proof, out_dir=str(tmp_path / "b"))
    key = lambda rows: [(r.theorem, r.instance, r.verdict, r.params, r.max_bits, r.total_bits) for r in rows]
    assert key(a) == key(b)
    for r, s in zip(a, b):
        assert json.load(open(r.path)) == json.load(open(s.path))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal test")
def test_certify_draws_a_bar_on_a_real_terminal(toy_proof, tmp_path):
    import pty
    import select

    master, slave = pty.openpty()  # size 0 x 0: the helper still draws a 100-column bar
    proc = subprocess.Popen([sys.executable, "-m", "exactmem", "certify", toy_proof, "--out", str(tmp_path)],
                            cwd=ROOT, stdin=slave, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode()
    assert proc.wait() == 0
    os.close(master)
    text = err.decode("utf-8", "replace")
    assert "\r" in text and "instance/s" in text and "100%" in text
    assert "toy.scale [k3] CERTIFIED in " in text
    assert "toy.scale" in out and "\r" not in out and "instance/s" not in out


# ----------------------------------------------------------------------------- sweeps


def test_sweep_progress_plain_quiet_and_bar(toy_proof, tmp_path, capsys, monkeypatch):
    spec = S.SweepSpec(toy_proof, theorems=("toy.scale",), instances=("k3",), params=[("k", [2, 3])],
                       models=("fixed",))
    a = S.run_sweep(spec, str(tmp_path / "a"), quiet=True)
    assert capsys.readouterr().err == ""
    b = S.run_sweep(spec, str(tmp_path / "b"))
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0].startswith("sweep: 2 points (0 already in ")
    assert lines[1].startswith("[##########..........] 1/2 toy.scale ") and "ETA" in lines[1]
    assert lines[2].startswith("[####################] 2/2 toy.scale ")
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    c = S.run_sweep(spec, str(tmp_path / "c"))
    assert "\r" in fake.getvalue() and "point/s" in fake.getvalue() and "2/2" in fake.getvalue()
    assert capsys.readouterr().out == ""
    strip = lambda run: [{k: v for k, v in r.items() if k not in ("seconds", "finished", "out_dir", "point")}
                         for r in run.records]
    assert strip(a) == strip(b) == strip(c) and len(a.records) == 2


# ----------------------------------------------------------------------------- the kernel stays clean


def test_kernel_does_not_import_progress_or_tqdm():
    code = ("import sys, exactmem.certificate.checker, exactmem.certificate.fastcheck, exactmem.certificate.command\n"
            "print('tqdm' in sys.modules, 'exactmem.progress' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_status_lines_are_rate_limited_in_plain_mode_and_fill_the_bar_postfix():
    f = io.StringIO()
    with Progress(None, "check", "shard", file=f, mode="plain", interval=3600) as p:
        for k in range(50):
            p.status(f"worker 0: layer {k}/50")
    assert f.getvalue() == "worker 0: layer 0/50\n"  # the first at once, then at most one per interval
    t = FakeTTY()
    with Progress(None, "check", "shard", file=t) as p:
        p.status("worker 0: layer 3/9; worker 1: layer 4/9")
        assert p.mode == "bar"
    assert "worker 1: layer 4/9" in t.getvalue()
