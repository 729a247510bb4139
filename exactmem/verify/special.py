"""−∞, +∞ and NaN as exact elements of the producer's object arrays.

``docs/verify-format.md`` § Special values states the rules; the kernel's are in
``exactmem/kernel/graph.py``, and they are written again here, independently.

A `Special` mixes with Fractions, ints and python-flint ``arb`` balls through Python's reflected
operators and comparisons (IEEE: every comparison with NaN is False) (``Fraction + Special`` and ``arb + Special`` hand over to ``Special.__radd__``), so the
op table of `exactmem.verify.kernels` runs unchanged on tensors that hold them. A product with a
finite value needs that value's sign: a ball that contains 0 but is not the point 0 raises
`Unsure` (the kernel's Undecided: the example stays undecided at this precision).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Special", "Unsure", "NEG_INF", "POS_INF", "NAN", "TEXTS", "holds_special", "first_special"]


class Unsure(ArithmeticError):
    """The sign of a finite factor is not decided by its enclosure."""


def _sign(v) -> int:
    if v > 0:
        return 1
    if v < 0:
        return -1
    if v == 0:
        return 0
    raise Unsure()


class Special:
    """−∞ (code −1), +∞ (1) or NaN (2), the kernel's codes."""

    __slots__ = ("code",)

    def __init__(self, code: int):
        self.code = code

    def __repr__(self):
        return TEXTS[self.code]

    def __eq__(self, other):
        return isinstance(other, Special) and other.code == self.code != 2

    def __hash__(self):
        return hash(("special", self.code))

    def _key(self, o):  # the extended-real order; None when NaN is involved (every comparison False)
        oc = o.code if isinstance(o, Special) else 0
        return None if 2 in (self.code, oc) else (self.code, oc)

    def __lt__(self, o):
        k = self._key(o)
        return k is not None and k[0] < k[1]

    def __gt__(self, o):
        k = self._key(o)
        return k is not None and k[0] > k[1]

    def __le__(self, o):
        k = self._key(o)
        return k is not None and k[0] <= k[1]

    def __ge__(self, o):
        k = self._key(o)
        return k is not None and k[0] >= k[1]

    def __abs__(self):
        return self if self.code == 2 else POS_INF

    def __neg__(self):
        return self if self.code == 2 else SPECIALS[-self.code]

    def __add__(self, o):  # NaN wins; ∞ + finite = ∞; (−∞) + (+∞) = NaN
        if isinstance(o, Special):
            return NAN if 2 in (self.code, o.code) or self.code * o.code == -1 else self
        return self

    __radd__ = __add__

    def __sub__(self, o):
        return self + (-o if isinstance(o, Special) else o)

    def __rsub__(self, o):
        return -self

    def __mul__(self, o):  # ∞ × ∞ and ∞ × (finite ≠ 0) by the signs; ∞ × 0 = NaN
        if self.code == 2 or (isinstance(o, Special) and o.code == 2):
            return NAN
        k = self.code * (o.code if isinstance(o, Special) else _sign(o))
        return SPECIALS[k] if k else NAN

    __rmul__ = __mul__

    def __truediv__(self, o):  # x / y = x · (1/y); 1/±∞ = 0; a divisor enclosing 0 is undecided
        if isinstance(o, Special):
            return NAN
        if _sign(o) == 0:
            raise Unsure()
        return self * o

    def __rtruediv__(self, o):
        return NAN if self.code == 2 else 0


NEG_INF, POS_INF, NAN = Special(-1), Special(1), Special(2)
SPECIALS = {-1: NEG_INF, 1: POS_INF, 2: NAN}
TEXTS = {-1: "-inf", 1: "inf", 2: "nan"}  # their JSON texts in a `values` constant


def holds_special(a) -> bool:
    a = np.asarray(a)
    return a.dtype == object and any(isinstance(v, Special) for v in a.reshape(-1))


def first_special(a) -> str:
    return next(repr(v) for v in np.asarray(a).reshape(-1) if isinstance(v, Special))
