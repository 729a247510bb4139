"""Exact models out to the tools people use: NumPy ``.npz``, safetensors, PyTorch.

Weights are exact rationals; a float file cannot hold most of them. :func:`to_arrays`
rounds every weight to a chosen IEEE format (``float16``, ``bfloat16``, ``float32``,
``float64``: round to nearest, ties to even, with the format's subnormals and overflow to
±inf — computed exactly from the rational, :func:`round_to_format`) and returns a
:class:`RoundingReport` saying how many weights were exact, rounded, overflowed or flushed
to zero, and the largest relative error. The construction needs ``max_bits`` bits per
weight (``docs/measurement.md``); once that exceeds the format's significand the exported
network is a *different* function, and :func:`float_accuracy` measures how many labels the
float network still gets right (``docs/library.md`` has the table for Kajitsuka & Sato).

Files:

* :func:`save` — ``.npz`` (``numpy.savez``) or ``.safetensors``; the architecture (layer
  types, flags, shapes, readout) is stored next to the tensors as JSON (npz entry
  ``__exactmem__``, safetensors metadata key ``exactmem``), so :func:`exactmem.importer.load_model`
  rebuilds the exact model from the float values. safetensors files are written with the
  ``safetensors`` package when it is installed (extra ``safetensors``) and otherwise by the
  small writer here, which follows the published format (8-byte little-endian header length,
  JSON header, raw little-endian data) and is tested against the package.
* :func:`to_torch` — a reference ``torch.nn.Module`` with the same forward pass and a
  ``state_dict`` whose keys are the tensor names below (extra ``torch``; imported lazily).

Tensor names: ``layers.{i}.W``/``.b`` (affine), ``.W1 .b1 .W2 .b2`` (feed-forward), ``.E``/``.P``
(embedding), ``layers.{i}.heads.{h}.WQ .WK .WV .WO`` (attention). Matrices keep exactmem's
orientation (tokens are columns: a layer m → m' has W of shape m'×m, so a row-vector
framework computes ``x @ W.T``).

:class:`FloatNet` evaluates the exported network in NumPy in the format's arithmetic (the
"what would a float framework compute" reference; bfloat16 weights are evaluated in float32
arithmetic). Nothing here decides a verdict: the exact model and the checker do.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .model.layers import Affine, Attention, Embed, FeedForward, Model
from .numbers import bits

__all__ = ["FORMATS", "FloatFormat", "round_to_format", "RoundingReport", "architecture", "tensor_items",
           "to_arrays", "save", "FloatNet", "FloatAccuracy", "float_accuracy", "to_torch", "state_dict",
           "write_safetensors", "read_safetensors", "add_parser", "main"]

SPEC_FORMAT = "exactmem-architecture"
SPEC_VERSION = 1


# ----------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754 binary format: ``precision`` significand bits (with the hidden bit), largest
    exponent ``emax`` (max finite (2 − 2^(1−p))·2^emax), smallest normal exponent ``emin``."""

    name: str
    precision: int
    emax: int
    emin: int
    numpy: str  # NumPy dtype holding the values ("float32" for bfloat16)
    safetensors: str  # safetensors dtype code

    @property
    def max_finite(self) -> Fraction:
        return (2 - Fraction(1, 2 ** (self.precision - 1))) * Fraction(2) ** self.emax

    @property
    def min_subnormal(self) -> Fraction:
        return Fraction(1, 2 ** (self.precision - 1 - self.emin))


FORMATS: Dict[str, FloatFormat] = {
    "float16": FloatFormat("float16", 11, 15, -14, "float16", "F16"),
    "bfloat16": FloatFormat("bfloat16", 8, 127, -126, "float32", "BF16"),
    "float32": FloatFormat("float32", 24, 127, -126, "float32", "F32"),
    "float64": FloatFormat("float64", 53, 1023, -1022, "float64", "F64"),
}


def get_format(dtype) -> FloatFormat:
    if isinstance(dtype, FloatFormat):
        return dtype
    name = str(dtype).replace("torch.", "")
    if name not in FORMATS:
        raise ValueError(f"unknown float format {dtype!r}; use one of {', '.join(FORMATS)}")
    return FORMATS[name]


