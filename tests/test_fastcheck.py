"""The optional fast checking path (fastcheck.py) gives the pure checker's verdicts, and the
producer's "compress" engine agrees with the other exact engines."""

import copy
import json
import os
import subprocess
import sys
from fractions import Fraction as F

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactmem.certificate.checker import check_certificate
from exactmem.certificate.fastcheck import check_certificate_fast
from exactmem.model import Affine, FeedForward, Model, forward
from exactmem.model.affine_stack import AffineStep, ScaledInts, run_stack

from test_checker import affine, attention, cert, embed, ff, head, model, ref_answer, rehash

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

small = st.fractions(min_value=-3, max_value=3, max_denominator=4)
ints = st.integers(-3, 3).map(F)


def _mat(r, c, el):
    return st.lists(st.lists(el, min_size=c, max_size=c), min_size=r, max_size=r)


@st.composite
def token_wise_model_and_data(draw):
    """Random affine/feedforward stacks, vector or token input, few distinct tokens (so the
    column compression merges), occasional huge weights (the object-integer path)."""
    el = draw(st.sampled_from([small, ints, st.sampled_from([F(0), F(1), F(-1), F(2 ** 70), F(-(3 ** 45)),
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


def test_attention_models_are_handed_to_the_pure_checker():
    mdl = model([attention([head([[1]], [[1]], [[1]], [[1]])], "hardmax", True)], dim=1)
    seqs = [[[1], [2]], [[3], [3]]]
    doc = cert(mdl, seqs, [ref_answer(mdl, s) for s in seqs])
    assert _same(doc).status == "CERTIFIED"


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
    el = draw(st.sampled_from([small, ints, st.sampled_from([F(0), F(1), F(2 ** 80), F(-1, 2 ** 90)])]))
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
