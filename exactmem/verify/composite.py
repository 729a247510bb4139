"""ONNX operators lowered in the producer to compositions of the existing table ops.

Each function here has the signature of `exactmem.verify.ops` (``f(cx, node, ins, at)``) and emits,
through ``cx.op``, only ops of the table in ``docs/verify-format.md``, so the kernel does not change.
Each composition computes the **same real-number function** as the ONNX operator (exact identities;
the enclosure the kernel computes may be looser, never wrong); when every input is a constant,
``cx.op`` folds each step exactly, so the composition folds to a constant too.

The identities used:

* **Index maps** (GatherND, GatherElements, ScatterND, ScatterElements, Conv's im2col, Einsum's
  diagonals): the output is one ``Gather`` from the flattened input — concatenated with the updates
  for a scatter, with one 0 for the padding of a convolution — at a constant index map computed
  here with integer arithmetic. Moving elements computes nothing, so it is exact.
* **Computed indices** (GatherND, GatherElements whose indices depend on the input): a row of the
  identity matrix, ``Gather(eye(D), i)``, is the one-hot vector of ``i``; the gathered value is the
  ``MatMul`` of that one-hot row with the data (every product is by 0 or 1, every sum has one term
  that is not 0: exact).
* **Sums** (ReduceSum, ReduceSumSquare, ReduceL1, ReduceL2, Einsum's summed letters): the summed axes
  are moved last and flattened, then ``MatMul`` with a column of ones (exact).
* **Max and min**: ``max(a, b) = a + Relu(b − a)``, ``min(a, b) = a − Relu(a − b)``, pairwise over a
  tree for ReduceMax / ReduceMin; ``|x| = Relu(x) + Relu(−x)``; ``Clip`` is a max then a min;
  ``LeakyRelu(x) = Relu(x) − α·Relu(−x)`` (PRelu with the slope tensor), ``HardSigmoid(x) =
  Relu(y) − Relu(y − 1)`` with ``y = αx + β``, ``HardSwish(x) = x·HardSigmoid(x)`` (α = 1/6, β = 1/2),
  ``Elu(x) = Relu(x) + α(exp(−Relu(−x)) − 1)`` (Selu and Celu alike).
* **Expand of integers computed from the input** (token ids): Reshape, then Concat of copies.
* **Convolutions**: im2col as one ``Gather`` (pad positions read the appended 0), then ``MatMul``
  with the kernel reshaped per group, then the bias; ConvTranspose the same with the index map of
  the transposed convolution.
* **Einsum**: per operand, letters it alone carries and the output lacks are summed first; then a
  batched ``MatMul`` over the shared letters (``Transpose``/``Reshape`` around it).

Relu takes no special value (−∞, +∞, NaN), so the max/min family refuses constants holding one
(``Max``, ``Min`` and ``Abs`` of constants keep the importer's exact folds, which have ONNX's rules
for them); on a computed value holding one, the kernel refuses the model in one line.
Softplus and Mish need a logarithm (a kernel op); TopK's indices are not a continuous function of
the input and are not lowered.
"""

from __future__ import annotations

import string
from fractions import Fraction
from typing import Dict, List, Sequence

import numpy as np

from .ops import LOWER, Const, Dyn, LowerError, _rat, int_const
from .special import NEG_INF, POS_INF, holds_special

__all__ = ["composite_table", "COMPOSITE_OPS"]


# ----------------------------------------------------------------------------- helpers


def _op(cx, name, ins, **attrs):
    return cx.op(name, list(ins), attrs, 1)[0]


def _rats(values, shape=None) -> Const:
    a = np.empty(np.shape(values) if shape is None else shape, dtype=object)
    a.reshape(-1)[:] = [Fraction(v) for v in np.asarray(values, dtype=object).reshape(-1)]
    return Const(a, "rat")


def _scalar(q) -> Const:
    return _rats([q], ())


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _reshape(cx, x, shape):
    shape = [int(s) for s in shape]
    if list(x.shape) == shape:
        return x
    if 0 in shape:  # Reshape reads 0 as "copy the dimension"
        raise LowerError(f"a composition would reshape {list(x.shape)} to the empty {shape}")
    return _op(cx, "Reshape", [x, int_const(shape)])


def _transpose(cx, x, perm):
    perm = [int(p) for p in perm]
    return x if perm == list(range(len(perm))) else _op(cx, "Transpose", [x], perm=perm)


def _slice(cx, x, axis, start, end):
    return _op(cx, "Slice", [x, int_const([start]), int_const([end]), int_const([axis]), int_const([1])])


def _matmul(cx, a, b):
    return _op(cx, "MatMul", [a, b])


def _take(cx, x, index, pad: bool = False):
    """``Gather(flat(x) ++ [0], index)``: the output has ``index``'s shape; index ``x.size`` (only with
    ``pad``) reads the appended 0 (of x's kind)."""
    index = np.asarray(index, dtype=np.int64)
    n = _size(x.shape)
    if index.shape == tuple(x.shape) and np.array_equal(index.reshape(-1), np.arange(n)):
        return x
    flat = _reshape(cx, x, [n])
    if pad and index.size and index.max() >= n:
        zero = int_const([0]) if x.kind == "int" else _rats([0])
        flat = _op(cx, "Concat", [flat, zero], axis=0)
    return _op(cx, "Gather", [flat, int_const(index)], axis=0)


