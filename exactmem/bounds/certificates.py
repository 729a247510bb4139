"""Lower-bound certificates: the chains of ``bounds minw|next-token|bits|chain|run`` written for the kernel.

The producer side of ``docs/lower-bound-certificates.md``. Every arithmetic step the reports of
`.seq2seq`, `.sharp`, `.next_token` and `.bits` decide is written here as an
exact relation between expressions built from the concrete integers (n, N, C, W, the
architecture's d, m, s, H, q, L); the cited lemmas become premises. ``python -m exactmem check
FILE`` re-derives every step in the trusted kernel (``exactmem/kernel/lowerbound.py``);
nothing here is trusted. A step the expression language cannot state goes to
``producer_checked`` and is printed as "checked by the producer".
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence

from .arch import SMALLEST_LABEL, Architecture, check_convention

KS = "Kajitsuka & Sato (ICLR 2025)"
GJ = "Goldberg & Jerrum (1995), Cor. 2.1, as Kajitsuka & Sato Lemma B.4"

Expr = Any  # a number string, a name, or [operator, ...]


# ------------------------------------------------------------------ expression helpers

def num(x) -> str:
    """An exact number as the expression language writes it: "12", "-3/8" (any size)."""
    from ..kernel.text import int_str

    x = Fraction(x)
    return int_str(x.numerator) if x.denominator == 1 else f"{int_str(x.numerator)}/{int_str(x.denominator)}"


def lit(x) -> Expr:
    """A name or expression unchanged; an int/Fraction as its number string."""
    return num(x) if isinstance(x, (int, Fraction)) and not isinstance(x, bool) else x


def op(name: str, *args) -> list:
    return [name, *(lit(a) for a in args)]


def add(*a):
    return op("+", *a)


def sub(a, b):
    return op("-", a, b)


def mul(*a):
    return op("*", *a)


def div(a, b):
    return op("/", a, b)


def pw(a, k: int):
    return ["^", lit(a), str(int(k))]


def log2(a):
    return op("log2", a)


E = ["e"]
LOG2E = "log2e"  # the name every certificate defines for log2 e


class Chain:
    """A lower-bound certificate under construction: premises, definitions, steps."""

    def __init__(self, statement: str):
        self.statement, self.conclusion = statement, ""
        self.instance: List[str] = []  # names defined as numbers: the instance the statement is about
        self.concluding: List[str] = []  # ids of the steps the conclusion restates (kernel-printed)
        self.premises: List[dict] = []
        self.definitions: List[dict] = []
        self.steps: List[dict] = []
        self.producer: List[dict] = []
        self.names = set()

    def premise(self, cite: str, statement: str, eq: str = "") -> str:
        if not any(p["cite"] == cite and p["statement"] == statement for p in self.premises):
            self.premises.append({"cite": cite, "statement": statement, **({"eq": eq} if eq else {})})
        return cite

    def define(self, name: str, expr: Expr, note: str = "") -> str:
        """Define ``name`` once (a second identical definition is a no-op)."""
        if name in self.names:
            return name
        self.names.add(name)
        self.definitions.append({"name": name, "expr": lit(expr), **({"note": note} if note else {})})
        return name

    def step(self, eq: str, claim: str, lhs: Expr, rel: str, rhs: Expr, uses: Sequence[str] = ()) -> str:
        """Add ``lhs rel rhs``; ``uses``: premise cites and earlier step ids it relies on. Returns its id."""
        sid = f"s{len(self.steps) + 1}"
        self.steps.append({"id": sid, "eq": eq, "claim": claim, "lhs": lit(lhs), "rel": rel, "rhs": lit(rhs),
                           **({"uses": list(uses)} if uses else {})})
        return sid

    def conclude_with_every_step(self, *instance: str) -> None:
        """The conclusion restates every step, and the statement's instance is each of ``instance``
        defined as a number (for chains whose every step is part of what they conclude)."""
        self.concluding += [s["id"] for s in self.steps]
        nums = {d["name"] for d in self.definitions if isinstance(d["expr"], str) and re.fullmatch(r"-?\d+(/\d+)?", d["expr"])}
        self.instance += [n for n in instance if n in nums and n not in self.instance]

    def by_producer(self, eq: str, claim: str, note: str = "") -> None:
        self.producer.append({"eq": eq, "claim": claim, **({"note": note} if note else {})})

    def document(self, meta: Optional[dict] = None) -> Dict[str, Any]:
        from ..kernel.schema import canonical_hash

        if not self.concluding:
            raise ValueError("a lower-bound chain must name the steps its conclusion restates")
        defs = {d["name"]: d["expr"] for d in self.definitions}
        by_id = {s["id"]: s for s in self.steps}
        doc = {"format": "exactmem-lower-bound", "version": 2,
               "statement": {"text": self.statement, "instance": {n: defs[n] for n in self.instance}},
               "premises": self.premises, "definitions": self.definitions, "steps": self.steps,
               "conclusion": {"text": self.conclusion,
                              "steps": [{"step": i, **{k: by_id[i][k] for k in ("lhs", "rel", "rhs")}}
                                        for i in dict.fromkeys(self.concluding)]}}
        if self.producer:
            doc["producer_checked"] = self.producer
        if meta:
            doc["meta"] = meta
        doc["hash"] = canonical_hash(doc)
        return doc


def write_document(doc: Dict[str, Any], path: str) -> None:
    """Write a certificate atomically (never a partial file)."""
    from ..certificate.writer import write_bytes_atomic

    write_bytes_atomic(json.dumps(doc, indent=1, ensure_ascii=False).encode("utf-8"), path)


def combine(title: str, docs: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Several certificates as one: premises merged, names and step ids prefixed per part."""
    ch = Chain(title)
    conclusions = []
    for k, d in enumerate(docs):
        pre = f"p{k + 1}."
        ren = {x["name"]: pre + x["name"] for x in d["definitions"]}

        def rn(e):
            if isinstance(e, str):
                return ren.get(e, e)
            return [e[0]] + [rn(a) if not (e[0] == "^" and i == 1) else a for i, a in enumerate(e[1:])]

        for p in d["premises"]:
            ch.premise(p["cite"], p["statement"], p.get("eq", ""))
        for x in d["definitions"]:
            ch.define(ren[x["name"]], rn(x["expr"]), x.get("note", ""))
        ids = {}
        for s in d["steps"]:
            ids[s["id"]] = ch.step(s["eq"], s["claim"], rn(s["lhs"]), s["rel"], rn(s["rhs"]),
                                   [ids.get(u, u) for u in s.get("uses", ())])
        ch.producer += d.get("producer_checked", [])
        conclusions.append(d["conclusion"]["text"])
        ch.concluding += [ids[c["step"]] for c in d["conclusion"]["steps"]]
        ch.instance += [ren[n] for n in d["statement"]["instance"]]
    ch.conclusion = " AND ".join(conclusions)
    return ch.document()


