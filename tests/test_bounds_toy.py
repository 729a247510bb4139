"""Toy hardmax Transformers: the generic forward pass against exactmem's, brute-force sign
patterns below the counting bound, Lemma B.4 sanity checks."""

import random
from fractions import Fraction as F

import pytest

from exactmem.bounds.arch import Architecture
from exactmem.bounds.counting import generic_arrangement_faces
from exactmem.bounds.toy import (brute_force_report, count_sign_patterns, distinct_tokens, forward_generic,
                                 lemma_b4_layer1_report, lemma_b4_linear_report, params_from_vector, to_model)
from exactmem.model import forward


@pytest.mark.parametrize("arch", [Architecture(1, 1, 1, 1, 1, 1), Architecture(2, 2, 2, 2, 3, 2),
                                  Architecture(3, 2, 1, 3, 1, 3)], ids=str)
def test_toy_forward_equals_exactmem_forward(arch):
    rng = random.Random(7)
    for t in range(6):
        theta = [F(rng.randint(-3, 3), rng.randint(1, 3)) for _ in range(arch.W("exact"))]
        P = params_from_vector(arch, theta)
        seqs = distinct_tokens(3, 2, arch.d, seed=t)
        mine = forward_generic(arch, P, seqs)
        ref = forward(to_model(arch, P), seqs).outputs
        assert mine == [[c[0] for c in s] for s in ref]


def test_distinct_tokens_are_distinct():
    seqs = distinct_tokens(5, 7, 2, seed=1)
    toks = [t for s in seqs for t in s]
    assert len(toks) == 35 == len(set(toks))


def test_sampled_sign_patterns_below_bound():
    rep = brute_force_report(Architecture(1, 1, 1, 1, 1, 1), 2, 2, values=(-2, -1, 0, 1, 2), samples=2000)
    assert rep.ok
    assert 1 < rep.results["distinct sign vectors"] <= 81
    assert rep.results["log2 bound (90)"].lo > 100  # the bound is astronomically above 3^{nN}


def test_sign_pattern_count_is_deterministic():
    arch = Architecture(1, 1, 1, 1, 1, 1)
    seqs = distinct_tokens(2, 1, 1, 0)
    a = count_sign_patterns(arch, seqs, samples=500, seed=3)
    b = count_sign_patterns(arch, seqs, samples=500, seed=3)
    assert a.patterns == b.patterns and a.evaluated == 500


def test_lemma_b4_generic_hyperplanes():
    assert generic_arrangement_faces(7, 1) == 15
    assert generic_arrangement_faces(3, 2) == 19  # 7 regions + 9 edges + 3 vertices
    assert lemma_b4_linear_report(25).ok


def test_lemma_b4_layer1_scores():
    rep = lemma_b4_layer1_report(Architecture(2, 2, 1, 1, 1, 1), 2, 2, grid=(-1, 0, 1))
    assert rep.ok and rep.results["distinct sign vectors"] > 3


@pytest.mark.slow
def test_exhaustive_grid_sign_patterns():
    rep = brute_force_report(Architecture(1, 1, 1, 1, 1, 1), 2, 2, values=(-1, 0, 1), samples=None)
    assert rep.ok and rep.results["parameter vectors evaluated"] == 3 ** 10
