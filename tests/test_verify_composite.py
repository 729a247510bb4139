"""Producer-side lowerings of ONNX operators to compositions of table ops (exactmem/verify/composite.py).

Each small model here (built with ``onnx.helper``; weights and inputs dyadic, so float32 holds them
exactly) is lowered, evaluated by the producer, and compared with an **exact hand computation** in
Fractions (loops over the operator's definition, no NumPy convolution or einsum) and with onnxruntime;
then ``verify`` certifies every example with its hand-computed argmax as the label and the kernel
re-checks the certificate; finally a **planted fault** — one weight or index nudged until the hand
computation's argmax of example 0 moves — makes ``verify`` refute that label, and the kernel confirms.
ONNX's own backend node cases of these operators run through the lowering in
``test_backend_cases_of_the_lowered_operators`` (harness: ``tests/onnx_lowered.py``).
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from fractions import Fraction as Q
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP, helper as oh, numpy_helper as nh  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from exactmem.kernel.checker import check_certificate  # noqa: E402
from exactmem.verify.evaluate import ArbBackend, Program  # noqa: E402
from exactmem.verify.onnx_import import VerifyInputError, load_onnx, lower  # noqa: E402
from exactmem.verify.run import verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "verify-format.md"


def f32(a):
    return np.asarray(a, dtype=np.float32)


def model(nodes, inp, out_shape, params, ints=None, opset=18):
    """One-input model: ``inp`` (name, shape, TP type), float initializers ``params``, int64 ``ints``."""
    inits = [nh.from_array(f32(v), k) for k, v in params.items()]
    inits += [nh.from_array(np.asarray(v, dtype=np.int64), k) for k, v in (ints or {}).items()]
    g = oh.make_graph(nodes, "t", [oh.make_tensor_value_info(inp[0], inp[2], inp[1])],
                      [oh.make_tensor_value_info("y", TP.FLOAT, out_shape)], inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def exact_scores(m, x, tokens=False):
    """The producer's enclosures [(lo, hi)] of the last position's scores of input x (one example)."""
    x = np.asarray(x)
    low = lower(load_onnx(m), x.shape[0], None if tokens else x.shape[1])
    prog = Program(low.model_json("last"))
    K = ArbBackend(256)
    K.activate()
    arg = x.reshape(1, *x.shape).astype(np.int64) if tokens else \
        np.vectorize(lambda v: Q(float(v)), otypes=[object])(x.reshape(1, *x.shape))
    a = np.asarray(prog.run(K, arg))
    a = a.reshape(-1, a.shape[-1])[-1]
    out = []
    for v in a:
        if not hasattr(v, "mid"):  # a special value (−∞, +∞, NaN)
            out.append((repr(v), repr(v)))
            continue
        m_, r = (Q(int(p)) * Q(2) ** int(e) for p, e in (v.mid().man_exp(), v.rad().man_exp()))
        out.append((m_ - r, m_ + r))
    return out


def ort_scores(m, x):
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    y = s.run(None, {m.graph.input[0].name: np.asarray(x)[None]})[0]
    return y.reshape(-1, y.shape[-1])[-1]


def argmax(scores):
    best = max(scores)
    assert sum(s == best for s in scores) == 1, "a tie in the hand computation: choose other data"
    return scores.index(best)


def Qa(a):
    """A float32 array as nested lists of exact Fractions."""
    return np.vectorize(lambda v: Q(float(v)), otypes=[object])(f32(a))


def check_case(tmp_path, build, hand, params, X, tokens=False, exact=True):
    """The lowering against the hand computation and onnxruntime; verify + check; one planted fault."""
    m = build(params)
    labels = []
    for x in X:
        want = hand(params, x)
        got = exact_scores(m, x, tokens)
        assert len(got) == len(want)
        for (lo, hi), w in zip(got, want):
            assert lo <= w <= hi and (not exact or lo == hi), (lo, hi, w)
        np.testing.assert_allclose(ort_scores(m, x), [float(w) for w in want], rtol=1e-4, atol=1e-4)
        labels.append(argmax(want))
    X = np.asarray(X)
    res = verify(m, X, np.array(labels), out=str(tmp_path), float_count=False)
    assert list(res.verdicts) == ["pass"] * len(X), res.verdicts
    assert check_certificate(res.doc).status == "CERTIFIED"
    fault = planted_fault(hand, params, X[0], labels[0])
    bad = verify(build(fault), X, np.array(labels), out=str(tmp_path / "fault"), float_count=False)
    assert bad.verdicts[0] == "fail", bad.verdicts  # the nudged weight moves example 0's argmax
    v = check_certificate(bad.doc)
    assert v.status == "CERTIFIED", v  # the kernel confirms the refutation
    return res


def planted_fault(hand, params, x, label):
    """The first single-entry nudge of a parameter (±1/2, ±2, ±8) that moves the hand argmax of x."""
    for k, v in params.items():
        for i in range(np.asarray(v).size):
            for d in (0.5, -0.5, 2.0, -2.0, 8.0, -8.0):
                p = {kk: f32(vv).copy() for kk, vv in params.items()}
                p[k].reshape(-1)[i] += d
                s = hand(p, x)
                if max(s) > s[label] or s.count(s[label]) > 1:
                    return p
    raise AssertionError("no single nudge moves the argmax")


def rng_vals(rng, shape, lo=-8, hi=9):
    """k/4 with lo <= k < hi, k != 0 (no zero rows: ties)."""
    v = rng.integers(lo, hi, size=shape)
    return f32(np.where(v == 0, 1, v) / 4)


# ----------------------------------------------------------------------------- Conv


def conv_ref(x, w, b, strides, pads, dil, group):
    """Exact N-d convolution by its definition (x [C, *sp], w [M, C/g, *k]) -> [M, *out]."""
    x, w = Qa(x), Qa(w)
    sp = x.shape[1:]
    M, cg, ks = w.shape[0], w.shape[1], w.shape[2:]
    r = len(sp)
    outs = [(sp[d] + pads[d] + pads[r + d] - ((ks[d] - 1) * dil[d] + 1)) // strides[d] + 1 for d in range(r)]
    y = np.empty([M] + outs, dtype=object)
    for m in range(M):
        g = m // (M // group)
        for o in np.ndindex(*outs):
            acc = Q(0) if b is None else Qa(b)[m]
            for c in range(cg):
                for q in np.ndindex(*ks):
                    i = [o[d] * strides[d] + q[d] * dil[d] - pads[d] for d in range(r)]
                    if all(0 <= i[d] < sp[d] for d in range(r)):
                        acc += x[(g * cg + c, *i)] * w[(m, c, *q)]
            y[(m, *o)] = acc
    return y


def test_conv2d_groups_strides_pads_dilations(tmp_path):
    """Conv 2-D (2 groups, strides 2×1, asymmetric pads, dilation 1×2, bias) then ReduceMax over space."""
    n, d = 4, 10  # x [1, 4, 10] is read as an image [1, 2, 4, 5]
    rng = np.random.default_rng(1)
    params = {"W": rng_vals(rng, (4, 1, 2, 3)), "B": rng_vals(rng, (4,))}
    at = dict(strides=[2, 1], pads=[1, 0, 0, 2], dilations=[1, 2], group=2)

    def build(p):
        nodes = [oh.make_node("Reshape", ["x", "s"], ["im"]),
                 oh.make_node("Conv", ["im", "W", "B"], ["c"], **at),
                 oh.make_node("ReduceMax", ["c", "ax"], ["y"], keepdims=0)]
        return model(nodes, ("x", [1, n, d], TP.FLOAT), [1, 4], p, {"s": [1, 2, 4, 5], "ax": [2, 3]})

    def hand(p, x):
        y = conv_ref(f32(x).reshape(2, 4, 5), p["W"], p["B"], at["strides"], at["pads"], at["dilations"], 2)
        return [max(y[m].reshape(-1)) for m in range(4)]

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (n, d)) for _ in range(3)])


def test_conv1d_same_upper_then_reduce_sum(tmp_path):
    """Conv 1-D with auto_pad SAME_UPPER and stride 2 over x [1, C=3, L=6], then ReduceSum over L."""
    rng = np.random.default_rng(2)
    params = {"W": rng_vals(rng, (5, 3, 4))}

    def build(p):
        nodes = [oh.make_node("Conv", ["x", "W"], ["c"], auto_pad="SAME_UPPER", strides=[2]),
                 oh.make_node("ReduceSum", ["c", "ax"], ["y"], keepdims=0)]
        return model(nodes, ("x", [1, 3, 6], TP.FLOAT), [1, 5], p, {"ax": [2]})

    def hand(p, x):  # SAME_UPPER: out = ceil(6/2) = 3, total pad = (3-1)*2 + 4 - 6 = 2: 1 before, 1 after
        y = conv_ref(x, p["W"], None, [2], [1, 1], [1], 1)
        return [sum(y[m]) for m in range(5)]

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (3, 6)) for _ in range(3)])


def test_conv_transpose_1d(tmp_path):
    """ConvTranspose 1-D, stride 2, pads 1/0: out[y] = Σ x[i]·w[q] over y = 2i + q − 1."""
    rng = np.random.default_rng(3)
    params = {"W": rng_vals(rng, (3, 2, 3)), "B": rng_vals(rng, (2,))}

    def build(p):
        nodes = [oh.make_node("ConvTranspose", ["x", "W", "B"], ["c"], strides=[2], pads=[1, 0]),
                 oh.make_node("Flatten", ["c"], ["y"])]
        return model(nodes, ("x", [1, 3, 4], TP.FLOAT), [1, 16], p)

    def hand(p, x):
        x, w, b = Qa(x), Qa(p["W"]), Qa(p["B"])
        L = 2 * 3 + 3 - 1  # 2·(4−1) + 3 − 1
        y = [[b[m]] * L for m in range(2)]
        for c in range(3):
            for i in range(4):
                for q in range(3):
                    t = 2 * i + q - 1
                    if 0 <= t < L:
                        for m in range(2):
                            y[m][t] += x[c, i] * w[c, m, q]
        return y[0] + y[1]

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (3, 4)) for _ in range(3)])


# ----------------------------------------------------------------------------- Einsum


def test_einsum_attention_scores(tmp_path):
    """q = einsum('bnd,de->bne'), k likewise, scores = einsum('bqe,bke->bqk') summed with a bias; plus a
    transpose-and-sum einsum ('bkq->bq' of a product) — the last position's scores."""
    n, d, e = 3, 4, 2
    rng = np.random.default_rng(4)
    params = {"Wq": rng_vals(rng, (d, e)), "Wk": rng_vals(rng, (d, e))}

    def build(p):
        nodes = [oh.make_node("Einsum", ["x", "Wq"], ["q"], equation="bnd,de->bne"),
                 oh.make_node("Einsum", ["x", "Wk"], ["k"], equation="bnd,de->bne"),
                 oh.make_node("Einsum", ["q", "k"], ["s"], equation="bqe,bke->bqk"),
                 oh.make_node("Einsum", ["s"], ["st"], equation="bqk->bkq"),
                 oh.make_node("Add", ["s", "st"], ["y"])]
        return model(nodes, ("x", [1, n, d], TP.FLOAT), [1, n, n], p)

    def hand(p, x):
        x, wq, wk = Qa(x), Qa(p["Wq"]), Qa(p["Wk"])
        q = [[sum(x[i, a] * wq[a, j] for a in range(d)) for j in range(e)] for i in range(n)]
        k = [[sum(x[i, a] * wk[a, j] for a in range(d)) for j in range(e)] for i in range(n)]
        s = [[sum(q[i][j] * k[t][j] for j in range(e)) for t in range(n)] for i in range(n)]
        return [s[n - 1][t] + s[t][n - 1] for t in range(n)]

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (n, d)) for _ in range(3)])