def _floor_log2(x: Fraction) -> int:
    """⌊log₂ x⌋ for a rational x > 0, exactly."""
    p, q = x.numerator, x.denominator
    e = p.bit_length() - q.bit_length()
    # 2^e ≤ p/q < 2^(e+1)  ⇔  q·2^e ≤ p < q·2^(e+1)
    if e >= 0:
        if p < q << e:
            e -= 1
    elif p << -e < q:
        e -= 1
    return e


def round_to_format(x: Any, fmt: Any) -> Tuple[float, str]:
    """Round the rational ``x`` to the IEEE format ``fmt`` (name or :class:`FloatFormat`):
    round to nearest, ties to even, gradual underflow, overflow to ±inf — exactly, from the
    rational (no intermediate float). Returns ``(value as a Python float, status)`` with
    status ``exact``, ``rounded``, ``overflow`` (±inf) or ``underflow`` (a nonzero value
    rounded to ±0). Every value of every format here is exactly a Python float."""
    fmt = get_format(fmt)
    x = Fraction(x)
    if x == 0:
        return 0.0, "exact"
    neg = x < 0
    a = -x if neg else x
    e = max(_floor_log2(a), fmt.emin)
    k = e - (fmt.precision - 1)  # quantum 2^k
    s = a / (Fraction(2) ** k) if k >= 0 else a * (1 << -k)
    m, r = divmod(s.numerator, s.denominator)
    twice = 2 * r
    if twice > s.denominator or (twice == s.denominator and m & 1):
        m += 1
    exact = r == 0
    if m == 0:
        return (-0.0 if neg else 0.0), "underflow"
    val = Fraction(m) * (Fraction(2) ** k)
    if val > fmt.max_finite:
        return (-math.inf if neg else math.inf), "overflow"
    f = math.ldexp(m, k)
    return (-f if neg else f), ("exact" if exact else "rounded")


# ----------------------------------------------------------------------------- architecture


def tensor_items(model: Model) -> List[Tuple[str, Any]]:
    """``(name, exact matrix)`` for every stored tensor, in layer order (biases as vectors)."""
    out: List[Tuple[str, Any]] = []
    for i, layer in enumerate(model.layers):
        p = f"layers.{i}."
        if isinstance(layer, Embed):
            out.append((p + "E", layer.E))
            if layer.P is not None:
                out.append((p + "P", layer.P))
        elif isinstance(layer, Affine):
            out.append((p + "W", layer.W))
            if layer.b is not None:
                out.append((p + "b", layer.b))
        elif isinstance(layer, FeedForward):
            out += [(p + "W1", layer.W1), (p + "b1", layer.b1), (p + "W2", layer.W2), (p + "b2", layer.b2)]
        elif isinstance(layer, Attention):
            for h, head in enumerate(layer.heads):
                for nm in ("WQ", "WK", "WV", "WO"):
                    M = getattr(head, nm)
                    if M is not None:
                        out.append((f"{p}heads.{h}.{nm}", M))
        else:
            raise TypeError(type(layer).__name__)
    return out


def _shape(M) -> List[int]:
    if M and isinstance(M[0], tuple):
        return [len(M), len(M[0])]
    return [len(M)]


def architecture(model: Model) -> Dict[str, Any]:
    """The model without its weights, as JSON-able data: input, readout, decoding and per layer
    its type, flags and the names and shapes of its tensors."""
    layers = []
    items = dict(tensor_items(model))
    for i, layer in enumerate(model.layers):
        d: Dict[str, Any] = {"type": type(layer).__name__.lower()}
        if isinstance(layer, Affine):
            d["relu"] = layer.relu
        elif isinstance(layer, FeedForward):
            d["residual"] = layer.residual
        elif isinstance(layer, Attention):
            d.update({"kind": layer.kind, "residual": layer.residual, "query": layer.query, "keys": layer.keys,
                      "heads": len(layer.heads)})
        d["tensors"] = {k[len(f"layers.{i}."):]: _shape(v) for k, v in items.items() if k.startswith(f"layers.{i}.")}
        layers.append(d)
    return {"format": SPEC_FORMAT, "version": SPEC_VERSION, "input_type": model.input_type,
            "input_dim": model.input_dim, "readout": model.readout, "decode": model.decode, "name": model.name,
            "layers": layers}


