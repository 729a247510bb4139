"""The optional fast checking path (fastcheck.py) gives the pure checker's verdicts (token-wise
models and exact hardmax / uniform attention; softmax-like kinds are handed to the pure
checker), and the producer's "compress" engine agrees with the other exact engines."""

import copy
import json
import os
import subprocess
import sys
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactmem.certificate import fastcheck
from exactmem.kernel.checker import check_certificate, check_examples, parse_certificate
from exactmem.certificate.fastcheck import check_certificate_fast, fast_supported
from exactmem.model import Affine, FeedForward, Model, forward
from exactmem.model.affine_stack import AffineStep, ScaledInts, run_stack

from test_checker import affine, attention, cert, embed, ff, head, model, ref_answer, ref_forward, rehash

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

small = st.fractions(min_value=-3, max_value=3, max_denominator=4)
ints = st.integers(-3, 3).map(F)
# equal magnitudes of both signs: both engines add inputs with coefficient ±a before one multiplication
paired = st.sampled_from([F(1), F(-1), F(2), F(-2), F(2 ** 80), F(-(2 ** 80)), F(0)])


def _mat(r, c, el):
    return st.lists(st.lists(el, min_size=c, max_size=c), min_size=r, max_size=r)


@st.composite
def token_wise_model_and_data(draw):
    """Random affine/feedforward stacks, vector or token input, few distinct tokens (so the
    column compression merges), occasional huge weights (the object-integer path)."""
    el = draw(st.sampled_from([small, ints, paired, st.sampled_from([F(0), F(1), F(-1), F(2 ** 70), F(-(3 ** 45)),
                                                                     F(1, 3 ** 60), F(-5, 2 ** 100)])]))
    tokens = draw(st.booleans())
    if tokens:
        vocab, m = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        layers = [embed(draw(_mat(vocab, m, small)), draw(st.none() | _mat(3, m, small)))]
    else:
        m = draw(st.integers(1, 3))
        layers = []
    d = m
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            k = draw(st.integers(1, 4))
            layers.append(affine(draw(_mat(k, m, el)), draw(st.none() | st.lists(el, min_size=k, max_size=k)),
                                 draw(st.booleans())))
            m = k
        else:
            q = draw(st.integers(1, 3))
            layers.append(ff(draw(_mat(q, m, el)), draw(_mat(1, q, el))[0], draw(_mat(m, q, el)),
                             draw(_mat(1, m, el))[0], draw(st.booleans())))
    decode = draw(st.sampled_from(["identity", "argmax"]))
    position = draw(st.sampled_from(["last", "all"]))
    mdl = model(layers, dim=None if tokens else d, vocab=vocab if tokens else None, position=position, decode=decode)
    if tokens:
        tok = st.integers(0, vocab - 1)
    else:
        pool = draw(st.lists(st.lists(small, min_size=d, max_size=d), min_size=1, max_size=3))
        tok = st.sampled_from(pool)
    seqs = draw(st.lists(st.lists(tok, min_size=1, max_size=3), min_size=1, max_size=6))
    return mdl, seqs


def _same(doc):
    a, b = check_certificate(doc), check_certificate_fast(doc)
    assert (a.status, a.witness, a.measured) == (b.status, b.witness, b.measured), (a, b)
    return a


def _pure_not_called(*args, **kw):
    raise AssertionError("the fast path handed this certificate to the pure checker")


def _same_fast(doc):
    """As _same, and the fast path must evaluate the model itself (no hand-off)."""
    a = check_certificate(doc)
    saved, fastcheck.check_examples = fastcheck.check_examples, _pure_not_called
    try:
        b = check_certificate_fast(doc)
    finally:
        fastcheck.check_examples = saved
    assert (a.status, a.witness, a.measured) == (b.status, b.witness, b.measured), (a, b)
    return a


