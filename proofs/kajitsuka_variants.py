"""Kajitsuka & Sato Theorem F.1 (limited bits) and Theorem E.1 (embedding layer), also listed by
``proofs/kajitsuka.py``.

The theorems live in ``exactmem/proofs/kajitsuka_variants.py``; this file re-exports them for
``python -m exactmem certify proofs/kajitsuka_variants.py``.
"""

from exactmem.proofs.kajitsuka_variants import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka_variants import THEOREMS  # noqa: F401 - what the loader reads
