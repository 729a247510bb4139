"""``kajitsuka-fig3`` — Kajitsuka & Sato (ICLR 2025), App. H, Fig. 3: the minimum #blocks that memorizes N sequences.

N sequences of n = 8 tokens; the minimum is decided twice, for two token maps and several seeds.

For every (token map, seed, N) the eq. (165) network (`exactmem.experiments.kajitsuka_train`:
E_in, #blocks eq.-(3) blocks, one uniform-attention layer, #blocks eq.-(3) blocks, E_out; m = 2,
q = 4m) is trained with AdamW, full batch, for at most 1000 epochs, for increasing #blocks. At
each #blocks an Optuna study of up to ten trials tunes the learning rate and the warm-up (App. H:
"the best-performing model was selected after running ten trials of hyperparameter tuning with
Optuna"); hopeless trials are pruned (Optuna's median rule on the training loss). The best trial
of each (N, #blocks) — and any other trial with every example right in float32 — is judged twice:

* the paper's float rule: training error (cross-entropy loss) below ε = 0.01 (App. H);
* exactmem's certificate: the network through ``exactmem verify`` (float32 weights taken
  exactly; uniform attention and ReLU keep the values exact, so no UNKNOWN), every example
  CERTIFIED — each claimed verdict, pass or fail, re-derived by the kernel.

Token maps (App. H does not say how tokens become vectors):

* ``table``: E_in on one-hot tokens, a trained V × 2 table (2V ≈ 1,900–2,900 parameters, more
  than the 84 per #blocks): the paper's N range;
* ``fixed``: E_in (2 × 16, trained) on fixed 16-dimensional token vectors, so the #blocks carry
  the capacity; a smaller N range, because this network does not memorize N = 600 within the
  grid (see `PILOTS`).

Search, per (map, seed): datasets of one seed are nested, so the search for N starts at the
smallest #blocks that memorized the previous N (by either rule) and walks up the map's grid; it
stops once both rules are met, or `CERT_EXTRA` grid step past the float rule's answer.
When neither rule is met at the grid's cap, larger N of that series are not tried.
Every reduction against App. H is listed in ``docs/experiments/kajitsuka-fig3.md`` ("Reductions").
"""

from __future__ import annotations

import time
from statistics import median
from typing import Any, Dict, List, Optional, Tuple

from ..errors import install_hint
from .base import Experiment, ExperimentError, Record, RunConfig, require_torch
from . import kajitsuka_train as K

# App. H Fig. 3, recovered from the figure (the plotted points' vector paths in the arXiv PDF): N -> min #blocks
PAPER = {600: 1, 700: 1, 800: 3, 900: 3, 1000: 4, 1100: 4, 1200: 5, 1300: 5, 1400: 5, 1500: 8, 1600: 10, 1700: 16}
CERT_EXTRA = 1  # grid steps searched past the float rule's answer for the certificate
LR_RANGE = (1e-3, 1e-1)  # Optuna: learning rate, log-uniform
WARMUP_RANGE = (0, 300)  # Optuna: warm-up epochs, integer
FIRST_TRIAL = {"lr": 3e-2, "warmup": 100}  # enqueued as trial 0 of every study: the best of the pilot runs

