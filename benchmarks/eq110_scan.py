"""Eq. (110) on Kajitsuka & Sato's networks, before and after reading it with the integers its
lemmas require (``docs/errata.md``, paper blocks item 6). For every instance of a grid
(next-token data, seeds 0 and 1) it builds the network in the paper's blocks (tent-map Stage III)
and the compact network (doubling-map Stage III), and compares

* blocks L with Σ over the two Lemma C.1 stages of ((110) − 1) in two forms: the real-valued
  printed form, floored (``before``: the claim as it was), and the form with Lemma G.3's
  m = ⌈√(N log₂ N)⌉, Lemma G.6's n = ⌈√(N/log₂ N)⌉, ⌈log₂ R⌉, ⌈log₂ C⌉ (``now``: the claim of
  ``kajitsuka.paper_blocks``, :func:`exactmem.constructions.vardi.memorizer.eq110_integer`);
* blocks L with eq. (41) (2·(110)(N, C, R) − 1, Thm B.1's R, the lemmas' integers);
* compact depth (ReLU + attention layers) with Σ ⌊(110)⌋ − 1, real-valued (the claim of
  ``kajitsuka.next_token``).

It measures the built models' layer counts (exact integers from the layouts); it does not
certify them — ``python -m exactmem certify proofs/kajitsuka_paper.py`` certifies the shipped
instances and ``proofs/kajitsuka_paper_errata.py`` the real-valued form's witness (REFUTED).
``tests/test_kajitsuka_paper.py`` runs :func:`scan` over the grid (a sample by default, all of
it with ``-m slow``).

    python benchmarks/eq110_scan.py [--quick]       # full grid (172 instances): about 2 minutes
"""

import itertools
import sys
from typing import NamedTuple, Optional

from exactmem.constructions.kajitsuka import compact as kajitsuka
from exactmem.constructions.kajitsuka import paper as kp
from exactmem.data.kajitsuka_data import generate
from exactmem.model.measure import measure
from exactmem.proofs._kajitsuka_core import stage_bounds
from exactmem.proofs.kajitsuka_paper import stage_depth_110, theorem_depth_41

GRID = dict(N=[2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 40], n=[2, 4], d=[1, 2, 3], C=[2, 4], seed=[0, 1])
QUICK = dict(N=[4, 12, 30], n=[2], d=[2], C=[2], seed=[0])


class Row(NamedTuple):
    N: int
    n: int
    d: int
    C: int
    seed: int
    blocks: int  # blocks L of the network in the paper's blocks
    before: int  # Σ(⌊(110)⌋ − 1), real-valued printed form
    now: int  # Σ((110) − 1), the lemmas' integers
    eq41: int  # 2·(110)(N, C, R) − 1, the lemmas' integers
    compact_depth: Optional[int] = None
    compact_bound: Optional[int] = None  # Σ⌊(110)⌋ − 1, real-valued


def instances(grid):
    """The grid's (N, n, d, C, seed) whose data exist (generate() refuses too few sequences)."""
    for N, n, d, C, seed in itertools.product(*grid.values()):
        try:
            data = generate(N, n, d, C, seed, "next_token")
        except ValueError:  # e.g. too few distinct sequences for this vocabulary
            continue
        yield (N, n, d, C, seed), data


def scan_one(key, data, compact=True) -> Optional[Row]:
    """One row, or None when a Lemma C.1 stage has fewer than 2 points ((110) undefined: log N = 0)."""
    seed = key[-1]
    p = kp.build(data, seed=seed)
    st = stage_bounds(p)
    if st is None:  # a stage with fewer than 2 points (errata, Lemma C.1 item 5)
        return None
    row = Row(*key, kp.paper_blocks(p), st[0] - 1, stage_depth_110(p) - 1, theorem_depth_41(p.info))
    if compact:
        c = kajitsuka.build(data, seed=seed)
        stc = stage_bounds(c)
        row = row._replace(compact_depth=measure(c.model).depth, compact_bound=stc[0] if stc else None)
    return row


def scan(grid, compact=True):
    for key, data in instances(grid):
        row = scan_one(key, data, compact)
        if row is not None:
            yield row


def main(argv):
    rows = list(scan(QUICK if "--quick" in argv else GRID))
    print("| N | n | d | C | seed | blocks L | Σ(⌊(110)⌋ − 1) real | L within? | Σ((110) − 1) integers | L within? "
          "| (41) D | compact depth | its (110) bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    yn = lambda ok: "yes" if ok else "NO"  # noqa: E731
    for r in rows:
        print(f"| {r.N} | {r.n} | {r.d} | {r.C} | {r.seed} | {r.blocks} | {r.before} | {yn(r.blocks <= r.before)} | "
              f"{r.now} | {yn(r.blocks <= r.now)} | {r.eq41} | {r.compact_depth} | {r.compact_bound} |")
    before = [r for r in rows if r.blocks > r.before]
    now = [r for r in rows if r.blocks > r.now]
    print(f"\nblocks exceed Σ(⌊(110)⌋ − 1), real-valued (the claim before): {len(before)} of {len(rows)} instances "
          f"(largest N: {max((r.N for r in before), default='-')})")
    print(f"blocks exceed Σ((110) − 1) with the lemmas' integers (the claim now): {len(now)} of {len(rows)}")
    print(f"blocks within eq. (41): {sum(r.blocks <= r.eq41 for r in rows)} of {len(rows)}; compact depth within "
          f"its (110) bound: {sum(r.compact_bound is not None and r.compact_depth <= r.compact_bound for r in rows)} "
          f"of {len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:])
