"""Tiny hardmax Transformers as parameter vectors: exact forward pass, model conversion, sign-pattern counting.

The forward pass is generic and exact, the conversion goes to an exactmem
[`Model`][exactmem.model.Model], and the brute-force sign-pattern counting is a sanity check of the
counting bound, not a proof.

The forward pass (`forward_generic`) works over any scalars with ``+`` and ``*``
(ints, Fractions, sympy polynomials). Hardmax argmax sets and ReLU on/off decisions are
either computed from the values (numeric run; they are recorded) or taken from a recorded
*pattern* — that is how `symbolic` builds the polynomials valid on one cell of the
partition of parameter space used in the proof of Theorem B.3.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product as iproduct
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .arch import Architecture, BoundsInputError
from ..arith.enclosure import Interval, decide, log2_interval
from .counting import product_log2
from ..arith.steps import Report, Step, check

Params = Dict[str, List[list]]


def params_from_vector(arch: Architecture, theta: Sequence) -> Params:
    """Split a flat vector (length ``W("exact")``, order of ``arch.layout()``) into matrices."""
    lay = arch.layout()
    need = sum(r * c for _, r, c in lay)
    if len(theta) != need:
        raise BoundsInputError(f"parameter vector has {len(theta)} entries, architecture needs {need}")
    P, pos = {}, 0
    for name, r, c in lay:
        P[name] = [list(theta[pos + i * c: pos + (i + 1) * c]) for i in range(r)]
        pos += r * c
    return P


def _matvec(M, v, zero):
    return [sum((a * b for a, b in zip(row, v)), zero) for row in M]


def _dot(a, b, zero):
    return sum((x * y for x, y in zip(a, b)), zero)


def forward_generic(arch: Architecture, P: Params, seqs: Sequence[Sequence[Sequence]], zero=0,
                    const: Callable = lambda c: c, pattern: Optional[dict] = None,
                    hook: Optional[Callable] = None) -> List[list]:
    """Outputs N_θ(X^{(i)})_k of eq. (4) with hard attention (eq. (12)), exact.

    ``pattern`` (dict) — if it already holds a decision for an argmax set
    (``("att", i, l, h, j)``) or a ReLU (``("relu", i, l, j, u)``), that decision is used;
    otherwise it is computed from the values and stored. ``hook(kind, l, i, data)`` sees
    the attention scores (``"scores"``: per head, scores[j][k] = (W^K z_k)·(W^Q z_j)),
    pre-activations (``"pre"``), block outputs (``"block"``) and outputs (``"out"``).
    """
    pat = pattern if pattern is not None else {}
    outs = []
    for i, X in enumerate(seqs):
        Z = [_matvec(P["E_in"], [const(c) for c in x], zero) for x in X]
        if hook:
            hook("block", 0, i, Z)
        n = len(Z)
        for l in range(1, arch.L + 1):
            att = [list(z) for z in Z]  # residual
            heads = []
            for h in range(1, arch.H + 1):
                K, Q, V, O = (P[f"{t}{l}.{h}"] for t in "KQVO")
                kz = [_matvec(K, z, zero) for z in Z]
                qz = [_matvec(Q, z, zero) for z in Z]
                vz = [_matvec(V, z, zero) for z in Z]
                scores = [[_dot(kz[k], qz[j], zero) for k in range(n)] for j in range(n)]
                heads.append(scores)
                for j in range(n):
                    key = ("att", i, l, h, j)
                    if key not in pat:
                        top = max(scores[j])
                        pat[key] = tuple(k for k in range(n) if scores[j][k] == top)
                    I = pat[key]
                    w = const(Fraction(1, len(I)))
                    avg = [sum((vz[k][a] for k in I), zero) * w for a in range(arch.s)]
                    o = _matvec(O, avg, zero)
                    att[j] = [x + y for x, y in zip(att[j], o)]
            if hook:
                hook("scores", l, i, heads)
            W1, b1, W2, b2 = P[f"W1_{l}"], P[f"b1_{l}"], P[f"W2_{l}"], P[f"b2_{l}"]
            pre = [[x + b[0] for x, b in zip(_matvec(W1, a, zero), b1)] for a in att]
            if hook:
                hook("pre", l, i, pre)
            Z = []
            for j in range(n):
                act = []
                for u, p in enumerate(pre[j]):
                    key = ("relu", i, l, j, u)
                    if key not in pat:
                        pat[key] = p > 0
                    act.append(p if pat[key] else zero)
                Z.append([x + y + b[0] for x, y, b in zip(att[j], _matvec(W2, act, zero), b2)])
            if hook:
                hook("block", l, i, Z)
        out = [_dot(P["E_out"][0], z, zero) for z in Z]
        if hook:
            hook("out", arch.L, i, out)
        outs.append(out)
    return outs


def to_model(arch: Architecture, P: Params):
    """The same network as an exactmem Model (hardmax attention with residual, eq. (3) FFN
    with residual, token-wise linear E_in/E_out, readout at every position)."""
    from ..model.layers import Affine, Attention, FeedForward, Head, Model

    layers = [Affine(P["E_in"])]
    for l in range(1, arch.L + 1):
        heads = [Head(WV=P[f"V{l}.{h}"], WO=P[f"O{l}.{h}"], WQ=P[f"Q{l}.{h}"], WK=P[f"K{l}.{h}"])
                 for h in range(1, arch.H + 1)]
        layers.append(Attention(tuple(heads), kind="hardmax", residual=True))
        layers.append(FeedForward(P[f"W1_{l}"], [r[0] for r in P[f"b1_{l}"]], P[f"W2_{l}"],
                                  [r[0] for r in P[f"b2_{l}"]], residual=True))
    layers.append(Affine(P["E_out"]))
    return Model(tuple(layers), input_type="vectors", input_dim=arch.d, readout="all", name="toy hardmax")


def distinct_tokens(n: int, N: int, d: int, seed: int = 0) -> List[List[Tuple[Fraction, ...]]]:
    """N sequences of length n whose nN tokens are pairwise distinct (the dataset of Thm 4.3)."""
    rng = random.Random(seed)
    seen, seqs = set(), []
    for _ in range(N):
        X = []
        while len(X) < n:
            t = tuple(Fraction(rng.randint(-9, 9), rng.randint(1, 4)) for _ in range(d))
            if t not in seen:
                seen.add(t)
                X.append(t)
        seqs.append(X)
    return seqs


def sgn(x) -> int:
    return (x > 0) - (x < 0)


@dataclass
class SignCount:
    """Distinct output sign vectors seen over a set of parameter vectors."""

    evaluated: int
    patterns: set = field(default_factory=set)

    @property
    def count(self) -> int:
        return len(self.patterns)

    @property
    def binary_patterns(self) -> int:
        """Sign vectors in {0, +}^{nN}: candidates for exact {0,1} labellings."""
        return sum(1 for p in self.patterns if min(p) >= 0)


def count_sign_patterns(arch: Architecture, seqs, values: Sequence[int] = (-1, 0, 1),
                        samples: Optional[int] = None, seed: int = 0) -> SignCount:
    """Exact output sign vectors of the toy model over parameter vectors with entries in
    ``values``: every vector (exhaustive, ``samples=None``) or ``samples`` seeded draws."""
    Wx = arch.W("exact")
    res = SignCount(0)
    if samples is None:
        if len(values) ** Wx > 5 * 10 ** 6:
            raise BoundsInputError(f"exhaustive grid has {len(values)}^{Wx} points; use samples")
        it = iproduct(values, repeat=Wx)
    else:
        rng = random.Random(seed)
        it = (tuple(rng.choice(values) for _ in range(Wx)) for _ in range(samples))
    for theta in it:
        outs = forward_generic(arch, params_from_vector(arch, theta), seqs)
        res.patterns.add(tuple(sgn(y) for o in outs for y in o))
        res.evaluated += 1
    return res


def brute_force_report(arch: Architecture, n: int, N: int, values: Sequence[int] = (-1, 0, 1),
                       samples: Optional[int] = 4000, seed: int = 0, convention: str = "exact") -> Report:
    """Count output sign vectors of a toy hardmax Transformer on nN distinct tokens and
    compare with the trivial bound 3^{nN} and the sharp counting bound (90)."""
    from .seq2seq import factors

    seqs = distinct_tokens(n, N, arch.d, seed)
    sc = count_sign_patterns(arch, seqs, values, samples, seed)
    fs = factors(arch, n, N, convention)
    rep = Report(f"brute-force sign patterns: {arch.label()}, n={n}, N={N}, "
                 f"{'all' if samples is None else samples} parameter vectors from {list(values)}")
    rep.add(check("(70)", "distinct sign vectors ≤ 3^{nN}", sc.count, "<=", 3 ** (n * N), "check"))
    rep.add(check("(90)", "log2(distinct sign vectors) ≤ log2 Π(factors) (M' = max(M, v))",
                  lambda b: log2_interval(sc.count, b), "<=", lambda b: product_log2(fs, b), "check"))
    _, C, B, _ = decide(0, "<=", lambda b: product_log2(fs, b))
    rep.results.update({
        "parameter vectors evaluated": sc.evaluated, "distinct sign vectors": sc.count,
        "sign vectors in {0,+}^nN": sc.binary_patterns, "needed to shatter (2^nN)": 2 ** (n * N),
        "log2 bound (90)": B, "log2 count": log2_interval(sc.count, 32),
        "W (exact)": arch.W("exact"),
    })
    return rep


def lemma_b4_layer1_report(arch: Architecture, n: int, N: int, grid: Sequence[int] = (-2, -1, 0, 1, 2),
                           seed: int = 0) -> Report:
    """Lemma B.4 on the first refinement (80): the N·H·n³ block-1 score differences are
    polynomials of degree 4 in the md + 2msH entries of E_in, W^K, W^Q. Enumerate those
    entries over ``grid`` (other parameters do not enter) and count sign vectors exactly."""
    from .counting import lemma_b4_log2

    seqs = distinct_tokens(n, N, arch.d, seed)
    m, s, d = arch.m, arch.s, arch.d
    names = [("E_in", m, d)] + [(f"{t}1.{h}", s, m) for h in range(1, arch.H + 1) for t in "KQ"]
    v = sum(r * c for _, r, c in names)
    if len(grid) ** v > 2 * 10 ** 6:
        raise BoundsInputError(f"grid too large: {len(grid)}^{v} points")
    seen = set()
    for vals in iproduct(grid, repeat=v):
        pos, P = 0, {}
        for name, r, c in names:
            P[name] = [list(vals[pos + i * c: pos + (i + 1) * c]) for i in range(r)]
            pos += r * c
        vec = []
        for X in seqs:
            Z = [_matvec(P["E_in"], x, 0) for x in X]
            for h in range(1, arch.H + 1):
                kz = [_matvec(P[f"K1.{h}"], z, 0) for z in Z]
                qz = [_matvec(P[f"Q1.{h}"], z, 0) for z in Z]
                a = [[_dot(kz[k], qz[j], 0) for k in range(len(Z))] for j in range(len(Z))]
                vec += [sgn(a[j][k] - a[j][k2]) for j in range(len(Z)) for k in range(len(Z)) for k2 in range(len(Z))]
        seen.add(tuple(vec))
    M = N * arch.H * n ** 3
    rep = Report(f"Lemma B.4 at block 1 (80): {arch.label()}, n={n}, N={N}, grid {list(grid)}")
    rep.add(check("(80)", f"sign vectors of {M} score differences (degree 4, {v} variables) ≤ (8e·M'·4/v)^v (log2)",
                  lambda b: log2_interval(len(seen), b), "<=", lambda b: lemma_b4_log2(max(M, v), 4, v, b), "check"))
    rep.results.update({"grid points": len(grid) ** v, "distinct sign vectors": len(seen), "M": M, "v": v})
    return rep


def lemma_b4_linear_report(max_M: int = 40) -> Report:
    """Lemma B.4 at degree D = 1: M affine hyperplanes in general position in R^W have
    exactly Σ_k C(M, W−k)·Σ_{i≤k} C(M−W+k, i) sign vectors (faces); check that this never
    exceeds (8eM/W)^W for 1 ≤ W ≤ M ≤ max_M (log2 enclosures)."""
    from .counting import generic_arrangement_faces, lemma_b4_log2

    rep = Report(f"Lemma B.4 at D = 1 (generic hyperplane arrangements), W ≤ M ≤ {max_M}")
    worst = None
    for M in range(1, max_M + 1):
        for W in range(1, M + 1):
            faces = generic_arrangement_faces(M, W)
            st = check("B.4", "", lambda b: log2_interval(faces, b), "<=", lambda b: lemma_b4_log2(M, 1, W, b))
            if st.status != "holds":
                rep.add(Step("B.4", f"faces(M={M}, W={W}) ≤ (8eM/W)^W", st.lhs, "<=", st.rhs, st.status, "check"))
                return rep
            gap = st.rhs.lo - (st.lhs.hi if isinstance(st.lhs, Interval) else st.lhs)
            if worst is None or gap < worst[0]:
                worst = (gap, M, W, st)
    gap, M, W, st = worst
    rep.add(Step("B.4", f"faces ≤ (8eM/W)^W for every 1 ≤ W ≤ M ≤ {max_M} (log2; tightest M={M}, W={W})",
                 st.lhs, "<=", st.rhs, "holds", "check"))
    rep.add(check("B.4", "face formula in R^1: M points cut the line into 2M+1 faces (M = 7)",
                  generic_arrangement_faces(7, 1), "==", 15, "check"))
    return rep