def _common(ch: Chain) -> None:
    ch.define(LOG2E, log2(E), "log2 e")


# ------------------------------------------------------------------- architecture formulas

class ArchExpr:
    """Eq. (92) parameter counts of an architecture as expressions of its literal dimensions."""

    def __init__(self, arch: Architecture, convention: str = "paper"):
        self.a, self.conv = arch, check_convention(convention)
        d, m, s, H, q = (str(x) for x in (arch.d, arch.m, arch.s, arch.H, arch.q))
        self.md, self.msH = mul(m, d), mul(m, s, H)
        self.mq1 = mul(add(m, "1"), q)  # (m + 1) q
        self.block = (add(mul("4", m, s, H), mul("2", add(m, "1"), q)) if self.conv == "paper"
                      else add(mul("4", m, s, H), mul("2", m, q), q, m))
        self.e_out = self.md if self.conv == "paper" else m
        self.cell_block = add(mul("2", m, s, H), mul("2", m, q), q, m)
        self.m = m

    def W_l(self, l) -> Expr:
        """W_l = md + l·(block) (eq. (92))."""
        return add(self.md, mul(l, self.block))

    def W(self, L=None) -> Expr:
        """W = W_L + (E_out count)."""
        return add(self.W_l(self.a.L if L is None else L), self.e_out)

    def att_vars(self, l) -> Expr:
        """W_{l−1} + 2msH (eq. (79))."""
        return add(self.W_l(sub(l, 1)), mul("2", self.msH))

    def ffn_vars(self, l) -> Expr:
        """W_{l−1} + 2msH + (m+1)q (eq. (84))."""
        return add(self.W_l(sub(l, 1)), mul("2", self.msH), self.mq1)

    def cell_att_vars(self, l) -> Expr:
        return add(self.md, mul(sub(l, 1), self.cell_block), mul("2", self.msH))

    def cell_ffn_vars(self, l) -> Expr:
        return add(self.md, mul(sub(l, 1), self.cell_block), mul("2", self.msH), self.mq1)

    def cell_out_vars(self) -> Expr:
        return add(self.md, mul(self.a.L, self.cell_block), self.m)


def factor_log2(M: Expr, D: Expr, v: Expr) -> Expr:
    """log2 of Lemma B.4's bound (8e·M'·D/v)^v with M' = max(M, v): v·(log2(8·M'·D/v) + log2 e)."""
    return mul(v, add(log2(div(mul("8", op("max", M, v), D), v)), LOG2E))


def smallest_W_expr() -> Expr:
    """W of d = m = s = H = q = L = 1 under eq. (92): md + L[4msH + 2(m+1)q] + md."""
    return ArchExpr(Architecture(1, 1, 1, 1, 1, 1)).W()


def _lemma_b4(ch: Chain) -> str:
    return ch.premise(GJ, "If W ≤ M, the number of sign vectors (three-valued) of M polynomials of degree ≤ D in W "
                          "real variables is at most (8eMD/W)^W. Repeating a polynomial keeps the set of sign "
                          "vectors, so with M' = max(M, v) it gives (8e·M'·D/v)^v for every v (repair, "
                          "docs/errata.md).", "Lemma B.4")


# ------------------------------------------------------------------- Theorem B.3: minimal W

def _ks_thm43(ch: Chain) -> str:
    return ch.premise(KS + ", Theorem 4.3 / B.3", "A hardmax Transformer (eqs. (2)–(4)) with W parameters (counted "
                      "by eq. (92)) that shatters N sequences of length n whose nN tokens are pairwise distinct "
                      "satisfies nN ≤ 9·W²·log2(48·e·n·N) (with the repair of docs/errata.md where Lemma B.4's "
                      "precondition fails: then W > nN and the inequality holds trivially).", "(96)")


