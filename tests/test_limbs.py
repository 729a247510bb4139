"""The multi-limb float64 backend ("limbs") against the Fraction reference and python-flint.

Random small stacks with dyadic weights (small, ~200-bit, negative, powers of two and 2^k - 1),
random ReLU masks and inputs with large numerators; forced small limb sizes so that carries
and limb boundaries are crossed constantly; hand-made cases for carries (2^s - 1 + 1), exact
zeros under ReLU, deep stacks and denominators that must not pile up; backend selection.
"""

from fractions import Fraction as F
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from exactmem.model import limbs
from exactmem.model.affine_stack import (BACKENDS, AffineStep, ScaledInts, run_stack, run_stack_flint,
                                         run_stack_fraction)
from exactmem.model.limbs import applies, run_stack_limbs

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def values(res):
    return res.out.to_fractions()


def trace_values(res):
    return [t.to_fractions() for t in res.trace]


# ----------------------------------------------------------------------------- strategies

def big_int(bits_lo=150, bits_hi=230):
    return st.builds(lambda b, x, neg: -(x | (1 << (b - 1))) if neg else (x | (1 << (b - 1))),
                     st.integers(bits_lo, bits_hi), st.integers(0, 2**bits_hi), st.booleans()
                     ).map(lambda v: v if abs(v).bit_length() <= bits_hi else v >> 1)


special_ints = st.sampled_from([0, 1, -1, 2, -2, 3, 255, 256, -256, 2**23 - 1, 2**23, -2**23,
                                2**24 + 1, 2**46 - 1, 2**200, -2**200, 2**200 - 1, 1 - 2**199])
numerators = st.one_of(st.integers(-8, 8), special_ints, big_int(), st.integers(-2**64, 2**64))
dyadics = st.builds(lambda n, k: F(n, 2**k), numerators, st.integers(0, 12))
weights = st.one_of(st.just(F(0)), st.just(F(0)), dyadics)


@st.composite
def stacks(draw, max_depth=4, max_width=4, max_T=5):
    depth = draw(st.integers(1, max_depth))
    widths = [draw(st.integers(1, max_width)) for _ in range(depth + 1)]
    steps = []
    for i in range(depth):
        mi, mo = widths[i], widths[i + 1]
        W = [[draw(weights) for _ in range(mi)] for _ in range(mo)]
        b = [draw(weights) for _ in range(mo)]
        relu = [draw(st.booleans()) for _ in range(mo)]
        steps.append(AffineStep.make(W, b, relu))
    T = draw(st.integers(1, max_T))
    rows = [[draw(st.one_of(numerators, big_int(250, 320))) for _ in range(T)] for _ in range(widths[0])]
    den = draw(st.sampled_from([1, 1, 2, 8, 2**70, 3, 12, 5 * 2**9]))
    return steps, ScaledInts(rows, den)


# ----------------------------------------------------------------------------- properties

@SETTINGS
@given(stacks(), st.sampled_from([None, 2, 3, 5, 8, 13, 20]))
def test_limbs_equals_fraction_and_flint(case, limb_bits):
    steps, X = case
    ref = values(run_stack_fraction(steps, X))
    got = run_stack_limbs(steps, X, limb_bits=limb_bits)
    assert got.backend == "limbs"
    assert values(got) == ref
    assert values(run_stack_flint(steps, X)) == ref
    # the output is in lowest terms, like the flint backend's
    assert got.out == got.out.reduced()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks(max_depth=5), st.sampled_from([None, 4, 7]))
def test_limbs_trace_equals_fraction_trace(case, limb_bits):
    steps, X = case
    ref = run_stack_fraction(steps, X, trace=True)
    got = run_stack_limbs(steps, X, trace=True, limb_bits=limb_bits)
    assert trace_values(got) == trace_values(ref)
    assert values(got) == values(ref)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks(max_depth=1, max_width=3, max_T=3), st.integers(20, 40), st.sampled_from([None, 3, 6]))
def test_deep_random_stacks(case, depth, limb_bits):
    """Repeat random (contracting-ish) steps many times: values and denominators stay exact."""
    (step,), X = case
    m = step.m_out
    rnd = random.Random(depth)
    steps = [step]
    for _ in range(depth):
        W = [[F(rnd.randint(-3, 3), 2 ** rnd.randint(0, 3)) for _ in range(m)] for _ in range(m)]
        b = [F(rnd.randint(-2**60, 2**60), 2 ** rnd.randint(0, 5)) for _ in range(m)]
        steps.append(AffineStep.make(W, b, [rnd.random() < 0.6 for _ in range(m)]))
    ref = values(run_stack_fraction(steps, X))
    assert values(run_stack_limbs(steps, X, limb_bits=limb_bits)) == ref
    assert values(run_stack_flint(steps, X)) == ref


# ----------------------------------------------------------------------------- hand-made cases

