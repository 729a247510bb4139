"""Certify, example by example, what a trained network memorizes.

The trained float32 weights are imported exactly (:func:`exactmem.importer.from_state_dict`:
every float is the rational it denotes). Then, per example, the exact forward pass (Arb balls
after a softmax layer) decides one of three verdicts:

* ``certified`` — the exact argmax is the label, and the independent checker certifies it:
  one certificate holds every such example (``n_examples`` claimed), checked by the kernel
  (or its accelerator / Dask shards), so the count is the checker's, not the producer's;
* ``refuted`` — the exact argmax is strict and another label (or a tie: the papers need a
  strict argmax);
* ``unknown`` — a softmax layer's balls do not separate the top logit at the precision budget.

:func:`float_predictions` is the float32 accuracy the papers report, from the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

from ..data.dataset import Dataset
from ..model.layers import Model

CERTIFIED, REFUTED, UNKNOWN = "certified", "refuted", "unknown"


@dataclass
class ExampleVerdicts:
    """Per-example verdicts and the independent checker's verdict on the certified subset."""

    verdicts: List[str]
    predictions: List[Optional[int]]
    checker_status: str  # CERTIFIED (or "none" when no example is certified)
    checker_message: str = ""
    certified_indices: List[int] = field(default_factory=list)

    def count(self, what: str) -> int:
        return sum(v == what for v in self.verdicts)

    @property
    def certified(self) -> int:
        return self.count(CERTIFIED)

    @property
    def refuted(self) -> int:
        return self.count(REFUTED)

    @property
    def unknown(self) -> int:
        return self.count(UNKNOWN)


def exact_predictions(model: Model, inputs: Sequence, prec: int = 128) -> List[Any]:
    """The exact argmax per example (an int), ``"tie"`` for an exact tie, ``None`` where Arb
    balls do not separate the top logit (only after a softmax layer)."""
    from ..model.forward import forward

    if model.decode != "argmax":
        raise ValueError("per-example certification of trained networks needs an argmax-decoded model")
    res = forward(model, list(inputs), prec=prec)
    out = []
    for o in res.outputs:
        if res.exact:
            top = max(o)
            win = [k for k, x in enumerate(o) if x == top]
            out.append(win[0] if len(win) == 1 else "tie")
        else:
            win = [k for k, x in enumerate(o) if all(x > y for j, y in enumerate(o) if j != k)]
            out.append(win[0] if win else None)  # balls that do not separate: undecided
    return out


def certify_examples(model: Model, dataset: Dataset, prec: int = 128, workers: int = 1,
                     checker: str = "auto", path: Optional[str] = None) -> ExampleVerdicts:
    """Per-example verdicts for ``model`` on ``dataset`` (argmax decoding, readout ``last``),
    and the independent checker's verdict on the certificate of the examples called certified.
    A producer/checker disagreement raises (it would be a bug in one of them)."""
    from ..api import certify
    from ..certificate.writer import Claim

    preds = exact_predictions(model, dataset.inputs, prec)
    verdicts = []
    for p, y in zip(preds, dataset.labels):
        if p is None:
            verdicts.append(UNKNOWN)
        elif p == y:
            verdicts.append(CERTIFIED)
        else:
            verdicts.append(REFUTED)
    idx = [i for i, v in enumerate(verdicts) if v == CERTIFIED]
    if not idx:
        return ExampleVerdicts(verdicts, [p if isinstance(p, int) else None for p in preds], "none",
                               "no example is memorized exactly", [])
    sub = Dataset([dataset.inputs[i] for i in idx], [dataset.labels[i] for i in idx], dataset.input_type,
                  dataset.seed, dataset.name + " (exactly memorized subset)")
    v = certify(model, sub, [Claim("n_examples", "==", len(idx), "examples the exact forward pass calls memorized")],
                checker=checker, workers=workers, path=path, max_precision=max(prec, 128),
                theorem="exactmem.experiments", instance=dataset.name or "trained")
    if v.status != "CERTIFIED":
        raise RuntimeError(f"the independent checker does not certify the exactly memorized subset: {v.status} "
                           f"{v.message}")
    return ExampleVerdicts(verdicts, [p if isinstance(p, int) else None for p in preds], v.status, v.message, idx)


def float_predictions(torch_module: Any, inputs: Any) -> List[int]:
    """argmax of a PyTorch module's float32 logits (what training accuracy measures)."""
    import torch

    with torch.no_grad():
        logits = torch_module(inputs)
    return [int(i) for i in logits.argmax(dim=-1).reshape(-1).tolist()]
