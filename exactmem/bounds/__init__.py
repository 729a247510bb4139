"""Counting arguments and lower bounds, checked step by step (``docs/lower-bounds.md``).

* `.seq2seq` — Kajitsuka & Sato Theorem 4.3 / B.3 (hardmax seq-to-seq): the chain
  (70)–(96) for a concrete architecture, Lemma B.4's precondition at every use, the minimal
  W of the final inequality and of the sharp bound (90);
* `.sharp` — the sharp bound (90) at any depth (closed form, Euler–Maclaurin sums of
  `.sums`) and its minimal W over a family; `.search` — brackets and bisection
  (every minimum is bisected on exact decisions, at any n ≤ 10⁶, N ≤ 10¹⁵);
* `.next_token` — Theorem 4.2 / B.2: the repeated-token reduction checked on the exact
  model, explicit-constant bounds and their minimal W;
* `.bits` — total bits ≥ N·log2 C (nN for seq-to-seq), in the paper's and exactmem's
  bit conventions;
* `.symbolic` — degrees and polynomial counts with sympy on tiny instances;
* `.toy` — brute-force sign patterns of toy hardmax Transformers;
* [`exactmem.arith.enclosure`][exactmem.arith.enclosure] (shared with the size claims) — proven rational enclosures of e
  and log2; exact decisions;
* `.plot` — lower bounds vs the O(N) baseline (matplotlib optional).

No floating point enters a verdict.
"""

from .arch import Architecture, BoundsInputError, parse_architecture
from .bookkeeping import PAPER, Bookkeeping
from ..arith.enclosure import Interval, decide, e_interval, log2_interval
from .next_token import min_W_next_token, next_token_chain, reduction_report
from .protocol import BoundTheorem, run_bound_theorems
from ..arith.steps import Report, Step
from .seq2seq import chain, min_W, min_W_report, min_W_sharp, simplification_cost

__all__ = [
    "Architecture", "BoundsInputError", "parse_architecture", "PAPER", "Bookkeeping", "Interval", "decide",
    "e_interval", "log2_interval", "min_W_next_token", "next_token_chain", "reduction_report", "BoundTheorem",
    "run_bound_theorems", "Report", "Step", "chain", "min_W", "min_W_report", "min_W_sharp",
    "simplification_cost",
]
