"""The small independent certificate checker (docs/certificate.md): exact semantics of every
layer kind, softmax intervals, planted failures, size claims, malformed input and the CLI."""

import copy
import gzip
import json
from fractions import Fraction as F

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactmem.kernel.checker import (MalformedCertificate, Verdict, canonical_hash, check_certificate,
                                          load_certificate)
from exactmem.cli.check import main

# ---------------------------------------------------------------- building certificates by hand


def R(x) -> str:
    x = F(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def M(rows):
    return [[R(x) for x in r] for r in rows]


def affine(W, b=None, relu=False):
    return {"type": "affine", "W": M(W), "b": None if b is None else [R(x) for x in b], "relu": relu}


def ff(W1, b1, W2, b2, residual=True):
    return {"type": "feedforward", "W1": M(W1), "b1": [R(x) for x in b1], "W2": M(W2), "b2": [R(x) for x in b2],
            "residual": residual}


def head(WV, WO, WQ=None, WK=None):
    h = {"WV": M(WV), "WO": M(WO)}
    if WQ is not None:
        h["WQ"], h["WK"] = M(WQ), M(WK)
    return h


def attention(heads, kind="hardmax", residual=False, query="all", keys="all"):
    return {"type": "attention", "kind": kind, "residual": residual, "query": query, "keys": keys, "heads": heads}


def embed(E, P=None):
    return {"type": "embed", "E": M(E), "P": None if P is None else M(P)}


def model(layers, dim=None, vocab=None, position="last", decode="identity"):
    inp = {"type": "tokens", "vocab": vocab} if vocab is not None else {"type": "vectors", "dim": dim}
    return {"input": inp, "layers": layers, "readout": {"position": position, "decode": decode}}


def fmt_answer(y, decode):
    if decode == "argmax" or y is None:
        return y
    return [fmt_answer(v, decode) for v in y] if isinstance(y, (list, tuple)) else R(y)


def cert(mdl, inputs, labels, outputs="labels", claims=(), error_bound=None, max_precision=256):
    """A valid-looking certificate dict (hash stamped); ``outputs`` defaults to the labels."""
    mdl, inputs, labels = copy.deepcopy((mdl, inputs, labels))
    dec = mdl["readout"]["decode"]
    if mdl["input"]["type"] == "vectors":
        inputs = [[[R(v) for v in tok] for tok in seq] for seq in inputs]
    labels_j = [fmt_answer(y, dec) for y in labels]
    outs = copy.deepcopy(labels_j) if outputs == "labels" else [fmt_answer(y, dec) for y in outputs]
    doc = {"format": "exactmem-certificate", "version": 1, "theorem": "test.thm", "instance": "tiny", "seed": 0,
           "model": mdl, "dataset": {"inputs": inputs, "labels": labels_j}, "outputs": outs,
           "claims": [{"quantity": q, "op": op, "bound": R(b), "source": "test"} for q, op, b in claims],
           "check": {"error_bound": None if error_bound is None else R(error_bound), "max_precision": max_precision},
           "meta": {"producer": "tests", "seconds": 0.25}}
    doc["hash"] = canonical_hash(doc)
    return doc


def rehash(doc):
    doc["hash"] = canonical_hash(doc)
    return doc


# ---------------------------------------------------------------- an independent tiny evaluator (no softmax)


def _mv(W, z, num=F):
    return [sum((num(w) * x for w, x in zip(row, z)), num(0)) for row in W]


def _mpf(x):
    x = F(x)
    return mpmath.mpf(x.numerator) / x.denominator


def ref_forward(mdl, seq, num=F):
    """Plain evaluation straight from the spec; returns the list of output columns.

    ``num=F`` is exact (softmax not allowed); ``num=_mpf`` evaluates in mpmath (softmax allowed).
    """
    Z = list(seq) if mdl["input"]["type"] == "tokens" else [[num(x) for x in tok] for tok in seq]
    zero = num(0)
    for L in mdl["layers"]:
        t = L["type"]
        if t == "embed":
            P = L.get("P")
            Z = [[num(e) + (num(P[s][i]) if P else 0) for i, e in enumerate(L["E"][tok])] for s, tok in enumerate(Z)]
        elif t == "affine":
            Z = [[(max(v, zero) if L["relu"] else v) for v in
                  (y + (num(b) if L["b"] else 0) for y, b in zip(_mv(L["W"], z, num), L["b"] or [0] * len(L["W"])))]
                 for z in Z]
        elif t == "feedforward":
            out = []
            for z in Z:
                h = [max(v + num(b), zero) for v, b in zip(_mv(L["W1"], z, num), L["b1"])]
                y = [v + num(b) for v, b in zip(_mv(L["W2"], h, num), L["b2"])]
                out.append([a + c for a, c in zip(y, z)] if L["residual"] else y)
            Z = out
        else:
            n, out = len(Z), []
            for j in ([n - 1] if L["query"] == "last" else range(n)):
                K = [k for k in range(n) if L["keys"] == "all" or k != j]
                o = list(Z[j]) if L["residual"] else None
                for h in L["heads"]:
                    if L["kind"] == "uniform":
                        w = {k: num(1) / len(K) for k in K}
                    else:
                        q = _mv(h["WQ"], Z[j], num)
                        sc = {k: sum((a * b for a, b in zip(_mv(h["WK"], Z[k], num), q)), zero) for k in K}
                        best = max(sc.values())
                        if L["kind"] == "softmax":
                            assert num is not F
                            e = {k: mpmath.exp(sc[k] - best) for k in K}
                            w = {k: e[k] / sum(e.values()) for k in K}
                        else:
                            I = [k for k in K if sc[k] == best]
                            w = {k: num(1) / len(I) for k in I}
                    mixed = [sum((w[k] * Z[k][i] for k in w), zero) for i in range(len(Z[j]))]
                    c = _mv(h["WO"], _mv(h["WV"], mixed, num), num)
                    o = c if o is None else [a + b for a, b in zip(o, c)]
                out.append(o)
            Z = out
    return Z


def ref_answer(mdl, seq):
    """The decoded output: column(s) for identity, strict argmax index (None on a tie) for argmax."""
    Z = ref_forward(mdl, seq)
    cols = Z[-1:] if mdl["readout"]["position"] == "last" else Z
    if mdl["readout"]["decode"] == "argmax":
        res = []
        for c in cols:
            best = max(c)
            res.append(c.index(best) if c.count(best) == 1 else None)
    else:
        res = cols
    return res[0] if mdl["readout"]["position"] == "last" else res


def check(doc, **kw) -> Verdict:
    return check_certificate(doc, **kw)


# ---------------------------------------------------------------- hand-computed exact examples


def test_affine_relu_hand_computed_and_measured():
    mdl = model([affine([[1, -1], [2, 1]], [F(1, 2), -3], relu=True)], dim=2)
    # [1,2]: [1-2+1/2, 2+2-3] = [-1/2, 1] -> ReLU [0, 1];  [3,-1]: [9/2, 2]
    doc = cert(mdl, [[[1, 2]], [[3, -1]]], [[0, 1], [F(9, 2), 2]])
    v = check(doc)
    assert (v.status, v.exit_code, v.precision, v.witness) == ("CERTIFIED", 0, None, None)
    assert v.measured == {"n_params": 6, "n_nonzero": 6, "width": 2, "relu_depth": 1, "attention_layers": 0,
                          "depth": 1, "max_bits": 3, "total_bits": 15, "input_dim": 2, "n_examples": 2,
                          "n_rows": 2, "seq_len": 1, "label_classes": 2, "distinct_tokens": 2}
    bad = cert(mdl, [[[1, 2]], [[3, -1]]], [[0, 1], [F(9, 2), 3]])
    v = check(bad)
    assert v.status == "REFUTED" and v.exit_code == 1
    assert v.witness == {"example": 1, "expected": ["9/2", "3"], "got": ["9/2", "2"], "reason": "label"}
    assert v.to_json()["witness"]["example"] == 1 and v.to_json()["status"] == "REFUTED"


@pytest.mark.parametrize("residual,expected", [(True, [5, F(1, 3)]), (False, [4, F(-5, 3)])])
def test_feedforward_hand_computed(residual, expected):
    # z = [1, 2]: h = ReLU(1 + 2 - 1) = 2; W2 h + b2 = [4, -2 + 1/3]; residual adds z
    mdl = model([ff([[1, 1]], [-1], [[2], [-1]], [0, F(1, 3)], residual)], dim=2)
    v = check(cert(mdl, [[[1, 2]]], [expected]))
    assert v.status == "CERTIFIED"
    assert v.measured["width"] == 2 and v.measured["relu_depth"] == 1 and v.measured["n_params"] == 7


TIE_TOKENS = [[1, 10], [2, 20], [2, 40], [1, 0]]


def _pick_head(WQ=((1, 0),), WK=((1, 0),)):
    # scores a_k * a_j on the first coordinate; the value is the second coordinate
    return head([[0, 1]], [[1]], WQ, WK)


def test_hardmax_ties_share_mass_uniformly():
    # query (1, 0): scores [1, 2, 2, 1] -> argmax set {1, 2} -> value (20 + 40) / 2
    mdl = model([attention([_pick_head()], "hardmax", query="last")], dim=2)
    assert check(cert(mdl, [TIE_TOKENS], [[30]])).status == "CERTIFIED"
    assert check(cert(mdl, [TIE_TOKENS], [[40]])).status == "REFUTED"


def test_uniform_equals_hardmax_with_zero_scores():
    mean = F(10 + 20 + 40 + 0, 4)
    uni = model([attention([head([[0, 1]], [[1]])], "uniform", query="last")], dim=2)
    zero = model([attention([_pick_head([[0, 0]], [[0, 0]])], "hardmax", query="last")], dim=2)
    for mdl in (uni, zero):
        assert ref_answer(mdl, TIE_TOKENS) == [mean]
        assert check(cert(mdl, [TIE_TOKENS], [[mean]])).status == "CERTIFIED"
    assert check(cert(uni, [TIE_TOKENS], [[30]])).status == "REFUTED"


def test_query_last_with_keys_others():
    toks = [[1, 10], [2, 20], [5, 40]]
    # query a=5: all keys -> scores [5, 10, 25] -> 40;  others -> [5, 10] -> 20
    for keys, want in (("all", 40), ("others", 20)):
        mdl = model([attention([_pick_head()], "hardmax", query="last", keys=keys)], dim=2)
        assert check(cert(mdl, [toks], [[want]])).status == "CERTIFIED"
    # query all, keys others, seq2seq: j=0 -> {1,2} scores 2,5 -> 40; j=1 -> {0,2} 2,10 -> 40; j=2 -> {0,1} -> 20
    mdl = model([attention([_pick_head()], "hardmax", keys="others")], dim=2, position="all")
    assert check(cert(mdl, [toks], [[[40], [40], [20]]])).status == "CERTIFIED"
    assert ref_answer(mdl, toks) == [[40], [40], [20]]


def test_seq2seq_readout_all_with_residual():
    # 1-dim tokens 1, 2, 4: every query (positive) attends to the largest key, 4; residual adds itself
    mdl = model([attention([head([[1]], [[1]], [[1]], [[1]])], "hardmax", residual=True)], dim=1, position="all")
    assert check(cert(mdl, [[[1], [2], [4]]], [[[5], [6], [8]]])).status == "CERTIFIED"
    v = check(cert(mdl, [[[1], [2], [4]]], [[[5], [7], [8]]]))
    assert v.status == "REFUTED"
    assert v.witness == {"example": 0, "position": 1, "expected": ["7"], "got": ["6"], "reason": "label"}


EMB = embed([[1, 0], [0, 1], [1, 1]], [[0, 0], [10, 0], [0, 10]])


def test_embed_with_positions():
    # tokens [2, 0, 1] -> E + P: [1, 1], [11, 0], [0, 11]; then [1, 2] . z -> 3, 11, 22
    seq = [2, 0, 1]
    assert check(cert(model([EMB, affine([[1, 2]])], vocab=3, position="all"), [seq],
                      [[[3], [11], [22]]])).status == "CERTIFIED"
    assert check(cert(model([EMB, affine([[1, 2]])], vocab=3), [seq], [[22]])).status == "CERTIFIED"
    arg = model([EMB, affine([[1, 0], [0, 1]])], vocab=3, decode="argmax")
    assert check(cert(arg, [seq, [1, 0]], [1, 0])).status == "CERTIFIED"  # [1, 0] -> [0,1]+[10,0] = [10, 1]
    # position 0 is [1, 1]: a tie, never a strict argmax
    v = check(cert(model([EMB, affine([[1, 0], [0, 1]])], vocab=3, position="all", decode="argmax"), [seq],
                   [[0, 0, 1]]))
    assert v.status == "REFUTED" and v.witness["position"] == 0 and v.witness["got"] == ["1", "1"]
    no_pos = model([embed([[1, 0], [0, 1], [1, 1]]), affine([[1, 2]])], vocab=3, position="all")
    assert check(cert(no_pos, [seq], [[[3], [1], [2]]])).status == "CERTIFIED"
    with pytest.raises(MalformedCertificate, match="longer than the 3 rows"):
        check(cert(model([EMB, affine([[1, 2]])], vocab=3), [[0, 1, 2, 0]], [[0]]))


def test_tall_layers_with_constant_columns():
    # 17 x 2: column 0 constant (a scalar update), column 1 varied; inputs with 0 and 1 entries
    W = [[1, F(k, 3)] for k in range(17)]
    b = [F(-k, 2) for k in range(17)]
    mdl = model([affine(W, b, relu=True), affine([[1] * 17], [0])], dim=2)
    seqs = [[[0, 0]], [[1, 0]], [[0, 1]], [[F(5, 2), -1]], [[3, F(2, 7)]]]
    outs = [ref_answer(mdl, s) for s in seqs]
    assert sorted({o[0] for o in outs}) == [0, F(3, 2), 5, F(38, 3)]
    assert check(cert(mdl, seqs, outs)).status == "CERTIFIED"
    v = check(cert(mdl, seqs, outs[:3] + [[outs[3][0] + 1]] + outs[4:]))
    assert v.status == "REFUTED" and v.witness["example"] == 3


def test_equal_logits_are_not_a_strict_argmax():
    mdl = model([affine([[1], [1], [0]])], dim=1, decode="argmax")
    v = check(cert(mdl, [[[5]], [[-2]]], [0, 2]))
    assert v.status == "REFUTED" and v.witness == {"example": 0, "expected": 0, "got": ["5", "5", "0"],
                                                   "reason": "label"}


def test_error_bound_on_an_exact_model():
    mdl = model([affine([[F(1, 3)]])], dim=1)
    assert check(cert(mdl, [[[1]]], [[0]], outputs=[[F(1, 3)]], error_bound=F(1, 3))).status == "CERTIFIED"
    v = check(cert(mdl, [[[1]]], [[0]], outputs=[[F(1, 3)]], error_bound=F(1, 4)))
    assert v.status == "REFUTED" and v.witness["got"] == ["1/3"]


def test_claimed_outputs_must_match():
    mdl = model([affine([[2]], [1])], dim=1)
    v = check(cert(mdl, [[[1]], [[2]]], [[3], [5]], outputs=[[3], [6]]))
    assert v.status == "REFUTED"
    assert v.witness == {"example": 1, "expected": ["6"], "got": ["5"], "reason": "outputs"}
    arg = model([affine([[1], [-1]])], dim=1, decode="argmax")
    v = check(cert(arg, [[[1]], [[-1]]], [0, 1], outputs=[0, 0]))
    assert v.status == "REFUTED" and v.witness["example"] == 1 and v.witness["reason"] == "outputs"


# ---------------------------------------------------------------- claims and measured quantities


def test_measured_quantities_and_claims():
    att = attention([head([[1, 0]], [[1], [0]], [[1, 0], [0, 1], [1, 1]], [[1, 0], [0, 1], [1, 1]]),
                     head([[0, 1], [1, 0]], [[1, 1], [0, 1]], [[0, 1]], [[1, 0]])], "softmax", residual=True)
    mdl = model([affine([[0, 1], [-3, F(1, 2)], [F(5, 8), 1]], relu=True), affine([[1, 1, 1], [0, 0, 1]]), att,
                 ff([[1, 1]], [0], [[1], [1]], [0, 0])], dim=2, decode="argmax")
    doc = cert(mdl, [[[1, 1]]], [0], claims=[("width", "<=", 4), ("depth", "==", 3)])
    m = check(doc, max_precision=64).measured
    assert m["n_params"] == 6 + 6 + (2 + 2 + 6 + 6) + (4 + 4 + 2 + 2) + (2 + 1 + 2 + 2)  # affines, heads, ff
    assert m["n_nonzero"] == m["n_params"] - (1 + 2 + (1 + 1 + 2 + 2) + (2 + 1 + 1 + 1) + 3)
    assert m["width"] == 4  # s*H = 3 + 1, v*H = 1 + 2, outputs 3
    assert (m["relu_depth"], m["attention_layers"], m["depth"]) == (2, 1, 3)
    assert m["max_bits"] == 7  # 5/8: 1 + LEN(5) + LEN(8) - 1
    for q, op, bound, ok in [("width", "==", 4, True), ("width", "<", 4, False), ("width", ">", F(7, 2), True),
                             ("max_bits", "<=", 6, False), ("n_examples", ">=", 1, True), ("depth", "<", 3, False)]:
        v = check(rehash({**doc, "claims": [{"quantity": q, "op": op, "bound": R(bound)}]}), max_precision=64)
        if ok:
            assert v.status != "REFUTED"
        else:
            assert v.status == "REFUTED"
            assert v.witness == {"claim": {"quantity": q, "op": op, "bound": R(bound)}, "bound": R(bound),
                                 "measured": str(m[q])}


def test_bits_convention():
    mdl = model([affine([[0, 1, -3, F(1, 2), F(5, 8), F(-7, 3)]])], dim=6)
    m = check(cert(mdl, [[[0] * 6]], [[0]])).measured
    assert m["max_bits"] == 1 + 3 + 4 - 1 and m["total_bits"] == 1 + 2 + 3 + 3 + 7 + 5
    assert m["n_nonzero"] == 5


# ---------------------------------------------------------------- softmax: intervals, precision, UNKNOWN

SOFT = attention([head([[1]], [[1]], [[1]], [[1]])], "softmax", query="last")


def test_softmax_argmax_certified_and_refuted():
    # tokens 0, 1; query 1: p = (1, e)/(1+e); output e/(1+e) ~ 0.731; classes [o, 1/2 - o]
    mdl = model([SOFT, affine([[1], [-1]], [0, F(1, 2)])], dim=1, decode="argmax")
    v = check(cert(mdl, [[[0], [1]]], [0]))
    assert v.status == "CERTIFIED" and v.precision == 64
    v = check(cert(mdl, [[[0], [1]]], [1]))
    assert v.status == "REFUTED" and v.witness["example"] == 0
    (l0, h0), (l1, h1) = [[F(x) for x in iv] for iv in v.witness["got"]]
    with mpmath.workprec(300):
        true = mpmath.e / (1 + mpmath.e)
        assert mpmath.mpf(l0.numerator) / l0.denominator <= true <= mpmath.mpf(h0.numerator) / h0.denominator
    assert l0 >= h1  # the interval decides the failure
    assert h0 - l0 < F(1, 2 ** 60)


def test_softmax_identity_needs_and_uses_error_bound():
    mdl = model([SOFT], dim=1)
    approx = F(7310585786, 10 ** 10)  # e/(1+e) = 0.73105857863000...
    assert check(cert(mdl, [[[0], [1]]], [[approx]], outputs=[None], error_bound=F(1, 10 ** 9))).status == "CERTIFIED"
    v = check(cert(mdl, [[[0], [1]]], [[approx]], outputs=[None], error_bound=F(1, 10 ** 12)))
    assert v.status == "REFUTED" and v.precision == 64
    with pytest.raises(MalformedCertificate, match="error_bound"):
        check(cert(mdl, [[[0], [1]]], [[approx]], outputs=[None]))
    # tall layers after the softmax (interval column path): sum of (1 or 2) * o + k = 24 o + 120
    tall = model([SOFT, affine([[1]] * 8 + [[2]] * 8, list(range(16)), relu=True), affine([[1] * 16])], dim=1)
    label = [[24 * approx + 120]]
    assert check(cert(tall, [[[0], [1]]], label, outputs=[None], error_bound=F(1, 10 ** 8))).status == "CERTIFIED"
    assert check(cert(tall, [[[0], [1]]], label, outputs=[None], error_bound=F(1, 10 ** 12))).status == "REFUTED"
    with pytest.raises(MalformedCertificate, match=r"outputs\[0\]: must be null"):
        check(cert(mdl, [[[0], [1]]], [[approx]], outputs=[[approx]], error_bound=F(1, 10 ** 9)))


def _close_call(label):
    # tokens (1, 150), (0, 1); query 1 scores the keys 150 and 1: output p_0 = 1/(1 + e^-149) = 1 - 2^-214.96..
    # class 0 = p_0, class 1 = 1 - 2^-210: class 0 wins by less than 2^-209
    att = attention([head([[1, 0]], [[1]], [[0, 1]], [[0, 1]])], "softmax", query="last")
    mdl = model([att, affine([[1], [0]], [0, 1 - F(1, 2 ** 210)])], dim=2, decode="argmax")
    return cert(mdl, [[[1, 150], [0, 1]]], [label], max_precision=256)


def test_softmax_undecidable_at_low_precision_is_unknown():
    v = check(_close_call(0), max_precision=128)
    assert (v.status, v.exit_code, v.witness, v.precision) == ("UNKNOWN", 2, None, 128)
    v = check(_close_call(0))
    assert v.status == "CERTIFIED" and v.precision == 256
    v = check(_close_call(1), max_precision=64)
    assert v.status == "UNKNOWN"
    v = check(_close_call(1))
    assert v.status == "REFUTED" and v.precision == 256


def test_hardmax_after_softmax_decides_or_stays_unknown():
    hard = attention([head([[1]], [[1]], [[1]], [[1]])], "hardmax", query="last")
    soft = attention([head([[1]], [[1]], [[1]], [[1]])], "softmax", residual=True)
    # tokens 0, 1: columns 0 + .731.., 1 + .731..; the last (larger) wins clearly -> 1.731; classes [o - 3/2, -o]
    mdl = model([soft, hard, affine([[1], [-1]], [F(-3, 2), 0])], dim=1, decode="argmax")
    assert check(cert(mdl, [[[0], [1]]], [0])).status == "CERTIFIED"
    # equal tokens 1/3: both columns are the same non-point interval, the argmax set is never decided
    v = check(cert(mdl, [[[F(1, 3)], [F(1, 3)]]], [1]), max_precision=128)
    assert v.status == "UNKNOWN"


# ---------------------------------------------------------------- planted failures

MLP_X = [F(5, 2), F(-1), F(9, 2), F(1, 2), F(7, 2), F(3, 2)]
MLP = model([affine([[1], [1], [1], [1]], [0, -1, -2, -3], relu=True), affine([[1, -2, 3, F(-1, 2)]], [F(1, 3)])],
            dim=1)


def _mlp_doc():
    inputs = [[[x]] for x in MLP_X]
    return cert(MLP, inputs, [ref_answer(MLP, [[x]]) for x in MLP_X])


def _attn_doc():
    mdl = model([embed([[1, 0], [0, 2], [3, 1]], [[0, 1], [1, 0], [F(1, 2), F(1, 2)]]),
                 attention([head([[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, 2]], [[2, -1]])], "hardmax",
                           residual=True, query="last"),
                 affine([[1, 0], [0, 1], [1, -1]], [0, F(1, 3), 1])], vocab=3, decode="argmax")
    seqs = [[a, b, c] for a in range(3) for b in range(3) for c in range(3)]
    seqs = [s for s in seqs if ref_answer(mdl, s) is not None]
    return cert(mdl, seqs, [ref_answer(mdl, s) for s in seqs])


def _weight_slots(doc):
    slots = []
    for li, layer in enumerate(doc["model"]["layers"]):
        for key, val in layer.items():
            if key in ("heads",):
                for hi, h in enumerate(val):
                    for hk, hm in h.items():
                        slots += [(li, ("heads", hi, hk), r, c) for r in range(len(hm)) for c in range(len(hm[0]))]
            elif isinstance(val, list) and val:
                if isinstance(val[0], list):
                    slots += [(li, (key,), r, c) for r in range(len(val)) for c in range(len(val[0]))]
                else:
                    slots += [(li, (key,), r, None) for r in range(len(val))]
    return slots


def _first_failure(doc):
    mdl = doc["model"]
    for i, (x, y) in enumerate(zip(doc["dataset"]["inputs"], doc["dataset"]["labels"])):
        got = ref_answer(mdl, x)
        if mdl["readout"]["decode"] == "identity":
            got = [R(v) for v in got]
        if got != y:
            return i
    return None


def test_fixtures_are_valid():
    for doc in (_mlp_doc(), _attn_doc()):
        assert check(doc).status == "CERTIFIED"
    assert len(_attn_doc()["dataset"]["inputs"]) >= 10


nudges = st.fractions(min_value=-3, max_value=3, max_denominator=64).filter(lambda d: d != 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["mlp", "attn"]), nudges)
def test_nudged_weight_refuted_at_first_changed_example(data, which, delta):
    doc = _mlp_doc() if which == "mlp" else _attn_doc()
    li, key, r, c = data.draw(st.sampled_from(_weight_slots(doc)))
    obj = doc["model"]["layers"][li]
    for k in key:
        obj = obj[k]
    row = obj if c is None else obj[r]
    idx = r if c is None else c
    row[idx] = R(F(row[idx]) + delta)
    rehash(doc)
    expected = _first_failure(doc)  # the independent evaluator says where the nudged model first fails
    v = check(doc)
    if expected is None:
        assert v.status == "CERTIFIED"
    else:
        assert v.status == "REFUTED" and v.witness["example"] == expected and v.witness["reason"] == "label"
    if which == "mlp" and (li, key) == (1, ("W",)):
        assert expected is not None  # every output weight matters (x = 9/2 activates all units)


