"""Kajitsuka & Sato (ICLR 2025) Theorem B.1 / Corollary 4.1 in the paper's blocks of eq. (4), certified end to end.

The paper's blocks of eq. (4) come with our residual conversion of Theorem B.1's plain FFN
(width 20): Transformer blocks of eq. (4) whose feed-forward layer is the residual one of eq. (3)
(Theorem B.1 itself states plain deep ReLU networks F₁, F₂, "unlike eq. (3)"; turning them into
residual blocks is ours), the tent-map Stage III of Lemmas G.4–G.6 and Lemma B.2's projection
recipe; the Lemma C.2 recipe and the two-trajectory bit read-out of the tent map, which the paper
defers to Vardi et al., are ours too — certified end to end (``docs/kajitsuka-paper.md``):
``python -m exactmem certify proofs/kajitsuka_paper.py`` (~20 s for the small instances on 2
cores; the main job ``proofs/kajitsuka.py`` lists only the compact networks of the same
theorems, which are Theorem B.1's plain-FFN network).

Claims (all computed; the checker re-measures the model):

* ``n_examples == N``;
* ``attention_layers ==`` L and ``relu_depth ==`` L, L the paper's depth (blocks, §3.2)
  computed from the two memorizers' layouts; ``depth == 2L`` (one attention and one
  feed-forward layer per block);
* ``attention_layers <=`` Σ ((110) − 1) over the two Lemma C.1 stages (measured N, C, R) and
  ``<=`` 2·(110)(N, C, R) − 1 with Thm B.1's R (eq. (41)), (110) with the natural numbers its
  lemmas require (`exactmem.constructions.vardi.memorizer.eq110_integer`: Lemma G.3's m =
  ⌈√(N log₂ N)⌉ groups, Lemma G.6's n = ⌈√(N/log₂ N)⌉ slots, ⌈log₂ R⌉- and ⌈log₂ C⌉-bit
  blocks). The real-valued printed form is not an exact count at small N (its witness:
  ``proofs/kajitsuka_paper_errata.py``);
* ``width ==`` max(m, sH, q) from the block compiler's bookkeeping, and ``width <= 28``:
  Thm B.1's width 14 doubled by our residual conversion — a residual layer writes a register
  with its new value and the cancellation of the old one (q ≤ 2·14; m ≤ 14 + 2 E_in forms +
  the attention slot is below 28);
* ``max_bits ==`` the measured maximum, ``<=`` eq. (111) per stage and ``<=`` eq. (42);
* ``n_params ==`` the measured count and ``<= (d + 1)W + D(2W² + 6W)`` with W the claimed
  width and D the (41) bound (each block: attention 2W, feed-forward 2Wq + q + W ≤ 2W² + 2W;
  hardmax attention adds 2W more).
"""

from exactmem.certificate.writer import Claim
from exactmem.constructions.kajitsuka import paper as kp
from exactmem.model.measure import measure
from exactmem.proof import Theorem
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.certificate.formulas import Formulas, add, mul, power
from exactmem.proofs._kajitsuka_core import (c1_stages, data_claims, network_build, next_token_instance, stage_formulas,
                                             theorem_R2, theorem_formulas)

SOURCE = ("Kajitsuka & Sato (ICLR 2025) Thm 4.1 / B.1 in the blocks of eqs. (2)-(4), our residual conversion of "
          "its plain FFN; Lemmas B.2, C.2 (recipes), G.3-G.6 (tent map); eqs. (41)-(42), (110)")
SOURCE_S2S = SOURCE.replace("Thm 4.1 / B.1", "Corollary 4.1")
RESIDUAL_WIDTH = 28


def stage_depth_110(b: kp.PaperBuild):
    """Σ over the Lemma C.1 stages (ϕ̃ of Lemma B.3, then F₂) of eq. (110) with the natural numbers
    its lemmas require (`exactmem.constructions.vardi.memorizer.eq110_integer`: Lemma G.3's m =
    ⌈√(N log₂ N)⌉ groups, Lemma G.6's n = ⌈√(N/log₂ N)⌉ slots of ⌈log₂ R⌉-bit keys and
    ⌈log₂ C⌉-bit labels), each stage with its measured N, C, R; the totals of eq. (61) then give
    ``Σ − 1`` layers (ReLU + attention), and the blocks are ``Σ − 2`` (F₁ without ϕ̃: one
    projection and its output, 2 for its (110)). None when a stage has N < 2 (log N = 0)."""
    stages = c1_stages(b)
    if any(s.N < 2 for s in stages):
        return None
    depth = [] if b.phi_layout is not None else [2]
    depth += [vardi.eq110_integer(s.N, s.C, s.R2).depth for s in stages]
    return sum(depth) - 1


