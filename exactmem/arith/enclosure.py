"""Rigorous rational enclosures of real numbers, and exact decisions on them.

The papers' size formulas and lower bounds contain real numbers that are mostly irrational:
√(N log N), log R with R = 20 r V² δ⁻¹ √(π d) (Kajitsuka & Sato eqs. (110), (111)), e and
log2(48·e·n·N) (the lower bounds). A claim compared by the independent checker, or an
inequality of a lower-bound proof, needs *rational* bounds, so every such number is enclosed
here in an interval ``[lo, hi]`` with ``Fraction`` endpoints that provably contains it,
computed with integer arithmetic only (no floating point in any result). Two flavours share
one implementation of the interval arithmetic (``+``, ``−``, ``×``, ``/`` as usual):

* [`Enc`][exactmem.arith.enclosure.Enc] (size formulas: [`sqrt`][exactmem.arith.enclosure.sqrt], [`log2`][exactmem.arith.enclosure.log2], [`ln`][exactmem.arith.enclosure.ln], `emax`,
  `ceil`, `floor`, [`floor_lower`][exactmem.arith.enclosure.floor_lower], π and ln 2), ``width()`` a method;
* [`Interval`][exactmem.arith.enclosure.Interval] (lower bounds: [`e_interval`][exactmem.arith.enclosure.e_interval], [`log2_interval`][exactmem.arith.enclosure.log2_interval], [`decide`][exactmem.arith.enclosure.decide],
  [`show`][exactmem.arith.enclosure.show]), ``width`` a property.

Proofs of the enclosures:

* ``sqrt``: ``⌊√⌊q·4^k⌋⌋ / 2^k ≤ √q ≤ ⌈√⌈q·4^k⌉⌉ / 2^k``, the kernel's ``enclosure.sqrt_bound``
  (proof there; the producer's √ is the kernel's);
* π and ln 2 from their first 20 decimals (truncations, so the enclosures are strict);
* **e** ([`e_interval`][exactmem.arith.enclosure.e_interval]): with ``S_K = Σ_{k=0}^{K} 1/k!``,
  ``S_K < e < S_K + 1/(K!·K)``, because
  ``Σ_{k>K} 1/k! < 1/(K+1)! · Σ_{j≥0} (K+2)^{-j} = (K+2)/((K+1)!(K+1)) ≤ 1/(K!·K)``
  (the last step is ``K(K+2) ≤ (K+1)²``).
* ``log2`` ([`log2`][exactmem.arith.enclosure.log2]) of a moderate rational: the largest integer a with
  ``2^a ≤ q^(2^k)`` gives ``a/2^k ≤ log2 q < (a+1)/2^k`` (one exact comparison of integers);
* **log2** by squaring ([`log2_interval`][exactmem.arith.enclosure.log2_interval]; [`log2`][exactmem.arith.enclosure.log2] for huge rationals): write
  ``x = 2^k·y`` with ``y ∈ [1, 2)``. Binary digits of ``log2 y`` come from repeated squaring:
  ``y_0 = y``; if ``y_j² ≥ 2`` the next digit is 1 and ``y_{j+1} = y_j²/2``, else it is 0 and
  ``y_{j+1} = y_j²``; every ``y_j`` stays in ``[1, 2)`` and
  ``log2 y = Σ_{i≤J} b_i 2^{-i} + 2^{-J} log2 y_J``, so with ``0 ≤ log2 y_J < 1``,
  ``log2 y ∈ [a/2^J, (a+1)/2^J]`` where ``a`` is the digit string read as an integer. The
  iterates are carried as fixed-point integer bounds ``[Y_lo, Y_hi]/2^P`` rounded outward
  (floor for the lower, ceiling for the upper bound; squaring and halving are monotone), and a
  digit is emitted only when the whole enclosure of ``y_j²`` lies on one side of 2. If it
  straddles 2 the loop stops early and the (wider, still proven) enclosure is returned.

How a claim uses an enclosure (``docs/vardi.md``): "measured ≤ formula" is certified with the
bound ``⌊lo⌋`` — if an integer is ≤ ⌊lo⌋ it is ≤ the real formula; a counter-example to a
formula uses ``⌊hi⌋`` — an integer above ⌊hi⌋ is above the real value for sure. A comparison
of two enclosed sides is *decided* only when the enclosures are disjoint (or both sides are
exact), otherwise the precision is doubled ([`decide`][exactmem.arith.enclosure.decide]).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Tuple, Union

from ..kernel.enclosure import sqrt_bound

__all__ = ["Enc", "Interval", "PI", "LN2", "enc", "as_interval", "sqrt", "log2", "ln", "emax", "ceil", "floor",
           "floor_lower", "e_interval", "log2_interval", "log2_e", "log2_times_e", "HOLDS", "FAILS", "UNDECIDED",
           "RELATIONS", "compare", "decide", "decimal", "show"]

FRAC_BITS = 12  # 2^-12 resolution for sqrt and log2 (plenty for integer-valued claims)
DEFAULT_BITS = 48  # starting precision of the lower bounds' decisions
MAX_BITS = 1 << 14

Exact = Union[int, Fraction]
Number = Union[int, Fraction, "_Enclosure"]


# ------------------------------------------------------------------------------- intervals

@dataclass(frozen=True)
class _Enclosure:
    """A closed interval [lo, hi] of rationals known to contain one real number.

    The arithmetic of both flavours ([`Enc`][exactmem.arith.enclosure.Enc], [`Interval`][exactmem.arith.enclosure.Interval]): the result has the
    flavour of the left operand; an exact number operand is a point interval."""

    lo: Fraction
    hi: Fraction

    _NOUN = "interval"  # in error messages

    def __post_init__(self):
        object.__setattr__(self, "lo", Fraction(self.lo))
        object.__setattr__(self, "hi", Fraction(self.hi))
        if self.lo > self.hi:
            raise ValueError(f"empty {self._NOUN} [{self.lo}, {self.hi}]")

    @classmethod
    def exact(cls, x: Exact):
        """The point interval [x, x]."""
        return cls(Fraction(x), Fraction(x))

    @classmethod
    def of(cls, x: Number):
        """An exact number as a point interval; an interval of this flavour is returned
        unchanged (of the other flavour, converted). Floats are refused."""
        if isinstance(x, cls):
            return x
        if isinstance(x, _Enclosure):
            return cls(x.lo, x.hi)
        if isinstance(x, float):
            raise TypeError("floats are not allowed in enclosures; use Fraction")
        return cls.exact(x)

    @property
    def is_exact(self) -> bool:
        return self.lo == self.hi

    def contains(self, x: Exact) -> bool:
        return self.lo <= Fraction(x) <= self.hi

    def __add__(self, other: Number):
        o = self.of(other)
        return type(self)(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __neg__(self):
        return type(self)(-self.hi, -self.lo)

    def __sub__(self, other: Number):
        return self + (-self.of(other))

    def __rsub__(self, other: Number):
        return self.of(other) - self

    def __mul__(self, other: Number):
        o = self.of(other)
        ps = (self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi)
        return type(self)(min(ps), max(ps))

    __rmul__ = __mul__

    def __truediv__(self, other: Number):
        o = self.of(other)
        if o.lo <= 0 <= o.hi:
            raise ZeroDivisionError(f"division by an {self._NOUN} containing 0")
        return self * type(self)(1 / o.hi, 1 / o.lo)

    def __rtruediv__(self, other: Number):
        return self.of(other) / self


class Enc(_Enclosure):
    """An enclosure of one real number of a size formula (``width()``; ``str`` for display)."""

    _NOUN = "enclosure"

    def width(self) -> Fraction:
        return self.hi - self.lo

    def __str__(self) -> str:
        return f"[{float(self.lo):.6g}, {float(self.hi):.6g}]"  # display only


class Interval(_Enclosure):
    """The closed set ``{x : lo ≤ x ≤ hi}`` of reals, with rational endpoints (lower bounds;
    ``width`` a property; printed by [`show`][exactmem.arith.enclosure.show])."""

    @property
    def width(self) -> Fraction:
        return self.hi - self.lo


def enc(x: Number) -> Enc:
    """An exact number as a point [`Enc`][exactmem.arith.enclosure.Enc] (an Enc is returned unchanged)."""
    return Enc.of(x)


def as_interval(x: Number) -> Interval:
    """Point [`Interval`][exactmem.arith.enclosure.Interval] for an int/Fraction; intervals pass through."""
    return Interval.of(x)


# ------------------------------------------------------------------------- constants: π, ln 2, e

PI = Enc(Fraction(314159265358979323846, 10 ** 20), Fraction(314159265358979323847, 10 ** 20))
LN2 = Enc(Fraction(693147180559945309417, 10 ** 21), Fraction(693147180559945309418, 10 ** 21))


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


# ------------------------------------------------------------------------------------ sqrt

def _sqrt_lo(q: Fraction, k: int = FRAC_BITS) -> Fraction:
    """A rational ≤ √q (q ≥ 0), within 2^-k: the kernel's ``enclosure.sqrt_bound`` (its proof)."""
    return Fraction(sqrt_bound(q.numerator, q.denominator, k, False), 2 ** k)


