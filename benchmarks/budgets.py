"""How the checker's verifier-side budgets hold on the adversarial cases of issue 16.

For each case it runs ``python -m exactmem check`` in a fresh process with a time limit T and
prints the exit code, the verdict line and the wall time as a ratio to T (and the overshoot
past T); the budget holds when every case ends within T plus one second (the process start
is included). Cases:

* ``spread``     softmax2 score spread of 10,000 digits (was a traceback)
* ``digits6/7``  a claim bound of 10^6 / 10^7 digits (was > 10 s / > 30 s): malformed at once
* ``precision``  tied softmax asking for 2^24 bits (was > 30 s), verifier cap raised to 65,536
* ``swap``       Kajitsuka seq2seq N = 1,000 with its uniform attention turned into softmax2
                 with zero query/key weights (same function), so only the pure kernel checks it (was > 120 s)
* ``values``     three layers of 90,000-digit weights (intermediate values pass 2^19 bits)
* ``slow``       an ordinary certificate of 600,000 examples on the pure path
* ``onestep``    one 1000 × 1000 affine layer on ~450,000-bit registers: a minute of work in a single
                 layer (issue 24; was one unticked step), pure and fast engines
* ``fifo``       a version-2 certificate whose chunk file is a FIFO (issue 24; blocked forever)

    python benchmarks/budgets.py [--time-limit 5] [--cases spread,digits6,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from exactmem.kernel.checker import canonical_hash  # noqa: E402
from exactmem.kernel.text import int_str  # noqa: E402
from test_budgets import _many_examples_doc, _one_step_bomb_doc, _softmax2_spread_doc, _tied_softmax_doc  # noqa: E402
from test_checker import affine, cert, model  # noqa: E402


def _rehash(doc):
    doc["hash"] = canonical_hash(doc)
    return doc


def case_spread():
    return _softmax2_spread_doc(10_000), []


def _digits(n):
    doc = cert(model([affine([[1]])], dim=1), [[[3]]], [[3]])
    doc["claims"] = [{"quantity": "n_params", "op": "<=", "bound": "9" * n}]
    return _rehash(doc), []


def case_values():
    doc = cert(model([affine([[7]]), affine([[7]]), affine([[7]])], dim=1), [[[1]]], [[1]])
    for layer in doc["model"]["layers"]:
        layer["W"][0][0] = int_str(10 ** 90_000)
    return _rehash(doc), []


def case_swap():
    """Kajitsuka & Sato seq2seq at N = 1,000 (built through the proof file), attention made softmax2."""
    from exactmem.pipeline.loader import load_proof_file

    th = next(t for t in load_proof_file(os.path.join(ROOT, "proofs", "kajitsuka.py")) if t.name == "kajitsuka.seq2seq")
    inst = max((i for i in th.instances if "medium" in i.sizes), key=lambda i: i.params.get("N", 0))
    out = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "exactmem", "certify", "proofs/kajitsuka.py", "--size", "medium", "--only",
                    f"{th.name}/{inst.name}", "--out", out, "--quiet"], cwd=ROOT, check=True, capture_output=True)
    doc = json.load(open(os.path.join(out, f"{th.name}.{inst.name}.json")))
    for layer in doc["model"]["layers"]:
        if layer["type"] == "attention":  # zero scores: the same uniform weights, but only the kernel evaluates it
            layer["kind"] = "softmax2"
            for h in layer["heads"]:
                h["WQ"] = h["WK"] = [["0"] * len(h["WV"][0])]
    return _rehash(doc), []


def case_fifo():
    """A chunked certificate written for real, then its second chunk replaced by a FIFO."""
    from exactmem.certificate.writer import write_certificate

    d = tempfile.mkdtemp()
    path = write_certificate(_many_examples_doc(100), os.path.join(d, "f.json"), chunk_examples=30)
    chunk = os.path.join(d, json.load(open(path))["dataset"]["chunks"][1]["file"])
    os.unlink(chunk)
    os.mkfifo(chunk)
    return path, []


CASES = {
    "spread": case_spread,
    "digits6": lambda: _digits(10 ** 6),
    "digits7": lambda: _digits(10 ** 7),
    "precision": lambda: (_tied_softmax_doc(1 << 24), ["--max-precision", "65536"]),
    "swap": case_swap,
    "values": case_values,
    "slow": lambda: (_many_examples_doc(600_000), []),
    "onestep": lambda: (_one_step_bomb_doc(), []),
    "onestep-fast": lambda: (_one_step_bomb_doc(), ["--engine", "fast"]),
    "fifo": case_fifo,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=int, default=5, help="seconds (default 5)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated, default all")
    args = ap.parse_args()
    T = args.time_limit
    d = tempfile.mkdtemp()
    print(f"{'case':10s} {'exit':>4s} {'seconds':>8s} {'/ T':>6s} {'past T':>7s}  verdict line")
    worst = 0.0
    for name in args.cases.split(","):
        doc, flags = CASES[name]()
        if isinstance(doc, str):  # a certificate already written (with its chunk files)
            path = doc
        else:
            path = os.path.join(d, f"{name}.json")
            with open(path, "w") as f:
                json.dump(doc, f)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "exactmem", "check", path, "--time-limit", str(T), *flags],
                           cwd=ROOT, capture_output=True, text=True)
        s = time.perf_counter() - t
        line = (r.stdout or r.stderr).strip().splitlines()
        tb = "Traceback" in r.stderr
        worst = max(worst, s - T)
        print(f"{name:10s} {r.returncode:4d} {s:8.2f} {s / T:6.2f} {max(0.0, s - T):7.2f}  "
              f"{'TRACEBACK ' if tb else ''}{(line[0] if line else '')[:150]}")
    print(f"\nworst time past the limit: {max(worst, 0.0):.2f} s (budget: limit + 1 s, process start included)")


if __name__ == "__main__":
    main()
