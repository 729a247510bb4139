"""Dana, Pydi & Chevaleyre: Proposition 1, Theorem 1's constant C (rigorous), Theorem 2 and
Theorem 3 / Lemma 4 (``exactmem/constructions/dana/bounds.py``, ``dana_distribution.py``).

Each result is certified on a small instance, a planted wrong step is refuted, and the numbers
are checked against an independent recomputation (mpmath at 60 digits, plain Fractions)."""

import copy
from fractions import Fraction

import mpmath
import pytest

from exactmem.kernel.checker import canonical_hash, check_certificate
from exactmem.certificate.writer import build_certificate
from exactmem.constructions.dana import bounds as DB
from exactmem.constructions.dana import distribution as DD
from exactmem.data.dana_data import likely_order, random_conditionals, t_epsilon
from exactmem.data.dataset import DataError
from exactmem.model import forward
from exactmem.proofs import dana as P

mpmath.mp.dps = 60


def _cert(built):
    out = forward(built.model, built.dataset.inputs).outputs
    doc = build_certificate("dana.theory", "t", 0, built.model, built.dataset, out, built.claims,
                            error_bound=built.error_bound)
    return doc, check_certificate(doc)


def _rehash(doc):
    doc["hash"] = canonical_hash(doc)
    return doc


def _rank(rows):
    """Independent exact rank (plain Fraction elimination)."""
    M = [[Fraction(x) for x in r] for r in rows]
    r = 0
    for c in range(len(M[0]) if M else 0):
        p = next((i for i in range(r, len(M)) if M[i][c]), None)
        if p is None:
            continue
        M[r], M[p] = M[p], M[r]
        for i in range(len(M)):
            if i != r and M[i][c]:
                f = M[i][c] / M[r][c]
                M[i] = [a - f * b for a, b in zip(M[i], M[r])]
        r += 1
    return r


def _kl_mp(data, logits):
    tot = mpmath.mpf(0)
    for w, c, T in zip(data.prior, data.conditionals, logits):
        lse = mpmath.log(sum(mpmath.exp(mpmath.mpf(x.numerator) / x.denominator) for x in map(Fraction, T)))
        for p, x in zip(c, T):
            if p:
                x = Fraction(x)
                pm = mpmath.mpf(p.numerator) / p.denominator
                tot += mpmath.mpf(w.numerator) / w.denominator * pm * (mpmath.log(pm) - mpmath.mpf(x.numerator)
                                                                       / x.denominator + lse)
    return tot


# ---------------------------------------------------------------- Proposition 1

def test_prop1_obstruction_and_positive_side_certified():
    b = P.build_proposition1({"N": 4, "S": 2, "d": 2, "dh": 2, "H": 2}, 0)
    doc, v = _cert(b)
    assert v.status == "CERTIFIED" and v.message.endswith("(exact)")
    fam = DB.prop1_family(4, 2, 2, 6, seed=0)
    out = forward(b.model, b.dataset.inputs).outputs
    assert out == [[Fraction(x) for x in k] for k in fam["K"][:6]]  # logits = exponents k_t exactly
    data = DB.dyadic_data(4, 2, fam["sequences"][:6], fam["K"][:6])
    for o, c in zip(out, data.conditionals):  # base-2 softmax of the logits is π(·|t) exactly
        w = [Fraction(2) ** int(x - min(o)) for x in o]
        assert tuple(x / sum(w) for x in w) == c
    cen = [DB.centred(k) for k in fam["K"]]
    assert _rank(cen[:6]) == 2 and _rank(cen) == 3  # independent recomputation of both ranks


def test_prop1_planted_wrong_minors_refuted():
    fam = DB.prop1_family(4, 2, 2, 6, seed=0)
    K = fam["K"]
    rows, cols, det = DB.prop1_obstruction(K, 2)
    assert DB.verify_prop1_obstruction(K, 2, rows, cols, det)
    assert not DB.verify_prop1_obstruction(K, 2, rows, cols, det + 1)  # wrong determinant
    assert not DB.verify_prop1_obstruction(K, 2, [0, 1, 2], cols, det)  # rows of the rank-2 part: det 0
    assert not DB.verify_prop1_obstruction(K, 2, rows, cols[:2] + cols[:1], det)  # repeated token
    with pytest.raises(DataError, match="no obstruction"):
        DB.prop1_obstruction(K[:6], 2)  # the realisable part alone has no obstruction


