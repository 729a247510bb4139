"""Dana, Pydi & Chevaleyre (AISTATS 2025): memorization in attention-only Transformers.

Reference: the technical note ``papers/dana.md`` (§1–§3; errata §7). The construction is
``exactmem/constructions/dana/association.py``; ``docs/dana.md`` explains the two softmax modes.

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
  H = ⌈(T_ε − d)/d_h⌉ heads, d(S + 2N + 4·d_h·H) parameters. The ``-bound4`` instances
  (mode (a), exact readout) also decide bound (4) with C of eq. (14) enclosed rigorously.
* ``dana.proposition1`` — Prop. 1: a family of dyadic distributions memorized exactly by an
  AoT of embedding dimension d (certified: logits = log₂-probabilities exactly), and one more
  distribution that no Transformer of embedding dimension d memorizes exactly (an exact
  nonzero minor; checked in the build, which fails loudly otherwise).
* ``dana.theorem2`` — Theorem 2: the λ(t)-scaled encoder, its KL against the bound (measured
  coherence), and the AoT realising it (certified logits; d_KL(π, T) compared rigorously).
* ``dana.theorem3`` — Theorem 3 / Lemma 4: π with zeros, the explicit family f_δ of eq. (15),
  and the AoT T* realising f_δ on the T_ε likely sequences, d_KL(π, T*) ≤ δ + 2Cε‖WE‖₂.

``LOWER_BOUNDS`` holds the same checked facts as step tables for
``python -m exactmem bounds run proofs/dana.py`` (exact steps, holds / fails / repaired).
"""

from fractions import Fraction

from exactmem.bounds.dana import certificates as DC
from exactmem.bounds.protocol import BoundTheorem
from exactmem.certificate.writer import Claim
from exactmem.constructions.dana import association as dana
from exactmem.constructions.dana import bounds as DB
from exactmem.constructions.dana import distribution as DD
from exactmem.data.dana_data import random_conditionals, spread_table, t_epsilon
from exactmem.data.dataset import DataError
from exactmem.proof import Built, Instance, Theorem

theorem2_data, run_theorem2 = DB.theorem2_data, DB.run_theorem2  # Theorem 2's instances (bounds.dana.certificates reads them too)

SOURCE = "Dana, Pydi & Chevaleyre, AISTATS 2025"


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
    b = DD.build_distribution(data, d, dh, eps, mode=params.get("mode", "rational"), seed=seed, tol=tol,
                              round_readout=params.get("round", False))
    Te = t_epsilon(data, eps)
    H = b.design.H
    claims = _size_claims(N, S, d, dh, H, Te, what="Theorem 1")
    claims.append(Claim("n_examples", "<=", dh * H + d, "Theorem 1: T_eps <= d_h H + d"))
    info = dict(b.info)
    if params.get("bound4"):
        info.update(_require(DD.theorem1_bound_report(data, b, eps)))
    return Built(b.model, b.dataset, claims, error_bound=tol, info=info)


def _require(rep) -> dict:
    """The checked steps must hold (or fail with a documented repair); else the build fails loudly."""
    if not rep.ok:
        bad = "; ".join(f"{s.eq}: {s.claim} is {s.status}" for s in rep.failed)
        raise DataError(f"{rep.title}: {bad}")
    out = {f"{s.eq} {s.claim}": s.status + (" (repaired: the paper's step fails)" if s.repair else "")
           for s in rep.steps}
    out.update({k: v for k, v in rep.results.items()})
    return out


def build_proposition1(params, seed):
    """The realisable T = d + H d_h distributions, memorized exactly (softmax2 network, exact
    readout: logits = W E(t) = k_t, so the AoT with W_U scaled by ln 2 outputs π(·|t) exactly);
    the obstruction for T + 1 is checked in `DB.prop1_report`."""
    N, S, d, dh, H = (params[k] for k in ("N", "S", "d", "dh", "H"))
    rep, fam = DB.prop1_report(N, S, d, dh, H, seed)
    info = _require(rep)
    T = fam["T"]
    data = DB.dyadic_data(N, S, fam["sequences"][:T], fam["K"][:T])
    b = DD.build_distribution(data, d, dh, 0, mode="base2", seed=seed, tol=Fraction(0), H=H,
                              encoder=DB.prop1_encoder(fam, data))
    info.update(b.info)
    info["extra sequence (not memorizable)"] = fam["sequences"][T]
    return Built(b.model, b.dataset, _size_claims(N, S, d, dh, H, T, what="Proposition 1"), error_bound=Fraction(0),
                 info=info)


