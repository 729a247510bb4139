"""A certificate check sharded over examples on a Dask cluster (issue 13; ``docs/scaling.md``).

The process that asks reads and parses the certificate once (every field validated, the hash
verified) and checks the claims. The certificate's bytes are broadcast to the workers; each
worker parses them once (kept for its later shards) and checks contiguous slices of examples
with the kernel's ``check_examples`` (or the accelerator's ``check_examples_fast``, which
returns the same verdicts). The shards' verdicts are combined so that the result equals the
single-process check: the lowest-indexed refutation wins (shards are contiguous and the
kernel reports a shard's first failure); otherwise any undecided shard makes the verdict
UNKNOWN; CERTIFIED needs a CERTIFIED verdict for every shard, and the shards must cover every
example exactly once — a shard whose worker died is re-run by Dask, and one that still cannot
be checked leaves the verdict UNKNOWN, never CERTIFIED on partial coverage.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from fractions import Fraction
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from ..certificate.checker import (Budget, LimitExceeded, Limits, MalformedCertificate, Verdict, check_claims,
                                   check_examples, combine_verdicts, decode_certificate, parse_certificate, precision_cap)
from ..certificate.chunkfiles import chunk_reader
from ..certificate.schema import read_bytes
from ..certificate.fastcheck import (GROUP_EXAMPLES, check_examples_fast, chunk_groups, fast_supported,
                                    merged_chunks)
from .cluster import dask_client, worker_count

_PARSED: dict = {}  # per worker process: the certificate parsed for its shards, by hash
SHARD_EXAMPLES = 12_500  # default shard size of the fast engine (the pure kernel: 4 shards per worker)
PROGRESS_TOPIC = "exactmem-check-progress"  # Dask event topic of the per-worker progress
REPORT_NS = 10 ** 9  # a worker reports at most once a second


def shard_ranges(n: int, shards: int) -> List[Tuple[int, int]]:
    """``shards`` contiguous, nearly equal ranges [lo, hi) covering 0..n−1 (empty ones dropped)."""
    k = max(1, min(shards, n))
    cuts = [n * i // k for i in range(k + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


class _Reporter:
    """Worker side of the per-worker progress: at most one event a second (Dask's
    ``Worker.log_event`` on PROGRESS_TOPIC) saying which shard this worker checks and how far
    it got; nothing when the check asked for no progress (``check`` None) or outside a worker."""

    def __init__(self, check: Optional[str], lo: int, hi: int, unit: str):
        self.check, self.lo, self.hi, self.unit, self.last = check, lo, hi, unit, None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic_ns()
        if self.check is None or (self.last is not None and now - self.last < REPORT_NS and done < total):
            return
        self.last = now
        try:
            from distributed import get_worker

            w = get_worker()
        except (ImportError, ValueError):  # not running in a Dask worker
            return
        w.log_event(PROGRESS_TOPIC, {"check": self.check, "worker": str(w.name if w.name is not None else w.address),
                                     "lo": self.lo, "hi": self.hi, "done": done, "total": total, "unit": self.unit})


def check_shard(data: bytes, name: str, digest: str, lo: int, hi: int, cap: int, limits: Limits, engine: str,
                chunks: Optional[List[int]] = None, chunk_data: Optional[List[bytes]] = None,
                report: Optional[str] = None) -> Tuple[int, int, Verdict]:
    """Worker task: the kernel's verdict on examples lo..hi−1 of the certificate in ``data`` (for
    a version-2 certificate: on the consecutive chunks ``chunks``, whose bytes are ``chunk_data``).
    ``report``: the check's id for progress events (layers for the fast engine, else the shard)."""
    progress = _Reporter(report, lo, hi, "layers" if engine == "fast" else "shard")
    progress(0, 1)
    budget = Budget(limits)
    if _PARSED.get("digest") != digest:
        _PARSED.clear()
        doc = decode_certificate(data, name, limits)
        if doc.get("hash") != digest:
            raise MalformedCertificate(f"{name}: the bytes a worker received are not the certificate being checked")
        _PARSED.update(digest=digest, cert=parse_certificate(doc, budget))
    cert = _PARSED["cert"]
    if chunks is not None:
        cert, lo, hi = merged_chunks(cert, chunks, chunk_data, budget), 0, hi - lo
    if engine == "fast":
        return cert.first + lo, cert.first + hi, check_examples_fast(cert, lo, hi, cap, budget, progress)
    v = check_examples(cert, range(lo, hi), cap, budget)
    progress(1, 1)
    return cert.first + lo, cert.first + hi, v


