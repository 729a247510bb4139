"""Model ⇄ JSON (the ``model`` object of certificate format v1, ``docs/certificate.md``)."""

from __future__ import annotations

from typing import Any, Dict

from ..arith.numbers import format_rational, parse_rational
from .layers import Affine, Attention, Embed, FeedForward, Head, Model, ModelError


def _m(M):
    return [[format_rational(x) for x in row] for row in M]


def _v(v):
    return [format_rational(x) for x in v]


def layer_to_json(layer) -> Dict[str, Any]:
    if isinstance(layer, Embed):
        return {"type": "embed", "E": _m(layer.E), "P": _m(layer.P) if layer.P is not None else None}
    if isinstance(layer, Affine):
        return {"type": "affine", "W": _m(layer.W), "b": _v(layer.b) if layer.b is not None else None, "relu": layer.relu}
    if isinstance(layer, FeedForward):
        return {"type": "feedforward", "W1": _m(layer.W1), "b1": _v(layer.b1), "W2": _m(layer.W2),
                "b2": _v(layer.b2), "residual": layer.residual}
    if isinstance(layer, Attention):
        heads = []
        for h in layer.heads:
            d = {"WV": _m(h.WV), "WO": _m(h.WO)}
            if h.WQ is not None:
                d["WQ"], d["WK"] = _m(h.WQ), _m(h.WK)
            heads.append(d)
        return {"type": "attention", "kind": layer.kind, "residual": layer.residual, "query": layer.query,
                "keys": layer.keys, "heads": heads}
    raise TypeError(type(layer).__name__)


def model_to_json(model: Model) -> Dict[str, Any]:
    inp = {"type": "vectors", "dim": model.input_dim} if model.input_type == "vectors" else \
        {"type": "tokens", "vocab": model.input_dim}
    return {"input": inp, "layers": [layer_to_json(l) for l in model.layers],
            "readout": {"position": model.readout, "decode": model.decode}}


def _pm(M):
    return [[parse_rational(x) for x in row] for row in M]


def _pv(v):
    return [parse_rational(x) for x in v]


def layer_from_json(d: Dict[str, Any]):
    t = d.get("type")
    if t == "embed":
        return Embed(_pm(d["E"]), _pm(d["P"]) if d.get("P") is not None else None)
    if t == "affine":
        return Affine(_pm(d["W"]), _pv(d["b"]) if d.get("b") is not None else None, bool(d.get("relu", False)))
    if t == "feedforward":
        return FeedForward(_pm(d["W1"]), _pv(d["b1"]), _pm(d["W2"]), _pv(d["b2"]), bool(d.get("residual", True)))
    if t == "attention":
        heads = [Head(WV=_pm(h["WV"]), WO=_pm(h["WO"]), WQ=_pm(h["WQ"]) if h.get("WQ") is not None else None,
                      WK=_pm(h["WK"]) if h.get("WK") is not None else None) for h in d["heads"]]
        return Attention(tuple(heads), d["kind"], bool(d.get("residual", True)), d.get("query", "all"), d.get("keys", "all"))
    raise ModelError(f"unknown layer type {t!r}")


def model_from_json(d: Dict[str, Any]) -> Model:
    inp = d["input"]
    dim = inp["dim"] if inp["type"] == "vectors" else inp["vocab"]
    ro = d.get("readout", {})
    return Model(tuple(layer_from_json(l) for l in d["layers"]), inp["type"], dim,
                 ro.get("position", "last"), ro.get("decode", "identity"))