def build_theorem2(params, seed):
    data = theorem2_data(params, seed)
    N, d, dh = data.N, params["d"], params["dh"]
    W = DB.unembedding(N, d, params.get("W", "identity"))
    rep, enc = DB.theorem2_report(data, W)
    E = enc["E"]
    b = DD.build_distribution(data, d, dh, 0, mode="base2", seed=seed, tol=Fraction(0), encoder=(W, E),
                              H=params.get("H"), tries=12)
    DB.theorem2_network_step(rep, data, b, enc)
    info = _require(rep)
    info.update(b.info)
    T = len(data)
    return Built(b.model, b.dataset, _size_claims(N, data.S, d, dh, b.design.H, T, what="Theorem 2"),
                 error_bound=Fraction(0), info=info)


def build_theorem3(params, seed):
    N, S, d = params["N"], params["S"], params["d"]
    eps = Fraction(params["eps"])
    data = DB.zero_conditionals(N, S, seed, params.get("zeros", 1))
    info = _require(DB.theorem3_report(data, d, [Fraction(1, 2 ** k) for k in (1, 4, 8, 16)] + [eps]))
    W, E, M = DB.theorem3_encoder(data, d, eps)
    b = DD.build_distribution(data, d, 1, eps, mode="base2", seed=seed, tol=Fraction(0), encoder=(W, E))
    info.update(_require(DB.theorem3_network_report(data, b, eps, eps)))
    info.update(b.info)
    Te = t_epsilon(data, eps)
    return Built(b.model, b.dataset, _size_claims(N, S, d, 1, b.design.H, Te, what="Theorem 3"),
                 error_bound=Fraction(0), info=info)


