"""The model's code length for its examples, enclosed: −log₂ p(label | input) per prediction, summed.

For one prediction with scores s (the logits of one read position) and label y,
``−log₂ softmax(s)_y = log₂ Σ_c exp(s_c − s_y)`` (≥ 0, since the term c = y is 1). The scores are
arb balls of the real-number network of the stored weights (`exactmem.verify.evaluate`), so the
sum over the example's predictions is a ball too; its upper end, rounded up to a multiple of
2^−GRAIN, is the example's claimed code length (the producer's claim; the kernel re-derives it,
``docs/verify-format.md`` § *Code length*). An arithmetic coder driven by the exactly evaluated
network encodes the examples' labels in at most ``⌈Σ⌉ + 2`` bits (Cover & Thomas, Thm 13.3.1), so
``dataset bits − (Σ + 2)`` is a lower bound on the bits the network memorized (Morris et al. 2025,
Definition 3, with the model as the reference) — ``docs/capacity.md``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..arith.linalg import lower_fraction, upper_fraction
from ..kernel.facts import CODER_BITS  # the kernel's: codelength_bits = Σ confirmed code lengths + CODER_BITS
from .evaluate import ArbBackend, Program, _combine, _decide, _margin, ladder_rows
from .onnx_import import VerifyInputError, rational_str
from .special import Special

__all__ = ["GRAIN", "CODER_BITS", "prediction_bits", "judge_and_measure", "float_codelength", "round_up"]

GRAIN = 32  # claimed code lengths are multiples of 2^-32 bits (short texts; 2^-32 per example is negligible)


class NoCodeLength(ValueError):
    """A prediction whose code length is not a finite real (a special score)."""


def round_up(x: Fraction, grain: int = GRAIN) -> Fraction:
    """The least multiple of 2^-grain that is >= x."""
    n = x * (1 << grain)
    return Fraction(-((-n.numerator) // n.denominator), 1 << grain)


def prediction_bits(K: ArbBackend, row: Sequence[Any], label: int):
    """−log₂ softmax(row)[label] = log(Σ_c exp(s_c − s_label)) / log 2 as an arb ball, shifted by the
    largest midpoint so that no exponential overflows."""
    if any(isinstance(v, Special) for v in row):
        raise NoCodeLength(f"a score of the prediction is {next(v for v in row if isinstance(v, Special))}")
    d = [v - row[label] for v in row]
    m = max(v.mid() for v in d)
    return ((sum((v - m).exp() for v in d)).log() + m) / K.flint.arb(2).log()


def judge_and_measure(prog: Program, x, label, precisions: Sequence[int], backends: Optional[Dict] = None,
                      accuracy: int = GRAIN + 8):
    """``(verdict, bits, margin, (low, high, predictions))`` of one example: the verdict as
    `evaluate.judge` gives it, and its code length enclosed in [low, high] (Fractions; high rounded
    up to 2^−GRAIN), climbing the precision ladder until the verdict is decided and the enclosure's
    radius is below 2^−accuracy (or the ladder ends: the enclosure is then as wide as it came out)."""
    for prec, K, rows, labels in ladder_rows(prog, x, label, precisions, {} if backends is None else backends):
        if rows is None:
            if prec == precisions[-1]:
                return "unknown", prec, "", None
            continue
        vs = [_decide(list(r), int(y)) for r, y in zip(rows, labels)]
        v = _combine(vs)
        try:
            bits = sum(prediction_bits(K, list(r), int(y)) for r, y in zip(rows, labels))
        except NoCodeLength:  # a special score: no finite code length (the example's enclosure is None)
            bits = K.flint.arb("nan")
        tight = bits.is_finite() and bits.rad() < K.flint.arb(2) ** -accuracy
        if (v != "unknown" and tight) or prec == precisions[-1]:
            k = next((i for i, w in enumerate(vs) if w == v), 0)
            enc = None
            if bits.is_finite():
                enc = max(Fraction(0), lower_fraction(bits)), round_up(upper_fraction(bits)), len(rows)
            return v, prec, _margin(list(rows[k]), int(labels[k])), enc
    raise AssertionError("empty precision ladder")


def float_codelength(logits: np.ndarray, labels: np.ndarray) -> float:
    """Σ −log₂ softmax(logits)[label] in float64 (what a float tool reports; display only)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(logp, np.asarray(labels, dtype=np.int64)[..., None], axis=-1)
    return float(-picked.sum() / np.log(2.0))


