"""Compiled exact kernels (numba), optional.

Everything here is an *accelerator*: integer arithmetic on fixed-width limbs with exact carries,
compiled with numba when it is installed. No floating point is used anywhere. When numba is
missing (or ``EXACTMEM_NO_NUMBA=1``), :data:`AVAILABLE` is False and the callers keep their
NumPy / Python-int paths: a compiled path falls back, it never fails.

``kernels`` (imported lazily through :func:`kernels`) holds the compiled functions:
conversions between Python ints and limb arrays, one exact affine+ReLU step over a batch of
multi-limb integers, and a hash-based de-duplication of int64 rows. See ``exactmem/native/limbs.py``.
"""

from __future__ import annotations

import importlib.util
import os

__all__ = ["AVAILABLE", "NATIVE_MIN_VALUES", "kernels", "first_index_rows"]

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


HASH_MIN_ROWS = 4096  # fewer rows: np.unique (no numba start-up for small runs)


def first_index_rows(A):
    """For an int64 array A of shape (n,) or (n, w): per row, the index of its class of equal rows
    (classes numbered in order of first occurrence) and the first row of each class, as int64
    arrays — by a compiled hash table, O(n). None without numba, or below :data:`HASH_MIN_ROWS`
    rows, where loading numba costs more than the sort it saves (callers use ``np.unique``)."""
    if len(A) < HASH_MIN_ROWS:
        return None
    k = kernels()
    if k is None:
        return None
    import numpy as np

    A = np.ascontiguousarray(A, dtype=np.int64)
    if A.ndim == 1:
        A = A.reshape(-1, 1)
    return k.first_index_rows(A)
