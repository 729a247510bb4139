"""The papers' experiments, re-run and certified (issue 14, ``docs/experiments.md``).

Each experiment trains float32 Transformers with PyTorch on the CPU (the optional extra
``experiments``: ``pip install -e '.[experiments]'``), imports the trained weights *exactly*
(every float is a rational) and lets the independent checker decide, example by example, what
the trained network really memorizes — next to its float accuracy and the theorem's capacity.

``python -m exactmem experiment list`` names them; ``python -m exactmem experiment NAME
[--quick] [--workers N] [--out DIR]`` runs one and writes ``NAME.json``, ``NAME.csv`` and its
PNG figures. Nothing here is imported by certification: torch is needed only to train.
"""

from .base import EXPERIMENTS, Experiment, RunConfig, get, names  # noqa: F401
