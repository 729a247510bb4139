"""The compiled kernels of the double-float engine (exactmem/fastgraph/ddjit.py): bit for bit the NumPy
results of dd.add, dd.mul, dd.recip, dd.rsqrt and dd.exp_point (and the same ``bad`` masks) on adversarial
inputs, with and without m2 / r, with broadcasting; the GPT-2 test graph's double-float bounds identical
with the kernels on and off; and no FMA instruction in any compiled kernel (docs/certificate.md, § The fast
graph engine)."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's overflow warnings on the edge values

from exactmem.fastgraph import dd

ddjit = pytest.importorskip("exactmem.fastgraph.ddjit")  # numba missing: nothing to compare

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _jit_everywhere(monkeypatch):
    monkeypatch.setattr(dd, "JIT", True)
    monkeypatch.setattr(dd, "JIT_MIN", 1)


def _same(a, b):
    """Same shape, NaN at the same places, every other element bit for bit (signed zeros, subnormals,
    infinities). The sign and payload of a NaN are not compared: x86 makes them depend on the operand
    order of a commutative operation, which LLVM may swap, and no result of the engine depends on them
    (a NaN compares false, is not finite, and makes every operation on it NaN: undecided)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    na, nb = np.isnan(a), np.isnan(b)
    return np.array_equal(na, nb) and np.array_equal(a[~na].view(np.int64), b[~nb].view(np.int64))


WRAPPERS = ("add_arrays", "mul_arrays", "quot_arrays", "exp_arrays")


def _both(f, *args, bad_shape=None):
    """f(*args) with the kernels (counting the compiled calls that returned a result) and with NumPy."""
    out = []
    for jit in (True, False):
        dd.JIT = jit
        bad = None if bad_shape is None else np.zeros(bad_shape, dtype=bool)
        calls = []
        orig = {name: getattr(ddjit, name) for name in WRAPPERS}
        for name, g in orig.items():
            setattr(ddjit, name, lambda *a, _g=g: (lambda r: calls.append(r is not None) or r)(_g(*a)))
        try:
            r = f(*args) if bad is None else f(*args, bad)
        finally:
            for name, g in orig.items():
                setattr(ddjit, name, g)
        out.append((r, bad, any(calls)))
    dd.JIT = True
    return out


def _check(f, *args, bad_shape=None):
    (a, ba, calls), (b, bb, _) = _both(f, *args, bad_shape=bad_shape)
    assert calls, "the compiled path did not run"
    for part in ("m1", "m2", "r"):
        assert _same(getattr(a, part), getattr(b, part)), part
    assert a.b == b.b
    if ba is not None:
        assert np.array_equal(ba, bb)
    return a