def _norm_index(idx, dim, what):
    """ONNX's negative indices count from the end; anything outside [−dim, dim) is an error."""
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size and (np.any(idx < -dim) or np.any(idx >= dim)):
        raise LowerError(f"{what}: an index is out of range [{-dim}, {dim})")
    return np.where(idx < 0, idx + dim, idx)


def _real(x, what):
    if x.kind == "int" and isinstance(x, Dyn):
        raise LowerError(f"{what} of integers computed from the input (the table's arithmetic is on rationals)")


def _no_special(ins, what):
    """Relu and one-hot products take no ±inf/NaN: refuse constants holding one here."""
    for v in ins:
        if isinstance(v, Const) and v.kind == "rat" and holds_special(v.value):
            raise LowerError(f"{what} of a constant holding ±inf or NaN (lowered through Relu/MatMul, "
                             "which take no special value)")


def _max(cx, a, b):
    return _op(cx, "Add", [a, _op(cx, "Relu", [_op(cx, "Sub", [b, a])])])


def _min(cx, a, b):
    return _op(cx, "Sub", [a, _op(cx, "Relu", [_op(cx, "Sub", [a, b])])])


def _eye(d) -> Const:
    return _rats(np.eye(d, dtype=np.int64).astype(object))


def _one_hot(cx, idx, dim):
    """``Gather(eye(dim), idx)``: the one-hot rows (0/1 rationals) of computed indices, shape idx + [dim]
    (a negative index picks row dim + i, as ONNX's gathers count it)."""
    return _op(cx, "Gather", [_eye(dim), idx], axis=0)


# ----------------------------------------------------------------------------- gathers


def lower_gather_nd(cx, node, ins, at):
    """GatherND: ``out[b..., n...] = data[b..., i[b..., n..., 0], …, i[…, k−1], …]`` (batch_dims b)."""
    data, idx = ins
    b = int(at.get("batch_dims", 0))
    ds, ish = tuple(data.shape), tuple(idx.shape)
    if not ish or b >= len(ish) or b + ish[-1] > len(ds) or ish[:b] != ds[:b]:
        raise LowerError(f"GatherND: indices {list(ish)} do not fit data {list(ds)} with batch_dims {b}")
    k, lead, rest = ish[-1], ish[:-1], ds[b + ish[-1]:]
    sel = ds[b:b + k]
    if isinstance(idx, Const):
        i = _norm_index(idx.value.astype(np.int64), np.asarray(sel, dtype=np.int64), "GatherND")
        coords = np.concatenate([np.moveaxis(np.indices(lead, dtype=np.int64)[:b], 0, -1), i], axis=-1)
        rows = np.ravel_multi_index(tuple(np.moveaxis(coords, -1, 0)), ds[:b + k]) if b + k else \
            np.zeros(lead, dtype=np.int64)
        table = _reshape(cx, data, [_size(ds[:b + k])] + list(rest))
        return [_op(cx, "Gather", [table, int_const(rows)], axis=0)]
    if b == 0 and k == 1:  # weight[x]: a plain Gather of the squeezed indices
        return [_op(cx, "Gather", [data, _op(cx, "Squeeze", [idx, int_const([-1])])], axis=0)]
    if data.kind == "int":
        raise LowerError("GatherND of integers with computed indices (several index columns or batch_dims need "
                         "one-hot products, which are arithmetic)")
    _no_special([data], "GatherND with computed indices")
    cols = [_reshape(cx, _slice(cx, idx, len(ish) - 1, j, j + 1), list(lead)) for j in range(k)]
    if b == 0:  # the first column by a Gather, the others by one-hot products per position
        data = _op(cx, "Gather", [data, cols[0]], axis=0)  # lead + sel[1:] + rest
        cols, sel, bdims = cols[1:], sel[1:], tuple(lead)
    else:
        bdims = ds[:b]
    oh = None
    for c, d in zip(cols, sel):
        h = _one_hot(cx, c, d)  # lead + [d]
        oh = h if oh is None else _reshape(cx, _op(cx, "Mul", [_op(cx, "Unsqueeze", [oh, int_const([-1])]),
                                                              _op(cx, "Unsqueeze", [h, int_const([-2])])]),
                                           list(lead) + [oh.shape[-1] * d])
    p, nb, r = _size(sel), _size(bdims), _size(rest)
    nn = _size(lead) // max(nb, 1) if nb else 0
    out = _matmul(cx, _reshape(cx, oh, [nb, nn, p]), _reshape(cx, data, [nb, p, r]))
    return [_reshape(cx, out, list(lead) + list(rest))]