# ----------------------------------------------------------------------------- rounding


@dataclass
class TensorRounding:
    name: str
    shape: List[int]
    entries: int
    exact: int
    rounded: int
    overflow: int
    underflow: int
    max_rel_error: float  # over finite, nonzero exact weights (display; computed from exact values)
    max_bits: int  # bits of the exact weights (docs/measurement.md)


@dataclass
class RoundingReport:
    """How the exact weights fared in a float format: counts per tensor and in total."""

    format: str
    precision: int
    tensors: List[TensorRounding] = field(default_factory=list)

    @property
    def entries(self) -> int:
        return sum(t.entries for t in self.tensors)

    def _sum(self, k: str) -> int:
        return sum(getattr(t, k) for t in self.tensors)

    @property
    def exact(self) -> int:
        return self._sum("exact")

    @property
    def rounded(self) -> int:
        return self._sum("rounded")

    @property
    def overflow(self) -> int:
        return self._sum("overflow")

    @property
    def underflow(self) -> int:
        return self._sum("underflow")

    @property
    def all_exact(self) -> bool:
        return self.exact == self.entries

    @property
    def max_rel_error(self) -> float:
        return max((t.max_rel_error for t in self.tensors), default=0.0)

    @property
    def max_bits(self) -> int:
        return max((t.max_bits for t in self.tensors), default=0)

    def as_dict(self) -> Dict[str, Any]:
        return {"format": self.format, "precision": self.precision, "entries": self.entries, "exact": self.exact,
                "rounded": self.rounded, "overflow": self.overflow, "underflow": self.underflow,
                "max_rel_error": self.max_rel_error, "max_bits": self.max_bits}

    def __str__(self) -> str:
        head = (f"{self.format} ({self.precision}-bit significand): {self.entries} weights, {self.exact} exact, "
                f"{self.rounded} rounded, {self.overflow} overflow to inf, {self.underflow} flushed to zero; "
                f"max relative error {self.max_rel_error:.3g}; the exact weights need up to {self.max_bits} bits")
        worst = sorted((t for t in self.tensors if t.exact < t.entries),
                       key=lambda t: (-t.overflow, -t.max_rel_error))[:5]
        lines = [head] + [f"  {t.name} {t.shape}: {t.rounded} rounded, {t.overflow} overflow, {t.underflow} to zero, "
                          f"max rel. error {t.max_rel_error:.3g}, max bits {t.max_bits}" for t in worst]
        return "\n".join(lines)


def _flat(M) -> List[Fraction]:
    if M and isinstance(M[0], tuple):
        return [x for row in M for x in row]
    return list(M)


def to_arrays(model: Model, dtype: str = "float32") -> Tuple[Dict[str, Any], RoundingReport]:
    """Every tensor of ``model`` rounded to ``dtype`` (see :func:`round_to_format`), as NumPy
    arrays (bfloat16 values are held in float32 arrays), and the :class:`RoundingReport`."""
    import numpy as np

    fmt = get_format(dtype)
    rep = RoundingReport(fmt.name, fmt.precision)
    arrays: Dict[str, Any] = {}
    cache: Dict[Fraction, Tuple[float, str]] = {}
    for name, M in tensor_items(model):
        flat = _flat(M)
        vals = []
        counts = {"exact": 0, "rounded": 0, "overflow": 0, "underflow": 0}
        rel = 0.0
        mb = 0
        for x in flat:
            r = cache.get(x)
            if r is None:
                r = cache[x] = round_to_format(x, fmt)
            v, st = r
            vals.append(v)
            counts[st] += 1
            mb = max(mb, bits(x))
            if st == "rounded" or st == "underflow":
                err = abs(Fraction(v) - x) / abs(x)
                rel = max(rel, float(err))
            elif st == "overflow":
                rel = math.inf
        shape = _shape(M)
        arrays[name] = np.array(vals, dtype=np.float64).astype(fmt.numpy).reshape(shape)
        rep.tensors.append(TensorRounding(name, shape, len(flat), counts["exact"], counts["rounded"],
                                          counts["overflow"], counts["underflow"], rel, mb))
    return arrays, rep


