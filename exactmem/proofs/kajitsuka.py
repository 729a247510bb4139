"""Kajitsuka & Sato (ICLR 2025): every constructive theorem, one list for
``python -m exactmem certify proofs/kajitsuka.py``.

* ``kajitsuka.next_token``, ``kajitsuka.next_token_hardmax``, ``kajitsuka.seq2seq`` — Theorem 4.1 / B.1
  and Corollary 4.1 in the compact construction (:mod:`exactmem.proofs._kajitsuka_core`, which
  also holds their claims).
"""

from ._kajitsuka_core import *  # noqa: F401,F403 - the core theorems' build, claims and bounds
from ._kajitsuka_core import THEOREMS as CORE_THEOREMS

THEOREMS = list(CORE_THEOREMS)
