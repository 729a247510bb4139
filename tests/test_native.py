"""The compiled (numba) exact kernels against the references.

* conversions Python int <-> base-2^30 limbs on values at and around every limb boundary and
  past 64 and 128 bits, negative, zero;
* the ``"native"`` stack backend against the Fraction reference and python-flint on random
  stacks (hypothesis): big, negative, zero and dyadic weights, ReLU masks, inputs with large
  numerators and non-dyadic denominators, token blocks forced small so that every batch is cut
  in several blocks with different lengths; carry chains; traces; deep stacks;
* fallback: without numba (``EXACTMEM_NO_NUMBA=1``, or numba not importable) nothing is
  registered and ``auto`` still gives the same exact values;
* the hash de-duplication kernel against ``np.unique``.
"""

import os
import subprocess
import sys
from fractions import Fraction as F
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from exactmem import native
from exactmem.model.affine_stack import AffineStep, ScaledInts, run_stack, run_stack_flint, run_stack_fraction

pytestmark = pytest.mark.skipif(native.kernels() is None, reason="numba is not installed")

if native.kernels() is not None:
    from exactmem.model.native import from_limbs, run_stack_native, to_limbs

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EDGES = [0, 1, -1, 2, -2]
for k in (29, 30, 31, 32, 59, 60, 61, 62, 63, 64, 65, 89, 90, 91, 120, 127, 128, 129, 150, 200, 256, 300):
    EDGES += [2**k, -(2**k), 2**k - 1, -(2**k) + 1, 2**k + 1, -(2**k) - 1]

ints = st.one_of(st.sampled_from(EDGES), st.integers(-2**64, 2**64), st.integers(-2**200, 2**200),
                 st.integers(-8, 8))


def values(res):
    return res.out.to_fractions()


@given(st.lists(ints, min_size=1, max_size=40))
@settings(max_examples=300, deadline=None)
def test_limb_conversions_round_trip(vals):
    L = to_limbs(vals)
    assert L.dtype == np.int64
    K = L.shape[1]
    # canonical: lower limbs in [0, 2^30), signed top within [-2^30, 2^30), value preserved
    assert ((L[:, :K - 1] >= 0) & (L[:, :K - 1] < 2**30)).all()
    assert ((L[:, K - 1] >= -2**30) & (L[:, K - 1] < 2**30)).all()
    assert [sum(int(x) << (30 * i) for i, x in enumerate(row)) for row in L.tolist()] == vals
    assert from_limbs(L) == vals


