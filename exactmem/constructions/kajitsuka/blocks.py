"""A register program compiled into the Transformer blocks of Kajitsuka & Sato eq. (4).

The program is a `exactmem.constructions.vardi.memorizer.Program`; the network is
N = E_out ∘ F_L ∘ … ∘ F_1 ∘ E_in with F_l = F_l^(FF) ∘ F_l^(SA), the feed-forward layer the
residual one of eq. (3), z ↦ z + W2 σ(W1 z + b1) + b2. See ``docs/kajitsuka-paper.md``.

* One ReLU layer of the program = one block. Its self-attention layer has a zero projection
  W^(O) ("deep feed-forward networks can also be implemented with standard Transformers, by
  setting the projection matrix of the self-attention layer in each block to zero", §4.2.1),
  except the block that starts with the uniform attention F^(UA) (eq. (39), (52)).
* The state z ∈ R^m keeps each live register in a *slot*. A register the layer only carries
  (n ← n, one slot, coefficient 1) costs nothing — the residual carries it. A register with a
  new value σ(e) is written into a slot s with hidden units σ(e) (+1 into s) and the
  cancellation of the slot's old content: σ(z_s) (−1) if it is a ReLU output (≥ 0),
  σ(z_s) and σ(−z_s) if its sign is unknown (E_in's linear forms). Hence q ≤ 2·(registers
  written) + (signed slots reused).
* Linear layers of the program (relu=False) cost no block: their registers become linear
  expressions of slots, folded into whatever reads them next (W1, W^(V) or E_out).
* E_in (linear, R^d → R^m) computes the linear parts of the first layer's registers; E_out
  (linear) reads the output expressions.

Only building happens here; nothing is evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ...model.layers import Affine, Attention, FeedForward, Head
from ..vardi.memorizer import Program

Lin = Tuple[Dict[int, Fraction], Fraction]  # slot → coefficient, constant


@dataclass
class AttnOp:
    """The uniform attention (eq. (52)) before program layer ``at``: target ← target + mean(source)."""

    at: int
    target: str
    source: str


@dataclass
class Compiled:
    """Blocks and the compiler's bookkeeping (the measured quantities are recomputed by measure)."""

    layers: list
    m: int
    q_max: int
    blocks: int
    hidden: List[int] = field(default_factory=list)  # q of each block


def _lin_add(acc: Dict[int, Fraction], e: Lin, a) -> Fraction:
    for s, c in e[0].items():
        acc[s] = acc.get(s, Fraction(0)) + a * c
    return e[1] * a


def _subst(terms: Dict[str, int], bias, regs: Dict[str, Lin]) -> Lin:
    out: Dict[int, Fraction] = {}
    const = Fraction(bias)
    for name, a in terms.items():
        if a:
            const += _lin_add(out, regs[name], Fraction(a))
    return ({s: c for s, c in out.items() if c}, const)


def _liveness(prog: Program, outputs: Sequence[str], attn: Optional[AttnOp]) -> List[Set[str]]:
    """live[i]: the registers of layer i read later (or output), backwards as Program.compile."""
    needed = set(outputs)
    live: List[Set[str]] = [set() for _ in prog.layers]
    for i in range(len(prog.layers) - 1, -1, -1):
        if attn is not None and attn.at == i + 1:
            needed = needed | {attn.source, attn.target}
        live[i] = set(needed)
        assign = prog.layers[i][0]
        missing = needed - set(assign)
        if missing:
            raise KeyError(f"layer {i}: register {sorted(missing)[0]!r} is read but not computed")
        needed = {s for n in needed for s, a in assign[n][0].items() if a}
    if not needed <= set(prog.inputs):
        raise KeyError(f"the first layer reads non-inputs {sorted(needed - set(prog.inputs))}")
    return live


