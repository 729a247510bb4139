"""A reference PyTorch module of an exact model ([`exactmem.export`][exactmem.export]; extra ``torch``)."""

from __future__ import annotations

from typing import Any

from ..errors import require
from ..model.layers import Model
from .arrays import architecture, to_arrays
from .formats import FloatFormat, get_format


# ----------------------------------------------------------------------------- PyTorch


def _torch_dtype(fmt: FloatFormat):
    from .torch_nn import TORCH_DTYPES

    return TORCH_DTYPES[fmt.name]


def to_torch(model: Any, dtype: str = "float32"):
    """A reference ``torch.nn.Module`` computing the same forward pass as the exact model in
    the float format ``dtype`` (``float32`` unless given; ``float64``, ``float16``, ``bfloat16``):
    submodules ``layers[i]`` holding the rounded tensors as parameters, so ``state_dict()``
    keys are the export names (``layers.0.W``, ``layers.30.heads.0.WV``, …).
    ``forward(x)`` takes a float tensor batch × n × d (or token ids batch × n for embedding
    models) and returns batch × m' (readout last) or batch × n × m'. The module states its
    format: ``dtype_name`` (``"float32"``), ``torch_dtype`` and its ``repr``
    (``ExactmemReference(dtype=float32, …)``); the rounding report is its ``rounding``
    attribute. It is an `exactmem.export.torch_nn.ExactmemReference`, a module-level
    class: the module pickles (``pickle.dumps``, ``torch.save``). Needs PyTorch (extra ``torch``)."""
    require("torch", "torch", "to_torch")
    from .torch_nn import ExactmemReference

    m = model if isinstance(model, Model) else model.model
    fmt = get_format(dtype)
    arrays, rep = to_arrays(m, fmt)
    return ExactmemReference(architecture(m), arrays, rep, fmt.name)


def state_dict(model: Any, dtype: str = "float32"):
    """The PyTorch ``state_dict`` of [`to_torch`][exactmem.export.to_torch] (an ``OrderedDict`` of tensors)."""
    return to_torch(model, dtype).state_dict()