def test_limb_conversions_at_every_boundary():
    L = to_limbs(EDGES)
    assert from_limbs(L) == EDGES
    # wider than needed (sign extension in place by the kernel's extend) reads back the same
    m = len(EDGES)
    Z = np.full((1, L.shape[1] + 3, m), 12345, dtype=np.int64)  # limbs past the length: garbage
    Z[0, :L.shape[1]] = L.T
    native.kernels().extend(Z, np.full((1, -(-m // 4)), L.shape[1], dtype=np.int64), 4, np.array([L.shape[1] + 3]))
    assert from_limbs(Z[0].T) == EDGES


# ----------------------------------------------------------------------------- the stack backend

numerators = st.one_of(st.integers(-8, 8), st.sampled_from(EDGES), st.integers(-2**64, 2**64),
                       st.integers(-2**230, 2**230))
dyadics = st.builds(lambda n, k: F(n, 2**k), numerators, st.integers(0, 40))
weights = st.one_of(st.just(F(0)), st.just(F(0)), st.just(F(1)), st.just(F(-1)), dyadics,
                    st.sampled_from([F(2**200 - 1), F(-(2**200 - 1)), F(2**31), F(1, 2**31)]))


@st.composite
def stacks(draw, max_depth=4, max_width=5, max_T=11):
    depth = draw(st.integers(1, max_depth))
    widths = [draw(st.integers(1, max_width)) for _ in range(depth + 1)]
    steps = []
    for i in range(depth):
        mi, mo = widths[i], widths[i + 1]
        W = [[draw(weights) for _ in range(mi)] for _ in range(mo)]
        if mo > 1 and draw(st.booleans()):  # rows that differ only by their bias (shared combos)
            W[1] = W[0]
        b = [draw(weights) for _ in range(mo)]
        relu = [draw(st.booleans()) for _ in range(mo)]
        steps.append(AffineStep.make(W, b, relu))
    T = draw(st.integers(1, max_T))
    rows = [[draw(st.one_of(numerators, st.integers(-2**320, 2**320))) for _ in range(T)] for _ in range(widths[0])]
    den = draw(st.sampled_from([1, 1, 2, 8, 2**70, 3, 12, 5 * 2**9, 2**31 * 7]))
    return steps, ScaledInts(rows, den)


def _native_equals_fraction_and_flint(case, block):
    steps, X = case
    ref = values(run_stack_fraction(steps, X))
    got = run_stack_native(steps, X, token_block=block)
    assert got.backend == "native"
    assert values(got) == ref
    assert got.out == got.out.reduced()
    assert values(run_stack_flint(steps, X)) == ref


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks(), st.sampled_from([1, 2, 3, 128]))
def test_native_equals_fraction_and_flint(case, block):
    """Random stacks: the compiled engine, Fractions and flint agree (60 examples; 200 with -m slow)."""
    _native_equals_fraction_and_flint(case, block)


@pytest.mark.slow
@SETTINGS
@given(stacks(), st.sampled_from([1, 2, 3, 128]))
def test_native_equals_fraction_and_flint_more_examples(case, block):
    _native_equals_fraction_and_flint(case, block)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks(max_depth=5), st.sampled_from([1, 4]))
def test_native_trace_equals_fraction_trace(case, block):
    steps, X = case
    ref = run_stack_fraction(steps, X, trace=True)
    got = run_stack_native(steps, X, trace=True, token_block=block)
    assert [t.to_fractions() for t in got.trace] == [t.to_fractions() for t in ref.trace]


@pytest.mark.parametrize("seed", range(6))
def test_deep_random_stacks_with_many_blocks(seed):
    """Many steps on many tokens, blocks of 7 tokens: per-block lengths differ and change;
    denominators grow by up to 2^40 per step and are reduced exactly."""
    rnd = random.Random(seed)
    m, T = 4, 50
    steps = []
    for _ in range(30):
        W = [[F(rnd.choice([0, 1, -1, rnd.randint(-2**70, 2**70)]), 2 ** rnd.randint(0, 40)) for _ in range(m)]
             for _ in range(m)]
        b = [F(rnd.randint(-2**100, 2**100), 2 ** rnd.randint(0, 40)) for _ in range(m)]
        steps.append(AffineStep.make(W, b, [rnd.random() < 0.6 for _ in range(m)]))
    X = ScaledInts([[rnd.choice([0, rnd.randint(-2**90, 2**90)]) for _ in range(T)] for _ in range(m)], 3)
    assert values(run_stack_native(steps, X, token_block=7)) == values(run_stack_flint(steps, X))


@pytest.mark.parametrize("bits", [29, 30, 31, 60, 61, 90, 200])
def test_carry_chain_and_exact_zero(bits):
    """2^k − 1 + 1 ripples a carry through every limb; x − x is exactly 0 under ReLU; a
    rotation gadget 2U − (2^k − 1)(t1 − t2) keeps k-bit words exact over many steps."""
    xs = [2**bits - 1, -(2**bits), 2**bits, 0, -1, 1 - 2**bits]
    X = ScaledInts([xs, [1] * len(xs)], 1)
    steps = [AffineStep.make([[1, 1], [1, -1], [-1, 1]], [0, 2**bits, -(2**bits)], [False, True, True]),
             AffineStep.make([[1, 0, 0], [1, 0, 0], [0, 1, -1]], [-1, 1, 0], [True, False, True])]
    assert values(run_stack_native(steps, X)) == values(run_stack_fraction(steps, X))
    big, half = 2**bits - 1, 2 ** (bits - 1)
    gadget = AffineStep.make([[2, -big, big], [2, -big, big], [2, -big, big]], [0, 1 - half, -half],
                             [False, True, True])
    first = AffineStep.make([[1, 0, 0], [1, 0, 0], [1, 0, 0]], [0, 1 - half, -half], [False, True, True])
    rnd = random.Random(bits)
    U = ScaledInts([[rnd.getrandbits(bits) for _ in range(9)], [0] * 9, [0] * 9], 1)
    stack = [first] + [gadget] * 3 * bits
    assert values(run_stack_native(stack, U)) == values(run_stack_flint(stack, U))


def test_auto_prefers_native_on_big_batches_and_explicit_backends_agree(monkeypatch):
    """auto loads numba only for tokens x steps >= NATIVE_AUTO_MIN_WORK (a small batch: limbs)."""
    import exactmem.model.affine_stack as AS

    X = ScaledInts([[1, 2, 3], [4, -5, 6]], 1)
    dyadic = [AffineStep.make([[F(1, 2), 2**200], [-1, F(3, 1024)]], [F(1, 4), -(2**199)], [True, False])]
    assert run_stack(dyadic, X, backend="auto").backend == "limbs"  # 3 tokens x 1 step: too small
    monkeypatch.setattr(AS, "NATIVE_AUTO_MIN_WORK", 3)
    r = run_stack(dyadic, X, backend="auto")
    assert r.backend == "native"
    assert values(r) == values(run_stack(dyadic, X, backend="limbs")) == values(run_stack_fraction(dyadic, X))
    thirds = [AffineStep.make([[F(1, 3), 1], [0, 1]], [0, F(1, 2)], True)]
    assert run_stack(thirds, X, backend="auto").backend == "flint"
    with pytest.raises(ValueError):
        run_stack_native(thirds, X)


def test_a_top_limb_of_minus_two_to_the_30_is_not_a_zero():
    """-2^30 / 2^49 (found by hypothesis): one limb whose top is -2^30 has valuation 30; the whole
    limb dropped by the 2-adic reduction must not be mistaken for a zero entry."""
    steps = [AffineStep.make([[0], [0]], [0, 0], False), AffineStep.make([[0, 0], [0, 0]], [F(1, 2**18), 0], False),
             AffineStep.make([[0, F(1, 2**31)], [0, 0], [0, 0]], [0, 0, F(-1, 2**19)], False)]
    X = ScaledInts([[0]], 1)
    assert values(run_stack_native(steps, X, token_block=1)) == [[0], [0], [F(-1, 2**19)]]
    for n in (1, 2, 5):
        st1 = AffineStep.make([[F(1, 2**(30 * n))]], [F(-1, 2**(30 * n))], False)
        assert values(run_stack_native([st1], ScaledInts([[0, 1, 2]], 1))) == \
            values(run_stack_fraction([st1], ScaledInts([[0, 1, 2]], 1)))


def test_edge_shapes():
    assert values(run_stack_native([], ScaledInts([[1, 2]], 4))) == [[F(1, 4), F(1, 2)]]
    st1 = AffineStep.make([[1]], [F(-5, 2)], True)
    assert values(run_stack_native([st1], ScaledInts([[1, 2, 3, 4]], 1))) == [[0, 0, F(1, 2), F(3, 2)]]
    zero = AffineStep.make([[0, 0]], [0], False)
    assert values(run_stack_native([zero], ScaledInts([[5], [7]], 2))) == [[0]]


# ----------------------------------------------------------------------------- fallback

FALLBACK = """
import sys
{block}
from fractions import Fraction as F
from exactmem.model.affine_stack import BACKENDS, AffineStep, ScaledInts, run_stack, run_stack_fraction
from exactmem import native
assert native.kernels() is None
assert "native" not in BACKENDS, sorted(BACKENDS)
steps = [AffineStep.make([[F(1, 2), 2**200], [-1, F(3, 1024)]], [F(1, 4), -(2**199)], [True, False])]
X = ScaledInts([[1, 2, 3], [4, -5, 6]], 1)
r = run_stack(steps, X)
assert r.backend == "limbs", r.backend
assert r.out.to_fractions() == run_stack_fraction(steps, X).out.to_fractions()
print("fallback ok")
"""


@pytest.mark.parametrize("how", ["env", "missing"])
def test_falls_back_without_numba(how):
    env = dict(os.environ)
    block = ""
    if how == "env":
        env["EXACTMEM_NO_NUMBA"] = "1"
    else:
        block = "sys.modules['numba'] = None  # as if numba were not installed"
    r = subprocess.run([sys.executable, "-c", FALLBACK.format(block=block)], capture_output=True, text=True,
                       env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "fallback ok" in r.stdout


# ----------------------------------------------------------------------------- de-duplication


@given(st.integers(1, 4), st.lists(st.integers(-3, 3), min_size=1, max_size=200), st.booleans())
@settings(max_examples=150, deadline=None)
def test_first_index_rows_equals_unique(width, flat, big):
    n = max(1, len(flat) // width)
    A = np.array((flat * width)[:n * width], dtype=np.int64).reshape(n, width)
    if big:
        A = A * (2**62 // 4) + np.int64(-2**63 + 7) * (A == 3)
    inv, first = native.kernels().first_index_rows(A)
    # classes in order of first occurrence; equal rows <=> equal classes
    assert (first == np.sort(first)).all()
    assert (A[first][inv] == A).all()
    assert len(first) == len(np.unique(A, axis=0))


# ----------------------------------------------------------------------------- compress registers


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("min_values", [1, 32])
def test_compress_with_limb_registers_equals_fraction(seed, min_values, monkeypatch):
    """The ``compress`` engine keeps rows past int64 as compiled limb arrays (on at least
    NATIVE_MIN_VALUES distinct values): random integer and dyadic stacks on repeated columns
    (few distinct values per register), values past 64 and 128 bits, negative, zero, ReLU."""
    from exactmem.model import compress

    monkeypatch.setattr(compress, "NATIVE_MIN_VALUES", min_values)
    rnd = random.Random(seed)
    m, T = 5, 90
    cols = [[rnd.choice([0, 1, -1, rnd.randint(-2**70, 2**70), rnd.randint(-2**140, 2**140)]) for _ in range(m)]
            for _ in range(12)]
    X = ScaledInts([[cols[rnd.randrange(12)][i] for _ in range(T)] for i in range(m)], rnd.choice([1, 4, 3]))
    steps = []
    for _ in range(12):
        W = [[rnd.choice([0, 0, 1, -1, 2, rnd.randint(-2**40, 2**40), F(rnd.randint(-2**80, 2**80), 8)])
              for _ in range(m)] for _ in range(m)]
        b = [rnd.choice([0, rnd.randint(-2**90, 2**90), F(1, 2)]) for _ in range(m)]
        steps.append(AffineStep.make(W, b, [rnd.random() < 0.5 for _ in range(m)]))
    ref = values(run_stack_fraction(steps, X, trace=True))
    got = run_stack(steps, X, backend="compress", trace=True)
    assert values(got) == ref
    assert [t.to_fractions() for t in got.trace] == \
        [t.to_fractions() for t in run_stack_fraction(steps, X, trace=True).trace]


@pytest.mark.parametrize("backend", ["auto", "compress", "limbs", "flint"])
def test_forward_progress_through_the_engines(backend):
    """forward(on_layer=...) lets the engine report its own steps (native, compress: no regrouping
    through Python integers) or groups the steps (the others): same outputs, layers reported in
    order, the last report is the whole stack."""
    from exactmem.model import Model, affine, forward
    from exactmem.model.affine_stack import PROGRESS_GROUP as PROGRESS_STEPS

    rnd = random.Random(3)
    layers = [affine([[F(rnd.randint(-9, 9), 2 ** rnd.randint(0, 3)) for _ in range(2)] for _ in range(2)],
                     [F(rnd.randint(-2**70, 2**70), 4), 0], relu=k % 2 == 0) for k in range(150)]
    m = Model(layers, input_dim=2)
    xs = [[(F(3, 7), F(2**80))], [(F(-5, 2), F(0))], [(F(1), F(-1))]]
    seen = []
    a = forward(m, xs, backend=backend, on_layer=lambda k, n: seen.append((k, n)))
    assert a.outputs == forward(m, xs, backend="fraction").outputs
    assert seen[-1] == (150, 150) and len(seen) == -(-150 // PROGRESS_STEPS)
    assert [k for k, _ in seen] == sorted(k for k, _ in seen)


@pytest.mark.parametrize("seed", range(6))
def test_max_bit_length_equals_python(seed):
    """The accelerator's per-layer size (``max_bit_length`` on limb arrays) is the largest
    ``abs(v).bit_length()``, at limb boundaries, for -2^k and for all-zero columns."""
    from exactmem.native.rows import limbs_of

    def to_limbs(vs):  # the accelerator's (K, n) layout
        return limbs_of(np.array(vs, dtype=object))

    rng = random.Random(seed)
    vals = [rng.choice([1, -1]) * rng.getrandbits(rng.randrange(0, 200)) for _ in range(rng.randrange(1, 40))]
    vals += [-(1 << (30 * rng.randrange(1, 6))), (1 << 30) - 1, -(1 << 30) + 1, 0][:rng.randrange(0, 5)]
    L = to_limbs(vals)
    assert native.kernels().max_bit_length(L) == max(abs(v).bit_length() for v in vals)
    assert native.kernels().max_bit_length(to_limbs([0, 0])) == 0
    for v in (-(1 << 90), -(1 << 89) - 1, (1 << 120) - 1, -1):
        assert native.kernels().max_bit_length(to_limbs([v, 3])) == max(abs(v).bit_length(), 2)


@given(st.integers(1, 5), st.lists(st.integers(-3, 3), min_size=1, max_size=300), st.booleans(), st.booleans())
@settings(max_examples=150, deadline=None)
def test_equal_classes_of_columns_and_rows(width, flat, big, loaded):
    """Hash classes (numba loaded) and ``np.unique`` classes (not loaded, few rows) group the
    same rows; the column form groups the columns of the transposed array the same way."""
    n = max(1, len(flat) // width)
    A = np.array((flat * width)[:n * width], dtype=np.int64).reshape(n, width)
    if big:
        A = A * (2**62 // 4) + np.int64(-2**63 + 7) * (A == 3)
    native.kernels()
    saved = native._mod
    if not loaded:
        native._mod = None
    try:
        for first, inv in (native.equal_classes(A), native.equal_classes(np.ascontiguousarray(A.T), True)):
            assert (A[first][inv] == A).all()
            assert len(first) == len(np.unique(A, axis=0))
            assert len(set(first.tolist())) == len(first)
            # two rows share a class exactly when they are equal
            same = (A[:, None, :] == A[None, :, :]).all(axis=2)
            assert ((inv[:, None] == inv[None, :]) == same).all()
    finally:
        native._mod = saved


@given(st.lists(st.integers(0, 5), min_size=1, max_size=60), st.integers(0, 3), st.booleans())
@settings(max_examples=200, deadline=None)
def test_refinement_is_exact(fine, coarsen, break_it):
    """``refinement`` finds the map whose classes refine the others', and its gathers give each
    token's class in every map; a map that splits one of its classes is never accepted."""
    fine = np.array(fine, dtype=np.int64)
    _, fine = np.unique(fine, return_inverse=True)  # classes 0..k-1, all present
    fine = fine.reshape(-1).astype(np.int64)
    k = int(fine.max()) + 1
    coarse = fine % (coarsen + 1)  # a function of the fine class: refined by it
    if break_it and len(fine) > 1:
        coarse = coarse.copy()
        coarse[-1] = coarse.max() + 1 if (fine == fine[-1]).sum() > 1 else coarse[-1]
    _, coarse = np.unique(coarse, return_inverse=True)
    coarse = coarse.reshape(-1).astype(np.int64)
    kc = int(coarse.max()) + 1
    refines = all(len(set(coarse[fine == c].tolist())) == 1 for c in range(k))
    got = native.refinement([coarse, fine], [kc, k])
    if not refines:
        assert got is None or (got[0] == 0 and kc >= k)  # the coarse map may refine the fine one
        if got is not None:
            assert (got[1][1][coarse] == fine).all()
        return
    assert got is not None
    i, gathers = got
    base = [coarse, fine][i]
    for m, g in zip([coarse, fine], gathers):
        assert (m == base).all() if g is None else (g[base] == m).all()
