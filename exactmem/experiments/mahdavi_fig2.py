"""``mahdavi-fig2`` — Mahdavi, Liao & Thrampoulidis (ICLR 2024), §5 and Figure 2, re-run and certified.

Figure 2 of the paper ("memorization increases linearly with H, monotonically with n, and
monotonically with d_h as long as d_h ≤ n", note ``papers/mahdavi.md`` §3.1, §5) trains the
``BaselineAttention`` model on synthetic shared-context classification data (d = 64, 100
classes) and counts memorized examples by float training accuracy. Here each trained
network goes through ``exactmem verify`` (`exactmem.experiments.certify_trained.verify_examples`:
exported by ``torch.onnx.export``, its float32 weights taken exactly, softmax enclosed in
certified balls; every example's claimed verdict — pass, fail or unknown — re-derived by the
kernel), next to the float count and the construction's H(min(n, d_h) − 1) + 1 (docs/mahdavi.md).

Three sweeps (sizes reduced from the paper's, see ``docs/experiments/mahdavi-fig2.md``):
memorized count against H, against n and against d_h. For every configuration a ladder of
dataset sizes T = ⌈B·f^k⌉ (B the theorem's count) is trained until float training accuracy
drops below 100 %; the **largest T certified to be memorized entirely** is the largest rung
whose every example is CERTIFIED. Certification is spent where it decides something: the
first rung that fails in float (its certified count is the memorized count past capacity)
and the float-perfect rungs from the largest down until one is certified entirely.
"""

from __future__ import annotations

import math
import time
from typing import Any, Dict, List, Tuple

from .base import Experiment, Record, RunConfig, require_torch

D, C = 64, 100  # the paper's input dimension and number of classes (note §5.1)

FULL = {
    "heads": {"H": [1, 2, 4, 8], "n": 8, "dh": 8},
    "context": {"H": 4, "n": [1, 2, 4, 8, 16], "dh": "n"},
    "head_dim": {"H": 4, "n": 8, "dh": [1, 2, 4, 8, 16]},
    "min_steps": 6000, "factor": 1.5, "max_T": 1000, "eval_every": 250,
    # rungs with T ≤ B that fail in float are a training failure (the construction memorizes B
    # examples with these H, n, d_h): retrained with these (learning rate, initialisation seed)
    # restarts, the best float accuracy kept
    "restarts": [(3e-4, 0), (3e-3, 0), (1e-2, 0), (1e-3, 1), (3e-3, 1), (1e-3, 2), (3e-3, 2), (1e-3, 3)],
}
QUICK = {
    "heads": {"H": [1, 2, 4], "n": 4, "dh": 4},
    "context": {"H": 2, "n": [1, 2, 4, 8], "dh": "n"},
    "head_dim": {"H": 2, "n": 4, "dh": [1, 2, 4, 8]},
    "min_steps": 1500, "factor": 2.0, "max_T": 300, "eval_every": 250,
    "restarts": [(3e-3, 0), (1e-3, 1)],
}


def bound(H: int, n: int, dh: int) -> int:
    """The construction's count H(min(n, d_h) − 1) + 1 (docs/mahdavi.md, note §3.1)."""
    return H * (min(n, dh) - 1) + 1


def configurations(P: Dict[str, Any]) -> List[Tuple[str, int, int, int]]:
    """(sweep, H, n, d_h) of the three panels of Fig. 2."""
    out = []
    s = P["heads"]
    out += [("heads", H, s["n"], s["dh"]) for H in s["H"]]
    s = P["context"]
    out += [("context", s["H"], n, n if s["dh"] == "n" else s["dh"]) for n in s["n"]]
    s = P["head_dim"]
    out += [("head_dim", s["H"], s["n"], dh) for dh in s["dh"]]
    return out


def ladder(B: int, factor: float, max_T: int) -> List[int]:
    """T = ⌈B·factor^k⌉ (strictly increasing) up to ``max_T``."""
    out: List[int] = []
    x = float(B)
    while True:
        T = max(1, math.ceil(x - 1e-9))
        if T > max_T:
            return out or [max_T]
        if not out or T > out[-1]:
            out.append(T)
        x *= factor
        if out and x < out[-1] + 1:
            x = out[-1] + 1
    return out