def dataset_bits(predictions: int, vocab: int, prec: int = 128) -> Tuple[Fraction, Fraction]:
    """[low, high] of ``predictions · log₂ vocab``: the entropy of labels drawn uniformly from
    ``vocab`` classes (exact when vocab is a power of two)."""
    if vocab & (vocab - 1) == 0:
        b = Fraction(predictions * (vocab.bit_length() - 1))
        return b, b
    import flint

    old = flint.ctx.prec
    try:
        flint.ctx.prec = prec
        v = flint.arb(predictions) * flint.arb(vocab).log() / flint.arb(2).log()
        return lower_fraction(v), upper_fraction(v)
    finally:
        flint.ctx.prec = old


def summarize(encs: List[Optional[Tuple[Fraction, Fraction, int]]]) -> Optional[Tuple[Fraction, Fraction, int]]:
    """The dataset's enclosure: the examples' sums (None if any example has none)."""
    if any(e is None for e in encs):
        return None
    return sum(e[0] for e in encs), sum(e[1] for e in encs), sum(e[2] for e in encs)


def source_bits_value(v, measure) -> Fraction:
    """``--source-bits`` as an exact rational >= 0 (one-line errors)."""
    if measure != "bits":
        raise VerifyInputError("--source-bits applies with --measure bits")
    try:
        q = v if isinstance(v, Fraction) else Fraction(str(v).strip())
    except (ValueError, ZeroDivisionError):
        q = None
    if q is None or q < 0:
        raise VerifyInputError(f"--source-bits must be a number of bits >= 0 (e.g. 640, 6.4e2 or 32/5), not {v!r}")
    return q


def measured_bits(encs: List[Optional[Tuple[Fraction, Fraction, int]]], classes: int, n_params: int,
                  source_bits=None, float_rows=None) -> Dict[str, Any]:
    """The ``memorized`` section of a verify result (``docs/capacity.md``): dataset bits (the labels'
    entropy: ``source_bits``, else predictions · log₂ ``classes``), the certified code length
    (the enclosures' upper ends + `CODER_BITS`), memorized bits = dataset − code length (a certified
    lower bound when the dataset bits are exact or taken at their lower end), the same from float
    log-probabilities (``float_rows``: (scores, labels) per example), and bits per parameter. Exact
    values are rational texts; ``*_float`` fields are floats for display."""
    tot = summarize(encs)
    out: Dict[str, Any] = {"examples": len(encs), "n_params": n_params, "coder_bits": CODER_BITS}
    if tot is None:
        out.update({"codelength_bits": None, "memorized_bits": None,
                    "why": "an example's code length is not a finite real (a special score) or was not enclosed"})
        return out
    low, high, preds = tot
    if source_bits is None:
        d_lo, d_hi = dataset_bits(preds, classes)
        source = f"{preds} predictions x log2 {classes} (labels uniform over the model's classes)"
    else:
        d_lo = d_hi = Fraction(source_bits)
        source = "given (--source-bits)"
    code = high + CODER_BITS
    mem = d_lo - code
    out.update({"predictions": preds, "dataset_bits": rational_str(d_lo) if d_lo == d_hi else [rational_str(d_lo), rational_str(d_hi)],
                "dataset_source": source, "codelength_bits": rational_str(code), "codelength_lower": rational_str(low),
                "memorized_bits": rational_str(mem), "dataset_bits_float": float(d_lo), "codelength_bits_float": float(code),
                "memorized_bits_float": float(mem),
                "bits_per_parameter": float(mem / n_params) if n_params else None})
    if float_rows:
        fl = sum(float_codelength(s, y) for s, y in float_rows)
        out["float_codelength_bits"] = fl
        out["float_memorized_bits"] = float(d_lo) - fl
        out["certified_over_float"] = float(mem) / (float(d_lo) - fl) if float(d_lo) - fl > 0 else None
    return out


def memorized_text(m: Dict[str, Any]) -> str:
    """Two lines for the terminal: the certified code length and memorized bits, float beside them."""
    if m.get("codelength_bits") is None:
        return f"memorized bits: not enclosed ({m.get('why')})"
    fl = m.get("float_memorized_bits")
    side = "" if fl is None else f"; float estimate {fl:,.1f} (certified / float = {m['certified_over_float']:.4f})" \
        if m.get("certified_over_float") is not None else f"; float estimate {fl:,.1f}"
    bpp = m["bits_per_parameter"]
    return (f"code length <= {m['codelength_bits_float']:,.3f} bits (certified, incl. the coder's {m['coder_bits']}) "
            f"for {m['predictions']} predictions; dataset {m['dataset_bits_float']:,.1f} bits ({m['dataset_source']})\n"
            f"memorized >= {m['memorized_bits_float']:,.3f} bits"
            + (f" = {bpp:.4f} bits per parameter ({m['n_params']} parameters)" if bpp is not None else "") + side)
