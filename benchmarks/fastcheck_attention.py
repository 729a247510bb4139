"""Benchmark: the fast exact checker (``check --engine fast``) against the pure checker on a
model with one exact attention layer between two deep ReLU stacks (the shape of the
Kajitsuka & Sato construction: token-wise stack → one uniform attention layer with residual
→ token-wise stack), with ~``--bits``-bit integer weights.

Synthetic network (seeded), all layers ``Affine(relu=True)`` except the attention layer:

* input: 1-dim tokens x ∈ {0, …, V−1} (``--vocab``), sequences of ``--len`` tokens (or random
  lengths in ``[--min-len, --len]``);
* pre-attention stack, per lane i (``--lanes``): a B-bit state U_i = K_i·x + r_i < 2^B and the
  pair t1 = relu(U − 2^(B−1) + 1), t2 = relu(U − 2^(B−1)) (t1 − t2 is U's top bit); each of
  the ``--depth`` layers rotates U left by one bit, U' = 2U − (2^B − 1)(t1 − t2), and adds
  c·(t1 − t2) (c a random B-bit integer) to an accumulator; plus a constant register 1 and
  an empty register s;
* attention (``--kind uniform``: uniform weights; ``--kind hardmax``: query = the constant
  register, key = lane 0's U, so each token attends to the keys of maximal U, ties sharing
  the mass), residual, writing the mean of lane 0's U over the attended keys into s;
* post-attention stack: U_i ← λ·s + U_i with λ = lcm(1, …, max length) (so the state is an
  integer again, of B + log2 λ + 1 bits), then ``--depth`` rotation layers as above;
* readout: the accumulators (``--readout last``: of the last token; ``all``: of every token),
  identity decode.

The labels are computed by the producer (``exactmem.model.forward``, auto engine), the
certificate is assembled by ``exactmem.certificate.writer.build_certificate``, then both
checkers check the same document (parsing and hash included) and must agree; the time of
each and the ratio pure / fast are printed. ``--planted`` also times a certificate whose
last label is wrong (both checkers then evaluate everything and must name the same witness).
Nothing is asserted about time.

Usage: ``python benchmarks/fastcheck_attention.py [--seqs 2000] [--len 8] [--min-len L]
[--depth 20] [--bits 1000] [--lanes 2] [--vocab 16] [--kind uniform|hardmax]
[--readout last|all] [--planted] [--seed S] [--no-pure]``.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import sys
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.kernel.checker import canonical_hash, check_certificate, parse_certificate  # noqa: E402
from exactmem.certificate.fastcheck import check_certificate_fast  # noqa: E402
from exactmem.certificate.writer import build_certificate  # noqa: E402
from exactmem.data.dataset import Dataset  # noqa: E402
from exactmem.model import Affine, Attention, Head, Model, forward  # noqa: E402


def rotation_layers(rng, lanes: int, bits: int, depth: int, width: int, first: int):
    """``depth`` affine+ReLU layers rotating each lane's B-bit state (rows first + 4i … 4i+3:
    U, t1, t2, acc); other rows are carried unchanged."""
    M, h = 2 ** bits - 1, 2 ** (bits - 1)
    out = []
    for _ in range(depth):
        W = [[0] * width for _ in range(width)]
        b = [0] * width
        for r in range(width):
            W[r][r] = 1
        for i in range(lanes):
            u, t1, t2, acc = (first + 4 * i + k for k in range(4))
            rot = {u: 2, t1: -M, t2: M}  # U' = 2U - M (t1 - t2)
            W[u] = [rot.get(j, 0) for j in range(width)]
            W[t1], b[t1] = list(W[u]), -h + 1
            W[t2], b[t2] = list(W[u]), -h
            c = rng.getrandbits(bits) | 1
            W[acc] = [0] * width
            W[acc][acc], W[acc][t1], W[acc][t2] = 1, c, -c
        out.append(Affine(W, b, True))
    return out


def build_model(args, rng) -> Model:
    B, lanes = args.bits, args.lanes
    lam = math.lcm(*range(1, args.len + 1))
    width = 2 + 4 * lanes  # one, s, then per lane U, t1, t2, acc
    ONE, S = 0, 1
    h = 2 ** (B - 1)
    # layer 0: x -> one, s = 0, U_i = K_i x + r_i, t1, t2, acc = 0
    W0, b0 = [[0] for _ in range(width)], [0] * width
    b0[ONE] = 1
    for i in range(lanes):
        K = (2 ** B - 1) // args.vocab - rng.getrandbits(B // 2)
        r = rng.getrandbits(B // 2)
        u, t1, t2 = 2 + 4 * i, 3 + 4 * i, 4 + 4 * i
        for row, off in ((u, 0), (t1, -h + 1), (t2, -h)):
            W0[row], b0[row] = [K], r + off
    layers = [Affine(W0, b0, True)]
    layers += rotation_layers(rng, lanes, B, args.depth, width, 2)
    # attention: s += mean of lane 0's U over the attended keys
    WV = [[1 if j == 2 else 0 for j in range(width)]]
    WO = [[1] if r == S else [0] for r in range(width)]
    if args.kind == "uniform":
        heads = [Head(WV, WO)]
    else:
        WQ = [[1 if j == ONE else 0 for j in range(width)]]
        WK = [[1 if j == 2 else 0 for j in range(width)]]
        heads = [Head(WV, WO, WQ, WK)]
    layers.append(Attention(heads, args.kind, residual=True, query="all", keys="all"))
    # back to integers: U_i <- lam * s + U_i (re-deriving t1, t2 for B2 bits), then rotate
    B2 = B + lam.bit_length() + 1
    h2 = 2 ** (B2 - 1)
    W1 = [[1 if j == r else 0 for j in range(width)] for r in range(width)]
    b1 = [0] * width
    for i in range(lanes):
        u, t1, t2 = 2 + 4 * i, 3 + 4 * i, 4 + 4 * i
        W1[u] = [0] * width
        W1[u][u], W1[u][S] = 1, lam
        W1[t1], b1[t1] = list(W1[u]), -h2 + 1
        W1[t2], b1[t2] = list(W1[u]), -h2
    layers.append(Affine(W1, b1, True))
    layers += rotation_layers(rng, lanes, B2, args.depth, width, 2)
    layers.append(Affine([[1 if j == 5 + 4 * i else 0 for j in range(width)] for i in range(lanes)], None, True))
    return Model(layers, "vectors", 1, readout=args.readout)


def build(args):
    rng = random.Random(args.seed)
    mdl = build_model(args, rng)
    lens = [rng.randint(args.min_len or args.len, args.len) for _ in range(args.seqs)]
    xs = [tuple((Fraction(rng.randrange(args.vocab)),) for _ in range(n)) for n in lens]
    t0 = time.perf_counter()
    outs = forward(mdl, xs, backend="auto").outputs
    t_fwd = time.perf_counter() - t0
    ds = Dataset(xs, outs)
    doc = build_certificate("bench.fastcheck_attention", f"N{args.seqs}", args.seed, mdl, ds, outs, [])
    return doc, t_fwd, sum(lens)


def timed(f, doc):
    t0 = time.perf_counter()
    v = f(doc)
    return v, time.perf_counter() - t0


def compare(doc, label: str, no_pure: bool):
    t0 = time.perf_counter()
    parse_certificate(doc)
    t_parse = time.perf_counter() - t0
    vf, tf = timed(check_certificate_fast, doc)
    print(f"[{label}] fast : {vf.status:9s} {tf:8.2f} s   (of which parsing/validation {t_parse:.2f} s)")
    if no_pure:
        return
    vp, tp = timed(check_certificate, doc)
    print(f"[{label}] pure : {vp.status:9s} {tp:8.2f} s")
    agree = (vp.status, vp.witness) == (vf.status, vf.witness)
    print(f"[{label}] verdicts agree: {agree}" + ("" if vp.witness is None else f" (witness example "
                                                                               f"{vp.witness['example']})"))
    print(f"[{label}] ratio pure / fast = {tp / tf:.1f}x   (without parsing: {(tp - t_parse) / (tf - t_parse):.1f}x)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seqs", type=int, default=2000)
    ap.add_argument("--len", type=int, default=8)
    ap.add_argument("--min-len", type=int, default=None)
    ap.add_argument("--depth", type=int, default=20, help="rotation layers before and after the attention layer")
    ap.add_argument("--bits", type=int, default=1000)
    ap.add_argument("--lanes", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=16)
    ap.add_argument("--kind", choices=("uniform", "hardmax"), default="uniform")
    ap.add_argument("--readout", choices=("last", "all"), default="last")
    ap.add_argument("--planted", action="store_true", help="also time a certificate with a wrong last label")
    ap.add_argument("--no-pure", action="store_true", help="time the fast checker only")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    doc, t_fwd, T = build(args)
    layers = doc["model"]["layers"]
    max_bits = max(abs(int(x)).bit_length() for L in layers if L["type"] == "affine" for part in (L["W"], [L["b"] or []])
                   for r in part for x in r)
    print(f"{args.seqs} sequences, {T} tokens, {len(layers)} layers ({args.kind} attention, readout "
          f"{args.readout}), width {len(layers[0]['W'])}, integer weights up to {max_bits} bits; "
          f"producer forward (auto engine) {t_fwd:.2f} s")
    compare(doc, "certified", args.no_pure)
    if args.planted:
        bad = copy.deepcopy(doc)
        lab = bad["dataset"]["labels"][-1]
        col = lab if args.readout == "last" else lab[-1]
        col[0] = str(Fraction(col[0]) + 1)
        bad["hash"] = canonical_hash(bad)
        compare(bad, "planted", args.no_pure)


if __name__ == "__main__":
    main()