@settings(max_examples=30, deadline=None)
@given(st.data(), st.sampled_from(["mlp", "attn"]))
def test_flipped_label_refuted_at_that_example(data, which):
    doc = _mlp_doc() if which == "mlp" else _attn_doc()
    labels = doc["dataset"]["labels"]
    i = data.draw(st.integers(0, len(labels) - 1))
    if which == "mlp":
        labels[i] = [R(F(labels[i][0]) + data.draw(nudges))]
    else:
        labels[i] = data.draw(st.sampled_from([k for k in range(3) if k != labels[i]]))
    v = check(rehash(doc))
    assert v.status == "REFUTED" and v.witness["example"] == i and v.witness["reason"] == "label"
    assert v.witness["expected"] == labels[i]


def test_lying_output_refuted():
    doc = _mlp_doc()
    doc["outputs"][3] = ["12345"]
    v = check(rehash(doc))
    assert v.status == "REFUTED" and v.witness["example"] == 3 and v.witness["reason"] == "outputs"
    assert v.witness["expected"] == ["12345"] and v.witness["got"] == doc["dataset"]["labels"][3]


# ---------------------------------------------------------------- random models against the reference evaluator

small = st.fractions(min_value=-3, max_value=3, max_denominator=4)


def _mat_st(r, c):
    return st.lists(st.lists(small, min_size=c, max_size=c), min_size=r, max_size=r)


