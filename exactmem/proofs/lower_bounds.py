"""Lower bounds of Kajitsuka & Sato (ICLR 2025) and the bit bound, checked step by step.

Run with ``python -m exactmem bounds run proofs/lower_bounds.py [--size small|medium|large]``
(not ``certify``: a lower bound builds no model). Each entry states a theorem, cites its
source, and checks it on default instances; ``docs/lower-bounds.md`` writes the chain out
next to the code that checks each step.
"""

from exactmem.bounds.arch import parse_architecture
from exactmem.bounds.bits import baseline_rows, bits_summary
from exactmem.bounds.next_token import (algorithm_bound_report, min_W_next_token_report, next_token_chain,
                                        reduction_report)
from exactmem.bounds.protocol import BoundTheorem
from exactmem.arith.steps import Report
from exactmem.bounds.seq2seq import chain, min_W_report
from exactmem.bounds.symbolic import symbolic_report
from exactmem.bounds.toy import brute_force_report, lemma_b4_layer1_report, lemma_b4_linear_report
from exactmem.proof import Instance

KS = "Kajitsuka & Sato, On the Optimal Memorization Capacity of Transformers (ICLR 2025)"


def _merge(title, reports):
    out = Report(title)
    for r in reports:
        out.extend(r.steps)
        out.results.update({f"{r.title} :: {k}": v for k, v in r.results.items()})
        out.notes.extend(r.notes)
    return out


def run_chain(p):
    return chain(parse_architecture(p["arch"]), p["n"], p["N"], p.get("convention", "paper"))


def run_min_w(p):
    return min_W_report(p["n"], p["N"], sharp=p.get("sharp", True))


def cert_chain(p):
    """The chain (70)–(96) as a lower-bound certificate (every step re-checked by the kernel)."""
    from exactmem.bounds.certificates import chain_chain

    return chain_chain(parse_architecture(p["arch"]), p["n"], p["N"], p.get("convention", "paper")).document()


def cert_min_w(p):
    """Theorem B.3's minimal W (and the sharp minimum over the family) as a certificate."""
    from exactmem.bounds.certificates import minw_chain
    from exactmem.bounds.seq2seq import min_W
    from exactmem.bounds.sharp import Family, min_W_sharp

    sharp = min_W_sharp(p["n"], p["N"]) if p.get("sharp", True) else None
    return minw_chain(p["n"], p["N"], min_W(p["n"], p["N"]).W, sharp, Family()).document()


def cert_next_token(p):
    """Theorem B.2's minimal W (and, with an architecture, its chain) as a certificate."""
    from exactmem.bounds.certificates import combine, next_token_arch_chain, next_token_min_chain
    from exactmem.bounds.next_token import min_W_next_token

    mw = min_W_next_token(p["N"])
    doc = next_token_min_chain(p["N"], mw.sign_count, mw.algorithm).document()
    if "arch" not in p:
        return doc
    a = parse_architecture(p["arch"])
    return combine(doc["statement"]["text"] + "; and the chain for " + a.label(), [doc, next_token_arch_chain(a, p["N"]).document()])


def cert_bits(p):
    """The bit lower bounds as a certificate; --compare's measured baselines are producer-checked."""
    from exactmem.bounds.bits import min_exactmem_bits, min_fixed_bits, min_total_bits
    from exactmem.bounds.certificates import bits_chain, bits_only_chain

    N, C, n, W = p["N"], p.get("C", 2), p.get("n"), p.get("W")
    pts = N * n if n else N
    label = f"nN = {pts} binary tokens (n = {n}, N = {N})" if n else f"N = {N} points"
    ch = (bits_chain(pts, C, W, min_fixed_bits(W, pts, C), min_exactmem_bits(W, pts, C), min_total_bits(W, pts, C),
                     label) if W else bits_only_chain(pts, C, label))
    if p.get("compare"):
        for r in baseline_rows([N], C=C):
            for s in r["report"].steps:
                ch.by_producer(s.eq, f"{r['report'].title}: {s.claim}", "measured on a built baseline model")
    return ch.document()


def run_degrees(p):
    return symbolic_report(parse_architecture(p["arch"]), p["n"], p["N"], p.get("seed", 0))


def run_brute(p):
    arch = parse_architecture(p["arch"])
    reps = [brute_force_report(arch, p["n"], p["N"], p.get("values", (-1, 0, 1)), p.get("samples"), p.get("seed", 0))]
    if p.get("layer1"):
        reps.append(lemma_b4_layer1_report(arch, p["n"], p["N"], p.get("grid", (-1, 0, 1))))
    if p.get("linear"):
        reps.append(lemma_b4_linear_report(p["linear"]))
    return _merge(reps[0].title, reps)


