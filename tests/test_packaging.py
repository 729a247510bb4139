"""The theorems' claims ship with the package (issue 16, item 3).

The proof files live in ``exactmem/proofs/`` (the checkout's ``proofs/<name>.py`` re-export
them), so a wheel install certifies the same claims as a checkout. The fast tests check the
re-exports and the bare-name loader in this process; ``test_installed_wheel_*`` build a
wheel from a copy of the package sources, install it (``--no-deps``) into a fresh virtual
environment outside the repository — dependencies come from this environment — and compare
what the installed package builds and certifies with what the checkout does, data and seed
alike (about 10 s on the 2-core machine, most of it building the wheel).
"""

import hashlib
import importlib
import json
import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile

import pytest

import exactmem.proofs
from exactmem.pipeline.loader import load_bounds_file
from exactmem.proof import ProofFileError
from exactmem.pipeline.loader import import_file, load_proof_file, source_sha

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIMS = os.path.join(ROOT, "proofs")
PACKAGED = ["dana", "dana_encoders", "kajitsuka", "kajitsuka_deep_sets", "kajitsuka_errata", "kajitsuka_paper",
            "kajitsuka_paper_errata", "kajitsuka_variants",
            "lower_bounds", "mahdavi", "relu_interpolation", "vardi", "vardi_errata"]


# ----------------------------------------------------------------------------- in this process


def test_every_proof_file_is_packaged_and_reexported():
    assert exactmem.proofs.names() == PACKAGED
    assert sorted(f[:-3] for f in os.listdir(SHIMS) if f.endswith(".py")) == PACKAGED
    for name in PACKAGED:
        mod = importlib.import_module(f"exactmem.proofs.{name}")
        shim = os.path.join(SHIMS, name + ".py")
        assert hasattr(mod, "LOWER_BOUNDS") or hasattr(mod, "THEOREMS"), name
        if hasattr(mod, "LOWER_BOUNDS"):
            assert [id(t) for t in load_bounds_file(shim)] == [id(t) for t in mod.LOWER_BOUNDS]
        if hasattr(mod, "THEOREMS"):
            # the very Theorem objects of the packaged module: same builds, same claims
            assert [id(t) for t in load_proof_file(shim)] == [id(t) for t in mod.THEOREMS]


def test_library_claims_come_from_the_package():
    from exactmem.api import proof_module

    for name in ("kajitsuka", "vardi", "mahdavi", "dana"):
        mod = proof_module(name)
        assert mod is importlib.import_module(f"exactmem.proofs.{name}")
        assert os.path.dirname(os.path.abspath(mod.__file__)) == os.path.dirname(exactmem.proofs.__file__)


def test_shim_exposes_the_modules_helpers():
    pv = import_file(os.path.join(SHIMS, "vardi.py"), "exactmem_test_shim_")
    from exactmem.proofs import vardi

    assert pv.THEOREMS is vardi.THEOREMS
    assert pv.make_data is vardi.make_data and pv.ENGINE == vardi.ENGINE


def test_bare_name_loads_the_packaged_proof(tmp_path, monkeypatch):
    from exactmem.proofs import kajitsuka, lower_bounds, vardi

    monkeypatch.chdir(tmp_path)
    assert load_proof_file("kajitsuka") == kajitsuka.THEOREMS
    assert load_bounds_file("lower_bounds") == lower_bounds.LOWER_BOUNDS
    with pytest.raises(ProofFileError, match=r"no such proof file: kajitsuka\.py .*packaged proofs.*kajitsuka"):
        load_proof_file("kajitsuka.py")
    with pytest.raises(ProofFileError, match="no such proof file: nosuch"):
        load_proof_file("nosuch")
    # a proof file of one's own (docs/proof-files.md) still works, reusing packaged theorems
    (tmp_path / "mine.py").write_text("from exactmem.proofs.vardi import THEOREMS as _T\n\nTHEOREMS = [_T[0]]\n")
    assert load_proof_file("mine.py") == [vardi.THEOREMS[0]]


