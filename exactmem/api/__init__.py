"""The public library surface: build, run, certify and look inside memorizing Transformers.

Everything here wraps the project's own modules (data generators, constructions, the exact
forward pass, the certificate writer and the independent checker); nothing is re-derived.
The data flow is the one of ``docs/index.md``::

    data → construction → Memorizer(model, dataset, claims) → run / trace / inspect
                                                            → certify (independent checker)

A short session (``docs/tutorials/01-memorize-five-sequences.md``)::

    import exactmem as em
    data = em.sequences(N=5, n=4, d=3, C=3, seed=0)   # Kajitsuka & Sato's setting
    net = em.kajitsuka.next_token(data)               # Theorem B.1, built exactly
    em.run(net, data)                                 # exact outputs = the labels
    em.certify(net).status                            # 'CERTIFIED' (independent checker)
    print(em.inspect(net))                            # layers, stages, parameters, bits

See ``docs/library.md`` for the reference.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ..certificate.writer import QUANTITIES, Claim
from ..data.dataset import DataError, Dataset
from ..data.kajitsuka_data import SequenceData
from ..data.kajitsuka_data import generate as _generate
from ..data.kajitsuka_data import make_data as _make_data
from ..model.layers import Model

__all__ = ["Memorizer", "Stage", "DataReport", "Trace", "LayerTrace", "Claim", "sequences", "make_data",
           "check_data", "dataset", "as_dataset", "run", "trace", "certify", "claims_from"]


# ----------------------------------------------------------------------------- the result type


@dataclass(frozen=True)
class Stage:
    """A named range of layers ``model.layers[start:stop]`` (a lemma's part of the network)."""

    name: str
    start: int
    stop: int

    def __contains__(self, i: int) -> bool:
        return self.start <= i < self.stop

    @property
    def layers(self) -> range:
        return range(self.start, self.stop)


@dataclass
class Memorizer:
    """A built memorizing network together with everything needed to check it.

    * ``model`` — the exact network ([`exactmem.model.Model`][exactmem.model.Model]);
    * ``dataset`` — the exact inputs and labels it must reproduce (the certificate's dataset);
    * ``claims`` — the theorem's size claims for this instance (parameters, width, depth,
      bits), each computed from the paper's formulas; the checker verifies them;
    * ``theorem`` / ``source`` — what is being certified and where it is stated;
    * ``info`` — the facts the construction measured on the way (r, δ, witness set, …);
    * ``stages`` — named layer ranges, e.g. F₂'s bit-extraction stage (Lemma G.6);
    * ``data`` — the data object the construction was given; ``build`` — its raw result.
    """

    model: Model
    dataset: Dataset
    claims: List[Claim]
    theorem: str
    source: str = ""
    info: Dict[str, Any] = field(default_factory=dict)
    stages: List[Stage] = field(default_factory=list)
    error_bound: Optional[Fraction] = None
    data: Any = None
    build: Any = field(default=None, repr=False)
    notes: List[str] = field(default_factory=list)

    def __repr__(self) -> str:
        from ..model.measure import measure

        m = measure(self.model)
        return (f"<Memorizer {self.theorem}: {len(self.dataset)} examples, {len(self.model.layers)} layers, "
                f"{m.n_params} parameters, width {m.width}, depth {m.depth}, max {m.max_bits} bits/weight, "
                f"{len(self.claims)} claims>")

    def stage(self, name: str) -> Stage:
        """The stage whose name contains ``name`` (case-insensitive); ``KeyError`` if none or several."""
        hits = [s for s in self.stages if name.lower() in s.name.lower()]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} stages match {name!r}; stages: {[s.name for s in self.stages]}")
        return hits[0]

    def stage_of(self, layer: int) -> Optional[str]:
        """Name of the stage that layer index ``layer`` belongs to (None if unnamed)."""
        for s in self.stages:
            if layer in s:
                return s.name
        return None

    # convenience forms of the module-level functions
    def run(self, inputs=None, **kw) -> list:
        """[`exactmem.run`][exactmem.api.run] on this network (default: its own dataset's inputs)."""
        return run(self, self.dataset if inputs is None else inputs, **kw)

    def trace(self, x=0, **kw) -> "Trace":
        """[`exactmem.trace`][exactmem.api.trace] of one input (an index into the dataset, or a sequence)."""
        return trace(self, self.dataset.inputs[x] if isinstance(x, int) else x, **kw)

    def certify(self, **kw):
        """[`exactmem.certify`][exactmem.api.certify] with this network's dataset, claims and error bound."""
        return certify(self, **kw)

    def inspect(self, **kw):
        """[`exactmem.inspect`][exactmem.inspector.text.inspect] of this network."""
        from ..model.summary import inspect

        return inspect(self, **kw)


