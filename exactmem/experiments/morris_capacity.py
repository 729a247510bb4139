"""``morris-capacity``: Morris et al. 2025's capacity experiment, re-run on a CPU and certified.

Morris et al., "How much do language models memorize?", Fig. 1, Fig. 6 and Table 1 (issue 36, build
item 2; ``docs/capacity.md``).

Morris et al. train GPT-2 models on uniformly random token sequences and measure, per model and
dataset size N, the bits the model memorized: the data's entropy N·S·log₂V minus the model's code
length for the data, −Σ log₂ p(token | prefix) (their Definition 3 with the model as the reference).
Memorized bits grow with N until the model's capacity, then plateau (their Fig. 1); capacity grows
linearly with the parameters, about 3.6 bits per parameter (their Fig. 6; 3.83 in float32, 3.51 in
bfloat16). Their code length comes from float likelihoods.

Here every trained network (`exactmem.experiments.morris_train`: ``transformers.GPT2LMHeadModel``,
sizes of `FULL`, vocabulary `VOCAB` and length `SEQ_LEN` unless the plan's ``data`` gives a model its own
(`model_data`; Morris et al.'s Table 1 row, V = 2048 and S = 64), a BOS token prepended so every token is
predicted) goes through ``exactmem.memorized_bits`` (`exactmem.verify.codelength`): PyTorch's
exporter, every stored float32 weight taken exactly, −log₂ p of every token of every sequence
enclosed in certified interval arithmetic, the coder's +2 bits added. That gives a **certified lower
bound** on the memorized bits of the real-number network of the stored weights, next to the float
estimate (onnxruntime's float32 log-probabilities of the same exported network). Each network is
measured twice: with its float32 weights and with every weight rounded to bfloat16 by torch (the
real network of the bf16-stored weights). Each certificate is written and re-checked by
``python -m exactmem check`` in a fresh process; its verdict is recorded in the row.

Capacity per (model, weights, seed) = the maximum memorized bits over N; α = capacity/parameters
fitted through the origin by least squares over the (model, seed) points, with its standard
error (`fit_through_origin`) — certified and float side by side. The docs section and the two
figures are generated from the JSON by `exactmem.experiments.morris_page`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional, Tuple

from .base import Experiment, ExperimentError, Record, RunConfig, require_torch

VOCAB = 64  # token values 0..63 (6 bits each); the BOS token is id 64
SEQ_LEN = 16  # S tokens per sequence, all predicted (position all)
WEIGHTS = ("float32", "bfloat16")

# Morris et al. 2025, Table 1 (GPT-2 style, V = 2048, S = 64): (layers, width, parameters, capacity in bits)
MORRIS_TABLE1 = [
    {"layers": 1, "width": 32, "params": 8.04e4, "capacity_bits": 3.39e5},
]
MORRIS_ALPHA = {"overall": 3.6, "float32": 3.83, "bfloat16": 3.51}

# model sizes (name, layers, width, heads); dataset sizes N per model bracket its capacity. L1-d32 was piloted
# on one thread (issue 36): 1.83 bits/param at N = 512 (lr 5e-3, 2,000 steps), 1.92 at N = 1,024 (lr 1e-2,
# 1,500 steps, 124 s), so its capacity sits near N ≈ 300; L2-d32 (28,064 parameters) reached 1.93 bits/param
# at N = 640 with 1,000 steps of lr 1e-2 (docs/capacity.md § Larger models), L2-d48 (60,528) 2.11 at N = 1,600
# with the same schedule (0.51 s per full-batch step).
# L1-d32-V2048 is Morris et al.'s Table 1 row itself (1 layer, width 32, V = 2048, S = 64: 80,384 parameters,
# theirs 8.04·10⁴): piloted at N = 480, 600 full-batch steps of lr 1e-2 reached 2.42 bits/param in 653 s.
# L2-d64 (105,280 parameters) takes 1.0–1.2 s per step at N ≥ 2,400 (32,768-token minibatches above N = 2,048);
# N was chosen for ~2.2 bits/param (capacity near N ≈ 2,400); it reached 1.94 at N = 4,800, still rising.
FULL: Dict[str, Any] = {
    "models": [("L1-d6", 1, 6, 1), ("L1-d8", 1, 8, 1), ("L2-d10", 2, 10, 1), ("L1-d16", 1, 16, 1),
               ("L1-d32", 1, 32, 1), ("L2-d32", 2, 32, 1), ("L2-d48", 2, 48, 1), ("L1-d32-V2048", 1, 32, 1),
               ("L2-d64", 2, 64, 1)],
    "N": {"L1-d6": [5, 10, 20, 40], "L1-d8": [8, 16, 32, 64], "L2-d10": [18, 36, 72, 144],
          "L1-d16": [24, 48, 96, 192], "L1-d32": [96, 192, 384, 768], "L2-d32": [160, 320, 640, 1280],
          "L2-d48": [400, 800, 1600, 3200], "L1-d32-V2048": [120, 240, 480, 960],
          "L2-d64": [600, 1200, 2400, 4800]},
    "steps": {"L1-d6": 2500, "L1-d8": 2500, "L2-d10": 2500, "L1-d16": 2500, "L1-d32": 1500, "L2-d32": 1000,
              "L2-d48": 1000, "L1-d32-V2048": 600, "L2-d64": 1000},
    "lr": {"L1-d6": 5e-3, "L1-d8": 5e-3, "L2-d10": 5e-3, "L1-d16": 5e-3, "L1-d32": 1e-2, "L2-d32": 1e-2,
           "L2-d48": 1e-2, "L1-d32-V2048": 1e-2, "L2-d64": 1e-2},
    "data": {"L1-d32-V2048": (2048, 64)},  # (V, S) of the models that do not use (VOCAB, SEQ_LEN)
    "seeds": 2,
    # (model, N, seed) the plan leaves out, named on the page. Empty: the Table 1 row's N = 960 seed 1 (61,440
    # tokens, ~25 min of training, ~12 min of verify on a shared core), once skipped for time, was run later.
    "skip": [],
}
QUICK: Dict[str, Any] = {
    "models": [("L1-d4", 1, 4, 1), ("L1-d8", 1, 8, 1)],
    "N": {"L1-d4": [4, 16], "L1-d8": [4, 16]},
    "steps": {"L1-d4": 600, "L1-d8": 600},
    "lr": 1e-2,
    "seeds": 1,
}


def plan(quick: bool) -> Dict[str, Any]:
    return QUICK if quick else FULL


def select_models(P: Dict[str, Any], names: str) -> Dict[str, Any]:
    """Plan ``P`` cut to the comma-separated model ``names`` (``--models``; all when empty), in plan order."""
    want = [n.strip() for n in names.split(",") if n.strip()]
    if not want:
        return P
    known = [m[0] for m in P["models"]]
    unknown = [n for n in want if n not in known]
    if unknown:
        raise ExperimentError(f"--models: no model {', '.join(map(repr, unknown))} in this plan; it has "
                              f"{', '.join(known)}")
    return dict(P, models=[m for m in P["models"] if m[0] in want])


def model_data(P: Dict[str, Any], name: str) -> Tuple[int, int]:
    """(V, S) of model ``name``'s sequences: the plan's ``data`` entry, else (`VOCAB`, `SEQ_LEN`)."""
    V, S = (P.get("data") or {}).get(name, (VOCAB, SEQ_LEN))
    return int(V), int(S)


def dataset_bits(P: Dict[str, Any], name: str, N: int) -> int:
    """N·S·log₂V, the entropy of model ``name``'s N uniform sequences (V a power of two)."""
    V, S = model_data(P, name)
    return N * S * (V.bit_length() - 1)


