"""Parser fuzz: whatever the file holds, the checker answers with a Verdict or MalformedCertificate.

Inputs, each written to a file and read back with ``load_certificate`` and, when that
succeeds, checked with ``check_certificate`` (and the fast path ``check_certificate_fast``):

* random JSON-ish documents (random values, and documents with the right top-level fields
  holding random values, hashed so that they get past the hash check);
* structure-aware edits of real certificates (one node replaced, deleted, inserted,
  duplicated or re-typed), re-hashed so that they reach the schema and the semantics;
* byte-level corruptions of real certificate files (flips, inserts, deletions, truncation),
  optionally re-hashed when the corrupted text still parses;
* gzip files truncated or corrupted at random offsets.

The only allowed outcomes are a Verdict (CERTIFIED / REFUTED / UNKNOWN) or
MalformedCertificate; any other exception, or a check running past ``TIME_LIMIT`` seconds,
fails. The pure and the fast checker must agree on the status (or both find it malformed).
Hypothesis settings: ``deadline=None``; example counts in ``EXAMPLES`` (150 random values, 200
shaped documents, 600 structural edits, 200 byte corruptions, 100 gzip files), chosen so that
this module runs well under a minute; set ``EXACTMEM_FUZZ_SCALE=k`` for k times as many.
"""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import os
import signal
import sys
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from hypothesis.control import currently_in_test_context

from exactmem.kernel.checker import MalformedCertificate, canonical_hash, check_certificate, load_certificate
from exactmem.certificate.fastcheck import check_certificate_fast
from exactmem.pipeline.certify import certify_instance
from exactmem.pipeline.loader import load_proof_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutants as M  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Small real certificates covering every layer type and attention kind, both decodes and readouts.
BASES = (("relu_interpolation.py", "relu_interpolation.steps", "N5-d2"),
         ("kajitsuka.py", "kajitsuka.next_token", "N1-n1-d1-C1"),
         ("kajitsuka.py", "kajitsuka.seq2seq", "N10-n4-d3-C4"),
         ("mahdavi.py", "mahdavi.hardmax", "note-4.7"),
         ("mahdavi.py", "mahdavi.softmax", "note-4.7"),
         ("dana.py", "dana.corollary1", "N10-d2-dh2-H2"),
         ("dana.py", "dana.corollary1.base2", "N10-d2-dh2-H2"))
#: Examples per fuzz test (about 20 s in all); ``EXACTMEM_FUZZ_SCALE=k`` multiplies them for a longer hunt.
SCALE = max(1, int(os.environ.get("EXACTMEM_FUZZ_SCALE", "1")))
EXAMPLES = {k: v * SCALE for k, v in {"random": 150, "shaped": 200, "structural": 600, "bytes": 200,
                                       "gzip": 100}.items()}
TIME_LIMIT = 20  # seconds for one load + both checks; a longer run counts as a hang
STATUSES = ("CERTIFIED", "REFUTED", "UNKNOWN")

FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                   HealthCheck.function_scoped_fixture])


# ------------------------------------------------------------------ fixtures and the judge

@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def bases(workdir):
    """Real certificates (dicts) of the instances in ``BASES`` plus one with feedforward layers."""
    docs = []
    for fname, theorem, instance in BASES:
        thm = next(t for t in load_proof_file(os.path.join(ROOT, "proofs", fname)) if t.name == theorem)
        inst = next(i for i in thm.instances if i.name == instance)
        row = certify_instance(thm, inst, 0, str(workdir), quiet=True)
        assert row.verdict == "CERTIFIED", row.message
        docs.append(load_certificate(row.path))
    docs.append(M.as_feedforward(docs[0], residual=True))
    return docs


_counter = itertools.count()


def _write(workdir, data: bytes, suffix: str = ".json") -> str:
    path = os.path.join(str(workdir), f"f{next(_counter)}{suffix}")
    with open(path, "wb") as f:
        f.write(data)
    return path