ModelLike = Union[Model, "Memorizer"]


def _model_of(obj) -> Model:
    if isinstance(obj, Model):
        return obj
    m = getattr(obj, "model", None)
    if isinstance(m, Model):
        return m
    raise TypeError(f"expected an exactmem Model or a Memorizer, got {type(obj).__name__}")


# ----------------------------------------------------------------------------- data


def sequences(N: int, n: int, d: int, C: int, seed: int = 0, setting: str = "next_token",
              vocab: Optional[int] = None, permuted: float = 0.1, duplicates: float = 0.05,
              denominator_bits: int = 0, coord_range: int = 16) -> SequenceData:
    """N seeded, consistently labelled sequences of n tokens in Q^d (Kajitsuka & Sato's setting).

    Tokens are drawn with repetition from a pool of ``vocab`` distinct integer vectors (default
    max(n, 4⌈√(nN)⌉ + 1)); a fraction ``permuted`` of the sequences are permutations of earlier
    ones and ``duplicates`` exact copies, labelled consistently so eq. (5) (next-token) or
    eq. (10) (``setting="seq2seq"``) holds. Labels lie in {0, …, C − 1}. ``denominator_bits``
    > 0 gives rational coordinates with random odd denominators of that many bits.
    Wraps `exactmem.data.kajitsuka_data.generate`.
    """
    return _generate(N, n, d, C, seed, setting, vocab, permuted, duplicates, denominator_bits, coord_range)


def make_data(sequences: Sequence, labels: Sequence, C: int, setting: str = "next_token",
              name: str = "") -> SequenceData:
    """Exact sequence data from your own tokens (ints, Fractions or ``"p/q"`` strings; floats are
    refused — use [`exactmem.export.importer`][exactmem.export.importer] to convert float files exactly).

    ``labels[i]`` is an int in {0, …, C − 1} (next-token) or a tuple of n of them (seq2seq).
    Shapes and labels are validated here; separation and consistency by [`check_data`][exactmem.api.check_data].
    """
    return _make_data(sequences, labels, C, setting, None, name)


@dataclass
class DataReport:
    """Kajitsuka & Sato's assumptions checked exactly on a dataset.

    ``separated``: Assumption 4.1 (‖x‖ ≤ r, ‖x − x'‖ ≥ δ for distinct tokens, r ≥ 1 ≥ δ);
    ``consistent``: eq. (5) (next-token) or eq. (10) (seq2seq). r² and δ² are the tightest
    admissible values (squared: no square roots), or the given r, δ squared.
    """

    N: int
    n: int
    d: int
    C: int
    setting: str
    distinct_tokens: int
    separated: bool
    consistent: bool
    r2: Optional[Fraction] = None
    delta2: Optional[Fraction] = None
    max_norm2: Optional[Fraction] = None
    min_dist2: Optional[Fraction] = None
    messages: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.separated and self.consistent

    def __str__(self) -> str:
        def q(x):
            if x is None:
                return "-"
            return str(x) if x.denominator.bit_length() <= 64 else f"~{float(x):.6g} (exact: {x.numerator.bit_length()}-bit/" \
                                                                     f"{x.denominator.bit_length()}-bit)"

        lines = [f"data: N={self.N} sequences of n={self.n} tokens in Q^{self.d}, C={self.C}, {self.setting}, "
                 f"{self.distinct_tokens} distinct tokens",
                 f"  Assumption 4.1 (token-wise separation): {'holds' if self.separated else 'FAILS'}"
                 f"  r^2 = {q(self.r2)}, delta^2 = {q(self.delta2)}",
                 f"     max ||x||^2 = {q(self.max_norm2)}, min ||x - x'||^2 = {q(self.min_dist2)}",
                 f"  eq. ({'5' if self.setting == 'next_token' else '10'}) consistency: "
                 f"{'holds' if self.consistent else 'FAILS'}"]
        for k, v in self.extra.items():
            lines.append(f"  {k}: {v}")
        lines += [f"  ! {m}" for m in self.messages]
        return "\n".join(lines)


