"""Every ```python block of docs/tutorials/*.md is executed, in order, one session per page.

A block directly preceded by ``<!-- needs: MODULE -->`` is skipped (the rest of the page
still runs) when MODULE cannot be imported, so the tutorials run without optional extras.
The blocks assert what they claim, so a tutorial that drifts from the code fails here.
"""

import importlib
import os
import re
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = os.path.join(ROOT, "docs", "tutorials")
BLOCK = re.compile(r"(?:<!--\s*needs:\s*([\w., ]+?)\s*-->\s*\n)?```python\n(.*?)```", re.S)
TIME_LIMIT = 20.0  # seconds per page (each is meant to take a few seconds)


def blocks(text):
    """(needed modules, code, line number) of each python block."""
    out = []
    for m in BLOCK.finditer(text):
        needs = [s.strip() for s in (m.group(1) or "").replace(",", " ").split() if s.strip()]
        out.append((needs, m.group(2), text.count("\n", 0, m.start(2)) + 1))
    return out


def _importable(mod: str) -> bool:
    try:
        importlib.import_module(mod)
        return True
    except ImportError:
        return False


def run_page(path, workdir):
    """Execute the page's blocks in one namespace inside ``workdir``; returns blocks run."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ns = {"__name__": "__tutorial__"}
    ran = 0
    old = os.getcwd()
    os.chdir(workdir)
    try:
        for needs, code, line in blocks(text):
            if not all(_importable(mod) for mod in needs):
                continue
            try:
                exec(compile(code, f"{os.path.basename(path)}:{line}", "exec"), ns)
            except Exception as e:
                raise AssertionError(f"{os.path.basename(path)}, block at line {line} failed: "
                                     f"{type(e).__name__}: {e}") from e
            ran += 1
    finally:
        os.chdir(old)
    return ran


PAGES = sorted(p for p in os.listdir(TUTORIALS) if p.endswith(".md")) if os.path.isdir(TUTORIALS) else []


def test_there_are_four_tutorials():
    assert len(PAGES) >= 4, PAGES
    for p in PAGES:
        with open(os.path.join(TUTORIALS, p), encoding="utf-8") as f:
            assert blocks(f.read()), f"{p} has no python block"


@pytest.mark.parametrize("page", PAGES)
def test_tutorial_runs(page, tmp_path, capsys):
    t = time.perf_counter()
    ran = run_page(os.path.join(TUTORIALS, page), tmp_path)
    dt = time.perf_counter() - t
    assert ran > 0
    assert dt < TIME_LIMIT, f"{page} took {dt:.1f} s; tutorials must run in a few seconds"


def test_runner_reports_a_failing_block(tmp_path):
    page = tmp_path / "bad.md"
    page.write_text("# t\n\n```python\nx = 1\n```\n\ntext\n\n```python\nassert x == 2, 'drifted'\n```\n")
    with pytest.raises(AssertionError, match=r"bad.md, block at line 10 failed: AssertionError: drifted"):
        run_page(str(page), tmp_path)


def test_runner_shares_one_namespace_and_honours_needs(tmp_path):
    page = tmp_path / "ok.md"
    page.write_text("```python\nx = 41\n```\n<!-- needs: no_such_module_xyz -->\n```python\nraise SystemExit\n```\n"
                    "```python\nassert x + 1 == 42\n```\n")
    assert run_page(str(page), tmp_path) == 2
