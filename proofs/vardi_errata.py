"""Literal readings of Kajitsuka & Sato App. C and G: REFUTED by design (docs/errata.md).

The theorems live in the package, in ``exactmem/proofs/vardi_errata.py`` (module
``exactmem.proofs.vardi_errata``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem certify proofs/vardi_errata.py``.
A proof file of your own defines ``THEOREMS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.vardi_errata import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.vardi_errata import THEOREMS  # noqa: F401 - what the loader reads
