"""Compiled exact kernels (numba), optional.

Everything here is an *accelerator*: integer arithmetic on fixed-width limbs with exact carries,
compiled with numba when it is installed. No floating point is used anywhere. When numba is
missing (or ``EXACTMEM_NO_NUMBA=1``), `AVAILABLE` is False and the callers keep their
NumPy / Python-int paths: a compiled path falls back, it never fails.

``kernels`` (imported lazily through `kernels`) holds the compiled functions:
conversions between Python ints and limb arrays, one exact affine+ReLU step over a batch of
multi-limb integers, and a hash-based de-duplication of int64 rows or columns
(`equal_classes`). See ``exactmem/native/limbs.py``.
"""

from __future__ import annotations

import importlib.util
import os

__all__ = ["AVAILABLE", "NATIVE_MIN_VALUES", "kernels", "equal_classes", "refinement"]

#: rows past int64 on at least this many distinct values are computed as compiled limb arrays, by
#: the producer's compress engine and the checker's accelerator alike (each reads it as its own
#: module global); below, loading numba costs more than it saves
NATIVE_MIN_VALUES = 1024


def _available() -> bool:
    if os.environ.get("EXACTMEM_NO_NUMBA", "").strip() not in ("", "0"):
        return False
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


AVAILABLE = _available()
_mod = None


def kernels():
    """The compiled kernels module (``exactmem.native.limbs``); None when numba is unavailable
    or fails to import (the callers then take their uncompiled paths)."""
    global _mod, AVAILABLE
    if not AVAILABLE:
        return None
    if _mod is None:
        try:
            from . import limbs as m
        except Exception:  # numba present but broken (e.g. a NumPy it does not support): fall back
            AVAILABLE = False
            return None
        _mod = m
    return _mod


HASH_MIN_ROWS = 4096  # fewer rows, numba not loaded yet: np.unique (no numba start-up for small runs)


def equal_classes(A, columns: bool = False):
    """The classes of equal rows of an int64 array A (n,) or (n, w) — or, with ``columns``, of
    equal columns of A (w, n) — as ``(first, inv)``: the first row (column) of each class and,
    per row (column), the index of its class. A compiled hash table, O(n), classes in order of
    first occurrence, when numba is already loaded or from `HASH_MIN_ROWS` rows on (below,
    loading numba would cost more than the sort it saves); otherwise ``np.unique`` (classes in
    sorted order). Which rows share a class is the same either way: only exact equality counts."""
    import numpy as np

    n = A.shape[-1] if columns else len(A)
    k = _mod if n < HASH_MIN_ROWS else kernels()
    if k is not None and n:
        A = np.ascontiguousarray(A, dtype=np.int64)
        if columns:
            inv, first = k.first_index_cols(A.reshape(-1, n))
        else:
            inv, first = k.first_index_rows(A.reshape(n, -1))
        return first, inv
    if columns:
        A = A.reshape(-1, n).T
    _, first, inv = np.unique(A, axis=0 if A.ndim == 2 else None, return_index=True, return_inverse=True)
    return first, inv.reshape(-1).astype(np.int64)


def refinement(maps, sizes):
    """When the classes of one class map refine all the others' (every class of ``maps[i]`` lies
    inside one class of each other map): ``(i, gathers)``, where ``gathers[k]`` gives, for each
    class of ``maps[i]``, its class in ``maps[k]`` (None for ``maps[i]`` itself); else None.
    ``maps``: int64 arrays of equal length (token → class, classes ``0..sizes[k]-1``). Combining
    such maps is then a gather, not a hash over every token. Exact: checked on every token."""
    import numpy as np

    i = max(range(len(maps)), key=lambda k: sizes[k])
    fine = maps[i]
    gathers = []
    for k, m in enumerate(maps):
        if k == i:
            gathers.append(None)
            continue
        f = np.zeros(sizes[i], dtype=np.int64)  # a class no token has keeps 0 (a valid class)
        f[fine] = m
        if not np.array_equal(f[fine], m):
            return None
        gathers.append(f)
    return i, gathers
