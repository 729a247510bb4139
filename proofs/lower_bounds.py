"""Lower bounds of Kajitsuka & Sato (ICLR 2025) and the bit bound, checked step by step.

The theorems live in the package, in ``exactmem/proofs/lower_bounds.py`` (module
``exactmem.proofs.lower_bounds``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem bounds run proofs/lower_bounds.py``.
A proof file of your own defines ``LOWER_BOUNDS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.lower_bounds import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.lower_bounds import LOWER_BOUNDS  # noqa: F401 - what the loader reads
