"""Lower bounds vs the O(N) baseline: print the exact series and ratios, draw the plot.

    python benchmarks/lower_bounds.py [OUT.png]      (default docs/lower-bounds.png)

Prints, for the sizes of issue 5 and two at scale (issue 13: nN = 2048·10^9 and 10^21), the
minimal W of Theorem 4.3 (simplified bound (96) and sharp bound (90) minimized over a family
of architectures) and their ratio, the next-token minima of Theorem 4.2 up to N = 10^15, and
the series drawn in the plot (N up to 10^12). Nothing here is timed or asserted; every number
is exact (integers from checked inequalities). Times: ``benchmarks/bounds_scale.py``.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from exactmem.bounds.next_token import min_W_next_token  # noqa: E402
from exactmem.bounds.plot import N_VALUES, NN_VALUES, PlotUnavailable, make_plot, series, series_markdown  # noqa: E402
from exactmem.bounds.seq2seq import simplification_cost  # noqa: E402


def main(out: str) -> None:
    print("| n | N | nN | min W (96) | min W (90), family | ratio W | capacity ratio (96)/(90) | sharp optimum |")
    print("|---|---|---|---|---|---|---|---|")
    for n, N in ((8, 1000), (64, 10 ** 4), (1, 10 ** 6), (2048, 10 ** 9), (10 ** 6, 10 ** 15)):
        r = simplification_cost(n, N).results
        ratio = r["ratio min W (90) / min W (96)"]
        cap = r["capacity ratio 9W²log2(48e·nN) / log2 Π at the sharp optimum"]
        print(f"| {n:,} | {N:,} | {n * N:,} | {r['min W (96) simplified']} | {r['min W (90) sharp, over family']} "
              f"| {ratio} ≈ {ratio.numerator * 1000 // ratio.denominator / 1000} "
              f"| [{cap.lo.numerator // cap.lo.denominator}, {-(-cap.hi.numerator // cap.hi.denominator)}] "
              f"| {r['sharp optimum']} |")
    print()
    for N in (10 ** 3, 10 ** 4, 10 ** 6, 10 ** 9, 10 ** 12, 10 ** 15):
        m = min_W_next_token(N)
        print(f"next-token N={N:,}: sign-count {m.sign_count}, GJ algorithm {m.algorithm}")
    print()
    try:
        S = make_plot(out)
        print(f"wrote {out}")
    except PlotUnavailable as e:
        print(f"(no plot: {e})")
        S = series(N_VALUES, NN_VALUES)
    print(series_markdown(S))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join("docs", "lower-bounds.png"))