def minw_chain(n: int, N: int, W: int, sharp=None, family=None) -> Chain:
    """Thm B.3's minimal W: nN ≤ 9W²λ at W, > at W − 1 (λ = log2(48e·nN) > 0, so 9W²λ increases in
    W), the vacuity test against the smallest architecture, and (``sharp``: a SharpMin) the
    sharp bound (90) over the family: every member with fewer parameters ruled out, the optimum not."""
    ch = Chain(f"Kajitsuka & Sato Theorem 4.3 / B.3 at n = {n}, N = {N}: a hardmax Transformer that shatters N "
               f"sequences of length n with nN distinct tokens has W ≥ {W} parameters (eq. (96))"
               + (f"; within the family {family.describe()}, at least {sharp.W} (sharp bound (90))" if sharp else ""))
    _common(ch)
    thm = _ks_thm43(ch)
    ch.define("n", n), ch.define("N", N), ch.define("nN", mul("n", "N"))
    ch.define("lam", log2(mul("48", E, "nN")), "λ = log2(48e·nN)")
    ch.define("W", W, "the minimal W")
    ch.instance += ["n", "N"]
    pos = ch.step("(96)", "λ = log2(48e·nN) > 0, so 9W²·λ is increasing in W ≥ 0", "lam", ">", "0")
    ch.concluding += [pos, ch.step("(96)", f"at W = {W}: nN ≤ 9W²·log2(48e·nN) (the bound allows W)", "nN", "<=",
                                   mul("9", pw("W", 2), "lam"), [thm])]
    if W > 1:
        ch.concluding.append(ch.step("(96)", f"at W = {W - 1}: nN > 9W²·log2(48e·nN), hence at every W ≤ {W - 1}",
                                     "nN", ">", mul("9", pw(sub("W", 1), 2), "lam"), [thm, pos]))
    ch.define("W0", smallest_W_expr(), f"W of the smallest architecture {SMALLEST_LABEL} (eq. (92))")
    from .arch import smallest_W

    vac = W <= smallest_W("paper")
    ch.concluding.append(ch.step("(92)", f"min W (96) = {W} {'≤' if vac else '>'} W of the smallest architecture "
                                 f"({SMALLEST_LABEL})" + (": VACUOUS, the bound rules out no architecture" if vac else ""),
                                 "W", "<=" if vac else ">", "W0"))
    ch.conclusion = (f"every hardmax Transformer with W ≤ {W - 1} parameters fails to shatter any N = {N} sequences "
                     f"of length n = {n} with nN distinct tokens" + (" (vacuous: every architecture has W ≥ 10)"
                                                                     if vac else ""))
    if sharp is not None:
        sharp_steps(ch, n, N, sharp, family)
    return ch


def sharp_log2_expr(ch: Chain, pre: str, arch: Architecture, L: Expr, convention: str = "paper") -> str:
    """Define ``pre``.P = log2 Π(L), the product bound (90) with M' = max(M, v), in closed form:
    per factor family (attention: v_l = p_att + B·l, D_l = 8l − 4, M = NHn³; ReLU: v_l = p_ffn + B·l,
    D_l = 4l, M = Nqn) Σ_{l≤L} v_l·(3 + log2 e + log2 D_l) + Σ_{l≤ℓ} v_l·(log2 M − log2 v_l) with
    ℓ = max(0, min(L, ⌊(M − p)/B⌋)) the last l with v_l ≤ M (the em_sum node), plus the output
    factor W·(log2(8·max(nN, W)·(4L+2)/W) + log2 e) (eqs. (72), (89), (90))."""
    ax = ArchExpr(arch, convention)
    H, q = str(arch.H), str(arch.q)
    B = ch.define(pre + "B", ax.block, "parameters per block (eq. (92))")
    p_att = ch.define(pre + "p_att", add(sub(ax.md, B), mul("2", ax.msH)), "att_vars(l) = p_att + B·l")
    p_ffn = ch.define(pre + "p_ffn", add(p_att, ax.mq1), "ffn_vars(l) = p_ffn + B·l")
    ch.define(pre + "L", L)
    Lx = pre + "L"
    terms = []
    for fam, p, d1, d0, M in (("att", p_att, 8, -4, mul("N", H, pw("n", 3))), ("ffn", p_ffn, 4, 0, mul("N", q, "n"))):
        Mn = ch.define(pre + "M_" + fam, M)
        ls = ch.define(pre + "last_" + fam, op("max", "0", op("min", Lx, op("floor", div(sub(Mn, p), B)))),
                       "last l with v_l ≤ M")
        S_all = mul(Lx, add(p, div(mul(B, add(Lx, "1")), "2")))  # Σ_{l≤L} (p + Bl)
        S_small = mul(ls, add(p, div(mul(B, add(ls, "1")), "2")))
        terms += [mul(S_all, add("3", LOG2E)), op("em_sum", p, B, d1, d0, "1", Lx), mul(S_small, log2(Mn)),
                  mul("-1", op("em_sum", p, B, B, p, "1", ls))]
    Wn = ch.define(pre + "W", ax.W(Lx))
    terms.append(factor_log2("nN", add(mul("4", Lx), "2"), Wn))
    return ch.define(pre + "P", add(*terms), "log2 Π(L): eq. (90), middle line, with M' = max(M, v)")


