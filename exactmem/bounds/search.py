"""Smallest admissible integer of a monotone predicate: brackets and bisection, no scans.

Every minimal-W (and minimal-L) question of the lower bounds has the form "the smallest
integer x ≥ 1 with ``pred(x)``" for a predicate that is *monotone*: false up to some point,
true from there on (each caller proves it in its docstring). The answer is found from a
bracket ``(lo, hi]`` — ``pred(lo)`` false (or ``lo = 0``), ``pred(hi)`` true — by bisection,
``O(log(hi − lo))`` exact evaluations, whatever the size of the answer. Brackets come from an
exact closed form evaluated with both ends of an enclosure (so ``hi − lo`` is usually ≤ 2),
or from galloping (doubling steps) away from a guess.

The predicates are decided exactly (integers, or [`exactmem.arith.enclosure.decide`][exactmem.arith.enclosure.decide]); no
float enters a decision. The brute-force scans these functions replace are kept in the tests
(``tests/test_bounds_scale.py``) as cross-checks.
"""

from __future__ import annotations

from fractions import Fraction
from math import isqrt
from typing import Callable, Optional, Union

from ..arith.numbers import least_true

Pred = Callable[[int], bool]


def ceil_sqrt(t: Union[int, Fraction]) -> int:
    """The smallest integer w ≥ 0 with w² ≥ t (t rational), exactly."""
    t = Fraction(t)
    if t <= 0:
        return 0
    c = -((-t.numerator) // t.denominator)  # ⌈t⌉: w² ≥ t ⇔ w² ≥ ⌈t⌉ for integer w
    w = isqrt(c)
    return w if w * w >= c else w + 1


def least_in_bracket(pred: Pred, lo: int, hi: int) -> int:
    """The smallest x in (lo, hi] with ``pred(x)``, given ``pred`` monotone on [max(lo, 1), hi].

    The bracket is *checked*, not assumed: ``pred(hi)`` must hold and ``pred(lo)`` must fail
    (``lo = 0`` stands for "below the range" and is not evaluated); a bad bracket raises
    ArithmeticError instead of returning a wrong minimum."""
    if hi < 1 or lo >= hi:
        raise ArithmeticError(f"empty bracket ({lo}, {hi}]")
    if not pred(hi):
        raise ArithmeticError(f"bracket upper end {hi} does not satisfy the predicate")
    if lo >= 1 and pred(lo):
        raise ArithmeticError(f"bracket lower end {lo} already satisfies the predicate")
    return least_true(pred, max(lo, 0), hi)


def least_from_guess(pred: Pred, guess: int, hi: Optional[int] = None) -> int:
    """The smallest x ≥ 1 with ``pred(x)`` (``pred`` monotone), starting from a guess.

    Gallops away from ``guess`` with steps 1, 2, 4, … until the answer is bracketed, then
    bisects: ``O(log |answer − guess|)`` evaluations. ``hi``, if given, is known to satisfy
    ``pred`` (it is not re-evaluated when the gallop reaches it)."""
    g = max(1, guess if hi is None else min(guess, hi))
    step = 1
    if g == hi or pred(g):
        top = g  # pred(top) holds; go down
        while True:
            low = top - step
            if low < 1:
                return least_true(pred, 0, top)
            if not pred(low):
                return least_true(pred, low, top)
            top, step = low, 2 * step
    low = g  # pred(low) fails; go up
    while True:
        top = low + step
        if hi is not None and top >= hi:
            return least_true(pred, low, hi)
        if pred(top):
            return least_true(pred, low, top)
        low, step = top, 2 * step
