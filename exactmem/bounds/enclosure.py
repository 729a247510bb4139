"""Rational enclosures of e and log2 with proven error bounds, and exact decisions.

No floating point anywhere. A real quantity that is not rational (``e``, ``log2(48·e·n·N)``)
is represented by an :class:`Interval` of two ``Fraction`` endpoints that provably contains
it; a comparison is *decided* only when the enclosures of both sides are disjoint (or both
sides are exact), otherwise the precision is doubled (:func:`decide`).

Proofs of the enclosures:

* **e** (:func:`e_interval`): with ``S_K = Σ_{k=0}^{K} 1/k!``,
  ``S_K < e < S_K + 1/(K!·K)``, because
  ``Σ_{k>K} 1/k! < 1/(K+1)! · Σ_{j≥0} (K+2)^{-j} = (K+2)/((K+1)!(K+1)) ≤ 1/(K!·K)``
  (the last step is ``K(K+2) ≤ (K+1)²``).
* **log2** (:func:`log2_interval`): write ``x = 2^k·y`` with ``y ∈ [1, 2)``. Binary digits of
  ``log2 y`` come from repeated squaring: ``y_0 = y``; if ``y_j² ≥ 2`` the next digit is 1 and
  ``y_{j+1} = y_j²/2``, else it is 0 and ``y_{j+1} = y_j²``; every ``y_j`` stays in ``[1, 2)``
  and ``log2 y = Σ_{i≤J} b_i 2^{-i} + 2^{-J} log2 y_J``, so with ``0 ≤ log2 y_J < 1``,
  ``log2 y ∈ [a/2^J, (a+1)/2^J]`` where ``a`` is the digit string read as an integer. The
  iterates are carried as fixed-point integer bounds ``[Y_lo, Y_hi]/2^P`` rounded outward
  (floor for the lower, ceiling for the upper bound; squaring and halving are monotone), and a
  digit is emitted only when the whole enclosure of ``y_j²`` lies on one side of 2. If it
  straddles 2 the loop stops early and the (wider, still proven) enclosure is returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Tuple, Union

Exact = Union[int, Fraction]

HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"
DEFAULT_BITS = 48
MAX_BITS = 1 << 14


@dataclass(frozen=True)
class Interval:
    """The closed set ``{x : lo ≤ x ≤ hi}`` of reals, with rational endpoints."""

    lo: Fraction
    hi: Fraction

    def __post_init__(self):
        object.__setattr__(self, "lo", Fraction(self.lo))
        object.__setattr__(self, "hi", Fraction(self.hi))
        if self.lo > self.hi:
            raise ValueError(f"empty interval [{self.lo}, {self.hi}]")

    @staticmethod
    def exact(x: Exact) -> "Interval":
        return Interval(Fraction(x), Fraction(x))

    @property
    def is_exact(self) -> bool:
        return self.lo == self.hi

    @property
    def width(self) -> Fraction:
        return self.hi - self.lo

    def __add__(self, other) -> "Interval":
        o = as_interval(other)
        return Interval(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __neg__(self) -> "Interval":
        return Interval(-self.hi, -self.lo)

    def __sub__(self, other) -> "Interval":
        return self + (-as_interval(other))

    def __rsub__(self, other) -> "Interval":
        return as_interval(other) - self

    def __mul__(self, other) -> "Interval":
        o = as_interval(other)
        c = (self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi)
        return Interval(min(c), max(c))

    __rmul__ = __mul__

    def __truediv__(self, other) -> "Interval":
        o = as_interval(other)
        if o.lo <= 0 <= o.hi:
            raise ZeroDivisionError("interval division by an interval containing 0")
        return self * Interval(1 / o.hi, 1 / o.lo)

    def contains(self, x: Exact) -> bool:
        return self.lo <= Fraction(x) <= self.hi


def as_interval(x) -> Interval:
    """Point interval for an int/Fraction; intervals pass through."""
    if isinstance(x, Interval):
        return x
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
        return Interval.exact(x)
    raise TypeError(f"expected an exact number or an Interval, got {type(x).__name__}")


# --------------------------------------------------------------------------------------- e

@lru_cache(maxsize=64)
def e_interval(bits: int = DEFAULT_BITS) -> Interval:
    """An enclosure of e of width < 2^-bits: ``[S_K, S_K + 1/(K!·K)]`` (module docstring)."""
    s, fact, k = Fraction(1), 1, 0
    while True:
        k += 1
        fact *= k
        s += Fraction(1, fact)
        if k >= 2 and fact * k >= (1 << bits):
            return Interval(s, s + Fraction(1, fact * k))


# ------------------------------------------------------------------------------------ log2

def _floor_log2(x: Fraction) -> int:
    """The integer k with 2^k ≤ x < 2^(k+1), exactly."""
    p, q = x.numerator, x.denominator
    k = p.bit_length() - q.bit_length()
    # now 2^(k-1) < x < 2^(k+1); move k down if x < 2^k
    if (p << max(0, -k)) < (q << max(0, k)):
        k -= 1
    return k


@lru_cache(maxsize=1 << 16)
def log2_interval(x: Exact, bits: int = DEFAULT_BITS) -> Interval:
    """A proven enclosure of log2(x) for a rational x > 0, of width ≤ 2^-bits when the
    digit loop runs to completion (module docstring). Exact for powers of two."""
    x = Fraction(x)
    if x <= 0:
        raise ValueError(f"log2 of a non-positive number {x}")
    k = _floor_log2(x)
    y = x / (Fraction(2) ** k)  # in [1, 2)
    if y == 1:
        return Interval.exact(k)
    P = 2 * bits + 24
    num, den = y.numerator << P, y.denominator
    y_lo, y_hi = num // den, -((-num) // den)
    two = 2 << P
    acc, J = 0, 0
    for _ in range(bits):
        s_lo = (y_lo * y_lo) >> P
        s_hi = -((-(y_hi * y_hi)) >> P)
        if s_lo >= two:
            bit, y_lo, y_hi = 1, s_lo >> 1, (s_hi + 1) >> 1
        elif s_hi < two:
            bit, y_lo, y_hi = 0, s_lo, s_hi
        else:
            break
        acc, J = 2 * acc + bit, J + 1
    return Interval(k + Fraction(acc, 1 << J), k + Fraction(acc + 1, 1 << J))


def log2_e(bits: int = DEFAULT_BITS) -> Interval:
    """log2(e) = 1/ln 2, enclosed by monotonicity: [log2(e_lo).lo, log2(e_hi).hi]."""
    e = e_interval(bits + 4)
    return Interval(log2_interval(e.lo, bits + 2).lo, log2_interval(e.hi, bits + 2).hi)


def log2_times_e(x: Exact, bits: int = DEFAULT_BITS) -> Interval:
    """log2(x·e) = log2(x) + log2(e) for a rational x > 0."""
    return log2_interval(Fraction(x), bits) + log2_e(bits)


# -------------------------------------------------------------------------------- decisions

Side = Union[Exact, Interval, Callable[[int], Union[Exact, Interval]]]


def _eval(side: Side, bits: int) -> Interval:
    return as_interval(side(bits) if callable(side) else side)


RELATIONS = ("<=", "<", ">=", ">", "==")


def compare(lhs: Interval, rel: str, rhs: Interval) -> str:
    """HOLDS/FAILS when the enclosures settle ``lhs rel rhs`` for every point, else UNDECIDED."""
    if rel in (">=", ">"):
        return compare(rhs, "<=" if rel == ">=" else "<", lhs)
    if rel == "<=":
        if lhs.hi <= rhs.lo:
            return HOLDS
        if lhs.lo > rhs.hi:
            return FAILS
        return UNDECIDED
    if rel == "<":
        if lhs.hi < rhs.lo:
            return HOLDS
        if lhs.lo >= rhs.hi:
            return FAILS
        return UNDECIDED
    if rel == "==":
        if lhs.is_exact and rhs.is_exact:
            return HOLDS if lhs.lo == rhs.lo else FAILS
        if lhs.hi < rhs.lo or rhs.hi < lhs.lo:
            return FAILS
        return UNDECIDED
    raise ValueError(f"unknown relation {rel!r}; expected one of {RELATIONS}")


def decide(lhs: Side, rel: str, rhs: Side, bits: int = DEFAULT_BITS,
           max_bits: int = MAX_BITS) -> Tuple[str, Interval, Interval, int]:
    """Decide ``lhs rel rhs`` exactly, doubling the precision while undecided.

    Each side is an exact number, an Interval, or a function ``bits -> Interval`` whose
    enclosure tightens as ``bits`` grows. Returns (status, lhs enclosure, rhs enclosure,
    bits used). UNDECIDED is returned only if ``max_bits`` is reached.
    """
    while True:
        L, R = _eval(lhs, bits), _eval(rhs, bits)
        st = compare(L, rel, R)
        if st != UNDECIDED or (L.is_exact and R.is_exact) or bits >= max_bits:
            return st, L, R, bits
        bits *= 2


# ------------------------------------------------------------------------------- printing

def _pow10_floor(x: Fraction) -> int:
    """e with 10^e ≤ x < 10^(e+1), for x > 0, exactly."""
    e = len(str(x.numerator)) - len(str(x.denominator))
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


def decimal(x: Exact, digits: int = 7, up: bool = False) -> str:
    """A decimal string for x with ``digits`` significant digits, rounded down (or up):
    printed intervals still enclose the exact value. Exact integers below 10^15 print whole."""
    x = Fraction(x)
    if x.denominator == 1 and abs(x.numerator) < 10 ** 15:
        return str(x.numerator)
    if x == 0:
        return "0"
    if x < 0:
        return "-" + decimal(-x, digits, not up)
    e = _pow10_floor(x)
    sh = e - digits + 1
    t = x / (Fraction(10) ** sh)
    m = -((-t.numerator) // t.denominator) if up else t.numerator // t.denominator
    if len(str(m)) > digits:  # rounding up carried into a new digit: m = 10^digits
        m //= 10
        sh += 1
        e += 1
    s = str(m)
    if -4 <= e < 15:
        if sh >= 0:
            return s + "0" * sh
        s = s.rjust(-sh + 1, "0")
        out = f"{s[:sh]}.{s[sh:]}".rstrip("0").rstrip(".")
        return out
    mant = f"{s[0]}.{s[1:]}".rstrip("0").rstrip(".")
    return f"{mant}e{e:+d}"


def show(v) -> str:
    """Exact values as integers/fractions, enclosures as [lo, hi] with outward rounding."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, Interval):
        if v.is_exact:
            return show(v.lo)
        return f"[{decimal(v.lo)}, {decimal(v.hi, up=True)}]"
    if isinstance(v, Fraction) and v.denominator != 1:
        if len(str(v.numerator)) + len(str(v.denominator)) <= 16:
            return f"{v.numerator}/{v.denominator}"
        return "≈" + decimal(v)
    if isinstance(v, (int, Fraction)):
        iv = int(v)
        return str(iv) if abs(iv) < 10 ** 15 else "≈" + decimal(Fraction(iv))
    return str(v)
