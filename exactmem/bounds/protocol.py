"""Lower-bound files: ``proofs/lower_bounds.py`` states the lower-bound theorems.

Construction proof files (``docs/proof-files.md``) define ``THEOREMS`` that ``certify``
builds. Lower bounds build no model; a lower-bound file defines ``LOWER_BOUNDS``, a list of
:class:`BoundTheorem`: a statement, its source, a ``run(params) -> Report`` function that
checks it step by step, and default instances tagged with ``--size`` levels.
``python -m exactmem bounds run proofs/lower_bounds.py`` runs them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from .report import Report

SIZES = ("small", "medium", "large", "xlarge")  # the --size levels of exactmem.proof


class BoundsFileError(ValueError):
    """A lower-bound file cannot be loaded or does not define LOWER_BOUNDS properly."""


@dataclass
class BoundTheorem:
    name: str
    statement: str
    source: str
    run: Callable[[Dict[str, Any]], Report]
    instances: List[Any]  # exactmem.proof.Instance

    def instances_for(self, size: str) -> List[Any]:
        return [i for i in self.instances if size in i.sizes]


@dataclass
class BoundRow:
    theorem: str
    instance: str
    ok: bool
    failed: int
    repaired: int
    steps: int
    seconds: float
    report: Report


def load_bounds_file(path: str) -> List[BoundTheorem]:
    """Import ``path`` and return its ``LOWER_BOUNDS``."""
    from ..proof import import_file

    mod = import_file(path, "exactmem_bounds_", BoundsFileError, "lower-bound file")
    items = getattr(mod, "LOWER_BOUNDS", None)
    if not isinstance(items, (list, tuple)) or not items or not all(isinstance(t, BoundTheorem) for t in items):
        raise BoundsFileError(f"{path} must define LOWER_BOUNDS, a non-empty list of exactmem.bounds.BoundTheorem")
    return list(items)


def run_bounds_file(path: str, size: str = "small", only: Optional[str] = None,
                    on_row: Optional[Callable[[BoundRow], None]] = None) -> List[BoundRow]:
    """Run every instance of the given size; one row per (theorem, instance)."""
    if size not in SIZES:
        raise BoundsFileError(f"unknown size {size!r}; use one of {SIZES}")
    rows = []
    for th in load_bounds_file(path):
        if only and only not in th.name:
            continue
        for inst in th.instances_for(size):
            t0 = time.perf_counter()
            rep = th.run(dict(inst.params))
            row = BoundRow(th.name, inst.name, rep.ok, len(rep.failed), len(rep.repaired), len(rep.steps),
                           time.perf_counter() - t0, rep)
            rows.append(row)
            if on_row:
                on_row(row)
    return rows


def format_rows(rows: Sequence[BoundRow]) -> str:
    lines = ["| theorem | instance | verdict | steps | repaired | failed | time (s) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.theorem} | {r.instance} | {'CHECKED' if r.ok else 'FAILED'} | {r.steps} | {r.repaired} "
                     f"| {r.failed} | {r.seconds:.2f} |")
    return "\n".join(lines)
