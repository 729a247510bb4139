"""Exact batched forward pass, with an optional trace of every activation.

All tokens of all sequences are evaluated together: token-wise layers (``Affine``,
``FeedForward``) become one exact integer matrix product per step on a matrix with one
column per token (see :mod:`affine_stack`); attention mixes columns within each sequence.

Hardmax, uniform attention and ReLU stay in Q, so the result is exact. Softmax weights are
transcendental: from the first softmax layer on, values are Arb balls (python-flint) at a
working precision ``prec``; the result then carries ``exact=False`` and the precision used.
A hardmax decision that the balls cannot settle raises :class:`Undecided`; callers retry at
a higher precision (:func:`forward_escalating`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, List, Optional, Sequence, Tuple

from .affine_stack import AffineStep, ScaledInts, run_stack
from .layers import Affine, Attention, Embed, FeedForward, Model, ModelError, identity, shape


class Undecided(Exception):
    """Ball arithmetic at the current precision cannot decide a comparison."""


class InputError(ValueError):
    """An input sequence does not fit the model (wrong token width, unknown token id)."""


@dataclass
class TraceEntry:
    """Output of one layer for the whole batch (columns = tokens), plus attention weights."""

    layer: int
    kind: str
    values: Any  # ScaledInts (exact) or list of rows of arb balls
    attention: Optional[list] = None  # per sequence, per head: n_q × n_k weights (Fraction or arb)


@dataclass
class ForwardResult:
    outputs: list  # per example: a column (readout "last") or a list of columns ("all")
    exact: bool
    precision: Optional[int] = None
    trace: Optional[List[TraceEntry]] = None
    lengths: List[int] = field(default_factory=list)


# ----------------------------------------------------------------------------- helpers

def feedforward_steps(layer: FeedForward) -> List[AffineStep]:
    """Eq. (3) as two affine steps; with a residual the first step carries z linearly."""
    q, m = shape(layer.W1)
    if layer.residual:
        carry = identity(m)
        s1 = AffineStep.make(carry + layer.W1, (Fraction(0),) * m + layer.b1, [False] * m + [True] * q)
        W2 = tuple(carry[i] + layer.W2[i] for i in range(m))
        s2 = AffineStep.make(W2, layer.b2, False)
    else:
        s1 = AffineStep.make(layer.W1, layer.b1, True)
        s2 = AffineStep.make(layer.W2, layer.b2, False)
    return [s1, s2]


def layer_steps(layer) -> List[AffineStep]:
    if isinstance(layer, Affine):
        return [AffineStep.make(layer.W, layer.b, layer.relu)]
    if isinstance(layer, FeedForward):
        return feedforward_steps(layer)
    raise TypeError(type(layer).__name__)


def _matvec(M, v):
    return [sum((a * x for a, x in zip(row, v) if a), Fraction(0)) for row in M]


def _key_sets(n: int, layer: Attention) -> List[Tuple[int, List[int]]]:
    queries = range(n) if layer.query == "all" else [n - 1]
    out = []
    for j in queries:
        keys = [k for k in range(n) if not (layer.keys == "others" and k == j)]
        if not keys:
            raise InputError("attention with keys='others' needs sequences of length at least 2")
        out.append((j, keys))
    return out


def hardmax_weights(scores: Sequence[Fraction]) -> List[Fraction]:
    """Eq. (1): 1/|I| on the argmax set I, 0 elsewhere (ties share the mass)."""
    top = max(scores)
    idx = [k for k, a in enumerate(scores) if a == top]
    w = Fraction(1, len(idx))
    return [w if a == top else Fraction(0) for a in scores]


class _ExactOps:
    """Arithmetic of the exact path: Fractions, hardmax eq. (1), uniform 1/|K|."""

    zero = Fraction(0)
    matvec = staticmethod(_matvec)

    @staticmethod
    def weights(kind: str, scores, n_keys: int):
        if kind == "uniform":
            return [Fraction(1, n_keys)] * n_keys
        if kind == "hardmax":
            return hardmax_weights(scores)
        raise ModelError("softmax attention is evaluated in ball arithmetic")


def _attention_sequence(layer: Attention, cols: list, want_weights: bool, ops):
    """One sequence through a multi-head attention layer (eq. (2)), in the arithmetic ``ops``.

    Returns the output columns (one per query) and, if asked, each head's weight rows.
    """
    n = len(cols)
    plan = _key_sets(n, layer)
    zero = ops.zero
    outs = [list(cols[j]) if layer.residual else [zero] * layer.m_out for j, _ in plan]
    weights_all = []
    for h in layer.heads:
        vals = [ops.matvec(h.WV, c) for c in cols]
        ks = [ops.matvec(h.WK, c) for c in cols] if layer.kind != "uniform" else None
        head_w = []
        for qi, (j, keys) in enumerate(plan):
            scores = None
            if ks is not None:
                qv = ops.matvec(h.WQ, cols[j])
                scores = [sum((a * b for a, b in zip(ks[k], qv)), zero) for k in keys]
            p = ops.weights(layer.kind, scores, len(keys))
            avg = [zero] * len(vals[0])
            for pk, k in zip(p, keys):
                if not pk == 0:  # exact zero weight (Fraction, or an exact arb ball): skip
                    avg = [a + pk * x for a, x in zip(avg, vals[k])]
            o = ops.matvec(h.WO, avg)
            outs[qi] = [a + b for a, b in zip(outs[qi], o)]
            if want_weights:
                row = [zero] * n
                for pk, k in zip(p, keys):
                    row[k] = pk
                head_w.append(row)
        weights_all.append(head_w)
    return outs, weights_all


# ----------------------------------------------------------------------------- ball path

def _arb_matvec(M, v):
    from flint import arb

    out = []
    for row in M:
        s = arb(0)
        for a, x in zip(row, v):
            if a:
                s += x * _to_arb(a)
        out.append(s)
    return out


def _to_arb(q: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(q.numerator, q.denominator))


def _arb_relu(x):
    from flint import arb

    if x >= 0:
        return x
    if x < 0:
        return arb(0)
    return arb(0).union(x)  # straddles 0: enclose [0, upper]


def _arb_gt(a, b) -> bool:
    return bool(a > b)


class _BallOps:
    """Arithmetic of the ball path: Arb balls; softmax shifted by the first score's midpoint."""

    matvec = staticmethod(_arb_matvec)

    @property
    def zero(self):
        from flint import arb

        return arb(0)

    @staticmethod
    def weights(kind: str, scores, n_keys: int):
        from flint import arb

        if kind == "uniform":
            return [arb(1) / n_keys] * n_keys
        if kind == "hardmax":
            return _ball_hardmax(scores)
        c = scores[0].mid()
        e = [(s - c).exp() for s in scores]
        tot = sum(e, arb(0))
        return [x / tot for x in e]


