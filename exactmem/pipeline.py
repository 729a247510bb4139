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
    checker: str = "pure"
    engine: str = "auto"
    timings: dict = field(default_factory=dict)  # seconds: build, forward, write (incl. serialise), check


def _progress(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


CHECKERS = ("pure", "fast")


def resolve_checker(checker: str, size: str) -> str:
    """``auto`` → the pure checker for ``--size small``, the fast exact path for medium/large."""
    if checker == "auto":
        return "pure" if size == "small" else "fast"
    if checker not in CHECKERS:
        raise ValueError(f"unknown checker {checker!r}; use auto, pure or fast")
    return checker


def certify_instance(theorem: Theorem, inst, seed: int, out_dir: str, gzip_output: bool = False,
                     backend: str = "auto", quiet: bool = False, prefix: str = "", checker: str = "pure") -> Row:
    """Build, evaluate, write and independently check one instance.

    ``backend="auto"`` uses the instance's preferred engine if it names one (``Instance.engine``).
    ``checker``: ``"pure"`` (checker.py) or ``"fast"`` (fastcheck.py, same verdicts).
    """
    t0 = time.perf_counter()
    times = {}
    _progress(f"{prefix}{theorem.name} [{inst.name}] building ...", quiet)
    try:
        built = theorem.build(dict(inst.params), seed)
    except (DataError, ModelError, InputError) as e:
        raise type(e)(f"{theorem.name} [{inst.name}]: {e}") from e
    model, ds = built.model, built.dataset
    times["build"] = time.perf_counter() - t0
    engine = getattr(inst, "engine", None) if backend == "auto" else None
    engine = engine or backend
    _progress(f"{prefix}{theorem.name} [{inst.name}] forward pass on {len(ds)} examples (engine {engine}) ...",
              quiet)
    t1 = time.perf_counter()
    res = forward(model, ds.inputs, backend=engine)
    times["forward"] = time.perf_counter() - t1
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
    times["write"] = time.perf_counter() - t1 - times["forward"]
    _progress(f"{prefix}{theorem.name} [{inst.name}] checking {path} ({checker} checker) ...", quiet)
    t2 = time.perf_counter()
    if checker == "fast":
        from .certificate.fastcheck import check_certificate_fast as check
    elif checker == "pure":
        check = check_certificate
    else:
        raise ValueError(f"unknown checker {checker!r}; use pure or fast")
    verdict: Verdict = check(load_certificate(path))
    times["check"] = time.perf_counter() - t2
    dt = time.perf_counter() - t0
    return Row(theorem.name, inst.name, verdict.status, m.n_params, m.width, m.depth, m.max_bits, m.total_bits,
               dt, path, verdict.message, [str(c) for c in built.claims], paper_counts(model), built.info,
               verdict.witness, checker, engine, times)


def certify_file(path: str, out_dir: str = "certificates", seed: int = 0, size: str = "small",
                 gzip_output: bool = False, backend: str = "auto", quiet: bool = False,
                 only: Optional[str] = None, on_row: Optional[Callable[[Row], None]] = None,
                 checker: str = "pure") -> List[Row]:
    """Certify every instance of every theorem in the proof file at ``path``.

    ``checker``: ``pure``, ``fast`` or ``auto`` (pure for ``size="small"``, fast otherwise).
    """
    checker = resolve_checker(checker, size)
    theorems = load_proof_file(path)
    jobs = [(t, i) for t in theorems for i in t.instances_for(size)
            if only is None or only in t.name or only in i.name or only == f"{t.name}/{i.name}"]
    rows = []
    for k, (t, inst) in enumerate(jobs, 1):
        row = certify_instance(t, inst, seed, out_dir, gzip_output, backend, quiet, prefix=f"[{k}/{len(jobs)}] ",
                               checker=checker)
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
    if r.verdict == "CERTIFIED" or (r.witness and "example" in r.witness):  # claims are checked first
        return f"{k}/{k} hold"
    return f"{k} (not reached)" if r.verdict == "REFUTED" else "?"


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