# ----------------------------------------------------------------------------- gathers and scatters


def test_gather_nd_constant_indices_batch_dims(tmp_path):
    """GatherND(x [1, 3, 4], indices [1, 5, 2], batch_dims=1) -> [1, 5], then a weighted sum."""
    rng = np.random.default_rng(5)
    idx = [[[0, 2], [1, -1], [2, 0], [-3, 3], [1, 1]]]
    params = {"w": rng_vals(rng, (5,), 1, 9)}

    def build(p):
        nodes = [oh.make_node("GatherND", ["x", "i"], ["g"], batch_dims=1), oh.make_node("Mul", ["g", "w"], ["y"])]
        return model(nodes, ("x", [1, 3, 4], TP.FLOAT), [1, 5], p, {"i": idx})

    def hand(p, x):
        x, w = Qa(x), Qa(p["w"])
        return [x[a % 3, b % 4] * w[j] for j, (a, b) in enumerate(idx[0])]

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (3, 4)) for _ in range(3)])


def test_gather_nd_of_token_ids(tmp_path):
    """weight[x] as GatherND(table, Unsqueeze(ids, -1)), and table3[x, x] as GatherND with two computed index
    columns (one-hot products): the token ids' embeddings summed."""
    V, C, n = 5, 4, 3
    rng = np.random.default_rng(6)
    params = {"T": rng_vals(rng, (V, C)), "T3": rng_vals(rng, (V, V, C))}

    def build(p):
        nodes = [oh.make_node("Unsqueeze", ["ids", "m1"], ["u"]),
                 oh.make_node("GatherND", ["T", "u"], ["e1"]),
                 oh.make_node("Concat", ["u", "u"], ["uu"], axis=-1),
                 oh.make_node("GatherND", ["T3", "uu"], ["e2"]),
                 oh.make_node("Add", ["e1", "e2"], ["y"])]
        return model(nodes, ("ids", [1, n], TP.INT64), [1, n, C], p, {"m1": [-1]})

    def hand(p, x):
        t, t3 = Qa(p["T"]), Qa(p["T3"])
        v = int(x[-1])
        return [t[v, c] + t3[v, v, c] for c in range(C)]

    check_case(tmp_path, build, hand, params, [rng.integers(0, V, n) for _ in range(3)], tokens=True)


