"""Streaming producer of version-2 certificates (issue 27): forward pass and chunk files, one batch at a time.

`write_certificate` needs the whole document: every example's output and the JSON text
of the whole dataset at once (about 15 KB per Kajitsuka example at N = 10⁵, 1.5 GB in all).
[`stream_certificate`][exactmem.certificate.stream.stream_certificate] evaluates ``batch`` examples, writes their chunk files at once and
keeps only each chunk's entry (file, SHA-256, size); the main document is written last. So the
producer holds the construction, the dataset and one batch's outputs and text, whatever N is.
The files are byte for byte those `write_certificate` writes (tested). Untrusted side:
the checker verifies every chunk against the main document's digests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..data.dataset import Dataset, dataset_to_json
from ..model.layers import Model
from .writer import (chunk_bytes, chunk_stem, chunked_document, outputs_json, write_bytes_atomic, write_chunk_bytes,
                     _encode)

#: Examples evaluated together. The exact engines share the work of equal register values among
#: the examples of a batch, so the cost of a batch grows much more slowly than its size (Kajitsuka
#: N = 10⁶: 4× the examples for 1.55× the time per layer, docs/scaling.md): batches are as large
#: as memory allows (a batch of 500,000 needs about 2 GB of working memory there).
STREAM_BATCH = 500_000


def batch_ranges(n: int, chunk_examples: int, batch_examples: int = STREAM_BATCH) -> List[Tuple[int, int]]:
    """The (first, end) example ranges of the batches: ``batch_examples`` rounded up to whole chunks."""
    if chunk_examples < 1:
        raise ValueError("chunk_examples must be at least 1")
    step = -(-max(batch_examples, 1) // chunk_examples) * chunk_examples
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


@dataclass
class EncodedBatch:
    """A batch's chunk files, already encoded where its outputs were computed (a Dask worker):
    (first example, examples, bytes) of each chunk, in order."""

    chunks: List[Tuple[int, int, bytes]]


def batch_chunks(model: Model, part: Dataset, outputs: List[Any], first: int, chunk_examples: int,
                 gz: bool) -> Iterator[Tuple[int, int, bytes]]:
    """(first example, examples, bytes) of each chunk file of the batch ``part`` (its examples
    from ``first`` on) with its claimed ``outputs``, one chunk's JSON form at a time."""
    for a in range(0, len(part.inputs), chunk_examples):
        rows = replace(part, inputs=part.inputs[a:a + chunk_examples], labels=part.labels[a:a + chunk_examples])
        ds = dataset_to_json(rows, model.decode)
        outs = outputs_json(model, outputs[a:a + chunk_examples])
        yield first + a, len(ds["inputs"]), chunk_bytes(first + a, ds["inputs"], ds["labels"], outs, gz)


def stream_certificate(head: Dict[str, Any], model: Model, dataset: Dataset, outputs: Iterable[List[Any]],
                       path: str, chunk_examples: int, batch_examples: int = STREAM_BATCH,
                       timings: Optional[Dict[str, float]] = None) -> str:
    """Write a version-2 certificate for ``dataset`` at ``path`` in chunks of ``chunk_examples``.

    ``head``: [`writer.certificate_head`][exactmem.certificate.writer.certificate_head]'s document. ``outputs``: the claimed outputs of
    the batches of [`batch_ranges`][exactmem.certificate.stream.batch_ranges] (``batch_examples``), in order, e.g. a generator of
    exact forward passes, or their chunk files already encoded ([`EncodedBatch`][exactmem.certificate.stream.EncodedBatch], made by
    [`batch_chunks`][exactmem.certificate.stream.batch_chunks] on the workers); the next batch's are asked for after this one's chunks
    are written.
    ``timings`` gets the seconds spent waiting for outputs ("forward") and formatting and
    writing ("write")."""
    gz, stem = path.endswith(".gz"), chunk_stem(path)
    chunks: List[Dict[str, Any]] = []
    spent = {"forward": 0.0, "write": 0.0}
    batches = iter(outputs)
    for lo, hi in batch_ranges(len(dataset), chunk_examples, batch_examples):
        t0 = time.perf_counter()
        outs = next(batches, None)
        t1 = time.perf_counter()
        encoded_batch = isinstance(outs, EncodedBatch)
        got = sum(n for _, n, _ in outs.chunks) if encoded_batch else None if outs is None else len(outs)
        if got != hi - lo:
            raise ValueError(f"examples {lo}-{hi - 1}: expected {hi - lo} outputs, "
                             f"got {'none' if got is None else got}")
        if encoded_batch:
            encoded: Iterable[Tuple[int, int, bytes]] = outs.chunks
        else:
            part = replace(dataset, inputs=dataset.inputs[lo:hi], labels=dataset.labels[lo:hi])
            encoded = batch_chunks(model, part, outs, lo, chunk_examples, gz)
        for first, n, data in encoded:
            if first != (chunks[-1]["first"] + chunks[-1]["examples"] if chunks else 0):
                raise ValueError(f"a chunk of batch {lo}-{hi - 1} starts at example {first}, not after the last one")
            chunks.append(write_chunk_bytes(path, stem, len(chunks), first, n, data, gz))
        del outs, encoded
        spent["forward"] += t1 - t0
        spent["write"] += time.perf_counter() - t1
    t1 = time.perf_counter()
    doc = chunked_document(head, chunks)
    write_bytes_atomic(_encode(doc, gz), path)
    spent["write"] += time.perf_counter() - t1
    if timings is not None:
        timings.update(spent)
    return path