def sharp_steps(ch: Chain, n: int, N: int, sharp, family, convention: str = "paper") -> None:
    """Steps for the sharp minimum over the family: each shape at its largest L with W(L) < W* is
    ruled out (nN > log2 Π), so every smaller L is (log2 Π(L) increases in L); the optimum is not."""
    _lemma_b4(ch)
    ch.premise(KS + ", App. B.2", "Shattering nN distinct tokens needs 2^{nN} ≤ K sign vectors (70), and K is at "
               "most the product over the Lemma B.4 applications (72), (89), (90): per block l, NHn³ score "
               "differences of degree ≤ 8l−4 in W_{l−1}+2msH variables and Nqn pre-activations of degree ≤ 4l in "
               "W_{l−1}+2msH+(m+1)q variables; nN outputs of degree ≤ 4L+2 in W variables (73)–(89).", "(70)–(90)")
    mono = ch.premise("exactmem/bounds/sharp.py (module docstring)", "log2 Π(L) of the sharp bound (90) is "
                      "strictly increasing in L for a fixed shape (d, m, s, H, q): every block factor is > 1 and the "
                      "output factor increases with L.", "(90)")
    Ws = sharp.W
    ch.define("Wsharp", Ws, "the minimal W of the sharp bound over the family")
    a = sharp.arch
    P = sharp_log2_expr(ch, "opt.", a, a.L, convention)
    ch.step("(92)", f"the optimum {a.label()} has W = W*", "opt.W", "==", "Wsharp")
    ch.concluding.append(ch.step("(90)", f"{a.label()} is not ruled out: nN ≤ log2 Π", "nN", "<=", P))
    for shape in family.shapes():
        a1 = Architecture(*shape, 1)
        tag = "d{}m{}s{}H{}q{}".format(*shape)
        W1, B = a1.W(convention), a1.block_params(convention)
        if W1 >= Ws:
            ch.step("(92)", f"{tag}: W(L = 1) ≥ W*: no member of this shape has fewer parameters",
                    ArchExpr(a1, convention).W(1), ">=", "Wsharp")
            continue
        Lc = (Ws - W1 - 1) // B + 1  # largest L with W(L) < W*
        ac = Architecture(*shape, Lc)
        ax = ArchExpr(ac, convention)
        below = ch.step("(92)", f"{tag}: W(L = {Lc}) < W*", ax.W(Lc), "<", "Wsharp")
        deepest = ch.step("(92)", f"{tag}: W(L = {Lc + 1}) ≥ W*, so L = {Lc} is the deepest member below W*",
                          ax.W(Lc + 1), ">=", "Wsharp")
        P = sharp_log2_expr(ch, tag + ".", ac, Lc, convention)
        ch.concluding.append(ch.step("(90)", f"{tag} at L = {Lc}: ruled out, nN > log2 Π (so at every L ≤ {Lc})",
                                     "nN", ">", P, [mono, below, deepest]))
    ch.conclusion += (f"; by the sharp bound (90), every architecture of the family {family.describe()} with fewer than "
                      f"{Ws} parameters is ruled out, and {a.label()} (W = {Ws}) is not")


# ----------------------------------------------------------------- Theorem B.3: the chain

