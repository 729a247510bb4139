"""Kajitsuka & Sato (ICLR 2025) Theorem D.1: memorization by deep sets, certified (``docs/deep-sets.md``).

Two certificates per instance, from the same deterministic build:

* ``kajitsuka.deep_sets`` — the deep set (ϕ̃, ρ̃) as one model on the multisets padded to
  length M with the point p: ϕ̃ token-wise, a uniform head that sums (W_V = 1, W_O = M), ρ̃.
  Every output is exactly y⁽ⁱ⁾.
* ``kajitsuka.deep_sets_phi`` — ϕ̃ alone (the same layers) on every distinct element and on
  p: ϕ̃(x) = f(x) on Lemma B.1's set A, 0 elsewhere and ϕ̃(p) = 0 (so padding leaves the sum
  unchanged and eq. (115) holds on the unpadded multisets).

Claims (computed here, compared by the checker; log base 2, enclosures rounded the safe way):

* exact: ``n_examples``, ``attention_layers``, ``width`` (== measured and <= 12), ``relu_depth``
  and ``depth`` (ϕ̃'s + ρ̃'s Lemma C.1 depths, + 1 for the summing layer), ``max_bits``,
  ``n_params`` (==);
* eq. (110)/(111) per Lemma C.1 stage with its measured N, C, R (ϕ̃: |A| points, F + 1
  classes, V + 1 points; ρ̃: N sums, C classes);
* the paper's stage forms (116)/(117) with R_ϕ, C_ϕ and (121)/(122) with R_ρ;
* the theorem's (113)/(114) with R = 80 M² N⁵ r δ⁻¹ π √d (eq. (124)).

Depth counts ReLU layers + the summing attention layer; each Lemma C.1 stack has one affine
layer fewer than (110) counts, so a deep-set bound is (⌊(110)_ϕ⌋ − 1) + (⌊(110)_ρ⌋ − 1) + 1.
"""

from fractions import Fraction

from exactmem.arith import enclosure as E
from exactmem.certificate.writer import Claim
from exactmem.constructions.kajitsuka import deep_sets
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.data.multiset_data import generate
from exactmem.model.measure import measure
from exactmem.arith.numbers import bits
from exactmem.proof import Built, Instance, Theorem

SOURCE = "Kajitsuka & Sato (ICLR 2025) Theorem D.1, eqs. (112)-(126); Lemmas B.1-B.3, C.1"
ENGINE = "compress"

floor_lo = E.floor_lower
HALF = Fraction(1, 2)


# ----------------------------------------------------------------------------- formulas


def eq111(N: int, C: int, R2, first) -> E.Enc:
    """Eq. (111) with its first (Lemma C.2) term given: max{first, g·mx + ⌈log R⌉, g·mx + 2},
    g = √(N/log N), mx = max{log R, log C}."""
    ell = E.log2(N)
    logR = E.log2(R2) * HALF
    mx = E.emax(logR, E.log2(C))
    g = E.sqrt(N / ell)
    return E.emax(first, g * mx + E.ceil(logR), g * mx + 2)


def stack_depth(N: int, C: int, R2) -> int:
    """ReLU layers a Lemma C.1 stack may have by eq. (110): ⌊(110)⌋ − 1 (its output layer is affine)."""
    return floor_lo(vardi.eq110_depth(N, C, R2)) - 1


def _phi_stage(info):
    """(N, C, R², Lemma C.2 term) of ϕ̃'s Lemma C.1 with its measured values (None if |A| < 2)."""
    s = info["phi"]
    if s is None or s["N"] < 2:
        return None
    r2, d2 = s["lemma r^2 (clamped >= 1)"], s["lemma delta^2 (clamped <= 1)"]
    return s["N"], s["C"], vardi.paper_R2(r2, d2, s["V"], s["d"]), vardi.lemma_c2_bits(s["d"], r2, d2, s["V"])


def _rho_stage(info):
    s = info["rho"]
    r2, d2 = s["lemma r^2 (clamped >= 1)"], s["lemma delta^2 (clamped <= 1)"]
    return s["N"], s["C"], vardi.paper_R2(r2, d2, s["V"], 1), vardi.lemma_c2_bits(1, r2, d2, s["V"])


def _paper_phi(info):
    """(116)/(117): Lemma C.1 with N, C_ϕ = ⌈4N³√π⌉ and R_ϕ = 20 r (NM)² δ⁻¹ √(πd), the data's r, δ."""
    N, M, d, r2, d2 = info["N"], info["M"], info["d"], info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"]
    c_phi = E.floor_lower(deep_sets.paper_C_phi(N))  # an integer ≤ C_ϕ: log C_ϕ from below is safe
    return N, c_phi, deep_sets.paper_R_phi2(N, M, d, r2, d2), vardi.lemma_c2_bits(d, r2, d2, N * M)


