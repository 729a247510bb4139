"""The proof-file protocol (``docs/proof-files.md``).

A proof file is a Python module (for example ``proofs/relu_interpolation.py``) that defines
``THEOREMS``: a list of `Theorem`. Each theorem names its source, states itself in
words, lists its default instances (each tagged with the ``--size`` levels that run it) and
gives a ``build(params, seed)`` function returning a `Built`: the model, the dataset
and the claims, computed exactly from the paper's formulas for this instance. ``build``
never evaluates the model: ``certify`` runs the forward pass, writes the certificate and
asks the independent checker.

The project's own proof files are the package `exactmem.proofs` (installed with
exactmem); the checkout's ``proofs/<name>.py`` re-export them. Loading a proof file, by path or
by a packaged module's bare name (``kajitsuka``), is `exactmem.pipeline.loader`: this module
holds only what a proof file imports, so the proof files sit above it and the loader above them.
"""

from __future__ import annotations

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

    ``hypotheses``: the theorem's hypotheses evaluated on this instance (`Hypothesis`,
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
