"""The network as data (layers), its exact forward pass, and its measurements."""

from .layers import (Affine, Attention, Embed, FeedForward, Head, Model, ModelError, affine, identity, mat,
                     seq, shape, vec, zeros)
from .forward import ForwardResult, InputError, Softmax2Error, TraceEntry, Undecided, decode_output, forward
from .measure import Measurement, measure, paper_counts, register_convention
from .serialize import model_from_json, model_to_json
from . import compress  # noqa: F401  (registers the "compress" exact engine)

__all__ = [
    "Affine", "Attention", "Embed", "FeedForward", "Head", "Model", "ModelError", "affine", "identity", "mat",
    "seq", "shape", "vec", "zeros", "ForwardResult", "InputError", "Softmax2Error", "TraceEntry", "Undecided",
    "decode_output", "forward", "Measurement", "measure", "paper_counts", "register_convention", "model_from_json",
    "model_to_json",
]
