"""Dana, Pydi & Chevaleyre: Propositions 2 and 3 and Corollary 2, checked step by step.

The entries live in ``exactmem/proofs/dana_encoders.py``; this file re-exports them for
``python -m exactmem bounds run proofs/dana_encoders.py``.
"""

from exactmem.proofs.dana_encoders import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.dana_encoders import LOWER_BOUNDS  # noqa: F401 - what the loader reads
