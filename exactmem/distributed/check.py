"""A certificate check sharded over examples on a Dask cluster (issues 13, 24; ``docs/scaling.md``).

The process that asks reads and parses the certificate once (every field validated, the hash
verified) and checks the claims. The certificate's bytes are broadcast to the workers; each
worker parses them once (kept for its later shards) and checks contiguous slices of examples
(version 1) or groups of chunks (version 2, each chunk's bytes sent to the worker that checks
it) with the kernel's ``check_examples`` (or the accelerator's ``check_examples_fast``, which
returns the same verdicts).

The result equals the single-process check's, verdict class and exit code alike: the lowest
refuted or malformed shard decides (a malformed shard raises MalformedCertificate in the
caller, as the single-process check would); otherwise any undecided shard makes the verdict
UNKNOWN; CERTIFIED needs a CERTIFIED verdict for every shard, covering every example exactly
once. A task never raises: a worker returns what stopped it as data, so Dask prints no
traceback. A task that fails for a cluster reason (a killed worker, lost data) is submitted
again, its data scattered again, at most RETRIES more times; a shard that still cannot be
checked leaves the verdict UNKNOWN, never CERTIFIED.

``--time-limit`` is one wall-clock deadline for the whole check, fixed before the certificate is
read: every shard's budget shares it (``Budget(until_ns=...)``), the caller waits for the shards
no longer than it, then cancels what is left and answers UNKNOWN naming ``time_limit``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from ..kernel.checker import (Verdict, check_claims, check_examples, combine_verdicts, conclude,
                                   conflict_verdict, decode_certificate, new_facts, parse_certificate, precision_cap)
from ..certificate.chunkfiles import chunk_reader
from ..certificate.fastcheck import (GROUP_EXAMPLES, check_examples_fast, chunk_groups, fast_supported,
                                    merged_chunks)
from ..kernel.limits import Budget, LimitExceeded, Limits
from ..kernel.schema import MalformedCertificate, read_bytes
from ..kernel.text import fmt
from .cluster import abandon, dask_client, dask_timeout, worker_count

_PARSED: dict = {}  # per worker process: the certificate parsed for its shards, by hash
SHARD_EXAMPLES = 12_500  # default shard size of the fast engine (the pure kernel: 4 shards per worker)
# a graph model's shards, either engine: at most this many examples and about 4 per worker at least (an
# example costs ~0.1-1 s there, a shard nothing much: small shards share the work and a lost worker re-runs little)
GRAPH_SHARD_EXAMPLES = 256
PROGRESS_TOPIC = "exactmem-check-progress"  # Dask event topic of the per-worker progress
REPORT_NS = 10 ** 9  # a worker reports at most once a second
NS = 10 ** 9
WINDOW_PER_WORKER = 2  # shards on the cluster at a time, per worker (the next ones are sent as these finish)
RETRIES = 2  # a shard whose task failed for a cluster reason is submitted again at most this many times
SHORT_MESSAGE = 500  # characters of a worker-side error message kept
# worker-side errors that end the single-process check the same way (``exactmem check``: exit 3)
FATAL = {"RecursionError": RecursionError, "MemoryError": MemoryError}
DASK_LOG_ROOTS = ("distributed", "tornado", "asyncio")


def shard_ranges(n: int, shards: int) -> List[Tuple[int, int]]:
    """``shards`` contiguous, nearly equal ranges [lo, hi) covering 0..n−1 (empty ones dropped)."""
    k = max(1, min(shards, n))
    cuts = [n * i // k for i in range(k + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


class LayerReporter:
    """Worker side of the per-worker progress: at most one event a second (Dask's
    ``Worker.log_event`` on PROGRESS_TOPIC) saying which shard this worker checks (or which
    batch the producer's forward pass evaluates) and how far it got; nothing when no progress
    was asked for (``check`` None) or outside a worker."""

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
                report: Optional[str] = None, until_ns: Optional[int] = None) -> tuple:
    """Worker task: ``(lo, hi, outcome)``, the outcome on examples lo..hi−1 of the certificate in
    ``data`` (for a version-2 certificate: on the consecutive chunks ``chunks``, whose bytes are
    ``chunk_data``). The outcome is the kernel's Verdict, or — never a raised exception, so that
    Dask logs no traceback — ``("malformed", message)`` for a malformed certificate or chunk and
    ``("error", exception type name, message)`` for anything else. A tuple: more per-shard data
    may follow the outcome. ``until_ns``: the check's shared deadline (``time.time_ns()``);
    ``report``: the check's id for progress events."""
    try:
        return (lo, hi, *_shard_verdict(data, name, digest, lo, hi, cap, Budget(limits, until_ns), engine, chunks,
                                        chunk_data, report))
    except MalformedCertificate as e:
        return lo, hi, ("malformed", str(e))
    except LimitExceeded as x:  # e.g. the deadline passed while a chunk was parsed
        return lo, hi, Verdict("UNKNOWN", None, f"{x}; no refutation found", None, {}, x.limit)
    except Exception as e:  # noqa: BLE001 — returned as data: the caller decides (never CERTIFIED)
        return lo, hi, ("error", type(e).__name__, str(e)[:SHORT_MESSAGE])


def _shard_verdict(data: bytes, name: str, digest: str, lo: int, hi: int, cap: int, budget: Budget, engine: str,
                   chunks: Optional[List[int]], chunk_data: Optional[List[bytes]], report: Optional[str]) -> tuple:
    """(verdict, facts, stats) of one shard: the kernel's (or the accelerator's) verdict, the exported
    `DataFacts` of the rows it saw (their input digests and labels, for the caller's count
    of distinct examples) and, for a graph model on the fast engine, how its examples were decided
    (``fastgraph.check`` counts: the caller's note); the certificate is parsed once per worker
    process and kept."""
    progress = LayerReporter(report, lo, hi, "layers" if engine == "fast" else "shard")
    progress(0, 1)
    if _PARSED.get("digest") != digest:
        _PARSED.clear()
        doc = decode_certificate(data, name, budget.limits)
        if doc.get("hash") != digest:
            raise MalformedCertificate(f"{name}: the bytes a worker received are not the certificate being checked")
        _PARSED.update(digest=digest, cert=parse_certificate(doc, budget))
    cert = _PARSED["cert"]
    if engine == "fast" and cert.graph is not None:
        progress.unit = "examples"  # the graph engine reports examples done, not layers
    if chunks is not None:
        cert, lo, hi = merged_chunks(cert, chunks, chunk_data, budget), 0, hi - lo
    facts = new_facts(cert)
    if engine == "fast" and cert.graph is not None:
        from ..fastgraph.check import check_graph_examples

        stats: dict = {}
        return check_graph_examples(cert, lo, hi, cap, budget, progress, facts, stats), facts.export(), stats
    if engine == "fast":
        return check_examples_fast(cert, lo, hi, cap, budget, progress, facts), facts.export()
    v = check_examples(cert, range(lo, hi), cap, budget, facts)
    progress(1, 1)
    return v, facts.export()


def check_sharded(path: str, *, workers: Optional[int] = 2, scheduler: Optional[str] = None, client=None,
                  shards: Optional[int] = None, limits: Optional[Limits] = None, max_precision: Optional[int] = None,
                  engine: str = "auto", on_shard: Optional[Callable[[int, int, int, object], None]] = None,
                  on_workers: Optional[Callable[[Dict[str, dict]], None]] = None,
                  until_ns: Optional[int] = None) -> Verdict:
    """Check the certificate at ``path`` on a Dask cluster (see the module docstring): the same
    verdict and witness as ``check_certificate``, and MalformedCertificate where it raises it.
    ``shards`` defaults to 4 per worker (pure kernel) or shards of at least SHARD_EXAMPLES
    examples, one per worker at least (fast); ``engine`` auto/fast uses the batched accelerator
    where it applies; ``on_shard(done, total, lo, verdict or exception)`` reports each finished
    shard; ``on_workers(state)`` the per-worker progress (worker name → its latest event: shard
    lo/hi, done/total in ``unit``; see worker_status). ``until_ns``: the wall-clock deadline
    (``time.time_ns()``) of the whole check, cluster start included; default: now plus
    ``limits.time_limit``."""
    limits = limits or Limits()
    if until_ns is None and limits.time_limit is not None:
        until_ns = time.time_ns() + _ns(limits.time_limit)
    budget = Budget(limits, until_ns)
    data = read_bytes(path, limits)  # the bytes the workers get: read once, within max_bytes
    doc = decode_certificate(data, path, limits)
    try:
        cert = parse_certificate(doc, budget)
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, f"{x} while reading the certificate", None, {}, x.limit)
    until_ns = _shared_deadline(budget)  # the certificate may have asked for less time
    cap = precision_cap(cert, max_precision, budget.limits)
    refuted = check_claims(cert, budget=budget, cap=cap)
    n = _rows(cert)
    if refuted or not n:
        return refuted or conclude(cert, check_examples(cert, range(0), cap, budget), new_facts(cert), budget)
    eng = engine_for(cert, engine)
    read_chunk = chunk_reader(os.path.dirname(os.path.abspath(path)), limits)
    with _dask_logs_silenced(), dask_client(workers, scheduler, client, until_ns) as c, \
            worker_progress(c, on_workers) as report:
        nw = worker_count(c)
        plan = _plan(cert, n, nw, shards, eng)
        task = (os.path.basename(path), doc["hash"], cap, budget.limits, eng)
        run = _Run(c, data, task, lambda k: read_chunk(cert.chunks[k][0]), until_ns, report, on_shard, len(plan),
                   WINDOW_PER_WORKER * nw)
        run.start(plan)
        run.wait()
        unit = f"{len(cert.chunks)} chunks in " if cert.chunks else ""
        where = f"{unit}{len(plan)} shards on {nw} worker{'s' if nw > 1 else ''}, {eng} engine"
        if cert.graph is not None and eng == "fast":
            where += graph_counts(run.stats)
        v = run.verdict(cert, where)
    if v.status == "CERTIFIED" and cert.graph is not None and eng == "fast":
        v.message = v.message.replace(f"(exact; {where})", f"({where})")  # enclosures decided: not exact arithmetic
    return with_facts(cert, v, run.facts, budget)


