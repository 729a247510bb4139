"""Dana, Pydi & Chevaleyre (AISTATS 2025): memorization in attention-only Transformers.

The theorems live in the package, in ``exactmem/proofs/dana.py`` (module
``exactmem.proofs.dana``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem certify proofs/dana.py``.
A proof file of your own defines ``THEOREMS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.dana import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.dana import THEOREMS  # noqa: F401 - what the loader reads