# Pilot runs made before the grid was chosen (seed 0, one trial each, 1000 epochs, one thread;
# /tmp scripts calling kajitsuka_train.train directly): (map, N, #blocks, lr, warm-up) -> (loss, float acc).
# They are written to the JSON (summary.pilots) so the choice of N ranges and grids can be checked.
PILOTS: List[Dict[str, Any]] = [
    {"map": "fixed", "N": 600, "blocks": 2, "lr": 3e-2, "warmup": 100, "loss": 0.86, "float_acc": 0.5667},
    {"map": "fixed", "N": 600, "blocks": 2, "lr": 1e-2, "warmup": 50, "loss": 0.8473, "float_acc": 0.585},
    {"map": "fixed", "N": 600, "blocks": 8, "lr": 3e-2, "warmup": 100, "loss": 0.8814, "float_acc": 0.5583},
    {"map": "fixed", "N": 600, "blocks": 8, "lr": 1e-2, "warmup": 50, "loss": 0.8676, "float_acc": 0.525},
    {"map": "fixed", "N": 50, "blocks": 1, "lr": 3e-2, "warmup": 100, "loss": 0.0098, "float_acc": 1.0},
    {"map": "fixed", "N": 50, "blocks": 1, "lr": 1e-2, "warmup": 50, "loss": 0.0092, "float_acc": 1.0},
    {"map": "fixed", "N": 50, "blocks": 8, "lr": 1e-2, "warmup": 50, "loss": 0.7676, "float_acc": 0.52},
    {"map": "fixed", "N": 50, "blocks": 16, "lr": 3e-2, "warmup": 100, "loss": 0.0079, "float_acc": 1.0},
    {"map": "fixed", "N": 100, "blocks": 1, "lr": 3e-2, "warmup": 100, "loss": 0.0747, "float_acc": 0.96},
    {"map": "fixed", "N": 100, "blocks": 2, "lr": 3e-2, "warmup": 100, "loss": 0.012, "float_acc": 1.0},
    {"map": "fixed", "N": 100, "blocks": 4, "lr": 3e-2, "warmup": 100, "loss": 0.5164, "float_acc": 0.78},
    {"map": "fixed", "N": 100, "blocks": 4, "lr": 1e-2, "warmup": 50, "loss": 0.0831, "float_acc": 0.99},
    {"map": "fixed", "N": 100, "blocks": 8, "lr": 3e-2, "warmup": 100, "loss": 0.1563, "float_acc": 0.93},
]
PILOT_SOURCE = ("seed 0; table map: the previous full run (one trial, lr 3e-2, warm-up 100, grid up to 16; "
                "git history of docs/img/experiments/kajitsuka-fig3.json); fixed map: the runs listed")


def settings(config: RunConfig) -> Dict[str, Any]:
    if config.quick:  # smaller N and grids, three trials; the same model, rules, tuning and search
        return {"seeds": [0, 1, 2], "trials": 3, "epochs": 1000, "construction": False, "budget_s": 600,
                "budget_cell_s": 120,
                "maps": {"table": {"Ns": [300, 600], "grid": [1, 2]},
                         "fixed": {"Ns": [50, 100], "grid": [1, 2]}}}
    # sized so that the whole run fits in ~70 min wall on one thread of a shared 2-core machine
    # guards (reported in the JSON as tried = "time budget"): no new N after budget_s, no new
    # (N, #blocks) cell after budget_s + budget_cell_s
    return {"seeds": [0, 1, 2], "trials": 10, "epochs": 1000, "construction": True, "budget_s": 3600,
            "budget_cell_s": 420,
            "maps": {"table": {"Ns": [600, 1000, 1400, 1700], "grid": [1, 2, 4, 8]},
                     "fixed": {"Ns": [50, 100, 200, 400], "grid": [1, 2, 4, 8]}}}


def require_optuna():
    """``optuna``, or a one-line error naming the ``experiments`` extra."""
    try:
        import optuna
    except ImportError:
        raise ExperimentError("kajitsuka-fig3 tunes learning rate and warm-up with Optuna (App. H): "
                              f"{install_hint('experiments')}") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def tune(data: K.TextData, blocks: int, onehot: bool, seed: int, s: Dict[str, Any], record: Record,
         tag: Dict[str, Any]) -> List[Tuple[K.TrainResult, Dict[str, Any]]]:
    """One Optuna study of up to ``s['trials']`` trials at this #blocks; stops at the first trial
    that meets the float rule. Returns every trial's result (pruned ones marked) with its row."""
    optuna = require_optuna()
    sampler = optuna.samplers.TPESampler(seed=seed * 1000 + blocks, n_startup_trials=4)
    pruner = optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=200, interval_steps=50)
    study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)
    study.enqueue_trial(dict(FIRST_TRIAL))
    results: List[Tuple[K.TrainResult, Dict[str, Any]]] = []

    def objective(trial):
        lr = trial.suggest_float("lr", *LR_RANGE, log=True)
        warm = trial.suggest_int("warmup", *WARMUP_RANGE)

        def report(epoch: int, loss: float) -> bool:
            trial.report(loss, epoch)
            return trial.should_prune()

        r = K.train(data, blocks, lr, warm, s["epochs"], seed=seed, log_every=10 ** 9, onehot=onehot,
                    report=report, report_every=50)
        row = record.row(**tag, blocks=blocks, trial=trial.number, lr=lr, warmup=warm,
                   state="pruned" if r.pruned else "complete", epochs=r.epochs_run, loss=round(r.loss, 6),
                   float_acc=round(r.float_acc, 6), float_memorized=r.float_memorized and not r.pruned,
                   train_s=round(r.seconds, 1))
        results.append((r, row))
        if r.pruned:
            raise optuna.TrialPruned()
        if r.float_memorized:
            study.stop()
        return min(r.loss, 1e6)

    study.optimize(objective, n_trials=s["trials"])
    return results


