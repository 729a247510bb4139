"""Mahdavi, Liao & Thrampoulidis (ICLR 2024): one H-head attention layer memorizes H(k−1)+1 examples.

The theorems live in the package, in ``exactmem/proofs/mahdavi.py`` (module
``exactmem.proofs.mahdavi``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem certify proofs/mahdavi.py``.
A proof file of your own defines ``THEOREMS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.mahdavi import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.mahdavi import THEOREMS  # noqa: F401 - what the loader reads
