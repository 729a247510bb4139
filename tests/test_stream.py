"""The streaming producer (issue 27 item 2): chunk files written batch by batch are byte for
byte the files the whole-document writer makes, and they certify; a wrong output in a late
batch is found by the checker."""

from __future__ import annotations

import os

import pytest

from exactmem.kernel.checker import check_certificate, load_certificate
from exactmem.certificate.chunkfiles import chunk_reader
from exactmem.certificate.stream import batch_ranges, stream_certificate
from exactmem.certificate.writer import build_certificate, certificate_head, write_certificate
from exactmem.pipeline.certify import _outputs_of
from exactmem.pipeline.loader import load_proof_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def built():
    th = [t for t in load_proof_file(os.path.join(ROOT, "proofs", "kajitsuka.py")) if t.name == "kajitsuka.next_token"][0]
    return th.build({"N": 60, "n": 4, "d": 3, "C": 3}, 0)


def _files(d):
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("chunk,batch", [(7, 7), (7, 20), (25, 1), (60, 100)])
def test_stream_writes_the_same_bytes_as_the_whole_document(built, tmp_path, chunk, batch, gz):
    model, ds = built.model, built.dataset
    outs = _outputs_of(model, ds.inputs, ds.labels, "auto")
    name = "c.json.gz" if gz else "c.json"
    a, b = tmp_path / "whole", tmp_path / "stream"
    doc = build_certificate("k", "i", 0, model, ds, outs, built.claims, meta={"m": 1})
    write_certificate(doc, str(a / name), chunk_examples=chunk)
    ranges = batch_ranges(len(ds), chunk, batch)
    step = -(-batch // chunk) * chunk
    assert ranges == [(lo, min(lo + step, len(ds))) for lo in range(0, len(ds), step)]
    assert ranges[0][0] == 0 and ranges[-1][1] == len(ds)
    batches = (_outputs_of(model, ds.inputs[lo:hi], ds.labels[lo:hi], "auto") for lo, hi in ranges)
    times = {}
    head = certificate_head("k", "i", 0, model, built.claims, meta={"m": 1})
    stream_certificate(head, model, ds, batches, str(b / name), chunk, batch_examples=batch, timings=times)
    if chunk < len(ds):  # the whole-document writer chunks only datasets larger than a chunk
        assert _files(a) == _files(b)
    assert set(times) == {"forward", "write"}
    v = check_certificate(load_certificate(str(b / name)), read_chunk=chunk_reader(str(b)))
    assert v.status == "CERTIFIED", v.message


def test_a_wrong_output_in_the_last_batch_is_refuted(built, tmp_path):
    model, ds = built.model, built.dataset

    def batches():
        for j, (lo, hi) in enumerate(batch_ranges(len(ds), 10, 20)):
            outs = _outputs_of(model, ds.inputs[lo:hi], ds.labels[lo:hi], "auto")
            if j == 2:
                outs[-1] = tuple(x + 1 for x in outs[-1])
            yield outs

    head = certificate_head("k", "i", 0, model, built.claims)
    p = stream_certificate(head, model, ds, batches(), str(tmp_path / "c.json"), 10, batch_examples=20)
    v = check_certificate(load_certificate(p), read_chunk=chunk_reader(str(tmp_path)))
    assert v.status == "REFUTED" and v.witness["example"] == len(ds) - 1, v.message


def test_certify_streams_chunked_instances(tmp_path):
    from exactmem.pipeline.certify import certify_file

    rows = certify_file(os.path.join(ROOT, "proofs", "kajitsuka.py"), str(tmp_path), only="kajitsuka.next_token/N12-n4-d3-C4",
                        quiet=True, chunk_examples=5, checker="fast")
    assert [r.verdict for r in rows] == ["CERTIFIED"]
    assert set(rows[0].timings) == {"build", "forward", "write", "check"}
    assert sorted(f for f in os.listdir(tmp_path) if ".chunk" in f) == [
        f"kajitsuka.next_token.N12-n4-d3-C4.chunk{i:05d}.json" for i in range(3)]


def test_missing_or_short_batches_are_an_error(built, tmp_path):
    model, ds = built.model, built.dataset
    head = certificate_head("k", "i", 0, model, built.claims)
    with pytest.raises(ValueError, match="expected 10 outputs, got none"):
        stream_certificate(head, model, ds, iter([]), str(tmp_path / "c.json"), 10, batch_examples=10)
    with pytest.raises(ValueError, match="expected 10 outputs, got 9"):
        stream_certificate(head, model, ds, iter([[None] * 9]), str(tmp_path / "c.json"), 10, batch_examples=10)
    assert not os.path.exists(tmp_path / "c.json")  # no main document without every chunk


@pytest.mark.slow
@pytest.mark.parametrize("gz", [False, True])
def test_certify_streams_on_dask_workers(tmp_path, gz):
    """With a cluster the batches are evaluated on the workers and their chunk files encoded
    there; the certificate is the one made in one process, byte for byte."""
    from exactmem.pipeline.certify import certify_file

    kw = dict(only="kajitsuka.next_token/N40-n8-d16-C4", quiet=True, chunk_examples=7, checker="fast", gzip_output=gz)
    one = certify_file(os.path.join(ROOT, "proofs", "kajitsuka.py"), str(tmp_path / "one"), **kw)
    two = certify_file(os.path.join(ROOT, "proofs", "kajitsuka.py"), str(tmp_path / "two"), workers=2, **kw)
    assert [r.verdict for r in one + two] == ["CERTIFIED"] * 2
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
