"""The public library surface (exactmem/__init__.py, exactmem/api, exactmem/inspector/text.py)."""

import os
import pydoc
import subprocess
import sys
from fractions import Fraction

import pytest

import exactmem as em
from exactmem.data.dataset import DataError
from exactmem.model import Model, affine, measure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def five():
    data = em.sequences(N=5, n=4, d=3, C=3, seed=0)
    return data, em.kajitsuka.next_token(data)


def _py(code):
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout


# ----------------------------------------------------------------------------- the package surface


def test_import_is_lazy():
    out = _py("import sys, exactmem; print('exactmem.api' in sys.modules, 'flint' in sys.modules, "
              "'numpy' in sys.modules)")
    assert out.split() == ["False", "False", "False"]


def test_certify_stays_the_function_after_importing_the_pipeline_module():
    out = _py("from exactmem.pipeline.certify import certify_file; import exactmem, exactmem.pipeline.certify\n"
              "print(callable(exactmem.certify), exactmem.certify.__module__, callable(certify_file))\n"
              "import sys; print(hasattr(sys.modules['exactmem.pipeline.certify'], 'certify_instance'))")
    assert out.split() == ["True", "exactmem.api", "True", "True"]


def test_every_public_name_resolves_and_is_documented():
    for name in em.__all__:
        if name == "__version__":
            continue
        obj = getattr(em, name)
        assert obj.__doc__ and len(obj.__doc__.strip()) > 20, name
    assert set(em.__all__) <= set(dir(em))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        em.nonexistent  # noqa: B018


def test_help_reads_well():
    text = pydoc.render_doc(em.kajitsuka.next_token, renderer=pydoc.plaintext)
    assert "Theorem 4.1 / B.1" in text and "data" in text and "Memorizer" in text
    text = " ".join(pydoc.render_doc(em.certify, renderer=pydoc.plaintext).split())
    assert "independent checker" in text and "CERTIFIED" in text
    for f in (em.run, em.trace, em.sequences, em.vardi.memorize, em.mahdavi.memorize, em.dana.associations,
              em.export.save, em.importer.dataset, em.inspect):
        assert f.__doc__ and ("eq." in f.__doc__ or "Lemma" in f.__doc__ or "Theorem" in f.__doc__
                              or "Corollary" in f.__doc__ or "docs/" in f.__doc__ or "exact" in f.__doc__), f.__name__
        assert f.__annotations__, f"{f.__name__} has no type hints"


# ----------------------------------------------------------------------------- Kajitsuka end to end


def test_kajitsuka_five_sequences_run_certify(five):
    data, net = five
    assert em.run(net, data) == [[Fraction(y)] for y in data.labels]
    assert net.run() == em.run(net, data.to_dataset())
    v = em.certify(net)
    assert v.status == "CERTIFIED", v.message
    assert v.measured["width"] <= 14 and v.measured["attention_layers"] == 1
    assert any(c.quantity == "width" and c.op == "<=" and c.bound == 14 for c in net.claims)
    assert any(c.quantity == "depth" and c.op == "<=" for c in net.claims)  # the (41)/(110) bounds


def test_certify_refutes_wrong_labels_and_false_claims(five):
    data, net = five
    wrong = em.make_data(data.sequences, [(y + 1) % 3 for y in data.labels], C=3)
    v = em.certify(net, wrong)
    assert v.status == "REFUTED" and v.witness["example"] == 0
    v = em.certify(net, claims=[("width", "<=", 5)])
    assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == "width"
    v = em.certify(net.model, data, claims={"attention_layers": ("==", 1), "n_examples": 5})
    assert v.status == "CERTIFIED"


def test_certify_writes_the_certificate_when_asked(five, tmp_path):
    from exactmem.kernel.checker import check_certificate, load_certificate

    data, net = five
    p = tmp_path / "five.json"
    assert em.certify(net, path=str(p), checker="fast").status == "CERTIFIED"
    doc = load_certificate(str(p))
    assert doc["theorem"] == "kajitsuka.next_token" and len(doc["claims"]) == len(net.claims)
    assert check_certificate(doc).status == "CERTIFIED"


