"""Decimal text of integers and rationals of any size (kernel; standard library only).

CPython's ``int(str)``/``str(int)`` are quadratic and capped by ``sys.get_int_max_str_digits()``;
here both split a long number in halves around a cached power of ten (``CHUNK`` < 640, the
smallest cap CPython accepts). Messages and witnesses abbreviate numbers of over ``SHORT`` digits.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

CHUNK = 600
SHORT = 100  # digits shown whole in a message or witness; longer numbers are abbreviated
DECIMAL_BITS = 1 << 16  # larger numbers are shown by their size only


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


def _shown(n: int) -> str:
    """An int for a message: whole up to SHORT digits, else abbreviated; past DECIMAL_BITS only
    its size (no decimal conversion, which is quadratic)."""
    if n.bit_length() > DECIMAL_BITS:
        return f"{'-' if n < 0 else ''}<{n.bit_length()}-bit integer>"
    return short(int_str(n))


def fmt(x, abbreviate: bool = True) -> Any:
    """JSON form of a value: Fraction -> "p" or "p/q" (each part abbreviated when ``abbreviate``),
    int -> int (or its abbreviated text), intervals and lists -> lists."""
    if isinstance(x, Fraction):
        f = _shown if abbreviate else int_str
        return f(x.numerator) if x.denominator == 1 else f"{f(x.numerator)}/{f(x.denominator)}"
    if isinstance(x, (list, tuple)):
        return [fmt(y, abbreviate) for y in x]
    if isinstance(x, int) and not isinstance(x, bool) and abbreviate and x.bit_length() > 3 * SHORT:
        return _shown(x)
    return x
