"""Rational interval arithmetic of the independent checker (mpmath is the reference, in tests only)."""

from fractions import Fraction as F

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactmem.kernel.enclosure import exp_bound, round_ratio
from exactmem.kernel.interval import Interval
from exactmem.kernel.evaluate import idot, irelu, isum, softmax


def round_down(x, p):
    return round_ratio(x.numerator, x.denominator, p, False)


def round_up(x, p):
    return round_ratio(x.numerator, x.denominator, p, True)


def exp_lower(x, p, tick=None):
    return exp_bound(x, p, False, tick)


def exp_upper(x, p, tick=None):
    return exp_bound(x, p, True, tick)


def iadd(a, b, p):
    return isum((a, b), p)


def imul(a, b, p):
    return idot([a], [b], p)



@pytest.fixture(autouse=True)
def _mp_precision():
    with mpmath.workprec(4000):
        yield

rationals = st.fractions(max_denominator=10 ** 6).filter(lambda x: abs(x) < 10 ** 6)


def mp(x: F):
    return mpmath.mpf(x.numerator) / x.denominator


def is_p_bit_dyadic(x: F, p: int) -> bool:
    d = x.denominator
    if d & (d - 1):
        return False
    m = abs(x.numerator)
    while m and m % 2 == 0:
        m //= 2
    return m.bit_length() <= p


@settings(max_examples=300, deadline=None)
@given(rationals, st.integers(1, 80))
def test_rounding_is_outward_and_dyadic(x, p):
    lo, hi = round_down(x, p), round_up(x, p)
    assert lo <= x <= hi
    assert is_p_bit_dyadic(lo, p) and is_p_bit_dyadic(hi, p)
    if x != 0:  # relative: nonzero never becomes zero, and the gap is below 2^(1-p) |x|
        assert lo != 0 and hi != 0 and (lo > 0) == (x > 0)
        assert hi - lo <= abs(x) * F(2, 2 ** p)
    if is_p_bit_dyadic(x, p):
        assert lo == hi == x


def test_round_ratio_examples():
    assert round_ratio(1, 3, 4, False) == F(5, 16) and round_ratio(1, 3, 4, True) == F(11, 32)
    assert round_ratio(-1, 3, 4, False) == F(-11, 32) and round_ratio(-1, 3, 4, True) == F(-5, 16)
    assert round_ratio(0, 7, 3, True) == 0
    assert round_ratio(255, 1, 4, True) == 256 and round_ratio(255, 1, 4, False) == 240


unit = st.fractions(min_value=0, max_value=1, max_denominator=1000)
intervals = st.tuples(rationals, rationals).map(lambda t: Interval(min(t), max(t)))


@settings(max_examples=200, deadline=None)
@given(intervals, intervals, unit, unit, st.integers(2, 64))
def test_operations_contain_point_results(a, b, s, t, p):
    x = a.lo + (a.hi - a.lo) * s  # points inside the intervals
    y = b.lo + (b.hi - b.lo) * t
    for iv, v in ((iadd(a, b, p), x + y), (imul(a, b, p), x * y), (isum([a, b, x], p), 2 * x + y),
                  (idot([a, b], [b, x], p), x * y + y * x), (irelu(a), max(x, F(0)))):
        assert iv.lo <= v <= iv.hi


def test_exact_operations():
    a, b = Interval(F(-1), F(2)), Interval(F(3), F(5))
    assert imul(a, b, 64) == Interval(F(-5), F(10))
    assert iadd(a, b, 64) == Interval(F(2), F(7))
    assert irelu(a) == Interval(F(0), F(2)) and irelu(Interval(F(-3), F(-1))) == Interval(F(0), F(0))
    assert imul(F(-2), a, 64) == Interval(F(-4), F(2))
    assert idot([F(1), F(-1)], [a, b], 64) == Interval(F(-6), F(-1))
    third = isum([F(1, 3)], 8)
    assert third.lo < F(1, 3) < third.hi and is_p_bit_dyadic(third.lo, 8)