def model_lr(P: Dict[str, Any], name: str) -> float:
    """The plan's learning rate for model ``name`` (one for all, or a dict by model)."""
    return P["lr"][name] if isinstance(P["lr"], dict) else P["lr"]


# ----------------------------------------------------------------------------- measurement


def _package_root() -> str:
    """The directory holding the ``exactmem`` package (this file is exactmem/experiments/morris_capacity.py)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# `check` of the certificates: the pure kernel, or --engine auto (the fast graph engine's float64 enclosures
# with proven rounding, then double-float midpoints, judged by the kernel; the kernel's own ladder for every
# example they leave) — the same verdicts, both sound. Measured on one thread (issue 36): on the L1-d32
# N = 512 certificate that verify's default engine writes (15,360 parameters, 512 sequences) auto took
# 16.5 s against the pure kernel's 132 s; on the small models the fast engine's start-up (its compiled
# kernels, ~25 s) dominates and the pure kernel is faster (L1-d6 N = 40: 3.4 s pure, 28 s auto). So auto
# from `AUTO_CHECK_WORK` parameter·sequences on, the pure kernel below.
AUTO_CHECK_WORK = 2_000_000
ARB_BELOW = 0.995  # re-measure with verify --engine arb when the fast engine's certified bits fall below this share


def check_engine(params: int, n_sequences: int) -> str:
    """The ``check --engine`` used for a certificate of a model of ``params`` parameters on
    ``n_sequences`` sequences (`AUTO_CHECK_WORK`)."""
    return "auto" if params * n_sequences >= AUTO_CHECK_WORK else "pure"


def check_cli(path: str, engine: str = "pure") -> Dict[str, Any]:
    """``python -m exactmem check PATH --json --engine ENGINE`` in a fresh process (this checkout's
    exactmem, no time limit): the kernel's verdict read from the written file, and the wall time."""
    env = dict(os.environ)
    env["PYTHONPATH"] = _package_root() + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "exactmem", "check", path, "--json", "--quiet", "--time-limit", "none",
                        "--engine", engine], capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    try:
        v = json.loads(p.stdout)
    except ValueError:
        return {"status": "ERROR", "message": (p.stderr or p.stdout).strip().splitlines()[-1:] or [""], "seconds": dt,
                "engine": engine}
    return {"status": v["status"], "message": v["message"], "seconds": dt, "engine": engine,
            "codelength_bits": (v.get("measured") or {}).get("codelength_bits")}


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def certify_bits(module, inputs, labels, dataset_bits: int, cert_dir: str, name: str, workers: int = 1,
                 check: Optional[Callable[[str], Dict[str, Any]]] = None) -> Dict[str, Any]:
    """The certified code length and memorized bits of the torch ``module`` on (inputs, labels),
    position all, with the labels' entropy ``dataset_bits`` (the model scores V + 1 classes, the
    data use V), its certificate written to ``cert_dir/name.verify.json`` and checked by ``check`` (default:
    `check_cli` with the engine `check_engine` picks for the module's size)."""
    from ..verify.run import memorized_bits
    from .certify_trained import _quiet_exporter

    _quiet_exporter()
    t0 = time.perf_counter()
    verify_engine, auto_bits = "auto", None
    try:
        res = memorized_bits(module, inputs, labels, out=cert_dir, name=name, source_bits=dataset_bits,
                             workers=workers, quiet=True)
        m = res.memorized
    except Exception as e:  # noqa: BLE001 — the fast engine's code length failed (e.g. a non-finite ball): arb below
        m, auto_bits = {"why": f"{type(e).__name__}: {e}"}, f"error: {type(e).__name__}: {e}"
    fl = m.get("float_memorized_bits")
    if m.get("memorized_bits") is None or (fl and float(Fraction(m["memorized_bits"])) < ARB_BELOW * fl):
        # A safety net. verify's fast engine used to keep an example's float64 enclosure once its verdict was
        # decided, however wide: on a 2-layer width-32 GPT-2 (issue 36) that added ~0.6 bits per token to the
        # code length (certified 0.88 of the float estimate at N = 640), and on another network of that size
        # its code length raised "ball is not finite". It now keeps a pass's code length only within
        # fastpath.CODE_WIDTH bits per prediction and hands a non-finite one to the next pass. The arb ladder
        # narrows every enclosure below 2^-40 bits (4× the time); the float ratio only picks which of two
        # sound certificates to keep (the arb one, written last under the same name).
        auto_bits = auto_bits or m["memorized_bits"]
        res = memorized_bits(module, inputs, labels, out=cert_dir, name=name, source_bits=dataset_bits,
                             workers=workers, quiet=True, engine="arb")
        m, verify_engine = res.memorized, "arb"
        if m.get("memorized_bits") is None:
            raise RuntimeError(f"{name}: the code length is not enclosed by the arb ladder ({m.get('why')})")
    t_verify = time.perf_counter() - t0
    if check is None:
        engine = check_engine(int(m["n_params"]), len(inputs))
        check = lambda path: check_cli(path, engine)  # noqa: E731
    chk = check(res.certificate)
    if chk.get("codelength_bits") is not None and Fraction(chk["codelength_bits"]) != Fraction(m["codelength_bits"]):
        chk["status"] += " (measured code length differs from the claim)"
    return {"certified_memorized_bits": float(Fraction(m["memorized_bits"])), "memorized_bits_exact": m["memorized_bits"],
            "codelength_bits": m["codelength_bits"], "codelength_lower": m["codelength_lower"],
            "float_memorized_bits": m.get("float_memorized_bits"),
            "float_codelength_bits": m.get("float_codelength_bits"), "n_params": m["n_params"],
            "unknown_examples": res.unknown,
            "precision_bits": max(res.bits) if res.bits else None, "verify_s": round(t_verify, 1),
            "check": chk["status"], "check_message": chk.get("message"), "check_s": round(chk["seconds"], 1),
            "check_engine": chk.get("engine"), "verify_engine": verify_engine,
            "auto_memorized_bits_exact": auto_bits,
            "certificate": os.path.basename(res.certificate), "certificate_sha256": sha256(res.certificate),
            "certificate_bytes": os.path.getsize(res.certificate)}