class _Hang(Exception):
    pass


@contextmanager
def _time_limit(seconds: int):
    def handler(signum, frame):
        raise _Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def outcome(path: str) -> str:
    """Load and check the file at ``path``: a status, or "MALFORMED"; anything else raises."""
    with _time_limit(TIME_LIMIT):
        try:
            doc = load_certificate(path)
        except MalformedCertificate:
            _event("MALFORMED (load)")
            return "MALFORMED"
        answers = []
        for check in (check_certificate, check_certificate_fast):
            try:
                v = check(doc)
            except MalformedCertificate:
                answers.append("MALFORMED")
                continue
            assert v.status in STATUSES, v.status
            if v.status == "REFUTED":
                assert isinstance(v.witness, dict) and v.witness, v
            answers.append(v.status)
    assert answers[0] == answers[1], f"pure checker: {answers[0]}, fast checker: {answers[1]}"
    _event(answers[0])
    return answers[0]


def _event(what: str) -> None:
    """Count an outcome in the Hypothesis statistics (``--hypothesis-show-statistics``)."""
    if currently_in_test_context():
        event(what)


def _dumps(doc) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


# ------------------------------------------------------------------ strategies

FIELD_NAMES = ("format", "version", "theorem", "instance", "seed", "model", "dataset", "outputs", "claims", "check",
               "meta", "hash", "input", "layers", "readout", "type", "dim", "vocab", "position", "decode", "E", "P",
               "W", "b", "relu", "W1", "b1", "W2", "b2", "residual", "kind", "query", "keys", "heads", "WQ", "WK",
               "WV", "WO", "inputs", "labels", "quantity", "op", "bound", "source", "error_bound", "max_precision")
ENUMS = ("vectors", "tokens", "last", "all", "identity", "argmax", "embed", "affine", "feedforward", "attention",
         "softmax", "hardmax", "uniform", "softmax2", "others", "==", "<=", ">=", "<", ">", "width", "depth",
         "n_params", "max_bits", "exactmem-certificate")

rationals = st.from_regex(r"-?[0-9]{1,6}(/[0-9]{1,4})?", fullmatch=True)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 8), st.integers(), rationals, st.sampled_from(ENUMS),
                    st.text(max_size=8), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["1/0", "0/0", "+1", "1.5", "1e3", " 1", "1/-2", "--1", "", "٣"]))
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) |
                           st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=5), c, max_size=4),
                           max_leaves=25)


@st.composite
def shaped_docs(draw):
    """A document with the top-level fields of format v1 (some missing or extra) holding random values."""
    doc = {"format": draw(st.sampled_from(["exactmem-certificate"] * 3 + ["other"])),
           "version": draw(st.sampled_from([1, 1, 1, 2, True, 1.0, "1"]))}
    for k in ("theorem", "instance", "seed", "model", "dataset", "outputs", "claims", "check", "meta"):
        if draw(st.integers(0, 9)):
            doc[k] = draw(json_values)
    if draw(st.booleans()):
        doc["model"] = {"input": draw(st.sampled_from([{"type": "vectors", "dim": 1}, {"type": "tokens", "vocab": 2}])),
                        "layers": draw(json_values), "readout": {"position": "last", "decode": "identity"}}
    doc["hash"] = canonical_hash(doc) if draw(st.integers(0, 4)) else draw(json_values)
    return doc


def _nodes(x, path=()):
    """Every (path, value) of a JSON tree (paths as key / index tuples)."""
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _nodes(v, path + (i,))


def _get(x, path):
    for k in path:
        x = x[k]
    return x


HUGE = ("1" + "0" * 5000, "-" + "7" * 4500 + "/3", "1/" + "1" * 4400)  # past CPython's int-string limit


