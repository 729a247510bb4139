"""The Dask layer (``docs/scaling.md``): clusters, checks sharded over examples, sweep tasks.

Accelerators only: every verdict is the kernel's (``exactmem.kernel``), computed shard by
shard on worker processes and combined so that it equals the single-process verdict.
"""
