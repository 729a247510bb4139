"""Lower-bound files: ``proofs/lower_bounds.py`` states the lower-bound theorems.

Construction proof files (``docs/proof-files.md``) define ``THEOREMS`` that ``certify``
builds. Lower bounds build no model; a lower-bound file defines ``LOWER_BOUNDS``, a list of
`BoundTheorem`: a statement, its source, a ``run(params) -> Report`` function that
checks it step by step, and default instances tagged with ``--size`` levels.
``python -m exactmem bounds run proofs/lower_bounds.py`` runs them (the file is loaded by
`exactmem.pipeline.loader`, which sits above the proof files). A theorem whose steps are
arithmetic may also give ``certificate(params) -> dict``: its chain as a lower-bound certificate
(``docs/lower-bound-certificates.md``); ``bounds run … --certificate DIR`` writes one per instance
and labels the others "checked by the producer".
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..arith.steps import Report
from ..errors import write_error

SIZES = ("small", "medium", "large", "xlarge", "xxlarge")  # the --size levels of exactmem.proof


class BoundsFileError(ValueError):
    """A lower-bound file cannot be loaded or does not define LOWER_BOUNDS properly."""


@dataclass
class BoundTheorem:
    name: str
    statement: str
    source: str
    run: Callable[[Dict[str, Any]], Report]
    instances: List[Any]  # exactmem.proof.Instance
    certificate: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None  # the chain for the kernel

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
    certificate: str = ""  # the file written, or "" (checked by the producer)


def run_bound_theorems(theorems: Sequence[BoundTheorem], size: str = "small", only: Optional[str] = None,
                       on_row: Optional[Callable[[BoundRow], None]] = None,
                       certificate_dir: Optional[str] = None,
                       builders: Optional[Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]]] = None
                       ) -> List[BoundRow]:
    """Run every instance of the given size; one row per (theorem, instance). With
    ``certificate_dir``, each instance of a theorem that has ``certificate`` is also written there
    as ``THEOREM__INSTANCE.json``; ``builders`` (theorem name -> function) serve theorems whose file
    gives none (``dana_certificates.BUILDERS``)."""
    if size not in SIZES:
        raise BoundsFileError(f"unknown size {size!r}; use one of {SIZES}")
    rows = []
    for th in theorems:
        if only and only not in th.name:
            continue
        for inst in th.instances_for(size):
            t0 = time.perf_counter()
            rep = th.run(dict(inst.params))
            cert = ""
            build = th.certificate or (builders or {}).get(th.name)
            if certificate_dir and build is not None:
                from .certificates import write_document

                cert = os.path.join(certificate_dir, f"{th.name}__{inst.name}.json")
                try:
                    write_document(build(dict(inst.params)), cert)
                except OSError as e:
                    raise BoundsFileError(str(write_error(cert, e))) from None
            row = BoundRow(th.name, inst.name, rep.ok, len(rep.failed), len(rep.repaired), len(rep.steps),
                           time.perf_counter() - t0, rep, cert)
            rows.append(row)
            if on_row:
                on_row(row)
    return rows


def format_rows(rows: Sequence[BoundRow], certificates: bool = False) -> str:
    """The summary table; with ``certificates`` a column names each certificate file or says
    "checked by the producer" (no certificate: the kernel never sees those steps)."""
    cols = ["theorem", "instance", "verdict", "steps", "repaired", "failed", "time (s)"] + (
        ["certificate"] if certificates else [])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(f"| {r.theorem} | {r.instance} | {'CHECKED' if r.ok else 'FAILED'} | {r.steps} | {r.repaired} "
                     f"| {r.failed} | {r.seconds:.2f} |" + (f" {r.certificate or 'checked by the producer'} |"
                                                            if certificates else ""))
    return "\n".join(lines)