def check_sharded(path: str, *, workers: Optional[int] = 2, scheduler: Optional[str] = None, client=None,
                  shards: Optional[int] = None, limits: Optional[Limits] = None, max_precision: Optional[int] = None,
                  engine: str = "auto", on_shard: Optional[Callable[[int, int, int, Verdict], None]] = None,
                  on_workers: Optional[Callable[[Dict[str, dict]], None]] = None) -> Verdict:
    """Check the certificate at ``path`` on a Dask cluster (see the module docstring): the same
    verdict and witness as ``check_certificate``. ``shards`` defaults to 4 per worker (pure
    kernel) or shards of at least SHARD_EXAMPLES examples, one per worker at least (fast);
    ``engine`` auto/fast uses the batched accelerator where it applies; ``on_shard(done, total,
    lo, verdict)`` reports each finished shard; ``on_workers(state)`` the per-worker progress
    (worker name → its latest event: shard lo/hi, done/total in ``unit``; see worker_status)."""
    limits = limits or Limits()
    budget = Budget(limits)
    data = read_bytes(path, limits)  # the bytes the workers get: read once, within max_bytes
    doc = decode_certificate(data, path, limits)
    try:
        cert = parse_certificate(doc, budget)
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, f"{x} while reading the certificate", None, {}, x.limit)
    cap = precision_cap(cert, max_precision, budget.limits)
    refuted = check_claims(cert)
    n = cert.measured["n_examples"]
    if refuted or not n:
        return refuted or check_examples(cert, range(0), cap, budget)
    eng = "fast" if engine in ("auto", "fast") and fast_supported(cert) else "pure"
    name = os.path.basename(path)
    read_chunk = chunk_reader(os.path.dirname(os.path.abspath(path)), limits)
    with dask_client(workers, scheduler, client) as c, _subscribed(c, on_workers) as report:
        nw = worker_count(c)
        if cert.chunks is None:  # the fast engine pays a cost per layer and shard: few, large shards
            ranges = shard_ranges(n, shards or (max(nw, -(-n // SHARD_EXAMPLES)) if eng == "fast" else 4 * nw))
        else:  # a version-2 certificate: its chunks, grouped for the fast engine (a cost per layer and shard)
            size = max(1, min(GROUP_EXAMPLES, -(-n // nw))) if eng == "fast" else 1
            groups = chunk_groups(cert, size)
            ranges = [(cert.chunks[g[0]][3], cert.chunks[g[-1]][3] + cert.chunks[g[-1]][2]) for g in groups]
        blob = c.scatter(data, broadcast=True, hash=False)  # unique keys: never shared with a cancelled check
        futures = {}
        for i, (lo, hi) in enumerate(ranges):
            left = None if budget.deadline is None else Fraction(max(1, budget.deadline - time.monotonic_ns()), 10 ** 9)
            shard_limits = replace(budget.limits, time_limit=left)  # what is left of the verifier's time
            # a version-2 chunk goes to the worker that checks it, and to no other
            chunk = () if cert.chunks is None else (groups[i], [c.scatter(read_chunk(cert.chunks[k][0]), hash=False)
                                                               for k in groups[i]])
            f = c.submit(check_shard, blob, name, doc["hash"], lo, hi, cap, shard_limits, eng, *chunk, report=report,
                         pure=False, key=f"exactmem-check-{doc['hash'][7:19]}-{lo}-{time.monotonic_ns()}")
            futures[f] = (lo, hi)
        parts = _gather(futures, on_shard)
        unit = f"{len(cert.chunks)} chunks in " if cert.chunks else ""
        where = f"{unit}{len(ranges)} shards on {nw} worker{'s' if nw > 1 else ''}, {eng} engine"
    return combine_verdicts(cert, parts, where)


def _gather(futures: dict, on_shard) -> List[Tuple[int, int, object]]:
    """Results as they complete; once a shard refutes, the shards after it are cancelled."""
    from distributed import as_completed

    parts, first_refuted = [], None
    for f in as_completed(list(futures)):
        lo, hi = futures[f]
        if first_refuted is not None and lo > first_refuted:
            continue
        try:
            _, _, v = f.result()
        except Exception as e:  # noqa: BLE001 — a shard that cannot be checked is reported, never certified
            v = e
        parts.append((lo, hi, v))
        if on_shard is not None:
            on_shard(len(parts), len(futures), lo, v)
        if isinstance(v, Verdict) and v.status == "REFUTED" and (first_refuted is None or lo < first_refuted):
            first_refuted = lo
            for g, (glo, _) in futures.items():
                if glo > lo:
                    g.cancel()
    return parts  # with a refutation, every shard before it is here (none of them is cancelled)


@contextmanager
def _subscribed(client, on_workers: Optional[Callable[[Dict[str, dict]], None]]) -> Iterator[Optional[str]]:
    """Listen to the workers' progress events of one check (a fresh id) while the body runs;
    yields the id to pass to the shards (None: no progress wanted)."""
    if on_workers is None:
        yield None
        return
    check, state, lock = f"{os.getpid()}-{time.monotonic_ns()}", {}, threading.Lock()

    def handler(event):
        msg = event[1]
        if isinstance(msg, dict) and msg.get("check") == check:
            with lock:
                state[msg["worker"]] = msg
                snapshot = dict(state)
            on_workers(snapshot)

    client.subscribe_topic(PROGRESS_TOPIC, handler)
    try:
        yield check
    finally:
        client.unsubscribe_topic(PROGRESS_TOPIC)


def worker_status(state: Dict[str, dict]) -> str:
    """One line for the per-worker progress, e.g. ``worker 0: examples 0-49999, layer 1200/4614;
    worker 1: ...`` (pure-kernel shards show only which shard runs)."""
    parts = []
    for name in sorted(state, key=lambda w: (len(w), w)):
        m = state[name]
        where = f"worker {name.split('://')[-1]}: examples {m['lo']}-{m['hi'] - 1}"
        if m["done"] >= m["total"]:
            where += ", done"
        elif m["unit"] == "layers" and m["done"]:
            where += f", layer {m['done']}/{m['total']}"
        else:
            where += ", started"
        parts.append(where)
    return "; ".join(parts)
