"""Float files in, exact rationals out: token vectors, token-id sequences, model weights.

* [`load_arrays`][exactmem.export.importer.load_arrays] — the arrays of a ``.npy``, ``.npz`` or ``.safetensors`` file (e.g. the
  embedding matrix of a trained language model; F16, BF16, F32, F64 and integer tensors);
* [`exact_rows`][exactmem.export.importer.exact_rows] — rows of a float array as exact rationals: every binary float *is* a
  rational m·2^e, and it is converted to exactly that Fraction (no rounding, no decimal
  detour); NaN and ±inf are refused with their position;
* [`load_sequences`][exactmem.export.importer.load_sequences] — token-id sequences and labels from JSON or CSV;
* [`dataset`][exactmem.export.importer.dataset] — the two together: an exact `SequenceData`
  (only the vocabulary rows the sequences use are converted) with Kajitsuka & Sato's
  assumptions — Assumption 4.1 (separation) and eq. (5)/(10) (consistency) — run exactly and
  reported in an [`ImportReport`][exactmem.export.importer.ImportReport] (token ids that share a vector are named);
* [`load_model`][exactmem.export.importer.load_model] / [`from_state_dict`][exactmem.export.importer.from_state_dict] — a trained (or exported) model's float weights
  as an exact [`Model`][exactmem.model.Model], so the independent checker can decide whether
  those very weights memorize a dataset under exact arithmetic ([`exactmem.certify`][exactmem.api.certify]).

``.safetensors`` files are read with the ``safetensors`` package when it is installed and
the file has no BF16 tensor, else with the built-in reader of [`exactmem.export`][exactmem.export].
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import missing_extra
from ..data.dataset import DataError
from ..data.kajitsuka_data import SequenceData, make_data
from ..model.layers import Affine, Attention, Embed, FeedForward, Head, Model

__all__ = ["FileImportError", "load_arrays", "exact_value", "exact_rows", "TokenSequences", "load_sequences",
           "ImportReport", "dataset", "load_model", "from_arrays", "from_state_dict", "differences"]


class FileImportError(DataError):
    """A file cannot be turned into exact data (unknown format, NaN/inf, bad ids, shapes)."""


# ----------------------------------------------------------------------------- arrays


def load_arrays(path: str, backend: str = "auto") -> Tuple[Dict[str, Any], Dict[str, str]]:
    """``(arrays by name, metadata)`` of a ``.npy`` (one array named ``"array"``), ``.npz`` or
    ``.safetensors`` file. ``backend`` (safetensors): ``auto``, ``package`` or ``builtin``."""
    import numpy as np

    from .safetensors_io import _safetensors_package, read_safetensors

    if not os.path.isfile(path):
        raise FileImportError(f"no such file: {path}")
    if path.endswith(".npy"):
        return {"array": np.load(path, allow_pickle=False)}, {}
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = {}
        if "__exactmem__" in arrays:
            meta["exactmem"] = str(arrays.pop("__exactmem__"))
        return arrays, meta
    if path.endswith(".safetensors"):
        if backend == "builtin":
            arrays, meta, _ = read_safetensors(path)
            return arrays, meta
        pkg = _safetensors_package() if backend in ("auto", "package") else None
        if backend == "package" and pkg is None:
            raise missing_extra("backend='package'", "safetensors", "safetensors")
        if pkg is not None:
            _, meta, codes = _header(path)
            if "BF16" not in codes.values():
                return dict(pkg.load_file(path)), meta
        arrays, meta, _ = read_safetensors(path)
        return arrays, meta
    raise FileImportError(f"{path}: unknown file type; use .npy, .npz or .safetensors")


def _header(path: str) -> Tuple[Dict[str, Any], Dict[str, str], Dict[str, str]]:
    import struct

    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n).decode("utf-8"))
    meta = h.pop("__metadata__", None) or {}
    return h, dict(meta), {k: v["dtype"] for k, v in h.items()}


def exact_value(x: Any) -> Fraction:
    """The exact rational value of one number (a Python or NumPy float or int)."""
    if hasattr(x, "dtype") and x.dtype.kind in "iu":
        return Fraction(int(x))
    if isinstance(x, int) and not isinstance(x, bool):
        return Fraction(x)
    f = float(x)
    if f != f or f in (float("inf"), float("-inf")):
        raise FileImportError(f"{x!r} is not a finite number")
    return Fraction(f)  # exact: a binary float is m·2^e


def exact_rows(array: Any, rows: Optional[Sequence[int]] = None, name: str = "array") -> List[Tuple[Fraction, ...]]:
    """Rows of a 2-D array (or the selected ``rows``) as tuples of exact Fractions. float16,
    float32 and bfloat16 values widen to float64 exactly, and a float64 is converted to its
    exact binary value. NaN or ±inf raise [`FileImportError`][exactmem.export.importer.FileImportError] naming row and column."""
    import numpy as np

    a = np.asarray(array)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise FileImportError(f"{name}: expected a matrix (one token vector per row), got shape {a.shape}")
    idx = list(range(a.shape[0])) if rows is None else list(rows)
    sub = a[idx]
    if sub.dtype.kind == "f":
        bad = np.argwhere(~np.isfinite(sub))
        if len(bad):
            r, c = bad[0]
            raise FileImportError(f"{name}: row {idx[r]}, column {c} is {sub[r, c]} (not a finite number)")
        vals = sub.astype(np.float64).tolist()
    elif sub.dtype.kind in "iu":
        vals = sub.tolist()
    else:
        raise FileImportError(f"{name}: dtype {sub.dtype} is not numeric")
    return [tuple(Fraction(v) for v in row) for row in vals]


# ----------------------------------------------------------------------------- sequences


@dataclass
class TokenSequences:
    """Token-id sequences with labels (one per sequence: next-token; one per position: seq2seq)."""

    sequences: List[Tuple[int, ...]]
    labels: List[Any]
    C: Optional[int] = None
    setting: str = "next_token"
    source: str = ""


def _as_id(v, where: str) -> int:
    if isinstance(v, bool):
        raise FileImportError(f"{where}: {v!r} is not a token id")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise FileImportError(f"{where}: {v!r} is not an integer token id")


def load_sequences(path: str) -> TokenSequences:
    """Token-id sequences and labels from a file.

    JSON: ``{"sequences": [[ids…], …], "labels": [y, …], "C": 4, "setting": "next_token"}``
    (``C`` and ``setting`` optional; a label that is a list makes it seq2seq) or a list of
    ``{"tokens": [ids…], "label": y}``. CSV: one sequence per row, token ids then the label in
    the last column (or in a column headed ``label``); an optional header row."""
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if isinstance(doc, list):
            seqs = [r.get("tokens") for r in doc]
            labels = [r.get("label") for r in doc]
            C, setting = None, None
        elif isinstance(doc, dict):
            seqs, labels = doc.get("sequences"), doc.get("labels")
            C, setting = doc.get("C"), doc.get("setting")
        else:
            raise FileImportError(f"{path}: expected an object or a list")
        if seqs is None or labels is None or any(s is None for s in seqs):
            raise FileImportError(f"{path}: needs sequences (tokens) and labels")
    elif path.endswith(".csv"):
        with open(path, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
        if not rows:
            raise FileImportError(f"{path}: empty file")
        lab_col = -1
        if not rows[0][0].strip().lstrip("-").isdigit():
            head = [c.strip().lower() for c in rows[0]]
            lab_col = head.index("label") if "label" in head else len(head) - 1
            rows = rows[1:]
        seqs, labels = [], []
        for k, r in enumerate(rows):
            r = [c.strip() for c in r]
            j = lab_col % len(r)
            labels.append(r[j])
            seqs.append([c for i, c in enumerate(r) if i != j])
        C, setting = None, None
    else:
        raise FileImportError(f"{path}: unknown file type; use .json or .csv")
    out_s = [tuple(_as_id(v, f"{path}: sequence {i}, position {k}") for k, v in enumerate(s))
             for i, s in enumerate(seqs)]
    seq2seq = any(isinstance(y, (list, tuple)) for y in labels)
    out_l = [tuple(_as_id(v, f"{path}: label of sequence {i}") for v in y) if seq2seq
             else _as_id(y, f"{path}: label of sequence {i}") for i, y in enumerate(labels)]
    return TokenSequences(out_s, out_l, C, setting or ("seq2seq" if seq2seq else "next_token"), path)


# ----------------------------------------------------------------------------- the dataset


@dataclass
class ImportReport:
    """What [`dataset`][exactmem.export.importer.dataset] found: the source, the exact conversion, and Kajitsuka & Sato's
    assumptions (``checks``: an [`exactmem.api.DataReport`][exactmem.api.DataReport]). ``ok`` iff both hold."""

    source: str
    dtype: str
    vocabulary: int
    used_tokens: int
    checks: Any
    shared_vectors: List[Tuple[int, int]] = field(default_factory=list)
    max_denominator_bits: int = 0

    @property
    def ok(self) -> bool:
        return self.checks.ok

    def __str__(self) -> str:
        lines = [f"imported from {self.source}: vocabulary {self.vocabulary} vectors ({self.dtype}), "
                 f"{self.used_tokens} token ids used, converted exactly (denominators up to "
                 f"2^{self.max_denominator_bits})"]
        if self.shared_vectors:
            shown = ", ".join(f"{a}={b}" for a, b in self.shared_vectors[:5])
            lines.append(f"  token ids with identical vectors (one token for the theorems): {shown}"
                         + (" ..." if len(self.shared_vectors) > 5 else ""))
        lines.append(str(self.checks))
        return "\n".join(lines)


@dataclass
class Imported:
    """An imported dataset: ``data`` (exact SequenceData) and its ``report``."""

    data: SequenceData
    report: ImportReport

    def __iter__(self):  # data, report = importer.dataset(...)
        yield self.data
        yield self.report


def dataset(vectors: Union[str, Any], sequences: Union[str, TokenSequences, Sequence], labels=None,
            C: Optional[int] = None, setting: Optional[str] = None, key: Optional[str] = None, r=None, delta=None,
            strict: bool = False, name: str = "") -> Imported:
    """Token vectors + token-id sequences → exact data for Kajitsuka & Sato's constructions.

    ``vectors``: a file (``.npy``/``.npz``/``.safetensors``; ``key`` names the tensor when
    there are several) or an array, one token vector per row (vocabulary × d).
    ``sequences``: a JSON/CSV file ([`load_sequences`][exactmem.export.importer.load_sequences]), a [`TokenSequences`][exactmem.export.importer.TokenSequences], or a
    list of id sequences with ``labels``. Only the rows the sequences use are converted, each
    exactly. Then Assumption 4.1 and eq. (5)/(10) are checked exactly (``r``, ``delta``
    optional) and reported; ``strict=True`` raises `DataError`
    when one fails. Returns [`Imported`][exactmem.export.importer.Imported] (``data, report = importer.dataset(...)``)."""
    import numpy as np

    from ..api import check_data

    source = vectors if isinstance(vectors, str) else f"array {getattr(vectors, 'shape', '')}"
    if isinstance(vectors, str):
        arrays, _ = load_arrays(vectors)
        if key is None:
            mats = [k for k, v in arrays.items() if np.asarray(v).ndim == 2]
            if len(mats) != 1:
                raise FileImportError(f"{vectors}: {len(mats)} matrices ({', '.join(sorted(mats)[:6])}); name one "
                                   f"with key=")
            key = mats[0]
        if key not in arrays:
            raise FileImportError(f"{vectors}: no tensor {key!r}; tensors: {', '.join(sorted(arrays)[:10])}")
        M = arrays[key]
        source = f"{vectors}[{key}]"
    else:
        M = vectors
    M = np.asarray(M)
    if M.ndim != 2:
        raise FileImportError(f"{source}: expected a vocabulary × d matrix, got shape {M.shape}")
    if isinstance(sequences, str):
        ts = load_sequences(sequences)
    elif isinstance(sequences, TokenSequences):
        ts = sequences
    else:
        if labels is None:
            raise FileImportError("give labels with a list of sequences")
        ts = TokenSequences([tuple(_as_id(v, f"sequence {i}") for v in s) for i, s in enumerate(sequences)],
                            list(labels))
    setting = setting or ts.setting
    V = M.shape[0]
    used = sorted({t for s in ts.sequences for t in s})
    bad = [t for t in used if not 0 <= t < V]
    if bad:
        i = next(i for i, s in enumerate(ts.sequences) if any(t == bad[0] for t in s))
        raise FileImportError(f"sequence {i}: token id {bad[0]} is outside the vocabulary [0, {V})")
    rows = exact_rows(M, used, source)
    vec = dict(zip(used, rows))
    first: Dict[tuple, int] = {}
    shared = []
    for t in used:
        k = vec[t]
        if k in first:
            shared.append((first[k], t))
        else:
            first[k] = t
    if C is None:
        C = ts.C
    if C is None:
        flat = [y for ys in ts.labels for y in (ys if isinstance(ys, tuple) else (ys,))]
        C = max(flat) + 1 if flat else 1
    data = make_data([[vec[t] for t in s] for s in ts.sequences], ts.labels, C, setting, None,
                     name or f"imported {source}")
    data.info.update({"source": source, "token_ids": [list(s) for s in ts.sequences]})
    checks = check_data(data, r, delta)
    den = max((x.denominator.bit_length() - 1 for row in rows for x in row), default=0)
    rep = ImportReport(source, str(M.dtype), V, len(used), checks, shared, den)
    if strict and not checks.ok:
        raise DataError(f"imported data violates the assumptions: {'; '.join(checks.messages)}")
    return Imported(data, rep)


# ----------------------------------------------------------------------------- models


def _exact_matrix(a, name: str):
    import numpy as np

    a = np.asarray(a)
    if a.ndim == 1:
        return tuple(r[0] for r in exact_rows(a, name=name))
    return tuple(exact_rows(a, name=name))


def from_arrays(arrays: Dict[str, Any], spec: Dict[str, Any]) -> Model:
    """An exact Model from float (or integer) tensors named as in [`exactmem.export`][exactmem.export] and an
    architecture ``spec`` ([`exactmem.export.architecture`][exactmem.export.architecture]). Every value is converted
    exactly; a missing tensor, an unexpected one or a wrong shape raises naming it."""
    import numpy as np

    expected = set()
    layers = []
    for i, L in enumerate(spec["layers"]):
        p = f"layers.{i}."
        for k, shp in L.get("tensors", {}).items():
            nm = p + k
            expected.add(nm)
            if nm not in arrays:
                raise FileImportError(f"tensor {nm} (shape {shp}) is missing")
            got = list(np.asarray(arrays[nm]).shape)
            if got != list(shp):
                raise FileImportError(f"tensor {nm} has shape {got}, the architecture needs {shp}")
        T = {k: _exact_matrix(arrays[p + k], p + k) for k in L.get("tensors", {})}
        t = L["type"]
        if t == "embed":
            layers.append(Embed(T["E"], T.get("P")))
        elif t == "affine":
            layers.append(Affine(T["W"], T.get("b"), bool(L["relu"])))
        elif t == "feedforward":
            layers.append(FeedForward(T["W1"], T["b1"], T["W2"], T["b2"], bool(L["residual"])))
        elif t == "attention":
            heads = [Head(WV=T[f"heads.{h}.WV"], WO=T[f"heads.{h}.WO"], WQ=T.get(f"heads.{h}.WQ"),
                          WK=T.get(f"heads.{h}.WK")) for h in range(L["heads"])]
            layers.append(Attention(tuple(heads), L["kind"], bool(L["residual"]), L["query"], L["keys"]))
        else:
            raise FileImportError(f"layer {i}: unknown type {t!r}")
    extra = sorted(set(arrays) - expected)
    if extra:
        raise FileImportError(f"tensors not in the architecture: {', '.join(extra[:5])}")
    return Model(tuple(layers), spec["input_type"], spec["input_dim"], spec["readout"], spec["decode"],
                 name=spec.get("name", ""))


def load_model(path: str, like: Any = None) -> Model:
    """The exact model of a weights file written by [`exactmem.export.save`][exactmem.export.save] (the
    architecture is read from the file), or of any ``.npz``/``.safetensors`` whose tensor
    names follow the export names, with the architecture of the model ``like`` (a Model or
    Memorizer). Float weights are taken at their exact binary values."""
    from . import architecture

    arrays, meta = load_arrays(path)
    if like is not None:
        spec = architecture(like if isinstance(like, Model) else like.model)
    elif "exactmem" in meta:
        spec = json.loads(meta["exactmem"])
    else:
        raise FileImportError(f"{path} has no exactmem architecture; pass like=<a model with the same architecture>")
    return from_arrays(arrays, spec)


def from_state_dict(sd: Any, like: Any) -> Model:
    """An exact Model from a PyTorch ``state_dict`` (tensor names as in
    [`exactmem.export.to_torch`][exactmem.export.to_torch]) with the architecture of ``like``."""
    from . import architecture

    arrays = {}
    for k, v in sd.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu()
            if str(v.dtype) == "torch.bfloat16":
                v = v.float()
            v = v.numpy()
        arrays[k] = v
    return from_arrays(arrays, architecture(like if isinstance(like, Model) else like.model))


def differences(a: Any, b: Any) -> List[Tuple[str, int]]:
    """``(tensor name, number of entries that differ)`` for every tensor where two models of the
    same architecture disagree (empty: identical weights, exactly)."""
    from . import tensor_items

    ma = a if isinstance(a, Model) else a.model
    mb = b if isinstance(b, Model) else b.model
    ta, tb = dict(tensor_items(ma)), dict(tensor_items(mb))
    if set(ta) != set(tb):
        raise ValueError(f"different tensors: {sorted(set(ta) ^ set(tb))[:5]}")
    out = []
    for k, A in ta.items():
        B = tb[k]
        fa = [x for r in A for x in (r if isinstance(r, tuple) else (r,))]
        fb = [x for r in B for x in (r if isinstance(r, tuple) else (r,))]
        n = sum(1 for x, y in zip(fa, fb) if x != y) + abs(len(fa) - len(fb))
        if n:
            out.append((k, n))
    return out
