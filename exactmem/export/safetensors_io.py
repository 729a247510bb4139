"""A small safetensors reader and writer following the published format, and the optional ``safetensors`` package.

The format: an 8-byte little-endian header length, a JSON header, raw little-endian data
([`exactmem.export`][exactmem.export])."""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Dict, Optional, Tuple

from ..errors import write_error


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
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(h)))
            f.write(h)
            for b in blobs:
                f.write(b)
        os.replace(tmp, path)
    except OSError as e:  # name the user's path and the reason, never the temporary name
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise write_error(path, e) from None
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