def chain_chain(arch: Architecture, n: int, N: int, convention: str = "paper") -> Chain:
    """Every step of [`.seq2seq.chain`][exactmem.bounds.chain] for one architecture, as kernel-checked steps."""
    from .counting import amgm_is_equality
    from .sharp import factors

    ax = ArchExpr(arch, convention)
    L, H, q = arch.L, str(arch.H), str(arch.q)
    ch = Chain(f"Kajitsuka & Sato Theorem B.3's chain (70)–(96) for {arch.label()}, n = {n}, N = {N}, "
               f"convention {convention}")
    _common(ch)
    b4, thm = _lemma_b4(ch), ch.premise(KS + ", App. B.2", "Shattering nN distinct tokens needs 2^{nN} ≤ K (70); the "
                                        "degrees (73)–(88) and counts (78), (83) of the polynomials on a cell of the "
                                        "partition, as in the paper's bookkeeping.", "(70)–(88)")
    ch.define("n", n), ch.define("N", N), ch.define("nN", mul("n", "N"))
    ch.instance += ["n", "N"]
    for l in range(L + 1):
        ch.define(f"W_{l}", ax.W_l(l), "eq. (92)")
    ch.define("W", add(f"W_{L}", ax.e_out), "W = W_L + E_out")
    fs = factors(arch, n, N, convention)
    fdefs = []  # (label, eq, M, D, v) names
    for l in range(1, L + 1):
        for kind, M, D, v, cell in (("att", mul("N", H, pw("n", 3)), 8 * l - 4, ax.att_vars(l), ax.cell_att_vars(l)),
                                    ("ffn", mul("N", q, "n"), 4 * l, ax.ffn_vars(l), ax.cell_ffn_vars(l))):
            fdefs.append((f"{kind}{l}", ch.define(f"M_{kind}{l}", M), ch.define(f"D_{kind}{l}", D),
                          ch.define(f"v_{kind}{l}", v), cell))
    fdefs.append(("out", ch.define("M_out", "nN"), ch.define("D_out", 4 * L + 2), "W", ax.cell_out_vars()))
    for l in range(1, L + 1):
        ch.step("(92)", f"W_{l} = md + l·block equals the block-by-block sum", f"W_{l}", "==",
                add(f"W_{l - 1}", ax.block))
        ch.step("(92)", f"W_{l} ≥ 4lH + 2lq", f"W_{l}", ">=", add(mul(4 * l, H), mul(2 * l, q)))
    for label, M, D, v, cell in fdefs:
        ch.step("(79),(84),(89)", f"{label}: counted variables v ≥ parameters the polynomials depend on (on a cell)",
                v, ">=", cell)
    Wbar = ch.define("Wbar", add(*[v for _, _, _, v, _ in fdefs]), "W̄ = Σ exponents of (90)")
    ch.step("(91)", "W̄ = W + Σ_l[2W_{l−1} + 4msH + (m+1)q]", Wbar, "==",
            add("W", *[add(mul("2", f"W_{l - 1}"), mul("4", ax.msH), ax.mq1) for l in range(1, L + 1)]))
    pre_ok = all(f.precondition for f in fs)
    for (label, M, D, v, _), f in zip(fdefs, fs):
        ch.step("(80),(84),(89)", f"Lemma B.4 precondition at {label}: v {'≤' if f.precondition else '>'} M"
                + ("" if f.precondition else " (repair: M' = max(M, v))"), v, "<=" if f.precondition else ">", M, [b4])
    P = ch.define("P", add(*[factor_log2(M, D, v) for _, M, D, v, _ in fdefs]), "log2 of the product (90)")
    MD = [mul(op("max", M, v), D) for _, M, D, v, _ in fdefs]
    S = ch.define("S", add(*MD), "Σ M'·D")
    if amgm_is_equality(fs):
        for k in range(1, len(MD)):
            ch.step("(90)", "weighted AM–GM is an equality: all ratios M'D/v are equal", div(MD[k], fdefs[k][3]), "==",
                    div(MD[0], fdefs[0][3]))
    else:
        ch.step("(90)", "weighted AM–GM: log2 Π(8eM'D/v)^v ≤ W̄·log2(8e·ΣM'D/W̄)", P, "<=",
                mul(Wbar, add(log2(div(mul("8", S), Wbar)), LOG2E)), [ch.premise("weighted AM–GM inequality",
                    "Π (a_i/w_i)^{w_i} ≤ (Σa_i/Σw_i)^{Σw_i} for a_i, w_i > 0", "(90)")])
    n3N = mul(pw("n", 3), "N")
    lin = add(*[add(mul(8 * l, H), mul(4 * l, q)) for l in range(1, L + 1)])
    s2W = add(*[mul("2", f"W_{l}") for l in range(1, L + 1)])
    s2Wp = add(*[mul("2", f"W_{l - 1}") for l in range(1, L + 1)])
    MDl = add(*[mul(M, D) for _, M, D, _, _ in fdefs[:-1]])
    ch.step("(93)", "Σ_l[n³HN(8l−4) + nqN·4l] ≤ n³N·Σ_l(8lH + 4lq)", MDl, "<=", mul(n3N, lin))
    ch.step("(93)", "Σ_l(8lH + 4lq) ≤ Σ_l 2W_l", lin, "<=", s2W)
    ch.step("(93)", "Σ_l 2W_l ≤ 2W + Σ_l 2W_{l−1}", s2W, "<=", add(mul("2", "W"), s2Wp))
    ch.step("(93)", "2W + Σ_l 2W_{l−1} ≤ 2W̄", add(mul("2", "W"), s2Wp), "<=", mul("2", Wbar))
    ch.step("(93)", "4L + 2 ≤ 4W̄", 4 * L + 2, "<=", mul("4", Wbar))
    ch.step("(93)", "nN·(4L+2) ≤ 4n³N·W̄", mul("M_out", "D_out"), "<=", mul("4", n3N, Wbar))
    ch.step("(93)", "Σ M·D ≤ 6n³N·W̄ (the 8e of 8e·ΣMD ≤ 48e·n³N·W̄ cancels)",
            add(*[mul(M, D) for _, M, D, _, _ in fdefs]), "<=", mul("6", n3N, Wbar))
    b94 = ch.define("b94", mul(Wbar, log2(mul("48", E, n3N))))
    if 8 * sum(f.M * f.D for f in fs) != 48 * n ** 3 * N * sum(f.v for f in fs):
        ch.step("(94)", "W̄·log2(8e·ΣMD/W̄) ≤ W̄·log2(48e·n³N)",
                mul(Wbar, log2(div(mul("8", E, add(*[mul(M, D) for _, M, D, _, _ in fdefs])), Wbar))), "<=", b94)
    else:
        ch.step("(94)", "8·ΣMD/W̄ = 48·n³N (equality)", div(mul("8", add(*[mul(M, D) for _, M, D, _, _ in fdefs])),
                                                          Wbar), "==", mul("48", n3N))
    ch.step("(95)", "48e·n³N ≤ (48e·nN)³", mul("48", E, n3N), "<=", pw(mul("48", E, "nN"), 3))
    b95 = ch.define("b95", mul("3", Wbar, log2(mul("48", E, "nN"))))
    ch.step("(95)", "W̄·log2(48e·n³N) ≤ 3W̄·log2(48e·nN)", b94, "<=", b95)
    sW = add(*[f"W_{l}" for l in range(1, L + 1)])
    ch.step("(96)", "W̄ ≤ W + 2Σ_l W_l", Wbar, "<=", add("W", mul("2", sW)))
    ch.step("(96)", "W + 2Σ_l W_l ≤ W + 2LW", add("W", mul("2", sW)), "<=", add("W", mul(2 * L, "W")))
    ch.step("(96)", "L ≤ W", L, "<=", "W")
    ch.step("(96)", "W + 2LW ≤ 3W²", add("W", mul(2 * L, "W")), "<=", mul("3", pw("W", 2)))
    b96 = ch.define("b96", mul("9", pw("W", 2), log2(mul("48", E, "nN"))), "9W²·log2(48e·nN)")
    if pre_ok:
        ch.step("(90)–(96)", "composed: log2 Π(factors) ≤ 9W²·log2(48e·nN)", P, "<=", b96)
    else:
        ch.step("(96)", "precondition failed ⇒ W > nN (case split)", "W", ">", "nN")
        ch.step("(96)", "trivial case W > nN: nN ≤ 9W²·log2(48e·nN)", "nN", "<=", b96)
    out90 = _decided_ruled_out(n * N, P, ch)
    out96 = _decided_ruled_out(n * N, b96, ch)
    ch.conclusion = (f"for {arch.label()} at n = {n}, N = {N}: shattering nN distinct tokens is "
                     f"{'RULED OUT' if out90 else 'not ruled out'} by (90) and "
                     f"{'RULED OUT' if out96 else 'not ruled out'} by (96); every step of (70)–(96) holds")
    _ = thm
    return ch