def _paper_rho(info):
    """(121)/(122): Lemma C.1 with N, C and R_ρ = 80 M N⁵ π; Lemma C.2 term log(3·4MN³√π·N²·√π)."""
    N, M = info["N"], info["M"]
    return N, info["C"], deep_sets.paper_R_rho2(N, M), E.log2(E.PI * (12 * M * N ** 5))


def _pair_bounds(phi, rho, M: int, phi_zero: bool):
    """(depth bound, bits bound) of the deep set from its two stages' (N, C, R², C.2 term)."""
    depth = (0 if phi_zero else stack_depth(*phi[:3])) + stack_depth(*rho[:3]) + 1
    parts = [eq111(*rho), bits(M)] + ([] if phi_zero else [eq111(*phi)])
    return depth, floor_lo(E.emax(*parts))


def theorem_bounds(info):
    """(113)/(114) with R = 80 M² N⁵ r δ⁻¹ π √d for both stages (R ≥ R_ϕ, C_ϕ, R_ρ, eq. (124)):
    depth ≤ 2(⌊(110)(N, C, R)⌋ − 1) + 1; bits ≤ max{ϕ̃'s Lemma C.2 term log(3 d r' (NM+1)² √π/δ)
    (r' = radius of the elements and p), ρ̃'s log(12 M N⁵ π), g·mx + ⌈log R⌉, g·mx + 2, bits(M)}."""
    N, M, d, C = info["N"], info["M"], info["d"], info["C"]
    r2, d2 = info["r^2 (clamped >= 1)"], info["delta^2 (clamped <= 1)"]
    R2 = deep_sets.paper_R2(N, M, d, r2, d2)
    r2p = info["phi"]["lemma r^2 (clamped >= 1)"] if info["phi"] else r2
    first = E.emax(vardi.lemma_c2_bits(d, r2p, d2, N * M + 1), E.log2(E.PI * (12 * M * N ** 5)))
    D = 2 * stack_depth(N, C, R2) + 1
    B = floor_lo(E.emax(eq111(N, C, R2, first), bits(M)))
    return D, B


# ----------------------------------------------------------------------------- claims


def claims(b):
    info = b.info
    N, M = info["N"], info["M"]
    meas = measure(b.model)
    out = [
        Claim("n_examples", "==", N, "one example per multiset (padded to length M)"),
        Claim("attention_layers", "==", 1, "the summing layer (uniform head, W_O = M)"),
        Claim("width", "<=", 12, "Thm D.1: width 12 (max of the widths of phi and rho)"),
        Claim("width", "==", meas.width, "measured: max over phi, rho (<= 12) and the summing head (1)"),
        Claim("relu_depth", "==", deep_sets.relu_depth(b), "this implementation: Lemma C.1 depth of phi + of rho"),
        Claim("depth", "==", deep_sets.relu_depth(b) + 1, "ReLU layers + the summing attention layer"),
        Claim("max_bits", "==", deep_sets.max_bits(b), "max of phi's and rho's gP + 2 / Stage I bits, bits(M)"),
        Claim("n_params", "==", meas.n_params, "stored entries of phi, the summing head and rho"),
    ]
    if N < 2:
        return out
    phi_zero = b.phi_layout is None
    st_phi = _phi_stage(info)
    if st_phi is not None or phi_zero:
        D, B = _pair_bounds(st_phi, _rho_stage(info), M, phi_zero)
        out += [Claim("depth", "<=", D, "eq. (110) per stage (measured N, C, R): phi + rho + summing layer"),
                Claim("max_bits", "<=", B, "eq. (111) per stage (measured N, C, R, V), and bits(M)")]
    D, B = _pair_bounds(_paper_phi(info), _paper_rho(info), M, phi_zero)
    out += [Claim("depth", "<=", D, "(116) with R_phi, C_phi + (121) with R_rho = 80 M N^5 pi, + summing layer"),
            Claim("max_bits", "<=", B, "(117) with R_phi, C_phi and (122) with R_rho, and bits(M)")]
    D, B = theorem_bounds(info)
    out += [Claim("depth", "<=", D, "(113)/(125): 2 x (110)(N, C, R), R = 80 M^2 N^5 r pi sqrt(d) / delta"),
            Claim("max_bits", "<=", B, "(114)/(126): (111) with the theorem's R, Lemma C.2 terms, bits(M)")]
    return out


