"""Looking inside a model: a printable summary, attention weights per head, activations.

* [`inspect`][exactmem.inspector.text.inspect] — layers, shapes, parameter and bit counts (``docs/measurement.md``), the
  named stages of a [`Memorizer`][exactmem.api.Memorizer] and its claims, as text (defined in
  `exactmem.model.summary`, below the library surface, so that ``Memorizer.inspect``
  needs no import of this module, which itself uses [`exactmem.api.trace`][exactmem.api.trace]);
* [`attention_table`][exactmem.inspector.text.attention_table] / [`attention_figure`][exactmem.inspector.text.attention_figure] — the attention weights of every head
  for one input (exact Fractions in the table; a heat map per head in the figure);
* [`activation_bits`][exactmem.inspector.text.activation_bits] / [`activations_figure`][exactmem.inspector.text.activations_figure] — the activations of a range of layers
  for one input (e.g. the bit-extraction Stage III of Lemma G.6), as bit lengths and as a
  heat map of log₂(1 + |value|).

Figures use matplotlib (the ``plot`` extra), imported only when a figure is asked for; they
are drawn from exact values converted to floats for display only.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, List, Optional, Sequence, Union

from ..errors import require
from ..model.layers import Model
from ..model.summary import ModelReport, inspect

__all__ = ["ModelReport", "inspect", "attention_table", "attention_figure", "activation_bits",
           "activations_figure"]


# ----------------------------------------------------------------------------- attention


def _trace_of(obj, x):
    from ..api import Trace, trace

    if isinstance(obj, Trace):
        return obj
    if x is None:
        ds = getattr(obj, "dataset", None)
        if ds is None:
            raise TypeError("give an input x (or a Trace, or a Memorizer whose first example is used)")
        x = ds.inputs[0]
    return trace(obj, x)


def _fmt(w) -> str:
    from ..api import _ball_str

    if isinstance(w, Fraction):
        return str(w) if w.denominator.bit_length() <= 32 else f"~{float(w):.6g}"
    return _ball_str(w)


def attention_table(obj: Any, x: Optional[Sequence] = None, layer: int = 0) -> str:
    """The attention weights ``p[query][key]`` of every head of the ``layer``-th attention layer for
    one input, as exact Fractions (Arb balls after softmax). ``obj``: a Trace, or a model /
    Memorizer plus an input ``x`` (default: the Memorizer's first example)."""
    tr = _trace_of(obj, x)
    lt = tr.attention_layers()[layer]
    out = [f"attention layer {lt.index} ({lt.description})"]
    for h, W in enumerate(lt.attention):
        out.append(f"head {h}: rows = queries, columns = keys")
        for r in W:
            out.append("  " + "  ".join(f"{_fmt(w):>8}" for w in r))
    return "\n".join(out)


def _as_float(v) -> float:
    if isinstance(v, Fraction):
        try:
            return float(v)
        except OverflowError:
            return float("inf") if v > 0 else float("-inf")
    try:
        return float(v.mid())
    except AttributeError:
        return float(v)


def attention_figure(obj: Any, x: Optional[Sequence] = None, layer: int = 0, path: Optional[str] = None):
    """A heat map of the attention weights per head (one panel per head; rows = queries,
    columns = keys) of the ``layer``-th attention layer for one input. Returns the matplotlib
    ``Figure``; saves it to ``path`` if given. Needs matplotlib (the ``plot`` extra)."""
    require("matplotlib", "plot", "attention_figure")
    from matplotlib.figure import Figure

    tr = _trace_of(obj, x)
    lt = tr.attention_layers()[layer]
    H = len(lt.attention)
    n = len(lt.attention[0][0])
    queries = list(range(n)) if tr.model.layers[lt.index].query == "all" else [n - 1]
    fig = Figure(figsize=(3.2 * H + 1.2, 0.9 + 0.35 * max(len(queries), 4)), layout="constrained")
    axes = fig.subplots(1, H, squeeze=False)[0]
    for h, (ax, W) in enumerate(zip(axes, lt.attention)):
        M = [[_as_float(w) for w in r] for r in W]
        im = ax.imshow(M, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
        ax.set_title(f"layer {lt.index}, head {h}", fontsize=9)
        ax.set_xlabel("key position")
        ax.set_xticks(range(n))
        ax.set_yticks(range(len(queries)), [str(q) for q in queries])
        if h == 0:
            ax.set_ylabel("query position")
        if len(M[0]) <= 12:
            for i, r in enumerate(W):
                for k, w in enumerate(r):
                    ax.text(k, i, _fmt(w), ha="center", va="center", fontsize=7,
                            color="white" if _as_float(w) < 0.5 else "black")
    fig.colorbar(im, ax=list(axes), shrink=0.9, label="attention weight")
    if path:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig


# ----------------------------------------------------------------------------- activations


def _stage_range(obj, stage) -> range:
    if stage is None:
        return range(len(_model(obj).layers))
    if isinstance(stage, range):
        return stage
    if isinstance(stage, str):
        return obj.stage(stage).layers
    if hasattr(stage, "layers"):
        return stage.layers
    return range(*stage)


def _model(obj) -> Model:
    return obj if isinstance(obj, Model) else obj.model


def activation_bits(obj: Any, x: Optional[Sequence] = None, stage: Union[None, str, range, Sequence[int]] = None,
                    position: int = -1) -> List[List[int]]:
    """Bit lengths (``numbers.bits``) of the activations at one ``position`` for each layer of
    ``stage`` (a stage name of a Memorizer such as ``"F2: Stage III"``, a range of layer
    indices, or None for all layers): one list per layer, one entry per unit."""
    from ..arith.numbers import bits

    tr = _trace_of(obj, x)
    rng = _stage_range(obj, stage)
    out = []
    for i in rng:
        col = tr.layer(i).columns[position]
        out.append([bits(v) if isinstance(v, Fraction) else 0 for v in col])
    return out


def activations_figure(obj: Any, x: Optional[Sequence] = None, stage: Union[None, str, range, Sequence[int]] = None, position: int = -1,
                       path: Optional[str] = None, title: Optional[str] = None):
    """A heat map of the activations of a range of layers at one position: rows = layers,
    columns = units, colour = log₂(1 + |value|) (how many bits each activation carries) —
    the doubling-map bit extraction of Lemma G.6 shows as the key/label registers shifting
    their bits out, one layer per bit. Returns the matplotlib ``Figure`` (saved to ``path``
    if given)."""
    import math

    require("matplotlib", "plot", "activations_figure")
    from matplotlib.figure import Figure

    tr = _trace_of(obj, x)
    rng = _stage_range(obj, stage)
    rows = []
    for i in rng:
        col = tr.layer(i).columns[position]
        r = []
        for v in col:
            if isinstance(v, Fraction):
                a = abs(v)
                r.append(math.log2(1 + float(a)) if a.numerator.bit_length() - a.denominator.bit_length() < 1000
                         else float(a.numerator.bit_length() - a.denominator.bit_length()))
            else:
                r.append(math.log2(1 + abs(_as_float(v))))
        rows.append(r)
    width = max((len(r) for r in rows), default=1)
    M = [r + [float("nan")] * (width - len(r)) for r in rows]
    fig = Figure(figsize=(2.2 + 0.45 * width, 1.5 + 0.14 * len(M)), layout="constrained")
    ax = fig.subplots()
    im = ax.imshow(M, aspect="auto", cmap="magma", interpolation="nearest")
    step = max(1, len(M) // 12)
    ax.set_yticks(range(0, len(M), step), [str(i) for i in list(rng)[::step]])
    ax.set_xticks(range(width))
    ax.set_xlabel("unit (register)")
    ax.set_ylabel("layer")
    name = title or (stage if isinstance(stage, str) else f"layers {rng.start}-{rng.stop - 1}")
    ax.set_title(f"activations at position {position}: {name}", fontsize=9)
    fig.colorbar(im, ax=ax, label="log2(1 + |activation|)")
    if path:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