def build_theorem3_small_d(params, seed):
    """Theorem 3 with d < N (``dana_zero_token``): T* for δ = ε, certified on **all** N^S sequences
    with labels = its exact logits (the numbers the ``dana.theorem3.small_d`` lower-bound
    certificate's d_KL(π, T*) uses); on the T_ε likely ones they equal f_ε(t) = W_ε E′(t), checked
    here. The instance data are fixed by the instance (``seed`` is not used)."""
    from exactmem.constructions.dana import zero_token as Z
    from exactmem.model.forward import forward

    inst = Z.build_instance(params["instance"], lower_budget=0)
    eps = Fraction(params["eps"])
    data = inst["data"]
    b = Z.build_network(inst, eps)
    Te = t_epsilon(data, eps)
    H = b.design.H
    if H + inst["d"] < Te:
        raise DataError(f"d_h H + d = {H + inst['d']} < T_eps = {Te}")
    seqs = [tuple(t) for t in data.sequences]
    out = forward(b.model, seqs).outputs
    f = {tuple(t): l for t, l in zip(b.dataset.inputs, b.dataset.labels)}
    for t, z in zip(seqs, out):
        if t in f and [Fraction(x) for x in z] != [Fraction(x) for x in f[t]]:
            raise DataError(f"T*'s logits differ from f_eps on the likely sequence {t}")
    ds = b.dataset.__class__(seqs, [tuple(z) for z in out], "tokens", seed,
                             "all N^S sequences, labels T*'s exact logits")
    N, S, d = inst["N"], inst["S"], inst["d"]
    claims = _size_claims(N, S, d, 1, H, len(seqs), what="Theorem 3")
    info = dict(b.info)
    info.update({"T_eps": Te, "d_h H + d": H + d, "zero token": N - 1})
    return Built(b.model, ds, claims, error_bound=Fraction(0), info=info)


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
            Instance("N4-d2-dh2-eps1-4-base2-bound4", {"N": 4, "S": 2, "d": 2, "dh": 2, "eps": "1/4", "mode": "base2",
                                                       "bound4": True}, ("small", "medium")),
            Instance("N6-d4-dh2-eps1-2-base2-bound4", {"N": 6, "S": 2, "d": 4, "dh": 2, "eps": "1/2", "mode": "base2",
                                                       "bound4": True}, ("medium",)),
        ],
    ),
    Theorem(
        name="dana.proposition1",
        statement="Proposition 1 (rank-d bottleneck): T = d + H d_h dyadic distributions whose centred log-probability "
                  "matrix has rank d are memorized exactly by an AoT of embedding dimension d (logits = log2 pi(.|t) "
                  "+ const exactly), and adding one distribution of centred rank d + 1 (an exact nonzero minor) "
                  "defeats every Transformer of embedding dimension d: its logits W_U z(t) span at most d centred "
                  "directions, so d_KL(pi, T) > 0.",
        source=SOURCE + ", Proposition 1 (and Prop. 2's converse on the instance)",
        build=build_proposition1,
        instances=[Instance("N4-S2-d2-dh2-H2", {"N": 4, "S": 2, "d": 2, "dh": 2, "H": 2}, ("small", "medium")),
                   Instance("N8-S2-d4-dh4-H3", {"N": 8, "S": 2, "d": 4, "dh": 4, "H": 3}, ("medium", "large"))],
    ),
    Theorem(
        name="dana.theorem2",
        statement="Theorem 2 (upper bound for sequence encoders): the encoder E(t) = lambda(t) W_g(t) with lambda(t) "
                  "solving -H(pi_t) = log sum_j exp(lambda (W_j - W_g)^T W_g) (enclosed rigorously) has d_KL(pi, f) <= "
                  "E[(1 - pi_g)(1 + 2C + C d_TV)/(1 - 2C) log((N-1)/(e^{-H} - 1))] with C the measured coherence of W; "
                  "the AoT realising f (certified logits) satisfies the same bound rigorously.",
        source=SOURCE + ", Theorem 2 and App. A.3",
        build=build_theorem2,
        instances=[Instance("N3-S2-d3-identity", {"N": 3, "S": 2, "d": 3, "dh": 3}, ("small", "medium")),
                   Instance("N3-S2-d3-centred", {"N": 3, "S": 2, "d": 3, "dh": 3, "H": 3, "W": "centred"}, ("small", "medium")),
                   Instance("N5-S1-d5-jensen", {"d": 5, "dh": 1, "jensen": True}, ("small", "medium")),
                   Instance("N4-S2-d4-identity", {"N": 4, "S": 2, "d": 4, "dh": 4}, ("medium",))],
    ),
    Theorem(
        name="dana.theorem3",
        statement="Theorem 3 / Lemma 4 (pi with zeros): the explicit family f_delta satisfies eq. (15) with c = 1/4, "
                  "alpha = 1 and Lemma 4's range bound (rigorous, on a grid of delta), and the AoT T* realising f_eps "
                  "on the T_eps likely sequences has d_KL(pi, T*) <= eps + 2 C eps ||W E||_2 (C of eq. (14) enclosed).",
        source=SOURCE + ", Theorem 3, Lemma 4, Definition 2, App. A.4 eqs. (15)-(19)",
        build=build_theorem3,
        instances=[Instance("N3-S2-d3-eps1-4", {"N": 3, "S": 2, "d": 3, "eps": "1/4"}, ("small", "medium")),
                   Instance("N4-S2-d4-eps1-8", {"N": 4, "S": 2, "d": 4, "eps": "1/8"}, ("medium",))],
    ),
    Theorem(
        name="dana.theorem3.small_d",
        statement="Theorem 3 with d < N (every conditional has the same zero token, so d_KL(pi, M(N,S,d)) > 0): the AoT "
                  "T* of the proof (Theorem 1's construction realising f_eps of an explicit pi_0 in M on the T_eps "
                  "likely sequences, d_h H + d >= T_eps, d(S + 2N + 4 d_h H) parameters); its exact logits on all "
                  "N^S sequences, which the lower-bound certificate dana.theorem3.small_d uses for d_KL(pi, T*).",
        source=SOURCE + ", Theorem 3, App. A.4",
        build=build_theorem3_small_d,
        instances=[Instance("N5-S2-d2-eps1-4", {"instance": "N5-S2-d2", "eps": "1/4"}, ("small", "medium")),
                   Instance("N5-S2-d2-eps1-8", {"instance": "N5-S2-d2", "eps": "1/8"}, ("small", "medium"))],
    ),
]