@st.composite
def random_model_and_data(draw):
    d = draw(st.integers(1, 3))
    m, layers, last_seen = d, [], False
    for _ in range(draw(st.integers(1, 3))):
        t = draw(st.sampled_from(["affine", "feedforward", "attention"]))
        if t == "affine":
            k = draw(st.sampled_from([1, 2, 3, 8 * m, 8 * m + 3]))  # tall layers take the column path
            layers.append(affine(draw(_mat_st(k, m)), draw(st.none() | st.lists(small, min_size=k, max_size=k)),
                                 draw(st.booleans())))
            m = k
        elif t == "feedforward":
            q = draw(st.integers(1, 3))
            layers.append(ff(draw(_mat_st(q, m)), draw(_mat_st(1, q))[0], draw(_mat_st(m, q)), draw(_mat_st(1, m))[0],
                             draw(st.booleans())))
        else:
            kind = draw(st.sampled_from(["hardmax", "uniform"]))
            residual = draw(st.booleans())
            m_out = m if residual else draw(st.integers(1, 3))
            heads = []
            for _ in range(draw(st.integers(1, 2))):
                s, v = draw(st.integers(1, 2)), draw(st.integers(1, 2))
                qk = (draw(_mat_st(s, m)), draw(_mat_st(s, m))) if kind == "hardmax" else (None, None)
                heads.append(head(draw(_mat_st(v, m)), draw(_mat_st(m_out, v)), *qk))
            query = draw(st.sampled_from(["all", "last"]))
            keys = "all" if last_seen else draw(st.sampled_from(["all", "others"]))
            last_seen |= query == "last"
            layers.append(attention(heads, kind, residual, query, keys))
            m = m_out
    position = draw(st.sampled_from(["last", "all"]))
    mdl = model(layers, dim=d, position=position)
    seqs = draw(st.lists(st.lists(st.lists(small, min_size=d, max_size=d), min_size=2, max_size=3),
                         min_size=1, max_size=3))
    return mdl, seqs


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_model_and_data())
def test_random_exact_models_agree_with_reference(md):
    mdl, seqs = md
    outs = [ref_answer(mdl, s) for s in seqs]
    assert check(cert(mdl, seqs, outs)).status == "CERTIFIED"
    wrong = copy.deepcopy(outs)
    col = wrong[-1] if mdl["readout"]["position"] == "last" else wrong[-1][-1]
    col[0] += F(1, 7)
    v = check(cert(mdl, seqs, wrong, outputs=outs))
    assert v.status == "REFUTED" and v.witness["example"] == len(seqs) - 1