def test_certify_checker_auto_follows_the_cli_rule():
    from exactmem.kernel.checker import Limits, MalformedCertificate
    from exactmem.model import Attention, Head
    from exactmem.pipeline.certify import AUTO_FAST_MIN_EXAMPLES, auto_checker

    m = Model([affine([[2]], relu=True)], input_dim=1)
    big = em.dataset([[(x,)] for x in range(AUTO_FAST_MIN_EXAMPLES)], [2 * x for x in range(AUTO_FAST_MIN_EXAMPLES)])
    small = em.dataset([[(x,)] for x in range(5)], [2 * x for x in range(5)])
    assert auto_checker(m, len(big)) == "fast" and auto_checker(m, len(small)) == "pure"
    assert em.certify(m, big).message.endswith("(exact, fast engine)")  # auto: the batched exact path
    assert em.certify(m, small).message.endswith("(exact)")  # auto: the kernel
    assert em.certify(m, big, checker="pure").message.endswith("(exact)")
    assert em.certify(m, small, checker="fast").message.endswith("(exact, fast engine)")
    soft = Model([Attention([Head([[1]], [[1]], [[1]], [[1]])], kind="softmax")], input_dim=1)
    hard = Model([Attention([Head([[1]], [[1]], [[1]], [[1]])], kind="hardmax")], input_dim=1)
    assert auto_checker(soft, 10 ** 6) == "pure" and auto_checker(hard, 10 ** 6) == "fast"
    with pytest.raises(ValueError, match="'auto', 'pure' or 'fast'"):
        em.certify(m, small, checker="quick")
    # the verifier's budget still applies: a limit hit is UNKNOWN, an oversized document malformed
    for checker in ("auto", "pure"):
        v = em.certify(m, big, checker=checker, limits=Limits(time_limit=Fraction(1, 10 ** 9)))
        assert v.status == "UNKNOWN" and v.limit == "time_limit", checker
    with pytest.raises(MalformedCertificate, match="max_bytes"):
        em.certify(m, big, limits=Limits(max_bytes=1000))


def test_certify_uses_the_proof_files_engine_and_the_checkers_reader(five, monkeypatch):
    import exactmem.pipeline.certify as P
    from exactmem.kernel import schema

    assert P.preferred_engine("kajitsuka.next_token") == "compress" == P.preferred_engine("vardi.c1")
    assert P.preferred_engine("kajitsuka.seq2seq_hardmax") == "compress"  # every kajitsuka instance asks for it
    assert P.preferred_engine("mahdavi.softmax") is None and P.preferred_engine("exactmem.api") is None
    assert P.preferred_engine("no such theorem") is None
    data, net = five
    seen, decoded = [], []
    real_forward, real_decode = P.forward, schema.decode_certificate
    monkeypatch.setattr(P, "forward", lambda m, xs, backend="auto", **kw: seen.append(backend) or real_forward(
        m, xs, backend, **kw))
    import exactmem.kernel.checker as K

    monkeypatch.setattr(K, "decode_certificate", lambda data, name, limits=None: decoded.append(type(data)) or
                        real_decode(data, name, limits))
    assert em.certify(net).status == "CERTIFIED"
    assert em.certify(net, backend="flint").status == "CERTIFIED"
    assert em.certify(net.model, data).status == "CERTIFIED"  # no theorem: the forward pass's own choice
    assert seen == ["compress", "flint", "auto"]
    assert decoded == [bytes, bytes, bytes]  # the checker parsed the serialised bytes


def test_seq2seq_and_hardmax_forms():
    data = em.sequences(N=4, n=3, d=2, C=2, seed=1, setting="seq2seq")
    net = em.kajitsuka.seq2seq(data)
    assert em.run(net, data) == [[[Fraction(y)] for y in ys] for ys in data.labels]
    assert em.certify(net).status == "CERTIFIED"
    with pytest.raises(ValueError, match="seq2seq"):
        em.kajitsuka.next_token(data)
    nt = em.sequences(N=4, n=3, d=2, C=2, seed=1)
    hm = em.kajitsuka.hardmax(nt)
    assert hm.model.layers[hm.stage("uniform attention").start].kind == "hardmax"
    assert em.run(hm, nt) == em.run(em.kajitsuka.next_token(nt), nt)