# ------------------------------------------------------------------ the same checked facts as step tables

def run_prop1(p):
    return DB.prop1_report(p["N"], p["S"], p["d"], p["dh"], p["H"], p.get("seed", 0))[0]


def run_theorem3(p):
    data = DB.zero_conditionals(p["N"], p["S"], p.get("seed", 0), p.get("zeros", 1))
    return DB.theorem3_report(data, p["d"], [Fraction(1, 2 ** k) for k in (1, 2, 4, 8, 16, 32)])


def run_bound4(p):
    data = random_conditionals(p["N"], p["S"], p.get("seed", 0))
    eps = Fraction(p["eps"])
    b = DD.build_distribution(data, p["d"], p["dh"], eps, mode="base2", seed=p.get("seed", 0))
    return DD.theorem1_bound_report(data, b, eps)


LOWER_BOUNDS = [
    BoundTheorem("dana.proposition1.obstruction", "No Transformer of embedding dimension d memorizes the d + H d_h + 1 "
                 "dyadic distributions exactly: a nonzero centred (d+1)-minor.", SOURCE + ", Proposition 1",
                 run_prop1, [Instance("N4-S2-d2", {"N": 4, "S": 2, "d": 2, "dh": 2, "H": 2}, ("small", "medium")),
                             Instance("N8-S2-d4", {"N": 8, "S": 2, "d": 4, "dh": 4, "H": 3}, ("medium",))]),
    BoundTheorem("dana.theorem1.bound4", "Bound (4) with C of eq. (14) enclosed rigorously, on mode (a) exact "
                 "networks.", SOURCE + ", Theorem 1, eqs. (13)-(14)", run_bound4,
                 [Instance("N4-d2-dh2-eps1-4", {"N": 4, "S": 2, "d": 2, "dh": 2, "eps": "1/4"}, ("small", "medium")),
                  Instance("N6-d4-dh2-eps1-2", {"N": 6, "S": 2, "d": 4, "dh": 2, "eps": "1/2"}, ("medium",))]),
    BoundTheorem("dana.theorem2.bound", "Theorem 2's bound, its simplified form and the paper's C, decided exactly.",
                 SOURCE + ", Theorem 2", run_theorem2,
                 [Instance("N3-S2-d3", {"N": 3, "S": 2, "d": 3}, ("small", "medium")),
                  Instance("N5-S1-d5-jensen", {"d": 5, "jensen": True}, ("small", "medium"))]),
    BoundTheorem("dana.theorem2.small_d", "Theorem 2 with d < N − 1 (d_KL(π, L) > 0 proved on the instance): the "
                 "proof's encoder against the bound with the paper's C and with the explicit W's coherence, the bound "
                 "against the uniform encoder; every step kernel-checked (bounds run --certificate).",
                 SOURCE + ", Theorem 2 and App. A.3",
                 DC.theorem2_small_d_report,
                 [Instance("N6-d4", {"instance": "N6-d4"}, ("small", "medium")),
                  Instance("N869-d867", {"instance": "N869-d867"}, ("small", "medium")),
                  Instance("N1000-d900", {"instance": "N1000-d900"}, ("medium",))]),
    BoundTheorem("dana.theorem3.small_d", "Theorem 3 with d < N: d_KL(π, M) ≥ L > 0 (common zero token), an explicit "
                 "π₀ ∈ M (eq. (15), Lemma 4, (17)), and the proof's T* for ε = 1/4, 1/8 against (4), (18), (19) and "
                 "(16) with the proof's explicit O-term; kernel-checked (bounds run --certificate).",
                 SOURCE + ", Theorem 3, Definition 2, Lemma 4, App. A.4",
                 DC.theorem3_small_d_report,
                 [Instance("N5-S2-d2", {"instance": "N5-S2-d2"}, ("medium",))]),
    BoundTheorem("dana.theorem3.eq15", "Eq. (15), Lemma 4 and (17) for the explicit family f_delta.",
                 SOURCE + ", Theorem 3 / Lemma 4", run_theorem3,
                 [Instance("N3-S2-d3", {"N": 3, "S": 2, "d": 3}, ("small", "medium"))]),
]
