"""The proof-file protocol (``docs/proof-files.md``).

A proof file is a Python module (for example ``proofs/relu_interpolation.py``) that defines
``THEOREMS``: a list of :class:`Theorem`. Each theorem names its source, states itself in
words, lists its default instances (each tagged with the ``--size`` levels that run it) and
gives a ``build(params, seed)`` function returning a :class:`Built`: the model, the dataset
and the claims, computed exactly from the paper's formulas for this instance. ``build``
never evaluates the model: ``certify`` runs the forward pass, writes the certificate and
asks the independent checker.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional, Sequence

from .certificate.writer import Claim
from .data.dataset import Dataset
from .model.layers import Model

SIZES = ("small", "medium", "large")


class ProofFileError(ValueError):
    """A proof file cannot be loaded or does not follow the protocol."""


@dataclass
class Built:
    """What a construction returns for one instance."""

    model: Model
    dataset: Dataset
    claims: List[Claim]
    error_bound: Optional[Fraction] = None
    info: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Instance:
    name: str
    params: Dict[str, Any]
    sizes: Sequence[str] = ("small",)
    engine: Optional[str] = None  # preferred exact engine for the producer's forward pass (used by --engine auto)

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


def import_file(path: str, prefix: str, error: type = ProofFileError, what: str = "proof file"):
    """Import the Python file at ``path`` as a module; failures raise ``error`` with a clear message."""
    if not os.path.isfile(path):
        raise error(f"no such {what}: {path}")
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