def test_prop1_flipped_label_refuted():
    b = P.build_proposition1({"N": 4, "S": 2, "d": 2, "dh": 2, "H": 2}, 0)
    doc, _ = _cert(b)
    bad = copy.deepcopy(doc)
    bad["dataset"]["labels"][0][0] = str(Fraction(bad["dataset"]["labels"][0][0]) + 1)
    assert check_certificate(_rehash(bad)).status == "REFUTED"


# ---------------------------------------------------------------- Theorem 1: C of eq. (14) enclosed

def _bound4_build():
    data = random_conditionals(4, 2, 0)
    eps = Fraction(1, 4)
    return data, eps, DD.build_distribution(data, 2, 2, eps, mode="base2", seed=0)


def test_C_enclosure_rigorous_and_matches_independent_svd():
    import numpy as np

    data, eps, b = _bound4_build()
    Te = t_epsilon(data, eps)
    seqs = [data.sequences[i] for i in likely_order(data)]
    F = DD.feature_columns_exact(b.design, seqs)
    K = DD.eq14_K_exact(F, Te)
    consts = DD.theorem1_constants(K)
    lo, hi = consts["norm_K"]
    G = DD._gram(K)
    assert DD.certify_lambda_max_below(G, hi ** 2 + Fraction(1, 2 ** 100))
    assert not DD.certify_lambda_max_below(G, lo ** 2 * Fraction(99, 100))  # a planted, too small C is refuted
    # independent: K from F₁⁻¹F₂ by plain Fractions; ‖K‖₂ by a float SVD of the exact matrix (a cross-check)
    Kf = np.array([[float(x) for x in r] for r in K])
    s = np.linalg.svd(Kf, compute_uv=False)[0]
    assert float(lo) <= s * (1 + 1e-9) and s <= float(hi) * (1 + 1e-9)
    Fm = np.array([[float(x) for x in c] for c in F]).T
    Vt = np.linalg.svd(Fm, full_matrices=True)[2]
    r = Fm.shape[0]
    c14 = np.sqrt(1 + np.linalg.norm(np.linalg.inv(Vt[:r, :Te]) @ Vt[:r, Te:], 2) ** 2)  # eq. (14) as printed
    sk = np.sqrt(1 + np.linalg.norm(np.linalg.inv(Vt[:r, :Te]), 2) ** 2)  # the sketch's version
    assert float(consts["C_eq14"][0]) <= c14 * (1 + 1e-9) and c14 <= float(consts["C_eq14"][1]) * (1 + 1e-9)
    assert float(consts["C_sketch"][0]) <= sk * (1 + 1e-9) and sk <= float(consts["C_sketch"][1]) * (1 + 1e-9)


def test_bound4_decided_and_planted_C_refuted():
    data, eps, b = _bound4_build()
    rep = DD.theorem1_bound_report(data, b, eps)
    assert rep.ok and [s.status for s in rep.steps] == ["holds"] * 4  # (4), (13), the gap, (4) with L
    delta = rep.results["d_KL(pi, T) - d_KL(pi, f)"]
    out = forward(b.model, [tuple(t) for t in data.sequences]).outputs
    kl_mp = _kl_mp(data, out)  # independent KL of the network, mpmath
    mp = lambda q: mpmath.mpf(q.numerator) / q.denominator  # noqa: E731
    assert mp(rep.results["d_KL(pi, T)"].lo) <= kl_mp <= mp(rep.results["d_KL(pi, T)"].hi) * (1 + 1e-12)
    # a wrong C (a hundred times too small) makes the printed inequality fail on this instance
    from exactmem.arith.steps import check
    from exactmem.arith.enclosure import Interval

    C, we = rep.results["C_eq14"], rep.results["||W E||_2"]
    wrong = Interval(C.lo * eps * we.lo / 100, C.hi * eps * we.hi / 100)
    assert check("(4)", "planted", delta, "<=", wrong).status == "fails"


