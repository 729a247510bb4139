"""The proof-file protocol (``docs/proof-files.md``).

A proof file is a Python module (for example ``proofs/relu_interpolation.py``) that defines
``THEOREMS``: a list of :class:`Theorem`. Each theorem names its source, states itself in
words, lists its default instances (each tagged with the ``--size`` levels that run it) and
gives a ``build(params, seed)`` function returning a :class:`Built`: the model, the dataset
and the claims, computed exactly from the paper's formulas for this instance. ``build``
never evaluates the model: ``certify`` runs the forward pass, writes the certificate and
asks the independent checker.

The project's own proof files are the package :mod:`exactmem.proofs` (installed with
exactmem); the checkout's ``proofs/<name>.py`` re-export them. Where a path names no file, a
bare name (``kajitsuka``) loads the packaged module ``exactmem.proofs.kajitsuka``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

from .certificate.writer import Claim
from .data.dataset import Dataset
from .model.layers import Model

SIZES = ("small", "medium", "large", "xlarge", "xxlarge")


class ProofFileError(ValueError):
    """A proof file cannot be loaded or does not follow the protocol."""


class Hypothesis(NamedTuple):
    """One hypothesis of the theorem, evaluated exactly on the instance (``docs/proof-files.md``).

    ``holds``: True (proved), False (refuted; ``detail`` gives the witness) or None (not
    decided, e.g. only randomized evidence; ``detail`` says why). It never changes the
    checker's verdict: it says whether the instance lies inside the theorem's hypotheses."""

    name: str
    holds: Optional[bool]
    detail: str = ""


@dataclass
class Built:
    """What a construction returns for one instance.

    ``hypotheses``: the theorem's hypotheses evaluated on this instance (:class:`Hypothesis`,
    or plain ``(name, holds, detail)`` tuples); empty when the theorem declares none.
    ``meta``: structured facts for readers of the certificate, written into its ``meta`` as they
    are (JSON values; never read by the checker): ``stages`` — ``[{"name", "start", "stop"}]``,
    named layer ranges (``inspect --html`` shows them); ``partition`` — one list of example
    indices per head (the head-to-subset graph)."""

    model: Model
    dataset: Dataset
    claims: List[Claim]
    error_bound: Optional[Fraction] = None
    info: Dict[str, Any] = field(default_factory=dict)
    hypotheses: List[Hypothesis] = field(default_factory=list)
    meta: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Instance:
    name: str
    params: Dict[str, Any]
    sizes: Sequence[str] = ("small",)
    engine: Optional[str] = None  # preferred exact engine for the producer's forward pass (used by --engine auto)
    cost: Optional[float] = None  # expected cost, any unit (progress weights its ETA by it); default: from params

    def __post_init__(self):
        bad = [s for s in self.sizes if s not in SIZES]
        if bad:
            raise ProofFileError(f"instance {self.name!r}: unknown size {bad[0]!r}; use {SIZES}")


@dataclass
class Theorem:
    name: str
    statement: str
    source: str
    build: Callable[[Dict[str, Any], int], Built]
    instances: List[Instance]

    def instances_for(self, size: str) -> List[Instance]:
        return [i for i in self.instances if size in i.sizes]


def packaged_name(path: str) -> Optional[str]:
    """``path`` if it is a bare name (no directory, no ``.py``) of a module of the package
    :mod:`exactmem.proofs` and no file of that name exists; else None."""
    if os.path.exists(path) or not re.fullmatch(r"[A-Za-z]\w*", path):
        return None
    from . import proofs

    return path if path in proofs.names() else None


def import_file(path: str, prefix: str, error: type = ProofFileError, what: str = "proof file"):
    """Import the Python file at ``path`` as a module; failures raise ``error`` with a clear message.

    A bare name of a packaged proof (``kajitsuka``, see :func:`packaged_name`) imports
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
        from . import proofs

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


def load_proof_file(path: str) -> List[Theorem]:
    """Import the proof file at ``path`` and return its ``THEOREMS``."""
    mod = import_file(path, "exactmem_proof_")
    theorems = getattr(mod, "THEOREMS", None)
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
