"""The fast engine of graph models (issue 39; exactmem/fastgraph): enclosures of every op against exact
values (Fractions, mpmath at 60 digits) on adversarial inputs, and agreement with the pure kernel —
random graphs, the planted graph mutants, a GPT-2-shaped graph with planted faults."""

import random
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from exactmem.certificate.fastcheck import check_certificate_fast
from exactmem.cli.check import answer
from exactmem.fastgraph import rounding as R
from exactmem.kernel.checker import check_certificate
from exactmem.kernel.limits import Budget, Limits
from exactmem.kernel.schema import MalformedCertificate, canonical_hash

sys.path.insert(0, str(Path(__file__).parent))
from graph_gpt2 import gpt2_float, gpt2_graph  # noqa: E402
from test_graph_fuzz import random_doc  # noqa: E402
from test_graph_kernel import doc  # noqa: E402

mpmath.mp.dps = 60
ADVERSARIAL = [0.0, 5e-324, -5e-324, 1e-310, 2.0 ** -1022, 1e-300, -1e-17, 1e-8, 0.1, 1 / 3, -0.5, 0.34657359,
               0.7, 1.0, -1.0, 2.5, -3.3, 5.99, 6.0, 6.01, 19.1, -19.1, 40.0, 100.0, -100.0, -689.9, -690.1, -744.0,
               -745.2, -1e5, 700.0, 709.0]


def _in(x, lo, hi):
    return mpmath.mpf(float(lo)) <= x <= mpmath.mpf(float(hi))


@pytest.mark.parametrize("name,f,ref", [
    ("exp", R.exp_point, mpmath.exp),
    ("erf", R.erf_point, mpmath.erf),
    ("tanh", lambda m: R.tanh_interval(m, m), mpmath.tanh),
    ("sigmoid", lambda m: R.sigmoid_interval(m, m), lambda x: 1 / (1 + mpmath.exp(-x))),
])
def test_point_functions_enclose_mpmath(name, f, ref):
    rng = np.random.default_rng(5)
    xs = np.array(ADVERSARIAL + list(rng.normal(0, 3, 300)) + list(rng.uniform(-700, 700, 100)))
    if name != "exp":
        xs = xs[np.abs(xs) < 1e4]
    lo, hi = f(xs)
    for x, a, b in zip(xs, lo, hi):
        v = ref(mpmath.mpf(float(x)))
        assert _in(v, a, b), (name, x, a, b, v)
        if name == "exp" and -600 < x < 700:
            assert (b - a) <= 1e-13 * float(v), (x, a, b)


def test_interval_functions_contain_every_point():
    """exp, tanh, σ, erf of intervals (the midpoint–radius forms) contain the values at the ends and inside."""
    rng = np.random.default_rng(7)
    m = rng.normal(0, 4, 400)
    w = np.abs(rng.normal(0, 1e-3, 400)) * (rng.random(400) < 0.7)
    lo, hi = m - w, m + w
    for f, ref in ((R.exp_interval, mpmath.exp), (R.tanh_interval, mpmath.tanh), (R.erf_interval, mpmath.erf),
                   (R.sigmoid_interval, lambda x: 1 / (1 + mpmath.exp(-x)))):
        a, b = f(lo, hi)
        for l, h, A, B in zip(lo, hi, a, b):
            for x in (l, h, (l + h) / 2):
                assert _in(ref(mpmath.mpf(float(x))), A, B), (f.__name__, x)


def test_rounding_steps_and_sums():
    """up/dn bound every real whose nearest float is y (Lemma U): checked on exact quotients, also
    subnormal and at powers of two; sums of every sign and size within sum_bounds."""
    rng = random.Random(3)
    for _ in range(3000):
        p, q = rng.randint(-10 ** 30, 10 ** 30), rng.randint(1, 10 ** 30)
        z = Fraction(p, q) * Fraction(2) ** rng.randint(-1100, 1000)
        y = float(z) if abs(z) < 2 ** 1023 else None
        if y is None:
            continue
        assert Fraction(float(R.dn(np.float64(y)))) <= z <= Fraction(float(R.up(np.float64(y))))
    for _ in range(200):
        n = rng.randint(1, 300)
        xs = np.array([rng.choice([1, -1]) * rng.random() * 10.0 ** rng.randint(-300, 300) for _ in range(n)])
        lo, hi = R.sum_bounds(xs, xs, 0)
        s = sum(map(Fraction, xs))
        assert Fraction(float(lo)) <= s <= Fraction(float(hi))


def test_matmul_bounds_contain_the_exact_product_with_cancellation():
    rng = np.random.default_rng(11)
    for trial in range(20):
        n, k, m = rng.integers(1, 6), rng.integers(1, 70), rng.integers(1, 6)
        A = rng.normal(0, 1, (n, k)) * 10.0 ** rng.integers(-200, 200)
        B = rng.normal(0, 1, (k, m)) * 10.0 ** rng.integers(-100, 100)
        B[:, 0] = A[0] * 10.0 ** -50 if k and m else B[:, 0]  # cancellation in one column
        Ar = np.abs(A) * 2.0 ** -40 * (trial % 2)
        Br = np.abs(B) * 2.0 ** -45 * (trial % 3 == 0)
        lo, hi = R.matmul_bounds(A, Ar if trial % 2 else None, B, Br if trial % 3 == 0 else None)
        for i in range(n):
            for j in range(m):
                for sa in (-1, 1):
                    exact = sum((Fraction(A[i, t]) + sa * Fraction(Ar[i, t])) * Fraction(B[t, j]) for t in range(k))
                    assert Fraction(float(lo[i, j])) <= exact <= Fraction(float(hi[i, j]))


