"""Kajitsuka & Sato (ICLR 2025): Theorem 4.1 / B.1 (next-token) and Corollary 4.1 (seq-to-seq).

The theorems live in the package, in ``exactmem/proofs/kajitsuka.py`` (module
``exactmem.proofs.kajitsuka``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem certify proofs/kajitsuka.py``.
A proof file of your own defines ``THEOREMS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.kajitsuka import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka import THEOREMS  # noqa: F401 - what the loader reads
