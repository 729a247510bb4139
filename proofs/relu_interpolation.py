"""Baseline: a one-hidden-layer ReLU network of width O(N) memorizes N points exactly.

The theorems live in the package, in ``exactmem/proofs/relu_interpolation.py`` (module
``exactmem.proofs.relu_interpolation``), so an installed exactmem certifies the same claims; this file
re-exports that module for ``python -m exactmem certify proofs/relu_interpolation.py``.
A proof file of your own defines ``THEOREMS`` itself (``docs/proof-files.md``).
"""

from exactmem.proofs.relu_interpolation import *  # noqa: F401,F403 - the module's public names
from exactmem.proofs.relu_interpolation import THEOREMS  # noqa: F401 - what the loader reads