class Rung:
    """One trained network (H, n, d_h, T): float metrics, and verdicts once certified."""

    def __init__(self, H, n, dh, T, seed, P, record: Record):
        from . import mahdavi_train as mt

        self.H, self.n, self.dh, self.T = H, n, dh, T
        self.data = mt.synthetic_data(T, n, D, C, seed=42 + seed, shared=True)
        steps = max(math.ceil(500 * T / 256), P["min_steps"])
        self.attempts: List[Dict[str, Any]] = []
        plan = [(1e-3, seed)]  # the paper's recipe first
        if T <= bound(H, n, dh):  # below the construction's count a float failure is a training failure
            plan += [(lr, seed + k) for lr, k in P.get("restarts", [])]
        best = None
        for lr, init in plan:
            module = mt.make_model(D, n, H, dh, C, init)
            tr = mt.train(module, self.data, steps, lr=lr, eval_every=P["eval_every"], seed=init)
            correct = mt.float_correct(module, self.data)
            self.attempts.append({"lr": lr, "init_seed": init, "steps": tr.steps, "loss": round(tr.loss, 5),
                                  "float_correct": sum(correct), "train_s": round(tr.seconds, 1)})
            if best is None or (sum(correct), -tr.loss) > (sum(best[2]), -best[1].loss):
                best = (module, tr, correct, lr, init)
            if sum(correct) == T:
                break
            if len(plan) > 1:
                record.log(f"H={H} n={n} d_h={dh} T={T}: restart lr={lr:g} init {init}: float acc "
                           f"{sum(correct)}/{T} ({tr.seconds:.0f} s)")
        self.module, self.train, self.correct, self.lr, self.init_seed = best
        self.train_s_total = sum(a["train_s"] for a in self.attempts)
        self.o_groups = mt.head_output_groups(self.module, self.data) if H == 1 else None
        self.margins = mt.float_margins(self.module, self.data)
        att = self.module.attention(mt.exact_inputs_tensor(self.data))
        self.saturated = float((att.max(-1).values > 0.99).float().mean())  # note §5.4, float
        self.verdicts = None
        self.cert_s = None
        record.log(f"H={H} n={n} d_h={dh} T={T}: {self.train.steps} steps, float acc {self.float_correct}/{T} "
                   f"({self.train.seconds:.0f} s)")

    @property
    def float_correct(self) -> int:
        return sum(self.correct)

    @property
    def float_perfect(self) -> bool:
        return self.float_correct == self.T

    def certify(self, config: RunConfig, record: Record):
        from . import mahdavi_train as mt
        from .certify_trained import verify_examples

        t0 = time.perf_counter()
        self.verdicts = verify_examples(mt.export_module(self.module), self.data.sequences(), self.data.labels,
                                        workers=config.workers,
                                        name=f"mahdavi-H{self.H}-n{self.n}-dh{self.dh}-T{self.T}")
        self.cert_s = time.perf_counter() - t0
        v = self.verdicts
        record.log(f"  certified {v.certified}/{self.T} (refuted {v.refuted}, unknown {v.unknown}; checker "
                   f"{v.checker_status}) in {self.cert_s:.0f} s")

    def gap(self) -> List[Dict[str, Any]]:
        """Examples whose float prediction is right but whose verdict is REFUTED or UNKNOWN."""
        if self.verdicts is None:
            return []
        return [{"H": self.H, "n": self.n, "d_h": self.dh, "T": self.T, "example": t, "verdict": v,
                 "float_margin": self.margins[t]}
                for t, (v, ok) in enumerate(zip(self.verdicts.verdicts, self.correct)) if ok and v != "certified"]


def run_ladder(H, n, dh, P, config: RunConfig, record: Record) -> List[Rung]:
    """Train rungs until float accuracy < 100 %, then certify where it decides something."""
    B = bound(H, n, dh)
    rungs: List[Rung] = []
    for T in ladder(B, P["factor"], P["max_T"]):
        r = Rung(H, n, dh, T, config.seed, P, record)
        rungs.append(r)
        if not r.float_perfect:
            break
    T = rungs[0].T
    while not rungs[0].float_perfect and T > 1:  # below the first rung: halve until float-perfect
        T = (T + 1) // 2 if T > 2 else 1
        rungs.insert(0, Rung(H, n, dh, T, config.seed, P, record))
    fail = [r for r in rungs if not r.float_perfect][-1:]  # the first rung failing from above
    for r in fail:
        r.certify(config, record)
    for r in reversed([r for r in rungs if r.float_perfect]):
        r.certify(config, record)
        if r.verdicts.certified == r.T:
            break
    return rungs