def test_stages_tile_the_network(five):
    _, net = five
    assert net.stages[0].start == 0 and net.stages[-1].stop == len(net.model.layers)
    for a, b in zip(net.stages, net.stages[1:]):
        assert a.stop == b.start and a.start < a.stop
    ua = net.stage("uniform attention")
    assert ua.stop - ua.start == 1 and type(net.model.layers[ua.start]).__name__ == "Attention"
    lay = net.build.f2_layout
    s3 = net.stage("F2: Stage III")
    assert s3.stop - s3.start == 3 + max(lay.rho, lay.c - 1) + (lay.g - 1) * lay.P
    assert net.stage_of(ua.start) == ua.name
    with pytest.raises(KeyError):
        net.stage("Stage III")  # F1's and F2's: ambiguous


def test_check_data_reports_violations():
    ok = em.check_data(em.sequences(N=6, n=3, d=2, C=2, seed=0))
    assert ok.ok and ok.r2 >= 1 and 0 < ok.delta2 <= 1
    # two permutations with the same last token and different labels: eq. (5) fails
    bad = em.make_data([[(0, 0), (1, 0), (2, 2)], [(1, 0), (0, 0), (2, 2)]], [0, 1], C=2)
    rep = em.check_data(bad)
    assert rep.separated and not rep.consistent and not rep.ok
    assert "sequences 0 and 1" in rep.messages[0]
    with pytest.raises(DataError, match="eq. \\(5\\)"):
        em.kajitsuka.next_token(bad)
    close = em.make_data([[(0, 0), ("1/10", 0)]], [0], C=1)
    rep = em.check_data(close, delta=Fraction(1, 2))
    assert not rep.separated and "squared distance" in rep.messages[0]
    assert "FAILS" in str(rep)


def test_make_data_refuses_floats():
    with pytest.raises(DataError, match="floats"):
        em.make_data([[(0.5, 1)]], [0], C=1)


# ----------------------------------------------------------------------------- run / trace / inspect


def test_trace_is_the_forward_pass(five):
    data, net = five
    tr = em.trace(net, data.sequences[3])
    assert len(tr.layers) == len(net.model.layers) + 1 and tr.layers[0].kind == "input"
    assert tr.exact and tr.output == [Fraction(data.labels[3])]
    assert tr.layers[-1].columns[-1] == tr.output
    ua = net.stage("uniform attention")
    before, after = tr.layer(ua.start - 1).columns, tr.layer(ua.start).columns
    assert after[-1][:2] == before[-1][:2] and after[-1][2] == sum(c[0] for c in before) / 4
    W = tr.attention()
    assert len(W) == 1 and all(w == Fraction(1, 4) for row in W[0] for w in row)
    assert tr.layer(ua.start).stage == ua.name
    text = str(tr)
    assert "uniform attention" in text and "1/4" in text
    assert net.trace(3).output == tr.output


def test_trace_of_a_token_model():
    table = em.dana.random_table(N=6, S=2, T0=em.dana.capacity(d=3, d_h=2, H=1), seed=0)
    dn = em.dana.associations(table, d=3, d_h=2, H=1, mode="base2")
    tr = em.trace(dn, dn.dataset.inputs[0])
    assert tr.layers[0].columns == [[t] for t in dn.dataset.inputs[0]]
    (W,) = tr.attention()
    assert len(W) == 1 and sum(W[0]) == 1 and all(isinstance(w, Fraction) for w in W[0])
    assert tr.output == dn.dataset.labels[0]
    assert em.certify(dn).status == "CERTIFIED"


def test_run_decodes_argmax_and_returns_balls_after_softmax():
    import math

    from exactmem.model import Attention, Head

    c = Fraction(math.exp(1) / (1 + math.exp(1)))
    head = Head(WV=[[1, 0]], WO=[[1]], WQ=[[0, 1]], WK=[[0, 1]])
    m = Model([Attention([head], kind="softmax", residual=False, query="last"), affine([[1], [0]], [0, c])],
              input_dim=2, decode="argmax")
    x = [(0, 0), (1, 1)]
    assert em.run(m, [x]) == [1]  # sigma(1) < its float64 rounding, decided by balls
    raw = em.run(m, [x], decode=False)[0]
    assert raw[0] < raw[1] and not (raw[0] >= raw[1])
    assert em.certify(m, em.dataset([x], [1])).status == "CERTIFIED"
    assert em.certify(m, em.dataset([x], [0])).status == "REFUTED"