def _ball_hardmax(scores):
    """Hardmax on balls: candidates are the scores not certainly beaten; they must be
    certainly equal (exact and identical) for the argmax set to be decided."""
    from flint import arb

    n = len(scores)
    cand = [i for i in range(n) if not any(_arb_gt(scores[k], scores[i]) for k in range(n))]
    c0 = scores[cand[0]]
    for i in cand[1:]:
        s = scores[i]
        if not (s.rad() == 0 and c0.rad() == 0 and s.mid() == c0.mid()):
            raise Undecided("hardmax argmax set not decided at this precision")
    w = arb(1) / len(cand)
    return [w if i in cand else arb(0) for i in range(n)]


def _ball_stack(steps: Sequence[AffineStep], rows):
    """Token-wise steps on a batch of balls (list of rows of arb), via arb_mat products."""
    from flint import arb_mat

    H = arb_mat(rows)
    T = len(rows[0])
    for st in steps:
        A = arb_mat([[_to_arb(x) for x in r] for r in st.W])
        Z = A * H
        out = []
        for i in range(st.m_out):
            bi = _to_arb(st.b[i])
            r = [Z[i, t] + bi for t in range(T)]
            if st.relu_rows[i]:
                r = [_arb_relu(x) for x in r]
            out.append(r)
        H = arb_mat(out)
    return [[H[i, t] for t in range(T)] for i in range(H.nrows())]


# ----------------------------------------------------------------------------- driver

MAX_BATCH_ENTRIES = 1 << 21  # entries of the widest intermediate matrix per chunk


def concat_columns(parts: Sequence[ScaledInts]) -> ScaledInts:
    """Side-by-side concatenation of batches over their least common denominator."""
    from math import lcm

    D = 1
    for p in parts:
        D = lcm(D, p.den)
    rows = [[] for _ in range(len(parts[0].rows))]
    for p in parts:
        f = D // p.den
        for i, r in enumerate(p.rows):
            rows[i].extend(r if f == 1 else [x * f for x in r])
    return ScaledInts(rows, D)


