from fractions import Fraction as F

import pytest
from hypothesis import given, strategies as st

from exactmem.arith.numbers import (RationalFormatError, bits, format_rational, is_dyadic, parse_rational, round_to_bits,
                              to_rational)


@pytest.mark.parametrize("text,value", [("0", F(0)), ("-3/8", F(-3, 8)), ("12", F(12)), ("2/4", F(1, 2)),
                                        ("-0", F(0)), ("7/1", F(7))])
def test_parse(text, value):
    assert parse_rational(text) == value


@pytest.mark.parametrize("bad", ["1.5", "1e3", " 1", "+1", "1/0", "1/-2", "", "a/b", "1//2"])
def test_parse_rejects(bad):
    with pytest.raises(RationalFormatError):
        parse_rational(bad)


def test_parse_rejects_non_string():
    with pytest.raises(RationalFormatError):
        parse_rational(3)


def test_to_rational_refuses_float():
    with pytest.raises(TypeError):
        to_rational(0.5)
    with pytest.raises(TypeError):
        to_rational(True)


@given(st.fractions())
def test_format_parse_round_trip(x):
    assert parse_rational(format_rational(x)) == x


@pytest.mark.parametrize("x,b", [(0, 1), (1, 2), (-1, 2), (3, 3), (-3, 3), (F(1, 2), 3), (F(3, 8), 6),
                                 (F(1, 3), 3), (F(5, 7), 6), (2 ** 200, 202)])
def test_bits_values(x, b):
    # 1 sign bit + LEN(|p|) + LEN(q) - 1
    assert bits(x) == b


@given(st.integers(min_value=-10**6, max_value=10**6), st.integers(min_value=0, max_value=60))
def test_bits_dyadic_convention(a, k):
    x = F(a, 2 ** k)
    assert is_dyadic(x)
    p, q = x.numerator, x.denominator
    assert bits(x) == 1 + abs(p).bit_length() + (q.bit_length() - 1)


@given(st.fractions(min_value=-10**9, max_value=10**9).filter(lambda x: x != 0), st.integers(min_value=1, max_value=80))
def test_round_to_bits(x, b):
    lo, hi, near = round_to_bits(x, b, "down"), round_to_bits(x, b, "up"), round_to_bits(x, b)
    assert lo <= x <= hi
    assert near in (lo, hi)
    for y in (lo, hi, near):
        if y:
            assert is_dyadic(y)
            # b significant bits: |y| = m 2^e with m < 2^b
            m = abs(y)
            while m.denominator != 1:
                m *= 2
            while m.numerator % 2 == 0:
                m /= 2
            assert m.numerator < 2 ** b
    assert abs(near - x) <= abs(hi - lo) / 2


def test_least_true_bisects_to_the_first_passing_integer():
    from exactmem.arith.numbers import least_true

    for t in range(1, 40):
        calls = []

        def pred(b, t=t):
            calls.append(b)
            return b >= t

        assert least_true(pred, 0, 64) == t
        assert all(0 < b <= 64 for b in calls) and len(calls) <= 6  # bisection, never lo itself
    assert least_true(lambda b: True, 4, 5) == 5  # hi is returned unevaluated when nothing is between
