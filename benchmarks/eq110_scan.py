"""How often eq. (110), read as an exact depth count, bounds Kajitsuka & Sato's networks
(``docs/errata.md``, paper blocks item 6). For every instance of a grid (next-token data,
seeds 0 and 1) it builds the paper-literal block network (tent-map Stage III, Lemma G.6) and the
compact network (doubling-map Stage III), and compares

* paper-literal blocks L with Σ over the two Lemma C.1 stages of (⌊(110)⌋ − 1) and with eq. (41);
* compact depth (ReLU + attention layers) with Σ ⌊(110)⌋ − 1 (the claim of ``kajitsuka.next_token``).

It measures the built models' layer counts (exact integers from the layouts); it does not
certify them — ``python -m exactmem certify proofs/kajitsuka_paper_errata.py`` certifies the
witness instance (REFUTED by design).

    python benchmarks/eq110_scan.py [--quick]       # full grid (172 instances): about 1 minute
"""

import itertools
import sys

from exactmem.constructions import kajitsuka, kajitsuka_paper as kp
from exactmem.data.kajitsuka_data import generate
from exactmem.model.measure import measure
from exactmem.proofs._kajitsuka_core import stage_bounds, theorem_bounds

GRID = dict(N=[2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 40], n=[2, 4], d=[1, 2, 3], C=[2, 4], seed=[0, 1])
QUICK = dict(N=[4, 12, 30], n=[2], d=[2], C=[2], seed=[0])


def scan(grid):
    """One row per buildable instance with stage bounds: (N, n, d, C, seed, L, Σ(110) − 2,
    (41) D, compact depth, compact bound Σ(110) − 1)."""
    for N, n, d, C, seed in itertools.product(*grid.values()):
        try:
            data = generate(N, n, d, C, seed, "next_token")
        except ValueError:  # e.g. too few distinct sequences for this vocabulary
            continue
        p = kp.build(data, seed=seed)
        st = stage_bounds(p)
        if st is None:  # a stage with fewer than 2 points: (110) undefined (errata, Lemma C.1 item 5)
            continue
        c = kajitsuka.build(data, seed=seed)
        stc = stage_bounds(c)
        yield (N, n, d, C, seed, kp.paper_blocks(p), st[0] - 1, theorem_bounds(p.info)[0],
               measure(c.model).depth, stc[0] if stc else None)


def main(argv):
    rows = list(scan(QUICK if "--quick" in argv else GRID))
    print("| N | n | d | C | seed | paper blocks L | Σ(⌊(110)⌋ − 1) | L within? | (41) D | compact depth | its (110) bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(map(str, r[:7])) + f" | {'yes' if r[5] <= r[6] else 'NO'} | " +
              " | ".join(map(str, r[7:])) + " |")
    over = [r for r in rows if r[5] > r[6]]
    print(f"\npaper-literal blocks exceed Σ(⌊(110)⌋ − 1) on {len(over)} of {len(rows)} instances "
          f"(largest N: {max((r[0] for r in over), default='-')}); within eq. (41) on "
          f"{sum(r[5] <= r[7] for r in rows)} of {len(rows)}; compact depth within its (110) bound on "
          f"{sum(r[9] is not None and r[8] <= r[9] for r in rows)} of {len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:])
