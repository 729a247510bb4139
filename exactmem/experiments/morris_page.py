"""The ``morris-capacity`` section of ``docs/capacity.md`` and its two figures, generated from the run's JSON.

``python -m exactmem.experiments.morris_page RUN.json`` copies the run's record (``morris-capacity.json``,
`exactmem.experiments.morris_capacity`) to ``docs/capacity/morris.json``, draws
``docs/img/morris-fig1.png`` (memorized bits vs dataset size N per model; Morris et al. Fig. 1) and
``docs/img/morris-fig6.png`` (capacity vs parameters with the fitted α; their Fig. 6), and rewrites the
text between `BEGIN` and `END` in ``docs/capacity.md`` with `page_block` — nothing else in the page.
``tests/test_morris.py`` checks that the committed section equals `page_block` of the committed JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any, Dict, List, Tuple

BEGIN = "<!-- morris:begin -->"
END = "<!-- morris:end -->"
JSON_PATH = "docs/capacity/morris.json"
FIG1, FIG6 = "docs/img/morris-fig1.png", "docs/img/morris-fig6.png"


def _models(js: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One entry per model, in plan order: name, layers, width, heads, params, vocab V and length S."""
    plan = js["summary"]["plan"]
    seen: Dict[str, Dict[str, Any]] = {}
    for r in js["rows"]:
        m = seen.setdefault(r["model"], {k: r[k] for k in ("model", "layers", "width", "heads", "params")})
        m["vocab"], m["seq_len"] = r.get("vocab", plan["vocab"]), r.get("seq_len", plan["seq_len"])
    return list(seen.values())


