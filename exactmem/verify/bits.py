"""Bits per weight of a trained network: round every stored weight to ``b`` significant bits, certify again.

Run by ``python -m exactmem sweep MODEL.onnx --data DATA.npz`` or ``em.sweep_bits``.

The network is the one [`exactmem.verify.verify`][exactmem.verify.verify] certifies (docs/verify.md): the real-number
function of the lowered ONNX graph with its stored float weights taken exactly. At a bit-width
``b`` every **weight** — an entry of a float initializer of the ONNX graph — is replaced by the
rational ``round_to_bits(w, b)`` (`exactmem.arith.numbers.round_to_bits`: ``b`` significant
bits, unbounded exponent, to nearest, ties to even; integer arithmetic on the exact rational,
the same rounding as the proof sweep's ``quant-float``). The rounded value of a float32 weight
with ``b <= 24`` is again a float32 (fewer significand bits, an exponent in range), so the
rounded network is again an ONNX model whose initializers hold exactly the rounded rationals
(`encode_bits`, integer-only; a value the format cannot hold is an error, never a
silent rounding). Not rounded: integer initializers (indices, shapes), float ``Constant``
nodes, and two kinds of structural float initializers (`structural`): one-element
tensors (GELU-tanh's 0.044715 and √(2/π), 0.5, the attention scale, Pow's exponent 3) and
additive masks (entries 0 and one negative constant, e.g. the causal mask's float32 minimum, or any
initializer holding -inf, inf or NaN).
For a ``torch.nn.Module`` the module says which are trained (`module_weights`): an initializer
holding a trainable parameter's entries is a weight, one drawn from its buffers or frozen
parameters (a fixed sinusoidal table) is kept exact as ``"buffer"``.

Every example is then re-judged by the same rigorous evaluator (`verify`
on the rounded model). The headline: the **certified minimal b** — the smallest ``b`` at which
every example certified at full precision is still certified, found by bisection between the
evaluated ``b`` (monotonicity in ``b`` is not a theorem: neighbours of the result are evaluated
and every contradiction is listed as a violation, as the proof sweep does). The rounded networks
at ``b*`` and ``b* − 1`` are written as certificates; the kernel
([`exactmem.kernel.checker.check_certificate`][exactmem.kernel.checker.check_certificate]) re-derives both (``CERTIFIED``: the
counts are what they say), and a third certificate at ``b* − 1`` that claims every
full-precision example still memorized must be ``REFUTED`` — the proof that ``b* − 1`` bits
lose an example. Tables and the plot: [`exactmem.verify.bits_report`][exactmem.verify.bits_report].
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..arith.numbers import least_true, round_to_bits
from .data import Examples, given_examples
from .floats import FORMATS, ONNX_FLOATS, NonFinite, decode_bits
from .onnx_import import VerifyInputError, load_onnx

__all__ = ["sweep_bits", "BitsResult", "BitsPoint", "round_model", "weight_initializers", "module_weights", "structural",
           "encode_bits", "round_bits_array", "FORMAT_MARKS", "DEFAULT_BITS"]

DEFAULT_BITS = (2, 4, 6, 8, 10, 12, 16, 24)
# significand widths of the named formats (with the hidden bit): marked in tables and plots
FORMAT_MARKS = {8: "bfloat16", 11: "float16", 24: "float32", 53: "float64"}
_ONNX_FLOATS = ONNX_FLOATS


# ----------------------------------------------------------------------------- rounding the weights


def encode_bits(q: Fraction, fmt: str) -> int:
    """The bit pattern of the float in format ``fmt`` whose value is exactly ``q`` (integer
    arithmetic only). Raises ValueError when ``fmt`` cannot hold ``q`` exactly."""
    total, ebits, mbits, _ = FORMATS[fmt]
    bias = (1 << (ebits - 1)) - 1
    sign = 1 if q < 0 else 0
    p, d = abs(q.numerator), q.denominator
    if p == 0:
        return 0
    if d & (d - 1):
        raise ValueError(f"{q} is not dyadic")
    k = d.bit_length() - 1  # |q| = p / 2^k
    e = p.bit_length() - 1 - k  # floor(log2 |q|)
    if e > bias:
        raise ValueError(f"{q} overflows {fmt}")
    shift = mbits - max(e, 1 - bias) - k  # significand m = |q| * 2^(mbits - max(e, emin))
    if shift >= 0:
        m = p << shift
    elif p & ((1 << -shift) - 1):
        raise ValueError(f"{q} needs more significand bits than {fmt} has")
    else:
        m = p >> -shift
    field_e = e + bias if e >= 1 - bias else 0
    if field_e:
        m -= 1 << mbits  # the hidden bit
    return sign << (total - 1) | field_e << mbits | m


def round_bits_array(raw: np.ndarray, fmt: str, b: int) -> Tuple[np.ndarray, int]:
    """Raw float bit patterns rounded to ``b`` significant bits (per distinct pattern): the new
    patterns and how many entries changed value."""
    uniq, inverse = np.unique(raw.reshape(-1), return_inverse=True)
    new = np.empty(len(uniq), dtype=raw.dtype)
    changed_u = np.zeros(len(uniq), dtype=bool)
    for j, bits in enumerate(uniq.tolist()):
        w = decode_bits(bits, fmt)
        q = round_to_bits(w, b, "nearest")
        if q == w:
            new[j] = bits
        else:
            new[j] = encode_bits(q, fmt)
            changed_u[j] = True
    return new[inverse].reshape(raw.shape), int(changed_u[inverse].sum())


def structural(values: Sequence[Fraction]) -> Optional[str]:
    """Why a float initializer is structure rather than a weight (None: it is a weight).

    ``"scalar"``: one element (GELU's constants, 0.5, attention scales, exponents);
    ``"mask"``: entries 0 and one negative constant (an additive attention mask)."""
    if len(values) <= 1:
        return "scalar"
    distinct = set(values)
    if len(distinct) == 2 and 0 in distinct and min(distinct) < 0:
        return "mask"
    return None


def _raw(tensor) -> Tuple[np.ndarray, str]:
    """An initializer's entries as unsigned bit patterns, and its float format."""
    from onnx import numpy_helper

    fmt = _ONNX_FLOATS[tensor.data_type]
    arr = numpy_helper.to_array(tensor)
    return np.ascontiguousarray(arr).view(FORMATS[fmt][3]), fmt


def kept_reason(tensor) -> Optional[str]:
    """Why float initializer ``tensor`` is kept exact as structure (`structural`: "scalar",
    "mask"; an entry -inf, inf or NaN: "mask", docs/verify-format.md § Special values), or None:
    it is a weight."""
    raw, fmt = _raw(tensor)
    flat = raw.reshape(-1)
    try:
        vals = [decode_bits(v, fmt) for v in np.unique(flat).tolist()] if flat.size > 1 else \
            [decode_bits(int(v), fmt) for v in flat.tolist()]
        return "scalar" if flat.size <= 1 else structural(vals)
    except NonFinite:
        return "mask"


def weight_initializers(model) -> Tuple[List[str], Dict[str, str]]:
    """The names of the float initializers that are weights, and the others with the reason
    they are kept exact (`kept_reason`)."""
    weights, kept = [], {}
    for t in model.graph.initializer:
        if t.data_type in _ONNX_FLOATS:
            why = kept_reason(t)
            if why is None:
                weights.append(t.name)
            else:
                kept[t.name] = why
    return weights, kept


def module_weights(module, model) -> Tuple[List[str], Dict[str, str]]:
    """`weight_initializers` for an ONNX ``model`` exported from the torch ``module``: a float
    initializer that holds a trained parameter's entries (the same multiset of stored values, so a
    transposed or reshaped copy too) is a weight; one drawn wholly from the module's buffers or
    frozen parameters (a fixed sinusoidal table, a mask, the rows of it the graph keeps) is kept
    exact as ``"buffer"``; any other is decided by `weight_initializers`."""
    def bits_of(t):
        a = t.detach().cpu().numpy()
        return np.ascontiguousarray(a).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]).reshape(-1)

    trained = {np.sort(bits_of(q)).tobytes() for q in module.parameters() if q.requires_grad}
    fixed = [bits_of(q) for q in module.parameters() if not q.requires_grad] + [bits_of(q) for q in module.buffers()]
    fixed_values = np.unique(np.concatenate(fixed)) if fixed else np.zeros(0, dtype=np.uint32)
    weights, kept = [], {}
    for t in model.graph.initializer:
        if t.data_type not in _ONNX_FLOATS:
            continue
        raw = _raw(t)[0].reshape(-1)
        if np.sort(raw).tobytes() in trained:
            weights.append(t.name)
        elif raw.size and fixed_values.dtype == raw.dtype and np.isin(raw, fixed_values).all():
            kept[t.name] = "buffer"
        elif (why := kept_reason(t)) is not None:
            kept[t.name] = why
        else:
            weights.append(t.name)
    return weights, kept


