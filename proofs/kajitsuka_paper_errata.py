"""Kajitsuka & Sato eq. (110) in its real-valued printed form read as an exact depth count: the
network of the paper's blocks exceeds it at small N (REFUTED by design; an observation about an
asymptotic estimate, not an erratum: with the integers of Lemmas G.3 and G.6 it holds; docs/errata.md).

The theorem lives in the package, in ``exactmem/proofs/kajitsuka_paper_errata.py`` (module
``exactmem.proofs.kajitsuka_paper_errata``), so an installed exactmem certifies the same claims;
this file re-exports that module for ``python -m exactmem certify proofs/kajitsuka_paper_errata.py``.
"""

from exactmem.proofs.kajitsuka_paper_errata import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.kajitsuka_paper_errata import THEOREMS  # noqa: F401 - what the loader reads