def test_source_sha_follows_the_packaged_module(tmp_path):
    shim = os.path.join(SHIMS, "vardi.py")
    copy = tmp_path / "vardi.py"
    shutil.copy(shim, copy)
    assert source_sha(str(copy)) == source_sha(shim)  # same file contents, same packaged module
    with open(shim, "rb") as f:  # the re-export's bytes alone would miss edits of exactmem/proofs/vardi.py
        assert source_sha(shim) != hashlib.sha256(hashlib.sha256(f.read()).digest()).hexdigest()
    from exactmem.proofs import vardi

    with open(vardi.__file__, "rb") as f:  # the bare name: the packaged module alone
        assert source_sha("vardi") == hashlib.sha256(hashlib.sha256(f.read()).digest()).hexdigest()
    copy.write_text(copy.read_text() + "# edited\n")
    assert source_sha(str(copy)) != source_sha(shim)
    own = tmp_path / "own.py"  # a self-contained proof file hashes only itself
    own.write_text("from exactmem.proof import Instance, Theorem\n\n\n"
                   "def build(params, seed):\n    raise ValueError\n\n\n"
                   "THEOREMS = [Theorem('own.t', 'statement', 'source', build, [Instance('i', {})])]\n")
    inner = hashlib.sha256(own.read_bytes()).digest()
    assert source_sha(str(own)) == hashlib.sha256(inner).hexdigest()


# ----------------------------------------------------------------------------- a wheel in a fresh venv

# Run by the venv's interpreter and by this environment's, each from a temporary directory:
# what the installed package builds and certifies, as JSON.
SCRIPT = r'''
import json, os, sys
import exactmem as em

def rec(net):
    v = em.certify(net)
    return {"theorem": net.theorem, "claims": [[c.quantity, c.op, str(c.bound)] for c in net.claims],
            "status": v.status, "message": v.message}

out = {"package": os.path.dirname(os.path.abspath(em.__file__)), "path": sys.path}
out["kajitsuka.next_token"] = rec(em.kajitsuka.next_token(em.sequences(N=5, n=4, d=3, C=3, seed=0), seed=0))
out["kajitsuka.seq2seq"] = rec(em.kajitsuka.seq2seq(em.sequences(N=4, n=3, d=2, C=2, seed=1, setting="seq2seq"),
                                                    seed=1))
pts = [(3 * i + i % 2,) for i in range(12)]
out["vardi.c1"] = rec(em.vardi.memorize(pts, [i % 4 for i in range(12)], 4, extra=[(1,), (5,)], seed=0))
md = em.mahdavi.random_data(H=2, n=3, d=4, d_h=3, seed=0)
out["mahdavi.hardmax"] = rec(em.mahdavi.memorize(md, 2, 3, mode="hardmax", design="solve", seed=0))
table = em.dana.random_table(10, 2, T0=em.dana.capacity(2, 2, 2), seed=0)
out["dana.base2"] = rec(em.dana.associations(table, 2, 2, 2, mode="base2", seed=0))
json.dump(out, sys.stdout)
'''

CLI_ONLY = "kajitsuka.next_token/N12-n4-d3-C4"


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP",
                                                              "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run(args, cwd, timeout=300):
    p = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, \
        f"{' '.join(map(str, args))} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def _setuptools_new_enough() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return tuple(int(x) for x in setuptools.__version__.split(".")[:2] if x.isdigit()) >= (77, 0)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from a copy of the package sources (pyproject.toml, README.md, exactmem/):
    nothing of the checkout's proofs/ folder, and no build/ left in the working tree."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, f), src / f)
    shutil.copytree(os.path.join(ROOT, "exactmem"), src / "exactmem",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(out), "--quiet"]
    if _setuptools_new_enough():  # offline; else pip fetches setuptools>=77 (pyproject) into an isolated env
        cmd.append("--no-build-isolation")
    _run(cmd, cwd=str(tmp))
    (whl,) = out.glob("exactmem-*.whl")
    return whl


@pytest.fixture(scope="module")
def venv_python(wheel, tmp_path_factory):
    """A fresh venv outside the repository with the wheel installed and this environment's
    packages visible (system site-packages, plus this environment's site-packages by a .pth
    line — a plain path line, so an editable install's finder there is never run)."""
    root = tmp_path_factory.mktemp("venv")
    vdir = root / "env"
    venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=(os.name != "nt")).create(vdir)
    py = vdir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=str(root)).strip()
    ours = [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
    with open(os.path.join(purelib, "zz_exactmem_test_deps.pth"), "w") as f:
        f.write("\n".join(ours) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--ignore-installed",
          "--no-index", "--quiet", "--no-warn-script-location", str(wheel)], cwd=str(root))
    return py


