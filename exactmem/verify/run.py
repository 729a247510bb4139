"""``verify``: which examples a trained network really memorizes, certified (``docs/verify.md``).

ONNX model (or a ``torch.nn.Module``, exported in-process) + examples → lowered graph →
ball-arithmetic verdict per distinct example (`exactmem.verify.evaluate`) → a
certificate the kernel re-derives (``docs/verify-format.md``), plus onnxruntime's float count
when onnxruntime is installed, and the examples where float and certified verdicts differ.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from ..errors import missing_extra
from .data import Examples, given_examples
from .evaluate import PRECISIONS, Program, judge
from .floats import ONNX_FLOATS
from .onnx_import import VerifyInputError, load_onnx, lower, rational_str

__all__ = ["verify", "memorized_bits", "VerifyResult", "export_torch", "VerifyInputError"]


@dataclass
class VerifyResult:
    certified: int
    refuted: int
    unknown: int
    n_distinct: int
    n_rows: int
    float_count: Optional[int]
    certificate: Optional[str]
    verdicts: List[str]  # per row: "pass" | "fail" | "unknown"
    bits: List[int]  # per row: the precision that decided it
    differences: List[Dict[str, Any]]  # rows where float and certified verdicts differ (or unknown)
    n_params: int  # trained weights: a module's parameters (requires_grad), or an ONNX file's float initializers
    seconds: Dict[str, float] = field(default_factory=dict)
    doc: Optional[Dict[str, Any]] = None
    graph_constants: int = 0  # entries of the certificate graph's constants (what the kernel's n_params counts)
    buffers: Optional[int] = None  # a module's buffers (fixed tables, masks); None for an ONNX file
    n_params_source: str = "ONNX float initializers"
    memorized: Optional[Dict[str, Any]] = None  # measure="bits": the code length and memorized bits (codelength.py)
    by_engine: Dict[str, int] = field(default_factory=dict)  # distinct examples decided by each evaluator (fastpath)

    def summary(self) -> str:
        fc = "n/a (no onnxruntime)" if self.float_count is None else str(self.float_count)
        return (f"certified {self.certified}, refuted {self.refuted}, unknown {self.unknown} of {self.n_distinct} "
                f"distinct examples ({self.n_rows} rows); float count {fc}")

    def to_json(self) -> Dict[str, Any]:
        return {"certified": self.certified, "refuted": self.refuted, "unknown": self.unknown,
                "n_distinct": self.n_distinct, "n_rows": self.n_rows, "float_count": self.float_count,
                "certificate": self.certificate, "n_params": self.n_params, "n_params_source": self.n_params_source,
                "graph_constants": self.graph_constants, "buffers": self.buffers, "differences": self.differences,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}, "by_engine": self.by_engine,
                **({"memorized": self.memorized} if self.memorized is not None else {})}


def export_torch(module, example: np.ndarray, quiet: bool = True, forward=None, output=None, names=None):
    """A ``torch.nn.Module`` as an ONNX ModelProto (``torch.onnx.export(..., dynamo=True)``, or the
    TorchScript exporter when ``torch.export`` cannot trace the module, e.g. PyTorch's data-dependent
    check of an ``nn.TransformerEncoder`` mask) for inputs shaped like ``example`` ([1, n] ids,
    [1, n, d] floats, or any float tensor).

    ``forward(module, x)`` calls the module when ``module(x)`` is not the call to certify (extra
    arguments held constant: ``lambda m, x: m(x, mask)``); ``output`` picks the scores from what
    it returns: a name (a dict key or an attribute, e.g. ``"logits"``) or an index (of a tuple or
    list). By default a dict or a ``ModelOutput`` is read at ``logits``, a tuple at its first item.
    ``names``: several inputs side by side in ``example`` (`exactmem.verify.multi`): the module is
    called with them as keywords (``module(input_ids=..., attention_mask=...)``, or
    ``forward(module, **inputs)``)."""
    try:
        import torch
    except ImportError:
        raise VerifyInputError(str(missing_extra("a torch.nn.Module", "torch", "torch")) + " (or pass an ONNX file)") from None

    class _Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return pick_output(call(self.inner, x), output)

    def call(m, x):
        if names:  # consecutive slices of x, one per named input
            w = x.shape[1] // len(names)
            kw = {k: x[:, j * w:(j + 1) * w] for j, k in enumerate(names)}
            return m(**kw) if forward is None else forward(m, **kw)
        return m(x) if forward is None else forward(m, x)

    was_training = module.training
    module.eval()
    x = torch.from_numpy(np.ascontiguousarray(example))
    if x.dtype == torch.float64:
        x = x.float()
    sink, first = io.StringIO() if quiet else sys.stderr, None  # first: the dynamo exporter's failure
    try:
        with torch.no_grad(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), no_fastpath(torch):
            pick_output(call(module, x), output)  # a wrong name: said first
            try:
                return torch.onnx.export(_Logits(module).eval(), (x,), dynamo=True, verbose=False).model_proto
            except Exception as e:  # torch.export cannot trace it (e.g. a data-dependent mask check): TorchScript
                first = e
            buf = io.BytesIO()
            torch.onnx.export(_Logits(module).eval(), (x,), buf, dynamo=False, input_names=["x"],
                              output_names=["scores"])
            import onnx

            return onnx.load_from_string(buf.getvalue())
    except VerifyInputError:
        raise
    except Exception as e:
        tail = "" if first is None else f" (the TorchScript exporter: {export_cause(e)})"
        raise VerifyInputError(f"torch.onnx.export failed: {export_cause(first or e)}{tail}") from None
    finally:
        module.train(was_training)


@contextlib.contextmanager
def no_fastpath(torch):
    """PyTorch's fused attention fast path switched off (and restored): under ``no_grad`` an eval-mode
    ``nn.TransformerEncoderLayer`` or ``nn.MultiheadAttention`` runs ``aten._transformer_encoder_layer_fwd``
    or ``_native_multi_head_attention``, which neither ONNX exporter translates."""
    mha = getattr(getattr(torch, "backends", None), "mha", None)
    if mha is None or not hasattr(mha, "set_fastpath_enabled"):
        yield
        return
    was = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(was)


def float_initializer_entries(mp) -> int:
    """Entries of the float initializers of ONNX model ``mp``: its trained weights as far as the file
    says (an exporter stores parameters there; a module's buffers may be there too)."""
    return sum(math.prod(t.dims) for t in mp.graph.initializer if t.data_type in ONNX_FLOATS)


def pick_output(out, output=None):
    """The scores among a forward's results: ``output`` a name or an index, else ``logits`` of a
    dict or ``ModelOutput``, the first item of a tuple or list, or the result itself."""
    if output is None:
        if hasattr(out, "logits"):
            return out.logits
        if isinstance(out, dict):
            return out["logits"]
        return out[0] if isinstance(out, (tuple, list)) else out
    try:
        if isinstance(output, int) and not isinstance(output, bool):
            return out[output]
        return out[output] if isinstance(out, dict) or hasattr(out, "keys") and output in out.keys() else \
            getattr(out, output)
    except (IndexError, KeyError, AttributeError, TypeError):
        kind = type(out).__name__
        has = f" (it has {', '.join(map(str, out.keys()))})" if hasattr(out, "keys") else \
            f" ({len(out)} items)" if isinstance(out, (tuple, list)) else ""
        raise VerifyInputError(f"output={output!r}: the forward returns a {kind} with no such item{has}") from None


def export_cause(e: BaseException) -> str:
    """The first line of the innermost exception's message (the exporter's own cause), and the outer
    one's when they differ: what to fix, not 300 characters of wrapper text."""
    inner = e
    for _ in range(32):  # a chain of causes ends; 32 links are plenty
        nxt = inner.__cause__ or inner.__context__
        if nxt is None:
            break
        inner = nxt
    plain = lambda x: re.sub(r"\x1b\[[0-9;]*m", "", str(x))  # noqa: E731 - the exporter colours its text
    first = lambda x: next((ln.strip() for ln in plain(x).splitlines() if ln.strip()), type(x).__name__)  # noqa: E731
    a, b = first(e), first(inner)
    return a if a == b else f"{type(inner).__name__}: {b} (from: {a})"


def _float_argmax(model_bytes: bytes, ex: Examples, rows: List[int], logits: Optional[Dict[int, Any]] = None
                  ) -> Optional[Dict[int, bool]]:
    """Per row: does onnxruntime's float argmax equal the label? None without onnxruntime. ``logits``
    (a dict) receives each row's read scores: [C] (one position) or [n, C] (position all)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    dtype = np.float32 if ex.kind == "vectors" and "float)" in inp.type and "double" not in inp.type else None
    out = {}
    for i in rows:
        x = ex.raw[i:i + 1]
        if ex.kind == "tokens":
            x = x.astype(np.int64 if "int64" in inp.type else np.int32)
        elif dtype is not None:
            x = x.astype(dtype)
        y = np.asarray(sess.run(None, {inp.name: x})[0])
        lab = ex.labels[i]
        if ex.position != "all":  # last, or K: the graph already reads index K
            row = y[0, -1] if y.ndim == 3 else y[0]
            out[i] = int(np.argmax(row)) == int(lab)
        else:
            row = y[0]
            out[i] = all(int(np.argmax(y[0, p])) == int(lab[p]) for p in range(y.shape[1]))
        if logits is not None:
            logits[i] = row
    return out


_PROG: Optional[Program] = None
_BACKENDS: Dict[int, Any] = {}


_MEASURE = False


def _init_worker(model_json, measure=False):
    global _PROG, _BACKENDS, _MEASURE
    _PROG, _BACKENDS, _MEASURE = Program(model_json), {}, measure


def _judge_batch(batch, precisions):
    if _MEASURE:  # the verdict and the code length from the same scores (codelength.py)
        from .codelength import judge_and_measure

        return [(i, judge_and_measure(_PROG, x, lab, precisions, _BACKENDS)) for i, x, lab in batch]
    return [(i, judge(_PROG, x, lab, precisions, _BACKENDS)) for i, x, lab in batch]


def _fast_first(model_json, ex: Examples, todo: list, measure: bool, bar, stats: Dict[str, Any], workers: int = 1,
                scheduler: Optional[str] = None):
    """({row: result} decided by the fast engine's enclosures (`fastpath`), the rows left for the arb
    ladder): token inputs and [n, d] vectors; everything else (and a graph the engine does not run) stays."""
    from fractions import Fraction

    from . import fastpath

    if ex.kind not in ("tokens", "vectors") or (ex.kind == "vectors" and np.ndim(ex.exact[0]) != 2):
        return {}, todo
    conv = (lambda i: [int(t) for t in ex.exact[i]]) if ex.kind == "tokens" else \
        (lambda i: [[Fraction(v) for v in row] for row in ex.exact[i]])
    items = [(i, conv(i), lab) for i, _, lab in todo]
    position = model_json["readout"]["position"]
    if scheduler:  # the engine's batches on the cluster; what they leave, here
        from ..distributed.cluster import ClusterError

        try:
            done, left = fastpath.fast_results_dask(model_json, items, position, measure, scheduler, 16, bar.update,
                                                    stats)
        except ClusterError as e:
            raise VerifyInputError(str(e)) from None
    else:
        got = fastpath.engine_for(model_json, items[0][1], ex.label_json(todo[0][0]))
        if got is None:
            stats["unsupported"] = True
            return {}, todo
        done, left = fastpath.fast_results_parallel(*got, items, position, measure, workers, bar.update, stats)
    keep = set(left)
    return done, [t for t in todo if t[0] in keep]


def _ladder(max_precision: int):
    ps = [p for p in PRECISIONS if p <= max_precision]
    return ps if ps and ps[-1] == max_precision else ps + [max_precision]


def verify(model, inputs=None, labels=None, *, data: Optional[str] = None, position="last",
           decode: str = "argmax", out: Optional[str] = None, workers: int = 1, quiet: bool = True,
           max_precision: int = 4096, float_count: bool = True, name: Optional[str] = None, forward=None,
           output=None, measure: Optional[str] = None, source_bits=None, engine: str = "auto",
           scheduler: Optional[str] = None) -> VerifyResult:
    """Certify, example by example, what ``model`` memorizes (see the module docstring).

    ``model``: an ONNX path, a ``ModelProto`` or a ``torch.nn.Module``. ``inputs``: N×n token ids
    or N×n×d float vectors (taken exactly), N×C×H×W tensors, or a dict of several N×n integer inputs
    named as the model names them (``{"input_ids": X, "attention_mask": M}``: `multi`); ``labels``: N class indices (``position="last"``) or
    N×n (``"all"``); or ``data=`` a ``.npz`` with both. ``position``: ``"last"``, ``"all"`` or an
    index K (negative from the end; the certificate's graph gains a Gather reading index K,
    `readout`). A module is exported with ``forward(module, x)`` and ``output`` (`export_torch`):
    other arguments held constant, the scores picked by name or index. ``out``: directory for the
    certificate (none written when None). ``measure="bits"``: also enclose the model's code length
    for the labels and the bits it memorized (`exactmem.verify.codelength`; ``source_bits``: the
    labels' entropy in bits, a number or rational text; by default ``predictions · log₂ C``).
    ``engine``: ``"auto"`` (the fast graph engine's enclosures first, `fastpath`; the arb ladder for
    what they leave undecided) or ``"arb"`` (the arb ladder for every example). ``scheduler``: a Dask
    scheduler's address; the fast engine's batches run on its workers (``workers`` processes here
    run the arb ladder for what they leave).
    Raises `VerifyInputError` (one line) on bad input."""
    from ..progress import Progress

    t0 = time.perf_counter()
    if decode != "argmax":
        raise VerifyInputError(f"--decode must be argmax, not {decode!r}")
    if workers < 1:
        raise VerifyInputError("--workers must be at least 1")
    if max_precision < 64:
        raise VerifyInputError("--max-precision must be at least 64 bits")
    if engine not in ("auto", "arb"):
        raise VerifyInputError(f"--engine must be auto or arb, not {engine!r}")
    if scheduler:  # said before the model is read and lowered, not minutes later
        from ..distributed.cluster import ClusterError, connect

        try:
            connect(scheduler).close()
        except ClusterError as e:
            raise VerifyInputError(str(e)) from None
    if measure not in (None, "bits"):
        raise VerifyInputError(f"--measure must be bits, not {measure!r}")
    if source_bits is not None:
        from .codelength import source_bits_value

        source_bits = source_bits_value(source_bits, measure)
    if isinstance(model, (str, os.PathLike)):  # the model first: `verify DIR --data X` blames the model, not --data
        if os.path.isdir(model):
            raise VerifyInputError(f"{model} is a directory, not an ONNX model file (give MODEL.onnx)")
        if not os.path.exists(model):
            raise VerifyInputError(f"{model}: no such ONNX model file")
    if (forward is not None or output is not None) and not (hasattr(model, "state_dict") and hasattr(model, "forward")):
        raise VerifyInputError("forward= and output= apply to a torch.nn.Module; an ONNX model is taken as exported")
    ex = given_examples(inputs, labels, data, position)
    sizes = None
    if hasattr(model, "state_dict") and hasattr(model, "forward"):
        mp = export_torch(model, ex.raw[:1], quiet=quiet, forward=forward, output=output, names=ex.names)
        name = name or type(model).__name__
        sizes = {"n_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
                 "buffers": sum(b.numel() for b in model.buffers()), "n_params_source": "module parameters"}
    else:
        name = name or (os.path.splitext(os.path.basename(str(model)))[0] if isinstance(model, (str, os.PathLike))
                        else "model")
        mp = model
    mp = load_onnx(mp)
    if sizes is None:  # an ONNX model: the file's float initializers
        sizes = {"n_params": float_initializer_entries(mp)}
    if ex.names and not (hasattr(model, "state_dict") and hasattr(model, "forward")):  # several ONNX inputs
        from .multi import merge_inputs

        mp = load_onnx(merge_inputs(mp, ex.names, ex.n // len(ex.names)))
    if ex.position not in ("last", "all"):  # position K: the certificate's graph reads index K
        from .readout import read_position

        mp = load_onnx(read_position(mp, int(ex.position)))
    lowered = lower(mp, ex.n, ex.dim, ex.shape)
    C = lowered.n_classes
    if ex.position == "all" and len(lowered.out_shape) != 3:
        raise VerifyInputError(f"position all needs a [1, n, C] output; the model gives {list(lowered.out_shape)}")
    if int(ex.labels.max()) >= C:
        raise VerifyInputError(f"label {int(ex.labels.max())} is outside the model's {C} classes")
    if ex.kind == "tokens" and int(ex.raw.max()) >= lowered.vocab:
        raise VerifyInputError(f"token id {int(ex.raw.max())} is outside the vocabulary [0, {lowered.vocab})")
    model_json = lowered.model_json("all" if ex.position == "all" else "last", decode)
    t_lower = time.perf_counter()

    # distinct (input, label) pairs: each is evaluated once
    first: Dict[Any, int] = {}
    by_input: Dict[bytes, int] = {}
    conflicts = 0
    for i in range(ex.N):
        k = ex.key(i)
        lab = ex.label_json(i)
        pair = (k, str(lab))
        if pair not in first:
            first[pair] = i
            if k in by_input:
                conflicts += 1
            by_input.setdefault(k, i)
    if conflicts and not quiet:
        print(f"exactmem: warning: {conflicts} rows repeat an input with another label (the kernel refutes such "
              "a certificate: no function memorizes both)", file=sys.stderr)
    todo = [(i, ex.bound(i), ex.labels[i]) for i in sorted(first.values())]
    ladder = _ladder(max_precision)
    results: Dict[int, Any] = {}
    fast = {} if engine != "arb" else None
    with Progress(total=len(todo), desc="verify", unit="example", quiet=quiet) as bar:
        if fast is not None and todo:
            bar.stage("fast engine", f"verify: {len(todo)} distinct examples, fast engine enclosures first")
            done, todo = _fast_first(model_json, ex, todo, measure == "bits", bar, fast, workers, scheduler)
            results.update(done)
        if todo:
            bar.stage("evaluate", f"verify: {len(todo)} distinct examples by the arb ladder, {workers} worker(s)")
        if todo and workers == 1:
            _init_worker(model_json, measure == "bits")
            for item in todo:
                (i, v), = _judge_batch([item], ladder)
                results[i] = v
                bar.update(1)
        elif todo:
            import multiprocessing as mp_
            from concurrent.futures import ProcessPoolExecutor, as_completed

            size = max(1, min(64, len(todo) // (workers * 8) or 1))
            batches = [todo[k:k + size] for k in range(0, len(todo), size)]
            ctx = mp_.get_context("fork") if "fork" in mp_.get_all_start_methods() else None
            with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                                     initargs=(model_json, measure == "bits")) as pool:
                futs = [pool.submit(_judge_batch, b, ladder) for b in batches]
                for f in as_completed(futs):
                    for i, v in f.result():
                        results[i] = v
                    bar.update(len(f.result()))
    t_eval = time.perf_counter()
    by_engine = {"fast engine (float64)": fast.get("float64", 0), "fast engine (double-float)":
                 fast.get("double-float", 0), "arb ladder": len(todo)} if fast is not None else {"arb ladder": len(todo)}

    row_result = [results[first[(ex.key(i), str(ex.label_json(i)))]] for i in range(ex.N)]  # each row's pair's
    row_verdict, row_bits = [r[0] for r in row_result], [r[1] for r in row_result]
    status: Dict[bytes, str] = {}
    for i in range(ex.N):
        k = ex.key(i)
        v = row_verdict[i]
        if status.get(k) != "pass":
            status[k] = v if status.get(k) in (None, "unknown") or v == "pass" else status[k]
    counts = {"pass": sum(v == "pass" for v in status.values()), "fail": sum(v == "fail" for v in status.values()),
              "unknown": sum(v == "unknown" for v in status.values()), "rows": ex.N, "distinct": len(status)}

    logits: Optional[Dict[int, Any]] = {} if measure == "bits" else None
    fl = _float_argmax(mp.SerializeToString(), ex, sorted(by_input.values()), logits) if float_count else None
    t_float = time.perf_counter()
    differences = []
    for i in sorted(by_input.values()):
        f_ok = None if fl is None else fl[i]
        v = row_result[i]
        if v[0] == "unknown" or (f_ok is not None and f_ok != (v[0] == "pass")):
            differences.append({"row": i, "verdict": v[0], "float_argmax_is_label": f_ok, "bits": v[1],
                                "margin": v[2]})
    constants = sum(len(c["values"]) for c in model_json["graph"]["constants"].values() if "values" in c)
    res = VerifyResult(counts["pass"], counts["fail"], counts["unknown"], counts["distinct"], ex.N,
                       None if fl is None else sum(fl.values()), None, row_verdict, row_bits, differences,
                       graph_constants=constants, by_engine=by_engine, **sizes)
    if measure == "bits":
        from .codelength import measured_bits

        pairs = sorted(first.values())
        res.memorized = measured_bits([results[i][3] for i in pairs], C, res.n_params, source_bits,
                                      None if not logits else [(logits[i], ex.labels[i]) for i in pairs if i in logits])
    from .certificate import build

    meta = {"producer": "exactmem verify", "float_count": res.float_count, "differences": differences,
            "source_ops": lowered.source_ops, "bits": row_bits}
    codelengths = bound = None
    if res.memorized is not None and res.memorized.get("codelength_bits") is not None:  # each row claims its
        # pair's upper end; the total is the measured one (distinct pairs = the kernel's distinct inputs, or the
        # kernel refutes the conflicting labels anyway)
        codelengths, bound = [rational_str(r[3][1]) for r in row_result], res.memorized["codelength_bits"]
    res.doc = build(model_json, [ex.input_json(i) for i in range(ex.N)], [ex.label_json(i) for i in range(ex.N)],
                    row_verdict, counts, name, max_precision, meta, codelengths, bound)
    if out is not None:
        from ..certificate.writer import write_certificate

        path = os.path.join(out, f"{name}.verify.json")
        res.certificate = write_certificate(res.doc, path, chunk_examples=12500 if ex.N > 50000 else None)
    t_end = time.perf_counter()
    res.seconds = {"lower": t_lower - t0, "evaluate": t_eval - t_lower, "float": t_float - t_eval,
                   "write": t_end - t_float, "total": t_end - t0}
    return res


def memorized_bits(model, inputs=None, labels=None, *, position: str = "all", source_bits=None, **kwargs):
    """The bits ``model`` memorized of the labels, certified: `exactmem.verify.run.verify` with
    ``measure="bits"`` (every keyword of verify applies; ``out=DIR`` writes the certificate whose
    code-length claims the kernel re-derives). Returns the ``VerifyResult``; its ``memorized``
    dict holds ``dataset_bits``, ``codelength_bits`` (certified upper bound, incl. the coder's 2),
    ``memorized_bits`` (certified lower bound), ``float_memorized_bits`` and ``bits_per_parameter``."""
    return verify(model, inputs, labels, position=position, measure="bits", source_bits=source_bits, **kwargs)
