"""verify's fast path: each example's verdict (and code length) from the fast graph engine's enclosures.

`exactmem/fastgraph` encloses every score of a graph model for a batch of examples in float64, then
with double-float midpoints (`docs/certificate.md` § The fast graph engine): about 100× less work per
example than the arb ladder of `evaluate.judge` on GPT-2-sized networks. An example whose enclosures
decide its verdict — every read position's label score above every other score (pass), or some other
score at least the label's (fail) — takes that verdict; every other example (undecided, special
values, an op the engine does not evaluate, a limit) goes to the arb ladder as before. Nothing here is
trusted: the kernel (or ``check --engine fast``) re-derives every claimed verdict.

The graph is parsed by the kernel's own parser (`kernel.checker.parse_certificate` of a one-example
certificate), so the engine runs exactly the graph the certificate will hold.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

MIDPOINT_BITS = {False: 53, True: 106}  # what `bits` reports for an example the engine decided (float64, double-float)
#: with ``measure``, a pass other than the last keeps an example only when its code length is enclosed this tightly
#: (bits per prediction); a wider one goes to the next pass, so the claimed code length is about what the
#: double-float pass would give (the arb ladder, for what the engine leaves, asks for a radius under 2^-40)
CODE_WIDTH = Fraction(1, 1 << 16)


def engine_for(model_json: Dict[str, Any], first_input, first_label, budget=None):
    """(parsed certificate, engine plan) for ``model_json``, or None when the fast engine cannot run the
    graph (an op it does not evaluate, NumPy missing, a graph the kernel's parser refuses). The first
    example makes the one-example certificate the kernel's parser reads."""
    try:
        from ..fastgraph.check import plan_for
        from ..fastgraph.engine import Unsupported
        from ..kernel.checker import MalformedCertificate, parse_certificate
        from ..kernel.limits import Budget, LimitExceeded
        from .certificate import build
        from .onnx_import import rational_str
    except ImportError:
        return None
    jsonable = lambda v: [jsonable(u) for u in v] if isinstance(v, (list, tuple)) else \
        rational_str(v) if isinstance(v, Fraction) else v  # noqa: E731
    first_input, first_label = jsonable(first_input), np.asarray(first_label).tolist()
    doc = build(model_json, [first_input], [first_label], ["unknown"], {"pass": 0, "fail": 0, "rows": 1,
                                                                         "distinct": 1}, "fastpath")
    try:
        cert = parse_certificate(doc, budget or Budget())
        return cert, plan_for(cert)
    except (Unsupported, MalformedCertificate, LimitExceeded):
        return None


def decide(lo: np.ndarray, hi: np.ndarray, labels: np.ndarray) -> str:
    """The verdict of one example from its score bounds lo, hi [P, C] and labels [P]: "pass" when at every
    position the label's lower bound exceeds every other upper bound, "fail" when at some position another
    lower bound reaches the label's upper bound (the kernel's rule: a tie is no argmax), else "unknown"."""
    P = np.arange(lo.shape[0])
    ly, hy = lo[P, labels], hi[P, labels]
    others_hi = hi.copy()
    others_hi[P, labels] = -np.inf
    others_lo = lo.copy()
    others_lo[P, labels] = -np.inf
    if np.all(ly > others_hi.max(axis=1)):
        return "pass"
    if np.any(others_lo.max(axis=1) >= hy):
        return "fail"
    return "unknown"


def margin_text(lo: np.ndarray, hi: np.ndarray, labels: np.ndarray) -> str:
    """The smallest lower bound of (label score − other score) over the positions (display only)."""
    P = np.arange(lo.shape[0])
    others_hi = hi.copy()
    others_hi[P, labels] = -np.inf
    m = (lo[P, labels] - others_hi.max(axis=1)).min()
    return f"> {m:.6g} (fast engine enclosure)"


def code_length(lo: np.ndarray, hi: np.ndarray, labels: np.ndarray, prec: int = 128):
    """[low, high, positions] (Fractions, high rounded up to 2^-GRAIN) of Σ_p −log₂ softmax(s_p)[y_p] for every
    score in the bounds: `codelength.prediction_bits` on arb balls holding [lo, hi] (the floats are exact in
    arb); None when a bound, or the enclosure, is not finite (the example then goes to the next pass)."""
    from ..arith.linalg import lower_fraction, upper_fraction
    from .codelength import prediction_bits, round_up
    from .evaluate import ArbBackend

    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    import flint

    old = flint.ctx.prec
    try:
        K = _BACKENDS.get(prec) or _BACKENDS.setdefault(prec, ArbBackend(prec))
        K.activate()
        ball = lambda a, b: K.flint.arb(float(a)).union(K.flint.arb(float(b)))  # noqa: E731
        bits = sum(prediction_bits(K, [ball(a, b) for a, b in zip(lo[p], hi[p])], int(labels[p]))
                   for p in range(lo.shape[0]))
    finally:
        flint.ctx.prec = old
    if not bits.is_finite():  # bounds so wide that a sum of exponentials reaches 0 (its log −∞) or overflows
        return None
    return max(Fraction(0), lower_fraction(bits)), round_up(upper_fraction(bits)), lo.shape[0]


_BACKENDS: Dict[int, Any] = {}  # arb backends of `code_length`, by precision


def _merge(part, out: Dict[int, tuple], left: List[int], stats: Dict[str, Any], on_done) -> None:
    """One worker's (results, rows left, stats) joined into the whole run's."""
    o, lf, st = part
    out.update(o)
    left.extend(lf)
    for k, v in st.items():
        stats[k] = v if isinstance(v, bool) else stats.get(k, 0) + v
    if on_done is not None:
        on_done(len(o))


_SHARED: Dict[str, Any] = {}  # the parsed graph and plan, inherited by forked workers (`fast_results_parallel`)


def _fast_worker(items, position: str, measure: bool):
    """One worker's share: `fast_results` with one BLAS thread (the workers already use the cores)."""
    from threadpoolctl import threadpool_limits

    stats: Dict[str, Any] = {}
    with threadpool_limits(1):
        out, left = fast_results(_SHARED["cert"], _SHARED["plan"], items, position, measure, stats=stats)
    return out, left, stats


def fast_results_parallel(cert, plan, items, position: str, measure: bool, workers: int,
                          on_done: Optional[Callable[[int], None]] = None, stats: Optional[Dict[str, Any]] = None):
    """`fast_results` over ``workers`` forked processes (batches of `fastgraph.check.batch_size` examples
    shared out; one process where fork is missing, for one worker, or for a single batch)."""
    import multiprocessing as mp_
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from ..fastgraph.check import batch_size

    stats = {} if stats is None else stats
    size = min(batch_size(cert, max(len(x) for _, x, _ in items)), max(1, -(-len(items) // (2 * workers))))
    if workers <= 1 or "fork" not in mp_.get_all_start_methods() or len(items) <= size:
        return fast_results(cert, plan, items, position, measure, on_done, stats)
    # the first batch here: it learns which passes decide (`plan.skip`), and the forked workers inherit that
    out, left = fast_results(cert, plan, items[:size], position, measure, on_done, stats)
    _SHARED.update(cert=cert, plan=plan)
    try:
        with ProcessPoolExecutor(workers, mp_context=mp_.get_context("fork")) as pool:
            futs = [pool.submit(_fast_worker, items[k:k + size], position, measure)
                    for k in range(size, len(items), size)]
            for f in as_completed(futs):
                _merge(f.result(), out, left, stats, on_done)
    finally:
        _SHARED.clear()
    return out, sorted(left)


_WORKER_PLANS: Dict[str, Any] = {}  # in a Dask worker: the parsed graph and plan of the model being verified


def _dask_batch(model_bytes: bytes, digest: str, items, position: str, measure: bool):
    """Dask task: `fast_results` on ``items`` in a worker, the model parsed once per worker process."""
    import json

    if digest not in _WORKER_PLANS:
        _WORKER_PLANS.clear()
        _WORKER_PLANS[digest] = engine_for(json.loads(model_bytes), items[0][1], items[0][2])
    got, stats = _WORKER_PLANS[digest], {}
    if got is None:
        return {}, [row for row, _, _ in items], {"unsupported": True}
    out, left = fast_results(got[0], got[1], items, position, measure, stats=stats)
    return out, left, stats


def fast_results_dask(model_json: Dict[str, Any], items, position: str, measure: bool, scheduler: str,
                      batch: int, on_done: Optional[Callable[[int], None]] = None,
                      stats: Optional[Dict[str, Any]] = None):
    """`fast_results` as Dask tasks of ``batch`` examples on the cluster at ``scheduler`` (the model sent
    once to every worker; a task whose worker is lost is re-run, twice at most, by Dask). Raises
    `distributed.ClusterError` when the scheduler cannot be reached."""
    import hashlib
    import json

    from distributed import as_completed

    from ..distributed.cluster import dask_client

    stats = {} if stats is None else stats
    data = json.dumps(model_json, separators=(",", ":")).encode()
    digest = hashlib.sha256(data).hexdigest()
    out: Dict[int, tuple] = {}
    left: List[int] = []
    with dask_client(None, scheduler) as c:
        ref = c.scatter(data, broadcast=True)
        futs = [c.submit(_dask_batch, ref, digest, items[k:k + batch], position, measure, pure=False, retries=2)
                for k in range(0, len(items), batch)]
        for f in as_completed(futs):
            _merge(f.result(), out, left, stats, on_done)
    return out, sorted(left)


def fast_results(cert, plan, items: Sequence[Tuple[int, Any, Any]], position: str, measure: bool,
                 on_done: Optional[Callable[[int], None]] = None, stats: Optional[Dict[str, Any]] = None
                 ) -> Tuple[Dict[int, tuple], List[int]]:
    """({row: result} for the rows the enclosures decide, [rows left to the arb ladder]). ``items``:
    (row, input as the certificate holds it — a list of token ids or of vectors of Fractions —, label:
    an int or a list per position). A result is ``(verdict, bits, margin)`` as `evaluate.judge` gives
    it, plus the code length (`code_length`) when ``measure``; ``bits`` is the engine's midpoint
    precision (`MIDPOINT_BITS`). The passes are the check's (`fastgraph.check.through_levels`).
    ``on_done(k)`` after each batch with the rows it finished."""
    from ..fastgraph.check import batch_size, levels, through_levels
    from ..fastgraph.evaluate import evaluate
    from ..kernel.limits import Budget

    stats = {} if stats is None else stats
    out: Dict[int, tuple] = {}
    final = levels(plan)[-1]

    def attempt(level: int, todo: list) -> list:
        """One pass on ``todo``: the decided rows into ``out`` (with ``measure``, before the last pass, only
        those whose code length is within `CODE_WIDTH` per prediction); the rows left."""
        precise = level > 0
        t = time.perf_counter()
        try:
            lo, hi, bad = evaluate(plan, [x for _, x, _ in todo], cert.tokens, position, Budget(), precise=precise,
                                   until=level)
        except Exception:  # noqa: BLE001 — a limit, an op the engine refuses, memory: a later pass or arb decides
            return todo
        stats["seconds"] = stats.get("seconds", 0.0) + time.perf_counter() - t
        rest = []
        for j, (row, x, lab) in enumerate(todo):
            labels = np.atleast_1d(np.asarray(lab, dtype=np.int64))
            v = "unknown" if bad[j] else decide(lo[j], hi[j], labels)
            enc = code_length(lo[j], hi[j], labels) if v != "unknown" and measure else None
            loose = enc is not None and level != final and enc[1] - enc[0] > CODE_WIDTH * enc[2]
            if v == "unknown" or (measure and enc is None) or loose:
                rest.append((row, x, lab))
                continue
            res = (v, MIDPOINT_BITS[precise], margin_text(lo[j], hi[j], labels))
            out[row] = res + (enc,) if measure else res
            key = "double-float" if precise else "float64"
            stats[key] = stats.get(key, 0) + 1
        return rest

    by_len: Dict[int, list] = {}
    for it in items:
        by_len.setdefault(len(it[1]), []).append(it)
    left: List[int] = []
    for n, group in by_len.items():
        size = batch_size(cert, n)
        for k in range(0, len(group), size):
            part = group[k:k + size]
            rest = through_levels(plan, part, attempt)
            left.extend(row for row, _, _ in rest)
            if on_done is not None:
                on_done(len(part) - len(rest))
    return out, left
