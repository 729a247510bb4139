"""Exact models out to the tools people use: NumPy ``.npz``, safetensors, PyTorch.

Weights are exact rationals; a float file cannot hold most of them. [`to_arrays`][exactmem.export.to_arrays]
rounds every weight to a chosen IEEE format (``float16``, ``bfloat16``, ``float32``,
``float64``: round to nearest, ties to even, with the format's subnormals and overflow to
±inf — computed exactly from the rational, [`round_to_format`][exactmem.export.round_to_format]) and returns a
[`RoundingReport`][exactmem.export.RoundingReport] saying how many weights were exact, rounded, overflowed or flushed
to zero, and the largest relative error. The construction needs ``max_bits`` bits per
weight (``docs/measurement.md``); once that exceeds the format's significand the exported
network is a *different* function, and [`float_accuracy`][exactmem.export.float_accuracy] measures how many labels the
float network still gets right (``docs/library.md`` has the table for Kajitsuka & Sato).

Files:

* [`save`][exactmem.export.save] — ``.npz`` (``numpy.savez``) or ``.safetensors``; the architecture (layer
  types, flags, shapes, readout) is stored next to the tensors as JSON (npz entry
  ``__exactmem__``, safetensors metadata key ``exactmem``), so [`exactmem.export.importer.load_model`][exactmem.export.importer.load_model]
  rebuilds the exact model from the float values. safetensors files are written with the
  ``safetensors`` package when it is installed (extra ``safetensors``) and otherwise by the
  small writer here, which follows the published format (8-byte little-endian header length,
  JSON header, raw little-endian data) and is tested against the package.
* [`to_torch`][exactmem.export.to_torch] — a reference ``torch.nn.Module`` with the same forward pass and a
  ``state_dict`` whose keys are the tensor names below (extra ``torch``; imported lazily, from
  `exactmem.export.torch_nn`). It names its float format (``dtype_name``, its ``repr``)
  and pickles.

Tensor names: ``layers.{i}.W``/``.b`` (affine), ``.W1 .b1 .W2 .b2`` (feed-forward), ``.E``/``.P``
(embedding), ``layers.{i}.heads.{h}.WQ .WK .WV .WO`` (attention). Matrices keep exactmem's
orientation (tokens are columns: a layer m → m' has W of shape m'×m, so a row-vector
framework computes ``x @ W.T``).

[`FloatNet`][exactmem.export.FloatNet] evaluates the exported network in NumPy in the format's arithmetic (the
"what would a float framework compute" reference; bfloat16 weights are evaluated in float32
arithmetic). Nothing here decides a verdict: the exact model and the checker do.
"""

from .arrays import (SPEC_FORMAT, SPEC_VERSION, RoundingReport, TensorRounding,  # noqa: F401 (re-exported)
                     architecture, save, tensor_items, to_arrays)
from .cli import add_parser, main, run_cli  # noqa: F401 (re-exported)
from .float_eval import FloatAccuracy, FloatNet, float_accuracy
from .formats import FORMATS, FloatFormat, get_format, round_to_format  # noqa: F401 (re-exported)
from .safetensors_io import read_safetensors, write_safetensors
from .torch_module import state_dict, to_torch

__all__ = ["FORMATS", "FloatFormat", "round_to_format", "RoundingReport", "architecture", "tensor_items",
           "to_arrays", "save", "FloatNet", "FloatAccuracy", "float_accuracy", "to_torch", "state_dict",
           "write_safetensors", "read_safetensors", "add_parser", "main"]
