"""Export to float formats (npz, safetensors, PyTorch) and import back (exactmem/export/,
exactmem/export/importer.py): exact where the format allows, reported where it does not."""

import json
import math
import random
from fractions import Fraction

import numpy as np
import pytest

import exactmem as em
from exactmem import export
from exactmem.export import importer
from exactmem.data.dataset import DataError
from exactmem.model import Attention, FeedForward, Head, Model, affine


@pytest.fixture(scope="module")
def five():
    data = em.sequences(N=5, n=4, d=3, C=3, seed=0)
    return data, em.kajitsuka.next_token(data)


@pytest.fixture(scope="module")
def forty():
    data = em.sequences(N=40, n=8, d=16, C=4, seed=0)
    return data, em.kajitsuka.next_token(data)


# ----------------------------------------------------------------------------- rounding


def _same(a: float, b: float) -> bool:
    return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)


def test_round_to_format_agrees_with_numpy():
    rng = np.random.default_rng(0)
    vals = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-45, 40, 3000),
                           rng.standard_normal(1000) * 2.0 ** rng.integers(-155, -120, 1000),  # float32 subnormals
                           rng.standard_normal(1000) * 2.0 ** rng.integers(-27, 18, 1000)])  # float16 range
    for name, dt in (("float32", np.float32), ("float16", np.float16)):
        with np.errstate(all="ignore"):
            ref = vals.astype(dt).astype(np.float64)
        for v, r in zip(vals.tolist(), ref.tolist()):
            got, _ = export.round_to_format(Fraction(v), name)
            assert _same(got, r), (name, v, got, r)
    for _ in range(2000):
        x = Fraction(random.randint(-10 ** 30, 10 ** 30), random.randint(1, 10 ** 25))
        assert export.round_to_format(x, "float64")[0] == float(x)


def test_round_to_format_edge_cases():
    r = export.round_to_format
    e = Fraction(1, 2 ** 24)
    assert r(1 + e, "float32") == (1.0, "rounded")  # a tie goes to the even significand
    assert r(1 + 3 * e, "float32") == (1 + 4 * float(e), "rounded")
    assert r(Fraction(2) ** 128, "float32") == (math.inf, "overflow")
    assert r(-Fraction(65520), "float16") == (-math.inf, "overflow")  # rounds up past the largest float16
    assert r(Fraction(65519), "float16") == (65504.0, "rounded")
    assert r(Fraction(1, 2 ** 150), "float32") == (0.0, "underflow")
    assert r(Fraction(3, 2 ** 151), "float32") == (2.0 ** -149, "rounded")  # subnormal
    assert r(Fraction(3, 2 ** 150), "float32") == (2.0 ** -148, "rounded")  # 1.5 quanta: tie to even
    assert r(Fraction(1, 3), "bfloat16") == (0.333984375, "rounded")
    assert r(Fraction(-5, 4), "float16") == (-1.25, "exact")
    assert export.FORMATS["float32"].max_finite == Fraction(2 ** 24 - 1) * 2 ** 104


def test_rounding_report_counts(five):
    _, net = five
    arrays, rep = export.to_arrays(net.model, "float16")
    assert rep.entries == em.measure(net.model).n_params == sum(a.size for a in arrays.values())
    assert rep.overflow > 0 and rep.max_rel_error == math.inf and not rep.all_exact
    assert rep.exact + rep.rounded + rep.overflow + rep.underflow == rep.entries
    assert np.isinf(np.concatenate([a.ravel() for a in arrays.values()])).sum() == rep.overflow
    _, rep64 = export.to_arrays(net.model, "float64")
    assert rep64.all_exact and rep64.max_rel_error == 0 and rep64.max_bits == em.measure(net.model).max_bits
    third = Model([affine([["1/3", 1]], ["1/10"])], input_dim=2)
    arrs, rep = export.to_arrays(third, "float64")
    assert (rep.exact, rep.rounded) == (1, 2) and 0 < rep.max_rel_error < 2 ** -52
    assert "2 rounded" in str(rep)


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_round_trip_is_exact_where_the_format_allows(five, tmp_path, ext, dtype):
    data, net = five
    p = str(tmp_path / f"net.{ext}")
    rep = export.save(net, p, dtype=dtype)
    assert rep.all_exact  # N = 5 needs at most 24 bits per weight, all dyadic
    back = importer.load_model(p)
    assert importer.differences(net, back) == []
    assert back == net.model  # layer by layer, exactly
    assert em.certify(back, data, claims=net.claims).status == "CERTIFIED"


