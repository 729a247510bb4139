"""The examples of a ``verify`` run: ``DATA.npz`` (``inputs``, ``labels``) or arrays, checked and taken exactly.

Float vectors become the rationals they denote."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .floats import NonFinite, exact_array
from .onnx_import import VerifyInputError, rational_str

__all__ = ["Examples", "load_npz", "examples"]


@dataclass
class Examples:
    kind: str  # "tokens" | "vectors"
    raw: np.ndarray  # what onnxruntime gets (int64 ids or the float vectors)
    exact: Any  # int64 ids, or object array of Fractions (N, n, d)
    labels: np.ndarray  # (N,) or (N, n) int64
    position: str

    @property
    def N(self) -> int:
        return self.raw.shape[0]

    @property
    def n(self) -> int:
        return self.raw.shape[1]

    @property
    def dim(self) -> Optional[int]:
        return self.raw.shape[2] if self.kind == "vectors" else None

    def bound(self, i: int):
        """Example i bound as the graph input: [1, n] ids or [1, n, d] Fractions."""
        return self.exact[i:i + 1]

    def input_json(self, i: int):
        if self.kind == "tokens":
            return [int(t) for t in self.exact[i]]
        return [[rational_str(v) for v in tok] for tok in self.exact[i]]

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


def examples(inputs, labels, position: str = "last") -> Examples:
    if position not in ("last", "all"):
        raise VerifyInputError(f"--position must be last or all, not {position!r}")
    x = np.asarray(inputs)
    y = np.asarray(labels)
    if x.ndim not in (2, 3) or x.shape[0] == 0 or x.shape[1] == 0:
        raise VerifyInputError(f"inputs must be N x n token ids or N x n x d vectors (N, n >= 1), got shape {list(x.shape)}")
    if y.dtype.kind not in "iu":
        raise VerifyInputError(f"labels must be integer class indices, got {y.dtype}")
    want = (x.shape[0],) if position == "last" else x.shape[:2]
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
        raise VerifyInputError(f"3-d inputs must be float vectors, got {x.dtype}")
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
