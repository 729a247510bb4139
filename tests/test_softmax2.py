"""Exact base-2 softmax attention (kind ``softmax2``; Dana et al., note §3.7): weights
2^{s_k}/Σ_j 2^{s_j} for integer scores s, in the model, the forward pass, serialization and the
independent checker (docs/certificate.md, docs/model.md)."""

import copy
import json
import time
from fractions import Fraction as F

import pytest

from exactmem.kernel.checker import (SOFTMAX2_MAX_SPREAD, MalformedCertificate, canonical_hash,
                                          check_certificate)
from exactmem.certificate.writer import build_certificate
from exactmem.data.dataset import Dataset
from exactmem.model import (Attention, Head, Model, ModelError, Softmax2Error, Undecided, forward,
                            model_from_json, model_to_json)
from exactmem.model.forward import softmax2_weights
from exactmem.model.layers import ATTENTION_KINDS, Affine
from exactmem.model.layers import SOFTMAX2_MAX_SPREAD as PRODUCER_SPREAD

# Tokens are (value, 1). WQ reads the flag 1 of the query, WK the value of the key, so the
# score of key k is its value: tokens (0, 1), (1, 1), (2, 1) have scores (0, 1, 2).
WQ, WK = [[0, 1]], [[1, 0]]


def _layer(kind="softmax2", WV=((1, 0),), WO=((1,),), residual=False, wq=WQ, wk=WK):
    return Attention([Head(WV=WV, WO=WO, WQ=wq, WK=wk)], kind=kind, residual=residual, query="last")


def _model(kind="softmax2", **kw):
    return Model([_layer(kind, **kw)], input_type="vectors", input_dim=2)


def _seq(*values):
    return tuple((F(v), F(1)) for v in values)


def _doc(model, inputs, labels, outputs=None, max_precision=4096, error_bound=None):
    ds = Dataset(list(inputs), [tuple(lab) if isinstance(lab, (list, tuple)) else lab for lab in labels])
    outs = list(ds.labels) if outputs is None else outputs
    return build_certificate("softmax2.test", "t", 0, model, ds, outs, [], error_bound=error_bound,
                             max_precision=max_precision)


def _rehash(doc):
    doc["hash"] = canonical_hash(doc)
    return doc


# ---------------------------------------------------------------- exact weights (model + forward)

def test_kind_registered_and_exact():
    assert "softmax2" in ATTENTION_KINDS
    m = _model()
    assert not m.has_softmax  # exact: no ball arithmetic
    assert _model("softmax").has_softmax


def test_hand_example_weights_1_2_4_over_7():
    res = forward(_model(), [_seq(0, 1, 2)], trace=True)
    assert res.exact and res.precision is None
    assert res.trace[-1].attention == [[[[F(1, 7), F(2, 7), F(4, 7)]]]]
    assert res.outputs == [[F(0 * 1 + 1 * 2 + 2 * 4, 7)]]  # Σ p_k value_k = 10/7


def test_weights_shift_invariant_and_negative_scores():
    assert softmax2_weights([0, 1, 2]) == [F(1, 7), F(2, 7), F(4, 7)]
    assert softmax2_weights([1000, 1001, 1002]) == [F(1, 7), F(2, 7), F(4, 7)]
    assert softmax2_weights([-3, -3]) == [F(1, 2), F(1, 2)]
    assert softmax2_weights([5, -5]) == [F(1024, 1025), F(1, 1025)]
    assert forward(_model(), [_seq(-7, -6, -5)]).outputs == [[F(-7 * 1 - 6 * 2 - 5 * 4, 7)]]


def test_non_integer_score_is_an_error_naming_layer_example_position():
    with pytest.raises(Softmax2Error, match=r"layer 0 \(softmax2 attention\), example 1: head 0, query position 2, "
                                            r"key position 1: score 1/2 is not an integer"):
        forward(_model(), [_seq(0, 1, 2), _seq(0, F(1, 2), 2)])
    assert issubclass(Softmax2Error, ModelError)