def _decided_ruled_out(nN: int, name: str, ch: Chain) -> bool:
    """Add the verdict step nN > bound (ruled out) or nN ≤ bound, as the producer's enclosure says."""
    from ..kernel.limits import Budget
    from ..kernel.enclosure import Undecided
    from ..kernel.expression import definitions
    from ..kernel.lowerbound import ARITY, EXTRA, Parser, evaluate

    budget = Budget()
    rd = Parser(budget, ARITY)
    defs = []
    for d in ch.definitions:
        defs.append((d["name"], rd.expr(d["expr"], d["name"])))
        rd.names.add(d["name"])
    p = 64
    while True:
        try:
            v = evaluate(("name", name), definitions(defs, {}, p, budget, EXTRA), p, budget, EXTRA)
            if v.hi < nN or v.lo >= nN:
                break
        except Undecided:
            pass
        p *= 2
        if p > 1 << 14:
            raise ArithmeticError("undecided verdict")
    out = v.hi < nN
    ch.concluding.append(ch.step("verdict", f"shattering nN distinct tokens is {'RULED OUT' if out else 'not ruled out'}"
                                 f" by {name}", "nN", ">" if out else "<=", name))
    return out


# ---------------------------------------------------------------- Theorem B.2 (next-token)

def next_token_min_chain(N: int, s: int, a: int, ch: Optional[Chain] = None) -> Chain:
    """`.next_token.min_W_next_token_report` as steps: the sign-count bound at s and s − 1, the
    Goldberg–Jerrum bound at a and a − 1, the case split, and both minima against W = 10."""
    from .arch import smallest_W

    ch = ch or Chain(f"Kajitsuka & Sato Theorem 4.2 / B.2 at N = {N}: a Transformer that shatters N sequences of one "
                     f"repeated token has W ≥ max({s}, {a}) parameters")
    _common(ch)
    sc = ch.premise("exactmem docs/lower-bounds.md § Theorem 4.2 (derived with Lemma B.4)", "On N repeated-token "
                    "inputs the Transformer is a ReLU network on one token (eqs. (64)–(65)); Lemma B.4 on its ReLU "
                    "and output signs gives N ≤ (W + W²/8)·log2(48e·N) when W ≤ N.", "(96')")
    gj = ch.premise("Goldberg & Jerrum (1995) Thm 2.3 / Anthony & Bartlett Thm 8.4 (restated)", "VCdim ≤ 4W(t + 2) "
                    "for t arithmetic operations and comparisons per evaluation; t ≤ 3W + 3 for the reduced network, "
                    "so N ≤ 12W² + 20W.", "GJ")
    ch.define("N", N)
    ch.instance.append("N")
    ch.define("lamN", log2(mul("48", E, "N")), "log2(48e·N)")
    ch.define("Wsc", s), ch.define("Wgj", a)
    pos = ch.step("(96')", "log2(48e·N) > 0, so (W + W²/8)·log2(48e·N) increases in W", "lamN", ">", "0")
    sc_rhs = lambda W: mul(add(W, div(pw(W, 2), "8")), "lamN")  # noqa: E731
    ch.concluding += [pos, ch.step("(96')", f"sign-count, W = {s}: N ≤ (W + W²/8)·log2(48e·N)", "N", "<=",
                                   sc_rhs("Wsc"), [sc])]
    if s > 1:
        ch.concluding.append(ch.step("(96')", f"sign-count, W = {s - 1}: N > (W + W²/8)·log2(48e·N)", "N", ">",
                                     sc_rhs(sub("Wsc", 1)), [sc, pos]))
    gj_rhs = lambda W: add(mul("12", pw(W, 2)), mul("20", W))  # noqa: E731
    ch.concluding.append(ch.step("GJ", f"algorithm, W = {a}: N ≤ 12W² + 20W", "N", "<=", gj_rhs("Wgj"), [gj]))
    if a > 1:
        ch.concluding.append(ch.step("GJ", f"algorithm, W = {a - 1}: N > 12W² + 20W (increasing in W ≥ 0)", "N", ">",
                                     gj_rhs(sub("Wgj", 1)), [gj]))
    ch.step("case split", "the minimum is ≤ N (so W > N, where Lemma B.4's precondition may fail, is above it)",
            op("max", "Wsc", "Wgj"), "<=", "N")
    ch.define("W0", smallest_W_expr(), f"W of {SMALLEST_LABEL} (eq. (92))")
    W0 = smallest_W("paper")
    for nm, v in (("Wsc", s), ("Wgj", a)):
        ch.step("(92)", f"min W {'sign-count' if nm == 'Wsc' else 'GJ algorithm'} = {v} "
                f"{'≤' if v <= W0 else '>'} W0" + (": VACUOUS" if v <= W0 else ""), nm, "<=" if v <= W0 else ">", "W0")
    ch.conclusion = (f"every Transformer that shatters N = {N} repeated-token sequences has at least "
                     f"{max(s, a)} parameters (sign count ≥ {s}, Goldberg–Jerrum ≥ {a})")
    return ch