@settings(max_examples=int(os.environ.get("EXACTMEM_HYP", 120)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(token_wise_model_and_data(), st.integers(0, 2))
def test_fast_equals_pure_on_random_token_wise_models(md, how):
    mdl, seqs = md
    outs = [ref_answer(mdl, s) for s in seqs]
    if mdl["readout"]["decode"] == "argmax" and any(o is None or (isinstance(o, list) and None in o) for o in outs):
        return  # ties: labels would be invalid
    if how == 0:
        assert _same(cert(mdl, seqs, outs)).status == "CERTIFIED"
    elif how == 1 and mdl["readout"]["decode"] == "identity":  # a wrong label on the last example
        wrong = copy.deepcopy(outs)
        col = wrong[-1] if mdl["readout"]["position"] == "last" else wrong[-1][-1]
        col[0] += F(1, 7)
        assert _same(cert(mdl, seqs, wrong, outputs=outs)).status == "REFUTED"
    else:  # a failing claim
        assert _same(cert(mdl, seqs, outs, claims=[("n_params", "<", 1)])).status == "REFUTED"


def test_big_weights_and_shared_values():
    """A 300-bit weight read on many tokens with two distinct values; a planted lie is found."""
    big = 2 ** 300 + 1
    mdl = model([affine([[1], [big]], [0, -big], True), affine([[1, -1]], None, False)], dim=1)
    seqs = [[[x % 2 + 1]] for x in range(40)]
    outs = [ref_answer(mdl, s) for s in seqs]
    doc = cert(mdl, seqs, outs)
    assert _same(doc).status == "CERTIFIED"
    doc["outputs"][17] = ["5"]
    assert _same(rehash(doc)).witness == {"example": 17, "expected": ["5"], "got": [outs[17][0] and str(outs[17][0])],
                                          "reason": "outputs"}


def test_doubling_gadget_with_paired_big_coefficients():
    """The bit-extraction step U' = 2U − 2^M (s₁ − s₂), s₁,₂ = σ(U − 2^(M−1) (+1)), on many distinct
    M-bit words (object integers): both engines group the ±2^M terms; a planted lie is found."""
    M = 200
    step = [[2, -(2 ** M), 2 ** M], [2, -(2 ** M), 2 ** M], [2, -(2 ** M), 2 ** M]]
    bias = [0, 1 - 2 ** (M - 1), -(2 ** (M - 1))]
    layers = [affine([[1], [1], [1]], bias, True)] + [affine(step, bias, True) for _ in range(6)] + [
        affine([[1, 0, 0]], None, False)]
    mdl = model(layers, dim=1)
    words = [(7 ** k * 3 ** (k % 5) + k) % 2 ** M for k in range(60)]
    seqs = [[[w]] for w in words]
    outs = [ref_answer(mdl, s) for s in seqs]
    assert outs[5] == [F(words[5] * 2 ** 6 % 2 ** M)]  # six left rotations' worth of doubling, top bits dropped
    doc = cert(mdl, seqs, outs)
    assert _same_fast(doc).status == "CERTIFIED"
    doc["outputs"][33] = [str(outs[33][0] + 1)]
    assert _same_fast(rehash(doc)).witness["example"] == 33
    X = ScaledInts([words], 1)
    raw = [([[1], [1], [1]], bias, True)] + [(step, bias, True)] * 6 + [([[1, 0, 0]], [0], False)]
    steps = [AffineStep.make([[F(x) for x in r] for r in W], [F(x) for x in b], [relu] * len(W)) for W, b, relu in raw]
    assert run_stack(steps, X, backend="compress").out.to_fractions() == run_stack(steps, X,
                                                                                   backend="fraction").out.to_fractions()


def test_cli_check_engine_fast(tmp_path):
    mdl = model([affine([[2]], [1], True)], dim=1)
    seqs = [[[1]], [[2]]]
    doc = cert(mdl, seqs, [ref_answer(mdl, s) for s in seqs])
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc))
    run = subprocess.run([sys.executable, "-m", "exactmem", "check", str(p), "--engine", "fast", "--json"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["status"] == "CERTIFIED" and "fast engine" in json.loads(run.stdout)["message"]


# ----------------------------------------------------------------------------- the "compress" producer engine


@st.composite
def random_stack(draw):
    el = draw(st.sampled_from([small, ints, paired, st.sampled_from([F(0), F(1), F(2 ** 80), F(-1, 2 ** 90)])]))
    m0 = m = draw(st.integers(1, 3))
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        k = draw(st.integers(1, 4))
        W = draw(_mat(k, m, el))
        b = draw(st.lists(el, min_size=k, max_size=k))
        relu = draw(st.lists(st.booleans(), min_size=k, max_size=k))
        steps.append(AffineStep.make(W, b, relu))
        m = k
    pool = draw(st.lists(st.lists(small, min_size=m0, max_size=m0), min_size=1, max_size=4))
    cols = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=12))
    return steps, ScaledInts.from_fractions([list(r) for r in zip(*cols)])


