"""Code-length claims confirmed in float64 (`exactmem.fastgraph.codelength`; docs/certificate.md § Code lengths
in float64): `confirms` never confirms a claim the kernel's own upper end exceeds, confirms claims a hair
above it, refuses non-finite bounds; through `check --engine fast`, a Morris certificate's claims are
confirmed by float64 and one claim lowered by a bit is still REFUTED by the kernel."""

from __future__ import annotations

import copy
import gzip
import json
import math
import random
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

np = pytest.importorskip("numpy")

from exactmem.fastgraph import codelength as fc  # noqa: E402
from exactmem.kernel import checker  # noqa: E402
from exactmem.kernel.checker import Undecided  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
S = 20  # test scores are multiples of 2^-20: exact floats and exact integer bounds over 2^S


def kernel_high(lo, hi, labels, F=160):
    """The kernel's own upper end of the code length (`checker._code_length` at F bits), found by
    asking it about claims: the least grain-aligned claim it confirms, with 2^-60 resolution."""
    cols = [([int(v * (1 << S)) for v in a], [int(v * (1 << S)) for v in b], None) for a, b in zip(lo, hi)]

    def judge(c):
        cert = SimpleNamespace(codelengths=[c], first=0)
        try:
            return checker._code_length(cert, 0, cols, S, labels, F, None)[0]
        except Undecided:
            return "undecided"
    exact = sum(math.log2(sum(math.exp(h - a[y]) for h in b)) for a, b, y in zip(lo, hi, labels))
    a, b = Fraction(exact) - Fraction(1, 1 << 20), Fraction(exact) + Fraction(1, 1 << 20)
    assert judge(b) == "pass"
    for _ in range(44):  # bisection to 2^-64: the kernel's high is within [a, b]
        m = (a + b) / 2
        a, b = (a, m) if judge(m) == "pass" else (m, b)
    return b


def random_rows(rng, T, K, spread):
    lo, hi, labels = [], [], []
    for _ in range(T):
        mid = [rng.randint(-spread << S, spread << S) / (1 << S) for _ in range(K)]
        w = [rng.randint(0, 64) / (1 << S) for _ in range(K)]
        lo.append([m - x for m, x in zip(mid, w)])
        hi.append([m + x for m, x in zip(mid, w)])
        labels.append(rng.randrange(K))
    return np.array(lo), np.array(hi), labels


@pytest.mark.parametrize("seed", range(12))
def test_never_confirms_a_claim_below_the_kernels_upper_end_and_confirms_one_just_above(seed):
    rng = random.Random(seed)
    T, K = rng.randint(1, 6), rng.randint(2, 40)
    lo, hi, labels = random_rows(rng, T, K, spread=rng.choice([1, 8, 40]))
    high = kernel_high(lo.tolist(), hi.tolist(), labels)
    assert fc.confirms(lo, hi, labels, high + Fraction(1, 1 << 36))
    for gap in (Fraction(1, 1 << 62), Fraction(1, 1 << 40), Fraction(1, 1 << 20), Fraction(1)):
        assert not fc.confirms(lo, hi, labels, high - gap)


def test_the_bounds_it_composes_are_upper_bounds():
    rng = random.Random(7)
    x = np.array([rng.random() * 10.0 ** rng.randint(-300, 300) for _ in range(1001)])
    assert Fraction(float(fc.sum_up(x))) >= sum(map(Fraction, x.tolist()))
    S_ = np.array([1.0 + rng.random() * 2.0 ** rng.randint(0, 40) for _ in range(64)])
    M, E = fc.product_bound(S_)
    exact = math.prod(map(Fraction, S_.tolist()))
    assert 0.5 <= M < 1 and Fraction(M) * 2 ** E >= exact and Fraction(M) * 2 ** E <= exact * (1 + Fraction(1, 1 << 40))


def test_each_rounded_step_is_bounded_where_rounding_to_nearest_goes_down():
    tiny = 2.0 ** -54  # fl(1 + 2^-54) = 1: a plain float sum loses it
    assert Fraction(float(fc.sum_up(np.array([1.0, tiny, 0.0])))) >= 1 + Fraction(tiny)
    a = 1.0 + 2.0 ** -52  # fl(a·a) = 1 + 2^-51 < a² = 1 + 2^-51 + 2^-104
    M, E = fc.product_bound(np.array([a, a, a]))
    assert Fraction(M) * 2 ** E >= Fraction(a) ** 3
    for k in range(1, 50):  # 2^(-k/7) from below, by exact powers: f^7 <= 2^-k
        f = fc.pow2_lower(Fraction(-k, 7))
        assert 0 < f and Fraction(f) ** 7 <= Fraction(1, 2 ** k) and Fraction(f) ** 7 > Fraction(1, 2 ** k) * (1 - Fraction(1, 1 << 40))
    assert fc.pow2_lower(Fraction(0)) <= 1.0


def test_non_finite_or_overflowing_bounds_confirm_nothing():
    lo, hi = np.zeros((2, 3)), np.zeros((2, 3))
    assert fc.confirms(lo, hi, [0, 1], Fraction(4))  # log2 3 per row
    for bad in (np.nan, np.inf, -np.inf, 800.0):
        h = hi.copy()
        h[1, 2] = bad
        assert not fc.confirms(lo, h, [0, 1], Fraction(10 ** 6))
    far = hi.copy()
    far[:, 1:] = -2000.0  # e^-2000: the terms are tiny, the code length just above 0
    assert fc.confirms(lo, far, [0, 0], Fraction(1, 1 << 20))
    assert not fc.confirms(lo, far, [0, 0], Fraction(0))


def _smallest_cited():
    mp = pytest.importorskip("exactmem.experiments.morris_page")
    js = json.loads((ROOT / mp.JSON_PATH).read_text(encoding="utf-8"))
    c = min(js["certificates"], key=lambda c: (ROOT / mp.CERT_DIR / c["file"]).stat().st_size)
    data = (ROOT / mp.CERT_DIR / c["file"]).read_bytes()
    return json.loads(gzip.decompress(data) if c["file"].endswith(".gz") else data)


def test_check_fast_confirms_a_morris_certificates_code_lengths_in_float64_and_still_refutes_a_lowered_one():
    from exactmem.certificate.fastcheck import check_certificate_fast
    from exactmem.kernel.schema import canonical_hash

    doc = _smallest_cited()
    v = check_certificate_fast(doc)
    assert v.status == "CERTIFIED", v.message
    assert ", 0 by the kernel's ladder" in v.message, v.message

    low = copy.deepcopy(doc)  # one example's claimed code length one bit lower: below its true value
    k = 3
    q = Fraction(low["outputs"][k]["codelength"]) - 1
    low["outputs"][k]["codelength"] = f"{q.numerator}/{q.denominator}"
    low["hash"] = canonical_hash(low)
    v = check_certificate_fast(low)
    assert v.status == "REFUTED" and v.witness["reason"] == "codelength" and v.witness["example"] == k, v.message
