"""``python -m exactmem experiment list | NAME [options]``: re-run a paper's training experiment (docs/cli.md)."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    e = sub.add_parser("experiment", help="re-run a paper's experiment: train, then certify what is memorized "
                                          "(needs the 'experiments' extra: torch, CPU)")
    e.add_argument("name", help="an experiment name, or 'list'")
    e.add_argument("--quick", action="store_true", help="smaller sizes (same method), under 10 minutes on 2 cores")
    e.add_argument("--workers", type=int, default=1, help="certify on a local Dask cluster of N workers")
    e.add_argument("--out", default=None, help="output directory (default experiments/<name>)")
    e.add_argument("--seed", type=int, default=0, help="seed of data, initialisation and training (default 0)")
    e.add_argument("--seeds", type=int, default=None, help="number of seeds (seed, seed + 1, ...; default: the "
                                                         "experiment's own; morris-capacity)")
    e.add_argument("--resume", action="store_true", help="keep the rows an earlier run left in --out (its certificates "
                                                         "unchanged, the same plan), train only the rest; morris-capacity")
    e.add_argument("--models", default="", help="comma-separated model names: run only these models of the plan "
                                                  "(morris-capacity; the names are in the error for an unknown one)")
    e.add_argument("--verbose", action="store_true", help="print every measured row")
    e.add_argument("--debug", action="store_true", help="show Python tracebacks")
    e.set_defaults(fn=run_cli)


def run_cli(args) -> int:
    from .base import EXPERIMENTS, ExperimentError, RunConfig, get, run_experiment

    if args.name == "list":
        for name in EXPERIMENTS:
            try:
                exp = get(name)
                print(f"{name:16s} {exp.title}  [{exp.source}]")
            except ImportError as e:  # a module not importable here: say why, keep listing
                print(f"{name:16s} (cannot load: {e})")
        return 0
    if args.workers < 1:
        print("exactmem: error: experiment: --workers must be at least 1", file=sys.stderr)
        return 3
    if args.seeds is not None and args.seeds < 1:
        print("exactmem: error: experiment: --seeds must be at least 1", file=sys.stderr)
        return 3
    if args.resume or args.models:
        try:
            resumable = get(args.name).resumable
        except (ExperimentError, ImportError):
            resumable = True  # an unknown name: run_experiment says so below
        if not resumable:
            opt = "--resume" if args.resume else "--models"
            print(f"exactmem: error: experiment {args.name}: {opt} is not supported (only morris-capacity has "
                  "resumable rows and a choice of models)", file=sys.stderr)
            return 3
    cfg = RunConfig(quick=args.quick, workers=args.workers, out=args.out or f"experiments/{args.name}",
                    seed=args.seed, verbose=args.verbose, seeds=args.seeds or 0,
                    resume=args.resume, models=args.models)
    try:
        rec = run_experiment(args.name, cfg)
    except ExperimentError as e:
        if args.debug:
            raise
        print(f"exactmem: error: experiment {args.name}: {e}", file=sys.stderr)
        return 3
    print(f"wrote {cfg.out}/{rec.name}.json, {rec.name}.csv" + (f" and {len(rec.figures)} figures" if rec.figures else ""))
    for k, v in rec.summary.items():
        print(f"  {k}: {v}")
    return 0
