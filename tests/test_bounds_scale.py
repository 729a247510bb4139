"""Lower bounds at any scale (issue 13, item 7): the bisections and closed forms that replaced
the scans, cross-checked against the brute-force scans kept here as test-only references.

No timing is asserted (benchmarks/bounds_scale.py prints the times)."""

import random
from fractions import Fraction as F

import pytest

from exactmem.bounds.arch import Architecture
from exactmem.bounds.bits import min_exactmem_bits, rationals_with_bits_at_most
from exactmem.bounds.counting import product_log2
from exactmem.bounds.next_token import (algorithm_admissible, algorithm_minimum, min_W_next_token,
                                        min_W_next_token_report, sign_count_admissible)
from exactmem.bounds.search import ceil_sqrt, least_from_guess, least_in_bracket
from exactmem.bounds.seq2seq import Family, admissible, chain, min_W, min_W_report, min_W_sharp
from exactmem.bounds.sharp import (SHARP_HEAD, factors, min_L_not_ruled_out, product_log2_sharp, ruled_out_sharp,
                                   sharp_bound_at)
from exactmem.bounds.sums import bernoulli, direct_sum, linear_log2_sum
from exactmem.arith.enclosure import FAILS, HOLDS, compare, decide


# ------------------------------------------------- the old scans, kept as references

def scan_min_W(n, N, limit=10 ** 6):
    """The first W = 1, 2, … admissible by (96) (was seq2seq.min_W_scan)."""
    for W in range(1, limit + 1):
        if admissible(W, n, N):
            return W
    raise ArithmeticError("no admissible W")


def scan_min_W_next_token(N):
    """The first W = 1, 2, … allowed by each Theorem B.2 bound (was next_token.min_W_next_token_scan)."""
    sc = next(W for W in range(1, N + 2) if sign_count_admissible(W, N))
    al = next(W for W in range(1, N + 2) if algorithm_admissible(W, N))
    return sc, al


def ruled_out_direct(arch, n, N, convention="paper"):
    """The old decision: the product (90) summed factor by factor."""
    fs = factors(arch, n, N, convention)
    st = decide(n * N, "<=", lambda b: product_log2(fs, b), bits=24)[0]
    assert st in (HOLDS, FAILS)
    return st == FAILS


def scan_min_L(shape, n, N, convention="paper"):
    """The first L = 1, 2, … whose product (90), summed factor by factor, does not rule out the shape."""
    L = 1
    while ruled_out_direct(Architecture(*shape, L), n, N, convention):
        L += 1
    return L


def scan_min_W_sharp(n, N, family, convention="paper"):
    best = None
    for shape in family.shapes():
        a = Architecture(*shape, scan_min_L(shape, n, N, convention))
        key = (a.W(convention), a.label())
        if best is None or key < best[0]:
            best = (key, a)
    return best[1]


# ----------------------------------------------------------------- search helpers

def test_ceil_sqrt_exhaustive():
    for t in [F(k, d) for k in range(0, 400) for d in (1, 2, 3, 7)]:
        w = ceil_sqrt(t)
        assert w * w >= t and (w == 0 or (w - 1) ** 2 < t)
    assert ceil_sqrt(10 ** 40) == 10 ** 20 and ceil_sqrt(10 ** 40 + 1) == 10 ** 20 + 1


def test_least_from_guess_and_bracket_match_scan():
    rng = random.Random(0)
    for _ in range(300):
        x0 = rng.randint(1, 5000)
        calls = []
        pred = lambda x: calls.append(x) or x >= x0  # noqa: E731
        for guess in (1, x0, x0 - 1, x0 + 1, rng.randint(1, 10 ** 6)):
            assert least_from_guess(pred, guess) == x0
            assert least_from_guess(pred, guess, hi=max(x0, 7000)) == x0
        assert min(calls) >= 1
        assert least_in_bracket(pred, x0 - 1, x0 + rng.randint(0, 50)) == x0
    with pytest.raises(ArithmeticError):
        least_in_bracket(lambda x: x >= 5, 1, 4)  # upper end fails
    with pytest.raises(ArithmeticError):
        least_in_bracket(lambda x: x >= 5, 6, 9)  # lower end already holds


# --------------------------------------------------------- Euler–Maclaurin sums

def test_bernoulli_numbers():
    assert [bernoulli(k) for k in (0, 1, 2, 4, 6, 8, 10, 12)] == [
        1, F(-1, 2), F(1, 6), F(-1, 30), F(1, 42), F(-1, 30), F(5, 66), F(-691, 2730)]
    assert bernoulli(3) == bernoulli(5) == 0


@pytest.mark.parametrize("seed", range(6))
def test_linear_log2_sum_encloses_the_direct_sum(seed):
    rng = random.Random(seed)
    for _ in range(12):
        gamma = rng.choice([1, 2, 4, 8, 13, 72])
        delta = rng.randint(-gamma + 1, 50)
        alpha, beta = rng.randint(-30, 10 ** 4), rng.randint(0, 300)
        a = rng.randint(1, 60)
        b = a + rng.choice([0, 1, 5, 40, 300, 1500])
        for bits in (24, 64):
            E = linear_log2_sum(alpha, beta, gamma, delta, a, b, bits)
            D = direct_sum(alpha, beta, gamma, delta, a, b, bits + 40)
            assert E.lo <= D.hi and D.lo <= E.hi, (alpha, beta, gamma, delta, a, b)
            assert E.width <= F(1, 2 ** (bits - 4)), (E.width, bits)


