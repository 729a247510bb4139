"""Lemma C.1 with the tent-map Stage III of Kajitsuka & Sato Lemmas G.4–G.6 (Telgarsky's triangle map).

Bit extraction by Telgarsky's triangle (tent) map, Kajitsuka & Sato Lemmas G.4–G.6 (after
Vardi et al. 2022), instead of the doubling map of `exactmem.constructions.vardi.memorizer`. The
two-trajectory read-out of each bit is ours (the paper defers the step to Vardi et al.). See
``docs/kajitsuka-paper.md``.

Stage I (Lemma C.2) and Stage II (Lemmas G.2/G.3) are `vardi`'s. Stage III, for the
crafted integers u (g slots of ρ key bits, M_u = gρ) and w (g slots of c label bits, M_w = gc):

* **store** ``U = σ(u)``, ``W = σ(w)`` (the selected integers, one layer);
* **H** (eq. (155)–(156)): the four trajectory starts ``t₁ = U/2^M + 2^-(M+1)``,
  ``t₂ = U/2^M + 2^-(M+2)`` for each stream (one layer);
* **Lemma G.4**, per bit k (three layers): ``a = σ(2t)``, ``a' = σ(4t − 2)`` for both
  trajectories; ``t ← σ(a − a')`` (= ψ(t), ψ(z) = σ(σ(2z) − σ(4z − 2))); then the bit is
  appended, ``A ← σ(2A + 2^(M+1−k)(t₂ − t₁) + 1/2) = 2A + b_k``. Exact because on the dyadic
  interval (u/2^M, (u+1)/2^M) ∋ t₁, t₂ the iterate ψ^(k) is affine with slope (−1)^(b_k)·2^k
  (the parities of the Gray-code bits telescope), so ``ψ^(k)(t₁) − ψ^(k)(t₂) =
  (−1)^(b_k)·2^(k−M−2)``;
* **Lemma G.5** indicator and the gate (158): ``p = σ(2(A − x))``, ``q = σ(2(x − A − 1))``,
  ``T = σ(1 − p − q)`` (1 on [A, A+1], 0 when |x − 1/2 − A| > 1),
  ``o = σ(2^(c+1)·T − 2^(c+1) + L)``, ``acc ← acc + o`` (eq. (159), (162)).

Slots are extracted one after the other (3·max(ρ, c) layers each, the shorter stream idles);
slot i's three comparison layers run beside slot i + 1's first three extraction layers, so
Stage III has 2 + 3gP + 3 ReLU layers (P = max(ρ, c)) against Lemma G.6's 3gP + 2g + 2.
Only building happens here; the independent checker judges the network.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from ...model.layers import Model
from . import memorizer as vardi
from .memorizer import Expr, Layout, Program

SLOPE = 2  # Telgarsky's ψ(z) = σ(σ(2z) − σ(4z − 2)); tests plant another slope


def stage3_layers(lay: Layout) -> int:
    """Exact ReLU layers of the tent-map Stage III: store + H + 3gP + 3 (the last comparison)."""
    return 2 + 3 * lay.g * lay.P + 3


def relu_layers(lay: Layout) -> int:
    """Stages II (m + 1, `vardi.emit_selection`) and III of one tent-map memorizer."""
    return (lay.m + 1) + stage3_layers(lay)


def relu_depth_c1(lay: Layout) -> int:
    """Exact ReLU depth of `build_c1_tent`: Stage I (1) + Stages II–III."""
    return 1 + relu_layers(lay)


def max_bits_impl(lay: Layout, proj_bits: int, stage2_bits: int) -> int:
    """Exact max bits of Stage III: the trajectory bias 2^-(M+2) costs M + 4 (sign, numerator 1,
    denominator 2^(M+2)); the bit weights 2^(M+1−k) ≤ 2^M cost ≤ M + 2; the gate 2^(c+1) c + 3.
    ``stage2_bits``: the Stage II weights (u_j, w_j, interval ends); ``proj_bits``: Stage I's."""
    M = lay.g * lay.P
    return max(M + 4, lay.c + 3, proj_bits, stage2_bits)