def _summarise(rungs: List[Rung]) -> Dict[str, Any]:
    perfect = [r.T for r in rungs if r.float_perfect]
    full = [r.T for r in rungs if r.verdicts is not None and r.verdicts.certified == r.T]
    certified = [r.verdicts.certified for r in rungs if r.verdicts is not None]
    return {"largest_T_float_perfect": max(perfect) if perfect else 0,
            "largest_T_certified_all": max(full) if full else 0,
            "memorized_float": max(r.float_correct for r in rungs),
            "memorized_certified": max(certified) if certified else 0}


def run(config: RunConfig, record: Record) -> None:
    torch = require_torch()
    torch.set_num_threads(1)
    torch.manual_seed(config.seed)
    P = QUICK if config.quick else FULL
    record.note("Mahdavi et al. Fig. 2 set-up (note §5): shared context, d = 64, 100 classes, U[0,1] data (float32), "
                "BaselineAttention (embedding, sinusoidal positions, H softmax heads with d_v = 1, readout at the query), "
                "Adam lr 1e-3, batch 256, warm-up + cosine, early stop at 100 % training accuracy.")
    record.note(f"reduced sizes: n, d_h, H and T below the paper's (n = 32, d_h = 64, H up to 60, T up to 40k); "
                f"min training steps {P['min_steps']} (paper 50,000); T ladder factor {P['factor']}.")
    record.note("sinusoidal positions are irrational: computed in float32 and imported exactly as rationals.")
    record.note("verdicts: exactmem verify (torch.onnx.export, float32 weights taken exactly, softmax in certified "
                "balls, 64 to 4096 bits); every claimed verdict (pass/fail/unknown) re-derived by the kernel; UNKNOWN = "
                "margin below the precision budget. Float accuracy is float32, labelled as float.")
    results: Dict[Tuple[int, int, int], List[Rung]] = {}
    gaps: List[Dict[str, Any]] = []
    per_sweep: Dict[str, List[Dict[str, Any]]] = {}
    for sweep, H, n, dh in configurations(P):
        key = (H, n, dh)
        if key not in results:
            results[key] = run_ladder(H, n, dh, P, config, record)
            for r in results[key]:
                gaps += r.gap()
        rungs = results[key]
        s = _summarise(rungs)
        per_sweep.setdefault(sweep, []).append({"H": H, "n": n, "d_h": dh, "bound": bound(H, n, dh), **s})
        for r in rungs:
            v = r.verdicts
            record.row(sweep=sweep, H=H, n=n, d_h=dh, T=r.T, bound=bound(H, n, dh), steps=r.train.steps,
                       train_s=round(r.train.seconds, 1), attempts=len(r.attempts), lr=r.lr,
                       init_seed=r.init_seed, attempts_detail=r.attempts if len(r.attempts) > 1 else None,
                       head_output_groups_float=r.o_groups, float_loss=round(r.train.loss, 5),
                       float_correct=r.float_correct, float_acc=round(r.float_correct / r.T, 4),
                       saturated_head_fraction_float=round(r.saturated, 4),
                       certified=None if v is None else v.certified, refuted=None if v is None else v.refuted,
                       unknown=None if v is None else v.unknown,
                       checker=None if v is None else v.checker_status,
                       cert_s=None if r.cert_s is None else round(r.cert_s, 1),
                       float_right_not_certified=None if v is None else len(r.gap()))
    record.summary["sweeps"] = per_sweep
    record.summary["largest_T_certified_all_per_H"] = {str(e["H"]): e["largest_T_certified_all"]
                                                       for e in per_sweep.get("heads", [])}
    record.summary["float_right_but_not_certified"] = gaps
    record.summary["float_right_but_not_certified_count"] = len(gaps)
    _figure(per_sweep, record)


def _figure(per_sweep: Dict[str, List[Dict[str, Any]]], record: Record) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("heads", "H", "number of heads H"), ("context", "n", "context size n (d_h = n)"),
              ("head_dim", "d_h", "head dimension d_h")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (sweep, key, label) in zip(axes, panels):
        rows = per_sweep.get(sweep, [])
        if not rows:
            continue
        x = [r[key] for r in rows]
        ax.plot(x, [r["memorized_float"] for r in rows], "o-", label="memorized (float32 argmax, best rung)")
        ax.plot(x, [r["memorized_certified"] for r in rows], "s--", label="memorized (certified, best rung)")
        ax.plot(x, [r["largest_T_certified_all"] for r in rows], "^:", label="largest T certified entirely")
        ax.plot(x, [r["bound"] for r in rows], "k-", lw=1, label="H(min(n, d_h) - 1) + 1")
        fixed = {"heads": f"n = {rows[0]['n']}, d_h = {rows[0]['d_h']}", "context": f"H = {rows[0]['H']}",
                 "head_dim": f"H = {rows[0]['H']}, n = {rows[0]['n']}"}[sweep]
        ax.set_title(f"vs {key} ({fixed})", fontsize=10)
        ax.set_xlabel(label)
        ax.set_ylabel("examples")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Mahdavi et al. Fig. 2 (shared context, d = 64, 100 classes), trained and certified", fontsize=11)
    record.figure(fig, "memorized")


