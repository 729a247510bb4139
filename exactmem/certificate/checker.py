"""The small independent certificate checker (format v1, ``docs/certificate.md``).

It reads one certificate, validates every field, re-derives every output from the model in
the file and every size quantity of the claims, and returns a :class:`Verdict`. It imports
only the standard library and :mod:`rational_interval`; all values are ``int`` or
``fractions.Fraction`` (intervals of them after a softmax layer). No construction code and
no floating point is involved.

Exact evaluation keeps each sequence as integer columns over one common denominator D
(``nums / D``); a layer's matrix is stored as integers over its least common denominator L,
so a token-wise layer is integer dot products and the new denominator is ``L * D``.

``softmax2`` attention (base-2 softmax, Dana et al. note §3.7) is exact: its scores must be
integers s_k and its weights are 2^{s_k − min s}/Σ_j 2^{s_j − min s}, integer numerators over
one integer denominator. A non-integer score refutes the example (witness: layer, head,
query, key position, score); a score spread max s − min s above ``SOFTMAX2_MAX_SPREAD`` leaves
the example undecided (UNKNOWN) instead of forming 2^spread.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import zlib
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import chain, repeat
from math import gcd, lcm
from operator import add, mul, sub
from typing import Any, Dict, List, Optional, Tuple

try:
    from .rational_interval import Interval, idot, irelu, isum, round_ratio, softmax
except ImportError:  # run as a loose script next to rational_interval.py
    from rational_interval import Interval, idot, irelu, isum, round_ratio, softmax

__all__ = ["MalformedCertificate", "Verdict", "canonical_hash", "load_certificate", "check_certificate", "main"]

FORMAT = "exactmem-certificate"
VERSION = 1
QUANTITIES = ("n_params", "n_nonzero", "width", "relu_depth", "attention_layers", "depth", "max_bits",
              "total_bits", "n_examples")
OPS = {"==": lambda a, b: a == b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
       "<": lambda a, b: a < b, ">": lambda a, b: a > b}
START_PRECISION = 64
ATTENTION_KINDS = ("softmax", "hardmax", "uniform", "softmax2")
SOFTMAX2_MAX_SPREAD = 1 << 20  # largest max s − min s of one query's softmax2 scores the checker evaluates


class MalformedCertificate(Exception):
    """The file is not a valid version-1 certificate; the message names the problem."""


@dataclass
class Verdict:
    status: str  # "CERTIFIED" | "REFUTED" | "UNKNOWN"
    witness: Optional[dict]
    message: str
    precision: Optional[int]
    measured: Dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"status": self.status, "witness": self.witness, "message": self.message,
                "precision": self.precision, "measured": dict(self.measured)}

    @property
    def exit_code(self) -> int:
        return {"CERTIFIED": 0, "REFUTED": 1, "UNKNOWN": 2}[self.status]


class _Undecided(Exception):
    """The intervals at the current precision cannot decide a comparison."""


class _Softmax2Fault(Exception):
    """A softmax2 score is not an integer (``spread`` None) or a query's scores spread too far.

    ``where`` = (head, query position, key position); ``layer`` is filled in by the caller."""

    def __init__(self, where: Tuple[int, int, int], score, spread: Optional[int] = None):
        super().__init__()
        self.where, self.score, self.spread, self.layer, self.precision = where, score, spread, None, None


# ---------------------------------------------------------------- scalars and formatting

_RATIONAL = re.compile(r"-?[0-9]+(?:/[0-9]+)?")
_DIGITS = 4000  # int <-> str in chunks below CPython's default 4300-digit limit


def _int(s: str) -> int:
    """int(s) for a decimal string of any length."""
    if len(s) <= _DIGITS:
        return int(s)
    if s[0] == "-":
        return -_int(s[1:])
    k = len(s) // 2
    return _int(s[:-k]) * 10 ** k + _int(s[-k:])


def _istr(n: int) -> str:
    """str(n) for an int of any size."""
    if n < 0:
        return "-" + _istr(-n)
    if n.bit_length() < 3 * _DIGITS:
        return str(n)
    k = n.bit_length() * 3 // 20  # about half the decimal digits (log10 2 > 3/10)
    hi, lo = divmod(n, 10 ** k)
    return _istr(hi) + _istr(lo).rjust(k, "0")


def _fmt(x) -> Any:
    """JSON form of a value: Fraction -> "p/q", Interval -> ["lo", "hi"], lists recursively."""
    if isinstance(x, Interval):
        return [_fmt(x.lo), _fmt(x.hi)]
    if isinstance(x, Fraction):
        return _istr(x.numerator) if x.denominator == 1 else f"{_istr(x.numerator)}/{_istr(x.denominator)}"
    if isinstance(x, (list, tuple)):
        return [_fmt(y) for y in x]
    return x


def _jtype(x) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, (int, float)):
        return f"number {x!r}"
    if isinstance(x, str):
        return f"string {x[:40]!r}"
    if isinstance(x, (list, tuple)):
        return "list"
    if isinstance(x, dict):
        return "object"
    return type(x).__name__


def _bad(path: str, what: str):
    raise MalformedCertificate(f"{path}: {what}")


def _rat(x, path: str) -> Fraction:
    if not isinstance(x, str):
        _bad(path, f'expected a rational string like "-3/8", got {_jtype(x)}')
    if not _RATIONAL.fullmatch(x):
        _bad(path, f"bad rational {x[:40]!r} (expected \"p\" or \"p/q\", decimal digits, no spaces/decimals)")
    p, _, q = x.partition("/")
    den = _int(q) if q else 1
    if den == 0:
        _bad(path, f"zero denominator in {x[:40]!r}")
    return Fraction(_int(p), den)


def _integer(x, path: str, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    if not isinstance(x, int) or isinstance(x, bool):
        _bad(path, f"expected a JSON integer, got {_jtype(x)}")
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        _bad(path, f"integer {x} out of range [{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]")
    return x


def _bool(x, path: str) -> bool:
    if not isinstance(x, bool):
        _bad(path, f"expected true or false, got {_jtype(x)}")
    return x


def _str(x, path: str, choices=None) -> str:
    if not isinstance(x, str):
        _bad(path, f"expected a string, got {_jtype(x)}")
    if choices is not None and x not in choices:
        _bad(path, f"{x!r} is not one of {', '.join(map(repr, choices))}")
    return x


def _list(x, path: str, n: Optional[int] = None, nonempty: bool = False) -> list:
    if not isinstance(x, (list, tuple)):
        _bad(path, f"expected a list, got {_jtype(x)}")
    if n is not None and len(x) != n:
        _bad(path, f"wrong shape: expected length {n}, got {len(x)}")
    if nonempty and not x:
        _bad(path, "wrong shape: expected a nonempty list")
    return x


def _obj(x, path: str, required, optional=()) -> dict:
    if not isinstance(x, dict):
        _bad(path, f"expected an object, got {_jtype(x)}")
    for k in required:
        if k not in x:
            _bad(path, f"missing field {k!r}")
    extra = sorted(set(x) - set(required) - set(optional), key=str)
    if extra:
        _bad(path, f"unknown field {extra[0]!r}")
    return x


def _vec(x, n: Optional[int], path: str, params: Optional[list] = None) -> List[Fraction]:
    v = [_rat(y, f"{path}[{i}]") for i, y in enumerate(_list(x, path, n, nonempty=True))]
    if params is not None:
        params.extend(v)
    return v


def _mat(x, rows: Optional[int], cols: Optional[int], path: str, params: list) -> List[List[Fraction]]:
    rs = _list(x, path, nonempty=True)
    if rows is not None and len(rs) != rows:
        _bad(path, f"wrong shape: expected {rows} rows, got {len(rs)}")
    if cols is None:
        cols = len(_list(rs[0], f"{path}[0]", nonempty=True))
    out = []
    for i, r in enumerate(rs):
        if not isinstance(r, (list, tuple)) or len(r) != cols:
            _bad(f"{path}[{i}]", f"wrong shape: expected a row of {cols} entries, got "
                                 f"{len(r) if isinstance(r, (list, tuple)) else _jtype(r)}")
        out.append(_vec(r, cols, f"{path}[{i}]", params))
    return out


def _bits(x: Fraction) -> int:
    """bits(p/q) = 1 + LEN(|p|) + LEN(q) - 1 for reduced p/q."""
    return abs(x.numerator).bit_length() + x.denominator.bit_length()


# ---------------------------------------------------------------- hashing and loading

def canonical_hash(doc: dict) -> str:
    """ "sha256:" + hex digest of the canonical JSON of ``doc`` without "hash" and "meta"."""
    body = {k: v for k, v in doc.items() if k not in ("hash", "meta")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise MalformedCertificate(f"duplicate key {k!r} in a JSON object")
        d[k] = v
    return d


def _no_constants(name):
    raise MalformedCertificate(f"invalid JSON constant {name}")


def load_certificate(path: str) -> dict:
    """Read a certificate (JSON, or gzip-compressed JSON); anything unreadable is malformed."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MalformedCertificate(f"cannot read {path}: {e.strerror or e}") from None
    if path.endswith(".gz") or data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise MalformedCertificate(f"{path}: truncated or corrupt gzip data ({e})") from None
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except UnicodeDecodeError as e:
        raise MalformedCertificate(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise MalformedCertificate(f"{path}: invalid or truncated JSON ({e.msg} at line {e.lineno} "
                                   f"column {e.colno})") from None
    except (ValueError, RecursionError) as e:
        raise MalformedCertificate(f"{path}: unreadable JSON ({e})") from None
    if not isinstance(doc, dict):
        raise MalformedCertificate(f"{path}: the top level must be a JSON object, got {_jtype(doc)}")
    return doc


# ---------------------------------------------------------------- integer linear maps

class _Lin:
    """x ↦ W x + b on exact vectors ``nums / D``; W, b held as integers over their lcm L.

    ``apply(nums, D)`` returns the numerators of W x + b over the denominator ``L * D``. Tall
    matrices (few columns) are applied column by column with C-level ``map`` chains, and a
    column whose entries are all equal becomes one scalar.
    """

    def __init__(self, A: List[List[int]], c: Optional[List[int]], L: int, cols: int):
        self.A, self.c, self.L, self.cols = A, c, L, cols
        self.rows = len(A)
        self.T = self.const = None
        if cols * 8 <= self.rows:
            self.T = [list(t) for t in zip(*A)]
            self.const = [t[0] if t.count(t[0]) == len(t) else None for t in self.T]
        self._abs = None

    @staticmethod
    def make(W: List[List[Fraction]], b: Optional[List[Fraction]]) -> "_Lin":
        L = lcm(*(x.denominator for row in W for x in row), *(x.denominator for x in b or ()))
        A = [[x.numerator * (L // x.denominator) for x in row] for row in W]
        c = None if b is None else [x.numerator * (L // x.denominator) for x in b]
        return _Lin(A, c, L, len(W[0]))

    def absolute(self) -> "_Lin":
        """|W| (no bias) over the same L: the radius map of interval evaluation."""
        if self._abs is None:
            self._abs = _Lin([[abs(a) for a in row] for row in self.A], None, self.L, self.cols)
        return self._abs

    def apply(self, v: List[int], D: int, relu: bool = False) -> List[int]:
        """Numerators of W v/D + b over L*D, then max(0, ·) if ``relu``."""
        c = self.c
        if c is not None and D != 1:
            c = map(mul, c, repeat(D))
        if self.T is None:
            it = (sum(map(mul, row, v)) for row in self.A)
            if c is not None:
                it = map(add, it, c)
        else:
            it, s = c, 0
            for col, k, x in zip(self.T, self.const, v):
                if not x:
                    continue
                if k is not None:
                    s += k * x
                else:
                    t = col if x == 1 else map(mul, col, repeat(x))
                    it = t if it is None else map(add, it, t)
            if it is None:
                it = repeat(s, self.rows)
            elif s:
                it = map(add, it, repeat(s))
        return [x if x > 0 else 0 for x in it] if relu else list(it)


# ---------------------------------------------------------------- parsed model

@dataclass
class _Embed:
    E: List[List[int]]
    P: Optional[List[List[int]]]
    L: int


@dataclass
class _Affine:
    lin: _Lin
    relu: bool


@dataclass
class _FF:
    lin1: _Lin
    lin2: _Lin
    residual: bool


@dataclass
class _Attn:
    kind: str
    residual: bool
    query: str
    keys: str
    heads: List[Tuple[Optional[_Lin], Optional[_Lin], _Lin, _Lin]]  # (WQ, WK, WV, WO)


@dataclass
class _Cert:
    layers: list
    tokens: bool
    position: str
    decode: str
    out_dim: int
    softmax_at: Optional[int]  # index of the first softmax layer
    inputs: list  # per example: list of token ids, or list of Fraction vectors
    labels: list
    outputs: list
    claims: list  # (raw claim dict, quantity, op, bound)
    error_bound: Optional[Fraction]
    max_precision: int
    measured: Dict[str, int]


def _layer(d, path: str, m: int, first: bool, tokens: bool, params: list, meas: dict):
    """Validate one layer acting on m-dim tokens; return (parsed layer, output dim, width)."""
    if not isinstance(d, dict):
        _bad(path, f"expected an object, got {_jtype(d)}")
    if "type" not in d:
        _bad(path, "missing field 'type'")
    t = _str(d.get("type"), f"{path}.type", ("embed", "affine", "feedforward", "attention"))
    if (t == "embed") != (first and tokens):
        _bad(path, "an embed layer must be the first layer, and only of a model with token input"
             if t == "embed" else "a model with token input must start with an embed layer")
    meas["depth_relu"] += t == "feedforward" or (t == "affine" and d.get("relu") is True)
    if t == "embed":
        _obj(d, path, ("type", "E"), ("P",))
        E = _mat(d["E"], m, None, f"{path}.E", params)
        width = len(E[0])
        P = None if d.get("P") is None else _mat(d["P"], None, width, f"{path}.P", params)
        L = lcm(*(x.denominator for row in E + (P or []) for x in row))
        scale = lambda M: [[x.numerator * (L // x.denominator) for x in row] for row in M]  # noqa: E731
        return _Embed(scale(E), None if P is None else scale(P), L), width, width
    if t == "affine":
        _obj(d, path, ("type", "W", "relu"), ("b",))
        W = _mat(d["W"], None, m, f"{path}.W", params)
        b = None if d.get("b") is None else _vec(d["b"], len(W), f"{path}.b", params)
        return _Affine(_Lin.make(W, b), _bool(d["relu"], f"{path}.relu")), len(W), len(W)
    if t == "feedforward":
        _obj(d, path, ("type", "W1", "b1", "W2", "b2", "residual"))
        W1 = _mat(d["W1"], None, m, f"{path}.W1", params)
        b1 = _vec(d["b1"], len(W1), f"{path}.b1", params)
        W2 = _mat(d["W2"], m, len(W1), f"{path}.W2", params)
        b2 = _vec(d["b2"], m, f"{path}.b2", params)
        ff = _FF(_Lin.make(W1, b1), _Lin.make(W2, b2), _bool(d["residual"], f"{path}.residual"))
        return ff, m, max(m, len(W1))
    _obj(d, path, ("type", "kind", "residual", "query", "keys", "heads"))
    kind = _str(d["kind"], f"{path}.kind", ATTENTION_KINDS)
    residual = _bool(d["residual"], f"{path}.residual")
    heads, m_out, sH, vH = [], None, 0, 0
    for h, hd in enumerate(_list(d["heads"], f"{path}.heads", nonempty=True)):
        hp = f"{path}.heads[{h}]"
        _obj(hd, hp, ("WV", "WO"), ("WQ", "WK"))
        if kind == "uniform":
            for k in ("WQ", "WK"):
                if hd.get(k) is not None:
                    _bad(f"{hp}.{k}", "must be absent or null for uniform attention")
            WQ = WK = None
        else:
            for k in ("WQ", "WK"):
                if hd.get(k) is None:
                    _bad(hp, f"missing field {k!r} ({kind} attention needs query and key matrices)")
            WQ = _mat(hd["WQ"], None, m, f"{hp}.WQ", params)
            WK = _mat(hd["WK"], len(WQ), m, f"{hp}.WK", params)
            sH += len(WQ)
        WV = _mat(hd["WV"], None, m, f"{hp}.WV", params)
        WO = _mat(hd["WO"], m_out, len(WV), f"{hp}.WO", params)
        m_out, vH = len(WO), vH + len(WV)
        heads.append((WQ and _Lin.make(WQ, None), WK and _Lin.make(WK, None), _Lin.make(WV, None),
                      _Lin.make(WO, None)))
    if residual and m_out != m:
        _bad(f"{path}.heads[0].WO", f"wrong shape: a residual attention layer needs {m} output rows, got {m_out}")
    meas["attention_layers"] += 1
    q = _str(d["query"], f"{path}.query", ("all", "last"))
    keys = _str(d["keys"], f"{path}.keys", ("all", "others"))
    return _Attn(kind, residual, q, keys, heads), m_out, max(m_out, sH, vH)


def _parse(doc) -> _Cert:
    if not isinstance(doc, dict):
        raise MalformedCertificate(f"the certificate must be a JSON object, got {_jtype(doc)}")
    if "format" not in doc:
        _bad("(top level)", "missing field 'format'")
    if doc.get("format") != FORMAT:
        _bad("format", f"expected {FORMAT!r}, got {_jtype(doc.get('format')) if 'format' in doc else 'nothing'}")
    if "version" not in doc:
        _bad("(top level)", "missing field 'version'")
    v = doc["version"]
    if not isinstance(v, int) or isinstance(v, bool) or v != VERSION:
        _bad("version", f"unknown certificate version {v!r} (this checker reads version {VERSION})")
    _obj(doc, "(top level)", ("format", "version", "theorem", "instance", "seed", "model", "dataset", "outputs",
                              "claims", "check", "hash"), ("meta",))
    h = doc["hash"]
    if not isinstance(h, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", h):
        _bad("hash", f'expected "sha256:" followed by 64 lowercase hex digits, got {_jtype(h)}')
    try:
        actual = canonical_hash(doc)
    except (TypeError, ValueError) as e:
        raise MalformedCertificate(f"content cannot be serialised canonically: {e}") from None
    if actual != h:
        _bad("hash", f"wrong hash: the file says {h} but its content hashes to {actual} "
                     "(edited without re-hashing, or corrupted)")
    _str(doc["theorem"], "theorem")
    _str(doc["instance"], "instance")
    if doc["seed"] is not None:
        _integer(doc["seed"], "seed")
    if "meta" in doc and not isinstance(doc["meta"], dict):
        _bad("meta", f"expected an object, got {_jtype(doc['meta'])}")

    # model
    model = _obj(doc["model"], "model", ("input", "layers", "readout"))
    inp = model["input"]
    if not isinstance(inp, dict):
        _bad("model.input", f"expected an object, got {_jtype(inp)}")
    if "type" not in inp:
        _bad("model.input", "missing field 'type'")
    itype = _str(inp["type"], "model.input.type", ("vectors", "tokens"))
    tokens = itype == "tokens"
    _obj(inp, "model.input", ("type", "vocab" if tokens else "dim"))
    m = _integer(inp["vocab" if tokens else "dim"], f"model.input.{'vocab' if tokens else 'dim'}", 1)
    vocab, in_dim = (m, None) if tokens else (None, m)
    ro = _obj(model["readout"], "model.readout", ("position", "decode"))
    position = _str(ro["position"], "model.readout.position", ("last", "all"))
    decode = _str(ro["decode"], "model.readout.decode", ("identity", "argmax"))
    params: List[Fraction] = []
    meas = {"depth_relu": 0, "attention_layers": 0}
    layers, width, softmax_at = [], 0, None
    raw_layers = _list(model["layers"], "model.layers", nonempty=tokens)
    for i, d in enumerate(raw_layers):
        layer, m, w = _layer(d, f"model.layers[{i}]", m, i == 0, tokens, params, meas)
        width = max(width, w)
        if isinstance(layer, _Attn) and layer.kind == "softmax" and softmax_at is None:
            softmax_at = i
        layers.append(layer)
    out_dim = m

    # check
    chk = _obj(doc["check"], "check", ("error_bound", "max_precision"))
    eps = None if chk["error_bound"] is None else _rat(chk["error_bound"], "check.error_bound")
    if eps is not None and eps < 0:
        _bad("check.error_bound", "must be >= 0")
    max_precision = _integer(chk["max_precision"], "check.max_precision", 1)
    if softmax_at is not None and decode == "identity" and eps is None:
        _bad("check.error_bound", "a model with a softmax layer and identity decode needs an error_bound")

    # dataset and outputs
    ds = _obj(doc["dataset"], "dataset", ("inputs", "labels"))
    xs = _list(ds["inputs"], "dataset.inputs")
    n_ex = len(xs)
    ys = _list(ds["labels"], "dataset.labels", n_ex)
    outs = _list(doc["outputs"], "outputs", n_ex)
    P_rows = len(layers[0].P) if tokens and layers[0].P is not None else None
    need2 = [i for i, l in enumerate(layers) if isinstance(l, _Attn) and l.keys == "others"]
    last_at = next((i for i, l in enumerate(layers) if isinstance(l, _Attn) and l.query == "last"), None)
    inputs, labels, outputs = [], [], []
    exact = softmax_at is None
    for e in range(n_ex):
        path = f"dataset.inputs[{e}]"
        seq = _list(xs[e], path, nonempty=True)
        n = len(seq)
        if tokens:
            inputs.append([_integer(t, f"{path}[{s}]", 0, vocab - 1) for s, t in enumerate(seq)])
            if P_rows is not None and n > P_rows:
                _bad(path, f"sequence of length {n} is longer than the {P_rows} rows of model.layers[0].P")
        else:
            inputs.append([_vec(t, in_dim, f"{path}[{s}]") for s, t in enumerate(seq)])
        for i in need2:
            if (n if last_at is None or last_at >= i else 1) < 2:
                _bad(path, f"model.layers[{i}] attends to keys 'others' of a length-1 sequence (no keys left)")
        n_out = n if last_at is None else 1
        labels.append(_answer(ys[e], f"dataset.labels[{e}]", position, decode, n_out, out_dim, True))
        if exact or decode == "argmax":
            outputs.append(_answer(outs[e], f"outputs[{e}]", position, decode, n_out, out_dim, False))
        elif outs[e] is not None:
            _bad(f"outputs[{e}]", "must be null: a softmax model with identity decode claims no exact output")
        else:
            outputs.append(None)

    # claims and measured quantities
    claims = []
    for c, cl in enumerate(_list(doc["claims"], "claims")):
        cp = f"claims[{c}]"
        _obj(cl, cp, ("quantity", "op", "bound"), ("source",))
        q = _str(cl["quantity"], f"{cp}.quantity", QUANTITIES)
        op = _str(cl["op"], f"{cp}.op", tuple(OPS))
        bound = _rat(cl["bound"], f"{cp}.bound")
        if "source" in cl:
            _str(cl["source"], f"{cp}.source")
        claims.append((cl, q, op, bound))
    bits = [_bits(x) for x in params]
    measured = {"n_params": len(params), "n_nonzero": sum(1 for x in params if x),
                "width": width, "relu_depth": meas["depth_relu"], "attention_layers": meas["attention_layers"],
                "depth": meas["depth_relu"] + meas["attention_layers"], "max_bits": max(bits, default=0),
                "total_bits": sum(bits), "n_examples": n_ex}
    return _Cert(layers, tokens, position, decode, out_dim, softmax_at, inputs, labels, outputs, claims, eps,
                 max_precision, measured)


def _answer(x, path: str, position: str, decode: str, n_out: int, dim: int, is_label: bool):
    """Validate a label or claimed output: a column / class index, or a list of them per position."""
    if position == "all":
        return [_answer(y, f"{path}[{t}]", "last", decode, 1, dim, is_label)
                for t, y in enumerate(_list(x, path, n_out))]
    if decode == "argmax":
        return _integer(x, path, 0, dim - 1) if is_label else _integer(x, path)
    return _vec(x, dim, path)


# ---------------------------------------------------------------- exact evaluation

def _combine(parts: List[Tuple[List[int], int]]) -> Tuple[List[int], int]:
    """Σ nums_i / den_i over the lcm of the denominators."""
    den = lcm(*(d for _, d in parts))
    out = None
    for nums, d in parts:
        s = nums if d == den else list(map(mul, nums, repeat(den // d)))
        out = s if out is None else list(map(add, out, s))
    return out, den


def _softmax2_exponents(scores: List, where) -> List[int]:
    """s_k − min s for integer scores (Fractions); _Softmax2Fault otherwise or past the spread limit."""
    for k, sc in enumerate(scores):
        if sc.denominator != 1:
            raise _Softmax2Fault(where(k), sc)
    ints = [sc.numerator for sc in scores]
    lo, hi = min(ints), max(ints)
    if hi - lo > SOFTMAX2_MAX_SPREAD:
        raise _Softmax2Fault(where(ints.index(hi)), scores[ints.index(hi)], hi - lo)
    return [x - lo for x in ints]


def _exact_layer(layer, cols: List[List[int]], D: int):
    if isinstance(layer, _Affine):
        return [layer.lin.apply(c, D, layer.relu) for c in cols], D * layer.lin.L
    if isinstance(layer, _FF):
        l1, l2 = layer.lin1, layer.lin2
        h = [l1.apply(c, D, True) for c in cols]
        out = [l2.apply(c, D * l1.L) for c in h]
        if layer.residual:
            k = l1.L * l2.L
            out = [list(map(add, o, map(mul, c, repeat(k)))) for o, c in zip(out, cols)]
        return out, D * l1.L * l2.L
    # hardmax / uniform / softmax2 attention (softmax layers are evaluated with intervals)
    n = len(cols)
    queries = [n - 1] if layer.query == "last" else range(n)
    heads = []
    for WQ, WK, WV, WO in layer.heads:
        keys = [WK.apply(c, D) for c in cols] if WK is not None else None
        heads.append((WQ, WK, keys, WV, WO))
    res = []
    for j in queries:
        K = [k for k in range(n) if layer.keys == "all" or k != j]
        parts = [(cols[j], D)] if layer.residual else []
        for h, (WQ, WK, keys, WV, WO) in enumerate(heads):
            if keys is None:
                I, Z = K, len(K)
                z = list(map(sum, zip(*(cols[k] for k in I))))
            else:
                q = WQ.apply(cols[j], D)
                sc = [sum(map(mul, keys[k], q)) for k in K]
                if layer.kind == "softmax2":
                    den = D * D * WQ.L * WK.L  # score k = sc[k] / den
                    ex = _softmax2_exponents([Fraction(v, den) for v in sc], lambda i: (h, j, K[i]))
                    a = [1 << x for x in ex]
                    Z = sum(a)
                    z = list(map(sum, zip(*(list(map(mul, cols[k], repeat(ak))) for k, ak in zip(K, a)))))
                else:
                    best = max(sc)
                    I = [k for k, s in zip(K, sc) if s == best]
                    Z = len(I)
                    z = list(map(sum, zip(*(cols[k] for k in I))))
            o = WO.apply(WV.apply(z, D), D * WV.L)
            parts.append((o, D * WV.L * WO.L * Z))
        res.append(_combine(parts))
    den = lcm(*(d for _, d in res))
    return [c if d == den else list(map(mul, c, repeat(den // d))) for c, d in res], den


def _exact_prefix(cert: _Cert, x, stop: int):
    """Run layers [0, stop) exactly on one example; return (columns, denominator)."""
    layers = cert.layers
    if cert.tokens:
        emb = layers[0]
        cols = [emb.E[t] if emb.P is None else list(map(add, emb.E[t], emb.P[s])) for s, t in enumerate(x)]
        D, start = emb.L, 1
    else:
        D = lcm(*(v.denominator for tok in x for v in tok))
        cols = [[v.numerator * (D // v.denominator) for v in tok] for tok in x]
        start = 0
    for i, layer in enumerate(layers[start:stop], start):
        try:
            cols, D = _exact_layer(layer, cols, D)
        except _Softmax2Fault as f:
            f.layer = i
            raise
        if D.bit_length() > 256:
            g = gcd(D, *chain.from_iterable(cols))
            if g > 1:
                cols, D = [[v // g for v in c] for c in cols], D // g
    return cols, D


# ---------------------------------------------------------------- interval evaluation

def _lin_iv(lin: _Lin, col: List[Interval], p: int, relu: bool = False) -> List[Interval]:
    """Enclosure of W x + b for x in a box: midpoint image ± |W| · radius, rounded to p bits."""
    M = lcm(*(x.lo.denominator for x in col), *(x.hi.denominator for x in col))
    LO = [x.lo.numerator * (M // x.lo.denominator) for x in col]
    HI = [x.hi.numerator * (M // x.hi.denominator) for x in col]
    mid = lin.apply(list(map(add, LO, HI)), 2 * M)
    rad = list(map(sub, HI, LO))
    r = lin.absolute().apply(rad, 2 * M) if any(rad) else repeat(0)
    den = 2 * M * lin.L
    out = [Interval(round_ratio(c - e, den, p, False), round_ratio(c + e, den, p, True)) for c, e in zip(mid, r)]
    return [irelu(x) for x in out] if relu else out


def _argmax_set(scores: List[Interval]) -> List[int]:
    """Indices of the maximal scores, if the intervals decide them."""
    best = max(s.lo for s in scores)
    cand = [k for k, s in enumerate(scores) if s.hi >= best]
    if len(cand) == 1 or all(scores[k].lo == scores[k].hi == best for k in cand):
        return cand
    raise _Undecided()


def _iv_integer(x: Interval) -> Optional[Fraction]:
    """The integer value of a point interval; None if [lo, hi] contains no integer; _Undecided
    if it contains one but is not a point."""
    if x.lo == x.hi and x.lo.denominator == 1:
        return x.lo
    if -((-x.lo.numerator) // x.lo.denominator) > x.hi.numerator // x.hi.denominator:  # ceil(lo) > floor(hi)
        return None
    raise _Undecided()


def _iv_layer(layer, cols: List[List[Interval]], p: int) -> List[List[Interval]]:
    if isinstance(layer, _Affine):
        return [_lin_iv(layer.lin, c, p, layer.relu) for c in cols]
    if isinstance(layer, _FF):
        out = [_lin_iv(layer.lin2, _lin_iv(layer.lin1, c, p, True), p) for c in cols]
        if layer.residual:
            out = [[isum(xy, p) for xy in zip(o, c)] for o, c in zip(out, cols)]
        return out
    n = len(cols)
    queries = [n - 1] if layer.query == "last" else range(n)
    heads = []
    for WQ, WK, WV, WO in layer.heads:
        keys = [_lin_iv(WK, c, p) for c in cols] if WK is not None else None
        heads.append((WQ, keys, [_lin_iv(WV, c, p) for c in cols], WO))
    res = []
    for j in queries:
        K = [k for k in range(n) if layer.keys == "all" or k != j]
        parts = [cols[j]] if layer.residual else []
        for h, (WQ, keys, vals, WO) in enumerate(heads):
            if keys is None:
                w, I = [Fraction(1, len(K))] * len(K), K
            else:
                q = _lin_iv(WQ, cols[j], p)
                sc = [idot(keys[k], q, p) for k in K]
                if layer.kind == "softmax":
                    w, I = softmax(sc, p), K
                elif layer.kind == "softmax2":
                    ints = [_iv_integer(x) for x in sc]
                    bad = next((i for i, v in enumerate(ints) if v is None), None)
                    if bad is not None:
                        raise _Softmax2Fault((h, j, K[bad]), sc[bad])
                    ex = _softmax2_exponents(ints, lambda i: (h, j, K[i]))
                    a = [1 << x for x in ex]
                    Z = sum(a)
                    w, I = [Fraction(ak, Z) for ak in a], K
                else:
                    I = [K[i] for i in _argmax_set(sc)]
                    w = [Fraction(1, len(I))] * len(I)
            mixed = [idot(w, [vals[k][i] for k in I], p) for i in range(WO.cols)]
            parts.append(_lin_iv(WO, mixed, p))
        res.append([isum(xs, p) for xs in zip(*parts)])
    return res


# ---------------------------------------------------------------- deciding an example

def _lo(x):
    return x.lo if isinstance(x, Interval) else x


def _hi(x):
    return x.hi if isinstance(x, Interval) else x


def _judge_column(col, label, decode: str, eps: Optional[Fraction]):
    """'pass' | 'fail' | 'undecided' for one output column against its label."""
    if decode == "argmax":
        others = [x for k, x in enumerate(col) if k != label]
        if all(_lo(col[label]) > _hi(x) for x in others):
            return "pass"
        if any(_lo(x) >= _hi(col[label]) for x in others):
            return "fail"
        return "undecided"
    if eps is None:
        return "pass" if col == label else "fail"
    if all(_lo(x) >= y - eps and _hi(x) <= y + eps for x, y in zip(col, label)):
        return "pass"
    if any(_hi(x) < y - eps or _lo(x) > y + eps for x, y in zip(col, label)):
        return "fail"
    return "undecided"


def _judge(cert: _Cert, e: int, out) -> Tuple[str, Optional[dict]]:
    """Decide example e from its output columns (exact or intervals)."""
    label = cert.labels[e]
    if cert.position == "last":
        cols, labs = [out[-1]], [label]
    else:
        cols, labs = out, label
    undecided = False
    for t, (col, lab) in enumerate(zip(cols, labs)):
        r = _judge_column(col, lab, cert.decode, cert.error_bound)
        if r == "fail":
            w = {"example": e, "expected": _fmt(lab), "got": _fmt(col), "reason": "label"}
            if cert.position == "all":
                w["position"] = t
            return "fail", w
        undecided |= r == "undecided"
    if undecided:
        return "undecided", None
    claimed = cert.outputs[e]
    if claimed is None:
        return "pass", None
    derived = label if cert.decode == "argmax" else (cols[0] if cert.position == "last" else cols)
    if claimed != derived:
        return "fail", {"example": e, "expected": _fmt(claimed), "got": _fmt(derived), "reason": "outputs"}
    return "pass", None


def _check_example(cert: _Cert, e: int, x, stop: int, cap: int, used: Optional[int]):
    """(status, witness, precision used so far) for example e; exact layers first, then intervals
    from the first softmax layer on (doubling the precision while undecided)."""
    cols, D = _exact_prefix(cert, x, stop)
    if cert.softmax_at is None:
        keep = cols[-1:] if cert.position == "last" else cols
        status, wit = _judge(cert, e, [[Fraction(v, D) for v in c] for c in keep])
        return status, wit, used
    start = [[Interval(Fraction(v, D), Fraction(v, D)) for v in c] for c in cols]
    for p in _precisions(cap):
        used = p if used is None else max(used, p)
        try:
            iv = start
            for i, layer in enumerate(cert.layers[stop:], stop):
                try:
                    iv = _iv_layer(layer, iv, p)
                except _Softmax2Fault as f:
                    f.layer, f.precision = i, used
                    raise
            status, wit = _judge(cert, e, iv)
        except _Undecided:
            status, wit = "undecided", None
        if status != "undecided":
            break
    return status, wit, used


def _precisions(cap: int):
    p = min(START_PRECISION, cap)
    while True:
        yield p
        if p >= cap:
            return
        p = min(2 * p, cap)


def check_certificate(doc: dict, max_precision: Optional[int] = None) -> Verdict:
    """Validate ``doc`` (raising MalformedCertificate), verify its hash, and re-derive everything."""
    cert = _parse(doc)
    measured = cert.measured
    for raw, q, op, bound in cert.claims:
        if not OPS[op](measured[q], bound):
            return Verdict("REFUTED", {"claim": dict(raw), "bound": _fmt(bound), "measured": str(measured[q])},
                           f"claim {q} {op} {_fmt(bound)} fails: measured {q} = {measured[q]}", None, measured)
    if max_precision is not None:
        _integer(max_precision, "max_precision argument", 1)
    cap = max_precision if max_precision is not None else cert.max_precision
    stop = len(cert.layers) if cert.softmax_at is None else cert.softmax_at
    used, undecided, notes = None, [], []
    for e, x in enumerate(cert.inputs):
        try:
            status, wit, used = _check_example(cert, e, x, stop, cap, used)
        except _Softmax2Fault as f:
            used = f.precision if f.precision is not None else used
            if f.spread is not None:
                status = "undecided"
                notes.append(f"example {e}: softmax2 score spread {f.spread} at model.layers[{f.layer}] exceeds the "
                             f"checker's limit 2^20")
            else:
                h, j, k = f.where
                wit = {"example": e, "reason": "softmax2_score", "layer": f.layer, "head": h, "query": j,
                       "position": k, "score": _fmt(f.score)}
                return Verdict("REFUTED", wit, f"example {e}: softmax2 score {json.dumps(_fmt(f.score))} of key "
                                               f"position {k} (model.layers[{f.layer}], head {h}, query {j}) is "
                                               f"not an integer", used, measured)
        if status == "fail":
            what = "claimed output differs from" if wit["reason"] == "outputs" else "label not met by"
            return Verdict("REFUTED", wit, f"example {e}: {what} the re-derived output", used, measured)
        if status == "undecided":
            undecided.append(e)
    n, k = len(cert.inputs), len(cert.claims)
    if undecided:
        shown = ", ".join(map(str, undecided[:10])) + (", ..." if len(undecided) > 10 else "")
        why = f" ({'; '.join(notes[:3])}{'; ...' if len(notes) > 3 else ''})" if notes else ""
        return Verdict("UNKNOWN", None, f"{len(undecided)} of {n} examples undecided at precision {cap} "
                                        f"(examples {shown}){why}; no refutation found", used, measured)
    tail = f" (interval precision up to {used} bits)" if used is not None else " (exact)"
    return Verdict("CERTIFIED", None, f"all {n} examples pass and all {k} claims hold{tail}", used, measured)


# ---------------------------------------------------------------- command line

class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(message)


def main(argv: Optional[List[str]] = None) -> int:
    """``check CERT [--json] [--max-precision P] [--engine pure|fast]``; exit 0 CERTIFIED, 1 REFUTED,
    2 UNKNOWN, 3 malformed.

    The leading word ``check`` may be omitted (``exactmem check`` passes just ``CERT ...``).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "check":
        argv = argv[1:]
    ap = _Parser(prog="exactmem check", description="Independent checker for exactmem certificates.")
    ap.add_argument("cert", help="certificate file (.json or .json.gz)")
    ap.add_argument("--json", action="store_true", help="print the verdict as JSON")
    ap.add_argument("--max-precision", type=int, default=None, help="override check.max_precision")
    ap.add_argument("--engine", choices=("pure", "fast"), default="pure",
                    help="pure (default): one example at a time, int/Fraction only; fast: the optional batched "
                         "exact path of fastcheck.py (same verdicts; token-wise models)")
    try:
        args = ap.parse_args(argv)
        if args.max_precision is not None and args.max_precision < 1:
            raise _UsageError("--max-precision must be a positive integer")
        check = check_certificate
        if args.engine == "fast":
            try:
                from .fastcheck import check_certificate_fast as check
            except ImportError:  # run as a loose script next to fastcheck.py
                from fastcheck import check_certificate_fast as check
        verdict = check(load_certificate(args.cert), args.max_precision)
    except _UsageError as e:
        print(f"usage error: {e}", file=sys.stderr)
        return 3
    except MalformedCertificate as e:
        print(f"malformed certificate: {e}", file=sys.stderr)
        return 3
    except (RecursionError, MemoryError) as e:
        print(f"cannot check certificate: {type(e).__name__}", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(verdict.to_json(), sort_keys=True))
    else:
        print(f"{verdict.status}: {verdict.message}")
        if verdict.witness is not None:
            print("witness: " + json.dumps(verdict.witness, sort_keys=True))
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
