"""Baseline: a one-hidden-layer ReLU network of width O(N) memorizes N points exactly.

The O(N)-parameter memorizers the Õ(√N) constructions are measured against (see
``docs/constructions/relu_interpolation.md``). Two forms, each with claims computed from
N and d and compared by the independent checker:

* ``relu_interpolation.steps`` — integer projection, step functions: width 2(N − 1),
  d + 6(N − 1) + 1 parameters (the scalable baseline, runs to N = 10^4);
* ``relu_interpolation.slopes`` — rational slopes: width N − 1, d + 3(N − 1) + 1
  parameters (fewer parameters, but the slopes' common denominator grows with N).
"""

from exactmem.certificate.writer import Claim
from exactmem.constructions import relu_interpolation
from exactmem.data.dataset import Dataset, random_labels, random_points
from exactmem.proof import Built, Instance, Theorem

SOURCE = "classical interpolation after an exact random projection (background note §2)"


def _data(params, seed):
    N, d = params["N"], params["d"]
    points = random_points(N, d, seed, coord_range=params.get("coord_range", 1000),
                           denominators=params.get("denominators", (1,)))
    labels = random_labels(N, seed + 1, num_classes=params.get("classes"), denominator=params.get("label_den", 1))
    ds = Dataset([(p,) for p in points], [(y,) for y in labels], "vectors", seed, f"random N={N} d={d}")
    return points, labels, ds


def _claims(N, d, M, hidden_per_gap):
    units = max(hidden_per_gap * (M - 1), hidden_per_gap if hidden_per_gap == 2 else 1)
    return [
        Claim("n_examples", "==", N, "dataset size"),
        Claim("width", "==", units, f"hidden width {hidden_per_gap}(N - 1)"),
        Claim("relu_depth", "==", 1, "one hidden ReLU layer"),
        Claim("attention_layers", "==", 0, "no attention"),
        Claim("n_params", "==", d + 3 * units + 1, f"d + {3 * hidden_per_gap}(N - 1) + 1 stored entries"),
    ]


def build_steps(params, seed):
    points, labels, ds = _data(params, seed)
    model, info = relu_interpolation.build_steps(points, labels, seed)
    return Built(model, ds, _claims(params["N"], params["d"], info["distinct_points"], 2), info=info)


def build_slopes(params, seed):
    points, labels, ds = _data(params, seed)
    model, info = relu_interpolation.build(points, labels, seed)
    return Built(model, ds, _claims(params["N"], params["d"], info["distinct_points"], 1), info=info)


THEOREMS = [
    Theorem(
        name="relu_interpolation.steps",
        statement="N distinct labelled points in Q^d are memorized exactly by a ReLU network with one hidden "
                  "layer of width 2(N - 1) (step functions on an exact integer projection).",
        source=SOURCE,
        build=build_steps,
        instances=[
            Instance("N5-d2", {"N": 5, "d": 2}, ("small", "medium")),
            Instance("N60-d4-rational", {"N": 60, "d": 4, "denominators": (1, 2, 3, 7), "label_den": 5},
                     ("small", "medium")),
            Instance("N300-d8-classes", {"N": 300, "d": 8, "classes": 10}, ("small", "medium")),
            Instance("N2000-d16", {"N": 2000, "d": 16}, ("medium", "large")),
            Instance("N10000-d16", {"N": 10000, "d": 16}, ("large",)),
        ],
    ),
    Theorem(
        name="relu_interpolation.slopes",
        statement="N distinct labelled points in Q^d are memorized exactly by a ReLU network with one hidden "
                  "layer of width N - 1 (continuous piecewise-linear interpolant with rational slopes).",
        source=SOURCE,
        build=build_slopes,
        instances=[
            Instance("N5-d2", {"N": 5, "d": 2}, ("small", "medium")),
            Instance("N60-d4-rational", {"N": 60, "d": 4, "denominators": (1, 2, 3, 7), "label_den": 5},
                     ("small", "medium")),
            Instance("N500-d8", {"N": 500, "d": 8}, ("medium", "large")),
        ],
    ),
]