def _own_data(js: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The models whose (V, S) differ from the plan's default."""
    plan = js["summary"]["plan"]
    return [m for m in _models(js) if (m["vocab"], m["seq_len"]) != (plan["vocab"], plan["seq_len"])]


def _mean(xs: List[float]) -> float:
    return sum(xs) / len(xs)


def _fmt_bits(x: float) -> str:
    return f"{x:,.1f}"


def _alpha(f: Dict[str, Any]) -> str:
    return f"{f['alpha']:.3f}" + (f" ± {f['se']:.3f}" if f.get("se") is not None else "")


def _schedule(plan: Dict[str, Any]) -> str:
    """The learning rate and steps: one phrase when all models share them, else per model."""
    names = [m[0] for m in plan["models"]] if plan.get("models") else list(plan["steps"])
    lr = plan["lr"] if isinstance(plan["lr"], dict) else {k: plan["lr"] for k in names}
    if len({(lr[k], plan["steps"][k]) for k in names}) == 1:
        return f"lr {lr[names[0]]:g}, {plan['steps'][names[0]]} steps"
    return "lr and steps per model: " + ", ".join(f"{k} {lr[k]:g} × {plan['steps'][k]}" for k in names)


def _work_minutes(js: Dict[str, Any]) -> str:
    """The run's time: one thread's work summed over the networks (training, certified measurement,
    ``check``), and how many rows ``--resume`` kept from an earlier run."""
    t = js["timings"]
    parts = [t.get("train_s", 0), t.get("verify_s", 0), t.get("check_s", 0)]
    kept = js["summary"].get("resumed_rows") or 0
    return (f"{sum(parts) / 60:.0f} min of one CPU thread summed over the networks, on 2 shared cores: training "
            f"{parts[0] / 60:.0f} min, certified measurement {parts[1] / 60:.0f} min, `check` {parts[2] / 60:.0f} min"
            + (f"; {kept} of the {len(js['rows'])} rows kept from an earlier run by `--resume`, their times included"
               if kept else ""))


def _what_differs(js: Dict[str, Any], t1: List[Dict[str, Any]], cert_cap: Dict[str, float]) -> str:
    """The paragraph after the Table 1 comparison: which model here is their row itself, and what differs
    (vocabulary and length for the others, model sizes, training budget, bfloat16)."""
    plan = js["summary"]["plan"]
    models = _models(js)
    same = [(m, r) for m in models for r in t1 if (m["layers"], m["width"], m["vocab"], m["seq_len"]) ==
            (r["layers"], r["width"], 2048, 64)]
    small = [m for m in models if (m["vocab"], m["seq_len"]) == (plan["vocab"], plan["seq_len"])]
    flat = [r["loss_change_last_quarter"] for r in js["rows"] if r.get("loss_change_last_quarter") is not None]
    steps = sorted(set(plan["steps"].values()))
    big = max(models, key=lambda m: m["params"])
    big_rows = [r for r in js["rows"] if r["model"] == big["model"] and r["weights"] == "float32"]
    text = "What differs: "
    for m, r in same:
        cc = cert_cap.get(m["model"])
        text += (f"**{m['model']} is their Table 1 row itself** (1 layer, width {m['width']}, V = 2048, S = 64: "
                 f"{m['params']:,} parameters against their {r['params']:.3g}); its certified capacity here, "
                 f"{cc:,.0f} bits ({cc / m['params']:.2f} bits per parameter), is {cc / r['capacity_bits']:.0%} of "
                 f"theirs — the same network trained for {plan['steps'][m['model']]:,} steps on a CPU thread. ")
    if small:
        ps = [m["params"] for m in small]
        text += (f"The {'other ' if same else ''}models use V = {plan['vocab']} and S = {plan['seq_len']} (the token embedding a smaller "
                 f"share of the parameters) and are smaller ({min(ps):,}–{max(ps):,} parameters), ")
    text += ("because the whole run — training, the certified measurement of every token and the re-check — runs "
             "on one CPU thread: a model's capacity needs N ∝ parameters sequences, so training one model's dataset "
             "sizes costs ∝ parameters² (the largest here, {}, trained for {:.0f} min over its {} networks; the larger "
             "sizes tried are under *Larger models* below). The steps: a fixed budget of {} steps on a CPU against "
             "their training to convergence on GPUs, so the capacity here is what this budget reaches (the training "
             "loss fell by at most {:.1%} over the last quarter of the steps, the cosine schedule's tail; "
             "`loss_change_last_quarter` in the JSON). And bfloat16 here is the float32-trained network rounded after "
             "training, not bfloat16 training.").format(
        big["model"], sum(r["train_s"] for r in big_rows) / 60, len(big_rows),
        "–".join(f"{x:,}" for x in (steps[0], steps[-1])) if len(steps) > 1 else f"{steps[0]:,}",
        max(flat) if flat else float("nan"))
    return text


def page_tables(js: Dict[str, Any]) -> str:
    """The section's Markdown: set-up, one table per model, capacities, α against Morris et al."""
    S, plan = js["summary"], js["summary"]["plan"]
    V, n = plan["vocab"], plan["seq_len"]
    seeds = plan["seeds"]
    quick = js["config"].get("quick")
    own_data = _own_data(js)
    out = [f"Generated by `python -m exactmem.experiments.morris_page` from [`capacity/morris.json`](capacity/morris.json) "
           f"(`python -m exactmem experiment morris-capacity{' --quick' if quick else ''}`; {_work_minutes(js)}).", "",
           f"**Set-up.** `transformers` `GPT2LMHeadModel` (default `GPT2Config` except the sizes below, vocabulary V + 1 "
           f"with a BOS token, context S, dropout 0), trained on N sequences of S = {n} tokens drawn uniformly from "
           f"V = {V} values ({n} · log₂ {V} = {n * (V.bit_length() - 1)} bits per sequence"
           + "".join(f"; {m['model']}: S = {m['seq_len']}, V = {m['vocab']}, "
                     f"{m['seq_len'] * (m['vocab'].bit_length() - 1)} bits per sequence" for m in own_data)
           + "), BOS prepended so every token "
           f"is predicted; AdamW, 5 % warm-up then cosine decay, full batch (minibatches of "
           f"{plan.get('full_batch_tokens', 32768):,} tokens above that size), {_schedule(plan)}; "
           f"seeds {', '.join(map(str, seeds))}"
           + "".join(f" (not run: {m} N = {N} seed {sd}, for time)" for m, N, sd in plan.get("skip") or []) + ". "
           "Per network: **certified** memorized bits = dataset bits − certified code length (the enclosures' upper ends "
           "+ 2 coder bits; a lower bound on what the real-number network of the stored weights memorized) and the "
           "**float** estimate (onnxruntime's float32 log-probabilities of the same exported network), with the float32 "
           "weights and with every weight rounded to bfloat16. Every certificate was re-checked by "
           "`python -m exactmem check` in a fresh process (column *check*).", ""]
    for m in _models(js):
        rows = [r for r in js["rows"] if r["model"] == m["model"]]
        own = f", V = {m['vocab']}, S = {m['seq_len']}" if m in own_data else ""
        out += [f"**{m['model']}**: {m['layers']} layer{'s' * (m['layers'] > 1)}, width {m['width']}, {m['heads']} "
                f"head{'s' * (m['heads'] > 1)}{own}, **{m['params']:,} parameters**.", "",
                "| N | dataset bits | seed | weights | certified memorized bits | float memorized bits | certified / float "
                "| final loss | check |",
                "|---:|---:|---:|---|---:|---:|---:|---:|---|"]
        for r in rows:
            ratio = "—" if r.get("certified_over_float") is None else f"{r['certified_over_float']:.5f}"
            out.append(f"| {r['N']} | {r['dataset_bits']:,} | {r['seed']} | {r['weights']} | "
                       f"{_fmt_bits(r['certified_memorized_bits'])} | {_fmt_bits(r['float_memorized_bits'])} | {ratio} | "
                       f"{r['final_loss']:.4f} | {r['check']} |")
        out.append("")
    caps = S["capacities"]
    out += ["**Capacity** = the largest memorized bits over N, per seed (mean over seeds; bits per parameter = mean / "
            "parameters):", "",
            "| model | parameters | weights | capacity, certified | capacity, float | bits/param, certified | "
            "bits/param, float | N at the maximum |",
            "|---|---:|---|---:|---:|---:|---:|---|"]
    for m in _models(js):
        for w in ("float32", "bfloat16"):
            cs = [c for c in caps if c["model"] == m["model"] and c["weights"] == w]
            if not cs:
                continue
            cc, cf = _mean([c["certified"] for c in cs]), _mean([c["float"] for c in cs])
            at = ", ".join(str(c["N_certified"]) for c in cs)
            out.append(f"| {m['model']} | {m['params']:,} | {w} | {_fmt_bits(cc)} | {_fmt_bits(cf)} | "
                       f"{cc / m['params']:.3f} | {cf / m['params']:.3f} | {at} |")
    growth = []
    for m in _models(js):  # the plateau: memorized bits at the largest N against the next largest (certified, mean)
        rows = [r for r in js["rows"] if r["model"] == m["model"] and r["weights"] == "float32"]
        Ns = sorted({r["N"] for r in rows})
        if len(Ns) >= 2:
            at = [_mean([r["certified_memorized_bits"] for r in rows if r["N"] == N]) for N in Ns[-2:]]
            growth.append((m["model"], Ns[-2], Ns[-1], at[1] / at[0] - 1))
    if growth:
        out += ["", "The plateau (float32, certified, mean over seeds): from the second-largest to the largest N the "
                "dataset grows " + "/".join(sorted({f"{b / a:.3g}×" for _, a, b, _ in growth})) + " and the memorized bits by "
                + ", ".join(f"{g:+.1%} ({name}, N = {a} → {b})" for name, a, b, g in growth) + "."]
    fit, MA = S["fit"], S["morris_alpha"]
    out += ["", "**α** (bits per parameter; least squares capacity = α · parameters through the origin over the "
            f"(model, seed) points, ± its standard error), against Morris et al.'s {MA['overall']}:", "",
            "| weights | α certified | α float | Morris et al. |", "|---|---:|---:|---:|"]
    for w in ("float32", "bfloat16"):
        if w in fit:
            out.append(f"| {w} | {_alpha(fit[w]['certified'])} | {_alpha(fit[w]['float'])} | {MA[w]} |")
    ratio = S.get("min_certified_over_float")
    gaps = [r["float_memorized_bits"] - r["certified_memorized_bits"] - 2 for r in js["rows"]]
    below = S.get("rows_below_99_percent") or []
    out += ["", f"**Certified vs float.** The smallest certified / float ratio over all {len(js['rows'])} networks is "
            f"{'—' if ratio is None else f'{ratio:.5f}'}; "
            + ("every one is ≥ 0.99 (the issue's criterion)." if not below else
               f"{len(below)} row(s) fall below 0.99: " + ", ".join(f"{b['model']} N = {b['N']} seed {b['seed']} "
                                                                    f"{b['weights']}" for b in below) + ".")
            + f" Check verdicts: {', '.join(S['checks'])}. The gap float − certified is the coder's 2 bits plus "
            f"{min(gaps):+.2e} to {max(gaps):+.2e} bits (the enclosures' width and onnxruntime's float32 rounding), "
            f"so the 99 % criterion is met whenever the float estimate exceeds about {(2 + max(gaps)) * 100:,.0f} bits "
            "(the smallest float estimate here is "
            f"{min(r['float_memorized_bits'] for r in js['rows']):,.0f} bits).", ""]
    t1 = S["morris_table1"]
    out += ["**Against Morris et al.** Their Table 1 (V = 2048, S = 64; the row quoted in issue 36) next to the "
            "models here:", "",
            "| source | layers | width | V | S | parameters | capacity (bits) | bits / parameter |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in t1:
        out.append(f"| Morris et al. Table 1 | {r['layers']} | {r['width']} | 2048 | 64 | {r['params']:.3g} | "
                   f"{r['capacity_bits']:.3g} | {r['capacity_bits'] / r['params']:.2f} |")
    cert_cap = {}
    for m in _models(js):
        cs = [c for c in caps if c["model"] == m["model"] and c["weights"] == "float32"]
        if cs:
            cc = cert_cap[m["model"]] = _mean([c["certified"] for c in cs])
            out.append(f"| here, certified (float32) | {m['layers']} | {m['width']} | {m['vocab']} | {m['seq_len']} | "
                       f"{m['params']:,} | {cc:,.0f} | {cc / m['params']:.2f} |")
    out += ["", _what_differs(js, t1, cert_cap), ""]
    engines = {}
    for r in js["rows"]:
        e = engines.setdefault(r.get("check_engine") or "pure", [0, 0.0, 0.0])
        e[0] += 1
        e[1] += r["check_s"]
        e[2] = max(e[2], r["check_s"])
    work = [r["params"] * r["N"] for r in js["rows"] if r.get("check_engine") == "auto"]
    out += ["**`check`.** " + "; ".join(
        f"`--engine {e}` on {k} certificate{'s' * (k > 1)} ({t / 60:.1f} min, at most {mx:.0f} s each)"
        for e, (k, t, mx) in sorted(engines.items()))
        + (" — the fast graph engine (float64 enclosures with proven rounding, judged by the kernel) for the "
           f"certificates of parameters × N ≥ {min(work):,} here, where it is several times faster than the pure "
           "kernel; the pure kernel below, where the fast engine's start-up costs more than it saves "
           "(the rule: `morris_capacity.check_engine`)." if work else "."), "",
            f"![memorized bits vs N]({os.path.relpath(FIG1, 'docs')}) ![capacity vs parameters]"
            f"({os.path.relpath(FIG6, 'docs')})"]
    cited = js.get("certificates") or []
    if cited:  # the capacity-defining networks' certificates, committed: check them from a fresh clone
        out += ["", f"**Certificates.** The {len(cited)} networks that define the capacities above (each model, weight "
                    f"format and seed at its best N) are committed in `{CERT_DIR}/`; `python -m exactmem check "
                    f"{CERT_DIR}/NAME` re-derives each (`tests/test_morris.py` checks their SHA-256 against the JSON "
                    "and, marked slow, re-checks the four smallest with the kernel and the largest with the fast engine, "
                    "and has every one REFUTED once its memorized bits are raised by one bit; "
                    "`.json.gz` files are gzipped, `check` reads them as they are): " + ", ".join(f"`{c['file']}`" for c in cited) + "."]
    return "\n".join(out) + "\n"


CERT_DIR = "docs/capacity/certs/morris"  # the cited certificates (the capacity rows), relative to the repository


def page_block(js: Dict[str, Any]) -> str:
    return BEGIN + "\n\n" + page_tables(js) + "\n" + END


def replace_block(text: str, block: str) -> str:
    """``text`` with the part from `BEGIN` to `END` (inclusive) replaced by ``block``; appended at the end
    when the markers are missing."""
    if BEGIN in text and END in text:
        a, b = text.index(BEGIN), text.index(END) + len(END)
        return text[:a] + block + text[b:]
    return text.rstrip("\n") + "\n\n## The Morris et al. experiment, certified\n\n" + block + "\n"


def figures(js: Dict[str, Any]) -> List[Tuple[Any, str]]:
    """(matplotlib figure, tag): ``fig1`` memorized bits vs N per model (certified solid, float dashed,
    the dataset bits dotted), ``fig6`` capacity vs parameters with the fitted lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = _models(js)
    S = js["summary"]
    fig1, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, w in zip(axes, ("float32", "bfloat16")):
        for k, m in enumerate(models):
            rows = [r for r in js["rows"] if r["model"] == m["model"] and r["weights"] == w]
            Ns = sorted({r["N"] for r in rows})
            cert = [_mean([r["certified_memorized_bits"] for r in rows if r["N"] == N]) for N in Ns]
            flt = [_mean([r["float_memorized_bits"] for r in rows if r["N"] == N]) for N in Ns]
            col = f"C{k}"
            ax.plot(Ns, cert, "o-", color=col, label=f"{m['model']} ({m['params']:,} params), certified")
            ax.plot(Ns, flt, "x--", color=col, alpha=0.7, label="float" if k == 0 else None)
        Nall = sorted({r["N"] for r in js["rows"]})
        for j, per in enumerate(sorted({r["dataset_bits"] // r["N"] for r in js["rows"]})):
            Ns = sorted({r["N"] for r in js["rows"] if r["dataset_bits"] == per * r["N"]})
            ax.plot(Ns, [N * per for N in Ns], "k:", lw=1, label=f"dataset bits N·S·log₂V" if j == 0 else None)
        ax.set_xscale("log")
        ticks = [t for t in (1, 3, 10, 30, 100, 300, 1000, 3000, 10000) if Nall[0] <= t <= Nall[-1]]  # half decades
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("dataset size N (sequences)")
        ax.set_title(f"{w} weights", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("memorized bits (mean over seeds)")
    axes[0].legend(fontsize=7)
    fig1.suptitle("Memorized bits vs N (Morris et al. Fig. 1): certified lower bound vs float estimate", fontsize=11)

    fig6, ax = plt.subplots(figsize=(6, 4.2))
    caps = S["capacities"]
    marks = {("float32", "certified"): ("o", "C0"), ("float32", "float"): ("x", "C1"),
             ("bfloat16", "certified"): ("s", "C2"), ("bfloat16", "float"): ("+", "C3")}
    xmax = max(m["params"] for m in models)
    for (w, kind), (mk, col) in marks.items():
        cs = [c for c in caps if c["weights"] == w]
        if not cs or w not in S["fit"]:
            continue
        f = S["fit"][w][kind]
        ax.plot([c["params"] for c in cs], [c[kind] for c in cs], mk, color=col, ls="none",
                label=f"{w}, {kind}: α = {_alpha(f)}")
        ax.plot([0, xmax * 1.05], [0, f["alpha"] * xmax * 1.05], "-", color=col, lw=0.8, alpha=0.6)
    ax.plot([0, xmax * 1.05], [0, S["morris_alpha"]["overall"] * xmax * 1.05], "k:", lw=1,
            label=f"Morris et al.: {S['morris_alpha']['overall']} bits/param")
    ax.set_xlabel("parameters")
    ax.set_ylabel("capacity (bits)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Capacity vs parameters (Morris et al. Fig. 6)", fontsize=10)
    return [(fig1, "fig1"), (fig6, "fig6")]


GZIP_ABOVE = 256 * 1024  # cited certificates larger than this are committed gzipped (``check`` reads .json.gz)


def cited_rows(js: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The rows that define the capacities: per (model, weights, seed) the row at its best certified N."""
    caps = js["summary"]["capacities"]
    best = {(c["model"], c["weights"], c["seed"], c["N_certified"]) for c in caps}
    return [r for r in js["rows"] if (r["model"], r["weights"], r["seed"], r["N"]) in best]


def publish_certificates(js: Dict[str, Any], cert_src: str, root: str = ".") -> List[Dict[str, str]]:
    """Copy the cited certificates (`cited_rows`) from ``cert_src`` to `CERT_DIR` — gzipped (mtime 0, so the
    bytes are reproducible) above `GZIP_ABOVE` — after checking each file's SHA-256 against its row, and
    remove the certificates of earlier runs there. Returns ``[{"file", "sha256"}]``, the SHA-256 of the
    certificate's JSON (uncompressed, as the row records it)."""
    import gzip
    import hashlib

    dest = os.path.join(root, CERT_DIR)
    os.makedirs(dest, exist_ok=True)
    out = []
    for r in sorted(cited_rows(js), key=lambda r: r["certificate"]):
        with open(os.path.join(cert_src, r["certificate"]), "rb") as fh:
            data = fh.read()
        if hashlib.sha256(data).hexdigest() != r["certificate_sha256"]:
            raise ValueError(f"{r['certificate']}: its SHA-256 differs from the row's")
        name = r["certificate"] + (".gz" if len(data) > GZIP_ABOVE else "")
        with open(os.path.join(dest, name), "wb") as fh:
            if name.endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
                    gz.write(data)
            else:
                fh.write(data)
        out.append({"file": name, "sha256": r["certificate_sha256"]})
    keep = {c["file"] for c in out}
    for f in os.listdir(dest):
        if f.endswith((".verify.json", ".verify.json.gz")) and f not in keep:
            os.remove(os.path.join(dest, f))
    return out


def publish(run_json: str, root: str = ".") -> List[str]:
    """Copy ``run_json`` to `JSON_PATH` — with the cited certificates (`publish_certificates`, from the
    run's ``certs/`` beside it, when present) recorded under ``certificates`` — draw the figures, rewrite
    the section of ``docs/capacity.md`` (paths under ``root``); returns the written paths."""
    import matplotlib.pyplot as plt

    with open(run_json, encoding="utf-8") as fh:
        js = json.load(fh)
    dest = os.path.join(root, JSON_PATH)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    cert_src = os.path.join(os.path.dirname(os.path.abspath(run_json)), "certs")
    if os.path.isdir(cert_src) and os.path.abspath(run_json) != os.path.abspath(dest):
        js["certificates"] = publish_certificates(js, cert_src, root)
        with open(dest, "w", encoding="utf-8") as fh:
            json.dump(js, fh, indent=1)
            fh.write("\n")
    elif os.path.abspath(run_json) != os.path.abspath(dest):
        shutil.copyfile(run_json, dest)
    paths = [dest]
    for (fig, tag), path in zip(figures(js), (FIG1, FIG6)):
        p = os.path.join(root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        fig.savefig(p, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(p)
    md = os.path.join(root, "docs/capacity.md")
    with open(md, encoding="utf-8") as fh:
        text = fh.read()
    with open(md, "w", encoding="utf-8") as fh:
        fh.write(replace_block(text, page_block(js)))
    return paths + [md]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m exactmem.experiments.morris_page RUN.json  (e.g. experiments/morris-capacity/"
              "morris-capacity.json)", file=sys.stderr)
        return 2
    if not os.path.exists(argv[0]):
        print(f"exactmem: error: {argv[0]}: no such file", file=sys.stderr)
        return 3
    for p in publish(argv[0]):
        print("wrote", p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
