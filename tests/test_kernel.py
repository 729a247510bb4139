"""The trusted kernel: what ``exactmem check`` imports, what the kernel imports, how big it is.

``docs/certificate.md`` (*What you must trust*) states the kernel's files and their sizes; the
last test measures them and fails when the document and the code disagree, so the statement
cannot drift. Run with ``-s`` to see the table.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from test_checker import affine, cert, model

ROOT = Path(__file__).resolve().parents[1]
KERNEL_DIR = ROOT / "exactmem" / "kernel"
CERT_DIR = ROOT / "exactmem" / "certificate"  # the producer's side: writer, streaming, chunk files, accelerators
CLI_DIR = ROOT / "exactmem" / "cli"
# What each kind of verdict rests on: the kernel files whose code runs when a certificate of that kind
# is checked (test_each_verdict_runs_only_its_trusted_base traces it); docs/certificate.md states them.
BASES = {
    "layer-model": ("text.py", "limits.py", "verdict.py", "fields.py", "linear.py", "schema.py", "layerschema.py",
                    "enclosure.py", "interval.py", "evaluate.py", "checker.py", "facts.py", "geometry.py"),
    "graph-model": ("text.py", "limits.py", "verdict.py", "fields.py", "schema.py", "enclosure.py", "checker.py", "facts.py",
                    "fixedpoint.py", "graph.py"),
    "lower-bound": ("text.py", "limits.py", "verdict.py", "fields.py", "schema.py", "enclosure.py", "interval.py",
                    "checker.py", "logarithm.py", "expression.py", "lowerbound.py"),
    # a layer model's claim formulas (formulas.check_formulas): that each bound is its formula's value
    "claim-formula": ("text.py", "limits.py", "verdict.py", "fields.py", "enclosure.py", "interval.py", "logarithm.py",
                      "expression.py", "formulas.py"),
}
KERNEL = tuple(dict.fromkeys(f for files in BASES.values() for f in files))  # every kernel file, once
CAP = 1500  # code lines of one trusted base (issue 16's 1,000, raised for interval layer kinds: issue 23)
COMMAND = ("exactmem.cli", "exactmem.cli.check", "exactmem.certificate", "exactmem.certificate.chunkfiles")  # the `check` command: arguments, chunk files, exit code
ACCELERATORS = ("fastcheck.py",)


def _imported_exactmem_modules(argv, console_script=False):
    """(exit code, exactmem modules imported) of ``python -m exactmem ARGV``, or of what the
    ``exactmem`` console script runs (``exactmem.__main__:main``)."""
    how = (["-c", "import sys; from exactmem.__main__ import main; sys.exit(main(sys.argv[1:]))"] if console_script
           else ["-m", "exactmem"])
    r = subprocess.run([sys.executable, "-X", "importtime", *how, *argv], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    mods = set(re.findall(r"\|\s*(exactmem(?:\.\w+)*)\s*$", r.stderr, re.M))
    return r.returncode, mods


@pytest.fixture(scope="module")
def cert_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("k") / "c.json"
    p.write_text(json.dumps(cert(model([affine([[1, 2]], relu=True)], dim=2), [[[1, 1]]], [[3]])))
    return p


def test_check_command_imports_only_the_kernel(cert_file):
    code, mods = _imported_exactmem_modules(["check", str(cert_file)])
    assert code == 0
    allowed = {"exactmem", "exactmem.version", "exactmem.__main__", "exactmem.kernel"} | set(COMMAND) | {
        "exactmem.kernel." + f[:-3] for f in KERNEL}
    print("\n`exactmem check` imports:", ", ".join(sorted(mods)))
    assert "exactmem.kernel.checker" in mods and mods <= allowed, sorted(mods - allowed)
    code, mods = _imported_exactmem_modules(["check", str(cert_file), "--engine", "fast"])
    assert code == 0 and {m for m in mods - allowed if not m.startswith("exactmem.native")} == \
        {"exactmem.certificate.fastcheck"}  # the accelerator and its compiled kernels (exactmem.native)
    code, mods = _imported_exactmem_modules(["check", str(cert_file)], console_script=True)
    assert code == 0 and "exactmem.kernel.checker" in mods and mods <= allowed, sorted(mods - allowed)
    code, mods = _imported_exactmem_modules(["inspect", str(cert_file)], console_script=True)
    assert code == 0 and "exactmem.cli.app" in mods  # every other command goes through the full command line


def test_console_script_is_the_module_entry_point():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^exactmem = "exactmem\.__main__:main"$', text, re.M)


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield 0, a.name, ()
        elif isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", tuple(a.name for a in node.names)


def test_kernel_imports_only_the_standard_library_and_itself():
    kernel = {f[:-3] for f in KERNEL}
    for f in KERNEL:
        for level, mod, names in _imports(KERNEL_DIR / f):
            if level:
                assert level == 1 and (mod in kernel or (not mod and set(names) <= kernel)), f"{f} imports .{mod}"
            else:
                assert mod.split(".")[0] in sys.stdlib_module_names, f"{f} imports {mod}"


def test_accelerators_use_only_the_kernels_public_names():
    """An accelerator imports the kernel's public names (``from ..kernel.checker import ...``) and, besides,
    only its own compiled kernels, ``exactmem.native`` (``from ..native import ...``), which import
    nothing of exactmem: outputs computed there are judged by the kernel like any other."""
    kernel = {f[:-3] for f in KERNEL}
    for f in ACCELERATORS:
        rel = [(level, mod, names) for level, mod, names in _imports(CERT_DIR / f) if level]
        assert any(level == 2 and mod.startswith("kernel.") for level, mod, _ in rel), f"{f} imports nothing from the kernel?"
        for level, mod, names in rel:
            if level == 2 and mod.split(".")[0] in ("native", "fastgraph"):
                continue
            assert level == 2 and mod.split(".")[0] == "kernel" and mod.split(".", 1)[-1] in kernel, \
                f"{f} imports {'.' * level}{mod}, which is not the kernel"
            private = [n for n in names if n.startswith("_")]
            assert not private, f"{f} imports private kernel names {private}"
    for path in sorted((ROOT / "exactmem" / "fastgraph").glob("*.py")):  # the graph models' accelerator
        for level, mod, names in _imports(path):
            if not level:
                extra = {"numba"} if path.name == "ddjit.py" else set()  # its compiled kernels (same operations)
                assert mod.split(".")[0] in sys.stdlib_module_names | {"numpy"} | extra, f"{path.name} imports {mod}"
                continue
            assert level == 1 or (level == 2 and mod.split(".")[0] == "kernel" and mod.split(".", 1)[-1] in kernel), \
                f"fastgraph/{path.name} imports {'.' * level}{mod}"
            assert not [n for n in names if n.startswith("_")], f"fastgraph/{path.name} imports private kernel names"
    native = ROOT / "exactmem" / "native"
    for path in native.glob("*.py") if native.is_dir() else ():
        for level, mod, _ in _imports(path):
            assert level <= 1 and not (mod or "").startswith("exactmem"), f"{path.name} imports {mod}"


def code_lines(path: Path) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    src = path.read_text()
    doc = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                doc.update(range(first.lineno, first.end_lineno + 1))
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
            code.update(range(tok.start[0], tok.end[0] + 1))
    return len(code - doc)


def kernel_size():
    rows = {f: (len((KERNEL_DIR / f).read_text().splitlines()), code_lines(KERNEL_DIR / f)) for f in KERNEL}
    return rows, sum(a for a, _ in rows.values()), sum(b for _, b in rows.values())


def base_size(kind: str):
    """(physical lines, code lines) of one trusted base."""
    rows = kernel_size()[0]
    return sum(rows[f][0] for f in BASES[kind]), sum(rows[f][1] for f in BASES[kind])


def test_code_line_counter_counts_what_it_says(tmp_path):
    p = tmp_path / "m.py"
    p.write_text('"""Doc\nstring."""\n\n# comment\nx = 1  # trailing\n\n\ndef f():\n    """One."""\n    return (x +\n'
                 '            1)\n')
    assert code_lines(p) == 4  # x = 1; def f(); return ( ... two lines


def test_kernel_size_is_what_the_documentation_states():
    rows, physical, code = kernel_size()
    print("\nkernel file            lines  code lines")
    for f, (a, b) in rows.items():
        print(f"  {f:20s} {a:6d} {b:10d}")
    print(f"  {'all kernel files':20s} {physical:6d} {code:10d}")
    doc = (ROOT / "docs" / "certificate.md").read_text()
    section = doc[doc.index("## What you must trust"):]
    for f, (a, b) in rows.items():
        assert re.search(rf"`{re.escape(f)}`\s*\|\s*{a}\s*\|\s*{b}\s*\|", section), f"docs/certificate.md: {f} {a} {b}"
    assert re.search(rf"\*\*all kernel files\*\*\s*\|\s*\*\*{physical}\*\*\s*\|\s*\*\*{code}\*\*", section), \
        (physical, code)
    for kind in BASES:
        a, b = base_size(kind)
        print(f"  base {kind!r}: {a} lines, {b} code lines (cap {CAP})")
        assert re.search(rf"\*\*{kind} certificates\*\*\s*\|\s*\*\*{a}\*\*\s*\|\s*\*\*{b}\*\*", section), \
            (kind, a, b)
        assert b <= CAP, f"the trusted base of {kind} certificates has {b} code lines, more than {CAP}"


TRACE = r"""
import json, sys, os
from exactmem.kernel import checker, lowerbound, graph  # imports first: module bodies are not traced
from exactmem.certificate.chunkfiles import chunk_reader
ran, formula = set(), set()
def in_formulas(frame):
    while frame is not None:
        if frame.f_code.co_name == "check_formulas" and frame.f_code.co_filename.endswith("formulas.py"):
            return True
        frame = frame.f_back
    return False