def round_model(model, b: int, names: Optional[Iterable[str]] = None):
    """A copy of the ONNX ``model`` whose weight initializers (``names``; default
    `weight_initializers`) hold their values rounded to ``b`` significant bits, exactly;
    and the number of weight entries that changed."""
    import onnx
    from onnx import helper

    if b < 1:
        raise VerifyInputError(f"bit-width {b}: need at least 1 significant bit")
    names = set(weight_initializers(model)[0] if names is None else names)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    changed = 0
    for i, t in enumerate(out.graph.initializer):
        if t.name not in names:
            continue
        raw, fmt = _raw(t)
        try:
            new, k = round_bits_array(raw, fmt, b)
        except ValueError as e:
            raise VerifyInputError(f"initializer {t.name!r} rounded to {b} bits: {e}") from None
        if k:
            changed += k
            little = new.astype(new.dtype.newbyteorder("<"), copy=False)
            out.graph.initializer[i].CopyFrom(helper.make_tensor(t.name, t.data_type, list(t.dims),
                                                                 little.tobytes(), raw=True))
    return out, changed


def weight_stats(model, names: Iterable[str]) -> Dict[str, int]:
    """Entries, largest significand width and exponent-field bits of the weights: stored
    float-style bits per weight are 1 + b + E, E = 1 + LEN(max |e|) over the nonzero weights'
    binary exponents e = ⌊log₂|w|⌋ (the convention of `exactmem.sweep.quantize.storage_bits`)."""
    names = set(names)
    n, sig, emax = 0, 0, 0
    for t in model.graph.initializer:
        if t.name not in names:
            continue
        raw, fmt = _raw(t)
        n += raw.size
        for bits in np.unique(raw.reshape(-1)).tolist():
            w = decode_bits(bits, fmt)
            if w == 0:
                continue
            p, q = abs(w.numerator), w.denominator
            sig = max(sig, (p >> ((p & -p).bit_length() - 1)).bit_length())
            emax = max(emax, abs(p.bit_length() - q.bit_length()))  # q a power of two: exact ⌊log₂|w|⌋
    return {"n_weights": n, "identity_bits": max(sig, 1), "exponent_bits": 1 + emax.bit_length()}