class _State:
    """Slots of z: kind 'zero' (never written), 'pos' (a ReLU output) or 'any' (E_in's forms)."""

    def __init__(self):
        self.kind: List[str] = []

    def new(self, kind: str) -> int:
        self.kind.append(kind)
        return len(self.kind) - 1


def _nonneg(e: Lin, st: _State) -> bool:
    return e[1] >= 0 and all(c > 0 and st.kind[s] in ("pos", "zero") for s, c in e[0].items())


def _pick_slot(free: List[int], own: Optional[int], st: _State) -> int:
    if own is not None and own in free:
        free.remove(own)
        return own
    for kind in ("zero", "pos", "any"):
        for s in free:
            if st.kind[s] == kind:
                free.remove(s)
                return s
    return st.new("zero")


def compile_blocks(prog: Program, outputs: Sequence[str], attn: Optional[AttnOp] = None,
                   kind: str = "uniform") -> Compiled:
    """Compile ``prog`` into E_in, L blocks (attention + residual feed-forward) and E_out.

    ``kind``: "uniform" (eq. (39)) or "hardmax" (zero W_Q, W_K: every key ties, eq. (12)) for
    every block's attention; the zero-projection blocks have W_V = W_O = 0."""
    live = _liveness(prog, outputs, attn)
    st = _State()
    regs: Dict[str, Lin] = {}
    home: Dict[str, int] = {}  # register → the slot it was last written to
    # E_in: one slot per distinct linear form the first layer reads
    ein_rows: List[Dict[str, Fraction]] = []
    first = prog.layers[0][0]
    input_slot: Dict[tuple, int] = {}
    pre: Dict[str, Lin] = {}
    for n in sorted(live[0]):
        terms, bias = first[n]
        form = tuple(sorted((k, Fraction(a)) for k, a in terms.items() if a))
        if form:
            if form not in input_slot:
                input_slot[form] = st.new("any")
                ein_rows.append(dict(form))
            pre[n] = ({input_slot[form]: Fraction(1)}, Fraction(bias))
        else:
            pre[n] = ({}, Fraction(bias))
    ffn: List[Tuple[List[Lin], List[Tuple[int, int, int]]]] = []  # units, (slot, unit, sign)
    attn_block: Optional[Tuple[int, Lin, int]] = None  # (block index, W_V expression, W_O slot)
    for i, (assign, relu) in enumerate(prog.layers):
        if attn is not None and attn.at == i:
            attn_block = _attention(attn, regs, st, len(ffn))
        exprs = {n: (pre[n] if i == 0 else _subst(assign[n][0], assign[n][1], regs)) for n in sorted(live[i])}
        if not relu:
            regs = exprs
            continue
        regs = _relu_layer(exprs, regs, home, st, ffn, assign)
    out_rows = [regs[n] for n in outputs]
    return _assemble(prog, st, ein_rows, ffn, attn_block, out_rows, kind)


def _attention(attn: AttnOp, regs: Dict[str, Lin], st: _State, block: int):
    src, tgt = regs[attn.source], regs.get(attn.target, ({}, Fraction(0)))
    if src[1] != 0 or tgt != ({}, Fraction(0)):
        raise ValueError("uniform attention: the source must be linear in the slots and the target zero")
    used = {s for e in regs.values() for s in e[0]}
    zeros = [s for s, k in enumerate(st.kind) if k == "zero" and s not in used]
    t = zeros[0] if zeros else st.new("zero")
    st.kind[t] = "pos" if all(c > 0 and st.kind[s] == "pos" for s, c in src[0].items()) else "any"
    regs[attn.target] = ({t: Fraction(1)}, Fraction(0))
    return block, src, t


