"""Kajitsuka & Sato Theorem D.1 (deep sets), also listed by ``proofs/kajitsuka.py``.

The theorems live in ``exactmem/proofs/kajitsuka_deep_sets.py``; this file re-exports them for
``python -m exactmem certify proofs/kajitsuka_deep_sets.py``.
"""

from exactmem.proofs.kajitsuka_deep_sets import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka_deep_sets import THEOREMS  # noqa: F401 - what the loader reads
