"""``kajitsuka-fig1`` — Kajitsuka & Sato (ICLR 2025), App. H, Figs. 1–2: training curves and certified accuracy.

Training loss and accuracy against epochs for #blocks ∈ {1, 10, 20, 30, 40, 50}, N = 2000 sequences
of n = 8 tokens, with the CERTIFIED accuracy of each network at the end of training.

The eq. (165) network of `exactmem.experiments.kajitsuka_train` (one uniform-attention
layer between two stacks of #blocks eq.-(3) blocks, m = 2, q = 4m) is trained with AdamW,
full batch, for 1000 epochs (no early stop: the figure's curves run the whole budget); of the
tuning trials (the paper: two Optuna trials) the one with the lowest final loss is kept. At the
end, the trained network goes through ``exactmem verify`` (exported by ``torch.onnx.export``,
float32 weights taken exactly) and every example is judged (certified / refuted; uniform
attention and ReLU keep the values exact, so no unknown), each claimed verdict re-derived by
the kernel from the certificate. The float and certified accuracies are drawn side by
side, and the examples right in float32 but not certified are listed.
"""

from __future__ import annotations

import time
from typing import Any, Dict

from .base import Experiment, Record, RunConfig, require_torch
from . import kajitsuka_train as K


def settings(config: RunConfig) -> Dict[str, Any]:
    if config.quick:  # fewer and smaller networks, one trial, on N = 1000; same model and training
        return {"N": 1000, "blocks": [1, 5, 10], "trials": 1, "epochs": 1000}
    # one trial (the paper: two Optuna trials) keeps the full run within ~35 minutes on one core
    return {"N": 2000, "blocks": [1, 10, 20, 30, 40, 50], "trials": 1, "epochs": 1000}


def run(config: RunConfig, record: Record) -> None:
    """Figs. 1–2 of Kajitsuka & Sato App. H, with the certified accuracy at the end."""
    torch = require_torch()
    torch.set_num_threads(1)
    s = settings(config)
    data = K.corpus_examples(s["N"], config.seed)
    curves = {}
    final = []
    for b in s["blocks"]:
        best = None
        for lr, warm in K.TRIALS[: s["trials"]]:
            r = K.train(data, b, lr, warm, s["epochs"], seed=config.seed, stop_early=False)
            record.log(f"blocks={b} lr={lr}: loss {r.loss:.4f}, float acc {r.float_acc:.4f} ({r.seconds:.0f} s)")
            if best is None or r.loss < best.loss:
                best = r
        t0 = time.perf_counter()
        v = K.certify(best, data, workers=config.workers)
        tc = time.perf_counter() - t0
        g = K.gap(best, v)
        curves[b] = best.curve
        final.append({"blocks": b, "certified_acc": v.certified / data.N, "float_acc": best.float_acc})
        record.row(blocks=b, N=data.N, lr=best.lr, warmup=best.warmup, epochs=best.epochs_run,
                   loss=round(best.loss, 6), float_acc=round(best.float_acc, 6), float_correct=sum(best.float_correct),
                   certified=v.certified, refuted=v.refuted, unknown=v.unknown,
                   certified_acc=round(v.certified / data.N, 6), float_right_not_certified=len(g),
                   gap_examples=g[:20], checker=v.checker_status, params=K.n_params(b, d=len(data.vectors)),
                   train_s=round(best.seconds, 1), certify_s=round(tc, 1))
        record.log(f"blocks={b}: certified {v.certified}/{data.N} (float right {sum(best.float_correct)})")
    record.summary["settings"] = s
    record.summary["data"] = dict(K.corpus_info(), vocabulary=len(data.vectors), N=data.N)
    record.summary["final"] = final
    record.summary["curves_every_10_epochs"] = {b: [c for c in cv if c[0] % 10 == 0 or c is cv[-1]]
                                                 for b, cv in curves.items()}
    record.summary["float_right_not_certified"] = sum(r["float_right_not_certified"] for r in record.rows)
    record.note("paper Figs. 1-2: no final numbers are tabulated; its axes show loss in [0, 0.30] and accuracy in "
                "[0.80, 1.00] on MultiNLI (N = 2000), loss and accuracy approaching 0 and 1 as #blocks grows")
    _plot(record, curves, final)


def _plot(record: Record, curves, final) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    for i, (b, cv) in enumerate(curves.items()):
        e = [c[0] for c in cv]
        ax.plot(e, [c[1] for c in cv], color=f"C{i}", lw=1, label=f"#blocks = {b}")
        bx.plot(e, [c[2] for c in cv], color=f"C{i}", lw=1, label=f"#blocks = {b}")
        f = next(x for x in final if x["blocks"] == b)
        bx.plot([e[-1]], [f["certified_acc"]], "*", color=f"C{i}", ms=10, mec="k", mew=0.5)
    bx.plot([], [], "*", color="gray", mec="k", label="certified accuracy (end)")
    ax.set_ylim(0, 0.30)
    ax.set_xlabel("training epochs")
    ax.set_ylabel("training loss")
    ax.set_title("training loss (float32)")
    ax.legend(fontsize=7)
    bx.set_ylim(0.80, 1.0)
    bx.set_xlabel("training epochs")
    bx.set_ylabel("accuracy")
    bx.set_title("float accuracy; star = exactly certified accuracy")
    bx.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    record.figure(fig, "curves")


EXPERIMENT = Experiment(
    name="kajitsuka-fig1",
    title="Kajitsuka & Sato Figs. 1-2: loss/accuracy vs epochs for #blocks 1..50, certified accuracy at the end",
    source="Kajitsuka & Sato, ICLR 2025, App. H, eq. (165), Figs. 1-2; docs/kajitsuka.md note §7",
    run=run,
    quick_minutes=10.0,
)