@pytest.mark.parametrize("s", [2, 3, 8, 23])
def test_carry_chain_across_limbs(s):
    # 2^(s·k) - 1 + 1 = 2^(s·k): the carry ripples through every limb; and back down
    xs = [2 ** (s * k) - 1 for k in range(1, 7)] + [-(2 ** (s * k)) for k in range(1, 7)]
    X = ScaledInts([xs], 1)
    steps = [AffineStep.make([[1]], [1], False), AffineStep.make([[1]], [-1], False),
             AffineStep.make([[-1]], [-1], True), AffineStep.make([[F(1, 2**s)]], [0], False)]
    ref = values(run_stack_fraction(steps, X, trace=True))
    got = run_stack_limbs(steps, X, trace=True, limb_bits=s)
    assert values(got) == ref
    assert trace_values(got)[0] == [[F(x + 1) for x in xs]]


@pytest.mark.parametrize("s", [3, 23])
def test_exact_zero_and_near_zero_preactivations(s):
    big = 2**200 + 12345
    X = ScaledInts([[big, big + 1, big - 1, 0, -big]], 1)
    # relu(x - big): exactly 0, +1, -1 -> 0, -big -> 0, -2big -> 0 (cancellation across all limbs)
    steps = [AffineStep.make([[1], [F(1, 2)], [-1]], [-big, F(-big, 2), big], True)]
    got = run_stack_limbs(steps, X, limb_bits=s)
    assert values(got) == values(run_stack_fraction(steps, X))
    assert values(got)[0] == [0, 1, 0, 0, 0]
    assert values(got)[1] == [0, F(1, 2), 0, 0, 0]
    assert values(got)[2] == [0, 0, 1, big, 2 * big]


def rotation_stack(bits, depth, lanes=2, c_shift=3, seed=0):
    """The benchmark's gadget, small: rotate bits-bit words, accumulate dyadic multiples of bits."""
    rnd = random.Random(seed)
    big, half = (1 << bits) - 1, 1 << (bits - 1)
    m = 3 * lanes + 1
    relu = [i % 3 != 0 and i < 3 * lanes for i in range(m)]
    W = [[0] * m for _ in range(m)]
    b = [0] * m
    for i in range(lanes):
        for r in range(3):
            W[3 * i + r][3 * i] = 1
        b[3 * i + 1], b[3 * i + 2] = -half + 1, -half
    W[m - 1][m - 1] = 1
    steps = [AffineStep.make(W, b, relu)]
    for _ in range(depth - 1):
        W = [[0] * m for _ in range(m)]
        b = [0] * m
        for i in range(lanes):
            for r, bias in ((0, 0), (1, -half + 1), (2, -half)):
                W[3 * i + r][3 * i] = 2
                W[3 * i + r][3 * i + 1] = -big
                W[3 * i + r][3 * i + 2] = big
                b[3 * i + r] = bias
            c = F(rnd.randint(-2**bits, 2**bits) | 1, 2**c_shift)
            W[m - 1][3 * i + 1], W[m - 1][3 * i + 2] = c, -c
        W[m - 1][m - 1] = 1
        steps.append(AffineStep.make(W, b, relu))
    return steps, m


@pytest.mark.parametrize("bits,s", [(40, None), (40, 5), (200, None)])
def test_deep_rotation_gadget(bits, s):
    depth = 120
    steps, m = rotation_stack(bits, depth)
    rnd = random.Random(1)
    T = 6
    words = [[rnd.getrandbits(bits) for _ in range(T)] for _ in range(2)]
    rows = []
    for w in words:
        rows += [w, [0] * T, [0] * T]
    rows.append([0] * T)
    X = ScaledInts(rows, 1)
    ref = values(run_stack_fraction(steps, X))
    got = run_stack_limbs(steps, X, limb_bits=s)
    assert values(got) == ref
    # the rotation by `depth - 1` bits is exact (float64 could not even represent 2^bits - 1)
    k = (depth - 1) % bits
    for i, w in enumerate(words):
        assert ref[3 * i] == [((x << k) | (x >> (bits - k))) & ((1 << bits) - 1) for x in w]


def test_dyadic_denominators_do_not_pile_up():
    # x -> x/2^9 + 1/32 then x -> 2^9 x - 16 (= x again), y -> y/2 then 2y, 300 times:
    # the true denominators stay <= 2^9, and so must the backend's exponent (up to one step)
    steps = []
    for i in range(300):
        if i % 2 == 0:
            steps.append(AffineStep.make([[F(1, 2**9), 0], [0, F(1, 2)]], [F(1, 2**5), 0], [False, True]))
        else:
            steps.append(AffineStep.make([[2**9, 0], [0, 2]], [-2**4, 0], [False, True]))
    X = ScaledInts([[2**100 + 7, -5, 3], [9, 2**64, -1]], 1)
    ref = values(run_stack_fraction(steps, X))
    plan = limbs._plan(steps)
    S = limbs._initial_state(X, plan.s)
    worst_e, worst_K = 0, 0
    for i in range(len(steps)):
        S = limbs._step(plan.step(i), S, plan.s)
        worst_e, worst_K = max(worst_e, S.e), max(worst_K, S.K)
    assert S.to_scaled(plan.s).to_fractions() == ref
    assert ref == values(run_stack_fraction(steps[:2], X))  # the pair is the identity
    assert worst_e <= 9
    assert worst_K <= 2 + (100 + 20 + plan.s) // plan.s


