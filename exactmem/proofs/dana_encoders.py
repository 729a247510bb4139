"""Dana, Pydi & Chevaleyre (AISTATS 2025): Propositions 2 and 3 and Corollary 2, checked on instances.

Run with ``python -m exactmem bounds run proofs/dana_encoders.py [--size small|medium]`` (like the
lower bounds, these statements are about *every* sequence encoder, so they are checked step by
step, not certified on one network). ``exactmem/bounds/dana/encoders.py`` has the steps;
``docs/dana.md`` § *Propositions 2 and 3, Corollary 2* explains them.
"""

from exactmem.bounds.dana.encoders import DANA, corollary2_report, proposition2_report, proposition3_report
from exactmem.bounds.protocol import BoundTheorem
from exactmem.proof import Instance


def run_prop2(p):
    return proposition2_report(p["N"], p["S"], p["d"], p.get("seed", 0))


def run_prop3(p):
    return proposition3_report(p["N"], p["S"], p["d"], p.get("seed", 0))


def run_cor2(p):
    return corollary2_report(p["N"], p["S"], p["d"], p["dh"], p["H"], p.get("seed", 0))


LOWER_BOUNDS = [
    BoundTheorem(
        name="dana.proposition2",
        statement="d ≥ N − 1: d_KL(π, L(N,S,d)) = 0 for every π (an exact encoder spans the centred logits); "
                  "d < N − 1: a full-support π whose centred log-probabilities have rank > d has d_KL > 0.",
        source=DANA + ", Proposition 2 (no proof printed; note dana.md open question 7)",
        run=run_prop2,
        instances=[
            Instance("N3-S2-d2", {"N": 3, "S": 2, "d": 2}, ("small", "medium")),
            Instance("N4-S2-d5", {"N": 4, "S": 2, "d": 5}, ("small", "medium")),
            Instance("N5-S2-d2-converse", {"N": 5, "S": 2, "d": 2}, ("small", "medium")),
            Instance("N6-S2-d4-converse", {"N": 6, "S": 2, "d": 4}, ("small", "medium")),
            Instance("N20-S2-d10-converse", {"N": 20, "S": 2, "d": 10}, ("medium",)),
        ],
    ),
    BoundTheorem(
        name="dana.proposition3",
        statement="Under Assumption 1 (a look-up table) and d ≥ 2, d_KL(π, L(N,S,d)) = 0: the circle target "
                  "λ W W_g has d_KL ≤ (N − 1) e^{−λ m} with an exact margin m > 0.",
        source=DANA + ", Proposition 3 and its proof (App. A.5)",
        run=run_prop3,
        instances=[
            Instance("N5-S2-d2", {"N": 5, "S": 2, "d": 2}, ("small", "medium")),
            Instance("N10-S2-d3", {"N": 10, "S": 2, "d": 3}, ("small", "medium")),
            Instance("N50-S2-d2", {"N": 50, "S": 2, "d": 2}, ("medium",)),
        ],
    ),
    BoundTheorem(
        name="dana.corollary2",
        statement="Uniform prior, Assumption 1: Corollary 1's AoT (X = H·d_h + d associations memorized, exact) "
                  "has expected accuracy ≥ 1/N + (1 − 1/N) X/T0 over the labels it was not built from; on a "
                  "worst-case table the same network scores X/T0.",
        source=DANA + ", Corollary 2 (note dana.md open question 6)",
        run=run_cor2,
        instances=[
            Instance("N4-S2-d2-dh2-H2", {"N": 4, "S": 2, "d": 2, "dh": 2, "H": 2}, ("small", "medium")),
            Instance("N5-S2-d3-dh2-H3", {"N": 5, "S": 2, "d": 3, "dh": 2, "H": 3}, ("small", "medium")),
            Instance("N8-S2-d4-dh4-H6", {"N": 8, "S": 2, "d": 4, "dh": 4, "H": 6}, ("medium",)),
        ],
    ),
]
