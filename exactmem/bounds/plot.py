"""The lower bounds against the O(N) baseline, as exact series and a PNG plot.

Every plotted number is an exact integer computed by exactmem (minimal W from the
checked inequalities; baseline parameter counts from ``proofs/relu_interpolation.py``).
matplotlib (the ``plot`` extra) is imported only to draw; without it the series are still
available and `make_plot` raises `PlotUnavailable` with an install hint.

Left panel, next-token (against N): the two explicit Theorem B.2 bounds and the baselines
(steps form d + 6(N−1) + 1, slopes form d + 3(N−1) + 1). Right panel, seq-to-seq
(against nN): the Theorem B.3 bound (96) — it depends on nN only — the sharp bound (90)
minimized over a family of architectures for n = 1 and n = 8, and the token-wise baseline
d + 6(nN−1) + 1 (the step network memorizes all nN distinct tokens, attention unused).
Kajitsuka & Sato's construction (``exactmem.constructions.kajitsuka.compact``) is built and measured
for the points up to 10^4 (`kajitsuka_series`).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import missing_extra, write_error
from .next_token import min_W_next_token
from .seq2seq import Family, min_W, min_W_sharp

Series = List[Tuple[int, int]]

N_VALUES = tuple(10 ** k for k in range(1, 13))  # next-token panel: N = 10 … 10^12
NN_VALUES = tuple(8 * 10 ** k for k in range(13))  # seq-to-seq panel: nN = 8 … 8·10^12 (n = 8: N up to 10^12)


class PlotUnavailable(RuntimeError):
    """matplotlib is missing."""


def steps_params(N: int, d: int) -> int:
    """proofs/relu_interpolation.py, steps form: d + 6(N − 1) + 1 parameters."""
    return d + 6 * (N - 1) + 1


def slopes_params(N: int, d: int) -> int:
    """proofs/relu_interpolation.py, slopes form: d + 3(N − 1) + 1 parameters."""
    return d + 3 * (N - 1) + 1


def kajitsuka_series(xs: Sequence[int], setting: str, d: int, max_x: int = 10 ** 4) -> Optional[Series]:
    """Kajitsuka & Sato's construction, built and measured (exact stored parameter counts):
    (N, params) for ``setting="next-token"`` (n = 8), (nN, params) for ``"seq2seq"`` (n = 8,
    N = nN/8). Points beyond ``max_x`` are not built (N = 10^4 takes seconds; 10^7 would not)."""
    from ..constructions.kajitsuka.compact import build_measured

    out: Series = []
    for x in xs:
        if x > max_x:
            continue
        if setting == "next-token":
            out.append((x, build_measured(x, "next_token", 8, d)[0].n_params))
        elif x % 8 == 0:
            out.append((x, build_measured(x // 8, "seq2seq", 8, d)[0].n_params))
    return out or None


def series(N_values: Sequence[int], nN_values: Sequence[int], d: int = 16, sharp_n: Sequence[int] = (1, 8),
           family: Family = Family(), sharp_max: Optional[int] = None) -> Dict[str, Series]:
    """Exact integer series for the plot (and for the table in docs/lower-bounds.md). Every
    minimum is found by bisection on exact decisions (``seq2seq.min_W``, ``sharp.min_W_sharp``,
    ``next_token.min_W_next_token``), so the cost of a point hardly depends on its size;
    ``sharp_max``, if given, drops sharp-bound points above it."""
    out: Dict[str, Series] = {}
    nt = [min_W_next_token(N) for N in N_values]
    out["Thm 4.2 sign-count bound (derived)"] = [(r.N, r.sign_count) for r in nt]
    out["Thm 4.2 GJ algorithm bound 12W²+20W ≥ N"] = [(r.N, r.algorithm) for r in nt]
    out["baseline steps d+6(N−1)+1"] = [(N, steps_params(N, d)) for N in N_values]
    out["baseline slopes d+3(N−1)+1"] = [(N, slopes_params(N, d)) for N in N_values]
    out["Thm 4.3 (96): nN ≤ 9W²log2(48e·nN)"] = [(T, min_W(1, T).W) for T in nN_values]
    for n in sharp_n:
        pts = [(T, min_W_sharp(n, T // n, family).W) for T in nN_values
               if T % n == 0 and (sharp_max is None or T <= sharp_max)]
        out[f"Thm 4.3 sharp (90), n={n}"] = pts
    out["token-wise baseline d+6(nN−1)+1"] = [(T, steps_params(T, d)) for T in nN_values]
    return out


def make_plot(path: str, N_values: Sequence[int] = N_VALUES, nN_values: Sequence[int] = NN_VALUES, d: int = 16,
              sharp_n: Sequence[int] = (1, 8), family: Family = Family()) -> Dict[str, Series]:
    """Draw the two panels into ``path`` (PNG). Returns the series drawn."""
    import os

    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        from .arch import BoundsInputError

        raise BoundsInputError(f"cannot write {path}: directory {folder} does not exist")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise PlotUnavailable(str(missing_extra("bounds plot", "matplotlib", "plot"))) from e
    S = series(N_values, nN_values, d, sharp_n, family)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5))
    style = {"baseline": dict(linestyle="--"), "Thm": dict(marker="o")}

    def draw(ax, keys):
        for k in keys:
            pts = S[k]
            if not pts:
                continue
            kw = style["baseline"] if "baseline" in k else style["Thm"]
            ax.plot([x for x, _ in pts], [y for _, y in pts], label=k, **kw)

    draw(ax1, [k for k in S if k.startswith("Thm 4.2") or k.startswith("baseline")])
    draw(ax2, [k for k in S if k.startswith("Thm 4.3") or k.startswith("token-wise")])
    for ax, setting, xs in ((ax1, "next-token", N_values), (ax2, "seq2seq", nN_values)):
        ks = kajitsuka_series(xs, setting, d)
        if ks:
            ax.plot([x for x, _ in ks], [y for _, y in ks], label="Kajitsuka & Sato construction (built, n = 8)",
                    marker="s")
        else:
            ax.plot([], [], " ", label="Kajitsuka & Sato construction: no point ≤ 10^4 on this axis")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        ax.set_ylabel("parameters W")
    ax1.set_xlabel("N (next-token, repeated-token sequences)")
    ax1.set_title("Next-token: lower bounds vs O(N) baseline")
    ax2.set_xlabel("nN (seq-to-seq, distinct tokens)")
    ax2.set_title("Seq-to-seq (hardmax): lower bounds vs O(nN) baseline")
    fig.suptitle(f"exactmem: minimal W allowed by the checked inequalities (d = {d} for baselines)", fontsize=10)
    fig.tight_layout()
    tmp = path + ".part.png"
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)  # never leave a half-written plot under the final name
    except OSError as e:  # name the user's path and the reason, never the temporary name
        raise write_error(path, e) from None
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)
    return S


def series_markdown(S: Dict[str, Series]) -> str:
    """The series as Markdown tables (one per panel)."""
    lines = []
    for k, pts in S.items():
        lines.append(f"* {k}: " + ", ".join(f"{x:,} → {y:,}" for x, y in pts))
    return "\n".join(lines)
