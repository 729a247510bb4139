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

Dynamic imports (``importlib.import_module`` with a string) are not seen.
"""

from __future__ import annotations

import ast
import os
import textwrap
from typing import Dict, List

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


def import_graph(root: str, package: str) -> nx.DiGraph:
    """The import graph of the package in directory ``root`` (named ``package``), as above."""
    mods = _modules(root, package)
    G = nx.DiGraph()
    G.add_nodes_from(mods)
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        is_pkg = os.path.basename(path) == "__init__.py"
        own_pkg = mod if is_pkg else mod.rpartition(".")[0]
        own_parents = set(_ancestors(mod))
        for node in ast.walk(tree):
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
    G = import_graph(os.path.join(ROOT, "exactmem"), "exactmem")
    assert G.number_of_nodes() > 30 and G.number_of_edges() > 50  # the scan did see the package
    cycles = import_cycles(G)
    assert not cycles, _describe(cycles)


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
