"""Kajitsuka & Sato Theorem B.1 / Corollary 4.1 in the paper's blocks of eq. (4) with our residual
conversion of Theorem B.1's plain FFN (width 20), the tent map of Lemmas G.4-G.6, Lemma B.2's
recipe, and our Lemma C.2 recipe and two-trajectory bit read-out. Only here: ``proofs/kajitsuka.py``
(the main job) lists the compact networks of the same theorems (Theorem B.1's plain FFNs).

The theorems live in ``exactmem/proofs/kajitsuka_paper.py``; this file re-exports them for
``python -m exactmem certify proofs/kajitsuka_paper.py`` (``docs/kajitsuka-paper.md``).
"""

from exactmem.proofs.kajitsuka_paper import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka_paper import THEOREMS  # noqa: F401 - what the loader reads
