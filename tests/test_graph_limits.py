"""Bounded graphs and one-line answers (issue 38, items 2 and 3).

Hand-built graph certificates that once ended in a traceback (exit 1, REFUTED's code), ran for
minutes past ``--time-limit``, or ran out of memory: each now answers with a documented exit code
and one line, within a bound that scales with its time limit. Built in memory; checked through
``cli.check.answer``, the one place the command runs the kernel.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

from exactmem.cli.check import answer
from exactmem.kernel.checker import check_certificate
from exactmem.kernel.limits import Budget, Limits
from exactmem.kernel.text import int_str
from test_graph_kernel import doc, ints, node, values

ROOT = Path(__file__).resolve().parents[1]


def graph(consts, nodes, out="y"):
    return {"input": "x", "output": out, "constants": consts, "nodes": nodes}


def cert(g, inputs=((0, 1),)):
    """A token-input graph certificate whose examples claim 'pass' (so each is evaluated)."""
    return doc(g, [list(x) for x in inputs], [0] * len(inputs), ["pass"] * len(inputs))


def check(d, limit=Fraction(10), **kw):
    """(exit code, stdout, stderr, seconds) of the check command's kernel call on the document ``d``."""
    t = time.monotonic()
    code, out, err = answer(lambda: check_certificate(d, budget=Budget(Limits(time_limit=limit, **kw))))
    return code, out, err, time.monotonic() - t


def one_line(code, out, err, codes):
    assert code in codes, (code, out[:300], err[:300])
    text = out if code != 3 else err
    assert "Traceback" not in out + err and text.count("\n") <= 1, (out[:500], err[:500])
    if code == 3:
        assert err.startswith("exactmem: error: ") and "\n" not in err
    return text


CASES = {
    # issue 38 item 3: quadratic work, no tick
    "split_200000_outputs": lambda: cert(graph({}, [node("Split", ["x"], [f"o{k}" for k in range(200000)], axis=1)], "o0")),
    "reshape_to_rank_100000": lambda: cert(graph({"s": ints([100000], [1] * 100000)},
                                                 [node("Reshape", ["x", "s"], "y")])),
    # memory: shapes over the element limits
    "constant_2_40_by_0": lambda: cert(graph({"c": values([1 << 40, 0], [])}, [node("Identity", ["x"], "y")])),
    "broadcast_50000_by_50000": lambda: cert(graph({"a": values([50000, 1], [1] * 50000), "b": values([1, 50000], [1] * 50000)},
                                                   [node("Add", ["a", "b"], "y")])),
    "gather_500000_indices": lambda: cert(graph({"d": values([4, 1000], [1] * 4000), "i": ints([500000], [1] * 500000)},
                                                [node("Gather", ["d", "i"], "y")])),
    # one-line answers where ops raised
    "unsqueeze_repeated_axis": lambda: cert(graph({"a": ints([2], [0, 0])}, [node("Unsqueeze", ["x", "a"], "y")])),
    "reducemean_empty_axis": lambda: cert(graph({"c": values([3, 0], []), "a": ints([1], [1])},
                                                [node("ReduceMean", ["c", "a"], "y")])),
    "softmax_empty_axis": lambda: cert(graph({"c": values([3, 0], [])}, [node("Softmax", ["c"], "y", axis=1)])),
    "layernorm_empty_axis": lambda: cert(graph({"c": values([3, 0], []), "s": values([0], [])},
                                               [node("LayerNormalization", ["c", "s"], "y")])),
    "pow_exponent_10_5000": lambda: cert(graph({"c": values([1, 2], [3, 5]), "k": {"shape": [], "values": ["1" + "0" * 5000]}},
                                               [node("Pow", ["c", "k"], "y")])),
    "exp_of_300000_bits": lambda: cert(graph({"c": {"shape": [1, 2], "values": [int_str(1 << 300000), "1"]}}, [node("Exp", ["c"], "y")])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_adversarial_graph_answers_in_one_line_within_its_limit(name):
    d = CASES[name]()
    code, out, err, secs = check(d, Fraction(10))
    text = one_line(code, out, err, (2, 3))
    print(f"\n{name}: exit {code} in {secs:.2f} s: {text[:160]}")
    assert secs <= 2 * 10 + 10
    if name in ("constant_2_40_by_0", "broadcast_50000_by_50000", "gather_500000_indices"):
        assert code == 2 and "max_elements" in text or "max_total_elements" in text


def test_huge_digit_constants_stop_at_the_time_limit():
    """Constants of 100,000-digit numbers: parsed one at a time, the clock checked before each."""
    big = "7" * 100_000
    g = graph({"c": {"shape": [400], "values": [big] * 400}}, [node("Identity", ["x"], "y")])
    d = cert(g)
    code, out, err, secs = check(d, Fraction(1, 2))
    text = one_line(code, out, err, (2,))
    assert "time limit" in text and secs <= 2 * 0.5 + 10


def test_limits_are_options_of_check(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(CASES["broadcast_50000_by_50000"]()))
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(p), "--max-elements", "100",
                        "--time-limit", "20"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "max_elements" in r.stdout and "--max-elements" in r.stdout, r.stdout + r.stderr


def test_an_ints_lookup_table_read_as_values_is_counted_as_parameters():
    """Issue 38, item 4: a 32-entry lookup table in an ``ints`` constant (Gather's data) memorizes 6 of 6
    examples; its entries are parameters (n_params, max_bits), not free structure. As Gather's indices,
    Reshape's shape and the like, an ints constant stays uncounted."""
    from exactmem.kernel.schema import parse_certificate
    labels = [k % 2 for k in range(32)]
    table = [v for lab in labels for v in ((1, 0) if lab == 0 else (0, 1))]
    g = graph({"t": ints([32, 2], table), "z": values([], [0])},
              [node("Gather", ["t", "x"], "g"), node("Add", ["g", "z"], "y")])
    inputs = [[k] for k in (3, 8, 13, 20, 27, 30)]
    claim = {"quantity": "n_params", "op": "<=", "bound": "1"}
    d = doc(g, inputs, [labels[k] for [k] in inputs], ["pass"] * 6, inp={"type": "tokens", "vocab": 32}, claims=[claim])
    m = parse_certificate(d).measured
    assert m["n_params"] == 1 + 64 and m["max_bits"] == 2
    code, out, err, _ = check(d)
    assert code == 1 and "claim n_params <= 1 fails: measured n_params = 65" in out, out + err
    g["nodes"][0]["inputs"] = ["w", "x"]  # the same table as 'values': the same count
    g["constants"]["w"] = values([32, 2], table)
    del g["constants"]["t"]
    assert parse_certificate(doc(g, inputs, [labels[k] for [k] in inputs], ["pass"] * 6,
                                 inp={"type": "tokens", "vocab": 32})).measured["n_params"] == 65