def _same_type(value):
    """A strategy for a value of the same JSON type as ``value`` (rationals stay rationals, enums enums)."""
    if isinstance(value, bool):
        return st.just(not value)
    if isinstance(value, int):
        return st.sampled_from([value - 1, value + 1, 0, -1, 2 * value, 10 ** 6]) | st.integers(-5, 40)
    if isinstance(value, str):
        if value in ENUMS:
            return st.sampled_from(ENUMS)
        return rationals | st.sampled_from(HUGE + ("0", "-0", "00", "1/1", "0/5", "2/4", "1/0"))
    if isinstance(value, list):
        return st.sampled_from([value[:-1], value + value[-1:], value[::-1], []]) if value else st.just([])
    if value is None:
        return st.sampled_from(["0", "1/2", "-1", [], None])
    return st.just({k: v for k, v in list(value.items())[:-1]}) if value else st.just({})


@st.composite
def structural_edits(draw, docs):
    """A real certificate with one node edited, re-hashed (mostly) so that it reaches the semantics."""
    doc = copy.deepcopy(draw(st.sampled_from(docs)))
    nodes = [p for p, _ in _nodes(doc) if p and p[0] not in ("hash", "meta")]
    # bias towards the model and the check (where the structure is)
    path = draw(st.sampled_from(nodes))
    parent, key = _get(doc, path[:-1]), path[-1]
    value = parent[key]
    op = draw(st.sampled_from(["same-type"] * 6 + ["replace", "delete", "insert", "duplicate", "retype", "int",
                                                     "empty"]))
    if op == "same-type":  # a value of the same JSON type: most likely to pass the schema and reach the semantics
        parent[key] = draw(_same_type(value))
    elif op == "replace":
        parent[key] = draw(json_values)
    elif op == "delete":
        del parent[key]
    elif op == "insert":
        if isinstance(parent, dict):
            parent[draw(st.sampled_from(FIELD_NAMES))] = draw(json_values)
        else:
            parent.insert(draw(st.integers(0, len(parent))), draw(json_values))
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(value))
    elif op == "retype":
        parent[key] = {str: lambda v: [v], list: lambda v: v[0] if v else {}, dict: lambda v: list(v.values()),
                       bool: lambda v: int(v), int: lambda v: str(v)}.get(type(value), lambda v: None)(value)
    elif op == "int":
        parent[key] = draw(st.sampled_from([0, -1, 1, 2, 3, 64, 2 ** 20 + 1, 2 ** 31, 10 ** 30]))
    else:
        parent[key] = [] if isinstance(value, list) else {} if isinstance(value, dict) else ""
    if draw(st.integers(0, 9)):
        try:
            doc["hash"] = canonical_hash(doc)
        except (TypeError, ValueError):
            pass
    return doc


@st.composite
def byte_corruptions(draw, docs):
    """The bytes of a real certificate with a few random flips / inserts / deletions / a truncation."""
    data = bytearray(_dumps(draw(st.sampled_from(docs))))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "digit"]))
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[i:i] = draw(st.sampled_from([b"{", b"}", b"[", b"]", b",", b'"', b"\\", b"0", b"-", b"/", b"\xff",
                                              b'"a":1,', b"null", b"NaN", b"1e999", b"\x00", b'"\\ud800"']))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 16))]
        elif op == "truncate":
            del data[i:]
        elif op == "digit":  # change a digit (a weight, label, dimension...) and keep the text valid JSON
            digits = [k for k, c in enumerate(data) if 48 <= c <= 57]
            if digits:
                data[draw(st.sampled_from(digits))] = 48 + draw(st.integers(0, 9))
    rehash = draw(st.booleans())
    if rehash:
        try:
            doc = json.loads(bytes(data))
            if isinstance(doc, dict):
                doc["hash"] = canonical_hash(doc)
                data = bytearray(_dumps(doc))
        except (ValueError, TypeError, RecursionError):
            pass
    return bytes(data)


# ------------------------------------------------------------------ the fuzz tests

