"""Mahdavi, Liao & Thrampoulidis (ICLR 2024), Theorem 1: the one-layer attention memorizer of the API.

One multi-head attention layer memorizes T = H(min(n, d_h) − 1) + 1 examples (Theorem 1;
construction of note ``mahdavi.md`` §4).

* [`random_data`][exactmem.api.mahdavi.random_data] — seeded query/context examples (the paper's ``RandomDataset``);
* [`memorize`][exactmem.api.mahdavi.memorize] — the layer, in ``mode="softmax"`` (the paper's layer; real labels are met
  within a certified error bound ε, class labels by a certified argmax) or ``mode="hardmax"``
  (the saturation limit, exact in Q).

Returns a [`Memorizer`][exactmem.api.Memorizer] with the claims of ``exactmem.proofs.mahdavi``. See
``docs/mahdavi.md``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..constructions.mahdavi import construction as _M
from ..data.mahdavi_data import QueryContextData, random_query_context
from . import Memorizer, proof_module

__all__ = ["memorize", "random_data", "capacity", "QueryContextData"]

SOURCE = "Mahdavi, Liao, Thrampoulidis (ICLR 2024), Thm 1; construction of note mahdavi.md §4"


def capacity(H: int, n: int, d_h: int) -> int:
    """T = H(min(n, d_h) − 1) + 1: how many examples H heads of dimension d_h memorize."""
    return _M.capacity(H, n, d_h)


def random_data(H: int, n: int, d: int, d_h: int, seed: int = 0, shared: bool = False,
                classes: Optional[int] = None, coord_range: int = 5) -> QueryContextData:
    """T = capacity(H, n, d_h) seeded examples: a query in Q^d, a context of n tokens in Q^d
    (one shared context if ``shared``), a rational label (or a class in {0, …, classes − 1})."""
    T = _M.capacity(H, n, d_h)
    return random_query_context(T, n, d, seed, shared=shared, coord_range=coord_range,
                                label_kind="class" if classes else "real", num_classes=classes)


def memorize(data: QueryContextData, H: int, d_h: int, mode: str = "softmax", design: str = "factored",
             eps: Fraction = _M.DEFAULT_EPS, seed: int = 0) -> Memorizer:
    """Theorem 1: the attention layer for ``data`` (note §4). ``mode``: ``softmax`` or
    ``hardmax``; ``design``: ``factored`` (small dyadic W_Q, W_K) or ``solve`` (the note
    verbatim); ``eps``: the stated error bound for real labels in softmax mode. The
    saturation scale c is certified from a rigorous lower bound on σ_min (note §4.4)."""
    model, info = _M.build(data, H, d_h, mode=mode, design=design, eps=eps, seed=seed)
    classes = data.num_classes if data.label_kind == "class" else None
    claims = list(proof_module("mahdavi")._claims(data, H, d_h, classes))
    err = info.error_bound if mode == "softmax" and data.label_kind == "real" else None
    summ = dict(info.summary(), seed=seed)
    return Memorizer(model, data.to_dataset(), claims, f"mahdavi.{mode}", SOURCE, summ, [], err, data, info)