def judge(results: List[Tuple[K.TrainResult, Dict[str, Any]]], data: K.TextData, config: RunConfig, record: Record) -> Dict[str, Any]:
    """Certify the best completed trial (lowest loss) and any other completed trial with every
    example right in float32; the cell's verdict by each rule."""
    done = [(r, row) for r, row in results if not r.pruned]
    best, brow = min(done, key=lambda x: x[0].loss)
    todo = [(best, brow)] + [(r, row) for r, row in done if r is not best and r.float_acc == 1.0]
    out: Dict[str, Any] = {"float_ok": best.float_memorized, "cert_ok": False, "best": best, "judged": []}
    for r, row in todo:
        t0 = time.perf_counter()
        v = K.certify(r, data, workers=config.workers)
        g = K.gap(r, v)
        row.update(certified=v.certified, refuted=v.refuted, unknown=v.unknown, certified_all=v.certified == data.N,
                   float_right_not_certified=len(g), gap_examples=g[:20], checker=v.checker_status,
                   certify_s=round(time.perf_counter() - t0, 1))
        out["judged"].append({"lr": r.lr, "warmup": r.warmup, "loss": r.loss, "float_acc": r.float_acc,
                              "certified": v.certified, "refuted": v.refuted, "unknown": v.unknown})
        out["cert_ok"] = out["cert_ok"] or v.certified == data.N
        record.log(f"    lr={r.lr:.2e} warm-up {r.warmup}: loss {r.loss:.4f}, float acc {r.float_acc:.4f}, "
                   f"certified {v.certified}/{data.N}")
    return out


def search(data: K.TextData, onehot: bool, seed: int, grid: List[int], start: int, s: Dict[str, Any],
           config: RunConfig, record: Record, tag: Dict[str, Any],
           deadline: float = float("inf")) -> Tuple[Optional[int], Optional[int], List[Dict]]:
    """Minimum #blocks by the float rule and by the certificate for one dataset, from grid[start];
    no cell is started after ``deadline`` (time.perf_counter())."""
    fmin: Optional[int] = None
    cmin: Optional[int] = None
    cells: List[Dict[str, Any]] = []
    for i in range(start, len(grid)):
        b = grid[i]
        if fmin is not None and i > grid.index(fmin) + CERT_EXTRA:
            break
        if time.perf_counter() > deadline:
            cells.append({"blocks": b, "skipped": "time budget"})
            record.log(f"  {tag['map']} seed {seed} N={data.N} blocks={b}: not started (time budget)")
            break
        t0 = time.perf_counter()
        results = tune(data, b, onehot, seed, s, record, tag)
        j = judge(results, data, config, record)
        best = j["best"]
        cells.append({"blocks": b, "trials": len(results), "pruned": sum(r.pruned for r, _ in results),
                      "float_ok": j["float_ok"], "cert_ok": j["cert_ok"], "best_loss": round(best.loss, 6),
                      "best_float_acc": round(best.float_acc, 6), "best_lr": best.lr, "best_warmup": best.warmup,
                      "judged": j["judged"], "seconds": round(time.perf_counter() - t0, 1)})
        record.log(f"  {tag['map']} seed {seed} N={data.N} blocks={b}: {len(results)} trials "
                   f"({cells[-1]['pruned']} pruned), best loss {best.loss:.4f}, float rule "
                   f"{'met' if j['float_ok'] else 'not met'}, certificate {'met' if j['cert_ok'] else 'not met'} "
                   f"({cells[-1]['seconds']:.0f} s)")
        if j["float_ok"] and fmin is None:
            fmin = b
        if j["cert_ok"] and cmin is None:
            cmin = b
        if fmin is not None and cmin is not None:
            break
    return fmin, cmin, cells


