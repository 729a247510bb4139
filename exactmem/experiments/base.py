"""Experiment registry, run configuration and the run record (JSON + CSV + PNG).

An experiment module ``exactmem/experiments/<module>.py`` defines ``EXPERIMENT``, an
`Experiment` whose ``run(config, record)`` trains, certifies and fills ``record``
(one row per measured point, figures, notes, a summary). `run_experiment` times it and
writes the record: ``<out>/<name>.json`` (config, seed, versions, rows, summary, notes,
timings), ``<out>/<name>.csv`` (the rows) and the figures ``<out>/<name>-*.png``.
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, List

from ..errors import install_hint

# name -> module (imported only when the experiment is listed in detail or run)
EXPERIMENTS: Dict[str, str] = {
    "kajitsuka-fig3": "kajitsuka_fig3",
    "kajitsuka-fig1": "kajitsuka_fig1",
    "mahdavi-fig2": "mahdavi_fig2",
    "dana-fig1": "dana_fig1",
    "kruskal-real": "kruskal_real",
    "morris-capacity": "morris_capacity",
}


class ExperimentError(RuntimeError):
    """An experiment cannot run (torch missing, bad option); the message says how to fix it."""


@dataclass
class RunConfig:
    """What the command line asks: ``quick`` shrinks sizes (never the method), ``workers`` > 1
    certifies on a local Dask cluster, ``out`` is the output directory."""

    quick: bool = False
    workers: int = 1
    out: str = "experiments"
    seed: int = 0
    verbose: bool = False
    seeds: int = 0  # seeds seed, seed + 1, ... (0: the experiment's default; used by morris-capacity)
    resume: bool = False  # keep the finished rows of an earlier run in ``out`` (morris-capacity)
    models: str = ""  # comma-separated model names: run only these of the plan (morris-capacity)


@dataclass
class Experiment:
    name: str
    title: str
    source: str  # the paper's figure/table and the notes' section
    run: Callable[[RunConfig, "Record"], None]
    quick_minutes: float = 10.0  # the --quick budget it is designed for (2 cores)
    resumable: bool = False  # whether ``--resume`` means something (its run reads ``RunConfig.resume``)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Fraction):
        return str(v)
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy / torch scalars
        return v.item()
    return v


@dataclass
class Record:
    """What one run measured; written by `write`."""

    name: str
    config: RunConfig
    rows: List[Dict[str, Any]] = field(default_factory=list)
    summary: Dict[str, Any] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    figures: List[str] = field(default_factory=list)
    timings: Dict[str, float] = field(default_factory=dict)

    def row(self, **fields: Any) -> Dict[str, Any]:
        """Append one measured point (a CSV row); returns it."""
        self.rows.append(dict(fields))
        if self.config.verbose:
            print("  " + ", ".join(f"{k}={v}" for k, v in fields.items()), file=sys.stderr)
        return self.rows[-1]

    def note(self, text: str) -> None:
        self.notes.append(text)

    def log(self, text: str) -> None:
        """Progress on stderr (always one line; runs take minutes)."""
        print(f"[{self.name}] {text}", file=sys.stderr, flush=True)

    def figure(self, fig: Any, tag: str) -> str:
        """Save a matplotlib figure as ``<out>/<name>-<tag>.png`` and close it; returns the path."""
        import matplotlib.pyplot as plt

        os.makedirs(self.config.out, exist_ok=True)
        path = os.path.join(self.config.out, f"{self.name}-{tag}.png")
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(path)
        return path

    def as_dict(self) -> Dict[str, Any]:
        return _jsonable({"experiment": self.name, "config": asdict(self.config), "seed": self.config.seed,
                          "versions": versions(), "rows": self.rows, "summary": self.summary,
                          "notes": self.notes, "figures": [os.path.basename(f) for f in self.figures],
                          "timings": self.timings})

    def write(self) -> List[str]:
        """Write ``<name>.json`` and ``<name>.csv`` into ``config.out``; returns the paths."""
        os.makedirs(self.config.out, exist_ok=True)
        js = os.path.join(self.config.out, f"{self.name}.json")
        with open(js, "w", encoding="utf-8") as fh:
            json.dump(self.as_dict(), fh, indent=1, sort_keys=False)
            fh.write("\n")
        cs = os.path.join(self.config.out, f"{self.name}.csv")
        keys: List[str] = []
        for r in self.rows:
            keys += [k for k in r if k not in keys]
        with open(cs, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            for r in self.rows:
                w.writerow({k: _jsonable(r.get(k)) for k in keys})
        return [js, cs] + list(self.figures)


def versions() -> Dict[str, str]:
    out = {"python": platform.python_version()}
    for mod in ("torch", "numpy", "flint", "exactmem"):
        m = sys.modules.get(mod)
        if m is not None:
            out[mod] = str(getattr(m, "__version__", "?"))
    return out


def names() -> List[str]:
    return list(EXPERIMENTS)


def get(name: str) -> Experiment:
    """The experiment called ``name`` (its module imported now)."""
    if name not in EXPERIMENTS:
        raise ExperimentError(f"unknown experiment {name!r}; `python -m exactmem experiment list` names "
                              f"{', '.join(EXPERIMENTS)}")
    return importlib.import_module(f"{__package__}.{EXPERIMENTS[name]}").EXPERIMENT


def require_torch():
    """``torch``, or a one-line error saying how to install the CPU build."""
    try:
        import torch
    except ImportError:
        raise ExperimentError(f"the experiments train with PyTorch (torch==2.13.0, the CPU build): "
                              f"{install_hint('experiments')}") from None
    return torch


def run_experiment(name: str, config: RunConfig) -> Record:
    """Run one experiment, write its record, and return it."""
    exp = get(name)
    rec = Record(exp.name, config)
    t0 = time.perf_counter()
    exp.run(config, rec)
    rec.timings["total_s"] = round(time.perf_counter() - t0, 2)
    rec.write()
    return rec