def lower_gather_elements(cx, node, ins, at):
    """GatherElements: ``out[j] = data[j with j[axis] replaced by indices[j]]``."""
    data, idx = ins
    r = len(data.shape)
    axis = int(at.get("axis", 0))
    if not -r <= axis < r or len(idx.shape) != r:
        raise LowerError(f"GatherElements: axis {axis} or indices {list(idx.shape)} do not fit data {list(data.shape)}")
    axis %= r
    ds, ish = tuple(data.shape), tuple(idx.shape)
    if any(ish[a] > ds[a] for a in range(r) if a != axis):
        raise LowerError(f"GatherElements: indices {list(ish)} exceed data {list(ds)} off the axis")
    if isinstance(idx, Const):
        coords = np.indices(ish, dtype=np.int64)
        coords[axis] = _norm_index(idx.value, ds[axis], "GatherElements")
        return [_take(cx, data, np.ravel_multi_index(tuple(coords), ds) if coords.size else np.zeros(ish, np.int64))]
    if data.kind == "int":  # an exact index move: a Gather along the axis, then the entries whose other
        # coordinates agree with the output's (RoBERTa's token-type buffer read at computed position ids)
        g, gs = _op(cx, "Gather", [data, idx], axis=axis), ds[:axis] + ish + ds[axis + 1:]
        if _size(gs) > 1 << 22:
            raise LowerError(f"GatherElements of integers with computed indices: the gathered tensor {list(gs)} "
                             "is too large")
        c = list(np.indices(ish, dtype=np.int64))
        return [_take(cx, g, np.ravel_multi_index(tuple(c[:axis] + c + c[axis + 1:]), gs) if ish else
                      np.zeros(ish, np.int64))]
    _no_special([data], "GatherElements with computed indices")
    for a in range(r):  # the data positions the output reads off the axis
        if a != axis and ish[a] < ds[a]:
            data = _slice(cx, data, a, 0, ish[a])
    perm = [a for a in range(r) if a != axis] + [axis]
    oh = _transpose(cx, _one_hot(cx, idx, ds[axis]), perm + [r])  # others + [J, D]
    col = _op(cx, "Unsqueeze", [_transpose(cx, data, perm), int_const([-1])])  # others + [D, 1]
    out = _reshape(cx, _matmul(cx, oh, col), [ish[a] for a in perm])
    return [_transpose(cx, out, list(np.argsort(perm)))]


# ----------------------------------------------------------------------------- scatters


def _scatter(cx, data, updates, targets, reduction, what):
    """``data`` with each update element folded into the data element ``targets[u]`` (flat positions),
    in order: one Gather from ``flat(data) ++ flat(updates) (++ neutral)`` per layer of repeats."""
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction not in ("none", "add", "mul", "max", "min"):
        raise LowerError(f"{what} reduction={reduction!r}")
    s, u = _size(data.shape), _size(updates.shape)
    layers: List[Dict[int, int]] = []
    for k, t in enumerate(np.asarray(targets, dtype=np.int64).reshape(-1)):
        j = next((j for j, lay in enumerate(layers) if int(t) not in lay), len(layers))
        if j == len(layers):
            layers.append({})
        layers[j][int(t)] = s + k
    if reduction == "none" and len(layers) > 1:
        raise LowerError(f"{what} with duplicate indices (ONNX leaves the order of the writes undefined)")
    if not layers:
        return data
    if reduction != "none":
        _real(data, f"{what} reduction={reduction}")
        _real(updates, f"{what} reduction={reduction}")
        _no_special([data, updates], f"{what} reduction={reduction}")
    parts = [_reshape(cx, data, [s]), _reshape(cx, updates, [u])]
    neutral = {"add": 0, "mul": 1}.get(reduction)
    if neutral is not None:
        parts.append(_rats([neutral]))
    flat = _op(cx, "Concat", parts, axis=0)
    out = data
    for lay in layers:
        fill = np.full(s, s + u, dtype=np.int64) if neutral is not None else np.arange(s, dtype=np.int64)
        for t, v in lay.items():
            fill[t] = v
        g = _reshape(cx, _op(cx, "Gather", [flat, int_const(fill)], axis=0), list(data.shape))
        if reduction == "none":
            out = g
        elif reduction in ("add", "mul"):
            out = _op(cx, "Add" if reduction == "add" else "Mul", [out, g])
        else:
            out = (_max if reduction == "max" else _min)(cx, out, g)
    return out


def _const_indices(idx, what):
    if not isinstance(idx, Const):
        raise LowerError(f"{what} with indices computed from the input (only constant indices are lowered)")
    return idx.value.astype(np.int64)


def lower_scatter_nd(cx, node, ins, at):
    """ScatterND: the rows ``data[i[q]]`` replaced by (or reduced with) ``updates[q]``."""
    data, idx, upd = ins
    i = _const_indices(idx, "ScatterND")
    ds, k = tuple(data.shape), i.shape[-1] if i.ndim else 0
    if i.ndim == 0 or k > len(ds) or tuple(upd.shape) != i.shape[:-1] + ds[k:]:
        raise LowerError(f"ScatterND: indices {list(i.shape)} and updates {list(upd.shape)} do not fit data {list(ds)}")
    i = _norm_index(i, np.asarray(ds[:k], dtype=np.int64), "ScatterND")
    r = _size(ds[k:])
    rows = np.ravel_multi_index(tuple(np.moveaxis(i, -1, 0)), ds[:k]) if k else np.zeros(i.shape[:-1], np.int64)
    targets = (rows.reshape(-1, 1) * r + np.arange(r)).reshape(-1)
    return [_scatter(cx, data, upd, targets, at.get("reduction", "none"), "ScatterND")]


