"""Exact scalars: rationals, their bit complexity, dyadic rounding, "p/q" strings.

Bit complexity follows the convention documented in ``docs/certificate.md`` and
``docs/bits.md`` (Kajitsuka & Sato §3.3 adopt Vardi et al.'s "bits needed to represent a
parameter"; this module fixes one concrete count for a rational p/q).
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import gcd
from operator import attrgetter
from typing import Callable, Iterable, List, Tuple, Union

from ..kernel.text import int_str, parse_int

Rational = Fraction
RationalLike = Union[int, Fraction, str]

_RATIONAL_RE = re.compile(r"^(-?[0-9]+)(?:/([0-9]+))?$")


class RationalFormatError(ValueError):
    """A string is not an exact rational of the form ``p`` or ``p/q``."""


# decimal text of any length, shared with the checker's kernel (no dependence on CPython's int-str limit)
str_to_int, int_to_str = parse_int, int_str


def parse_rational(text: str) -> Fraction:
    """Parse ``"p"`` or ``"p/q"`` (q > 0) into a Fraction; reject anything else."""
    if not isinstance(text, str):
        raise RationalFormatError(f"expected a rational string like '-3/8', got {text!r}")
    m = _RATIONAL_RE.match(text)
    if not m:
        raise RationalFormatError(f"not a rational 'p' or 'p/q': {text!r}")
    p = str_to_int(m.group(1))
    q = str_to_int(m.group(2)) if m.group(2) is not None else 1
    if q == 0:
        raise RationalFormatError(f"zero denominator in {text!r}")
    return Fraction(p, q)


def format_rational(x: RationalLike) -> str:
    """Print a rational as ``"p"`` or ``"p/q"`` in lowest terms."""
    x = to_rational(x)
    if x.denominator == 1:
        return int_to_str(x.numerator)
    return f"{int_to_str(x.numerator)}/{int_to_str(x.denominator)}"


def to_rational(x: RationalLike) -> Fraction:
    """Convert an int, Fraction or ``"p/q"`` string to a Fraction.

    Floats are refused: they would silently bring rounding into exact data. Use
    ``Fraction(x)`` explicitly (the float's exact binary value) if that is what you mean.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise TypeError("booleans are not rationals")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, str):
        return parse_rational(x)
    if hasattr(x, "numerator") and hasattr(x, "denominator") and not isinstance(x, float):
        return Fraction(int(x.numerator), int(x.denominator))
    raise TypeError(f"expected an exact rational (int, Fraction, 'p/q'), got {type(x).__name__}: {x!r}")


def bit_length_int(n: int) -> int:
    """LEN(|n|): number of binary digits of |n| (LEN(0) = 0)."""
    return abs(int(n)).bit_length()


def bits(x: RationalLike) -> int:
    """Bit complexity of a rational p/q in lowest terms: ``1 + LEN(|p|) + LEN(q) - 1``.

    One sign bit, the numerator's binary length, and ``floor(log2 q)`` bits for the
    denominator, so a dyadic ``a/2^k`` costs ``1 + LEN(|a|) + k`` (the dyadic convention of
    the Kajitsuka note §1.4) and an integer costs its length plus a sign bit.
    """
    x = to_rational(x)
    return 1 + x.numerator.__abs__().bit_length() + x.denominator.bit_length() - 1


def is_dyadic(x: RationalLike) -> bool:
    """True iff the reduced denominator is a power of two."""
    q = to_rational(x).denominator
    return q & (q - 1) == 0


def round_to_bits(x: RationalLike, b: int, mode: str = "nearest") -> Fraction:
    """Round x to a dyadic with ``b`` significant bits (``mode``: nearest, down, up).

    Used by precision sweeps: the result m·2^e has |m| < 2^b. Zero stays zero.
    """
    if b < 1:
        raise ValueError("need at least one significant bit")
    x = to_rational(x)
    if x == 0:
        return Fraction(0)
    p, q = x.numerator, x.denominator
    # exponent e such that 2^(b-1) <= |x| / 2^e < 2^b
    e = abs(p).bit_length() - q.bit_length() - b
    while True:
        scaled = Fraction(abs(p), q) / (Fraction(2) ** e)
        if scaled >= 2 ** b:
            e += 1
        elif scaled < 2 ** (b - 1):
            e -= 1
        else:
            break
    scaled = x / (Fraction(2) ** e)
    fl = scaled.numerator // scaled.denominator
    if mode == "down":
        m = fl
    elif mode == "up":
        m = -((-scaled.numerator) // scaled.denominator)
    elif mode == "nearest":
        rem = scaled - fl
        m = fl + 1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2) else fl
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    return Fraction(m) * (Fraction(2) ** e)


_denominator = attrgetter("denominator")


def lcm_of_denominators(values: Iterable[Fraction]) -> int:
    """Least common multiple of the denominators (1 for an empty iterable)."""
    out = 1
    for q in set(map(_denominator, values)):  # each distinct denominator once
        if q != 1:
            out = out * q // gcd(out, q)
    return out


def integer_points(points: Iterable[Iterable[Fraction]]) -> Tuple[int, List[Tuple[int, ...]]]:
    """(L, P): the points (coordinates Fractions or ints) times the lcm L of all their
    denominators, as tuples of integers."""
    points = list(points)
    L = lcm_of_denominators(x for p in points for x in p)
    return L, [tuple(x.numerator * (L // x.denominator) for x in p) for p in points]


def max_sq_norm(points: Iterable[Iterable[Fraction]]) -> Fraction:
    """max ‖p‖² over the points, exactly (0 for none), in integers over a common denominator."""
    L, P = integer_points(points)
    return Fraction(max((sum(x * x for x in p) for p in P), default=0), L * L)


def least_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest integer b in (lo, hi] with ``pred(b)``, by bisection, given that ``pred(hi)``
    holds and ``pred(lo)`` does not (or lo lies below the range). Assumes ``pred`` monotone on
    (lo, hi]; callers that doubt it evaluate the neighbours themselves (``exactmem.sweep``)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi
