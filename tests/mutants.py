"""Planted wrong (and planted neutral) certificates, an independent oracle, and a harness.

This is a test helper, not part of the package. It has three parts:

* :func:`generate` — a deterministic (seeded) **mutant generator**: from one valid certificate
  document it derives edited copies (weight nudges in every layer type, label / output /
  claim edits, structural edits such as toggling a ReLU or a residual, swapping the attention
  kind, dropping or duplicating a head, truncating a sequence, swapping labels, changing the
  readout; issue 24: rows repeated — one, several, all, with respelled rationals — N claimed
  as the row count, one input repeated with another label, claims on the data quantities off
  by one or past the data's δ² / r²). Every mutant is re-hashed with :func:`canonical_hash`,
  so it passes the hash check and reaches the checker's semantics. A mutant is *not assumed wrong*: some edits are
  neutral (a weight that only multiplies zeros, a readout change that keeps every answer).
* :func:`oracle` — decides independently whether a mutant is right or wrong. It shares no
  evaluation code with the checker: exact kinds (ReLU, hardmax, uniform, softmax2) go through
  the package's own exact forward pass (``exactmem.model.forward``, built with
  ``exactmem.model.model_from_json``); from the first ``softmax`` layer on the oracle
  evaluates with ``mpmath`` at high precision (tests only; a decision closer to its boundary
  than ``MP_MARGIN`` is left undecided). Claims on the model are measured with
  ``exactmem.model.measure``; the data quantities (rows, distinct inputs, length, classes,
  tokens, the tokens' largest squared norm and least squared gap) are counted here with Python
  tuples, sets and Fractions (:func:`data_facts`), never by the kernel's ``facts`` module, and a
  row whose input an earlier row holds with another label is a conflict. The order is the
  kernel's: model claims, then the examples in order, then the data claims.
* :func:`run_campaign` — runs a checker on every mutant, compares its verdict with the
  oracle's, and counts kills, agreements and problems (above all: a ``CERTIFIED`` verdict
  for a certificate the oracle finds wrong).

The checker is reached only through its public names (``check_certificate``,
``canonical_hash``, ``MalformedCertificate`` and the fast path's ``check_certificate_fast``),
looked up in :data:`CHECKERS` at call time so a test can plant a fake checker there.
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import mpmath

from exactmem.kernel.checker import MalformedCertificate, canonical_hash, check_certificate
from exactmem.certificate.fastcheck import check_certificate_fast
from exactmem.model import Model, Softmax2Error, decode_output, forward, measure, model_from_json
from exactmem.model.layers import Affine, Attention, FeedForward

#: The checkers the harness runs, looked up at call time (a self-test swaps in a fake).
CHECKERS: Dict[str, Callable] = {"pure": check_certificate, "fast": check_certificate_fast}

#: Small rational nudges for a weight, label or output coordinate.
DELTAS = (Fraction(1, 1000), Fraction(-1, 7), Fraction(1, 2 ** 40), Fraction(3), Fraction(-1))

#: mpmath working precision (decimal digits) and the margin below which the oracle abstains.
MP_DPS = 80
MP_MARGIN = mpmath.mpf(10) ** -40

ATTENTION_KINDS = ("uniform", "hardmax", "softmax2", "softmax")
NEGATED_OP = {"<=": ">", "<": ">=", ">=": "<", ">": "<=", "==": "<"}
OPS = {"==": lambda a, b: a == b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
       "<": lambda a, b: a < b, ">": lambda a, b: a > b}


# ----------------------------------------------------------------------------- small helpers

def q(s: str) -> Fraction:
    """A certificate rational string ``"p"`` / ``"p/q"`` as a Fraction."""
    p, _, d = s.partition("/")
    return Fraction(int(p), int(d) if d else 1)


def s(x: Fraction) -> str:
    """A Fraction as a certificate rational string."""
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def rehash(doc: dict) -> dict:
    """Stamp ``doc`` with its canonical hash (in place) and return it."""
    doc["hash"] = canonical_hash(doc)
    return doc


def has_softmax(doc: dict) -> bool:
    """True iff the model has a (transcendental) ``softmax`` attention layer."""
    return any(l.get("type") == "attention" and l.get("kind") == "softmax" for l in doc["model"]["layers"])


def _out_lengths(doc: dict) -> List[int]:
    """Number of output columns of each example (1 after a ``query: last`` layer)."""
    last = any(l.get("type") == "attention" and l.get("query") == "last" for l in doc["model"]["layers"])
    return [1 if last else len(x) for x in doc["dataset"]["inputs"]]


def _out_dim(doc: dict) -> int:
    return model_from_json(doc["model"]).output_dim


# ----------------------------------------------------------------------------- data facts (the oracle's own)

#: The claim quantities of the certificate format: measured on the model, or counted from the data.
MODEL_QUANTITIES = ("n_params", "n_nonzero", "width", "relu_depth", "attention_layers", "depth", "max_bits",
                    "total_bits", "input_dim")
DATA_QUANTITIES = ("n_examples", "n_rows", "seq_len", "label_classes", "distinct_tokens", "max_norm2", "min_sep2")
VECTOR_QUANTITIES = ("max_norm2", "min_sep2")  # defined for vector inputs only


def _freeze(x):
    """A label / input as nested tuples (hashable; equal values give equal tuples)."""
    return tuple(_freeze(y) for y in x) if isinstance(x, (list, tuple)) else x


@dataclass
class OracleData:
    """What the oracle counts in a dataset, with Python sets and dicts of exact values.

    ``quantities``: the data claim quantities (``max_norm2`` / ``min_sep2`` only for vector
    inputs; ``min_sep2`` None when there are fewer than two distinct tokens). ``conflicts``:
    later row -> the first row with the same input, for rows whose label differs from that
    first row's. ``repeats``: rows whose input an earlier row already has.
    """

    quantities: Dict[str, object]
    conflicts: Dict[int, int]
    repeats: int


_TOKEN_CACHE: Dict[frozenset, Tuple[Fraction, Optional[Fraction]]] = {}


def _token_geometry(tokens: frozenset) -> Tuple[Fraction, Optional[Fraction]]:
    """(max ||t||², min ||t − t'||² over t ≠ t') of distinct token vectors, in integers over a
    common denominator (cached: most mutants keep their base's inputs)."""
    got = _TOKEN_CACHE.get(tokens)
    if got is not None:
        return got
    den = math.lcm(1, *(x.denominator for t in tokens for x in t))
    ints = sorted(tuple(int(x * den) for x in t) for t in tokens)
    norm = max((sum(a * a for a in v) for v in ints), default=0)
    gap = None
    for i, v in enumerate(ints):
        for w in ints[i + 1:]:
            d = sum((a - b) * (a - b) for a, b in zip(v, w))
            if gap is None or d < gap:
                gap = d
    got = (Fraction(norm, den * den), None if gap is None else Fraction(gap, den * den))
    if len(_TOKEN_CACHE) > 512:
        _TOKEN_CACHE.clear()
    _TOKEN_CACHE[tokens] = got
    return got


def data_facts(doc: dict) -> OracleData:
    """Count the version-1 dataset of ``doc``: rows, distinct inputs (exact equality of the
    parsed input), labels per input, classes, tokens, and the tokens' norms and gaps."""
    xs = _inputs(doc)
    allpos = doc["model"]["readout"]["position"] == "all"
    ys = [_freeze(_answer(doc, y)) for y in doc["dataset"]["labels"]]
    first_row: Dict[tuple, int] = {}
    conflicts: Dict[int, int] = {}
    classes, tokens, repeats = set(), set(), 0
    for e, (x, y) in enumerate(zip(xs, ys)):
        tokens.update(x)
        classes.update(y if allpos else (y,))
        f = first_row.setdefault(x, e)
        if f != e:
            repeats += 1
            if ys[f] != y:
                conflicts[e] = f
    quantities = {"n_rows": len(xs), "n_examples": len(first_row), "seq_len": max(map(len, xs), default=0),
                  "label_classes": len(classes), "distinct_tokens": len(tokens)}
    if doc["model"]["input"]["type"] == "vectors":
        quantities["max_norm2"], quantities["min_sep2"] = _token_geometry(frozenset(tokens))
    return OracleData(quantities, conflicts, repeats)


# ----------------------------------------------------------------------------- equivalent rewriting

def as_feedforward(doc: dict, residual: bool = False) -> Optional[dict]:
    """The same certificate with each ``affine(relu) → affine`` pair (m → q → m) as one feedforward.

    ``W2·ReLU(W1 z + b1) + b2`` with ``residual: false`` is exactly the pair's function (an
    absent bias becomes a zero vector), so every label and output still holds. With
    ``residual=True`` the layer is ``z + W2'·ReLU(W1' z + b1') + b2`` with ``W1' = [W1; I; −I]``,
    ``b1' = [b1; 0; 0]``, ``W2' = [W2, −I, I]``: the extra hidden units give
    ``ReLU(z) − ReLU(−z) = z``, which cancels the residual — the same function again. The
    proof files' constructions write their ReLU blocks as affine layers; this gives the
    generator feedforward layers to mutate. Claims the rewriting changes (parameter, width,
    bit counts) are dropped, the rest kept. Returns None if there is no such pair. ``doc`` is
    not modified.
    """
    d = copy.deepcopy(doc)
    d.pop("meta", None)
    layers, out, i = d["model"]["layers"], [], 0
    while i < len(layers):
        a = layers[i]
        b = layers[i + 1] if i + 1 < len(layers) else None
        if (a["type"] == "affine" and a["relu"] and b is not None and b["type"] == "affine" and not b["relu"]
                and len(b["W"]) == len(a["W"][0])):  # a feedforward maps m -> m
            W1, b1 = a["W"], a["b"] or ["0"] * len(a["W"])
            W2, b2 = b["W"], b["b"] or ["0"] * len(b["W"])
            if residual:
                m = len(W1[0])
                eye = [["1" if r == c else "0" for c in range(m)] for r in range(m)]
                neg = [["-1" if r == c else "0" for c in range(m)] for r in range(m)]
                W1, b1 = W1 + eye + neg, b1 + ["0"] * (2 * m)
                W2 = [row + neg[r] + eye[r] for r, row in enumerate(W2)]
            out.append({"type": "feedforward", "W1": W1, "b1": b1, "W2": W2, "b2": b2, "residual": residual})
            i += 2
        else:
            out.append(a)
            i += 1
    if len(out) == len(layers):
        return None
    d["model"]["layers"] = out
    meas = _measured(d)
    d["claims"] = [c for c in d["claims"] if _holds(meas[c["quantity"]], c["op"], q(c["bound"]))]
    return rehash(_plain_claims(d))


# ----------------------------------------------------------------------------- mutant generator

@dataclass
class Mutant:
    """One planted edit of a valid certificate: its kind, a description, the re-hashed document."""

    kind: str
    description: str
    doc: dict
    source: str = ""  # "theorem/instance" of the valid certificate it came from


#: Weight fields per layer type, as (mutant kind, layer type, field, inside a head).
WEIGHT_FIELDS = (
    ("nudge:embed.E", "embed", "E", False), ("nudge:embed.P", "embed", "P", False),
    ("nudge:affine.W", "affine", "W", False), ("nudge:affine.b", "affine", "b", False),
    ("nudge:feedforward.W1", "feedforward", "W1", False), ("nudge:feedforward.b1", "feedforward", "b1", False),
    ("nudge:feedforward.W2", "feedforward", "W2", False), ("nudge:feedforward.b2", "feedforward", "b2", False),
    ("nudge:attention.WQ", "attention", "WQ", True), ("nudge:attention.WK", "attention", "WK", True),
    ("nudge:attention.WV", "attention", "WV", True), ("nudge:attention.WO", "attention", "WO", True),
)


def _weight_slots(doc: dict, ltype: str, fld: str, in_head: bool) -> List[tuple]:
    """Paths (layer, head or None, field, row, col or None) of every entry of one weight field."""
    slots = []
    for li, layer in enumerate(doc["model"]["layers"]):
        if layer["type"] != ltype:
            continue
        holders = [(h, hd) for h, hd in enumerate(layer["heads"])] if in_head else [(None, layer)]
        for h, holder in holders:
            M = holder.get(fld)
            if M is None:
                continue
            if isinstance(M[0], list):
                slots += [(li, h, fld, r, c) for r in range(len(M)) for c in range(len(M[0]))]
            else:
                slots += [(li, h, fld, r, None) for r in range(len(M))]
    return slots


def _nudge(doc: dict, rng: random.Random, ltype: str, fld: str, in_head: bool) -> Optional[str]:
    slots = _weight_slots(doc, ltype, fld, in_head)
    if not slots:
        return None
    li, h, fld, r, c = rng.choice(slots)
    delta = rng.choice(DELTAS)
    layer = doc["model"]["layers"][li]
    holder = layer["heads"][h] if h is not None else layer
    where = f"model.layers[{li}]" + (f".heads[{h}]" if h is not None else "") + f".{fld}[{r}]"
    if c is None:
        holder[fld][r] = s(q(holder[fld][r]) + delta)
    else:
        holder[fld][r][c] = s(q(holder[fld][r][c]) + delta)
        where += f"[{c}]"
    return f"{where} += {s(delta)}"


def _label_flip(doc: dict, rng: random.Random) -> Optional[str]:
    labels = doc["dataset"]["labels"]
    if not labels:
        return None
    e = rng.randrange(len(labels))
    decode, position = doc["model"]["readout"]["decode"], doc["model"]["readout"]["position"]
    t = rng.randrange(len(labels[e])) if position == "all" else None
    if decode == "argmax":
        dim = _out_dim(doc)
        if dim < 2:
            return None
        old = labels[e][t] if t is not None else labels[e]
        new = (old + rng.randrange(1, dim)) % dim
        if t is None:
            labels[e] = new
        else:
            labels[e][t] = new
        return f"label of example {e}{'' if t is None else f' position {t}'}: class {old} -> {new}"
    col = labels[e][t] if t is not None else labels[e]
    i = rng.randrange(len(col))
    delta = rng.choice(DELTAS)
    col[i] = s(q(col[i]) + delta)
    return f"label of example {e}{'' if t is None else f' position {t}'} coordinate {i} += {s(delta)}"


def _output_change(doc: dict, rng: random.Random) -> Optional[str]:
    outs = doc["outputs"]
    cand = [e for e, o in enumerate(outs) if o is not None]
    if not cand:
        return None  # softmax with identity decode: outputs are null by the format
    e = rng.choice(cand)
    decode, position = doc["model"]["readout"]["decode"], doc["model"]["readout"]["position"]
    t = rng.randrange(len(outs[e])) if position == "all" else None
    if decode == "argmax":
        old = outs[e][t] if t is not None else outs[e]
        new = old + rng.choice((1, -1, 2)) if old is not None else 0
        if t is None:
            outs[e] = new
        else:
            outs[e][t] = new
        return f"claimed output of example {e}: class {old} -> {new}"
    col = outs[e][t] if t is not None else outs[e]
    i = rng.randrange(len(col))
    delta = rng.choice(DELTAS)
    col[i] = s(q(col[i]) + delta)
    return f"claimed output of example {e}{'' if t is None else f' position {t}'} coordinate {i} += {s(delta)}"


def _relu_toggle(doc: dict, rng: random.Random) -> Optional[str]:
    cand = [i for i, l in enumerate(doc["model"]["layers"]) if l["type"] == "affine"]
    if not cand:
        return None
    li = rng.choice(cand)
    layer = doc["model"]["layers"][li]
    layer["relu"] = not layer["relu"]
    return f"model.layers[{li}].relu -> {layer['relu']}"


def _m_in_out(layer: dict) -> Tuple[int, int]:
    h = layer["heads"][0]
    return len(h["WV"][0]), len(h["WO"])


def _residual_toggle(doc: dict, rng: random.Random) -> Optional[str]:
    cand = [i for i, l in enumerate(doc["model"]["layers"])
            if l["type"] == "feedforward" or (l["type"] == "attention" and (l["residual"] or
                                                                             _m_in_out(l)[0] == _m_in_out(l)[1]))]
    if not cand:
        return None
    li = rng.choice(cand)
    layer = doc["model"]["layers"][li]
    layer["residual"] = not layer["residual"]
    return f"model.layers[{li}] ({layer['type']}).residual -> {layer['residual']}"


def _kind_swap(doc: dict, rng: random.Random) -> Optional[str]:
    layers = doc["model"]["layers"]
    cand = [i for i, l in enumerate(layers) if l["type"] == "attention"]
    if not cand:
        return None
    li = rng.choice(cand)
    layer = layers[li]
    decode = doc["model"]["readout"]["decode"]
    eps = doc["check"]["error_bound"]
    n_attn = len(cand)
    targets = [k for k in ATTENTION_KINDS if k != layer["kind"]]
    # softmax only where the schema allows it (argmax decode, or an error bound for identity) and
    # only in one-attention-layer models (interval evaluation through dozens of exact layers is slow)
    if not (decode == "argmax" or eps is not None) or n_attn > 1:
        targets = [k for k in targets if k != "softmax"]
    new = rng.choice(targets)
    was_softmax = has_softmax(doc)
    added = False
    for hd in layer["heads"]:
        if new == "uniform":
            hd.pop("WQ", None)
            hd.pop("WK", None)
        elif hd.get("WQ") is None:
            m = len(hd["WV"][0])
            hd["WQ"], hd["WK"] = [["0"] * m], [["0"] * m]
            added = True
    old, layer["kind"] = layer["kind"], new
    now_softmax = has_softmax(doc)
    if decode == "identity" and now_softmax and not was_softmax:
        doc["outputs"] = [None] * len(doc["outputs"])  # the format: no exact output is claimed
    if decode == "identity" and was_softmax and not now_softmax:
        doc["outputs"] = copy.deepcopy(doc["dataset"]["labels"])  # claim the labels as exact outputs
    return f"model.layers[{li}].kind {old} -> {new}" + (" (zero WQ/WK added)" if added else "")


def _scale_query(doc: dict, rng: random.Random) -> Optional[str]:
    """Multiply one head's WQ by a factor: a positive factor keeps hardmax's argmax (neutral), 1/2 can
    make softmax2 scores non-integer, 2^21 spreads softmax2 scores past the checker's 2^20 limit."""
    cand = [(i, h) for i, l in enumerate(doc["model"]["layers"]) if l["type"] == "attention"
            for h, hd in enumerate(l["heads"]) if hd.get("WQ") is not None]
    if not cand:
        return None
    li, h = rng.choice(cand)
    factor = rng.choice((Fraction(2), Fraction(1, 2), Fraction(-1), Fraction(2 ** 21)))
    hd = doc["model"]["layers"][li]["heads"][h]
    hd["WQ"] = [[s(q(x) * factor) for x in row] for row in hd["WQ"]]
    return f"model.layers[{li}].heads[{h}].WQ *= {s(factor)}"


def _head_drop(doc: dict, rng: random.Random) -> Optional[str]:
    cand = [i for i, l in enumerate(doc["model"]["layers"]) if l["type"] == "attention" and len(l["heads"]) > 1]
    if not cand:
        return None
    li = rng.choice(cand)
    h = rng.randrange(len(doc["model"]["layers"][li]["heads"]))
    del doc["model"]["layers"][li]["heads"][h]
    return f"model.layers[{li}].heads[{h}] dropped"


def _head_duplicate(doc: dict, rng: random.Random) -> Optional[str]:
    cand = [i for i, l in enumerate(doc["model"]["layers"]) if l["type"] == "attention"]
    if not cand:
        return None
    li = rng.choice(cand)
    heads = doc["model"]["layers"][li]["heads"]
    h = rng.randrange(len(heads))
    heads.append(copy.deepcopy(heads[h]))
    return f"model.layers[{li}].heads[{h}] duplicated"


def _measured(doc: dict) -> Dict[str, object]:
    """The oracle's measurement: the model's (``exactmem.model.measure``) and the data quantities
    (:func:`data_facts`, computed here from the examples; ``min_sep2`` None: no two distinct tokens)."""
    m = measure(model_from_json(doc["model"])).as_dict()
    inp = doc["model"]["input"]
    m["input_dim"] = inp["dim"] if inp["type"] == "vectors" else inp["vocab"]
    m.update(data_facts(doc).quantities)
    return m


def _holds(value, op: str, bound: Fraction) -> bool:
    """A claim ``value op bound``; a value None (``min_sep2`` of fewer than two distinct tokens: the
    least gap over no pair) satisfies only lower bounds."""
    return op in (">=", ">") if value is None else OPS[op](value, bound)


def _claim_tighten(doc: dict, rng: random.Random) -> Optional[str]:
    claims = doc["claims"]
    if not claims:
        return None
    meas = _measured(doc)
    cand = [c for c, cl in enumerate(claims) if meas[cl["quantity"]] is not None]
    if not cand:
        return None
    c = rng.choice(cand)
    cl = claims[c]
    v = Fraction(meas[cl["quantity"]])
    step = rng.choice((Fraction(1), Fraction(1, 2)))
    new = {"<=": v - step, "<": v, ">=": v + step, ">": v, "==": v + rng.choice((step, -step))}[cl["op"]]
    old, cl["bound"] = cl["bound"], s(new)
    return f"claims[{c}] {cl['quantity']} {cl['op']} {old} -> bound {cl['bound']} (measured {v})"


def _claim_flip(doc: dict, rng: random.Random) -> Optional[str]:
    claims = doc["claims"]
    if not claims:
        return None
    c = rng.randrange(len(claims))
    cl = claims[c]
    old, cl["op"] = cl["op"], NEGATED_OP[cl["op"]]
    return f"claims[{c}] {cl['quantity']} {old} {cl['bound']} -> op {cl['op']}"


def _truncate(doc: dict, rng: random.Random) -> Optional[str]:
    layers = doc["model"]["layers"]
    min_len = 2 if any(l["type"] == "attention" and l["keys"] == "others" for l in layers) else 1
    xs = doc["dataset"]["inputs"]
    cand = [e for e, x in enumerate(xs) if len(x) > min_len]
    if not cand:
        return None
    e = rng.choice(cand)
    n = len(xs[e])
    k = rng.randint(min_len, n - 1)
    xs[e] = xs[e][:k]
    if doc["model"]["readout"]["position"] == "all" and _out_lengths(doc)[e] == k:  # per-position answers
        doc["dataset"]["labels"][e] = doc["dataset"]["labels"][e][:k]
        if doc["outputs"][e] is not None:
            doc["outputs"][e] = doc["outputs"][e][:k]
    return f"example {e} truncated from {n} to {k} tokens"


def _label_swap(doc: dict, rng: random.Random) -> Optional[str]:
    labels = doc["dataset"]["labels"]
    shape = [len(y) if isinstance(y, list) and doc["model"]["readout"]["position"] == "all" else 0 for y in labels]
    pairs = [(a, b) for a in range(len(labels)) for b in range(a + 1, len(labels))
             if labels[a] != labels[b] and shape[a] == shape[b]]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    labels[a], labels[b] = labels[b], labels[a]
    return f"labels of examples {a} and {b} swapped"


def _argmax_index(col: List[str]) -> int:
    vals = [q(x) for x in col]
    top = max(vals)
    return vals.index(top)  # the first maximum; a tie makes the new label wrong, which the oracle sees


def _readout_change(doc: dict, rng: random.Random) -> Optional[str]:
    ro = doc["model"]["readout"]
    ds = doc["dataset"]
    options = ["position", "decode"]
    what = rng.choice(options)
    if what == "position":
        if ro["position"] == "all":
            ro["position"] = "last"
            ds["labels"] = [y[-1] for y in ds["labels"]]
            doc["outputs"] = [o[-1] if o is not None else None for o in doc["outputs"]]
            return "readout.position all -> last (labels and outputs: the last position's)"
        ro["position"] = "all"
        lens = _out_lengths(doc)
        ds["labels"] = [[y] * k for y, k in zip(ds["labels"], lens)]
        doc["outputs"] = [[o] * k if o is not None else None for o, k in zip(doc["outputs"], lens)]
        return "readout.position last -> all (every position claims the old label)"
    allpos = ro["position"] == "all"
    each = (lambda f, y: [f(c) for c in y]) if allpos else (lambda f, y: f(y))
    if ro["decode"] == "identity":
        ro["decode"] = "argmax"
        ds["labels"] = [each(_argmax_index, y) for y in ds["labels"]]
        if has_softmax(doc):  # softmax + argmax: the claimed output is the class index, i.e. the label
            doc["outputs"] = copy.deepcopy(ds["labels"])
        else:
            doc["outputs"] = [each(_argmax_index, o) if o is not None else None for o in doc["outputs"]]
        return "readout.decode identity -> argmax (labels: argmax of the old label columns)"
    dim = _out_dim(doc)
    onehot = lambda k: ["1" if i == k else "0" for i in range(dim)]  # noqa: E731
    ro["decode"] = "identity"
    ds["labels"] = [each(onehot, y) for y in ds["labels"]]
    if has_softmax(doc):
        doc["outputs"] = [None] * len(doc["outputs"])
        if doc["check"]["error_bound"] is None:
            doc["check"]["error_bound"] = "1/2"
        return "readout.decode argmax -> identity (labels: one-hot; error_bound 1/2 when absent)"
    doc["outputs"] = [each(onehot, o) if o is not None else None for o in doc["outputs"]]
    return "readout.decode argmax -> identity (labels and outputs: one-hot columns)"


def _error_bound(doc: dict, rng: random.Random) -> Optional[str]:
    eps = doc["check"]["error_bound"]
    if eps is None or doc["model"]["readout"]["decode"] != "identity":
        return None
    new = rng.choice((Fraction(0), q(eps) / 1000, Fraction(1, 10 ** 30)))
    doc["check"]["error_bound"] = s(new)
    return f"check.error_bound {eps} -> {s(new)}"


# -- rows: repeated inputs (N counts pairwise-distinct inputs; one input with two labels is wrong)

def _rows(doc: dict) -> list:
    return list(zip(doc["dataset"]["inputs"], doc["dataset"]["labels"], doc["outputs"]))


def _set_rows(doc: dict, rows: list) -> None:
    doc["dataset"]["inputs"] = [copy.deepcopy(x) for x, _, _ in rows]
    doc["dataset"]["labels"] = [copy.deepcopy(y) for _, y, _ in rows]
    doc["outputs"] = [copy.deepcopy(o) for _, _, o in rows]


def _insert_copies(doc: dict, rng: random.Random, picks: List[int], edit=None) -> List[str]:
    """Insert a copy of each picked row (``edit(row)`` may change it) at a random place; where each went."""
    rows, where = _rows(doc), []
    for e in picks:
        x, y, o = copy.deepcopy(rows[e] if e < len(rows) else rows[-1])
        if edit is not None:
            x, y, o = edit(x, y, o)
        pos = rng.randrange(len(rows) + 1)
        rows.insert(pos, (x, y, o))
        where.append(f"row {e} -> {pos}")
    _set_rows(doc, rows)
    return where


def _dup_one(doc: dict, rng: random.Random) -> Optional[str]:
    rows = _rows(doc)
    e = rng.randrange(len(rows))
    return f"one row repeated ({_insert_copies(doc, rng, [e])[0]})"


def _dup_several(doc: dict, rng: random.Random) -> Optional[str]:
    n = len(doc["dataset"]["inputs"])
    if n < 2:
        return None
    picks = sorted(rng.sample(range(n), rng.randint(2, min(6, n))))
    picks += picks[:1] if rng.random() < 0.5 else []  # sometimes one of them three times
    return f"{len(picks)} rows repeated ({', '.join(_insert_copies(doc, rng, picks))})"


def _dup_all(doc: dict, rng: random.Random) -> Optional[str]:
    rows = _rows(doc)
    how = rng.choice(("appended", "interleaved", "appended reversed"))
    new = rows + rows if how == "appended" else [r for r in rows for _ in (0, 1)] if how == "interleaved" \
        else rows + rows[::-1]
    _set_rows(doc, new)
    return f"every row twice ({how}): {len(new)} rows"


def _respell(v: str, k: int) -> str:
    """The same rational written another way: p/q as (kp)/(kq); 0 as -0 or 0/k."""
    x = q(v)
    if x == 0:
        return "-0" if k % 2 else f"0/{k}"
    return f"{x.numerator * k}/{x.denominator * k}"


def _respelled_row(doc: dict, k: int):
    vectors = doc["model"]["input"]["type"] == "vectors"
    identity = doc["model"]["readout"]["decode"] == "identity"
    deep = lambda f, y: [deep(f, z) for z in y] if isinstance(y, list) else f(y)  # noqa: E731

    def edit(x, y, o):
        if vectors:
            x = deep(lambda v: _respell(v, k), x)
        if identity:
            y = deep(lambda v: _respell(v, k), y)
            o = None if o is None else deep(lambda v: _respell(v, k), o)
        return x, y, o
    return edit if vectors or identity else None


def _dup_respelled(doc: dict, rng: random.Random) -> Optional[str]:
    """A repeated row whose rationals (input, label, output) are spelled otherwise ("1/2" as "3/6"):
    the same input and the same label, so one example."""
    k = rng.choice((2, 3, 7, 10 ** 6))
    edit = _respelled_row(doc, k)
    if edit is None:
        return None
    e = rng.randrange(len(doc["dataset"]["inputs"]))
    return f"row repeated with its rationals respelled (x {k}/{k}) ({_insert_copies(doc, rng, [e], edit)[0]})"


def _dup_inflate(doc: dict, rng: random.Random) -> Optional[str]:
    """Rows repeated, then n_examples claimed to be the row count (every n_rows claim updated to
    hold): the issue's inflated N, which must be REFUTED."""
    n = len(doc["dataset"]["inputs"])
    desc = _dup_all(doc, rng) if rng.random() < 0.5 else _dup_one(doc, rng)
    rows = len(doc["dataset"]["inputs"])
    for cl in doc["claims"]:
        if cl["quantity"] == "n_rows":
            cl["op"], cl["bound"] = "==", str(rows)
    said = [cl for cl in doc["claims"] if cl["quantity"] == "n_examples"]
    for cl in said:
        cl["op"], cl["bound"] = rng.choice((("==", str(rows)), (">=", str(rows)), (">", str(n))))
    if not said:
        doc["claims"].append({"quantity": "n_examples", "op": "==", "bound": str(rows)})
    return f"{desc}; n_examples claimed {said[0]['op'] + ' ' + said[0]['bound'] if said else '== ' + str(rows)}"


def _conflict(doc: dict, rng: random.Random) -> Optional[str]:
    """A repeated row (maybe respelled) with another label: one input, two labels."""
    decode, allpos = doc["model"]["readout"]["decode"], doc["model"]["readout"]["position"] == "all"
    dim = _out_dim(doc)
    if decode == "argmax" and dim < 2:
        return None
    e = rng.randrange(len(doc["dataset"]["inputs"]))
    respell = _respelled_row(doc, 3) if rng.random() < 0.3 else None

    def edit(x, y, o):
        if respell is not None:
            x, y, o = respell(x, y, o)
        t = rng.randrange(len(y)) if allpos else None
        old = y[t] if allpos else y
        if decode == "argmax":
            new = (old + rng.randrange(1, dim)) % dim
        else:
            new = list(old)
            i = rng.randrange(len(new))
            new[i] = s(q(new[i]) + rng.choice(DELTAS))
        if allpos:
            y[t] = new
        else:
            y = new
        return x, y, o
    where = _insert_copies(doc, rng, [e], edit)[0]
    return f"row repeated with another label{' (input respelled)' if respell else ''} ({where})"


# -- claims on the data quantities: off by one (or, for the token geometry, by a small amount)

def _data_claim(qty: str):
    def mutate(doc: dict, rng: random.Random) -> Optional[str]:
        if qty in VECTOR_QUANTITIES and doc["model"]["input"]["type"] != "vectors":
            return None
        v = _measured(doc)[qty]
        claims = doc["claims"]
        mine = [c for c, cl in enumerate(claims) if cl["quantity"] == qty]
        if mine:
            c = rng.choice(mine)
            what = f"claims[{c}] {qty} {claims[c]['op']} {claims[c]['bound']} ->"
        else:
            c = len(claims)
            claims.append({"quantity": qty, "op": "==", "bound": "0", "source": "planted"})
            what = f"claim {qty} added:"
        cl = claims[c]
        exact = rng.random() < 0.2  # a claim that holds exactly at the boundary (neutral)
        if qty == "min_sep2":  # delta^2 raised above the data's
            step = rng.choice((Fraction(1), Fraction(1, 1000), Fraction(1, 2 ** 40)))
            op = rng.choice((">=", ">=", ">", "=="))
        elif qty == "max_norm2":  # r^2 lowered below the data's
            step = -rng.choice((Fraction(1), Fraction(1, 1000), Fraction(1, 2 ** 40)))
            op = rng.choice(("<=", "<=", "<", "=="))
        else:
            step = rng.choice((Fraction(1), Fraction(-1)))
            op = cl["op"] if mine else rng.choice(("==", "<=", ">="))
            step = {"<=": Fraction(-1), "<": Fraction(0), ">=": Fraction(1), ">": Fraction(0)}.get(op, step)
        if v is None:  # min_sep2 over fewer than two distinct tokens: only lower bounds hold
            op, bound = (">=", Fraction(1)) if exact else (rng.choice(("<=", "==")), Fraction(1))
        elif exact:
            op, bound = {"<": "<=", ">": ">="}.get(op, op), v
        else:
            bound = v + step
        cl["op"], cl["bound"] = op, s(bound)
        return f"{what} {op} {cl['bound']} (data: {v}{', holds' if exact else ''})"
    return mutate


#: Every mutation kind: name -> function(doc, rng) that edits ``doc`` in place and returns a
#: description, or None if the kind does not apply to this certificate.
MUTATIONS: Dict[str, Callable[[dict, random.Random], Optional[str]]] = {
    **{kind: (lambda lt, f, h: (lambda doc, rng: _nudge(doc, rng, lt, f, h)))(lt, f, h)
       for kind, lt, f, h in WEIGHT_FIELDS},
    "label:flip": _label_flip,
    "label:swap": _label_swap,
    "outputs:change": _output_change,
    "relu:toggle": _relu_toggle,
    "residual:toggle": _residual_toggle,
    "attention:kind": _kind_swap,
    "attention:scale-WQ": _scale_query,
    "heads:drop": _head_drop,
    "heads:duplicate": _head_duplicate,
    "claim:tighten": _claim_tighten,
    "claim:flip-op": _claim_flip,
    "sequence:truncate": _truncate,
    "readout:change": _readout_change,
    "check:error_bound": _error_bound,
    "rows:duplicate-one": _dup_one,
    "rows:duplicate-several": _dup_several,
    "rows:duplicate-all": _dup_all,
    "rows:duplicate-respelled": _dup_respelled,
    "rows:duplicate-inflate-N": _dup_inflate,
    "rows:conflicting-label": _conflict,
    **{f"claim:data-{qty}": _data_claim(qty) for qty in DATA_QUANTITIES},
}

#: Kinds that touch the claims themselves (never combined with dropping the claims).
CLAIM_KINDS = ("claim:tighten", "claim:flip-op", "rows:duplicate-inflate-N") + tuple(
    f"claim:data-{qty}" for qty in DATA_QUANTITIES)
#: Kinds that repeat rows: the claims are kept, all dropped, or only the ``n_rows`` ones dropped
#: (so that the ``n_examples`` claim the certificate already makes is what decides).
ROW_KINDS = ("rows:duplicate-one", "rows:duplicate-several", "rows:duplicate-all", "rows:duplicate-respelled")


def generate(doc: dict, seed: int = 0, per_kind: int = 2, kinds: Optional[List[str]] = None,
             source: str = "") -> List[Mutant]:
    """Deterministic planted mutants of the valid certificate ``doc``.

    For each kind in ``kinds`` (default: all of :data:`MUTATIONS`) up to ``per_kind`` mutants
    are drawn with a ``random.Random`` seeded from ``seed``, ``source`` and the kind (so adding
    a kind does not change the others). Edits that do not touch the claims drop every claim
    with probability 1/2 (so the edit must be caught by the semantics, not by a size claim);
    the description says so. Every mutant is re-hashed. ``doc`` is not modified.
    """
    out: List[Mutant] = []
    for kind in kinds or list(MUTATIONS):
        rng = random.Random(f"{seed}:{source}:{kind}")
        seen = set()
        for _ in range(per_kind * 3):  # a few retries when two draws give the same edit
            if sum(1 for m in out if m.kind == kind) >= per_kind:
                break
            d = copy.deepcopy(doc)
            d.pop("meta", None)
            desc = MUTATIONS[kind](d, rng)
            if desc is None:
                break
            if kind in ROW_KINDS and any(c["quantity"] == "n_rows" for c in d["claims"]) and rng.random() < 0.4:
                d["claims"] = [c for c in d["claims"] if c["quantity"] != "n_rows"]
                _plain_claims(d)  # the n_rows claim may name N, which formulas use
                desc += " [n_rows claims removed]"
            elif kind not in CLAIM_KINDS and d["claims"] and rng.random() < 0.5:
                d["claims"] = []
                d.pop("definitions", None)
                desc += " [claims removed]"
            rehash(d)
            if d["hash"] in seen or d["hash"] == doc.get("hash"):
                continue
            seen.add(d["hash"])
            out.append(Mutant(kind, desc, d, source))
    return out


# ----------------------------------------------------------------------------- oracle

@dataclass
class OracleResult:
    """What the oracle finds.

    ``wrong``: True (some claim or example fails), False (everything holds), None (the oracle
    cannot decide: an example within ``MP_MARGIN`` of its boundary, or a softmax2 spread past
    the limit). ``claim``: index of the first failing claim. ``examples``: per example
    ``"pass"``, ``"label"``, ``"outputs"``, ``"softmax2_score"`` or ``"undecided"``.
    ``first``: index of the first failing example (claims all holding). ``approximate``: an
    mpmath evaluation was used (the checker may legitimately answer UNKNOWN).
    """

    wrong: Optional[bool]
    claim: Optional[int] = None
    examples: List[str] = field(default_factory=list)
    first: Optional[int] = None
    approximate: bool = False
    spread: bool = False
    data_claim: bool = False  # ``claim`` is a claim on a data quantity (judged after every example)
    conflicts: Dict[int, int] = field(default_factory=dict)  # later row -> first row with its input
    quantities: Dict[str, object] = field(default_factory=dict)  # the data quantities counted


class _OracleUndecided(Exception):
    pass


def _plain_claims(d: dict) -> dict:
    """``d`` with its claims' names and formulas dropped (their bounds kept) and no definitions:
    valid again after some claims were removed."""
    for c in d["claims"]:
        c.pop("name", None)
        c.pop("formula", None)
    d.pop("definitions", None)
    return d


_MP_OPS = {"+": lambda *a: mpmath.fsum(a), "*": lambda *a: mpmath.fprod(a), "/": lambda a, b: a / b,
           "-": lambda a, b=None: -a if b is None else a - b, "sqrt": lambda a: _defined(a >= 0) and mpmath.sqrt(a),
           "ln": lambda a: _defined(a > 0) and mpmath.log(a), "log2": lambda a: _defined(a > 0) and mpmath.log(a, 2),
           "floor": mpmath.floor, "ceil": mpmath.ceil, "min": min, "max": max}


def _defined(ok: bool) -> bool:
    """True, or ArithmeticError: a formula's value is undefined (log of a number <= 0, √ of a negative)."""
    if not ok:
        raise ArithmeticError("undefined")
    return True


def _mp_value(e, env: dict):
    """An expression of a claim formula in mpmath (120 digits), independently of the kernel."""
    if isinstance(e, str):
        if isinstance(env.get(e), Exception):
            raise env[e]
        return env[e] if e in env else mpmath.mpf(Fraction(e).numerator) / Fraction(e).denominator
    if e[0] == "pi":
        return mpmath.pi
    if e[0] == "^":
        return _mp_value(e[1], env) ** int(e[2])
    return _MP_OPS[e[0]](*(_mp_value(a, env) for a in e[1:]))


def _formula_failure(doc: dict) -> Optional[int]:
    """Index of the first claim whose formula's value is not its bound (mpmath, 120 digits)."""
    if not any("formula" in c for c in doc["claims"]):
        return None
    with mpmath.workdps(120):
        env = {c["name"]: mpmath.mpf(Fraction(c["bound"]).numerator) / Fraction(c["bound"]).denominator
               for c in doc["claims"] if "name" in c}
        for d in doc.get("definitions", []):
            try:
                env[d["name"]] = _mp_value(d["expr"], env)
            except (ArithmeticError, ValueError) as x:  # raised again where a formula uses the name
                env[d["name"]] = ArithmeticError(str(x))
        for i, c in enumerate(doc["claims"]):
            if "formula" in c:
                b = Fraction(c["bound"])
                try:
                    v = _mp_value(c["formula"], env)
                except (ArithmeticError, ValueError, ZeroDivisionError):
                    return i
                if abs(v - mpmath.mpf(b.numerator) / b.denominator) > mpmath.mpf(10) ** -100:
                    return i
    return None


def _claims_first_failure(doc: dict, data: Optional[bool] = None, meas: Optional[dict] = None) -> Optional[int]:
    """Index of the first failing claim: on the model (``data`` False), on the data (True) or
    either (None)."""
    meas = meas if meas is not None else _measured(doc)
    for c, cl in enumerate(doc["claims"]):
        if data is not None and (cl["quantity"] in DATA_QUANTITIES) != data:
            continue
        if not _holds(meas[cl["quantity"]], cl["op"], q(cl["bound"])):
            return c
    return None


def _inputs(doc: dict) -> list:
    if doc["model"]["input"]["type"] == "tokens":
        return [tuple(x) for x in doc["dataset"]["inputs"]]
    return [tuple(tuple(q(v) for v in tok) for tok in x) for x in doc["dataset"]["inputs"]]


def _answer(doc: dict, y):
    """A label or claimed output as Python values (Fractions / ints), columns as lists."""
    if y is None:
        return None
    if doc["model"]["readout"]["decode"] == "argmax":
        return y
    if doc["model"]["readout"]["position"] == "all":
        return [[q(v) for v in c] for c in y]
    return [q(v) for v in y]


def _exact_example_status(doc: dict, model: Model, out, e: int) -> str:
    """Judge one exact output against the label and the claimed output (docs/certificate.md)."""
    decode, allpos = model.decode, model.readout == "all"
    label = _answer(doc, doc["dataset"]["labels"][e])
    cols = out if allpos else [out]
    labs = label if allpos else [label]
    eps = doc["check"]["error_bound"]
    for col, lab in zip(cols, labs):
        if decode == "argmax":
            if not all(col[lab] > x for k, x in enumerate(col) if k != lab):
                return "label"
        elif eps is None:
            if list(col) != list(lab):
                return "label"
        elif any(abs(x - y) > q(eps) for x, y in zip(col, lab)):
            return "label"
    claimed = _answer(doc, doc["outputs"][e])
    derived = decode_output(model, out)
    if decode == "identity":
        derived = [list(c) for c in derived] if allpos else list(derived)
    if claimed != derived:
        return "outputs"
    return "pass"


#: Outputs the oracle already computed, per model (its canonical JSON) and input: most mutants keep
#: their base's model (row, label, output and claim edits) or its inputs, and a forward pass of a
#: paper-literal construction takes a second. Values: output columns, a Softmax2Error, or (mpmath)
#: the final columns / a status string.
_FORWARD_CACHE: Dict[Tuple[str, str], Dict[tuple, object]] = {}


def _outputs_cache(doc: dict, engine: str) -> Dict[tuple, object]:
    key = (engine, json.dumps(doc["model"], sort_keys=True, separators=(",", ":")))
    cache = _FORWARD_CACHE.get(key)
    if cache is None:
        if len(_FORWARD_CACHE) >= 64:
            _FORWARD_CACHE.clear()
        cache = _FORWARD_CACHE[key] = {}
    return cache


def _exact_outputs(doc: dict, model: Model, xs: list) -> list:
    """The exact output of every input (a Softmax2Error where the forward pass raises one)."""
    cache = _outputs_cache(doc, "exact")
    todo = list(dict.fromkeys(x for x in xs if x not in cache))
    if todo:
        try:
            cache.update(zip(todo, forward(model, todo).outputs))
        except Softmax2Error:
            for x in todo:
                try:
                    cache[x] = forward(model, [x]).outputs[0]
                except Softmax2Error as err:
                    cache[x] = err
    return [cache[x] for x in xs]


def _exact_statuses(doc: dict, model: Model, xs: list) -> Tuple[List[str], bool]:
    """Per-example status with the package's exact forward pass; softmax2 faults per example."""
    statuses, spread = [], False
    for e, out in enumerate(_exact_outputs(doc, model, xs)):
        if isinstance(out, Softmax2Error):
            if "spread" in str(out):
                statuses.append("undecided")
                spread = True
            else:
                statuses.append("softmax2_score")
            continue
        statuses.append(_exact_example_status(doc, model, out, e))
    return statuses, spread


# -- mpmath evaluation from the first softmax layer on (exact prefix by the package's forward pass)

def _mp(x) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def _mp_matvec(M, v):
    return [mpmath.fsum(_mp(a) * b for a, b in zip(row, v)) for row in M]


def _mp_layer(layer, cols: list) -> list:
    if isinstance(layer, Affine):
        out = []
        for c in cols:
            y = _mp_matvec(layer.W, c)
            if layer.b is not None:
                y = [a + _mp(b) for a, b in zip(y, layer.b)]
            out.append([max(a, 0) for a in y] if layer.relu else y)
        return out
    if isinstance(layer, FeedForward):
        out = []
        for c in cols:
            h = [max(a + _mp(b), 0) for a, b in zip(_mp_matvec(layer.W1, c), layer.b1)]
            y = [a + _mp(b) for a, b in zip(_mp_matvec(layer.W2, h), layer.b2)]
            out.append([a + z for a, z in zip(y, c)] if layer.residual else y)
        return out
    assert isinstance(layer, Attention)
    n = len(cols)
    queries = [n - 1] if layer.query == "last" else list(range(n))
    res = []
    for j in queries:
        K = [k for k in range(n) if layer.keys == "all" or k != j]
        acc = list(cols[j]) if layer.residual else [mpmath.mpf(0)] * layer.m_out
        for h in layer.heads:
            if layer.kind == "uniform":
                w = [mpmath.mpf(1) / len(K)] * len(K)
            else:
                qv = _mp_matvec(h.WQ, cols[j])
                sc = [mpmath.fsum(a * b for a, b in zip(_mp_matvec(h.WK, cols[k]), qv)) for k in K]
                top = max(sc)
                if layer.kind == "softmax":
                    ex = [mpmath.exp(a - top) for a in sc]
                    Z = mpmath.fsum(ex)
                    w = [a / Z for a in ex]
                elif layer.kind == "hardmax":
                    near = [a for a in sc if top - a < MP_MARGIN]
                    if any(top - a > MP_MARGIN ** 2 for a in near):
                        raise _OracleUndecided("hardmax tie not decidable in mpmath")
                    w = [mpmath.mpf(1) / len(near) if top - a < MP_MARGIN else mpmath.mpf(0) for a in sc]
                else:  # softmax2 after a softmax layer
                    ints = [mpmath.nint(a) for a in sc]
                    if any(abs(a - i) > MP_MARGIN for a, i in zip(sc, ints)):
                        raise _OracleUndecided("softmax2 score near no integer (after softmax)")
                    lo = min(ints)
                    ex = [mpmath.mpf(2) ** (i - lo) for i in ints]
                    Z = mpmath.fsum(ex)
                    w = [a / Z for a in ex]
            mixed = [mpmath.fsum(wk * v for wk, v in zip(w, vals))
                     for vals in zip(*(_mp_matvec(h.WV, cols[k]) for k in K))]
            acc = [a + b for a, b in zip(acc, _mp_matvec(h.WO, mixed))]
        res.append(acc)
    return res


def _mp_example_status(doc: dict, model: Model, out: list, e: int) -> str:
    decode, allpos = model.decode, model.readout == "all"
    label = _answer(doc, doc["dataset"]["labels"][e])
    cols = out if allpos else [out[-1]]
    labs = label if allpos else [label]
    undecided = False
    for col, lab in zip(cols, labs):
        if decode == "argmax":
            margin = col[lab] - max(x for k, x in enumerate(col) if k != lab) if len(col) > 1 else mpmath.inf
        else:
            eps = _mp(q(doc["check"]["error_bound"]))
            margin = min(eps - abs(x - _mp(y)) for x, y in zip(col, lab))
        if margin < -MP_MARGIN:
            return "label"
        undecided |= margin <= MP_MARGIN
    if undecided:
        return "undecided"
    claimed = doc["outputs"][e]
    if claimed is not None and claimed != doc["dataset"]["labels"][e]:  # argmax: derived = the label
        return "outputs"
    return "pass"


def _mp_columns(model: Model, x, first: int, prefix: Optional[Model]):
    """The final columns of one input in mpmath, or the status string that stops it."""
    try:
        cols = forward(prefix, [x]).outputs[0] if prefix is not None else [list(t) for t in x]
    except Softmax2Error:
        return "softmax2_score"
    try:
        cols = [[_mp(v) for v in c] for c in cols]
        for layer in model.layers[first:]:
            cols = _mp_layer(layer, cols)
        return cols
    except _OracleUndecided:
        return "undecided"


def _mp_statuses(doc: dict, model: Model, xs: list) -> List[str]:
    first = next(i for i, l in enumerate(model.layers) if isinstance(l, Attention) and l.kind == "softmax")
    prefix = Model(model.layers[:first], model.input_type, model.input_dim, "all", "identity") if first else None
    cache = _outputs_cache(doc, "mpmath")
    statuses = []
    with mpmath.workdps(MP_DPS):
        for e, x in enumerate(xs):
            if x not in cache:
                cache[x] = _mp_columns(model, x, first, prefix)
            cols = cache[x]
            statuses.append(cols if isinstance(cols, str) else _mp_example_status(doc, model, cols, e))
    return statuses


def oracle(doc: dict) -> OracleResult:
    """Decide, without the checker's code, whether the certificate ``doc`` is right.

    In the order docs/certificate.md gives: the claims on the model (``exactmem.model.measure``);
    then every example in order — a row whose input an earlier row holds with another label is
    a conflict (``"conflicting_labels"``), else exact models go through the package's forward
    pass, softmax models through mpmath from the first softmax layer on; then, with no example
    failing, the claims on the data quantities that :func:`data_facts` counts.
    """
    model = model_from_json(doc["model"])
    facts = data_facts(doc)
    inp = doc["model"]["input"]
    meas = {**measure(model).as_dict(), "input_dim": inp["dim"] if inp["type"] == "vectors" else inp["vocab"],
            **facts.quantities}
    c = _formula_failure(doc)  # the kernel checks the claim formulas first
    c = _claims_first_failure(doc, False, meas) if c is None else c
    xs = _inputs(doc)
    approximate = model.has_softmax
    if approximate:
        statuses, spread = _mp_statuses(doc, model, xs), False
    else:
        statuses, spread = _exact_statuses(doc, model, xs)
    for later in facts.conflicts:  # the kernel meets the conflict before it evaluates the row
        statuses[later] = "conflicting_labels"
    first = next((e for e, st in enumerate(statuses) if st not in ("pass", "undecided")), None)
    data_claim = False
    if c is None and first is None:
        c = _claims_first_failure(doc, True, meas)
        data_claim = c is not None
    if c is not None or first is not None:
        wrong = True
    elif "undecided" in statuses:
        wrong = None
    else:
        wrong = False
    return OracleResult(wrong, c, statuses, first, approximate, spread, data_claim, dict(facts.conflicts),
                        facts.quantities)


# ----------------------------------------------------------------------------- harness

@dataclass
class Outcome:
    """One mutant's verdict next to the oracle's finding."""

    mutant: Mutant
    engine: str
    status: str  # CERTIFIED / REFUTED / UNKNOWN / MALFORMED / CRASH
    witness: Optional[dict]
    oracle: OracleResult
    seconds: float
    problem: Optional[str] = None
    kill: bool = False


@dataclass
class Campaign:
    outcomes: List[Outcome] = field(default_factory=list)
    agreement_checked: int = 0

    @property
    def problems(self) -> List[Outcome]:
        return [o for o in self.outcomes if o.problem]

    @property
    def false_certified(self) -> List[Outcome]:
        return [o for o in self.outcomes if o.status == "CERTIFIED" and o.oracle.wrong is True]

    @property
    def kills(self) -> int:
        return sum(o.kill for o in self.outcomes)

    def table(self) -> str:
        """Counts per kind: mutants, REFUTED (kills), UNKNOWN, CERTIFIED with the oracle agreeing."""
        rows = Counter()
        kinds = sorted({o.mutant.kind for o in self.outcomes})
        for o in self.outcomes:
            k = o.mutant.kind
            rows[k, "n"] += 1
            rows[k, o.status] += 1
            rows[k, "oracle-wrong"] += o.oracle.wrong is True
            rows[k, "oracle-undecided"] += o.oracle.wrong is None
            rows[k, "certified-ok"] += o.status == "CERTIFIED" and o.oracle.wrong is False
            rows[k, "kill"] += o.kill
        head = ["kind", "mutants", "oracle wrong", "REFUTED (kills)", "UNKNOWN", "CERTIFIED+oracle agrees",
                "oracle undecided", "problems"]
        body = []
        for k in kinds + ["TOTAL"]:
            get = (lambda key: sum(rows[kk, key] for kk in kinds)) if k == "TOTAL" else (lambda key: rows[k, key])
            probs = sum(1 for o in self.problems if k in ("TOTAL", o.mutant.kind))
            body.append([k, get("n"), get("oracle-wrong"), f"{get('REFUTED')} ({get('kill')})", get("UNKNOWN"),
                         get("certified-ok"), get("oracle-undecided"), probs])
        w = [max(len(str(r[i])) for r in [head] + body) for i in range(len(head))]
        return "\n".join("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) for r in [head] + body)


def _judge(o: Outcome) -> None:
    """Set ``o.problem`` / ``o.kill`` from the verdict and the oracle's finding."""
    orc, st, w = o.oracle, o.status, o.witness
    legit_unknown = orc.approximate or orc.spread
    if st in ("MALFORMED", "CRASH"):
        o.problem = f"{st} on a schema-valid mutant"
    elif orc.wrong is True:
        if st == "CERTIFIED":
            o.problem = "FALSE CERTIFIED: the oracle finds this certificate wrong"
        elif st == "UNKNOWN":
            if not legit_unknown:
                o.problem = "UNKNOWN for a wrong exact certificate (expected REFUTED)"
        else:
            o.kill = True
            o.problem = _witness_problem(o)
    elif orc.wrong is False:
        if st == "REFUTED":
            o.problem = f"REFUTED a certificate the oracle finds right (witness {w})"
        elif st == "UNKNOWN" and not legit_unknown:
            o.problem = "UNKNOWN for a right exact certificate (expected CERTIFIED)"
    elif st == "REFUTED" and not orc.approximate:  # undecided only by a softmax2 spread
        o.problem = _witness_problem(o)


def _witness_problem(o: Outcome) -> Optional[str]:
    """A REFUTED witness must name what the oracle finds failing (first claim / first example)."""
    orc, w = o.oracle, o.witness or {}
    e = w.get("example")
    if orc.claim is not None:
        want = o.mutant.doc["claims"][orc.claim]
        if w.get("claim") == want:
            return None
        if (orc.data_claim and orc.approximate and isinstance(e, int) and 0 <= e < len(orc.examples)
                and orc.examples[e] == "undecided"):
            return None  # an example mpmath leaves undecided, decided wrong by the checker first
        return f"witness {w} should name claims[{orc.claim}] = {want}"
    if e is None or not 0 <= e < len(orc.examples):
        return f"witness {w} names no example"
    reason = w.get("reason")
    st = orc.examples[e]
    if reason == "conflicting_labels" and w.get("same_input_as") != orc.conflicts.get(e):
        return f"witness {w}: the oracle finds example {e}'s input first at row {orc.conflicts.get(e)}"
    if orc.approximate:
        if st == "pass" or (st != "undecided" and st != reason):
            return f"witness {w}: the oracle finds example {e} {st}"
        return None
    if e != orc.first or st != reason:
        return f"witness {w}: the oracle's first failure is example {orc.first} ({orc.examples[orc.first]})" \
            if orc.first is not None else f"witness {w}: the oracle finds no failing example"
    return None


def _run(check: Callable, doc: dict, max_precision: Optional[int]):
    try:
        v = check(doc) if max_precision is None else check(doc, max_precision)
        return v.status, v.witness
    except MalformedCertificate as e:
        return "MALFORMED", {"message": str(e)}
    except Exception as e:  # any other exception is a checker bug
        return "CRASH", {"message": f"{type(e).__name__}: {e}"}


def run_campaign(mutants: List[Mutant], oracles: List[OracleResult], agree_every: int = 5,
                 max_precision: Optional[int] = None) -> Campaign:
    """Check every mutant (even index: the fast checker, odd: the pure one) and judge it.

    Every ``agree_every``-th mutant is also checked with the other engine, and a different
    status or witness is recorded as a problem. ``max_precision`` (None: the certificate's)
    caps the interval precision; it can only turn a decision into UNKNOWN, never change it.
    """
    camp = Campaign()
    for i, (m, orc) in enumerate(zip(mutants, oracles)):
        engine = "fast" if i % 2 == 0 else "pure"
        t0 = time.perf_counter()
        status, witness = _run(CHECKERS[engine], m.doc, max_precision)
        o = Outcome(m, engine, status, witness, orc, time.perf_counter() - t0)
        _judge(o)
        if agree_every and i % agree_every == 0:
            other = "pure" if engine == "fast" else "fast"
            st2, w2 = _run(CHECKERS[other], m.doc, max_precision)
            camp.agreement_checked += 1
            if (st2, w2) != (status, witness) and not o.problem:
                o.problem = f"engines disagree: {engine} {status} {witness} vs {other} {st2} {w2}"
        camp.outcomes.append(o)
    return camp


def iter_problems(camp: Campaign) -> Iterator[str]:
    """One line per problem: source, kind, description, verdict, oracle finding."""
    for o in camp.problems:
        yield (f"[{o.mutant.source}] {o.mutant.kind}: {o.mutant.description} -> {o.engine} {o.status} "
               f"{o.witness}; oracle wrong={o.oracle.wrong} claim={o.oracle.claim} first={o.oracle.first}: "
               f"{o.problem}")
