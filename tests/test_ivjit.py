"""The third round of compiled kernels (exactmem/fastgraph/ivjit.py): the float64 engine's outward sums and
differences (`engine.op_add`), corner products (`engine._mul`, each of its four cases), integer powers
(`engine.op_pow`), `rounding.mid_rad` and the ends of `rounding.matmul_bounds`, bit for bit their NumPy paths
on adversarial values (zeros of both signs, subnormals, huge values, ±∞, NaN), with broadcasting and
permuted or strided layouts; no FMA in any of them (docs/certificate.md, § The fast graph engine)."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

from exactmem.fastgraph import engine as E
from exactmem.fastgraph import rounding as R

ivjit = pytest.importorskip("exactmem.fastgraph.ivjit")

sys.path.insert(0, str(Path(__file__).parent))
from test_ddjit import FMA, _assembly, _same  # noqa: E402
from test_ddjit2 import _edge  # noqa: E402


@pytest.fixture(autouse=True)
def _jit_everywhere(monkeypatch):
    monkeypatch.setattr(R, "JIT", True)
    monkeypatch.setattr(R, "JIT_MIN", 1)


def _both(f, *args):
    """f(*args) with the compiled kernels (and whether one of them ran) and with NumPy alone."""
    ran = []
    names = ("add_bounds", "mul_bounds", "mid_rad", "ball_ends", "pow_bounds")
    orig = {n: getattr(ivjit, n) for n in names}
    for n, g in orig.items():
        setattr(ivjit, n, lambda *a, _g=g: (lambda r: ran.append(r is not None) or r)(_g(*a)))
    try:
        R.JIT = True
        a = f(*args)
    finally:
        for n, g in orig.items():
            setattr(ivjit, n, g)
    R.JIT = False
    b = f(*args)
    R.JIT = True
    return a, b, any(ran)


def _pairs(rng, shape):
    """(lo, hi) of edge values: ordered intervals, points, and a few reversed or NaN ones (the engine never
    makes them, but the kernels must still do what NumPy does)."""
    a, b = _edge(rng, int(np.prod(shape))).reshape(shape), _edge(rng, int(np.prod(shape))).reshape(shape)
    lo, hi = np.fmin(a, b), np.fmax(a, b)
    lo.reshape(-1)[::7] = hi.reshape(-1)[::7]  # points inside intervals
    return lo, hi


def _same_pair(a, b):
    return all(_same(x, y) for x, y in zip(a, b))


SHAPES = [((300,), (300,)), ((7, 40), (40,)), ((3, 1, 5, 6), (4, 1, 6)), ((2, 3, 4, 5, 6), (5, 6))]


@pytest.mark.parametrize("sx, sy", SHAPES)
def test_add_and_mul_bounds_are_bit_identical(sx, sy):
    rng = np.random.default_rng(len(sx) + 10 * len(sy))
    (xl, xh), (yl, yh) = _pairs(rng, sx), _pairs(rng, sy)
    for neg in (False, True):
        a, b, ran = _both(lambda: E.op_add(_bt(), {}, E.FT(xl, xh), E.FT(yl, yh), neg))
        assert ran and _same(a.lo, b.lo) and _same(a.hi, b.hi), neg
    for xp in (False, True):
        for yp in (False, True):
            X = (xl, xl if xp else xh)
            Y = (yl, yl if yp else yh)
            a, b, ran = _both(E._mul, X[0], X[1], xp, Y[0], Y[1], yp)
            assert ran and _same_pair(a, b), (xp, yp)
            a, b, ran = _both(E._mul, Y[0], Y[1], yp, X[0], X[1], xp)
            assert ran and _same_pair(a, b), (xp, yp)


def _bt():
    return E.Batch(1, _Budget(), 0)


class _Budget:
    def tick(self):
        pass

    def value(self, *a):
        pass


@pytest.mark.parametrize("k", [2, 3, 4, 5])
@pytest.mark.parametrize("shape", [(500,), (4, 3, 50)])
def test_integer_powers_are_bit_identical(k, shape):
    rng = np.random.default_rng(k)
    lo, hi = _pairs(rng, shape)
    lo.reshape(-1)[:20] = np.linspace(-3, 3, 20)  # intervals around 0 and of both signs
    hi.reshape(-1)[:20] = np.linspace(-2, 4, 20)
    from fractions import Fraction
    for x in (E.FT(lo, hi), E.FT(lo), E.FT(lo.T, hi.T)):
        a, b, ran = _both(lambda: E.op_pow(_bt(), {"_k": Fraction(k)}, x))
        assert ran and _same(a.lo, b.lo) and _same(a.hi, b.hi), (k, x.lo.strides)


@pytest.mark.parametrize("shape", [(1000,), (6, 70), (3, 4, 5, 6)])
def test_mid_rad_and_matmul_ends_are_bit_identical(shape):
    rng = np.random.default_rng(len(shape))
    lo, hi = _pairs(rng, shape)
    for v in ((lo, hi), (lo.T, hi.T), (lo[..., ::2], hi[..., ::2]), (lo, np.broadcast_to(hi[..., :1], lo.shape))):
        a, b, ran = _both(R.mid_rad, *v)
        assert ran and _same_pair(a, b)
    A = rng.normal(size=(3, 20, 30)) * 2.0 ** rng.integers(-60, 60, size=(3, 20, 30))
    Ar = np.abs(rng.normal(size=(3, 20, 30))) * 2.0 ** -40
    B = rng.normal(size=(30, 10))
    Br = np.abs(B) * 2.0 ** -50
    A[0, 0, 0], A[1, 1, 1] = np.inf, np.nan
    for args in ((A, None, B, None), (A, Ar, B, None), (A, Ar, B, Br), (A, None, B, Br)):
        a, b, ran = _both(R.matmul_bounds, *args)
        assert ran and _same_pair(a, b)


def test_no_third_round_kernel_contains_an_fma_instruction():
    rng = np.random.default_rng(3)
    lo, hi = np.sort(rng.normal(size=(2, 4, 50)), axis=0)
    ivjit.add_bounds(lo, hi, lo, hi, False, 1), ivjit.mul_bounds(lo, hi, lo, hi, 3, 1), ivjit.mid_rad(lo, hi, 1)
    ivjit.pow_bounds(lo, hi, 3, 1), ivjit.ball_ends(lo, hi, 0.0, 1.0, 0.0, 1)
    for kernel in ivjit.KERNELS3:
        assert not kernel.targetoptions.get("fastmath")
        assert kernel.signatures, kernel.__name__  # compiled by the tests above
        for sig in kernel.signatures:
            asm = _assembly(kernel, sig)
            assert len(re.findall(r"\bv?(add|sub|mul)[sp]d\b", asm)) >= 2, kernel.__name__
            assert not FMA.search(asm), (kernel.__name__, FMA.search(asm).group(0))