def _token_layer(draw, m):
    t = draw(st.sampled_from(["affine", "feedforward"]))
    if t == "affine":
        k = draw(st.sampled_from([1, 2, 3, 8 * m]))
        return affine(draw(_mat_st(k, m)), draw(st.none() | st.lists(small, min_size=k, max_size=k)),
                      draw(st.booleans())), k
    q = draw(st.integers(1, 3))
    return ff(draw(_mat_st(q, m)), draw(_mat_st(1, q))[0], draw(_mat_st(m, q)), draw(_mat_st(1, m))[0],
              draw(st.booleans())), m


@st.composite
def random_softmax_model_and_data(draw):
    d = draw(st.integers(1, 2))
    m, layers = d, []
    if draw(st.booleans()):
        layer, m = _token_layer(draw, m)
        layers.append(layer)
    residual = draw(st.booleans())
    m_out = m if residual else draw(st.integers(1, 2))
    heads = [head(draw(_mat_st(v, m)), draw(_mat_st(m_out, v)), draw(_mat_st(s_, m)), draw(_mat_st(s_, m)))
             for v, s_ in [(draw(st.integers(1, 2)), draw(st.integers(1, 2))) for _ in range(draw(st.integers(1, 2)))]]
    layers.append(attention(heads, "softmax", residual, draw(st.sampled_from(["all", "last"])),
                            draw(st.sampled_from(["all", "others"]))))
    m = m_out
    if draw(st.booleans()):
        layer, m = _token_layer(draw, m)
        layers.append(layer)
    mdl = model(layers, dim=d, position=draw(st.sampled_from(["last", "all"])))
    seqs = draw(st.lists(st.lists(st.lists(small, min_size=d, max_size=d), min_size=2, max_size=3),
                         min_size=1, max_size=2))
    return mdl, seqs


