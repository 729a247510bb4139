"""The MkDocs site (mkdocs.yml): every page of docs/ is in the nav, and the strict build passes.

The cheap tests read mkdocs.yml only (PyYAML); the slow one runs ``mkdocs build --strict``
into a temporary folder when MkDocs and the site's plugins are installed (the ``docs``
extra) and is skipped otherwise.
"""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
CONFIG = os.path.join(ROOT, "mkdocs.yml")


def config():
    yaml = pytest.importorskip("yaml")

    class Loader(yaml.SafeLoader):
        """mkdocs.yml names Python objects (!!python/name:…) that only MkDocs resolves."""

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    with open(CONFIG, encoding="utf-8") as f:
        return yaml.load(f, Loader=Loader)


def nav_pages(nav):
    """The page paths of a MkDocs nav (nested lists of 'path' or {title: path-or-list})."""
    for item in nav:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                if isinstance(value, str):
                    if "://" not in value:
                        yield value
                else:
                    yield from nav_pages(value)


def docs_pages():
    out = set()
    for folder, _, files in os.walk(DOCS):
        for name in files:
            if name.endswith(".md"):
                out.add(os.path.relpath(os.path.join(folder, name), DOCS).replace(os.sep, "/"))
    return out


def test_every_docs_page_is_in_the_nav():
    nav = list(nav_pages(config()["nav"]))
    missing = sorted(docs_pages() - set(nav))
    assert not missing, f"pages of docs/ missing from the nav of mkdocs.yml: {missing}"


def test_the_nav_names_existing_pages_once():
    nav = list(nav_pages(config()["nav"]))
    assert sorted(set(p for p in nav if nav.count(p) > 1)) == [], "a page is in the nav twice"
    absent = [p for p in nav if not os.path.isfile(os.path.join(DOCS, p))]
    assert not absent, f"the nav of mkdocs.yml names pages that are not in docs/: {absent}"


def test_hooks_exist_and_api_pages_name_real_modules():
    for hook in config()["hooks"]:
        assert os.path.isfile(os.path.join(ROOT, hook)), hook
    api = os.path.join(DOCS, "api")
    idents = []
    for name in sorted(os.listdir(api)):
        if name.endswith(".md"):
            with open(os.path.join(api, name), encoding="utf-8") as f:
                idents += re.findall(r"^::: ([\w.]+)", f.read(), re.M)
    assert "exactmem.api" in idents and "exactmem.model" in idents
    sys.path.insert(0, ROOT)
    try:
        unknown = [m for m in idents if importlib.util.find_spec(m) is None]
    finally:
        sys.path.remove(ROOT)
    assert not unknown, f"docs/api names modules that do not exist: {unknown}"


def test_tutorial_pages_show_the_notebook_outputs():
    spec = importlib.util.spec_from_file_location("notebook_pages", os.path.join(DOCS, "tutorials", "notebook_pages.py"))
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.notebook_markdown(os.path.join(DOCS, "tutorials", "01-memorize-five-sequences.ipynb"))
    assert page.startswith("# Tutorial 1")
    assert '```text title="output"\nCERTIFIED' in page
    assert page.count('<img alt="figure" src="data:image/png;base64,') == 2
    assert hook._fence("a ``` b", "text").startswith("````text\n")


def _site_tools_installed():
    return all(importlib.util.find_spec(m) is not None for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"))


SPHINX_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`")


def test_docstrings_use_markdown_cross_references_not_sphinx_roles():
    """mkdocstrings renders Google-style Markdown: a Sphinx role (:func:`x`) would show literally.

    Cross-references are autorefs, ``[`x`][exactmem.full.path]`` for an object the site documents,
    plain ``x`` code otherwise (an unresolved autoref fails the strict build).
    """
    import ast

    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "exactmem")):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    for m in SPHINX_ROLE.finditer(node.value.value):
                        found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: {m.group(0)}")
    assert not found, f"{len(found)} Sphinx role(s) in docstrings:\n  " + "\n  ".join(found[:40])


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """The site built once with ``mkdocs build --strict`` (skipped without the docs extra)."""
    if not _site_tools_installed():
        pytest.skip("mkdocs, mkdocs-material or mkdocstrings[python] not installed (the docs extra)")
    site = tmp_path_factory.mktemp("mkdocs") / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", CONFIG, "-d", str(site)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return site, r


@pytest.mark.slow
def test_mkdocs_build_strict(built_site):
    site, r = built_site
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    assert (site / "tutorials" / "01-memorize-five-sequences" / "index.html").is_file()
    assert (site / "api" / "library" / "index.html").is_file()


@pytest.mark.slow
def test_built_site_renders_no_sphinx_roles(built_site):
    """The API reference shows cross-references as links or code, never ':func:' text."""
    site, r = built_site
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    role = re.compile(r":(?:func|class|meth|mod|data|attr|exc):")
    found = []
    for html in sorted(site.rglob("*.html")):
        for m in role.finditer(html.read_text(encoding="utf-8")):
            found.append(f"{html.relative_to(site)}: {m.group(0)}")
    assert not found, f"{len(found)} Sphinx role(s) rendered literally:\n  " + "\n  ".join(found[:40])
    api = (site / "api" / "library" / "index.html").read_text(encoding="utf-8")
    assert 'href="#exactmem.api.check_data"' in api or 'href="./#exactmem.api.check_data"' in api