def graph_counts(stats: Dict[int, dict]) -> str:
    """How the fast graph engine's shards decided their examples (their ``check_graph_examples``
    counts, summed), as one process says it: ``: a by float64 enclosures, b by double-float
    enclosures, c by the kernel's ladder``; nothing if no shard reported counts."""
    if not any("fast" in s or "pure" in s for s in stats.values()):
        return ""
    from ..fastgraph.check import decided_text

    total = lambda k: sum(s.get(k, 0) for s in stats.values())  # noqa: E731
    return ": " + decided_text(total("fast") - total("precise"), total("precise"), total("pure"))


def engine_for(cert, engine: str) -> str:
    """The engine the shards use: ``fast`` for a layer model the accelerator evaluates and for a graph
    model (the fast graph engine, ``exactmem/fastgraph``: its undecided examples go to the kernel; as in
    one process, ``cli.check.auto_engine``), when ``auto`` or ``fast`` is asked; else ``pure``."""
    if cert.graph is not None:
        return "fast" if engine in ("auto", "fast") else "pure"
    return "fast" if engine in ("auto", "fast") and fast_supported(cert) else "pure"


def with_facts(cert, v: Verdict, parts: Dict[int, tuple], budget: Budget) -> Verdict:
    """The shards' verdict once their facts are merged in example order: a row that repeats an
    input of another shard with another label refutes at that row (the lowest refuting row wins,
    as in one process); else the data quantities join the verdict (``checker.conclude``)."""
    if v.limit == "time_limit":
        return v  # rows unseen: no count to give, and the deadline has passed
    facts, conflict = new_facts(cert), None
    try:
        for lo in sorted(parts):
            budget.tick()
            for c in facts.merge(parts[lo]):
                if conflict is None or c[1] < conflict[1]:
                    conflict = c
    except LimitExceeded as x:
        return v if v.status == "REFUTED" else Verdict("UNKNOWN", None, f"{x} while counting the distinct examples; "
                                                                         "no refutation found", None, cert.measured,
                                                       x.limit)
    if conflict is not None:
        row = v.witness.get("example") if v.status == "REFUTED" and v.witness else None
        if row is None or conflict[1] <= row:  # at its row, a conflict comes before the evaluation
            return conflict_verdict(cert, *conflict)
    return conclude(cert, v, facts, budget)


