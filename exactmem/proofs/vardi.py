"""Vardi, Yehudai & Shamir's Õ(√N) ReLU memorizer (Kajitsuka & Sato Lemma C.1) and its Lemma F.1 variant, certified.

As extended in Lemma C.1, it puts labels on N points and exactly 0 on V − N extra points; Lemma F.1
is the limited-bit variant.

Every claim is computed exactly from the instance (see ``docs/vardi.md``):

* ``width <= 12`` (Lemma C.1) / ``width <= 13`` (Lemma F.1);
* ``relu_depth == `` this implementation's exact depth (from its rounding choices);
* ``depth <= (110) − 1``: Kajitsuka & Sato eq. (110) with log₂ and the natural numbers its
  lemmas require (`exactmem.constructions.vardi.memorizer.eq110_integer`: Lemma G.3's
  m = ⌈√(N log₂ N)⌉ groups, Lemma G.6's n = ⌈√(N/log₂ N)⌉ slots, ⌈log₂ R⌉- and ⌈log₂ C⌉-bit
  blocks), an exact integer; the paper counts affine layers (Lemma C.2's σ(wᵀx + b) has
  "depth 2"), i.e. ReLU layers + 1, hence the − 1;
* ``max_bits == `` the exact maximum (gP + 2 for the doubling weights 2^(gρ), 2^(gc), or
  Stage I's projection weights) and ``max_bits <= ⌊(111)⌋`` (eq. (111), log₂, enclosure);
* ``n_examples == V`` and ``attention_layers == 0``.

Lemma F.1's bounds are only stated with ≲; the exact expressions used here are the sums of
the per-subset Lemma C.1 expressions (the proof applies Lemma C.1 to each subset).
"""

import random
from fractions import Fraction

from exactmem.arith import enclosure as E
from exactmem.certificate.formulas import Formulas, add, floor, sub
from exactmem.certificate.writer import Claim
from exactmem.constructions.vardi import formulas as vf
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.data.dataset import DataError, Dataset, random_points
from exactmem.proof import Built, Instance, Theorem

SOURCE_C1 = "Kajitsuka & Sato (ICLR 2025) Lemma C.1, extending Vardi, Yehudai & Shamir (ICLR 2022) Thm 3.1"
# The producer's exact engine: "compress" evaluates each register on its distinct values
# (exactmem/model/compress.py). The registers that carry the 1,000-bit crafted weights take
# one value per group, so this is ~25x faster than "limbs" at N = 65,536 (docs/vardi.md).
ENGINE = "compress"
SOURCE_F1 = "Kajitsuka & Sato (ICLR 2025) Lemma F.1, extending Vardi, Yehudai & Shamir (ICLR 2022) Thm 6.2"


# ----------------------------------------------------------------------------- data


def line_points(n, seed, spread=8):
    """n distinct random integers in [0, spread·n) on the real line (1-D, general position)."""
    rng = random.Random(seed)
    return [(Fraction(x),) for x in rng.sample(range(spread * n), n)]


def lattice_points(n, d, seed):
    """n distinct random points of the integer lattice {0, …, s − 1}^d, s = ⌈(2n)^(1/d)⌉."""
    rng = random.Random(seed)
    s = 2
    while s ** d < 2 * n:
        s += 1
    seen, out = set(), []
    while len(out) < n:
        p = tuple(Fraction(rng.randrange(s)) for _ in range(d))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def make_points(kind, V, d, seed):
    if kind == "line":
        if d != 1:
            raise DataError("kind 'line' is 1-dimensional")
        return line_points(V, seed)
    if kind == "lattice":
        return lattice_points(V, d, seed)
    if kind == "cloud":  # rationals k/q, q in {1, 2, 3, 7}: general position
        return random_points(V, d, seed, coord_range=1000, denominators=(1, 2, 3, 7))
    raise DataError(f"unknown point kind {kind!r} (line, lattice, cloud)")


