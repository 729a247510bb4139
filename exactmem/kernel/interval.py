"""Rational intervals (kernel; standard library only): ``Interval`` and outward rounding.

``Interval(lo, hi)`` is {x : lo <= x <= hi}, endpoints ``int``/``Fraction``. *Rounding to p bits*
(`rounded`, with `enclosure.round_ratio`) replaces an endpoint by a dyadic ``m * 2^e``, ``|m| < 2^p``,
outward (``lo`` down, ``hi`` up), so every result contains the exact result for any points of the
arguments; a nonzero number never rounds to zero (rounding is relative). Layer models after their
first softmax (``evaluate.py``), claim formulas and lower bounds (``logarithm.py``, ``expression.py``,
``lowerbound.py``) compute with these; graph models do not (their tensors are fixed point,
``graph.py``), so the graph-model trusted base does not carry this module.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

from .enclosure import round_ratio


class Interval(NamedTuple):
    lo: Fraction
    hi: Fraction


def rounded(lo: Fraction, hi: Fraction, p: int) -> Interval:
    """[lo, hi] rounded outward to p bits."""
    return Interval(round_ratio(lo.numerator, lo.denominator, p, False),
                    round_ratio(hi.numerator, hi.denominator, p, True))