def test_gather_elements_of_expanded_token_ids(tmp_path):
    """GatherElements(table [V, C], Expand(Unsqueeze(ids), [n, C]), axis 0): out[i, c] = table[ids[i], c]
    (Expand of computed ints is a Gather; the computed indices a one-hot MatMul)."""
    V, C, n = 6, 3, 4
    rng = np.random.default_rng(7)
    params = {"T": rng_vals(rng, (V, C))}

    def build(p):
        nodes = [oh.make_node("Squeeze", ["ids", "z"], ["s"]),
                 oh.make_node("Unsqueeze", ["s", "m1"], ["u"]),
                 oh.make_node("Expand", ["u", "shape"], ["ix"]),
                 oh.make_node("GatherElements", ["T", "ix"], ["g"], axis=0),
                 oh.make_node("Unsqueeze", ["g", "z"], ["y"])]
        return model(nodes, ("ids", [1, n], TP.INT64), [1, n, C], p, {"z": [0], "m1": [-1], "shape": [n, C]})

    def hand(p, x):
        return [Qa(p["T"])[int(x[-1]), c] for c in range(C)]

    check_case(tmp_path, build, hand, params, [rng.integers(0, V, n) for _ in range(3)], tokens=True)


def test_int_buffer_at_computed_positions_and_shifted_ids(tmp_path):
    """RoBERTa's token-type buffer read by GatherElements at indices computed from the ids (an int
    constant: a Gather along the axis, then the matching entries) and BART's shift_tokens_right
    (Concat of a start token with the ids' Slice): both stay token ids that index embeddings."""
    V, C, n = 6, 3, 4
    rng = np.random.default_rng(11)
    params = {"E": rng_vals(rng, (2, C)), "F": rng_vals(rng, (V, C))}
    tt = [[0, 1, 1, 0, 1, 0]]

    def build(p):
        nodes = [oh.make_node("GatherElements", ["TT", "ids"], ["t"], axis=1),
                 oh.make_node("Gather", ["E", "t"], ["e1"]),
                 oh.make_node("Slice", ["ids", "s0", "s1", "ax"], ["head"]),
                 oh.make_node("Concat", ["start", "head"], ["shifted"], axis=1),
                 oh.make_node("Gather", ["F", "shifted"], ["e2"]),
                 oh.make_node("Add", ["e1", "e2"], ["y"])]
        return model(nodes, ("ids", [1, n], TP.INT64), [1, n, C], p,
                     {"TT": tt, "s0": [0], "s1": [n - 1], "ax": [1], "start": [[2]]})

    def hand(p, x):
        e, f = Qa(p["E"]), Qa(p["F"])
        return [e[tt[0][int(x[-1])], c] + f[int(x[-2]), c] for c in range(C)]

    check_case(tmp_path, build, hand, params, [rng.integers(0, V, n) for _ in range(3)], tokens=True)


