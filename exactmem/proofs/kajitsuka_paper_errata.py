"""Kajitsuka & Sato eq. (110) in its real-valued printed form, exceeded at small N by the paper's blocks.

Read as an exact depth count, the real-valued form is exceeded by the network of the paper's blocks
at small N (REFUTED by design). This is an observation about an asymptotic formula, not an error of
the paper (``docs/errata.md``, "Theorems D.1, E.1, F.1 and the paper's blocks", item 6).

Lemma C.1's proof applies Lemma G.3 ("Let m ∈ ℕ") with m = √(N log N) groups and Lemma G.6
("Let ρ, n, c ∈ ℕ") with n = √(N/log N) slots of log R- and log C-bit blocks (eqs. (99)–(100));
eqs. (99)–(110) leave the rounding implicit, as an estimate under ≲ does. Any network rounds
them up: m = ⌈√(N log₂ N)⌉, n = ⌈√(N/log₂ N)⌉, ⌈log₂ R⌉, ⌈log₂ C⌉. With those integers (110)
is `exactmem.constructions.vardi.memorizer.eq110_integer`, the bound ``kajitsuka.paper_blocks``
claims; the real-valued form drops the ceilings, and at N = 18 (n = 3 against
√(18/log₂ 18) ≈ 2.08) G.6's depth 3n·max{ρ, c} + 2n + 2 alone exceeds the real Stage III term.

The witness is the network of ``kajitsuka.paper_blocks`` on N = 30 sequences, n = 2, d = 2,
C = 2, seed 0: the claim ``attention_layers <= Σ(⌊(110)⌋ − 1)`` with the real-valued (110)
fails (424 blocks against 410), while every claim of ``kajitsuka.paper_blocks`` — among them
Σ((110) − 1) with the lemmas' integers, 550 — holds. ``meta.info`` lists each stage's figures:
the slot count and √(N/log₂ N), ``G.6 depth with integer n``, ``(110) Stage III term`` (real)
and ``(110) with the lemmas' integers``.
"""

from exactmem.arith import enclosure as E
from exactmem.certificate.writer import Claim
from exactmem.constructions.kajitsuka import paper as kp
from exactmem.constructions.vardi import tent_map
from exactmem.constructions.vardi import memorizer as vardi
from exactmem.proof import Built, Instance, Theorem
from exactmem.proofs import kajitsuka_paper
from exactmem.proofs._kajitsuka_core import ENGINE, c1_stages, instance_data, stage_bounds

floor_lo = E.floor_lower


def _ceil_log2(x2) -> int:
    """⌈log₂ x⌉ from an enclosure of x² (the upper end: a safe, possibly one-larger width)."""
    return int(E.ceil(E.log2(x2) / 2).hi)


def stage_figures(b: kp.PaperBuild) -> list:
    """Per Lemma C.1 stage (ϕ̃ of Lemma B.3, then F₂): N, C, the slot count g = ⌈√(N/log₂ N)⌉
    and the real √(N/log₂ N) of eq. (110), the block count of this network, ⌊(110)⌋ − 1,
    Lemma G.6's depth with integer n = g and ρ, c = ⌈log₂ R⌉, ⌈log₂ C⌉ (the printed recipe,
    rounded up as any network must), and (110)'s Stage III term (floored, its enclosure tightened
    until the floor is decided: `vardi.eq110_stage3`)."""
    rows = []
    for s in c1_stages(b):
        if s.N < 2:
            continue
        N, C, lay = s.N, s.C, s.layout
        root = E.sqrt(E.enc(N) / E.log2(N))
        ceil_log_R = _ceil_log2(s.R2)
        bits = max(ceil_log_R, vardi.label_width(C))
        rows.append({
            "stage": s.name, "N": N, "C": C, "slots g": lay.g,
            "sqrt(N/log2 N)": E.decimal(root.lo, 4), "groups m": lay.m, "rho": lay.rho, "c": lay.c,
            "ceil log2 R": ceil_log_R, "blocks": 1 + tent_map.relu_layers(lay),
            "floor (110) - 1": floor_lo(vardi.eq110_depth(N, C, s.R2)) - 1,
            "G.6 depth with integer n": 3 * lay.g * bits + 2 * lay.g + 2,
            "(110) Stage III term": floor_lo(vardi.eq110_stage3(N, C, s.R2)),
            "(110) with the lemmas' integers - 1": vardi.eq110_integer(N, C, s.R2).depth - 1,
        })
    return rows


def build(params, seed):
    data = instance_data(params, seed)
    b = kp.build(data, seed=seed)
    info = dict(b.info)
    info["blocks L"] = kp.paper_blocks(b)
    for row in stage_figures(b):
        info.update({f"{row['stage']}: {k}": v for k, v in row.items() if k != "stage"})
    claims = kajitsuka_paper.claims(b)
    st = stage_bounds(b)
    if st is not None:
        claims.append(Claim("attention_layers", "<=", st[0] - 1,
                            "blocks <= sum over the two Lemma C.1 stages of (floor (110) - 1), (110) real-valued "
                            "as printed (an estimate: sqrt(N/log N) slots, log R bits)"))
    return Built(b.model, data.to_dataset(), claims, info=info)


THEOREMS = [
    Theorem(
        name="kajitsuka_paper_errata.eq110_as_exact_depth",
        statement="Eq. (110) in its real-valued printed form, read as an exact count, bounds the blocks of the "
                  "Lemma C.1 stages of the network in the paper's blocks: blocks <= sum over the two stages of "
                  "(floor (110) - 1) (expected: REFUTED - an observation about an estimate, not an erratum: "
                  "Lemmas G.3 and G.6 take m, n, log R, log C as natural numbers, and with those ceilings every "
                  "claim of kajitsuka.paper_blocks holds).",
        source="Kajitsuka & Sato (ICLR 2025) proof of Lemma C.1, Stage III and eq. (110); Lemma G.6",
        build=build,
        instances=[Instance("N30-n2-d2-C2", {"N": 30, "n": 2, "d": 2, "C": 2}, ("small", "medium", "large"),
                            engine=ENGINE)],
    ),
]