def _rows(cert) -> int:
    """Rows of the certificate's dataset: its inputs (version 1) or its chunks' examples (version 2)."""
    return len(cert.inputs) if cert.chunks is None else sum(count for _, _, count, _ in cert.chunks)


def _ns(seconds: Fraction) -> int:
    """Whole nanoseconds of an exact number of seconds."""
    return seconds.numerator * NS // seconds.denominator


def _shared_deadline(budget: Budget) -> Optional[int]:
    """The check's wall-clock deadline (``time.time_ns()``): the budget's shared one, moved
    earlier if its own (monotonic) deadline — e.g. lowered by the certificate — comes first."""
    if budget.deadline is None:
        return budget.until_ns
    own = time.time_ns() + budget.deadline - time.monotonic_ns()
    return own if budget.until_ns is None else min(own, budget.until_ns)


@dataclass
class _Shard:
    """One shard: examples lo..hi−1; for a version-2 certificate the chunk indices it holds."""

    lo: int
    hi: int
    chunks: Optional[List[int]] = None
    tries: int = 0  # submissions so far


def _plan(cert, n: int, nw: int, shards: Optional[int], eng: str) -> List[_Shard]:
    """The shards of a check: contiguous example ranges (version 1) or groups of consecutive
    chunks (version 2); the fast engine pays a cost per layer and shard, so it gets few, large ones.
    A graph model costs per example (either engine): shards of at most GRAPH_SHARD_EXAMPLES
    examples, 4 per worker at least (v2: consecutive chunks grouped up to that size)."""
    if cert.graph is not None:
        size = max(1, min(GRAPH_SHARD_EXAMPLES, -(-n // (4 * nw))))
        if cert.chunks is None:
            return [_Shard(lo, hi) for lo, hi in shard_ranges(n, shards or -(-n // size))]
        return [_Shard(cert.chunks[g[0]][3], cert.chunks[g[-1]][3] + cert.chunks[g[-1]][2], g)
                for g in chunk_groups(cert, size)]
    if cert.chunks is None:
        k = shards or (max(nw, -(-n // SHARD_EXAMPLES)) if eng == "fast" else 4 * nw)
        return [_Shard(lo, hi) for lo, hi in shard_ranges(n, k)]
    size = max(1, min(GROUP_EXAMPLES, -(-n // nw))) if eng == "fast" else 1
    return [_Shard(cert.chunks[g[0]][3], cert.chunks[g[-1]][3] + cert.chunks[g[-1]][2], g)
            for g in chunk_groups(cert, size)]


class ShardFailed(Exception):
    """A shard could not be checked: its task raised on its worker (reported as data: type name and
    message), or the cluster could not run it."""


def _cluster_error(f) -> Exception:
    """Why the cluster could not finish task ``f`` (status error, cancelled or lost): its
    exception (e.g. KilledWorker), else a ShardFailed naming the status."""
    error = None
    if f.status == "error":
        try:
            error = f.exception(timeout="1s")
        except Exception as e:  # noqa: BLE001 — the cluster could not even say why
            error = e
    return error or ShardFailed(f"the task was {f.status} by the cluster (e.g. its data was lost with a worker)")


class _Run:
    """The tasks of one sharded check on a client: submitted, re-submitted after a cluster
    failure (at most RETRIES times, data scattered again), collected as they finish, cancelled
    once a refutation or a malformed shard makes later shards moot or the deadline passes."""

    def __init__(self, client, data: bytes, task: tuple, read_chunk: Callable[[int], bytes], until_ns: Optional[int],
                 report: Optional[str], on_shard, total: int, window: int = 1 << 30):
        self.c, self.data, self.task, self.read_chunk, self.until_ns = client, data, task, read_chunk, until_ns
        self.report, self.on_shard, self.total = report, on_shard, total
        self.facts: Dict[int, tuple] = {}  # first example of a finished shard -> its exported DataFacts
        self.stats: Dict[int, dict] = {}  # first example of a finished shard -> its fast graph engine's counts
        self.window = window
        self.queue: List[_Shard] = []  # shards not submitted yet, the next one last
        self.blob = None
        self.futures: Dict[object, _Shard] = {}  # running tasks
        self.parts: List[Tuple[int, int, object]] = []  # (lo, hi, Verdict or the exception of a failed shard)
        self.fatal: Dict[int, Exception] = {}  # lo -> MalformedCertificate (or RecursionError, ...) to raise
        self.left: List[_Shard] = []  # shards not finished when the deadline passed
        self.stop_at: Optional[int] = None  # lowest lo of a refuted or fatal shard: later shards are moot
        self.timed_out = False

    def start(self, plan: List[_Shard]) -> None:
        """Queue the shards in example order and submit the first ``window`` of them."""
        self.queue = list(reversed(plan))  # popped from the end: lowest lo first
        self._refill()

    def _refill(self) -> None:
        """Keep ``window`` shards on the cluster: a few per worker, so that no worker waits for
        its next shard, and no worker holds the chunks of shards far ahead (nor the caller waits
        for them to be sent before the first result)."""
        while self.queue and len(self.futures) < self.window and not self.timed_out:
            if self._past_deadline():
                self.timed_out = True
                return
            shard = self.queue.pop()
            if self.stop_at is None or shard.lo < self.stop_at:
                self._submit(shard)

    def _past_deadline(self) -> bool:
        return self.until_ns is not None and time.time_ns() >= self.until_ns

    def _submit(self, shard: _Shard) -> None:
        """Send one shard to the cluster: the certificate's bytes to every worker (once, or again
        if they were lost), a version-2 shard's chunk bytes (read again) to the worker that checks
        it. A failure to send is recorded as the shard's failure."""
        shard.tries += 1
        try:
            if self.blob is None or self.blob.status != "finished":  # unique keys: never a cancelled check's
                self.blob = self.c.scatter(self.data, broadcast=True, hash=False)
            chunk = () if shard.chunks is None else (
                shard.chunks, [self.c.scatter(self.read_chunk(k), hash=False) for k in shard.chunks])
        except MalformedCertificate as e:  # a chunk file that cannot be read (as in the single-process check)
            self._record(shard, ("malformed", str(e)))
            return
        except Exception as e:  # noqa: BLE001 — the cluster could not take the data (e.g. a closed connection)
            self._retry_or_fail(shard, e)
            return
        name, digest, cap, limits, eng = self.task
        try:
            f = self.c.submit(check_shard, self.blob, name, digest, shard.lo, shard.hi, cap, limits, eng, *chunk,
                              report=self.report, until_ns=self.until_ns, pure=False,
                              key=f"exactmem-check-{digest[7:19]}-{shard.lo}-{time.monotonic_ns()}")
        except Exception as e:  # noqa: BLE001 — the cluster refused it: this shard cannot be checked
            self._retry_or_fail(shard, e)
            return
        self.futures[f] = shard

    def wait(self) -> None:
        """Collect the shards as they finish, until none runs or the deadline passes; then cancel
        what is left."""
        while (self.futures or self.queue) and not self.timed_out:
            self._refill()
            if not self.futures:  # nothing running: the queue was moot, or could not be sent
                continue
            left = None if self.until_ns is None else self.until_ns - time.time_ns()
            if left is not None and left <= 0:
                self.timed_out = True
                break
            self._wait_any(left)
            done = [f for f in self.futures if f.status != "pending"]
            for f in sorted(done, key=lambda f: self.futures[f].lo):
                shard = self.futures.pop(f, None)
                if shard is not None:
                    self._collect(f, shard)
        if self.timed_out:
            self._cancel_left()

    def _wait_any(self, left: Optional[int]) -> None:
        """Block until a running task ends (finished, failed or cancelled) or ``left`` ns pass."""
        from distributed import wait

        try:
            with self.c.as_current():
                wait(list(self.futures), timeout=None if left is None else dask_timeout(left),
                     return_when="FIRST_COMPLETED")
        except TimeoutError:
            pass  # the deadline: the caller looks at the clock
        except CancelledError:  # a task cancelled by the cluster (e.g. its data was lost): the caller collects it
            pass

    def _collect(self, f, shard: _Shard) -> None:
        """A finished task: its outcome; a task that failed for a cluster reason (a killed worker,
        lost data, a closed connection, a cancellation not ours) is submitted again."""
        if f.status == "finished":
            try:
                result = f.result()
                outcome = result[2]
                if len(result) > 3:  # the shard's data facts (distinct inputs and their labels)
                    self.facts[shard.lo] = result[3]
                if len(result) > 4 and isinstance(result[4], dict):
                    self.stats[shard.lo] = result[4]
            except Exception as e:  # noqa: BLE001 — e.g. a result that cannot be unpickled
                outcome = ("error", type(e).__name__, str(e)[:SHORT_MESSAGE])
            self._record(shard, outcome)
            return
        self._retry_or_fail(shard, _cluster_error(f))

    def _retry_or_fail(self, shard: _Shard, error: Exception) -> None:
        """Submit the shard again after a cluster failure, or record the failure (never CERTIFIED)."""
        if shard.tries <= RETRIES and not self._past_deadline():
            self._submit(shard)
        else:
            self._record(shard, error)

    def _record(self, shard: _Shard, outcome) -> None:
        """File a shard's outcome (a Verdict, ("malformed", message), ("error", type, message) or a
        cluster exception); a refutation or a malformed shard cancels the shards after it; a shard
        stopped by the time limit ends the check."""
        if isinstance(outcome, tuple) and outcome and outcome[0] == "malformed":
            outcome = MalformedCertificate(outcome[1])
        elif isinstance(outcome, tuple) and outcome and outcome[0] == "error":
            kind = FATAL.get(outcome[1])
            outcome = kind(outcome[2]) if kind else ShardFailed(f"{outcome[1]} on a worker: {outcome[2]}")
        self.parts.append((shard.lo, shard.hi, outcome))
        if self.on_shard is not None:
            self.on_shard(len(self.parts), self.total, shard.lo, outcome)
        fatal = isinstance(outcome, (MalformedCertificate, *FATAL.values()))
        if fatal:
            self.fatal[shard.lo] = outcome
        if fatal or (isinstance(outcome, Verdict) and outcome.status == "REFUTED"):
            self._moot_after(shard.lo)
        elif isinstance(outcome, Verdict) and outcome.limit == "time_limit":
            self.timed_out = True  # the shared deadline, as this worker's clock saw it

    def _moot_after(self, lo: int) -> None:
        """Cancel the shards after example ``lo``: the one at ``lo`` decides unless one before it does."""
        self.stop_at = lo if self.stop_at is None else min(lo, self.stop_at)
        moot = [f for f, s in self.futures.items() if s.lo > self.stop_at]
        for f in moot:
            del self.futures[f]
        self._cancel(moot)

    def _cancel_left(self) -> None:
        """The deadline passed: cancel every unfinished shard; on an embedded cluster the workers
        still busy with one are killed when it closes (abandon)."""
        self.left += list(self.futures.values()) + [s for s in self.queue if self.stop_at is None or s.lo < self.stop_at]
        self.queue = []
        pending, self.futures = list(self.futures), {}
        self._cancel(pending)
        abandon(self.c)

    def _cancel(self, futures: list) -> None:
        """Cancel tasks nobody waits for; a cluster that cannot be told any more is left alone
        (its tasks stop at the shared deadline on their own)."""
        if not futures:
            return
        try:
            self.c.cancel(futures)
        except Exception:  # noqa: BLE001 — e.g. the connection to the scheduler is closed
            pass

    def verdict(self, cert, where: str) -> Verdict:
        """The check's verdict, in the single-process check's order: the lowest refuted or
        malformed shard decides (malformed raises MalformedCertificate); else, past the deadline,
        UNKNOWN naming the time limit; else combine_verdicts over the shards."""
        first_refuted = min((lo for lo, _, v in self.parts if isinstance(v, Verdict) and v.status == "REFUTED"),
                            default=None)
        first_fatal = min(self.fatal, default=None)
        if first_fatal is not None and (first_refuted is None or first_fatal < first_refuted):
            raise self.fatal[first_fatal]
        if self.timed_out and first_refuted is None:
            return self._timed_out_verdict(cert)
        stopped = [(s.lo, s.hi, LimitExceeded("time_limit", "not checked before the time limit")) for s in self.left]
        return combine_verdicts(cert, self.parts + stopped, where)

    def _timed_out_verdict(self, cert) -> Verdict:
        """UNKNOWN naming the time limit, with how many shards were checked before it."""
        t = self.task[3].time_limit
        x = LimitExceeded("time_limit", "time limit reached" if t is None else f"time limit of {fmt(t, False)} s reached")
        done = sum(1 for _, _, v in self.parts if isinstance(v, Verdict) and v.limit != "time_limit")
        return Verdict("UNKNOWN", None, f"{x} after {done} of {self.total} shards; no refutation found among them",
                       None, cert.measured, "time_limit")


def silence_dask_logs() -> List[Tuple[logging.Logger, int]]:
    """Raise every Dask, Tornado and asyncio logger of this process above CRITICAL; returns their
    former levels. ``exactmem check`` calls it for the rest of its process: a cluster closed at
    the deadline may still log (e.g. "Batched Comm Closed" with a traceback) as it goes."""
    import distributed  # noqa: F401 — importing it configures its loggers' levels: silence them after

    names = [n for n in list(logging.Logger.manager.loggerDict) if n.split(".")[0] in DASK_LOG_ROOTS]
    saved = []
    for name in sorted(set(names) | set(DASK_LOG_ROOTS)):
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.CRITICAL + 1)
    return saved


@contextmanager
def _dask_logs_silenced() -> Iterator[None]:
    """No Dask, Tornado or asyncio log line reaches stderr while a check runs in this process
    (the embedded workers are silenced by LocalCluster's ``silence_logs``): the check reports
    through its verdict and progress only."""
    saved = silence_dask_logs()
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


@contextmanager
def worker_progress(client, on_workers: Optional[Callable[[Dict[str, dict]], None]]) -> Iterator[Optional[str]]:
    """Listen to the workers' progress events of one check or forward pass (a fresh id) while
    the body runs; yields the id to pass to the tasks' `LayerReporter` (None: no progress
    wanted)."""
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
    worker 1: ...`` (a graph model's fast shards: ``example 256/512``; pure-kernel shards show only
    which shard runs)."""
    parts = []
    for name in sorted(state, key=lambda w: (len(w), w)):
        m = state[name]
        where = f"worker {name.split('://')[-1]}: examples {m['lo']}-{m['hi'] - 1}"
        if m["done"] >= m["total"]:
            where += ", done"
        elif m["unit"] in ("layers", "examples") and m["done"]:
            where += f", {m['unit'][:-1]} {m['done']}/{m['total']}"
        else:
            where += ", started"
        parts.append(where)
    return "; ".join(parts)
