"""Each layer kind against hand-computed exact values; trace; errors; serialisation."""

from fractions import Fraction as F

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

from exactmem.model import (Attention, Embed, FeedForward, Head, InputError, Model, ModelError, affine,
                            decode_output, forward, measure, model_from_json, model_to_json)
from exactmem.model.affine_stack import AffineStep, ScaledInts, run_stack

I2 = [[1, 0], [0, 1]]


def test_affine_relu_hand_computed():
    m = Model([affine([[1, -2], [3, "1/2"]], [1, -4], relu=True)], input_dim=2)
    r = forward(m, [[(2, 1)], [(0, 1)], [(1, 3)]])
    assert r.exact
    # (2,1): [2-2+1, 6+1/2-4] = [1, 5/2]; (0,1): [-1, -7/2] -> 0; (1,3): [1-6+1, 3+3/2-4] = [-4 -> 0, 1/2]
    assert r.outputs == [[F(1), F(5, 2)], [F(0), F(0)], [F(0), F(1, 2)]]


def test_affine_without_relu_keeps_negatives():
    m = Model([affine([[1, -2]], [F(-1, 3)])], input_dim=2)
    assert forward(m, [[(0, 1)]]).outputs == [[F(-7, 3)]]


def test_feedforward_residual_eq3():
    # z + W2 relu(W1 z + b1) + b2 with z = (1, -2)
    ff = FeedForward([[1, 1], [2, 0]], [0, -5], [[1, -1], [0, 3]], [F(1, 2), 0], residual=True)
    m = Model([ff], input_dim=2, readout="all")
    # W1 z + b1 = (-1, 2-5=-3) -> relu (0, 0); out = z + 0 + b2 = (3/2, -2)
    # second token z=(4,1): W1 z + b1 = (5, 3) -> W2 h = (5-3, 9) = (2, 9); out = (4+2+1/2, 1+9) = (13/2, 10)
    r = forward(m, [[(1, -2), (4, 1)]])
    assert r.outputs == [[[F(3, 2), F(-2)], [F(13, 2), F(10)]]]
    ff2 = FeedForward([[1, 1], [2, 0]], [0, -5], [[1, -1], [0, 3]], [F(1, 2), 0], residual=False)
    assert forward(Model([ff2], input_dim=2), [[(4, 1)]]).outputs == [[F(5, 2), F(9)]]


def _hardmax_layer(residual=True, query="all", keys="all", kind="hardmax"):
    h = Head(WV=I2, WO=I2, WQ=[[1, 0]], WK=[[0, 1]]) if kind != "uniform" else Head(WV=I2, WO=I2)
    return Attention([h], kind=kind, residual=residual, query=query, keys=keys)


def test_hardmax_unique_and_ties_eq1():
    # scores a_k = (WK z_k)(WQ z_j) = z_k[1] * z_j[0]
    X = [(1, 2), (3, 5), (0, 5)]
    m = Model([_hardmax_layer(residual=False)], input_dim=2, readout="all")
    out = forward(m, [X]).outputs[0]
    # query j=0: q=1; scores (2,5,5) -> tie between keys 1 and 2 -> average of (3,5),(0,5) = (3/2, 5)
    assert out[0] == [F(3, 2), F(5)]
    # query j=2: q=0; all scores 0 -> uniform average of all three = (4/3, 4)
    assert out[2] == [F(4, 3), F(4)]
    # residual adds the query token itself
    m2 = Model([_hardmax_layer(residual=True)], input_dim=2, readout="all")
    assert forward(m2, [X]).outputs[0][0] == [F(5, 2), F(7)]


def test_uniform_equals_hardmax_with_zero_scores():
    X = [(1, 2), ("-3/7", 5), (0, 9), (2, 2)]
    uni = Model([_hardmax_layer(kind="uniform")], input_dim=2, readout="all")
    zero = Head(WV=I2, WO=I2, WQ=[[0, 0]], WK=[[0, 0]])
    hard = Model([Attention([zero], kind="hardmax")], input_dim=2, readout="all")
    a, b = forward(uni, [X]).outputs, forward(hard, [X]).outputs
    assert a == b
    mean = [sum(F(x[i]) if isinstance(x[i], int) else F(x[i]) for x in X) / 4 for i in range(2)]
    assert a[0][1] == [F(-3, 7) + mean[0], F(5) + mean[1]]


def test_query_last_keys_others():
    # Mahdavi form: only the last token queries, keys exclude it, no residual
    X = [(1, 0), (0, 4), (2, 3)]
    m = Model([_hardmax_layer(residual=False, query="last", keys="others")], input_dim=2)
    # q = z_2[0] = 2; keys 0,1 with scores 0*2, 4*2 -> key 1 -> output (0, 4)
    r = forward(m, [X])
    assert r.outputs == [[F(0), F(4)]]
    assert r.lengths == [1]


def test_embed_with_positions_and_argmax():
    E = [[1, 0], [0, 1], [1, 1]]
    P = [[0, 0], [10, 0], [0, 10]]
    unemb = affine([[1, 0], [0, 1], ["1/2", "1/2"]])
    m = Model([Embed(E, P), unemb], input_type="tokens", input_dim=3, readout="all", decode="argmax")
    r = forward(m, [[2, 0, 1]])
    # columns: E[2]+P0 = (1,1); E[0]+P1 = (11,0); E[1]+P2 = (0,11)
    assert r.outputs[0] == [[F(1), F(1), F(1)], [F(11), F(0), F(11, 2)], [F(0), F(11), F(11, 2)]]
    assert decode_output(m, r.outputs[0]) == [None, 0, 1]  # first column is a three-way tie


