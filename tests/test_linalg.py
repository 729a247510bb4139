"""exactmem.arith.linalg: exact rank/solve/kernels over Q, certified balls, search modulo p."""

from fractions import Fraction as F

import pytest

from exactmem.arith import linalg as L


def test_rank_solve_inverse_exact():
    M = [[1, 2, 3], [2, 4, 6], [1, 0, 1]]
    assert L.rank(M) == 2
    assert L.rank([["1/3", "2/3"], ["1/6", "1/3"]]) == 1
    A = [[2, 1], [1, 1]]
    assert L.inverse(A) == ((F(1), F(-1)), (F(-1), F(2)))
    assert L.solve(A, [[3], [2]]) == ((F(1),), (F(1),))
    with pytest.raises(L.LinAlgError, match="singular"):
        L.solve(M, [[1], [1], [1]])


def test_nullspace_and_integer_kernel():
    M = [[1, 2, 3], [2, 4, 6], [1, 0, 1]]
    ns = L.nullspace(M)
    assert len(ns) == 1 and all(sum(a * b for a, b in zip(r, ns[0])) == 0 for r in [[F(x) for x in r] for r in M])
    K = L.integer_kernel([[1, 2, 3]])
    assert len(K) == 2 and L.rank(K) == 2
    assert all(a + 2 * b + 3 * c == 0 for a, b, c in K)
    assert max(abs(x) for v in K for x in v) <= 2  # LLL-reduced: small vectors


def test_integer_kernel_is_reduced_on_random_data():
    import random
    rng = random.Random(1)
    M = [[rng.randint(-5, 5) for _ in range(16)] for _ in range(5)]
    K = L.integer_kernel(M)
    assert len(K) == 11 and L.rank(K) == 11
    assert all(sum(a * b for a, b in zip(r, v)) == 0 for r in M for v in K)
    assert max(abs(x) for v in K for x in v) <= 8


def test_independent_rows_and_least_norm():
    assert L.independent_rows([[1, 0], [2, 0], [0, 1], [1, 1]]) == [0, 2]
    v = L.least_norm_solution([[1, 0, 0], [0, 1, 1]], [0, 1])
    assert v == (F(0), F(1, 2), F(1, 2))
    assert L.left_inverse([[1, 0], [0, 1], [1, 1]])[0] == (F(2, 3), F(-1, 3), F(1, 3))


def test_sigma_min_lower_is_a_lower_bound():
    with L.arb_precision(128):
        Z = L.arb_matrix([[3, 0], [0, F(1, 2)], [0, 0]])
        lo = L.sigma_min_lower(Z)
        assert lo is not None and 0 < lo <= F(1, 2)
        assert L.sigma_min_lower(L.arb_matrix([[1, 2], [2, 4], [0, 0]])) is None  # rank 1: nothing certified
        sv = L.singular_values_enclosure(Z)
        assert L.lower_fraction(sv[0]) <= F(1, 2) <= L.upper_fraction(sv[0])
        assert L.lower_fraction(sv[1]) <= 3 <= L.upper_fraction(sv[1])


def test_log_and_sqrt_upper_are_safe():
    for q in (F(1, 3), F(2), F(10 ** 6, 7)):
        lu = L.log_upper(q)
        with L.arb_precision(256):
            assert L.arb_of(lu).exp() >= L.arb_of(q)  # e^(upper) >= q
    assert L.sqrt_upper(4) >= 2 and L.sqrt_upper(2) ** 2 >= 2


def test_span_mod_p():
    s = L.SpanModP(3)
    assert s.try_add([1, 2, 3]) and not s.try_add([2, 4, 6]) and s.try_add([0, 0, 10 ** 30])
    assert not s.try_add([5, 10, 1])  # 5·(1,2,3) + multiple of e3
    assert s.rank == 2