def test_linear_log2_sum_refines_with_bits_at_scale():
    prev = None
    for bits in (24, 48, 96, 192):
        E = linear_log2_sum(10 ** 6, 8, 8, -4, 33, 10 ** 10, bits)
        assert E.width <= F(1, 2 ** (bits - 4))
        if prev is not None:
            assert prev.lo <= E.hi and E.lo <= prev.hi
        prev = E


# ------------------------------------------------------------ the closed form of (90)

CLOSED_FORM_CASES = [((1, 1, 1, 1, 1), 8, 1000), ((1, 2, 1, 2, 3), 64, 10 ** 4), ((2, 3, 2, 1, 1), 1, 5),
                     ((1, 1, 1, 1, 1), 1, 3), ((4, 3, 2, 2, 3), 2, 77), ((1, 3, 1, 1, 2), 1, 10 ** 6),
                     ((1, 1, 1, 1, 1), 1, 1000), ((1, 2, 1, 2, 1), 1, 2000)]  # the last two: v crosses M in the tail


@pytest.mark.parametrize("shape,n,N", CLOSED_FORM_CASES)
@pytest.mark.parametrize("convention", ["paper", "exact"])
def test_closed_form_of_90_encloses_the_factor_by_factor_product(shape, n, N, convention):
    """Including depths where v > M (M' = max(M, v) switches regime inside the tail)."""
    for L in (SHARP_HEAD + 1, SHARP_HEAD + 7, 150, 700):
        arch = Architecture(*shape, L)
        D = product_log2(factors(arch, n, N, convention), 48)
        C = product_log2_sharp(arch, n, N, convention, 48, direct_upto=0)
        assert C.lo <= D.hi and D.lo <= C.hi, (shape, n, N, L)
        assert C.width < F(1, 2 ** 40)


def test_closed_form_is_used_and_increasing_at_depth():
    prev = None
    for L in (10 ** 3, 10 ** 3 + 1, 10 ** 5, 10 ** 7, 10 ** 7 + 1, 10 ** 9):
        P = product_log2_sharp(Architecture(1, 1, 1, 1, 1, L), 10 ** 6, 10 ** 15, "paper", 48)
        if prev is not None:
            assert P.lo > prev.hi
        prev = P


# --------------------------------------------------------- minimal W: bisection == scan

GRID = [(1, 1), (1, 2), (2, 1), (1, 3), (2, 3), (3, 2), (1, 10), (1, 80), (8, 10), (1, 100), (3, 77), (8, 1000),
        (5, 4321), (64, 10 ** 4), (7, 99991), (1, 10 ** 6)]


@pytest.mark.parametrize("n,N", GRID)
def test_min_W_96_matches_scan(n, N):
    m = min_W(n, N)
    assert m.W == scan_min_W(n, N)
    assert m.at[0] == HOLDS and (m.W == 1 or m.below[0] == FAILS)


def test_vacuous_region_of_96():
    """While nN ≤ 9·log2(48e·nN) the bound allows W = 1 (it says nothing); the bisection agrees."""
    vac = [T for T in range(1, 400) if admissible(1, 1, T)]
    assert vac == list(range(1, vac[-1] + 1)) and vac[-1] == 126  # 9·log2(48e·126) ≈ 126.4
    for T in (vac[-1], vac[-1] + 1):
        assert min_W(1, T).W == scan_min_W(1, T)
    assert min_W(1, vac[-1]).W == 1 and min_W(1, vac[-1] + 1).W == 2


@pytest.mark.parametrize("N", [1, 2, 3, 7, 8, 9, 31, 32, 33, 50, 99, 100, 101, 999, 10 ** 4, 54321])
def test_min_W_next_token_matches_scan(N):
    m = min_W_next_token(N)
    assert (m.sign_count, m.algorithm) == scan_min_W_next_token(N)


def test_algorithm_closed_form_around_every_threshold():
    for W in range(1, 400):
        t = 12 * W * W + 20 * W
        for N in (t - 1, t, t + 1):
            a = algorithm_minimum(N)
            assert algorithm_admissible(a, N) and (a == 1 or not algorithm_admissible(a - 1, N))


def test_next_token_report_at_scale_shows_both_sides():
    rep = min_W_next_token_report(10 ** 15)
    assert rep.ok and not any(s.eq == "scan" for s in rep.steps)
    assert rep.results["minimal parameter count for N"] == 11861907
    verdicts = [s for s in rep.steps if s.kind == "verdict"]
    assert [s.status for s in verdicts] == [HOLDS] * 6
    assert [(s.lhs, s.rel, s.rhs) for s in verdicts[-2:]] == [(11861907, ">", 10), (9128709, ">", 10)]  # not vacuous


# ------------------------------------------------------- sharp minimum: search == scan

