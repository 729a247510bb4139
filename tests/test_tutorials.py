"""The tutorials: Jupyter notebooks in docs/tutorials/, each paired with jupytext Markdown.

``NAME.ipynb`` is the notebook, stored executed with its outputs; ``NAME.md`` is the same cells
in jupytext's Markdown (docs/tutorials/jupytext.toml): the readable diff and the docs page.
``python docs/tutorials/execute.py`` re-executes them from the .md files. Tested here:

* the pairs are complete and agree: jupytext reads each .md into exactly the .ipynb's cells
  (needs jupytext, the ``docs`` extra; skipped without it), so a stale pair fails;
* each notebook is stored executed top to bottom (code cells numbered 1, 2, …, no error);
* each notebook's code runs in this process, cell after cell in one namespace (no Jupyter
  needed), within ``TIME_LIMIT``, and prints exactly the output stored in the notebook: the
  ``assert`` lines make a wrong result fail, and stale outputs fail too;
* every code cell pastes into the plain ``python`` prompt (the REPL ends a compound statement
  at a blank line and refuses a statement right after one without it).

CI also runs the notebooks in a real kernel: ``python -m pytest --nbmake docs/tutorials/``.
"""

import codeop
import contextlib
import io
import json
import os
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = os.path.join(ROOT, "docs", "tutorials")
TIME_LIMIT = 30.0  # seconds per notebook (each takes a few)
OPTIONAL = ("matplotlib",)  # a notebook needing a missing optional extra is skipped, not failed
REEXECUTE = "re-execute: python docs/tutorials/execute.py"


def _names(ext):
    if not os.path.isdir(TUTORIALS):
        return []
    return sorted(p[: -len(ext)] for p in os.listdir(TUTORIALS) if p.endswith(ext) and p[:2].isdigit())


NOTEBOOKS = _names(".ipynb")


def load(name):
    with open(os.path.join(TUTORIALS, name + ".ipynb"), encoding="utf-8") as f:
        return json.load(f)


def source(cell) -> str:
    s = cell["source"]
    return s if isinstance(s, str) else "".join(s)


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def printed(cell) -> str:
    """What a stored code cell printed to stdout."""
    return "".join(source({"source": o["text"]}) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def run_notebook(nb, label, workdir):
    """Execute the code cells in one namespace inside ``workdir``; returns [(cell, stdout)]."""
    from flint import ctx

    ns = {"__name__": "__tutorial__"}
    out = []
    old, old_prec = os.getcwd(), ctx.prec
    ctx.prec = 53  # a fresh kernel's Arb precision: tests run before may have left another one
    os.chdir(workdir)
    try:
        for i, cell in enumerate(code_cells(nb), 1):
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(source(cell), f"{label}, code cell {i}", "exec"), ns)
            except ModuleNotFoundError as e:
                if e.name in OPTIONAL:
                    pytest.skip(f"{label} needs {e.name} (an optional extra)")
                raise AssertionError(f"{label}, code cell {i} failed: {type(e).__name__}: {e}") from e
            except Exception as e:
                raise AssertionError(f"{label}, code cell {i} failed: {type(e).__name__}: {e}") from e
            out.append((cell, buf.getvalue()))
    finally:
        os.chdir(old)
        ctx.prec = old_prec
    return out


def repl_break(code: str):
    """Where pasting ``code`` into the plain interactive interpreter fails, or None.

    Feeds the lines one by one as ``code.InteractiveConsole.push`` does: the buffer is
    compiled in 'single' mode until it is complete, then starts afresh."""
    buf = []
    for n, line in enumerate(code.split("\n") + [""], 1):
        buf.append(line)
        try:
            done = codeop.compile_command("\n".join(buf), "<stdin>", "single")
        except SyntaxError as e:
            return f"line {n} ({line.strip()!r}): {e.msg}"
        if done is not None:
            buf = []
    return None


# ------------------------------------------------------------------------------------- tests

def test_there_are_four_paired_notebooks():
    assert len(NOTEBOOKS) >= 4, NOTEBOOKS
    assert NOTEBOOKS == _names(".md"), "every tutorial is a .ipynb + .md pair (jupytext.toml)"
    for name in NOTEBOOKS:
        assert code_cells(load(name)), f"{name}.ipynb has no code cell"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_pair_agrees(name):
    jupytext = pytest.importorskip("jupytext")
    md = jupytext.read(os.path.join(TUTORIALS, name + ".md"), fmt="md")
    nb = load(name)
    want = [(c.cell_type, c.source.strip()) for c in md.cells]
    have = [(c["cell_type"], source(c).strip()) for c in nb["cells"]]
    assert have == want, (f"{name}.md and {name}.ipynb differ: after editing one, "
                          f"jupytext --sync docs/tutorials/{name}.md (then {REEXECUTE})")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_stored_executed(name):
    cells = code_cells(load(name))
    assert [c.get("execution_count") for c in cells] == list(range(1, len(cells) + 1)), \
        f"{name}.ipynb is not stored executed top to bottom in one kernel; {REEXECUTE}"
    for i, c in enumerate(cells, 1):
        assert not any(o.get("output_type") == "error" for o in c.get("outputs", [])), \
            f"{name}.ipynb, code cell {i} stored an error"
    assert sum(bool(c.get("outputs")) for c in cells) >= len(cells) // 2, f"{name}.ipynb: outputs not kept"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_and_prints_its_stored_outputs(name, tmp_path):
    t = time.perf_counter()
    ran = run_notebook(load(name), f"{name}.ipynb", tmp_path)
    dt = time.perf_counter() - t
    assert dt < TIME_LIMIT, f"{name} took {dt:.1f} s; tutorials must run in a few seconds"
    for i, (cell, out) in enumerate(ran, 1):
        assert out == printed(cell), (f"{name}.ipynb, code cell {i}: prints something else now than "
                                      f"the stored output; {REEXECUTE}")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_cell_pastes_into_the_plain_repl(name):
    for i, cell in enumerate(code_cells(load(name)), 1):
        err = repl_break(source(cell))
        assert err is None, (f"{name}.ipynb, code cell {i} breaks when pasted into the python prompt at "
                             f"{err}: put a blank line after each for/def/with block and none inside one")


def test_repl_check_catches_a_statement_glued_to_a_loop():
    assert repl_break("for i in range(2):\n    print(i)\nx = 1\n")
    assert repl_break("def f():\n    a = 1\n\n    return a\n")  # blank line inside a block
    assert repl_break("for i in range(2):\n    print(i)\n\nx = 1\n") is None
    assert repl_break("x = f(1,\n\n      2)\n") is None


def test_runner_reports_a_failing_cell(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "x = 1\n"},
                    {"cell_type": "markdown", "source": "text"},
                    {"cell_type": "code", "source": ["assert x == 2, ", "'drifted'\n"]}]}
    with pytest.raises(AssertionError, match=r"bad.ipynb, code cell 2 failed: AssertionError: drifted"):
        run_notebook(nb, "bad.ipynb", tmp_path)


def test_runner_shares_one_namespace_and_captures_prints(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "x = 41\n"},
                    {"cell_type": "code", "source": "print(x + 1)\n",
                     "outputs": [{"output_type": "stream", "name": "stdout", "text": ["42\n"]}]}]}
    ran = run_notebook(nb, "ok.ipynb", tmp_path)
    assert [out for _, out in ran] == ["", "42\n"] and printed(ran[1][0]) == "42\n"

