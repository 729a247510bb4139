"""Code-length claims of graph models (kernel; standard library only; ``docs/verify-format.md`` § Code length).

A certificate with a ``codelength_bits`` claim has a graph whose output is log₂ of the model's
probabilities (the producer appends ``(x − ln Σ exp x) / ln 2`` to the network: table ops the graph
evaluator encloses, and the same argmax as the logits), and claims per example an upper bound c on
its code length Σ over the read positions of −log₂ p(label). With the output enclosed in [lo, hi]
over 2^s, that sum lies in [Σ −hi_label, Σ −lo_label] / 2^s: the claim is confirmed when the upper
end is at most c, REFUTED when the lower end exceeds c, undecided otherwise (more bits).
"""

from __future__ import annotations

from fractions import Fraction

from .enclosure import Undecided
from .graph import run_graph
from .text import fmt


def measure_example(cert, e: int, F: int, budget, judge) -> tuple:
    """(status, witness) of example e at precision F: its claimed verdict by ``judge``
    (`checker.judge_verdict`; a claim "unknown" is not judged), then its claimed code length."""
    cols, s = run_graph(cert.graph, cert.inputs[e], cert.tokens, F, budget, cert.position)
    status, wit = judge(cert, e, cols, s) if cert.outputs[e] != "unknown" else ("pass", None)
    if status != "pass":
        return status, wit
    ys = cert.labels[e] if cert.position == "all" else [cert.labels[e]]
    if any(sp for _, _, sp in cols):
        raise Undecided()  # a special value: no finite code length is shown
    c, low, high = cert.codelengths[e], Fraction(-sum(hi[y] for (_, hi, _), y in zip(cols, ys)), 1 << s), \
        Fraction(-sum(lo[y] for (lo, _, _), y in zip(cols, ys)), 1 << s)
    if high <= c:
        return "pass", None
    if low > c:
        return "fail", {"example": e + cert.first, "reason": "codelength", "claimed": fmt(c), "lower_bound": fmt(low),
                        "upper_bound": fmt(high)}
    raise Undecided()