def tracer(frame, event, arg):
    if event == "call":
        f = frame.f_code.co_filename
        if os.sep + "kernel" + os.sep in f:
            (formula if in_formulas(frame) else ran).add(os.path.basename(f))
    return None
doc = json.load(open(sys.argv[1]))
sys.settrace(tracer)
v = checker.check_certificate(doc, read_chunk=chunk_reader(os.path.dirname(sys.argv[1])))
sys.settrace(None)
print(json.dumps({"status": v.status, "ran": sorted(ran), "formula": sorted(formula)}))
"""


def _traced(path):
    r = subprocess.run([sys.executable, "-c", TRACE, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def one_of_each(tmp_path_factory):
    """A certificate of each kind that exercises its evaluator: layers (ReLU, hardmax, softmax, softmax2,
    chunks), graphs (attention, LayerNorm, GELU; a lookup network with code-length claims), a lower bound
    (bounds minw with the sharp steps)."""
    from test_budgets import _tied_softmax_doc
    from test_graph_kernel import INPUTS, attention_graph, doc as graph_doc, true_verdicts
    from exactmem.certificate.writer import write_certificate

    t = tmp_path_factory.mktemp("kinds")
    out = {}
    soft = _tied_softmax_doc(128)
    out["layer-model"] = [t / "soft.json", Path(write_certificate(json.loads(json.dumps(soft)), str(t / "soft2.json")))]
    (t / "soft.json").write_text(json.dumps(soft))
    from test_budgets import _many_examples_doc
    out["layer-model"].append(Path(write_certificate(_many_examples_doc(40), str(t / "chunked.json"), chunk_examples=10)))
    g = attention_graph()
    labels = [0, 1, 2, 3, 0, 1]
    (t / "graph.json").write_text(json.dumps(graph_doc(g, INPUTS, labels, true_verdicts(g, INPUTS, labels))))
    out["graph-model"] = [t / "graph.json"]
    if importlib.util.find_spec("onnx") is not None:  # code-length claims (verify --measure bits): the same base
        import exactmem as em
        from test_codelength import data, lookup_model

        res = em.memorized_bits(lookup_model()[0], *data(), out=str(t / "cl"))
        out["graph-model"].append(Path(res.certificate))
    r = subprocess.run([sys.executable, "-m", "exactmem", "bounds", "minw", "--n", "8", "--N", "1000", "--certificate",
                        str(t / "lb.json")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out["lower-bound"] = [t / "lb.json"]
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", "proofs/kajitsuka.py", "--only",
                        "kajitsuka.next_token/N12-n4-d3-C4", "--out", str(t / "k"), "--quiet"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out["layer-model"] += sorted((t / "k").glob("*.json"))  # with claim formulas
    return out


def test_each_verdict_runs_only_its_trusted_base(one_of_each):
    """The files whose functions run while a certificate is checked lie in the base documented for
    its kind: a reviewer of one kind of verdict need not read the other kinds' evaluators."""
    formula = set()
    for kind, paths in one_of_each.items():
        ran = set()
        for p in paths:
            r = _traced(p)
            assert r["status"] in ("CERTIFIED", "UNKNOWN", "REFUTED"), r
            ran |= set(r["ran"])
            formula |= set(r["formula"])
        print(f"\n{kind}: ran {sorted(ran)}")
        ran -= set(COMMAND)  # the chunk reader is untrusted: the kernel verifies every chunk's digest
        assert ran <= set(BASES[kind]), (kind, sorted(ran - set(BASES[kind])))
    print(f"claim formulas: ran {sorted(formula)}")
    assert "expression.py" in formula and formula <= set(BASES["claim-formula"]), sorted(formula)


