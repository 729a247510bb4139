"""Rigorous rational enclosures of the real numbers in the papers' size formulas.

Bounds such as Kajitsuka & Sato eq. (110) (depth) and (111) (bit complexity) contain
√(N log N), log R with R = 20 r V² δ⁻¹ √(π d), and so on: real numbers, mostly irrational.
A claim compared by the independent checker needs a *rational* bound, so every such number
is enclosed here in an interval ``[lo, hi]`` with rational endpoints, computed with integer
arithmetic only (no floating point):

* ``sqrt``: ``⌊√(q·4^k)⌋ / 2^k ≤ √q ≤ ⌈√(q·4^k)⌉ / 2^k`` (``math.isqrt``);
* ``log2``: the largest integer a with ``2^a ≤ q^(2^k)`` gives ``a/2^k ≤ log2 q < (a+1)/2^k``
  (one exact comparison of integers);
* π and ln 2 from their first 20 decimals (truncations, so the enclosures are strict);
* ``+``, ``−``, ``×``, ``/``, ``max``, ``ceil``, ``floor`` on intervals, as usual.

How a claim uses an enclosure (``docs/vardi.md``): "measured ≤ formula" is certified with the
bound ``⌊lo⌋`` — if an integer is ≤ ⌊lo⌋ it is ≤ the real formula; a counter-example to a
formula uses ``⌊hi⌋`` — an integer above ⌊hi⌋ is above the real value for sure.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import isqrt
from typing import Union

__all__ = ["Enc", "PI", "LN2", "enc", "sqrt", "log2", "ln", "emax", "ceil", "floor", "floor_lower"]

FRAC_BITS = 12  # 2^-12 resolution for sqrt and log2 (plenty for integer-valued claims)

Number = Union[int, Fraction, "Enc"]


@dataclass(frozen=True)
class Enc:
    """A closed interval [lo, hi] of rationals known to contain one real number."""

    lo: Fraction
    hi: Fraction

    def __post_init__(self):
        object.__setattr__(self, "lo", Fraction(self.lo))
        object.__setattr__(self, "hi", Fraction(self.hi))
        if self.lo > self.hi:
            raise ValueError(f"empty enclosure [{self.lo}, {self.hi}]")

    def __add__(self, other: Number) -> "Enc":
        o = enc(other)
        return Enc(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __neg__(self) -> "Enc":
        return Enc(-self.hi, -self.lo)

    def __sub__(self, other: Number) -> "Enc":
        return self + (-enc(other))

    def __rsub__(self, other: Number) -> "Enc":
        return enc(other) - self

    def __mul__(self, other: Number) -> "Enc":
        o = enc(other)
        ps = (self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi)
        return Enc(min(ps), max(ps))

    __rmul__ = __mul__

    def __truediv__(self, other: Number) -> "Enc":
        o = enc(other)
        if o.lo <= 0 <= o.hi:
            raise ZeroDivisionError("division by an enclosure containing 0")
        return self * Enc(1 / o.hi, 1 / o.lo)

    def __rtruediv__(self, other: Number) -> "Enc":
        return enc(other) / self

    def width(self) -> Fraction:
        return self.hi - self.lo

    def __str__(self) -> str:
        return f"[{float(self.lo):.6g}, {float(self.hi):.6g}]"  # display only


def enc(x: Number) -> Enc:
    """An exact number as a point interval (an Enc is returned unchanged)."""
    if isinstance(x, Enc):
        return x
    if isinstance(x, float):
        raise TypeError("floats are not allowed in enclosures; use Fraction")
    return Enc(Fraction(x), Fraction(x))


PI = Enc(Fraction(314159265358979323846, 10 ** 20), Fraction(314159265358979323847, 10 ** 20))
LN2 = Enc(Fraction(693147180559945309417, 10 ** 21), Fraction(693147180559945309418, 10 ** 21))


def _sqrt_lo(q: Fraction, k: int = FRAC_BITS) -> Fraction:
    """A rational ≤ √q (q ≥ 0), within 2^-k."""
    s = q * 4 ** k
    return Fraction(isqrt(s.numerator // s.denominator), 2 ** k)


def _sqrt_hi(q: Fraction, k: int = FRAC_BITS) -> Fraction:
    """A rational ≥ √q (q ≥ 0), within 2^-k."""
    s = q * 4 ** k
    n = -(-s.numerator // s.denominator)  # ⌈s⌉
    r = isqrt(n)
    if r * r < n:
        r += 1
    return Fraction(r, 2 ** k)


def sqrt(x: Number) -> Enc:
    """Enclosure of √x for x ≥ 0."""
    e = enc(x)
    if e.lo < 0:
        raise ValueError("square root of a possibly negative number")
    return Enc(_sqrt_lo(e.lo), _sqrt_hi(e.hi))


def _log2_floor_scaled(q: Fraction, k: int) -> int:
    """The largest integer a with 2^a ≤ q^(2^k), i.e. ⌊2^k · log2 q⌋ (q > 0), exactly."""
    P, S = q.numerator ** (2 ** k), q.denominator ** (2 ** k)
    a = P.bit_length() - S.bit_length() - 1  # 2^a ≤ P/S < 2^(a+2)

    def fits(a: int) -> bool:  # 2^a · S ≤ P
        return (S << a) <= P if a >= 0 else S <= (P << -a)

    while not fits(a):  # defensive; the bit-length estimate is already a lower bound
        a -= 1
    while fits(a + 1):
        a += 1
    return a


EXACT_LOG_BITS = 256  # above this size of q, q^(2^k) is too big: use the squaring enclosure instead


def _log2_enclosure(q: Fraction, k: int) -> Enc:
    """log2 q for q > 0: the exact comparison ⌊2^k log2 q⌋ for moderate q; for huge q the
    lower-bound module's digit-by-digit squaring enclosure
    (:func:`exactmem.bounds.enclosure.log2_interval`, proof in its docstring)."""
    if max(q.numerator.bit_length(), q.denominator.bit_length()) <= EXACT_LOG_BITS:
        a = _log2_floor_scaled(q, k)
        return Enc(Fraction(a, 2 ** k), Fraction(a + 1, 2 ** k))
    from .bounds.enclosure import log2_interval

    iv = log2_interval(q, k)
    return Enc(iv.lo, iv.hi)


def log2(x: Number, k: int = FRAC_BITS) -> Enc:
    """Enclosure of log2 x for x > 0, from integer arithmetic only (resolution 2^-k)."""
    e = enc(x)
    if e.lo <= 0:
        raise ValueError("logarithm of a possibly non-positive number")
    return Enc(_log2_enclosure(e.lo, k).lo, _log2_enclosure(e.hi, k).hi)


def ln(x: Number) -> Enc:
    """Enclosure of the natural logarithm: log2 x · ln 2."""
    return log2(x) * LN2


def emax(*xs: Number) -> Enc:
    es = [enc(x) for x in xs]
    return Enc(max(e.lo for e in es), max(e.hi for e in es))


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def ceil(x: Number) -> Enc:
    e = enc(x)
    return Enc(_ceil(e.lo), _ceil(e.hi))


def floor_lower(x: Number) -> int:
    """⌊lower end⌋: an integer certainly ≤ the enclosed real (how "measured ≤ formula" claims
    use a formula, see the module docstring)."""
    e = enc(x)
    return e.lo.numerator // e.lo.denominator


def floor(x: Number) -> Enc:
    e = enc(x)
    return Enc(e.lo.numerator // e.lo.denominator, e.hi.numerator // e.hi.denominator)