def run_stack_chunked(steps: Sequence[AffineStep], X: ScaledInts, backend: str = "auto", trace: bool = False):
    """``run_stack`` over column chunks, so a wide layer (e.g. width 10^4 on 10^4 tokens)
    never materialises more than ``MAX_BATCH_ENTRIES`` entries at once."""
    from .affine_stack import StackResult

    width = max([X.shape[0]] + [s.m_out for s in steps])
    T = X.shape[1]
    chunk = max(1, MAX_BATCH_ENTRIES // width)
    if T <= chunk:
        return run_stack(steps, X, backend=backend, trace=trace)
    parts = [run_stack(steps, ScaledInts([r[a:a + chunk] for r in X.rows], X.den), backend=backend, trace=trace)
             for a in range(0, T, chunk)]
    out = concat_columns([p.out for p in parts])
    tr = [concat_columns([p.trace[k] for p in parts]) for k in range(len(steps))] if trace else []
    return StackResult(out, tr, parts[0].backend)


def _inputs_to_columns(model: Model, inputs) -> Tuple[List[List[Fraction]], List[int]]:
    """Flatten all sequences into columns (each column = one token vector)."""
    cols, lengths = [], []
    first = model.layers[0]
    for i, X in enumerate(inputs):
        if len(X) == 0:
            raise InputError(f"example {i}: empty sequence")
        lengths.append(len(X))
        for s, tok in enumerate(X):
            if model.input_type == "tokens":
                if not isinstance(tok, int) or not 0 <= tok < model.input_dim:
                    raise InputError(f"example {i}, position {s}: token id {tok!r} not in [0, {model.input_dim})")
                v = list(first.E[tok])
                if first.P is not None:
                    if s >= len(first.P):
                        raise InputError(f"example {i}: length {len(X)} exceeds the {len(first.P)} positional rows")
                    v = [a + b for a, b in zip(v, first.P[s])]
                cols.append(v)
            else:
                if len(tok) != model.input_dim:
                    raise InputError(f"example {i}, position {s}: token has dimension {len(tok)}, model expects {model.input_dim}")
                cols.append([Fraction(x) for x in tok])
    return cols, lengths


def _transpose(cols: List[list]) -> List[list]:
    return [list(r) for r in zip(*cols)]


def forward(model: Model, inputs, trace: bool = False, backend: str = "auto", prec: int = 128) -> ForwardResult:
    """Evaluate ``model`` on every input sequence. Exact unless the model has softmax."""
    if not inputs:
        return ForwardResult([], True, None, [] if trace else None, [])
    cols, lengths = _inputs_to_columns(model, inputs)
    layers = list(model.layers)
    start = 1 if isinstance(layers[0], Embed) else 0
    tr: Optional[List[TraceEntry]] = [] if trace else None
    ball = False
    state_exact: Optional[ScaledInts] = ScaledInts.from_fractions(_transpose(cols))
    state_ball = None
    if tr is not None and start == 1:
        tr.append(TraceEntry(0, "embed", state_exact))
    if model.has_softmax:
        from flint import ctx

        old_prec = ctx.prec
        ctx.prec = prec
    try:
        i = start
        while i < len(layers):
            layer = layers[i]
            if isinstance(layer, (Affine, FeedForward)):
                j = i
                steps: List[AffineStep] = []
                bounds = []
                while j < len(layers) and isinstance(layers[j], (Affine, FeedForward)):
                    steps.extend(layer_steps(layers[j]))
                    bounds.append((j, len(steps)))
                    j += 1
                if not ball:
                    res = run_stack_chunked(steps, state_exact, backend=backend, trace=trace)
                    state_exact = res.out
                    if tr is not None:
                        for lj, k in bounds:
                            tr.append(TraceEntry(lj, type(layers[lj]).__name__.lower(), res.trace[k - 1]))
                else:
                    for lj, _ in bounds:
                        state_ball = _ball_stack(layer_steps(layers[lj]), state_ball)
                        if tr is not None:
                            tr.append(TraceEntry(lj, type(layers[lj]).__name__.lower(), state_ball))
                i = j
                continue
            if not isinstance(layer, Attention):
                raise ModelError(f"layer {i}: unexpected {type(layer).__name__}")
            if layer.kind == "softmax" and not ball:
                ball = True
                state_ball = [[_to_arb(x) for x in row] for row in state_exact.to_fractions()]
            all_cols = _transpose(state_ball) if ball else _transpose(state_exact.to_fractions())
            new_cols, new_lengths, weights = [], [], []
            ops = _BallOps() if ball else _ExactOps()
            pos = 0
            for L in lengths:
                seq_cols = all_cols[pos:pos + L]
                pos += L
                o, w = _attention_sequence(layer, seq_cols, tr is not None, ops)
                new_cols.extend(o)
                new_lengths.append(len(o))
                weights.append(w)
            lengths = new_lengths
            rows = _transpose(new_cols)
            if ball:
                state_ball = rows
            else:
                state_exact = ScaledInts.from_fractions(rows)
            if tr is not None:
                tr.append(TraceEntry(i, "attention", state_ball if ball else state_exact, weights))
            i += 1
        final_cols = _transpose(state_ball) if ball else _transpose(state_exact.to_fractions())
    finally:
        if model.has_softmax:
            ctx.prec = old_prec
    outputs, pos = [], 0
    for L in lengths:
        seq_cols = final_cols[pos:pos + L]
        pos += L
        outputs.append(list(seq_cols[-1]) if model.readout == "last" else [list(c) for c in seq_cols])
    return ForwardResult(outputs, not ball, prec if ball else None, tr, lengths)


def decode_output(model: Model, out) -> Any:
    """Exact decoding: identity returns the column(s); argmax the index of the strict maximum.

    A tie for the maximum decodes to ``None`` (not memorized: the papers need a strict argmax).
    """
    if model.decode == "identity":
        return out
    cols = out if model.readout == "all" else [out]
    res = []
    for c in cols:
        top = max(c)
        idx = [k for k, x in enumerate(c) if x == top]
        res.append(idx[0] if len(idx) == 1 else None)
    return res if model.readout == "all" else res[0]
