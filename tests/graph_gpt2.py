import numpy as np
from fractions import Fraction

def f32(a):
    """Exact rational strings of float32 values."""
    out = []
    for v in np.asarray(a, dtype=np.float32).ravel().tolist():
        q = Fraction(v)
        out.append(str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}")
    return out

def gpt2_graph(seed=0, layers=2, d=64, heads=4, n=16, vocab=256, tanh=True):
    rng = np.random.default_rng(seed)
    W = lambda *s, sc=0.02: (rng.standard_normal(s) * sc).astype(np.float32)
    C, N, ws = {}, [], {}
    def const(name, arr):
        arr = np.asarray(arr, dtype=np.float32); ws[name] = arr
        C[name] = {"shape": list(arr.shape), "values": f32(arr)}
        return name
    def ic(name, vals, shape=None):
        C[name] = {"shape": [len(vals)] if shape is None else shape, "ints": list(vals)}; return name
    def node(op, ins, out, **attrs):
        N.append({"op": op, "inputs": ins, "outputs": out if isinstance(out, list) else [out], "attrs": attrs})
        return out
    const("wte", W(vocab, d, sc=0.1)); const("wpe", W(n, d, sc=0.05))
    ic("pos", list(range(n)), [1, n]); ic("ax2", [2])
    ic("shp_h", [1, n, heads, d // heads]); ic("shp_d", [1, n, d])
    mask = np.triu(np.ones((n, n), dtype=bool), 1)
    ic("causal", [0 if m else 1 for m in mask.ravel().tolist()], [1, 1, n, n])
    C["neg"] = {"shape": [], "values": [str(int(Fraction(float(np.finfo(np.float32).min))))]}
    C["hd"] = {"shape": [], "values": [str(d // heads)]}
    node("Gather", ["wte", "input_ids"], "te", axis=0)
    node("Gather", ["wpe", "pos"], "pe", axis=0)
    node("Add", ["te", "pe"], "h0")
    node("Sqrt", ["hd"], "sqd")
    h = "h0"
    for l in range(layers):
        p = f"l{l}_"
        const(p + "g1", 1 + W(d, sc=0.1)); const(p + "b1", W(d))
        node("LayerNormalization", [h, p + "g1", p + "b1"], p + "x1", axis=-1, epsilon="1/100000")
        const(p + "Wa", W(d, 3 * d)); const(p + "ba", W(3 * d))
        node("MatMul", [p + "x1", p + "Wa"], p + "qkv0"); node("Add", [p + "qkv0", p + "ba"], p + "qkv")
        node("Split", [p + "qkv"], [p + "q", p + "k", p + "v"], axis=2)
        for t in "qkv":
            node("Reshape", [p + t, "shp_h"], p + t + "r")
        node("Transpose", [p + "qr"], p + "qt", perm=[0, 2, 1, 3])
        node("Transpose", [p + "kr"], p + "kt", perm=[0, 2, 3, 1])
        node("Transpose", [p + "vr"], p + "vt", perm=[0, 2, 1, 3])
        node("MatMul", [p + "qt", p + "kt"], p + "s0")
        node("Div", [p + "s0", "sqd"], p + "s1")
        node("Where", ["causal", p + "s1", "neg"], p + "s2")
        node("Softmax", [p + "s2"], p + "a", axis=-1)
        node("MatMul", [p + "a", p + "vt"], p + "o0")
        node("Transpose", [p + "o0"], p + "o1", perm=[0, 2, 1, 3])
        node("Reshape", [p + "o1", "shp_d"], p + "o2")
        const(p + "Wo", W(d, d)); const(p + "bo", W(d))
        node("MatMul", [p + "o2", p + "Wo"], p + "o3"); node("Add", [p + "o3", p + "bo"], p + "o4")
        node("Add", [h, p + "o4"], p + "h1")
        const(p + "g2", 1 + W(d, sc=0.1)); const(p + "b2", W(d))
        node("LayerNormalization", [p + "h1", p + "g2", p + "b2"], p + "x2", axis=-1, epsilon="1/100000")
        const(p + "Wf", W(d, 4 * d)); const(p + "bf", W(4 * d))
        node("MatMul", [p + "x2", p + "Wf"], p + "f0"); node("Add", [p + "f0", p + "bf"], p + "f1")
        node("Gelu", [p + "f1"], p + "f2", approximate="tanh" if tanh else "none")
        const(p + "Wp", W(4 * d, d)); const(p + "bp", W(d))
        node("MatMul", [p + "f2", p + "Wp"], p + "f3"); node("Add", [p + "f3", p + "bp"], p + "f4")
        node("Add", [p + "h1", p + "f4"], p + "h2")
        h = p + "h2"
    const("gf", 1 + W(d, sc=0.1)); const("bf", W(d))
    node("LayerNormalization", [h, "gf", "bf"], "xf", axis=-1, epsilon="1/100000")
    C["head"] = {"shape": [d, vocab], "values": f32(ws["wte"].T)}; ws["head"] = ws["wte"].T
    node("MatMul", ["xf", "head"], "logits")
    return {"input": "input_ids", "output": "logits", "constants": C, "nodes": N}, ws

def gpt2_float(ws, ids, layers=2, d=64, heads=4, tanh=True):
    """float64 numpy reference of the same network (for labels and a sanity comparison)."""
    from math import erf, sqrt, pi
    n = len(ids); x = ws["wte"][ids].astype(np.float64) + ws["wpe"][:n]
    ln = lambda x, g, b: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    for l in range(layers):
        p = f"l{l}_"
        a = ln(x, ws[p + "g1"], ws[p + "b1"]) @ ws[p + "Wa"] + ws[p + "ba"]
        q, k, v = (a[:, i * d:(i + 1) * d].reshape(n, heads, -1).transpose(1, 0, 2) for i in range(3))
        s = q @ k.transpose(0, 2, 1) / sqrt(d // heads)
        s = np.where(np.triu(np.ones((n, n), bool), 1), -3.4e38, s)
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(n, d) @ ws[p + "Wo"] + ws[p + "bo"]
        x = x + o
        f = ln(x, ws[p + "g2"], ws[p + "b2"]) @ ws[p + "Wf"] + ws[p + "bf"]
        if tanh:
            f = 0.5 * f * (1 + np.tanh(sqrt(2 / pi) * (f + 0.044715 * f ** 3)))
        else:
            f = f * 0.5 * (1 + np.vectorize(erf)(f / sqrt(2)))
        x = x + f @ ws[p + "Wp"] + ws[p + "bp"]
    return ln(x, ws["gf"], ws["bf"]) @ ws["head"]