def next_token_arch_chain(arch: Architecture, N: int, convention: str = "paper") -> Chain:
    """[`.next_token.next_token_chain`][exactmem.bounds.next_token_chain] and `.next_token.algorithm_bound_report` as steps."""
    from .counting import amgm_is_equality
    from .next_token import next_token_factors

    ax, L, q = ArchExpr(arch, convention), arch.L, str(arch.q)
    ch = Chain(f"Kajitsuka & Sato Theorem B.2, sign-count bound for {arch.label()} at N = {N}, and the "
               "Goldberg–Jerrum operation count")
    _common(ch)
    b4 = _lemma_b4(ch)
    ch.define("N", N)
    ch.instance.append("N")
    for l in range(L + 1):
        ch.define(f"W_{l}", ax.W_l(l))
    ch.define("W", add(f"W_{L}", ax.e_out))
    fs = next_token_factors(arch, N, convention)
    fd = [(f"ffn{l}", ch.define(f"M{l}", mul("N", q)), ch.define(f"D{l}", 4 * l), ch.define(f"v{l}", ax.ffn_vars(l)),
           ax.cell_ffn_vars(l)) for l in range(1, L + 1)]
    fd.append(("out", ch.define("M_out", "N"), ch.define("D_out", 4 * L + 2), "W", ax.cell_out_vars()))
    for label, M, D, v, cell in fd:
        ch.step("(84),(89)", f"{label}: counted variables v ≥ parameters the polynomials depend on", v, ">=", cell)
    pre = all(f.precondition for f in fs)
    for (label, M, D, v, _), f in zip(fd, fs):
        ch.step("(84),(89)", f"Lemma B.4 precondition at {label}: v {'≤' if f.precondition else '>'} M", v,
                "<=" if f.precondition else ">", M, [b4])
    Wt = ch.define("Wt", add(*[v for _, _, _, v, _ in fd]), "W̃ = Σ v")
    P = ch.define("P", add(*[factor_log2(M, D, v) for _, M, D, v, _ in fd]))
    MD = [mul(op("max", M, v), D) for _, M, D, v, _ in fd]
    if amgm_is_equality(fs):
        for k in range(1, len(MD)):
            ch.step("(90)", "weighted AM–GM equality: ratios equal", div(MD[k], fd[k][3]), "==", div(MD[0], fd[0][3]))
    else:
        ch.step("(90)", "weighted AM–GM: log2 Π(8eM'D/v)^v ≤ W̃·log2(8e·ΣM'D/W̃)", P, "<=",
                mul(Wt, add(log2(div(mul("8", add(*MD)), Wt)), LOG2E)))
    sW = add(*[f"W_{l}" for l in range(1, L + 1)])
    ch.step("(93')", "Σ_l N·q·4l ≤ 2N·Σ_l W_l", add(*[mul(M, D) for _, M, D, _, _ in fd[:-1]]), "<=", mul("2", "N", sW))
    ch.step("(93')", "Σ_l W_l ≤ W̃ = W + Σ_l v_l", sW, "<=", Wt)
    ch.step("(93')", "N·(4L+2) ≤ 4N·W̃", mul("N", 4 * L + 2), "<=", mul("4", "N", Wt))
    ch.step("(93')", "Σ M·D ≤ 6N·W̃ (so K ≤ (48e·N)^W̃)", add(*[mul(M, D) for _, M, D, _, _ in fd]), "<=",
            mul("6", "N", Wt))
    ch.step("(96')", "W̃ ≤ W + Σ_l W_l", Wt, "<=", add("W", sW))
    ch.step("(96')", "Σ_l W_l ≤ L·W", sW, "<=", mul(L, "W"))
    ch.step("(96')", "8L ≤ W (each block has ≥ 8 parameters)", 8 * L, "<=", "W")
    ch.step("(96')", "W + LW ≤ W + W²/8", add("W", mul(L, "W")), "<=", add("W", div(pw("W", 2), "8")))
    final = ch.define("final", mul(add("W", div(pw("W", 2), "8")), log2(mul("48", E, "N"))))
    if pre:
        ch.concluding.append(ch.step("(90)–(96')", "composed: log2 Π(factors) ≤ (W + W²/8)·log2(48e·N)", P, "<=", final))
    else:
        ch.concluding.append(ch.step("(96')", "precondition failed ⇒ W > N (case split)", "W", ">", "N"))
        ch.concluding.append(ch.step("(96')", "trivial case: N ≤ (W + W²/8)·log2(48e·N)", "N", "<=", final))
    # Goldberg–Jerrum: operation count t of the reduced network (exact count of W)
    d, m, s, H = (str(x) for x in (arch.d, arch.m, arch.s, arch.H))
    ex = ArchExpr(arch, "exact")
    ch.define("W_exact", ex.W())
    blk = add(mul(H, add(sub(mul("2", s, m), s), sub(mul("2", m, s), m), m)), mul("2", q, m), q, add(mul("2", m, q), m))
    ch.define("t", add(sub(mul("2", m, d), m), mul(L, blk), sub(mul("2", m), "1"), "1"), "operations per evaluation")
    ch.concluding.append(ch.step("GJ", "operations per evaluation t ≤ 3W + 3 (W = exact count)", "t", "<=",
                                 add(mul("3", "W_exact"), "3")))
    ch.concluding.append(ch.step("GJ", "4W(t + 2) ≤ 12W² + 20W", mul("4", "W_exact", add("t", "2")), "<=",
                                 add(mul("12", pw("W_exact", 2)), mul("20", "W_exact"))))
    ch.conclusion = f"every step of the Theorem B.2 sign-count chain holds for {arch.label()} at N = {N}"
    return ch


