"""The examples of a ``verify`` run: ``DATA.npz`` (``inputs``, ``labels``) or arrays, checked and taken exactly.

Float vectors become the rationals they denote."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .floats import NonFinite, exact_array
from .onnx_import import VerifyInputError, rational_str

__all__ = ["Examples", "load_npz", "examples", "readout_index"]


@dataclass
class Examples:
    kind: str  # "tokens" | "vectors"
    raw: np.ndarray  # what onnxruntime gets (int64 ids or the float vectors / tensors)
    exact: Any  # int64 ids, or object array of Fractions (N, n, d), or (N, C, H, W, ...) for tensor inputs
    labels: np.ndarray  # (N,) or (N, n) int64
    position: str  # "last" | "all" | "K" (the index a position-K readout reads, 0 <= K < n)

    @property
    def N(self) -> int:
        return self.raw.shape[0]

    @property
    def n(self) -> int:
        return self.raw.shape[1]

    @property
    def dim(self) -> Optional[int]:
        return self.raw.shape[-1] if self.kind == "vectors" else None

    @property
    def shape(self) -> Optional[tuple]:
        """One example's shape when it is a tensor of rank 3 or more (an image C x H x W), else None."""
        return tuple(self.raw.shape[1:]) if self.raw.ndim > 3 else None

    def bound(self, i: int):
        """Example i bound as the graph input: [1, n] ids, [1, n, d] Fractions, or [1, *shape]."""
        return self.exact[i:i + 1]

    def input_json(self, i: int):
        if self.kind == "tokens":
            return [int(t) for t in self.exact[i]]
        return np.vectorize(rational_str, otypes=[object])(self.exact[i]).tolist()  # nested lists of the shape

    def label_json(self, i: int):
        lab = self.labels[i]
        return int(lab) if np.ndim(lab) == 0 else [int(v) for v in lab]

    def key(self, i: int) -> bytes:
        if self.kind == "tokens":
            return b"t" + np.ascontiguousarray(self.exact[i], dtype=np.int64).tobytes()
        return b"v" + "|".join(rational_str(v) for v in self.exact[i].reshape(-1)).encode()


def load_npz(path: str):
    if os.path.isdir(path):
        raise VerifyInputError(f"{path} is a directory, not a .npz file of inputs and labels")
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in ("inputs", "labels") if k not in z.files]
            if missing:
                raise VerifyInputError(f"{path}: no array named {' or '.join(missing)} (it has {', '.join(z.files)})")
            return z["inputs"], z["labels"]
    except VerifyInputError:
        raise
    except FileNotFoundError:
        raise VerifyInputError(f"{path}: no such file") from None
    except Exception as e:
        raise VerifyInputError(f"{path} is not a readable .npz file: {' '.join(str(e).split())[:200]}") from None


def readout_index(position, n: int) -> Optional[int]:
    """The sequence index K that ``position`` reads (``"last"``/``"all"``: None): an integer or its
    text, negative from the end as in Python; one line (`VerifyInputError`) when it is neither or
    out of range for sequences of n tokens."""
    if position in ("last", "all"):
        return None
    if isinstance(position, (int, np.integer)) and not isinstance(position, bool):
        k = int(position)
    elif isinstance(position, str) and position.strip().lstrip("-").isdigit():
        k = int(position)
    else:
        raise VerifyInputError(f"--position must be last, all or a position index K (negative from the end), "
                               f"not {position!r}")
    if not -n <= k < n:
        raise VerifyInputError(f"--position {k} is outside sequences of {n} tokens (give -{n} .. {n - 1})")
    return k % n


def examples(inputs, labels, position="last") -> Examples:
    x = np.asarray(inputs)
    y = np.asarray(labels)
    if x.ndim < 2 or x.ndim > 64 or 0 in x.shape:
        raise VerifyInputError(f"inputs must be N x n token ids, N x n x d vectors or N x C x H x W (or any rank) float "
                               f"tensors, no dimension 0, got shape {list(x.shape)}")
    if x.ndim > 3 and position != "last":
        raise VerifyInputError(f"tensor inputs of shape {list(x.shape[1:])} are read with position last (a [1, C] output)")
    k = readout_index(position, x.shape[1])
    position = "all" if position == "all" else "last" if k is None else str(k)
    if y.dtype.kind not in "iu":
        raise VerifyInputError(f"labels must be integer class indices, got {y.dtype}")
    want = x.shape[:2] if position == "all" else (x.shape[0],)
    if y.shape != want:
        raise VerifyInputError(f"labels have shape {list(y.shape)}; position {position} needs {list(want)}")
    if (y < 0).any():
        raise VerifyInputError("labels must be >= 0")
    if x.ndim == 2:
        if x.dtype.kind not in "iu":
            raise VerifyInputError(f"2-d inputs must be integer token ids, got {x.dtype}")
        if (x < 0).any():
            raise VerifyInputError("token ids must be >= 0")
        ids = x.astype(np.int64)
        return Examples("tokens", ids, ids, y.astype(np.int64), position)
    if x.dtype.kind != "f":
        raise VerifyInputError(f"{x.ndim}-d inputs must be floats, got {x.dtype}")
    try:
        exact = exact_array(x)
    except NonFinite as e:
        raise VerifyInputError(f"inputs hold {e.what} at index {list(e.index)}") from None
    return Examples("vectors", x, exact, y.astype(np.int64), position)


def given_examples(inputs, labels, data: Optional[str], position: str = "last") -> Examples:
    """The examples of ``inputs``/``labels``, or of the ``.npz`` at ``data`` when given; one
    line (`VerifyInputError`) when neither is complete."""
    if data is not None:
        inputs, labels = load_npz(data)
    if inputs is None or labels is None:
        raise VerifyInputError("give inputs and labels (or data=PATH.npz)")
    return examples(inputs, labels, position)