# ----------------------------------------------------------------------------- safetensors

_ST_DTYPES = {"F16": ("<f2", 2), "F32": ("<f4", 4), "F64": ("<f8", 8), "BF16": ("<u2", 2),
              "I8": ("<i1", 1), "I16": ("<i2", 2), "I32": ("<i4", 4), "I64": ("<i8", 8), "U8": ("<u1", 1)}


def _bf16_bits(a) -> Any:
    """float32 array whose values are bfloat16-representable → the uint16 bfloat16 bit patterns."""
    import numpy as np

    u = np.ascontiguousarray(a, dtype="<f4").view("<u4")
    if np.any(u & 0xFFFF):
        raise ValueError("values are not representable in bfloat16")
    return (u >> 16).astype("<u2")


def write_safetensors(path: str, tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None,
                      dtypes: Optional[Dict[str, str]] = None) -> str:
    """Write a safetensors file with the small built-in writer (the format: an 8-byte
    little-endian header size, a JSON header mapping each name to dtype, shape and byte
    offsets plus ``__metadata__`` of strings, then the raw little-endian C-order data).
    ``dtypes`` may name ``BF16`` for float32 arrays holding bfloat16 values."""
    import numpy as np

    header: Dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])
        code = (dtypes or {}).get(name)
        if code == "BF16":
            raw = _bf16_bits(a)
        else:
            code = {"float16": "F16", "float32": "F32", "float64": "F64", "int8": "I8", "int16": "I16",
                    "int32": "I32", "int64": "I64", "uint8": "U8"}.get(a.dtype.name)
            if code is None:
                raise ValueError(f"{name}: dtype {a.dtype} has no safetensors code here")
            raw = np.ascontiguousarray(a, dtype=_ST_DTYPES[code][0])
        data = raw.tobytes()
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    return path


def read_safetensors(path: str) -> Tuple[Dict[str, Any], Dict[str, str], Dict[str, str]]:
    """Read a safetensors file with the built-in reader: ``(arrays, metadata, dtype codes)``.
    BF16 tensors come back as float32 arrays (exactly: a bfloat16 is the top half of a float32)."""
    import numpy as np

    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: unreadable safetensors header ({e})") from None
    meta = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + n:]
    arrays, codes = {}, {}
    for name, ent in header.items():
        code = ent["dtype"]
        if code not in _ST_DTYPES:
            raise ValueError(f"{path}: tensor {name!r} has dtype {code}, not supported here")
        a0, a1 = ent["data_offsets"]
        a = np.frombuffer(data[a0:a1], dtype=_ST_DTYPES[code][0]).reshape(ent["shape"])
        if code == "BF16":
            a = (a.astype("<u4") << 16).view("<f4")
        arrays[name] = a.copy()
        codes[name] = code
    return arrays, dict(meta), codes


def _safetensors_package():
    try:
        import safetensors.numpy as stn  # noqa: F401

        return stn
    except ImportError:
        return None


# ----------------------------------------------------------------------------- save


def save(model: Any, path: str, dtype: str = "float32", backend: str = "auto") -> RoundingReport:
    """Write the exact weights of ``model`` (a Model or Memorizer), rounded to ``dtype``
    (:func:`round_to_format`), to ``path``: ``.npz`` or
    ``.safetensors`` by extension, the architecture stored alongside. ``backend`` (safetensors
    only): ``auto`` (the ``safetensors`` package if installed, else the built-in writer),
    ``package`` or ``builtin``. bfloat16 needs safetensors (NumPy has no bfloat16) and is
    written by the built-in writer. Returns the :class:`RoundingReport`."""
    import numpy as np

    m = model if isinstance(model, Model) else model.model
    fmt = get_format(dtype)
    arrays, rep = to_arrays(m, fmt)
    spec = architecture(m)
    spec["dtype"] = fmt.name
    spec["rounding"] = rep.as_dict()
    if path.endswith(".npz"):
        if fmt.name == "bfloat16":
            raise ValueError("npz cannot hold bfloat16; save to .safetensors")
        np.savez(path, __exactmem__=np.array(json.dumps(spec)), **arrays)
    elif path.endswith(".safetensors"):
        pkg = _safetensors_package() if backend in ("auto", "package") else None
        if backend == "package" and pkg is None:
            raise ImportError("the safetensors package is not installed (pip install 'exactmem[safetensors]')")
        meta = {"exactmem": json.dumps(spec), "format": "pt"}
        if pkg is not None and fmt.name != "bfloat16":
            pkg.save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, path, metadata=meta)
        else:
            dts = {k: "BF16" for k in arrays} if fmt.name == "bfloat16" else None
            write_safetensors(path, arrays, meta, dts)
    else:
        raise ValueError(f"{path}: use a .npz or .safetensors file name")
    return rep


