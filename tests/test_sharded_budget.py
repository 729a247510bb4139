"""Sharded checks keep the verifier's budget and answer as the single-process check (issue 24).

``--time-limit`` is one wall-clock deadline for the whole sharded check (cluster start
included): a 100-chunk certificate that needs far longer ends UNKNOWN naming time_limit within
the limit plus one second. Every malformed-chunk case (stale digest, miscounted chunk, extra
field, gzip bomb) is malformed (exit 3, the same line) with ``--workers 2`` as without; worker
errors print no traceback. A scheduler with no worker is one line within the time limit. A
shard the cluster keeps failing is tried three times in all, then UNKNOWN, never CERTIFIED.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactmem.kernel.checker import MalformedCertificate, canonical_hash, check_certificate, load_certificate
from exactmem.certificate.chunkfiles import chunk_reader
from exactmem.kernel.limits import Limits
from exactmem.certificate.writer import write_certificate
from exactmem.distributed import check as sharded
from exactmem.distributed.check import check_sharded
from exactmem.distributed.cluster import dask_client
from test_budgets import _many_examples_doc, _planted
from test_checker import affine, cert, model

ROOT = Path(__file__).resolve().parents[1]
NS = 10 ** 9


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as c:
        yield c


def _cli(path, *flags, env=None):
    """(exit code, stdout, stderr, wall-clock ns) of ``python -m exactmem check path flags``."""
    t = time.monotonic_ns()
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(path), *flags], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout, r.stderr, time.monotonic_ns() - t


def _slow_chunked(tmp_path) -> str:
    """100 chunks of 100 examples through 1,000 identity ReLU layers of width 4: about a minute
    of checking on one process, so far more than 10 s on two workers."""
    dim, depth, n = 4, 1000, 10_000
    eye = [[int(i == j) for j in range(dim)] for i in range(dim)]
    doc = cert(model([affine(eye, relu=True) for _ in range(depth)], dim=dim),
               [[[k] + [1] * (dim - 1)] for k in range(n)], [[k] + [1] * (dim - 1) for k in range(n)])
    path = write_certificate(doc, str(tmp_path / "slow.json"), chunk_examples=n // 100)
    assert len(load_certificate(path)["dataset"]["chunks"]) == 100
    return path


@pytest.mark.slow  # about 8-17 s: with -m slow (CI runs it); keeps the default suite under 10 minutes
def test_a_100_chunk_check_on_two_workers_stops_at_the_time_limit(tmp_path):
    path = _slow_chunked(tmp_path)
    code, out, err, ns = _cli(path, "--workers", "2", "--time-limit", "10", "--quiet")
    assert code == 2 and out.startswith("UNKNOWN: time limit of 10 s reached") and "time_limit" in out, (out, err)
    assert len(out.splitlines()) == 1 and err == "", err  # --quiet: not a line of Dask's logs
    assert ns < (2 * 10 + 10) * NS, ns / NS  # cluster start, reading and cancelling included; not a hang


def test_a_library_check_shares_one_deadline(client, tmp_path):
    path = _slow_chunked(tmp_path)
    t = time.monotonic_ns()
    v = check_sharded(path, client=client, engine="pure", limits=Limits(time_limit=F(3)))
    assert v.status == "UNKNOWN" and v.limit == "time_limit" and "of 100 shards" in v.message
    assert time.monotonic_ns() - t < (2 * 3 + 10) * NS  # stopped by the limit (a bound that holds under load)
    until = time.time_ns() + 2 * NS  # a deadline given by the caller wins over the (long) time limit
    v = check_sharded(path, client=client, engine="pure", limits=Limits(time_limit=F(3600)), until_ns=until)
    assert v.status == "UNKNOWN" and v.limit == "time_limit" and time.time_ns() < until + 10 * NS


def _chunked(tmp_path, name, suffix=".json"):
    return write_certificate(_many_examples_doc(100), str(tmp_path / f"{name}{suffix}"), chunk_examples=30)


def _chunk_file(path, k):
    return Path(path).parent / load_certificate(str(path))["dataset"]["chunks"][k]["file"]


def _restamp(path, k, data: bytes):
    """Chunk k of the certificate at ``path`` replaced by ``data``, its digest and the main hash updated."""
    _chunk_file(path, k).write_bytes(data)
    main = load_certificate(str(path))
    main["dataset"]["chunks"][k]["sha256"] = hashlib.sha256(data).hexdigest()
    main["hash"] = canonical_hash(main)
    _write_main(path, main)


def _write_main(path, main):
    text = json.dumps(main).encode()
    Path(path).write_bytes(gzip.compress(text) if str(path).endswith(".gz") else text)


def _stale_digest(tmp_path):
    path = _chunked(tmp_path, "stale")
    f = _chunk_file(path, 1)
    f.write_text(f.read_text().replace('"93"', '"94"', 1))  # one label of example 31; the digest is stale
    return path, ()


def _miscounted(tmp_path):
    path = _chunked(tmp_path, "count")
    main = load_certificate(path)
    main["dataset"]["chunks"][3]["examples"] = 11  # the file holds 10
    main["hash"] = canonical_hash(main)
    _write_main(path, main)
    return path, ()


def _extra_field(tmp_path):
    path = _chunked(tmp_path, "extra")
    chunk = json.loads(_chunk_file(path, 2).read_text())
    chunk["comment"] = "not in the format"
    _restamp(path, 2, json.dumps(chunk).encode())
    return path, ()


def _gzip_bomb(tmp_path):
    path = _chunked(tmp_path, "bomb", ".json.gz")
    text = gzip.decompress(_chunk_file(path, 1).read_bytes())
    _restamp(path, 1, gzip.compress(b" " * (8 << 20) + text))  # 8 MiB of blanks, a few KiB zipped
    return path, ("--max-bytes", "1000000")


@pytest.mark.parametrize("case", [_stale_digest, _miscounted, _extra_field, _gzip_bomb])
def test_malformed_chunks_are_malformed_with_workers_as_without(tmp_path, case):
    path, flags = case(tmp_path)
    one = _cli(path, "--quiet", *flags)
    two = _cli(path, "--quiet", "--workers", "2", *flags)
    assert one[0] == two[0] == 3 and one[1] == two[1] == "", (one, two)
    assert one[2] == two[2] and len(two[2].splitlines()) == 1 and two[2].startswith("exactmem: error: malformed certificate: ")
    assert "Traceback" not in two[2] and "Compute Failed" not in two[2]


def test_worker_side_malformed_prints_no_traceback_with_progress(tmp_path):
    path, _ = _stale_digest(tmp_path)
    code, out, err, _ = _cli(path, "--workers", "2")
    assert code == 3 and out == "" and "SHA-256 differs" in err
    assert "Traceback" not in err and "Compute Failed" not in err and "distributed." not in err


def test_the_first_refuted_or_malformed_chunk_decides_as_in_one_process(client, tmp_path):
    """One process stops at the first refuted or malformed chunk; so does the sharded verdict."""
    for bad_chunk, planted, expect in ((3, [5], "REFUTED"), (0, [95], "malformed")):
        doc = _planted(_many_examples_doc(100), planted)
        path = write_certificate(doc, str(tmp_path / f"order{bad_chunk}.json"), chunk_examples=30)
        f = _chunk_file(path, bad_chunk)
        f.write_text(f.read_text() + " ")  # one more byte: the digest is stale
        read = chunk_reader(str(tmp_path))
        for check in (lambda: check_certificate(load_certificate(path), read_chunk=read),
                      lambda: check_sharded(path, client=client, engine="pure")):
            if expect == "malformed":
                with pytest.raises(MalformedCertificate, match=rf"dataset.chunks\[{bad_chunk}\]"):
                    check()
            else:
                v = check()
                assert v.status == "REFUTED" and v.witness["example"] == planted[0]


@pytest.fixture(scope="module")
def empty_scheduler():
    """A scheduler on 127.0.0.1 with no worker attached (in this process)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow  # about 8-17 s: with -m slow (CI runs it); keeps the default suite under 10 minutes
