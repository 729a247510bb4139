"""Several per-example inputs (token ids and an attention mask, say) as one certificate input.

A graph certificate has one input per example (``docs/verify-format.md``). A model that takes k
integer tensors of one shape [1, n] per example — ``forward(input_ids, attention_mask)`` — is
certified on their concatenation [1, k·n]: `merge_inputs` puts k ONNX ``Slice`` nodes (and a
``Cast`` to each input's own integer type) in front of the user's graph, so the certificate's graph
is the user's network fed by those slices, and `check` evaluates the slices like any other op;
onnxruntime's float count runs on the same graph. For a ``torch.nn.Module`` the exported wrapper
slices the same way (`exactmem.verify.run.export_torch`).
"""

from __future__ import annotations

from typing import List

from .floats import ONNX_BOOL, ONNX_INTS
from .onnx_import import VerifyInputError

MERGED = "exactmem_inputs"


def merge_inputs(mp, names: List[str], width: int):
    """A copy of ModelProto ``mp`` whose one graph input is [1, len(names)·width] int64: the inputs
    ``names`` (in that order) are its consecutive slices of ``width``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = {t.name for t in mp.graph.initializer}
    given = [i for i in mp.graph.input if i.name not in inits]
    have = [i.name for i in given]
    if sorted(have) != sorted(names):
        raise VerifyInputError(f"the model's inputs are {', '.join(have) or 'none'}; the data gives "
                               f"{', '.join(names)} (name each input as the model does)")
    types = {i.name: i.type.tensor_type.elem_type for i in given}
    for name in names:
        if types[name] not in ONNX_INTS and types[name] != ONNX_BOOL:
            raise VerifyInputError(f"the model's input {name!r} is not an integer or bool tensor: several inputs "
                                   "are supported for token ids and masks (integers of one shape [1, n])")
    m = onnx.ModelProto()
    m.CopyFrom(mp)
    g = m.graph
    pre, k = [], len(names)
    g.initializer.append(numpy_helper.from_array(np.array([1], dtype=np.int64), MERGED + "_axis"))
    for j, name in enumerate(names):
        lo, hi = f"{MERGED}_{j}_start", f"{MERGED}_{j}_end"
        g.initializer.extend([numpy_helper.from_array(np.array([j * width], dtype=np.int64), lo),
                              numpy_helper.from_array(np.array([(j + 1) * width], dtype=np.int64), hi)])
        cut = name if types[name] == TensorProto.INT64 else f"{MERGED}_{j}"
        pre.append(helper.make_node("Slice", [MERGED, lo, hi, MERGED + "_axis"], [cut], name=f"{MERGED}_slice_{j}"))
        if cut != name:
            pre.append(helper.make_node("Cast", [cut], [name], to=types[name], name=f"{MERGED}_cast_{j}"))
    nodes = list(g.node)
    del g.node[:]
    g.node.extend(pre + nodes)
    keep = [i for i in g.input if i.name in inits]
    del g.input[:]
    g.input.append(helper.make_tensor_value_info(MERGED, TensorProto.INT64, [1, k * width]))
    g.input.extend(keep)
    return m
