"""The certificate of a ``verify`` run (``docs/verify-format.md``), hashed with the kernel's canonical hash.

It holds the lowered graph, the dataset, one claimed verdict per row, and the claims
``n_pass == k``, ``n_fail == j``, ``n_rows == R``, ``n_examples == N``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..kernel.schema import canonical_hash

__all__ = ["build", "FORMAT", "VERSION"]

FORMAT, VERSION = "exactmem-certificate", 1


def build(model_json: Dict[str, Any], inputs: List[Any], labels: List[Any], verdicts: List[str], counts: Dict[str, int],
          instance: str, max_precision: int = 4096, meta: Optional[Dict[str, Any]] = None,
          codelengths: Optional[List[str]] = None, codelength_bound: Optional[str] = None) -> Dict[str, Any]:
    """``codelengths``: per row, the claimed upper bound of the model's code length for its labels
    (rational texts, bits; each output becomes ``{"verdict": v, "codelength": c}``) and ``codelength_bound`` their sum over distinct inputs + the coder's 2
    bits, claimed as ``codelength_bits <=`` (``docs/verify-format.md`` § Code length)."""
    src = "exactmem verify (claimed verdicts, re-derived by the kernel)"
    claims = [{"quantity": q, "op": "==", "bound": str(int(counts[k])), "source": src}
              for q, k in (("n_pass", "pass"), ("n_fail", "fail"), ("n_rows", "rows"), ("n_examples", "distinct"))]
    dataset, outputs = {"inputs": inputs, "labels": labels}, list(verdicts)
    if codelengths is not None:  # each output: its verdict and its claimed code length
        outputs = [{"verdict": v, "codelength": c} for v, c in zip(verdicts, codelengths)]
        claims.append({"quantity": "codelength_bits", "op": "<=", "bound": codelength_bound,
                       "source": "exactmem verify --measure bits (per-example code lengths + 2, re-derived by the kernel)"})
    doc = {"format": FORMAT, "version": VERSION, "theorem": "verify", "instance": instance, "seed": None,
           "model": model_json, "dataset": dataset, "outputs": outputs,
           "claims": claims, "check": {"error_bound": None, "max_precision": int(max_precision)},
           "meta": dict(meta or {})}
    doc["hash"] = canonical_hash(doc)
    return doc