def test_spread_limit_refused_quickly():
    t = time.process_time()  # CPU time: a busy machine does not slow it down
    with pytest.raises(Softmax2Error, match="exceeds the softmax2 limit 2\\^20"):
        forward(_model(), [_seq(0, PRODUCER_SPREAD + 1)])
    assert time.process_time() - t < 5
    w = softmax2_weights([0, PRODUCER_SPREAD])  # at the limit: still exact
    assert w[0] == F(1, 2 ** PRODUCER_SPREAD + 1)


def test_serialization_round_trip():
    m = Model([_layer(residual=True, WO=((1,), (0,))), Affine([[1, 1]])], input_type="vectors", input_dim=2)
    d = model_to_json(m)
    assert d["layers"][0]["kind"] == "softmax2"
    back = model_from_json(json.loads(json.dumps(d)))
    assert back == m and back.layers[0].kind == "softmax2"
    assert forward(back, [_seq(0, 1, 2)]).outputs == forward(m, [_seq(0, 1, 2)]).outputs == [[F(10, 7) + 2 + 1]]


# ---------------------------------------------------------------- the independent checker

def test_checker_certifies_hand_example_exactly():
    v = check_certificate(_doc(_model(), [_seq(0, 1, 2), _seq(3, 3)], [[F(10, 7)], [F(3)]]))
    assert v.status == "CERTIFIED" and v.message.endswith("(exact)") and v.precision is None


def test_checker_refutes_wrong_output_by_the_smallest_amount():
    v = check_certificate(_doc(_model(), [_seq(0, 1, 2)], [[F(10, 7) + F(1, 10 ** 30)]]))
    assert v.status == "REFUTED" and v.witness["got"] == ["10/7"] and v.witness["reason"] == "label"


def test_checker_refutes_nudged_weight():
    doc = _doc(_model(), [_seq(0, 1, 2)], [[F(10, 7)]])
    assert check_certificate(doc).status == "CERTIFIED"
    bad = copy.deepcopy(doc)
    bad["model"]["layers"][0]["heads"][0]["WO"] = [["1000000001/1000000000"]]  # WO nudged by 1e-9
    v = check_certificate(_rehash(bad))
    assert v.status == "REFUTED" and v.witness["reason"] == "label" and v.witness["example"] == 0
    got = F(10, 7) * F(1000000001, 1000000000)
    assert v.witness["got"] == [f"{got.numerator}/{got.denominator}"]


def test_checker_refutes_non_integer_score_with_witness():
    doc = _doc(_model(), [_seq(0, 1, 2), _seq(0, 1, 2)], [[F(10, 7)], [F(10, 7)]])
    bad = copy.deepcopy(doc)
    bad["dataset"]["inputs"][1][1] = ["1/2", "1"]  # key 1 of example 1 now scores 1/2
    v = check_certificate(_rehash(bad))
    assert v.status == "REFUTED"
    assert v.witness == {"example": 1, "reason": "softmax2_score", "layer": 0, "head": 0, "query": 2,
                         "position": 1, "score": "1/2"}
    nudged = copy.deepcopy(doc)
    nudged["model"]["layers"][0]["heads"][0]["WK"] = [["1", "1/3"]]  # a weight nudge that breaks integrality
    v = check_certificate(_rehash(nudged))
    assert v.status == "REFUTED" and v.witness["reason"] == "softmax2_score" and v.witness["example"] == 0


