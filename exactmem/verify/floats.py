"""Binary floats as the exact rationals they denote, decoded from their bit patterns.

Every finite binary float is a dyadic rational ``m·2^e``. `exact_array` turns a float16,
bfloat16, float32 or float64 array into a NumPy object array of `fractions.Fraction`
holding exactly those values: the sign, exponent and mantissa fields are read from the raw
bits (integer arithmetic only, no float operation, no decimal detour). NaN and ±inf have no
rational value: refused with their position, or, with ``special=True`` (graph constants, where
``docs/verify-format.md`` gives them a meaning), kept as `exactmem.verify.special.Special`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Tuple

import numpy as np

__all__ = ["FORMATS", "NonFinite", "decode_bits", "exact_array", "exact_scalar"]

# name -> (total bits, exponent bits, mantissa bits, unsigned integer view)
ONNX_FLOATS = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}  # onnx TensorProto float data types
ONNX_INTS = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 12: "uint32", 13: "uint64"}  # integers
ONNX_BOOL = 9  # TensorProto.BOOL
FORMATS = {"float16": (16, 5, 10, np.uint16), "bfloat16": (16, 8, 7, np.uint16),
           "float32": (32, 8, 23, np.uint32), "float64": (64, 11, 52, np.uint64)}


class NonFinite(ValueError):
    """A NaN or an infinity where a rational is needed (``index`` names the entry)."""

    def __init__(self, index: Tuple[int, ...], what: str):
        super().__init__(f"{what} at index {list(index)}")
        self.index, self.what = index, what


def decode_bits(bits: int, fmt: str) -> Fraction:
    """The rational value of one float given by its bit pattern ``bits`` in format ``fmt``."""
    total, ebits, mbits, _ = FORMATS[fmt]
    sign = -1 if bits >> (total - 1) & 1 else 1
    e = bits >> mbits & ((1 << ebits) - 1)
    m = bits & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    if e == (1 << ebits) - 1:
        raise NonFinite((), "NaN" if m else ("+inf" if sign > 0 else "-inf"))
    if e == 0:  # subnormal (or zero): m·2^(1-bias-mbits)
        shift = 1 - bias - mbits
    else:
        m |= 1 << mbits
        shift = e - bias - mbits
    v = sign * m
    return Fraction(v << shift) if shift >= 0 else Fraction(v, 1 << -shift)


def exact_array(a: np.ndarray, fmt: str = None, special: bool = False) -> np.ndarray:
    """An object array of Fractions equal to the float array ``a`` entry by entry.

    ``fmt`` names the format when ``a`` holds raw bits (a uint16 array of bfloat16 values);
    otherwise it is taken from ``a.dtype``. Integer arrays become Fractions of their ints; ``special``:
    NaN and ±inf become `Special` values instead of raising `NonFinite`."""
    from .special import SPECIALS
    a = np.asarray(a)
    if fmt is None:
        if a.dtype.kind in "iub":
            out = np.empty(a.shape, dtype=object)
            out.reshape(-1)[:] = [Fraction(int(x)) for x in a.reshape(-1)]
            return out
        fmt = "bfloat16" if a.dtype.name == "bfloat16" else a.dtype.name
        if fmt not in FORMATS:
            raise TypeError(f"cannot take {a.dtype} values exactly (float16, bfloat16, float32, float64 only)")
    view = FORMATS[fmt][3]
    raw = a.view(view) if a.dtype.kind != "u" else a.astype(view)
    cache = {}
    flat = raw.reshape(-1)
    vals = []
    for i, b in enumerate(flat.tolist()):
        v = cache.get(b)
        if v is None:
            try:
                v = cache[b] = decode_bits(b, fmt)
            except NonFinite as e:
                if special:
                    v = cache[b] = SPECIALS[{"-inf": -1, "+inf": 1}.get(e.what, 2)]
                    vals.append(v)
                    continue
                raise NonFinite(tuple(int(j) for j in np.unravel_index(i, a.shape)), e.what) from None
        vals.append(v)
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = vals
    return out


def exact_scalar(x: float, fmt: str = "float32", special: bool = False) -> Fraction:
    """A Python float attribute (ONNX stores float attributes as float32) as its exact rational;
    the value is first rounded to ``fmt`` the way the file stored it (a no-op for a value read back)."""
    return exact_array(np.array([x], dtype=np.dtype(fmt)), special=special)[0]
