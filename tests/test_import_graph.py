"""No import cycles in exactmem/ (docs/index.md: data flows one way, nothing imports upward).

The graph is built from the AST of every ``.py`` file: every ``import`` statement, at module
level and inside functions (a function-level import is still a dependency, only a deferred
one), absolute and relative. An edge ``A -> B`` means "running A's imports runs B":

* ``import a.b.c`` and ``from a.b.c import name`` import ``a.b.c``;
  ``from a.b import c`` imports the submodule ``a.b.c`` when ``a/b/c.py`` (or ``a/b/c/``)
  exists, else the package ``a.b`` (``c`` is then a name defined in its ``__init__``);
* importing ``a.b.c`` also runs the ``__init__`` of the packages ``a`` and ``a.b``, so those are
  edges too — except the importer's own parent packages, which are already being imported
  when its body runs (``from . import sibling`` inside ``pkg/x.py`` needs ``pkg`` only if it
  takes a *name* from ``pkg/__init__.py``: ``from . import Memorizer`` is an edge to ``pkg``, a
  cycle only if ``pkg/__init__.py`` imports ``pkg.x`` back).

Hidden imports count too: ``importlib.import_module(X)``, ``import_module(X)`` and
``__import__(X)`` whose X is a string (an edge to that module), an f-string (an edge to the
module its constant prefix names, e.g. ``f"exactmem.proofs.{name}"`` -> ``exactmem.proofs``;
``f"{__package__}...."`` -> the importer's own package) or a relative name with ``__package__``.
Any other argument is unresolved and fails the test, except the package's own ``_LAZY`` table
(``exactmem/__init__.py``), whose modules are read from the table itself.

The layers (``docs/architecture.md``, section *Layers*) put every top-level package and module
of exactmem in one numbered layer; an import from one of them into another must go to a lower
layer, never the same or a higher one.
"""

from __future__ import annotations

import ast
import os
import re
import textwrap
from typing import Dict, List, Optional, Set, Tuple

import networkx as nx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _modules(root: str, package: str) -> Dict[str, str]:
    """Dotted module name -> file, for every .py file below ``root`` (the package directory)."""
    mods = {}
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        parts = [package] + ([] if rel == "." else rel.split(os.sep))
        for f in files:
            if f.endswith(".py"):
                name = ".".join(parts if f == "__init__.py" else parts + [f[:-3]])
                mods[name] = os.path.join(dirpath, f)
    return mods


def _ancestors(name: str) -> List[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


DYNAMIC = ("import_module", "__import__")


def _dynamic_target(call: ast.Call, own_pkg: str) -> Optional[str]:
    """The module a hidden import names (see the module docstring), or None if it cannot be read."""
    if not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        name = arg.value
        if name.startswith("."):  # import_module(".x", __package__)
            level = len(name) - len(name.lstrip("."))
            base = own_pkg.split(".")
            return ".".join(base[:len(base) - level + 1] + ([name.lstrip(".")] if name.lstrip(".") else []))
        return name
    if isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
        if isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name) and \
                first.value.id == "__package__":
            return own_pkg
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.endswith("."):
            return first.value[:-1]
    return None