def _mp_to_fraction(x):
    sign, man, exp, _ = mpmath.mpf(x)._mpf_
    return (-1) ** sign * F(man) * F(2) ** exp


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_softmax_model_and_data(), st.integers(0, 1))
def test_random_softmax_models_enclose_the_true_outputs(md, which):
    mdl, seqs = md
    eps = F(1, 2 ** 40)
    with mpmath.workprec(400):
        outs = [ref_forward(mdl, s, _mpf) for s in seqs]
    outs = [[[_mp_to_fraction(x) for x in col] for col in o] for o in outs]  # within 2^-380 of the truth
    labels = [o[-1] if mdl["readout"]["position"] == "last" else o for o in outs]
    v = check(cert(mdl, seqs, labels, outputs=[None] * len(seqs), error_bound=eps))
    assert v.status == "CERTIFIED" and v.precision is not None
    # move one coordinate of one example's label by 3 eps: decidedly outside the error bound
    e = len(seqs) - 1 if which else 0
    col = labels[e] if mdl["readout"]["position"] == "last" else labels[e][-1]
    col[0] += 3 * eps
    v = check(cert(mdl, seqs, labels, outputs=[None] * len(seqs), error_bound=eps))
    assert v.status == "REFUTED" and v.witness["example"] == e


# ---------------------------------------------------------------- malformed input