def make_data(params, seed):
    """The instance's points (N labelled, V − N extra) and labels in {0, …, C − 1}."""
    N, C = params["N"], params["C"]
    V, d = params.get("V", N), params.get("d", 1)
    pts = make_points(params.get("kind", "line"), V, d, seed)
    rng = random.Random(seed + 1)
    top = params.get("label_range", C)
    labels = [rng.randrange(top) for _ in range(N)]
    ds = Dataset([(p,) for p in pts], [(Fraction(y),) for y in labels] + [(Fraction(0),)] * (V - N), "vectors",
                 seed, f"{params.get('kind', 'line')} N={N} V={V} d={d} C={C}")
    return pts[:N], labels, pts[N:], ds


# ----------------------------------------------------------------------------- claims


def lemma_quantities(info):
    """(N, V, d, C, R²) of an instance, from the construction's data facts."""
    N, V, d, C = info["N"], info["V"], info["d"], info["C"]
    r2, delta2 = info["lemma r^2 (clamped >= 1)"], info["lemma delta^2 (clamped <= 1)"]
    return N, V, d, C, r2, delta2, vardi.paper_R2(r2, delta2, V, d)


floor_lo = E.floor_lower


def _lemma_names(info, F: Formulas):
    """The named V (the kernel's n_examples) and d (input_dim), and Lemma C.1's N, C, r², δ² and
    R² = 400 r² V⁴ π d / δ² as definitions, for the claim formulas."""
    N, V, d, C, r2, delta2, _ = lemma_quantities(info)
    head = [F.named(Claim("n_examples", "==", V, "V labelled + extra points"), "V"),
            F.named(Claim("input_dim", "==", d, "points in R^d"), "d")]
    for name, v, what in (("N", N, "labelled points"), ("C", C, "label values"), ("r2", r2, "r^2 (clamped >= 1)"),
                          ("delta2", delta2, "delta^2 (clamped <= 1)")):
        F.define(name, v, f"Lemma C.1's {what}")
    F.define("R2", vf.paper_R2("r2", "delta2", "V", "d"), "R^2 = 400 r^2 V^4 pi d / delta^2")
    return head


def c1_claims(info):
    N = lemma_quantities(info)[0]
    lay, F = info["layout"], Formulas()
    claims = _lemma_names(info, F) + [
        Claim("attention_layers", "==", 0, "a plain ReLU network"),
        Claim("width", "<=", 12, "Lemma C.1: width 12"),
        Claim("relu_depth", "==", vardi.relu_depth_c1(lay),
              f"this implementation: 1 + (m+1) + 3 + max(rho, c-1) + (g-1)max(rho, c), "
              f"g={lay.g} m={lay.m} rho={lay.rho} c={lay.c}"),
        Claim("max_bits", "==", vardi.max_bits_impl(lay, info["projection bits"]),
              "this implementation: max(g*max(rho,c) + 2, Stage I bits)"),
    ]
    if N >= 2:
        claims += [
            F.claim("depth", "<=", sub(vf.eq110_integer("N", "C", "R2"), 1),
                    "eq. (110), log2, with Lemmas G.3/G.6's integers m, n, ceil log R, ceil log C, minus the affine "
                    "output layer"),
            F.claim("max_bits", "<=", floor(vf.eq111_bits("N", "C", "R2", "r2", "delta2", "V", "d")),
                    "eq. (111), log2"),
        ]
    return claims


def f1_claims(info):
    lays, F = info["layouts"], Formulas()
    claims = _lemma_names(info, F) + [
        Claim("attention_layers", "==", 0, "a plain ReLU network"),
        Claim("width", "<=", 13, "Lemma F.1: width 13"),
        Claim("relu_depth", "==", vardi.relu_depth_f1(lays),
              f"this implementation: 1 + sum over {len(lays)} subsets of (m_i+1) + 3 + max(rho, c-1) + "
              f"(g_i-1)max(rho, c)"),
        Claim("max_bits", "==", max(vardi.max_bits_impl(l, info["projection bits"]) for l in lays),
              "this implementation: max over subsets of g_i*max(rho,c) + 2, and Stage I bits"),
    ]
    if all(l.N >= 2 for l in lays):
        sizes = [F.define(f"N{i + 1}", l.N, f"subset {i + 1}: |subset|") for i, l in enumerate(lays)]
        claims.append(F.claim("depth", "<=", sub(add(*(vf.eq110_integer(Ni, "C", "R2") for Ni in sizes)), 1),
                              "sum over subsets of eq. (110) with N_i = |subset| (Lemma F.1's proof) and the lemmas' "
                              "integers, minus 1"))
    big = max(l.N for l in lays)
    if big >= 2:
        F.define("B2", big, "the largest subset, B^2 points")
        claims.append(F.claim("max_bits", "<=", floor(vf.eq111_bits("B2", "C", "R2", "r2", "delta2", "V", "d")),
                              "eq. (111) with N = B^2 (the largest subset), log2"))
    return claims