def _relu_layer(exprs: Dict[str, Lin], regs: Dict[str, Lin], home: Dict[str, int], st: _State, ffn, assign
                ) -> Dict[str, Lin]:
    """One block's feed-forward layer: free carries stay, every other register is written."""
    new: Dict[str, Lin] = {}
    writes = []
    for n, e in exprs.items():
        terms, bias = assign[n]
        is_carry = terms == {n: 1} and not bias and n in regs
        if is_carry and len(e[0]) == 1 and e[1] == 0 and list(e[0].values())[0] == 1 and _nonneg(e, st):
            new[n] = e
        elif not e[0] and e[1] >= 0:
            new[n] = e  # a non-negative constant: σ(c) = c, no slot
        else:
            writes.append((n, e))
    pinned = {s for e in new.values() for s in e[0]}
    free = [s for s in range(len(st.kind)) if s not in pinned]
    units: List[Lin] = []
    wiring: List[Tuple[int, int, int]] = []
    for n, e in writes:
        s = _pick_slot(free, home.get(n), st)
        units.append(e)
        wiring.append((s, len(units) - 1, 1))
        if st.kind[s] in ("pos", "any"):
            units.append(({s: Fraction(1)}, Fraction(0)))
            wiring.append((s, len(units) - 1, -1))
        if st.kind[s] == "any":
            units.append(({s: Fraction(-1)}, Fraction(0)))
            wiring.append((s, len(units) - 1, 1))
        st.kind[s] = "pos"
        home[n] = s
        new[n] = ({s: Fraction(1)}, Fraction(0))
    ffn.append((units, wiring))
    return new


def _zero_attention(m: int, kind: str) -> Attention:
    z1, zm = ((Fraction(0),) * m,), tuple((Fraction(0),) for _ in range(m))
    if kind == "hardmax":
        return Attention((Head(WV=z1, WO=zm, WQ=z1, WK=z1),), kind="hardmax", residual=True)
    return Attention((Head(WV=z1, WO=zm),), kind="uniform", residual=True)


def _ua(m: int, src: Lin, t: int, kind: str) -> Attention:
    """Eq. (52) on the slots: W^(V) reads ϕ̃'s expression, W^(O) writes it into slot t."""
    wv = (tuple(src[0].get(s, Fraction(0)) for s in range(m)),)
    wo = tuple((Fraction(int(s == t)),) for s in range(m))
    if kind == "hardmax":
        z1 = ((Fraction(0),) * m,)
        return Attention((Head(WV=wv, WO=wo, WQ=z1, WK=z1),), kind="hardmax", residual=True)
    return Attention((Head(WV=wv, WO=wo),), kind="uniform", residual=True)


def _assemble(prog: Program, st: _State, ein_rows, ffn, attn_block, out_rows: List[Lin], kind: str) -> Compiled:
    m = len(st.kind)
    layers: list = []
    ein = [[row.get(name, Fraction(0)) for name in prog.inputs] for row in ein_rows]
    ein += [[Fraction(0)] * len(prog.inputs) for _ in range(m - len(ein))]
    layers.append(Affine(tuple(tuple(r) for r in ein)))
    hidden = []
    for b, (units, wiring) in enumerate(ffn):
        if attn_block is not None and attn_block[0] == b:
            layers.append(_ua(m, attn_block[1], attn_block[2], kind))
        else:
            layers.append(_zero_attention(m, kind))
        q = max(1, len(units))
        W1 = [[e[0].get(s, Fraction(0)) for s in range(m)] for e in units] or [[Fraction(0)] * m]
        b1 = [e[1] for e in units] or [Fraction(0)]
        W2 = [[Fraction(0)] * q for _ in range(m)]
        for s, u, sign in wiring:
            W2[s][u] += sign
        layers.append(FeedForward(tuple(map(tuple, W1)), tuple(b1), tuple(map(tuple, W2)),
                                  (Fraction(0),) * m, residual=True))
        hidden.append(q)
    W_out = tuple(tuple(e[0].get(s, Fraction(0)) for s in range(m)) for e in out_rows)
    b_out = tuple(e[1] for e in out_rows)
    layers.append(Affine(W_out, b_out if any(b_out) else None))
    return Compiled(layers, m, max(hidden, default=0), len(ffn), hidden)