def test_round_trip_reports_the_mismatch(five, tmp_path):
    data, net = five
    p = str(tmp_path / "net.safetensors")
    rep = export.save(net, p, dtype="bfloat16")
    back = importer.load_model(p)
    diff = importer.differences(net, back)
    assert sum(n for _, n in diff) == rep.rounded > 0
    assert {name for name, _ in diff} == {t.name for t in rep.tensors if t.rounded}
    v = em.certify(back, data)
    assert v.status == "REFUTED" and "example" in v.witness
    p16 = str(tmp_path / "net16.npz")
    rep16 = export.save(net, p16, dtype="float16")
    assert rep16.overflow > 0
    with pytest.raises(importer.FileImportError, match="not a finite number"):
        importer.load_model(p16)
    with pytest.raises(ValueError, match="bfloat16"):
        export.save(net, str(tmp_path / "x.npz"), dtype="bfloat16")
    with pytest.raises(ValueError, match=".npz or .safetensors"):
        export.save(net, str(tmp_path / "x.bin"))


def test_load_model_with_a_template_and_shape_errors(five, tmp_path):
    _, net = five
    arrays, _ = export.to_arrays(net.model, "float64")
    p = str(tmp_path / "plain.npz")
    np.savez(p, **arrays)  # no architecture inside: a "trained model" file
    with pytest.raises(importer.FileImportError, match="no exactmem architecture"):
        importer.load_model(p)
    assert importer.load_model(p, like=net) == net.model
    bad = dict(arrays)
    bad["layers.0.W"] = bad["layers.0.W"][:, :2]
    with pytest.raises(importer.FileImportError, match=r"layers.0.W has shape \[2, 2\]"):
        importer.from_arrays(bad, export.architecture(net.model))
    del bad["layers.0.W"]
    with pytest.raises(importer.FileImportError, match="layers.0.W .* is missing"):
        importer.from_arrays(bad, export.architecture(net.model))
    extra = dict(arrays, junk=np.zeros(2))
    with pytest.raises(importer.FileImportError, match="not in the architecture: junk"):
        importer.from_arrays(extra, export.architecture(net.model))


# ----------------------------------------------------------------------------- safetensors