def test_non_dyadic_input_denominator_with_dyadic_weights():
    steps = [AffineStep.make([[F(1, 2), F(-3, 8)], [1, 1]], [F(1, 3) * 0 + F(5, 4), -1], [True, False])]
    X = ScaledInts([[1, -7, 2**90], [2, 3, -(2**90)]], 21)
    assert values(run_stack_limbs(steps, X)) == values(run_stack_fraction(steps, X))


def test_edge_shapes_and_empty_batch():
    steps = [AffineStep.make([[1, 2]], [F(-1, 2)], True)]
    X = ScaledInts([[], []], 1)
    assert run_stack_limbs(steps, X).out.shape == (1, 0)
    X = ScaledInts([[3], [-4]], 2)
    assert run_stack_limbs([], X).out.to_fractions() == [[F(3, 2)], [F(-2)]]


def test_forced_limb_bits_too_large_is_refused():
    W = [[2**200 + 1] * 4 for _ in range(4)]
    steps = [AffineStep.make(W, [0] * 4, True)]
    X = ScaledInts([[1], [2], [3], [4]], 1)
    with pytest.raises(ValueError):
        run_stack_limbs(steps, X, limb_bits=25)
    assert values(run_stack_limbs(steps, X)) == values(run_stack_fraction(steps, X))


def test_non_dyadic_weights_are_refused_by_limbs():
    steps = [AffineStep.make([[F(1, 3)]], [0], False)]
    with pytest.raises(ValueError):
        run_stack_limbs(steps, ScaledInts([[1]], 1))


# ----------------------------------------------------------------------------- selection

def test_registered_and_auto_picks_limbs_for_dyadic_and_flint_otherwise():
    """auto: the compiled "native" backend when numba is there (tests/test_native.py), else limbs."""
    assert BACKENDS["limbs"] is run_stack_limbs
    X = ScaledInts([[1, 2, 3], [4, -5, 6]], 1)
    dyadic = [AffineStep.make([[F(1, 2), 2**200], [-1, F(3, 1024)]], [F(1, 4), -(2**199)], [True, False])]
    assert applies(dyadic)
    r = run_stack(dyadic, X, backend="auto")
    assert r.backend == "limbs"  # native only on batches of NATIVE_AUTO_MIN_WORK tokens x steps (test_native.py)
    assert values(r) == values(run_stack_fraction(dyadic, X))
    thirds = [AffineStep.make([[F(1, 3), 1], [0, 1]], [0, F(1, 2)], True)]
    assert not applies(thirds)
    r = run_stack(thirds, X, backend="auto")
    assert r.backend == "flint"
    assert values(r) == values(run_stack_fraction(thirds, X))
    # a dyadic stack followed by one non-dyadic step is not eligible as a whole
    assert run_stack(dyadic + [AffineStep.make([[F(1, 3), 0]], [0], False)], X).backend == "flint"
    assert run_stack(dyadic, X, backend="limbs").backend == "limbs"


@pytest.mark.parametrize("width", [12, 60])
def test_block_sparse_and_wide_layers(width):
    """Row groups (dynamic programming up to 48 rows, greedy above) on block-diagonal weights
    with a few dense rows; every group must read all the columns its rows use."""
    rnd = random.Random(width)
    steps = []
    for d in range(3):
        W = [[F(0)] * width for _ in range(width)]
        for r in range(width):
            blk = r // 4
            for j in range(4 * blk, min(width, 4 * blk + 4)):
                W[r][j] = F(rnd.randint(-2**70, 2**70), 2 ** rnd.randint(0, 6))
        for r in (0, width - 1):  # two dense rows
            W[r] = [F(rnd.randint(-2**30, 2**30)) for _ in range(width)]
        b = [F(rnd.randint(-2**80, 2**80), 8) for _ in range(width)]
        steps.append(AffineStep.make(W, b, [rnd.random() < 0.5 for _ in range(width)]))
    X = ScaledInts([[rnd.randint(-2**100, 2**100) for _ in range(3)] for _ in range(width)], 1)
    nz = limbs._integer_step(steps[0]).bl > 0
    groups = limbs._row_groups(nz)
    assert len(groups) > 1
    assert groups[0][0] == 0 and groups[-1][1] == width
    assert all(a[1] == b[0] for a, b in zip(groups, groups[1:]))
    for r0, r1, j0, j1 in groups:  # the columns a group reads cover all its weights
        cols = {j for r in range(r0, r1) for j in range(width) if nz[r, j]}
        assert cols <= set(range(j0, j1))
    for lim in (None, 6):
        assert values(run_stack_limbs(steps, X, limb_bits=lim)) == values(run_stack_fraction(steps, X))