def _psi_first(t: str, a: str, b: str, slope: int) -> Dict[str, Expr]:
    """First layer of ψ: a = σ(2t), b = σ(4t − 2) (``slope`` 2; another value plants a wrong map)."""
    return {a: ({t: slope}, 0), b: ({t: 2 * slope}, -slope)}


def _stream_regs(s: str) -> Tuple[str, str, str, str, str, str]:
    return f"t1{s}", f"t2{s}", f"a1{s}", f"b1{s}", f"a2{s}", f"b2{s}"


def _bit_expr(acc: str, s: str, M: int, k: int, first: bool) -> Expr:
    """A ← σ([2A] + 2^(M+1−k)(t₂ − t₁) + 1/2): appends bit k (1-based) of the M-bit stream."""
    t1, t2 = f"t1{s}", f"t2{s}"
    scale = 2 ** (M + 1 - k)
    terms = {t2: scale, t1: -scale}
    if not first:
        terms[acc] = 2
    return (terms, Fraction(1, 2))


def emit_extraction(prog: Program, load_u: Expr, load_w: Expr, g: int, rho: int, c: int,
                    slope: int = SLOPE) -> Expr:
    """Lemma G.6 with Lemmas G.4/G.5 (see the module docstring); ``x`` must be a register.
    Returns the output expression acc + o (read by the caller's linear output layer)."""
    Mu, Mw = g * rho, g * c
    P = max(rho, c)
    prog.layer({"U": load_u, "W": load_w})
    hu = {"t1u": ({"U": Fraction(1, 2 ** Mu)}, Fraction(1, 2 ** (Mu + 1))),
          "t2u": ({"U": Fraction(1, 2 ** Mu)}, Fraction(1, 2 ** (Mu + 2)))}
    hw = {"t1w": ({"W": Fraction(1, 2 ** Mw)}, Fraction(1, 2 ** (Mw + 1))),
          "t2w": ({"W": Fraction(1, 2 ** Mw)}, Fraction(1, 2 ** (Mw + 2)))}
    prog.layer({**hu, **hw})
    gate = 2 ** (c + 1)
    tau = 0
    acc_started = False
    pending: List[Tuple[int, int]] = []  # (layer of o, slot)
    for i in range(g + 1):
        steps = P if i < g else 1  # after the last slot: one idle "step" of three layers to compare
        for s in range(steps):
            layers: List[Dict[str, Expr]] = [{}, {}, {}]
            if i < g:
                for st, width, M, acc in (("u", rho, Mu, "A"), ("w", c, Mw, "L")):
                    if s >= width:
                        continue
                    t1, t2, a1, b1, a2, b2 = _stream_regs(st)
                    layers[0].update(_psi_first(t1, a1, b1, slope))
                    layers[0].update(_psi_first(t2, a2, b2, slope))
                    layers[1][t1] = ({a1: 1, b1: -1}, 0)
                    layers[1][t2] = ({a2: 1, b2: -1}, 0)
                    k = i * width + s + 1
                    layers[2][acc] = _bit_expr(acc, st, M, k, s == 0)
            if s == 0 and i >= 1:  # slot i − 1's key and label are complete: Lemma G.5 and the gate
                layers[0]["gp"] = ({"A": 2, "x": -2}, 0)
                layers[0]["gq"] = ({"x": 2, "A": -2}, -2)
                layers[1]["gT"] = ({"gp": -1, "gq": -1}, 1)
                layers[2]["o"] = ({"gT": gate, "L": 1}, -gate)
                pending.append((tau + 3, i - 1))
            for j, a in enumerate(layers):
                if pending and pending[0][0] == tau + j and pending[0][1] < g - 1:
                    a["acc"] = ({"acc": 1, "o": 1} if acc_started else {"o": 1}, 0)
                    acc_started = True
                    pending.pop(0)
                prog.layer(a)
            tau += 3
    return ({"acc": 1, "o": 1} if acc_started else {"o": 1}, 0)