def spread(values: List[Optional[int]], cap: int) -> Dict[str, Any]:
    """Per-seed values (None = not met within the grid, shown as "> cap"), median and range."""
    known = [v for v in values if v is not None]
    return {"per_seed": values, "all_met": len(known) == len(values) and bool(values),
            "median": median(known) if len(known) == len(values) and values else None,
            "min": min(known) if known else None, "max": max(known) if known else None, "cap": cap}


def run(config: RunConfig, record: Record) -> None:
    """Fig. 3 of Kajitsuka & Sato App. H, decided by the float rule and by the certificate."""
    torch = require_torch()
    require_optuna()
    torch.set_num_threads(1)
    s = settings(config)
    seeds = [config.seed + k for k in s["seeds"]]
    table: Dict[str, List[Dict[str, Any]]] = {}
    series: List[Dict[str, Any]] = []
    t_start = time.perf_counter()
    per_N: Dict[str, Dict[int, Dict[str, List[Any]]]] = {
        mname: {N: {"float": [], "cert": [], "tried": []} for N in m["Ns"]} for mname, m in s["maps"].items()}
    for seed in seeds:  # seed outermost: a run cut by the time budget loses whole seeds, not a map
        for mname, m in s["maps"].items():
            onehot = mname == "table"
            grid = list(m["grid"])
            start, stopped = 0, None
            for N in m["Ns"]:
                if stopped is None and time.perf_counter() - t_start > s["budget_s"]:
                    stopped = "time budget"
                if stopped is not None:
                    per_N[mname][N]["float"].append(None)
                    per_N[mname][N]["cert"].append(None)
                    per_N[mname][N]["tried"].append(stopped)
                    continue
                t0 = time.perf_counter()
                data = K.corpus_examples(N, seed)
                tag = {"map": mname, "seed": seed, "N": N}
                fmin, cmin, cells = search(data, onehot, seed, grid, start, s, config, record, tag,
                                           deadline=t_start + s["budget_s"] + s["budget_cell_s"])
                cut = any("skipped" in c for c in cells)
                found = [x for x in (fmin, cmin) if x is not None]
                if found:
                    start = grid.index(min(found))
                elif cut:
                    stopped = "time budget"
                else:
                    stopped = f"N = {N} not memorized up to #blocks {grid[-1]}"
                per_N[mname][N]["float"].append(fmin)
                per_N[mname][N]["cert"].append(cmin)
                per_N[mname][N]["tried"].append(f"cut by the time budget at #blocks {cells[-1]['blocks']}"
                                                if cut else "yes")
                series.append({"map": mname, "seed": seed, "N": N, "vocabulary": len(data.vectors),
                               "min_blocks_float": fmin, "min_blocks_certified": cmin, "cells": cells,
                               "seconds": round(time.perf_counter() - t0, 1)})
                record.log(f"{mname} seed {seed} N={N}: min #blocks float {fmin}, certified {cmin}"
                           + (f" (paper {PAPER[N]})" if onehot and N in PAPER else "")
                           + f" [{time.perf_counter() - t_start:.0f} s]")
    for mname, m in s["maps"].items():
        onehot = mname == "table"
        grid = list(m["grid"])
        rows = []
        for N in m["Ns"]:
            pn = per_N[mname][N]
            e = {"N": N, "float": spread(pn["float"], grid[-1]), "certified": spread(pn["cert"], grid[-1]),
                 "tried": pn["tried"], "paper_recovered_from_figure": PAPER.get(N) if onehot else None}
            e["params_at_median_certified"] = (K.n_params(int(e["certified"]["median"]),
                                                          d=_vocab(series, mname, N) if onehot else K.D_TOK)
                                               if e["certified"]["median"] is not None
                                               and float(e["certified"]["median"]).is_integer() else None)
            rows.append(e)
        table[mname] = rows
    if s["construction"]:
        for e in table["table"]:
            record.log(f"N={e['N']}: building Kajitsuka & Sato's construction on the same data (seed {seeds[0]})")
            e["construction_seed0"] = K.construction(K.corpus_examples(e["N"], seeds[0]), seed=seeds[0])
    record.summary["settings"] = {"seeds": seeds, "trials": s["trials"], "epochs": s["epochs"],
                                  "maps": s["maps"], "lr_range": list(LR_RANGE), "warmup_range": list(WARMUP_RANGE),
                                  "first_trial": FIRST_TRIAL, "cert_extra_steps": CERT_EXTRA,
                                  "sampler": "TPE (seeded, 4 random start-up trials)",
                                  "pruner": "median rule on the training loss every 50 epochs, "
                                            "after 2 complete trials and 200 epochs",
                                  "threads": 1, "budget_s": s["budget_s"],
                                  "budget_cell_s": s["budget_cell_s"]}
    record.summary["data"] = K.corpus_info()
    record.summary["pilots"] = {"source": PILOT_SOURCE, "runs": PILOTS}
    record.summary["table"] = table
    record.summary["series"] = series
    record.summary["fits"] = fits(table)
    record.summary["trained_networks"] = len(record.rows)
    record.summary["certified_networks"] = sum(1 for r in record.rows if r.get("certified") is not None)
    record.summary["float_right_not_certified"] = sum(r.get("float_right_not_certified") or 0 for r in record.rows)
    record.note("float rule = paper's: training cross-entropy < 0.01 (a loss below 0.01 still allows a few "
                "misclassified examples); certificate rule = every example CERTIFIED")
    record.note("a value None / '> cap' means: not met within the map's grid (or N not tried because a smaller N "
                "of the same seed was not memorized within the grid), not 'impossible'")
    _plot(record, table)