def theorem_depth_41(info):
    """Eq. (41) as Thm B.1's proof obtains it, eq. (61): both Lemma C.1 stacks bounded by (110) with
    Thm B.1's R (≥ R₁, C₁, R₂) and the lemmas' integers (`vardi.eq110_integer`), so layers ≤
    2·(110)(N, C, R) − 1; seq-to-seq: nN for N (note §4.9). None when nN < 2."""
    Nn = info["N"] * info["n"] if info["setting"] == "seq2seq" else info["N"]
    if Nn < 2:
        return None
    return 2 * vardi.eq110_integer(Nn, info["C"], theorem_R2(info)).depth - 1


def claims(b: kp.PaperBuild):
    info, F = b.info, Formulas()
    L = kp.paper_blocks(b)
    W = kp.width(b)
    m = measure(b.model)
    out = data_claims(info, F) + [
        Claim("attention_layers", "==", L, "paper depth L (blocks, §3.2): one attention per block"),
        Claim("relu_depth", "==", L, "one residual feed-forward layer (eq. (3)) per block"),
        Claim("depth", "==", 2 * L, "ReLU + attention layers = 2L"),
        F.named(Claim("width", "==", W, "max(m, sH, q) from the block compiler"), "W"),
        Claim("width", "<=", RESIDUAL_WIDTH, "Thm B.1's 14, doubled by our residual conversion (new value + "
                                             "cancellation)"),
        Claim("max_bits", "==", m.max_bits, "measured"),
        Claim("n_params", "==", m.n_params, "measured (every stored entry, zeros included)"),
    ]
    out += stage_formulas(b, F, quantity="attention_layers", integer=True, minus=2)
    heads = 4 if info["attention"] == "hardmax" else 2
    out += theorem_formulas(info, F, quantity="attention_layers", integer=True,
                            params=add(mul(add("d", 1), "W"), mul("D", add(mul(2, power("W", 2)), mul(4 + heads, "W")))),
                            params_source=f"(d+1)W + D(2W^2 + {4 + heads}W): E_in, E_out and D blocks of width W")
    return out


build = network_build(kp.build, claims)
_inst = next_token_instance


THEOREMS = [
    Theorem(
        name="kajitsuka.paper_blocks",
        statement="Theorem B.1 in the paper's blocks of eq. (4) with our residual conversion of its plain FFN "
                  "(width 20): E_out o F_L o ... o F_1 o E_in with blocks F_l = (residual FFN, eq. (3)) o "
                  "(self-attention, zero projection except the uniform layer (52)), tent-map bit extraction "
                  "(Lemmas G.4-G.6) and the projection recipes of Lemmas B.2 and C.2, memorizes N consistently "
                  "labelled separated sequences at the last position; L blocks within (110) per stage and eq. (41) "
                  "(the lemmas' integers), bits within eq. (42).",
        source=SOURCE,
        build=build,
        instances=[
            # the smallest: 161 blocks, exactly the real-valued Σ(⌊(110)⌋ − 1), 231 with the lemmas' integers
            _inst("N3-n2-d1-C2", ("small",), N=3, n=2, d=1, C=2),
            _inst("N12-n4-d3-C4", ("small", "medium"), N=12, n=4, d=3, C=4),
            _inst("N40-n8-d16-C4", ("small", "medium"), N=40, n=8, d=16, C=4),
            _inst("N12-n4-d3-C4-hardmax", ("small", "medium"), N=12, n=4, d=3, C=4, attention="hardmax"),
            _inst("N1000-n8-d16-C4", ("medium",), N=1000, n=8, d=16, C=4),
        ],
    ),
    Theorem(
        name="kajitsuka.paper_blocks_seq2seq",
        statement="Corollary 4.1 in the paper's blocks of eq. (4) with our residual conversion (as "
                  "kajitsuka.paper_blocks, a label at every "
                  "position; F2 memorizes up to nN context ids), blocks and bits within the nN analogue of "
                  "eqs. (41)-(42).",
        source=SOURCE_S2S,
        build=build,
        instances=[
            _inst("N10-n4-d3-C4", ("small", "medium"), N=10, n=4, d=3, C=4, setting="seq2seq"),
            _inst("N24-n6-d8-C2", ("small", "medium"), N=24, n=6, d=8, C=2, setting="seq2seq"),
            _inst("N200-n8-d16-C4", ("medium",), N=200, n=8, d=16, C=4, setting="seq2seq"),
            # nN = 8,000 contexts through ~5,000 blocks: > 15 minutes on 2 cores, so --size large
            _inst("N1000-n8-d16-C4", ("large",), N=1000, n=8, d=16, C=4, setting="seq2seq"),
        ],
    ),
]
