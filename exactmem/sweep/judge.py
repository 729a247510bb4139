"""Judging outputs and the minimal-``b`` search.

`Judge` decides the ``exact`` and ``nearest`` criteria per example (outputs may be
Fractions, ``None`` for non-finite floats, or python-flint balls); `evaluate_exact`
evaluates a (quantized) model exactly and tallies them; `search_minimal` bisects for
the smallest working ``b`` and checks the monotonicity it assumes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional

from ..arith.numbers import least_true

MAX_FAILING = 20  # failing example indices kept per evaluation


def _tri_gt(v, t: Fraction) -> Optional[bool]:
    """v > t: True/False, None if a ball cannot decide (v: Fraction, None = non-finite, arb)."""
    if v is None:
        return False
    if isinstance(v, Fraction):
        return v > t
    from flint import arb, fmpq

    ta = arb(fmpq(t.numerator, t.denominator))
    if v > ta:
        return True
    if v <= ta:
        return False
    return None


def _tri_lt(v, t: Fraction) -> Optional[bool]:
    if v is None:
        return False
    if isinstance(v, Fraction):
        return v < t
    from flint import arb, fmpq

    ta = arb(fmpq(t.numerator, t.denominator))
    if v < ta:
        return True
    if v >= ta:
        return False
    return None


def _all3(vals) -> Optional[bool]:
    vals = list(vals)
    if any(v is False for v in vals):
        return False
    if all(v is True for v in vals):
        return True
    return None


class Judge:
    """Decides, for one example's output, the ``exact`` and ``nearest`` criteria.

    Output entries may be Fractions (exact or a finite float's exact value), ``None`` (a
    non-finite float: always wrong) or python-flint ``arb`` balls (undecided when the ball
    straddles a threshold)."""

    def __init__(self, model, dataset, error_bound=None):
        self.decode, self.readout = model.decode, model.readout
        self.labels = list(dataset.labels)
        self.eps = None if error_bound is None else Fraction(error_bound)
        self.values: Dict[int, List[Fraction]] = {}
        if self.decode == "identity":
            vals: Dict[int, set] = {}
            for lab in self.labels:
                for col in self._label_cols(lab):
                    for c, y in enumerate(col):
                        vals.setdefault(c, set()).add(Fraction(y))
            self.values = {c: sorted(v) for c, v in vals.items()}
        self.index = {c: {y: i for i, y in enumerate(v)} for c, v in self.values.items()}

    def _label_cols(self, lab):
        return list(lab) if self.readout == "all" else [lab]

    def _pairs(self, out, e):
        lab = self.labels[e]
        cols = list(out) if self.readout == "all" else [out]
        return list(zip(cols, self._label_cols(lab)))

    def _argmax(self, col, k) -> Optional[bool]:
        if col is None or any(x is None for x in col):
            return False
        res = []
        for j, x in enumerate(col):
            if j == k:
                continue
            if isinstance(x, Fraction) and isinstance(col[k], Fraction):
                res.append(col[k] > x)
            else:
                from flint import arb, fmpq

                a = col[k] if not isinstance(col[k], Fraction) else arb(fmpq(col[k].numerator, col[k].denominator))
                c = x if not isinstance(x, Fraction) else arb(fmpq(x.numerator, x.denominator))
                res.append(True if a > c else (False if a <= c else None))
        return _all3(res)

    def _equal(self, x, y: Fraction) -> Optional[bool]:
        if x is None:
            return False
        if isinstance(x, Fraction):
            return x == y
        gt, lt = _tri_gt(x, y), _tri_lt(x, y)
        if gt or lt:
            return False
        if x.is_exact():  # an exact ball equal to y
            return True
        return None  # a ball containing y: equality cannot be decided

    def _within(self, x, y: Fraction) -> Optional[bool]:
        if x is None:
            return False
        lo, hi = _tri_lt(x, y - self.eps), _tri_gt(x, y + self.eps)
        return _all3([None if lo is None else not lo, None if hi is None else not hi])

    def exact(self, out, e) -> Optional[bool]:
        res = []
        for col, lab in self._pairs(out, e):
            if self.decode == "argmax":
                res.append(self._argmax(col, lab))
            elif col is None:
                res.append(False)
            elif self.eps is None:
                res.append(_all3(self._equal(x, Fraction(y)) for x, y in zip(col, lab)))
            else:
                res.append(_all3(self._within(x, Fraction(y)) for x, y in zip(col, lab)))
        return _all3(res)

    def nearest(self, out, e) -> Optional[bool]:
        if self.decode == "argmax":
            return self.exact(out, e)
        res = []
        for col, lab in self._pairs(out, e):
            if col is None:
                res.append(False)
                continue
            for c, (x, y) in enumerate(zip(col, lab)):
                vals, where = self.values[c], self.index[c]
                y = Fraction(y)
                i = where[y]
                if x is None:
                    res.append(False)
                    continue
                conds = []
                if i > 0:
                    conds.append(_tri_gt(x, (vals[i - 1] + y) / 2))
                if i + 1 < len(vals):
                    conds.append(_tri_lt(x, (vals[i + 1] + y) / 2))
                res.append(_all3(conds))
        return _all3(res)


def _tally(judge: Judge, outputs) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for crit in ("exact", "nearest"):
        fn = getattr(judge, crit)
        fail, und = [], 0
        for e, o in enumerate(outputs):
            v = fn(o, e)
            if v is False:
                fail.append(e)
            elif v is None:
                und += 1
        out[crit] = {"fail": len(fail), "undecided": und, "failing": fail[:MAX_FAILING]}
    return out


def _ok(ev: Dict[str, Any], crit: str) -> bool:
    r = ev[crit]
    return r["fail"] == 0 and r["undecided"] == 0


# ----------------------------------------------------------------------------- exact evaluation


def exact_outputs(model, inputs, engine: str = "auto", prec: int = 128, max_prec: int = 4096):
    """Exact (or, after softmax, ball) outputs; (outputs, precision used, error message or None)."""
    from ..model.forward import Undecided, forward
    from ..model.layers import ModelError

    p = prec
    while True:
        try:
            res = forward(model, inputs, backend=engine, prec=p)
            return res.outputs, (None if res.exact else p), None, res.exact
        except Undecided:
            if p >= max_prec:
                return None, p, f"undecided at precision {p}", False
            p *= 2
        except ModelError as e:  # e.g. a softmax2 score that quantization made non-integer
            return None, p, f"{type(e).__name__}: {e}", False


def evaluate_exact(model, dataset, judge: Judge, engine: str = "auto", prec: int = 128,
                   max_prec: int = 4096) -> Dict[str, Any]:
    """Evaluate exactly and tally both criteria (balls: doubling the precision while undecided)."""
    p = prec
    while True:
        outs, used, err, exact = exact_outputs(model, dataset.inputs, engine, p, max_prec)
        if outs is None:
            n = len(dataset)
            t = {c: {"fail": 0, "undecided": n, "failing": []} for c in ("exact", "nearest")}
            t["error"] = err
            t["precision"] = used
            return t
        t = _tally(judge, outs)
        if exact or (t["exact"]["undecided"] == 0 and t["nearest"]["undecided"] == 0) or used >= max_prec:
            if not exact:
                t["precision"] = used
            return t
        p = used * 2


# ----------------------------------------------------------------------------- minimal-b search


def search_minimal(evaluate: Callable[[int], Dict[str, Any]], crit: str, lowest: int, identity: Optional[int],
                   cap: int, neighbours: int, cache: Dict[int, Dict[str, Any]], start: int = 8) -> Dict[str, Any]:
    """Smallest b in [lowest, cap] with every example right under ``crit``, by bisection.

    ``identity``: a b known to leave the model unchanged (then every larger b does too), or
    None (the search doubles b from ``start`` until it works or passes ``cap``; ``start``
    only saves evaluations, the result does not depend on it).
    ``cache`` maps b to evaluations and is shared between criteria. After the bisection,
    ``neighbours`` values on each side are evaluated; every evaluated b that contradicts
    monotonicity (a success below the minimum, a failure above it) is a violation."""

    def ok(b):
        if b not in cache:
            cache[b] = evaluate(b)
        return _ok(cache[b], crit)

    status, bmin = "found", None
    if ok(lowest):
        bmin = lowest
    else:
        lo, hi = lowest, None
        if identity is not None:
            if ok(identity):
                hi = identity
            else:
                status = "fails unquantized"
        else:
            b = max(lowest + 1, min(start, cap))
            while b <= cap:
                if ok(b):
                    hi = b
                    break
                lo = b
                b *= 2
            if hi is None and lo < cap and ok(cap):
                hi = cap
            if hi is None:
                status = f"none up to {cap}"
        if hi is not None:
            bmin = least_true(ok, lo, hi)
    if bmin is not None:
        for d in range(1, neighbours + 1):
            if bmin - 1 - d >= lowest:
                ok(bmin - 1 - d)
            ok(bmin + d)
    violations = []
    if bmin is not None:
        for b in sorted(cache):
            good = _ok(cache[b], crit)
            if b < bmin and good:
                violations.append({"b": b, "ok": True, "expected": False})
            elif b >= bmin and not good:
                violations.append({"b": b, "ok": False, "expected": True})
    elif status.startswith("fails"):
        violations = [{"b": b, "ok": True, "expected": False} for b in sorted(cache) if _ok(cache[b], crit)]
    return {"min_b": bmin, "status": status, "violations": violations}