def _sqrt_hi(q: Fraction, k: int = FRAC_BITS) -> Fraction:
    """A rational ≥ √q (q ≥ 0), within 2^-k: the kernel's ``enclosure.sqrt_bound`` (its proof)."""
    return Fraction(sqrt_bound(q.numerator, q.denominator, k, True), 2 ** k)


def sqrt(x: Number, k: int = FRAC_BITS) -> Enc:
    """Enclosure of √x for x ≥ 0 (each end rounded outward to a multiple of 2^-k)."""
    e = enc(x)
    if e.lo < 0:
        raise ValueError("square root of a possibly negative number")
    return Enc(_sqrt_lo(e.lo, k), _sqrt_hi(e.hi, k))


# ------------------------------------------------------------------------------------ log2

def _floor_log2(x: Fraction) -> int:
    """The integer k with 2^k ≤ x < 2^(k+1), exactly."""
    p, q = x.numerator, x.denominator
    k = p.bit_length() - q.bit_length()
    # now 2^(k-1) < x < 2^(k+1); move k down if x < 2^k
    if (p << max(0, -k)) < (q << max(0, k)):
        k -= 1
    return k


def _log2_floor_scaled(q: Fraction, k: int) -> int:
    """The largest integer a with 2^a ≤ q^(2^k), i.e. ⌊2^k · log2 q⌋ (q > 0), exactly."""
    return _floor_log2(q ** (2 ** k))


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


