"""Printable summary of a model: layers, shapes, parameter and bit counts, and a Memorizer's stages and claims.

[`inspect`][exactmem.inspector.text.inspect] (``em.inspect``, also a [`Memorizer`][exactmem.api.Memorizer] method) adds a Memorizer's
stages and claims to the model's layers, shapes, parameter and bit counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List

from ..arith.numbers import bits
from .layers import Affine, Attention, Embed, FeedForward, Model, shape
from .measure import Measurement, _matrices, measure, paper_counts


def _layer_line(i: int, layer) -> str:
    entries = [x for M in _matrices(layer) for row in M for x in row]
    mb = max((bits(x) for x in entries), default=0)
    if isinstance(layer, Embed):
        desc = f"embed      vocab {shape(layer.E)[0]} -> {layer.m_out}" + (f", {len(layer.P)} positions" if layer.P else "")
    elif isinstance(layer, Affine):
        desc = f"affine     {layer.m_in} -> {layer.m_out}" + (" + ReLU" if layer.relu else "")
    elif isinstance(layer, FeedForward):
        desc = f"feedfwd    {layer.m_in} -> q={layer.q} -> {layer.m_out}" + (" (+residual)" if layer.residual else "")
    else:
        desc = (f"attention  {layer.kind}, {len(layer.heads)} head(s), {layer.m_in} -> {layer.m_out}, "
                f"query={layer.query}, keys={layer.keys}" + (" (+residual)" if layer.residual else ""))
    return f"{i:>4}  {desc:<62} params {len(entries):>8}  max bits {mb:>6}"


def summarize(model: Model, max_lines: int = 40) -> str:
    """Text summary; long stacks are elided in the middle."""
    lines = [f"model: input {model.input_type} ({model.input_dim}), readout {model.readout}, decode {model.decode}"]
    L = len(model.layers)
    idx = list(range(L)) if L <= max_lines else list(range(max_lines // 2)) + [None] + list(range(L - max_lines // 2, L))
    for i in idx:
        lines.append("   ...  (%d layers)" % (L - max_lines + max_lines % 2) if i is None else _layer_line(i, model.layers[i]))
    m = measure(model)
    lines.append("totals: " + ", ".join(f"{k} {v}" for k, v in m.as_dict().items()))
    for k, v in paper_counts(model).items():
        lines.append(f"paper convention {k}: {v}")
    return "\n".join(lines)


@dataclass
class ModelReport:
    """What [`inspect`][exactmem.inspector.text.inspect] returns: ``str(report)`` is the printable summary; the fields hold
    the same facts as data."""

    text: str
    measurement: Measurement
    layers: List[Dict[str, Any]] = field(default_factory=list)
    stages: List[Dict[str, Any]] = field(default_factory=list)
    paper_counts: Dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _layer_row(i: int, layer) -> Dict[str, Any]:
    entries = [x for M in _matrices(layer) for row in M for x in row]
    row = {"index": i, "type": type(layer).__name__.lower(), "params": len(entries),
           "nonzero": sum(1 for x in entries if x), "max_bits": max((bits(x) for x in entries), default=0)}
    if isinstance(layer, Embed):
        row["shape"] = f"vocab {len(layer.E)} -> {layer.m_out}"
    elif isinstance(layer, Affine):
        row["shape"] = f"{layer.m_in} -> {layer.m_out}" + (" ReLU" if layer.relu else "")
    elif isinstance(layer, FeedForward):
        row["shape"] = f"{layer.m_in} -> {layer.q} -> {layer.m_out}"
    elif isinstance(layer, Attention):
        row["shape"] = f"{layer.kind} x{len(layer.heads)} heads, {layer.m_in} -> {layer.m_out}"
    return row


def inspect(model: Any, max_lines: int = 40) -> ModelReport:
    """A printable summary of a model (or [`Memorizer`][exactmem.api.Memorizer]): input and readout,
    one line per layer (long stacks elided in the middle), the exact measurement (parameters,
    nonzero, width, ReLU and attention depth, max and total bits per weight), the papers'
    own parameter conventions, and for a Memorizer its stages (e.g. Kajitsuka & Sato's F₁,
    uniform attention eq. (52), F₂'s Lemma C.1 stages) and its theorem's claims."""
    stages = getattr(model, "stages", None)
    m = model if isinstance(model, Model) else model.model
    meas = measure(m)
    rows = [_layer_row(i, l) for i, l in enumerate(m.layers)]
    lines = []
    if not isinstance(model, Model):
        lines.append(f"{model.theorem}: {len(model.dataset)} examples  ({model.source})")
    lines.append(summarize(m, max_lines))
    st_rows = []
    if stages:
        lines.append("stages:")
        for s in stages:
            seg = rows[s.start:s.stop]
            st_rows.append({"name": s.name, "layers": (s.start, s.stop), "params": sum(r["params"] for r in seg),
                            "max_bits": max((r["max_bits"] for r in seg), default=0)})
            lines.append(f"  layers {s.start:>4}-{s.stop - 1:<4} {s.name:<62} params {st_rows[-1]['params']:>7}"
                         f"  max bits {st_rows[-1]['max_bits']:>5}")
    claims = getattr(model, "claims", None)
    if claims:
        lines.append(f"claims ({len(claims)}): " + "; ".join(str(c) for c in claims))
    return ModelReport("\n".join(lines), meas, rows, st_rows, paper_counts(m))
