"""Double-float midpoints of the fast graph engine (exactmem/fastgraph/dd.py, ddops.py): every enclosure
against exact values (Fractions; mpmath at 60 digits) on adversarial inputs, and the precise mode's
verdicts against the kernel's on the GPT-2 graph with planted faults (issue 39)."""

import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from exactmem.fastgraph import dd, ddops
from exactmem.fastgraph import check as fcheck
from exactmem.kernel.checker import check_certificate, parse_certificate, precision_cap
from exactmem.kernel.limits import Budget, Limits
from exactmem.kernel.schema import canonical_hash

sys.path.insert(0, str(Path(__file__).parent))
from test_fastgraph import _gpt2_doc  # noqa: E402

mpmath.mp.dps = 60
F = Fraction


def _ball(x: dd.DT, idx):
    m = F(float(x.m1[idx])) + (0 if x.m2 is None else F(float(np.broadcast_to(x.m2, x.m1.shape)[idx])))
    r = 0 if x.r is None else F(float(np.broadcast_to(x.r, x.m1.shape)[idx]))
    return m, r


def _inside(v, x: dd.DT, idx):
    m, r = _ball(x, idx)
    return abs(F(v) - m) <= r if not isinstance(v, mpmath.mpf) else abs(v - mpmath.mpf(m.numerator) / m.denominator) \
        <= mpmath.mpf(r.numerator) / r.denominator


def _floats(rng, n, spread=300):
    return rng.normal(0, 1, n) * 10.0 ** rng.integers(-spread, spread, n)


def test_error_free_transformations():
    """TwoSum always; TwoProduct above 2^-900 (below: 0 and a bound of |ab|)."""
    rng = np.random.default_rng(1)
    a, b = _floats(rng, 3000, 150), _floats(rng, 3000, 150)
    b[:200] = -a[:200] * (1 + 2.0 ** -40)  # cancellation
    a[200:300] = 2.0 ** -1074 * np.arange(100)
    s, e = dd.two_sum(a, b)
    p, pe, g = dd.two_prod(a, b)
    for i in range(len(a)):
        assert F(float(s[i])) + F(float(e[i])) == F(float(a[i])) + F(float(b[i]))
        exact = F(float(a[i])) * F(float(b[i]))
        assert abs(exact - F(float(p[i])) - F(float(pe[i]))) <= F(float(g[i])), i


def test_slices_are_exact_and_matmul_encloses_corner_products():
    rng = np.random.default_rng(2)
    for trial in range(12):
        n, k, m = rng.integers(1, 5), rng.integers(1, 140), rng.integers(1, 5)
        A1 = rng.normal(0, 1, (n, k)) * 10.0 ** rng.integers(-30, 30, (n, k)) * (trial % 3 == 0) + \
            rng.normal(0, 1, (n, k)) * (trial % 3 != 0)
        A1[0, 0] = 2.0 ** -500 if trial == 5 else A1[0, 0]  # a row below 2^-400 in part
        A2 = A1 * 2.0 ** -60 * rng.normal(0, 1, (n, k))
        Ar = np.abs(A1) * 2.0 ** -90 * (trial % 2)
        B1 = rng.normal(0, 0.02, (k, m)).astype(np.float32).astype(np.float64)
        B1[:, 0] = -A1[0] if m > 1 else B1[:, 0]
        S, R, e, big = dd.slices(A1, -1, dd.beta_bits(k), 5)
        assert not big.any()
        for i in range(n):
            for j in range(k):
                assert sum(F(float(v[i, j])) for v in S) + F(float(R[i, j])) == F(float(A1[i, j]))
        twoB = trial % 4 == 1
        B = dd.DT(B1, B1 * 2.0 ** -58 if twoB else None, np.abs(B1) * 2.0 ** -80 if twoB else None)
        A = dd.DT(A1, A2, Ar if trial % 2 else None, False)
        C, bigc = dd.matmul(A, B)
        assert not bigc.any()
        for i in range(n):
            for j in range(m):
                for sa in (-1, 1):
                    for sb in (-1, 1):
                        ex = sum((F(float(A1[i, t])) + F(float(A2[i, t])) + sa * F(float(Ar[i, t])) * (trial % 2)) *
                                 (F(float(B1[t, j])) + (F(float(B.m2[t, j])) + sb * F(float(B.r[t, j])) if twoB else 0))
                                 for t in range(k))
                        assert _inside(ex, C, (i, j)), (trial, i, j)
                m_, r_ = _ball(C, (i, j))
                scale = sum(abs(F(float(A1[i, t])) * F(float(B1[t, j]))) for t in range(k))
                if not trial % 2 and not twoB:
                    assert r_ <= scale * F(1, 2 ** 90) + F(1, 2 ** 900), (trial, float(r_), float(scale))


