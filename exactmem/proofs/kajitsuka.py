"""Kajitsuka & Sato (ICLR 2025): every constructive theorem, one list for
``python -m exactmem certify proofs/kajitsuka.py``.

* ``kajitsuka.next_token``, ``kajitsuka.next_token_hardmax``, ``kajitsuka.seq2seq`` — Theorem 4.1 / B.1
  and Corollary 4.1 in the compact construction (:mod:`exactmem.proofs._kajitsuka_core`, which
  also holds their claims).
* ``kajitsuka.paper_blocks``, ``kajitsuka.paper_blocks_seq2seq`` — the same theorems in the paper's
  own architecture (:mod:`exactmem.proofs.kajitsuka_paper`, ``docs/kajitsuka-paper.md``).
* ``kajitsuka.deep_sets``, ``kajitsuka.deep_sets_phi`` — Theorem D.1, deep sets
  (:mod:`exactmem.proofs.kajitsuka_deep_sets`, ``docs/deep-sets.md``).
* ``kajitsuka.limited_bits``, ``kajitsuka.embedding`` — Theorems F.1 and E.1
  (:mod:`exactmem.proofs.kajitsuka_variants`, ``docs/kajitsuka-variants.md``).
"""

from ._kajitsuka_core import *  # noqa: F401,F403 - the core theorems' build, claims and bounds
from ._kajitsuka_core import THEOREMS as CORE_THEOREMS
from .kajitsuka_deep_sets import THEOREMS as DEEP_SETS_THEOREMS
from .kajitsuka_paper import THEOREMS as PAPER_THEOREMS
from .kajitsuka_variants import THEOREMS as VARIANT_THEOREMS

THEOREMS = list(CORE_THEOREMS) + list(PAPER_THEOREMS) + list(VARIANT_THEOREMS) + list(DEEP_SETS_THEOREMS)
