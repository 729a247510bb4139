"""Dana, Pydi & Chevaleyre (AISTATS 2025): memorization in attention-only Transformers.

Reference: the technical note ``papers/dana.md`` (§1–§3; errata §7). The construction is
``exactmem/constructions/dana.py``; ``docs/dana.md`` explains the two softmax modes.

* ``dana.corollary1`` — Corollary 1 (general d, Table 1): an AoT (embeddings, one softmax
  attention layer with H heads of dimension d_h and a skip connection, unembedding, argmax)
  memorizes T0 = H·d_h + d associations of a random look-up table, with
  d(S + 2N + 4·d_h·H) parameters (Theorem 1's count). Mode (b): rational weights.
* ``dana.corollary1.base2`` — the same with mode (a): integer embeddings and query-key
  matrices, attention kind ``softmax2`` (weights 2^{k_s}/Σ_j 2^{k_j}, note §3.7); F, its rank
  and the solve are exact over Q and the independent checker certifies the stored network in
  exact rational arithmetic — with the exact W_O, W_U, or (``-rounded`` instances) with the
  smallest B-bit rounding of them that the exact evaluation still certifies.
* ``dana.remark2.rank1`` — Remark 2: rank-1 query/key vectors (W_Q, W_K ∈ R^{1×d}), with
  d(S + 2N + 2(d_h + 1)H) parameters.
* ``dana.theorem1`` — Theorem 1 (distribution memorization): on the T_ε most likely
  sequences the logits equal the encoder's W E(t) to within the certificate's error bound;
  H = ⌈(T_ε − d)/d_h⌉ heads, d(S + 2N + 4·d_h·H) parameters.
"""

from fractions import Fraction

from exactmem.certificate.writer import Claim
from exactmem.constructions import dana
from exactmem.data.dana_data import random_conditionals, spread_table, t_epsilon
from exactmem.proof import Built, Instance, Theorem

SOURCE = "Dana, Pydi & Chevaleyre, AISTATS 2025 (note papers/dana.md)"


def _size_claims(N, S, d, dh, H, T0, rank1=False, what="Corollary 1"):
    """The paper's size statements for this instance, computed exactly (note §2, §3.7)."""
    count = dana.paper_param_count(N, S, d, dh, H, rank1)
    formula = "d(S + 2N + 2(d_h+1)H), Remark 2" if rank1 else "d(S + 2N + 4 d_h H), Theorem 1"
    s = 1 if rank1 else dh
    return [
        Claim("n_examples", "==", T0, f"{what}: T0 = H d_h + d = {H}*{dh} + {d}" if T0 == H * dh + d
              else f"{what}: T = {T0} sequences"),
        Claim("n_params", "==", count, formula),
        Claim("attention_layers", "==", 1, "one multi-head attention layer"),
        Claim("relu_depth", "==", 0, "attention-only: no MLP"),
        Claim("width", "==", max(N, s * H, dh * H, d), "max(N, s·H, d_h·H, d): unembedding and concatenated heads"),
    ]


def build_corollary1(params, seed, mode="rational", rank1=False):
    N, S, d, dh, H = (params[k] for k in ("N", "S", "d", "dh", "H"))
    T0 = dana.capacity(d, dh, H)
    table = spread_table(N, S, seed, T0=T0)
    b = dana.build_association(table, d, dh, H, mode=mode, seed=seed, rank1_shape=rank1,
                               qk=params.get("qk"), sigma_min=params.get("sigma_min", True))
    return Built(b.model, b.dataset, _size_claims(N, S, d, dh, H, T0, rank1), info=b.info)


def build_base2(params, seed):
    N, S, d, dh, H = (params[k] for k in ("N", "S", "d", "dh", "H"))
    T0 = dana.capacity(d, dh, H)
    table = spread_table(N, S, seed, T0=T0)
    b = dana.build_association(table, d, dh, H, mode="base2", seed=seed, sigma_min=False,
                               round_readout=params.get("round", False))
    return Built(b.model, b.dataset, _size_claims(N, S, d, dh, H, T0), info=b.info)


def build_rank1(params, seed):
    return build_corollary1(params, seed, mode=params.get("mode", "rational"), rank1=True)