# ----------------------------------------------------------------------------- float evaluation


class FloatNet:
    """The exported network evaluated in NumPy float arithmetic (the layer semantics of
    ``docs/model.md``: affine, feed-forward with residual, uniform / hardmax / softmax /
    base-2 softmax attention with ``query``/``keys`` options, embedding; readout and decoding).

    Hardmax picks the keys whose float score equals the float maximum; softmax subtracts the
    row maximum. Every operation is in the format's dtype (bfloat16: float32 arithmetic)."""

    def __init__(self, spec: Dict[str, Any], arrays: Dict[str, Any], dtype="float32"):
        import numpy as np

        self.spec = spec
        self.format = get_format(dtype)
        self.dt = np.dtype(self.format.numpy)
        self.arrays = {k: np.asarray(v).astype(self.dt) for k, v in arrays.items()}

    @classmethod
    def from_model(cls, model, dtype="float32") -> "FloatNet":
        """Round ``model``'s weights to ``dtype`` (the same rounding as :func:`save`)."""
        m = model if isinstance(model, Model) else model.model
        arrays, rep = to_arrays(m, dtype)
        net = cls(architecture(m), arrays, dtype)
        net.rounding = rep
        return net

    def _t(self, i: int, name: str):
        return self.arrays.get(f"layers.{i}.{name}")

    def _inputs(self, seqs):
        import numpy as np

        sp = self.spec
        if sp["input_type"] == "tokens":
            E, P = self._t(0, "E"), self._t(0, "P")
            X = E[np.asarray(seqs, dtype=np.int64)]
            if P is not None:
                X = X + P[: X.shape[1]][None, :, :]
            return X, 1
        cache: Dict[Fraction, float] = {}

        def rnd(v):
            v = Fraction(v)
            if v not in cache:
                cache[v] = round_to_format(v, self.format)[0]
            return cache[v]

        X = [[[rnd(v) for v in tok] for tok in s] for s in seqs]
        return np.array(X, dtype=np.float64).astype(self.dt), 0

    def _attention(self, i: int, L: Dict[str, Any], X):
        import numpy as np

        B, n, _ = X.shape
        q_pos = list(range(n)) if L["query"] == "all" else [n - 1]
        out = X[:, q_pos, :].copy() if L["residual"] else None
        for h in range(L["heads"]):
            WV, WO, WQ, WK = (self._t(i, f"heads.{h}.{k}") for k in ("WV", "WO", "WQ", "WK"))
            V = X @ WV.T  # B × n × v
            nq = len(q_pos)
            if L["kind"] == "uniform":
                S = np.zeros((B, nq, n), dtype=self.dt)
            else:
                Q = X[:, q_pos, :] @ WQ.T
                K = X @ WK.T
                S = Q @ np.swapaxes(K, 1, 2)  # B × nq × n
            mask = np.ones((nq, n), dtype=bool)
            if L["keys"] == "others":
                for a, j in enumerate(q_pos):
                    mask[a, j] = False
            if L["kind"] in ("uniform", "hardmax"):
                Sm = np.where(mask[None], S, -np.inf)
                top = np.max(Sm, axis=2, keepdims=True)
                sel = (Sm == top) & mask[None] if L["kind"] == "hardmax" else np.broadcast_to(mask[None], S.shape)
                cnt = np.sum(sel, axis=2, keepdims=True).astype(self.dt)
                Pw = sel.astype(self.dt) / cnt
            else:
                Sm = np.where(mask[None], S, -np.inf)
                top = np.max(Sm, axis=2, keepdims=True)
                Z = Sm - top
                e = np.exp2(Z) if L["kind"] == "softmax2" else np.exp(Z)
                e = np.where(mask[None], e, 0).astype(self.dt)
                Pw = e / np.sum(e, axis=2, keepdims=True)
            A = Pw.astype(self.dt) @ V  # B × nq × v
            o = A @ WO.T
            out = o if out is None else out + o
        return out

    def forward(self, inputs: Sequence) -> List[Any]:
        """Raw outputs, one per sequence: a vector (readout last) or an n × m' array (all)."""
        import numpy as np

        by_len: Dict[int, List[int]] = {}
        for k, s in enumerate(inputs):
            by_len.setdefault(len(s), []).append(k)
        res: List[Any] = [None] * len(inputs)
        with np.errstate(all="ignore"):
            for _, idx in by_len.items():
                X, start = self._inputs([inputs[k] for k in idx])
                for i, L in enumerate(self.spec["layers"]):
                    if i < start:
                        continue
                    t = L["type"]
                    if t == "affine":
                        W, b = self._t(i, "W"), self._t(i, "b")
                        X = X @ W.T
                        if b is not None:
                            X = X + b
                        if L["relu"]:
                            X = np.maximum(X, self.dt.type(0))
                    elif t == "feedforward":
                        Hh = np.maximum(X @ self._t(i, "W1").T + self._t(i, "b1"), self.dt.type(0))
                        T = Hh @ self._t(i, "W2").T + self._t(i, "b2")
                        X = X + T if L["residual"] else T
                    elif t == "attention":
                        X = self._attention(i, L, X)
                    else:
                        raise ValueError(f"layer {i}: cannot evaluate {t!r} here")
                for a, k in enumerate(idx):
                    res[k] = X[a, -1, :] if self.spec["readout"] == "last" else X[a]
        return res

    def predict(self, inputs: Sequence) -> List[Any]:
        """Decoded outputs: the output vector(s) (identity) or the argmax class (None on a tie)."""
        import numpy as np

        out = self.forward(inputs)
        if self.spec["decode"] != "argmax":
            return out

        def am(v):
            top = np.max(v)
            idx = np.flatnonzero(v == top)
            return int(idx[0]) if len(idx) == 1 and np.isfinite(top) else None

        if self.spec["readout"] == "last":
            return [am(v) for v in out]
        return [[am(r) for r in o] for o in out]


