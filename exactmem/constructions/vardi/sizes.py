"""The size formulas of Lemma C.1 (Kajitsuka & Sato, after Vardi et al.) and the rounding its lemmas need.

R² (eq. (95)–(98)), Lemma C.2's bits, eq. (110) as the paper prints it (a rigorous enclosure,
`eq110_depth`) and with the natural numbers Lemmas G.3 and G.6 require
(`eq110_integer`), eq. (111), and the slot and label widths the construction uses
(`slot_count`, `label_width`). Split from `exactmem.constructions.vardi.memorizer`,
which builds the network and re-exports these names."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import isqrt

from ...arith import enclosure as E


# ----------------------------------------------------------------------------- paper's R and formulas


def paper_R2(r2: Fraction, delta2: Fraction, V: int, d: int) -> E.Enc:
    """R² for Lemma C.1's R := 20 r V² δ⁻¹ √(π d): 400 r² V⁴ π d / δ² (π enclosed)."""
    return E.PI * (Fraction(400) * r2 * V ** 4 * d / delta2)


def _log(base: str):
    if base == "2":
        return E.log2
    if base == "e":
        return E.ln
    raise ValueError(f"log base must be '2' or 'e', not {base!r}")


def lemma_c2_bits(d: int, r2: Fraction, delta2: Fraction, V: int, base: str = "2") -> E.Enc:
    """Lemma C.2's bit complexity log(3 d r V² √π δ⁻¹) (the first term of eq. (111)), from r², δ²."""
    return _log(base)(E.PI * (Fraction(9) * d * d * r2 * V ** 4 / delta2)) * Fraction(1, 2)


EQ110_BITS = (12, 40, 96)  # resolutions (2^-k) tried in turn until ⌊(110)⌋ is decided


def eq110_depth(N: int, C: int, R2: E.Enc, base: str = "2") -> E.Enc:
    """Kajitsuka & Sato eq. (110), Lemma C.1's exact depth before ≲:

        2 + 3√(N log N) + 2 + 3√(N/log N)·max{log R, log C} + 2√(N/log N) + 2

    as a rigorous enclosure (log base ``"2"`` — exactmem's reading — or ``"e"``). N ≥ 2.
    The logarithms and roots are enclosed to 2^-k for k in `EQ110_BITS` in turn, until both
    ends have the same floor (an enclosure straddling an integer would make a claim's
    ⌊(110)⌋, taken from the lower end, one too small); log₂ of a power of two is exact.
    """
    return _tight(lambda k: 2 + sum(_eq110_terms(N, C, R2, base, k)))


def eq110_stage3(N: int, C: int, R2: E.Enc, base: str = "2") -> E.Enc:
    """Eq. (110)'s Stage III term (Lemma G.6 with real-valued n, log R, log C),
    3√(N/log N)·max{log R, log C} + 2√(N/log N) + 2, enclosed as tightly as `eq110_depth`."""
    return _tight(lambda k: _eq110_terms(N, C, R2, base, k)[1])


def _tight(at) -> E.Enc:
    """``at(k)`` for k in `EQ110_BITS` until its floor is decided (else the last, tightest)."""
    for k in EQ110_BITS:
        e = at(k)
        if E.floor_lower(e) == E.floor_lower(e.hi):
            break
    return e


def _log_at(x, base: str, k: int) -> E.Enc:
    """log x (base "2" or "e") for x > 0, enclosed to about 2^-k (digit by digit, any k)."""
    _log(base)  # the base's check
    x = E.enc(x)
    if x.lo <= 0:
        raise ValueError("logarithm of a possibly non-positive number")
    e = E.Enc(E.log2_interval(x.lo, k).lo, E.log2_interval(x.hi, k).hi)
    return e if base == "2" else e * E.LN2


def _eq110_terms(N: int, C: int, R2: E.Enc, base: str, k: int):
    """(Stage II, Stage III) terms of (110) at resolution 2^-k: 3√(N log N) + 2 and
    3√(N/log N)·max{log R, log C} + 2√(N/log N) + 2. N ≥ 2."""
    if N < 2:
        raise ValueError("eq. (110) needs N ≥ 2 (log N = 0 at N = 1)")
    ell = _log_at(N, base, k)
    mx = E.emax(_log_at(R2, base, k) * Fraction(1, 2), _log_at(C, base, k))
    g = E.sqrt(N / ell, k)
    return 3 * E.sqrt(N * ell, k) + 2, 3 * g * mx + 2 * g + 2


def _logs(N: int, C: int, R2: E.Enc, base: str, eq: str):
    """(log N, log R, max{log R, log C}): the logarithms eqs. (110) and (111) share. N ≥ 2."""
    if N < 2:
        raise ValueError(f"eq. {eq} needs N ≥ 2 (log N = 0 at N = 1)")
    log = _log(base)
    logR = log(R2) * Fraction(1, 2)
    return log(N), logR, E.emax(logR, log(C))


@dataclass(frozen=True)
class Eq110Integers:
    """The natural numbers that Lemma C.1's proof feeds into Lemmas C.2, G.3 and G.6, and the
    depth (110) they give (see `eq110_integer`)."""

    m: int  # groups, Lemma G.3's m = ⌈√(N log₂ N)⌉
    n: int  # slots per group, Lemma G.6's n = ⌈√(N / log₂ N)⌉
    rho: int  # key width ⌈log₂ R⌉
    c: int  # label width ⌈log₂ C⌉ (at least 1)
    stage1: int  # Lemma C.2: depth 2
    stage2: int  # Lemma G.3: 3m + 2
    stage3: int  # Lemma G.6: 3n·max{ρ, c} + 2n + 2

    @property
    def depth(self) -> int:
        return self.stage1 + self.stage2 + self.stage3


