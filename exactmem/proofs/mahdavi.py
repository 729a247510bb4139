"""Mahdavi, Liao & Thrampoulidis (ICLR 2024): one H-head attention layer memorizes H(k−1)+1 examples.

k = min(n, d_h). The construction is the one reconstructed in note ``mahdavi.md`` §4
(``exactmem.constructions.mahdavi.construction``); see ``docs/mahdavi.md``. Three theorems, one per
certification mode:

* ``mahdavi.softmax`` — the paper's softmax layer, real labels: every output is within the
  stated ``error_bound`` ε of its label (certified with rational intervals);
* ``mahdavi.softmax_classes`` — softmax, class labels: the argmax is certified;
* ``mahdavi.hardmax`` — the saturation limit (hardmax attention), exact in Q: every output
  equals its label exactly.

Claims, computed from the paper's formulas for each instance and compared by the checker:
T = H(min(n, d_h) − 1) + 1 examples; P = H(2·d·d_h + d·d_v + d_v·d_o) parameters with
d_v = d_o = 1 (plus the 2C entries of the fixed class decoder); one attention layer, no
ReLU; width H·d_h (or C).

Hypotheses (``Built.hypotheses``, shown in ``certify``'s table): Theorem 1 assumes
Assumption 1 (Kruskal rank of the queries ≥ n), Assumption 2 (rank E^(t) = n) and n < d
(note §2.1, §3.1). Each is evaluated exactly on the instance
(``exactmem.data.assumptions.theorem_hypotheses``; Assumption 1 exhaustively up to 10^5
subsets, beyond that refuted by a witness or "not decided"). The construction needs only the
note §4.6 per-partition certificate, so it may certify an instance outside them; the table
then says so. The ``outside-*`` instances are deliberately outside.
"""

from fractions import Fraction

from exactmem.certificate.writer import Claim
from exactmem.constructions.mahdavi import construction as mahdavi
from exactmem.data.assumptions import theorem_hypotheses
from exactmem.data.mahdavi_data import kruskal_deficient_example, note_tiny_example, random_query_context
from exactmem.proof import Built, Hypothesis, Instance, Theorem

SOURCE = "Mahdavi, Liao, Thrampoulidis (ICLR 2024), Thm 1; construction of note mahdavi.md §4"

# note §4.7: partition S_1 = {1, 2}, S_2 = {3}; designed logits; u = (3, −1, 0), w = (1, 1, 0)
NOTE_47 = {"partition": [[0, 1], [2]],
           "designed_logits": {(0, 0): (0, 1), (0, 1): (1, 0), (1, 2): (0, 2)},
           "u": {1: (3, -1, 0)}, "w": {1: (1, 1, 0)}}


def _data(params, seed):
    if params.get("note47"):
        return note_tiny_example()
    if params.get("kruskal_deficient"):
        return kruskal_deficient_example()
    T = mahdavi.capacity(params["H"], params["n"], params["d_h"])
    return random_query_context(T, params["n"], params["d"], seed, shared=params.get("shared", False),
                                coord_range=params.get("coord_range", 5), coord_den=params.get("coord_den", 1),
                                label_kind="class" if params.get("classes") else "real",
                                num_classes=params.get("classes"))


def _claims(data, H, d_h, classes=None):
    d, n = data.d, data.n
    T = mahdavi.capacity(H, n, d_h)
    extra = 2 * classes if classes else 0
    return [
        Claim("n_examples", "==", T, "T = H(min(n, d_h) - 1) + 1"),
        Claim("n_params", "==", mahdavi.paper_parameter_count(H, d, d_h) + extra,
              "H(2 d d_h + d d_v + d_v d_o), d_v = d_o = 1" + (" (+ 2C decoder entries)" if classes else "")),
        Claim("attention_layers", "==", 1, "one multi-head attention layer"),
        Claim("relu_depth", "==", 0, "no feed-forward layer"),
        Claim("width", "==", max(H * d_h, classes or 0), "H d_h (Kim et al. width convention)"),
    ]