# ---------------------------------------------------------------- Theorem 2

def test_theorem2_lambda_solves_the_equation_independently():
    data = random_conditionals(3, 2, 0, peaked=20)
    W = DB.unembedding(3, 3, "centred")
    enc = DB.theorem2_encoder(data, W)
    for c, g, (lo, hi) in zip(data.conditionals, enc["g"], enc["lambda"]):
        h = -sum(mpmath.mpf(p.numerator) / p.denominator * mpmath.log(mpmath.mpf(p.numerator) / p.denominator)
                 for p in c if p)
        a = [float(sum((x - y) * z for x, y, z in zip(Wj, W[g], W[g]))) for Wj in W]
        phi = lambda lam: mpmath.log(sum(mpmath.exp(lam * x) for x in a)) - h  # noqa: E731
        assert phi(mpmath.mpf(lo.numerator) / lo.denominator) > 0 > phi(mpmath.mpf(hi.numerator) / hi.denominator)
        assert hi - lo <= Fraction(1, 2 ** 64)


def test_theorem2_certified_and_errata_steps():
    b = P.build_theorem2({"d": 5, "dh": 1, "jensen": True}, 0)
    assert _cert(b)[1].status == "CERTIFIED"
    data = P.theorem2_data({"jensen": True}, 0)
    rep, enc = DB.theorem2_report(data, DB.unembedding(5, 5))
    st = {s.eq: s.status for s in rep.steps}
    assert rep.steps[0].status == "holds" and st["Thm 2 (simplified)"] == "fails"  # the Jensen step
    assert st["Thm 2 (as printed)"] == "fails"  # negative right-hand side with C = √(32 log 6 / 5) > 1/2
    # independent: the encoder's KL at λ̃ (mpmath) is within the slack of the exact-λ enclosure
    kl = _kl_mp(data, DD.encoder_logits(enc["W"], enc["E"]))
    lo, hi = DB.theorem2_kl_exact_lambda(data, enc)
    assert abs(kl - (float(lo) + float(hi)) / 2) < 1e-15


def test_theorem2_vacuity_threshold():
    assert DB.theorem2_vacuity(3)["d_min"] == 178 and DB.theorem2_vacuity(3)["vacuous"]
    assert not DB.theorem2_vacuity(1000)["vacuous"]  # 128 ln 1001 ≈ 884.3 < 999
    assert int(128 * mpmath.log(1001)) + 1 == DB.theorem2_vacuity(1000)["d_min"]


# ---------------------------------------------------------------- Theorem 3 / Lemma 4

def test_theorem3_family_eq15_and_network_certified():
    b = P.build_theorem3({"N": 3, "S": 2, "d": 3, "eps": "1/4"}, 0)
    doc, v = _cert(b)
    assert v.status == "CERTIFIED"
    bad = copy.deepcopy(doc)  # a nudged readout weight
    W = bad["model"]["layers"][-1]["W"]
    W[0][0] = str(Fraction(W[0][0]) + Fraction(1, 2 ** 30))
    assert check_certificate(_rehash(bad)).status == "REFUTED"


def test_theorem3_planted_short_M_violates_eq15():
    data = DB.zero_conditionals(3, 2, 0)
    delta = Fraction(1, 16)
    W, E, M = DB.theorem3_encoder(data, 3, delta)
    lo, hi = DB.eq15_enclosures(data, DD.encoder_logits(W, E))
    assert delta / 4 <= lo and hi <= delta
    E_bad = [[x + 3 if x == -M else x for x in e] for e in E]  # zeros not pushed far enough
    assert DB.eq15_enclosures(data, DD.encoder_logits(W, E_bad))[1] > delta
    # independent: |log(π_j / softmax_j)| = log(1 + n₀ e^{−M}) up to the 2^-60 logs
    n0 = 1
    ref = mpmath.log(1 + n0 * mpmath.exp(-mpmath.mpf(M.numerator) / M.denominator))
    mp = lambda q: mpmath.mpf(q.numerator) / q.denominator  # noqa: E731
    assert abs(ref - mp(delta) / 2) < 2 ** -40 and mp(lo) <= ref <= mp(hi)


