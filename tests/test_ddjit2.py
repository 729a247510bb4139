"""The second round of compiled kernels (exactmem/fastgraph/ddjit.py): `rounding.up` / `rounding.dn` on float64
arrays, `rounding.exp_point` (float64) and `dd.matmul`'s sum of the slice products, bit for bit their NumPy paths on adversarial inputs
(zeros of both signs, subnormals, huge values, ±∞ and NaN where the NumPy code lets them through, the lines
that `dd.slices` leaves whole), with and without the optional parts, broadcast; the GPT-2 test graph's
float64 and double-float score bounds identical with the kernels on and off; no FMA in any new kernel
(docs/certificate.md, § The fast graph engine)."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

from exactmem.fastgraph import dd
from exactmem.fastgraph import rounding as R

ddjit = pytest.importorskip("exactmem.fastgraph.ddjit")

sys.path.insert(0, str(Path(__file__).parent))
from test_ddjit import FMA, _assembly, _dt, _same, _values  # noqa: E402


@pytest.fixture(autouse=True)
def _jit_everywhere(monkeypatch):
    monkeypatch.setattr(dd, "JIT", True)
    monkeypatch.setattr(dd, "JIT_MIN", 1)
    monkeypatch.setattr(R, "JIT", True)
    monkeypatch.setattr(R, "JIT_MIN", 1)


def _set(jit):
    dd.JIT = R.JIT = jit


def _edge(rng, n):
    """`_values` with ±∞, NaN, the largest floats and the neighbours of 2^-1022 among them."""
    v = _values(rng, n)
    extra = [np.inf, -np.inf, np.nan, np.finfo(float).max, -np.finfo(float).max, 2.0 ** -1022 * (1 - 2.0 ** -52),
             2.0 ** -1021, 2.0 ** -1022 * (1 + 2.0 ** -52), 2.0 ** 1023, 2.0 ** -1074 * 3, 1 - 2.0 ** -53]
    pos = rng.choice(n, len(extra), replace=False)
    v[pos] = extra
    return v


def _counting(monkeypatch, module, name):
    """Wrap module.name to record whether each call returned a result (the compiled path ran)."""
    calls, g = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a: (lambda r: calls.append(r is not None) or r)(g(*a)))
    return calls


@pytest.mark.parametrize("shape", [(1000,), (7, 130), (3, 4, 5, 6), (2, 1, 3, 1, 50)])
def test_up_and_dn_are_bit_identical(shape, monkeypatch):
    rng = np.random.default_rng(len(shape))
    calls = _counting(monkeypatch, R, "_round_k")
    y = _edge(rng, int(np.prod(shape))).reshape(shape)
    views = [y, y.T, np.asfortranarray(y), y[..., ::2], -y, y[:1], y.reshape(-1)[:3].copy(), y[..., ::-1]]
    if y.ndim >= 3:  # dense but neither C nor F order (heads moved): the compiled path, in memory order
        views += [y.swapaxes(0, 1), y.swapaxes(1, 2), -(y.swapaxes(0, 2).swapaxes(1, 2))]
    for v in views:
        for f in (R.up, R.dn):
            _set(True)
            a = f(v)
            _set(False)
            b = f(v)
            assert _same(a, b) and a.flags.c_contiguous == b.flags.c_contiguous, (f.__name__, v.shape, v.strides)
            assert a.strides == b.strides
    assert any(calls) and not all(calls)  # the strided view took the NumPy path
    _set(True)
    if y.ndim >= 3:
        calls.clear()
        R.up(y.swapaxes(1, 2))
        assert calls == [True]  # a permuted dense array runs compiled
    for s in (1.5, np.float64(-2.0 ** -1074), np.float64(np.inf), np.array(3.0)):  # scalars: the scalar path
        assert _same(R.up(s), s + (abs(s) * R.TWO52 + R.ETA))
        assert _same(R.dn(s), s - (abs(s) * R.TWO52 + R.ETA))


def test_up_and_dn_bound_their_argument_from_outside():
    """Lemma U on the compiled path: up(y) > y and dn(y) < y for every finite y (so they cover z)."""
    y = _edge(np.random.default_rng(1), 5000)
    y = y[np.isfinite(y) & (np.abs(y) < np.finfo(float).max)]
    assert np.all(R.up(y) > y) and np.all(R.dn(y) < y)


@pytest.mark.parametrize("shape", [(3000,), (5, 7, 31)])
def test_float64_exp_point_is_bit_identical(shape, monkeypatch):
    """Across and past the cut-offs −690 and 709 (k from −996 to 1023: subnormal results), ±0, ±∞, NaN,
    the huge and the subnormal; the interval functions built on it (exp, tanh, σ) too."""
    rng = np.random.default_rng(11)
    calls = _counting(monkeypatch, R, "_jit")
    n = int(np.prod(shape))
    for lo, hi in [(-800.0, 800.0), (-700.0, -680.0), (700.0, 712.0), (-1.0, 1.0)]:
        m = rng.uniform(lo, hi, n)
        m[::13] = np.round(m[::13])
        m[::17] = np.round(m[::17] / np.log(2)) * np.log(2)
        m[:3] = (-690.0, 709.0, np.nextafter(-690.0, -1000))
        for x in (m.reshape(shape), _edge(rng, n).reshape(shape)):
            res = []
            for jit in (True, False):
                _set(jit)
                res.append(R.exp_point(x) + R.exp_interval(x, x + np.abs(x) * 1e-9) + R.tanh_interval(x, x)
                           + R.sigmoid_interval(x, x))
            for a, b in zip(*res):
                assert _same(a, b)
    assert any(calls)


def _mm_both(A, B, monkeypatch, cache=None):
    calls = _counting(monkeypatch, ddjit, "matmul_sum")
    out = []
    for jit in (True, False):
        _set(jit)
        out.append(dd.matmul(A, B, cache=None if cache is None else {}))
    _set(True)
    (a, ba), (b, bb) = out
    for part in ("m1", "m2", "r"):
        assert _same(getattr(a, part), getattr(b, part)), part
    assert np.array_equal(ba, bb) and a.b == b.b
    return any(calls)


MM_SHAPES = [((30, 40), (40, 20)), ((3, 30, 40), (40, 20)), ((2, 3, 9, 16), (2, 1, 16, 11)), ((64,), (64, 5)),
             ((1, 70), (70, 1))]


@pytest.mark.parametrize("sa,sb", MM_SHAPES)
def test_matmul_sum_is_bit_identical(sa, sb, monkeypatch):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    ran = []
    for m2a, ra, m2b, rb in [(True, True, True, True), (False, False, False, False), (True, False, False, True),
                             (False, True, True, False), (True, True, False, False)]:
        A = _dt(rng, sa, m2a, ra, scale=(-3, 3))
        B = _dt(rng, sb, m2b, rb, scale=(-3, 3))
        A.m1.reshape(-1)[::5] = 0.0
        A.m1.reshape(-1)[1::9] = -0.0
        ran.append(_mm_both(A, B, monkeypatch))
        ran.append(_mm_both(A, dd.DT(B.m1), monkeypatch, cache={}))  # a constant B: its slices cached
    assert all(ran[:2])


def test_matmul_sum_on_extreme_lines(monkeypatch):
    """Rows of A below 2^-400 and above 2^400 (left whole in the remainder, `big`), subnormal entries, huge
    entries next to tiny ones, cancellation, and an all-zero B column; NaN / ∞ in a tail."""
    rng = np.random.default_rng(9)
    A = rng.normal(size=(12, 50)) * 2.0 ** rng.integers(-60, 60, (12, 50))
    A[0] *= 2.0 ** -500
    A[1] *= 2.0 ** 450
    A[2, ::3] = 5e-324
    A[3, 0] = 2.0 ** 300
    A[4] = 1 - 2.0 ** -30
    B = rng.normal(size=(50, 9)) * 2.0 ** rng.integers(-30, 30, (50, 9))
    B[:, 2] = 0.0
    B[::2, 3] = -B[1::2, 3]
    A2 = A * 2.0 ** -60
    A2[5, 7] = np.inf
    A2[6, 1] = np.nan
    assert _mm_both(dd.DT(A, None, None), dd.DT(B, B * 2.0 ** -55, None), monkeypatch)
    assert _mm_both(dd.DT(A, A2, np.abs(A) * 2.0 ** -40), dd.DT(B, None, np.abs(B) * 2.0 ** -45), monkeypatch)
    assert _mm_both(dd.DT(A.T.copy().T, None, None), dd.DT(B[:, ::-1], None, None), monkeypatch)  # views


def test_a_single_slice_product_and_odd_layouts_take_the_numpy_path(monkeypatch):
    """Below JIT_MIN, tails of another layout, no product: None (nothing consumed); one product and no
    tails: s as it is (no renormalisation, as in NumPy)."""
    monkeypatch.setattr(dd, "JIT_MIN", 10 ** 6)
    x = dd.DT(np.ones((4, 8)))
    assert ddjit.matmul_sum(np.ones((4, 4)), iter(()), [], 10 ** 6) is None
    assert ddjit.matmul_sum(np.ones((4, 4)), iter(()), [np.ones((4, 4)).T], 1) is None
    assert ddjit.matmul_sum(None, iter(()), [], 1) is None
    s = np.full((3, 3), 2.0)
    assert ddjit.matmul_sum(s, iter(()), [], 1)[1:] == (None, None)
    assert not _mm_both(x, dd.DT(np.eye(8)), monkeypatch)


def test_gpt2_float64_and_double_float_bounds_are_identical_with_and_without_the_kernels():
    """The fast engine's float64 pass and its double-float pass on the GPT-2-shaped test graph, bit for bit."""
    from exactmem.fastgraph.engine import Plan
    from exactmem.fastgraph.evaluate import evaluate
    from exactmem.kernel.checker import parse_certificate
    from exactmem.kernel.limits import Budget
    from test_fastgraph import _gpt2_doc

    cert = parse_certificate(_gpt2_doc(True, n_ex=3), Budget())
    xs = [cert.inputs[e] for e in range(3)]
    for precise in (False, True):
        res = []
        for jit in (True, False):
            _set(jit)
            res.append(evaluate(Plan(cert.graph), xs, True, cert.position, Budget(), precise=precise))
        (lo, hi, bad), (lo2, hi2, bad2) = res
        assert _same(lo, lo2) and _same(hi, hi2) and np.array_equal(bad, bad2)
        assert not bad.any() and np.all(lo <= hi)


def test_no_new_kernel_contains_an_fma_instruction():
    rng = np.random.default_rng(8)
    R.up(rng.normal(size=300)), R.dn(rng.normal(size=300)), R.exp_point(rng.normal(size=300))
    A, B = _dt(rng, (20, 30), True, True, scale=(-1, 1)), _dt(rng, (30, 40), True, True, scale=(-1, 1))
    dd.matmul(A, B)
    for kernel in ddjit.KERNELS2:
        assert not kernel.targetoptions.get("fastmath")
        assert kernel.signatures, kernel.__name__
        for sig in kernel.signatures:
            asm = _assembly(kernel, sig)
            assert len(re.findall(r"\bv?(add|sub)[sp]d\b", asm)) >= 2, kernel.__name__
            assert not FMA.search(asm), (kernel.__name__, FMA.search(asm).group(0))