def emit_stages_2_3(prog: Program, prep: vardi.Prepared, proj: vardi.Projection, C: int,
                    slots: Optional[int] = None, slope: int = SLOPE,
                    first_extra: Optional[Dict[str, Expr]] = None) -> Tuple[Expr, Layout, List[vardi.Group]]:
    """Lemma C.1 Stages II–III with the tent-map Stage III (register ``x`` holds Stage I).
    Every register already in ``prog`` is carried along. Returns (output, layout, groups)."""
    xs, ys = vardi.sorted_labelled(prep, proj)
    rho = max(2, max(vardi.floor_frac(x) for x in xs).bit_length())
    lay = vardi.plan_layout(len(xs), rho, vardi.label_width(C), slots)
    groups = vardi.encode_groups(xs, ys, lay.g, lay.rho, lay.c)
    load_u, load_w = vardi.emit_selection(prog, groups, first_extra)
    out = emit_extraction(prog, load_u, load_w, lay.g, lay.rho, lay.c, slope)
    return out, lay, groups


def stage2_bits(groups: Sequence[vardi.Group]) -> int:
    """Max bits of the Stage II weights: u_j, w_j and the interval ends 2a_j, 2b_j."""
    from ...arith.numbers import bits

    return max(max(bits(gr.u), bits(gr.w), bits(2 * gr.a), bits(2 * gr.b)) for gr in groups)


def build_c1_tent(points: Sequence, labels: Sequence, C: int, extra: Sequence = (), seed: int = 0,
                  slots: Optional[int] = None, slope: int = SLOPE,
                  projection: Optional[vardi.Projection] = None) -> Tuple[Model, Dict[str, object]]:
    """Lemma C.1 with the tent-map Stage III (Lemma G.6's tent map, our two-trajectory read-out), a plain ReLU stack.

    ``projection``: a Stage I projection of the prepared points (default: `vardi`'s
    random one with the same seed, so the doubling-map memorizer ``vardi.build_c1`` sees the
    same projected points); ``slope`` ≠ 2 plants a wrong triangle map (tests)."""
    prep = vardi.prepare(points, labels, extra, C)
    proj = vardi.project_to_line(prep, seed) if projection is None else projection
    prog = Program([f"z{k}" for k in range(prep.d)])
    vardi.emit_stage1(prog, proj)
    out, lay, groups = emit_stages_2_3(prog, prep, proj, C, slots, slope)
    prog.layer({"out": out}, relu=False, carry=False)
    model = Model(tuple(prog.compile(["out"])), "vectors", prep.d, "last", "identity", name="tent_c1")
    info = vardi.common_info(prep, proj, C)
    info.update({"stage III": "tent map (Lemmas G.4-G.6)", "slope": slope, "slots g": lay.g, "groups m": lay.m,
                 "key bits rho": lay.rho, "label bits c": lay.c, "padded slots": lay.padding,
                 "stage2 bits": stage2_bits(groups), "layout": lay})
    return model, info


def tent_extractor(M: int, nbits: Optional[int] = None, slope: int = SLOPE) -> Model:
    """Lemma G.4 alone: input an integer 0 ≤ U < 2^M, output its top ``nbits`` bits (most
    significant first), each read off the two trajectories (3 layers per bit)."""
    nbits = M if nbits is None else nbits
    prog = Program(["z0"])
    prog.layer({"t1u": ({"z0": Fraction(1, 2 ** M)}, Fraction(1, 2 ** (M + 1))),
                "t2u": ({"z0": Fraction(1, 2 ** M)}, Fraction(1, 2 ** (M + 2)))}, carry=False)
    outs = []
    for k in range(1, nbits + 1):
        t1, t2, a1, b1, a2, b2 = _stream_regs("u")
        prog.layer({**_psi_first(t1, a1, b1, slope), **_psi_first(t2, a2, b2, slope)})
        prog.layer({t1: ({a1: 1, b1: -1}, 0), t2: ({a2: 1, b2: -1}, 0)})
        name = f"b{k:04d}"
        prog.layer({name: ({t2: 2 ** (M + 1 - k), t1: -2 ** (M + 1 - k)}, Fraction(1, 2))})
        outs.append(name)
    prog.layer({n: ({n: 1}, 0) for n in outs}, relu=False, carry=False)
    return Model(tuple(prog.compile(outs)), "vectors", 1, "last", "identity", name="tent_extractor")