def test_softmax_enclosure_contains_true_value():
    X = [(1, 2), (3, 5), (0, 5)]
    m = Model([_hardmax_layer(residual=False, kind="softmax")], input_dim=2, readout="all")
    r = forward(m, [X], prec=200)
    assert not r.exact and r.precision == 200
    mpmath.mp.prec = 800
    for j in range(3):
        q = mpmath.mpf(X[j][0])
        w = [mpmath.e ** (q * X[k][1]) for k in range(3)]
        tot = sum(w)
        for i in range(2):
            true = sum(w[k] * X[k][i] for k in range(3)) / tot
            ball = r.outputs[0][j][i]
            (mm, me), (rm, re) = ball.mid().man_exp(), ball.rad().man_exp()
            mid, rad = mpmath.ldexp(int(mm), int(me)), mpmath.ldexp(int(rm), int(re))  # exact conversions
            assert abs(mid - true) <= rad  # the ball contains the true value
            assert rad < mpmath.mpf(2) ** -150  # and is tight at 200 bits


def test_trace_records_every_layer_and_attention_weights():
    m = Model([affine(I2, [0, 1], relu=True), _hardmax_layer(), affine([[1, 1]])], input_dim=2, readout="all")
    r = forward(m, [[(1, 2), (3, -5)]], trace=True)
    assert [t.layer for t in r.trace] == [0, 1, 2]
    assert r.trace[0].values.to_fractions() == [[F(1), F(3)], [F(3), F(0)]]
    w = r.trace[1].attention[0][0]  # sequence 0, head 0: rows = queries
    # after relu: z0=(1,3), z1=(3,0); scores for q=z_j[0]: keys z_k[1]=(3,0) -> key 0 wins for both queries
    assert w == [[F(1), F(0)], [F(1), F(0)]]


def test_input_and_model_errors():
    m = Model([affine(I2)], input_dim=2)
    with pytest.raises(InputError, match="dimension 3"):
        forward(m, [[(1, 2, 3)]])
    with pytest.raises(ModelError, match="layer 1"):
        Model([affine(I2), affine([[1, 2, 3]])], input_dim=2)
    with pytest.raises(ModelError, match="kind"):
        Attention([Head(WV=I2, WO=I2)], kind="sparsemax")
    emb = Model([Embed([[1], [2]])], input_type="tokens", input_dim=2)
    with pytest.raises(InputError, match="token id 5"):
        forward(emb, [[5]])
    with pytest.raises(TypeError):
        affine([[0.5]])


def test_measure_counts_and_bits():
    m = Model([affine([[1, F(1, 2)], [0, -3]], [F(1, 3), 0], relu=True),
               Attention([Head(WV=[[1, 0]], WO=[[1], [0]], WQ=[[1, 0]], WK=[[0, 1]])], kind="hardmax"),
               FeedForward([[1, 1], [1, 0], [0, 1]], [0, 0, 0], [[1, 0, 0], [0, 1, 1]], [0, 0])],
              input_dim=2)
    ms = measure(m)
    assert ms.n_params == 6 + 8 + 6 + 3 + 6 + 2
    assert ms.width == 3  # q = 3
    assert (ms.relu_depth, ms.attention_layers, ms.depth) == (2, 1, 3)
    assert ms.max_bits == 3  # bits(-3) = bits(1/2) = bits(1/3) = 3
    assert ms.n_nonzero == 4 + 1 + 4 + 6


def test_model_json_round_trip():
    m = Model([Embed([[1, "-1/2"], [0, 3]], [[1, 1], [2, 2]]),
               Attention([Head(WV=I2, WO=I2, WQ=[[1, 0]], WK=[[0, "7/3"]])], kind="softmax", query="last"),
               FeedForward([[1, 1]], [0], [[1], [2]], [0, F(1, 9)]), affine([[1, 0]], None, relu=True)],
              input_type="tokens", input_dim=2, readout="last", decode="argmax")
    assert model_from_json(model_to_json(m)) == m


def _rand_step(draw, m_in):
    m_out = draw(st.integers(1, 4))
    ent = st.fractions(min_value=-8, max_value=8, max_denominator=6)
    W = [[draw(ent) for _ in range(m_in)] for _ in range(m_out)]
    b = [draw(ent) for _ in range(m_out)]
    relu = [draw(st.booleans()) for _ in range(m_out)]
    return AffineStep.make(W, b, relu)


@st.composite
def stacks(draw):
    m = draw(st.integers(1, 4))
    steps, mi = [], m
    for _ in range(draw(st.integers(1, 5))):
        s = _rand_step(draw, mi)
        steps.append(s)
        mi = s.m_out
    T = draw(st.integers(1, 6))
    X = [[draw(st.fractions(min_value=-50, max_value=50, max_denominator=10)) for _ in range(T)] for _ in range(m)]
    return steps, X


@settings(max_examples=60, deadline=None)
@given(stacks())
def test_flint_backend_matches_fraction_reference(case):
    steps, X = case
    S = ScaledInts.from_fractions(X)
    ref = run_stack(steps, S, backend="fraction").out.to_fractions()
    assert run_stack(steps, S, backend="flint").out.to_fractions() == ref