def test_interrupted_check_exits_130_on_both_entry_points(cert_file, monkeypatch, capsys):
    """Ctrl-C during a check: exit 130 and one line, no traceback, whether the check came
    through ``exactmem.__main__`` (the console script) or ``exactmem.cli.app``."""
    from exactmem import __main__ as entry
    from exactmem.cli import app as cli
    from exactmem.cli import check as command

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "check_certificate", interrupted)
    for main in (entry.main, cli.main):
        try:
            code = main(["check", str(cert_file)])
        except KeyboardInterrupt:
            pytest.fail(f"{main.__module__}.main let the interrupt through")
        assert code == 130
        assert capsys.readouterr().err == "interrupted\n"


def test_the_kernel_folder_names_each_trusted_base():
    """``exactmem/kernel/__init__.py`` lists each base's files, the same as BASES (a reviewer reads the
    folder, not this test), and the folder holds no file outside every base."""
    doc = ast.get_docstring(ast.parse((KERNEL_DIR / "__init__.py").read_text()))
    for kind, head in (("layer-model", "layer models"), ("graph-model", "graph models"), ("lower-bound", "lower-bound"),
                       ("claim-formula", "claim formulas")):
        item = re.search(rf"\* {head}[^:]*:(.*?)(?:;\n|\.\n)", doc, re.S)
        assert item, kind
        assert set(re.findall(r"``(\w+)``", item.group(1))) == {f[:-3] for f in BASES[kind]}, kind
    assert {p.name for p in KERNEL_DIR.glob("*.py")} - {"__init__.py"} == set(KERNEL)