def phi_claims(b):
    info = b.info
    N, V = info["N"], info["distinct elements V"]
    meas = measure(b.phi_model)
    out = [
        Claim("n_examples", "==", V + 1, "every distinct element and the padding point p"),
        Claim("attention_layers", "==", 0, "phi is a plain ReLU network"),
        Claim("width", "<=", 12, "Lemma B.3: width 12"),
        Claim("width", "==", meas.width, "measured"),
        Claim("relu_depth", "==", deep_sets.phi_relu_depth(b), "this implementation: Lemma C.1's exact depth"),
        Claim("max_bits", "==", deep_sets.phi_max_bits(b), "this implementation: max(gP + 2, Stage I bits)"),
        Claim("n_params", "==", meas.n_params, "stored entries"),
    ]
    st = _phi_stage(info)
    if st is not None:
        out += [Claim("depth", "<=", stack_depth(*st[:3]), "eq. (110), measured N = |A|, C = F + 1, R (V + 1 points)"),
                Claim("max_bits", "<=", floor_lo(eq111(*st)), "eq. (111), measured N, C, R, V")]
    if N >= 2 and b.phi_layout is not None:
        pp = _paper_phi(info)
        out += [Claim("depth", "<=", stack_depth(*pp[:3]), "(116): (110) with N, C_phi = ceil(4N^3 sqrt(pi)), R_phi"),
                Claim("max_bits", "<=", floor_lo(eq111(*pp)), "(117): (111) with N, C_phi, R_phi, V = NM")]
    return out


# ----------------------------------------------------------------------------- builds


def _data(params, seed):
    return generate(params["N"], params["M"], params["d"], params["C"], seed, vocab=params.get("vocab"),
                    min_card=params.get("min_card", 1), repeat=params.get("repeat", 0.3),
                    coord_range=params.get("coord_range", 16), denominator_bits=params.get("denominator_bits", 0))


def _info(b):
    return {k: v for k, v in b.info.items() if k not in ("phi", "rho")}


def build(params, seed):
    b = deep_sets.build(_data(params, seed), seed=seed)
    return Built(b.model, b.dataset, claims(b), info=_info(b))


def build_phi(params, seed):
    b = deep_sets.build(_data(params, seed), seed=seed)
    return Built(b.phi_model, b.phi_dataset, phi_claims(b), info=_info(b))


def _inst(name, sizes, **p):
    return Instance(name, p, sizes, engine=ENGINE)


INSTANCES = [
    _inst("N12-M4-d3-C4", ("small", "medium"), N=12, M=4, d=3, C=4),
    _inst("N30-M5-d1-C3", ("small", "medium"), N=30, M=5, d=1, C=3, coord_range=64),
    _inst("N20-M6-d2-C5-bigden", ("small", "medium"), N=20, M=6, d=2, C=5, denominator_bits=24),
    _inst("N8-M3-d2-C3-empty", ("small", "medium"), N=8, M=3, d=2, C=3, min_card=0),
    _inst("N3-M2-d1-C2", ("small", "medium"), N=3, M=2, d=1, C=2),
    _inst("N1-M2-d2-C2", ("small",), N=1, M=2, d=2, C=2),
    _inst("N1000-M6-d8-C4", ("medium",), N=1000, M=6, d=8, C=4),
]

THEOREMS = [
    Theorem(
        name="kajitsuka.deep_sets",
        statement="N distinct finite multisets of points in Q^d (cardinality <= M), element-wise (r, delta)-"
                  "separated, labels in {0..C-1}, are memorized exactly by a deep set rho~(sum_k phi~(x_k)) with "
                  "phi~, rho~ of width <= 12, depth and bits within eqs. (113)-(114) (log base 2); written as "
                  "phi~ token-wise on the multiset padded to length M with a point p (phi~(p) = 0, certified by "
                  "kajitsuka.deep_sets_phi), a uniform head that sums, and rho~.",
        source=SOURCE,
        build=build,
        instances=INSTANCES,
    ),
    Theorem(
        name="kajitsuka.deep_sets_phi",
        statement="Lemma B.3 as used by Theorem D.1: phi~ (the same layers as in kajitsuka.deep_sets) maps every "
                  "element of Lemma B.1's set A to f(x) in [1, F], F <= C_phi = ceil(4N^3 sqrt(pi)), every other "
                  "element and the padding point p to 0; width <= 12, depth and bits within (116)-(117).",
        source=SOURCE + " (Lemma B.3, eq. (118))",
        build=build_phi,
        instances=INSTANCES,
    ),
]