EXACT_LOG_BITS = 256  # above this size of q, q^(2^k) is too big: use the squaring enclosure instead


def _log2_enclosure(q: Fraction, k: int) -> Enc:
    """log2 q for q > 0: the exact comparison ⌊2^k log2 q⌋ for moderate q; for huge q the
    digit-by-digit squaring enclosure [`log2_interval`][exactmem.arith.enclosure.log2_interval] (proof in the module docstring)."""
    if max(q.numerator.bit_length(), q.denominator.bit_length()) <= EXACT_LOG_BITS:
        a = _log2_floor_scaled(q, k)
        return Enc(Fraction(a, 2 ** k), Fraction(a + 1, 2 ** k))
    return Enc.of(log2_interval(q, k))


def log2(x: Number, k: int = FRAC_BITS) -> Enc:
    """Enclosure of log2 x for x > 0, from integer arithmetic only (resolution 2^-k)."""
    e = enc(x)
    if e.lo <= 0:
        raise ValueError("logarithm of a possibly non-positive number")
    return Enc(_log2_enclosure(e.lo, k).lo, _log2_enclosure(e.hi, k).hi)


def ln(x: Number) -> Enc:
    """Enclosure of the natural logarithm: log2 x · ln 2."""
    return log2(x) * LN2


def log2_e(bits: int = DEFAULT_BITS) -> Interval:
    """log2(e) = 1/ln 2, enclosed by monotonicity: [log2(e_lo).lo, log2(e_hi).hi]."""
    e = e_interval(bits + 4)
    return Interval(log2_interval(e.lo, bits + 2).lo, log2_interval(e.hi, bits + 2).hi)


def log2_times_e(x: Exact, bits: int = DEFAULT_BITS) -> Interval:
    """log2(x·e) = log2(x) + log2(e) for a rational x > 0."""
    return log2_interval(Fraction(x), bits) + log2_e(bits)


# ------------------------------------------------------------------------ max, ceil, floor

def emax(*xs: Number) -> Enc:
    es = [enc(x) for x in xs]
    return Enc(max(e.lo for e in es), max(e.hi for e in es))


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def _floor(q: Fraction) -> int:
    return q.numerator // q.denominator


def ceil(x: Number) -> Enc:
    e = enc(x)
    return Enc(_ceil(e.lo), _ceil(e.hi))


def floor_lower(x: Number) -> int:
    """⌊lower end⌋: an integer certainly ≤ the enclosed real (how "measured ≤ formula" claims
    use a formula, see the module docstring)."""
    return _floor(enc(x).lo)


def floor(x: Number) -> Enc:
    e = enc(x)
    return Enc(_floor(e.lo), _floor(e.hi))


# -------------------------------------------------------------------------------- decisions

HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"
RELATIONS = ("<=", "<", ">=", ">", "==")

Side = Union[Exact, Interval, Callable[[int], Union[Exact, Interval]]]


def _eval(side: Side, bits: int) -> Interval:
    return as_interval(side(bits) if callable(side) else side)


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
    m = _ceil(t) if up else _floor(t)
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
