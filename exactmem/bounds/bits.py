"""Bit lower bounds: memorizing every labelling needs at least N·log2(C) bits.

Kajitsuka & Sato, Remarks 4.4 and 4.6: there are C^N labellings of N points (2^{nN}
binary labellings of nN distinct tokens in the seq-to-seq setting), so a fixed
architecture that can realize every one of them must be able to take at least C^N
distinct parameter values; if each of its W parameters is one of 2^b values, **W·b ≥
N·log2 C** ("total bits" = W × bit complexity, the paper's convention).

exactmem measures the bits of a rational by ``numbers.bits`` (sign + numerator +
denominator bits, ``docs/measurement.md``), which is not a prefix-free code: more than
2^b rationals have ``bits ≤ b``. The exact statements for that convention (derived here):

* the number of rationals with ``bits(x) ≤ b`` is at most ``R(b) = 3 + (b − 2)·2^b``
  (b ≥ 2; ``R(1) = 1``, the zero): ``bits(p/q) = LEN|p| + LEN(q)`` and there are ``2·2^{a−1}·2^{c−1}``
  signed pairs with ``LEN|p| = a ≥ 1``, ``LEN q = c ≥ 1``; so **R(b)^W ≥ C^N** is needed
  when every weight has at most b bits;
* with a budget on the *sum* T of the bits of W weights: at most ``(k−1)·2^{k−1} ≤ 4^{k−1}``
  rationals have exactly k bits, and there are ``C(T, W)`` ways to split ≤ T into W positive
  parts, so at most ``4^{T−W}·C(T, W)`` weight vectors; **4^{T−W}·C(T, W) ≥ C^N** is needed.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb, gcd
from typing import List, Optional

from ..arith.numbers import least_true
from .arch import check_positive_int
from .search import least_from_guess
from ..arith.enclosure import Interval, log2_interval
from ..arith.steps import Report, check


def label_bits(N: int, C: int = 2, bits: int = 48) -> Interval:
    """N·log2 C — the information in a labelling of N points with C classes (exact if C = 2^k)."""
    return N * log2_interval(check_positive_int("C", C), bits)


def rationals_with_bits_at_most(b: int) -> int:
    """R(b) = 1 + Σ_{k=2}^{b} (k−1)·2^{k−1} = 3 + (b−2)·2^b (b ≥ 2), R(1) = 1: an upper bound on
    the number of rationals x with ``numbers.bits(x) ≤ b`` (zero, plus (k−1)·2^{k−1} signed
    pairs p/q with LEN|p| + LEN q = k; exact up to the coprimality of p, q)."""
    b = check_positive_int("b", b)
    return 1 if b == 1 else 3 + (b - 2) * (1 << b)


def count_rationals_bruteforce(b: int) -> int:
    """Exactly the rationals p/q in lowest terms with ``numbers.bits(p/q) ≤ b`` (small b only)."""
    from ..arith.numbers import bits

    out = 1 if bits(0) <= b else 0
    for q in range(1, 1 << b):
        for p in range(1, 1 << b):
            if gcd(p, q) == 1 and bits(Fraction(p, q)) <= b:
                out += 2
    return out


def min_fixed_bits(W: int, N: int, C: int = 2) -> int:
    """Smallest b with 2^{W·b} ≥ C^N (W parameters with b bits each in a fixed format)."""
    W, N, C = (check_positive_int(k, v) for k, v in (("W", W), ("N", N), ("C", C)))
    need = (C ** N - 1).bit_length()  # = ⌈log2 C^N⌉
    return max(1, -(-need // W))


def min_exactmem_bits(W: int, N: int, C: int = 2) -> int:
    """Smallest b with R(b)^W ≥ C^N (every weight with exactmem ``bits ≤ b``).

    R is increasing (R(1) = 1 < R(2) = 3, and R(b+1) − R(b) = b·2^b > 0 for b ≥ 2), so the
    predicate is monotone in b: galloping from a guess, the fixed-format minimum (R(b) ≥ 2^b
    for b ≥ 3, so the answer is rarely above it), then bisection; exact integer comparisons."""
    W, N, C = (check_positive_int(k, v) for k, v in (("W", W), ("N", N), ("C", C)))
    target = C ** N
    return least_from_guess(lambda b: rationals_with_bits_at_most(b) ** W >= target, min_fixed_bits(W, N, C))


def total_bits_capacity(W: int, T: int) -> int:
    """4^{T−W}·C(T, W): at most this many weight vectors of W rationals have Σ bits ≤ T."""
    if T < W:
        return 0
    return (1 << (2 * (T - W))) * comb(T, W)


def min_total_bits(W: int, N: int, C: int = 2) -> int:
    """Smallest T with 4^{T−W}·C(T, W) ≥ C^N (exactmem convention, sum of per-weight bits)."""
    W, N, C = (check_positive_int(k, v) for k, v in (("W", W), ("N", N), ("C", C)))
    target = C ** N
    hi = W + (target.bit_length() + 1) // 2 + 1
    # capacity is increasing in T: the smallest T in [W, hi] reaching the target
    return least_true(lambda T: total_bits_capacity(W, T) >= target, W - 1, hi)


def model_bits_report(name: str, n_params: int, max_bits: int, total_bits: int, N: int, C: int = 2) -> Report:
    """Compare a construction's measured bits with the counting bounds for its (N, C).

    These are necessary conditions for a *family* that realizes every labelling with the
    same architecture and bit budget; a construction whose budget is a function of (N, C)
    alone must meet them."""
    rep = Report(f"bit lower bound vs {name}: N={N}, C={C}")
    need = lambda b: label_bits(N, C, b)  # noqa: E731
    rep.add(check("R4.4", "W · max bits ≥ N·log2 C (paper's total bits, fixed format)", n_params * max_bits, ">=",
                  need, "check"))
    rep.add(check("R4.4'", "W·log2 R(max bits) ≥ N·log2 C (exactmem bits convention)",
                  lambda b: n_params * log2_interval(rationals_with_bits_at_most(max_bits), b), ">=", need, "check"))
    rep.add(check("R4.4'", "total bits ≥ minimal T with 4^{T−W}·C(T,W) ≥ C^N", total_bits, ">=",
                  min_total_bits(n_params, N, C), "check"))
    rep.results.update({"N·log2 C": label_bits(N, C), "W": n_params, "max bits": max_bits, "total bits": total_bits,
                        "total bits / (N·log2 C)": Fraction(total_bits) / label_bits(N, C, 32).hi,
                        "min bits per weight (fixed format) at this W": min_fixed_bits(n_params, N, C),
                        "min bits per weight (exactmem) at this W": min_exactmem_bits(n_params, N, C)})
    return rep


def baseline_rows(N_values: List[int], d: int = 16, C: int = 2, seed: int = 0, slopes_up_to: int = 200) -> List[dict]:
    """Build the O(N) ReLU baselines (steps; slopes for small N) on seeded data and measure
    their bits against N·log2 C, and Kajitsuka & Sato's construction (`kajitsuka_rows`)."""
    from ..constructions import relu_interpolation
    from ..data.dataset import random_labels, random_points
    from ..model.measure import measure

    rows = []
    for N in N_values:
        pts = random_points(N, d, seed)
        ys = random_labels(N, seed + 1, num_classes=C)
        forms = [("steps", relu_interpolation.build_steps)]
        if N <= slopes_up_to:
            forms.append(("slopes", relu_interpolation.build))
        for form, fn in forms:
            model, _ = fn(pts, ys, seed)
            ms = measure(model)
            rows.append({"construction": f"relu_interpolation.{form}", "N": N, "C": C, "params": ms.n_params,
                         "max_bits": ms.max_bits, "total_bits": ms.total_bits, "N log2 C": label_bits(N, C, 32),
                         "report": model_bits_report(f"relu_interpolation.{form}", ms.n_params, ms.max_bits,
                                                     ms.total_bits, N, C)})
    return rows + kajitsuka_rows(N_values, d, C, seed)