def _build(mode):
    def build(params, seed):
        data = _data(params, seed)
        H, d_h = (2, 2) if params.get("note47") else (params["H"], params["d_h"])
        overrides = NOTE_47 if params.get("note47") else {}
        if mode == "hardmax":
            overrides = {"partition": overrides["partition"]} if overrides else {}
        eps = Fraction(params.get("eps", mahdavi.DEFAULT_EPS))
        model, info = mahdavi.build(data, H, d_h, mode=mode, design=params.get("design", "factored"),
                                    eps=eps, seed=seed, **overrides)
        error_bound = info.error_bound if mode == "softmax" and data.label_kind == "real" else None
        return Built(model, data.to_dataset(), _claims(data, H, d_h, params.get("classes")), error_bound,
                     info.summary(), hypotheses(data, seed),
                     meta={"partition": [[int(t) for t in S] for S in info.partition]})
    return build


def hypotheses(data, seed=0):
    """Theorem 1's hypotheses on ``data`` (Assumption 1, Assumption 2, n < d), exactly where
    decidable (``theorem_hypotheses``)."""
    return [Hypothesis(*h) for h in theorem_hypotheses(data, seed=seed)]


def _inst(name, sizes, **p):
    return Instance(name, p, sizes)


THEOREMS = [
    Theorem(
        name="mahdavi.softmax",
        statement="Theorem 1 as reconstructed in note §3.1/§4 (the published form is unverified): under "
                  "Assumption 1 (Kruskal rank of the queries >= n), Assumption 2 (rank E^(t) = n) and n < d, one "
                  "softmax attention layer with H heads of dimension d_h and d_v = 1 memorizes T = H(min(n, d_h) - 1)"
                  " + 1 real labels: every output is within the stated error bound of its label. The construction "
                  "itself needs only Assumption 2 and the per-partition certificate of note §4.6; the hypotheses "
                  "are evaluated per instance and reported.",
        source=SOURCE,
        build=_build("softmax"),
        instances=[
            _inst("note-4.7", ("small", "medium"), note47=True, design="solve"),
            _inst("H3-n4-d8", ("small", "medium"), H=3, n=4, d=8, d_h=4),
            _inst("H4-n6-d16-shared", ("small", "medium"), H=4, n=6, d=16, d_h=6, shared=True),
            _inst("H4-n6-d16-dh3", ("small", "medium"), H=4, n=6, d=16, d_h=3),
            _inst("H3-n4-d8-solve", ("small", "medium"), H=3, n=4, d=8, d_h=4, design="solve"),
            _inst("H8-n8-d64", ("medium", "large"), H=8, n=8, d=64, d_h=8),
            _inst("H8-n16-d64-shared", ("large",), H=8, n=16, d=64, d_h=16, shared=True),
            _inst("outside-kruskal2-n3", ("small", "medium"), kruskal_deficient=True, H=2, d_h=3),
        ],
    ),
    Theorem(
        name="mahdavi.softmax_classes",
        statement="The same layer (same hypotheses) with a fixed nearest-integer decoder memorizes "
                  "T = H(min(n, d_h) - 1) + 1 class labels: the argmax is certified.",
        source=SOURCE,
        build=_build("softmax"),
        instances=[
            _inst("H4-n4-d16-C10", ("small", "medium"), H=4, n=4, d=16, d_h=4, classes=10),
            _inst("H4-n8-d32-C100-shared", ("medium", "large"), H=4, n=8, d=32, d_h=8, classes=100, shared=True),
        ],
    ),
    Theorem(
        name="mahdavi.hardmax",
        statement="In the saturation limit (hardmax attention) the construction is exact in Q: under the same "
                  "hypotheses, T = H(min(n, d_h) - 1) + 1 real labels are output exactly (d_v = 1).",
        source=SOURCE,
        build=_build("hardmax"),
        instances=[
            _inst("note-4.7", ("small", "medium"), note47=True, design="solve"),
            _inst("H4-n6-d16-shared", ("small", "medium"), H=4, n=6, d=16, d_h=6, shared=True, design="solve"),
            _inst("H3-n5-d12", ("small", "medium"), H=3, n=5, d=12, d_h=5, design="solve"),
            _inst("H8-n8-d64", ("medium", "large"), H=8, n=8, d=64, d_h=8, design="solve"),
            _inst("outside-n4-d4", ("small", "medium"), H=2, n=4, d=4, d_h=4, design="solve", coord_range=20),
        ],
    ),
]
