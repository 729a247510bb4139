"""exactmem: exact-arithmetic proof checker for Transformer memorization constructions.

Data flows one way: dataset → construction → model → exact forward pass → certificate →
independent checker → verdict/report. See ``docs/index.md``.
"""

__version__ = "0.1.0"
