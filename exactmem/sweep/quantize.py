"""Weight quantization (``quant-float`` / ``quant-fixed``): every stored weight rounded to ``b`` bits.

Rounding every stored weight to ``b`` significant bits or ``b`` fractional bits, the ``b`` at which
that is the identity, and the bits per weight of a storage format holding the result.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Dict, Iterable, Optional

from ..arith.numbers import round_to_bits
from .formats import SweepError


def quantize_value(x: Fraction, mode: str, b: int) -> Fraction:
    """Round x to b significant bits (``float``) or to a multiple of 2^-b (``fixed``); nearest, ties to even."""
    if mode == "float":
        return round_to_bits(x, b, "nearest")
    if mode == "fixed":
        s = x * (1 << b) if b >= 0 else x / (1 << -b)
        q = round(s)  # Fraction.__round__: nearest, ties to even
        return Fraction(q, 1 << b) if b >= 0 else Fraction(q * (1 << -b))
    raise SweepError(f"unknown quantization mode {mode!r}; use float or fixed")


def _map_weights(obj, f):
    """Apply f to every Fraction stored in a model (layers are dataclasses; matrices tuples)."""
    if isinstance(obj, Fraction):
        return f(obj)
    if isinstance(obj, tuple):
        return tuple(_map_weights(x, f) for x in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for fld in dataclasses.fields(obj):
            if not fld.init:
                continue
            v = getattr(obj, fld.name)
            if isinstance(v, (tuple, Fraction)) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
                changes[fld.name] = _map_weights(v, f)
        return dataclasses.replace(obj, **changes)
    return obj


def _weights(obj) -> Iterable[Fraction]:
    if isinstance(obj, Fraction):
        yield obj
    elif isinstance(obj, tuple):
        for x in obj:
            yield from _weights(x)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for fld in dataclasses.fields(obj):
            if fld.init:
                yield from _weights(getattr(obj, fld.name))


def quantize_model(model, mode: str, b: int):
    """The model with every weight rounded (see `quantize_value`); structure unchanged."""
    cache: Dict[Fraction, Fraction] = {}

    def f(x):
        q = cache.get(x)
        if q is None:
            q = cache[x] = quantize_value(x, mode, b)
        return q

    return _map_weights(model, f)


def significant_bits(x: Fraction) -> Optional[int]:
    """Bits of the odd significand of a dyadic x (0 for 0); None if x is not dyadic."""
    q = x.denominator
    if q & (q - 1):
        return None
    p = abs(x.numerator)
    if p == 0:
        return 0
    return (p >> ((p & -p).bit_length() - 1)).bit_length()


def fraction_bits(x: Fraction) -> Optional[int]:
    """k with denominator 2^k (0 for integers); None if x is not dyadic."""
    q = x.denominator
    return None if q & (q - 1) else q.bit_length() - 1


def identity_bits(model, mode: str) -> Optional[int]:
    """Smallest b at which quantization leaves every weight unchanged (None: some weight is
    not dyadic, no b does)."""
    fn = significant_bits if mode == "float" else fraction_bits
    best = 1 if mode == "float" else 0
    for w in set(_weights(model)):
        k = fn(w)
        if k is None:
            return None
        best = max(best, k)
    return best


def storage_bits(model, mode: str, b: int) -> Dict[str, int]:
    """Bits per weight of a uniform storage format holding the quantized weights.

    ``float``: 1 sign + b significand + E exponent bits, E = 1 + LEN(max |e|) over the
    nonzero weights' binary exponents e = ⌊log₂|w|⌋ (a signed exponent field covering them).
    ``fixed``: 1 sign + LEN(max |w·2^b|) (the integer part and the b fractional bits)."""
    ws = [w for w in set(_weights(model)) if w]
    if mode == "float":
        emax = 0
        for w in ws:
            p, q = abs(w.numerator), w.denominator
            e = p.bit_length() - q.bit_length()
            if Fraction(p, q) < Fraction(2) ** e:  # ⌊log₂|w|⌋ exactly
                e -= 1
            emax = max(emax, abs(e))
        E = 1 + emax.bit_length()
        return {"per_weight": 1 + b + E, "exponent_bits": E}
    top = max((abs(w * (1 << b)).numerator for w in ws), default=0)
    return {"per_weight": 1 + top.bit_length(), "exponent_bits": 0}