# ----------------------------------------------------------------------------- the sweep


@dataclass
class BitsPoint:
    """The verdicts at one bit-width ``b`` (None: full precision, the stored weights)."""

    b: Optional[int]
    certified: int
    refuted: int
    unknown: int
    lost: List[int]  # rows (first row of each distinct input) certified at full precision, not at b
    gained: List[int]  # certified at b, not at full precision
    changed: int  # weight entries whose value the rounding changed
    float_count: Optional[int]  # onnxruntime's float count on the rounded model (information only)
    seconds: float
    ok: bool  # every example certified at full precision is certified at b
    lost_refuted: int = 0  # of the lost: refuted (the rest are unknown)

    def to_json(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d["seconds"] = round(self.seconds, 3)
        return d


@dataclass
class BitsResult:
    """``sweep_bits``: the points, ``b*``, certificates and the kernel's verdicts on them."""

    name: str
    n_distinct: int
    n_rows: int
    n_weights: int
    weights: List[str]
    kept: Dict[str, str]
    identity_bits: int
    exponent_bits: int
    full: BitsPoint
    points: Dict[int, BitsPoint]
    requested: List[int]
    b_star: Optional[int]
    violations: List[int]
    certificates: Dict[str, str] = field(default_factory=dict)  # role -> path
    kernel: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # role -> {status, message}
    plot: Optional[str] = None
    table_path: Optional[str] = None
    seconds: Dict[str, float] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    position: str = "last"
    n_classes: Optional[int] = None

    @property
    def memorized(self) -> int:
        return self.full.certified

    def storage_bits(self, b: int) -> int:
        """Stored float-style bits per weight at ``b``: sign + ``b`` + exponent field."""
        return 1 + b + self.exponent_bits

    def summary(self) -> str:
        """One line: the headline figure."""
        if self.b_star is None:
            return (f"{self.name}: {self.full.certified} of {self.n_distinct} distinct examples certified at full "
                    "precision; no b keeps them all")
        head = (f"{self.name}: b* = {self.b_star} significant bits per weight keep all {self.full.certified} "
                f"certified examples (of {self.n_distinct} distinct)")
        if self.b_star == 1:
            return head + "; 1 bit is the least width there is (every weight a signed power of two): no b* - 1"
        return head + f"; at b* - 1 = {self.b_star - 1}: {self._at(self.b_star - 1)}"

    def _at(self, b: int) -> str:
        p = self.points[b]
        return f"{p.certified} certified, {len(p.lost)} lost ({p.lost_refuted} refuted)"

    def to_json(self) -> Dict[str, Any]:
        return {"name": self.name, "n_distinct": self.n_distinct, "n_rows": self.n_rows,
                "n_weights": self.n_weights, "weights": self.weights, "kept": self.kept,
                "identity_bits": self.identity_bits, "exponent_bits": self.exponent_bits,
                "full": self.full.to_json(), "points": [self.points[b].to_json() for b in sorted(self.points)],
                "requested": self.requested, "b_star": self.b_star,
                "storage_bits_at_b_star": None if self.b_star is None else self.storage_bits(self.b_star),
                "violations": self.violations, "certificates": self.certificates, "kernel": self.kernel,
                "plot": self.plot, "table": self.table_path, "notes": self.notes,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def _distinct_status(ex: Examples, verdicts: Sequence[str]) -> Dict[int, str]:
    """Per distinct input (keyed by its first row): pass if some row of it passes, else fail if
    one fails, else unknown — the counting of `exactmem.verify.run.verify`."""
    first: Dict[bytes, int] = {}
    status: Dict[int, str] = {}
    for i in range(ex.N):
        r = first.setdefault(ex.key(i), i)
        v, old = verdicts[i], status.get(r)
        if old != "pass":
            status[r] = v if old in (None, "unknown") or v == "pass" else old
    return status


class _Sweep:
    """State of one sweep: the model, the examples, the evaluated points and their results."""

    def __init__(self, mp, ex: Examples, weights: List[str], *, position, workers, max_precision, float_count, quiet,
                 name):
        self.mp, self.ex, self.weights = mp, ex, weights
        self.opts = dict(position=position, workers=workers, max_precision=max_precision, float_count=float_count)
        self.quiet, self.name = quiet, name
        self.points: Dict[int, BitsPoint] = {}
        self.docs: Dict[Optional[int], Dict[str, Any]] = {}
        self.full_status: Dict[int, str] = {}
        self.full: Optional[BitsPoint] = None

    def _run(self, mp, b: Optional[int]):
        from .run import verify

        res = verify(mp, self.ex.raw, self.ex.labels, quiet=True, name=self.name, **self.opts)
        return res, _distinct_status(self.ex, res.verdicts)

    def evaluate_full(self) -> BitsPoint:
        """Certify the stored network (full precision)."""
        t = time.perf_counter()
        res, st = self._run(self.mp, None)
        self.full_status = st
        self.docs[None] = res.doc
        self.full = BitsPoint(None, res.certified, res.refuted, res.unknown, [], [], 0, res.float_count,
                              time.perf_counter() - t, True)
        self._say(f"full precision: certified {res.certified}, refuted {res.refuted}, unknown {res.unknown} "
                  f"({self.full.seconds:.1f} s)")
        return self.full

    def point(self, b: int) -> BitsPoint:
        """The verdicts at ``b`` (evaluated once; a rounding that changes no weight reuses the
        full-precision verdicts: the network is the same)."""
        if b in self.points:
            return self.points[b]
        t = time.perf_counter()
        mp_b, changed = round_model(self.mp, b, self.weights)
        if changed == 0:
            st, doc = self.full_status, self.docs[None]
            f = self.full
            c, r, u, fc = f.certified, f.refuted, f.unknown, f.float_count
        else:
            res, st = self._run(mp_b, b)
            doc, c, r, u, fc = res.doc, res.certified, res.refuted, res.unknown, res.float_count
        full_pass = {i for i, v in self.full_status.items() if v == "pass"}
        now_pass = {i for i, v in st.items() if v == "pass"}
        lost = sorted(full_pass - now_pass)
        p = BitsPoint(b, c, r, u, lost, sorted(now_pass - full_pass), changed, fc, time.perf_counter() - t,
                      not lost, sum(st[i] == "fail" for i in lost))
        self.points[b] = p
        self.docs[b] = doc
        self._say(f"b = {b}: certified {c}, refuted {r}, unknown {u}; lost {len(lost)}, gained {len(p.gained)}; "
                  f"{changed} weights changed ({p.seconds:.1f} s)")
        return p

    def keep_docs(self, bs: Iterable[Optional[int]]):
        """Drop the certificate documents of every point but ``bs`` (memory)."""
        keep = set(bs)
        for b in list(self.docs):
            if b not in keep:
                del self.docs[b]

    def _say(self, text: str):
        if not self.quiet:
            print(f"bits: {text}", file=sys.stderr, flush=True)


def minimal_bits(sw: _Sweep, bits: Sequence[int], identity: int, neighbours: int) -> Tuple[Optional[int], List[int]]:
    """``b*`` by bisection between the evaluated ``bits`` (``identity``: the width at which no
    weight changes, which keeps everything by definition) and the monotonicity violations
    among every evaluated ``b`` (also ``neighbours`` values on each side of ``b*``)."""
    for b in bits:
        sw.point(b)
    good = [b for b in sorted(sw.points) if sw.points[b].ok]
    hi = good[0] if good else identity
    sw.point(hi)
    bad = [b for b in sorted(sw.points) if b < hi and not sw.points[b].ok]
    lo = bad[-1] if bad else 0
    b_star = least_true(lambda b: sw.point(b).ok, lo, hi)
    for b in list(range(b_star - neighbours - 1, b_star)) + list(range(b_star + 1, b_star + neighbours + 1)):
        if 1 <= b:
            sw.point(b)
    violations = [b for b in sorted(sw.points) if sw.points[b].ok != (b >= b_star)]
    return b_star, violations


# ----------------------------------------------------------------------------- certificates


def claim_all_kept(doc: Dict[str, Any], ex: Examples, full_status: Dict[int, str]) -> Dict[str, Any]:
    """A copy of the certificate ``doc`` (a rounded network) that claims ``pass`` for every
    example certified at full precision, with ``n_pass``/``n_fail`` counted from those claims:
    the claim "b bits keep every memorized example". Where that is false the kernel refutes it."""
    from ..kernel.schema import canonical_hash

    out = dict(doc)
    outs = list(doc["outputs"])
    first: Dict[bytes, int] = {}
    for i in range(ex.N):
        r = first.setdefault(ex.key(i), i)
        if full_status.get(r) == "pass" and i == r:
            outs[i] = "pass"
    out["outputs"] = outs
    st = _distinct_status(ex, outs)
    counts = {"n_pass": sum(v == "pass" for v in st.values()), "n_fail": sum(v == "fail" for v in st.values())}
    out["claims"] = [dict(c, bound=str(counts[c["quantity"]])) if c["quantity"] in counts else c
                     for c in doc["claims"]]
    out["meta"] = dict(doc.get("meta", {}), planted="claims every example certified at full precision is memorized")
    out.pop("hash", None)
    out["hash"] = canonical_hash(out)
    return out


def _with_bits(doc: Dict[str, Any], b: int, name: str) -> Dict[str, Any]:
    """The certificate of the network rounded to ``b`` bits, its instance and meta saying so."""
    from ..kernel.schema import canonical_hash

    out = dict(doc)
    out["instance"] = f"{name}@b={b}"
    out["meta"] = dict(doc.get("meta", {}), weight_bits=b,
                       rounding="every float weight initializer to b significant bits, nearest, ties to even")
    out.pop("hash", None)
    out["hash"] = canonical_hash(out)
    return out


def _kernel_check(path: str) -> Dict[str, Any]:
    """The kernel's verdict on a certificate file, as ``check --engine auto`` reaches it for a graph model:
    the fast graph engine's enclosures, the kernel judging every example from them and re-deriving those
    they leave undecided (`fastcheck.check_certificate_fast`; the same verdict as ``check_certificate``)."""
    from ..certificate.fastcheck import check_certificate_fast
    from ..kernel.schema import load_certificate

    t = time.perf_counter()
    v = check_certificate_fast(load_certificate(path))
    return {"status": v.status, "message": v.message, "witness": v.witness, "engine": "fast",
            "seconds": round(time.perf_counter() - t, 3)}


def write_and_check(sw: _Sweep, b_star: int, out: str, check: bool, workers: int) -> Tuple[Dict, Dict]:
    """Certificates at ``b*`` and ``b* − 1`` (and the planted claim at ``b* − 1``) in
    ``out/certificates``; the kernel's verdicts when ``check``."""
    from ..certificate.writer import write_certificate

    d = os.path.join(out, "certificates")
    os.makedirs(d, exist_ok=True)
    paths: Dict[str, str] = {}
    jobs = [("b_star", b_star, False)]
    if b_star > 1:
        jobs += [("b_star_minus_1", b_star - 1, False), ("b_star_minus_1_claims_all", b_star - 1, True)]
    for role, b, planted in jobs:
        doc = _with_bits(sw.docs[b], b, sw.name)
        if planted:
            doc = claim_all_kept(doc, sw.ex, sw.full_status)
        suffix = ".claims-all" if planted else ""
        paths[role] = write_certificate(doc, os.path.join(d, f"{sw.name}.b{b}{suffix}.verify.json"))
    verdicts: Dict[str, Dict[str, Any]] = {}
    if check:
        roles = list(paths)
        if workers > 1 and len(roles) > 1:
            import multiprocessing as mp_
            from concurrent.futures import ProcessPoolExecutor

            ctx = mp_.get_context("fork") if "fork" in mp_.get_all_start_methods() else None
            with ProcessPoolExecutor(min(workers, len(roles)), mp_context=ctx) as pool:
                for role, v in zip(roles, pool.map(_kernel_check, [paths[r] for r in roles])):
                    verdicts[role] = v
        else:
            for role in roles:
                verdicts[role] = _kernel_check(paths[role])
    return paths, verdicts


# ----------------------------------------------------------------------------- entry point


def _bits_list(bits) -> List[int]:
    """Validated bit-widths: integers >= 1, sorted, without repeats."""
    out = []
    for b in bits:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
            raise VerifyInputError(f"bit-widths must be integers >= 1, got {b!r}")
        out.append(int(b))
    if not out:
        raise VerifyInputError("give at least one bit-width")
    return sorted(set(out))


def _model_proto(model, ex: Examples, quiet: bool, name: Optional[str]):
    """The ONNX ModelProto (a torch Module is exported in-process) and a name for files."""
    from .run import export_torch

    if hasattr(model, "state_dict") and hasattr(model, "forward"):
        return load_onnx(export_torch(model, ex.raw[:1], quiet=quiet)), name or type(model).__name__
    if isinstance(model, (str, os.PathLike)):
        name = name or os.path.splitext(os.path.basename(str(model)))[0]
    return load_onnx(model), name or "model"


def sweep_bits(model, inputs=None, labels=None, *, bits: Sequence[int] = DEFAULT_BITS, data: Optional[str] = None,
               position: str = "last", out: Optional[str] = None, workers: int = 1, neighbours: int = 2,
               check: bool = True, plot: bool = True, formats: bool = True, max_precision: int = 4096,
               float_count: bool = True, quiet: bool = True, name: Optional[str] = None,
               weights: Optional[Iterable[str]] = None, write=None) -> BitsResult:
    """Sweep the weight bit-width of a trained network (see the module docstring).

    ``model``: an ONNX path, a ``ModelProto`` or a ``torch.nn.Module`` (as for ``em.verify``);
    ``inputs``/``labels`` or ``data=`` an ``.npz``. ``bits``: the widths evaluated (plus 8 and
    11, the bfloat16 and float16 significands, when ``formats``), then ``b*`` by bisection and
    ``neighbours`` widths on each side. ``out``: directory for the certificates at ``b*`` and
    ``b* − 1`` (checked by the kernel when ``check``), ``bits.json``, ``bits.md`` and
    ``bits.png`` (when ``plot`` and matplotlib is installed). ``weights``: names of the
    initializers to round (default: `weight_initializers`). ``write(result, out, plot)``
    writes the tables and plot into ``out`` at the end (``exactmem.verify.bits_report.sweep_bits``
    passes it; this module does not import the report). Raises `VerifyInputError` (one
    line) on bad input."""
    t0 = time.perf_counter()
    req = _bits_list(bits)
    if workers < 1:
        raise VerifyInputError("--workers must be at least 1")
    if neighbours < 0:
        raise VerifyInputError("--neighbours must be at least 0")
    ex = given_examples(inputs, labels, data, position)
    mp, name = _model_proto(model, ex, quiet, name)
    is_module = hasattr(model, "state_dict") and hasattr(model, "forward")
    auto, kept = module_weights(model, mp) if is_module else weight_initializers(mp)
    wnames = auto if weights is None else list(weights)
    inits = {t.name for t in mp.graph.initializer if t.data_type in _ONNX_FLOATS}
    missing = [w for w in wnames if w not in inits]
    if missing:
        raise VerifyInputError(f"no float initializer named {missing[0]!r} in the model")
    if weights is not None:
        kept = {k: v for k, v in kept.items() if k not in set(wnames)}
    stats = weight_stats(mp, wnames)
    sw = _Sweep(mp, ex, wnames, position=position, workers=workers, max_precision=max_precision,
                float_count=float_count, quiet=quiet, name=name)
    sw.evaluate_full()
    t_full = time.perf_counter()
    todo = sorted(set(req) | ({8, 11} if formats else set()))
    b_star, violations = minimal_bits(sw, todo, stats["identity_bits"], neighbours)
    t_sweep = time.perf_counter()
    notes = []
    if sw.full.certified == 0:
        notes.append("no example is certified at full precision: every b keeps them all (b* = 1 trivially)")
    res = BitsResult(name, len(sw.full_status), ex.N, stats["n_weights"], wnames, kept, stats["identity_bits"],
                     stats["exponent_bits"], sw.full, dict(sorted(sw.points.items())), req, b_star, violations,
                     position=position, notes=notes)
    if out is not None:
        os.makedirs(out, exist_ok=True)
        res.certificates, res.kernel = write_and_check(sw, b_star, out, check, workers)
    sw.keep_docs(())
    t_end = time.perf_counter()
    res.seconds = {"full": t_full - t0, "sweep": t_sweep - t_full, "certificates": t_end - t_sweep,
                   "total": t_end - t0}
    if out is not None and write is not None:
        write(res, out, plot)
    return res
