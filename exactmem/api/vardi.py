"""The Õ(√N) ReLU memorizer (Vardi, Yehudai & Shamir 2022; Kajitsuka & Sato Lemmas C.1, F.1).

* [`memorize`][exactmem.api.vardi.memorize] — Lemma C.1: N labelled points in Q^d (labels in {0, …, C − 1}) and V − N
  *extra* points are mapped exactly to their labels (extra points to 0) by a ReLU network of
  width ≤ 12 whose labels and keys are packed into the bits of a few huge weights and read
  back by a bit-extraction network (the doubling map, Lemma G.6);
* [`memorize_limited_bits`][exactmem.api.vardi.memorize_limited_bits] — Lemma F.1: the same with at most B² points per memorizer,
  trading bits per weight for depth.

Each returns a [`Memorizer`][exactmem.api.Memorizer] (one example per point, a one-token
sequence) whose claims are those of ``exactmem.proofs.vardi`` (eqs. (110), (111)) and whose stages
name Stage I (projection), II (group selection) and III (bit extraction). See ``docs/vardi.md``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import List, Sequence

from ..certificate.writer import Claim
from ..constructions.vardi import memorizer as _V
from ..data.dataset import Dataset
from . import Memorizer, Stage, proof_module

__all__ = ["memorize", "memorize_limited_bits", "bit_extractor"]

SOURCE = "Kajitsuka & Sato (ICLR 2025) Lemma C.1, extending Vardi, Yehudai & Shamir (ICLR 2022) Thm 3.1"
SOURCE_F1 = "Kajitsuka & Sato (ICLR 2025) Lemma F.1, extending Vardi, Yehudai & Shamir (ICLR 2022) Thm 6.2"


def _dataset(points, labels, extra, C) -> Dataset:
    pts = [tuple(Fraction(x) for x in p) for p in list(points) + list(extra)]
    labs = [(Fraction(int(y)),) for y in labels] + [(Fraction(0),)] * len(extra)
    return Dataset([(p,) for p in pts], labs, "vectors", None, f"{len(points)} points + {len(extra)} extra, C={C}")


def _stages_c1(lay, n_layers: int) -> List[Stage]:
    n3 = lay.relu_layers - (lay.m + 1)
    st = [Stage("Stage I: projection to a line (Lemma C.2)", 0, 1),
          Stage("Stage II: group selection (Lemmas G.2-G.3)", 1, lay.m + 2),
          Stage("Stage III: bit extraction (Lemma G.6)", lay.m + 2, lay.m + 2 + n3),
          Stage("output layer", lay.m + 2 + n3, lay.m + 3 + n3)]
    return st if st[-1].stop == n_layers else []


def _claims(kind: str, info) -> List[Claim]:
    mod = proof_module("vardi")
    return list(mod.c1_claims(info) if kind == "c1" else mod.f1_claims(info))


def memorize(points: Sequence, labels: Sequence, C: int, extra: Sequence = (), seed: int = 0) -> Memorizer:
    """Lemma C.1: a width-≤12 ReLU network with F(x_i) = y_i exactly on the labelled points and
    F(x) = 0 on the ``extra`` points.

    ``points``/``extra``: vectors of ints, Fractions or ``"p/q"`` strings (floats refused),
    pairwise distinct; ``labels``: ints in {0, …, C − 1}. The rounding choices (g slots per
    group, m groups, key width ρ, label width c) are in ``info`` and documented in
    ``docs/vardi.md``."""
    model, info = _V.build_c1(points, labels, C, extra, seed=seed)
    info = dict(info, seed=seed)
    return Memorizer(model, _dataset(points, labels, extra, C), _claims("c1", info), "vardi.c1", SOURCE, info,
                     _stages_c1(info["layout"], len(model.layers)), None, (points, labels, extra), None)


def memorize_limited_bits(points: Sequence, labels: Sequence, C: int, B: int, extra: Sequence = (),
                          seed: int = 0) -> Memorizer:
    """Lemma F.1: one shared projection, then one Lemma C.1 memorizer per subset of B² sorted
    points, summed in a carried register (eq. (140)); bits per weight ≈ √(B²/log B²)·max(ρ, c)
    instead of √(N/log N)·max(ρ, c), at the price of depth. Needs 1 ≤ B ≤ √N."""
    model, info = _V.build_f1(points, labels, C, B, extra, seed=seed)
    info = dict(info, seed=seed)
    return Memorizer(model, _dataset(points, labels, extra, C), _claims("f1", info), "vardi.f1", SOURCE_F1, info,
                     [], None, (points, labels, extra), None)


def bit_extractor(M: int, nbits: int = None):
    """The doubling-map gadget alone (background note §1.3(c)): input an integer 0 ≤ U < 2^M,
    outputs its top ``nbits`` bits and the shifted remainder; one ReLU layer per bit. Returns
    a [`Model`][exactmem.model.Model] (try ``exactmem.run(m, [[(13,)]])`` with M = 4)."""
    return _V.bit_extractor(M, nbits)
