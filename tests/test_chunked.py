"""Chunked certificates (format version 2): content-hashed chunk files, checked one at a time.

The same certificate written as one document (v1) and in chunks (v2) gets the same verdict and
witness from the kernel, the accelerator and a Dask-sharded check; an altered, replaced,
missing or miscounted chunk is malformed (exit 3, one line).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from exactmem.kernel.checker import MalformedCertificate, canonical_hash, check_certificate, load_certificate
from exactmem.certificate.chunkfiles import chunk_reader
from exactmem.certificate.fastcheck import check_certificate_fast
from exactmem.certificate.writer import write_certificate
from test_budgets import _many_examples_doc, _planted, _tied_softmax_doc

ROOT = Path(__file__).resolve().parents[1]


def _check(path, fast=False, **kw):
    check = check_certificate_fast if fast else check_certificate
    return check(load_certificate(str(path)), read_chunk=chunk_reader(str(Path(path).parent)), **kw)


def _cli(path, *flags):
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(path), *flags], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_chunked_and_single_document_give_the_same_verdicts(tmp_path, suffix):
    for planted in ([], [3], [700, 750], [999]):
        doc = _planted(_many_examples_doc(1000), planted)
        one = check_certificate(doc)
        path = write_certificate(doc, str(tmp_path / f"c{len(planted)}{suffix}"), chunk_examples=300)
        main = load_certificate(path)
        assert main["version"] == 2 and main["outputs"] is None and len(main["dataset"]["chunks"]) == 4
        assert [c["examples"] for c in main["dataset"]["chunks"]] == [300, 300, 300, 100]
        for fast in (False, True):
            v = _check(path, fast)
            assert (v.status, v.witness, v.measured) == (one.status, one.witness, one.measured), (fast, v, one)
        if planted:
            assert v.witness["example"] == min(planted)
        else:
            assert "4 chunks" in v.message  # kernel: chunk by chunk; fast: "4 chunks in 1 batches"


def test_small_datasets_stay_version_1(tmp_path):
    path = write_certificate(_many_examples_doc(10), str(tmp_path / "s.json"), chunk_examples=300)
    assert load_certificate(path)["version"] == 1 and not list(tmp_path.glob("*.chunk*"))


def test_softmax_chunks_use_the_interval_kernel(tmp_path):
    doc = _tied_softmax_doc(128)
    doc["dataset"]["inputs"] *= 3
    doc["dataset"]["labels"] *= 3
    doc["outputs"] *= 3
    doc["hash"] = canonical_hash(doc)
    path = write_certificate(doc, str(tmp_path / "t.json"), chunk_examples=2)
    v = _check(path)
    assert v.status == "UNKNOWN" == check_certificate(doc).status and v.limit == "max_precision"


def _chunk(path, k=1):
    return Path(path).parent / load_certificate(str(path))["dataset"]["chunks"][k]["file"]


def test_an_altered_chunk_is_malformed(tmp_path):
    path = write_certificate(_many_examples_doc(100), str(tmp_path / "a.json"), chunk_examples=30)
    assert _cli(path)[0] == 0
    f = _chunk(path)
    f.write_text(f.read_text().replace('"93"', '"94"', 1))  # one label of example 31
    code, out, err = _cli(path)
    assert code == 3 and out == "" and len(err.splitlines()) == 1
    assert "dataset.chunks[1]" in err and "SHA-256 differs" in err and "Traceback" not in err


def test_a_missing_chunk_is_malformed(tmp_path):
    path = write_certificate(_many_examples_doc(100), str(tmp_path / "m.json"), chunk_examples=30)
    os.unlink(_chunk(path, 2))
    code, _, err = _cli(path, "--engine", "fast")
    assert code == 3 and "cannot read chunk file m.chunk00002.json" in err and len(err.splitlines()) == 1


def test_the_chunk_index_is_part_of_the_hash_and_validated(tmp_path):
    path = write_certificate(_many_examples_doc(100), str(tmp_path / "h.json"), chunk_examples=30)
    main = load_certificate(path)
    main["dataset"]["chunks"][0]["sha256"] = "0" * 64  # without re-hashing: the main hash catches it
    with pytest.raises(MalformedCertificate, match="wrong hash"):
        check_certificate(main, read_chunk=chunk_reader(str(tmp_path)))
    main["hash"] = canonical_hash(main)  # re-hashed: the chunk's own hash no longer matches
    with pytest.raises(MalformedCertificate, match=r"dataset.chunks\[0\] \(h.chunk00000.json\): the chunk file's"):
        check_certificate(main, read_chunk=chunk_reader(str(tmp_path)))
    for field, value, msg in (("file", "../h.json", "not a plain file name"), ("examples", 0, "out of range"),
                              ("sha256", "ABC", "64 lowercase hex")):
        bad = load_certificate(path)
        bad["dataset"]["chunks"][0][field] = value
        bad["hash"] = canonical_hash(bad)
        with pytest.raises(MalformedCertificate, match=msg):
            check_certificate(bad, read_chunk=chunk_reader(str(tmp_path)))


def test_a_miscounted_chunk_is_malformed(tmp_path):
    path = write_certificate(_many_examples_doc(100), str(tmp_path / "n.json"), chunk_examples=30)
    main = load_certificate(path)
    main["dataset"]["chunks"][3]["examples"] = 11  # the file holds 10
    main["hash"] = canonical_hash(main)
    with pytest.raises(MalformedCertificate, match=r"dataset.chunks\[3\] \(n.chunk00003.json\).inputs: wrong shape"):
        check_certificate(main, read_chunk=chunk_reader(str(tmp_path)))


def test_a_chunked_certificate_needs_its_chunks(tmp_path):
    path = write_certificate(_many_examples_doc(100), str(tmp_path / "r.json"), chunk_examples=30)
    with pytest.raises(MalformedCertificate, match="needs its chunk files"):
        check_certificate(load_certificate(path))


def test_gzip_chunks_are_hashed_as_written(tmp_path):
    path = write_certificate(_many_examples_doc(100), str(tmp_path / "g.json.gz"), chunk_examples=40)
    f = _chunk(path, 0)
    assert f.name.endswith(".json.gz") and json.loads(gzip.decompress(f.read_bytes()))["format"] == \
        "exactmem-certificate-chunk"
    assert _cli(path)[0] == 0


def _replace_chunk(path, k, make):
    """Replace chunk k of the certificate at ``path`` by what ``make(chunk_path, saved_copy)`` puts there."""
    f = _chunk(path, k)
    saved = f.parent.parent / f"saved-{f.name}"
    saved.write_bytes(f.read_bytes())
    f.unlink()
    make(f, saved)
    return f


@pytest.mark.parametrize("kind", ["symlink-inside", "symlink-outside", "fifo", "device", "directory"])
def test_a_chunk_that_is_not_a_regular_file_in_the_folder_is_malformed_at_once(tmp_path, kind):
    folder = tmp_path / "cert"
    path = write_certificate(_many_examples_doc(100), str(folder / "s.json"), chunk_examples=30)

    def make(f, saved):
        if kind == "symlink-inside":  # a copy with the right bytes inside the folder, reached through a link
            inside = folder / "copy.json"
            inside.write_bytes(saved.read_bytes())
            os.symlink(inside.name, f)
        elif kind == "symlink-outside":  # the right bytes outside the folder
            os.symlink(saved, f)
        elif kind == "fifo":  # opening it for reading would block without O_NONBLOCK
            os.mkfifo(f)
        elif kind == "device":
            try:
                os.mknod(f, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 5))  # like /dev/zero
            except PermissionError:
                pytest.skip("creating a device node needs root")
        else:
            f.mkdir()

    f = _replace_chunk(path, 1, make)
    import time
    t = time.process_time()  # CPU time: a busy machine does not slow it down
    what = "symbolic link" if kind.startswith("symlink") else "not a regular file"
    for fast in (False, True):
        with pytest.raises(MalformedCertificate, match=f"chunk file {f.name} is (a )?{what}"):
            _check(path, fast)
    assert time.process_time() - t < 1
    code, out, err = _cli(path)
    assert code == 3 and out == "" and len(err.splitlines()) == 1 and what in err and "Traceback" not in err


def test_a_chunk_larger_than_the_byte_limit_is_refused_before_it_is_read(tmp_path):
    path = write_certificate(_many_examples_doc(300), str(tmp_path / "b.json"), chunk_examples=200)
    size = os.path.getsize(_chunk(path, 0))
    assert os.path.getsize(path) < size - 1
    code, _, err = _cli(path, "--max-bytes", str(size - 1))
    assert code == 3 and "chunk file b.chunk00000.json: the file is larger than" in err and "max_bytes" in err
    assert len(err.splitlines()) == 1


def test_a_chunk_body_names_its_first_example(tmp_path):
    path = write_certificate(_many_examples_doc(100), str(tmp_path / "f.json"), chunk_examples=30)
    f = _chunk(path, 1)
    body = json.loads(f.read_text())
    assert body["first"] == 30
    body["first"] = 0  # moved: re-hash the chunk in the main document, the kernel still sees its place
    f.write_text(json.dumps(body))
    main = load_certificate(path)
    import hashlib
    main["dataset"]["chunks"][1]["sha256"] = hashlib.sha256(f.read_bytes()).hexdigest()
    main["hash"] = canonical_hash(main)
    with pytest.raises(MalformedCertificate, match=r"chunks\[1\].*first: the chunk says it starts at example 0"):
        check_certificate(main, read_chunk=chunk_reader(str(tmp_path)))
