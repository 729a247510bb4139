"""The forward pass's shortcuts — distinct-column evaluation of token-wise stacks, vectorised
averaging attention, last-column pruning — give exactly the generic path's outputs (the
generic path is what ``trace=True`` runs)."""

import random
from fractions import Fraction as F

import pytest

from exactmem.model import Affine, Attention, Model, forward
from exactmem.model.layers import Head


def _rat(rng):
    return F(rng.randint(-9, 9), rng.choice([1, 1, 2, 3, 7]))


def _mat(rng, r, c):
    return tuple(tuple(_rat(rng) for _ in range(c)) for _ in range(r))


def _model(rng, kind, residual, readout, m=3, d=2):
    layers = [Affine(_mat(rng, m, d), tuple(_rat(rng) for _ in range(m)), True),
              Affine(_mat(rng, m, m), None, True)]
    heads = []
    for _ in range(rng.randint(1, 2)):
        WV, WO = _mat(rng, 2, m), _mat(rng, m, 2)
        if kind == "hardmax":
            zero = ((0,) * m,)
            heads.append(Head(WV, WO, zero if rng.random() < 0.5 else _mat(rng, 1, m), zero))
        else:
            heads.append(Head(WV, WO))
    layers.append(Attention(tuple(heads), kind=kind, residual=residual))
    layers += [Affine(_mat(rng, m, m), tuple(_rat(rng) for _ in range(m)), True), Affine(_mat(rng, 1, m))]
    return Model(tuple(layers), "vectors", d, readout)


@pytest.mark.parametrize("seed", range(12))
def test_shortcuts_match_the_generic_path(seed):
    rng = random.Random(seed)
    kind = rng.choice(["uniform", "hardmax"])
    model = _model(rng, kind, rng.random() < 0.7, rng.choice(["last", "all"]))
    vocab = [tuple(_rat(rng) for _ in range(2)) for _ in range(4)]  # few tokens: dedupe kicks in
    inputs = [tuple(rng.choice(vocab) for _ in range(rng.randint(1, 5))) for _ in range(30)]
    fast = forward(model, inputs)
    slow = forward(model, inputs, trace=True)
    assert fast.outputs == slow.outputs
    assert fast.lengths == slow.lengths


def test_nonzero_hardmax_scores_take_the_generic_path():
    """Hardmax with non-zero scores does not average: the result differs from uniform."""
    W = ((1, 0),)
    layers = (Attention((Head(((1, 0),), ((1,), (0,)), W, W),), kind="hardmax", residual=False),)
    m = Model(layers, "vectors", 2, "all")
    out = forward(m, [((F(1), F(0)), (F(3), F(0)))]).outputs
    assert out == [[[F(3), F(0)], [F(3), F(0)]]]  # both queries pick the larger key, not the mean 2
    u = Model((Attention((Head(((1, 0),), ((1,), (0,))),), kind="uniform", residual=False),), "vectors", 2, "all")
    assert forward(u, [((F(1), F(0)), (F(3), F(0)))]).outputs == [[[F(2), F(0)], [F(2), F(0)]]]


def test_shared_token_objects_convert_once_and_exactly():
    """Inputs whose token vectors are shared objects (as the datasets' token pools are) give the
    outputs of the same inputs with every token a fresh copy (ints where the value is whole),
    and an identity model returns each token exactly (mixed denominators scaled once)."""
    rng = random.Random(5)
    vocab = [(F(1, 3), F(-2)), (F(5, 7), F(1, 2)), (F(0), F(4))]
    inputs = [tuple(rng.choice(vocab) for _ in range(rng.randint(1, 4))) for _ in range(40)]
    copies = [tuple(tuple(int(x) if x.denominator == 1 else F(x.numerator, x.denominator) for x in t)
                    for t in seq) for seq in inputs]
    ident = Model((Affine(((1, 0), (0, 1))),), "vectors", 2, "all")
    out = forward(ident, inputs).outputs
    assert out == [[list(t) for t in seq] for seq in inputs]
    assert forward(ident, copies).outputs == out
    model = _model(rng, "uniform", True, "all")
    fast = forward(model, inputs).outputs
    assert fast == forward(model, copies).outputs == forward(model, inputs, trace=True).outputs
