"""One sweep point: build its instance from the proof file, run its task, return its ``points.jsonl`` record.

The task is weight quantization or floating-point arithmetic.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .arith import _needs_mpfr, evaluate_format
from .formats import SweepError, get_format, mantissa_format
from .judge import Judge, evaluate_exact, search_minimal
from .quantize import identity_bits, quantize_model, storage_bits
from .spec import _canon, _jsonable, _slug


def _measure_dict(model) -> Dict[str, int]:
    from ..model.measure import measure

    return measure(model).as_dict()


def _label_entries(model, dataset) -> int:
    if model.readout == "all":
        return sum(len(lab) for lab in dataset.labels)
    return len(dataset.labels)


def information_bound(model, dataset, params) -> Dict[str, Any]:
    """N·log₂C with N the number of labels (per position for sequence-to-sequence) and C the
    ``C`` (or ``classes``) parameter if the instance has one, else the distinct label values."""
    import math

    n = _label_entries(model, dataset)
    C = params.get("C", params.get("classes"))
    src = "params"
    if not isinstance(C, int) or C < 1:
        vals = set()
        for lab in dataset.labels:
            for col in (lab if model.readout == "all" else [lab]):
                vals.add(tuple(col) if isinstance(col, (tuple, list)) else col)
        C, src = max(1, len(vals)), "distinct labels"
    return {"labels": n, "C": C, "C_from": src, "bits": n * math.log2(C) if C > 1 else 0.0}


def _claims_json(claims) -> List[Dict[str, str]]:
    return [c.to_json() for c in claims]


STRUCTURAL = ("n_examples", "width", "relu_depth", "attention_layers", "depth", "n_params")


def _certify_quantized(point, built, model_q, b, mode, out_dir) -> Dict[str, Any]:
    """Write the quantized model as a certificate (structural claims only) and check it."""
    from ..kernel.checker import check_certificate, load_certificate
    from ..certificate.writer import build_certificate, write_certificate
    from ..model.forward import decode_output, forward
    from ..model.layers import Attention

    ds = built.dataset
    res = forward(model_q, ds.inputs, backend=point.get("engine") or "auto")
    if res.exact:
        outputs = [decode_output(model_q, o) for o in res.outputs]
    else:
        outputs = list(ds.labels) if model_q.decode == "argmax" else [None] * len(ds)
    claims = [c for c in built.claims if c.quantity in STRUCTURAL or c.name is not None]  # names: formulas use them
    name = re.sub(r"[^A-Za-z0-9._=-]+", "_", f"{point['theorem']}.{_slug(point)}.s{point['seed']}.{mode}-b{b}")
    doc = build_certificate(point["theorem"], f"{_slug(point)} quantized {mode} b={b}", point["seed"], model_q, ds,
                            outputs, claims, error_bound=built.error_bound,
                            meta={"sweep": {"mode": mode, "b": b, "params": _jsonable(point["params"])}})
    rel = os.path.join("certificates", name + ".json.gz")
    path = write_certificate(doc, os.path.join(out_dir, rel))
    token_wise = not any(isinstance(l, Attention) for l in model_q.layers)
    if token_wise:
        from ..certificate.fastcheck import check_certificate_fast as check
        checker = "fast"
    else:
        check, checker = check_certificate, "pure"
    v = check(load_certificate(path))
    return {"b": b, "path": rel, "verdict": v.status, "checker": checker, "witness": _jsonable(v.witness)}


def run_quant(point, built, mode: str, log=None) -> Dict[str, Any]:
    model, ds = built.model, built.dataset
    st = point["settings"]
    judge = Judge(model, ds, built.error_bound)
    engine = point.get("engine") or "auto"
    ident = identity_bits(model, mode)
    lowest = 1 if mode == "float" else 0
    cap = max(st["max_bits"], ident or 0)
    cache: Dict[int, Dict[str, Any]] = {}

    def evaluate(b):
        if ident is not None and b > ident:  # quantization is the identity from ident on: same model
            if ident not in cache:
                cache[ident] = evaluate(ident)
            return dict(cache[ident], b=b, same_as=ident)
        t0 = time.perf_counter()
        mq = quantize_model(model, mode, b)
        ev = evaluate_exact(mq, ds, judge, engine, st.get("prec", 128))
        m = _measure_dict(mq)
        ev.update({"b": b, "max_bits": m["max_bits"], "total_bits": m["total_bits"], "n_nonzero": m["n_nonzero"],
                   "storage": storage_bits(mq, mode, b)})
        if log:
            log(f"    {mode} b={b}: exact {ev['exact']['fail']} wrong, nearest {ev['nearest']['fail']} wrong "
                f"({time.perf_counter() - t0:.1f} s)")
        return ev

    for b in st.get("bits") or ():
        if b >= lowest and b not in cache:
            cache[b] = evaluate(b)
    crits = {c: search_minimal(evaluate, c, lowest, ident, cap, st["neighbours"], cache) for c in ("exact", "nearest")}
    for c, r in crits.items():
        if r["min_b"] is not None:
            ev = cache[r["min_b"]]
            r["at_min"] = {"max_bits": ev["max_bits"], "total_bits": ev["total_bits"], "n_nonzero": ev["n_nonzero"],
                           "storage_bits": ev["storage"]["per_weight"],
                           "exponent_bits": ev["storage"]["exponent_bits"]}
    if st.get("certify") and crits["exact"]["min_b"] is not None and point.get("out_dir"):
        b = crits["exact"]["min_b"]
        certs = [_certify_quantized(point, built, quantize_model(model, mode, b), b, mode, point["out_dir"])]
        if b - 1 >= lowest:
            certs.append(_certify_quantized(point, built, quantize_model(model, mode, b - 1), b - 1, mode,
                                            point["out_dir"]))
        crits["exact"]["certificates"] = certs
    evals = [cache[b] for b in sorted(cache)]
    return {"mode": mode, "identity_b": ident, "lowest_b": lowest, "cap": cap, "criteria": crits, "evals": evals}


def run_arith(point, built, log=None) -> Dict[str, Any]:
    model, ds = built.model, built.dataset
    st = point["settings"]
    judge = Judge(model, ds, built.error_bound)
    out: Dict[str, Any] = {"formats": {}}
    for name in st["formats"]:
        t0 = time.perf_counter()
        r = evaluate_format(model, ds, judge, get_format(name), st.get("float_engine", "auto"))
        out["formats"][name] = r
        if log:
            log(f"    {name}: exact {r['exact']['fail']}/{len(ds)} wrong ({r['engine']}, "
                f"{time.perf_counter() - t0:.1f} s)")
    if st.get("arith_min"):
        cache: Dict[int, Dict[str, Any]] = {}

        def evaluate(b):
            t0 = time.perf_counter()
            r = evaluate_format(model, ds, judge, mantissa_format(b), "mpfr")
            r["b"] = b
            if log:
                log(f"    mantissa b={b}: exact {r['exact']['fail']} wrong ({time.perf_counter() - t0:.1f} s)")
            return r

        hint = max(8, identity_bits(model, "float") or 8)  # where the doubling starts (speed only)
        crits = {c: search_minimal(evaluate, c, 2, None, st["max_bits"], st["neighbours"], cache, start=hint)
                 for c in ("exact", "nearest")}
        out["mantissa"] = {"criteria": crits, "evals": [cache[b] for b in sorted(cache)]}
    return out


_VERSIONS: Optional[Dict[str, Any]] = None


def versions() -> Dict[str, Any]:
    """Versions of exactmem (and its git commit), Python and the numeric libraries."""
    global _VERSIONS
    if _VERSIONS is None:
        from ..version import __version__

        v: Dict[str, Any] = {"exactmem": __version__, "python": platform.python_version()}
        try:
            import numpy

            v["numpy"] = numpy.__version__
        except Exception:  # pragma: no cover
            pass
        try:
            import gmpy2

            v["gmpy2"] = gmpy2.version()
            v["mpfr"] = gmpy2.mpfr_version()
        except Exception:  # pragma: no cover
            pass
        try:
            import flint

            v["python-flint"] = flint.__version__
        except Exception:  # pragma: no cover
            pass
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
            if head.returncode == 0:
                dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                       capture_output=True, text=True, timeout=10)
                v["git"] = head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
        except Exception:  # pragma: no cover - no git
            pass
        _VERSIONS = v
    return dict(_VERSIONS)


_BUILT: Dict[str, Any] = {}
_PROOFS: Dict[Tuple[str, str], Any] = {}


def _build(point):
    from ..pipeline.loader import load_proof_file

    bkey = _canon([point["proof_sha"], point["theorem"], point["params"], point["seed"]])
    if bkey in _BUILT:
        return _BUILT[bkey]
    pk = (os.path.abspath(point["proof"]), point["proof_sha"])
    if pk not in _PROOFS:
        _PROOFS[pk] = {t.name: t for t in load_proof_file(point["proof"])}
    thm = _PROOFS[pk][point["theorem"]]
    built = thm.build(dict(point["params"]), point["seed"])
    _BUILT.clear()  # keep one build per process (memory)
    _BUILT[bkey] = built
    return built


def run_point(point: Dict[str, Any], verbose: bool = False, log=None) -> Dict[str, Any]:
    """Build the point's instance and run its task; a record for ``points.jsonl``. ``log(text)``
    hears each step inside the point (``verbose``: printed as plain lines instead)."""
    from ..data.dataset import DataError
    from ..model.forward import InputError
    from ..model.layers import ModelError
    from ..proof import ProofFileError

    log = (lambda m: print(m, file=sys.stderr, flush=True)) if verbose else log
    t0 = time.perf_counter()
    rec: Dict[str, Any] = {"key": point["key"], "point": {k: _jsonable(v) for k, v in point.items()
                                                          if k not in ("key", "out_dir")}}
    try:
        built = _build(point)
        model, ds = built.model, built.dataset
        if log:
            log(f"    built: {len(ds)} examples, {_measure_dict(model)['n_params']} parameters "
                f"({time.perf_counter() - t0:.1f} s); evaluating")
        rec["model"] = dict(_measure_dict(model), n_examples=len(ds), decode=model.decode, readout=model.readout,
                            input_type=model.input_type, softmax=_needs_mpfr(model),
                            identity_b_float=identity_bits(model, "float"),
                            identity_b_fixed=identity_bits(model, "fixed"))
        rec["claims"] = _claims_json(built.claims)
        rec["error_bound"] = None if built.error_bound is None else str(built.error_bound)
        rec["information"] = information_bound(model, ds, point["params"])
        task = point["task"]
        if task == "quant-float":
            rec["result"] = run_quant(point, built, "float", log)
        elif task == "quant-fixed":
            rec["result"] = run_quant(point, built, "fixed", log)
        elif task == "arith":
            rec["result"] = run_arith(point, built, log)
        else:
            raise SweepError(f"unknown task {task!r}")
        rec["status"] = "done"
    except (ProofFileError, DataError, ModelError, InputError, SweepError, KeyError, TypeError, ValueError) as e:
        rec["status"] = "error"
        rec["error"] = f"{type(e).__name__}: {e}"
    rec["versions"] = versions()
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec
