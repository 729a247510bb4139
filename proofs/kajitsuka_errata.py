"""Kajitsuka & Sato Lemma B.2: the proof's recipe REFUTED by design, the statement CERTIFIED
with the witness f the tool finds (docs/errata.md).

The theorems live in the package, in ``exactmem/proofs/kajitsuka_errata.py`` (module
``exactmem.proofs.kajitsuka_errata``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem certify proofs/kajitsuka_errata.py``.
A proof file of your own defines ``THEOREMS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.kajitsuka_errata import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka_errata import THEOREMS  # noqa: F401 - what the loader reads