def test_checker_honours_the_kind():
    doc = _doc(_model(), [_seq(0, 1, 2)], [[F(10, 7)]])
    for kind, got in (("hardmax", "2"), ("uniform", "1")):
        bad = copy.deepcopy(doc)
        bad["model"]["layers"][0]["kind"] = kind
        if kind == "uniform":
            for h in bad["model"]["layers"][0]["heads"]:
                h.pop("WQ"), h.pop("WK")
        v = check_certificate(_rehash(bad))
        assert v.status == "REFUTED" and v.witness["got"] == [got]
    unknown = copy.deepcopy(doc)
    unknown["model"]["layers"][0]["kind"] = "softmax3"
    with pytest.raises(MalformedCertificate, match=r"model.layers\[0\].kind: 'softmax3' is not one of"):
        check_certificate(_rehash(unknown))


def test_checker_spread_limit_is_unknown_not_a_hang():
    t = time.process_time()  # CPU time: a busy machine does not slow it down
    big = SOFTMAX2_MAX_SPREAD + 1
    doc = _doc(_model(), [_seq(0, 1, 2), _seq(0, 1, 2)], [[F(10, 7)], [F(10, 7)]])
    doc["dataset"]["inputs"][0][1] = [str(big), "1"]
    v = check_certificate(_rehash(doc))
    assert v.status == "UNKNOWN" and f"spread {big}" in v.message and v.limit == "max_value_bits"
    assert f"exceeds {SOFTMAX2_MAX_SPREAD} (verifier limit max_value_bits; raise it with --max-value-bits" in v.message
    assert time.process_time() - t < 5
    doc["dataset"]["inputs"][1][1] = ["1/2", "1"]  # a refutation later on still wins
    assert check_certificate(_rehash(doc)).status == "REFUTED"


def test_checker_planted_label_flip_on_argmax_model():
    m = Model([_layer(residual=True, WO=((1,), (0,))), Affine([[1, 0], [0, 1]])], input_type="vectors",
              input_dim=2, decode="argmax")
    # outputs: value_last + 10/7-style average vs the flag 1
    doc = _doc(m, [_seq(0, 1, 2), _seq(-3, -2, -1)], [0, 1])
    assert check_certificate(doc).status == "CERTIFIED"
    bad = copy.deepcopy(doc)
    bad["dataset"]["labels"][1] = bad["outputs"][1] = 0
    v = check_certificate(_rehash(bad))
    assert v.status == "REFUTED" and v.witness["example"] == 1 and v.witness["reason"] == "label"


# ---------------------------------------------------------------- after a softmax layer (intervals / balls)

def _mixed_model(wk2, threshold=0):
    """softmax attention (coordinate 0 gets a transcendental average, coordinate 1 stays
    exact), then softmax2 scoring with key matrix ``wk2``; logits (coordinate 0, threshold)."""
    soft = Attention([Head(WV=[[1, 0]], WO=[[1], [0]], WQ=[[0, 1]], WK=[[0, 1]])], kind="softmax", residual=True)
    s2 = Attention([Head(WV=[[1, 0]], WO=[[1], [0]], WQ=[[0, 1]], WK=wk2)], kind="softmax2", residual=True,
                   query="last")
    return Model([soft, s2, Affine([[1, 0], [0, 0]], [0, threshold])], input_type="vectors", input_dim=2,
                 decode="argmax")


def test_softmax2_after_softmax_exact_integer_scores():
    """Tokens (1, 1), (2, 2): the softmax layer gives c_j = x_j + Σ_k p_jk x_k with p_j ∝ e^{f_k f_j};
    the softmax2 layer scores the exact flags f = (1, 2) against f_last = 2, i.e. (2, 4), so its
    weights are (1/5, 4/5) and the logit is c_1 + c_0/5 + 4c_1/5 ≈ 7.53 (uniform weights: ≈ 7.19)."""
    import mpmath

    e = mpmath.e
    c0 = 1 + (1 + 2 * e) / (1 + e)
    c1 = 2 + (1 + 2 * e ** 2) / (1 + e ** 2)
    want = c1 + c0 / 5 + 4 * c1 / 5
    assert 7.5 < want < 7.55
    m = _mixed_model([[0, 1]], threshold=F(184, 25))  # 7.36: between the softmax2 and the uniform value
    x = [(F(1), F(1)), (F(2), F(2))]
    res = forward(m, [x])
    from flint import arb

    assert not res.exact and abs(res.outputs[0][0] - arb(mpmath.nstr(want, 15))) < arb("1e-10")
    v = check_certificate(_doc(m, [x], [0]))
    assert v.status == "CERTIFIED" and v.precision == 64
    v = check_certificate(_doc(m, [x], [1]))
    assert v.status == "REFUTED" and v.witness["reason"] == "label"