# ----------------------------------------------------------------------------- theorems


def build_c1(params, seed):
    pts, labels, extra, ds = make_data(params, seed)
    model, info = vardi.build_c1(pts, labels, params["C"], extra, seed=seed + 2, slots=params.get("slots"))
    return Built(model, ds, c1_claims(info), info=info)


def build_f1(params, seed):
    pts, labels, extra, ds = make_data(params, seed)
    model, info = vardi.build_f1(pts, labels, params["C"], params["B"], extra, seed=seed + 2)
    return Built(model, ds, f1_claims(info), info=info)


THEOREMS = [
    Theorem(
        name="vardi.c1",
        statement="N labelled points in Q^d (labels in {0,...,C-1}) and V - N extra points, pairwise distinct, "
                  "are mapped exactly to their labels and to 0 by a ReLU network of width <= 12 whose depth and "
                  "bit complexity satisfy Kajitsuka & Sato eqs. (110) and (111) (log base 2).",
        source=SOURCE_C1,
        build=build_c1,
        instances=[
            Instance("N16-V24-line-C16", {"N": 16, "V": 24, "C": 16}, ("small", "medium"), engine=ENGINE),
            Instance("N40-V60-d3-C2", {"N": 40, "V": 60, "d": 3, "C": 2, "kind": "cloud"}, ("small", "medium"),
                     engine=ENGINE),
            Instance("N30-V40-d2-lattice-C1000", {"N": 30, "V": 40, "d": 2, "C": 1000, "kind": "lattice"},
                     ("small", "medium"), engine=ENGINE),
            Instance("N64-d4-C16", {"N": 64, "d": 4, "C": 16, "kind": "cloud"}, ("small", "medium"), engine=ENGINE),
            Instance("N1024-V1100-line-C16", {"N": 1024, "V": 1100, "C": 16}, ("medium",), engine=ENGINE),
            Instance("N1000-V1200-d8-C2", {"N": 1000, "V": 1200, "d": 8, "C": 2, "kind": "cloud"}, ("medium",),
                     engine=ENGINE),
            Instance("N2000-d3-lattice-C1000", {"N": 2000, "d": 3, "C": 1000, "kind": "lattice"}, ("medium",),
                     engine=ENGINE),
            Instance("N4096-line-C16", {"N": 4096, "C": 16}, ("medium", "large"), engine=ENGINE),
            Instance("N65536-line-C16", {"N": 65536, "C": 16}, ("large",), engine=ENGINE),
        ],
    ),
    Theorem(
        name="vardi.f1",
        statement="With B in [sqrt N], the N points are split into ceil(N/B^2) sorted subsets, each memorized by "
                  "Lemma C.1 (every other point an extra point) and summed in a carried register: width <= 13, "
                  "bit complexity that of Lemma C.1 on B^2 points.",
        source=SOURCE_F1,
        build=build_f1,
        instances=[
            Instance("N48-V56-d2-B4-C16", {"N": 48, "V": 56, "d": 2, "C": 16, "B": 4, "kind": "cloud"},
                     ("small", "medium"), engine=ENGINE),
            Instance("N4096-line-B16-C16", {"N": 4096, "C": 16, "B": 16}, ("medium", "large"), engine=ENGINE),
            Instance("N65536-line-B128-C16", {"N": 65536, "C": 16, "B": 128}, ("large",), engine=ENGINE),
        ],
    ),
]