def check_data(data: SequenceData, r=None, delta=None) -> DataReport:
    """Run Assumption 4.1 and eq. (5)/(10) exactly and *report* the outcome (never raises for a
    violated assumption; the message names the offending tokens or sequences).

    [`exactmem.kajitsuka.next_token`][exactmem.api.kajitsuka.next_token] runs the same checks and refuses data that fails."""
    from ..data.kajitsuka_data import check_consistency, check_separation

    rep = DataReport(data.N, data.n, data.d, data.C, data.setting, len(data.token_index()[0]), False, False)
    try:
        sep = check_separation(data, r, delta)
        rep.separated = True
        rep.r2, rep.delta2, rep.max_norm2, rep.min_dist2 = sep.r2, sep.delta2, sep.max_norm2, sep.min_dist2
    except DataError as e:
        rep.messages.append(f"separation: {e}")
    try:
        check_consistency(data)
        rep.consistent = True
    except DataError as e:
        rep.messages.append(f"consistency: {e}")
    return rep


def dataset(inputs: Sequence, labels: Sequence, input_type: str = "vectors", name: str = "") -> Dataset:
    """A general exact dataset: ``inputs[i]`` a sequence of tokens (vectors of ints, Fractions or
    ``"p/q"`` strings; token ids for ``input_type="tokens"``), ``labels[i]`` a class index (for
    ``decode="argmax"`` models) or the exact output: a number or vector (readout ``last``), a
    list of them per position (readout ``all``). Floats are refused."""
    from ..arith.numbers import to_rational

    def tok(t):
        return int(t) if input_type == "tokens" else tuple(to_rational(x) for x in t)

    def lab(y):
        if isinstance(y, int) and not isinstance(y, bool):
            return y
        if isinstance(y, (list, tuple)):
            return tuple(lab(v) if isinstance(v, (list, tuple)) else to_rational(v) for v in y)
        return to_rational(y)

    return Dataset([tuple(tok(t) for t in X) for X in inputs], [lab(y) for y in labels], input_type, None, name)


def _labels_for(m: Model, ds: Dataset) -> Dataset:
    """Identity-decoded models compare output columns: a bare number label y becomes (y,)."""
    if m.decode != "identity":
        return ds

    def col(y):
        if isinstance(y, (int, Fraction)) and not isinstance(y, bool):
            return (Fraction(y),)
        if isinstance(y, tuple) and m.readout == "all":
            return tuple(col(v) if not isinstance(v, tuple) else v for v in y)
        return y

    labels = [col(y) for y in ds.labels]
    if labels == list(ds.labels):
        return ds
    return Dataset(ds.inputs, labels, ds.input_type, ds.seed, ds.name, ds.info)


def as_dataset(data: Any) -> Dataset:
    """The certificate's `Dataset` of a data object.

    Accepts a ``Dataset``, a [`Memorizer`][exactmem.api.Memorizer] (its dataset), or anything with
    ``to_dataset()`` (Kajitsuka `SequenceData`, Mahdavi ``QueryContextData``, Dana
    ``LookupTable``)."""
    if isinstance(data, Dataset):
        return data
    if isinstance(data, Memorizer):
        return data.dataset
    if hasattr(data, "to_dataset"):
        return data.to_dataset()
    raise TypeError(f"cannot make a dataset of {type(data).__name__}: give a Dataset, a Memorizer, or data "
                    f"with a to_dataset() method")


def _inputs_of(inputs) -> list:
    if isinstance(inputs, (Dataset, Memorizer)) or hasattr(inputs, "to_dataset"):
        return list(as_dataset(inputs).inputs)
    return list(inputs)


# ----------------------------------------------------------------------------- run


def run(model: ModelLike, inputs: Any, backend: str = "auto", decode: bool = True, prec: int = 128) -> list:
    """Exact forward pass (Kajitsuka & Sato eq. (4); `exactmem.model.forward`).

    ``model``: a [`Model`][exactmem.model.Model] or [`Memorizer`][exactmem.api.Memorizer]. ``inputs``: a list of
    sequences (each a sequence of tokens: vectors, or token ids for an embedding model), or a
    dataset / data object. Returns one output per sequence: the exact output column (a list
    of Fractions) at the last position (``readout="last"``), a list of columns
    (``readout="all"``), or the class index for ``decode="argmax"`` models (None on a tie).
    After a ``softmax`` layer values are python-flint Arb balls at ``prec`` bits (certified
    enclosures); argmax is then decided only where the balls separate, else None.
    """
    from ..model.forward import decode_output, forward

    m = _model_of(model)
    res = forward(m, _inputs_of(inputs), backend=backend, prec=prec)
    if not decode:
        return res.outputs
    if res.exact:
        return [decode_output(m, o) for o in res.outputs]
    if m.decode == "argmax":
        return [_ball_argmax(m, o) for o in res.outputs]
    return res.outputs


