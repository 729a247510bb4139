"""Kajitsuka & Sato eq. (110) read as an exact depth count: the paper-literal network exceeds it
(REFUTED by design; ``docs/errata.md``, "Theorems D.1, E.1, F.1 and the paper's blocks", item 6).

Lemma C.1's proof applies Lemma G.6 with n = √(N/log N) slots and key/label widths log R,
log C — but G.6 needs ρ, n, c ∈ ℕ. Eq. (110) ("the depth of F … is estimated as") then sums
the stage depths with these reals. Any network must round them up: n = g = ⌈√(N/log₂ N)⌉
slots of ⌈log R⌉, ⌈log C⌉ bits. At N = 18, g = 3 against √(18/log₂ 18) ≈ 2.08, and G.6's
own depth 3n·max{ρ, c} + 2n + 2 with integers exceeds (110)'s Stage III term by far more
than Stage II's slack (3√(N log N) + 2 against 3m + 2 for m = ⌈N/g⌉ groups).

The witness is ``kajitsuka.paper_blocks`` (tent-map Stage III of Lemmas G.4–G.6, one ReLU
layer per block) on N = 30 sequences, n = 2, d = 2, C = 2, seed 0: its claim
``attention_layers <= Σ(⌊(110)⌋ − 1)`` over the two Lemma C.1 stages fails (424 blocks
against 409), while every other claim — memorization, eq. (41), eq. (42) — holds. The
implementation is no larger than the printed recipe stage by stage (Stage I one block against
two, Stage II m + 1 against 3m + 2, Stage III 3gP + 5 against G.6's 3gP + 2g + 2, its bit
widths ρ ≤ ⌈log₂ R⌉ and c ≤ ⌈log₂ C⌉); ``meta.info`` lists each stage's figures, among them
``G.6 depth with integer n`` and ``(110) Stage III term``, so the excess is the printed
recipe's own, not exactmem's.
"""

from exactmem import enclosure as E
from exactmem.constructions import kajitsuka_paper as kp, tent_map, vardi
from exactmem.proof import Built, Instance, Theorem
from exactmem.proofs import kajitsuka_paper
from exactmem.proofs._kajitsuka_core import ENGINE, c1_stages, instance_data

floor_lo = E.floor_lower


def _ceil_log2(x2) -> int:
    """⌈log₂ x⌉ from an enclosure of x² (the upper end: a safe, possibly one-larger width)."""
    return int(E.ceil(E.log2(x2) / 2).hi)


def stage_figures(b: kp.PaperBuild) -> list:
    """Per Lemma C.1 stage (ϕ̃ of Lemma B.3, then F₂): N, C, the slot count g = ⌈√(N/log₂ N)⌉
    and the real √(N/log₂ N) of eq. (110), the block count of this network, ⌊(110)⌋ − 1,
    Lemma G.6's depth with integer n = g and ρ, c = ⌈log₂ R⌉, ⌈log₂ C⌉ (the printed recipe,
    rounded up as any network must), and (110)'s Stage III term (its lower end, floored)."""
    rows = []
    for s in c1_stages(b):
        if s.N < 2:
            continue
        N, C, lay = s.N, s.C, s.layout
        root = E.sqrt(E.enc(N) / E.log2(N))
        logR, logC = E.log2(s.R2) / 2, E.log2(C)
        ceil_log_R = _ceil_log2(s.R2)
        bits = max(ceil_log_R, vardi.label_width(C))
        stage3_110 = 3 * root * E.emax(logR, logC) + 2 * root + 2
        rows.append({
            "stage": s.name, "N": N, "C": C, "slots g": lay.g,
            "sqrt(N/log2 N)": E.decimal(root.lo, 4), "groups m": lay.m, "rho": lay.rho, "c": lay.c,
            "ceil log2 R": ceil_log_R, "blocks": 1 + tent_map.relu_layers(lay),
            "floor (110) - 1": floor_lo(vardi.eq110_depth(N, C, s.R2)) - 1,
            "G.6 depth with integer n": 3 * lay.g * bits + 2 * lay.g + 2,
            "(110) Stage III term": floor_lo(stage3_110),
        })
    return rows


def build(params, seed):
    data = instance_data(params, seed)
    b = kp.build(data, seed=seed)
    info = dict(b.info)
    info["blocks L"] = kp.paper_blocks(b)
    for row in stage_figures(b):
        info.update({f"{row['stage']}: {k}": v for k, v in row.items() if k != "stage"})
    return Built(b.model, data.to_dataset(), kajitsuka_paper.claims(b), info=info)


THEOREMS = [
    Theorem(
        name="kajitsuka_paper_errata.eq110_as_exact_depth",
        statement="Eq. (110), read as an exact count, bounds the blocks of each Lemma C.1 stage of the paper-literal "
                  "network: blocks <= sum over the two stages of (floor (110) - 1) (expected: REFUTED - Lemma G.6 is "
                  "applied with n = sqrt(N/log N) slots, which must be an integer; memorization, eq. (41) and "
                  "eq. (42) hold).",
        source="Kajitsuka & Sato (ICLR 2025) proof of Lemma C.1, Stage III and eq. (110); Lemma G.6",
        build=build,
        instances=[Instance("N30-n2-d2-C2", {"N": 30, "n": 2, "d": 2, "C": 2}, ("small", "medium", "large"),
                            engine=ENGINE)],
    ),
]