def lower_scatter_elements(cx, node, ins, at):
    """ScatterElements (and the older Scatter): ``data[j with j[axis] = indices[j]] = updates[j]``."""
    data, idx, upd = ins
    i = _const_indices(idx, node.op_type)
    r = len(data.shape)
    axis = int(at.get("axis", 0))
    if not -r <= axis < r or i.shape != tuple(upd.shape) or i.ndim != r:
        raise LowerError(f"{node.op_type}: indices {list(i.shape)} / updates {list(upd.shape)} do not fit data "
                         f"{list(data.shape)} on axis {axis}")
    axis %= r
    coords = np.indices(i.shape, dtype=np.int64)
    coords[axis] = _norm_index(i, data.shape[axis], node.op_type)
    targets = np.ravel_multi_index(tuple(coords), tuple(data.shape)) if i.size else np.zeros(0, np.int64)
    return [_scatter(cx, data, upd, targets, at.get("reduction", "none"), node.op_type)]


# ----------------------------------------------------------------------------- convolutions


def _conv_geometry(x, w, at, transpose):
    r = len(x.shape) - 2
    if r < 1 or len(w.shape) != r + 2:
        raise LowerError(f"{'ConvTranspose' if transpose else 'Conv'}: input {list(x.shape)} and weight "
                         f"{list(w.shape)} (N×C×spatial and a kernel of the same rank)")
    ks = [int(v) for v in at.get("kernel_shape", w.shape[2:])]
    if ks != list(w.shape[2:]):
        raise LowerError(f"kernel_shape {ks} differs from the weight's {list(w.shape[2:])}")
    strides = [int(v) for v in at.get("strides", [1] * r)]
    dil = [int(v) for v in at.get("dilations", [1] * r)]
    pads = [int(v) for v in at.get("pads", [0] * (2 * r))]
    auto = at.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    return r, ks, strides, dil, pads, auto


def _conv_map(n, c, sp, outs, ks, pb, src):
    """Index map [N, P, C·K] into flat(x) ++ [0]: ``src(o, q)`` gives, per output position o and kernel
    position q (both flat over their grids), the input coordinates (r × P × K) and which are valid."""
    r = len(sp)
    o = np.indices(outs, dtype=np.int64).reshape(r, -1)
    q = np.indices(ks, dtype=np.int64).reshape(r, -1)
    coords, valid = src(o[:, :, None], q[:, None, :])
    for d in range(r):
        valid &= (coords[d] >= 0) & (coords[d] < sp[d])
    s = _size(sp)
    spat = np.ravel_multi_index(tuple(np.clip(coords[d], 0, max(sp[d] - 1, 0)) for d in range(r)), sp)
    m = (np.arange(n)[:, None, None, None] * c * s + np.arange(c)[None, None, :, None] * s
         + spat[None, :, None, :])  # [N, P, C, K]
    m = np.where(valid[None, :, None, :], m, n * c * s)
    return m.reshape(n, o.shape[1], c * q.shape[1])


