"""Memorized bits on the capacity plane (issue 36; ``docs/capacity.md``).

`exactmem.capacity.plane` reads ``docs/capacity/plane.json`` (written by
``benchmarks/capacity_plane.py`` from certificates the kernel checked) and renders its page section,
its table rows and its figure. The certified code length itself lives in `exactmem.verify.codelength`.
"""