def test_a_scheduler_without_workers_is_one_line_within_the_time_limit(tmp_path, empty_scheduler):
    path = _chunked(tmp_path, "nowork")
    code, out, err, ns = _cli(path, "--scheduler", empty_scheduler, "--time-limit", "5")
    assert code == 3 and out == "" and len(err.splitlines()) == 1, (out, err)
    assert f"no Dask worker is attached to the scheduler at {empty_scheduler}" in err and "time limit" in err
    assert "Traceback" not in err and ns < (2 * 5 + 10) * NS, ns / NS
    code, _, err, ns = _cli(path, "--scheduler", empty_scheduler, "--time-limit", "60",
                            env={"EXACTMEM_SCHEDULER_TIMEOUT": "2"})  # the shorter of the two bounds the wait
    assert code == 3 and "EXACTMEM_SCHEDULER_TIMEOUT" in err and len(err.splitlines()) == 1 and ns < (2 * 2 + 10) * NS


def test_an_unreachable_scheduler_waits_no_longer_than_the_time_limit(tmp_path):
    path = _chunked(tmp_path, "unreach")
    code, out, err, ns = _cli(path, "--scheduler", "tcp://127.0.0.1:9", "--time-limit", "2")
    assert code == 3 and out == "" and len(err.splitlines()) == 1 and "cannot reach the Dask scheduler" in err
    assert "Traceback" not in err and ns < (2 * 2 + 10) * NS, ns / NS


