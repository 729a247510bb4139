"""Side-by-side sizes of Kajitsuka & Sato Theorem B.1 (next-token, n = 8, d = 16, C = 4, seed 0):
the compact equivalent network (``exactmem.constructions.kajitsuka.compact``) vs the paper-literal
block network (``exactmem.constructions.kajitsuka.paper``) vs the explicit bounds (41)/(42)
(``exactmem.proofs.kajitsuka.theorem_bounds``). Measures the built models exactly
(``exactmem.model.measure``); it does not certify them (``python -m exactmem certify
exactmem/proofs/kajitsuka_paper.py --size medium`` does, up to N = 1000).

    python benchmarks/kajitsuka_sizes.py [N ...]       # default 100 1000 10000
"""

import sys
import time

from exactmem.constructions.kajitsuka import compact as kajitsuka
from exactmem.constructions.kajitsuka import paper as kp
from exactmem.data.kajitsuka_data import generate
from exactmem.model.measure import measure
from exactmem.proofs.kajitsuka import theorem_bounds

COLS = ("N", "network", "params", "width", "depth (ReLU+attn)", "paper blocks L", "max bits", "(41) D", "(42) B",
        "build s")


def rows(N, n=8, d=16, C=4, seed=0):
    data = generate(N, n, d, C, seed, "next_token")
    t = time.time()
    b = kajitsuka.build(data, seed=seed)
    tc = time.time() - t
    t = time.time()
    p = kp.build(data, seed=seed)
    tp = time.time() - t
    D, B, _ = theorem_bounds(p.info)
    mc, mp = measure(b.model), measure(p.model)
    yield (N, "compact", mc.n_params, mc.width, mc.depth, "-", mc.max_bits, D, B, f"{tc:.1f}")
    yield (N, "paper-literal", mp.n_params, mp.width, mp.depth, kp.paper_blocks(p), mp.max_bits, D, B, f"{tp:.1f}")


def main(argv):
    Ns = [int(a) for a in argv] or [100, 1000, 10000]
    print("| " + " | ".join(COLS) + " |")
    print("|" + "|".join("---" for _ in COLS) + "|")
    for N in Ns:
        for r in rows(N):
            print("| " + " | ".join(str(x) for x in r) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
