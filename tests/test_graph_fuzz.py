"""Fuzzing the graph kernel through the check command's one entry (issue 38, item 2).

Random tiny graph certificates (random ops of ``OPS``, shapes with 0 and 1 dimensions,
attributes in and out of range, repeated axes, values small and huge) are checked through
``cli.check.answer`` (what ``exactmem check`` runs): no exception escapes, every answer is one of
the documented ones (exit 0 CERTIFIED, 1 REFUTED, 2 UNKNOWN, 3 malformed in one line) and comes
within its time limit. A seeded sample runs as real ``python -m exactmem check`` processes.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from exactmem.cli.check import answer
from exactmem.kernel.checker import check_certificate
from exactmem.kernel.graph import OPS
from exactmem.kernel.limits import Budget, Limits
from exactmem.kernel.schema import canonical_hash

ROOT = Path(__file__).resolve().parents[1]
LIMIT = Fraction(5)  # seconds per certificate
N_FAST = 10_000


def _rational(rng):
    k = rng.random()
    if k < 0.5:
        return str(rng.randint(-3, 3))
    if k < 0.75:
        return f"{rng.randint(-9, 9)}/{rng.choice([2, 3, 4, 8, 1024, 7])}"
    if k < 0.9:
        return ("-" if rng.random() < 0.3 else "") + "9" * rng.randint(20, 400)
    return f"1/{2 ** rng.randint(60, 1500)}" if rng.random() < 0.5 else str(2 ** rng.randint(100, 3000))


def _shape(rng):
    return [rng.choice([0, 1, 1, 2, 2, 3]) for _ in range(rng.choice([0, 1, 1, 2, 2, 3]))]


def _attr(rng, kind):
    if isinstance(kind, tuple):
        return rng.choice(kind + ("bogus",))
    if kind == "i":
        return rng.randint(-4, 4)
    if kind == "r":
        return _rational(rng)
    return [rng.randint(-3, 3) for _ in range(rng.randint(0, 3))]


def random_doc(rng, special=0.0):
    """A random graph certificate; ``special``: the chance that a ``values`` entry is -inf, inf or nan."""
    consts, ints, vals = {}, [], []
    for k in range(rng.randint(1, 5)):
        shape, name = _shape(rng), f"c{k}"
        n = 1
        for d in shape:
            n *= d
        if rng.random() < 0.4:
            consts[name] = {"shape": [len(v) for v in [[0] * rng.randint(0, 3)]],
                            "ints": []}
            consts[name]["ints"] = [rng.randint(-4, 4) if rng.random() < 0.9 else rng.choice([0, 1])
                                    for _ in range(consts[name]["shape"][0])]
            ints.append(name)
        else:
            consts[name] = {"shape": shape, "values": [rng.choice(["-inf", "-inf", "inf", "nan"])
                                                       if special and rng.random() < special else _rational(rng)
                                                       for _ in range(n)]}
            vals.append(name)
    defined, nodes = ["x"] + vals, []
    for i in range(rng.randint(1, 4)):
        op = rng.choice(sorted(OPS))
        _, least, most, spec, cpos = OPS[op]
        k = rng.randint(least, min(most, least + 2))
        ins = [rng.choice(ints or ["x"]) if j in cpos or (op == "Gather" and j == 1 and rng.random() < 0.5)
               else rng.choice(defined + ints * (rng.random() < 0.05)) for j in range(k)]
        if k > least and rng.random() < 0.2:
            ins[-1] = ""
        outs = [f"t{i}_{j}" for j in range(rng.randint(1, 3) if op == "Split" else 1)]
        attrs = {a: _attr(rng, kind) for a, (kind, _) in spec.items() if rng.random() < 0.5}
        nodes.append({"op": op, "inputs": ins, "outputs": outs, "attrs": attrs})
        defined += outs
    out = defined[-1]
    if rng.random() < 0.7:
        consts["flat"] = {"shape": [2], "ints": [1, -1]}
        nodes.append({"op": "Reshape", "inputs": [out, "flat"], "outputs": ["y"]})
        out = "y"
    n = rng.randint(1, 3)
    d = {"format": "exactmem-certificate", "version": 1, "theorem": "fuzz", "instance": "g", "seed": 0,
         "model": {"input": {"type": "tokens", "vocab": 4}, "graph": {"input": "x", "output": out, "constants": consts,
                                                                      "nodes": nodes},
                   "readout": {"position": "last", "decode": "argmax"}},
         "dataset": {"inputs": [[rng.randint(0, 3) for _ in range(n)]], "labels": [rng.randint(0, 2)]},
         "outputs": [rng.choice(["pass", "pass", "fail", "unknown"])], "claims": [],
         "check": {"error_bound": None, "max_precision": rng.choice([64, 256])}}
    d["hash"] = canonical_hash(d)
    return d


def _answer(d):
    t = time.monotonic()
    code, out, err = answer(lambda: check_certificate(d, budget=Budget(Limits(time_limit=LIMIT))))
    return code, out, err, time.monotonic() - t


def _documented(code, out, err):
    assert code in (0, 1, 2, 3), code
    assert "Traceback" not in out + err
    if code == 3:
        assert not out and err.startswith("exactmem: error: ") and "\n" not in err, err[:500]
    else:
        assert not err and out.startswith(("CERTIFIED:", "REFUTED:", "UNKNOWN:")[code]), out[:500]
        assert out.count("\n") <= (1 if code == 1 else 0)


def _fuzz(n, seed, special=0.0):
    rng, kinds, slowest = random.Random(seed), Counter(), (0.0, None)
    for i in range(n):
        d = random_doc(rng, special)
        code, out, err, secs = _answer(d)
        _documented(code, out, err)
        assert secs <= 2 * LIMIT + 10, (i, secs)
        kinds[code] += 1
        slowest = max(slowest, (secs, i))
    print(f"\n{n} random graph certificates: answers by exit code {dict(sorted(kinds.items()))}; slowest "
          f"{slowest[0]:.3f} s (certificate {slowest[1]}) at a limit of {float(LIMIT)} s")
    return kinds


def test_fuzz_10000_graph_certificates():
    kinds = _fuzz(N_FAST, 38)
    assert sum(kinds.values()) == N_FAST and kinds[3] < N_FAST  # not only malformed ones


def test_fuzz_2000_graph_certificates_with_special_values():
    """-inf, inf and nan in the constants (a third of the entries): still only documented answers, and
    some certificates get past the special values to a verdict (not only refusals)."""
    kinds = _fuzz(2000, 35, special=0.3)
    assert kinds[3] < 2000 and kinds[0] + kinds[1] > 0


@pytest.mark.slow
def test_fuzz_more_graph_certificates():
    _fuzz(100_000, 3838)


def test_fuzz_sample_through_the_command(tmp_path):
    """A seeded sample as real processes: the exit code and the one-line contract end to end."""
    rng = random.Random(8338)
    for i in range(12):
        d = random_doc(rng)
        p = tmp_path / f"f{i}.json"
        p.write_text(json.dumps(d))
        r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(p), "--time-limit", str(LIMIT)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        _documented(r.returncode, r.stdout.rstrip("\n"), r.stderr.rstrip("\n"))
        assert r.returncode == _answer(d)[0]
