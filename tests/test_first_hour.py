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
    from exactmem.pipeline import certify_file

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
