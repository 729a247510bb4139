"""The kernel's one enclosure module (``exactmem/kernel/enclosure.py``) against mpmath at 400 digits:
every function, rational and fixed point, on many points including the extremes (mpmath is the
reference, in tests only)."""

import random
from fractions import Fraction

import mpmath
import pytest

from exactmem.kernel import enclosure as enc
from exactmem.kernel import fixedpoint as fxp
from exactmem.kernel import logarithm as lg



@pytest.fixture(autouse=True)
def digits():
    with mpmath.workdps(400):  # beyond every precision tested (2^601, 300-bit constants)
        yield


def mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else mpmath.mpf(x)


RNG = random.Random(34)
RATIONALS = ([Fraction(1), Fraction(2), Fraction(1, 3), Fraction(3, 2), Fraction(3, 4), Fraction(10 ** 30, 7),
              Fraction(1, 10 ** 40), Fraction(2 ** 200 + 1, 3 ** 50), Fraction(9, 4), Fraction(4, 9)]
             + [Fraction(RNG.randrange(1, 10 ** RNG.randrange(1, 30)), RNG.randrange(1, 10 ** RNG.randrange(1, 30)))
                for _ in range(60)])


@pytest.mark.parametrize("p", [8, 53, 200])
def test_ln_point_and_ln2_enclose_mpmath(p):
    lo, hi = lg.ln2(p)
    assert mp(lo) <= mpmath.log(2) <= mp(hi) and hi - lo < Fraction(p, 2 ** p)
    for x in RATIONALS:
        lo, hi = lg.ln_point(x, p)
        r = mpmath.log(mp(x))
        assert mp(lo) <= r <= mp(hi), (x, p)
        assert mp(hi) - mp(lo) <= max(1, abs(r)) * mpmath.mpf(2) ** (3 - p), (x, p)


@pytest.mark.parametrize("p", [4, 64, 256])
def test_e_interval_encloses_e(p):
    lo, hi = lg.e_interval(p)
    assert mp(lo) <= mpmath.e <= mp(hi) and hi - lo <= Fraction(8, 2 ** p)


@pytest.mark.parametrize("k", [0, 1, 12, 64, 300])
def test_sqrt_bound_encloses_and_is_one_unit_wide(k):
    for x in RATIONALS + [Fraction(0), Fraction(1, 2 ** 600), Fraction(2 ** 601)]:
        lo, hi = (enc.sqrt_bound(x.numerator, x.denominator, k, up) for up in (False, True))
        r = mpmath.sqrt(mp(x)) * mpmath.mpf(2) ** k
        assert lo <= r <= hi and hi - lo <= 1, (x, k)
    assert enc.sqrt_bound(9, 4, 10, False) == enc.sqrt_bound(9, 4, 10, True) == 3 << 9  # exact squares stay points


FX = [0, 1, -1, 5, -5, 1 << 20, -(1 << 20)] + [RNG.randrange(-(12 << 20), 12 << 20) for _ in range(60)]


@pytest.mark.parametrize("F", [8, 20, 64])
def test_fixed_point_functions_enclose_mpmath(F):
    two = mpmath.mpf(2) ** F
    fs = [(fxp.exp_fx, mpmath.exp), (fxp.tanh_fx, mpmath.tanh), (fxp.sigmoid_fx, lambda x: 1 / (1 + mpmath.exp(-x))),
          (fxp.erf_fx, mpmath.erf)]
    for n in FX + [-(1 << (F + 12)), (F + 3) << F, -((F + 3) << F)]:
        n = n >> (20 - F) if F < 20 else n << (F - 20)
        x = mpmath.mpf(n) / two
        for f, ref in fs:
            if f is fxp.exp_fx and x > 40:
                continue
            lo, hi = f(n, F, False), f(n, F, True)
            assert lo <= ref(x) * two <= hi, (f.__name__, n, F)
            assert hi - lo <= 8 + (ref(x) if f is fxp.exp_fx else 0), (f.__name__, n, F)  # exp: F + 8 relative bits
        for tanh_form in (False, True):
            g = (lambda x: (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf(44715) / 10 ** 6 * x ** 3))) / 2
                 ) if tanh_form else (lambda x: (1 + mpmath.erf(x / mpmath.sqrt(2))) / 2)
            assert fxp.phi_fx(n, F, False, tanh_form) <= g(x) * two <= fxp.phi_fx(n, F, True, tanh_form)
        if n >= 0:
            assert enc.sqrt_bound(n, 1 << F, F, False) <= mpmath.sqrt(x) * two <= enc.sqrt_bound(n, 1 << F, F, True)


@pytest.mark.parametrize("F", [1, 8, 53, 300])
def test_pi_constants_enclose_mpmath(F):
    two = mpmath.mpf(2) ** F
    lo, hi = enc.pi_fx(F)
    assert lo <= mpmath.pi * two <= hi and hi - lo <= 2
    lo, hi = fxp.inv_sqrt_pi_fx(F)
    assert lo <= two / mpmath.sqrt(mpmath.pi) <= hi
    lo, hi = fxp.sqrt_2_over_pi_fx(F)
    assert lo <= mpmath.sqrt(2 / mpmath.pi) * two <= hi
