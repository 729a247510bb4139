"""Counter-examples behind the Vardi / Kajitsuka & Sato entries of ``docs/errata.md``.

Every theorem here is a *literal reading* of a statement in Kajitsuka & Sato (ICLR 2025,
arXiv 2409.17677v2), built for a concrete instance and handed to the independent checker,
which refutes it. So ``python -m exactmem certify proofs/vardi_errata.py`` is expected to
print REFUTED for every row (exit code 1), each with its witness. The correct readings are
certified by ``proofs/vardi.py``.

1. ``vardi_errata.rho_c_as_printed`` — Lemma C.1, Stage III: "ρ = log C, n = √(N/log N) and
   c = log R" for Lemma G.6. u_j holds log R-bit keys and w_j log C-bit labels (eqs.
   (99)–(100)), so G.6 must read ρ = log R, c = log C. Built as printed: wrong outputs.
2. ``vardi_errata.w_blocks_as_printed`` — Lemma G.6 eq. (153) prints the label block as
   BIN_{ρj+1:ρ(j+1)}(w); w holds c-bit blocks (the proof, eq. (163), uses c). Built as
   printed: wrong outputs.
3. ``vardi_errata.len_scaled`` — Lemma G.6 assumes LEN(u) = ρn, LEN(w) = cn and scales by
   2^(nρ), 2^(nc). Read literally (scale by the actual LEN, max over groups) it fails as soon
   as no group's first label uses the top label bit: the strings must be fixed-width.
"""

from exactmem.certificate.writer import Claim
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.proof import Built, Instance, Theorem
from exactmem.proofs import vardi as V

SOURCE = "Kajitsuka & Sato (ICLR 2025) App. C and G, read literally (docs/errata.md)"


def _basic_claims(info):
    """Claims that hold for every reading: the refutation then comes from an example."""
    return [
        Claim("n_examples", "==", info["V"], "V labelled + extra points"),
        Claim("attention_layers", "==", 0, "a plain ReLU network"),
        Claim("width", "<=", 12, "Lemma C.1: width 12"),
    ]


def _literal(reading):
    def build(params, seed):
        pts, labels, extra, ds = V.make_data(params, seed)
        model, info = vardi.build_c1(pts, labels, params["C"], extra, seed=seed + 2, reading=reading)
        return Built(model, ds, _basic_claims(info), info=info)

    return build


THEOREMS = [
    Theorem(
        name="vardi_errata.rho_c_as_printed",
        statement="Lemma C.1 Stage III built as printed (Lemma G.6 with rho = log C, c = log R) memorizes the data.",
        source=SOURCE,
        build=_literal("literal_rho_c"),
        instances=[Instance("N16-V24-line-C16", {"N": 16, "V": 24, "C": 16}, ("small", "medium"), V.ENGINE)],
    ),
    Theorem(
        name="vardi_errata.w_blocks_as_printed",
        statement="Lemma G.6 with the label block BIN_{rho j+1:rho(j+1)}(w) of eq. (153) memorizes the data.",
        source=SOURCE,
        build=_literal("literal_w_blocks"),
        instances=[Instance("N16-V24-line-C16", {"N": 16, "V": 24, "C": 16}, ("small", "medium"), V.ENGINE)],
    ),
    Theorem(
        name="vardi_errata.len_scaled",
        statement="Lemma G.6 with u, w scaled by 2^LEN(u), 2^LEN(w) (LEN(u) = rho n read literally) memorizes "
                  "the data.",
        source=SOURCE,
        build=_literal("len_scaled"),
        instances=[Instance("N16-V24-line-C16-labels-below-8", {"N": 16, "V": 24, "C": 16, "label_range": 8},
                            ("small", "medium"), V.ENGINE)],
    ),
]