def _to_float(v) -> float:
    if isinstance(v, float):
        return v
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


@dataclass
class FloatAccuracy:
    """How many examples the float network gets right.

    ``exact``: output equal to the label (identity decoding, every component and position) or
    the right argmax; ``nearest``: every output component rounds to its (integer) label —
    the fair reading for class labels; ``nonfinite``: examples with an inf or NaN output."""

    format: str
    examples: int
    exact: int
    nearest: int
    nonfinite: int
    rounding: Optional[RoundingReport] = None

    def __str__(self) -> str:
        pct = lambda k: f"{100 * k / self.examples:.1f}%" if self.examples else "-"  # noqa: E731
        return (f"{self.format}: {self.exact}/{self.examples} exactly right ({pct(self.exact)}), "
                f"{self.nearest}/{self.examples} right after rounding to the nearest label ({pct(self.nearest)}), "
                f"{self.nonfinite} with inf/NaN outputs")


def float_accuracy(model: Any, dataset: Any = None, dtype: str = "float32") -> FloatAccuracy:
    """Round ``model``'s weights to ``dtype``, evaluate the dataset in that float arithmetic
    (:class:`FloatNet`) and count the examples it still gets right (:class:`FloatAccuracy`).
    ``model`` may be a Memorizer (its dataset is the default) or a :class:`FloatNet`."""
    import numpy as np

    from .api import as_dataset

    if dataset is None:
        dataset = getattr(model, "dataset", None)
    ds = as_dataset(dataset)
    net = model if isinstance(model, FloatNet) else FloatNet.from_model(model, dtype)
    out = net.forward(ds.inputs)
    argmax = net.spec["decode"] == "argmax"
    pred = net.predict(ds.inputs) if argmax else out
    ex = near = bad = 0
    for o, p, y in zip(out, pred, ds.labels):
        o = np.asarray(o, dtype=np.float64)
        if not np.all(np.isfinite(o)):
            bad += 1
        if argmax:
            ok = p == (list(y) if isinstance(y, tuple) else y)
            ex += ok
            near += ok
            continue
        want = np.array([[_to_float(v) for v in c] for c in y] if y and isinstance(y[0], tuple)
                        else [_to_float(v) for v in y], dtype=np.float64).reshape(o.shape)
        ex += bool(np.all(o == want))
        near += bool(np.all(np.rint(o) == want))
    return FloatAccuracy(net.format.name, len(ds.inputs), ex, near, bad, getattr(net, "rounding", None))


