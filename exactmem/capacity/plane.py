"""The capacity plane: x = bits per weight, y = memorized bits per parameter (``docs/capacity.md``).

Reads the JSON that ``benchmarks/capacity_plane.py`` writes (``docs/capacity/plane.json``) and
renders, from it alone, the page section between `BEGIN` and `END` (`section`), its figure
(`figure`) and the per-family sentences. Nothing here computes a certified quantity: every number
of the JSON was read by the generator from a certificate that ``python -m exactmem check`` passed
(or from a lower-bound certificate it passed); this module only divides and formats them.

The two axes, per point:

* **y** = memorized bits / parameters. A construction memorizes P labels from C classes, so it holds
  P·log₂C bits of them (P = the kernel's count of distinct inputs, times the sequence length when
  every position is labelled; C = the bound of the certificate's ``label_classes <=`` claim, else the
  kernel's count of distinct labels); its parameters are the kernel's ``n_params``. A trained network
  holds at least its certified memorized bits (``verify --measure bits``, ``docs/capacity.md``).
* **x** = bits per weight: a construction *as built*, the kernel's ``max_bits`` (exactmem's
  convention for a rational, ``docs/measurement.md``); *at b\\**, the float format (sign, b*
  significand bits, an exponent field covering every weight) that stores the network `sweep`
  certified at its minimal b* (the network at b* − 1 refuted); a trained network, its stored
  format (float32: 32, bfloat16: 16), and its certified b* where the experiment has one.

The **counting limit** y = x: W weights of b bits take at most 2^(W·b) values, so they hold at most
W·b bits of anything, y ≤ x. **Kajitsuka & Sato Thm 4.3** (hardmax seq-to-seq): shattering P binary
labels needs W ≥ W_min(P) parameters (``bounds minw``, a checked lower-bound certificate), so a
network that memorizes P binary labels has y = P/W ≤ P/W_min(P): a horizontal ceiling per P, which
meets the diagonal where an optimal memorizer of P labels would sit.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

__all__ = ["BEGIN", "END", "load", "section", "replace_section", "figure", "built_points", "bstar_points",
           "trained_points", "family_sentences", "normalize_trained_rows"]

BEGIN, END = "<!-- plane:begin -->", "<!-- plane:end -->"
FORMAT = "exactmem-capacity-plane"
IMG = "img/capacity_plane.png"  # relative to docs/
STORED_FORMATS = {"float32": 32, "fp32": 32, "bfloat16": 16, "bf16": 16, "float16": 16, "fp16": 16, "float64": 64}


class PlaneError(ValueError):
    """plane.json (or the trained networks' JSON) is not what the generator writes; names the field."""


def load(path: str) -> Dict[str, Any]:
    """The plane document at ``path`` (checked for its format tag)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise PlaneError(f"{path}: not a capacity-plane document (format {doc.get('format')!r}, want {FORMAT!r})")
    return doc


# ------------------------------------------------------------------------------------------- numbers

_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sig(x: Optional[float], k: int = 3) -> str:
    """``x`` with ``k`` significant digits: plain between 10⁻³ and 10⁶ (thousands separated),
    else m·10ᵉ. Deterministic (the page is compared with what this module writes)."""
    if x is None:
        return "—"
    if x == 0:
        return "0"
    if float(x).is_integer() and abs(x) < 10 ** 6:
        return f"{int(x):,}"
    e = math.floor(math.log10(abs(x)))
    if -3 <= e < 6:
        digits = k - 1 - e
        return f"{round(x, digits):,.{max(0, digits)}f}"
    m = round(x / 10 ** e, k - 1)
    if abs(m) >= 10:
        m, e = m / 10, e + 1
    return f"{m:.{k - 1}f}·10{str(e).translate(_SUP)}"


def _int(n: Optional[int]) -> str:
    return "—" if n is None else f"{n:,}"


# ------------------------------------------------------------------------------------------- points

def built_points(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One point per construction instance as built: x = the kernel's max_bits, y = P·log₂C / n_params."""
    out = []
    for p in doc.get("constructions", []):
        if p.get("memorized_bits", 0) > 0 and p.get("status") == "CERTIFIED":
            out.append({"family": p["family"], "name": f"{p['theorem']} {p['instance']}", "x": p["max_bits"],
                        "y": p["memorized_bits"] / p["n_params"], "kind": "built"})
    return out


def bstar_points(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One point per construction with a certified b*: x = the bits per weight of the float format
    holding the b* network, y = P·log₂C / (the b* certificate's n_params)."""
    out = []
    for p in doc.get("constructions", []):
        b = p.get("b_star")
        if b and p.get("memorized_bits", 0) > 0 and b.get("status") == "CERTIFIED":
            out.append({"family": p["family"], "name": f"{p['theorem']} {p['instance']}", "x": b["bits_per_weight"],
                        "y": p["memorized_bits"] / b["n_params"], "kind": "b*"})
    return out


def _field(row: Dict[str, Any], names: Sequence[str], what: str, required: bool = True):
    for n in names:
        if row.get(n) is not None:
            return row[n]
    if required:
        raise PlaneError(f"a trained-network row has no {what} (one of the fields {', '.join(names)})")
    return None


def normalize_trained_rows(rows: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The rows of the trained-network experiment (``docs/capacity/morris.json``) in the plane's
    fields: model, seed, N, params, format, bits_per_weight, certified and float memorized bits,
    check verdict, certificate, and b* where certified. Rows without a certified figure (e.g. not
    measured yet) are dropped; a row missing params or its format is an error naming the field."""
    out = []
    for r in rows:
        cert = _field(r, ("certified_memorized_bits", "memorized_bits", "certified_bits"), "certified memorized bits",
                      required=False)
        if cert is None:
            continue
        fmt = str(_field(r, ("format", "dtype", "weights", "stored_format"), "stored format"))
        bpw = r.get("bits_per_weight", STORED_FORMATS.get(fmt.lower()))
        if bpw is None:
            raise PlaneError(f"a trained-network row has format {fmt!r}, whose bits per weight are unknown "
                             f"(add bits_per_weight)")
        out.append({"model": str(_field(r, ("model", "name", "config"), "model name")),
                    "seed": r.get("seed"), "N": r.get("N", r.get("n_sequences")),
                    "params": int(_field(r, ("params", "n_params", "parameters"), "parameter count")),
                    "format": fmt, "bits_per_weight": bpw, "certified_memorized_bits": float(cert),
                    "float_memorized_bits": _field(r, ("float_memorized_bits", "float_bits"), "", required=False),
                    "check": r.get("check", r.get("verdict", r.get("status"))),
                    "certificate": r.get("certificate"),
                    "b_star": _field(r, ("b_star", "certified_b_star", "bstar"), "", required=False)})
    return out


def trained_points(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per (model, stored format): the capacity, i.e. the row (dataset size, seed) whose certified
    memorized bits are largest, among rows whose certificate the kernel CERTIFIED; x = the format's
    bits per weight (and a second point at its certified b* when the row has one)."""
    best: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for r in doc.get("trained", []):
        if r.get("check") not in (None, "CERTIFIED"):
            continue
        k = (r["model"], r["format"])
        if k not in best or r["certified_memorized_bits"] > best[k]["certified_memorized_bits"]:
            best[k] = r
    out = []
    for (model, fmt), r in sorted(best.items(), key=lambda kv: (kv[1]["params"], kv[0][1])):
        y = r["certified_memorized_bits"] / r["params"]
        fl = r.get("float_memorized_bits")
        pt = {"family": "trained networks", "name": f"{model} {fmt}", "x": r["bits_per_weight"], "y": y,
              "kind": "trained", "row": r, "float_y": None if fl is None else fl / r["params"]}
        out.append(pt)
        if r.get("b_star"):
            out.append({**pt, "x": r["b_star"], "kind": "trained b*"})
    return out


# ------------------------------------------------------------------------------------------- sentences

def _span(vals: Sequence[float]) -> str:
    lo, hi = min(vals), max(vals)
    return sig(lo, 2) if sig(lo, 2) == sig(hi, 2) else f"{sig(lo, 2)} to {sig(hi, 2)}"


def family_sentences(doc: Dict[str, Any]) -> List[str]:
    """One sentence per family, computed from the points: how far below the limit y = x it sits."""
    out = []
    fams: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    for p in built_points(doc) + bstar_points(doc):
        fams.setdefault(p["family"], {}).setdefault(p["kind"], []).append(p)
    for fam in _family_order(doc):
        kinds = fams.get(fam)
        if not kinds:
            continue
        built = [p["y"] / p["x"] for p in kinds.get("built", [])]
        bstar = [p["y"] / p["x"] for p in kinds.get("b*", [])]
        ys = [p["y"] for p in kinds.get("built", [])]
        s = f"**{fam}** ({len(built)} instance{'s' if len(built) != 1 else ''}): y = {_span(ys)} bits per parameter; " \
            f"y/x = {_span(built)} as built"
        if bstar:
            s += f" and {_span(bstar)} at the certified b* ({len(bstar)} of them)"
        s += f" — its weights could hold {sig(1 / max(built + bstar), 2)}× to {sig(1 / min(built + bstar), 2)}× " \
             f"the bits its labels carry."
        out.append(s)
    tps = [p for p in trained_points(doc) if p["kind"] == "trained"]
    if tps:
        by_fmt: Dict[str, List[Dict[str, Any]]] = {}
        for p in tps:
            by_fmt.setdefault(p["row"]["format"], []).append(p)
        parts = [f"{fmt} (x = {sig(ps[0]['x'])}): y = {_span([p['y'] for p in ps])}, y/x = "
                 f"{_span([p['y'] / p['x'] for p in ps])}" for fmt, ps in sorted(by_fmt.items())]
        s = f"**trained networks** ({len({p['row']['model'] for p in tps})} models, capacity = the best certified " \
            f"row per model and format): " + "; ".join(parts)
        out.append(s + (" — the closest to the limit of all points on the plane." if _closest_is_trained(doc) else "."))
    return out


def _closest_is_trained(doc) -> bool:
    pts = built_points(doc) + bstar_points(doc)
    tps = [p for p in trained_points(doc)]
    if not tps:
        return False
    return max(p["y"] / p["x"] for p in tps) > max((p["y"] / p["x"] for p in pts), default=0)


def _family_order(doc) -> List[str]:
    seen: List[str] = []
    for p in doc.get("constructions", []):
        if p["family"] not in seen:
            seen.append(p["family"])
    return seen


# ------------------------------------------------------------------------------------------- tables

def construction_table(doc: Dict[str, Any]) -> str:
    head = ("| family | theorem / instance | labels P | classes C | P·log₂C bits | params W | y = bits/param | "
            "x as built (max bits) | y/x | b* | x at b* (bits/weight) | y/x at b* | certificates |")
    lines = [head, "|" + "---|" * 13]
    for p in doc.get("constructions", []):
        b = p.get("b_star")
        mem, W = p.get("memorized_bits", 0), p["n_params"]
        y = mem / W if W else None
        certs = f"[built]({_rel(p['certificate'])})"
        if b:
            certs += f", [b*]({_rel(b['certificate'])}) {b['status']}, [b*−1]({_rel(b['below']['certificate'])}) " \
                     f"{b['below']['status']}"
        cls = f"{p['classes']}" + ("" if p["classes_from"] == "claim" else " (distinct labels)")
        lines.append(f"| {p['family']} | {p['theorem']} {p['instance']} | {_int(p['labels'])} | {cls} | {sig(mem)} | "
                     f"{_int(W)} | {sig(y)} | {p['max_bits']} | {sig(y / p['max_bits']) if y else '—'} | "
                     f"{b['b'] if b else '—'} | {b['bits_per_weight'] if b else '—'} | "
                     f"{sig(mem / b['n_params'] / b['bits_per_weight']) if b and mem else '—'} | {certs} |")
    return "\n".join(lines)


def _rel(path: str) -> str:
    """A repository path as a link from docs/capacity.md."""
    return path[len("docs/"):] if path.startswith("docs/") else "../" + path


def trained_table(doc: Dict[str, Any]) -> str:
    pts = trained_points(doc)
    if not pts:
        return ""
    lines = ["| model | stored format | params W | best row (N, seed) | certified memorized bits | y certified | "
             "y float | x (bits/weight) | y/x | check |", "|" + "---|" * 10]
    for p in pts:
        r = p["row"]
        lines.append(f"| {r['model']} | {r['format']}{' at b*' if p['kind'] == 'trained b*' else ''} | "
                     f"{_int(r['params'])} | N = {_int(r['N'])}, seed {r['seed']} | "
                     f"{sig(r['certified_memorized_bits'])} | {sig(p['y'])} | {sig(p['float_y'])} | {sig(p['x'])} | "
                     f"{sig(p['y'] / p['x'])} | {r['check'] or '—'} |")
    return "\n".join(lines)


def thm43_table(doc: Dict[str, Any]) -> str:
    rows = doc.get("thm43", [])
    if not rows:
        return ""
    lines = ["| P binary labels (n·N) | W_min (eq. (96)) | ceiling y ≤ P / W_min | lower-bound certificate |",
             "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {_int(r['P'])} | {_int(r['W_min'])} | {sig(r['P'] / r['W_min'])} | "
                     f"[{r['status']}]({_rel(r['certificate'])}) |")
    return "\n".join(lines)


def section(doc: Dict[str, Any]) -> str:
    """The Markdown between `BEGIN` and `END` of ``docs/capacity.md``, from the plane document alone."""
    src = doc.get("trained_source")
    n_tr = len(doc.get("trained", []))
    parts = [
        "## The capacity plane",
        "",
        "<!-- generated by `python benchmarks/capacity_plane.py` from docs/capacity/plane.json; do not edit by hand -->",
        "",
        f"![capacity plane: bits per weight against memorized bits per parameter]({IMG})",
        "",
        "x = bits per weight, y = memorized bits per parameter, both logarithmic. The diagonal is the **counting "
        "limit** y = x: W weights of b bits take at most 2^(W·b) values, so no network stores more than its "
        "weights hold. The horizontal lines are **Kajitsuka & Sato's Thm 4.3** (hardmax seq-to-seq): shattering P "
        "binary labels needs at least W_min(P) parameters, so y ≤ P / W_min(P) — each line meets the diagonal "
        "where an optimal memorizer of P labels would sit. Hollow markers: the constructions as built "
        "(x = the kernel's max bits per weight); filled: the same networks rounded to the fewest significand bits "
        "b* that `sweep` certifies (x = sign + b* + exponent bits of that float format; the network at b* − 1 is "
        "refuted); stars: trained networks at their stored format.",
        "",
        "Every number below was read from a certificate that `python -m exactmem check` passed: a construction's "
        "memorized bits are P·log₂C (P labelled predictions = the kernel's count of distinct inputs, times the "
        "sequence length when every position is labelled; C = the bound of its `label_classes <=` claim, else "
        "the kernel's count of distinct labels), its parameters and max bits the kernel's measurements. "
        "Regenerate with `python benchmarks/capacity_plane.py` (certificates in `docs/capacity/certs/`, "
        "each re-checked). [Tutorial 5](tutorials/05-how-many-bits-does-a-network-memorize.md) measures a network "
        "of your own and puts it on this plane.",
        "",
        "### How far each family sits from the limit",
        "",
    ]
    parts += [f"* {s}" for s in family_sentences(doc)]
    parts += ["", "### The constructions", "", construction_table(doc), ""]
    skipped = doc.get("skipped", [])
    if skipped:
        parts += ["Not on the plane: " + "; ".join(f"{s['theorem']} {s['instance']} ({s['why']})" for s in skipped)
                  + ".", ""]
    parts += ["### Trained networks", ""]
    tt = trained_table(doc)
    if tt:
        parts += [f"From `{src}` ({n_tr} certified rows; per model and stored format the row with the most "
                  "certified memorized bits, i.e. its measured capacity):", "", tt, ""]
    else:
        parts += [f"No trained-network rows yet (`{src or 'docs/capacity/morris.json'}` is absent or has no "
                  "certified row): the Morris experiment writes them.", ""]
    parts += ["### Thm 4.3's ceilings", "", thm43_table(doc)]
    return "\n".join(parts).rstrip() + "\n"


def replace_section(text: str, body: str) -> str:
    """``text`` with the lines between `BEGIN` and `END` replaced by ``body`` (appended with both
    markers when the page has none)."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return f"{head}{BEGIN}\n{body}{END}{tail}"
    return text.rstrip("\n") + f"\n\n{BEGIN}\n{body}{END}\n"


def current_section(text: str) -> Optional[str]:
    """What the page holds between the markers (None without them)."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


# ------------------------------------------------------------------------------------------- figure

MARKERS = "osD^vP<>hX"


def figure(doc: Dict[str, Any], path: Optional[str] = None, extra: Sequence[Dict[str, Any]] = (),
           title: Optional[str] = None):
    """Draw the plane (matplotlib): the counting limit, Thm 4.3's ceilings, the construction points
    (hollow as built, filled at b*), the trained networks (stars) and ``extra`` points (dicts with x,
    y, label), e.g. the network of a tutorial. With ``path``: written there as PNG (no pyplot, so
    any backend is left alone) and ``path`` returned; without: a pyplot figure, which a notebook
    shows."""
    from matplotlib import rcParams

    if path is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8.5, 6.2))
    else:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8.5, 6.2))
        ax = fig.add_subplot()

    pts = built_points(doc) + bstar_points(doc)
    tps = trained_points(doc)
    xs = [p["x"] for p in pts + tps] + [e["x"] for e in extra]
    ys = [p["y"] for p in pts + tps] + [e["y"] for e in extra]
    ceilings = [(r["P"], r["P"] / r["W_min"]) for r in doc.get("thm43", [])]
    x0, x1 = min(xs) / 1.6, max(xs + [64]) * 1.6
    y0 = min(ys) / 3
    y1 = max(ys + [c for _, c in ceilings] + [x1]) * 2
    ax.set_xscale("log")
    ax.set_yscale("log")
    lim = max(x1, y1)
    lo = min(x0, y0)
    ax.plot([lo, lim], [lo, lim], "k-", lw=1.4, label="counting limit y = x")
    ax.fill_between([lo, lim], [lo, lim], [lim, lim], color="0.92", zorder=0,
                    label="impossible: more bits than the weights hold")
    for i, (P, c) in enumerate(ceilings):
        ax.plot([c, lim], [c, c], ls=":", color="0.45", lw=1.1, label="Thm 4.3 ceilings y ≤ P/W_min(P)" if i == 0
                else None)
        ax.annotate(f"Thm 4.3, P = {sig(P, 2)}", (x1 / 1.05, c), ha="right", va="bottom", fontsize=7, color="0.35")
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    for i, fam in enumerate(_family_order(doc)):
        c, m = colors[i % len(colors)], MARKERS[i % len(MARKERS)]
        b = [p for p in pts if p["family"] == fam and p["kind"] == "built"]
        s = [p for p in pts if p["family"] == fam and p["kind"] == "b*"]
        if b:
            ax.scatter([p["x"] for p in b], [p["y"] for p in b], marker=m, facecolors="none", edgecolors=c, s=36,
                       label=f"{fam} (as built)")
        if s:
            ax.scatter([p["x"] for p in s], [p["y"] for p in s], marker=m, color=c, s=30, label=f"{fam} (at b*)")
    if tps:
        t = [p for p in tps if p["kind"] == "trained"]
        ax.scatter([p["x"] for p in t], [p["y"] for p in t], marker="*", color="crimson", s=110, zorder=5,
                   label="trained networks (certified, stored format)")
        tb = [p for p in tps if p["kind"] == "trained b*"]
        if tb:
            ax.scatter([p["x"] for p in tb], [p["y"] for p in tb], marker="*", facecolors="none",
                       edgecolors="crimson", s=110, zorder=5, label="trained networks at certified b*")
    for e in extra:
        ax.scatter([e["x"]], [e["y"]], marker="P", color="black", s=90, zorder=6, label=e.get("label", "this network"))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("bits per weight (x)")
    ax.set_ylabel("memorized bits per parameter (y)")
    ax.set_title(title or "The capacity plane: every point certified")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    if path is None:
        return fig
    fig.savefig(path, dpi=110)
    return path