def _ball_argmax(m: Model, out):
    cols = out if m.readout == "all" else [out]
    res = []
    for c in cols:
        win = [k for k, x in enumerate(c) if all(x > y for j, y in enumerate(c) if j != k)]
        res.append(win[0] if win else None)
    return res if m.readout == "all" else res[0]


# ----------------------------------------------------------------------------- trace


@dataclass
class LayerTrace:
    """The exact activations of one layer for one input sequence.

    ``columns[k]`` is the layer's output at position k (a list of Fractions; Arb balls after
    a softmax layer). ``attention`` (attention layers only) holds, per head, the weight matrix
    ``p[query][key]`` — for ``query="last"`` a single row."""

    index: int
    kind: str
    description: str
    columns: List[list]
    attention: Optional[List[List[list]]] = None
    stage: Optional[str] = None

    @property
    def width(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def max_bits(self) -> Optional[int]:
        """Max bit complexity (``docs/measurement.md``) of an activation; None for balls."""
        from ..arith.numbers import bits

        try:
            return max((bits(x) for c in self.columns for x in c), default=0)
        except TypeError:
            return None


@dataclass
class Trace:
    """One input through the whole network: ``layers[0]`` is the input, then one
    [`LayerTrace`][exactmem.api.LayerTrace] per layer (exact; Arb balls from the first softmax layer on)."""

    model: Model
    input: tuple
    layers: List[LayerTrace]
    output: Any
    exact: bool

    def attention_layers(self) -> List[LayerTrace]:
        return [lt for lt in self.layers if lt.attention is not None]

    def attention(self, which: int = 0) -> List[List[list]]:
        """Per head, the attention weight matrix of the ``which``-th attention layer."""
        att = self.attention_layers()
        if not att:
            raise ValueError("this model has no attention layer")
        return att[which].attention

    def layer(self, index: int) -> LayerTrace:
        """The trace of ``model.layers[index]``."""
        for lt in self.layers:
            if lt.index == index:
                return lt
        raise KeyError(f"no traced layer {index}")

    def __str__(self) -> str:
        lines = [f"trace of one input ({len(self.input)} positions) through {len(self.model.layers)} layers"
                 + ("" if self.exact else " (Arb balls after softmax)"),
                 f"{'layer':>6}  {'kind':<10} {'width':>5}  {'max bits':>8}  stage / attention"]
        for lt in self.layers:
            mb = lt.max_bits()
            extra = lt.stage or ""
            if lt.attention is not None:
                extra += f"  {len(lt.attention)} head(s), last-query weights: " + \
                    "; ".join("[" + ", ".join(_short(w) for w in head[-1]) + "]" for head in lt.attention[:2])
            lines.append(f"{lt.index:>6}  {lt.kind:<10} {lt.width:>5}  {('-' if mb is None else mb):>8}  {extra}")
        lines.append(f"output: {_short_out(self.output)}")
        return "\n".join(lines)


def _short(x) -> str:
    if isinstance(x, Fraction):
        if x.denominator.bit_length() < 24 and x.numerator.bit_length() < 40:
            return str(x)
        return f"~{float(x):.4g}"
    return _ball_str(x)


def _ball_str(x) -> str:
    """An Arb ball as ``mid ± radius`` (the true radius, not flint's display rounding)."""
    try:
        return f"{float(x.mid()):.6g} ± {float(x.rad()):.1e}"
    except (AttributeError, TypeError, ValueError):
        return str(x)


def _short_out(out) -> str:
    if isinstance(out, list):
        return "[" + ", ".join(_short_out(o) for o in out) + "]"
    return _short(out) if out is not None else "None (tie)"


def _describe(layer) -> str:
    from ..model.layers import Affine, Attention, Embed, FeedForward

    if isinstance(layer, Embed):
        return f"embed {len(layer.E)} -> {layer.m_out}"
    if isinstance(layer, Affine):
        return f"affine {layer.m_in} -> {layer.m_out}" + (" + ReLU" if layer.relu else "")
    if isinstance(layer, FeedForward):
        return f"feedforward {layer.m_in} -> {layer.q} -> {layer.m_out}"
    if isinstance(layer, Attention):
        return f"attention {layer.kind}, {len(layer.heads)} head(s)"
    return type(layer).__name__


def trace(model: ModelLike, x: Sequence, backend: str = "auto", prec: int = 128) -> Trace:
    """Every activation of one input sequence ``x``, exactly, layer by layer, with the attention
    weights of every head (Kajitsuka & Sato eq. (1)–(3); uniform attention is eq. (39)).

    ``model`` is a Model or a [`Memorizer`][exactmem.api.Memorizer] (whose stages then label the layers).
    ``print(trace(...))`` shows a per-layer table (width, bits of the largest activation,
    attention weights of the last query); [`exactmem.inspector.text`][exactmem.inspector.text] draws figures."""
    from ..model.forward import decode_output, forward

    m = _model_of(model)
    stages = model.stages if isinstance(model, Memorizer) else []
    x = tuple(x)
    res = forward(m, [x], trace=True, backend=backend, prec=prec)
    n = len(x)
    inp = [list(t) for t in x] if m.input_type == "vectors" else [[t] for t in x]
    layers = [LayerTrace(-1, "input", "input tokens" if m.input_type == "vectors" else "input token ids", inp)]
    for te in res.trace:
        vals = te.values
        if hasattr(vals, "to_fractions"):
            rows = vals.to_fractions()
        else:
            rows = vals
        cols = [list(c) for c in zip(*rows)] if rows else []
        att = None
        if te.attention is not None:
            att = [[list(r) for r in head] for head in te.attention[0]]
        stage = None
        for s in stages:
            if te.layer in s:
                stage = s.name
        layers.append(LayerTrace(te.layer, te.kind, _describe(m.layers[te.layer]), cols[:n] if cols else cols,
                                 att, stage))
    out = res.outputs[0]
    if res.exact:
        out = decode_output(m, out)
    elif m.decode == "argmax":
        out = _ball_argmax(m, out)
    return Trace(m, x, layers, out, res.exact)


# ----------------------------------------------------------------------------- certify


ClaimLike = Union[Claim, Tuple[str, str, Any], Tuple[str, str, Any, str]]


def claims_from(spec: Any) -> List[Claim]:
    """Claims from a list of [`Claim`][exactmem.certificate.writer.Claim] / tuples ``(quantity, op, bound[, source])`` or a
    dict ``{quantity: (op, bound)}``. Quantities: ``n_params``, ``n_nonzero``, ``width``,
    ``relu_depth``, ``attention_layers``, ``depth``, ``max_bits``, ``total_bits``,
    ``n_examples`` (``docs/measurement.md``); ops ``== <= >= < >``."""
    if spec is None:
        return []
    if isinstance(spec, dict):
        spec = [(q, *v) if isinstance(v, (tuple, list)) else (q, "==", v) for q, v in spec.items()]
    out = []
    for c in spec:
        if isinstance(c, Claim):
            out.append(c)
        elif isinstance(c, (tuple, list)) and len(c) in (3, 4):
            out.append(Claim(*c))
        else:
            raise TypeError(f"a claim is a Claim or (quantity, op, bound[, source]), got {c!r}; "
                            f"quantities: {', '.join(QUANTITIES)}")
    return out


def certify(model: ModelLike, dataset: Any = None, claims: Optional[Iterable[ClaimLike]] = None, *,
            checker: str = "auto", error_bound: Optional[Fraction] = None, theorem: Optional[str] = None,
            instance: str = "in-memory", seed: Optional[int] = None, backend: str = "auto", path: Optional[str] = None,
            max_precision: Optional[int] = None, limits=None, workers: int = 1, scheduler: Optional[str] = None,
            client=None, chunk_examples: Optional[int] = None):
    """Certify that ``model`` memorizes ``dataset`` and satisfies ``claims``: the independent
    checker's verdict (``docs/certificate.md``).

    The producer side is the one of ``python -m exactmem certify`` ([`exactmem.pipeline.certify`][exactmem.pipeline.certify]):
    the exact forward pass, then a format-v1 certificate (model, data, claimed outputs,
    claims) serialised once — to ``path`` if given, else to bytes in memory — and parsed back
    by the checker's own reader, so the checker sees only the serialised document and
    re-derives every output and every claimed size from it (no construction code).

    ``checker``: ``"pure"`` — the small kernel ([`exactmem.kernel.checker`][exactmem.kernel.checker]:
    ``int``/``Fraction`` only, rational intervals after softmax); ``"fast"`` — the batched
    exact NumPy path (`exactmem.certificate.fastcheck`, same verdicts); ``"auto"``
    (default) — the CLI's rule without a ``--size``: fast when every attention layer is
    ``uniform`` or ``hardmax`` and the dataset has at least 1,000 examples, else pure
    ([`exactmem.pipeline.certify.auto_checker`][exactmem.pipeline.certify.auto_checker]). ``backend="auto"``: the exact engine the proof
    file names for this theorem (e.g. ``compress`` for Kajitsuka & Sato and Vardi et al.),
    else the forward pass's own choice.

    ``model`` may be a [`Memorizer`][exactmem.api.Memorizer]: then ``dataset``, ``claims``, ``error_bound`` and
    ``theorem`` default to its own. ``claims``: see [`claims_from`][exactmem.api.claims_from]. ``error_bound``:
    for identity decoding, outputs within ε of the labels pass (softmax models). ``limits``:
    the verifier's budget, an `exactmem.kernel.checker.Limits` (time, precision,
    digits, value and file size; ``docs/certificate.md`` § Budgets): a time, precision or value
    limit hit gives ``UNKNOWN``; more digits or bytes than allowed raise ``MalformedCertificate``
    (``check`` exits 3).

    ``workers`` > 1, ``scheduler`` (a Dask scheduler address) or ``client`` (a
    ``distributed.Client``): the check is sharded over examples on that cluster, with the same
    verdict and witness (``docs/scaling.md``); the certificate then goes to ``path`` (or a
    temporary directory), in version-2 chunks of ``chunk_examples`` if given.

    Returns a `Verdict`: ``.status`` is ``CERTIFIED``,
    ``REFUTED`` (``.witness`` names the example or claim) or ``UNKNOWN``; ``.measured`` the
    checker's own parameter/width/depth/bit counts.
    """
    from ..kernel.checker import decode_certificate, load_certificate
    from ..certificate.writer import build_certificate, write_certificate
    from ..pipeline.certify import auto_checker, checker_function, claimed_outputs, preferred_engine

    if checker not in ("auto", "pure", "fast"):
        raise ValueError(f"checker must be 'auto', 'pure' or 'fast', not {checker!r}")
    m = _model_of(model)
    if isinstance(model, Memorizer):
        dataset = model.dataset if dataset is None else dataset
        claims = model.claims if claims is None else claims
        error_bound = model.error_bound if error_bound is None else error_bound
        theorem = theorem or model.theorem
        if seed is None and isinstance(model.info, dict):
            seed = model.info.get("seed")
    if dataset is None:
        raise TypeError("certify needs a dataset (or a Memorizer, which carries its own)")
    ds = _labels_for(m, as_dataset(dataset))
    cl = claims_from(claims)
    theorem = theorem or "exactmem.api"
    chosen = auto_checker(m, len(ds)) if checker == "auto" else checker
    check = checker_function(chosen)
    engine = (preferred_engine(theorem) or "auto") if backend == "auto" else backend
    doc = build_certificate(theorem, instance, seed, m, ds, claimed_outputs(m, ds, engine), cl,
                            error_bound=error_bound, meta={"producer": "exactmem.api.certify"})
    if workers > 1 or scheduler or client is not None:
        import tempfile

        from ..distributed.check import check_sharded

        with tempfile.TemporaryDirectory() as tmp:
            where = write_certificate(doc, path or os.path.join(tmp, "certificate.json"), chunk_examples)
            del doc
            return check_sharded(where, workers=workers, scheduler=scheduler, client=client, limits=limits,
                                 max_precision=max_precision, engine=chosen)
    if path is not None:  # the pipeline's path: write the file once, the checker reads it
        write_certificate(doc, path)
        del doc
        doc = load_certificate(path, limits)
    else:  # serialised once, in memory; parsed by the checker's reader (same rules as a file)
        data = json.dumps(doc, separators=(",", ":")).encode("utf-8")
        del doc
        doc = decode_certificate(data, "<in-memory certificate>", limits)
        del data
    return check(doc, max_precision, limits=limits)


# ----------------------------------------------------------------------------- proof files


def proof_module(name: str):
    """The packaged proof file ``exactmem.proofs.<name>`` (``exactmem/proofs/<name>.py``,
    re-exported by the checkout's ``proofs/<name>.py``) — the single source of each theorem's
    claims, the same in a checkout and in an installed wheel."""
    import importlib

    return importlib.import_module(f"exactmem.proofs.{name}")
