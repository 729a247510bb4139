"""Validation of a layer model (kernel; layer models only, ``docs/certificate.md``).

``read_layers`` checks the layers' fields and shapes with the schema's reader (numbers within the
digit limit, parameters collected for the size claims) and returns them as `linear` holds them, with
the size quantities; ``layer_answers`` checks one example against the layers (positional rows, keys
'others') and reads its label and claimed output. ``schema.parse_certificate`` calls them for a model
with ``layers`` only, so the graph-model base does not carry them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import List, Optional

from .fields import _list, _obj, _str, bad, integer, jtype
from .linear import Affine, Attention, Embed, FeedForward, Lin, over_lcm

ATTENTION_KINDS = ("softmax", "hardmax", "uniform", "softmax2")
LAYER_FIELDS = {"embed": (("type", "E"), ("P",)), "affine": (("type", "W", "relu"), ("b",)),  # (required, optional)
                "feedforward": (("type", "W1", "b1", "W2", "b2", "residual"),),
                "attention": (("type", "kind", "residual", "query", "keys", "heads"),)}


def _bool(x, path: str) -> bool:
    if not isinstance(x, bool):
        bad(path, f"expected true or false, got {jtype(x)}")
    return x


def mat(rd, x, rows: Optional[int], cols: Optional[int], path: str) -> List[List[Fraction]]:
    rs = _list(x, path, nonempty=True)
    if rows is not None and len(rs) != rows:
        bad(path, f"wrong shape: expected {rows} rows, got {len(rs)}")
    cols = cols or len(_list(rs[0], f"{path}[0]", nonempty=True))
    for i, r in enumerate(rs):
        if not isinstance(r, (list, tuple)) or len(r) != cols:
            bad(f"{path}[{i}]", f"wrong shape: expected a row of {cols} entries, got "
                                f"{len(r) if isinstance(r, (list, tuple)) else jtype(r)}")
    return [rd.vec(r, cols, f"{path}[{i}]", True) for i, r in enumerate(rs)]


def read_layer(rd, d, path: str, m: int, first: bool, tokens: bool):
    """Validate one layer acting on m-dim tokens; return (layer, output dim, width)."""
    t = _str(_obj(d, path, ("type",), None)["type"], f"{path}.type", tuple(LAYER_FIELDS))
    if (t == "embed") != (first and tokens):
        bad(path, "an embed layer must be the first layer, and only of a model with token input"
            if t == "embed" else "a model with token input must start with an embed layer")
    _obj(d, path, *LAYER_FIELDS[t])
    if t == "embed":
        E = mat(rd, d["E"], m, None, f"{path}.E")
        P = None if d.get("P") is None else mat(rd, d["P"], None, len(E[0]), f"{path}.P")
        rows, L = over_lcm(E + (P or []), rd.budget)
        return Embed(rows[:len(E)], None if P is None else rows[len(E):], L), len(E[0]), len(E[0])
    if t == "affine":
        W = mat(rd, d["W"], None, m, f"{path}.W")
        b = None if d.get("b") is None else rd.vec(d["b"], len(W), f"{path}.b", True)
        return Affine(Lin.make(W, b, rd.budget), _bool(d["relu"], f"{path}.relu")), len(W), len(W)
    if t == "feedforward":
        W1 = mat(rd, d["W1"], None, m, f"{path}.W1")
        b1 = rd.vec(d["b1"], len(W1), f"{path}.b1", True)
        W2, b2 = mat(rd, d["W2"], m, len(W1), f"{path}.W2"), rd.vec(d["b2"], m, f"{path}.b2", True)
        ff = FeedForward(Lin.make(W1, b1, rd.budget), Lin.make(W2, b2, rd.budget), _bool(d["residual"], f"{path}.residual"))
        return ff, m, max(m, len(W1))
    kind = _str(d["kind"], f"{path}.kind", ATTENTION_KINDS)
    residual = _bool(d["residual"], f"{path}.residual")
    heads, m_out, sH, vH = [], None, 0, 0
    for h, hd in enumerate(_list(d["heads"], f"{path}.heads", nonempty=True)):
        hp = f"{path}.heads[{h}]"
        _obj(hd, hp, ("WV", "WO"), ("WQ", "WK"))
        for k in ("WQ", "WK"):
            if kind == "uniform" and hd.get(k) is not None:
                bad(f"{hp}.{k}", "must be absent or null for uniform attention")
            if kind != "uniform" and hd.get(k) is None:
                bad(hp, f"missing field {k!r} ({kind} attention needs query and key matrices)")
        WQ = WK = None
        if kind != "uniform":
            WQ = mat(rd, hd["WQ"], None, m, f"{hp}.WQ")
            WK, sH = mat(rd, hd["WK"], len(WQ), m, f"{hp}.WK"), sH + len(WQ)
        WV = mat(rd, hd["WV"], None, m, f"{hp}.WV")
        WO = mat(rd, hd["WO"], m_out, len(WV), f"{hp}.WO")
        m_out, vH = len(WO), vH + len(WV)
        mk = lambda W: W and Lin.make(W, None, rd.budget)  # noqa: E731
        heads.append((mk(WQ), mk(WK), mk(WV), mk(WO)))
    if residual and m_out != m:
        bad(f"{path}.heads[0].WO", f"wrong shape: a residual attention layer needs {m} output rows, got {m_out}")
    q = _str(d["query"], f"{path}.query", ("all", "last"))
    keys = _str(d["keys"], f"{path}.keys", ("all", "others"))
    return Attention(kind, residual, q, keys, heads), m_out, max(m_out, sH, vH)


def read_layers(rd, raw, m: int, tokens: bool, decode: str, eps):
    """The layers of ``model.layers`` on m-dim (or vocabulary-m) input: (layers, index of the first
    softmax layer or None, output dim, size quantities, the facts `layer_answers` needs)."""
    layers, width = [], 0
    for i, d in enumerate(_list(raw, "model.layers", nonempty=tokens)):
        layer, m, w = read_layer(rd, d, f"model.layers[{i}]", m, i == 0, tokens)
        layers.append(layer)
        width = max(width, w)
    attention = [i for i, x in enumerate(layers) if isinstance(x, Attention)]
    softmax_at = next((i for i in attention if layers[i].kind == "softmax"), None)
    if softmax_at is not None and decode == "identity" and eps is None:
        bad("check.error_bound", "a model with a softmax layer and identity decode needs an error_bound")
    relu = sum(1 for x in layers if isinstance(x, FeedForward) or (isinstance(x, Affine) and x.relu))
    sizes = {"width": width, "relu_depth": relu, "attention_layers": len(attention), "depth": relu + len(attention)}
    facts = (len(layers[0].P) if tokens and layers and layers[0].P is not None else None,
             [i for i in attention if layers[i].keys == "others"],
             next((i for i in attention if layers[i].query == "last"), None), softmax_at, decode)
    return layers, softmax_at, m, sizes, facts


def layer_answers(rd, spec: tuple, e: int, n: int, y, out, where: str, out_where: str):
    """Example e (length n) of a layer model: its length against the positional rows and the
    attention layers with keys 'others'; (label, claimed output: None where a softmax model with
    identity decode claims none)."""
    vocab, _, position, out_dim, (P_rows, need2, last_at, softmax_at, decode), *_ = spec
    path = f"{where}inputs[{e}]"
    if vocab is not None and P_rows is not None and n > P_rows:
        bad(path, f"sequence of length {n} is longer than the {P_rows} rows of model.layers[0].P")
    for i in need2:
        if (n if last_at is None or last_at >= i else 1) < 2:
            bad(path, f"model.layers[{i}] attends to keys 'others' of a length-1 sequence (no keys left)")
    n_out, exact = n if last_at is None else 1, softmax_at is None or decode == "argmax"
    label = answer(rd, y, f"{where}labels[{e}]", position, decode, n_out, out_dim, True)
    if not exact and out is not None:
        bad(f"{out_where}outputs[{e}]", "must be null: a softmax model with identity decode claims no exact output")
    return label, answer(rd, out, f"{out_where}outputs[{e}]", position, decode, n_out, out_dim, False) if exact else None


def answer(rd, x, path: str, position: str, decode: str, n_out: int, dim: int, is_label: bool):
    """A label or claimed output: a column / class index, or a list of them per position."""
    if position == "all":
        return [answer(rd, y, f"{path}[{t}]", "last", decode, 1, dim, is_label) for t, y in enumerate(_list(x, path, n_out))]
    if decode == "argmax":
        return integer(x, path, 0, None if dim is None else dim - 1) if is_label else integer(x, path)
    return rd.vec(x, dim, path)
