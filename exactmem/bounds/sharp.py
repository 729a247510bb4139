"""The sharp product bound (90) of Theorem B.3 at any depth, and its minimal W over a family.

Eq. (90), middle line, with the repair M' = max(M, v) (`.counting`): a hardmax
Transformer of shape (d, m, s, H, q) and depth L that shatters nN distinct tokens satisfies

    nN ≤ log2 Π(L) = Σ_{l=1}^{L} [a_l + f_l] + o_L,

a_l, f_l, o_L the log2 of the attention, ReLU and output factors (8e·M'·D/v)^v
(`factors`). `product_log2_sharp` encloses log2 Π(L) in time independent of L:
the first `SHARP_HEAD` blocks factor by factor (cached per shape), the rest in closed
form — with v_l = p + B·l and D_l linear in l, the per-block terms are

    v_l·(3 + log2 e) + v_l·log2 D_l + [v_l ≤ M]·v_l·(log2 M − log2 v_l),

exact integer sums plus two sums Σ (α + βl)·log2(γl + δ) enclosed by Euler–Maclaurin with a
proven remainder (`.sums`); the split point of M' = max(M, v_l) is the exact integer
⌊(M − p)/B⌋. Decisions (`ruled_out_sharp`) are exact: the enclosures are refined until
they separate from nN (log2 Π is never an integer — it contains (Σv)·log2 e, and e is
transcendental).

**Monotonicity in L** (so the smallest L that is not ruled out can be bisected).
log2 Π(L+1) − log2 Π(L) = a_{L+1} + f_{L+1} + (o_{L+1} − o_L). Every block factor is ≥ 8e·D > 1
(M' ≥ v), so a, f > 0. The output factor is φ(W, D) = W·log2(8e·max(nN, W)·D/W) with
D = 4L + 2 and W = W(L) both increasing in L; φ increases in D, and in W: for W ≤ nN,
∂φ/∂W = log2(8·nN·D/W) > 0; for W ≥ nN, φ = W·log2(8e·D). So log2 Π(L) is strictly
increasing in L (tested on a grid, ``tests/test_bounds.py``).

**An upper end.** log2 Π(L) ≥ o_L ≥ W·log2(8e·6) > W ≥ L·B, so every L ≥ nN/B is not ruled
out: the search for the minimal L is bracketed in (0, ⌈nN/B⌉] from the start.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import product as iproduct
from math import isqrt
from typing import List, Optional, Tuple

from ..arith.enclosure import FAILS, HOLDS, Interval, decide, log2_e
from .arch import Architecture
from .bookkeeping import PAPER, Bookkeeping
from .counting import Factor, lemma_b4_log2, product_log2
from .search import least_from_guess
from .sums import bits_of, linear_log2_sum, scaled_log2

SHARP_HEAD = 32  # blocks summed factor by factor before the closed form takes over
PRINT_DIRECT = 512  # printed enclosures are summed factor by factor up to this depth (as before)

Shape = Tuple[int, int, int, int, int]


def factors(arch: Architecture, n: int, N: int, convention: str = "paper",
            bk: Bookkeeping = PAPER) -> List[Factor]:
    """The Lemma B.4 applications of the proof: per block l the attention-pattern refinement
    (79)–(80) and the ReLU-pattern refinement (83)–(84), then the output signs (89)."""
    out = []
    for l in range(1, arch.L + 1):
        out.append(Factor(f"l={l} attention scores", "(80)", bk.score_count(n, N, arch.H),
                          bk.score_degree(l), arch.att_vars(l, convention)))
        out.append(Factor(f"l={l} ReLU pre-activations", "(84)", bk.relu_count(n, N, arch.q),
                          bk.preact_degree(l), arch.ffn_vars(l, convention)))
    out.append(Factor("outputs", "(89)", bk.output_count(n, N), bk.output_degree(arch.L), arch.W(convention)))
    return out


# ------------------------------------------------------------------ log2 Π(L), closed form

def _linear_total(p: int, B: int, a: int, b: int) -> int:
    """Σ_{l=a}^{b} (p + B·l), exactly (0 if b < a)."""
    k = b - a + 1
    return 0 if k <= 0 else k * p + B * (a + b) * k // 2


@lru_cache(maxsize=4096)
def _head_log2(shape: Shape, n: int, N: int, convention: str, h: int, bits: int) -> Interval:
    """log2 of the block factors of blocks 1..h, factor by factor (independent of L ≥ h)."""
    return product_log2(factors(Architecture(*shape, h), n, N, convention)[:-1], bits)


def _tail_log2(p: int, B: int, d1: int, d0: int, M: int, a: int, L: int, bits: int) -> Interval:
    """Σ_{l=a}^{L} v_l·log2(8e·max(M, v_l)·D_l/v_l) with v_l = p + B·l, D_l = d1·l + d0."""
    last_small = min(L, (M - p) // B)  # v_l ≤ M ⇔ l ≤ ⌊(M − p)/B⌋ (v_l increasing)
    s_all = _linear_total(p, B, a, L)
    s_small = _linear_total(p, B, a, last_small)
    return (3 * s_all + scaled_log2(M, s_small, bits) + s_all * log2_e(bits + bits_of(s_all) + 2)
            + linear_log2_sum(p, B, d1, d0, a, L, bits) - linear_log2_sum(p, B, B, p, a, last_small, bits))


def product_log2_sharp(arch: Architecture, n: int, N: int, convention: str = "paper", bits: int = 48,
                       bk: Bookkeeping = PAPER, direct_upto: int = PRINT_DIRECT) -> Interval:
    """log2 of the product bound (90) (with M' = max(M, v)), enclosed to about 2^−bits.

    Factor by factor when L ≤ ``direct_upto`` (or for a bookkeeping other than the paper's);
    else the first `SHARP_HEAD` blocks factor by factor and the rest in closed form
    (module docstring), in time independent of L."""
    L = arch.L
    if L <= max(direct_upto, SHARP_HEAD) or bk is not PAPER:
        return product_log2(factors(arch, n, N, convention, bk), bits)
    d, m, s, H, q = arch.d, arch.m, arch.s, arch.H, arch.q
    B = arch.block_params(convention)
    p_att = m * d - B + 2 * m * s * H  # att_vars(l) = W_{l−1} + 2msH = p_att + B·l
    p_ffn = p_att + (m + 1) * q  # ffn_vars(l) = p_ffn + B·l
    h = SHARP_HEAD
    tot = _head_log2((d, m, s, H, q), n, N, convention, h, bits + 24)
    tot = tot + _tail_log2(p_att, B, 8, -4, N * H * n ** 3, h + 1, L, bits + 4)  # D = 8l − 4, M = NHn³
    tot = tot + _tail_log2(p_ffn, B, 4, 0, N * q * n, h + 1, L, bits + 4)  # D = 4l, M = Nqn
    W = arch.W(convention)
    return tot + lemma_b4_log2(max(n * N, W), 4 * L + 2, W, bits + W.bit_length() + 4)


def ruled_out_sharp(arch: Architecture, n: int, N: int, convention: str = "paper",
                    bk: Bookkeeping = PAPER) -> bool:
    """True iff nN > log2 of the product bound (90) (with M' = max(M, v)), decided exactly."""
    st, _, _, _ = decide(n * N, "<=", lambda b: product_log2_sharp(arch, n, N, convention, b, bk, SHARP_HEAD),
                         bits=24)
    if st not in (HOLDS, FAILS):
        raise ArithmeticError("undecided comparison in the sharp bound")
    return st == FAILS


# ------------------------------------------------------------- minimal L and minimal W

@dataclass(frozen=True)
class Family:
    """Architectures searched by [`min_W_sharp`][exactmem.bounds.min_W_sharp]: d fixed, shapes from the ranges, any L ≥ 1."""

    d: Tuple[int, ...] = (1,)
    m: Tuple[int, ...] = (1, 2, 3)
    s: Tuple[int, ...] = (1, 2)
    H: Tuple[int, ...] = (1, 2)
    q: Tuple[int, ...] = (1, 2, 3)

    def shapes(self):
        return iproduct(self.d, self.m, self.s, self.H, self.q)

    def smallest_W(self, convention: str = "paper") -> int:
        """The fewest parameters of a family member: W is increasing in L, so over the shapes at L = 1."""
        return min(Architecture(*shape, 1).W(convention) for shape in self.shapes())

    def describe(self) -> str:
        return (f"d∈{list(self.d)}, m∈{list(self.m)}, s∈{list(self.s)}, H∈{list(self.H)}, "
                f"q∈{list(self.q)}, any L ≥ 1")


def _guess_L(shape: Shape, n: int, N: int, convention: str, top: int) -> int:
    """A starting point for the search (no decision depends on it): the depth where the
    low-precision midpoint of log2 Π(L) − nN changes sign, by secant steps from
    L ≈ √(2nN/(B·Λ)), Λ ≈ log2 of the two block factors' ratios (log2 Π ≈ B·L²·Λ/2)."""
    d, m, s, H, q = shape
    B = Architecture(*shape, 1).block_params(convention)
    lam = max(1, (N * H * n ** 3 * N * q * n * 14000 // (B * B)).bit_length())
    nN = n * N

    def F(L: int) -> Fraction:
        P = product_log2_sharp(Architecture(*shape, L), n, N, convention, 8, PAPER, SHARP_HEAD)
        return (P.lo + P.hi) / 2 - nN

    x0 = min(top, max(1, isqrt(2 * nN // (B * lam))))
    x1 = min(top, x0 + max(1, x0 // 8))
    if x1 == x0:
        return x0
    f0, f1 = F(x0), F(x1)
    for _ in range(12):
        if f1 == f0:
            break
        t = x1 - f1 * (x1 - x0) / (f1 - f0)
        x2 = min(top, max(1, (2 * t.numerator + t.denominator) // (2 * t.denominator)))  # nearest integer
        if x2 == x1:
            break
        x0, f0, x1, f1 = x1, f1, x2, F(x2)
    return x1


def min_L_not_ruled_out(shape: Shape, n: int, N: int, convention: str = "paper",
                        L_max: Optional[int] = None) -> Optional[int]:
    """Smallest L with the sharp bound (90) not ruling out the shape, or None if the shape is
    ruled out at every L ≤ ``L_max``. log2 Π(L) is increasing in L and not ruled out from
    ⌈nN/B⌉ on (module docstring), so the search is bracketed; it gallops from a secant guess
    and bisects, O(log) exact decisions (no scan over L)."""
    a1 = Architecture(*shape, 1)
    top = -(-(n * N) // a1.block_params(convention))  # proven not ruled out
    if L_max is not None and L_max < top:
        if L_max < 1 or ruled_out_sharp(Architecture(*shape, L_max), n, N, convention):
            return None
        top = L_max  # just checked: not ruled out
    pred = lambda L: not ruled_out_sharp(Architecture(*shape, L), n, N, convention)  # noqa: E731
    return least_from_guess(pred, _guess_L(shape, n, N, convention, top), top)


@dataclass
class SharpMin:
    n: int
    N: int
    W: int
    arch: Architecture
    log2_bound: Interval
    family: str


def sharp_bound_at(arch: Architecture, n: int, N: int, convention: str = "paper") -> Interval:
    """The enclosure of log2 Π printed at an optimum (factor by factor up to depth
    `PRINT_DIRECT`, as before; closed form deeper)."""
    _, _, P, _ = decide(0, "<=", lambda b: product_log2_sharp(arch, n, N, convention, b))
    return P


def min_W_sharp(n: int, N: int, family: Family = Family(), convention: str = "paper") -> SharpMin:
    """Smallest parameter count W over the family whose sharp bound (90) does not rule out
    shattering nN distinct tokens (the unsimplified counterpart of ``seq2seq.min_W``).

    Shapes are tried narrowest first; once a best W is known, a shape is searched only up to
    the largest L with W(L) ≤ best (one exact decision discards it if it is ruled out there —
    by monotonicity it is ruled out at every smaller L). Ties go to the smaller label."""
    best = None
    shapes = sorted(family.shapes(), key=lambda sh: (Architecture(*sh, 1).block_params(convention), sh))
    for shape in shapes:
        a1 = Architecture(*shape, 1)
        B, W1 = a1.block_params(convention), a1.W(convention)  # W(L) = W1 + (L − 1)·B
        cap = None if best is None else (best[0] - W1) // B + 1
        L = min_L_not_ruled_out(shape, n, N, convention, cap)
        if L is None:
            continue
        a = Architecture(*shape, L)
        W = a.W(convention)
        if best is None or W < best[0] or (W == best[0] and a.label() < best[1].label()):
            best = (W, a)
    if best is None:
        raise ArithmeticError("no architecture of the family escapes the bound")
    W, a = best
    return SharpMin(n, N, W, a, sharp_bound_at(a, n, N, convention), family.describe())