def _base():
    return cert(model([affine([[1, 2], [3, 4]], [0, 1])], dim=2), [[[1, 1]]], [[3, 8]])


def _set_w(value):
    def f(doc):
        doc["model"]["layers"][0]["W"][0][1] = value
    return f


MALFORMED = [
    ("decimal", _set_w("1.5"), r"model\.layers\[0\]\.W\[0\]\[1\]: bad rational '1\.5'"),
    ("json number", _set_w(3), r"model\.layers\[0\]\.W\[0\]\[1\]: expected a rational string.*number 3"),
    ("plus sign", _set_w("+3"), "bad rational"),
    ("space", _set_w("3 "), "bad rational"),
    ("zero denominator", _set_w("1/0"), r"W\[0\]\[1\]: zero denominator in '1/0'"),
    ("short row", lambda d: d["model"]["layers"][0]["W"][1].pop(), r"W\[1\]: wrong shape"),
    ("extra row", lambda d: d["model"]["layers"][0]["W"].append(["1", "1"]), r"\.b: wrong shape"),
    ("missing field", lambda d: d.pop("dataset"), "missing field 'dataset'"),
    ("missing layer field", lambda d: d["model"]["layers"][0].pop("relu"), "missing field 'relu'"),
    ("unknown version", lambda d: d.update(version=3), "unknown certificate version 3"),
    ("v1 body as version 2", lambda d: d.update(version=2), "dataset: missing field .chunks."),
    ("bool version", lambda d: d.update(version=True), "unknown certificate version"),
    ("bad label shape", lambda d: d["dataset"]["labels"][0].pop(), r"dataset\.labels\[0\]: wrong shape"),
    ("bad input", lambda d: d["dataset"]["inputs"][0][0].append("1"), r"dataset\.inputs\[0\]\[0\]: wrong shape"),
    ("unknown quantity", lambda d: d["claims"].append({"quantity": "size", "op": "<=", "bound": "1"}), "claims"),
    ("bad max_precision", lambda d: d["check"].update(max_precision="64"), "check.max_precision"),
    ("unknown layer", lambda d: d["model"]["layers"][0].update(type="conv"), r"model\.layers\[0\]\.type: .conv. is not one of"),
    ("outputs length", lambda d: d["outputs"].append(["1", "1"]), "outputs: wrong shape"),
]


