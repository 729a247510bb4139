"""Kajitsuka & Sato Lemma B.2 as printed: the shift f = h + ⌊2N²|S|√π⌋ breaks the sequence ids.

``python -m exactmem certify proofs/kajitsuka_errata.py`` prints a REFUTED row *by design*
(``docs/errata.md``, note ``kajitsuka.md`` §4.3 / §9 item 2).

Data (d = 1, n = 3): X⁽⁰⁾ = (y, y, z) with label 0 and X⁽¹⁾ = (x, w, z) with label 1, tokens
x = 1, y = 2, z = 3, w = 4. The multisets differ and the labels are consistent (eq. (5)).
A = {x, y} is a Lemma B.1 witness set (|A| = 2 ≤ N; the restrictions {y, y} and {x} differ).
v = (0, −1) is a unit vector satisfying Park's inequality (151) for the two count vectors
(2 ≥ (1/4)·√(8/(2π))·√5 ≈ 0.63). The printed recipe gives h = ⌈N²|S|√π·v⌉ = (0, −14), whose
sums −28 and 0 are √|S|-separated as eq. (26) says — but after the shift c = ⌊2N²|S|√π⌋ = 28,
f = (28, 14), and both weighted counts are 28: the two sequences get the same sequence id,
their last tokens agree, so their context ids s₃ coincide and no F₂ can output both labels.
The network is built anyway (first label kept); the independent checker refutes example 1.
"""

from fractions import Fraction

from exactmem.certificate.writer import Claim
from exactmem.constructions import kajitsuka
from exactmem.data.kajitsuka_data import make_data
from exactmem.proof import Built, Instance, Theorem


def shift_data():
    x, y, z, w = ((Fraction(k),) for k in (1, 2, 3, 4))
    return make_data([(y, y, z), (x, w, z)], [0, 1], 2, name="Lemma B.2 shift counter-example")


def build_shift(params, seed):
    data = shift_data()
    tokens, _ = data.token_index()
    ids = {t[0]: j for j, t in enumerate(tokens)}
    A = [ids[1], ids[2]]  # S = A = {x, y}, in this order (g: x ↦ 1, y ↦ 2)
    f, c = kajitsuka.paper_shifted_weights((Fraction(0), Fraction(-1)), n_multisets=2)
    b = kajitsuka.build(data, seed=seed, witnesses=A, weights=dict(zip(A, f)), allow_collisions=True)
    b.info.update({"paper h + c": f, "shift c": c})
    return Built(b.model, data.to_dataset(), [Claim("n_examples", "==", 2, "two sequences")], info=b.info)


THEOREMS = [
    Theorem(
        name="kajitsuka_errata.b2_shift_as_printed",
        statement="Lemma B.2's shifted weights f = ceil(N^2|S|sqrt(pi) v) + floor(2N^2|S|sqrt(pi)) keep the "
                  "weighted counts of the restricted multisets distinct (expected: REFUTED).",
        source="Kajitsuka & Sato (ICLR 2025) Lemma B.2, eqs. (16)-(27), as used in Lemma B.3",
        build=build_shift,
        instances=[Instance("N2-n3-S2-v(0,-1)", {}, ("small", "medium", "large"))],
    ),
]
