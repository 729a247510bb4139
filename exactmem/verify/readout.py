"""A readout at position K: the model's output [1, n, C] read at one sequence index.

The kernel's graph certificates read the last position or every position
(``docs/verify-format.md``). ``--position K`` (a memorizer that answers at its first token, say)
appends one ONNX ``Gather`` node to the model's graph, on the sequence axis of its first output with
the constant index K, so the certificate's graph is the user's network followed by that selection
and is read out as ``last``. The node is an ordinary ONNX operator: `check` evaluates it like any
other, and onnxruntime's float count runs on the same graph.
"""

from __future__ import annotations

from .onnx_import import VerifyInputError

INDEX, OUTPUT = "exactmem_readout_index", "exactmem_readout"


def read_position(mp, k: int):
    """A copy of ModelProto ``mp`` whose only output is its first output at sequence index k
    (axis 1 of a [1, n, C] output: the result is [1, C])."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    out = mp.graph.output[0]
    dims = out.type.tensor_type.shape.dim
    if len(dims) != 3:
        raise VerifyInputError(f"--position {k} needs a [1, n, C] output; the model's {out.name!r} has rank {len(dims)}")
    m = onnx.ModelProto()
    m.CopyFrom(mp)
    g = m.graph
    g.initializer.append(numpy_helper.from_array(np.array(k, dtype=np.int64), INDEX))
    g.node.append(helper.make_node("Gather", [out.name, INDEX], [OUTPUT], axis=1, name="exactmem_readout"))
    shape = [d.dim_value if d.HasField("dim_value") else None for d in (dims[0], dims[2])]
    del g.output[:]
    g.output.append(helper.make_tensor_value_info(OUTPUT, out.type.tensor_type.elem_type, shape))
    return m
