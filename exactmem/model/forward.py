"""Exact batched forward pass, with an optional trace of every activation.

All tokens of all sequences are evaluated together: token-wise layers (``Affine``,
``FeedForward``) become one exact integer matrix product per step on a matrix with one
column per token (see `affine_stack`); attention mixes columns within each sequence.

Hardmax, uniform attention, base-2 softmax (``softmax2``: 2^{s_k}/Σ_j 2^{s_j} for integer
scores, Dana et al. note §3.7) and ReLU stay in Q, so the result is exact. Softmax weights are
transcendental: from the first softmax layer on, values are Arb balls (python-flint) at a
working precision ``prec``; the result then carries ``exact=False`` and the precision used.
A hardmax decision that the balls cannot settle raises [`Undecided`][exactmem.model.Undecided]; callers retry at
a higher precision (`forward_escalating`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import lcm
from operator import mul
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .affine_stack import AffineStep, ScaledInts, run_stack
from .layers import (SOFTMAX2_MAX_SPREAD, Affine, Attention, Embed, FeedForward, Model, ModelError, identity,
                     shape)


class Undecided(Exception):
    """Ball arithmetic at the current precision cannot decide a comparison."""


class InputError(ValueError):
    """An input sequence does not fit the model (wrong token width, unknown token id)."""


class Softmax2Error(ModelError):
    """A ``softmax2`` score is not an integer, or a query's score spread exceeds
    ``SOFTMAX2_MAX_SPREAD``; raised from `forward` with the layer, example, head and
    positions in the message. ``key`` is the index of the offending key within its key set."""

    def __init__(self, message: str, key: Optional[int] = None):
        super().__init__(message)
        self.key = key


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


def softmax2_exponents(scores: Sequence[Fraction]) -> List[int]:
    """The integers s_k − min_j s_j of a softmax2 score list; Softmax2Error if some s_k is not
    an integer or the spread exceeds ``SOFTMAX2_MAX_SPREAD``."""
    ints = []
    for k, a in enumerate(scores):
        a = Fraction(a)
        if a.denominator != 1:
            raise Softmax2Error(f"score {a} is not an integer (softmax2 needs integer scores)", key=k)
        ints.append(a.numerator)
    lo, hi = min(ints), max(ints)
    if hi - lo > SOFTMAX2_MAX_SPREAD:
        raise Softmax2Error(f"score spread max − min = {hi - lo} exceeds the softmax2 limit 2^20",
                            key=ints.index(hi))
    return [a - lo for a in ints]


def softmax2_weights(scores: Sequence[Fraction]) -> List[Fraction]:
    """Base-2 softmax 2^{s_k}/Σ_j 2^{s_j} for integer scores (note §3.7), exactly in Q.

    Computed as 2^{s_k − m}/Σ_j 2^{s_j − m} with m = min s (integer numerators; the same
    Fractions as shifting by max s)."""
    e = softmax2_exponents(scores)
    num = [1 << x for x in e]
    Z = sum(num)
    return [Fraction(a, Z) for a in num]


class _ExactOps:
    """Arithmetic of the exact path: Fractions, hardmax eq. (1), uniform 1/|K|, softmax2.

    Matrices are held as integers over their lcm denominator L (cached per layer), so M v is
    integer dot products; a query's output is accumulated as integers over one denominator
    (``start``/``add_matvec``/``finish``) and normalised once — fast for the big exact
    readouts of Dana et al.'s mode (a)."""

    zero = Fraction(0)

    def __init__(self):
        self._ints = {}

    def _int_form(self, M):
        ent = self._ints.get(id(M))
        if ent is None:
            L = lcm(*(x.denominator for row in M for x in row))
            ent = self._ints[id(M)] = (M, [[x.numerator * (L // x.denominator) for x in row] for row in M], L)
        return ent[1], ent[2]  # M is kept alive in the cache, so id(M) stays unique

    @staticmethod
    def _scaled(v):
        v = [Fraction(x) for x in v]
        D = lcm(*(x.denominator for x in v))
        return [x.numerator * (D // x.denominator) for x in v], D

    def _matvec_ints(self, M, v):
        A, L = self._int_form(M)
        vi, D = self._scaled(v)
        return [sum(map(mul, row, vi)) for row in A], L * D

    def matvec(self, M, v):
        nums, den = self._matvec_ints(M, v)
        return [Fraction(x, den) for x in nums]

    def start(self, col):
        return self._scaled(col)

    def add_matvec(self, acc, M, v):
        nums, den = self._matvec_ints(M, v)
        a, D = acc
        L = lcm(D, den)
        fa, fb = L // D, L // den
        return [x * fa + y * fb for x, y in zip(a, nums)], L

    @staticmethod
    def finish(acc):
        nums, den = acc
        return [Fraction(x, den) for x in nums]

    @staticmethod
    def weights(kind: str, scores, n_keys: int):
        if kind == "uniform":
            return [Fraction(1, n_keys)] * n_keys
        if kind == "hardmax":
            return hardmax_weights(scores)
        if kind == "softmax2":
            return softmax2_weights(scores)
        raise ModelError("softmax attention is evaluated in ball arithmetic")


def _attention_sequence(layer: Attention, cols: list, want_weights: bool, ops):
    """One sequence through a multi-head attention layer (eq. (2)), in the arithmetic ``ops``.

    Returns the output columns (one per query) and, if asked, each head's weight rows.
    """
    n = len(cols)
    plan = _key_sets(n, layer)
    zero = ops.zero
    outs = [ops.start(cols[j] if layer.residual else [zero] * layer.m_out) for j, _ in plan]
    weights_all = []
    for hi, h in enumerate(layer.heads):
        vals = [ops.matvec(h.WV, c) for c in cols]
        ks = [ops.matvec(h.WK, c) for c in cols] if layer.kind != "uniform" else None
        head_w = []
        for qi, (j, keys) in enumerate(plan):
            scores = None
            if ks is not None:
                qv = ops.matvec(h.WQ, cols[j])
                scores = [sum((a * b for a, b in zip(ks[k], qv)), zero) for k in keys]
            try:
                p = ops.weights(layer.kind, scores, len(keys))
            except Softmax2Error as e:
                where = f"head {hi}, query position {j}"
                if e.key is not None:
                    where += f", key position {keys[e.key]}"
                raise Softmax2Error(f"{where}: {e}") from None
            avg = [zero] * len(vals[0])
            for pk, k in zip(p, keys):
                if not pk == 0:  # exact zero weight (Fraction, or an exact arb ball): skip
                    avg = [a + pk * x for a, x in zip(avg, vals[k])]
            outs[qi] = ops.add_matvec(outs[qi], h.WO, avg)
            if want_weights:
                row = [zero] * n
                for pk, k in zip(p, keys):
                    row[k] = pk
                head_w.append(row)
        weights_all.append(head_w)
    return [ops.finish(o) for o in outs], weights_all


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

    def start(self, col):
        return list(col)

    def add_matvec(self, acc, M, v):
        return [a + b for a, b in zip(acc, self.matvec(M, v))]

    @staticmethod
    def finish(acc):
        return acc

    @staticmethod
    def weights(kind: str, scores, n_keys: int):
        from flint import arb

        if kind == "uniform":
            return [arb(1) / n_keys] * n_keys
        if kind == "hardmax":
            return _ball_hardmax(scores)
        if kind == "softmax2":
            return [_to_arb(w) for w in softmax2_weights(_ball_integers(scores))]
        c = scores[0].mid()
        e = [(s - c).exp() for s in scores]
        tot = sum(e, arb(0))
        return [x / tot for x in e]


def _ball_integers(scores) -> List[Fraction]:
    """softmax2 scores from balls: exact integers pass; a ball without an integer is a
    non-integer score; a wider ball that contains one is undecided."""
    out = []
    for k, s in enumerate(scores):
        if s.is_exact() and s.is_integer():
            out.append(Fraction(int(s.unique_fmpz())))
        elif not s.contains_integer():
            raise Softmax2Error(f"score in {s.str(10)} is not an integer (softmax2 needs integer scores)", key=k)
        else:
            raise Undecided("softmax2: a score ball contains an integer but is not exact at this precision")
    return out


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


def run_stack_chunked(steps: Sequence[AffineStep], X: ScaledInts, backend: str = "auto", trace: bool = False,
                      on_step: Optional[Callable[[int], None]] = None):
    """``run_stack`` over column chunks, so a wide layer (e.g. width 10^4 on 10^4 tokens)
    never materialises more than ``MAX_BATCH_ENTRIES`` entries at once. ``on_step(steps done)``:
    progress as `run_stack` reports it (with several chunks, the steps of the chunks done so
    far, scaled to the stack)."""
    from .affine_stack import StackResult

    width = max([X.shape[0]] + [s.m_out for s in steps])
    T = X.shape[1]
    chunk = max(1, MAX_BATCH_ENTRIES // width)
    if T <= chunk:
        return run_stack(steps, X, backend=backend, trace=trace, on_step=on_step)
    starts = list(range(0, T, chunk))
    parts = []
    for c, a in enumerate(starts):
        sub = None
        if on_step is not None:
            def sub(k: int, c: int = c) -> None:
                done = (c * len(steps) + k) // len(starts)
                if done:
                    on_step(done)
        parts.append(run_stack(steps, ScaledInts([r[a:a + chunk] for r in X.rows], X.den), backend=backend,
                               trace=trace, on_step=sub))
    out = concat_columns([p.out for p in parts])
    tr = [concat_columns([p.trace[k] for p in parts]) for k in range(len(steps))] if trace else []
    return StackResult(out, tr, parts[0].backend)


def _inputs_to_columns(model: Model, inputs) -> Tuple[List[List[Fraction]], List[int]]:
    """Flatten all sequences into columns (each column = one token vector)."""
    cols, lengths = [], []
    seen: dict = {}
    held: list = []
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
                col = seen.get(id(tok))
                if col is None:  # a token object met again (a shared token) is converted once
                    col = [x if type(x) is Fraction else Fraction(x) for x in tok]
                    seen[id(tok)] = col
                    held.append(tok)  # its id stays unique while remembered
                cols.append(col)
    return cols, lengths


def _scaled_columns(cols: List[List[Fraction]]) -> ScaledInts:
    """The columns as one ScaledInts (rows = coordinates); a column object that occurs several
    times (a shared token, see `_inputs_to_columns`) is scaled to integers once."""
    index: dict = {}
    reps: List[List[Fraction]] = []
    for c in cols:
        if id(c) not in index:
            index[id(c)] = len(reps)
            reps.append(c)
    D = lcm(*{x.denominator for c in reps for x in c})
    ints = [[x.numerator * (D // x.denominator) for x in c] for c in reps]
    picked = [ints[index[id(c)]] for c in cols]
    return ScaledInts([list(r) for r in zip(*picked)], D)


def _transpose(cols: List[list]) -> List[list]:
    return [list(r) for r in zip(*cols)]


def _distinct_columns(X: ScaledInts) -> Tuple[ScaledInts, Optional[List[int]]]:
    """The distinct columns of X and, for every column, the index of its distinct copy (None
    when at least 3/4 of the columns are distinct: not worth it)."""
    cols = list(zip(*X.rows))
    first: dict = {}
    where = [first.setdefault(c, len(first)) for c in cols]
    if 4 * len(first) > 3 * len(cols):
        return X, None
    uniq = list(first)
    return ScaledInts([list(r) for r in zip(*uniq)] if uniq else [], X.den), where


def _gather_columns(X: ScaledInts, where: List[int]) -> ScaledInts:
    """Column t of the result is column where[t] of X."""
    return ScaledInts([[row[k] for k in where] for row in X.rows], X.den)


def _last_columns(X: ScaledInts, lengths: Sequence[int]) -> ScaledInts:
    """Only the last column of every sequence."""
    ends, pos = [], 0
    for L in lengths:
        pos += L
        ends.append(pos - 1)
    return _gather_columns(X, ends)


def _averaging_matrix(layer: Attention) -> Optional[Tuple[List[List[int]], int]]:
    """For an attention layer that averages every sequence — ``uniform`` (eq. (39)), or
    ``hardmax`` whose scores are identically 0 (W_K or W_Q zero, eq. (12): all keys tie) —
    with query="all", keys="all": Σ_h W_O W_V as integers over their lcm denominator.
    None for any other layer."""
    if layer.query != "all" or layer.keys != "all":
        return None
    def zero(M) -> bool:
        return not any(x for r in M for x in r)

    if layer.kind == "hardmax":
        if not all(zero(h.WQ) or zero(h.WK) for h in layer.heads):
            return None
    elif layer.kind != "uniform":
        return None
    mo, mi = layer.m_out, layer.m_in
    M = [[Fraction(0)] * mi for _ in range(mo)]
    for h in layer.heads:
        for r in range(mo):
            for c in range(mi):
                M[r][c] += sum((h.WO[r][k] * h.WV[k][c] for k in range(len(h.WV))), Fraction(0))
    L = lcm(*(x.denominator for row in M for x in row))
    return [[int(x * L) for x in row] for row in M], L


def _average_within_sequences(X: ScaledInts, lengths: Sequence[int], avg: Tuple[List[List[int]], int],
                              residual: bool) -> ScaledInts:
    """Exact averaging attention on all sequences at once: column t of sequence s becomes
    [x_t] + M·(1/|s|)Σ_{u ∈ s} x_u, over the denominator D·L_M·lcm(lengths)."""
    Mi, LM = avg
    Ls = lcm(*set(lengths))
    sums = []  # per sequence, per input row: Σ_u x_u · (Ls / |s|)
    pos = 0
    for L in lengths:
        f = Ls // L
        sums.append([sum(row[pos:pos + L]) * f for row in X.rows])
        pos += L
    scale = LM * Ls
    out = []
    for r in range(len(Mi)):
        mrow = Mi[r]
        att = [sum(a * v for a, v in zip(mrow, srow) if a) for srow in sums]
        base = X.rows[r] if residual else None
        row, pos = [], 0
        for s, L in enumerate(lengths):
            a = att[s]
            if base is None:
                row.extend([a] * L)
            else:
                row.extend(x * scale + a for x in base[pos:pos + L])
            pos += L
        out.append(row)
    return ScaledInts(out, X.den * scale).reduced()


def forward(model: Model, inputs, trace: bool = False, backend: str = "auto", prec: int = 128,
            on_layer: Optional[Callable[[int, int], None]] = None) -> ForwardResult:
    """Evaluate ``model`` on every input sequence. Exact unless the model has softmax.
    ``on_layer(layers done, layers)``: progress, called as the layers are passed (display only;
    long feed-forward stacks report every ``affine_stack.PROGRESS_GROUP`` steps)."""
    if not inputs:
        return ForwardResult([], True, None, [] if trace else None, [])
    cols, lengths = _inputs_to_columns(model, inputs)
    layers = list(model.layers)
    start = 1 if isinstance(layers[0], Embed) else 0
    tr: Optional[List[TraceEntry]] = [] if trace else None
    ball = False
    state_exact: Optional[ScaledInts] = _scaled_columns(cols)
    state_ball = None
    logical_lengths: Optional[List[int]] = None  # output lengths when only last columns are kept
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
                    # token-wise layers act on each column alone: run them on the distinct
                    # columns only (a vocabulary of V ≪ N·n tokens), then put them back
                    uniq, where = (state_exact, None) if trace else _distinct_columns(state_exact)
                    on_step = None if on_layer is None or trace else (  # steps done -> layers passed
                        lambda k, i=i, j=j, n=len(steps): on_layer(i + (j - i) * k // n, len(layers)))
                    res = run_stack_chunked(steps, uniq, backend=backend, trace=trace, on_step=on_step)
                    state_exact = res.out if where is None else _gather_columns(res.out, where)
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
            avg = None if (ball or trace) else _averaging_matrix(layer)
            if avg is not None:  # uniform attention (or hardmax with all-zero scores): vectorised, exact
                state_exact = _average_within_sequences(state_exact, lengths, avg, layer.residual)
            else:
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
                    try:
                        o, w = _attention_sequence(layer, seq_cols, tr is not None, ops)
                    except Softmax2Error as e:
                        raise Softmax2Error(f"layer {i} (softmax2 attention), example {len(new_lengths)}: {e}") \
                            from None
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
            if on_layer is not None:
                on_layer(i, len(layers))
            if (model.readout == "last" and not trace and not ball
                    and not any(isinstance(l, Attention) for l in layers[i:])):
                # no token mixing is left: only each sequence's last column reaches the output
                logical_lengths = lengths
                state_exact, lengths = _last_columns(state_exact, lengths), [1] * len(lengths)
        final_cols = _transpose(state_ball) if ball else _transpose(state_exact.to_fractions())
    finally:
        if model.has_softmax:
            ctx.prec = old_prec
    outputs, pos = [], 0
    for L in lengths:
        seq_cols = final_cols[pos:pos + L]
        pos += L
        outputs.append(list(seq_cols[-1]) if model.readout == "last" else [list(c) for c in seq_cols])
    return ForwardResult(outputs, not ball, prec if ball else None, tr,
                         lengths if logical_lengths is None else logical_lengths)


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