# --------------------------------------------------------------------------- bits

def bits_chain(pts: int, C: int, W: int, bf: int, be: int, T: int, label: str) -> Chain:
    """`.bits.bits_summary` with W as steps: the fixed-format, exactmem-bits and total-bits minima."""
    ch = Chain(f"bit lower bounds for {label} with C = {C} classes and W = {W} parameters: at least {bf} bits per "
               f"weight (fixed format), {be} bits per weight (exactmem bits), {T} bits in total (exactmem bits)")
    _common(ch)
    r44 = ch.premise(KS + ", Remarks 4.4 and 4.6", "An architecture that realizes every one of the C^N labellings "
                     "takes at least C^N distinct parameter vectors.", "R4.4")
    cnt = ch.premise("exactmem docs/measurement.md, exactmem/bounds/bits.py", "At most R(b) = 3 + (b−2)·2^b "
                     "rationals (b ≥ 2; R(1) = 1) have exactmem bits ≤ b, and at most 4^{T−W}·C(T, W) vectors of W "
                     "rationals have bits summing to ≤ T.", "R4.4'")
    ch.define("pts", pts), ch.define("C", C), ch.define("W", W)
    ch.instance += ["pts", "C", "W"]
    need = ch.define("need", mul("pts", log2("C")), "labelling bits N·log2 C")
    R = lambda b: add("3", mul(b - 2, pw("2", b))) if b >= 2 else "1"  # noqa: E731
    ch.step("R4.4", f"fixed format, b = {bf}: W·b ≥ labelling bits", mul("W", bf), ">=", need, [r44])
    ch.step("R4.4", f"fixed format, b = {bf - 1}: W·b < labelling bits", mul("W", bf - 1), "<", need, [r44])
    ch.step("R4.4'", f"exactmem bits, b = {be}: W·log2 R(b) ≥ labelling bits", mul("W", log2(R(be))), ">=", need, [cnt])
    if be > 1:
        ch.step("R4.4'", f"exactmem bits, b = {be - 1}: W·log2 R(b) < labelling bits (R increasing)",
                mul("W", log2(R(be - 1))), "<", need, [cnt])
    cap = lambda t: add(mul("2", sub(t, "W")), log2(op("binom", t, "W")))  # noqa: E731
    ch.define("T", T)
    ch.step("R4.4'", f"total bits, T = {T}: log2(4^(T−W)·C(T,W)) ≥ labelling bits", cap("T"), ">=", need, [cnt])
    if T > W:
        ch.step("R4.4'", f"total bits, T = {T - 1}: log2(4^(T−W)·C(T,W)) < labelling bits (increasing in T)",
                cap(sub("T", 1)), "<", need, [cnt])
    ch.concluding += [x["id"] for x in ch.steps]  # every step is one of the three minima's two sides
    ch.conclusion = (f"memorizing every labelling of {label} with W = {W} parameters needs ≥ {bf} bits per weight in "
                     f"a fixed format, ≥ {be} exactmem bits per weight, ≥ {T} exactmem bits in total")
    return ch


def bits_only_chain(pts: int, C: int, label: str) -> Chain:
    """Without W: the number of labelling bits N·log2 C as a definition and one positivity step."""
    ch = Chain(f"memorizing every labelling of {label} with C = {C} classes needs at least N·log2 C bits")
    ch.premise(KS + ", Remarks 4.4 and 4.6", "An architecture that realizes every one of the C^N labellings takes "
               "at least C^N distinct parameter vectors, i.e. log2 C^N = N·log2 C bits.", "R4.4")
    ch.define("pts", pts), ch.define("C", C)
    ch.instance += ["pts", "C"]
    ch.concluding.append(ch.step("R4.4", "labelling bits N·log2 C ≥ 0", mul("pts", log2("C")), ">=", "0"))
    ch.conclusion = f"at least {pts}·log2 {C} bits"
    return ch