def _lazy_table(tree: ast.Module) -> List[str]:
    """The module names of a package's ``_LAZY = {name: (module, attribute)}`` table."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets):
            return sorted({mod for mod, _attr in ast.literal_eval(node.value).values()})
    return []


def import_graph(root: str, package: str, unresolved: Optional[List[Tuple[str, int]]] = None) -> nx.DiGraph:
    """The import graph of the package in directory ``root`` (named ``package``), as above; hidden
    imports that cannot be read are appended to ``unresolved`` as (module, line)."""
    mods = _modules(root, package)
    G = nx.DiGraph()
    G.add_nodes_from(mods)
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        is_pkg = os.path.basename(path) == "__init__.py"
        own_pkg = mod if is_pkg else mod.rpartition(".")[0]
        own_parents = set(_ancestors(mod))
        lazy = _lazy_table(tree) if mod == package else []
        for t in lazy:
            if t in mods:
                G.add_edge(mod, t)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if fname not in DYNAMIC:
                    continue
                target = _dynamic_target(node, own_pkg)
                if target is None:
                    if not lazy and unresolved is not None:
                        unresolved.append((mod, node.lineno))
                    continue
                while target and target not in mods:  # a module outside the package, or a name in one
                    target = target.rpartition(".")[0]
                if target and target != mod and target not in own_parents:
                    G.add_edge(mod, target)
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = own_pkg.split(".")
                    base = base[:len(base) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                subs = [f"{src}.{a.name}" for a in node.names if f"{src}.{a.name}" in mods]
                names = [a.name for a in node.names if f"{src}.{a.name}" not in mods]
                # the package itself only when a name is taken from it (or it is not our own parent)
                targets = subs + ([src] if names or src not in own_parents else [])
            else:
                continue
            for t in targets:
                for dep in _ancestors(t) + [t]:
                    if dep in mods and dep != mod and (dep == t or dep not in own_parents):
                        G.add_edge(mod, dep)
    return G


def import_cycles(G: nx.DiGraph) -> List[List[str]]:
    """Every elementary cycle, each rotated to start at its smallest module, sorted."""
    out = []
    for c in nx.simple_cycles(G):
        i = c.index(min(c))
        out.append(c[i:] + c[:i])
    return sorted(out, key=lambda c: (len(c), c))


def _describe(cycles: List[List[str]]) -> str:
    return f"{len(cycles)} import cycle(s) in exactmem/:\n" + "\n".join(
        "  " + " -> ".join(c + [c[0]]) for c in cycles)


def test_exactmem_has_no_import_cycles():
    unresolved = []
    G = import_graph(os.path.join(ROOT, "exactmem"), "exactmem", unresolved)
    assert G.number_of_nodes() > 30 and G.number_of_edges() > 50  # the scan did see the package
    cycles = import_cycles(G)
    assert not cycles, _describe(cycles)
    # every hidden import is read (the lazy table of exactmem/__init__.py too), so none escapes the check
    assert not unresolved, f"hidden imports whose target cannot be read: {unresolved}"
    assert G.has_edge("exactmem.pipeline.loader", "exactmem.proofs")  # import_module(f"exactmem.proofs.{name}")
    assert G.has_edge("exactmem", "exactmem.api")  # the lazy table


def _unit(mod: str, package: str) -> str:
    """The top-level package or module of ``package`` that holds ``mod`` (``package`` itself for its root)."""
    parts = mod.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else mod


def read_layers(path: str, package: str = "exactmem") -> Dict[str, int]:
    """``{unit: layer}`` from the *Layers* table of ``docs/architecture.md``: rows ``| N | `a`, `b` | ... |``."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers = {}
    for m in re.finditer(r"^\|\s*(\d+)\s*\|([^|]*)\|", section, re.M):
        for name in re.findall(r"`([\w.]+)`", m.group(2)):
            unit = name if name.startswith(package) else f"{package}.{name}"
            assert unit not in layers, f"{unit} is listed in two layers"
            layers[unit] = int(m.group(1))
    return layers


def upward_imports(G: nx.DiGraph, layers: Dict[str, int], package: str) -> List[str]:
    """Every import from one unit into another of the same or a higher layer, as text."""
    out = []
    for a, b in G.edges():
        ua, ub = _unit(a, package), _unit(b, package)
        if ua != ub and layers[ub] >= layers[ua]:
            out.append(f"{a} (layer {layers[ua]}) imports {b} (layer {layers[ub]})")
    return sorted(out)


def test_every_import_goes_down_the_layers_of_the_architecture():
    G = import_graph(os.path.join(ROOT, "exactmem"), "exactmem")
    layers = read_layers(os.path.join(ROOT, "docs", "architecture.md"))
    units = {_unit(m, "exactmem") for m in G.nodes}
    assert units == set(layers), (f"not in docs/architecture.md's layers: {sorted(units - set(layers))}; "
                                  f"listed but absent: {sorted(set(layers) - units)}")
    assert len(set(layers.values())) >= 10  # the scan did read the table
    up = upward_imports(G, layers, "exactmem")
    assert not up, f"{len(up)} import(s) from a lower layer up:\n  " + "\n  ".join(up)


