"""Measurements the theorems talk about: parameters, width, depth, bit complexity.

Definitions are those of ``docs/certificate.md`` (the independent checker re-derives them
with its own code): width is Kim et al.'s max(m, sH, q) over layers; depth counts ReLU
layers and attention layers; bits of p/q is ``numbers.bits``. Papers count parameters in
their own ways; those conventions are registered by name with [`register_convention`][exactmem.model.register_convention]
and reported next to the exact count, labelled.
"""

from __future__ import annotations

from dataclasses import dataclass, asdict
from typing import Callable, Dict, Iterator, List

from ..arith.numbers import bits
from .layers import Affine, Attention, Embed, FeedForward, Model, shape


def parameters(model: Model) -> Iterator:
    """Every stored parameter entry, layer by layer (zeros included)."""
    for layer in model.layers:
        for M in _matrices(layer):
            for row in M:
                yield from row


def _matrices(layer) -> List:
    if isinstance(layer, Embed):
        return [layer.E] + ([layer.P] if layer.P is not None else [])
    if isinstance(layer, Affine):
        return [layer.W] + ([[layer.b]] if layer.b is not None else [])
    if isinstance(layer, FeedForward):
        return [layer.W1, [layer.b1], layer.W2, [layer.b2]]
    if isinstance(layer, Attention):
        out = []
        for h in layer.heads:
            out += [M for M in (h.WQ, h.WK, h.WV, h.WO) if M is not None]
        return out
    raise TypeError(type(layer).__name__)


def layer_width(layer) -> int:
    """Width contribution of one layer (output dim, q, Σ_h s_h, Σ_h v_h — s·H and v·H when the heads
    agree; docs/certificate.md)."""
    if isinstance(layer, (Embed, Affine)):
        return layer.m_out
    if isinstance(layer, FeedForward):
        return max(layer.m_out, layer.q)
    if isinstance(layer, Attention):
        s = sum(shape(h.WQ)[0] for h in layer.heads if h.WQ is not None)
        v = sum(shape(h.WV)[0] for h in layer.heads)
        return max(layer.m_out, s, v)
    raise TypeError(type(layer).__name__)


@dataclass
class Measurement:
    n_params: int
    n_nonzero: int
    width: int
    relu_depth: int
    attention_layers: int
    depth: int
    max_bits: int
    total_bits: int

    def as_dict(self) -> Dict[str, int]:
        return asdict(self)


def measure(model: Model) -> Measurement:
    """Exact measurement of the model (see module docstring for the definitions)."""
    n = nz = mx = tot = 0
    for w in parameters(model):
        n += 1
        if w:
            nz += 1
        b = bits(w)
        tot += b
        if b > mx:
            mx = b
    relu = sum(1 for l in model.layers if (isinstance(l, Affine) and l.relu) or isinstance(l, FeedForward))
    att = sum(1 for l in model.layers if isinstance(l, Attention))
    width = max(layer_width(l) for l in model.layers)
    return Measurement(n, nz, width, relu, att, relu + att, mx, tot)


_CONVENTIONS: Dict[str, Callable[[Model], int]] = {}


def register_convention(name: str, fn: Callable[[Model], int]) -> None:
    """Register a paper's own parameter-counting convention under a label."""
    _CONVENTIONS[name] = fn


def paper_counts(model: Model) -> Dict[str, int]:
    """All registered conventions evaluated on the model, by label."""
    return {name: fn(model) for name, fn in _CONVENTIONS.items()}


def kim_block_count(model: Model) -> int:
    """Kajitsuka & Sato App. B.2 convention: 4msH + 2(m+1)q per block, E_in/E_out as d·m + m."""
    total = 0
    for l in model.layers:
        if isinstance(l, Attention):
            s = max((shape(h.WQ)[0] for h in l.heads if h.WQ is not None), default=shape(l.heads[0].WV)[0])
            total += 4 * l.m_in * s * len(l.heads)
        elif isinstance(l, FeedForward):
            total += 2 * (l.m_in + 1) * l.q
        elif isinstance(l, Affine):
            total += l.m_in * l.m_out + (l.m_out if l.b is not None else 0)
        elif isinstance(l, Embed):
            total += sum(len(r) for r in l.E) + (sum(len(r) for r in l.P) if l.P is not None else 0)
    return total


register_convention("kajitsuka_4msH+2(m+1)q", kim_block_count)
