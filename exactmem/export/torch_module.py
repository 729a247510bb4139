"""A reference PyTorch module of an exact model (:mod:`exactmem.export`; extra ``torch``)."""

from __future__ import annotations

from typing import Any

from ..model.layers import Model
from .arrays import architecture, to_arrays
from .formats import FloatFormat, get_format


# ----------------------------------------------------------------------------- PyTorch


def _torch_dtype(fmt: FloatFormat):
    import torch

    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
            "float64": torch.float64}[fmt.name]


def to_torch(model: Any, dtype: str = "float32"):
    """A reference ``torch.nn.Module`` computing the same forward pass as the exact model (in
    the float dtype): submodules ``layers[i]`` holding the rounded tensors as parameters, so
    ``state_dict()`` keys are the export names (``layers.0.W``, ``layers.30.heads.0.WV``, …).
    ``forward(x)`` takes a float tensor batch × n × d (or token ids batch × n for embedding
    models) and returns batch × m' (readout last) or batch × n × m'. The rounding report is
    the module's ``rounding`` attribute. Needs PyTorch (extra ``torch``)."""
    import numpy as np
    import torch
    from torch import nn

    m = model if isinstance(model, Model) else model.model
    fmt = get_format(dtype)
    arrays, rep = to_arrays(m, fmt)
    spec = architecture(m)
    tdt = _torch_dtype(fmt)

    def par(a):
        return nn.Parameter(torch.tensor(np.asarray(a, dtype=np.float64)).to(tdt), requires_grad=False)

    class Block(nn.Module):
        def __init__(self, i, L):
            super().__init__()
            self.kind = L["type"]
            self.cfg = L
            if self.kind == "attention":
                self.heads = nn.ModuleList()
                for h in range(L["heads"]):
                    hm = nn.Module()
                    for k in ("WQ", "WK", "WV", "WO"):
                        a = arrays.get(f"layers.{i}.heads.{h}.{k}")
                        if a is not None:
                            setattr(hm, k, par(a))
                    self.heads.append(hm)
            else:
                for k in L["tensors"]:
                    setattr(self, k, par(arrays[f"layers.{i}.{k}"]))

        def forward(self, X):
            L = self.cfg
            if self.kind == "affine":
                X = X @ self.W.T
                if hasattr(self, "b"):
                    X = X + self.b
                return torch.relu(X) if L["relu"] else X
            if self.kind == "feedforward":
                T = torch.relu(X @ self.W1.T + self.b1) @ self.W2.T + self.b2
                return X + T if L["residual"] else T
            if self.kind == "attention":
                return self._attention(X)
            raise ValueError(self.kind)

        def _attention(self, X):
            L = self.cfg
            B, n, _ = X.shape
            q_pos = list(range(n)) if L["query"] == "all" else [n - 1]
            Xq = X[:, q_pos, :]
            out = Xq.clone() if L["residual"] else None
            mask = torch.ones(len(q_pos), n, dtype=torch.bool)
            if L["keys"] == "others":
                for a, j in enumerate(q_pos):
                    mask[a, j] = False
            for hm in self.heads:
                V = X @ hm.WV.T
                if L["kind"] == "uniform":
                    P = mask.to(X.dtype).expand(B, -1, -1)
                    P = P / P.sum(-1, keepdim=True)
                else:
                    S = (Xq @ hm.WQ.T) @ (X @ hm.WK.T).transpose(1, 2)
                    S = S.masked_fill(~mask, float("-inf"))
                    if L["kind"] == "hardmax":
                        sel = (S == S.amax(-1, keepdim=True)) & mask
                        P = sel.to(X.dtype)
                        P = P / P.sum(-1, keepdim=True)
                    elif L["kind"] == "softmax2":
                        Z = S - S.amax(-1, keepdim=True)
                        e = torch.exp2(Z)
                        P = e / e.sum(-1, keepdim=True)
                    else:
                        P = torch.softmax(S, dim=-1)
                o = (P @ V) @ hm.WO.T
                out = o if out is None else out + o
            return out

    class ExactmemReference(nn.Module):
        """Reference float module of an exactmem model (see exactmem.export.to_torch)."""

        def __init__(self):
            super().__init__()
            self.spec = spec
            self.rounding = rep
            self.layers = nn.ModuleList([Block(i, L) for i, L in enumerate(spec["layers"])])

        def forward(self, x):
            start = 0
            if spec["input_type"] == "tokens":
                emb = self.layers[0]
                X = emb.E[x]
                if hasattr(emb, "P"):
                    X = X + emb.P[: X.shape[1]].unsqueeze(0)
                start = 1
            else:
                X = x.to(tdt)
            for blk in list(self.layers)[start:]:
                X = blk(X)
            return X[:, -1, :] if spec["readout"] == "last" else X

    return ExactmemReference()


def state_dict(model: Any, dtype: str = "float32"):
    """The PyTorch ``state_dict`` of :func:`to_torch` (an ``OrderedDict`` of tensors)."""
    return to_torch(model, dtype).state_dict()
