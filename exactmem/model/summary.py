"""Printable summary of a model: layers, shapes, parameter and bit counts."""

from __future__ import annotations


from ..numbers import bits
from .layers import Affine, Embed, FeedForward, Model, shape
from .measure import _matrices, measure, paper_counts


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
