"""The certificate of a ``verify`` run (``docs/verify-format.md``), hashed with the kernel's canonical hash.

It holds the lowered graph, the dataset, one claimed verdict per row, and the claims
``n_pass == k``, ``n_fail == j``, ``n_rows == R``, ``n_examples == N``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..kernel.schema import canonical_hash

__all__ = ["build", "FORMAT", "VERSION"]

FORMAT, VERSION = "exactmem-certificate", 1


def build(model_json: Dict[str, Any], inputs: List[Any], labels: List[Any], verdicts: List[str], counts: Dict[str, int],
          instance: str, max_precision: int = 4096, meta: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    src = "exactmem verify (claimed verdicts, re-derived by the kernel)"
    claims = [{"quantity": q, "op": "==", "bound": str(int(counts[k])), "source": src}
              for q, k in (("n_pass", "pass"), ("n_fail", "fail"), ("n_rows", "rows"), ("n_examples", "distinct"))]
    doc = {"format": FORMAT, "version": VERSION, "theorem": "verify", "instance": instance, "seed": None,
           "model": model_json, "dataset": {"inputs": inputs, "labels": labels}, "outputs": list(verdicts),
           "claims": claims, "check": {"error_bound": None, "max_precision": int(max_precision)},
           "meta": dict(meta or {})}
    doc["hash"] = canonical_hash(doc)
    return doc