@settings(max_examples=EXAMPLES["random"], **FUZZ)
@given(value=json_values)
def test_random_json_values(workdir, value):
    assert outcome(_write(workdir, _dumps(value))) in ("MALFORMED",) + STATUSES


@settings(max_examples=EXAMPLES["shaped"], **FUZZ)
@given(doc=shaped_docs())
def test_random_documents_with_the_top_level_fields(workdir, doc):
    assert outcome(_write(workdir, _dumps(doc))) in ("MALFORMED",) + STATUSES


@pytest.mark.slow  # 6-9 s: with -m slow (CI runs it); keeps the default suite under 10 minutes
@settings(max_examples=EXAMPLES["structural"], **FUZZ)
@given(data=st.data())
def test_structural_edits_of_real_certificates(workdir, bases, data):
    doc = data.draw(structural_edits(bases))
    try:
        raw = _dumps(doc)
    except ValueError:  # an int too long for str(): not a file anyone can write
        return
    assert outcome(_write(workdir, raw)) in ("MALFORMED",) + STATUSES


@settings(max_examples=EXAMPLES["bytes"], **FUZZ)
@given(data=st.data())
def test_byte_corruptions_of_real_certificates(workdir, bases, data):
    raw = data.draw(byte_corruptions(bases))
    assert outcome(_write(workdir, raw)) in ("MALFORMED",) + STATUSES


@settings(max_examples=EXAMPLES["gzip"], **FUZZ)
@given(data=st.data())
def test_truncated_and_corrupted_gzip(workdir, bases, data):
    raw = gzip.compress(_dumps(data.draw(st.sampled_from(bases))), mtime=0)
    cut = data.draw(st.integers(0, len(raw)))
    mode = data.draw(st.sampled_from(["truncate", "flip", "append"]))
    if mode == "truncate":
        raw = raw[:cut]
    elif mode == "flip" and cut < len(raw):
        raw = raw[:cut] + bytes([raw[cut] ^ 0x40]) + raw[cut + 1:]
    else:
        raw = raw + data.draw(st.binary(min_size=1, max_size=8))
    suffix = data.draw(st.sampled_from([".json.gz", ".json"]))  # gzip is also recognised by its magic bytes
    result = outcome(_write(workdir, raw, suffix))
    assert result in ("MALFORMED",) + STATUSES
    if mode == "truncate" and cut < len(raw):
        assert result == "MALFORMED"


# ------------------------------------------------------------------ fixed edge cases

BAD_FILES = {
    "empty": b"", "blank": b"   ", "null": b"null", "list": b"[]", "object": b"{}",
    "format-only": b'{"format":"exactmem-certificate"}', "bom": b"\xef\xbb\xbf{}", "utf16-bom": b"\xff\xfe",
    "deep-list": b"[" * 100000 + b"]" * 100000, "deep-object": b'{"a":' * 50000 + b"1" + b"}" * 50000,
    "long-int": b"1" * 5000, "duplicate-key": b'{"a":1,"a":2}', "nan": b'{"format":NaN}',
    "infinity": b'{"format":Infinity}', "lone-surrogate": b'"\\ud800"',
}


@pytest.mark.parametrize("text", list(BAD_FILES.values()), ids=list(BAD_FILES))
def test_fixed_bad_files(workdir, text):
    assert outcome(_write(workdir, text)) == "MALFORMED"


def test_deep_nesting_inside_a_hashed_certificate(workdir, bases):
    """A deeply nested value that parses and hashes must not escape as RecursionError."""
    doc = copy.deepcopy(bases[0])
    deep = "x"
    for _ in range(600):
        deep = [deep]
    doc["theorem"] = deep
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 5000))
    try:
        doc["hash"] = canonical_hash(doc)
        raw = _dumps(doc)
    finally:
        sys.setrecursionlimit(old)
    assert outcome(_write(workdir, raw)) == "MALFORMED"