def _values(rng, n):
    """Normal floats of many magnitudes, zeros of both signs, subnormals, values near 2^-900, 2^995, the
    exp cut-offs −700, 709 and ±350, big integers (k)."""
    v = rng.normal(0, 1, n) * 2.0 ** rng.integers(-1000, 1000, n)
    special = np.array([0.0, -0.0, 5e-324, -5e-324, 2.0 ** -1022, 2.0 ** -1050, 3 * 2.0 ** -1070, 2.0 ** -900,
                        -2.0 ** -900, 2.0 ** -900 * (1 - 2.0 ** -52), 2.0 ** -450, 2.0 ** 995, -2.0 ** 995,
                        2.0 ** 995 * (1 - 2.0 ** -53), 2.0 ** 497, -700.0, -700.0000000000001, 709.0,
                        709.0000000000001, 350.0, -350.0, 700.0, -745.0, 1e300, -1e300, 2.0 ** 52 + 1, 1.0, -1.0])
    rng.shuffle(special)
    v[:len(special)] = special[:n]
    k = rng.integers(0, n, n // 4)
    v[k] = rng.uniform(-750, 750, len(k))
    return v


def _tails(rng, m):
    t = (m * rng.normal(0, 2.0 ** -54, m.shape)).reshape(-1)
    t[::7] = 0.0
    t[1::11] = -0.0
    t[2::13] = 5e-324
    return t.reshape(np.shape(m))


def _dt(rng, shape, m2=True, r=True, scale=None):
    m = _values(rng, int(np.prod(shape))).reshape(shape)
    if scale is not None:
        m = rng.uniform(*scale, shape)
    return dd.DT(m, _tails(rng, m) if m2 else None, np.abs(m) * 2.0 ** rng.integers(-80, -20, shape) if r else None)


SHAPES = [((600,), (600,)), ((4, 3, 50), (50,)), ((4, 1, 50), (4, 3, 1)), ((3, 40), ()), ((), (2, 5, 30)),
          ((2, 3, 4, 5, 6), (2, 3, 4, 5, 6)), ((2, 3, 1, 5, 6), (3, 4, 1, 6))]


@pytest.mark.parametrize("sx,sy", SHAPES)
def test_add_and_mul_are_bit_identical(sx, sy):
    rng = np.random.default_rng(hash((sx, sy)) % 2 ** 32)
    for m2x, rx, m2y, ry in [(True, True, True, True), (False, False, False, False), (True, False, False, True),
                             (False, True, True, False), (False, False, True, True)]:
        x, y = _dt(rng, sx, m2x, rx), _dt(rng, sy, m2y, ry)
        _check(dd.add, x, y)
        _check(dd.add, x, y, True)
        _check(dd.mul, x, y)


def test_add_and_mul_on_views_and_scalars():
    """Transposed, sliced and broadcast (read-only) operands; a Python float and a 0-d array."""
    rng = np.random.default_rng(3)
    big = _dt(rng, (30, 40))
    x = dd.DT(big.m1.T, big.m2.T[:, ::2].repeat(2, axis=1), np.broadcast_to(big.r[0][:, None], (40, 30)), True)
    y = dd.DT(np.float64(0.5), np.float64(2.0 ** -60), None)
    _check(dd.mul, x, y)
    _check(dd.add, y, x, True)
    _check(dd.mul, dd.point(1.0), x)
    _check(dd.add, dd.DT(big.m1[::-1, ::3]), dd.DT(big.m1[:, :14][::-1]))


def test_two_prod_edges():
    """TwoProduct at the 2^-900 and 2^995 limits, products that underflow, overflow, and exact splits."""
    rng = np.random.default_rng(4)
    a = np.concatenate([2.0 ** np.arange(-1074, 1024, 7.0), -2.0 ** np.arange(-1074, 1024, 11.0), _values(rng, 400)])
    b = np.concatenate([2.0 ** -np.arange(-1023, 1075, 7.0)[::-1] * 1.5, _values(rng, 600)])[:len(a)]
    _check(dd.mul, dd.DT(a), dd.DT(b))
    _check(dd.mul, dd.DT(a, b * 2.0 ** -60, np.abs(b)), dd.DT(b[::-1], None, np.abs(a)))


@pytest.mark.parametrize("shape", [(700,), (3, 5, 40), (2, 1, 3, 4, 5)])
def test_recip_and_rsqrt_are_bit_identical(shape):
    rng = np.random.default_rng(5)
    for m2, r in [(True, True), (False, False), (True, False), (False, True)]:
        y = _dt(rng, shape, m2, r)
        _check(dd.recip, y, bad_shape=shape)
        yy = _dt(rng, shape, m2, r)
        yy.m1[...] = np.abs(yy.m1)
        yy.m1.reshape(-1)[::9] *= -1
        _check(dd.rsqrt, yy, bad_shape=shape)
        narrow = dd.DT(yy.m1, yy.m2, None if yy.r is None else yy.r * 2.0 ** -40)
        _check(dd.rsqrt, narrow, bad_shape=shape)
        _check(dd.recip, narrow, bad_shape=shape)


@pytest.mark.parametrize("shape", [(3000,), (7, 3, 130)])
def test_exp_point_is_bit_identical(shape):
    """Across the whole range and past both cut-offs (k from −1010 to 1023: subnormal tails and radii,
    the extra 2^-1074 of scale2 when some k < 0), with and without m2."""
    rng = np.random.default_rng(6)
    n = int(np.prod(shape))
    for lo, hi in [(-760.0, 760.0), (-710.0, -600.0), (-700.5, -699.5), (690.0, 720.0), (0.0, 30.0), (-2.0, 2.0)]:
        m = rng.uniform(lo, hi, n)
        m[::17] = np.round(m[::17])
        m[::23] = np.round(m[::23] * 256) / 256  # table points
        m[::29] = np.round(m[::29] / np.log(2)) * np.log(2)
        m = m.reshape(shape)
        for m2 in (None, _tails(rng, m), np.zeros(shape)):
            _check(dd.exp_point, dd.DT(m, m2, None), bad_shape=shape)
    m = _values(rng, n).reshape(shape)  # everything, NaN-free (a NaN midpoint tail breaks NumPy's table index)
    _check(dd.exp_point, dd.DT(m, None, None), bad_shape=shape)
    _check(dd.exp_point, dd.DT(np.abs(m) % 700 - 0.5, _tails(rng, m) % 1e-3, None), bad_shape=shape)


def test_ldexp_is_multiplication_by_an_exact_power_of_two():
    """`exp_k` scales by v·2^k for NumPy's ldexp(v, k): every k the kernel meets, v normal, subnormal,
    with results that overflow, underflow to subnormals (ties included) and to 0."""
    rng = np.random.default_rng(7)
    v = np.concatenate([rng.uniform(0.5, 2, 4000) * rng.choice([-1, 1], 4000), 2.0 ** -rng.integers(0, 1074, 2000),
                        (2 * rng.integers(1, 2 ** 20, 2000) + 1) * 2.0 ** -1074, [0.0, -0.0, 1.5, 1.75, -1.25]])
    k = rng.integers(-1074, 1024, len(v))
    assert _same(np.ldexp(v, k.astype(np.int32)), v * ddjit.POW2[k + 1074])
    assert _same(ddjit.POW2, np.ldexp(1.0, np.arange(-1074, 1024)))
    assert ddjit.POW2[0] == 5e-324 and np.isfinite(ddjit.POW2).all()


def test_the_exact_kernel_constants_are_dds():
    from exactmem.fastgraph import rounding

    assert (ddjit.SPLITTER, ddjit.TINY, ddjit.HUGE) == (dd.SPLITTER, dd.TINY, dd.HUGE)
    assert (ddjit.ETA, ddjit.TWO52) == (rounding.ETA, rounding.TWO52)
    assert ddjit.ETA3 == 3 * rounding.ETA and ddjit.ETA2 == 2 * rounding.ETA


def test_small_and_odd_inputs_take_the_numpy_path(monkeypatch):
    monkeypatch.setattr(dd, "JIT_MIN", 64)
    x = dd.DT(np.ones(10))
    assert ddjit.add_arrays(x.m1, None, None, x.m1, None, None, False, 64) is None
    assert ddjit.mul_arrays(np.ones(100, dtype=np.float32), None, None, x.m1[:1], None, None, 1) is None
    assert ddjit.exp_arrays(np.zeros(100), None, *dd._exp_args(), np.zeros(99, dtype=bool), 1) is None
    assert isinstance(dd.mul(dd.rational(__import__("fractions").Fraction(1, 3)), dd.point(2.0)).m1, np.floating)


def test_gpt2_double_float_bounds_are_identical_with_and_without_the_kernels():
    """The fast engine's precise (double-float) score bounds on the GPT-2-shaped test graph, bit for bit."""
    from exactmem.fastgraph.engine import Plan
    from exactmem.fastgraph.evaluate import evaluate
    from exactmem.kernel.checker import parse_certificate
    from exactmem.kernel.limits import Budget
    from test_fastgraph import _gpt2_doc

    cert = parse_certificate(_gpt2_doc(True, n_ex=3), Budget())
    xs = [cert.inputs[e] for e in range(3)]
    res = []
    for jit in (True, False):
        dd.JIT = jit
        res.append(evaluate(Plan(cert.graph), xs, True, cert.position, Budget(), precise=True))
    (lo, hi, bad), (lo2, hi2, bad2) = res
    assert _same(lo, lo2) and _same(hi, hi2) and np.array_equal(bad, bad2)
    assert not bad.any() and np.all(hi - lo < 1e-3)


FMA = re.compile(r"\b(v?fn?m(add|sub)\w*|vfmaddsub\w*|vfmsubadd\w*)\b", re.I)


def _assembly(kernel, sig):
    """The kernel's assembly: ``inspect_asm`` when numba compiled it in this process; when it loaded the
    machine code from its cache (where ``inspect_asm`` is disabled), the LLVM module stored with that
    code (for inlining), turned into assembly by numba's own target machine, as it was when cached."""
    lib = kernel.overloads[sig].library
    if not getattr(lib, "_disable_inspection", False):
        return kernel.inspect_asm(sig)
    return str(lib._codegen._tm.emit_assembly(lib._shared_module))


def test_no_kernel_contains_an_fma_instruction():
    """fastmath is off, so LLVM never contracts a·b + c: Dekker's TwoProduct needs every product rounded."""
    rng = np.random.default_rng(8)
    x, y = _dt(rng, (3, 70)), _dt(rng, (70,))
    dd.add(x, y), dd.mul(x, y), dd.recip(y, np.zeros(70, bool)), dd.rsqrt(y, np.zeros(70, bool))
    dd.exp_point(dd.DT(x.m1 % 700, x.m2, None), np.zeros((3, 70), bool))
    seen = 0
    for kernel in ddjit.KERNELS:
        assert not kernel.targetoptions.get("fastmath")
        for sig in kernel.signatures:
            asm = _assembly(kernel, sig)
            assert len(re.findall(r"\bv?(mul|add|sub)[sp]d\b", asm)) > 20, kernel.__name__  # float code was read
            assert not FMA.search(asm), (kernel.__name__, FMA.search(asm).group(0))
            seen += 1
    assert seen >= len(ddjit.KERNELS)


def test_fma_pattern_matches_fma_mnemonics():
    for m in ("vfmadd231sd", "vfmsub132pd", "vfnmadd213sd", "vfnmsub231pd", "vfmaddsub213pd", "fmadd"):
        assert FMA.search(f"  12:\t{m} %xmm1,%xmm2,%xmm3"), m
    for m in ("vmulsd", "vaddpd", "vsubsd", "mulsd", "vfpclasspd", "vcvtsi2sd"):
        assert not FMA.search(f"  12:\t{m} %xmm1,%xmm2,%xmm3"), m


def test_the_assembly_check_sees_a_contracted_product():
    """The same reading finds the FMA that fastmath would produce (on a CPU with FMA)."""
    numba = pytest.importorskip("numba")
    if "fma" not in numba.core.codegen.JITCPUCodegen("t")._tm_features:
        pytest.skip("no FMA on this CPU")

    @numba.njit(fastmath=True)
    def f(a, b, c):
        return a * b + c

    f(1.0, 2.0, 3.0)
    assert FMA.search(_assembly(f, f.signatures[0]))
