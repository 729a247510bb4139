"""Issue 26, item 8: what a new user meets in the first hour — files written with the umask's
mode, outputs git-ignored (the torch export's pickling and stated dtype: tests/test_export.py;
the main job's instances: tests/test_kajitsuka.py)."""

import os
import shutil
import stat
import subprocess

import pytest

from exactmem.certificate.writer import write_bytes_atomic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask():
    """Set the process umask for one test, restored afterwards."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664), (0o000, 0o666)])
def test_atomic_writes_respect_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    path = tmp_path / "sub" / "cert.json"
    write_bytes_atomic(b"{}", str(path))
    assert path.read_bytes() == b"{}" and _mode(path) == mode
    write_bytes_atomic(b"[]", str(path))  # replacing a file: the same mode, the new bytes
    assert path.read_bytes() == b"[]" and _mode(path) == mode
    assert os.listdir(path.parent) == ["cert.json"]  # no temporary file left


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_certify_writes_certificates_with_mode_0644_under_umask_022(tmp_path, umask):
    from exactmem.pipeline.certify import certify_file

    umask(0o022)
    rows = certify_file(os.path.join(ROOT, "proofs", "kajitsuka.py"), out_dir=str(tmp_path), seed=0, size="small",
                        only="kajitsuka.next_token/N1-n1-d1-C1", quiet=True)
    assert [r.verdict for r in rows] == ["CERTIFIED"]
    assert _mode(rows[0].path) == 0o644


@pytest.mark.skipif(shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")),
                    reason="needs git and a checkout")
def test_outputs_are_git_ignored_and_sources_are_not():
    def ignored(p):
        return subprocess.run(["git", "check-ignore", "-q", "--no-index", p], cwd=ROOT).returncode == 0

    for out in ("experiments/kajitsuka-fig1/run.json", "certificates/x.json", "sweeps/vardi/points.json"):
        assert ignored(out), out
    # the experiments' sources and pages share the name: the rule is anchored at the top
    for src in ("exactmem/experiments/new.py", "docs/experiments/new.md", "proofs/new.py"):
        assert not ignored(src), src


BROKEN_PROOF = '''
from fractions import Fraction as F
from exactmem.certificate.writer import Claim
from exactmem.data.dataset import Dataset
from exactmem.model import Model, affine
from exactmem.proof import Built, Instance, Theorem


def build(params, seed):
    if params["k"] == 0:
        raise ZeroDivisionError("k = 0 examples: nothing to memorize")
    xs = [4 * (i + 1) for i in range(params["k"])]
    model = Model([affine([[2]])], input_dim=1)
    return Built(model, Dataset([((F(x),),) for x in xs], [(F(2 * x),) for x in xs], "vectors", seed), [])


THEOREMS = [Theorem("toy.double", "out = 2x", "test", build,
                    [Instance("k2", {"k": 2}), Instance("k0", {"k": 0}), Instance("k3", {"k": 3})])]
'''


def test_a_build_that_raises_is_an_error_row_and_the_others_still_run(tmp_path):
    import subprocess
    import sys

    p = tmp_path / "broken.py"
    p.write_text(BROKEN_PROOF)
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", str(p), "--out", str(tmp_path / "c"), "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.splitlines() == [
        "  toy.double [k0]: ERROR: ZeroDivisionError: k = 0 examples: nothing to memorize"]
    lines = r.stdout.splitlines()
    assert lines[1] == "toy.double" and [row.split()[1] for row in lines[2:6] if not row.startswith("      ")] == \
        ["CERTIFIED", "ERROR", "CERTIFIED"]
    assert "      ZeroDivisionError: k = 0 examples: nothing to memorize" in lines  # the ERROR's message, under it
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", str(p), "--out", str(tmp_path / "d"), "--quiet",
                        "--debug"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr


SLOW_PROOF = BROKEN_PROOF.replace('''    if params["k"] == 0:''', '''    if params["k"] == 9:
        import time
        time.sleep(600)  # interrupted long before
    if params["k"] == 0:''').replace('Instance("k0", {"k": 0})', 'Instance("k9", {"k": 9})')


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
def test_ctrl_c_prints_the_table_of_the_finished_rows_and_exits_130(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    p = tmp_path / "slow.py"
    p.write_text(SLOW_PROOF)
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from exactmem.__main__ import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", code, "certify", str(p), "--out", str(tmp_path / "c")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    seen = ""
    while "k9" not in seen and time.time() < deadline:  # the second instance has started
        seen += proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    lines = out.splitlines()
    assert lines[1] == "toy.double" and lines[2].split()[:2] == ["k2", "CERTIFIED"] and "k3" not in out
    assert "interrupted after 1 finished instance (their table is above)" in err and "Traceback" not in err


def test_the_main_jobs_summary_fits_80_columns_and_markdown_has_the_full_table(tmp_path, capsys):
    from exactmem.cli.app import main

    assert main(["certify", "proofs/kajitsuka.py", "--only", "next_token", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0]  # then the line naming the (here long, temporary) output folder
    assert max(len(line) for line in table.splitlines()) <= 80, out
    assert main(["certify", "proofs/kajitsuka.py", "--only", "N1-n1-d1-C1", "--out", str(tmp_path), "--quiet",
                 "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("| theorem ") and "| total bits |" in md.splitlines()[0]


def test_ci_runs_the_readmes_test_command_verbatim_and_then_everything_else():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read()
    cmd = readme.split("Install and run the tests")[1].split("\n    ")[1].split("\n")[0]
    assert cmd.startswith("python -m pip install -e ") and cmd.endswith("python -m pytest")
    assert "experiments" not in cmd.split("&&")[0], "the README's test command must not need PyTorch"
    assert "\n" + cmd + "\n" in ci
    for rest in ('pytest -m "needs_torch or slow"', "--nbmake docs/tutorials/", "mkdocs build --strict",
                 "experiments,docs]"):
        assert rest in ci, rest


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path):
    """`exactmem certify ... | head`: stdout closes before the summary ends — exit 141, nothing on stderr."""
    import subprocess
    import sys

    p = tmp_path / "ok.py"
    p.write_text(BROKEN_PROOF.replace('Instance("k0", {"k": 0}), ', ""))
    proc = subprocess.Popen([sys.executable, "-m", "exactmem", "certify", str(p), "--out", str(tmp_path / "c"),
                             "--quiet"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is printed
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err, err