def test_quotients_roots_and_exp_enclose_mpmath():
    rng = np.random.default_rng(3)
    y = np.concatenate([rng.uniform(0.01, 100, 200), -rng.uniform(0.01, 100, 50), [1.0, 2.0 ** -300, 3.0]])
    Y = dd.DT(y, y * 2.0 ** -57, np.abs(y) * 2.0 ** -70, False)
    bad = np.zeros(len(y), dtype=bool)
    q = dd.recip(Y, bad)
    pos = y > 0
    bad2 = np.zeros(len(y), dtype=bool)
    s = dd.rsqrt(Y, bad2)
    assert not bad.any() and bad2[~pos].all() and not bad2[pos].any()
    for i in range(len(y)):
        for sg in (-1, 1):
            v = mpmath.mpf(float(y[i])) + mpmath.mpf(float(Y.m2[i])) + sg * mpmath.mpf(float(Y.r[i]))
            assert _inside(1 / v, q, i), i
            if pos[i]:
                assert _inside(1 / mpmath.sqrt(v), s, i), i
    x = np.concatenate([rng.uniform(-700, 709, 300), rng.normal(0, 3, 300), [0.0, -700.0, 709.0, 0.34657359,
                                                                               -0.34657359, 1 / 512, 88.7 / 256]])
    X = dd.DT(x, x * 2.0 ** -55, None, False)
    bad = np.zeros(len(x), dtype=bool)
    E = dd.exp_point(X, bad)
    assert not bad.any()
    for i in range(len(x)):
        v = mpmath.exp(mpmath.mpf(float(x[i])) + mpmath.mpf(float(X.m2[i])))
        assert _inside(v, E, i), x[i]
        m, r = _ball(E, i)
        assert x[i] < -600 or r <= m * F(1, 2 ** 95), (x[i], float(r / m))


def _bt(E):
    from types import SimpleNamespace

    bt = SimpleNamespace(E=E, bad=np.zeros(E, dtype=bool), dd_cache={}, ones={})
    bt.mark = lambda cond, b: bt.bad.__ior__(np.asarray(cond).reshape(E, -1).any(axis=1))
    return bt


@pytest.mark.parametrize("op", ["softmax", "layernorm", "tanh"])
def test_nonlinear_ops_contain_every_sampled_point(op):
    """Softmax (with masked entries), LayerNormalization and tanh of batched balls: the real function at
    the corners, the midpoints and random points of each box lies in the output ball."""
    rng = np.random.default_rng(4)
    E, n = 3, 8
    m = rng.normal(0, 3, (E, 2, n))
    if op == "softmax":
        m[:, 1, 5:] = -3.4e38  # masked
    r = np.abs(rng.normal(0, 1e-6, (E, 2, n))) * (rng.random((E, 2, n)) < 0.8)
    x = dd.DT(m, m * 2.0 ** -56, r, True)
    bt = _bt(E)
    if op == "softmax":
        out = ddops.d_softmax(bt, {"axis": -1}, x)
    elif op == "layernorm":
        g = dd.DT(rng.normal(1, 0.1, n))
        bb = dd.DT(rng.normal(0, 0.1, n))
        out = ddops.d_layernorm(bt, {"epsilon": Fraction(1, 10 ** 5)}, x, g, bb)
    else:
        out = ddops.d_tanh(bt, {}, x)
    assert not bt.bad.any()
    for e in range(E):
        for row in range(2):
            pts = [np.zeros(n), np.ones(n), -np.ones(n)] + [rng.uniform(-1, 1, n) for _ in range(3)]
            for p in pts:
                v = [mpmath.mpf(float(m[e, row, j])) + mpmath.mpf(float(x.m2[e, row, j])) +
                     mpmath.mpf(float(r[e, row, j])) * mpmath.mpf(float(p[j])) for j in range(n)]
                if op == "softmax":
                    c = max(v)
                    ex = [mpmath.exp(t - c) for t in v]
                    want = [t / sum(ex) for t in ex]
                elif op == "layernorm":
                    mu = sum(v) / n
                    var = sum((t - mu) ** 2 for t in v) / n
                    want = [(t - mu) / mpmath.sqrt(var + mpmath.mpf(1) / 10 ** 5) * float(g.m1[j]) + float(bb.m1[j])
                            for j, t in enumerate(v)]
                else:
                    want = [mpmath.tanh(t) for t in v]
                for j in range(n):
                    assert _inside(want[j], out, (e, row, j)), (op, e, row, j)


def _precise_only(monkeypatch):
    """The float64 pass decides nothing: every fast decision comes from double-float midpoints."""
    orig = fcheck._judge_part

    def judge(cert, plan, part, budget, stats, res, precise):
        return orig(cert, plan, part, budget, stats, res, precise) if precise else list(part)
    monkeypatch.setattr(fcheck, "_judge_part", judge)


