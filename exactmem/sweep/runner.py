"""Running a sweep: every unfinished point of a spec, in this process or on a Dask cluster, then the tables.

Every point of a spec not yet finished in the output directory runs in this process or as a task on
a Dask cluster; then ``sweep.json`` and the tables are written.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List

from ..progress import Progress
from .point import run_point
from .results import POINTS_FILE, SWEEP_FILE, _append, load_records, summarize_record, sweep_document, \
    write_json_atomic
from .spec import SweepSpec, _slug, plan
from .tables import write_tables as _write_tables


def _worker(point, verbose):  # top-level for pickling
    if _LIMITS is None:
        _init_worker()
    return run_point(point, verbose)


_LIMITS = None


def _init_worker():
    """One BLAS thread per worker process, so K workers do not oversubscribe the CPUs."""
    global _LIMITS
    try:
        from threadpoolctl import threadpool_limits

        _LIMITS = threadpool_limits(limits=1)
    except Exception:  # pragma: no cover - speed only
        _LIMITS = None


@dataclass
class SweepRun:
    out_dir: str
    records: List[Dict[str, Any]]  # this grid's records (finished ones), grid order
    ran: int
    skipped: int
    errors: List[Dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def run_sweep(spec: SweepSpec, out_dir: str, workers: int = 1, quiet: bool = False, verbose: bool = False,
              fresh: bool = False, write_tables: bool = True, scheduler=None) -> SweepRun:
    """Run every point of ``spec`` not already finished in ``out_dir``; write ``sweep.json``
    (all finished points of the directory) and the tables. ``workers`` > 1 or ``scheduler``:
    the points are Dask tasks (docs/scaling.md); each finished point is recorded at once, so an
    interrupted sweep resumes where it stopped."""
    t_start = time.perf_counter()
    pts = plan(spec)
    os.makedirs(out_dir, exist_ok=True)
    done = load_records(out_dir)
    todo = [p for p in pts if fresh or p["key"] not in done]
    skipped = len(pts) - len(todo)

    # progress on stderr (exactmem.progress): a bar on a terminal, plain lines otherwise, nothing when
    # quiet; --verbose prints from inside the points, so it gets plain lines (no bar to break)
    prog = Progress(len(todo), "sweep", "point", quiet=quiet, mode="plain" if verbose else None)
    prog.note(f"sweep: {len(pts)} points ({skipped} already in {out_dir}/{POINTS_FILE}, {len(todo)} to run"
              + (f", {scheduler or f'{workers} Dask workers'}" if workers > 1 or scheduler else "") + ")")
    for p in todo:
        p["out_dir"] = out_dir
    errors: List[Dict[str, Any]] = []

    def record(rec):
        if rec.get("status") == "done":
            _append(out_dir, rec)
            done[rec["key"]] = rec
        else:
            errors.append(rec)
        p = rec["point"]
        prog.update(1, f"{p['theorem']} {_slug(p)} seed {p['seed']} {p['task']}: {summarize_record(rec)} "
                       f"({rec['seconds']:.1f} s)")

    order = sorted(todo, key=lambda p: -_cost_hint(p))
    try:
        if (workers <= 1 and not scheduler) or len(todo) <= 1:
            for p in order:  # inside a point: its stage at once, then what it evaluates (plain: every 10 s)
                label = f"{p['theorem']} {_slug(p)} seed {p['seed']} {p['task']}"
                prog.stage(label, f"{label}: building the instance")
                record(run_point(p, verbose, log=None if verbose else prog.status))
        else:  # points as Dask tasks: an embedded LocalCluster of `workers` processes, or a scheduler
            from distributed import as_completed

            from ..distributed.cluster import dask_client

            with dask_client(workers, scheduler) as client:
                futs = [client.submit(_worker, p, verbose, pure=False) for p in order]
                for f in as_completed(futs):
                    record(f.result())
    finally:  # also after Ctrl-C: sweep.json and the tables hold every finished point
        prog.close()
        doc = sweep_document(done.values())
        write_json_atomic(os.path.join(out_dir, SWEEP_FILE), doc)
        if write_tables:
            _write_tables(doc, out_dir)
    recs = [done[p["key"]] for p in pts if p["key"] in done]
    for e in errors:  # even with quiet
        print(f"exactmem: error: {e['point']['theorem']} {_slug(e['point'])} seed {e['point']['seed']} {e['point']['task']}: "
              f"{e['error']}", file=sys.stderr, flush=True)
    return SweepRun(out_dir, recs, len(todo), skipped, errors, time.perf_counter() - t_start)


def _cost_hint(p) -> float:
    """Bigger instances first, so parallel workers finish together (a heuristic only)."""
    v = 1.0
    for k in ("N", "V", "n", "H", "T"):
        x = p["params"].get(k)
        if isinstance(x, int) and not isinstance(x, bool) and x > 0:
            v *= x
    return v * (3 if p["task"] == "quant-float" else 1)