def run_reduction(p):
    return reduction_report(parse_architecture(p["arch"]), p["n"], p["N"], p["kind"], p.get("seed", 0))


def run_next_token(p):
    reps = [min_W_next_token_report(p["N"])]
    if "arch" in p:
        a = parse_architecture(p["arch"])
        reps += [next_token_chain(a, p["N"]), algorithm_bound_report(a, p["N"])]
    return _merge(reps[0].title, reps)


def run_bits(p):
    reps = [bits_summary(p["N"], p.get("C", 2), p.get("n"), p.get("W"))]
    if p.get("compare"):
        reps += [r["report"] for r in baseline_rows([p["N"]], C=p.get("C", 2))]
    return _merge(reps[0].title, reps)


LOWER_BOUNDS = [
    BoundTheorem(
        name="kajitsuka.thm4_3.chain",
        statement="A hardmax Transformer with W parameters that shatters N sequences of length n with nN distinct "
                  "tokens satisfies 2^{nN} ≤ K ≤ (90) ≤ (48e n³N)^{W̄} and nN ≤ 9W²·log2(48e·nN); every step "
                  "is evaluated for the architecture.",
        source=KS + ", Thm 4.3 / B.3, App. B.2 eqs. (70)–(96)",
        run=run_chain,
        certificate=cert_chain,
        instances=[
            Instance("n8-N1000-m2q4L3", {"arch": "d=1,m=2,s=1,H=1,q=4,L=3", "n": 8, "N": 1000}, ("small", "medium")),
            Instance("n64-N10k-m4q16L6", {"arch": "d=8,m=4,s=2,H=2,q=16,L=6", "n": 64, "N": 10 ** 4},
                     ("small", "medium")),
            Instance("n2-N5-m4q1-preconditions-fail", {"arch": "d=2,m=4,s=1,H=2,q=1,L=3", "n": 2, "N": 5},
                     ("small", "medium")),
            Instance("n1-N1e6-deep", {"arch": "d=1,m=1,s=1,H=1,q=1,L=72", "n": 1, "N": 10 ** 6}, ("small", "medium")),
            Instance("n1-N1e6-deep-exact", {"arch": "d=1,m=3,s=1,H=1,q=2,L=40", "n": 1, "N": 10 ** 6,
                                            "convention": "exact"}, ("medium",)),
            Instance("n512-N1e5-wide", {"arch": "d=64,m=64,s=16,H=8,q=256,L=24", "n": 512, "N": 10 ** 5},
                     ("medium", "large")),
        ],
    ),
    BoundTheorem(
        name="kajitsuka.thm4_3.min_W",
        statement="For (n, N): the smallest W with nN ≤ 9W²·log2(48e·nN) (both sides at W and W − 1), "
                  "and the smallest W over a family of architectures allowed by the sharp bound (90).",
        source=KS + ", Thm 4.3 / B.3 eq. (96)",
        run=run_min_w,
        certificate=cert_min_w,
        instances=[
            Instance("n8-N1000", {"n": 8, "N": 1000}, ("small", "medium", "large")),
            Instance("n64-N10000", {"n": 64, "N": 10 ** 4}, ("small", "medium", "large")),
            Instance("n1-N1e6", {"n": 1, "N": 10 ** 6}, ("small", "medium", "large")),
            Instance("n512-N1e7", {"n": 512, "N": 10 ** 7}, ("large",)),
        ],
    ),
    BoundTheorem(
        name="kajitsuka.thm4_3.degrees",
        statement="On a cell of the partition, attention scores of block l have degree ≤ 8l−4, pre-activations "
                  "≤ 4l, block outputs ≤ 4l+1, outputs ≤ 4L+2; the proof's polynomial and variable counts cover "
                  "the polynomials (sympy, tiny instances).",
        source=KS + ", App. B.2 eqs. (73)–(88)",
        run=run_degrees,
        instances=[
            Instance("L2-m1", {"arch": "d=1,m=1,s=1,H=1,q=1,L=2", "n": 2, "N": 1}, ("small", "medium")),
            Instance("L1-m2-q1", {"arch": "d=1,m=2,s=1,H=1,q=1,L=1", "n": 2, "N": 2}, ("small", "medium")),
            Instance("L2-H2-d2", {"arch": "d=2,m=2,s=1,H=2,q=2,L=2", "n": 2, "N": 1}, ("medium",)),
            Instance("L3-m1", {"arch": "d=1,m=1,s=1,H=1,q=1,L=3", "n": 2, "N": 1}, ("medium",)),
        ],
    ),
    BoundTheorem(
        name="kajitsuka.thm4_3.brute_force",
        statement="Toy hardmax Transformers on nN distinct tokens realize far fewer output sign vectors than the "
                  "counting bound allows; Lemma B.4 holds on block-1 score differences and on generic "
                  "hyperplane arrangements (sanity checks, not proofs).",
        source=KS + ", App. B.2 eq. (70) and Lemma B.4 (Goldberg & Jerrum 1995, Cor. 2.1, as restated)",
        run=run_brute,
        instances=[
            Instance("L1-sampled", {"arch": "d=1,m=1,s=1,H=1,q=1,L=1", "n": 2, "N": 2, "samples": 3000,
                                    "values": (-2, -1, 0, 1, 2), "layer1": True, "linear": 25}, ("small",)),
            Instance("L1-d2-layer1", {"arch": "d=2,m=2,s=1,H=1,q=1,L=1", "n": 2, "N": 2, "samples": 3000,
                                      "layer1": True}, ("medium",)),
            Instance("L1-exhaustive", {"arch": "d=1,m=1,s=1,H=1,q=1,L=1", "n": 2, "N": 2, "samples": None,
                                       "linear": 60}, ("large",)),
        ],
    ),
    BoundTheorem(
        name="kajitsuka.thm4_2.reduction",
        statement="On N distinct sequences of one repeated token, every layer keeps equal columns (64) and the "
                  "Transformer equals the ReLU network with attention replaced by z ↦ (I + Σ_h W^O W^V) z (65).",
        source=KS + ", Thm 4.2 / B.2, App. B.1.2 eqs. (63)–(65)",
        run=run_reduction,
        instances=[
            Instance("hardmax", {"arch": "d=2,m=3,s=2,H=2,q=4,L=2", "n": 5, "N": 8, "kind": "hardmax"},
                     ("small", "medium")),
            Instance("uniform", {"arch": "d=2,m=3,s=2,H=2,q=4,L=2", "n": 5, "N": 8, "kind": "uniform"},
                     ("small", "medium")),
            Instance("softmax", {"arch": "d=2,m=3,s=2,H=2,q=4,L=2", "n": 5, "N": 8, "kind": "softmax"},
                     ("small", "medium")),
            Instance("hardmax-wide-m", {"arch": "d=2,m=8,s=1,H=1,q=4,L=2", "n": 3, "N": 5, "kind": "hardmax"},
                     ("small", "medium")),
            Instance("hardmax-deep", {"arch": "d=3,m=4,s=2,H=3,q=6,L=5", "n": 16, "N": 30, "kind": "hardmax"},
                     ("medium", "large")),
        ],
    ),
    BoundTheorem(
        name="kajitsuka.thm4_2.bounds",
        statement="A Transformer that shatters N repeated-token sequences has W with N ≤ (W + W²/8)·log2(48e·N) "
                  "(sign count, derived) and N ≤ 12W² + 20W (Goldberg–Jerrum algorithm bound, restated).",
        source=KS + ", Thm 4.2 / B.2; background note §4.2, §5",
        run=run_next_token,
        certificate=cert_next_token,
        instances=[
            Instance("N1000", {"N": 1000, "arch": "d=4,m=2,s=1,H=1,q=8,L=2"}, ("small", "medium")),
            Instance("N10000", {"N": 10 ** 4, "arch": "d=1,m=1,s=1,H=1,q=1,L=20"}, ("small", "medium")),
            Instance("N1e6", {"N": 10 ** 6}, ("small", "medium", "large")),
        ],
    ),
    BoundTheorem(
        name="kajitsuka.bits",
        statement="Memorizing every labelling of N points with C classes needs ≥ N·log2 C bits (nN·log2 C for "
                  "seq-to-seq); checked against the O(N) baseline's measured bits.",
        source=KS + ", Remarks 4.4 and 4.6",
        run=run_bits,
        certificate=cert_bits,
        instances=[
            Instance("N100-compare", {"N": 100, "C": 2, "W": 20, "compare": True}, ("small", "medium")),
            Instance("seq2seq-n8-N1000", {"N": 1000, "n": 8, "C": 2, "W": 60}, ("small", "medium")),
            Instance("N1000-C10-compare", {"N": 1000, "C": 10, "W": 100, "compare": True}, ("medium",)),
        ],
    ),
]
