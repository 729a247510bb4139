"""Certificate writer (format v1, ``docs/certificate.md``): the untrusted producer's side.

The writer serialises what a construction built and what the fast engine computed; it
decides nothing. Files are written atomically (temporary file, then rename), so an
interrupted run never leaves a partial certificate that looks complete.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..data.dataset import Dataset, dataset_to_json
from ..model.layers import Model
from ..model.serialize import model_to_json
from ..arith.numbers import format_rational, to_rational
from ..kernel.checker import canonical_hash
from ..errors import write_error
from ..kernel.schema import CHUNK_FORMAT, QUANTITIES

FORMAT = "exactmem-certificate"
VERSION = 1
OPS = ("==", "<=", ">=", "<", ">")


@dataclass(frozen=True)
class Claim:
    """A size claim of a theorem: ``quantity op bound`` (bound computed exactly from the paper).

    ``name`` binds the bound to a name that claim formulas may use (``label_classes <= 4`` named C);
    ``formula`` (an expression, ``docs/certificate.md`` § *Claim formulas*) says where the bound
    comes from, and the kernel checks that it evaluates to exactly ``bound``; ``definitions`` are
    the named expressions the formula uses (collected into the certificate's ``definitions``).
    Build formula claims with `exactmem.certificate.formulas.Formulas`, which computes the bound."""

    quantity: str
    op: str
    bound: Any
    source: str = ""
    name: Optional[str] = None
    formula: Any = None
    definitions: Tuple[Tuple[str, Any, str], ...] = ()

    def __post_init__(self):
        if self.quantity not in QUANTITIES:
            raise ValueError(f"unknown claim quantity {self.quantity!r}; known: {', '.join(QUANTITIES)}")
        if self.op not in OPS:
            raise ValueError(f"unknown claim operator {self.op!r}")
        object.__setattr__(self, "bound", to_rational(self.bound))

    def to_json(self) -> Dict[str, Any]:
        out = {"quantity": self.quantity, "op": self.op, "bound": format_rational(self.bound), "source": self.source}
        if self.name is not None:
            out["name"] = self.name
        if self.formula is not None:
            out["formula"] = self.formula
        return out

    def __str__(self) -> str:
        return f"{self.quantity} {self.op} {format_rational(self.bound)}"


def definitions_json(claims: List[Claim]) -> List[Dict[str, Any]]:
    """The named expressions every claim formula uses, each once, in the order first used."""
    seen: Dict[str, Any] = {}
    for c in claims:
        for name, expr, note in c.definitions:
            if seen.setdefault(name, (expr, note)) != (expr, note):
                raise ValueError(f"two claims define {name!r} differently")
    return [{"name": n, "expr": e, **({"note": note} if note else {})} for n, (e, note) in seen.items()]


def _output_json(model: Model, out) -> Any:
    if out is None:
        return None
    if model.decode == "argmax":
        return out
    if model.readout == "all":
        return [[format_rational(x) for x in col] for col in out]
    return [format_rational(x) for x in out]


def build_certificate(theorem: str, instance: str, seed: Optional[int], model: Model, dataset: Dataset,
                      outputs: List[Any], claims: List[Claim], error_bound=None, max_precision: int = 4096,
                      meta: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Assemble a certificate document (dict) and stamp its content hash."""
    doc = certificate_head(theorem, instance, seed, model, claims, error_bound, max_precision, meta)
    doc["dataset"] = dataset_to_json(dataset, model.decode)
    doc["outputs"] = outputs_json(model, outputs)
    doc["hash"] = canonical_hash(doc)
    return doc


def certificate_head(theorem: str, instance: str, seed: Optional[int], model: Model, claims: List[Claim],
                     error_bound=None, max_precision: int = 4096, meta: Optional[Dict[str, Any]] = None
                     ) -> Dict[str, Any]:
    """Everything of a certificate document but its examples: ``dataset`` and ``outputs`` are
    None (in their places, so the file's key order is the same), and no hash yet."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "theorem": theorem,
        "instance": instance,
        "seed": seed,
        "model": model_to_json(model),
        "dataset": None,
        "outputs": None,
        "claims": [c.to_json() for c in claims],
        **({"definitions": defs} if (defs := definitions_json(claims)) else {}),
        "check": {"error_bound": format_rational(error_bound) if error_bound is not None else None,
                  "max_precision": int(max_precision)},
        "meta": dict(meta or {}),
    }


def outputs_json(model: Model, outputs: List[Any]) -> List[Any]:
    """The claimed outputs as the certificate writes them."""
    return [_output_json(model, o) for o in outputs]


def write_certificate(doc: Dict[str, Any], path: str, chunk_examples: Optional[int] = None) -> str:
    """Write ``doc`` to ``path`` (gzip if it ends in .gz) atomically; return the path.

    With ``chunk_examples`` = K and more than K examples, the dataset and outputs go into chunk
    files of K examples next to ``path`` (``<name>.chunk00000.json``, …), each named in the
    main document with its SHA-256: a version-2 certificate (``docs/certificate.md``)."""
    if chunk_examples is not None and len(doc["dataset"]["inputs"]) > chunk_examples:
        doc = _write_chunks(doc, path, chunk_examples)
    write_bytes_atomic(_encode(doc, path.endswith(".gz")), path)
    return path


def _encode(obj, gz: bool) -> bytes:
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    return gzip.compress(data, mtime=0) if gz else data


def _write_chunks(doc: Dict[str, Any], path: str, k: int) -> Dict[str, Any]:
    """Write the chunk files of ``doc`` next to ``path``; return the version-2 main document."""
    gz, stem = path.endswith(".gz"), chunk_stem(path)
    ds, outs = doc["dataset"], doc["outputs"]
    chunks = [write_chunk(path, stem, i, lo, ds["inputs"][lo:lo + k], ds["labels"][lo:lo + k], outs[lo:lo + k], gz)
              for i, lo in enumerate(range(0, len(ds["inputs"]), k))]
    return chunked_document(doc, chunks)


def chunk_stem(path: str) -> str:
    """The stem of a certificate's chunk file names (``<stem>.chunk00000.json``), one the checker accepts."""
    base = os.path.basename(path)
    stem = base[:-8] if base.endswith(".json.gz") else base[:-5] if base.endswith(".json") else base
    return re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip(".-") or "certificate"


def write_chunk(path: str, stem: str, i: int, first: int, inputs: list, labels: list, outputs: list,
                gz: bool) -> Dict[str, Any]:
    """Write chunk i (examples from ``first`` on, in JSON form) next to the certificate at
    ``path``; return its entry in the main document (file, SHA-256, examples, first)."""
    return write_chunk_bytes(path, stem, i, first, len(inputs), chunk_bytes(first, inputs, labels, outputs, gz), gz)


def chunk_bytes(first: int, inputs: list, labels: list, outputs: list, gz: bool) -> bytes:
    """The bytes of the chunk file of the examples from ``first`` on (in JSON form)."""
    body = {"format": CHUNK_FORMAT, "first": first, "inputs": inputs, "labels": labels,
            "outputs": outputs}  # "first": equal rows, distinct chunks
    return _encode(body, gz)


def write_chunk_bytes(path: str, stem: str, i: int, first: int, examples: int, data: bytes, gz: bool) -> Dict[str, Any]:
    """Write chunk i's bytes ([`chunk_bytes`][exactmem.certificate.writer.chunk_bytes]) next to the certificate at ``path``; its entry."""
    name = f"{stem}.chunk{i:05d}.json" + (".gz" if gz else "")
    write_bytes_atomic(data, os.path.join(os.path.dirname(os.path.abspath(path)), name))
    return {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "examples": examples, "first": first}


def chunked_document(doc: Dict[str, Any], chunks: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The version-2 main document naming ``chunks``, hashed."""
    new = {**doc, "version": 2, "dataset": {"chunks": chunks}, "outputs": None}
    new.pop("hash", None)
    new["hash"] = canonical_hash(new)
    return new


def write_bytes_atomic(data: bytes, path: str, make_dirs: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: never a partial file.

    The file gets the mode a plain ``open(path, "wb")`` would give, ``0o666`` less the umask
    (``mkstemp`` alone leaves 0600, unreadable by the group under the usual umask 022).
    ``make_dirs``: create the missing folders of ``path``. A failure raises
    ``exactmem.errors.WriteError`` (an ``OSError``): ``cannot write PATH: REASON``, naming
    ``path``, never the temporary name."""
    try:
        _write_bytes_atomic(data, path, make_dirs)
    except OSError as e:
        raise write_error(path, e) from e


def _write_bytes_atomic(data: bytes, path: str, make_dirs: bool) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if make_dirs:
        os.makedirs(directory, exist_ok=True)
    try:  # the umask, read without changing it (Linux >= 4.7) ...
        with open("/proc/self/status", encoding="ascii") as st:
            umask = next(int(line.split()[1], 8) for line in st if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):  # ... or set and restored at once
        umask = os.umask(0o022)
        os.umask(umask)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".partial-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