class _FakeFuture:
    """A task as the cluster reports it: always ``status`` (e.g. cancelled: its data was lost)."""

    def __init__(self, status):
        self.status = status


class _FailingCluster:
    """A client whose every task is cancelled by the cluster, e.g. each worker dies in turn."""

    def __init__(self):
        self.submitted, self.cancelled = [], []

    def scatter(self, data, **kw):
        return _FakeFuture("finished")

    def submit(self, fn, *args, **kw):
        self.submitted.append(args[3])  # the shard's lo
        return _FakeFuture("cancelled")

    def cancel(self, futures):
        self.cancelled += futures


def test_a_shard_the_cluster_keeps_losing_is_tried_three_times_then_unknown(monkeypatch):
    doc = _many_examples_doc(10)
    parsed = sharded.parse_certificate(doc)
    fake = _FailingCluster()
    monkeypatch.setattr(sharded._Run, "_wait_any", lambda self, left: None)
    run = sharded._Run(fake, b"", ("c.json", doc["hash"], 64, Limits(), "pure"), lambda k: b"", None, None, None, 2)
    run.start([sharded._Shard(0, 5), sharded._Shard(5, 10)])
    run.wait()
    assert sorted(fake.submitted) == [0, 0, 0, 5, 5, 5]  # the first try and RETRIES = 2 more
    v = run.verdict(parsed, "2 shards")
    assert v.status == "UNKNOWN" and "examples 0..4 could not be checked (ShardFailed: the task was cancelled" in \
        v.message


def test_past_the_deadline_nothing_more_is_submitted(monkeypatch):
    doc = _many_examples_doc(10)
    fake = _FailingCluster()
    run = sharded._Run(fake, b"", ("c.json", doc["hash"], 64, Limits(time_limit=F(5)), "pure"), lambda k: b"",
                       time.time_ns() - 1, None, None, 2)
    run.start([sharded._Shard(0, 5), sharded._Shard(5, 10)])
    run.wait()
    assert fake.submitted == [] and run.timed_out
    v = run.verdict(sharded.parse_certificate(doc), "2 shards")
    assert v.status == "UNKNOWN" and v.limit == "time_limit" and v.message.startswith("time limit of 5 s reached")
    assert "after 0 of 2 shards; no refutation found" in v.message
