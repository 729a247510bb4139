"""Issue 37 item 6: the fidelity corrections, each number recomputed (docs/errata.md, docs/dana.md,
docs/kajitsuka-paper.md, docs/experiments/kajitsuka-fig3.md)."""

import csv
import os
from collections import Counter
from fractions import Fraction as F

import pytest

from exactmem.arith import enclosure as E
from exactmem.constructions.vardi import memorizer as vardi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _doc(name):
    with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as fh:
        return " ".join(fh.read().split())


# ------------------------------------------------------------------ Dana Theorem 2, App. A.3

def test_a3_printed_combined_step_holds_on_the_instance():
    """The paper prints only term1 + term2 ≤ (1 − π_g)λ(1 + 2C + C·d_TV): 179/1300 ≤ 509/2600 per
    unit of λ; only a term-by-term split needs 2C·d_TV. The errata no longer say the proof fails."""
    from exactmem.constructions.dana.small_d import A3_EXAMPLE, a3_last_step

    r = a3_last_step(**A3_EXAMPLE)
    assert r["term1"] + r["term2"] == F(179, 1300) <= r["bound_printed"] == F(509, 2600)
    assert r["term2"] == F(49, 1300) == 2 * r["bound_term2_printed"]
    item = _doc("errata.md").split("11. **App. A.3")[1].split("12. **")[0]
    assert "179/1300·λ ≤ 509/2600·λ" in item and "never defines d_TV" in item
    assert "**Fails:** neither" in item


# ------------------------------------------------------------------ Dana Theorem 2: which log

@pytest.mark.parametrize("name, c2, rhs2", [("N869-d867", "0.6003", "-0.000937"), ("N1000-d900", "0.5953", "-0.0484")])
def test_theorem2_nonvacuous_instances_fail_as_printed_with_log2(name, c2, rhs2):
    """With ln (the certificates' reading) the bound holds; with log₂ in C, C > 1/2 and the printed
    right-hand side is negative (below d_KL ≥ 0) — the figures docs/errata.md item 7 quotes."""
    from exactmem.bounds.dana.certificates import theorem2_log2_reading

    r = theorem2_log2_reading(name)
    assert E.decimal(r["C2"].lo, 4) == E.decimal(r["C2"].hi, 4) == c2 and r["C2"].lo > F(1, 2)
    assert r["RHS_C2"].hi < 0 < r["KL"].lo and r["KL"].hi <= r["RHS_C"].lo  # fails with log₂, holds with ln
    digits = len(rhs2.replace("-0.", "").lstrip("0"))
    assert E.decimal(r["RHS_C2"].lo, digits) == E.decimal(r["RHS_C2"].hi, digits) == rhs2
    assert rhs2.replace("-", "−") in _doc("errata.md") and rhs2.replace("-", "−") in _doc("dana.md")


def test_theorem2_vacuous_range_with_ln_and_with_log2():
    """Vacuous (d_min ≥ N − 1) exactly for N ≤ 868 with ln and N ≤ 1330 with log₂; the log₂ d_min
    is ⌊128 log₂(N+1)⌋ + 1, recomputed here by bisection on 2^k ≤ (N+1)^128."""
    from exactmem.constructions.dana import bounds as DB

    for N in (868, 869, 1330, 1331, 2000):
        p = (N + 1) ** 128
        k = max(k for k in range(0, 2 * 128 * 12) if 2 ** k <= p)
        assert DB.theorem2_vacuity(N, base="2")["d_min"] == k + 1
    assert [DB.theorem2_vacuity(N, base="2")["vacuous"] for N in (2, 1330, 1331)] == [True, True, False]
    assert [DB.theorem2_vacuity(N)["vacuous"] for N in (2, 868, 869)] == [True, True, False]
    assert all(DB.theorem2_vacuity(N, base="2")["vacuous"] for N in range(2, 1331))
    assert "N ≤ 1330 (log = log₂)" in _doc("errata.md")


# ------------------------------------------------------------------ Kajitsuka & Sato eq. (110)

def test_eq110_depth_floor_decided():
    """eq110_depth's enclosure has one floor (it escalates the resolution), including an integer
    value (N = 16, log₂ N = 4 exact, C = 2^40 > R: max{log R, log C} = 40, so (110) = 6 + 24 + 240 + 4 = 274)."""
    for N in (2, 3, 5, 16, 18, 24, 30, 100, 1000):
        for q in (F(5), F(10 ** 6), F(123456789, 7)):
            for C in (2, 3, 67511):
                e = vardi.eq110_depth(N, C, E.PI * q)
                assert e.lo <= e.hi and E.floor_lower(e) == E.floor_lower(e.hi), (N, C, q)
    e = vardi.eq110_depth(16, 2 ** 40, E.PI * F(5))
    assert e.lo == e.hi == 274
    assert vardi.eq110_depth(30, 2, E.PI * F(5), base="e").lo > 0


def test_label_width_is_ours_not_the_papers():
    """Our labels are {0, …, C − 1}: ⌈log₂ C⌉ bits; the paper's [C] = {1, …, C} needs ⌈log₂(C + 1)⌉
    = LEN(C), one more at powers of two (documented, behaviour unchanged)."""
    for C in range(2, 70):
        assert vardi.label_width(C) == max(1, (C - 1).bit_length()) == len(bin(C - 1)) - 2
        assert C.bit_length() - vardi.label_width(C) == (1 if C & (C - 1) == 0 else 0)
    from exactmem.data.dataset import DataError

    assert vardi.prepare([[F(0)], [F(5)]], [0, 1], (), 2) is not None  # labels 0, 1 for C = 2
    with pytest.raises(DataError, match=r"label 2 is not an integer in \[0, 2\)"):
        vardi.prepare([[F(0)], [F(5)]], [0, 2], (), 2)  # the paper's label C = 2 is not ours
    assert "our completion" in _doc("errata.md") and "[C] = {1, …, C}" in _doc("errata.md")


# ------------------------------------------------------------------ Fig. 3 page

def test_fig3_fixed_N200_at_8_blocks_not_met_within_the_search():
    """At 8 blocks only 2, 2, 3 of the ten trials per seed ran to completion (the rest pruned), none
    met the float rule: 'not met within the search', not 'does not memorize'."""
    path = os.path.join(ROOT, "docs", "img", "experiments", "kajitsuka-fig3.csv")
    with open(path, encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if (r["map"], r["N"], r["blocks"]) == ("fixed", "200", "8")]
    assert Counter(r["seed"] for r in rows) == {"0": 10, "1": 10, "2": 10}
    done = Counter(r["seed"] for r in rows if r["state"] == "complete")
    assert [done[s] for s in "012"] == [2, 2, 3]
    assert not any(r["float_memorized"] == "True" for r in rows)
    page = _doc("experiments/kajitsuka-fig3.md") + _doc("experiments.md")
    assert "do not memorize N = 200" not in page and "not met within the search" in page
