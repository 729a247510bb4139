"""Re-deriving a model's outputs (kernel): exact in Q, then rational intervals from the first softmax.

Exact values are integer columns over one common denominator D (``nums / D``); a token-wise layer
is integer dot products, new denominator ``L * D``. hardmax/uniform/softmax2 attention stays exact:
ties share the mass, softmax2 weights are 2^{s_k − min s}/Σ_j 2^{s_j − min s} for integer scores
(Dana et al. note §3.7). After a softmax layer, values are p-bit intervals (`enclosure`); their
sums, products and softmax are below.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import chain, repeat
from math import gcd, lcm
from operator import add, mul, sub
from typing import Iterable, List, Optional, Sequence, Tuple

from .enclosure import ONE, ZERO, Undecided, exp_bound, round_ratio  # noqa: F401 (Undecided re-exported)
from .interval import Interval, rounded
from .limits import Budget, LimitExceeded, Limits
from .linear import Affine, Embed, FeedForward, Lin, over_lcm
from .text import fmt
from .verdict import Verdict


class Softmax2Fault(Exception):
    """A softmax2 score is not an integer (``spread`` None) or the scores spread past the value limit;
    ``where`` = (layer, head, query position, key position); ``precision``: interval bits, if any."""

    def __init__(self, where: Tuple[int, int, int, int], score, spread: Optional[int], precision: Optional[int]):
        super().__init__()
        self.where, self.score, self.spread, self.precision = where, score, spread, precision


# ------------------------------------------------ rational intervals of layer models

def idot(xs: Iterable, ys: Iterable, p: int) -> Interval:
    """Σ x_i y_i of numbers or intervals, exact from the endpoint products, rounded once."""
    lo = hi = ZERO
    for x, y in zip(xs, ys):
        x, y = (x if isinstance(x, Interval) else (x,)), (y if isinstance(y, Interval) else (y,))
        ps = [a * b for a in x for b in y]
        lo += min(ps)
        hi += max(ps)
    return rounded(lo, hi, p)


def isum(xs: Iterable, p: int) -> Interval:
    """Sum of numbers or intervals, exact, rounded once."""
    return idot(xs, repeat(1), p)


def irelu(a: Interval) -> Interval:
    """max(0, ·) is monotone, so it acts on the endpoints (exactly)."""
    return Interval(max(a.lo, ZERO), max(a.hi, ZERO))


def softmax(scores: Sequence, p: int, tick=None) -> List[Interval]:
    """Enclosures of p_k = exp(a_k) / Σ_k' exp(a_k') for scores a_k in the given intervals: with
    E_k = exp(a_k - max hi) in [L_k, U_k], p_k in [L_k / (L_k + Σ_{k'≠k} U_k'), U_k / (U_k + Σ_{k'≠k} L_k')]
    (clipped to [0, 1]); an exponent below -4p gets L_k = 0 (``docs/certificate.md`` § Proofs of the
    enclosures)."""
    ivs = [a if isinstance(a, Interval) else Interval(Fraction(a), Fraction(a)) for a in scores]
    c = max(a.hi for a in ivs)
    floor = Fraction(-4 * p)
    E = [(exp_bound(a.lo - c, p, False, tick) if a.lo - c >= floor else ZERO,
          exp_bound(max(a.hi - c, floor), p, True, tick)) for a in ivs]
    s_lo = sum(l for l, _ in E)
    s_hi = sum(h for _, h in E)
    out = []
    for l, h in E:
        lo, hi = rounded(l / (l + s_hi - h) if l else ZERO, h / (h + s_lo - l), p)
        out.append(Interval(lo, min(hi, ONE)))
    return out


def _common(parts: List[Tuple[List[int], int]]) -> Tuple[List[List[int]], int]:
    """Columns nums_i / den_i as numerators over the lcm of the denominators: (columns, lcm)."""
    den = lcm(*(d for _, d in parts))
    return [nums if d == den else list(map(mul, nums, repeat(den // d))) for nums, d in parts], den


def softmax2_exponents(scores: List[Optional[Fraction]], where, budget: Budget, shown=None, p=None) -> List[int]:
    """s_k − min s for integer scores; Softmax2Fault for a score that is not an integer (None: an
    interval with no integer, reported as ``shown[k]``) or when the spread passes the value limit."""
    for k, sc in enumerate(scores):
        if sc is None or sc.denominator != 1:
            raise Softmax2Fault(where(k), sc if shown is None else shown[k], None, p)
    ints = [sc.numerator for sc in scores]
    lo, hi = min(ints), max(ints)
    if hi - lo > budget.limits.max_value_bits:
        raise Softmax2Fault(where(ints.index(hi)), scores[ints.index(hi)], hi - lo, p)
    return [x - lo for x in ints]


def _exact_layer(i: int, layer, cols: List[List[int]], D: int, budget: Budget):
    """Layer i on the columns ``cols / D``: (new columns, new denominator)."""
    t = budget.tick
    if isinstance(layer, Affine):
        return [layer.lin.apply(c, D, layer.relu, t) for c in cols], D * layer.lin.L
    if isinstance(layer, FeedForward):
        l1, l2 = layer.lin1, layer.lin2
        out = [l2.apply(l1.apply(c, D, True, t), D * l1.L, False, t) for c in cols]
        if layer.residual:
            k = l1.L * l2.L
            out = [list(map(add, o, map(mul, c, repeat(k)))) for o, c in zip(out, cols)]
        return out, D * l1.L * l2.L
    n = len(cols)
    heads = [(WQ, WK, None if WK is None else [WK.apply(c, D, False, t) for c in cols], WV, WO)
             for WQ, WK, WV, WO in layer.heads]
    res = []
    for j in ([n - 1] if layer.query == "last" else range(n)):
        budget.tick()
        K = [k for k in range(n) if layer.keys == "all" or k != j]
        parts = [(cols[j], D)] if layer.residual else []
        for h, (WQ, WK, keys, WV, WO) in enumerate(heads):
            if keys is None:
                I, a = K, None
            else:
                q = WQ.apply(cols[j], D, False, t)
                sc = [t() or sum(map(mul, keys[k], q)) for k in K]
                if layer.kind == "softmax2":
                    den = D * D * WQ.L * WK.L  # score k = sc[k] / den
                    ex = softmax2_exponents([Fraction(v, den) for v in sc], lambda k: (i, h, j, K[k]), budget)
                    I, a = K, [1 << x for x in ex]
                else:
                    best = max(sc)
                    I, a = [k for k, s in zip(K, sc) if s == best], None
            Z = len(I) if a is None else sum(a)
            rows = (cols[k] for k in I) if a is None else (list(map(mul, cols[k], repeat(ak))) for k, ak in zip(I, a))
            z = _column_sum(rows, t)
            o = WO.apply(WV.apply(z, D, False, t), D * WV.L, False, t)
            parts.append((o, D * WV.L * WO.L * Z))
        summands, den = _common(parts)
        res.append((list(map(sum, zip(*summands))), den))
    return _common(res)


def common_divisor(g: int, values, tick) -> int:
    """gcd(g, *values), the clock checked after each value (a gcd of big integers takes time)."""
    for v in values:
        if g == 1:
            break
        tick()
        g = gcd(g, v)
    return g


def _column_sum(rows, tick) -> List[int]:
    """The sum of integer columns, the clock checked after each one."""
    z = None
    for r in rows:
        tick()
        z = r if z is None else list(map(add, z, r))
    return z


def exact_prefix(cert, x, stop: int, budget: Budget):
    """Run layers [0, stop) exactly on one example; return (columns, denominator)."""
    layers = cert.layers
    if cert.tokens:
        emb: Embed = layers[0]
        cols = [emb.E[t] if emb.P is None else list(map(add, emb.E[t], emb.P[s])) for s, t in enumerate(x)]
        D, start = emb.L, 1
    else:
        (cols, D), start = over_lcm(x, budget), 0
    for i, layer in enumerate(layers[start:stop], start):
        budget.tick()
        cols, D = _exact_layer(i, layer, cols, D, budget)
        if D.bit_length() > 256:
            g = common_divisor(D, chain.from_iterable(cols), budget.tick)
            if g > 1:
                cols, D = [[v // g for v in c] for c in cols], D // g
        budget.value(max(map(int.bit_length, chain((D,), chain.from_iterable(cols)))),
                     f"the output of model.layers[{i}]")
    return cols, D


def _lin_iv(lin: Lin, col: List[Interval], p: int, relu: bool = False, tick=None) -> List[Interval]:
    """Enclosure of W x + b for x in a box: midpoint image ± |W| · radius, rounded to p bits."""
    (LO, HI), M = over_lcm([[x.lo for x in col], [x.hi for x in col]])
    mid = lin.apply(list(map(add, LO, HI)), 2 * M, False, tick)
    rad = list(map(sub, HI, LO))
    r = lin.absolute().apply(rad, 2 * M, False, tick) if any(rad) else repeat(0)
    den = 2 * M * lin.L
    out = [Interval(round_ratio(c - e, den, p, False), round_ratio(c + e, den, p, True)) for c, e in zip(mid, r)]
    return [irelu(x) for x in out] if relu else out


def _argmax_set(scores: List[Interval]) -> List[int]:
    """Indices of the maximal scores, if the intervals decide them."""
    best = max(s.lo for s in scores)
    cand = [k for k, s in enumerate(scores) if s.hi >= best]
    if len(cand) == 1 or all(scores[k].lo == scores[k].hi == best for k in cand):
        return cand
    raise Undecided()


def _iv_integer(x: Interval) -> Optional[Fraction]:
    """The integer value of a point interval; None if [lo, hi] contains no integer; Undecided
    if it contains one but is not a point."""
    if x.lo == x.hi and x.lo.denominator == 1:
        return x.lo
    if -((-x.lo.numerator) // x.lo.denominator) > x.hi.numerator // x.hi.denominator:  # ceil(lo) > floor(hi)
        return None
    raise Undecided()


def _iv_layer(i: int, layer, cols: List[List[Interval]], p: int, budget: Budget) -> List[List[Interval]]:
    """Layer i on columns of intervals, rounded to p bits."""
    t = budget.tick
    if isinstance(layer, Affine):
        return [_lin_iv(layer.lin, c, p, layer.relu, t) for c in cols]
    if isinstance(layer, FeedForward):
        out = [_lin_iv(layer.lin2, _lin_iv(layer.lin1, c, p, True, t), p, False, t) for c in cols]
        return [[isum(xy, p) for xy in zip(o, c)] for o, c in zip(out, cols)] if layer.residual else out
    n = len(cols)
    heads = [(WQ, None if WK is None else [_lin_iv(WK, c, p, False, t) for c in cols],
              [_lin_iv(WV, c, p, False, t) for c in cols], WO)
             for WQ, WK, WV, WO in layer.heads]
    res = []
    for j in ([n - 1] if layer.query == "last" else range(n)):
        budget.tick()
        K = [k for k in range(n) if layer.keys == "all" or k != j]
        parts = [cols[j]] if layer.residual else []
        for h, (WQ, keys, vals, WO) in enumerate(heads):
            w, I = None, K
            if keys is not None:
                q = _lin_iv(WQ, cols[j], p, False, t)
                sc = [idot(keys[k], q, p) for k in K]
                if layer.kind == "softmax":
                    w = softmax(sc, p, budget.tick)
                elif layer.kind == "softmax2":
                    ints = [_iv_integer(x) for x in sc]
                    a = [1 << x for x in softmax2_exponents(ints, lambda k: (i, h, j, K[k]), budget, sc, p)]
                    w = [Fraction(ak, sum(a)) for ak in a]
                else:
                    I = [K[r] for r in _argmax_set(sc)]
            w = w or [Fraction(1, len(I))] * len(I)
            mixed = [idot(w, [vals[k][r] for k in I], p) for r in range(WO.cols)]
            parts.append(_lin_iv(WO, mixed, p, False, t))
        res.append([isum(xs, p) for xs in zip(*parts)])
    return res


def interval_suffix(cert, cols: List[List[int]], D: int, stop: int, p: int, budget: Budget):
    """Layers [stop, end) on the exact columns ``cols / D`` with p-bit intervals."""
    iv = [[Interval(Fraction(v, D), Fraction(v, D)) for v in c] for c in cols]
    for i, layer in enumerate(cert.layers[stop:], stop):
        budget.tick()
        iv = _iv_layer(i, layer, iv, p, budget)
        budget.value(max(max(x.numerator.bit_length(), x.denominator.bit_length()) for c in iv for y in c for x in y),
                     f"an interval endpoint after model.layers[{i}]")
    return iv


# ------------------------------------------------ judging a layer model's example (re-exported by checker)

SOFTMAX2_MAX_SPREAD = Limits().max_value_bits  # default largest softmax2 score spread max s − min s evaluated
LAYER_MESSAGES = {"outputs": "claimed output differs from the re-derived output",  # refutations: checker.REFUTED_BY
                  "label": "label not met by the re-derived output"}


def _judge_column(col, label, decode: str, eps: Optional[Fraction]) -> str:
    """'pass' | 'fail' | 'undecided' for one output column (Fractions or Intervals) against its label."""
    if decode == "identity" and eps is None:
        return "pass" if col == label else "fail"
    col = [x if isinstance(x, Interval) else (x, x) for x in col]  # (lower, upper) bounds
    if decode == "argmax":
        (lab_lo, lab_hi), others = col[label], [x for k, x in enumerate(col) if k != label]
        sure = all(lab_lo > hi for _, hi in others)
        wrong = any(lo >= lab_hi for lo, _ in others)
    else:
        sure = all(lo >= y - eps and hi <= y + eps for (lo, hi), y in zip(col, label))
        wrong = any(hi < y - eps or lo > y + eps for (lo, hi), y in zip(col, label))
    return "pass" if sure else "fail" if wrong else "undecided"


def judge_example(cert, e: int, out) -> Tuple[str, Optional[dict]]:
    """Decide example e from its output columns (Fractions or Intervals): (status, witness)."""
    label = cert.labels[e]
    cols, labs = ([out[-1]], [label]) if cert.position == "last" else (out, label)
    undecided = False
    for t, (col, lab) in enumerate(zip(cols, labs)):
        r = _judge_column(col, lab, cert.decode, cert.error_bound)
        if r == "fail":
            w = {"example": e + cert.first, "expected": fmt(lab), "got": fmt(col), "reason": "label"}
            return "fail", {**w, "position": t} if cert.position == "all" else w
        undecided |= r == "undecided"
    if undecided:
        return "undecided", None
    claimed = cert.outputs[e]
    derived = label if cert.decode == "argmax" else (cols[0] if cert.position == "last" else cols)
    if claimed is not None and claimed != derived:
        return "fail", {"example": e + cert.first, "expected": fmt(claimed), "got": fmt(derived), "reason": "outputs"}
    return "pass", None


def layer_example(cert, e: int, cap: int, budget: Budget, ladder):
    """(status, witness, precision used) of example e of a layer model: exact layers, then intervals from
    the first softmax layer on, at the precisions of ``ladder`` (the checker's ``_ladder``). A softmax2
    score that is not an integer is a REFUTED Verdict; a softmax2 score spread past the value limit
    raises LimitExceeded (the example is undecided; ``precision``: the bits it was tried at)."""
    g = e + cert.first
    try:
        stop = len(cert.layers) if cert.softmax_at is None else cert.softmax_at
        cols, D = exact_prefix(cert, cert.inputs[e], stop, budget)
        if cert.softmax_at is None:
            keep = cols[-1:] if cert.position == "last" else cols
            return (*judge_example(cert, e, [[budget.tick() or Fraction(v, D) for v in c] for c in keep]), None)
        return ladder(cap, lambda p: judge_example(cert, e, interval_suffix(cert, cols, D, stop, p, budget)))
    except Softmax2Fault as f:
        (layer, h, j, k), p = f.where, f.precision
        if f.spread is not None:
            x = LimitExceeded("max_value_bits", f"softmax2 score spread {fmt(f.spread)} at model.layers[{layer}] exceeds "
                                                f"{budget.limits.max_value_bits}")
            x.precision = p
            raise x from None
        wit = {"example": g, "reason": "softmax2_score", "layer": layer, "head": h, "query": j, "position": k,
               "score": fmt(f.score)}
        return Verdict("REFUTED", wit, f"example {g}: softmax2 score {fmt(f.score)} of key position {k} "
                                       f"(model.layers[{layer}], head {h}, query {j}) is not an integer", p, cert.measured)