EXP_POINTS = [F(0), F(1), F(-1), F(1, 2), F(-1, 2), F(1, 3), F(-7, 3), F(50), F(-10 ** 4), F(1, 10 ** 12),
              F(-1, 10 ** 12), F(1234567, 1000), F(-(10 ** 30) - 1, 10 ** 30)]


@pytest.mark.parametrize("x", EXP_POINTS)
@pytest.mark.parametrize("p", [2, 8, 64, 256, 1024])
def test_exp_encloses_true_value(x, p):
    lo, hi = exp_lower(x, p), exp_upper(x, p)
    true = mpmath.exp(mp(x))
    assert 0 < lo and mp(lo) <= true <= mp(hi)
    assert is_p_bit_dyadic(lo, p) and is_p_bit_dyadic(hi, p)


@settings(max_examples=100, deadline=None)
@given(st.fractions(min_value=-300, max_value=300, max_denominator=10 ** 9), st.integers(2, 200))
def test_exp_encloses_random(x, p):
    lo, hi = exp_lower(x, p), exp_upper(x, p)
    assert 0 < lo and mp(lo) <= mpmath.exp(mp(x)) <= mp(hi)


@pytest.mark.parametrize("x", [F(1), F(-7, 3), F(-10 ** 4), F(355, 113)])
def test_exp_shrinks_with_precision(x):
    widths = [(exp_upper(x, p) - exp_lower(x, p)) / exp_upper(x, p) for p in (16, 64, 256, 1024)]
    assert all(w2 < w1 for w1, w2 in zip(widths, widths[1:]))
    assert widths[-1] < F(1, 2 ** 1000)


def test_exp_of_very_negative_argument_stays_positive():
    lo = exp_lower(F(-10 ** 4), 64)
    assert lo > 0
    assert mpmath.log(mp(lo)) > -10 ** 4 - 1  # and is not a crude underestimate
    assert exp_upper(F(-10 ** 4 + 1), 64) >= lo


def test_softmax_encloses_true_probabilities():
    scores = [F(0), F(1), F(-3, 2), Interval(F(1, 3), F(1, 2)), F(-1000)]
    for p in (8, 64, 256):
        out = softmax(scores, p)
        for pts in ([F(0), F(1), F(-3, 2), F(1, 3), F(-1000)], [F(0), F(1), F(-3, 2), F(1, 2), F(-1000)]):
            es = [mpmath.exp(mp(s)) for s in pts]
            for iv, e in zip(out, es):
                assert 0 <= iv.lo <= iv.hi <= 1
                assert mp(iv.lo) <= e / sum(es) <= mp(iv.hi)
        assert sum(iv.lo for iv in out) <= 1 <= sum(iv.hi for iv in out)
    assert softmax([F(5)], 64) == [Interval(F(1), F(1))]
    a, b = softmax([F(2), F(2)], 64)
    assert a == b and a.lo <= F(1, 2) <= a.hi and a.hi - a.lo < F(1, 2 ** 60)


@pytest.mark.parametrize("p", [4096, 16384])
def test_exp_at_high_precision_encloses_and_is_tight(p):
    """The fixed-point Taylor sum (no K·p-bit numerator): still an enclosure, still p-bit tight."""
    with mpmath.workprec(p + 256):
        for x in (F(-1, 3), F(5, 7), F(-1000, 3)):
            lo, hi = exp_lower(x, p), exp_upper(x, p)
            assert 0 < lo and mp(lo) <= mpmath.exp(mp(x)) <= mp(hi)
            assert (hi - lo) / hi < F(1, 2 ** (p - 4))


def test_exp_calls_the_budget_tick_and_stops_when_it_raises():
    calls = []
    exp_upper(F(1, 3), 4096, lambda: calls.append(1))
    assert len(calls) >= 4  # the Taylor loop has hundreds of terms at 4096 bits

    class Stop(Exception):
        pass

    def stop():
        raise Stop()

    with pytest.raises(Stop):
        softmax([F(0), F(1, 3)], 4096, stop)
