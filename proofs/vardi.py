"""Vardi, Yehudai & Shamir's Õ(√N) ReLU memorizer (Kajitsuka & Sato Lemmas C.1 and F.1).

The theorems live in the package, in ``exactmem/proofs/vardi.py`` (module
``exactmem.proofs.vardi``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem certify proofs/vardi.py``.
A proof file of your own defines ``THEOREMS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.vardi import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.vardi import THEOREMS  # noqa: F401 - what the loader reads
