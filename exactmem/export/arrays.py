"""Tensor names, the stored architecture, rounding a model to float arrays, and ``save`` (`exactmem.export`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Tuple

from ..errors import missing_extra
from ..model.layers import Affine, Attention, Embed, FeedForward, Model
from ..arith.numbers import bits
from .formats import get_format, round_to_format
from .safetensors_io import _safetensors_package, write_safetensors


SPEC_FORMAT = "exactmem-architecture"
SPEC_VERSION = 1


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
    """Every tensor of ``model`` rounded to ``dtype`` (see [`round_to_format`][exactmem.export.round_to_format]), as NumPy
    arrays (bfloat16 values are held in float32 arrays), and the [`RoundingReport`][exactmem.export.RoundingReport]."""
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


# ----------------------------------------------------------------------------- save


def save(model: Any, path: str, dtype: str = "float32", backend: str = "auto") -> RoundingReport:
    """Write the exact weights of ``model`` (a Model or Memorizer), rounded to ``dtype``
    ([`round_to_format`][exactmem.export.round_to_format]), to ``path``: ``.npz`` or
    ``.safetensors`` by extension, the architecture stored alongside. ``backend`` (safetensors
    only): ``auto`` (the ``safetensors`` package if installed, else the built-in writer),
    ``package`` or ``builtin``. bfloat16 needs safetensors (NumPy has no bfloat16) and is
    written by the built-in writer. Returns the [`RoundingReport`][exactmem.export.RoundingReport]."""
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
            raise missing_extra("backend='package'", "safetensors", "safetensors")
        meta = {"exactmem": json.dumps(spec), "format": "pt"}
        if pkg is not None and fmt.name != "bfloat16":
            pkg.save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, path, metadata=meta)
        else:
            dts = {k: "BF16" for k in arrays} if fmt.name == "bfloat16" else None
            write_safetensors(path, arrays, meta, dts)
    else:
        raise ValueError(f"{path}: use a .npz or .safetensors file name")
    return rep
