"""Degree and count bookkeeping of Theorem B.3, checked with sympy polynomials.

On a tiny instance every parameter of eq. (2)–(4) becomes a sympy ring generator; the
data tokens are exact rationals. One cell of the proof's partition is fixed by a seeded
parameter point θ0 (its hardmax argmax sets and ReLU on/off pattern, with the ReLUs of
θ0 switched on so that the degree bounds are attained). On that cell the network is a
polynomial map, and we read off, for every block l:

* the attention scores (W^K z_k)·(W^Q z_j) — total degree vs 8l − 4 (77);
* the score differences a_{k,j} − a_{k'',j} — how many the proof forms (N·H·n³, (78)),
  how many are distinct and non-constant, and how many variables they involve vs the
  proof's W_{l−1} + 2msH (79);
* the FFN pre-activations — degree vs 4l (82), count N·q·n (83), variables vs
  W_{l−1} + 2msH + (m+1)q (84);
* the block outputs — degree vs 4l + 1 (85);
* the final outputs — degree vs 4L + 2 (88), count nN, variables vs W (89).

Each bound must hold (attained degree ≤ claimed); the report also says whether it is
attained. A planted wrong bookkeeping (e.g. 8l − 5) fails here.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Dict, List

from .arch import Architecture, check_convention
from .bookkeeping import PAPER, Bookkeeping
from ..arith.steps import Report, check
from .toy import distinct_tokens, forward_generic, params_from_vector


def _total_degree(p) -> int:
    return max((sum(mon) for mon in p.itermonoms()), default=0) if p else -1


def _variables(polys) -> set:
    out = set()
    for p in polys:
        for mon in p.itermonoms():
            out.update(i for i, e in enumerate(mon) if e)
    return out


def symbolic_report(arch: Architecture, n: int, N: int, seed: int = 0, bk: Bookkeeping = PAPER,
                    convention: str = "paper", tokens=None) -> Report:
    """Build the cell polynomials of a tiny hardmax Transformer and check the proof's
    degrees, polynomial counts and variable counts (module docstring)."""
    from sympy import QQ
    from sympy.polys.rings import ring

    check_convention(convention)
    lay = arch.layout()
    names = [f"{name}_{i}_{j}" for name, r, c in lay for i in range(r) for j in range(c)]
    R, *gens = ring(",".join(names), QQ)
    rng = random.Random(seed)
    theta0: List[Fraction] = []
    for name, r, c in lay:
        for _ in range(r * c):
            if name.startswith("b1_"):
                theta0.append(Fraction(1000 + rng.randint(0, 99)))  # ReLUs on: degrees attained
            else:
                theta0.append(Fraction(rng.choice([-1, 1]) * rng.randint(1, 9), rng.randint(1, 5)))
    seqs = tokens if tokens is not None else distinct_tokens(n, N, arch.d, seed)
    pattern: Dict = {}
    forward_generic(arch, params_from_vector(arch, theta0), seqs, pattern=pattern)

    rec: Dict = {"scores": {}, "pre": {}, "block": {}, "out": {}}

    def hook(kind, l, i, data):
        rec[kind].setdefault(l, []).append(data)

    const = lambda c: R(QQ(Fraction(c).numerator, Fraction(c).denominator))  # noqa: E731
    forward_generic(arch, params_from_vector(arch, gens), seqs, zero=R.zero, const=const, pattern=dict(pattern),
                    hook=hook)

    rep = Report(f"symbolic bookkeeping (sympy): {arch.label()}, n={n}, N={N}, convention={convention}, "
                 f"bookkeeping={bk.name}")
    attained, var_seen = [], []
    for l in range(1, arch.L + 1):
        scores = [a for per_seq in rec["scores"][l] for head in per_seq for row in head for a in row]
        diffs = [head[j][k] - head[j][k2] for per_seq in rec["scores"][l] for head in per_seq
                 for j in range(len(head)) for k in range(len(head)) for k2 in range(len(head))]
        distinct = {tuple(sorted(p.terms())) for p in diffs if not p.is_ground}
        dS = max(_total_degree(p) for p in scores)
        rep.add(check("(77)", f"l={l}: attention-score degree ≤ {bk.score_degree(l)} (claimed 8l−4)", dS, "<=",
                      bk.score_degree(l), "degree"))
        attained.append((f"scores l={l}", dS, bk.score_degree(l)))
        rep.add(check("(78)", f"l={l}: differences formed = claimed count N·H·n³", len(diffs), "==",
                      bk.score_count(n, N, arch.H), "count"))
        rep.add(check("(78)", f"l={l}: distinct non-constant differences ≤ claimed count", len(distinct), "<=",
                      bk.score_count(n, N, arch.H), "count"))
        vd = len(_variables(diffs))
        rep.add(check("(79)", f"l={l}: variables of the differences ≤ W_{{l−1}} + 2msH", vd, "<=",
                      arch.att_vars(l, convention), "variables"))
        rep.add(check("(79)", f"l={l}: variables of the differences ≤ cell count (no earlier W^K, W^Q)", vd, "<=",
                      arch.cell_att_vars(l), "variables"))
        pre = [p for per_seq in rec["pre"][l] for col in per_seq for p in col]
        dP = max(_total_degree(p) for p in pre)
        rep.add(check("(82)", f"l={l}: pre-activation degree ≤ {bk.preact_degree(l)} (claimed 4l)", dP, "<=",
                      bk.preact_degree(l), "degree"))
        attained.append((f"pre-activations l={l}", dP, bk.preact_degree(l)))
        rep.add(check("(83)", f"l={l}: pre-activations = claimed count N·q·n", len(pre), "==",
                      bk.relu_count(n, N, arch.q), "count"))
        vp = len(_variables(pre))
        rep.add(check("(84)", f"l={l}: variables of the pre-activations ≤ W_{{l−1}} + 2msH + (m+1)q",
                      vp, "<=", arch.ffn_vars(l, convention), "variables"))
        rep.add(check("(84)", f"l={l}: variables of the pre-activations ≤ cell count", vp, "<=",
                      arch.cell_ffn_vars(l), "variables"))
        var_seen += [(f"differences l={l}", vd, arch.cell_att_vars(l)), (f"pre-activations l={l}", vp,
                                                                          arch.cell_ffn_vars(l))]
        blk = [p for per_seq in rec["block"][l] for col in per_seq for p in col]
        dB = max(_total_degree(p) for p in blk)
        rep.add(check("(85)", f"l={l}: block-output degree ≤ {bk.block_out_degree(l)} (claimed 4l+1)", dB, "<=",
                      bk.block_out_degree(l), "degree"))
        attained.append((f"block outputs l={l}", dB, bk.block_out_degree(l)))
    outs = [p for per_seq in rec["out"][arch.L] for p in per_seq]
    dO = max(_total_degree(p) for p in outs)
    rep.add(check("(88)", f"output degree ≤ {bk.output_degree(arch.L)} (claimed 4L+2)", dO, "<=",
                  bk.output_degree(arch.L), "degree"))
    attained.append(("outputs", dO, bk.output_degree(arch.L)))
    rep.add(check("(70)", "outputs = claimed count nN", len(outs), "==", bk.output_count(n, N), "count"))
    vo = len(_variables(outs))
    rep.add(check("(89)", "variables of the outputs ≤ W", vo, "<=", arch.W(convention), "variables"))
    rep.add(check("(89)", "variables of the outputs ≤ cell count", vo, "<=", arch.cell_out_vars(), "variables"))
    var_seen.append(("outputs", vo, arch.cell_out_vars()))
    rep.results["variables (family, involved, cell count)"] = var_seen
    rep.results["degrees (family, attained, claimed)"] = attained
    rep.results["all degree bounds attained on this cell"] = all(a == c for _, a, c in attained)
    rep.results["parameters (exact count)"] = arch.W("exact")
    rep.results["cell"] = f"θ0 seeded ({seed}); ReLUs on; argmax sets {sorted(set(v for k, v in pattern.items() if k[0] == 'att'))}"
    return rep
