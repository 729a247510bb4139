"""A Dask client for exactmem: the one passed in, an existing scheduler, or an embedded cluster.

``--workers N`` starts a ``LocalCluster`` of N worker processes with one thread each (exact
arithmetic is pure Python: threads would share one interpreter lock); ``--scheduler ADDRESS``
connects to a running scheduler, e.g. one started with ``dask scheduler`` and fed by
``dask worker ADDRESS`` on other machines (``docs/scaling.md``); ``EXACTMEM_SCHEDULER_TIMEOUT``
(seconds, default 30) bounds the wait for it.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Optional


class ClusterError(Exception):
    """The cluster cannot be started or reached; the message says which and why."""


@contextmanager
def dask_client(workers: Optional[int] = None, scheduler: Optional[str] = None, client=None):
    """Yield a ``distributed.Client``: ``client`` itself, one connected to ``scheduler``, or one
    on an embedded LocalCluster of ``workers`` processes (closed on exit)."""
    if client is not None:
        yield client
        return
    from distributed import Client, LocalCluster

    if scheduler:
        wait = os.environ.get("EXACTMEM_SCHEDULER_TIMEOUT", "30")  # seconds to wait for the scheduler
        try:
            c = Client(scheduler, timeout=f"{wait}s")
        except (OSError, TimeoutError, ValueError) as e:
            raise ClusterError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
        try:
            yield c
        finally:
            c.close()
        return
    if workers is None or workers < 1:
        raise ClusterError(f"--workers must be at least 1, got {workers}")
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR)
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def worker_count(client) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))
