"""Kajitsuka & Sato (ICLR 2025) Theorem B.1 / Corollary 4.1 built from the paper's Transformer blocks of eq. (4).

The blocks come with our residual conversion of Theorem B.1's plain FFN (width 20;
``docs/kajitsuka-paper.md``): Transformer blocks of eq. (4) — self-attention with residual, then the
residual token-wise feed-forward layer of eq. (3) — between linear E_in and E_out. Theorem B.1
states plain deep ReLU networks F₁, F₂ ("unlike eq. (3)"); the compact build is that network, and
the conversion into residual blocks is ours.

Differences from the compact build (`exactmem.constructions.kajitsuka.compact`):

* every ReLU layer of F₁ and F₂ is one block (our conversion) whose attention has W^(O) = 0 (§4.2.1); the
  uniform attention F^(UA) (eq. (52)) is the attention of the first block of F₂
  (`kajitsuka_blocks`);
* Stage III of both Lemma C.1 memorizers (ϕ̃ and f₂) is the tent-map gadget of Lemmas
  G.4–G.6 with our two-trajectory bit read-out (`tent_map`), not the doubling map;
* every Stage I (the token id, ϕ̃, f₂) is our recipe for Lemma C.2 — Park's direction, the scale
  V²√(πd)/(√2δ) rounded up, the shift ⌈s'r⌉ + 2 — and the token weights are Lemma B.2's
  rounded Park direction with the printed shift, or the repaired shift where the printed one
  fails (`kajitsuka_recipes`; ``info["b2 shift used"]``).

Lemma B.1 (the witness set A) and the context ids (53) are the compact build's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, Optional, Sequence

from ...data.kajitsuka_data import SequenceData, check_consistency, check_separation
from ...model.layers import Model
from . import compact as kajitsuka
from . import blocks as kajitsuka_blocks
from . import recipes as rec
from ..vardi import tent_map
from ..vardi import memorizer as vardi
from ..vardi.memorizer import Layout, Program


@dataclass
class PaperBuild:
    """The block model and every fact of the proof measured on the instance."""

    model: Model
    info: Dict[str, object] = field(default_factory=dict)
    phi_layout: Optional[Layout] = None
    f2_layout: Optional[Layout] = None
    compiled: Optional[kajitsuka_blocks.Compiled] = None


def build(data: SequenceData, seed: int = 0, attention: str = "uniform", slope: int = tent_map.SLOPE,
          b2_direction: Optional[Sequence[Fraction]] = None, witnesses: Optional[Sequence[int]] = None) -> PaperBuild:
    """Theorem B.1 (``data.setting == "next_token"``) or Corollary 4.1 (``"seq2seq"``) in the paper's blocks.

    ``b2_direction`` forces Park's v of Lemma B.2 and ``witnesses`` Lemma B.1's set (errata
    instances); ``slope`` ≠ 2 plants a wrong triangle map in both memorizers (tests)."""
    if attention not in ("uniform", "hardmax"):
        raise ValueError(f"attention must be 'uniform' or 'hardmax', not {attention!r}")
    sep = check_separation(data)
    check_consistency(data)
    d = data.d
    tokens, id_seqs = data.token_index()
    V = len(tokens)
    multisets, ms_index = kajitsuka.distinct_multisets(id_seqs)
    A = kajitsuka.witness_set(multisets) if witnesses is None else list(witnesses)
    restricted = rec.restrict(multisets, A)
    f, b2 = rec.b2_weights(restricted, A, seed, direction=b2_direction)
    sums = kajitsuka.weighted_counts(multisets, f)
    F_lemma = kajitsuka.weight_range(len(multisets), len(A)) if A else 0
    C1 = max([F_lemma] + list(f.values())) + 1

    # F₁: the token id (Lemma C.2) beside ϕ̃ (Lemma C.1 with the tent map, 0 on V \ A)
    prep_tok = vardi.prepare(tokens, [0] * V, (), 1, min_dist2=sep.min_dist2)
    proj_tok, c2_tok = rec.c2_projection(prep_tok, seed + 11)
    inputs = [f"z{k}" for k in range(d)]
    prog = Program(inputs)
    first = {"tid": vardi.stage1_expr(proj_tok, inputs)}
    phi_lay = proj_phi = prep_phi = c2_phi = None
    phi_groups: list = []
    if A:
        extra = [tokens[j] for j in range(V) if j not in f]
        prep_phi = vardi.prepare([tokens[j] for j in A], [f[j] for j in A], extra, C1, min_dist2=sep.min_dist2)
        proj_phi, c2_phi = rec.c2_projection(prep_phi, seed + 12)
        first["x"] = vardi.stage1_expr(proj_phi, inputs)
    prog.layer(first, carry=False)
    phi_out = ({}, 0)
    if A:
        phi_out, phi_lay, phi_groups = tent_map.emit_stages_2_3(prog, prep_phi, proj_phi, C1, slope=slope)
    prog.layer({"phi": phi_out, "tid": ({"tid": 1}, 0), "avg": ({}, 0)}, relu=False, carry=False)
    attn = kajitsuka_blocks.AttnOp(len(prog.layers), "avg", "phi")

    # F₂ on the context ids (Lemma C.1, tent map), read from (phi, tid, avg)
    ctx_label, _ = kajitsuka.context_labels(id_seqs, data.labels, data.setting, f, sums, ms_index,
                                            proj_tok.values.__getitem__)
    contexts = list(ctx_label)
    prep2 = vardi.prepare(contexts, [ctx_label[s] for s in contexts], (), data.C)
    proj2, c2_f2 = rec.c2_projection(prep2, seed + 13)
    prog.layer({"x": vardi.stage1_expr(proj2, ["phi", "tid", "avg"])}, carry=False)
    out, f2_lay, f2_groups = tent_map.emit_stages_2_3(prog, prep2, proj2, data.C, slope=slope)
    prog.layer({"out": out}, relu=False, carry=False)

    comp = kajitsuka_blocks.compile_blocks(prog, ["out"], attn, attention)
    model = Model(tuple(comp.layers), "vectors", d, "last" if data.setting == "next_token" else "all", "identity",
                  name=f"kajitsuka_paper_{data.setting}_{attention}")
    info = _info(data, sep, multisets, A, f, b2, F_lemma, C1, proj_tok, c2_tok, prep_phi, proj_phi, c2_phi,
                 prep2, proj2, c2_f2, contexts, comp, attention, slope)
    info["stage2 bits"] = max([tent_map.stage2_bits(f2_groups)] + ([tent_map.stage2_bits(phi_groups)] if A else []))
    return PaperBuild(model, info, phi_lay, f2_lay, comp)


def _info(data, sep, multisets, A, f, b2, F_lemma, C1, proj_tok, c2_tok, prep_phi, proj_phi, c2_phi,
          prep2, proj2, c2_f2, contexts, comp, attention, slope) -> Dict[str, object]:
    """The keys `exactmem.proofs._kajitsuka_core.stage_bounds` and ``theorem_bounds`` read, and the
    recipes' records."""
    max_ctx_n2 = max(sum((x * x for x in s), Fraction(0)) for s in contexts)
    n, N, d = data.n, data.N, data.d
    return {
        "setting": data.setting, "attention": attention, "N": N, "N distinct": data.N_distinct, "n": n, "d": d, "C": data.C,
        "architecture": "Transformer blocks, eq. (4): attention + residual FFN (eq. (3))",
        "stage III": "tent map (Lemmas G.4-G.6)", "slope": slope,
        "distinct multisets N'": len(multisets), "distinct tokens V": len(proj_tok.values), "witness set |A|": len(A),
        "b2 shift used": b2.shift, "b2 printed shift c": b2.printed_c, "b2 shift c": b2.c,
        "b2 printed failure": b2.printed_failure, "b2 direction draws": b2.tries,
        "weight range F = ceil(4 N'^2 |A| sqrt(pi))": C1 - 1, "Lemma B.2 range ceil(4 N'^2 |A| sqrt(pi))": F_lemma,
        "max f": max(f.values(), default=0),
        "r^2 (clamped >= 1)": sep.r2, "delta^2 (clamped <= 1)": sep.delta2,
        "token id projection bits": proj_tok.bits, "token id range": (min(proj_tok.values), max(proj_tok.values)),
        "token id C.2 scale s'": c2_tok.scale, "token id Park draws": c2_tok.tries,
        "phi projection bits": proj_phi.bits if proj_phi else None,
        "phi V (points)": len(proj_tok.values), "phi N (labelled = |A|)": len(A),
        "phi r^2": prep_phi.r2 if prep_phi else None, "phi delta^2": prep_phi.delta2 if prep_phi else None,
        "phi Park draws": c2_phi.tries if c2_phi else None,
        "F2 N (contexts)": len(contexts), "F2 r^2": prep2.r2, "F2 delta^2": prep2.delta2,
        "F2 projection bits": proj2.bits, "F2 Park draws": c2_f2.tries,
        "(56) max ||s||^2": max_ctx_n2,
        "embedding width m": comp.m, "max hidden width q": comp.q_max, "paper blocks L": comp.blocks,
        "C.2 facts (token id)": c2_tok.facts,
    }


# ----------------------------------------------------------------------------- exact sizes


def paper_blocks(b: PaperBuild) -> int:
    """The paper's depth (number of blocks L, §3.2) from the layouts: F₁ = Stage I (1) + ϕ̃'s
    tent-map Stages II–III; F₂ = Stage I + its Stages II–III. Linear layers cost no block."""
    f1 = 1 + (tent_map.relu_layers(b.phi_layout) if b.phi_layout else 0)
    return f1 + 1 + tent_map.relu_layers(b.f2_layout)


def width(b: PaperBuild) -> int:
    """Kim et al.'s width max(m, sH, q) from the compiler's bookkeeping (s = H = 1)."""
    return max(b.compiled.m, b.compiled.q_max, 1)