def test_gather_elements_constant_indices(tmp_path):
    rng = np.random.default_rng(8)
    idx = [[2, 0, 1, 3, 2]]  # axis 1 of x [1, 4]
    params = {"w": rng_vals(rng, (5,), 1, 9)}

    def build(p):
        nodes = [oh.make_node("Reshape", ["x", "s"], ["r"]),
                 oh.make_node("GatherElements", ["r", "i"], ["g"], axis=1),
                 oh.make_node("Mul", ["g", "w"], ["y"])]
        return model(nodes, ("x", [1, 1, 4], TP.FLOAT), [1, 5], p, {"s": [1, 4], "i": idx})

    def hand(p, x):
        return [Qa(x)[0, i] * Qa(p["w"])[j] for j, i in enumerate(idx[0])]

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (1, 4)) for _ in range(3)])


def test_scatter_nd_and_scatter_elements_add(tmp_path):
    """ScatterND writes the input's two values into a bias row; ScatterElements(reduction=add) adds them
    again with a duplicate index (positions 1 and 4, then 4 twice)."""
    rng = np.random.default_rng(9)
    params = {"b": rng_vals(rng, (1, 6))}

    def build(p):
        nodes = [oh.make_node("Reshape", ["x", "s2"], ["u"]),
                 oh.make_node("ScatterND", ["b", "i", "u"], ["t"]),
                 oh.make_node("Reshape", ["x", "s12"], ["u2"]),
                 oh.make_node("ScatterElements", ["t", "j", "u2"], ["y"], axis=1, reduction="add")]
        return model(nodes, ("x", [1, 1, 2], TP.FLOAT), [1, 6], p,
                     {"s2": [2], "s12": [1, 2], "i": [[0, 1], [0, 4]], "j": [[4, 4]]})

    def hand(p, x):
        s = list(Qa(p["b"])[0])
        u = list(Qa(x)[0])
        s[1], s[4] = u[0], u[1]
        s[4] += u[0] + u[1]
        return s

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (1, 2)) for _ in range(3)])


