"""The O(N) baseline constructions: exact outputs, exact sizes, clear errors."""

from fractions import Fraction as F

import pytest

from exactmem.constructions import relu_interpolation as ri
from exactmem.data.dataset import DataError, random_labels, random_points
from exactmem.model import forward, measure


@pytest.mark.parametrize("builder,per_gap", [(ri.build_steps, 2), (ri.build, 1)])
@pytest.mark.parametrize("N,d,dens", [(1, 2, (1,)), (2, 1, (1,)), (7, 3, (1, 2, 3)), (150, 5, (1, 4, 9))])
def test_memorizes_every_label_exactly(builder, per_gap, N, d, dens):
    pts = random_points(N, d, seed=N, coord_range=50, denominators=dens)
    labs = random_labels(N, seed=N + 1, denominator=3)
    model, info = builder(pts, labs, seed=0)
    out = forward(model, [(p,) for p in pts]).outputs
    assert out == [[y] for y in labs]
    m = measure(model)
    units = max(per_gap * (N - 1), per_gap if per_gap == 2 else 1)
    assert m.width == units
    assert m.n_params == d + 3 * units + 1
    assert (m.relu_depth, m.attention_layers) == (1, 0)


def test_steps_projection_is_integer():
    pts = random_points(40, 3, seed=5, denominators=(2, 3, 5))
    model, info = ri.build_steps(pts, random_labels(40, 6), seed=0)
    v = model.layers[0].W[0]
    for p in pts:
        t = sum(a * x for a, x in zip(v, p))
        assert t.denominator == 1
    assert info["min_projected_gap"] >= 1


def test_duplicate_points_consistent_labels_are_merged():
    pts = [(F(1), F(2)), (F(3), F(4)), (F(1), F(2))]
    model, info = ri.build_steps(pts, [F(5), F(6), F(5)], seed=0)
    assert info["distinct_points"] == 2
    assert forward(model, [(p,) for p in pts]).outputs == [[F(5)], [F(6)], [F(5)]]


def test_conflicting_duplicate_is_a_clear_error():
    pts = [(F(1), F(2)), (F(3), F(4)), (F(1), F(2))]
    with pytest.raises(DataError, match="examples 0 and 2"):
        ri.build_steps(pts, [F(5), F(6), F(7)], seed=0)


def test_ragged_points_rejected():
    with pytest.raises(DataError, match="point 1 has dimension 1"):
        ri.build([(F(1), F(2)), (F(3),)], [F(0), F(1)], seed=0)