def test_builtin_safetensors_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    t = {"a": rng.standard_normal((3, 4)).astype(np.float32), "b": np.arange(5, dtype=np.int64),
         "c": rng.standard_normal(7).astype(np.float16), "d": rng.standard_normal((2, 2))}
    p = str(tmp_path / "x.safetensors")
    export.write_safetensors(p, t, {"k": "v"})
    raw = open(p, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0 and json.loads(raw[8:8 + n])["__metadata__"] == {"k": "v"}
    back, meta, codes = export.read_safetensors(p)
    assert meta == {"k": "v"} and codes == {"a": "F32", "b": "I64", "c": "F16", "d": "F64"}
    for k in t:
        assert back[k].dtype == t[k].dtype and np.array_equal(back[k], t[k])
    bf = np.array([1.0, -0.333984375, 2.0 ** -100], dtype=np.float32)
    export.write_safetensors(p, {"w": bf}, dtypes={"w": "BF16"})
    back, _, codes = export.read_safetensors(p)
    assert codes == {"w": "BF16"} and np.array_equal(back["w"], bf)
    with pytest.raises(ValueError, match="bfloat16"):
        export.write_safetensors(p, {"w": np.array([0.1], dtype=np.float32)}, dtypes={"w": "BF16"})


def test_builtin_safetensors_matches_the_package(tmp_path, five):
    stn = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(4)
    t = {"emb": rng.standard_normal((10, 6)).astype(np.float32), "bias": rng.standard_normal(3)}
    p1, p2 = str(tmp_path / "builtin.safetensors"), str(tmp_path / "package.safetensors")
    export.write_safetensors(p1, t, {"m": "1"})
    stn.save_file(t, p2, metadata={"m": "1"})
    for p in (p1, p2):
        a = stn.load_file(p)
        b, meta, _ = export.read_safetensors(p)
        assert set(a) == set(b) == set(t) and meta == {"m": "1"}
        for k in t:
            assert np.array_equal(a[k], t[k]) and np.array_equal(b[k], t[k])
    _, net = five
    p3 = str(tmp_path / "m.safetensors")
    export.save(net, p3, dtype="float32", backend="package")
    assert importer.load_model(p3) == net.model
    export.save(net, p3, dtype="float32", backend="builtin")
    arrays, meta = importer.load_arrays(p3, backend="package")
    assert "exactmem" in meta and importer.load_model(p3) == net.model


# ----------------------------------------------------------------------------- float evaluation


def test_float_model_mislabels_once_the_bits_run_out(five, forty):
    (_, n5), (_, n40) = five, forty
    assert export.float_accuracy(n5, dtype="float64").nearest == 5
    a64 = export.float_accuracy(n40, dtype="float64")
    assert a64.nearest < 40 and a64.rounding.all_exact  # the weights fit float64: the arithmetic fails
    a32 = export.float_accuracy(n40, dtype="float32")
    assert a32.nearest < a64.nearest and not a32.rounding.all_exact
    assert export.float_accuracy(n40, dtype="float16").nearest == 0
    assert em.measure(n40.model).max_bits > 24
    assert "exactly right" in str(a64)


@pytest.mark.slow
def test_kajitsuka_N1000_in_floats():
    data = em.sequences(N=1000, n=8, d=16, C=4, seed=0)
    net = em.kajitsuka.next_token(data)
    a64 = export.float_accuracy(net, dtype="float64")
    assert 200 <= a64.nearest <= 300  # 237/1000 measured (docs/library.md)
    assert a64.rounding.rounded > 0
    assert export.float_accuracy(net, dtype="float32").nearest == 0


def _random_attention_model(rng, kind, query, keys, residual, d=3, H=2):
    def M(r, c, lo=-2, hi=2):
        return [[rng.randint(lo, hi) for _ in range(c)] for _ in range(r)]

    heads = []
    for _ in range(H):
        qk = {} if kind == "uniform" else {"WQ": M(2, d), "WK": M(2, d)}
        heads.append(Head(WV=M(2, d), WO=M(d, 2), **qk))
    layers = [Attention(heads, kind=kind, residual=residual, query=query, keys=keys),
              FeedForward(M(4, d), [rng.randint(-3, 3) for _ in range(4)], M(d, 4), [0] * d, residual=True),
              affine(M(2, d), [Fraction(1, 2), -1])]
    return Model(layers, input_dim=d, readout="last" if query == "last" else "all")


@pytest.mark.parametrize("kind", ["uniform", "hardmax", "softmax", "softmax2"])
def test_float_semantics_match_the_exact_model(kind):
    rng = random.Random(hash(kind) % 1000)
    for query, keys, residual in (("all", "all", True), ("last", "others", False), ("last", "all", True)):
        m = _random_attention_model(rng, kind, query, keys, residual)
        xs = [[tuple(rng.randint(-2, 2) for _ in range(3)) for _ in range(n)] for n in (3, 4, 4)]
        exact = em.run(m, xs, decode=False)
        got = export.FloatNet.from_model(m, "float64").forward(xs)
        for e, g in zip(exact, got):
            e = np.array([[float(v.mid()) if hasattr(v, "mid") else float(v) for v in c] for c in
                          (e if query == "all" else [e])])
            g = np.atleast_2d(g)
            assert np.allclose(e, g, rtol=1e-9, atol=1e-9), (kind, query, keys, e, g)


def test_cli_handler(five, tmp_path, capsys):
    _, net = five
    cert = str(tmp_path / "five.json")
    assert em.certify(net, path=cert).status == "CERTIFIED"
    out = str(tmp_path / "five.npz")
    assert export.main([cert, "--out", out, "--dtype", "float32"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"wrote {out}: weights in float32 (--dtype)\n")
    assert "float32 (24-bit significand)" in text and "5/5 exactly right" in text
    assert importer.load_model(out) == net.model
    assert export.main([str(tmp_path / "missing.json"), "--out", out]) == 3
    assert export.main([cert, "--out", str(tmp_path / "x.npz"), "--json", "--dtype", "float64"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rounding"]["rounded"] == 0 and doc["float_accuracy"]["nearest"] == 5
    assert doc["dtype"] == doc["rounding"]["format"] == "float64" and doc["dtype_is_default"] is False
    # no --dtype: float32, and the output says so (never a silent default)
    assert export.main([cert, "--out", str(tmp_path / "d.npz")]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'd.npz'}: weights in float32 (the default; ")
    assert export.main([cert, "--out", str(tmp_path / "d.npz"), "--json", "--no-eval"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dtype"] == "float32" and doc["dtype_is_default"] is True


# ----------------------------------------------------------------------------- PyTorch


def test_torch_reference_module(five):
    torch = pytest.importorskip("torch")
    data, net = five
    X = torch.tensor([[[float(v) for v in t] for t in s] for s in data.sequences], dtype=torch.float64)
    for dtype in ("float64", "float32"):
        mod = export.to_torch(net, dtype)
        assert list(mod.state_dict()) == [k for k, _ in export.tensor_items(net.model)]
        with torch.no_grad():
            out = mod(X).to(torch.float64).numpy()
        ref = np.array(export.FloatNet.from_model(net, dtype).forward(net.dataset.inputs), dtype=np.float64)
        assert out.shape == ref.shape == (5, 1)
        if dtype == "float64":  # every float64 operation is exact here (< 2^53), so any order agrees
            assert np.array_equal(out, ref) and np.array_equal(out[:, 0], data.labels)
    back = importer.from_state_dict(export.state_dict(net, "float64"), like=net)
    assert back == net.model
    bf = importer.from_state_dict(export.state_dict(net, "bfloat16"), like=net)
    _, rep = export.to_arrays(net.model, "bfloat16")
    assert sum(n for _, n in importer.differences(net, bf)) == rep.rounded


def test_torch_module_states_its_dtype_and_pickles(five):
    """to_torch: a module-level class (pickle round trip, equal outputs) that names its float format."""
    import pickle

    torch = pytest.importorskip("torch")
    from exactmem.export.torch_nn import ExactmemReference

    data, net = five
    X = torch.tensor([[[float(v) for v in t] for t in s] for s in data.sequences], dtype=torch.float64)
    for dtype, tdt in (("float32", torch.float32), ("float64", torch.float64)):
        mod = export.to_torch(net, dtype)
        assert type(mod) is ExactmemReference and mod.dtype_name == dtype and mod.torch_dtype is tdt
        assert repr(mod).startswith(f"ExactmemReference(\n  dtype={dtype}, ")
        assert {p.dtype for p in mod.parameters()} == {tdt}
        back = pickle.loads(pickle.dumps(mod))
        assert type(back) is ExactmemReference and back.dtype_name == dtype
        assert back.rounding.as_dict() == mod.rounding.as_dict() and back.spec == mod.spec
        assert list(back.state_dict()) == list(mod.state_dict())
        assert all(torch.equal(a, b) for a, b in zip(back.state_dict().values(), mod.state_dict().values()))
        with torch.no_grad():
            out, again = mod(X), back(X)
        assert out.dtype is tdt and torch.equal(out, again)
    assert export.to_torch(net).dtype_name == "float32"  # the default, stated by the module


def test_torch_module_unpickles_in_a_fresh_process(five, tmp_path):
    import pickle
    import subprocess
    import sys

    pytest.importorskip("torch")
    data, net = five
    path = tmp_path / "m.pkl"
    path.write_bytes(pickle.dumps(export.to_torch(net, "float64")))
    code = ("import pickle, sys, torch; m = pickle.load(open(sys.argv[1], 'rb')); "
            "X = torch.tensor(eval(sys.argv[2]), dtype=torch.float64); "
            "print(m.dtype_name, m(X)[:, 0].tolist())")
    xs = repr([[[float(v) for v in t] for t in s] for s in data.sequences])
    out = subprocess.run([sys.executable, "-c", code, str(path), xs], capture_output=True, text=True, check=True)
    assert out.stdout.split(" ", 1)[0] == "float64"
    assert json.loads(out.stdout.split(" ", 1)[1]) == [float(y) for y in data.labels]


def test_torch_bfloat16_rounding_matches():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    vals = rng.standard_normal(3000) * 10.0 ** rng.integers(-40, 38, 3000)
    ref = torch.tensor(vals).to(torch.bfloat16).to(torch.float64).numpy()
    for v, r in zip(vals.tolist(), ref.tolist()):
        assert _same(export.round_to_format(Fraction(v), "bfloat16")[0], r)


def test_torch_attention_kinds_and_tokens():
    torch = pytest.importorskip("torch")
    rng = random.Random(7)
    for kind in ("uniform", "hardmax", "softmax", "softmax2"):
        m = _random_attention_model(rng, kind, "all", "others", True)
        xs = [[tuple(rng.randint(-2, 2) for _ in range(3)) for _ in range(4)] for _ in range(3)]
        with torch.no_grad():
            out = export.to_torch(m, "float64")(torch.tensor(xs, dtype=torch.float64)).numpy()
        ref = np.array(export.FloatNet.from_model(m, "float64").forward(xs))
        assert np.allclose(out, ref, rtol=1e-12, atol=1e-12), kind
    table = em.dana.random_table(N=6, S=2, T0=em.dana.capacity(d=3, d_h=2, H=1), seed=0)
    dn = em.dana.associations(table, d=3, d_h=2, H=1, mode="base2")
    with torch.no_grad():
        logits = export.to_torch(dn, "float64")(torch.tensor([list(s) for s in dn.dataset.inputs]))
    assert logits.argmax(-1).tolist() == list(dn.dataset.labels)


# ----------------------------------------------------------------------------- importing data


def _embedding(rng, V=2000, d=64):
    """A trained-looking embedding matrix: float32, N(0, 0.02) like GPT-2's token embeddings."""
    return (rng.standard_normal((V, d)) * 0.02).astype(np.float32)


def test_real_looking_embedding_file_imports_exactly_and_is_certified(tmp_path):
    rng = np.random.default_rng(11)
    E = _embedding(rng)
    p = str(tmp_path / "model.safetensors")
    export.write_safetensors(p, {"wte.weight": E, "wpe.weight": E[:16]}, {"format": "pt"})
    seqs = [[int(t) for t in rng.integers(0, 2000, 5)] for _ in range(6)]
    labels = [0, 1, 2, 1, 0, 2]
    sp = tmp_path / "seqs.json"
    sp.write_text(json.dumps({"sequences": seqs, "labels": labels}))
    with pytest.raises(importer.FileImportError, match="2 matrices"):
        importer.dataset(p, str(sp))
    data, rep = importer.dataset(p, str(sp), key="wte.weight")
    assert rep.ok and rep.used_tokens == len({t for s in seqs for t in s}) and rep.vocabulary == 2000
    assert rep.dtype == "float32" and 30 <= rep.max_denominator_bits <= 60
    for s, X in zip(seqs, data.sequences):  # every coordinate is exactly the float32 value
        for t, tok in zip(s, X):
            assert all(x == Fraction(float(v)) and np.float32(float(x)) == v for x, v in zip(tok, E[t]))
    assert data.labels == labels and data.C == 3 and data.d == 64
    assert rep.checks.delta2 < 1 and rep.checks.r2 == 1  # tokens of norm ~0.16, clamped r >= 1
    net = em.kajitsuka.next_token(data)
    assert em.run(net, data) == [[Fraction(y)] for y in labels]
    assert em.certify(net).status == "CERTIFIED"
    # the same matrix from .npy and .npz, and the sequences from CSV
    np.save(str(tmp_path / "E.npy"), E)
    np.savez(str(tmp_path / "E.npz"), embedding=E)
    (tmp_path / "s.csv").write_text("t0,t1,t2,t3,t4,label\n" + "\n".join(
        ",".join(map(str, s + [y])) for s, y in zip(seqs, labels)) + "\n")
    for src in ("E.npy", "E.npz"):
        d2, _ = importer.dataset(str(tmp_path / src), str(tmp_path / "s.csv"))
        assert d2.sequences == data.sequences and d2.labels == labels


def test_bfloat16_embeddings_and_shared_vectors(tmp_path):
    rng = np.random.default_rng(12)
    E = _embedding(rng, V=50, d=8)
    E = (E.view(np.uint32) & 0xFFFF0000).view(np.float32)  # bfloat16-representable
    E[7] = E[3]  # two ids, one vector
    p = str(tmp_path / "bf.safetensors")
    export.write_safetensors(p, {"E": E}, dtypes={"E": "BF16"})
    seqs = [[1, 2, 3], [2, 1, 7], [4, 5, 6]]
    imp = importer.dataset(p, seqs, labels=[0, 1, 1])
    assert imp.report.shared_vectors == [(3, 7)]
    assert not imp.report.checks.consistent and not imp.report.ok  # ids 3 and 7 are one token
    assert "3=7" in str(imp.report)
    with pytest.raises(DataError, match="violates the assumptions"):
        importer.dataset(p, seqs, labels=[0, 1, 1], strict=True)
    ok = importer.dataset(p, seqs, labels=[0, 0, 1])
    assert ok.report.ok and ok.data.sequences[1][2] == tuple(Fraction(float(v)) for v in E[3])


def test_import_errors(tmp_path):
    E = np.zeros((4, 2), dtype=np.float32)
    E[1] = [1, 0]
    E[3] = [np.nan, 0]
    with pytest.raises(importer.FileImportError, match="row 3, column 0 is nan"):
        importer.dataset(E, [[0, 1], [1, 3]], labels=[0, 1])
    assert importer.dataset(E, [[0, 1], [1, 0]], labels=[0, 1]).report.ok  # the NaN row is not used
    with pytest.raises(importer.FileImportError, match="token id 9 is outside the vocabulary"):
        importer.dataset(E, [[0, 9]], labels=[0])
    (tmp_path / "bad.json").write_text(json.dumps([{"tokens": [0, "x"], "label": 0}]))
    with pytest.raises(importer.FileImportError, match="not an integer token id"):
        importer.load_sequences(str(tmp_path / "bad.json"))
    with pytest.raises(importer.FileImportError, match="unknown file type"):
        importer.load_arrays(__file__)
    s2s = tmp_path / "s2s.json"
    s2s.write_text(json.dumps([{"tokens": [0, 1], "label": [0, 1]}, {"tokens": [1, 0], "label": [1, 0]}]))
    ts = importer.load_sequences(str(s2s))
    assert ts.setting == "seq2seq" and ts.labels == [(0, 1), (1, 0)]
    assert importer.exact_value(np.float32(0.1)) == Fraction(13421773, 134217728)
    assert importer.exact_value(np.int64(-3)) == -3
