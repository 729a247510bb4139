"""Code-length claims of graph models (kernel; standard library only; ``docs/verify-format.md`` § Code length).

A graph certificate may claim, per example, an upper bound c on the model's code length for its
labels: Σ over the read positions of −log₂ softmax(s)_y = log₂ Σ_k exp(s_k − s_y), s the scores,
y the label. From the kernel's score enclosures [lo_k, hi_k] (over 2^s) this is bounded by

    log₂ Σ_k exp(lo_k − hi_y)  <=  −log₂ p(y)  <=  log₂ Σ_k exp(hi_k − lo_y)

since each term is increasing in s_k and decreasing in s_y. Both sums hold their k = y term: the
upper sum's is exp(hi_y − lo_y) >= 1, so its logarithm is >= 0. exp is `fixedpoint.exp_fx` (outward),
ln is `logarithm.ln_point` over ln 2 (`logarithm.ln2`): the upper bound divides the upper end of the
logarithm by the lower end of ln 2 (both >= 0), the lower bound the lower end by the upper end (or is
0 when the logarithm's lower end is negative: −log₂ p >= 0 always). The claim is confirmed when the
upper bound is at most c, REFUTED when the lower bound exceeds c, undecided otherwise (more bits).
"""

from __future__ import annotations

from fractions import Fraction

from .enclosure import Undecided
from .fixedpoint import exp_fx
from .logarithm import ln2, ln_point


def prediction_bits(lo, hi, y: int, s: int, F: int, budget) -> tuple:
    """(lower, upper) Fractions enclosing −log₂ softmax(scores)[y] for scores in [lo, hi] / 2^s, s <= F.
    e^x < 2^(2x): the widest term's size is charged to the value limit before it is computed."""
    sh, tick = F - s, budget.tick
    budget.value(2 * max(0, (max(hi) - lo[y]) >> s) + F + 2, "a code-length term exp(s_k - s_label)")
    up = sum(exp_fx((h - lo[y]) << sh, F, True, tick) for h in hi)
    down = sum(exp_fx((v - hi[y]) << sh, F, False, tick) for v in lo)
    L2 = ln2(F)
    upper = ln_point(Fraction(up, 1 << F), F).hi / L2.lo
    low = ln_point(Fraction(down, 1 << F), F).lo if down else -1
    return (low / L2.hi if low > 0 else Fraction(0)), upper


def check_codelength(claimed: Fraction, cols, labels, s: int, F: int, budget):
    """None when the enclosed code length of one example (``cols``: (lo, hi, special codes) per read
    position, ``labels`` one per position) is at most ``claimed``; (lower bound, upper bound) when
    the lower bound exceeds it (a refutation); Undecided when neither is shown at this precision or a
    score is a special value (no finite code length is shown)."""
    low = high = Fraction(0)
    for (lo, hi, sp), y in zip(cols, labels):
        if sp:
            raise Undecided()
        a, b = prediction_bits(lo, hi, y, s, F, budget)
        low, high = low + a, high + b
    if high <= claimed:
        return None
    if low > claimed:
        return low, high
    raise Undecided()