# ----------------------------------------------------------------------------- element-wise and reductions


def test_max_min_abs_clip_leaky_prelu_hardsigmoid(tmp_path):
    """Relu compositions, all on one vector of 8 and concatenated into 7·8 scores."""
    rng = np.random.default_rng(10)
    params = {"w": rng_vals(rng, (8,)), "slope": rng_vals(rng, (8,), 1, 5), "lo": f32([-1]), "hi": f32([1.5]),
              "u": f32(1 + rng.permutation(56) / 64)}  # distinct scales: no ties among the 56 scores
    al = 0.25

    def build(p):
        nodes = [oh.make_node("Reshape", ["x", "s"], ["v"]),
                 oh.make_node("Max", ["v", "w"], ["a"]), oh.make_node("Min", ["v", "w", "hi"], ["b"]),
                 oh.make_node("Abs", ["v"], ["c"]), oh.make_node("Clip", ["v", "lo", "hi"], ["d"]),
                 oh.make_node("LeakyRelu", ["v"], ["e"], alpha=al), oh.make_node("PRelu", ["v", "slope"], ["f"]),
                 oh.make_node("HardSigmoid", ["v"], ["g"], alpha=0.5, beta=0.25),
                 oh.make_node("Concat", ["a", "b", "c", "d", "e", "f", "g"], ["cat"], axis=1),
                 oh.make_node("Mul", ["cat", "u"], ["y"])]
        return model(nodes, ("x", [1, 1, 8], TP.FLOAT), [1, 56], p, {"s": [1, 8]})

    def hand(p, x):
        v, w, sl = list(Qa(x)[0]), list(Qa(p["w"])), list(Qa(p["slope"]))
        lo, hi = Qa(p["lo"])[0], Qa(p["hi"])[0]
        out = [max(a, b) for a, b in zip(v, w)] + [min(a, b, hi) for a, b in zip(v, w)] + [abs(a) for a in v]
        out += [min(max(a, lo), hi) for a in v] + [a if a > 0 else Q(al) * a for a in v]
        out += [a if a > 0 else s * a for a, s in zip(v, sl)]
        out += [min(max(Q(1, 2) * a + Q(1, 4), Q(0)), Q(1)) for a in v]
        return [a * b for a, b in zip(out, Qa(p["u"]))]

    xs = [f32(rng.permutation(np.arange(-7, 9) / 4)[:8]) for _ in range(3)]
    check_case(tmp_path, build, hand, params, [x.reshape(1, 8) for x in xs])