@pytest.mark.parametrize("name,mutate,pattern", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_is_named(name, mutate, pattern, tmp_path, capsys):
    doc = _base()
    mutate(doc)
    rehash(doc)
    with pytest.raises(MalformedCertificate, match=pattern):
        check(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert main(["check", str(path)]) == 3
    err = capsys.readouterr().err
    assert "malformed certificate" in err and "Traceback" not in err


def test_wrong_hash_is_malformed():
    doc = _base()
    doc["dataset"]["labels"][0] = ["3", "9"]  # edited without re-hashing
    with pytest.raises(MalformedCertificate, match="wrong hash"):
        check(doc)
    assert check(rehash(doc)).status == "REFUTED"


def test_canonical_hash_ignores_meta_and_hash():
    doc = _base()
    h = canonical_hash(doc)
    assert h.startswith("sha256:") and len(h) == 7 + 64
    assert canonical_hash({**doc, "meta": {"other": 1}, "hash": "x"}) == h
    assert canonical_hash({**doc, "seed": 1}) != h


def test_truncated_files(tmp_path, capsys):
    text = json.dumps(_base())
    p = tmp_path / "c.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(MalformedCertificate, match="invalid or truncated JSON"):
        load_certificate(str(p))
    g = tmp_path / "c.json.gz"
    g.write_bytes(gzip.compress(text.encode())[:60])
    with pytest.raises(MalformedCertificate, match="truncated or corrupt gzip"):
        load_certificate(str(g))
    for path in (p, g, tmp_path / "missing.json"):
        assert main(["check", str(path)]) == 3
        err = capsys.readouterr().err
        what = "no such certificate file:" if path.name == "missing.json" else "malformed certificate:"
        assert err.startswith("exactmem: error: " + what) and "Traceback" not in err


def test_gzip_and_plain_load_the_same(tmp_path):
    doc = _base()
    g = tmp_path / "c.json.gz"
    g.write_bytes(gzip.compress(json.dumps(doc).encode()))
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc))
    assert load_certificate(str(g)) == load_certificate(str(p)) == doc


