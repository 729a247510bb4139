"""The ONNX importer (exactmem/verify/): exact floats, one lowering per operator, folding only
where exact, one-line errors for what it cannot lower."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from flint import fmpq  # noqa: E402

from exactmem.verify.evaluate import ArbBackend, Program, judge  # noqa: E402
from exactmem.verify.floats import NonFinite, decode_bits, exact_array  # noqa: E402
from exactmem.verify.onnx_import import VerifyInputError, load_onnx, lower  # noqa: E402


def test_float_bits_are_exact_dyadics():
    assert exact_array(np.array([0.1], dtype=np.float32))[0] == Fraction(13421773, 134217728)
    assert exact_array(np.array([-2.5, 0.0], dtype=np.float16)).tolist() == [Fraction(-5, 2), 0]
    assert decode_bits(0x3F80, "bfloat16") == 1 and decode_bits(0x0001, "float32") == Fraction(1, 2 ** 149)
    assert exact_array(np.array([1e-310]))[0] == Fraction(1e-310)  # float64 subnormal, as Python's own exact value
    with pytest.raises(NonFinite):
        exact_array(np.array([1.0, np.inf], dtype=np.float32))


def _model(nodes, inits, n=3, vocab=5, d=4, C=3, out_shape=None, opset=18, inp_type=TensorProto.INT64):
    shape = [1, n] if inp_type == TensorProto.INT64 else [1, n, d]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", inp_type, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape or [1, n, C])],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _emb(vocab=5, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((vocab, d)).astype(np.float32)


def test_embedding_matmul_lowers_with_exact_weights():
    E, W = _emb(), np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    m = _model([helper.make_node("Gather", ["E", "ids"], ["h"]), helper.make_node("MatMul", ["h", "W"], ["y"])],
               {"E": E, "W": W})
    L = lower(load_onnx(m), 3)
    assert L.vocab == 5 and L.out_shape == (1, 3, 3) and [nd["op"] for nd in L.nodes] == ["Gather", "MatMul"]
    vals = L.constants["W"]["values"]
    assert [Fraction(v) for v in vals] == [Fraction(float(x)) for x in W.reshape(-1)]
    out = Program(L.model_json("all")).run(ArbBackend(128), np.array([[0, 4, 2]]))
    exact = (exact_array(E)[[0, 4, 2]] @ exact_array(W))
    assert all(o.contains(fmpq(e.numerator, e.denominator)) for o, e in zip(out.reshape(-1), exact.reshape(-1)))


def test_constant_shape_subgraph_folds_and_sqrt_stays_a_node():
    E = _emb()
    nodes = [helper.make_node("Gather", ["E", "ids"], ["h"]),
             helper.make_node("Shape", ["h"], ["s"]),
             helper.make_node("Gather", ["s", "two"], ["dim"], axis=0),
             helper.make_node("Cast", ["dim"], ["dimf"], to=TensorProto.FLOAT),
             helper.make_node("Sqrt", ["dimf"], ["r"]),
             helper.make_node("Div", ["h", "r"], ["y0"]),
             helper.make_node("Concat", ["zero", "neg1", "four"], ["shape"], axis=0),
             helper.make_node("Reshape", ["y0", "shape"], ["y"])]
    m = _model(nodes, {"E": E, "two": np.array(2, np.int64), "zero": np.array([0], np.int64),
                       "neg1": np.array([-1], np.int64), "four": np.array([4], np.int64)}, C=4)
    L = lower(load_onnx(m), 3)
    ops = [nd["op"] for nd in L.nodes]
    assert "Sqrt" in ops and "Shape" not in ops and "Cast" not in ops and "Concat" not in ops
    sq = next(nd for nd in L.nodes if nd["op"] == "Sqrt")
    assert L.constants[sq["inputs"][0]] == {"shape": [], "values": ["4"]}


def test_decomposed_layernorm_and_gelu_are_primitive_ops():
    E = _emb()
    c = lambda v: np.array(v, np.float32)
    nodes = [helper.make_node("Gather", ["E", "ids"], ["h"]),
             helper.make_node("ReduceMean", ["h", "ax"], ["mu"]),
             helper.make_node("Sub", ["h", "mu"], ["xc"]),
             helper.make_node("Pow", ["xc", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq", "ax"], ["var"]),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["xc", "sd"], ["ln"]),
             helper.make_node("Div", ["ln", "r2"], ["a"]), helper.make_node("Erf", ["a"], ["b"]),
             helper.make_node("Add", ["b", "one"], ["c"]), helper.make_node("Mul", ["ln", "c"], ["d"]),
             helper.make_node("Mul", ["d", "half"], ["y"])]
    m = _model(nodes, {"E": E, "ax": np.array([-1], np.int64), "two": c(2), "eps": c(1e-5), "r2": c(1.4142135),
                       "one": c(1), "half": c(0.5)}, C=4)
    L = lower(load_onnx(m), 3)
    assert {nd["op"] for nd in L.nodes} == {"Gather", "ReduceMean", "Sub", "Pow", "Add", "Sqrt", "Div", "Erf", "Mul"}
    v = judge(Program(L.model_json("last")), np.array([[1, 2, 3]]), 0)
    assert v[0] in ("pass", "fail")


def test_split_num_outputs_and_gemm_attributes_are_normalised():
    E = _emb(d=4)
    nodes = [helper.make_node("Gather", ["E", "ids"], ["h"]),
             helper.make_node("Split", ["h"], ["a", "b"], axis=2, num_outputs=2),
             helper.make_node("Add", ["a", "b"], ["y"])]
    L = lower(load_onnx(_model(nodes, {"E": E}, C=2)), 3)
    sp = next(nd for nd in L.nodes if nd["op"] == "Split")
    assert sp["attrs"] == {"axis": 2} and L.constants[sp["inputs"][1]]["ints"] == [2, 2]
    g = [helper.make_node("Gather", ["E", "zero"], ["h"], axis=0), helper.make_node("Gather", ["E", "ids"], ["hh"]),
         helper.make_node("ReduceMean", ["hh", "ax"], ["m"], keepdims=0),
         helper.make_node("Gemm", ["m", "W"], ["y"], transB=1, alpha=0.5)]
    W = np.ones((3, 4), np.float32)
    L = lower(load_onnx(_model(g, {"E": E, "zero": np.array(0, np.int64), "W": W, "ax": np.array([1], np.int64)},
                               out_shape=[1, 3])), 3)
    gm = next(nd for nd in L.nodes if nd["op"] == "Gemm")
    assert gm["attrs"] == {"alpha": "1/2", "beta": "1", "transA": 0, "transB": 1}


def test_unsupported_operator_is_one_line_naming_node_and_neighbours():
    E = _emb()
    nodes = [helper.make_node("Gather", ["E", "ids"], ["h"], name="embed"),
             helper.make_node("TopK", ["h", "k"], ["y", "idx"], name="topk", axis=-1),
             ]
    m = _model(nodes, {"E": E, "k": np.array([3], np.int64)})
    with pytest.raises(VerifyInputError) as e:
        lower(load_onnx(m), 3)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("cannot lower ONNX operator TopK (node 'topk'")
    assert "Gather 'embed'" in msg and "the graph output 'y'" in msg


def test_malformed_and_mismatched_models_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf")
    with pytest.raises(VerifyInputError) as e:
        load_onnx(str(bad))
    assert "\n" not in str(e.value) and "bad.onnx" in str(e.value)
    with pytest.raises(VerifyInputError, match="no such file"):
        load_onnx(str(tmp_path / "missing.onnx"))
    m = _model([helper.make_node("Gather", ["E", "ids"], ["y"])], {"E": _emb()}, C=4)
    with pytest.raises(VerifyInputError, match=r"has shape \[1, 3\]; the data needs \[1, 5\]"):
        lower(load_onnx(m), 5)
    nan = _emb()
    nan[2, 1] = np.nan
    L = lower(load_onnx(_model([helper.make_node("Gather", ["E", "ids"], ["y"])], {"E": nan}, C=4)), 3)
    vals = L.constants["E"]["values"]  # NaN is a value of the real network now (docs/verify-format.md)
    assert vals[2 * nan.shape[1] + 1] == "nan" and vals.count("nan") == 1


def test_vectors_input_and_masked_softmax_with_where():
    d = 4
    mask = np.triu(np.ones((3, 3), bool), 1)
    nodes = [helper.make_node("Transpose", ["ids"], ["xt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["ids", "xt"], ["s"]),
             helper.make_node("Where", ["mask", "minf", "s"], ["sm"]),
             helper.make_node("Softmax", ["sm"], ["p"]),
             helper.make_node("MatMul", ["p", "ids"], ["y"])]
    m = _model(nodes, {"mask": mask, "minf": np.array(-3.4e38, np.float32)}, C=d, inp_type=TensorProto.FLOAT)
    L = lower(load_onnx(m), 3, d)
    assert L.input_type == "vectors" and L.constants["mask"]["ints"] == [0, 1, 1, 0, 0, 1, 0, 0, 0]
    x = exact_array(np.array([[[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0.5]]], np.float32))
    out = Program(L.model_json("all")).run(ArbBackend(64), x)
    assert out[0, 0, 0].contains(1) and out[0, 0, 1].contains(0)  # the first position sees only itself
