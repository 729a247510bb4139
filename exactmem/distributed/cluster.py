"""A Dask client for exactmem: the one passed in, an existing scheduler, or an embedded cluster.

``--workers N`` starts a ``LocalCluster`` of N worker processes with one thread each (exact
arithmetic is pure Python: threads would share one interpreter lock); ``--scheduler ADDRESS``
connects to a running scheduler, e.g. one started with ``dask scheduler`` and fed by
``dask worker ADDRESS`` on other machines (``docs/scaling.md``), and waits for a worker to be
attached. ``EXACTMEM_SCHEDULER_TIMEOUT`` (seconds, default 30) bounds both waits together, and
so does the caller's deadline (``until_ns``): an unreachable scheduler, or one with no worker,
is a `ClusterError` (one line) within the shorter of the two.

Times are integer nanoseconds; Dask is given its timeouts as strings of whole milliseconds.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import weakref
from contextlib import contextmanager
from fractions import Fraction
from typing import List, Optional

NS = 10 ** 9
STARTUP_CAP_NS = NS  # at most this much of a process's life before a command starts counts as its start-up
DEFAULT_SCHEDULER_TIMEOUT = 30  # seconds to reach a scheduler and see a worker attached to it
_ABANDONED: "weakref.WeakSet" = weakref.WeakSet()  # clients whose running tasks nobody waits for any more


class ClusterError(Exception):
    """The cluster cannot be started or reached; the message says which and why."""


def dask_timeout(ns: int) -> str:
    """A Dask timeout string for ``ns`` nanoseconds: whole milliseconds, at least one."""
    return f"{max(1, -(-ns // 10 ** 6))}ms"


def scheduler_wait_ns() -> int:
    """``EXACTMEM_SCHEDULER_TIMEOUT`` (seconds, exact decimal or fraction; default 30) in nanoseconds."""
    text = os.environ.get("EXACTMEM_SCHEDULER_TIMEOUT", str(DEFAULT_SCHEDULER_TIMEOUT))
    try:
        t = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise ClusterError(f"EXACTMEM_SCHEDULER_TIMEOUT takes seconds, got {text[:40]!r}") from None
    if t <= 0:
        raise ClusterError(f"EXACTMEM_SCHEDULER_TIMEOUT must be positive, got {text[:40]!r}")
    return t.numerator * NS // t.denominator


def command_start_ns() -> int:
    """When the running command started (``time.time_ns()``): the process's start on Linux
    (``/proc``, to the clock tick), so that the interpreter's start-up counts against
    ``--time-limit`` too — at most STARTUP_CAP_NS before now (a long-lived process that calls
    a command is not charged for its past); now where ``/proc`` is missing."""
    now = time.time_ns()
    try:
        with open("/proc/self/stat", "rb") as f:
            started = int(f.read().rsplit(b")", 1)[1].split()[19])  # field 22: clock ticks after boot
        with open("/proc/uptime", "rb") as f:
            up = Fraction(f.read().split()[0].decode())  # seconds since boot, e.g. "1234.56": exact
        age = int(up * NS) - started * NS // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, ZeroDivisionError):
        return now
    return now - max(0, min(age, STARTUP_CAP_NS))


def _left_ns(until_ns: int) -> int:
    """Nanoseconds until the wall-clock time ``until_ns`` (0 once it has passed)."""
    return max(0, until_ns - time.time_ns())


def connect(scheduler: str, until_ns: Optional[int] = None):
    """A Client of the scheduler at ``scheduler`` with at least one worker attached, within
    ``EXACTMEM_SCHEDULER_TIMEOUT`` and before ``until_ns``; otherwise ClusterError (one line)."""
    from distributed import Client

    wait = scheduler_wait_ns()
    stop = time.time_ns() + wait if until_ns is None else min(time.time_ns() + wait, until_ns)
    bound = "the time limit" if until_ns is not None and stop == until_ns else "EXACTMEM_SCHEDULER_TIMEOUT"
    try:
        c = Client(scheduler, timeout=dask_timeout(_left_ns(stop)))
    except (OSError, TimeoutError, ValueError) as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {scheduler}: {e} (waited up to {bound})") from None
    try:
        c.wait_for_workers(1, timeout=dask_timeout(_left_ns(stop)))
    except (OSError, TimeoutError):
        c.close()
        raise ClusterError(f"no Dask worker is attached to the scheduler at {scheduler} (waited up to {bound}; "
                           f"start one with `dask worker {scheduler}`)") from None
    return c


@contextmanager
def dask_client(workers: Optional[int] = None, scheduler: Optional[str] = None, client=None,
                until_ns: Optional[int] = None):
    """Yield a ``distributed.Client``: ``client`` itself, one connected to ``scheduler`` (see
    `connect`; ``until_ns`` bounds the wait), or one on an embedded LocalCluster of
    ``workers`` processes (closed on exit; its workers are stopped at once if the client was
    `abandon`-ed)."""
    if client is not None:
        yield client
        return
    if scheduler:
        c = connect(scheduler, until_ns)
        try:
            yield c
        finally:
            c.close()
        return
    if workers is None or workers < 1:
        raise ClusterError(f"--workers must be at least 1, got {workers}")
    from distributed import Client, LocalCluster

    keep_malloc_default()
    try:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.CRITICAL)
    except (OSError, RuntimeError, TimeoutError) as e:  # e.g. a worker process that could not start
        raise ClusterError(f"cannot start a local Dask cluster of {workers} workers: {e}") from None
    c = Client(cluster)
    try:
        wait_for_local_workers(c, workers, until_ns)
        yield c
    finally:
        _close_embedded(c, cluster)


LOCAL_WORKER_WAIT = 120.0  # seconds the embedded cluster's workers get to register with its scheduler


def wait_for_local_workers(c, workers: int, until_ns: Optional[int] = None) -> None:
    """Wait until the embedded cluster's ``workers`` processes have registered with its scheduler,
    so shards are planned over all of them (on a busy machine a worker process can register
    seconds after the cluster object exists; planning then would put every shard on the first).
    At most `LOCAL_WORKER_WAIT` seconds, and never past the check's deadline ``until_ns``; after
    that the work goes to the workers that came (the verdict is the same, only slower)."""
    timeout = LOCAL_WORKER_WAIT
    if until_ns is not None:
        timeout = max(0.0, min(timeout, (until_ns - time.time_ns()) / 1e9))
    try:
        c.wait_for_workers(workers, timeout=timeout)
    except (TimeoutError, OSError):
        pass


def keep_malloc_default() -> None:
    """Let the embedded cluster's worker processes keep glibc's own malloc tuning: Dask's nanny
    sets ``MALLOC_TRIM_THRESHOLD_`` (``distributed.nanny.pre-spawn-environ``), and setting it
    turns off glibc's adaptive mmap threshold, so every large array the exact engines allocate
    per layer is mapped and unmapped afresh (page faults each time): Kajitsuka N = 10⁵, 50,000
    examples on one worker took 60-68 s with it and 26-33 s without (24-27 s in one process;
    docs/scaling.md). The other variables Dask sets (one BLAS thread) stay. Dask's own way to
    unset it is the value None; a nanny also writes the value into its own process's
    environment, which the next workers would inherit, so that copy goes too."""
    import dask
    import distributed  # noqa: F401 - loads Dask's distributed configuration

    key = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
    value = dask.config.get(key, default=None)
    if value is not None:
        dask.config.set({key: None})
        if os.environ.get("MALLOC_TRIM_THRESHOLD_") == str(value):
            del os.environ["MALLOC_TRIM_THRESHOLD_"]


def abandon(client) -> None:
    """Nobody waits for the tasks still running on ``client`` (a check past its deadline): when
    the embedded cluster of `dask_client` closes, its worker processes are killed at once
    instead of being waited for. A cluster exactmem did not start is never touched."""
    _ABANDONED.add(client)


def _worker_pids(cluster) -> List[int]:
    """Process ids of an embedded LocalCluster's worker processes (those still known)."""
    pids = []
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if isinstance(pid, int):
            pids.append(pid)
    return pids


def _close_embedded(client, cluster) -> None:
    """Close the client, then the embedded cluster; an abandoned client's worker processes are
    killed first (a worker busy in pure Python cannot be interrupted; a graceful close would wait
    seconds for it)."""
    pids = _worker_pids(cluster) if client in _ABANDONED else []
    client.close()
    for pid in pids:
        try:
            os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        except (ProcessLookupError, PermissionError):
            pass
    cluster.close()


def worker_count(client) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))