@pytest.mark.parametrize("tanh", [True, pytest.param(False, marks=pytest.mark.slow)])  # erf GELU: with -m slow
def test_gpt2_precise_mode_certifies_and_refutes_planted_faults_like_the_kernel(tanh, monkeypatch):
    _precise_only(monkeypatch)
    from exactmem.certificate.fastcheck import check_certificate_fast

    d = _gpt2_doc(tanh)
    cert = parse_certificate(d, Budget())
    stats = {}
    v = fcheck.check_graph_examples(cert, 0, len(cert.inputs), precision_cap(cert, None, Limits()), Budget(),
                                    stats=stats)
    assert v.status == "CERTIFIED" and stats.get("precise") == 6 and stats["pure"] == 0, (v.message, stats)
    assert "6 by double-float enclosures" in v.message
    bad = _gpt2_doc(tanh, outputs=["pass"] * 4 + ["pass", "pass"])
    v = check_certificate_fast(bad)
    assert v.status == "REFUTED" and v.witness["example"] == 4
    bad = _gpt2_doc(tanh, outputs=["pass", "fail", "pass", "pass", "fail", "pass"])
    v = check_certificate_fast(bad)
    assert v.status == "REFUTED" and v.witness["example"] == 1 and v.witness["claimed"] == "fail"
    d2 = _gpt2_doc(tanh)
    lab = d2["dataset"]["labels"][0]
    w = d2["model"]["graph"]["constants"]["head"]
    w["values"] = [str(-Fraction(v) * 40) if i % 256 == lab else v for i, v in enumerate(w["values"])]
    d2["hash"] = canonical_hash(d2)
    vf = check_certificate_fast(d2)
    vp = check_certificate(d2)
    assert vf.status == vp.status == "REFUTED" and vp.witness["example"] == vf.witness["example"]


def test_precise_bounds_are_much_tighter_than_float64():
    """On the test GPT-2 the double-float logits are narrower than the float64 ones by a large factor."""
    from exactmem.fastgraph.engine import Plan
    from exactmem.fastgraph.evaluate import evaluate

    d = _gpt2_doc(True)
    cert = parse_certificate(d, Budget())
    plan = Plan(cert.graph)
    xs = [cert.inputs[e] for e in range(2)]
    lo, hi, bad = evaluate(plan, xs, True, cert.position, Budget())
    lo2, hi2, bad2 = evaluate(plan, xs, True, cert.position, Budget(), precise=True)
    assert not bad2.any()
    assert float((hi2 - lo2).max()) * 1e3 < float((hi - lo).max())


def test_passes_cheapest_first_and_a_pass_that_decides_little_is_skipped(monkeypatch):
    """`check.levels`: float64, double-float up to just after the first matrix product, through half the
    nodes, throughout; every pass encloses the same scores (their bounds overlap); `through_levels` skips, for
    later batches, a pass (not the last) that decided under 10 % of a batch, and never the last one."""
    from exactmem.fastgraph.engine import Plan
    from exactmem.fastgraph.evaluate import evaluate

    cert = parse_certificate(_gpt2_doc(True), Budget())
    plan = Plan(cert.graph)
    n = len(cert.graph.nodes)
    first = next(i for i, node in enumerate(cert.graph.nodes) if node[0] in ("MatMul", "Gemm")) + 1
    assert fcheck.levels(plan) == (0, first, n // 2, n) and 0 < first < n // 2
    xs = [cert.inputs[0]]
    got = [evaluate(plan, xs, True, cert.position, Budget(), precise=lv > 0, until=lv) for lv in fcheck.levels(plan)]
    for lo, hi, bad in got:
        assert not bad.any() and np.all(lo <= hi)
        for lo2, hi2, _ in got:
            assert np.all(np.maximum(lo, lo2) <= np.minimum(hi, hi2))  # one real value inside every enclosure
    width = [float((hi - lo).max()) for lo, hi, _ in got]
    assert width[-1] < width[1] < width[0]  # double-float earlier in the graph: narrower scores
    calls = []

    def attempt(level, todo):  # float64 decides nothing, the first-product pass everything
        calls.append(level)
        return list(todo) if level in (0, n) else []
    assert fcheck.through_levels(plan, list(range(10)), attempt) == [] and calls == [0, first]
    assert plan.skip == {0}
    calls.clear()
    assert fcheck.through_levels(plan, list(range(10)), lambda lv, t: calls.append(lv) or list(t)) == list(range(10))
    assert calls == [first, n // 2, n] and plan.skip == {0, first, n // 2}  # the last pass is never skipped
    monkeypatch.setattr(fcheck, "PRECISE", False)
    assert fcheck.levels(plan) == (0,)
