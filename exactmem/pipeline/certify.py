"""``certify``: build every theorem instance of a proof file, write certificates, check them.

Pipeline per instance (data flows one way): dataset → construction → model → exact forward
pass (fast engine) → certificate file → independent checker (re-reads the file) → verdict.
"""

from __future__ import annotations

import os
import pickle
import re
import textwrap
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Callable, List, Optional

from ..kernel.checker import MalformedCertificate, Verdict, check_certificate, load_certificate
from ..certificate.chunkfiles import chunk_reader
from ..kernel.limits import Budget, Limits
from ..certificate.writer import build_certificate, write_certificate
from ..data.dataset import DataError
from ..model.forward import InputError
from ..model.layers import ModelError
from ..model.forward import decode_output, forward
from ..model.measure import measure, paper_counts
from ..errors import one_line, plural
from ..progress import Progress, duration
from ..proof import Theorem
from .loader import load_proof_file


@dataclass
class Row:
    theorem: str
    instance: str
    verdict: str
    params: int
    width: int
    depth: int
    max_bits: int
    total_bits: int
    seconds: float
    path: str
    message: str = ""
    claims: List[str] = field(default_factory=list)
    paper_counts: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    witness: Optional[dict] = None
    checker: str = "pure"
    engine: str = "auto"
    timings: dict = field(default_factory=dict)  # seconds: build, forward, write (incl. serialise), check
    hypotheses: List[dict] = field(default_factory=list)  # Built.hypotheses as {name, holds, detail}
    examples: Optional[int] = None  # distinct examples the checker counted (n_examples)
    rows: Optional[int] = None  # rows of the dataset, repeats included (n_rows)
    source: str = ""  # the theorem's source (``Theorem.source``): paper and theorem number


CHECKERS = ("pure", "fast")
AUTO_FAST_MIN_EXAMPLES = 1000  # the library's ``checker="auto"``: fast from this many examples on
AUTO_CHUNK_ABOVE, CHUNK_EXAMPLES = 50_000, 12_500  # larger datasets are written as version-2 chunks
FORWARD_SHARD_MIN = 10_000  # with a Dask client, the forward pass is split in parts of at least this many examples


def resolve_checker(checker: str, size: str) -> str:
    """``auto`` → the pure checker for ``--size small``, the fast exact path for medium/large."""
    if checker == "auto":
        return "pure" if size == "small" else "fast"
    if checker not in CHECKERS:
        raise ValueError(f"unknown checker {checker!r}; use auto, pure or fast")
    return checker


def auto_checker(model, n_examples: int) -> str:
    """The library's ``checker="auto"`` ([`exactmem.certify`][exactmem.api.certify]), the CLI's rule without a
    ``--size``: ``fast`` when every attention layer is one the fast path evaluates exactly
    (``uniform``, ``hardmax``; token-wise layers always) and there are at least
    `AUTO_FAST_MIN_EXAMPLES` examples (every ``--size small`` instance of the shipped
    proof files has at most 300, every medium-only or large one at least 1,000), else ``pure``."""
    from ..certificate.fastcheck import EXACT_ATTENTION
    from ..model.layers import Attention

    exact = all(l.kind in EXACT_ATTENTION for l in model.layers if isinstance(l, Attention))
    return "fast" if exact and n_examples >= AUTO_FAST_MIN_EXAMPLES else "pure"


def checker_function(checker: str) -> Callable[..., Verdict]:
    """The independent checker named ``pure`` (checker.py) or ``fast`` (fastcheck.py, same verdicts)."""
    if checker == "fast":
        from ..certificate.fastcheck import check_certificate_fast

        return check_certificate_fast
    if checker == "pure":
        return check_certificate
    raise ValueError(f"unknown checker {checker!r}; use pure or fast")


def preferred_engine(theorem: str) -> Optional[str]:
    """The exact forward engine the packaged proof file asks for (``Instance.engine``) for this
    theorem name (e.g. ``compress`` for ``kajitsuka.next_token``), or the one engine all
    instances of that file ask for; None if there is none (then ``auto``: limbs/flint)."""
    import importlib

    try:
        mod = importlib.import_module(f"exactmem.proofs.{theorem.split('.')[0]}")
    except (ImportError, ValueError):
        return None
    theorems = list(getattr(mod, "THEOREMS", ()))
    mine = [t for t in theorems if t.name == theorem] or theorems
    engines = {getattr(i, "engine", None) for t in mine for i in t.instances}
    return engines.pop() if len(engines) == 1 else None


