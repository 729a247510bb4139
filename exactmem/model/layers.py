"""The network as data: exact-rational layers of the Transformers in the three papers.

* Kajitsuka & Sato eq. (2)–(4): ``E_in`` ([`Affine`][exactmem.model.Affine]), blocks of multi-head
  self-attention ([`Attention`][exactmem.model.Attention], residual switchable) and ReLU feed-forward
  ([`FeedForward`][exactmem.model.FeedForward], eq. (3)), ``E_out`` ([`Affine`][exactmem.model.Affine]); deep feed-forward stacks are
  sequences of [`Affine`][exactmem.model.Affine] layers with ``relu=True``.
* Mahdavi et al.: one multi-head layer where only the query (last token) attends to the
  context (``query="last"``, ``keys="others"``, no residual).
* Dana et al.: token + positional embeddings ([`Embed`][exactmem.model.Embed]), one multi-head layer where
  the last position attends to all positions with a skip connection (``query="last"``,
  ``residual=True``), unembedding ([`Affine`][exactmem.model.Affine]), argmax decoding.

Matrices are tuples of rows of ``Fraction``; a layer acting on m-dimensional tokens with
output dimension m' has ``W`` of shape m'×m (tokens are columns, as in the papers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional, Sequence, Tuple, Union

from ..arith.numbers import to_rational

Matrix = Tuple[Tuple[Fraction, ...], ...]
Vector = Tuple[Fraction, ...]

ATTENTION_KINDS = ("softmax", "hardmax", "uniform", "softmax2")
# softmax2 (base-2 softmax, Dana et al. note §3.7): weights 2^{s_k} / Σ_j 2^{s_j} for *integer* scores s,
# exact in Q. A query's score spread max_k s_k − min_k s_k above this is refused (2^spread-bit numbers).
SOFTMAX2_MAX_SPREAD = 1 << 20


class ModelError(ValueError):
    """A model is inconsistent (shapes, unknown kinds); the message names the layer and field."""


def mat(rows) -> Matrix:
    """Exact matrix from nested sequences of ints, Fractions or 'p/q' strings."""
    out = tuple(tuple(to_rational(x) for x in row) for row in rows)
    if out and any(len(r) != len(out[0]) for r in out):
        raise ModelError("ragged matrix: rows have different lengths")
    return out


def vec(xs) -> Vector:
    """Exact vector from a sequence of ints, Fractions or 'p/q' strings."""
    return tuple(to_rational(x) for x in xs)


def shape(M: Matrix) -> Tuple[int, int]:
    return (len(M), len(M[0]) if M else 0)


def zeros(r: int, c: int) -> Matrix:
    return tuple((Fraction(0),) * c for _ in range(r))


def identity(n: int) -> Matrix:
    return tuple(tuple(Fraction(int(i == j)) for j in range(n)) for i in range(n))


@dataclass(frozen=True)
class Embed:
    """Token id t at 0-based position s ↦ E[t] + P[s] (Dana et al. §1.1). E is vocab×m."""

    E: Matrix
    P: Optional[Matrix] = None

    def __post_init__(self):
        object.__setattr__(self, "E", mat(self.E))
        if self.P is not None:
            object.__setattr__(self, "P", mat(self.P))
            if shape(self.P)[1] != shape(self.E)[1]:
                raise ModelError("embed: positional rows P must have the same width as E")

    @property
    def m_out(self) -> int:
        return shape(self.E)[1]


@dataclass(frozen=True)
class Affine:
    """Token-wise z ↦ W z + b, then ReLU if ``relu`` (E_in, E_out, deep FFN layers)."""

    W: Matrix
    b: Optional[Vector] = None
    relu: bool = False

    def __post_init__(self):
        object.__setattr__(self, "W", mat(self.W))
        if self.b is not None:
            object.__setattr__(self, "b", vec(self.b))
            if len(self.b) != shape(self.W)[0]:
                raise ModelError(f"affine: bias has length {len(self.b)}, W has {shape(self.W)[0]} rows")

    @property
    def m_in(self) -> int:
        return shape(self.W)[1]

    @property
    def m_out(self) -> int:
        return shape(self.W)[0]


@dataclass(frozen=True)
class FeedForward:
    """Kajitsuka & Sato eq. (3): z ↦ [z] + W2 ReLU(W1 z + b1) + b2 (residual switchable)."""

    W1: Matrix
    b1: Vector
    W2: Matrix
    b2: Vector
    residual: bool = True

    def __post_init__(self):
        for name in ("W1", "W2"):
            object.__setattr__(self, name, mat(getattr(self, name)))
        for name in ("b1", "b2"):
            object.__setattr__(self, name, vec(getattr(self, name)))
        q, m = shape(self.W1)
        if len(self.b1) != q or shape(self.W2)[1] != q or len(self.b2) != shape(self.W2)[0]:
            raise ModelError("feedforward: shapes of W1 (q×m), b1 (q), W2 (m'×q), b2 (m') disagree")
        if self.residual and shape(self.W2)[0] != m:
            raise ModelError("feedforward: a residual needs W2 to map back to the input width")

    @property
    def m_in(self) -> int:
        return shape(self.W1)[1]

    @property
    def m_out(self) -> int:
        return shape(self.W2)[0]

    @property
    def q(self) -> int:
        return shape(self.W1)[0]


@dataclass(frozen=True)
class Head:
    """One attention head: WQ, WK (s×m, absent for uniform attention), WV (v×m), WO (m'×v)."""

    WV: Matrix
    WO: Matrix
    WQ: Optional[Matrix] = None
    WK: Optional[Matrix] = None

    def __post_init__(self):
        for name in ("WV", "WO", "WQ", "WK"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, mat(v))
        if shape(self.WO)[1] != shape(self.WV)[0]:
            raise ModelError("head: WO must have as many columns as WV has rows")
        if (self.WQ is None) != (self.WK is None):
            raise ModelError("head: give both WQ and WK or neither")
        if self.WQ is not None and shape(self.WQ) != shape(self.WK):
            raise ModelError("head: WQ and WK must have the same shape")


@dataclass(frozen=True)
class Attention:
    """Multi-head self-attention, Kajitsuka & Sato eq. (2) (hardmax: eq. (1); uniform: eq. (39)).

    ``kind="softmax2"``: base-2 softmax 2^{s_k}/Σ_j 2^{s_j} (Dana et al., note §3.7); the scores
    s = (WK z_k)·(WQ z_q) must be integers (checked when the layer is evaluated), so the
    weights are rational and the layer is exact.
    ``query="last"`` evaluates only the last column (Mahdavi's query token, Dana's last
    position); ``keys="others"`` excludes the query itself from the keys (Mahdavi).
    """

    heads: Tuple[Head, ...]
    kind: str = "softmax"
    residual: bool = True
    query: str = "all"
    keys: str = "all"

    def __post_init__(self):
        object.__setattr__(self, "heads", tuple(self.heads))
        if self.kind not in ATTENTION_KINDS:
            raise ModelError(f"attention: unknown kind {self.kind!r}; expected one of {ATTENTION_KINDS}")
        if self.query not in ("all", "last") or self.keys not in ("all", "others"):
            raise ModelError("attention: query must be 'all'|'last' and keys 'all'|'others'")
        if not self.heads:
            raise ModelError("attention: needs at least one head")
        m = shape(self.heads[0].WV)[1]
        mo = shape(self.heads[0].WO)[0]
        for h in self.heads:
            if shape(h.WV)[1] != m or shape(h.WO)[0] != mo:
                raise ModelError("attention: heads disagree on input or output width")
            if self.kind != "uniform" and h.WQ is None:
                raise ModelError(f"attention: {self.kind} heads need WQ and WK")
            if h.WQ is not None and shape(h.WQ)[1] != m:
                raise ModelError("attention: WQ/WK must act on the input width")
        if self.residual and mo != m:
            raise ModelError("attention: a residual needs WO to map back to the input width")

    @property
    def m_in(self) -> int:
        return shape(self.heads[0].WV)[1]

    @property
    def m_out(self) -> int:
        return shape(self.heads[0].WO)[0]


Layer = Union[Embed, Affine, FeedForward, Attention]


@dataclass(frozen=True)
class Model:
    """A whole network: input type, layers in order, readout position and decoding."""

    layers: Tuple[Layer, ...]
    input_type: str = "vectors"  # "vectors" | "tokens"
    input_dim: int = 0  # token dimension d for vectors, vocabulary size for tokens
    readout: str = "last"  # "last" | "all"
    decode: str = "identity"  # "identity" | "argmax"
    name: str = field(default="", compare=False)
    notes: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "layers", tuple(self.layers))
        if self.input_type not in ("vectors", "tokens"):
            raise ModelError(f"model: input_type must be 'vectors' or 'tokens', not {self.input_type!r}")
        if self.readout not in ("last", "all") or self.decode not in ("identity", "argmax"):
            raise ModelError("model: readout must be last|all and decode identity|argmax")
        if not self.layers:
            raise ModelError("model: no layers")
        m = self.input_dim
        for i, layer in enumerate(self.layers):
            if isinstance(layer, Embed):
                if i != 0 or self.input_type != "tokens":
                    raise ModelError(f"layer {i}: an embed layer must come first and needs token input")
                if shape(layer.E)[0] != self.input_dim:
                    raise ModelError(f"layer {i}: embed has {shape(layer.E)[0]} rows, vocabulary is {self.input_dim}")
            else:
                if i == 0 and self.input_type == "tokens":
                    raise ModelError("layer 0: token input needs an embed layer first")
                if layer.m_in != m:
                    raise ModelError(f"layer {i} ({type(layer).__name__.lower()}): expects width {layer.m_in}, gets {m}")
            m = layer.m_out

    @property
    def output_dim(self) -> int:
        return self.layers[-1].m_out

    @property
    def has_softmax(self) -> bool:
        """True iff some layer is the transcendental ``softmax`` (``softmax2`` is exact in Q)."""
        return any(isinstance(l, Attention) and l.kind == "softmax" for l in self.layers)


def affine(W, b=None, relu: bool = False) -> Affine:
    return Affine(mat(W), vec(b) if b is not None else None, relu)


def seq(X: Sequence[Sequence]) -> Tuple[Vector, ...]:
    """A sequence of tokens (rows) as exact vectors."""
    return tuple(vec(t) for t in X)