EXPERIMENT = Experiment(
    name="mahdavi-fig2",
    title="memorized count vs H, n, d_h: float accuracy vs certified verdicts vs H(min(n, d_h) - 1) + 1",
    source="Mahdavi et al. ICLR 2024, §5 and Fig. 2 (as summarised in docs/mahdavi.md: full text unavailable)",
    run=run,
    quick_minutes=10.0,
)


# ----------------------------------------------------------------------------- the docs page's tables

PAGE_BEGIN = "<!-- tables generated from docs/img/experiments/mahdavi-fig2.json by mahdavi_fig2.page_tables: begin -->"
PAGE_END = "<!-- tables generated: end -->"


def page_tables(js: Dict[str, Any]) -> str:
    """The results tables of ``docs/experiments/mahdavi-fig2.md`` from the run's JSON (embedded
    verbatim in the page; ``tests/test_experiments_mahdavi.py`` checks it)."""
    S = js["summary"]
    out = ["Summary per configuration (`summary.sweeps`). B = H(min(n, d_h) − 1) + 1. \"Largest T\" is the largest "
           "rung of the ladder; \"memorized\" the most examples right in one rung (float32 argmax / CERTIFIED verdicts).",
           "",
           "| sweep | H | n | d_h | B | largest T, float 100 % | **largest T, every example CERTIFIED** | "
           "memorized, float | memorized, certified |",
           "|---|---|---|---|---|---|---|---|---|"]
    for sweep, rows in S["sweeps"].items():
        for e in rows:
            out.append(f"| {sweep} | {e['H']} | {e['n']} | {e['d_h']} | {e['bound']} | {e['largest_T_float_perfect']} | "
                       f"**{e['largest_T_certified_all']}** | {e['memorized_float']} | {e['memorized_certified']} |")
    per_h = ", ".join(f"H = {h}: T = {t}" for h, t in S["largest_T_certified_all_per_H"].items())
    out += ["", f"**Largest T certified to be memorized entirely, per H** (heads sweep): {per_h}.", "",
            "Certified rungs (all rows, with training steps and times, are in `mahdavi-fig2.csv`):", "",
            "| sweep | H | n | d_h | T | attempts | steps | float correct | CERTIFIED | REFUTED | UNKNOWN | train (s) | "
            "certify (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in js["rows"]:
        if r.get("certified") is None:
            continue
        out.append(f"| {r['sweep']} | {r['H']} | {r['n']} | {r['d_h']} | {r['T']} | {r.get('attempts', 1)} | "
                   f"{r['steps']} | {r['float_correct']}/{r['T']} | {r['certified']} | {r['refuted']} | {r['unknown']} | "
                   f"{r['train_s']} | {r['cert_s']} |")
    rest = [r for r in js["rows"] if (r.get("attempts") or 1) > 1 and r["sweep"] == "heads"]
    if rest:
        out += ["", "Restarts of the rungs with T ≤ B that failed in float (heads sweep; every attempt, in order; "
                "the best float accuracy is kept; \"o groups\": distinct values of the single head's scalar output "
                "over the T examples, float32, merged within 10⁻³ of the largest |o|):", "",
                "| H | T | B | learning rate | init seed | steps | loss | float correct | train (s) |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in rest:
            for a in r["attempts_detail"]:
                out.append(f"| {r['H']} | {r['T']} | {r['bound']} | {a['lr']:g} | {a['init_seed']} | {a['steps']} | "
                           f"{a['loss']} | {a['float_correct']}/{r['T']} | {a['train_s']} |")
        groups = [(r["T"], r["head_output_groups_float"]) for r in js["rows"]
                  if r["sweep"] == "heads" and r["H"] == 1 and r.get("head_output_groups_float") is not None]
        out += ["", "H = 1, kept network per rung: o groups " + ", ".join(f"T = {t}: {g}" for t, g in groups) + "."]
    out += ["", f"Run time: {js['timings']['total_s']:.0f} s wall ({js['timings']['total_s'] / 60:.0f} min), one thread."]
    return "\n".join(out) + "\n"


def page_block(js: Dict[str, Any]) -> str:
    return PAGE_BEGIN + "\n\n" + page_tables(js) + "\n" + PAGE_END
