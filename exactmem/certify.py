"""``certify``: build every theorem instance of a proof file, write certificates, check them.

Pipeline per instance (data flows one way): dataset → construction → model → exact forward
pass (fast engine) → certificate file → independent checker (re-reads the file) → verdict.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from .certificate.checker import Verdict, check_certificate, load_certificate
from .certificate.writer import build_certificate, write_certificate
from .data.dataset import DataError
from .model.forward import InputError
from .model.layers import ModelError
from .model.forward import decode_output, forward
from .model.measure import measure, paper_counts
from .proof import Theorem, load_proof_file


@dataclass
class Row:
    theorem: str
    instance: str
    verdict: str
    params: int
    width: int
    depth: int
    max_bits: int
    total_bits: int
    seconds: float
    path: str
    message: str = ""
    claims: List[str] = field(default_factory=list)
    paper_counts: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    witness: Optional[dict] = None


def _progress(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def certify_instance(theorem: Theorem, inst, seed: int, out_dir: str, gzip_output: bool = False,
                     backend: str = "auto", quiet: bool = False, prefix: str = "") -> Row:
    """Build, evaluate, write and independently check one instance."""
    t0 = time.perf_counter()
    _progress(f"{prefix}{theorem.name} [{inst.name}] building ...", quiet)
    try:
        built = theorem.build(dict(inst.params), seed)
    except (DataError, ModelError, InputError) as e:
        raise type(e)(f"{theorem.name} [{inst.name}]: {e}") from e
    model, ds = built.model, built.dataset
    _progress(f"{prefix}{theorem.name} [{inst.name}] forward pass on {len(ds)} examples ...", quiet)
    res = forward(model, ds.inputs, backend=backend)
    outputs = [decode_output(model, o) if res.exact else None for o in res.outputs]
    if not res.exact and model.decode == "argmax":
        outputs = list(ds.labels)  # claimed; the checker decides with certified intervals
    m = measure(model)
    doc = build_certificate(theorem.name, inst.name, seed, model, ds, outputs, built.claims,
                            error_bound=built.error_bound,
                            meta={"source": theorem.source, "statement": theorem.statement,
                                  "params": {k: str(v) for k, v in inst.params.items()},
                                  "info": {k: str(v) for k, v in built.info.items()}})
    fname = f"{theorem.name}.{inst.name}.json" + (".gz" if gzip_output else "")
    path = write_certificate(doc, os.path.join(out_dir, fname))
    _progress(f"{prefix}{theorem.name} [{inst.name}] checking {path} ...", quiet)
    verdict: Verdict = check_certificate(load_certificate(path))
    dt = time.perf_counter() - t0
    return Row(theorem.name, inst.name, verdict.status, m.n_params, m.width, m.depth, m.max_bits, m.total_bits,
               dt, path, verdict.message, [str(c) for c in built.claims], paper_counts(model), built.info,
               verdict.witness)


def certify_file(path: str, out_dir: str = "certificates", seed: int = 0, size: str = "small",
                 gzip_output: bool = False, backend: str = "auto", quiet: bool = False,
                 only: Optional[str] = None, on_row: Optional[Callable[[Row], None]] = None) -> List[Row]:
    """Certify every instance of every theorem in the proof file at ``path``."""
    theorems = load_proof_file(path)
    jobs = [(t, i) for t in theorems if only is None or only in t.name for i in t.instances_for(size)]
    rows = []
    for k, (t, inst) in enumerate(jobs, 1):
        row = certify_instance(t, inst, seed, out_dir, gzip_output, backend, quiet, prefix=f"[{k}/{len(jobs)}] ")
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def _claims_cell(r: Row) -> str:
    """'k/k hold' when certified; the failing claim when a claim refuted the certificate."""
    if r.witness and "claim" in r.witness:
        c = r.witness["claim"]
        return f"FAILS {c.get('quantity')} {c.get('op')} {c.get('bound')} (is {r.witness.get('measured')})"
    k = len(r.claims)
    return f"{k}/{k} hold" if r.verdict == "CERTIFIED" else f"{k} (not reached)" if r.verdict == "REFUTED" else "?"


def format_table(rows: List[Row]) -> str:
    """Markdown summary table: theorem, instance, verdict, params, width, depth, bits, time."""
    head = ["theorem", "instance", "verdict", "claims", "params", "width", "depth", "max bits", "total bits",
            "time (s)"]
    body = [[r.theorem, r.instance, r.verdict, _claims_cell(r), str(r.params), str(r.width), str(r.depth),
             str(r.max_bits), str(r.total_bits), f"{r.seconds:.2f}"] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(b) for b in body]
    return "\n".join(out)