# ----------------------------------------------------------------------------- PyTorch


def _torch_dtype(fmt: FloatFormat):
    import torch

    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
            "float64": torch.float64}[fmt.name]


def to_torch(model: Any, dtype: str = "float32"):
    """A reference ``torch.nn.Module`` computing the same forward pass as the exact model (in
    the float dtype): submodules ``layers[i]`` holding the rounded tensors as parameters, so
    ``state_dict()`` keys are the export names (``layers.0.W``, ``layers.30.heads.0.WV``, …).
    ``forward(x)`` takes a float tensor batch × n × d (or token ids batch × n for embedding
    models) and returns batch × m' (readout last) or batch × n × m'. The rounding report is
    the module's ``rounding`` attribute. Needs PyTorch (extra ``torch``)."""
    import numpy as np
    import torch
    from torch import nn

    m = model if isinstance(model, Model) else model.model
    fmt = get_format(dtype)
    arrays, rep = to_arrays(m, fmt)
    spec = architecture(m)
    tdt = _torch_dtype(fmt)

    def par(a):
        return nn.Parameter(torch.tensor(np.asarray(a, dtype=np.float64)).to(tdt), requires_grad=False)

    class Block(nn.Module):
        def __init__(self, i, L):
            super().__init__()
            self.kind = L["type"]
            self.cfg = L
            if self.kind == "attention":
                self.heads = nn.ModuleList()
                for h in range(L["heads"]):
                    hm = nn.Module()
                    for k in ("WQ", "WK", "WV", "WO"):
                        a = arrays.get(f"layers.{i}.heads.{h}.{k}")
                        if a is not None:
                            setattr(hm, k, par(a))
                    self.heads.append(hm)
            else:
                for k in L["tensors"]:
                    setattr(self, k, par(arrays[f"layers.{i}.{k}"]))

        def forward(self, X):
            L = self.cfg
            if self.kind == "affine":
                X = X @ self.W.T
                if hasattr(self, "b"):
                    X = X + self.b
                return torch.relu(X) if L["relu"] else X
            if self.kind == "feedforward":
                T = torch.relu(X @ self.W1.T + self.b1) @ self.W2.T + self.b2
                return X + T if L["residual"] else T
            if self.kind == "attention":
                return self._attention(X)
            raise ValueError(self.kind)

        def _attention(self, X):
            L = self.cfg
            B, n, _ = X.shape
            q_pos = list(range(n)) if L["query"] == "all" else [n - 1]
            Xq = X[:, q_pos, :]
            out = Xq.clone() if L["residual"] else None
            mask = torch.ones(len(q_pos), n, dtype=torch.bool)
            if L["keys"] == "others":
                for a, j in enumerate(q_pos):
                    mask[a, j] = False
            for hm in self.heads:
                V = X @ hm.WV.T
                if L["kind"] == "uniform":
                    P = mask.to(X.dtype).expand(B, -1, -1)
                    P = P / P.sum(-1, keepdim=True)
                else:
                    S = (Xq @ hm.WQ.T) @ (X @ hm.WK.T).transpose(1, 2)
                    S = S.masked_fill(~mask, float("-inf"))
                    if L["kind"] == "hardmax":
                        sel = (S == S.amax(-1, keepdim=True)) & mask
                        P = sel.to(X.dtype)
                        P = P / P.sum(-1, keepdim=True)
                    elif L["kind"] == "softmax2":
                        Z = S - S.amax(-1, keepdim=True)
                        e = torch.exp2(Z)
                        P = e / e.sum(-1, keepdim=True)
                    else:
                        P = torch.softmax(S, dim=-1)
                o = (P @ V) @ hm.WO.T
                out = o if out is None else out + o
            return out

    class ExactmemReference(nn.Module):
        """Reference float module of an exactmem model (see exactmem.export.to_torch)."""

        def __init__(self):
            super().__init__()
            self.spec = spec
            self.rounding = rep
            self.layers = nn.ModuleList([Block(i, L) for i, L in enumerate(spec["layers"])])

        def forward(self, x):
            start = 0
            if spec["input_type"] == "tokens":
                emb = self.layers[0]
                X = emb.E[x]
                if hasattr(emb, "P"):
                    X = X + emb.P[: X.shape[1]].unsqueeze(0)
                start = 1
            else:
                X = x.to(tdt)
            for blk in list(self.layers)[start:]:
                X = blk(X)
            return X[:, -1, :] if spec["readout"] == "last" else X

    return ExactmemReference()


