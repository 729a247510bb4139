"""Certify, example by example, what a trained network memorizes — through ``exactmem verify``.

The experiments' trained PyTorch networks go through the same door as any foreign model
(``docs/verify.md``, issue 23): the module is exported by PyTorch's own exporter
(``torch.onnx.export(..., dynamo=True)``), lowered to the graph of ``docs/verify-format.md``
(every stored float32 weight and every float input taken exactly as the rational it denotes),
and every example gets a claimed verdict from the producer's ball arithmetic. The certificate
holds **every** example with its claimed verdict, and the independent kernel re-derives each
one — ``pass`` and ``fail`` alike — and the claims ``n_pass == k``, ``n_fail == j``:

* ``certified`` — claimed ``pass`` (the label's score is above every other score), confirmed;
* ``refuted`` — claimed ``fail`` (another score is surely ≥ the label's; an exact tie is a
  failure: the papers need a strict argmax), confirmed;
* ``unknown`` — the enclosures still overlap at the precision budget (nothing is claimed).

The counts an experiment reports are the certificate's ``n_pass`` / ``n_fail`` once the kernel
returned CERTIFIED on it (the experiments' examples are pairwise distinct, so the counts are
over rows as well). A kernel verdict other than CERTIFIED raises: producer and kernel disagree,
which is a bug in one of them.

Each experiment hands over ``*_train.export_module(...)``: the trained module itself (Mahdavi: its
``Einsum``/``ReduceSum`` are lowered by `exactmem.verify.composite`), or an *export twin* with the
same tensors and the same real-number function (Dana: one replica of the stacked AoTs; Kajitsuka:
only the read-out token computed) — see ``docs/experiments.md``.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

CERTIFIED, REFUTED, UNKNOWN = "certified", "refuted", "unknown"
_WORD = {"pass": CERTIFIED, "fail": REFUTED, "unknown": UNKNOWN}


@dataclass
class ExampleVerdicts:
    """Per-example verdicts, confirmed by the kernel on a certificate that holds every example."""

    verdicts: List[str]  # per row: certified | refuted | unknown
    checker_status: str  # the kernel's verdict on the certificate (always CERTIFIED when returned)
    checker_message: str = ""
    counts: Dict[str, int] = field(default_factory=dict)  # the certificate's claims, kernel-confirmed
    certificate: Optional[str] = None  # path, when one was written
    bits: List[int] = field(default_factory=list)  # per row: the producer precision that decided it
    n_params: int = 0  # entries of the lowered graph's weight constants

    def count(self, what: str) -> int:
        return sum(v == what for v in self.verdicts)

    @property
    def certified(self) -> int:
        return self.counts.get("n_pass", self.count(CERTIFIED))

    @property
    def refuted(self) -> int:
        return self.counts.get("n_fail", self.count(REFUTED))

    @property
    def unknown(self) -> int:
        return self.count(UNKNOWN)

    @property
    def certified_indices(self) -> List[int]:
        return [i for i, v in enumerate(self.verdicts) if v == CERTIFIED]


def _quiet_exporter() -> None:
    """PyTorch's exporter logs one warning per missing optional package; not ours to show."""
    import logging

    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning, module="copyreg")


def _claims(doc: Dict[str, Any]) -> Dict[str, int]:
    return {c["quantity"]: int(c["bound"]) for c in doc["claims"] if c["op"] == "=="}


def kernel_check(doc: Dict[str, Any], path: Optional[str] = None, workers: int = 1):
    """The kernel's verdict on a ``verify`` certificate, read back from its serialised bytes
    (``path`` when it was written; ``workers`` > 1: sharded on a local Dask cluster)."""
    from ..kernel.checker import check_certificate
    from ..kernel.schema import decode_certificate, load_certificate

    if workers > 1:
        from ..distributed.check import check_sharded

        if path is not None:
            return check_sharded(path, workers=workers)
        from ..certificate.writer import write_certificate

        with tempfile.TemporaryDirectory(prefix="exactmem-verify-") as tmp:
            return check_sharded(write_certificate(doc, os.path.join(tmp, "cert.json")), workers=workers)
    if path is not None:
        return check_certificate(load_certificate(path))
    return check_certificate(decode_certificate(json.dumps(doc).encode("utf-8"), "certificate"))


def verify_examples(module: Any, inputs: Any, labels: Any, *, workers: int = 1, path: Optional[str] = None,
                    name: str = "trained", max_precision: int = 4096) -> ExampleVerdicts:
    """Per-example verdicts of the torch ``module`` on ``inputs`` (N × n token ids or N × n × d
    float32 vectors; scores read at the last position, or a [1, C] output) against ``labels``,
    through [`exactmem.verify`][exactmem.verify] (module docstring). ``path``: write the certificate there.
    Raises RuntimeError unless the kernel returns CERTIFIED on the certificate."""
    import numpy as np

    from ..verify.run import verify

    _quiet_exporter()
    res = verify(module, np.asarray(inputs), np.asarray(labels), workers=workers, quiet=True,
                 max_precision=max_precision, float_count=False, name=name)
    doc = res.doc
    if path is not None:
        from ..certificate.writer import write_certificate

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        path = write_certificate(doc, path)
    v = kernel_check(doc, path, workers)
    if v.status != "CERTIFIED":
        raise RuntimeError(f"the kernel does not confirm the claimed verdicts of {name}: {v.status} {v.message}")
    counts = _claims(doc)
    verdicts = [_WORD[x] for x in res.verdicts]
    if counts.get("n_rows") == counts.get("n_examples") and (
            counts.get("n_pass") != verdicts.count(CERTIFIED) or counts.get("n_fail") != verdicts.count(REFUTED)):
        raise RuntimeError(f"certificate counts {counts} disagree with the per-example verdicts of {name}")
    return ExampleVerdicts(verdicts, v.status, v.message, counts, path, list(res.bits), res.graph_constants)