def test_reductions_and_hardswish(tmp_path):
    """ReduceMin, ReduceL1, ReduceSumSquare and ReduceProd over the last axis of x·W, and HardSwish
    (α = 1/6 is not dyadic: an enclosure, not a point) — the scores per row of 3."""
    rng = np.random.default_rng(11)
    params = {"W": rng_vals(rng, (4, 3, 3))}

    def build(p):
        nodes = [oh.make_node("Einsum", ["x", "W"], ["h"], equation="bnd,dck->bnck")]
        outs = []
        for op in ("ReduceMin", "ReduceL1", "ReduceSumSquare", "ReduceProd"):
            nodes.append(oh.make_node(op, ["h", "ax"], [op], keepdims=0))
            outs.append(op)
        nodes.append(oh.make_node("HardSwish", ["ReduceMin"], ["hs"]))
        nodes.append(oh.make_node("Concat", outs + ["hs"], ["y"], axis=-1))
        return model(nodes, ("x", [1, 2, 4], TP.FLOAT), [1, 2, 15], p, {"ax": [-1]})

    def hand(p, x):
        x, w = Qa(x), Qa(p["W"])
        h = [[sum(x[-1, d] * w[d, c, k] for d in range(4)) for k in range(3)] for c in range(3)]
        mn = [min(r) for r in h]
        out = mn + [sum(abs(v) for v in r) for r in h] + [sum(v * v for v in r) for r in h]
        out += [r[0] * r[1] * r[2] for r in h]
        return out + [v * min(max(v / 6 + Q(1, 2), Q(0)), Q(1)) for v in mn]

    check_case(tmp_path, build, hand, params, [rng_vals(rng, (2, 4)) for _ in range(3)], exact=False)


# ----------------------------------------------------------------------------- refusals, constants


