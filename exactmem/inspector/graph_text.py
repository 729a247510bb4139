"""``exactmem inspect CERT`` for a graph model (a trained network written by ``exactmem verify``).

The text view of a layer model lists its layers; a graph model has nodes instead: this lists its
input and readout, its operators (how many nodes of each), its constant tensors, and the size
quantities the kernel measures on it (``docs/verify-format.md``), read through the kernel's own
parser so that what is printed is what `check` counts.
"""

from __future__ import annotations

from collections import Counter


def graph_summary(doc: dict) -> str:
    """Lines describing the graph model of certificate ``doc`` (MalformedCertificate if invalid)."""
    from ..kernel.schema import parse_certificate

    m = parse_certificate(doc).measured
    model, g = doc["model"], doc["model"]["graph"]
    inp, ro = model["input"], model["readout"]
    what = f"token ids, vocabulary {inp['vocab']}" if inp["type"] == "tokens" else f"vectors of dimension {inp['dim']}"
    ops = Counter(n["op"] for n in g["nodes"])
    consts = g["constants"]
    entries = sum(len(c["values"]) for c in consts.values() if "values" in c)
    lines = [f"graph model ({doc.get('theorem', '')}): input {what}; readout {ro['position']}, decode {ro['decode']}",
             f"  {len(g['nodes'])} nodes: " + ", ".join(f"{op} {k}" for op, k in ops.most_common()),
             f"  {len(consts)} constant tensors, {entries:,} entries",
             "  measured: " + ", ".join(f"{q} {m[q]:,}" for q in ("n_params", "n_nonzero", "max_bits", "total_bits",
                                                                  "width", "attention_layers", "depth", "n_rows")
                                        if q in m)]
    return "\n".join(lines)