def test_softmax2_after_softmax_non_integer_interval_refuted():
    m = _mixed_model([[1, 0]])  # scores read the transcendental coordinate 0
    x = [(F(0), F(1)), (F(1, 3), F(2))]
    with pytest.raises(Softmax2Error, match="is not an integer"):
        forward(m, [x])
    v = check_certificate(_doc(m, [x], [1]))
    assert v.status == "REFUTED" and v.witness["reason"] == "softmax2_score" and v.witness["layer"] == 1
    lo, hi = (F(s) for s in v.witness["score"])
    assert lo < hi and int(lo) == int(hi)  # an interval with no integer inside


def test_softmax2_after_softmax_undecided_integer_interval():
    m = _mixed_model([[1, 0]])
    x = [(F(1), F(1)), (F(1), F(2))]  # coordinate 0 becomes 1 + (p_1 + p_2)·1 = 2: not exact in balls
    with pytest.raises(Undecided):
        forward(m, [x])
    v = check_certificate(_doc(m, [x], [0], max_precision=128))
    assert v.status == "UNKNOWN"


def test_heads_with_different_denominators():
    """Each head's score is (WK z_k)·(WQ z_q) with that head's own matrices (here WK = [1/2, 0],
    WQ = [0, 2] in one head, [1, 0], [0, 1] in the other: both score the value)."""
    h0 = Head(WV=[[1, 0]], WO=[[1]], WQ=[[0, 2]], WK=[["1/2", 0]])
    h1 = Head(WV=[[1, 0]], WO=[[3]], WQ=[[0, 1]], WK=[[1, 0]])
    for heads in ([h0, h1], [h1, h0]):
        m = Model([Attention(heads, kind="softmax2", residual=False, query="last")], input_type="vectors",
                  input_dim=2)
        assert forward(m, [_seq(0, 1, 2)]).outputs == [[F(40, 7)]]  # (1 + 3)·10/7
        labels = [[F(40, 7)], [F(4 * (5 * 4 + 3 * 1 + 4 * 2), 7)]]  # scores (5, 3, 4): weights (4, 1, 2)/7
        v = check_certificate(_doc(m, [_seq(0, 1, 2), _seq(5, 3, 4)], labels))
        assert v.status == "CERTIFIED", v.message


def test_refutation_after_softmax_reports_precision():
    m = _mixed_model([[1, 0]])
    v = check_certificate(_doc(m, [[(F(0), F(1)), (F(1, 3), F(2))]], [1]))
    assert v.status == "REFUTED" and v.precision == 64


def test_huge_exact_weights_serialize():
    """Mode (a)'s exact readouts have entries of ~10^4 decimal digits, past CPython's 4300-digit
    int <-> str limit: format/parse and the certificate round trip must still be exact."""
    from exactmem.arith.numbers import format_rational, parse_rational

    w = F(3 ** 40000 + 1, 2 ** 70001 + 7)  # ~19,000 and ~21,000 digits
    s = format_rational(w)
    assert len(s) > 40000 and parse_rational(s) == w and parse_rational("-" + s) == -w
    m = Model([_layer(WO=((w,),))], input_type="vectors", input_dim=2)
    assert model_from_json(json.loads(json.dumps(model_to_json(m)))) == m
    v = check_certificate(_doc(m, [_seq(0, 1, 2)], [[F(10, 7) * w]]))
    assert v.status == "CERTIFIED"