def test_a_planted_upward_or_hidden_import_is_detected(tmp_path):
    """low imports high through import_module(f"pkg.high.{x}"), and high imports low: with low below
    high one upward import, the hidden one; the other way round, high's; a variable name is unresolved."""
    root = _write_package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "import importlib\n\ndef f(x):\n    return importlib.import_module(f'pkg.high.{x}')\n",
        "low/b.py": "def g(name):\n    return __import__(name)\n",
        "high/__init__.py": "",
        "high/c.py": "from ..low import a\n",
    })
    unresolved = []
    G = import_graph(root, "pkg", unresolved)
    assert G.has_edge("pkg.low.a", "pkg.high") and G.has_edge("pkg.high.c", "pkg.low.a")
    assert unresolved == [("pkg.low.b", 2)]
    up = upward_imports(G, {"pkg.low": 0, "pkg.high": 1, "pkg": 2}, "pkg")
    assert up == ["pkg.low.a (layer 0) imports pkg.high (layer 1)"]
    assert upward_imports(G, {"pkg.low": 2, "pkg.high": 1, "pkg": 3}, "pkg") == [
        "pkg.high.c (layer 1) imports pkg.low (layer 2)", "pkg.high.c (layer 1) imports pkg.low.a (layer 2)"]


def _write_package(tmp_path, files: Dict[str, str]) -> str:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(root)


def test_a_planted_cycle_is_detected(tmp_path):
    """a -> b at module level, b -> c inside a function, c -> a through ``from pkg import a``;
    sub/x imports its parent package, which imports x back: two cycles. ``ok`` imports its own
    parent (the package) for a submodule only: no edge to the package, no cycle."""
    root = _write_package(tmp_path, {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .c import g\n    return g\n",
        "c.py": "from pkg import a\n\ndef g():\n    return a\n",
        "ok.py": "from . import a\n",
        "sub/__init__.py": "from .x import X\n",
        "sub/x.py": "from . import helper\nfrom ..sub import NAME\nX = 1\n",
        "sub/helper.py": "NAME = 2\n",
    })
    G = import_graph(root, "pkg")
    cycles = import_cycles(G)
    assert ["pkg.a", "pkg.b", "pkg.c"] in cycles
    assert ["pkg.sub", "pkg.sub.x"] in cycles
    assert len(cycles) == 2, _describe(cycles)
    assert G.has_edge("pkg.ok", "pkg.a") and not G.has_edge("pkg.ok", "pkg")
    assert G.has_edge("pkg.sub.x", "pkg.sub.helper")
    assert "pkg.a -> pkg.b -> pkg.c -> pkg.a" in _describe(cycles)


def test_submodule_importing_its_parent_for_a_sibling_is_no_cycle(tmp_path):
    root = _write_package(tmp_path, {
        "__init__.py": "from .low import f\nfrom . import high\n",
        "low.py": "def f():\n    return 1\n",
        "high.py": "from . import low\nimport pkg.low\n",
        "other/__init__.py": "",
        "other/user.py": "from pkg.low import f\nfrom pkg.more.y import g\n",
        "more/__init__.py": "",
        "more/y.py": "def g():\n    return 2\n",
    })
    G = import_graph(root, "pkg")
    assert import_cycles(G) == []
    assert G.has_edge("pkg.high", "pkg.low") and not G.has_edge("pkg.high", "pkg")
    assert G.has_edge("pkg.other.user", "pkg.low") and not G.has_edge("pkg.other.user", "pkg")
    # importing pkg.more.y runs pkg/more/__init__.py first: an edge to that package too
    assert G.has_edge("pkg.other.user", "pkg.more.y") and G.has_edge("pkg.other.user", "pkg.more")


def _package_files(root: str):
    for dirpath, _dirs, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


def test_no_module_holds_several_ideas_by_size():
    """A module past ~800 lines is split (DESIGN: one idea per module)."""
    long = {os.path.relpath(p, ROOT): n for p in _package_files(os.path.join(ROOT, "exactmem"))
            if (n := sum(1 for _ in open(p, encoding="utf-8"))) > 800}
    assert not long, f"modules over 800 lines: {long}"


def test_every_module_says_what_it_is_for_in_one_line():
    """Each module's docstring starts with one line (<= 120 characters, a full stop) saying what it is for."""
    bad = []
    for p in _package_files(os.path.join(ROOT, "exactmem")):
        with open(p, encoding="utf-8") as fh:
            doc = ast.get_docstring(ast.parse(fh.read())) or ""
        first = doc.split("\n")[0].rstrip()
        if not first or len(first) > 120 or not first.endswith("."):
            bad.append(f"{os.path.relpath(p, ROOT)}: {first!r}")
    assert not bad, f"{len(bad)} module(s) without a one-line summary:\n  " + "\n  ".join(bad)