def _grouped_matmul(cx, x, m, wk, g, b, out_shape):
    """cols = Gather(x, m) [N, P, C·K] by groups [N, G, P, Cg·K] @ wk [G, Cg·K, Mg], then + bias."""
    n, p, ck = m.shape
    m = m.reshape(n, p, g, ck // g).transpose(0, 2, 1, 3)
    y = _matmul(cx, _take(cx, x, m, pad=True), wk)  # [N, G, P, Mg]
    y = _reshape(cx, _transpose(cx, y, [0, 1, 3, 2]), [n, g * wk.shape[-1]] + list(out_shape))
    if b is not None:
        y = _op(cx, "Add", [y, _reshape(cx, b, [g * wk.shape[-1]] + [1] * len(out_shape))])
    return y


def _conv_inputs(ins, at, op: str, transpose: bool):
    """(x, w, bias or None, `_conv_geometry`) of a Conv or ConvTranspose, refusing integer and special inputs."""
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    for v in (x, w, b):
        if v is not None:
            _real(v, op)
    _no_special(ins, op)
    return x, w, b, _conv_geometry(x, w, at, transpose)


def lower_conv(cx, node, ins, at):
    """Conv: im2col as one Gather, MatMul with the kernel per group, + bias."""
    x, w, b, (r, ks, st, dil, pads, auto) = _conv_inputs(ins, at, "Conv", False)
    n, c, sp = x.shape[0], x.shape[1], list(x.shape[2:])
    g, mo, cg = int(at.get("group", 1)), w.shape[0], w.shape[1]
    if cg * g != c or mo % g:
        raise LowerError(f"Conv: {c} input channels, weight {list(w.shape)}, group {g} do not fit")
    ext = [(k - 1) * d + 1 for k, d in zip(ks, dil)]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        outs = [-(-i // s) for i, s in zip(sp, st)]
        tot = [max(0, (o - 1) * s + e - i) for o, s, e, i in zip(outs, st, ext, sp)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in tot]
    elif auto in ("NOTSET", "VALID"):
        pads = [0] * (2 * r) if auto == "VALID" else pads
        pb = pads[:r]
        outs = [(i + pads[d] + pads[r + d] - e) // s + 1 for d, (i, e, s) in enumerate(zip(sp, ext, st))]
    else:
        raise LowerError(f"Conv auto_pad={auto!r}")
    if min(outs) <= 0:
        raise LowerError(f"Conv: the kernel does not fit the padded input {sp}")
    stv, dv, pbv = (np.asarray(v, dtype=np.int64).reshape(r, 1, 1) for v in (st, dil, pb))
    m = _conv_map(n, c, sp, outs, ks, pb, lambda o, q: (o * stv + q * dv - pbv, np.ones(
        (o.shape[1], q.shape[2]), dtype=bool)))
    wk = _transpose(cx, _reshape(cx, w, [g, mo // g, cg * _size(ks)]), [0, 2, 1])
    return [_grouped_matmul(cx, x, m, wk, g, b, outs)]


def lower_conv_transpose(cx, node, ins, at):
    """ConvTranspose: ``out[y] = Σ x[i]·w[q]`` over ``y = i·s + q·d − pad``: the same Gather + MatMul with
    the transposed index map (``i = (y + pad − q·d)/s`` where that is an integer in range)."""
    x, w, b, (r, ks, st, dil, pads, auto) = _conv_inputs(ins, at, "ConvTranspose", True)
    n, c, sp = x.shape[0], x.shape[1], list(x.shape[2:])
    g, mg = int(at.get("group", 1)), w.shape[1]
    if w.shape[0] != c or c % g:
        raise LowerError(f"ConvTranspose: {c} input channels, weight {list(w.shape)}, group {g} do not fit")
    opad = [int(v) for v in at.get("output_padding", [0] * r)][:r]
    ext = [(k - 1) * d + 1 for k, d in zip(ks, dil)]
    natural = [s * (i - 1) + op + e for s, i, op, e in zip(st, sp, opad, ext)]
    if "output_shape" in at or auto in ("SAME_UPPER", "SAME_LOWER"):
        outs = [int(v) for v in at["output_shape"]][-r:] if "output_shape" in at else [i * s for i, s in zip(sp, st)]
        tot = [nat - o for nat, o in zip(natural, outs)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in tot]
    elif auto in ("NOTSET", "VALID"):
        pads = [0] * (2 * r) if auto == "VALID" else pads
        pb = pads[:r]
        outs = [nat - pads[d] - pads[r + d] for d, nat in enumerate(natural)]
    else:
        raise LowerError(f"ConvTranspose auto_pad={auto!r}")
    if min(outs) <= 0:
        raise LowerError(f"ConvTranspose: output shape {outs}")
    stv, dv, pbv = (np.asarray(v, dtype=np.int64).reshape(r, 1, 1) for v in (st, dil, pb))

    def src(o, q):
        num = o + pbv - q * dv
        return num // stv, np.all(num % stv == 0, axis=0)

    m = _conv_map(n, c, sp, outs, ks, pb, src)
    cg = c // g  # w [C, Mg, *ks] -> [G, Cg·K, Mg]
    wk = _reshape(cx, _transpose(cx, _reshape(cx, w, [g, cg, mg, _size(ks)]), [0, 1, 3, 2]), [g, cg * _size(ks), mg])
    return [_grouped_matmul(cx, x, m, wk, g, b, outs)]


# ----------------------------------------------------------------------------- reductions


def _reduce_args(cx, node, ins, at, since):
    """(x, sorted axes, keepdims) or None for the identity (noop_with_empty_axes); axes from the input
    from opset ``since`` (13 for ReduceSum, 18 for the others), else from the attribute."""
    x = ins[0]
    rank = len(x.shape)
    if "axes" in at:
        axes = [int(a) for a in at["axes"]]
    elif len(ins) > 1 and ins[1] is not None:
        if not isinstance(ins[1], Const):
            raise LowerError(f"{node.op_type}'s axes must be a constant")
        axes = [int(a) for a in ins[1].value.reshape(-1)]
    else:
        axes = []
    if not axes:
        if int(at.get("noop_with_empty_axes", 0)) and cx.opset >= since:
            return None
        axes = list(range(rank))
    norm = [a % rank if -rank <= a < rank else None for a in axes]
    if None in norm or len(set(norm)) != len(norm):
        raise LowerError(f"{node.op_type}: axes {axes} out of range or repeated for rank {rank}")
    return x, sorted(norm), int(at.get("keepdims", 1))


def _empty_reduction(cx, node, kind, shape):
    """A reduction over no elements: 0 (sums), 1 (product), and for ReduceMax / ReduceMin −∞ / +∞, or
    for an integer type its least / greatest value (False / True for booleans), as ONNX defines."""
    if kind not in ("max", "min"):
        return _rats(np.full(shape, 1 if kind == "prod" else 0, dtype=object))
    from onnx import TensorProto, helper

    ty = cx.types.get(node.input[0], TensorProto.FLOAT)
    dt = np.dtype(helper.tensor_dtype_to_np_dtype(ty)) if ty else np.dtype(np.float32)
    if dt.kind in "iub":
        info = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
        return int_const(np.full(shape, info[0] if kind == "max" else info[1], dtype=np.int64))
    return Const(np.full(shape, NEG_INF if kind == "max" else POS_INF, dtype=object), "rat")


def _rows(cx, x, axes):
    """x with the reduced axes moved last and flattened: [K, R], and the kept shape."""
    kept = [a for a in range(len(x.shape)) if a not in axes]
    kshape = [x.shape[a] for a in kept]
    t = _transpose(cx, x, kept + axes)
    return _reshape(cx, t, [_size(kshape), _size([x.shape[a] for a in axes])]), kshape


def _out_shape(x, axes, keep):
    return [1 if a in axes else d for a, d in enumerate(x.shape)] if keep else \
        [d for a, d in enumerate(x.shape) if a not in axes]


def _sum_rows(cx, t):
    """[K, R] -> [K, 1]: MatMul with a column of ones."""
    return t if t.shape[1] == 1 else _matmul(cx, t, _rats([[1]] * t.shape[1]))


def _tree(cx, t, f):
    """[K, R] -> [K, 1] by pairwise f over halves (a tournament; log2 R levels)."""
    while t.shape[1] > 1:
        rr, h = t.shape[1], t.shape[1] // 2
        m = f(cx, _slice(cx, t, 1, 0, h), _slice(cx, t, 1, h, 2 * h))
        t = m if rr % 2 == 0 else _op(cx, "Concat", [m, _slice(cx, t, 1, 2 * h, rr)], axis=1)
    return t


def _reducer(kind, since):
    def lower(cx, node, ins, at):
        args = _reduce_args(cx, node, ins, at, since)
        if args is None:
            return [_op(cx, "Identity", [ins[0]])]
        x, axes, keep = args
        _real(x, node.op_type)
        _no_special([x], node.op_type)
        shape = _out_shape(x, axes, keep)
        if _size(shape) == 0:
            return [Const(np.empty(shape, dtype=object), "rat")]
        if _size([x.shape[a] for a in axes]) == 0:  # the empty set: ONNX's identity element
            return [_empty_reduction(cx, node, kind, shape)]
        if kind == "sumsq" or kind == "l2":
            x = _op(cx, "Mul", [x, x])
        elif kind == "l1":
            x = _abs(cx, x)
        t, _ = _rows(cx, x, axes)
        if kind in ("sum", "sumsq", "l1", "l2"):
            t = _sum_rows(cx, t)
        else:
            t = _tree(cx, t, {"max": _max, "min": _min, "prod": lambda c, a, b: _op(c, "Mul", [a, b])}[kind])
        if kind == "l2":
            t = _op(cx, "Sqrt", [t])
        return [_reshape(cx, t, shape)]
    return lower


# ----------------------------------------------------------------------------- element-wise


def _abs(cx, x):
    return _op(cx, "Add", [_op(cx, "Relu", [x]), _op(cx, "Relu", [_op(cx, "Neg", [x])])])


def _attr(at, key, default) -> Fraction:
    return _rat(at.get(key, default))


def _elementwise(name, fold=None):
    """Relu compositions; constants only through ``fold`` (the importer's exact fold) when given."""

    def lower(cx, node, ins, at):
        if fold is not None and all(v is None or isinstance(v, Const) for v in ins):
            return fold(cx, node, ins, at)
        for v in ins:
            if v is not None:
                _real(v, name)
        _no_special([v for v in ins if v is not None and not (name == "Clip" and v is not ins[0])], name)
        return [_ELEMENTWISE[name](cx, ins, at)]
    return lower


def _nary(f):
    def go(cx, ins, at):
        out = ins[0]
        for v in ins[1:]:
            out = f(cx, out, v)
        return out if len(ins) > 1 else _op(cx, "Identity", [out])
    return go


def _clip(cx, ins, at):
    x = ins[0]
    lo = ins[1] if len(ins) > 1 else (_scalar(_rat(at["min"])) if "min" in at else None)
    hi = ins[2] if len(ins) > 2 else (_scalar(_rat(at["max"])) if "max" in at else None)
    for bound, skip in ((lo, -1), (hi, 1)):  # a bound at -inf (min) or +inf (max) clips nothing
        if bound is not None and isinstance(bound, Const) and holds_special(bound.value):
            codes = {getattr(v, "code", 0) for v in bound.value.reshape(-1)}
            if codes != {skip}:
                raise LowerError("Clip with a bound holding NaN or an infinity on the wrong side")
    if lo is not None and not (isinstance(lo, Const) and holds_special(lo.value)):
        x = _max(cx, x, lo)
    if hi is not None and not (isinstance(hi, Const) and holds_special(hi.value)):
        x = _min(cx, x, hi)
    return x if x is not ins[0] else _op(cx, "Identity", [x])


def _leaky(cx, x, slope):
    return _op(cx, "Sub", [_op(cx, "Relu", [x]), _op(cx, "Mul", [slope, _op(cx, "Relu", [_op(cx, "Neg", [x])])])])


def _hard_sigmoid(cx, x, alpha, beta):
    y = _op(cx, "Add", [_op(cx, "Mul", [x, _scalar(alpha)]), _scalar(beta)])
    return _op(cx, "Sub", [_op(cx, "Relu", [y]), _op(cx, "Relu", [_op(cx, "Sub", [y, _scalar(1)])])])


def _elu(cx, x, alpha, scale=Fraction(1), inner=Fraction(1)):
    """scale·(Relu(x) + α·(exp(−Relu(−x)/inner) − 1)): Elu (inner 1), Selu (scale γ), Celu (inner α)."""
    neg = _op(cx, "Neg", [_op(cx, "Relu", [_op(cx, "Neg", [x])])])
    if inner != 1:
        neg = _op(cx, "Mul", [neg, _scalar(1 / inner)])
    tail = _op(cx, "Mul", [_op(cx, "Sub", [_op(cx, "Exp", [neg]), _scalar(1)]), _scalar(alpha)])
    y = _op(cx, "Add", [_op(cx, "Relu", [x]), tail])
    return y if scale == 1 else _op(cx, "Mul", [y, _scalar(scale)])


_ELEMENTWISE = {
    "Max": _nary(_max), "Min": _nary(_min), "Abs": lambda cx, ins, at: _abs(cx, ins[0]), "Clip": _clip,
    "Sum": _nary(lambda cx, a, b: _op(cx, "Add", [a, b])),
    "Mean": lambda cx, ins, at: _op(cx, "Mul", [_nary(lambda c, a, b: _op(c, "Add", [a, b]))(cx, ins, at),
                                                _scalar(Fraction(1, len(ins)))]),
    "LeakyRelu": lambda cx, ins, at: _leaky(cx, ins[0], _scalar(_attr(at, "alpha", 0.01))),
    "PRelu": lambda cx, ins, at: _leaky(cx, ins[0], ins[1]),
    "HardSigmoid": lambda cx, ins, at: _hard_sigmoid(cx, ins[0], _attr(at, "alpha", 0.2), _attr(at, "beta", 0.5)),
    "HardSwish": lambda cx, ins, at: _op(cx, "Mul", [ins[0], _hard_sigmoid(cx, ins[0], Fraction(1, 6), Fraction(1, 2))]),
    "Elu": lambda cx, ins, at: _elu(cx, ins[0], _attr(at, "alpha", 1.0)),
    "Selu": lambda cx, ins, at: _elu(cx, ins[0], _attr(at, "alpha", 1.67326319217681884765625),
                                     _attr(at, "gamma", 1.05070102214813232421875)),
    "Celu": lambda cx, ins, at: _elu(cx, ins[0], _attr(at, "alpha", 1.0), inner=_attr(at, "alpha", 1.0)),
}


# ----------------------------------------------------------------------------- Einsum


def _einsum_terms(eq: str, ranks: Sequence[int]):
    """Parse an equation into per-operand letter lists and the output's; '...' becomes fresh capitals."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise LowerError(f"Einsum: {len(terms)} operands in {eq!r}, {len(ranks)} given")
    ell_rank = 0
    for t, r in zip(terms, ranks):
        if "..." in t:
            ell_rank = max(ell_rank, r - len(t.replace("...", "")))
    fresh = [c for c in string.ascii_uppercase if c not in eq][:ell_rank]

    def expand(t, r):
        if "..." not in t:
            if len(t) != r:
                raise LowerError(f"Einsum: term {t!r} for an operand of rank {r}")
            return list(t)
        k = r - len(t.replace("...", ""))
        a, _, b = t.partition("...")
        return list(a) + fresh[ell_rank - k:] + list(b)

    ins = [expand(t, r) for t, r in zip(terms, ranks)]
    if arrow:
        out = expand(rhs, len(rhs.replace("...", "")) + ell_rank) if "..." in rhs else list(rhs)
    else:
        counts: Dict[str, int] = {}
        for t in ins:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = fresh + sorted(c for c, n in counts.items() if n == 1 and c not in fresh)
    if len(set(out)) != len(out) or not set(out) <= set().union(*map(set, ins)):
        raise LowerError(f"Einsum {eq!r}: the output letters repeat or name no operand's")
    return ins, out


def _diagonal(cx, x, letters):
    """An operand with a repeated letter (``ii``) reduced to its diagonal by one Gather (an index map)."""
    uniq = list(dict.fromkeys(letters))
    if len(uniq) == len(letters):
        return x, letters
    dims = {}
    for c, d in zip(letters, x.shape):
        if dims.setdefault(c, d) != d:
            raise LowerError(f"Einsum: letter {c!r} has sizes {dims[c]} and {d}")
    grid = np.indices([dims[c] for c in uniq], dtype=np.int64)
    coords = tuple(grid[uniq.index(c)] for c in letters)
    return _take(cx, x, np.ravel_multi_index(coords, x.shape) if grid.size else np.zeros(grid.shape[1:], np.int64)), uniq


def _sum_letters(cx, x, letters, drop):
    """Sum x over the letters in ``drop`` (MatMul with ones); returns (x, remaining letters)."""
    axes = [i for i, c in enumerate(letters) if c in drop]
    if not axes:
        return x, letters
    t, kshape = _rows(cx, x, axes)
    return _reshape(cx, _sum_rows(cx, t), kshape), [c for c in letters if c not in drop]


def _einsum_pair(cx, a, la, b, lb, keep):
    """a (letters la) times b (letters lb), summing the shared letters not in ``keep``: a batched MatMul."""
    dims = dict(zip(lb, b.shape))
    dims.update(zip(la, a.shape))
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    ao = [c for c in la if c not in lb]
    bo = [c for c in lb if c not in la]
    at_ = _transpose(cx, a, [la.index(c) for c in batch + ao + contr])
    bt_ = _transpose(cx, b, [lb.index(c) for c in batch + contr + bo])
    bsa = [a.shape[la.index(c)] for c in batch]
    bsb = [b.shape[lb.index(c)] for c in batch]
    pa, pb, pc = _size([dims[c] for c in ao]), _size([dims[c] for c in bo]), _size([dims[c] for c in contr])
    y = _matmul(cx, _reshape(cx, at_, bsa + [pa, pc]), _reshape(cx, bt_, bsb + [pc, pb]))
    return _reshape(cx, y, list(y.shape[:len(batch)]) + [dims[c] for c in ao + bo]), batch + ao + bo


def lower_einsum(cx, node, ins, at):
    """Einsum without diagonals: per-operand sums, then pairwise batched MatMuls, then a Transpose."""
    eq = at["equation"]
    eq = eq.decode() if isinstance(eq, bytes) else str(eq)
    terms, out = _einsum_terms(eq, [len(v.shape) for v in ins])
    for v in ins:
        _real(v, "Einsum")
    _no_special(ins, "Einsum")
    vals = list(ins)
    for i in range(len(vals)):
        vals[i], terms[i] = _diagonal(cx, vals[i], terms[i])
    for i, (v, t) in enumerate(zip(vals, terms)):
        others = set(out).union(*[set(u) for j, u in enumerate(terms) if j != i])
        vals[i], terms[i] = _sum_letters(cx, v, t, set(t) - others)
    x, lx = vals[0], terms[0]
    for i in range(1, len(vals)):
        keep = set(out).union(*[set(u) for u in terms[i + 1:]])
        x, lx = _einsum_pair(cx, x, lx, vals[i], terms[i], keep)
        x, lx = _sum_letters(cx, x, lx, set(lx) - keep)
    if set(lx) != set(out):
        raise LowerError(f"Einsum {eq!r}: output letters {''.join(out)} do not match")
    y = _transpose(cx, x, [lx.index(c) for c in out])
    return [y if y is not ins[0] else _op(cx, "Identity", [y])]


# ----------------------------------------------------------------------------- shapes


def lower_flatten(cx, node, ins, at):
    """Flatten: a Reshape to [prod(shape[:axis]), prod(shape[axis:])]."""
    x = ins[0]
    r = len(x.shape)
    axis = int(at.get("axis", 1))
    if not -r <= axis <= r:
        raise LowerError(f"Flatten: axis {axis} for rank {r}")
    axis = axis + r if axis < 0 else axis
    return [_op(cx, "Reshape", [x, int_const([_size(x.shape[:axis]), _size(x.shape[axis:])])])]


def lower_global_average_pool(cx, node, ins, at):
    """GlobalAveragePool: ReduceMean over the spatial axes, kept."""
    x = ins[0]
    return [_op(cx, "ReduceMean", [x, int_const(list(range(2, len(x.shape))))], keepdims=1)]


def _expand_with(base):
    """Expand: integers computed from the input (token ids) broadcast by Reshape and Concat of copies —
    shape ops, so the importer still sees them as token ids; the rest as before (``ops._expand``)."""

    def lower(cx, node, ins, at):
        x = ins[0]
        if isinstance(x, Dyn) and x.kind == "int" and isinstance(ins[1], Const):
            target = np.broadcast_shapes(tuple(x.shape), tuple(int(v) for v in ins[1].value.reshape(-1)))
            if 0 in target:
                raise LowerError(f"Expand of integers to the empty shape {list(target)}")
            x = _reshape(cx, x, [1] * (len(target) - len(x.shape)) + list(x.shape))
            for a, t in enumerate(target):
                if x.shape[a] != t:
                    x = _op(cx, "Concat", [x] * t, axis=a)
            return [x]
        return base(cx, node, ins, at)
    return lower


def composite_table(base: Dict) -> Dict:
    """The entries this module adds to (or wraps in) ``exactmem.verify.ops.LOWER``; ``base`` is that
    table, whose exact constant folds (Max, Min, Abs) and Expand this keeps for the cases they cover."""
    table = {
        "GatherND": lower_gather_nd, "GatherElements": lower_gather_elements,
        "ScatterND": lower_scatter_nd, "ScatterElements": lower_scatter_elements, "Scatter": lower_scatter_elements,
        "Conv": lower_conv, "ConvTranspose": lower_conv_transpose, "Einsum": lower_einsum,
        "ReduceSum": _reducer("sum", 13), "ReduceSumSquare": _reducer("sumsq", 18), "ReduceL1": _reducer("l1", 18),
        "ReduceL2": _reducer("l2", 18), "ReduceMax": _reducer("max", 18), "ReduceMin": _reducer("min", 18),
        "ReduceProd": _reducer("prod", 18), "Flatten": lower_flatten, "GlobalAveragePool": lower_global_average_pool,
        "Expand": _expand_with(base["Expand"]),
    }
    for name in _ELEMENTWISE:
        table[name] = _elementwise(name, base.get(name))
    return table


_TABLE = composite_table(LOWER)
COMPOSITE_OPS = tuple(sorted(_TABLE))
LOWER.update(_TABLE)