def _vocab(series: List[Dict[str, Any]], mname: str, N: int) -> int:
    v = [x["vocabulary"] for x in series if x["map"] == mname and x["N"] == N]
    return v[0] if v else 0


def fits(table: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Any]:
    """Exponent b of min #blocks ≈ a·N^b with its OLS standard error, pooled over the seeds, on
    the N where every seed met the rule; None when fewer than 3 points or 2 N remain, or the
    values do not vary."""
    out: Dict[str, Any] = {}
    for mname, rows in table.items():
        for rule in ("float", "certified"):
            pts = [(e["N"], v) for e in rows if e[rule]["all_met"] for v in e[rule]["per_seed"]]
            f = K.fit_power_se([p[0] for p in pts], [p[1] for p in pts]) if len({p[1] for p in pts}) > 1 else None
            out[f"{mname}/{rule}"] = ({"exponent": round(f[0], 3), "se": round(f[1], 3), "points": f[2],
                                       "Ns": sorted({p[0] for p in pts})} if f else
                                      {"exponent": None, "points": len(pts),
                                       "why": "fewer than 3 points, one N, or no variation in #blocks"})
    pp = [(N, b) for N, b in PAPER.items() if N <= 1400]
    f = K.fit_power_se([p[0] for p in pp], [p[1] for p in pp])
    out["paper_600_1400"] = {"exponent": round(f[0], 3), "se": round(f[1], 3), "points": f[2]}
    f = K.fit_power_se(list(PAPER), list(PAPER.values()))
    out["paper_all"] = {"exponent": round(f[0], 3), "se": round(f[1], 3), "points": f[2]}
    return out


def plot_from_json(path: str, out_dir: str) -> str:
    """Redraw ``kajitsuka-fig3-blocks.png`` from a run's JSON (no training)."""
    import json

    with open(path, encoding="utf-8") as fh:
        js = json.load(fh)
    rec = Record("kajitsuka-fig3", RunConfig(out=out_dir))
    rec.summary = js["summary"]
    _plot(rec, js["summary"]["table"])
    return rec.figures[-1]