def test_dataset_and_certify_of_a_plain_model():
    m = Model([affine([[1, -2]], [1], relu=True)], input_dim=2)
    ds = em.dataset([[(3, 1)], [("1/2", 0)]], [2, "3/2"])
    assert em.run(m, ds) == [[Fraction(2)], [Fraction(3, 2)]]
    assert em.certify(m, ds, claims=[("n_params", "==", 3), ("relu_depth", "==", 1)]).status == "CERTIFIED"
    assert em.certify(m, em.dataset([[(3, 1)]], [3])).status == "REFUTED"
    with pytest.raises(ValueError, match="unknown claim quantity"):
        em.certify(m, ds, claims=[("params", "==", 3)])
    with pytest.raises(TypeError, match="needs a dataset"):
        em.certify(m)


def test_inspect_text_and_data(five):
    _, net = five
    rep = em.inspect(net)
    text = str(rep)
    assert rep.measurement == measure(net.model)
    assert "kajitsuka.next_token" in text and "stages:" in text and "F2: Stage III" in text
    assert "claims (" in text and "width <= 14" in text
    assert sum(s["params"] for s in rep.stages) == rep.measurement.n_params
    assert len(rep.layers) == len(net.model.layers)
    plain = str(em.inspect(net.model))
    assert "stages:" not in plain and "totals:" in plain


def test_attention_table_and_activation_bits(five):
    from exactmem.inspector.text import activation_bits, attention_table

    data, net = five
    t = attention_table(net)
    assert t.count("1/4") == 16
    rows = activation_bits(net, stage="F2: Stage III")
    s3 = net.stage("F2: Stage III")
    assert len(rows) == s3.stop - s3.start
    assert max(max(r) for r in rows) >= net.build.f2_layout.rho  # a packed key register is wide
    assert activation_bits(net, x=data.sequences[0], stage=range(0, 2))[0] == \
        [1 + abs(v.numerator).bit_length() + v.denominator.bit_length() - 1
         for v in em.trace(net, data.sequences[0]).layer(0).columns[-1]]


def test_figures(five, tmp_path):
    pytest.importorskip("matplotlib")
    from exactmem.inspector.text import activations_figure, attention_figure

    _, net = five
    fig = attention_figure(net, path=str(tmp_path / "a.png"))
    assert (tmp_path / "a.png").stat().st_size > 1000
    assert len(fig.axes) == 2  # one head + the colour bar
    fig = activations_figure(net, stage="F2: Stage III", path=str(tmp_path / "b.png"))
    assert (tmp_path / "b.png").stat().st_size > 1000
    img = fig.axes[0].images[0].get_array()
    s3 = net.stage("F2: Stage III")
    assert img.shape[0] == s3.stop - s3.start


# ----------------------------------------------------------------------------- the other constructions


def test_vardi_memorize():
    pts = [(3 * i,) for i in range(12)]
    labs = [i % 4 for i in range(12)]
    v = em.vardi.memorize(pts, labs, C=4, extra=[(1,), (40,)])
    out = em.run(v, v.dataset)
    assert out == [[Fraction(y)] for y in labs] + [[Fraction(0)], [Fraction(0)]]
    assert v.stage("Stage III").stop == len(v.model.layers) - 1
    assert em.certify(v).status == "CERTIFIED"
    f1 = em.vardi.memorize_limited_bits(pts, labs, C=4, B=2)
    assert em.certify(f1).status == "CERTIFIED"
    assert em.run(em.vardi.bit_extractor(4), [[(13,)]]) == [[1, 1, 0, 1, 0]]


def test_mahdavi_hardmax_memorize():
    data = em.mahdavi.random_data(H=2, n=3, d=4, d_h=3, seed=0)
    assert len(data.queries) == em.mahdavi.capacity(2, 3, 3)
    net = em.mahdavi.memorize(data, H=2, d_h=3, mode="hardmax", design="solve")
    assert em.run(net, net.dataset) == [list(y) for y in net.dataset.labels]
    assert em.certify(net).status == "CERTIFIED"
