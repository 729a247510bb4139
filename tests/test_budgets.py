"""Verifier-side budgets: the adversarial cases of issue 16, each answered within its budget.

Each case is a certificate that used to hang the checker or crash it with a traceback: the
softmax2 spread of more than 4,300 digits (traceback), the digit bombs (10^6 and 10^7 digits),
the precision bomb (all-tied softmax asking for 2^24 bits), a pure-path check stopped by the
time limit, a value blow-up through deep layers, a gzip bomb. Each must give UNKNOWN (exit 2)
or malformed (exit 3) with one line naming the limit and how to raise it. The elapsed-time
checks are hang guards with generous slack, not speed targets (benchmarks/budgets.py prints
the measured overshoot against the time limit).
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import time
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactmem.kernel.text import fmt
from exactmem.kernel.checker import Limits, MalformedCertificate, canonical_hash, check_certificate
from exactmem.kernel.text import fmt, int_str, parse_int
from test_checker import affine, attention, cert, head, model

ROOT = Path(__file__).resolve().parents[1]
HANG_GUARD = 60  # seconds of wall clock: far above every budget used here, even on a busy machine; only a hang trips it


def run_check(path, *flags):
    """``python -m exactmem check`` in a subprocess: (exit code, stdout lines, stderr, seconds)."""
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "exactmem", "check", str(path), *flags], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout.splitlines(), r.stderr, time.perf_counter() - t


def write(tmp_path, doc, name="c.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def one_line(lines_or_text):
    lines = lines_or_text.splitlines() if isinstance(lines_or_text, str) else lines_or_text
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


def _identity_model():
    return model([affine([[1]])], dim=1)


# ---------------------------------------------------------------- the softmax2 traceback case

def _with_number(doc, path, value: int):
    """Put a number of any size at ``path`` (the test helpers print with str(), which has a digit limit)."""
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = int_str(value)
    doc["hash"] = canonical_hash(doc)
    return doc


def _softmax2_spread_doc(digits):
    """Scores x_k · x_j of a 1-d softmax2 layer; one token of ``digits`` digits makes the spread huge."""
    mdl = model([attention([head([[1]], [[1]], [[1]], [[1]])], "softmax2", residual=False)], dim=1)
    return _with_number(cert(mdl, [[[7], [1]]], [[1]]), ("dataset", "inputs", 0, 0, 0), 10 ** digits)


def test_softmax2_spread_of_thousands_of_digits_is_unknown_in_one_line(tmp_path):
    code, out, err, secs = run_check(write(tmp_path, _softmax2_spread_doc(5000)))
    line = one_line(out)
    assert code == 2 and line.startswith("UNKNOWN") and "Traceback" not in err
    assert "softmax2 score spread" in line and "max_value_bits" in line and "--max-value-bits" in line
    assert "digits)" in line or "-bit integer>" in line  # the spread is abbreviated, never printed whole
    assert len(line) < 1000 and secs < HANG_GUARD


def test_messages_do_not_depend_on_the_int_str_digit_limit():
    old = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(640)  # the smallest limit CPython allows
        v = check_certificate(_softmax2_spread_doc(5000))
        assert v.status == "UNKNOWN" and v.limit == "max_value_bits"
        s = "9" * 50_000
        assert int_str(parse_int(s)) == s and parse_int("-" + s) == -parse_int(s)
        assert fmt(F(parse_int(s[:5000]), 7)).endswith("(5000 digits)/7")  # abbreviated decimal
        assert fmt(F(parse_int(s), 7)) == "<166097-bit integer>/7"  # past 2^16 bits: the size only
        bound = "1" * 19_000  # a rational of 19,000 digits is parsed and compared exactly
        doc = cert(_identity_model(), [[[3]]], [[3]], claims=[("n_params", "<=", 7)])
        _with_number(doc, ("claims", 0, "bound"), parse_int(bound))
        assert check_certificate(doc).status == "CERTIFIED"
        doc["claims"][0]["op"] = ">="
        doc["hash"] = canonical_hash(doc)
        v = check_certificate(doc)  # the refuting claim's witness shows the bound abbreviated
        assert v.status == "REFUTED" and v.witness["bound"].endswith("(19000 digits)")
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.parametrize("digits", [1, 599, 600, 601, 1234, 4300, 4301, 70_001])
def test_decimal_text_round_trips_exactly(digits):
    s = "".join("7130492865"[(i * i) % 10] for i in range(digits)).lstrip("0") or "0"
    assert parse_int(s) == int(s) if digits < 4000 else True
    assert int_str(parse_int(s)) == s and parse_int("-" + s) == -parse_int(s)


# ---------------------------------------------------------------- digit bombs

@pytest.mark.parametrize("digits", [10 ** 6, 10 ** 7])
def test_digit_bombs_are_malformed_at_once(tmp_path, digits):
    doc = cert(_identity_model(), [[[3]]], [[3]])
    doc["claims"] = [{"quantity": "n_params", "op": "<=", "bound": "9" * digits}]
    doc["hash"] = canonical_hash(doc)
    code, out, err, secs = run_check(write(tmp_path, doc))
    line = one_line(err)
    assert code == 3 and out == [] and line.startswith("exactmem: error: malformed certificate: claims[0].bound")
    assert f"a number of {digits} digits, more than 100000" in line and "--max-digits" in line
    assert secs < HANG_GUARD


def test_a_raised_digit_limit_parses_a_million_digits_exactly(tmp_path):
    doc = cert(_identity_model(), [[[3]]], [[3]])
    doc["claims"] = [{"quantity": "n_params", "op": "<=", "bound": "9" * 10 ** 6}]
    doc["hash"] = canonical_hash(doc)
    code, out, err, secs = run_check(write(tmp_path, doc), "--max-digits", "1000000", "--max-value-bits", "1048576")
    assert code == 0 and one_line(out).startswith("CERTIFIED") and secs < HANG_GUARD


def test_json_integer_literals_are_bounded(tmp_path):
    doc = cert(_identity_model(), [[[3]]], [[3]])
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc).replace('"seed": 0', '"seed": ' + "7" * 5000))
    code, out, err, _ = run_check(p)
    assert code == 3 and "JSON integer literal of 5000 digits" in one_line(err)


# ---------------------------------------------------------------- precision bomb

def _tied_softmax_doc(max_precision):
    """Two softmax layers whose scores all tie: the true output is exactly 4/3, but the second
    layer's scores are non-point intervals (the first layer's weights 1/3 are rounded), so the
    label 4/3 with error_bound 0 stays undecided at every precision, and each precision step
    computes real exponentials."""
    tied = attention([head([[1]], [[1]], [[0]], [[0]])], "softmax", residual=False)
    again = attention([head([[1]], [[1]], [[1]], [[1]])], "softmax", residual=False)
    return cert(model([tied, again], dim=1), [[[1], [1], [2]]], [[F(4, 3)]], outputs=[None], error_bound=0,
                max_precision=max_precision)


def test_precision_bomb_is_capped_by_the_verifier(tmp_path):
    p = write(tmp_path, _tied_softmax_doc(1 << 24))
    code, out, err, secs = run_check(p)
    line = one_line(out)
    assert code == 2 and "undecided at precision 4096" in line and "--max-precision" in line
    assert secs < HANG_GUARD
    v = check_certificate(_tied_softmax_doc(1 << 24))
    assert v.status == "UNKNOWN" and v.limit == "max_precision" and v.precision == 4096


def test_precision_bomb_with_a_raised_cap_stops_at_the_time_limit(tmp_path):
    p = write(tmp_path, _tied_softmax_doc(1 << 24))
    code, out, err, secs = run_check(p, "--max-precision", "65536", "--time-limit", "1")
    line = one_line(out)
    assert code == 2 and "time limit of 1 s reached" in line and "--time-limit" in line
    assert secs < HANG_GUARD


def test_the_certificate_asks_for_less_precision_never_more():
    assert check_certificate(_tied_softmax_doc(128)).precision == 128  # asks less: gets less
    v = check_certificate(_tied_softmax_doc(1 << 24), limits=Limits(max_precision=256))
    assert v.precision == 256  # asks more: gets the verifier's cap


def test_limits_refuse_values_past_their_ceilings():
    with pytest.raises(ValueError, match="max_precision"):
        Limits(max_precision=1 << 24)
    with pytest.raises(ValueError, match="time_limit"):
        Limits(time_limit=0)


# ---------------------------------------------------------------- time limit on the pure path

def _many_examples_doc(n):
    mdl = model([affine([[1], [2]], relu=True), affine([[1, 1]])], dim=1)
    return cert(mdl, [[[k]] for k in range(n)], [[3 * k] for k in range(n)])


def _planted(doc, examples):
    """``doc`` with the labels (and claimed outputs) of ``examples`` set wrong, re-hashed."""
    bad = json.loads(json.dumps(doc))
    for e in examples:
        bad["dataset"]["labels"][e] = bad["outputs"][e] = ["-1"]
    bad["hash"] = canonical_hash(bad)
    return bad


def test_time_limit_stops_a_long_check_as_unknown():
    doc = _many_examples_doc(3000)
    assert check_certificate(doc).status == "CERTIFIED"
    v = check_certificate(doc, limits=Limits(time_limit=F(1, 10 ** 6)))
    assert v.status == "UNKNOWN" and v.limit == "time_limit" and "Limits(time_limit=...)" in v.message
    from exactmem.certificate.fastcheck import check_certificate_fast

    vf = check_certificate_fast(doc, limits=Limits(time_limit=F(1, 10 ** 6)))
    assert vf.status == "UNKNOWN" and vf.limit == "time_limit"


def test_a_refutation_before_the_time_limit_still_wins():
    doc = _many_examples_doc(3000)
    doc["dataset"]["labels"][0] = doc["outputs"][0] = ["1"]
    doc["hash"] = canonical_hash(doc)
    v = check_certificate(doc, limits=Limits(time_limit=5))
    assert v.status == "REFUTED" and v.witness["example"] == 0


def test_the_certificate_may_lower_the_time_limit_but_not_raise_it():
    doc = _many_examples_doc(3000)
    doc["check"]["limits"] = {"time_limit": "1/1000000"}
    doc["hash"] = canonical_hash(doc)
    assert check_certificate(doc).limit == "time_limit"  # lowered by the certificate
    doc["check"]["limits"] = {"time_limit": "100000"}
    doc["hash"] = canonical_hash(doc)
    assert check_certificate(doc).status == "CERTIFIED"
    assert check_certificate(doc, limits=Limits(time_limit=F(1, 10 ** 6))).limit == "time_limit"  # not raised


def test_the_certificate_may_lower_the_digit_limit():
    doc = cert(_identity_model(), [[[123456]]], [[123456]])
    doc["check"]["limits"] = {"max_digits": 3}
    doc["hash"] = canonical_hash(doc)
    with pytest.raises(MalformedCertificate, match="a number of 6 digits, more than 3"):
        check_certificate(doc)
    doc["check"]["limits"] = {"max_bytes": 10}  # not a limit a certificate can set
    doc["hash"] = canonical_hash(doc)
    with pytest.raises(MalformedCertificate, match="check.limits: unknown field 'max_bytes'"):
        check_certificate(doc)


def test_cli_time_limit_on_a_real_check(tmp_path):
    p = write(tmp_path, _many_examples_doc(3000))
    code, out, _, secs = run_check(p, "--time-limit", "1/1000000")
    assert code == 2 and one_line(out).startswith("UNKNOWN: time limit of 1/1000000 s reached")
    code, out, _, _ = run_check(p, "--time-limit", "none")
    assert code == 0
    code, _, err, _ = run_check(p, "--time-limit", "-3")
    assert code == 3 and one_line(err).startswith("exactmem: error: --time-limit must be positive")


# ---------------------------------------------------------------- intermediate values, file size

def test_values_growing_through_layers_hit_the_value_limit():
    w = 10 ** 90_000  # about 299,000 bits: under the digit limit, but two layers pass 2^19 bits
    doc = cert(model([affine([[7]]), affine([[7]]), affine([[7]])], dim=1), [[[1]]], [[1]])  # label 1: wrong
    for i in range(3):
        _with_number(doc, ("model", "layers", i, "W", 0, 0), w)
    v = check_certificate(doc)  # stopped before the output exists: undecided, not refuted
    assert v.status == "UNKNOWN" and v.limit == "max_value_bits" and "model.layers[1]" in v.message
    v = check_certificate(doc, limits=Limits(max_value_bits=1 << 20))
    assert v.status == "REFUTED" and v.witness["got"] == [f"<{(w ** 3).bit_length()}-bit integer>"]


def test_file_size_limit_and_gzip_bomb(tmp_path):
    doc = _many_examples_doc(200)
    p = write(tmp_path, doc)
    code, _, err, _ = run_check(p, "--max-bytes", "1000")
    assert code == 3 and "larger than 1000 bytes" in one_line(err) and "--max-bytes" in err
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (8 << 20) + json.dumps(doc).encode()))  # 8 MiB of blanks, 8 KiB zipped
    code, _, err, secs = run_check(bomb, "--max-bytes", "1000000")
    assert code == 3 and "larger than 1000000 bytes" in one_line(err) and secs < HANG_GUARD
    assert run_check(bomb)[0] == 0  # within the default limit it is an ordinary certificate


def test_library_certify_takes_the_verifiers_limits():
    import exactmem as em

    net = em.kajitsuka.next_token(em.sequences(N=5, n=4, d=3, C=3))
    assert em.certify(net).status == "CERTIFIED"
    v = em.certify(net, limits=Limits(time_limit=F(1, 10 ** 6)))
    assert v.status == "UNKNOWN" and v.limit == "time_limit"


def _one_step_bomb_doc(width=1000, layers=9, bits=50_000, seed=7):
    """One wide affine layer on big registers: ``layers`` 1×1 layers of ``bits``-bit weights p/q
    grow the single register (numerator and denominator) to about layers·bits bits, a 1×``width``
    layer copies it, then a ``width``×``width`` layer of ±1 is a single kernel step of about
    width² big-integer products (a minute here), which must tick the clock inside."""
    rng = random.Random(seed)
    big = [{"type": "affine", "W": [[fmt(F(rng.getrandbits(bits) | 1 << (bits - 1),
                                             rng.getrandbits(bits) | 1 << (bits - 1) | 1), False)]], "relu": False}
           for _ in range(layers)]
    wide = [affine([[1]] * width), affine([[rng.choice((1, -1)) for _ in range(width)] for _ in range(width)])]
    return cert(model(big + wide, dim=1), [[[1]]], [[0] * width])


@pytest.mark.parametrize("engine", [pytest.param("pure", marks=pytest.mark.slow), "fast"])  # pure: 7 s, with -m slow
def test_one_wide_step_on_big_registers_stops_at_the_time_limit(tmp_path, engine):
    p = write(tmp_path, _one_step_bomb_doc())
    code, out, err, secs = run_check(p, "--time-limit", "5", "--engine", engine)
    line = one_line(out)
    # stops because of the limit, not a hang: a bound that scales with the limit holds on a loaded machine too
    assert code == 2 and line.startswith("UNKNOWN") and "time limit of 5 s" in line and secs < 2 * 5 + 10, (code, line, secs)