def _plot(record: Record, table: Dict[str, List[Dict[str, Any]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(table), figsize=(5.5 * len(table), 4), squeeze=False)
    for ax, (mname, rows) in zip(axes[0], table.items()):
        cap = max(r["float"]["cap"] for r in rows)
        for k, (rule, lab, mk, col, dx) in enumerate((("float", "float rule (loss < 0.01)", "o", "C0", -0.012),
                                                      ("certified", "certified (all examples)", "s", "C3", 0.012))):
            xs, ys, over, oy = [], [], [], []
            seeds = record.summary.get("settings", {}).get("seeds", [])
            top = searched(record.summary) if "series" in record.summary else {}
            for e in rows:
                span = e["N"] * dx
                for j, (v, t) in enumerate(zip(e[rule]["per_seed"], e["tried"])):
                    x = e["N"] + span + j * abs(span) * 0.4
                    if v is not None:
                        xs.append(x)
                        ys.append(v)
                    elif t == "yes":
                        over.append(x)
                        oy.append(1.35 * top.get((mname, seeds[j] if j < len(seeds) else j, e["N"]), cap))
            ax.plot(xs, ys, mk, color=col, label=lab + ", one mark per seed", ms=6, mfc="none" if mk == "o" else col)
            if over:
                ax.plot(over, oy, "^", color=col, mfc="none", ms=6,
                        label=f"{rule}: not met up to the #blocks below the mark")
        if mname == "table":
            pp = sorted(PAPER.items())
            ax.plot(*zip(*pp), "x", color="k", label="paper Fig. 3 (recovered from the figure)")
        ax.set_yscale("log", base=2)
        ax.set_yticks([1, 2, 4, 8, 16])
        ax.set_yticklabels(["1", "2", "4", "8", "16"])
        ax.set_xlabel("dataset size N (n = 8)")
        ax.set_ylabel("min #blocks")
        ax.set_title({"table": "trained V×2 token table", "fixed": "fixed 16-dim token vectors"}.get(mname, mname))
        ax.legend(fontsize=7)
    fig.suptitle("Kajitsuka & Sato Fig. 3: min #blocks to memorize, ten Optuna trials per point")
    fig.tight_layout()
    record.figure(fig, "blocks")


EXPERIMENT = Experiment(
    name="kajitsuka-fig3",
    title="Kajitsuka & Sato Fig. 3: min #blocks to memorize N (float rule vs certificate; two token maps, 3 seeds)",
    source="Kajitsuka & Sato, ICLR 2025, App. H, eq. (165), Fig. 3; docs/kajitsuka.md note §7",
    run=run,
    quick_minutes=2.0,
)


# ----------------------------------------------------------------------------- the docs page's tables

PAGE_BEGIN = "<!-- tables generated from docs/img/experiments/kajitsuka-fig3.json by kajitsuka_fig3.page_tables: begin -->"
PAGE_END = "<!-- tables generated: end -->"


def searched(S: Dict[str, Any]) -> Dict[Tuple[str, int, int], int]:
    """(map, seed, N) -> the largest #blocks trained (the search stops one grid step past the
    float rule's answer, or at the grid's cap)."""
    out: Dict[Tuple[str, int, int], int] = {}
    for x in S["series"]:
        bs = [c["blocks"] for c in x["cells"] if "skipped" not in c]
        if bs:
            out[(x["map"], x["seed"], x["N"])] = max(bs)
    return out


def _cell(v: Optional[int], top: Optional[int], tried: str) -> str:
    if v is not None:
        return str(v)
    if tried == "yes":
        return f"> {top}"
    if tried.startswith("cut"):
        return "cut (time)"
    return "not tried"


def _rule_cols(e: Dict[str, Any], rule: str, tops: List[Optional[int]]) -> List[str]:
    r = e[rule]
    vals = [_cell(v, top, t) for v, t, top in zip(r["per_seed"], e["tried"], tops)]
    if r["median"] is not None:
        summ = f"{r['median']:g}" + (f" ({r['min']}–{r['max']})" if r["min"] != r["max"] else "")
    elif r["min"] is not None:
        rng = str(r["min"]) if r["min"] == r["max"] else f"{r['min']}–{r['max']}"
        summ = f"{rng}; not met for {sum(v is None for v in r['per_seed'])} of {len(r['per_seed'])} seeds"
    elif all(t != "yes" for t in e["tried"]):
        summ = "not tried"
    else:
        summ = "not met"
    return [", ".join(vals), summ]


def page_tables(js: Dict[str, Any]) -> str:
    """The results section of ``docs/experiments/kajitsuka-fig3.md`` from the run's JSON (the page
    embeds this text verbatim; ``tests/test_experiments_kajitsuka.py`` checks it)."""
    S = js["summary"]
    seeds = S["settings"]["seeds"]
    sd = ", ".join(str(x) for x in seeds)
    out: List[str] = []
    names = {"table": "Token map 1 — trained V × 2 table (E_in on one-hot tokens)",
             "fixed": "Token map 2 — fixed 16-dimensional token vectors (E_in: 2 × 16, trained)"}
    vocab = {(x["map"], x["N"]): [] for x in S["series"]}
    for x in S["series"]:
        vocab[(x["map"], x["N"])].append(str(x["vocabulary"]))
    top = searched(S)
    for mname, rows in S["table"].items():
        grid = S["settings"]["maps"][mname]["grid"]
        out.append(f"**{names.get(mname, mname)}**, #blocks grid {', '.join(map(str, grid))}; "
                   f"one value per seed (seeds {sd}), then the median (range):")
        out.append("")
        head = ["N", "V per seed", "min #blocks, float rule (loss < 0.01)", "median (range)",
                "min #blocks, certified (every example)", "median (range)"]
        if mname == "table":
            head.append("paper, recovered from the figure")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for e in rows:
            cols = [str(e["N"]), ", ".join(vocab.get((mname, e["N"]), [])) or "—"]
            tops = [top.get((mname, sd_, e["N"])) for sd_ in seeds]
            cols += _rule_cols(e, "float", tops) + _rule_cols(e, "certified", tops)
            if mname == "table":
                cols.append(str(e["paper_recovered_from_figure"]) if e["paper_recovered_from_figure"] else "—")
            out.append("| " + " | ".join(cols) + " |")
        out.append("")
    F = S["fits"]
    out.append("Exponent b of min #blocks ≈ a·N^b (least squares in log–log, pooled over seeds, on the N where "
               "every seed met the rule; ± one OLS standard error):")
    out.append("")
    out.append("| data | b ± s.e. | points | N used |")
    out.append("|---|---|---|---|")
    for key, f in F.items():
        lab = {"paper_600_1400": "paper's row, N = 600 … 1400 (recovered from the figure)",
               "paper_all": "paper's row, N = 600 … 1700 (recovered from the figure)"}.get(key, key.replace("/", ", "))
        if f.get("exponent") is None:
            out.append(f"| {lab} | not fitted ({f['why']}) | {f['points']} | — |")
        else:
            ns = f.get("Ns") or (list(PAPER) if key == "paper_all" else [n for n in PAPER if n <= 1400])
            out.append(f"| {lab} | {f['exponent']:.2f} ± {f['se']:.2f} | {f['points']} | "
                       f"{', '.join(map(str, ns)) if len(ns) <= 4 else f'{ns[0]} … {ns[-1]}'} |")
    out.append("")
    rows = js["rows"]
    judged = [r for r in rows if r.get("certified") is not None]
    out.append(f"Effort: {len(rows)} trained networks ({sum(r['state'] == 'pruned' for r in rows)} pruned by the median "
               f"rule), {len(judged)} certified example by example; examples right in float32 but not CERTIFIED: "
               f"{S['float_right_not_certified']}; UNKNOWN verdicts: {sum(r['unknown'] for r in judged)}. "
               f"Wall time {js['timings']['total_s'] / 60:.0f} min ({js['timings']['total_s']:.0f} s), one thread.")
    disagree = [r for r in judged if (r["loss"] < K.EPS) != r["certified_all"]]
    if disagree:
        out.append("")
        out.append("Networks on which the two rules disagree:")
        out.append("")
        out.append("| map | seed | N | #blocks | trial | loss | float acc | CERTIFIED / N |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in disagree:
            out.append(f"| {r['map']} | {r['seed']} | {r['N']} | {r['blocks']} | {r['trial']} | {r['loss']:.5f} | "
                       f"{r['float_acc']:.4f} | {r['certified']}/{r['N']} |")
    if "construction_seed0" in S["table"].get("table", [{}])[0]:
        out.append("")
        out.append(f"Kajitsuka & Sato's own construction (Theorem 4.1/B.1) on the same data (seed {seeds[0]}), "
                   "exact counts, next to the trained network at seed "
                   f"{seeds[0]}'s certified minimum:")
        out.append("")
        out.append("| N | trained params (one-hot E_in) | construction params (one-hot E_in) | construction depth | "
                   "width | max bits per weight |")
        out.append("|---|---|---|---|---|---|")
        for e in S["table"]["table"]:
            c = e["construction_seed0"]
            b0 = e["certified"]["per_seed"][0]
            v0 = vocab.get(("table", e["N"]), ["0"])[0]
            tp = str(K.n_params(b0, d=int(v0))) if b0 is not None else "—"
            out.append(f"| {e['N']} | {tp} | {c['params_onehot']} | {c['depth']} | {c['width']} | {c['max_bits']} |")
    return "\n".join(out) + "\n"


def page_block(js: Dict[str, Any]) -> str:
    return PAGE_BEGIN + "\n\n" + page_tables(js) + "\n" + PAGE_END
