"""Kajitsuka & Sato Lemma B.2: the proof's recipe fails; the lemma's statement holds on the same instance.

The recipe is the shift f = h + ⌊2N²|S|√π⌋.

``python -m exactmem certify proofs/kajitsuka_errata.py`` prints two rows (``docs/errata.md``,
note ``kajitsuka.md`` §4.3 / §9 item 2): ``b2_proof_recipe_as_printed`` REFUTED *by design* and
``b2_statement_holds`` CERTIFIED, its instance name carrying the valid f the tool found.

Data (d = 1, n = 3): X⁽⁰⁾ = (y, y, z) with label 0 and X⁽¹⁾ = (x, w, z) with label 1, tokens
x = 1, y = 2, z = 3, w = 4. The multisets differ and the labels are consistent (eq. (5)).
A = {x, y} is a Lemma B.1 witness set (|A| = 2 ≤ N; the restrictions {y, y} and {x} differ).
v = (0, −1) is a unit vector satisfying Park's inequality (151) for the two count vectors
(2 ≥ (1/4)·√(8/(2π))·√5 ≈ 0.63). The printed recipe gives h = ⌈N²|S|√π·v⌉ = (0, −14), whose
sums −28 and 0 are √|S|-separated as eq. (26) says — but after the shift c = ⌊2N²|S|√π⌋ = 28,
f = (28, 14), and both weighted counts are 28: the two sequences get the same sequence id,
their last tokens agree, so their context ids s₃ coincide and no F₂ can output both labels.
The network is built anyway (first label kept); the independent checker refutes example 1.

The statement of Lemma B.2 (some f: S → [⌈4N²|S|√π⌉] with (4MN²|S|√π, √|S|)-separated sums)
holds on the same restricted multisets: `b2_witness` finds one by exact search
(``kajitsuka.lemma_b2_witness``), and the network built with it is certified.
"""

from collections import Counter
from fractions import Fraction
from typing import List, Tuple

from exactmem.certificate.writer import Claim
from exactmem.constructions.kajitsuka import compact as kajitsuka
from exactmem.data.kajitsuka_data import make_data
from exactmem.proof import Built, Instance, Theorem


def shift_data():
    x, y, z, w = ((Fraction(k),) for k in (1, 2, 3, 4))
    return make_data([(y, y, z), (x, w, z)], [0, 1], 2, name="Lemma B.2 shift counter-example")


def restricted_multisets() -> Tuple[List[Counter], List[int]]:
    """The two multisets restricted to A = {x, y} (token ids), and A in the order (x, y)."""
    data = shift_data()
    tokens, id_seqs = data.token_index()
    ids = {t[0]: j for j, t in enumerate(tokens)}
    A = [ids[1], ids[2]]  # S = A = {x, y}, in this order (g: x ↦ 1, y ↦ 2)
    return [Counter({t: c for t, c in Counter(X).items() if t in A}) for X in id_seqs], A


def b2_witness() -> Tuple[int, ...]:
    """(f(x), f(y)) satisfying Lemma B.2's conclusion on the restricted multisets, found exactly."""
    ms, A = restricted_multisets()
    return kajitsuka.lemma_b2_witness(ms, A)


def _build(f: Tuple[int, ...], seed: int) -> Built:
    """The Transformer of Thm B.1 on the data with Lemma B.2's weights fixed to f on A."""
    ms, A = restricted_multisets()
    data = shift_data()
    b = kajitsuka.build(data, seed=seed, witnesses=A, weights=dict(zip(A, f)), allow_collisions=True)
    b.info.update({"f on (x, y)": tuple(f), "weighted counts of {y, y}, {x}": tuple(
        kajitsuka.weighted_counts(ms, dict(zip(A, f)))),
        "Lemma B.2 conclusion holds for f": kajitsuka.lemma_b2_holds(ms, dict(zip(A, f)))})
    return Built(b.model, data.to_dataset(), [Claim("n_examples", "==", 2, "two sequences")], info=b.info)


def build_shift(params, seed):
    f, c = kajitsuka.paper_shifted_weights((Fraction(0), Fraction(-1)), n_multisets=2)
    built = _build(tuple(f), seed)
    built.info.update({"paper h + c": f, "shift c": c,
                       "valid f on the same instance (exact search)": b2_witness()})
    return built


def build_witness(params, seed):
    return _build(b2_witness(), seed)


WITNESS = b2_witness()  # a handful of candidates: computed here so the instance name shows it

THEOREMS = [
    Theorem(
        name="kajitsuka_errata.b2_proof_recipe_as_printed",
        statement="The recipe of Lemma B.2's proof, f = ceil(N^2|S|sqrt(pi) v) + floor(2N^2|S|sqrt(pi)), keeps the "
                  "weighted counts of the restricted multisets distinct (expected: REFUTED - the proof's recipe "
                  "fails; the statement holds on this instance, see b2_statement_holds).",
        source="Kajitsuka & Sato (ICLR 2025) proof of Lemma B.2, eqs. (17)-(27), as used in Lemma B.3",
        build=build_shift,
        instances=[Instance("N2-n3-S2-v(0,-1)", {}, ("small", "medium", "large"))],
    ),
    Theorem(
        name="kajitsuka_errata.b2_statement_holds",
        statement="Lemma B.2's statement on the same restricted multisets: an f: S -> [ceil(4N^2|S|sqrt(pi))] with "
                  "(4MN^2|S|sqrt(pi), sqrt|S|)-separated weighted counts exists (found by exact search; the "
                  "instance name shows it) and the Transformer built with it memorizes both sequences.",
        source="Kajitsuka & Sato (ICLR 2025) Lemma B.2, eq. (16)",
        build=build_witness,
        instances=[Instance("N2-n3-S2-f(%s)" % ",".join(map(str, WITNESS)), {}, ("small", "medium", "large"))],
    ),
]
