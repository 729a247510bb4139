"""The PyTorch classes of [`exactmem.export.to_torch`][exactmem.export.to_torch] (needs PyTorch, extra ``torch``).

Module-level classes, so a module pickles (``pickle.dumps(to_torch(net))``, ``torch.save``)
and unpickles in a fresh process: pickle finds them as
``exactmem.export.torch_nn.ExactmemReference`` and ``.Block``. Only [`to_torch`][exactmem.export.to_torch] imports
this module; ``import exactmem.export`` never imports PyTorch.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import torch
from torch import nn

#: the float formats of ``exactmem.export.formats`` as PyTorch dtypes
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
                "float64": torch.float64}


def _par(a, tdt):
    return nn.Parameter(torch.tensor(np.asarray(a, dtype=np.float64)).to(tdt), requires_grad=False)


class Block(nn.Module):
    """Layer ``i`` of the architecture ``cfg`` (``exactmem.export.architecture``) with its rounded
    tensors as parameters (``W``, ``b``; ``W1``..``b2``; ``E``, ``P``; ``heads[h].WQ``..``WO``)."""

    def __init__(self, i: int, cfg: Dict[str, Any], arrays: Dict[str, Any], tdt):
        super().__init__()
        self.kind = cfg["type"]
        self.cfg = cfg
        if self.kind == "attention":
            self.heads = nn.ModuleList()
            for h in range(cfg["heads"]):
                hm = nn.Module()
                for k in ("WQ", "WK", "WV", "WO"):
                    a = arrays.get(f"layers.{i}.heads.{h}.{k}")
                    if a is not None:
                        setattr(hm, k, _par(a, tdt))
                self.heads.append(hm)
        else:
            for k in cfg["tensors"]:
                setattr(self, k, _par(arrays[f"layers.{i}.{k}"], tdt))

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
    """Reference float module of an exactmem model (see [`exactmem.export.to_torch`][exactmem.export.to_torch]).

    ``dtype_name``: the float format its weights were rounded to and it computes in
    (``"float32"``, ``"float64"``, ...), also in its ``repr``; ``rounding``: the
    [`RoundingReport`][exactmem.export.RoundingReport]; ``spec``: the architecture JSON."""

    def __init__(self, spec: Dict[str, Any], arrays: Dict[str, Any], rounding, dtype_name: str):
        super().__init__()
        self.spec = spec
        self.rounding = rounding
        self.dtype_name = dtype_name
        tdt = TORCH_DTYPES[dtype_name]
        self.layers = nn.ModuleList([Block(i, L, arrays, tdt) for i, L in enumerate(spec["layers"])])

    @property
    def torch_dtype(self):
        """The PyTorch dtype of the weights and of the computation (``torch.float32``, ...)."""
        return TORCH_DTYPES[self.dtype_name]

    def extra_repr(self) -> str:
        r = self.rounding
        return (f"dtype={self.dtype_name}, {len(self.spec['layers'])} layers, "
                f"{r.entries} weights ({r.exact} exact, {r.rounded} rounded)")

    def forward(self, x):
        start = 0
        if self.spec["input_type"] == "tokens":
            emb = self.layers[0]
            X = emb.E[x]
            if hasattr(emb, "P"):
                X = X + emb.P[: X.shape[1]].unsqueeze(0)
            start = 1
        else:
            X = x.to(self.torch_dtype)
        for blk in list(self.layers)[start:]:
            X = blk(X)
        return X[:, -1, :] if self.spec["readout"] == "last" else X
