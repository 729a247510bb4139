"""Kajitsuka & Sato (ICLR 2025): the main job, ``python -m exactmem certify proofs/kajitsuka.py``.

* ``kajitsuka.next_token``, ``kajitsuka.next_token_hardmax``, ``kajitsuka.seq2seq`` — Theorem 4.1 / B.1
  and Corollary 4.1 in the compact construction (`exactmem.proofs._kajitsuka_core`, which
  also holds their claims): every instance of every size.
* ``kajitsuka.limited_bits``, ``kajitsuka.embedding`` — Theorems F.1 and E.1
  (`exactmem.proofs.kajitsuka_variants`, ``docs/kajitsuka-variants.md``), and
  ``kajitsuka.deep_sets``, ``kajitsuka.deep_sets_phi`` — Theorem D.1, deep sets
  (`exactmem.proofs.kajitsuka_deep_sets`, ``docs/deep-sets.md``): with ``--size small``
  only the instances named in `MAIN_JOB` (the smallest, the edge cases and the ones the
  adversarial campaign mutates); their other small instances run here with ``--size medium``
  and, all of them, with ``--size small`` of their own proof files.

The same theorems in the paper's blocks of eq. (4) with our residual conversion of Theorem
B.1's plain FFN (``kajitsuka.paper_blocks``, ``kajitsuka.paper_blocks_seq2seq``, width 20:
hundreds of blocks, ~20 s for their small
instances) are not listed here: ``python -m exactmem certify proofs/kajitsuka_paper.py``
(`exactmem.proofs.kajitsuka_paper`, ``docs/kajitsuka-paper.md``). So ``--size small`` of
this file stays a main job of a few seconds.
"""

from dataclasses import replace

from exactmem.proofs._kajitsuka_core import *  # noqa: F401,F403 - the core theorems' build, claims and bounds
from exactmem.proofs._kajitsuka_core import THEOREMS as CORE_THEOREMS
from exactmem.proofs.kajitsuka_deep_sets import THEOREMS as DEEP_SETS_THEOREMS
from exactmem.proofs.kajitsuka_variants import THEOREMS as VARIANT_THEOREMS

#: The small instances of the variant and deep-sets theorems that ``--size small`` of this file
#: runs (the compact core theorems run all of theirs).
MAIN_JOB = {
    "kajitsuka.limited_bits": ("N12-n4-d3-C4-B2", "N12-n4-d3-C4-B3"),
    "kajitsuka.embedding": ("N12-n4-omega50-C4", "N1-n1-omega1-C1"),
    "kajitsuka.deep_sets": ("N3-M2-d1-C2", "N8-M3-d2-C3-empty", "N1-M2-d2-C2"),
    "kajitsuka.deep_sets_phi": ("N3-M2-d1-C2", "N8-M3-d2-C3-empty", "N1-M2-d2-C2"),
}


def main_job(theorem, keep):
    """``theorem`` with ``--size small`` narrowed to the instances named in ``keep``; its other
    small instances run with ``--size medium`` instead (a copy: the theorem's own proof file
    keeps its sizes)."""
    missing = set(keep) - {i.name for i in theorem.instances_for("small")}
    if missing:
        raise ValueError(f"{theorem.name}: no small instance {sorted(missing)[0]!r}")

    def resized(inst):
        if "small" not in inst.sizes or inst.name in keep:
            return inst
        rest = tuple(s for s in inst.sizes if s != "small")
        return replace(inst, sizes=rest if "medium" in rest else ("medium",) + rest)

    return replace(theorem, instances=[resized(i) for i in theorem.instances])


THEOREMS = list(CORE_THEOREMS) + [main_job(t, MAIN_JOB[t.name]) if t.name in MAIN_JOB else t
                                  for t in list(VARIANT_THEOREMS) + list(DEEP_SETS_THEOREMS)]