# ---------------------------------------------------------------- command line


def test_main_exit_codes_and_json(tmp_path, capsys):
    files = {}
    for name, doc in (("ok", _base()), ("bad", cert(model([affine([[1]])], dim=1), [[[1]]], [[2]])),
                      ("unknown", _close_call(0))):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(doc))
    assert main(["check", str(files["ok"])]) == 0
    assert capsys.readouterr().out.startswith("CERTIFIED")
    assert main([str(files["ok"]), "--json"]) == 0  # "check" may be omitted
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "CERTIFIED" and out["measured"]["n_params"] == 6 and out["precision"] is None
    assert main(["check", str(files["bad"]), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "REFUTED" and out["witness"] == {"example": 0, "expected": ["2"], "got": ["1"],
                                                             "reason": "label"}
    assert main(["check", str(files["bad"])]) == 1
    assert "witness:" in capsys.readouterr().out
    assert main(["check", str(files["unknown"]), "--max-precision", "128"]) == 2
    assert capsys.readouterr().out.startswith("UNKNOWN")
    assert main(["check", str(files["unknown"])]) == 0
    capsys.readouterr()
    assert main(["check", str(files["ok"]), "--max-precision", "zero"]) == 3
    assert main(["check"]) == 3
    assert "Traceback" not in capsys.readouterr().err