def state_dict(model: Any, dtype: str = "float32"):
    """The PyTorch ``state_dict`` of :func:`to_torch` (an ``OrderedDict`` of tensors)."""
    return to_torch(model, dtype).state_dict()


# ----------------------------------------------------------------------------- command line


def add_parser(sub) -> None:
    """Register ``export`` on the top-level subparsers object of ``exactmem.cli``."""
    e = sub.add_parser("export", help="export a certificate's model to .npz / .safetensors in a float dtype",
                       description="Round the exact weights of a certificate's model to a float format, write "
                                   ".npz or .safetensors (architecture included), report the rounding, and "
                                   "evaluate the float model on the certificate's dataset.")
    e.add_argument("cert", help="certificate file (.json or .json.gz)")
    e.add_argument("--out", required=True, help="output file: .npz or .safetensors")
    e.add_argument("--dtype", default="float32", choices=tuple(FORMATS), help="float format (default float32)")
    e.add_argument("--no-eval", action="store_true", help="do not evaluate the float model on the dataset")
    e.add_argument("--json", action="store_true", help="print the report as JSON")
    e.set_defaults(fn=run_cli)


def run_cli(args) -> int:
    """Handler of ``exactmem export``: exit 0 on success, 3 on unreadable input."""
    import sys

    from .certificate.checker import MalformedCertificate, load_certificate
    from .data.dataset import dataset_from_json
    from .model.serialize import model_from_json

    try:
        doc = load_certificate(args.cert)
        model = model_from_json(doc["model"])
        ds = dataset_from_json(doc["dataset"], model.input_type, model.decode)
    except (MalformedCertificate, KeyError, ValueError, TypeError) as e:
        print(f"error: {args.cert}: {e}", file=sys.stderr)
        return 3
    try:
        rep = save(model, args.out, args.dtype)
    except (ValueError, ImportError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    acc = None if args.no_eval else float_accuracy(model, ds, args.dtype)
    if args.json:
        out = {"out": args.out, "rounding": rep.as_dict()}
        if acc is not None:
            out["float_accuracy"] = {"examples": acc.examples, "exact": acc.exact, "nearest": acc.nearest,
                                     "nonfinite": acc.nonfinite}
        print(json.dumps(out, indent=1))
    else:
        print(f"wrote {args.out}")
        print(rep)
        if acc is not None:
            print(f"float model on the certificate's {acc.examples} examples: {acc}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m exactmem.export CERT --out FILE [--dtype float32]`` (same as ``exactmem export``)."""
    import argparse

    p = argparse.ArgumentParser(prog="exactmem-export")
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = p.parse_args(["export"] + list(argv if argv is not None else __import__("sys").argv[1:]))
    return args.fn(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
