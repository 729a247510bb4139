"""Checks sharded on a real Dask LocalCluster (2 worker processes) give the single-process verdict.

Same status and witness (the lowest failing example) with planted failures in the first, a
middle and the last shard, on the pure kernel and the accelerator, for exact and softmax
certificates; a worker killed while it checks a shard: its shard is re-run and the verdict
is unchanged; shards that cannot be checked never yield CERTIFIED.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactmem.kernel.checker import Verdict, canonical_hash, check_certificate
from exactmem.kernel.checker import combine_verdicts as combine
from exactmem.distributed.check import check_sharded, shard_ranges
from exactmem.distributed.cluster import ClusterError, dask_client
from test_budgets import _many_examples_doc, _planted, _tied_softmax_doc
from test_checker import attention, cert, head, model

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as c:
        yield c


def _write(tmp_path, doc, name):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def _same(a: Verdict, b: Verdict):
    assert (a.status, a.witness, a.measured) == (b.status, b.witness, b.measured), (a, b)


def test_shard_ranges_cover_every_example_once():
    for n in (1, 2, 7, 100, 1001):
        for k in (1, 3, 8, 2000):
            r = shard_ranges(n, k)
            assert r[0][0] == 0 and r[-1][1] == n and all(a < b for a, b in r)
            assert all(r[i][1] == r[i + 1][0] for i in range(len(r) - 1)) and len(r) == min(n, k)


@pytest.mark.parametrize("engine", ["fast", "pure"])
def test_sharded_equals_single_process_with_planted_failures(client, tmp_path, engine):
    doc = _many_examples_doc(800)  # 8 shards of 100 on 2 workers
    cases = {"ok": doc, "first": _planted(doc, [3]), "middle": _planted(doc, [450, 460, 799]),
             "last": _planted(doc, [799]), "two-shards": _planted(doc, [650, 120])}
    for name, d in cases.items():
        v = check_sharded(_write(tmp_path, d, f"{name}.json"), client=client, engine=engine, shards=8)
        _same(v, check_certificate(d))
    assert v.witness["example"] == 120


def _with_rows(doc, rows, claims=()):
    """``doc`` with its examples replaced by the rows ``rows`` (indices into its examples, repeats
    allowed; a negative index -k: example k with a wrong label), re-hashed."""
    d = json.loads(json.dumps(doc))
    ins, labs, outs = d["dataset"]["inputs"], d["dataset"]["labels"], d["outputs"]
    pick = lambda xs, r: xs[abs(r)]  # noqa: E731
    d["dataset"]["inputs"] = [pick(ins, r) for r in rows]
    d["dataset"]["labels"] = [pick(labs, r) if r >= 0 else ["-7"] for r in rows]
    d["outputs"] = [pick(outs, r) if r >= 0 else ["-7"] for r in rows]
    d["claims"] = [{"quantity": q, "op": op, "bound": b} for q, op, b in claims]
    d["hash"] = canonical_hash(d)
    return d


@pytest.mark.parametrize("engine", ["fast", "pure"])
def test_distinct_examples_are_counted_across_shards(client, tmp_path, engine):
    base = _many_examples_doc(200)
    twice = _with_rows(base, list(range(100)) * 2, [("n_examples", "==", "100"), ("n_rows", "==", "200")])
    inflated = _with_rows(base, list(range(100)) * 2, [("n_examples", "==", "200")])
    conflict = _with_rows(base, list(range(150)) + [-30], [])  # row 150 repeats example 30 with another label
    for name, d in {"twice": twice, "inflated": inflated, "conflict": conflict}.items():
        v = check_sharded(_write(tmp_path, d, f"{name}.json"), client=client, engine=engine, shards=4)
        _same(v, check_certificate(d))
    assert check_certificate(twice).status == "CERTIFIED" and "100 distinct examples" in check_certificate(twice).message
    assert check_certificate(inflated).status == "REFUTED"
    assert check_certificate(conflict).witness == {"example": 150, "reason": "conflicting_labels", "same_input_as": 30,
                                                   "label": ["-7"]}


def test_claims_are_checked_once_before_any_shard(client, tmp_path):
    doc = _many_examples_doc(50)
    doc["claims"] = [{"quantity": "width", "op": "<=", "bound": "1"}]
    doc["hash"] = canonical_hash(doc)
    v = check_sharded(_write(tmp_path, doc, "claim.json"), client=client)
    _same(v, check_certificate(doc))
    assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == "width"


def test_softmax_certificates_go_to_the_kernel_on_every_shard(client, tmp_path):
    mdl = model([attention([head([[1]], [[1]], [[1]], [[1]])], "softmax", residual=True)], dim=1, decode="argmax")
    mdl["readout"]["decode"] = "identity"
    seqs = [[[k], [k + 1]] for k in range(12)]
    doc = cert(mdl, seqs, [[F(1)]] * 12, outputs=[None] * 12, error_bound=F(10 ** 6))
    v = check_sharded(_write(tmp_path, doc, "sm.json"), client=client, shards=5)
    _same(v, check_certificate(doc))
    assert v.status == "CERTIFIED" and v.precision == 64
    u = check_sharded(_write(tmp_path, _tied_softmax_doc(256), "tied.json"), client=client)
    assert u.status == "UNKNOWN" == check_certificate(_tied_softmax_doc(256)).status


def _kill_a_busy_worker_while(client, t: threading.Thread, pick: int) -> None:
    """Start ``t`` (a sharded check), SIGKILL the worker process (``pick``: which of the busy ones)
    as soon as it checks a shard, and wait for ``t``; the killed process must be gone."""
    pids = client.run(os.getpid)  # worker address -> process id
    t.start()
    victim, deadline = None, time.time() + 60
    while victim is None and time.time() < deadline:
        busy = [w for w, tasks in client.processing().items() if any("exactmem-check" in k for k in tasks)]
        if busy:
            victim = busy[pick]
        time.sleep(0.05)
    assert victim is not None, "no shard started"
    time.sleep(0.3)
    os.kill(pids[victim], signal.SIGKILL)
    t.join(timeout=240)
    assert not t.is_alive()
    assert pids[victim] not in client.run(os.getpid).values()  # that worker process is gone


@pytest.mark.slow  # about 8-17 s: with -m slow (CI runs it); keeps the default suite under 10 minutes
def test_a_killed_worker_reruns_its_shard_and_the_verdict_holds(client, tmp_path):
    doc = _planted(_many_examples_doc(60_000), [59_990])  # pure engine: each shard takes a while
    path = _write(tmp_path, doc, "kill.json")
    expected = check_certificate(doc)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("v", check_sharded(path, client=client, engine="pure",
                                                                              shards=2)))
    _kill_a_busy_worker_while(client, t, pick=-1)
    _same(result["v"], expected)
    assert result["v"].witness["example"] == 59_990


@pytest.mark.slow  # 6-9 s: with -m slow (CI runs it); keeps the default suite under 10 minutes
def test_a_killed_worker_with_the_only_copy_of_a_chunk_reruns_it(client, tmp_path):
    """A version-2 chunk's bytes live on one worker only: killed, they are lost with it; the
    caller reads the chunk again and re-submits the shard, and the verdict stays CERTIFIED."""
    from exactmem.certificate.writer import write_certificate

    path = write_certificate(_many_examples_doc(40_000), str(tmp_path / "kill2.json"), chunk_examples=20_000)
    result, seen = {}, []
    t = threading.Thread(target=lambda: result.setdefault("v", check_sharded(
        path, client=client, engine="pure", on_shard=lambda *a: seen.append(a))))
    _kill_a_busy_worker_while(client, t, pick=0)
    v = result["v"]
    assert v.status == "CERTIFIED" and "2 chunks in 2 shards" in v.message, v
    assert [s[0] for s in seen] == [1, 2]  # each shard reported once, after its re-run


def test_shards_that_cannot_be_checked_never_certify():
    c = check_certificate(_many_examples_doc(10))
    from exactmem.kernel.checker import parse_certificate

    parsed = parse_certificate(_many_examples_doc(10))
    ok = Verdict("CERTIFIED", None, "", None, c.measured)
    bad = Verdict("REFUTED", {"example": 7}, "example 7: label not met", None, c.measured)
    assert combine(parsed, [(0, 5, ok), (5, 10, ok)], "x").status == "CERTIFIED"
    assert combine(parsed, [(0, 5, ok)], "x").status == "UNKNOWN"  # examples 5..9 missing
    assert combine(parsed, [(0, 5, ok), (6, 10, ok)], "x").status == "UNKNOWN"  # example 5 missing
    v = combine(parsed, [(0, 5, MemoryError("out")), (5, 10, ok)], "x")
    assert v.status == "UNKNOWN" and "examples 0..4 could not be checked (MemoryError" in v.message
    v = combine(parsed, [(5, 10, bad), (0, 5, MemoryError("out"))], "x")
    assert v.status == "REFUTED" and "not necessarily the first" in v.message
    assert combine(parsed, [(0, 5, bad), (5, 10, MemoryError("out"))], "x").message == bad.message


def test_cli_workers_matches_the_single_process_check(tmp_path):
    path = _write(tmp_path, _planted(_many_examples_doc(400), [333]), "cli.json")
    one = subprocess.run([sys.executable, "-m", "exactmem", "check", path, "--json"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    two = subprocess.run([sys.executable, "-m", "exactmem", "check", path, "--json", "--workers", "2", "--engine",
                          "fast"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert one.returncode == two.returncode == 1
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    assert (a["status"], a["witness"], a["measured"]) == (b["status"], b["witness"], b["measured"])
    assert "shard" in two.stderr and "Traceback" not in two.stderr


def test_an_unreachable_scheduler_is_a_one_line_error(tmp_path):
    path = _write(tmp_path, _many_examples_doc(5), "s.json")
    env = {**os.environ, "EXACTMEM_SCHEDULER_TIMEOUT": "2"}
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", path, "--scheduler", "tcp://127.0.0.1:9"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 3 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(ClusterError):
        with dask_client(workers=0):
            pass


def test_chunked_certificates_shard_by_chunk(client, tmp_path):
    from exactmem.certificate.writer import write_certificate

    for planted in ([], [650], [999]):
        doc = _planted(_many_examples_doc(1000), planted)
        path = write_certificate(doc, str(tmp_path / f"v2-{len(planted)}-{sum(planted)}.json"), chunk_examples=250)
        for engine in ("fast", "pure"):
            v = check_sharded(path, client=client, engine=engine)
            _same(v, check_certificate(doc))
        assert "4 chunks in 4 shards on 2 workers, pure engine" in v.message or planted


def test_library_and_pipeline_shard_on_a_client(client, tmp_path):
    import exactmem as em
    from exactmem.pipeline.certify import certify_file

    net = em.kajitsuka.next_token(em.sequences(N=30, n=4, d=3, C=3))
    one, many = em.certify(net), em.certify(net, client=client, chunk_examples=7)
    assert one.status == many.status == "CERTIFIED" and one.measured == many.measured
    assert "5 chunks in 5 shards on 2 workers, pure engine" in many.message  # auto: pure for 30 examples
    fast = em.certify(net, client=client, chunk_examples=7, checker="fast")
    assert "5 chunks in 3 shards on 2 workers, fast engine" in fast.message  # chunks 7+7, 7+7, 2: grouped to 15
    rows = certify_file(str(ROOT / "proofs" / "relu_interpolation.py"), out_dir=str(tmp_path), quiet=True,
                        only="steps", chunk_examples=100, workers=2)
    assert [r.verdict for r in rows] == ["CERTIFIED"] * 3 and "3 chunks in 3 shards on 2 workers" in rows[-1].message


def test_the_producers_forward_pass_split_over_workers_gives_the_same_outputs(client, monkeypatch):
    import exactmem as em
    from exactmem.pipeline import certify as pipeline

    data = em.sequences(N=40, n=4, d=3, C=3)
    net = em.kajitsuka.next_token(data)
    ds = net.dataset
    alone = pipeline.claimed_outputs(net.model, ds, "compress")
    monkeypatch.setattr(pipeline, "FORWARD_SHARD_MIN", 10)  # 40 examples: split over both workers
    split = pipeline.claimed_outputs(net.model, ds, "compress", client)
    assert split == alone and len(split) == 40


def test_per_worker_progress_reaches_the_caller(client, tmp_path):
    """Each worker reports which shard it checks and how far it got (Dask events); the verdict
    does not depend on whether anyone listens."""
    from exactmem.distributed.check import worker_status

    doc = _many_examples_doc(800)
    path = _write(tmp_path, doc, "progress.json")
    for engine, unit in (("fast", "layers"), ("pure", "shard")):
        seen = []
        v = check_sharded(path, client=client, engine=engine, shards=4, on_workers=lambda st: seen.append(dict(st)))
        _same(v, check_certificate(doc))
        deadline = time.monotonic() + 30  # events travel through the scheduler: allow them to arrive (a busy machine too)
        while time.monotonic() < deadline and not (seen and len(seen[-1]) == 2):
            time.sleep(0.05)
        last = seen[-1]
        assert len(last) == 2, seen  # both workers reported
        assert {m["unit"] for m in last.values()} == {unit}
        assert all(0 <= m["lo"] < m["hi"] <= 800 and m["done"] <= m["total"] for m in last.values())
        line = worker_status(last)
        assert line.count("worker ") == 2 and "examples " in line
    assert worker_status({"tcp://10.0.0.1:4000": {"lo": 0, "hi": 50, "done": 7, "total": 20, "unit": "layers"},
                          "1": {"lo": 50, "hi": 100, "done": 1, "total": 1, "unit": "shard"}}) == (
        "worker 1: examples 50-99, done; worker 10.0.0.1:4000: examples 0-49, layer 7/20")


def _malloc_environment():
    import os

    return os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS")


def test_embedded_workers_keep_glibc_malloc_tuning(client):
    """Dask's nanny would set MALLOC_TRIM_THRESHOLD_ (which makes the exact engines 2-3x slower
    on a worker, docs/scaling.md); the embedded cluster's workers run without it, with Dask's
    one-BLAS-thread setting kept."""
    envs = set(client.run(_malloc_environment).values())
    assert envs == {(None, "1")}, envs
