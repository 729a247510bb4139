"""Test-suite wide markers.

``needs_torch``: every test of a module that asks for PyTorch (``pytest.importorskip("torch")``,
at module level or in a test) — so that CI, after running the README's test command without
PyTorch (those tests skip), can run exactly them again with it: ``pytest -m needs_torch``
(``.ci/run``)."""

import functools

import pytest


@functools.lru_cache(maxsize=None)
def _asks_for_torch(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return 'importorskip("torch")' in text or "importorskip('torch')" in text


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _asks_for_torch(str(item.fspath)):
            item.add_marker(pytest.mark.needs_torch)