@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1), (1, 2, 1, 1, 2), (1, 3, 2, 2, 3), (2, 1, 2, 1, 3)])
@pytest.mark.parametrize("n,N", [(1, 1), (1, 2), (2, 5), (8, 100), (8, 1000), (1, 20000),
                                 pytest.param(3, 10 ** 5, marks=pytest.mark.slow)])  # 3-9 s each: with -m slow
def test_min_L_matches_scan(shape, n, N):
    assert min_L_not_ruled_out(shape, n, N) == scan_min_L(shape, n, N)
    top = -(-(n * N) // Architecture(*shape, 1).block_params("paper"))  # the proven upper end of the search
    assert not ruled_out_sharp(Architecture(*shape, top), n, N) and not ruled_out_direct(Architecture(*shape, top), n, N)


def test_min_L_respects_L_max():
    L = scan_min_L((1, 1, 1, 1, 1), 8, 1000)
    assert min_L_not_ruled_out((1, 1, 1, 1, 1), 8, 1000, L_max=L) == L
    assert min_L_not_ruled_out((1, 1, 1, 1, 1), 8, 1000, L_max=L - 1) is None


@pytest.mark.parametrize("n,N", [(1, 1), (2, 1), (1, 7), (8, 10), (1, 100), (8, 1000), (3, 5000)])
def test_min_W_sharp_matches_scan(n, N):
    fam = Family(m=(1, 2), s=(1, 2), H=(1,), q=(1, 3))
    for convention in ("paper", "exact"):
        assert min_W_sharp(n, N, fam, convention).arch == scan_min_W_sharp(n, N, fam, convention)
    assert min_W_sharp(n, N).arch == scan_min_W_sharp(n, N, Family())


@pytest.mark.parametrize("n,N", [(2048, 10 ** 9), (10 ** 6, 10 ** 15), (1, 10 ** 15)])
def test_sharp_minimum_at_scale_is_verified_at_L_and_L_minus_1(n, N):
    sm = min_W_sharp(n, N)
    a = sm.arch
    below = Architecture(a.d, a.m, a.s, a.H, a.q, a.L - 1)
    assert not ruled_out_sharp(a, n, N) and ruled_out_sharp(below, n, N)
    assert sm.log2_bound.lo >= n * N and sm.log2_bound.width < F(1, 2 ** 20)
    assert sharp_bound_at(a, n, N) == sm.log2_bound
    mw = min_W(n, N)
    assert mw.at[0] == HOLDS and mw.below[0] == FAILS and sm.W > mw.W


def test_min_W_report_at_the_largest_scale():
    rep = min_W_report(10 ** 6, 10 ** 15)
    assert rep.ok and [s.eq for s in rep.steps] == ["(96)", "(96)", "(92)"]
    assert rep.results["(96) vacuous (rules out no architecture)"] is False
    assert rep.results["min W (96)"] == min_W(10 ** 6, 10 ** 15).W


# ------------------------------------------------------------------------- bits

def test_min_exactmem_bits_matches_scan():
    for W, N, C in [(1, 1, 2), (3, 1, 11), (1, 5, 2), (10, 100, 2), (7, 50, 3), (60, 8000, 2), (100, 1000, 10),
                    (2, 3, 3), (1000, 10, 2)]:
        b = 1
        while rationals_with_bits_at_most(b) ** W < C ** N:
            b += 1
        assert min_exactmem_bits(W, N, C) == b


# ------------------------------------------------------------ printed inequalities

def _printed_rows(rep):
    rows = [line.split(" | ") for line in rep.to_markdown().splitlines() if line.startswith("| (")]
    return [(r[2], r[3], r[4], r[5].split()[0].lower()) for r in rows]


@pytest.mark.parametrize("which", ["minw-small", "minw-1e21", "minw-8e15", "next-token-1e15", "chain"])
def test_every_printed_inequality_is_visibly_decided(which):
    """Each printed row, read back as exact enclosures (outward-rounded decimals, "≈d" as
    [d, d + |d|·10⁻⁶]), settles its relation the way the row says — at nN = 10²¹ that takes
    more than show()'s 7 digits, and exact integers are printed in full."""
    from exactmem.arith.steps import _as_shown

    rep = {"minw-small": lambda: min_W_report(8, 1000, sharp=False),
           "minw-1e21": lambda: min_W_report(10 ** 6, 10 ** 15, sharp=False),
           "minw-8e15": lambda: min_W_report(8, 10 ** 15, sharp=False),
           "next-token-1e15": lambda: min_W_next_token_report(10 ** 15),
           "chain": lambda: chain(Architecture(64, 64, 16, 8, 256, 24), 512, 10 ** 5)}[which]()
    rows = _printed_rows(rep)
    assert rows
    for lhs, rel, rhs, status in rows:
        L, R = _as_shown(lhs), _as_shown(rhs)
        if status in (HOLDS, FAILS) and L is not None and R is not None:
            assert compare(L, rel, R) == status, (lhs, rel, rhs, status)
    if which == "minw-1e21":
        assert rows[0][0] == str(10 ** 21) and rows[1][0] == str(10 ** 21)