def test_wheel_ships_the_proofs_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"exactmem/proofs/{n}.py" for n in PACKAGED} | {"exactmem/proofs/__init__.py"} <= set(names)
    # only the package and its metadata: no top-level proofs/ (or tests/, benchmarks/)
    assert all(n.startswith(("exactmem/", "exactmem-")) for n in names), sorted(n for n in names
                                                                             if not n.startswith("exactmem"))


def test_installed_wheel_certifies_the_checkouts_claims(venv_python, tmp_path):
    (tmp_path / "run.py").write_text(SCRIPT)
    got = json.loads(_run([str(venv_python), "run.py"], cwd=str(tmp_path)))
    venv_dir = str(venv_python.parent.parent)
    assert got["package"].startswith(venv_dir + os.sep), got["package"]  # the wheel, not the checkout
    assert not any(os.path.abspath(p or ".") == ROOT for p in got["path"])
    # the checkout this test file belongs to (python -c in ROOT puts ROOT first on sys.path), not
    # whichever checkout an editable install points at (a git worktree's differs from it)
    want = json.loads(_run([sys.executable, "-c", SCRIPT], cwd=ROOT))
    assert want["package"] == os.path.join(ROOT, "exactmem"), want["package"]
    assert want["package"] != got["package"]
    for key in ("kajitsuka.next_token", "kajitsuka.seq2seq", "vardi.c1", "mahdavi.hardmax", "dana.base2"):
        assert got[key] == want[key], key
        assert got[key]["status"] == "CERTIFIED", (key, got[key]["message"])
    # the paper bounds, not only structural claims: Theorem B.1's eq. (41)/(42) and parameter bound
    assert [c[0] for c in got["kajitsuka.next_token"]["claims"]].count("depth") == 3
    assert ["n_params", "<="] in [c[:2] for c in got["kajitsuka.next_token"]["claims"]]


def test_installed_cli_certifies_a_bare_proof_name(venv_python, tmp_path):
    def rows(python, proof, cwd):
        out = _run([str(python), "-m", "exactmem", "certify", proof, "--only", CLI_ONLY, "--json", "--quiet",
                    "--out", str(tmp_path / "certs")], cwd=cwd)
        return [{k: r[k] for k in ("theorem", "instance", "verdict", "claims", "params", "max_bits")}
                for r in json.loads(out)]

    got = rows(venv_python, "kajitsuka", str(tmp_path))
    assert got == rows(sys.executable, os.path.join("proofs", "kajitsuka.py"), ROOT)
    assert [r["verdict"] for r in got] == ["CERTIFIED"]


def test_installed_console_script_certifies_and_checks(venv_python, tmp_path):
    """The ``exactmem`` command the wheel installs (``exactmem.__main__:main``): certify writes a
    certificate, ``exactmem check`` re-verifies it, and a flipped label is refuted."""
    script = venv_python.parent / ("exactmem.exe" if os.name == "nt" else "exactmem")
    out = tmp_path / "certs"
    _run([str(script), "certify", "kajitsuka", "--only", CLI_ONLY, "--quiet", "--out", str(out)], cwd=str(tmp_path))
    (cert,) = out.glob("*.json*")
    assert _run([str(script), "check", str(cert)], cwd=str(tmp_path)).startswith("CERTIFIED: ")
    from exactmem.kernel.checker import canonical_hash, load_certificate

    doc = load_certificate(str(cert))
    (label,) = doc["dataset"]["labels"][0]  # identity readout: the class as a 1-vector
    doc["dataset"]["labels"][0] = ["1" if label == "0" else "0"]
    doc["hash"] = canonical_hash(doc)
    bad = tmp_path / "flipped.json"
    bad.write_text(json.dumps(doc))
    p = subprocess.run([str(script), "check", str(bad)], cwd=str(tmp_path), env=_env(), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1 and p.stdout.startswith("REFUTED: "), (p.returncode, p.stdout, p.stderr)