BUILT_META = ("stages", "partition")  # the keys of Built.meta written into a certificate's meta


def expected_cost(inst) -> float:
    """The expected cost of certifying ``inst``, for the progress bar's weighted ETA (display
    only): ``Instance.cost`` when the proof file states one, else examples × depth with the
    depth of an Õ(√N) construction, i.e. N^1.5 · n from the parameters N (examples; else T or
    k) and n (sequence length; else 1)."""
    if getattr(inst, "cost", None):
        return float(inst.cost)

    def count(*keys) -> int:
        for k in keys:
            v = inst.params.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        return 1

    N, n = count("N", "T", "k"), count("n")
    return float(N) ** 1.5 * n + 10.0  # + a constant: building and writing cost something at any N


def claimed_outputs(model, ds, backend: str = "auto", client=None, on_layer=None) -> list:
    """The producer's exact forward pass: one claimed output per example (decoded), or the
    labels for an argmax model after softmax (the checker decides with certified intervals).
    With a Dask ``client`` the examples are split over its workers (examples are independent;
    the model goes to each worker once)."""
    if client is not None and len(ds.inputs) >= 2 * FORWARD_SHARD_MIN:
        from ..distributed.cluster import worker_count

        k = min(worker_count(client), len(ds.inputs) // FORWARD_SHARD_MIN)
        cuts = [len(ds.inputs) * i // k for i in range(k + 1)]
        return [o for part in _batches_on_workers(client, model, ds, list(zip(cuts, cuts[1:])), backend)
                for o in part]
    return _outputs_of(model, ds.inputs, ds.labels, backend, on_layer)


def _outputs_of(model, inputs, labels, backend: str, on_layer=None) -> list:
    res = forward(model, inputs, backend=backend, on_layer=on_layer)
    if res.exact:
        return [decode_output(model, o) for o in res.outputs]
    return list(labels) if model.decode == "argmax" else [None] * len(res.outputs)


def certify_instance(theorem: Theorem, inst, seed: int, out_dir: str, gzip_output: bool = False,
                     backend: str = "auto", quiet: bool = False, checker: str = "pure",
                     progress: Optional[Progress] = None, chunk_examples: Optional[int] = None, client=None) -> Row:
    """Build, evaluate, write and independently check one instance.

    ``backend="auto"`` uses the instance's preferred engine if it names one (``Instance.engine``).
    ``checker``: ``"pure"`` (checker.py) or ``"fast"`` (fastcheck.py, same verdicts).
    ``progress``: where the stages are shown (default: a `Progress` of its own, silent
    when ``quiet``). ``chunk_examples``: write a version-2 certificate in chunks of this many
    examples (default: chunks of CHUNK_EXAMPLES above AUTO_CHUNK_ABOVE examples; 0: never).
    ``client``: a Dask client; the check is then sharded over its workers (docs/scaling.md).
    """
    check = checker_function(checker)
    own = progress is None
    prog = Progress(1, "certify", "instance", quiet=quiet) if own else progress
    what = f"{theorem.name} [{inst.name}]"
    prog.describe(what)
    try:
        t0 = time.perf_counter()
        times = {}
        prog.stage("build", "building ...")
        try:
            built = theorem.build(dict(inst.params), seed)
        except (DataError, ModelError, InputError) as e:
            raise type(e)(f"{what}: {e}") from e
        model, ds = built.model, built.dataset
        times["build"] = time.perf_counter() - t0
        engine = getattr(inst, "engine", None) if backend == "auto" else None
        engine = engine or backend
        m = measure(model)
        hyps = hypothesis_records(built.hypotheses)
        meta = {"source": theorem.source, "statement": theorem.statement,
                "params": {k: str(v) for k, v in inst.params.items()},
                "info": {k: str(v) for k, v in built.info.items()},
                **{k: v for k, v in built.meta.items() if k in BUILT_META},
                **({"hypotheses": hyps} if hyps else {})}
        fname = f"{theorem.name}.{inst.name}.json" + (".gz" if gzip_output else "")
        k = chunk_examples if chunk_examples is not None else (CHUNK_EXAMPLES if len(ds) > AUTO_CHUNK_ABOVE else 0)
        if k and len(ds) > k:  # chunked: evaluated and written batch by batch (memory of one batch)
            path = _stream(theorem.name, inst.name, seed, model, ds, built, meta, os.path.join(out_dir, fname), k,
                           engine, prog, times, client)
        else:
            prog.stage("forward", f"forward pass on {plural(len(ds), 'example')}, {len(model.layers)} layers "
                                  f"(engine {engine}) ...")
            t1 = time.perf_counter()
            outputs = claimed_outputs(model, ds, engine, client,
                                      on_layer=lambda k, n: prog.within(k, n, "layer"))
            times["forward"] = time.perf_counter() - t1
            prog.stage("write", "writing the certificate ...")
            doc = build_certificate(theorem.name, inst.name, seed, model, ds, outputs, built.claims,
                                    error_bound=built.error_bound, meta=meta)
            del outputs
            path = write_certificate(doc, os.path.join(out_dir, fname), chunk_examples=k or None)
            del doc  # the checker re-reads the file; the producer's document is not needed any more
            times["write"] = time.perf_counter() - t1 - times["forward"]
        rows_total, counts, claims, info = len(ds), paper_counts(model), [str(c) for c in built.claims], built.info
        del built, model, ds  # the checker re-reads the file: the producer's construction and data can go
        prog.stage(f"check ({checker})", f"checking {path} ({checker} checker) ...")
        t2 = time.perf_counter()
        try:
            if client is not None:
                from ..distributed.check import check_sharded, worker_status

                verdict: Verdict = check_sharded(path, client=client, engine=checker,
                                                 on_workers=lambda st: prog.status(f"check: {worker_status(st)}"))
            else:
                budget = Budget(Limits(), on_example=lambda g: prog.within(g + 1, rows_total, "example"))
                kw = {"progress": lambda k, n: prog.within(k, n, "layer")} if checker == "fast" else {}
                verdict = check(load_certificate(path), budget=budget,
                                read_chunk=chunk_reader(os.path.dirname(os.path.abspath(path))), **kw)
        except MalformedCertificate as e:  # the producer wrote a file the checker rejects: a row, not a traceback
            verdict = Verdict("MALFORMED", None, f"the checker rejects the certificate: {e}", None, {})
        times["check"] = time.perf_counter() - t2
        dt = time.perf_counter() - t0
        row = Row(theorem.name, inst.name, verdict.status, m.n_params, m.width, m.depth, m.max_bits, m.total_bits,
                  dt, path, verdict.message, claims, counts, info,
                  verdict.witness, checker, engine, times, hyps, verdict.measured.get("n_examples"),
                  verdict.measured.get("n_rows"), theorem.source)
        if own:
            prog.update(1, _done_line(row))
        return row
    finally:
        if own:
            prog.close()


def _stream(theorem: str, instance: str, seed: int, model, ds, built, meta: dict, path: str, k: int, engine: str,
            prog: Progress, times: dict, client=None) -> str:
    """A chunked certificate, evaluated and written batch by batch ([`certificate.stream`][exactmem.certificate.stream]):
    batches of STREAM_BATCH examples by the exact forward pass in this process (the compiled
    engines report each layer), or, with a Dask ``client``, one batch per worker at a time
    (at most STREAM_BATCH examples, else the dataset split evenly over the workers); each
    batch's chunk files are written before the next batch's outputs are taken."""
    from ..certificate.stream import STREAM_BATCH, batch_ranges, stream_certificate
    from ..certificate.writer import certificate_head

    size = STREAM_BATCH
    if client is not None:
        from ..distributed.cluster import worker_count

        size = min(STREAM_BATCH, -(-len(ds) // max(1, worker_count(client))))
    ranges = batch_ranges(len(ds), k, size)
    where = " on the workers" if client is not None else ""
    prog.stage("forward+write", f"forward pass and chunk files of {plural(len(ds), 'example')} in "
                                f"{plural(len(ranges), 'batch', 'batches')}{where}, {len(model.layers)} layers "
                                f"(engine {engine}) ...")
    if client is not None:
        outputs = _batches_on_workers(client, model, ds, ranges, engine, prog, k, path.endswith(".gz"))
    else:
        outputs = (_outputs_of(model, ds.inputs[a:b], ds.labels[a:b], engine,
                               lambda done, n, j=j: prog.within(done, n, f"batch {j + 1}/{len(ranges)}, layer"))
                   for j, (a, b) in enumerate(ranges))
    head = certificate_head(theorem, instance, seed, model, built.claims, built.error_bound, meta=meta)
    return stream_certificate(head, model, ds, outputs, path, k, size, timings=times)


def _batches_on_workers(client, model, ds, ranges, backend: str, prog: Optional[Progress] = None,
                        chunk_examples: int = 0, gz: bool = False):
    """The outputs of each batch (example ranges ``ranges``) in order, each batch computed on a
    Dask worker, at most one batch per worker in flight (the model goes to each worker once).
    With ``chunk_examples``, each batch comes back as its chunk files, encoded on its worker
    ([`EncodedBatch`][exactmem.certificate.stream.EncodedBatch]: the caller only writes them).
    With ``prog``, the workers report the layer they have reached (the per-worker progress of
    sharded checks, docs/scaling.md)."""
    from collections import deque

    from ..distributed.check import LayerReporter, worker_progress, worker_status
    from ..distributed.cluster import worker_count

    # the model as one pickle: Dask's own serialization of the layers' Fractions took about twice
    # as long (Kajitsuka N = 10⁵: 1.6-2.0 s against 0.9 s, unpickling on the workers included)
    m = client.scatter(pickle.dumps(model, protocol=5), broadcast=True, hash=False)
    todo, running = iter(enumerate(ranges)), deque()
    show = None if prog is None else (lambda st: prog.status(f"forward: {worker_status(st)}"))
    with worker_progress(client, show) as report:
        def submit(where: Optional[str]) -> None:
            nxt = next(todo, None)
            if nxt is not None:
                j, (a, b) = nxt
                # one pickle: the sequences keep sharing their token objects (Dask would send the
                # list's items one by one, a copy of every token in every sequence)
                place = {"workers": [where]} if where else {}
                part = replace(ds, inputs=ds.inputs[a:b], labels=ds.labels[a:b])
                blob = client.scatter(pickle.dumps(part, protocol=5), hash=False, **place)
                running.append((where, client.submit(_outputs_of_pickled, m, blob, backend,
                                                     LayerReporter(report, a, b, "layers"), a, chunk_examples, gz,
                                                     pure=False, **place)))

        for where in (list(client.scheduler_info().get("workers", {})) or [None])[:max(1, worker_count(client))]:
            submit(where)  # one batch per worker, each on its own worker
        while running:
            where, f = running.popleft()
            out = f.result()
            submit(where)
            yield out


def _outputs_of_pickled(model: bytes, blob: bytes, backend: str, on_layer=None, first: int = 0,
                        chunk_examples: int = 0, gz: bool = False):
    """Worker task: `_outputs_of` of the dataset part pickled in ``blob`` (its examples
    from ``first`` on) through the model pickled in ``model`` (unpickled by each task: nothing
    of it stays on the worker); with ``chunk_examples``, the part's chunk files encoded
    ([`batch_chunks`][exactmem.certificate.stream.batch_chunks], in parallel on the workers)."""
    from ..certificate.stream import EncodedBatch, batch_chunks

    net, part = pickle.loads(model), pickle.loads(blob)
    outputs = _outputs_of(net, part.inputs, part.labels, backend, on_layer)
    if not chunk_examples:
        return outputs
    return EncodedBatch(list(batch_chunks(net, part, outputs, first, chunk_examples, gz)))


def _done_line(row: Row) -> str:
    t = row.timings
    if row.verdict == "ERROR":
        return f"{row.theorem} [{row.instance}] ERROR: {row.message}"
    parts = ", ".join(f"{k} {duration(t[k])}" for k in ("build", "forward", "write", "check") if k in t)
    return f"{row.theorem} [{row.instance}] {row.verdict} in {duration(row.seconds)} ({parts})"


def certify_file(path: str, out_dir: str = "certificates", seed: int = 0, size: str = "small",
                 gzip_output: bool = False, backend: str = "auto", quiet: bool = False,
                 only: Optional[str] = None, on_row: Optional[Callable[[Row], None]] = None,
                 checker: str = "pure", chunk_examples: Optional[int] = None, workers: int = 1,
                 scheduler: Optional[str] = None, debug: bool = False) -> List[Row]:
    """Certify every instance of every theorem in the proof file at ``path``.

    ``workers`` > 1 or ``scheduler``: the checks are sharded on a Dask cluster (one for the run).
    An instance whose build, forward pass or writing raises becomes an ``ERROR`` row naming the
    exception, and the others still run (``debug``: the exception propagates instead).

    ``checker``: ``pure``, ``fast`` or ``auto`` (pure for ``size="small"``, fast otherwise).
    Progress (instances done, rate, ETA, the running stage) goes to stderr: a bar on a
    terminal, plain lines otherwise, nothing when ``quiet`` (`exactmem.progress`).
    """
    checker = resolve_checker(checker, size)
    theorems = load_proof_file(path)
    jobs = [(t, i) for t in theorems for i in t.instances_for(size)
            if only is None or only in t.name or only in i.name or only == f"{t.name}/{i.name}"]
    rows = []
    cluster = nullcontext(None)
    if workers > 1 or scheduler:
        from ..distributed.cluster import dask_client

        cluster = dask_client(workers, scheduler)
    costs = [expected_cost(inst) for _, inst in jobs]
    with cluster as client, Progress(len(jobs), "certify", "instance", quiet=quiet, costs=costs or None) as prog:
        for k, (t, inst) in enumerate(jobs, 1):
            try:
                row = certify_instance(t, inst, seed, out_dir, gzip_output, backend, quiet,
                                       checker=checker, progress=prog,
                                       chunk_examples=chunk_examples, client=client)
            except Exception as e:  # noqa: BLE001 — a broken instance is a row, the run goes on
                if debug:
                    raise
                row = error_row(t.name, inst.name, e, source=t.source)
            rows.append(row)
            prog.update(1, _done_line(row))
            if on_row:
                with prog.suspended():
                    on_row(row)
        prog.describe("")  # the bar left on screen sums up the run
    return rows


def error_row(theorem: str, instance: str, e: BaseException, source: str = "") -> Row:
    """The row of an instance that could not be built or certified: verdict ``ERROR``, the
    exception's type and message (one line)."""
    what = one_line(e) or "(no message)"
    prefix = f"{theorem} [{instance}]: "
    if what.startswith(prefix):
        what = what[len(prefix):]
    return Row(theorem, instance, "ERROR", 0, 0, 0, 0, 0, 0.0, "", f"{type(e).__name__}: {what}"[:500], source=source)


_AUTHORS = re.compile(r"^([A-Z][^\s,(&]*(?:, [A-Z][^\s,(&]*)*(?: & [A-Z][^\s,(&]*)?)[ ,(]")
_NUMBER = r"(?:[A-Z]\.)?\d+(?:\.\d+)?"
_RESULT = re.compile(rf"\b(Theorem|Thm|Corollary|Lemma|Proposition|Remark)\s+({_NUMBER}(?:\s*/\s*{_NUMBER})?)"
                     r"|\b(App)\.\s+([A-Z])\b")
_SHORT = {"Theorem": "Thm", "Corollary": "Cor.", "Proposition": "Prop.", "App": "App."}


def paper_reference(source: str, authors: bool = True) -> str:
    """The paper's result a theorem's ``source`` names first, shortened for the summary:
    ``Kajitsuka & Sato, Thm F.1``, ``Dana et al., Cor. 1``, ``Kajitsuka & Sato, Lemma C.1``;
    ``""`` when the source names no numbered result (``authors=False``: the result alone)."""
    m = _RESULT.search(source or "")
    if not m:
        return ""
    kind, number = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    ref = _SHORT.get(kind, kind) + " " + re.sub(r"\s*/\s*", " / ", number)
    a = _AUTHORS.match(source) if authors else None
    if a:
        names = re.split(r", | & ", a.group(1))
        who = a.group(1) if len(names) <= 2 else f"{names[0]} et al."
        ref = f"{who}, {ref}"
    return ref


def _theorem_line(r: Row) -> str:
    """The theorem's name, and the paper's result it checks when that fits 80 columns."""
    for authors in (True, False):
        ref = paper_reference(r.source, authors)
        line = f"{r.theorem}  ({ref})" if ref else r.theorem
        if len(line) <= SUMMARY_COLUMNS:
            return line
    return r.theorem


def _claims_cell(r: Row) -> str:
    """'k/k hold' when certified; the failing claim when a claim refuted the certificate."""
    if r.verdict == "ERROR":
        return "-"
    if r.witness and "claim" in r.witness:
        c = r.witness["claim"]
        return f"FAILS {c.get('quantity')} {c.get('op')} {c.get('bound')} (is {r.witness.get('measured')})"
    k = len(r.claims)
    if r.verdict == "CERTIFIED" or (r.witness and "example" in r.witness):  # claims are checked first
        return f"{k}/{k} hold"
    return f"{k} (not reached)" if r.verdict == "REFUTED" else "?"


def hypothesis_records(hypotheses) -> List[dict]:
    """``Built.hypotheses`` as JSON-ready dicts {name, holds (True/False/None), detail}."""
    from ..proof import Hypothesis

    return [Hypothesis(*h)._asdict() for h in hypotheses]


def _verdict_cell(r: Row) -> str:
    """The checker's verdict, qualified when the instance lies outside the theorem's hypotheses
    (some hypothesis fails) or inside them is not decided: the verdict itself is unchanged."""
    failed = [h for h in r.hypotheses if h["holds"] is False]
    if failed:
        h = failed[0]
        more = f"; +{len(failed) - 1} more" if len(failed) > 1 else ""
        return f"{r.verdict} (outside Thm: {_short_name(h)} fails - {_brief(h['detail'])}{more})"
    if any(h["holds"] is None for h in r.hypotheses):
        return f"{r.verdict} (Thm hypotheses not all decided)"
    return r.verdict


def _short_name(h: dict) -> str:
    return h["name"].split(" (")[0]


def _brief(detail: str) -> str:
    return detail.split(":")[0]


def _scope_cell(r: Row) -> str:
    """'k/k hold', or which hypotheses fail / are not decided (details: --json, certificate meta)."""
    hs = r.hypotheses
    ok = sum(1 for h in hs if h["holds"] is True)
    bad = [_short_name(h) for h in hs if h["holds"] is False]
    open_ = [_short_name(h) for h in hs if h["holds"] is None]
    parts = [f"{ok}/{len(hs)} hold"] + ([f"fails: {', '.join(bad)}"] if bad else []) + \
        ([f"not decided: {', '.join(open_)}"] if open_ else [])
    return "; ".join(parts)


def _examples_cell(r: Row) -> str:
    """N as the checker counted it: distinct examples, and the rows when some repeat ("11 of 12")."""
    if r.examples is None:
        return "-"
    return str(r.examples) if r.rows in (None, r.examples) else f"{r.examples} of {r.rows}"


def format_table(rows: List[Row]) -> str:
    """Markdown summary table: theorem, instance, verdict, params, width, depth, bits, time; plus a
    ``hypotheses`` column when some theorem declares hypotheses (``Built.hypotheses``)."""
    head = ["theorem", "instance", "verdict", "N", "claims", "params", "width", "depth", "max bits", "total bits",
            "time (s)"]
    body = [[r.theorem, r.instance, _verdict_cell(r), _examples_cell(r), _claims_cell(r)]
            + (["-"] * 6 if r.verdict == "ERROR" else [str(r.params), str(r.width), str(r.depth), str(r.max_bits),
                                                      str(r.total_bits), f"{r.seconds:.2f}"]) for r in rows]
    if any(r.hypotheses for r in rows):
        head.insert(5, "hypotheses")
        for b, r in zip(body, rows):
            b.insert(5, _scope_cell(r) if r.hypotheses else "-")
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(b) for b in body]
    return "\n".join(out)


SUMMARY_HEAD = ("theorem / instance", "verdict", "N", "claims", "params", "depth", "bits", "time")
SUMMARY_COLUMNS = 80  # every line of the summary fits a terminal of this width


def format_summary(rows: List[Row]) -> str:
    """The ``certify`` summary for a terminal: one block per theorem (its name on a line of its
    own, with the paper's result it checks: `paper_reference`), one row per instance — verdict, N (distinct examples, "11 of 12" when rows repeat),
    claims holding, parameters, depth, max bits per weight, time — every line within
    ``SUMMARY_COLUMNS`` (80): an instance name too long for its column goes on a line of its own,
    its cells on the next. What does not fit a cell (a failing claim, hypotheses outside the
    theorem, an ERROR's message) goes on indented lines under its row, wrapped at 80. The full table:
    [`format_table`][exactmem.pipeline.certify.format_table] (``certify --markdown``); everything: ``--json``."""
    def cells(r: Row) -> List[str]:
        if r.verdict == "ERROR":
            return [r.instance, "ERROR"] + ["-"] * 6
        claims = _claims_cell(r)
        short = claims.split(" hold")[0] if claims.endswith(" hold") else claims.split(" ")[0]
        return [r.instance, r.verdict, _examples_cell(r), short, str(r.params), str(r.depth), str(r.max_bits),
                duration(r.seconds)]

    def notes(r: Row) -> List[str]:
        out = []
        if r.verdict == "ERROR":
            out.append(r.message)
        claims = _claims_cell(r)
        if claims.startswith("FAILS"):
            out.append("claim " + claims)
        qualified = _verdict_cell(r)
        if qualified != r.verdict:
            out.append(qualified[len(r.verdict):].strip(" ()"))
        return out

    body = [cells(r) for r in rows]
    widths = [max(len(h) - 2 * (i == 0), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(SUMMARY_HEAD)]
    # the instance column takes what the other columns leave of SUMMARY_COLUMNS (2 for the indent,
    # 2 between columns); a longer name gets a line of its own
    rest = sum(widths[1:]) + 2 * len(widths)
    widths[0] = min(widths[0], max(8, SUMMARY_COLUMNS - rest))
    right = {2, 4, 5, 6, 7}  # numbers are right-aligned

    def line(cs: List[str]) -> str:
        return "  " + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                                for i, (c, w) in enumerate(zip(cs, widths))).rstrip()

    head = line([""] + list(SUMMARY_HEAD[1:]))  # the first column's head spans the rows' indent too
    if len(SUMMARY_HEAD[0]) <= widths[0] + 2:
        out: List[str] = [SUMMARY_HEAD[0].ljust(widths[0] + 2) + head[2 + widths[0]:]]
    else:  # wide cells leave the instance column narrower than its title: the title goes above
        out = [SUMMARY_HEAD[0], head]
    for k, (r, b) in enumerate(zip(rows, body)):
        if k == 0 or rows[k - 1].theorem != r.theorem:
            out.append(_theorem_line(r))
        if len(b[0]) > widths[0]:
            out.append(f"  {b[0]}")
            b = [""] + b[1:]
        out.append(line(b))
        for n in notes(r):
            out += textwrap.wrap(n, SUMMARY_COLUMNS, initial_indent=" " * 6, subsequent_indent=" " * 8,
                                 break_long_words=False, break_on_hyphens=False) or [""]
    differ = [r for r in rows if _named_size_differs(r)]
    if differ:
        r = differ[0]
        note = (f"note: N counts the distinct examples the checker found; an instance name's N<k> is the "
                f"size asked of the construction, which certifies a different number of examples in "
                f"{plural(len(differ), 'row')} here (e.g. {r.theorem} [{r.instance}]: {r.examples}). "
                f"See docs/cli.md.")
        out += textwrap.wrap(note, SUMMARY_COLUMNS, subsequent_indent=" " * 6, break_long_words=False,
                             break_on_hyphens=False)
    return "\n".join(out)


def _named_size_differs(r: Row) -> bool:
    """Whether the instance name's ``N<k>`` (the size asked for) is neither the number of distinct
    examples the checker counted nor the dataset's rows (``N8-M3-d2-C3-empty``: 9 for ϕ̃ alone)."""
    m = re.match(r"N(\d+)(?:-|$)", r.instance)
    return bool(m) and r.examples is not None and int(m.group(1)) not in (r.examples, r.rows)
