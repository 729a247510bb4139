"""The streaming producer of version-2 certificates (issue 27): forward pass and chunk files,
one batch of examples at a time.

:func:`write_certificate` needs the whole document: every example's output and the JSON text
of the whole dataset at once (about 15 KB per Kajitsuka example at N = 10⁵, 1.5 GB in all).
:func:`stream_certificate` evaluates ``batch`` examples, writes their chunk files at once and
keeps only each chunk's entry (file, SHA-256, size); the main document is written last. So the
producer holds the construction, the dataset and one batch's outputs and text, whatever N is.
The files are byte for byte those :func:`write_certificate` writes (tested). Untrusted side:
the checker verifies every chunk against the main document's digests.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional

from ..data.dataset import Dataset, dataset_to_json
from ..model.layers import Model
from .writer import chunk_stem, chunked_document, outputs_json, write_bytes_atomic, write_chunk, _encode

#: Examples evaluated together (a multiple of the chunk size is best): large enough that the exact
#: engines share work among equal values, small enough that one batch's rows and text stay small.
STREAM_BATCH = 50_000


def stream_certificate(head: Dict[str, Any], model: Model, dataset: Dataset,
                       outputs_of: Callable[[Dataset, int], List[Any]], path: str, chunk_examples: int,
                       batch_examples: int = STREAM_BATCH, timings: Optional[Dict[str, float]] = None) -> str:
    """Write a version-2 certificate for ``dataset`` at ``path`` in chunks of ``chunk_examples``.

    ``head``: :func:`writer.certificate_head`'s document. ``outputs_of(part, j)``: the claimed
    outputs of the examples of ``part`` (batch j, from 0), e.g. the exact forward pass.
    ``batch_examples`` is rounded up to a whole number of chunks. ``timings`` gets the seconds
    spent in ``outputs_of`` ("forward") and in formatting and writing ("write")."""
    if chunk_examples < 1:
        raise ValueError("chunk_examples must be at least 1")
    step = -(-max(batch_examples, 1) // chunk_examples) * chunk_examples
    gz, stem, n = path.endswith(".gz"), chunk_stem(path), len(dataset)
    chunks: List[Dict[str, Any]] = []
    spent = {"forward": 0.0, "write": 0.0}
    for j, lo in enumerate(range(0, n, step)):
        part = replace(dataset, inputs=dataset.inputs[lo:lo + step], labels=dataset.labels[lo:lo + step])
        t0 = time.perf_counter()
        outs = outputs_of(part, j)
        t1 = time.perf_counter()
        ds = dataset_to_json(part, model.decode)
        outs = outputs_json(model, outs)
        for a in range(0, len(part), chunk_examples):
            chunks.append(write_chunk(path, stem, len(chunks), lo + a, ds["inputs"][a:a + chunk_examples],
                                      ds["labels"][a:a + chunk_examples], outs[a:a + chunk_examples], gz))
        del ds, outs, part
        spent["forward"] += t1 - t0
        spent["write"] += time.perf_counter() - t1
    t1 = time.perf_counter()
    doc = chunked_document(head, chunks)
    write_bytes_atomic(_encode(doc, gz), path)
    spent["write"] += time.perf_counter() - t1
    if timings is not None:
        timings.update(spent)
    return path


def batch_count(n: int, chunk_examples: int, batch_examples: int = STREAM_BATCH) -> int:
    """How many batches :func:`stream_certificate` evaluates for ``n`` examples."""
    step = -(-max(batch_examples, 1) // chunk_examples) * chunk_examples
    return max(1, -(-n // step))
