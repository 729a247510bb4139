"""Kajitsuka & Sato eq. (110) read as an exact depth count: the paper-literal network exceeds it
(REFUTED by design; docs/errata.md).

The theorem lives in the package, in ``exactmem/proofs/kajitsuka_paper_errata.py`` (module
``exactmem.proofs.kajitsuka_paper_errata``), so an installed exactmem certifies the same claims;
this file re-exports that module for ``python -m exactmem certify proofs/kajitsuka_paper_errata.py``.
"""

from exactmem.proofs.kajitsuka_paper_errata import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka_paper_errata import THEOREMS  # noqa: F401 - what the loader reads
