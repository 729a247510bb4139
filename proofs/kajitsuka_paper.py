"""Kajitsuka & Sato Theorem B.1 / Corollary 4.1 in the paper's own architecture (eq. (3)-(4) blocks,
the tent map of Lemmas G.4-G.6, the Lemma B.2 / C.2 recipes). Only here: ``proofs/kajitsuka.py``
(the main job) lists the compact networks of the same theorems.

The theorems live in ``exactmem/proofs/kajitsuka_paper.py``; this file re-exports them for
``python -m exactmem certify proofs/kajitsuka_paper.py`` (``docs/kajitsuka-paper.md``).
"""

from exactmem.proofs.kajitsuka_paper import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka_paper import THEOREMS  # noqa: F401 - what the loader reads
