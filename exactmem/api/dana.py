"""Dana, Pydi & Chevaleyre (AISTATS 2025), Corollary 1: the attention-only association memorizer of the API.

An attention-only Transformer memorizes T0 = H·d_h + d associations (Corollary 1; note
``dana.md`` §3).

* [`random_table`][exactmem.api.dana.random_table] — a seeded look-up table of token sequences and next tokens;
* [`associations`][exactmem.api.dana.associations] — the one-layer attention-only Transformer (embeddings, H heads with
  a skip connection, unembedding, argmax decoding). ``mode="base2"`` is exact: base-2
  softmax weights 2^{k_s}/Σ_j 2^{k_j} for integer scores (note §3.7, attention kind
  ``softmax2``); ``mode="rational"`` uses the ordinary softmax, certified with intervals.

Returns a [`Memorizer`][exactmem.api.Memorizer] with the claims of ``exactmem.proofs.dana``. See
``docs/dana.md``.
"""

from __future__ import annotations

from typing import Optional

from ..constructions.dana import association as _D
from ..data.dana_data import LookupTable
from ..data.dana_data import random_table as _random_table
from ..data.dana_data import spread_table as _spread_table
from . import Memorizer, proof_module

__all__ = ["associations", "random_table", "capacity", "LookupTable"]

SOURCE = "Dana, Pydi, Chevaleyre (AISTATS 2025), Corollary 1 (note dana.md §3)"


def capacity(d: int, d_h: int, H: int) -> int:
    """T0 = H·d_h + d associations (Corollary 1)."""
    return _D.capacity(d, d_h, H)


def random_table(N: int, S: int, T0: Optional[int] = None, seed: int = 0, spread: bool = True) -> LookupTable:
    """T0 sequences of S token ids in [0, N) with a next token each. ``spread=True`` uses the
    proof files' generator (sequences spread over the vocabulary); otherwise uniform draws."""
    if spread and T0 is not None:
        return _spread_table(N, S, seed, T0=T0)
    return _random_table(N, S, seed, T0=T0)


def associations(table: LookupTable, d: int, d_h: int, H: int, mode: str = "base2", seed: int = 0,
                 round_readout: bool = False) -> Memorizer:
    """Corollary 1: an attention-only Transformer with H heads of dimension d_h and embedding
    dimension d whose argmax next token is the table's label for every sequence. Needs
    len(table) ≤ H·d_h + d (and the rank bound d + H·min(d_h, d), note §3.6)."""
    b = _D.build_association(table, d, d_h, H, mode=mode, seed=seed, sigma_min=(mode != "base2"),
                             round_readout=round_readout)
    claims = list(proof_module("dana")._size_claims(table.N, table.S, d, d_h, H, len(table)))
    info = dict(b.info, seed=seed)
    return Memorizer(b.model, b.dataset, claims, f"dana.corollary1.{mode}", SOURCE, info, [], None, table, b)