def kajitsuka_rows(N_values: List[int], d: int, C: int, seed: int, n: int = 8, max_N: int = 10 ** 4) -> List[dict]:
    """Kajitsuka & Sato Theorem B.1 (next-token, n = 8) built on seeded data and measured like
    the baselines; N above ``max_N`` is skipped."""
    from ..constructions.kajitsuka.compact import build_measured

    rows = []
    for N in N_values:
        if N > max_N:
            continue
        ms, _ = build_measured(N, "next_token", n, d, C, seed)
        rows.append({"construction": "kajitsuka.next_token", "N": N, "C": C, "params": ms.n_params,
                     "max_bits": ms.max_bits, "total_bits": ms.total_bits, "N log2 C": label_bits(N, C, 32),
                     "report": model_bits_report("kajitsuka.next_token", ms.n_params, ms.max_bits, ms.total_bits,
                                                 N, C)})
    return rows


def bits_summary(N: int, C: int = 2, n: Optional[int] = None, W: Optional[int] = None) -> Report:
    """The bit lower bounds for N points (C classes) — next-token — or nN binary tokens
    (seq-to-seq, when n is given), with the per-weight minima for W parameters if given."""
    N, C = check_positive_int("N", N), check_positive_int("C", C)
    rep = Report(f"bit lower bounds: N={N}, C={C}" + (f", n={n} (seq-to-seq)" if n else ""))
    pts = N * n if n else N
    rep.results["labelling bits N·log2 C" if not n else "labelling bits nN·log2 C"] = label_bits(pts, C)
    if W is not None:
        W = check_positive_int("W", W)
        bf, be, T = min_fixed_bits(W, pts, C), min_exactmem_bits(W, pts, C), min_total_bits(W, pts, C)
        need = lambda b: label_bits(pts, C, b)  # noqa: E731
        rep.add(check("R4.4", f"fixed format, b = {bf}: W·b ≥ labelling bits", W * bf, ">=", need))
        rep.add(check("R4.4", f"fixed format, b = {bf - 1}: W·b < labelling bits", W * (bf - 1), "<", need))
        rep.add(check("R4.4'", f"exactmem bits, b = {be}: W·log2 R(b) ≥ labelling bits",
                      lambda b: W * log2_interval(rationals_with_bits_at_most(be), b), ">=", need))
        if be > 1:
            rep.add(check("R4.4'", f"exactmem bits, b = {be - 1}: W·log2 R(b) < labelling bits",
                          lambda b: W * log2_interval(rationals_with_bits_at_most(be - 1), b), "<", need))
        rep.add(check("R4.4'", f"total bits, T = {T}: log2(4^(T−W)·C(T,W)) ≥ labelling bits",
                      lambda b: log2_interval(total_bits_capacity(W, T), b), ">=", need))
        if T > W:
            rep.add(check("R4.4'", f"total bits, T = {T - 1}: log2(4^(T−W)·C(T,W)) < labelling bits",
                          lambda b: log2_interval(total_bits_capacity(W, T - 1), b), "<", need))
        rep.results.update({
            f"min bits per weight, fixed format, W={W}": min_fixed_bits(W, pts, C),
            f"min bits per weight, exactmem convention, W={W}": min_exactmem_bits(W, pts, C),
            f"min total bits, exactmem convention, W={W}": min_total_bits(W, pts, C),
        })
    return rep
