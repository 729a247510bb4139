"""Decimal text of integers and rationals of any size (kernel; standard library only).

CPython's ``int(str)``/``str(int)`` are quadratic above a few thousand digits and refused past
``sys.get_int_max_str_digits()``. Here both split a long number in halves around a cached
power of ten, so the cost is a few big multiplications or divisions per level and never
depends on that limit (``CHUNK`` is below the smallest limit CPython accepts, 640).
Messages and witnesses show a number of more than ``SHORT`` digits abbreviated.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

CHUNK = 600
SHORT = 100  # digits shown whole in a message or witness; longer numbers are abbreviated


@lru_cache(maxsize=128)
def _pow10(k: int) -> int:
    return 10 ** k


def parse_int(s: str) -> int:
    """The integer of a decimal string ``-?[0-9]+`` of any length."""
    if len(s) <= CHUNK:
        return int(s)
    if s[0] == "-":
        return -parse_int(s[1:])
    k = 1 << ((len(s) // 2).bit_length() - 1)  # a power of two, so powers of ten repeat
    return parse_int(s[:-k]) * _pow10(k) + parse_int(s[-k:])


def int_str(n: int) -> str:
    """The decimal string of an int of any size."""
    if n < 0:
        return "-" + int_str(-n)
    if n.bit_length() <= 3 * CHUNK:  # < 10^(0.91 CHUNK) digits
        return str(n)
    k = 1 << ((n.bit_length() * 3 // 20).bit_length() - 1)  # at most about half the digits
    hi, lo = divmod(n, _pow10(k))
    return int_str(hi) + int_str(lo).rjust(k, "0")


def short(s: str) -> str:
    """A decimal string, abbreviated to its first and last digits when longer than SHORT."""
    digits = len(s) - (s[:1] == "-")
    return s if digits <= SHORT else f"{s[:SHORT // 2]}...{s[-SHORT // 2:]} ({digits} digits)"


def rational_str(x: Fraction, abbreviate: bool = False) -> str:
    """ "p" or "p/q"; each part abbreviated when ``abbreviate``."""
    f = short if abbreviate else str
    p = f(int_str(x.numerator))
    return p if x.denominator == 1 else f"{p}/{f(int_str(x.denominator))}"


def fmt(x, abbreviate: bool = True) -> Any:
    """JSON form of a value: Fraction -> "p/q", int -> int (or its abbreviated text), intervals
    and lists -> lists."""
    if isinstance(x, Fraction):
        return rational_str(x, abbreviate)
    if isinstance(x, (list, tuple)):
        return [fmt(y, abbreviate) for y in x]
    if isinstance(x, int) and not isinstance(x, bool) and abbreviate and x.bit_length() > 3 * SHORT:
        return short(int_str(x))
    return x