def test_scatter_nd_duplicate_indices_is_one_line(tmp_path):
    """ONNX leaves the order of duplicate ScatterND writes undefined: refused, one line, exit code 3."""
    nodes = [oh.make_node("Reshape", ["x", "s2"], ["u"]), oh.make_node("ScatterND", ["b", "i", "u"], ["y"])]
    m = model(nodes, ("x", [1, 1, 2], TP.FLOAT), [1, 4], {"b": np.zeros((1, 4))}, {"s2": [2], "i": [[0, 1], [0, 1]]})
    with pytest.raises(VerifyInputError, match="duplicate indices") as e:
        verify(m, np.zeros((1, 1, 2), np.float32), np.array([0]))
    assert "\n" not in str(e.value)
    path = tmp_path / "dup.onnx"
    onnx.save(m, str(path))
    np.savez(tmp_path / "d.npz", inputs=np.zeros((1, 1, 2), np.float32), labels=np.array([0]))
    r = subprocess.run([sys.executable, "-m", "exactmem", "verify", str(path), "--data", str(tmp_path / "d.npz")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3 and r.stderr.strip().startswith("exactmem: error: cannot lower ONNX operator ScatterND")
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_max_of_a_constant_holding_minus_inf_is_folded_not_composed():
    """Max of constants keeps the importer's exact fold (−∞ is a value there); Max of a computed value and
    a constant −∞ is refused in one line (Relu takes no special value), never computed wrong."""
    ninf = {"m": f32([-np.inf, 1.0])}
    nodes = [oh.make_node("Max", ["m", "m"], ["c"]), oh.make_node("Reshape", ["x", "s"], ["v"]),
             oh.make_node("Add", ["v", "c"], ["y"])]
    m = model(nodes, ("x", [1, 1, 2], TP.FLOAT), [1, 2], ninf, {"s": [1, 2]})
    assert exact_scores(m, f32([[0.5, 0.25]])) == [("-inf", "-inf"), (Q(5, 4), Q(5, 4))]
    nodes = [oh.make_node("Reshape", ["x", "s"], ["v"]), oh.make_node("Max", ["v", "m"], ["y"])]
    with pytest.raises(VerifyInputError, match="Max of a constant holding ±inf"):
        lower(load_onnx(model(nodes, ("x", [1, 1, 2], TP.FLOAT), [1, 2], ninf, {"s": [1, 2]})), 1, 2)


def test_composites_of_constants_fold_to_constants():
    """A Conv, an Einsum and a ReduceSum whose inputs are all initializers leave no node behind: only the
    Add of the input remains."""
    rng = np.random.default_rng(12)
    p = {"c": rng_vals(rng, (1, 2, 5)), "W": rng_vals(rng, (3, 2, 2)), "E": rng_vals(rng, (3, 4))}
    nodes = [oh.make_node("Conv", ["c", "W"], ["k"]),  # [1, 3, 4]
             oh.make_node("Einsum", ["k", "E"], ["e"], equation="bcl,cl->bl"),  # [1, 4]
             oh.make_node("ReduceSum", ["e", "ax"], ["r"], keepdims=1),  # [1, 1]
             oh.make_node("Reshape", ["x", "s"], ["v"]), oh.make_node("Add", ["v", "r"], ["y"])]
    m = model(nodes, ("x", [1, 1, 4], TP.FLOAT), [1, 4], p, {"ax": [1], "s": [1, 4]})
    low = lower(load_onnx(m), 1, 4)
    assert [nd["op"] for nd in low.nodes] == ["Reshape", "Add"]
    c, w, e = Qa(p["c"])[0], Qa(p["W"]), Qa(p["E"])
    k = [[sum(c[i, t + j] * w[o, i, j] for i in range(2) for j in range(2)) for t in range(4)] for o in range(3)]
    total = sum(k[o][t] * e[o, t] for o in range(3) for t in range(4))
    r = [v for v in low.constants.values() if "values" in v and v["shape"] == [1, 1]]
    assert r and Q(r[0]["values"][0]) == total


# ----------------------------------------------------------------------------- ONNX's backend node cases


@pytest.fixture(scope="module")
def lowered_table():
    import onnx_lowered as ol

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return ol.table()


def test_backend_cases_of_the_lowered_operators(lowered_table):
    """Every backend case of a lowered operator: enclosed (lowered with computed inputs, by the kernel and
    the producer; and folded from constants), or refused in one line — none failing."""
    counts, rows = lowered_table
    failing = [(name, col, why) for name, op, col, kind, why in rows if kind == "failing"]
    assert not failing, failing
    for name, op, col, kind, why in rows:
        assert kind != "refused" or ("\n" not in why and len(why) < 300), (name, why)
    enclosed = {op for name, op, col, kind, why in rows if kind == "enclosed"}
    for op in ("Conv", "ConvTranspose", "Einsum", "GatherND", "GatherElements", "ScatterND", "ScatterElements",
               "ReduceSum", "ReduceMax", "ReduceMin", "Max", "Min", "Abs", "Clip", "LeakyRelu", "PRelu",
               "HardSigmoid", "HardSwish", "Elu", "Selu", "Expand"):
        assert op in enclosed, op
    assert sum(c["enclosed"] for op in counts.values() for c in op.values()) >= 3 * 190


def test_the_documented_lowered_table_is_the_measured_one(lowered_table):
    import onnx_lowered as ol

    text = DOC.read_text()
    assert ol.markdown(lowered_table[0]) in text, "docs/verify-format.md's lowered table is stale:\n" + \
        ol.markdown(lowered_table[0])