def test_C_enclosure_mode_b_from_balls():
    """Mode (b): K = F₁⁻¹F₂ from Arb balls of the transcendental F; the enclosure contains the float value."""
    import numpy as np

    data = random_conditionals(4, 2, 0)
    eps = Fraction(1, 4)
    b = DD.build_distribution(data, 2, 2, eps, mode="rational", seed=0)
    seqs = [data.sequences[i] for i in likely_order(data)]
    K, rad = DD.eq14_K_ball(b.design, seqs, t_epsilon(data, eps))
    assert 0 < rad < Fraction(1, 2 ** 100)
    lo, hi = DD.theorem1_constants(K, rad)["C_eq14"]
    s = np.linalg.svd(np.array([[float(x) for x in r] for r in K]), compute_uv=False)[0]
    c = np.sqrt(1 + s * s)
    assert float(lo) <= c * (1 + 1e-9) and c <= float(hi) * (1 + 1e-9) and hi - lo < Fraction(1, 2 ** 20)


# ---------------------------------------------------------------- Theorem 1: the encoder's optimality gap (d = N − 2)

def test_theorem1_encoder_near_optimal_with_rigorous_lower_bound():
    from exactmem.constructions.dana import optimum as O

    data = random_conditionals(4, 2, 0)
    W, E = O.optimized_encoder(data, 2, 0, targets=DD.log_prob_targets(data))
    U = DD.kl_enclosure_from_logits(data, DD.encoder_logits(W, E))
    lb = O.lower_bound_codim1(data, budget=300)
    assert 0 < lb["lower"] <= U[0] and U[1] - lb["lower"] < Fraction(1, 10 ** 4)  # gap < 10^-4 (U ≈ 0.019688)
    # independent: the Gibbs lower bound at one normal is ≤ the KL of the encoder whose centred span it annihilates
    import numpy as np

    Wf = np.array([[float(x) for x in r] for r in W])
    V = (np.eye(4) - 0.25) @ Wf
    n = np.linalg.svd(np.vstack([V.T, np.ones(4)]))[2][-1]
    assert abs(n @ V).max() < 1e-9


# ---------------------------------------------------------------- Theorem 2 with d < N − 1 (kernel-checked)

def test_theorem2_small_d_certified_and_classes_exact():
    from exactmem.bounds.dana import certificates as DC
    from exactmem.constructions.dana import small_d as SD

    W, q = SD.instance("N6-d4")
    conds = SD.conditionals(W, q["etas"])
    assert all(sum(c) == 1 for c in conds)
    classes = SD.theorem2_classes(W, q["etas"])
    assert sum(c["count"] for c in classes) == 6 and SD.coherence(W) == Fraction(2, 5)
    # independent: d_KL(π, f_λ̃) from the full N × N logits (Arb) equals the class-wise sum
    ch = DC.theorem2_small_d_chain("N6-d4")
    env = DC.chain_values(ch)
    Wd = [[W[j].get(i, Fraction(0)) for i in range(4)] for j in range(6)]
    lam = {}
    for cl in classes:
        lam[(cl["pi_g"], cl["norm_g"], tuple(cl["terms"]))] = SD.lambda_bracket(cl)[0]
    logits = []
    for t in range(6):
        key = next(k for k in lam if k[0] == conds[t][t] and k[1] == sum(x * x for x in Wd[t])
                   and sorted(k[2]) == sorted(_terms(Wd, conds, t)))
        logits.append([lam[key] * sum(a * b for a, b in zip(Wd[j], Wd[t])) for j in range(6)])
    from exactmem.data.dana_data import Conditionals

    data = Conditionals(6, 1, [(t,) for t in range(6)], [Fraction(1, 6)] * 6, conds)
    lo, hi = DD.kl_enclosure_from_logits(data, logits)
    kl = DC.interval(env["KL"])
    assert lo <= kl.hi and kl.lo <= hi
    doc = ch.document()
    v = check_certificate(doc)
    assert v.status == "CERTIFIED"
    assert any("negative" in s["claim"] and s["rel"] == "<" for s in doc["steps"])  # erratum 7 with d_KL(π, L) > 0
    bad = copy.deepcopy(doc)  # a planted smaller coherence: the λ bound with 1 − 2c fails or the KL step fails
    bad["definitions"] = [dict(x, expr="1/1000") if x["name"] == "c" else x for x in bad["definitions"]]
    assert check_certificate(_rehash(bad)).status == "REFUTED"