def _gpt2_doc(tanh=True, outputs=None, labels=None, n_ex=6):
    g, ws = gpt2_graph(seed=0, tanh=tanh)
    rng = np.random.default_rng(1)
    ids = [rng.integers(0, 256, 16).tolist() for _ in range(n_ex)]
    logits = [gpt2_float(ws, x, tanh=tanh)[-1] for x in ids]
    labels = labels or [int(np.argmax(z)) for z in logits[:-2]] + [int(np.argmin(logits[-2])), int(np.argmax(logits[-1]))]
    outputs = outputs or ["pass"] * (n_ex - 2) + ["fail", "pass"]
    return doc(g, ids, labels, outputs, inp={"type": "tokens", "vocab": 256})


@pytest.mark.parametrize("tanh", [True, pytest.param(False, marks=pytest.mark.slow)])  # erf GELU: with -m slow
def test_gpt2_graph_fast_certifies_like_the_kernel_and_refutes_planted_faults(tanh):
    d = _gpt2_doc(tanh)
    stats = {}
    from exactmem.fastgraph.check import check_graph_examples
    from exactmem.kernel.checker import parse_certificate, precision_cap
    cert = parse_certificate(d, Budget())
    v = check_graph_examples(cert, 0, len(cert.inputs), precision_cap(cert, None, Limits()), Budget(), stats=stats)
    assert v.status == "CERTIFIED" and stats["fast"] == 6 and stats["pure"] == 0, (v.message, stats)
    assert check_certificate_fast(d).status == "CERTIFIED"
    # a claimed pass that fails, and a claimed fail that passes: refuted by the fast path, at that example
    bad = _gpt2_doc(tanh, outputs=["pass"] * 4 + ["pass", "pass"])
    v = check_certificate_fast(bad)
    assert v.status == "REFUTED" and v.witness["example"] == 4 and "fast engine" in v.message
    bad = _gpt2_doc(tanh, outputs=["pass", "fail", "pass", "pass", "fail", "pass"])
    v = check_certificate_fast(bad)
    assert v.status == "REFUTED" and v.witness["example"] == 1 and v.witness["claimed"] == "fail"
    # a nudged weight: the embedding row of example 0's last token scaled, the kernel's verdict agrees
    d2 = _gpt2_doc(tanh)
    tok = d2["dataset"]["inputs"][0][-1]
    lab = d2["dataset"]["labels"][0]
    w = d2["model"]["graph"]["constants"]["head"]
    w["values"] = [str(-Fraction(v) * 40) if i % 256 == lab else v for i, v in enumerate(w["values"])]
    d2["hash"] = canonical_hash(d2)
    assert tok >= 0
    vf = check_certificate_fast(d2)
    assert vf.status == "REFUTED", vf.message
    vp = check_certificate(d2)
    assert vp.status == "REFUTED" and vp.witness["example"] == vf.witness["example"]


def _code(run):
    return answer(run)[0]


def test_random_graphs_fast_and_pure_agree():
    """Random graph certificates of the fuzz generator: the fast engine answers exactly what the kernel
    answers (verdict class, and the malformed one-line errors) — it decides what it can and hands the
    rest to the kernel."""
    rng = random.Random(3939)
    seen = {}
    for i in range(400):
        d = random_doc(rng)
        lim = Limits(time_limit=5)
        cp, op, ep = answer(lambda: check_certificate(d, budget=Budget(lim)))
        cf, of, ef = answer(lambda: check_certificate_fast(d, budget=Budget(lim)))
        if cp == 2 and "time limit" in op or cf == 2 and "time limit" in of:
            continue
        assert cp == cf, (i, op, ep, of, ef)
        seen[cp] = seen.get(cp, 0) + 1
    assert len(seen) >= 3, seen


def test_graph_mutants_fast_equals_pure():
    """The planted graph mutants (tests/graph_mutants.py, every honest parent, a sample of each kind):
    the fast check gives the kernel's verdict class on every one (malformed ones: the same one line)."""
    import graph_mutants as gm
    n, refuted = 0, 0
    for name, d in gm.parents():
        assert check_certificate_fast(d).status == check_certificate(d).status, name
        for m in gm.generate(d, seed=1, per_kind=2, source=name):
            cp, op, ep = answer(lambda: check_certificate(m.doc))
            cf, of, ef = answer(lambda: check_certificate_fast(m.doc))
            assert cp == cf and ep == ef, (name, m.kind, m.description, op, of, ep, ef)
            n += 1
            refuted += cp == 1
    assert n > 100 and refuted > 20, (n, refuted)


def test_special_values_go_to_the_kernel():
    g = {"input": "x", "output": "y", "constants": {"m": {"shape": [1, 1, 2], "values": ["0", "-inf"]},
                                                      "e": {"shape": [4, 2], "values": ["1", "2", "3", "4", "5", "6", "7", "8"]}},
         "nodes": [{"op": "Gather", "inputs": ["e", "x"], "outputs": ["h"], "attrs": {}},
                   {"op": "Add", "inputs": ["h", "m"], "outputs": ["z"], "attrs": {}},
                   {"op": "Softmax", "inputs": ["z"], "outputs": ["y"], "attrs": {}}]}
    d = doc(g, [[1]], [0], ["pass"])
    assert check_certificate_fast(d).status == check_certificate(d).status == "CERTIFIED"