def ceil_sqrt_n_log2n(N: int) -> int:
    """⌈√(N log₂ N)⌉ exactly (N ≥ 2): the smallest k with k² ≥ log₂(N^N), i.e. N^N ≤ 2^(k²),
    i.e. k² ≥ L with L = LEN(N^N − 1) (an integer test, no enclosure)."""
    if N < 2:
        raise ValueError("N log N needs N ≥ 2")
    L = (N ** N - 1).bit_length()
    return isqrt(L - 1) + 1


def _ceil_log2_sqrt(R2: E.Enc) -> int:
    """⌈log₂ R⌉ from an enclosure [lo, hi] of R² (R ≥ 1): the smallest k with 4^k ≥ lo. This is
    ⌈log₂ R⌉ exactly unless a power of 4 lies in [lo, hi] (for R² = π·q, q rational, the
    enclosure of π is 10⁻²⁰ wide); then it is the smaller of the two candidates, an integer
    ≤ ⌈log₂ R⌉, the safe side for a "measured ≤ formula" claim (like ``floor_lower``)."""
    q = Fraction(R2.lo)
    if q <= 1:
        return 0
    p, d = q.numerator, q.denominator
    s = p.bit_length() - d.bit_length()  # 2^(s-1) < q < 2^(s+1)
    while (d << max(0, s)) < (p << max(0, -s)):  # 2^s < q: too small
        s += 1
    while s > 0 and (d << max(0, s - 1)) >= (p << max(0, 1 - s)):  # 2^(s-1) ≥ q: not the smallest
        s -= 1
    return (s + 1) // 2  # smallest k with 2k ≥ s, s the smallest with 2^s ≥ q


def eq110_integer(N: int, C: int, R2: E.Enc) -> Eq110Integers:
    """Eq. (110) with the natural numbers its lemmas require (log base 2), an exact integer:

        2 + (3m + 2) + (3n·max{ρ, c} + 2n + 2),

    the depths of Lemma C.1's three sub-networks as the proof obtains them:

    * Stage I, **Lemma C.2**: depth 2;
    * Stage II, **Lemma G.3** ("Let m ∈ ℕ", depth 3m + 2) applied with m := √(N log N) groups:
      m must be a natural number, so m = ⌈√(N log₂ N)⌉ (rounding up keeps m·n ≥ N, so the k =
      ⌈N/m⌉ points of a group fit the n slots; at N ≤ 3 this m is not below N as G.3 asks,
      and a larger m only adds depth, so the bound stays an upper bound);
    * Stage III, **Lemma G.6** ("Let ρ, n, c ∈ ℕ", depth 3n·max{ρ, c} + 2n + 2) applied with
      n = √(N/log N) slots and the bit widths of eqs. (99)–(100): n = ⌈√(N/log₂ N)⌉
      (`slot_count`), ρ = ⌈log₂ R⌉ bits for a key ⌊x_i⌋ ≤ ⌊R⌋ < 2^ρ (R is irrational,
      `_ceil_log2_sqrt`), c = ⌈log₂ C⌉ bits for a label in {0, …, C − 1}, at least 1
      (`label_width`).

    Eqs. (99)–(110) write these numbers without the ceilings, as an asymptotic estimate does;
    the real-valued printed form is `eq110_depth`, which is below this one and is not an
    exact count of any network (``docs/errata.md``, observations). N ≥ 2.
    """
    if N < 2:
        raise ValueError("eq. (110) needs N ≥ 2 (log N = 0 at N = 1)")
    m, n = ceil_sqrt_n_log2n(N), slot_count(N)
    rho, c = _ceil_log2_sqrt(R2), label_width(C)
    return Eq110Integers(m, n, rho, c, 2, 3 * m + 2, 3 * n * max(rho, c) + 2 * n + 2)


def eq111_bits(N: int, C: int, R2: E.Enc, r2: Fraction, delta2: Fraction, V: int, d: int,
               base: str = "2") -> E.Enc:
    """Kajitsuka & Sato eq. (111), Lemma C.1's bit complexity before ≲:

        max{ log(3 d r V² √π δ⁻¹), √(N/log N)·max{log C, log R} + ⌈log R⌉, √(N/log N)·max{…} + 2 }
    """
    ell, logR, mx = _logs(N, C, R2, base, "(111)")
    first = lemma_c2_bits(d, r2, delta2, V, base)
    g = E.sqrt(N / ell)
    return E.emax(first, g * mx + E.ceil(logR), g * mx + 2)


# ----------------------------------------------------------------------------- rounding choices


def slot_count(N: int) -> int:
    """g = ⌈√(N / log₂ N)⌉ exactly: the smallest k ≥ 1 with k² log₂ N ≥ N, i.e. N^(k²) ≥ 2^N;
    g = 1 if N = 1 (where log N = 0)."""
    if N < 1:
        raise ValueError("N must be positive")
    if N == 1:
        return 1
    k = max(1, isqrt(N // N.bit_length()))  # k² ≤ N / LEN(N) ≤ N / log₂ N
    while N ** (k * k) < 2 ** N:
        k += 1
    return k


def label_width(C: int) -> int:
    """c = max(1, ⌈log₂ C⌉): the bits of a label in {0, …, C − 1}, exactmem's labels. The
    paper's [C] = {1, …, C} would need ⌈log₂(C + 1)⌉ (``docs/errata.md``, paper blocks item 6)."""
    return max(1, (C - 1).bit_length())