def build_theorem1(params, seed):
    N, S, d, dh = (params[k] for k in ("N", "S", "d", "dh"))
    eps = Fraction(params.get("eps", 0))
    data = random_conditionals(N, S, seed, uniform_prior=params.get("uniform", False))
    tol = Fraction(1, 2 ** params.get("tol_bits", 10))
    b = dana.build_distribution(data, d, dh, eps, mode=params.get("mode", "rational"), seed=seed, tol=tol,
                                round_readout=params.get("round", False))
    Te = t_epsilon(data, eps)
    H = b.design.H
    claims = _size_claims(N, S, d, dh, H, Te, what="Theorem 1")
    claims.append(Claim("n_examples", "<=", dh * H + d, "Theorem 1: T_eps <= d_h H + d"))
    return Built(b.model, b.dataset, claims, error_bound=tol, info=b.info)


def _inst(N, d, dh, H, sizes=("small", "medium"), **extra):
    params = {"N": N, "S": 2, "d": d, "dh": dh, "H": H, **extra}
    return Instance(f"N{N}-d{d}-dh{dh}-H{H}" + ("-rounded" if extra.get("round") else ""), params, sizes)


# (N, d, d_h, H): mode (b) intervals; mode (a) exact base-2, also with the B-bit rounded readout
COROLLARY1_INSTANCES = [_inst(10, 2, 2, 2), _inst(10, 2, 1, 5), _inst(10, 4, 4, 3),
                        _inst(50, 10, 10, 11, ("medium", "large")), _inst(50, 10, 10, 31, ("large",))]
BASE2_INSTANCES = [_inst(10, 2, 2, 2), _inst(10, 4, 2, 3), _inst(20, 6, 6, 3), _inst(20, 6, 6, 3, round=True),
                   _inst(50, 10, 10, 6, ("medium",)), _inst(50, 10, 10, 11, ("medium", "large")),
                   _inst(50, 10, 10, 11, ("medium", "large"), round=True), _inst(50, 10, 10, 21, ("large",), round=True)]

THEOREMS = [
    Theorem(
        name="dana.corollary1",
        statement="An attention-only Transformer with embedding dimension d, H heads of dimension d_h and a "
                  "skip connection memorizes T0 = H d_h + d associations of a look-up table (argmax decoding), "
                  "with d(S + 2N + 4 d_h H) parameters. Mode (b): rational weights, softmax certified with "
                  "intervals.",
        source=SOURCE + ", Corollary 1 (general d, Table 1) and Theorem 1's parameter count",
        build=build_corollary1,
        instances=COROLLARY1_INSTANCES,
    ),
    Theorem(
        name="dana.corollary1.base2",
        statement="Corollary 1 in mode (a): with integer embeddings and W_QK = ln 2 times an integer matrix the "
                  "attention weights 2^k/sum 2^k are rational (attention kind softmax2), F has exact full column "
                  "rank H d_h + d over Q, and the network with the exact (or B-bit rounded) W_O, W_U memorizes "
                  "the T0 associations - certified in exact rational arithmetic, no intervals.",
        source=SOURCE + ", Corollary 1; note §3.7 (exact base-2 softmax)",
        build=build_base2,
        instances=BASE2_INSTANCES,
    ),
    Theorem(
        name="dana.remark2.rank1",
        statement="Remark 2: rank-1 query-key matrices (W_Q, W_K in R^{1 x d}) suffice; the AoT then has "
                  "d(S + 2N + 2(d_h + 1)H) parameters and still memorizes H d_h + d associations.",
        source=SOURCE + ", Remark 2",
        build=build_rank1,
        instances=[
            _inst(10, 4, 2, 3),
            _inst(10, 4, 4, 2),
        ],
    ),
    Theorem(
        name="dana.theorem1",
        statement="Theorem 1 (distribution memorization): with d_h H + d >= T_eps the AoT's logits equal a rank-d "
                  "sequence encoder W E(t) on the T_eps most likely sequences (to within the certificate's error "
                  "bound); d(S + 2N + 4 d_h H) parameters.",
        source=SOURCE + ", Theorem 1",
        build=build_theorem1,
        instances=[
            Instance("N4-d2-dh2-eps0", {"N": 4, "S": 2, "d": 2, "dh": 2, "eps": 0}, ("small", "medium")),
            Instance("N4-d3-dh3-eps1-4", {"N": 4, "S": 2, "d": 3, "dh": 3, "eps": "1/4"}, ("small", "medium")),
            Instance("N4-d2-dh2-eps0-base2", {"N": 4, "S": 2, "d": 2, "dh": 2, "eps": 0, "mode": "base2"},
                     ("small", "medium")),
            Instance("N6-d4-dh2-eps1-2", {"N": 6, "S": 2, "d": 4, "dh": 2, "eps": "1/2"}, ("medium", "large")),
        ],
    ),
]