def _terms(Wd, conds, t):
    ng = sum(x * x for x in Wd[t])
    cnt = {}
    for j in range(len(Wd)):
        if j != t:
            k = (sum(a * b for a, b in zip(Wd[j], Wd[t])) - ng, conds[t][j])
            cnt[k] = cnt.get(k, 0) + 1
    return [(a, p, m) for (a, p), m in cnt.items()]


@pytest.mark.parametrize("name", ["N869-d867", "N1000-d900"])
def test_theorem2_nonvacuous_instances_kernel_checked(name):
    from exactmem.bounds.dana import certificates as DC

    ch = DC.theorem2_small_d_chain(name)
    doc = ch.document()
    assert check_certificate(doc).status == "CERTIFIED"
    rels = {s["eq"]: s["rel"] for s in doc["steps"]}
    assert rels["Thm 2 (as printed)"] == "<=" and rels["Thm 2 (informative?)"] == "<"  # holds and says something
    assert rels["Thm 2 / Prop. 2"] == "<"  # not vacuous: d_min < N − 1


# ---------------------------------------------------------------- Theorem 3 with d < N (kernel-checked)

def test_theorem3_small_d_kernel_checked_and_planted_L_refuted():
    """d_KL(π, M) ≥ L > 0 with a common zero token; π₀ ∈ M; T* against (4), (18), (19), (16)."""
    from exactmem.bounds.dana import certificates as DC
    from exactmem.constructions.dana import zero_token as Z

    ch = DC.theorem3_small_d_chain("N5-S2-d2")
    doc = ch.document()
    assert check_certificate(doc).status == "CERTIFIED"
    rels = {(s["eq"], s["claim"].split(":")[0]): s["rel"] for s in doc["steps"]}
    assert rels[("Lemma 1", "L > 0")] == ">"
    assert rels[("(16) informative?", "ε = 1/4")] == ">="  # the proof's O-term exceeds the uniform encoder's KL
    env = DC.chain_values(ch)
    L, K0 = DC.interval(env["L"]), DC.interval(env["KL0"])
    assert 0 < L.lo and K0.hi - L.hi < Fraction(1, 10 ** 4)  # d_KL(π, M) known to 1e-4
    # independent: d_KL(π, π₀) from the restricted data and the encoder's logits (dana_distribution's Arb code)
    inst = Z.build_instance("N5-S2-d2", lower_budget=0)
    lo, hi = DD.kl_enclosure_from_logits(inst["rest"], inst["fp"])
    assert lo <= K0.hi and K0.lo <= hi
    assert all(c[-1] == 0 for c in inst["data"].conditionals) and min(inst["a"]) > 0
    bad = copy.deepcopy(doc)  # a planted L above d_KL(π, π₀): the gap step fails
    bad["definitions"] = [dict(x, expr="1/50") if x["name"] == "L" else x for x in bad["definitions"]]
    assert check_certificate(_rehash(bad)).status == "REFUTED"


def test_a3_last_step_term2_needs_2C_dTV_but_the_total_holds():
    """App. A.3: the proof's term2 reaches 2·C·d_TV (d_TV = ½‖·‖₁), above the printed C·d_TV; the
    sum stays below (1 − π_g)(1 + 2C), so the printed inequality holds (exact, per unit of λ)."""
    from exactmem.constructions.dana.small_d import A3_EXAMPLE, a3_last_step

    r = a3_last_step(**A3_EXAMPLE)
    assert r["C"] == Fraction(5, 13) and r["d_TV"] == Fraction(49, 100)
    assert r["term2"] == r["bound_term2_proof"] > r["bound_term2_printed"]
    assert r["term1"] + r["term2"] == r["total"] <= r["bound_direct"] <= r["bound_printed"]
