"""Loading proof files and lower-bound files, by path or by a packaged module's bare name.

A path imports that Python file; a bare name (``kajitsuka``, no such file in the working
directory) imports the packaged module ``exactmem.proofs.kajitsuka`` (``docs/proof-files.md``).
The types a proof file declares are `exactmem.proof` and `exactmem.bounds.protocol`;
this module sits above the packaged proof files, which it imports by name.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional

from ..bounds.protocol import SIZES as BOUND_SIZES, BoundRow, BoundsFileError, BoundTheorem, run_bound_theorems
from ..proof import ProofFileError, Theorem


def packaged_name(path: str) -> Optional[str]:
    """``path`` if it is a bare name (no directory, no ``.py``) of a module of the package
    `exactmem.proofs` and no file of that name exists; else None."""
    if os.path.exists(path) or not re.fullmatch(r"[A-Za-z]\w*", path):
        return None
    from .. import proofs

    return path if path in proofs.names() else None


def import_file(path: str, prefix: str, error: type = ProofFileError, what: str = "proof file"):
    """Import the Python file at ``path`` as a module; failures raise ``error`` with a clear message.

    A bare name of a packaged proof (``kajitsuka``, see `packaged_name`) imports
    ``exactmem.proofs.<name>`` instead."""
    name = packaged_name(path)
    if name is not None:
        try:
            return importlib.import_module(f"exactmem.proofs.{name}")
        except Exception as e:
            raise error(f"exactmem.proofs.{name} failed to import: {type(e).__name__}: {e}") from e
    if os.path.isdir(path):
        raise error(f"{path} is a directory, not a {what} (give a .py file, e.g. proofs/kajitsuka.py)")
    if not os.path.isfile(path):
        from .. import proofs

        raise error(f"no such {what}: {path} (packaged proofs, by bare name: {', '.join(proofs.names())})")
    name = prefix + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise error(f"cannot import {path} as a Python module")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the file's own error, reported with its type
        raise error(f"{path} failed to import: {type(e).__name__}: {e}") from e
    return mod


class LowerBoundFile(ProofFileError):
    """Raised by ``load_proof_file`` for a file that defines ``LOWER_BOUNDS`` and no ``THEOREMS``:
    ``bounds`` holds them, so ``certify`` runs the file as lower bounds without importing it again."""

    def __init__(self, path: str, bounds: List[BoundTheorem]):
        super().__init__(f"{path} is a lower-bound file (it defines LOWER_BOUNDS, not THEOREMS): run it with "
                         f"`exactmem certify {path}` or `exactmem bounds run {path}`")
        self.path, self.bounds = path, bounds


def load_proof_file(path: str) -> List[Theorem]:
    """Import the proof file at ``path`` and return its ``THEOREMS`` (``LowerBoundFile`` if it
    defines ``LOWER_BOUNDS`` instead)."""
    mod = import_file(path, "exactmem_proof_")
    theorems = getattr(mod, "THEOREMS", None)
    bounds = getattr(mod, "LOWER_BOUNDS", None)
    if theorems is None and isinstance(bounds, (list, tuple)) and bounds and all(
            isinstance(t, BoundTheorem) for t in bounds):
        raise LowerBoundFile(path, list(bounds))
    if not isinstance(theorems, (list, tuple)) or not theorems or not all(isinstance(t, Theorem) for t in theorems):
        raise ProofFileError(f"{path} must define THEOREMS, a non-empty list of exactmem.proof.Theorem")
    return list(theorems)


def source_sha(path: str) -> str:
    """SHA-256 of a proof file's source *and* of the packaged proof modules whose theorems it
    exposes — a re-export like ``proofs/vardi.py`` stays the same when
    ``exactmem/proofs/vardi.py`` changes, so a cache keyed on the file's bytes alone would go
    stale. A bare packaged name hashes that module."""
    mod = import_file(path, "exactmem_proof_sha_")
    files = {os.path.abspath(mod.__file__)}
    for t in list(getattr(mod, "THEOREMS", None) or []) + list(getattr(mod, "LOWER_BOUNDS", None) or []):
        fn = getattr(t, "build", None) or getattr(t, "run", None)
        owner = sys.modules.get(getattr(fn, "__module__", "") or "")
        if owner is not None and owner.__name__.startswith("exactmem.proofs.") and getattr(owner, "__file__", None):
            files.add(os.path.abspath(owner.__file__))
    digests = []
    for f in files:
        with open(f, "rb") as fh:
            digests.append(hashlib.sha256(fh.read()).digest())
    return hashlib.sha256(b"".join(sorted(digests))).hexdigest()


def load_bounds_file(path: str) -> List[BoundTheorem]:
    """Import ``path`` (or a packaged module by bare name) and return its ``LOWER_BOUNDS``."""
    mod = import_file(path, "exactmem_bounds_", BoundsFileError, "lower-bound file")
    items = getattr(mod, "LOWER_BOUNDS", None)
    if not isinstance(items, (list, tuple)) or not items or not all(isinstance(t, BoundTheorem) for t in items):
        raise BoundsFileError(f"{path} must define LOWER_BOUNDS, a non-empty list of exactmem.bounds.BoundTheorem")
    return list(items)


def run_bounds_file(path: str, size: str = "small", only: Optional[str] = None,
                    on_row: Optional[Callable[[BoundRow], None]] = None,
                    certificate_dir: Optional[str] = None,
                    builders: Optional[Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]]] = None,
                    bounds: Optional[List[BoundTheorem]] = None) -> List[BoundRow]:
    """[`exactmem.bounds.protocol.run_bound_theorems`][exactmem.bounds.run_bound_theorems] on the ``LOWER_BOUNDS`` of ``path``."""
    # bounds: the LOWER_BOUNDS already loaded from path (LowerBoundFile), not imported again
    if size not in BOUND_SIZES:
        raise BoundsFileError(f"unknown size {size!r}; use one of {BOUND_SIZES}")
    return run_bound_theorems(bounds if bounds is not None else load_bounds_file(path), size, only, on_row,
                              certificate_dir, builders)
