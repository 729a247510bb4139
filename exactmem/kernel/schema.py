"""Reading and validating a certificate (kernel; formats v1 and v2, ``docs/certificate.md``).

``parse_certificate`` checks every field, the hash and the digit limit, and returns a
`ParsedCertificate` (layers as `linear` holds them, examples as ints and Fractions,
claims, measured size quantities); anything invalid raises `MalformedCertificate`.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import os
import re
import stat
import zlib
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Dict, List, Optional

from .fields import MalformedCertificate, _list, _obj, _str, bad, integer, jtype  # noqa: F401 (re-exported)
from .facts import DATA_QUANTITIES, VECTOR_QUANTITIES, VERDICT_QUANTITIES
from .graph import parse_graph
from .limits import Budget, LimitExceeded, Limits
from .layerschema import layer_answers, read_layers
from .text import parse_int, short

FORMAT = "exactmem-certificate"
VERSION = 2  # version 1 (one document) is still read
CHUNK_FORMAT = "exactmem-certificate-chunk"
_CHUNK_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")  # a plain file name next to the certificate
QUANTITIES = ("n_params", "n_nonzero", "width", "relu_depth", "attention_layers", "depth", "max_bits",
              "total_bits", "input_dim") + DATA_QUANTITIES  # the data quantities are counted from the examples (facts.py)
OPS = {"==": lambda a, b: a == b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
       "<": lambda a, b: a < b, ">": lambda a, b: a > b}
JSON_INT_DIGITS = 300  # JSON integer literals (ids, sizes, seeds); rationals are strings
SHORT_TEXT = 24  # rational texts up to this length are remembered by _Reader.rat (small numbers repeat)
KNOWN_RATIONALS = 1 << 16  # at most this many per reader
ASKABLE = ("max_digits", "max_value_bits", "time_limit")  # limits a certificate may lower (check.limits)
_RATIONAL = re.compile(r"(-?)([0-9]+)(?:/([0-9]+))?")
VERDICTS = ("pass", "fail", "unknown")  # claimed verdicts of a graph model's examples


@dataclass
class ParsedCertificate:
    layers: list  # Embed | Affine | FeedForward | Attention
    tokens: bool
    position: str  # readout position: last | all
    decode: str  # identity | argmax
    out_dim: int
    softmax_at: Optional[int]  # index of the first softmax layer
    inputs: list  # per example: token ids, or Fraction vectors
    labels: list
    outputs: list
    claims: list  # (raw claim dict, quantity, op, bound)
    error_bound: Optional[Fraction]
    max_precision: int  # what the certificate asks
    measured: Dict[str, int]
    first: int = 0  # global index of inputs[0] (a chunk or a shard of the dataset)
    chunks: Optional[list] = None  # version 2: (file, sha256 hex, examples, first) per chunk; inputs come later
    spec: Optional[tuple] = None  # what validating an example needs (vocab, dim, P rows, attention facts)
    graph: Optional[object] = None  # a graph model (graph.Graph; docs/verify-format.md): layers [], softmax_at 0
    formulas: Optional[dict] = None  # claim formulas, layer models only: {"definitions": raw list}; formulas.py
    codelengths: Optional[list] = None  # a graph model's claimed code length per example (codelength.py)


def canonical_hash(doc: dict) -> str:
    """ "sha256:" + hex digest of the canonical JSON of ``doc`` without "hash" and "meta"."""
    body = {k: v for k, v in doc.items() if k not in ("hash", "meta")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _pairs(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise MalformedCertificate(f"duplicate key {k!r} in a JSON object")
        d[k] = v
    return d


def _constant(name):
    raise MalformedCertificate(f"invalid JSON constant {name}")


def _json_int(s: str) -> int:
    if len(s) > JSON_INT_DIGITS:
        raise MalformedCertificate(f"a JSON integer literal of {len(s)} digits (at most {JSON_INT_DIGITS}; "
                                   "numbers are strings)")
    return int(s)


def read_bytes(path: str, limits: Optional[Limits] = None, name: Optional[str] = None, follow: bool = True) -> bytes:
    """At most ``max_bytes`` + 1 bytes of a regular file; anything else is malformed (``name`` in
    messages): a FIFO, device or directory (checked with ``fstat`` after a non-blocking open, so a
    FIFO never blocks), a file over ``max_bytes`` (checked before reading), and with ``follow``
    False a symbolic link (``O_NOFOLLOW``)."""
    cap, what = (limits or Limits()).max_bytes, name or path
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    link = MalformedCertificate(f"{what} is a symbolic link (chunk files must be regular files in the "
                                "certificate's folder)")
    if not follow and os.path.islink(path):  # also where O_NOFOLLOW does not exist
        raise link
    flags |= 0 if follow else getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise link from None
        raise MalformedCertificate(f"cannot read {what}: {e.strerror or e}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise MalformedCertificate(f"{what} is not a regular file (a FIFO, device or directory)")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > cap:
            raise MalformedCertificate(f"{what}: " + str(LimitExceeded("max_bytes", f"the file is larger than {cap} "
                                                                                    f"bytes ({st.st_size} bytes)")))
        try:
            return f.read(cap + 1)
        except OSError as e:
            raise MalformedCertificate(f"cannot read {what}: {e.strerror or e}") from None


def load_certificate(path: str, limits: Optional[Limits] = None) -> dict:
    """Read a certificate (JSON, or gzip-compressed JSON) within ``limits.max_bytes``."""
    return decode_certificate(read_bytes(path, limits), path, limits)


def decode_certificate(data: bytes, name: str, limits: Optional[Limits] = None) -> dict:
    """The JSON document in a certificate's bytes (gunzipped if compressed), within the byte limit."""
    cap = (limits or Limits()).max_bytes
    if name.endswith(".gz") or data[:2] == b"\x1f\x8b":
        try:
            data = gzip.GzipFile(fileobj=io.BytesIO(data)).read(cap + 1) if len(data) <= cap else data
        except (OSError, EOFError, zlib.error) as e:
            raise MalformedCertificate(f"{name}: truncated or corrupt gzip data ({e})") from None
    if len(data) > cap:
        bad(name, str(LimitExceeded("max_bytes", f"the certificate is larger than {cap} bytes")))
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant,
                         parse_int=_json_int)
    except UnicodeDecodeError as e:
        raise MalformedCertificate(f"{name}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise MalformedCertificate(f"{name}: invalid or truncated JSON ({e.msg} at line {e.lineno} "
                                   f"column {e.colno})") from None
    except (ValueError, RecursionError) as e:
        raise MalformedCertificate(f"{name}: unreadable JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise MalformedCertificate(f"{name}: the top level must be a JSON object, got {jtype(doc)}")
    return doc


class _Reader:
    """Numbers under the digit limit, parameters collected for the size claims."""

    def __init__(self, budget: Budget):
        self.budget, self.params = budget, []
        self.known: Dict[tuple, tuple] = {}  # an input token's texts -> its validated vector (tokens repeat)
        self.rats: Dict[str, Fraction] = {}  # a short rational text -> its number (small numbers repeat)

    def rat(self, x, path: str) -> Fraction:
        if type(x) is str and x in self.rats:  # the same text, validated before: the same (immutable) number
            return self.rats[x]
        if not isinstance(x, str):
            bad(path, f'expected a rational string like "-3/8", got {jtype(x)}')
        if len(x) > SHORT_TEXT:  # a long number takes time to read: the time limit is checked before it
            self.budget.tick()
        m = _RATIONAL.fullmatch(x)
        if not m:
            bad(path, f"bad rational {x[:40]!r} (expected \"p\" or \"p/q\", decimal digits, no spaces/decimals)")
        digits, cap = max(len(m[2]), len(m[3] or "")), self.budget.limits.max_digits
        if digits > cap:
            bad(path, str(LimitExceeded("max_digits", f"a number of {digits} digits, more than {cap}")))
        num, den = parse_int(m[1] + m[2]), parse_int(m[3] or "1")  # parse_int reads a leading "-"
        if den == 0:
            bad(path, f"zero denominator in {short(x)!r}")
        q = Fraction(num) if den == 1 else Fraction(num, den)
        if len(x) <= SHORT_TEXT and len(self.rats) < KNOWN_RATIONALS:
            self.rats[x] = q
        return q

    def vec(self, x, n: Optional[int], path: str, param: bool = False) -> List[Fraction]:
        self.budget.tick()
        v = [self.rat(y, f"{path}[{i}]") for i, y in enumerate(_list(x, path, n, nonempty=True))]
        if param:
            self.params.extend(v)
        return v

    def token(self, t, n: Optional[int], path: str) -> tuple:
        """An input token (n rationals) as an immutable vector, validated the first time its texts
        occur; later occurrences of the same texts share that vector (the same budget tick)."""
        try:  # a known key holds only strings, and no other JSON value equals a string
            key = tuple(t) if type(t) is list else None
            v = self.known.get(key)
        except TypeError:  # an unhashable entry (a list or an object): validated below
            key = v = None
        if v is None:
            v = tuple(self.vec(t, n, path))
            if key is not None and all(type(y) is str for y in key):
                self.known[key] = v
        else:
            self.budget.tick()
        return v


def _header(doc, budget: Budget) -> dict:
    """Format, version, fields, hash; then the certificate's ``check.limits`` lower the budget. Returns ``check``."""
    if not isinstance(doc, dict):
        raise MalformedCertificate(f"the certificate must be a JSON object, got {jtype(doc)}")
    _obj(doc, "(top level)", ("format", "version"), None)
    if doc["format"] != FORMAT:
        bad("format", f"expected {FORMAT!r}, got {jtype(doc['format'])}")
    v = doc["version"]
    if not isinstance(v, int) or isinstance(v, bool) or v not in (1, VERSION):
        shown = v if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() < 64 else jtype(v)
        bad("version", f"unknown certificate version {shown} (this checker reads versions 1 and {VERSION})")
    _obj(doc, "(top level)", ("format", "version", "theorem", "instance", "seed", "model", "dataset", "outputs",
                              "claims", "check", "hash"), ("meta", "definitions"))
    h = doc["hash"]
    if not isinstance(h, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", h):
        bad("hash", f'expected "sha256:" followed by 64 lowercase hex digits, got {jtype(h)}')
    try:
        actual = canonical_hash(doc)
    except (TypeError, ValueError, RecursionError) as e:
        raise MalformedCertificate(f"content cannot be serialised canonically: {type(e).__name__}") from None
    if actual != h:
        bad("hash", f"wrong hash: the file says {h} but its content hashes to {actual} "
                    "(edited without re-hashing, or corrupted)")
    _str(doc["theorem"], "theorem")
    _str(doc["instance"], "instance")
    if doc["seed"] is not None:
        integer(doc["seed"], "seed")
    if "meta" in doc:
        _obj(doc["meta"], "meta", (), None)
    chk = _obj(doc["check"], "check", ("error_bound", "max_precision"), ("limits",))
    asked = _obj(chk.get("limits", {}), "check.limits", (), ASKABLE)
    asked = {k: _Reader(budget).rat(v, f"check.limits.{k}") if k == "time_limit" else
             integer(v, f"check.limits.{k}", 1) for k, v in asked.items()}
    if asked.get("time_limit", 1) <= 0:
        bad("check.limits.time_limit", "must be positive seconds")
    budget.restart(budget.limits.lowered(asked))
    return chk


def parse_certificate(doc, budget: Optional[Budget] = None) -> ParsedCertificate:
    """Validate ``doc`` and verify its hash (MalformedCertificate otherwise); the budget's time
    limit is checked while reading (LimitExceeded)."""
    budget = budget or Budget()
    chk = _header(doc, budget)
    rd = _Reader(budget)
    model = _obj(doc["model"], "model", ("input", "readout"), ("layers", "graph"))
    if ("graph" in model) == ("layers" in model):
        bad("model", "needs exactly one of 'layers' and 'graph'")
    inp = _obj(model["input"], "model.input", ("type",), None)
    tokens = _str(inp["type"], "model.input.type", ("vectors", "tokens")) == "tokens"
    key = "vocab" if tokens else "dim"
    m = integer(_obj(inp, "model.input", ("type", key), ("shape",) * ("graph" in model and not tokens))[key],
                f"model.input.{key}", 1)
    shape = [integer(v, f"model.input.shape[{i}]", 1) for i, v in enumerate(_list(inp.get("shape", [m]), "model.input.shape"))]
    if not 0 < len(shape) < 64 or shape[-1] != m:  # a graph model's tensor input: [1, *shape] (docs/verify-format.md)
        bad("model.input.shape", f"expected 1 to 63 dimensions, the last one {m} (the dim)")
    ro = _obj(model["readout"], "model.readout", ("position", "decode"))
    position = _str(ro["position"], "model.readout.position", ("last", "all"))
    decode = _str(ro["decode"], "model.readout.decode", ("identity", "argmax"))
    eps = None if chk["error_bound"] is None else rd.rat(chk["error_bound"], "check.error_bound")
    if eps is not None and eps < 0:
        bad("check.error_bound", "must be >= 0")
    max_precision = integer(chk["max_precision"], "check.max_precision", 1)
    graph, in_size = None, m
    if "graph" in model:  # evaluated in intervals throughout: softmax_at 0
        graph, sizes = parse_graph(model["graph"], rd)
        graph.shape = tuple(shape) if "shape" in inp else None
        if decode != "argmax":
            bad("model.readout.decode", "a graph model decodes by 'argmax'")
        layers, softmax_at, m, facts = [], 0, None, None
    else:
        layers, softmax_at, m, sizes, facts = read_layers(rd, model["layers"], m, tokens, decode, eps)
    cl = graph is not None and any(isinstance(c, dict) and c.get("quantity") == "codelength_bits" for c in
                                   doc["claims"] if isinstance(doc["claims"], list))  # outputs carry code lengths
    spec = (in_size if tokens else None, None if tokens else in_size, position, m, facts, graph and graph.shape, cl)
    chunks = None
    if doc["version"] == 1:
        ds = _obj(doc["dataset"], "dataset", ("inputs", "labels"))
        inputs, labels, outputs, codes = _examples(rd, spec, ds, doc["outputs"], "dataset.", "")
        n_ex = len(inputs)
    else:
        inputs, labels, outputs, chunks, n_ex, names, codes = [], [], [], [], 0, {}, None
        for k, c in enumerate(_list(_obj(doc["dataset"], "dataset", ("chunks",))["chunks"], "dataset.chunks")):
            cp = f"dataset.chunks[{k}]"
            _obj(c, cp, ("file", "sha256", "examples"), ("first",))
            if not _CHUNK_FILE.fullmatch(_str(c["file"], f"{cp}.file")):
                bad(f"{cp}.file", f"{c['file'][:40]!r} is not a plain file name next to the certificate")
            if not re.fullmatch(r"[0-9a-f]{64}", _str(c["sha256"], f"{cp}.sha256")):
                bad(f"{cp}.sha256", "expected 64 lowercase hex digits")
            for key in ("file", "sha256"):  # each chunk listed once: no example is counted twice
                if (key, c[key]) in names:
                    bad(f"{cp}.{key}", f"the same {key} as dataset.chunks[{names[key, c[key]]}] (a chunk listed twice)")
                names[key, c[key]] = k
            if "first" in c and integer(c["first"], f"{cp}.first", 0) != n_ex:
                bad(f"{cp}.first", f"chunk ranges must partition the examples: this chunk starts at {c['first']}, "
                                   f"the chunks before it end at {n_ex}")
            chunks.append((c["file"], c["sha256"], integer(c["examples"], f"{cp}.examples", 1), n_ex))
            n_ex += c["examples"]
        if doc["outputs"] is not None:
            bad("outputs", "must be null in a version-2 certificate (outputs are in the chunks)")
    claims = []
    for c, cl in enumerate(_list(doc["claims"], "claims")):
        cp = f"claims[{c}]"
        _obj(cl, cp, ("quantity", "op", "bound"), ("source", "name", "formula"))
        q, op = _str(cl["quantity"], f"{cp}.quantity", QUANTITIES + VERDICT_QUANTITIES), _str(cl["op"], f"{cp}.op", tuple(OPS))
        claims.append((cl, q, op, rd.rat(cl["bound"], f"{cp}.bound")))
        if q in VERDICT_QUANTITIES and graph is None:
            bad(f"{cp}.quantity", f"{q} counts the confirmed verdicts of a graph model's examples")
        if q in VECTOR_QUANTITIES and (tokens or graph is not None):
            bad(f"{cp}.quantity", f"{q} is defined for vector inputs (the tokens' coordinates), not token ids"
                if tokens else f"{q} is a layer model's token geometry; a graph model does not claim it")
        if "source" in cl:
            _str(cl["source"], f"{cp}.source")
    formulas = {"definitions": doc.get("definitions", [])} if "definitions" in doc or any(
        "name" in c or "formula" in c for c, *_ in claims) else None  # checked by formulas.py (its own base)
    if graph is not None and formulas:
        bad("claims", "claim names, formulas and definitions are for layer models")
    bits = [abs(x.numerator).bit_length() + x.denominator.bit_length() for x in rd.params]  # bits(p/q)
    measured = {"n_params": len(bits), "n_nonzero": sum(1 for x in rd.params if x), **sizes,
                "max_bits": max(bits, default=0), "total_bits": sum(bits), "input_dim": in_size, "n_rows": n_ex}
    return ParsedCertificate(layers, tokens, position, decode, m, softmax_at, inputs, labels, outputs, claims,
                             eps, max_precision, measured, 0, chunks, spec, graph, formulas, codes)


def _examples(rd: _Reader, spec: tuple, ds: dict, outs, where: str, out_where: str, count: Optional[int] = None):
    """Validate the examples (``ds`` inputs and labels, claimed outputs ``outs``); paths start with ``where``.
    A graph model's example has a label (per position) and a claimed verdict; a layer model's (``facts``
    not None) is checked against its layers by `layerschema.layer_answers`."""
    vocab, in_dim, position, out_dim, facts, shape, cl = spec
    xs = _list(ds["inputs"], f"{where}inputs", count)
    ys, outs = _list(ds["labels"], f"{where}labels", len(xs)), _list(outs, f"{out_where}outputs", len(xs))
    inputs, labels, outputs, codes = [], [], [], []
    for e in range(len(xs)):
        rd.budget.tick()
        path = f"{where}inputs[{e}]"
        rows = [xs[e]] if shape else _list(xs[e], path, nonempty=True)
        for d in (shape or [])[:-1]:  # a tensor input (model.input.shape): nested lists, read as its rows
            rows = [r for v in rows for r in _list(v, path, d)]
        n = len(rows)
        inputs.append([integer(t, f"{path}[{s}]", 0, vocab - 1) for s, t in enumerate(rows)] if vocab is not None
                      else [rd.token(t, in_dim, f"{path}[{s}]") for s, t in enumerate(rows)])
        if facts is None:
            lp = f"{where}labels[{e}]"  # a class index, or one per position
            labels.append([integer(v, f"{lp}[{t}]", 0) for t, v in enumerate(_list(ys[e], lp, n))] if position == "all"
                          else integer(ys[e], lp, 0))
            o, p = outs[e], f"{out_where}outputs[{e}]"
            if cl:  # a codelength_bits claim: each output is {"verdict": ..., "codelength": bits}
                codes.append(rd.rat(_obj(o, p, ("verdict", "codelength"))["codelength"], f"{p}.codelength"))
                o, p = o["verdict"], f"{p}.verdict"
            outputs.append(_str(o, p, VERDICTS))
        else:
            label, out = layer_answers(rd, spec, e, n, ys[e], outs[e], where, out_where)
            labels.append(label)
            outputs.append(out)
    return inputs, labels, outputs, codes if cl else None


def parse_chunk(cert: ParsedCertificate, k: int, data: bytes, budget: Budget) -> ParsedCertificate:
    """The examples of chunk k of a version-2 certificate, from the chunk file's bytes: their
    SHA-256 must be the one the (hashed) certificate names; then every field is validated."""
    file, digest, count, first = cert.chunks[k]
    where = f"dataset.chunks[{k}] ({file})"
    if hashlib.sha256(data).hexdigest() != digest:
        bad(where, "the chunk file's SHA-256 differs from the certificate's (altered or replaced)")
    doc = _obj(decode_certificate(data, file, budget.limits), where, ("format", "inputs", "labels", "outputs"),
               ("first",))
    if doc["format"] != CHUNK_FORMAT:
        bad(f"{where}.format", f"expected {CHUNK_FORMAT!r}")
    if "first" in doc and integer(doc["first"], f"{where}.first") != first:
        bad(f"{where}.first", f"the chunk says it starts at example {doc['first']}, its place in the list at {first}")
    ex = _examples(_Reader(budget), cert.spec, doc, doc["outputs"], f"{where}.", f"{where}.", count)
    return replace(cert, inputs=ex[0], labels=ex[1], outputs=ex[2], first=first, chunks=None, codelengths=ex[3])
