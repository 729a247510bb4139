"""The fast engine of graph models (``check --engine fast``, and ``verify``): an untrusted accelerator.

Batched float64 interval arithmetic with proven rounding (`rounding`: ``docs/certificate.md`` § The
fast graph engine) evaluates many examples of a graph model at once (`engine`); the kernel's own
`checker.judge_verdict` decides each example from those enclosures, and every example the enclosures
do not decide goes to the kernel's precision ladder (`check`). The producer uses the same engine
before its arb balls (`produce`). NumPy only; the kernel stays standard-library only.
"""
