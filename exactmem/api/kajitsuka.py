"""Kajitsuka & Sato (ICLR 2025): the Õ(√N) memorizing Transformer, as a library call.

* [`next_token`][exactmem.api.kajitsuka.next_token] — Theorem 4.1 / B.1: N consistently labelled (eq. (5)), token-wise
  separated (Assumption 4.1) sequences are memorized at the last position by
  ``E_out ∘ F₂ ∘ F^(UA) ∘ F₁ ∘ E_in`` of width ≤ 14 and depth Õ(√N), Õ(√N) bits per weight;
* [`seq2seq`][exactmem.api.kajitsuka.seq2seq] — Corollary 4.1: the same network read out at every position (eq. (10));
* [`hardmax`][exactmem.api.kajitsuka.hardmax] — the uniform layer written as hard attention (eq. (12)).

Each returns a [`Memorizer`][exactmem.api.Memorizer] whose ``claims`` are the theorem's claims of
``exactmem.proofs.kajitsuka`` for this instance (eqs. (41), (42), (110), (111); this compact
network — Theorem B.1's plain FFNs — meets even the real-valued printed form of (110), which
is stricter than (110) with the integers its lemmas require, ``vardi.eq110_integer``, the form
the network in the paper's blocks, ``proofs/kajitsuka_paper.py``, is claimed against), and whose
``stages`` name the lemmas' layer ranges (F₁'s token id and ϕ̃, the uniform attention, F₂'s
Lemma C.1 stages, including the bit-extraction Stage III of Lemma G.6). Wraps
`exactmem.constructions.kajitsuka.compact.build`; see ``docs/kajitsuka.md``.
"""

from __future__ import annotations

from typing import List

from ..certificate.writer import Claim
from ..constructions.kajitsuka import compact as _K
from ..data.kajitsuka_data import SequenceData
from ..proofs._kajitsuka_core import stage_spans
from . import Memorizer, Stage, proof_module

__all__ = ["next_token", "seq2seq", "hardmax", "claims", "stages"]

SOURCE = "Kajitsuka & Sato (ICLR 2025) Theorem 4.1 / B.1"


def stages(b: _K.KajitsukaBuild) -> List[Stage]:
    """Named layer ranges of a built network (`exactmem.proofs._kajitsuka_core.stage_spans`)."""
    return [Stage(name, start, stop) for name, start, stop in stage_spans(b)]


def claims(b: _K.KajitsukaBuild) -> List[Claim]:
    """The theorem's claims for a built instance: those of `exactmem.proofs.kajitsuka`
    (exact depth and bits of this implementation, eqs. (41)-(42), (110)-(111), the explicit
    Õ(d + √N) parameter bound)."""
    return list(proof_module("kajitsuka").claims(b))


def _wrap(data: SequenceData, b: _K.KajitsukaBuild, theorem: str, seed: int) -> Memorizer:
    info = dict(b.info)
    info["seed"] = seed
    return Memorizer(b.model, data.to_dataset(), claims(b), theorem, SOURCE, info, stages(b), None, data, b)


def next_token(data: SequenceData, seed: int = 0, r=None, delta=None) -> Memorizer:
    """Theorem 4.1 / B.1: a Transformer that outputs, exactly, the label of each sequence at its
    last position.

    ``data``: `SequenceData` with ``setting="next_token"``
    (from [`exactmem.sequences`][exactmem.api.sequences], [`exactmem.make_data`][exactmem.api.make_data] or [`exactmem.export.importer`][exactmem.export.importer]).
    ``r``, ``delta``: the separation constants of Assumption 4.1 (default: the tightest ones,
    clamped to r ≥ 1 ≥ δ). ``seed`` fixes the random projections and Lemma B.2's weights.
    Raises `DataError` when an assumption fails (the message
    names the tokens or sequences)."""
    if data.setting != "next_token":
        raise ValueError(f"next_token needs next-token data, got setting {data.setting!r}; use seq2seq()")
    return _wrap(data, _K.build(data, seed=seed, r=r, delta=delta), "kajitsuka.next_token", seed)


def seq2seq(data: SequenceData, seed: int = 0, r=None, delta=None) -> Memorizer:
    """Corollary 4.1: every position of every sequence is mapped to its label (eq. (10)
    consistency: same multiset and same token ⇒ same label). F₂ memorizes up to nN context
    ids (note §4.9)."""
    if data.setting != "seq2seq":
        raise ValueError(f"seq2seq needs seq2seq data, got setting {data.setting!r}; use next_token()")
    return _wrap(data, _K.build(data, seed=seed, r=r, delta=delta), "kajitsuka.seq2seq", seed)


def hardmax(data: SequenceData, seed: int = 0, r=None, delta=None) -> Memorizer:
    """The network of [`next_token`][exactmem.api.kajitsuka.next_token] (or [`seq2seq`][exactmem.api.kajitsuka.seq2seq]) with the uniform layer written as
    a hard-attention layer, eq. (12): W_Q = W_K = 0, so every key ties and hardmax averages."""
    b = _K.build(data, seed=seed, attention="hardmax", r=r, delta=delta)
    return _wrap(data, b, "kajitsuka.next_token_hardmax" if data.setting == "next_token" else
                 "kajitsuka.seq2seq_hardmax", seed)


def paper_R2(n: int, N: int, d: int, r2, delta2):
    """Theorem B.1's R² = 160000·3d·n⁶·r²·N¹⁰·π²/δ² (eq. (41)) as an exact enclosure."""
    return _K.paper_R2(n, N, d, r2, delta2)