# ----------------------------------------------------------------------------- capacity and fit


def fit_through_origin(xs: List[float], ys: List[float]) -> Dict[str, Any]:
    """Least squares y = α·x through the origin: α = Σxy/Σx², its standard error
    sqrt(Σ(y − αx)² / (n − 1) / Σx²) (None for one point), and n."""
    sxx = sum(x * x for x in xs)
    a = sum(x * y for x, y in zip(xs, ys)) / sxx
    n = len(xs)
    se = math.sqrt(sum((y - a * x) ** 2 for x, y in zip(xs, ys)) / (n - 1) / sxx) if n > 1 else None
    return {"alpha": a, "se": se, "n": n}


def capacities(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per (model, weights, seed): the maximum over N of certified and float memorized bits, and the N
    at which each is reached."""
    out: Dict[Tuple[str, str, int], Dict[str, Any]] = {}
    for r in rows:
        k = (r["model"], r["weights"], r["seed"])
        c = out.setdefault(k, {"model": r["model"], "weights": r["weights"], "seed": r["seed"], "params": r["params"],
                               "certified": -math.inf, "float": -math.inf, "N_certified": None, "N_float": None})
        if r["certified_memorized_bits"] > c["certified"]:
            c["certified"], c["N_certified"] = r["certified_memorized_bits"], r["N"]
        if r["float_memorized_bits"] > c["float"]:
            c["float"], c["N_float"] = r["float_memorized_bits"], r["N"]
    return list(out.values())


def summarize(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Capacities, the α fits (certified and float, per weight format) and the 99 % criterion."""
    caps = capacities(rows)
    fits = {}
    for w in WEIGHTS:
        cs = [c for c in caps if c["weights"] == w]
        if cs:
            fits[w] = {kind: fit_through_origin([c["params"] for c in cs], [c[kind] for c in cs])
                       for kind in ("certified", "float")}
    ratios = [r["certified_over_float"] for r in rows if r.get("certified_over_float") is not None]
    below = [{k: r[k] for k in ("model", "N", "seed", "weights", "certified_over_float")} for r in rows
             if r.get("certified_over_float") is None or r["certified_over_float"] < 0.99]
    return {"capacities": caps, "fit": fits, "min_certified_over_float": min(ratios) if ratios else None,
            "rows_below_99_percent": below, "checks": sorted({r["check"] for r in rows}),
            "morris_alpha": MORRIS_ALPHA, "morris_table1": MORRIS_TABLE1}


# ----------------------------------------------------------------------------- the run


def network_times(rows: List[Dict[str, Any]]) -> Dict[str, float]:
    """Training, certified measurement and ``check`` seconds summed over the rows (training once per
    (model, N, seed): its float32 row), whether measured in this run or kept by ``--resume``."""
    return {"train_s": round(sum(r["train_s"] for r in rows if r["weights"] == "float32"), 1),
            "verify_s": round(sum(r["verify_s"] for r in rows), 1),
            "check_s": round(sum(r["check_s"] for r in rows), 1)}


def _loss_flat(curve: List[Tuple[int, float]]) -> Optional[float]:
    """Relative change of the training loss over the last quarter of the steps (float; the plateau test)."""
    if len(curve) < 2:
        return None
    last_step = curve[-1][0]
    ref = next((l for s, l in curve if s >= 0.75 * last_step), curve[-2][1])
    return round((ref - curve[-1][1]) / max(ref, 1e-12), 4)


PARTIAL = "morris-capacity.rows.partial.json"  # the rows so far, rewritten after every row


def _key(r: Dict[str, Any]) -> Tuple[str, int, int, str]:
    return (r["model"], r["N"], r["seed"], r["weights"])


def resumable_rows(out: str, P: Dict[str, Any], seeds: List[int]) -> Dict[Tuple[str, int, int, str], Dict[str, Any]]:
    """The rows an earlier run left in ``out`` (`PARTIAL`, else its ``morris-capacity.json``) that this run
    can keep instead of training again (``--resume``): a (model, N, seed) of the plan ``P`` with the same
    layers, width, heads, steps, learning rate and dataset bits, checked CERTIFIED, whose certificate is
    in ``out/certs`` with the SHA-256 the row records — and only when every weight format of that
    (model, N, seed) qualifies (the float32 and bfloat16 rows come from one training)."""
    rows: List[Dict[str, Any]] = []
    for name in (PARTIAL, "morris-capacity.json"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                js = json.load(fh)
            rows = js if isinstance(js, list) else js.get("rows", [])
            break
    shape = {name: (L, d, H) for name, L, d, H in P["models"]}
    ok: Dict[Tuple[str, int, int, str], Dict[str, Any]] = {}
    for r in rows:
        name = r.get("model")
        if name not in shape or r.get("N") not in P["N"][name] or r.get("seed") not in seeds or \
                r.get("weights") not in WEIGHTS:
            continue
        if (r.get("layers"), r.get("width"), r.get("heads")) != shape[name] or r.get("steps") != P["steps"][name] or \
                r.get("lr") != model_lr(P, name) or r.get("dataset_bits") != dataset_bits(P, name, r["N"]):
            continue
        cert = os.path.join(out, "certs", r.get("certificate") or "")
        if r.get("check") != "CERTIFIED" or not os.path.isfile(cert) or sha256(cert) != r.get("certificate_sha256"):
            continue
        ok[_key(r)] = r
    whole = {k[:3] for k in ok if all(k[:3] + (w,) in ok for w in WEIGHTS)}
    return {k: r for k, r in ok.items() if k[:3] in whole}


def run(config: RunConfig, record: Record) -> None:
    torch = require_torch()
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ExperimentError("morris-capacity trains transformers' GPT2LMHeadModel: pip install transformers") from None
    from . import morris_train as mt

    torch.set_num_threads(1)
    P = select_models(plan(config.quick), getattr(config, "models", ""))
    seeds = [config.seed + k for k in range(getattr(config, "seeds", 0) or P["seeds"])]
    cert_dir = os.path.join(config.out, "certs")
    os.makedirs(cert_dir, exist_ok=True)
    own = "; ".join(f"{k}: V = {v[0]}, S = {v[1]}" for k, v in (P.get("data") or {}).items())
    record.note(f"data: N sequences of S = {SEQ_LEN} tokens uniform over V = {VOCAB}" + (f" ({own})" if own else "")
                + " (numpy, seeded by (seed, N, V, S)); BOS = token V prepended; every token predicted (position all); "
                "dataset bits = N·S·log2 V, exact.")
    record.note("model: transformers GPT2LMHeadModel, default GPT2Config except n_layer, n_embd, n_head, vocab_size = V + 1, "
                "n_positions = S, and dropout 0; output layer tied to the token embedding; params = trainable parameters.")
    lrs = P["lr"] if isinstance(P["lr"], dict) else {name: P["lr"] for name, *_ in P["models"]}
    record.note(f"training: AdamW (betas 0.9/0.999, weight decay 0), lr ({', '.join(f'{k}: {v:g}' for k, v in lrs.items())}) with a 5 % linear warm-up then cosine decay to 0, full batch, "
                f"fixed steps per model ({', '.join(f'{k}: {v}' for k, v in P['steps'].items())}); one torch thread, CPU.")
    record.note("measurement: exactmem.memorized_bits (torch.onnx.export, float32 weights exact, -log2 p enclosed per token, "
                "code length = sum of upper ends + 2 coder bits); float = onnxruntime float32 log-probabilities of the same "
                "exported network; bfloat16 = every weight rounded by torch to bfloat16, stored in float32, then measured.")
    kept = resumable_rows(config.out, P, seeds) if getattr(config, "resume", False) else {}
    if kept:
        record.log(f"resuming: {len(kept)} rows of an earlier run in {config.out} kept (certificates unchanged)")
    skip = {tuple(k) for k in P.get("skip", ())}  # (model, N, seed) the plan leaves out
    for name, L, d, H in P["models"]:
        for N in P["N"][name]:
            for seed in seeds:
                if (name, N, seed) in skip:
                    continue
                if all((name, N, seed, w) in kept for w in WEIGHTS):
                    for w in WEIGHTS:
                        record.rows.append(kept[(name, N, seed, w)])
                    continue
                V, S = model_data(P, name)
                inputs, labels = mt.random_sequences(N, V, S, seed)
                dbits = dataset_bits(P, name, N)
                model = mt.make_model(L, d, H, V, S, seed)
                params = mt.n_params(model)
                steps, lr = P["steps"][name], model_lr(P, name)
                tr = mt.train(model, inputs, labels, steps, lr, seed, eval_every=max(1, steps // 20))
                torch_float = dbits - mt.float_bits(model, inputs, labels)
                record.log(f"{name} ({params} params) N={N} seed {seed}: {steps} steps in {tr.seconds:.0f} s, loss "
                           f"{tr.loss:.4f}; float memorized {torch_float:,.0f} of {dbits:,} bits")
                for w in WEIGHTS:
                    net = model if w == "float32" else mt.rounded_copy(model, w)
                    tag = f"{name}-N{N}-s{seed}-{w}"
                    m = certify_bits(net, inputs, labels, dbits, cert_dir, tag, config.workers)
                    fl = m["float_memorized_bits"]
                    ratio = m["certified_memorized_bits"] / fl if fl and fl > 0 else None
                    record.log(f"  {w}: certified >= {m['certified_memorized_bits']:,.1f} bits, float {fl:,.1f}"
                               + (f" (ratio {ratio:.5f})" if ratio is not None else "")
                               + f"; check {m['check']} ({m['verify_s']:.0f} s + {m['check_s']:.0f} s)")
                    record.row(model=name, layers=L, width=d, heads=H, vocab=V, seq_len=S, params=params, N=N,
                               seed=seed, weights=w,
                               dataset_bits=dbits, steps=steps, lr=lr, train_s=round(tr.seconds, 1),
                               final_loss=round(tr.loss, 5), loss_change_last_quarter=_loss_flat(tr.curve),
                               torch_float_memorized_bits=round(torch_float, 3) if w == "float32" else None,
                               certified_over_float=ratio, **m)
                    with open(os.path.join(config.out, PARTIAL), "w", encoding="utf-8") as fh:
                        json.dump(record.rows, fh)  # the rows so far: `resumable_rows` reads them after a stop
    record.timings.update(network_times(record.rows))
    record.summary["resumed_rows"] = len(kept)
    record.summary.update(summarize(record.rows))
    record.summary["plan"] = {"vocab": VOCAB, "seq_len": SEQ_LEN, "data": P.get("data") or {}, "models": P["models"],
                              "N": P["N"],
                              "steps": P["steps"], "lr": P["lr"], "seeds": seeds,
                              "full_batch_tokens": mt.FULL_BATCH_TOKENS, "skip": P.get("skip", [])}
    from . import morris_page

    for fig, tag in morris_page.figures(record.as_dict()):
        record.figure(fig, tag)


EXPERIMENT = Experiment(
    name="morris-capacity",
    title="memorized bits of GPT-2 models on random sequences: certified lower bound vs float estimate, capacity fit",
    source="Morris et al. 2025, 'How much do language models memorize?', Fig. 1, Fig. 6, Table 1",
    run=run,
    quick_minutes=5.0,
    resumable=True,
)