@settings(max_examples=int(os.environ.get("EXACTMEM_HYP", 150)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(random_stack())
def test_compress_engine_equals_fraction_engine(sx):
    steps, X = sx
    a = run_stack(steps, X, backend="compress", trace=True)
    b = run_stack(steps, X, backend="fraction", trace=True)
    assert a.out.to_fractions() == b.out.to_fractions()
    assert [t.to_fractions() for t in a.trace] == [t.to_fractions() for t in b.trace]


def test_compress_in_forward_with_feedforward_layers():
    layers = (Affine(((F(1),), (F(-2),)), (F(1), F(3)), True),
              FeedForward(((F(1), F(1)),), (F(-2),), ((F(3),), (F(-1, 3),)), (F(0), F(1)), True),
              Affine(((F(1), F(2 ** 100)),), None, False))
    mdl = Model(layers, "vectors", 1)
    xs = [((F(v % 5),),) for v in range(30)]
    assert forward(mdl, xs, backend="compress").outputs == forward(mdl, xs, backend="fraction").outputs


# ----------------------------------------------------------------------------- exact attention on the fast path


def _first_failure(mdl, seqs, labels):
    """Index of the first example whose label the reference evaluator does not reproduce."""
    for i, (s, y) in enumerate(zip(seqs, labels)):
        if ref_answer(mdl, s) != y:
            return i
    return None


def _slots(mdl):
    """Every weight entry of a model dict: (layer, key path, row, column or None)."""
    out = []
    for li, layer in enumerate(mdl["layers"]):
        for key, val in layer.items():
            if key == "heads":
                for hi, h in enumerate(val):
                    out += [(li, ("heads", hi, hk), r, c) for hk, hm in h.items() for r in range(len(hm))
                            for c in range(len(hm[0]))]
            elif isinstance(val, list) and val:
                if isinstance(val[0], list):
                    out += [(li, (key,), r, c) for r in range(len(val)) for c in range(len(val[0]))]
                else:
                    out += [(li, (key,), r, None) for r in range(len(val))]
    return out


def _nudge(mdl, slot, delta):
    mdl = copy.deepcopy(mdl)
    li, key, r, c = slot
    obj = mdl["layers"][li]
    for k in key:
        obj = obj[k]
    row, i = (obj, r) if c is None else (obj[r], c)
    row[i] = str(F(row[i]) + delta)
    return mdl


def _flip(mdl, seq, label, at=-1):
    """A wrong copy of one label (identity: +1/7 on a coordinate; argmax: another class)."""
    label = copy.deepcopy(label)
    last = mdl["readout"]["position"] == "last"
    if mdl["readout"]["decode"] == "argmax":
        n_cls = len(ref_forward(mdl, seq)[-1])
        if last:
            return (label + 1) % n_cls
        label[at] = (label[at] + 1) % n_cls
        return label
    col = label if last else label[at]
    col[0] += F(1, 7)
    return label


big = st.sampled_from([F(2 ** 31), F(-(2 ** 31) + 1), F(3 ** 40), F(-(2 ** 61)), F(2 ** 1000 + 1), F(1, 2 ** 40)])


@st.composite
def attention_model_and_data(draw):
    """Random models with hardmax / uniform attention (ties are common: small integer weights
    and repeated tokens), token-wise layers around them, sequences of different lengths."""
    el = draw(st.sampled_from([ints, small, st.one_of(ints, big)]))
    tokens = draw(st.booleans())
    if tokens:
        vocab, m = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        layers = [embed(draw(_mat(vocab, m, ints)), draw(st.none() | _mat(5, m, ints)))]
    else:
        m = draw(st.integers(1, 3))
        layers = []
    d, last_seen, others, n_attn = m, False, False, 0
    for _ in range(draw(st.integers(1, 4))):
        t = draw(st.sampled_from(["affine", "feedforward", "attention", "attention"]))
        if t == "affine":
            k = draw(st.integers(1, 3))
            layers.append(affine(draw(_mat(k, m, el)), draw(st.none() | st.lists(el, min_size=k, max_size=k)),
                                 draw(st.booleans())))
            m = k
        elif t == "feedforward":
            q = draw(st.integers(1, 3))
            layers.append(ff(draw(_mat(q, m, el)), draw(_mat(1, q, el))[0], draw(_mat(m, q, el)),
                             draw(_mat(1, m, el))[0], draw(st.booleans())))
        else:
            n_attn += 1
            kind = draw(st.sampled_from(["hardmax", "uniform"]))
            residual = draw(st.booleans())
            m_out = m if residual else draw(st.integers(1, 3))
            heads = []
            for _ in range(draw(st.integers(1, 2))):
                s, v = draw(st.integers(1, 2)), draw(st.integers(1, 3))
                if kind == "hardmax":
                    zero = draw(st.integers(0, 4)) == 0  # all-zero WQ: every key ties
                    WQ = [[0] * m for _ in range(s)] if zero else draw(_mat(s, m, el))
                    qk = (WQ, draw(_mat(s, m, el)))
                else:
                    qk = (None, None)
                heads.append(head(draw(_mat(v, m, el)), draw(_mat(m_out, v, el)), *qk))
            query = draw(st.sampled_from(["all", "last"]))
            keys = "all" if last_seen else draw(st.sampled_from(["all", "others"]))
            others |= keys == "others"
            last_seen |= query == "last"
            layers.append(attention(heads, kind, residual, query, keys))
            m = m_out
    if not n_attn:
        layers.append(attention([head([[1] * m], [[1]] * m)], "uniform", True))
    decode = draw(st.sampled_from(["identity", "argmax"]))
    if decode == "argmax" and m < 2:
        layers.append(affine([[1] * m, [-1] * m]))  # two classes
    position = draw(st.sampled_from(["last", "all"]))
    mdl = model(layers, dim=None if tokens else d, vocab=vocab if tokens else None, position=position, decode=decode)
    if tokens:
        tok = st.integers(0, vocab - 1)
    else:
        pool = draw(st.lists(st.lists(st.one_of(ints, small), min_size=d, max_size=d), min_size=1, max_size=3))
        tok = st.sampled_from(pool)
    seqs = draw(st.lists(st.lists(tok, min_size=2 if others else 1, max_size=5), min_size=1, max_size=6))
    return mdl, seqs


def _valid(mdl, seqs):
    """The sequences with a well-defined label (argmax: no tie), and their labels."""
    keep = [(s, ref_answer(mdl, s)) for s in seqs]
    if mdl["readout"]["decode"] == "argmax":
        keep = [(s, y) for s, y in keep if y is not None and not (isinstance(y, list) and None in y)]
    return [s for s, _ in keep], [y for _, y in keep]


@settings(max_examples=int(os.environ.get("EXACTMEM_HYP", 150)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(attention_model_and_data(), st.integers(0, 2), st.data())
def test_fast_equals_pure_on_random_attention_models(md, how, data):
    mdl, seqs = md
    seqs, labels = _valid(mdl, seqs)
    if not seqs:
        return
    pos = mdl["readout"]["position"]
    if how == 0:
        assert _same_fast(cert(mdl, seqs, labels)).status == "CERTIFIED"
    elif how == 1:  # one label flipped: refuted at that example, the same witness
        i = data.draw(st.integers(0, len(seqs) - 1))
        wrong = list(labels)
        wrong[i] = _flip(mdl, seqs[i], labels[i], data.draw(st.integers(0, len(labels[i]) - 1)) if pos == "all" else -1)
        v = _same_fast(cert(mdl, seqs, wrong, outputs=labels if mdl["readout"]["decode"] == "identity" else wrong))
        repeated = seqs[i] in seqs[:i]  # the same input earlier with the right label: a conflict comes first
        assert v.status == "REFUTED" and v.witness["example"] == i
        assert v.witness["reason"] == ("conflicting_labels" if repeated else "label")
    else:  # one weight nudged: the first example the reference evaluator gets wrong (an argmax tie
        # included), or certified
        slot = data.draw(st.sampled_from(_slots(mdl)))
        bad = _nudge(mdl, slot, data.draw(st.sampled_from([F(1), F(-1), F(1, 3), F(2 ** 70)])))
        v = _same_fast(cert(bad, seqs, labels))
        first = _first_failure(bad, seqs, labels)
        if first is None:
            assert v.status == "CERTIFIED"
        else:
            assert v.status == "REFUTED" and v.witness["example"] == first


TIE_TOKENS = [[1, 10], [2, 20], [2, 40], [1, 0]]


def _pick_head(WQ=((1, 0),), WK=((1, 0),)):
    return head([[0, 1]], [[1]], WQ, WK)  # score a_k * a_j on the first coordinate, value: the second


def test_hardmax_ties_share_the_mass_on_the_fast_path():
    # query a = 1 (or 2) > 0: argmax {1, 2} (a = 2, twice) -> (20 + 40) / 2 = 30 for every query
    mdl = model([attention([_pick_head()], "hardmax", query="last")], dim=2)
    assert _same_fast(cert(mdl, [TIE_TOKENS], [[30]])).status == "CERTIFIED"
    v = _same_fast(cert(mdl, [TIE_TOKENS], [[40]]))
    assert v.status == "REFUTED" and v.witness["got"] == ["30"]
    # a negative query prefers the smallest key (a = 1 at positions 0 and 3), keys "others":
    # j=0: keys 1,2,3 -> {3} -> 0;  j=1, j=2: {0, 3} -> (10 + 0) / 2;  j=3: keys 0,1,2 -> {0} -> 10
    neg = model([attention([_pick_head([[-1, 0]])], "hardmax", residual=False, keys="others")], dim=2,
                position="all")
    want = [[0], [5], [5], [10]]
    assert ref_answer(neg, TIE_TOKENS) == want
    assert _same_fast(cert(neg, [TIE_TOKENS], [want])).status == "CERTIFIED"
    bad = copy.deepcopy(want)
    bad[1] = [6]
    v = _same_fast(cert(neg, [TIE_TOKENS], [bad]))
    assert v.status == "REFUTED" and v.witness["position"] == 1 and v.witness["got"] == ["5"]
    # with the residual: the token itself is added
    res = model([attention([head([[0, 1]], [[0], [1]], [[-1, 0]], [[1, 0]])], "hardmax", residual=True,
                           keys="others")], dim=2, position="all")
    want_r = [[[t[0], t[1] + w[0]] for t, w in zip(TIE_TOKENS, want)]]
    assert _same_fast(cert(res, [TIE_TOKENS], want_r)).status == "CERTIFIED"


def test_uniform_and_zero_score_hardmax_over_different_lengths():
    """Sequences of lengths 1-4 (keys "all") and 2-4 ("others"): denominators lcm(lengths)."""
    seqs = [[[x], [2 * x + 1], [x - 3], [5]][:n] for x, n in ((1, 1), (2, 2), (3, 3), (4, 4), (-1, 3), (7, 2))]
    for keys in ("all", "others"):
        ss = [s for s in seqs if keys == "all" or len(s) > 1]
        for residual in (False, True):
            for mdl in (model([attention([head([[1]], [[1]])], "uniform", residual, keys=keys)], dim=1, position="all"),
                        model([attention([head([[1]], [[1]], [[0]], [[3]])], "hardmax", residual, keys=keys)], dim=1,
                              position="all")):
                labels = [ref_answer(mdl, s) for s in ss]
                assert _same_fast(cert(mdl, ss, labels)).status == "CERTIFIED"
                wrong = copy.deepcopy(labels)
                wrong[3][-1][0] += F(1, 12)
                v = _same_fast(cert(mdl, ss, wrong))
                assert v.status == "REFUTED" and v.witness["example"] == 3 and v.witness["position"] == len(ss[3]) - 1
    # (2x+1 + x-3 + 5 + x) / 4 at x = 4 with keys all, no residual
    mdl = model([attention([head([[1]], [[1]])], "uniform", False, query="last")], dim=1)
    assert ref_answer(mdl, seqs[3]) == [F(4 + 9 + 1 + 5, 4)]


def test_uniform_with_a_huge_lcm_of_lengths():
    """Lengths 2, 3, 5, …, 53 (primes): the lcm of the key counts exceeds 2^62 (Python-int factors)."""
    primes = [p for p in range(2, 54) if all(p % q for q in range(2, p))]
    seqs = [[[(7 * i + k) % 11 - 5] for k in range(p)] for i, p in enumerate(primes)]
    for query in ("last", "all"):
        mdl = model([affine([[1], [2]], [0, 1], True), attention([head([[1, -1]], [[1], [2]])], "uniform", True, query),
                     affine([[1, 1]])], dim=1, position="last")
        labels = [ref_answer(mdl, s) for s in seqs]
        assert _same_fast(cert(mdl, seqs, labels)).status == "CERTIFIED"
        wrong = copy.deepcopy(labels)
        wrong[-2][0] += F(1, 53)
        v = _same_fast(cert(mdl, seqs, wrong))
        assert v.status == "REFUTED" and v.witness["example"] == len(seqs) - 2


def test_hardmax_scores_and_sums_at_the_int64_boundary():
    """Scores x_j·x_k and per-sequence sums just below and above 2^62 (the int64 path vs Python
    ints) are compared and summed exactly."""
    for c in (2 ** 31 - 2, 2 ** 31 - 1, 2 ** 31, 3 ** 20):
        mdl = model([attention([head([[0, 1]], [[1]], [[1, 0]], [[1, 0]])], "hardmax")], dim=2, position="all")
        # positive queries pick the keys c + 1 (values 3, 4), the negative one the key -c - 1 (value 5)
        toks = [[c, 1], [c, 2], [c + 1, 3], [c + 1, 4], [-c - 1, 5]]
        labels = [[[F(7, 2)]] * 4 + [[5]]]
        assert [ref_answer(mdl, toks)] == labels
        assert _same_fast(cert(mdl, [toks], labels)).status == "CERTIFIED"
        v = _same_fast(cert(mdl, [toks], [[[F(7, 2)]] * 3 + [[3], [5]]]))
        assert v.status == "REFUTED" and v.witness["position"] == 3
    for c in (2 ** 57 - 1, 2 ** 58, 2 ** 60, 2 ** 62 - 1, 2 ** 63):
        for kind in ("uniform", "hardmax"):
            qk = (None, None) if kind == "uniform" else ([[0]], [[1]])
            mdl = model([attention([head([[1]], [[1]], *qk)], kind, False, keys="others")], dim=1, position="all")
            seqs = [[[c], [c - 1], [c - 2], [-c]], [[c], [c]]]
            labels = [ref_answer(mdl, s) for s in seqs]
            assert labels[1] == [[c], [c]]
            assert _same_fast(cert(mdl, seqs, labels)).status == "CERTIFIED"
            wrong = copy.deepcopy(labels)
            wrong[0][2][0] += 1
            v = _same_fast(cert(mdl, seqs, wrong))
            assert v.status == "REFUTED" and (v.witness["example"], v.witness["position"]) == (0, 2)


def test_multi_head_mixing_stages():
    """Heads whose fewest rows are before WV, between WV and WO, or after WO (the mix moves)."""
    W2 = [[1, -1], [2, 1]]
    res_heads = [head([[1, 0]], [[1], [-1]]),  # v = 1 < m = m_out = 2: mixed between WV and WO
                 head([[1, 1], [0, 1], [1, 0]], [[1, 0, 2], [0, 1, 1]]),  # m = 2 <= v, m_out: the input is mixed
                 head([[1, 0], [0, 1], [1, 1]], [[1, 1, 1], [1, 1, 1]])]
    out_heads = [head([[1, 0], [0, 1]], [[1, 2]]),  # m_out = 1 < v = m = 2: mixed after WO
                 head([[3, 1]], [[-1]]),  # v = m_out = 1 < m: mixed between WV and WO
                 head([[1, 0], [0, 1], [1, 1]], [[1, 1, -1]])]
    seqs = [[[1, 2], [3, -1], [0, 0]], [[2, 2]], [[1, 1], [-5, 4]], [[1, 2], [1, 2], [0, 1], [4, 4]]]
    for kind in ("uniform", "hardmax"):
        for residual, heads in ((True, res_heads), (False, out_heads)):
            hs = heads if kind == "uniform" else [dict(h, WQ=M_(W2), WK=M_([[1, 0], [0, 1]])) for h in heads]
            tail = [affine([[1, 2]], [1], True)] if residual else []
            mdl = model([attention(hs, kind, residual)] + tail, dim=2, position="all")
            labels = [ref_answer(mdl, s) for s in seqs]
            assert _same_fast(cert(mdl, seqs, labels)).status == "CERTIFIED"
            refuted = 0
            for slot in _slots(mdl):
                bad = _nudge(mdl, slot, F(1, 2))
                v = _same_fast(cert(bad, seqs, labels))
                first = _first_failure(bad, seqs, labels)
                assert (v.status, v.witness and v.witness["example"]) == (("CERTIFIED", None) if first is None
                                                                          else ("REFUTED", first))
                refuted += first is not None
            assert refuted > len(_slots(mdl)) // 2


def M_(rows):
    return [[str(F(x)) for x in r] for r in rows]


def _ks_model(bits, position, kind="uniform"):
    """Kajitsuka & Sato shape: deep ReLU stack -> one attention layer with residual -> ReLU stack,
    with `bits`-bit integer weights that keep the activations at about `bits` bits."""
    B = 2 ** bits
    pre = [affine([[B + 3], [B - 5], [1]], [7, -B, 0], True),
           affine([[1, -1, 0], [2, 1, -B], [0, 0, 1]], [0, 1, 0], True),
           affine([[1, 0, 0], [0, 1, 0], [-1, 1, B + 1]], [0, 0, -B], True)]
    qk = (None, None) if kind == "uniform" else ([[0, 0, 1]], [[1, 0, 0]])
    att = attention([head([[1, 1, 0], [0, 0, 1]], [[1, 0], [0, 0], [0, 1]], *qk)], kind, True)
    post = [affine([[1, 0, 1], [0, 1, -1], [3, 0, 0]], [-B, 0, 1], True),
            affine([[1, 1, 0], [0, 1, 1]], [0, -B * 3], False)]
    return model(pre + [att] + post, dim=1, position=position)


def test_kajitsuka_sato_shape_with_1000_bit_weights():
    seqs = [[[(i * 3 + k) % 5] for k in range(1 + i % 6)] for i in range(30)]
    for kind in ("uniform", "hardmax"):
        for position in ("last", "all"):
            mdl = _ks_model(1000, position, kind)
            labels = [ref_answer(mdl, s) for s in seqs]
            assert _same_fast(cert(mdl, seqs, labels)).status == "CERTIFIED"
            wrong = copy.deepcopy(labels)
            col = wrong[17] if position == "last" else wrong[17][-1]
            col[1] -= 1
            v = _same_fast(cert(mdl, seqs, wrong, outputs=labels))
            assert v.status == "REFUTED" and v.witness["example"] == 17 and v.witness["reason"] == "label"
            lie = _same_fast(cert(mdl, seqs, labels, outputs=wrong))
            assert lie.status == "REFUTED" and lie.witness["example"] == 17 and lie.witness["reason"] == "outputs"
            refuted = 0
            for li in (0, 1, 3, 4):  # a nudged weight in each stack and in the attention layer
                slot = [s for s in _slots(mdl) if s[0] == li][0]
                bad = _nudge(mdl, slot, 1)
                first = _first_failure(bad, seqs, labels)
                v = _same_fast(cert(bad, seqs, labels))
                assert (v.status, v.witness and v.witness["example"]) == (("CERTIFIED", None) if first is None
                                                                          else ("REFUTED", first))
                refuted += first is not None
            assert refuted >= 3


def test_softmax_like_attention_goes_to_the_pure_checker(monkeypatch):
    mdl = model([attention([head([[1]], [[1]], [[1]], [[1]])], "softmax", True)], dim=1, decode="argmax")
    mdl["layers"].append(affine([[1], [-1]]))
    doc = cert(mdl, [[[1], [2]]], [0])
    called = []
    monkeypatch.setattr(fastcheck, "check_examples",
                        lambda c, ex, cap, b, f=None: called.append(c) or check_examples(c, ex, cap, b, f))
    assert check_certificate_fast(doc).status == "CERTIFIED" and len(called) == 1
    # any kind other than hardmax / uniform (e.g. one added to the checker later) is handed off too
    hard = cert(model([attention([head([[1]], [[1]], [[1]], [[1]])], "hardmax", True)], dim=1), [[[1], [2]]],
                [[4]])
    parsed = parse_certificate(hard)
    assert fast_supported(parsed)
    parsed.layers[0].kind = "softmax2"
    assert not fast_supported(parsed)
    monkeypatch.setattr(fastcheck, "parse_certificate", lambda d, b: parsed)
    called.clear()
    v = check_certificate_fast(hard)  # the kernel judges the parsed (softmax2) model: not what the file's hardmax gives
    assert called == [parsed] and v.status == "REFUTED" and v.witness["example"] == 0


def test_cli_check_engine_fast_with_attention(tmp_path):
    mdl = _ks_model(300, "last")
    seqs = [[[1], [2], [0]], [[3]], [[4], [4]]]
    doc = cert(mdl, seqs, [ref_answer(mdl, s) for s in seqs])
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc))
    run = subprocess.run([sys.executable, "-m", "exactmem", "check", str(p), "--engine", "fast", "--json"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "fast engine" in json.loads(run.stdout)["message"]


def test_hardmax_scores_in_small_chunks(monkeypatch):
    """Sequences of one length processed in several chunks give the same argmax sets."""
    monkeypatch.setattr(fastcheck, "SCORE_CHUNK", 5)
    seqs = [[[(3 * i + k) % 5 - 2, (i * k) % 3 - 1] for k in range(2 + i % 5)] for i in range(40)]
    for query in ("all", "last"):
        for keys in ("all", "others"):
            mdl = model([attention([head([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 2]], [[2, -1]])], "hardmax", True,
                                   query, keys), affine([[1, 1]])], dim=2, position="all" if query == "all" else "last")
            labels = [ref_answer(mdl, s) for s in seqs]
            assert _same_fast(cert(mdl, seqs, labels)).status == "CERTIFIED"
            wrong = copy.deepcopy(labels)
            (wrong[33] if query == "last" else wrong[33][-1])[0] += 1
            v = _same_fast(cert(mdl, seqs, wrong))
            assert v.status == "REFUTED" and v.witness["example"] == 33


def _fast_with_compiled_limb_rows_equals_pure(md, how):
    if not fastcheck.COMPILED:
        return
    saved = fastcheck.NATIVE_MIN_VALUES
    fastcheck.NATIVE_MIN_VALUES = 1
    try:
        test_fast_equals_pure_on_random_token_wise_models.hypothesis.inner_test(md, how)
    finally:
        fastcheck.NATIVE_MIN_VALUES = saved


@settings(max_examples=int(os.environ.get("EXACTMEM_HYP", 40)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(token_wise_model_and_data(), st.integers(0, 2))
def test_fast_with_compiled_limb_rows_equals_pure(md, how):
    """As above with every row past int64 in compiled limb arrays (exactmem/native; the default
    uses them from 32 distinct values on): same verdicts, witnesses and measurements (40 examples;
    120 more with -m slow)."""
    _fast_with_compiled_limb_rows_equals_pure(md, how)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("EXACTMEM_HYP", 120)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(token_wise_model_and_data(), st.integers(0, 2))
def test_fast_with_compiled_limb_rows_equals_pure_more_examples(md, how):
    _fast_with_compiled_limb_rows_equals_pure(md, how)


def test_compiled_limb_rows_on_many_wide_values():
    """Rows past 64 and 128 bits on hundreds of distinct values (compiled limb arrays by
    default), negative and zero values, ReLU, a planted lie; the pure kernel agrees."""
    big = 2 ** 100 + 3
    mdl = model([affine([[1], [big], [-big]], [0, -big * 150, 7], True),
                 affine([[1, 1, -1], [2 ** 70, -1, 1]], [-(2 ** 129), 5], False),
                 affine([[1, 1]], None, True)], dim=1)
    seqs = [[[x]] for x in range(-100, 200)]
    outs = [ref_answer(mdl, s) for s in seqs]
    doc = cert(mdl, seqs, outs)
    assert _same_fast(doc).status == "CERTIFIED"
    doc["outputs"][250] = [str(outs[250][0] + 1)]
    assert _same_fast(rehash(doc)).witness["example"] == 250


@pytest.mark.parametrize("min_values", [1, 1024])
def test_value_bits_limit_on_wide_rows_agrees_at_the_boundary(min_values, monkeypatch):
    """The largest intermediate value (measured once per row, limb rows included) meets the
    max_value_bits limit exactly where the kernel's does: CERTIFIED at the kernel's bound,
    UNKNOWN with the same message one bit below."""
    from exactmem.kernel.limits import Limits

    monkeypatch.setattr(fastcheck, "NATIVE_MIN_VALUES", min_values)  # 1: the rows past 2^62 are limb arrays
    big = 2 ** 100 + 3
    mdl = model([affine([[1], [big], [-big]], [0, -big * 150, 7], True),
                 affine([[1, 1, -1], [2 ** 70, -1, 1]], [-(2 ** 129), 5], False),
                 affine([[1, 1]], None, True), affine([[1]], None, True)], dim=1)
    seqs = [[[x]] for x in range(-100, 200)]
    doc = cert(mdl, seqs, [ref_answer(mdl, s) for s in seqs])
    lo, hi = 1, 400  # the kernel: UNKNOWN at lo, CERTIFIED at hi
    assert check_certificate(doc, limits=Limits(max_value_bits=hi)).status == "CERTIFIED"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok = check_certificate(doc, limits=Limits(max_value_bits=mid)).status == "CERTIFIED"
        lo, hi = (lo, mid) if ok else (mid, hi)
    assert hi > 128  # a row past 128 bits sets it
    for bits, status in ((hi, "CERTIFIED"), (hi - 1, "UNKNOWN")):
        a = check_certificate(doc, limits=Limits(max_value_bits=bits))
        b = check_certificate_fast(doc, limits=Limits(max_value_bits=bits))
        assert a.status == b.status == status
        if status == "UNKNOWN":
            assert a.message == b.message and "needs" in a.message
