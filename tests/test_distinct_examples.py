"""Issue 24, part 1: a certificate's N is the number of pairwise-distinct examples.

Planted certificates, each with its exact verdict, checked by the pure kernel
(``checker.check_certificate``) and the fast path (``fastcheck.check_certificate_fast``), which
must agree on the verdict class and the witness:

* version 1: 300 rows that are 150 distinct examples, each listed twice (appended or
  interleaved) — CERTIFIED with ``n_examples == 150``, REFUTED when it claims 300; one input
  with two labels — REFUTED with both rows;
* version 2 (chunk files written by ``writer.write_certificate``, the main JSON edited and
  re-hashed): a chunk listed twice (the same file; the same bytes under a second name), the
  issue's manifest that lists one Kajitsuka chunk ten times to claim 10 x N, overlapping and
  gapped ``first`` values, a chunk whose ``examples`` overstates it — malformed; the same
  examples re-encoded into other bytes under other names — the rows count, the distinct
  examples do not (REFUTED for an inflated ``n_examples`` claim, CERTIFIED for the true one);
  one input with two labels across two chunks — REFUTED naming both rows.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from fractions import Fraction

import pytest

import mutants as M
from exactmem.kernel.checker import MalformedCertificate, canonical_hash, check_certificate, load_certificate
from exactmem.certificate.chunkfiles import chunk_reader
from exactmem.certificate.fastcheck import check_certificate_fast
from exactmem.kernel.schema import QUANTITIES
from exactmem.certificate.writer import build_certificate, write_certificate
from exactmem.data.dataset import Dataset
from exactmem.model import Model
from exactmem.model.layers import Affine
from exactmem.pipeline.certify import certify_instance
from exactmem.proof import Instance
from exactmem.pipeline.loader import load_proof_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 10  # distinct Kajitsuka sequences (the N = 1,000 from 100 sequences, made small)
K = 5  # examples per chunk


def rehash(doc: dict) -> dict:
    doc["hash"] = canonical_hash(doc)
    return doc


def verdict(doc: dict, folder=None):
    """(status, witness, message) of the pure kernel; the fast path must give the same status and
    witness. A malformed certificate is ("MALFORMED", None, message) from both."""
    got = {}
    for name, check in (("pure", check_certificate), ("fast", check_certificate_fast)):
        try:
            v = check(copy.deepcopy(doc), read_chunk=None if folder is None else chunk_reader(str(folder)))
            got[name] = (v.status, v.witness, v.message)
        except MalformedCertificate as e:
            got[name] = ("MALFORMED", None, str(e))
    assert got["pure"][:2] == got["fast"][:2], got
    if got["pure"][0] == "MALFORMED":
        assert got["fast"][2] == got["pure"][2], got
    return got["pure"]


def claim(quantity: str, op: str, bound) -> dict:
    return {"quantity": quantity, "op": op, "bound": str(bound)}


def with_claims(doc: dict, claims: list) -> dict:
    d = copy.deepcopy(doc)
    d["claims"] = claims
    return rehash(d)


def test_the_oracle_knows_every_claim_quantity():
    assert set(M.MODEL_QUANTITIES + M.DATA_QUANTITIES) == set(QUANTITIES)


# ------------------------------------------------------------------ version 1: 150 distinct examples, each twice

def _doubled(order: str) -> dict:
    """300 rows: inputs ((1, i), (i, 1)) for i < 150, each listed twice; the model reads the last token."""
    one = Fraction(1)
    xs = [((one, Fraction(i)), (Fraction(i), one)) for i in range(150)]
    rows = xs + xs if order == "appended" else [x for x in xs for _ in (0, 1)]
    model = Model((Affine(((one, 0 * one), (0 * one, one))),), "vectors", 2)
    data = Dataset(rows, [x[-1] for x in rows], "vectors")
    return build_certificate("planted", f"150x2-{order}", 0, model, data, [list(x[-1]) for x in rows], [])


FIVE = [claim("n_rows", "==", 300), claim("n_examples", "==", 150), claim("seq_len", "==", 2),
        claim("label_classes", "==", 150), claim("width", "<=", 2)]


@pytest.mark.parametrize("order", ["appended", "interleaved"])
def test_v1_150_distinct_examples_each_twice_are_150(order):
    doc = with_claims(_doubled(order), FIVE)
    status, witness, message = verdict(doc)
    assert (status, witness) == ("CERTIFIED", None)
    assert message == ("all 150 distinct examples pass (300 rows; 150 repeated rows counted once) and all 5 claims "
                       "hold (exact)")
    v = check_certificate(doc)
    assert (v.measured["n_rows"], v.measured["n_examples"], v.measured["distinct_tokens"]) == (300, 150, 299)
    orc = M.oracle(doc)
    assert orc.wrong is False and orc.quantities["n_examples"] == 150 and orc.conflicts == {}


@pytest.mark.parametrize("order", ["appended", "interleaved"])
def test_v1_claiming_300_distinct_examples_is_refuted(order):
    claims = [claim("n_rows", "==", 300), claim("n_examples", "==", 300), claim("seq_len", "==", 2),
              claim("label_classes", "<=", 300), claim("width", "<=", 2)]
    status, witness, message = verdict(with_claims(_doubled(order), claims))
    assert status == "REFUTED"
    assert witness == {"claim": claims[1], "bound": "300", "measured": "150"}
    assert message == "claim n_examples == 300 fails: measured n_examples = 150"
    for bad in (claim("n_examples", ">=", 151), claim("n_examples", ">", 150), claim("label_classes", ">=", 151),
                claim("n_rows", "==", 150), claim("distinct_tokens", "==", 300), claim("seq_len", "==", 1)):
        status, witness, _ = verdict(with_claims(_doubled(order), FIVE + [bad]))
        assert (status, witness["claim"]) == ("REFUTED", bad)
        assert M.oracle(with_claims(_doubled(order), FIVE + [bad])).claim == 5


def test_v1_one_input_with_two_labels_is_refuted_with_both_rows():
    doc = with_claims(_doubled("appended"), FIVE)
    doc["dataset"]["labels"][157] = ["1", "8"]  # row 157 repeats row 7, whose label is (7, 1)
    doc["outputs"][157] = ["1", "8"]
    status, witness, message = verdict(rehash(doc))
    assert status == "REFUTED"
    assert witness == {"example": 157, "reason": "conflicting_labels", "same_input_as": 7, "label": ["1", "8"]}
    assert message == "examples 7 and 157 have the same input and different labels"
    assert M.oracle(doc).conflicts == {157: 7} and M.oracle(doc).first == 157


def test_v1_a_repeated_row_spelled_otherwise_is_the_same_example():
    doc = with_claims(_doubled("appended"), FIVE)
    doc["dataset"]["inputs"][150] = [["2/2", "0/3"], ["0/5", "3/3"]]  # row 0: ((1,0),(0,1))
    doc["dataset"]["labels"][150] = ["0/9", "7/7"]
    doc["outputs"][150] = ["-0", "1"]
    status, witness, message = verdict(rehash(doc))
    assert (status, witness) == ("CERTIFIED", None)
    assert message.startswith("all 150 distinct examples pass (300 rows; 150 repeated rows counted once)")


def test_a_repeated_token_text_is_read_once_and_every_other_text_is_validated():
    """The kernel reads an input token's texts once (issue 27): equal texts give one immutable
    vector; a different spelling is read on its own (equal value, same token for the facts),
    and a bad text where a repeated token stood is malformed, naming its place."""
    from exactmem.kernel.limits import Budget
    from exactmem.kernel.schema import parse_certificate

    doc = with_claims(_doubled("appended"), FIVE + [claim("distinct_tokens", "==", 299)])
    cert = parse_certificate(copy.deepcopy(doc), Budget())
    assert cert.inputs[0][0] is cert.inputs[150][0] and isinstance(cert.inputs[0][0], tuple)
    assert cert.inputs[0][0] is not cert.inputs[1][0] and cert.inputs[1][0] == (1, 1)
    doc2 = copy.deepcopy(doc)
    doc2["dataset"]["inputs"][151][0] = ["2/2", "1"]  # (1, 1) spelled otherwise: the same token
    assert verdict(rehash(doc2))[0] == "CERTIFIED"
    bad = copy.deepcopy(doc)
    bad["dataset"]["inputs"][151][0] = ["1", "1.0"]
    status, _, message = verdict(rehash(bad))
    assert status == "MALFORMED" and "dataset.inputs[151][0][1]" in message, message


# ------------------------------------------------------------------ version 2: chunks of a Kajitsuka instance

@pytest.fixture(scope="module")
def kaj(tmp_path_factory):
    """A Kajitsuka Theorem 4.1 certificate of N = 10 distinct sequences (no planted duplicates), version 1."""
    thms = load_proof_file(os.path.join(ROOT, "proofs", "kajitsuka.py"))
    thm = next(t for t in thms if t.name == "kajitsuka.next_token")
    params = {"N": N, "n": 4, "d": 3, "C": 4, "duplicates": 0, "setting": "next_token"}
    inst = Instance(f"N{N}-n4-d3-C4-distinct", params)
    row = certify_instance(thm, inst, 0, str(tmp_path_factory.mktemp("kaj")), quiet=True, chunk_examples=0)
    assert row.verdict == "CERTIFIED", row.message
    doc = M._plain_claims(load_certificate(row.path))  # these tests edit n_rows: no formula uses its name here
    doc.pop("meta", None)
    doc["hash"] = canonical_hash(doc)
    assert doc["version"] == 1 and len(doc["dataset"]["inputs"]) == N
    assert [c for c in doc["claims"] if c["quantity"] in ("n_rows", "n_examples")] == \
        [{**claim("n_rows", "==", N), "source": doc["claims"][0]["source"]},
         {**claim("n_examples", "==", N), "source": doc["claims"][1]["source"]}]
    return doc


def _chunked(doc: dict, folder) -> dict:
    """Write ``doc`` in chunks of K examples into ``folder``; return the version-2 main document."""
    folder.mkdir(exist_ok=True)
    path = str(folder / "cert.json")
    write_certificate(copy.deepcopy(doc), path, chunk_examples=K)
    return load_certificate(path)


def _set_counts(main: dict, rows: int, distinct: int) -> dict:
    """The main document claiming ``rows`` rows and ``distinct`` distinct examples (re-hashed)."""
    for c in main["claims"]:
        if c["quantity"] == "n_rows":
            c["bound"] = str(rows)
        if c["quantity"] == "n_examples":
            c["bound"] = str(distinct)
    return rehash(main)


def _renumber(chunks: list) -> list:
    first = 0
    for c in chunks:
        c["first"] = first
        first += c["examples"]
    return chunks


def _write_chunk(folder, name: str, body: dict, indent=None) -> dict:
    """Write a chunk file (JSON, indentation ``indent``); its manifest entry."""
    data = json.dumps(body, indent=indent).encode()
    (folder / name).write_bytes(data)
    return {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "examples": len(body["inputs"])}


def _reencode(folder, chunk: dict, name: str, indent) -> dict:
    """The chunk's examples written again under ``name`` in other bytes (JSON indentation ``indent``),
    without the body's optional ``first`` (the copy goes elsewhere in the list)."""
    body = json.loads((folder / chunk["file"]).read_bytes())
    body.pop("first", None)
    return _write_chunk(folder, name, body, indent)


def test_v2_control_certified_with_every_first(kaj, tmp_path):
    main = _chunked(kaj, tmp_path)
    assert [(c["first"], c["examples"]) for c in main["dataset"]["chunks"]] == [(0, K), (K, K)]
    status, witness, message = verdict(main, tmp_path)
    assert (status, witness) == ("CERTIFIED", None)
    assert message.startswith(f"all {N} distinct examples pass and all {len(kaj['claims'])} claims hold")
    for c in main["dataset"]["chunks"]:  # "first" is optional
        del c["first"]
    assert verdict(rehash(main), tmp_path)[:2] == ("CERTIFIED", None)


@pytest.mark.parametrize("how", ["same file", "same bytes, second name"])
def test_v2_a_chunk_listed_twice_is_malformed(kaj, tmp_path, how):
    main = _chunked(kaj, tmp_path)
    c0, c1 = main["dataset"]["chunks"]
    again = dict(c0)
    if how == "same bytes, second name":
        shutil.copyfile(tmp_path / c0["file"], tmp_path / "copy.json")
        again["file"] = "copy.json"
    main["dataset"]["chunks"] = _renumber([c0, c1, again])
    status, _, message = verdict(_set_counts(main, 3 * K, 3 * K), tmp_path)
    assert status == "MALFORMED"
    key = "file" if how == "same file" else "sha256"
    assert message == f"dataset.chunks[2].{key}: the same {key} as dataset.chunks[0] (a chunk listed twice)"


def test_v2_one_chunk_listed_ten_times_for_ten_times_n_is_malformed(kaj, tmp_path):
    """The issue's manifest: one chunk of all N sequences named ten times, claiming 10 N."""
    main = _chunked(kaj, tmp_path)
    c0, c1 = main["dataset"]["chunks"]
    body = {"format": "exactmem-certificate-chunk", "inputs": [], "labels": [], "outputs": []}
    for c in (c0, c1):
        part = json.loads((tmp_path / c["file"]).read_bytes())
        for k in ("inputs", "labels", "outputs"):
            body[k] += part[k]
    whole = _write_chunk(tmp_path, "all.json", body)
    assert whole["examples"] == N
    main["dataset"]["chunks"] = [dict(whole)]
    assert verdict(_set_counts(copy.deepcopy(main), N, N), tmp_path)[:2] == ("CERTIFIED", None)  # listed once
    for first in (True, False):
        main["dataset"]["chunks"] = [dict(whole) for _ in range(10)]
        if first:
            _renumber(main["dataset"]["chunks"])
        status, _, message = verdict(_set_counts(main, 10 * N, 10 * N), tmp_path)
        assert (status, message) == ("MALFORMED", "dataset.chunks[1].file: the same file as dataset.chunks[0] "
                                                  "(a chunk listed twice)")


@pytest.mark.parametrize("copies", [2, 10])
def test_v2_the_same_examples_in_other_bytes_count_once(kaj, tmp_path, copies):
    """Each chunk re-encoded (other bytes, other names) ``copies`` times in all: the rows are copies x N,
    the distinct examples N — an inflated n_examples claim is REFUTED, the true one CERTIFIED."""
    main = _chunked(kaj, tmp_path)
    chunks = list(main["dataset"]["chunks"])
    for r in range(1, copies):
        chunks += [_reencode(tmp_path, c, f"copy{r}-{k}.json", r - 1) for k, c in enumerate(main["dataset"]["chunks"])]
    assert len({c["sha256"] for c in chunks}) == len(chunks) == 2 * copies
    main["dataset"]["chunks"] = _renumber(chunks)
    inflated = _set_counts(copy.deepcopy(main), copies * N, copies * N)
    status, witness, message = verdict(inflated, tmp_path)
    assert status == "REFUTED"
    assert witness == {"claim": next(c for c in inflated["claims"] if c["quantity"] == "n_examples"),
                       "bound": str(copies * N), "measured": str(N)}
    assert message == f"claim n_examples == {copies * N} fails: measured n_examples = {N}"
    true = _set_counts(copy.deepcopy(main), copies * N, N)
    status, witness, message = verdict(true, tmp_path)
    assert (status, witness) == ("CERTIFIED", None)
    reps = (copies - 1) * N
    assert message.startswith(f"all {N} distinct examples pass ({copies * N} rows; {reps} repeated rows counted "
                              f"once) and all {len(kaj['claims'])} claims hold")
    stale = _set_counts(copy.deepcopy(main), N, N)  # the n_rows claim (first) still says N
    status, witness, _ = verdict(stale, tmp_path)
    assert (status, witness["claim"]["quantity"], witness["measured"]) == ("REFUTED", "n_rows", str(copies * N))


@pytest.mark.parametrize("firsts, message", [
    ((0, 3), "dataset.chunks[1].first: chunk ranges must partition the examples: this chunk starts at 3, "
             "the chunks before it end at 5"),
    ((0, 4), "dataset.chunks[1].first: chunk ranges must partition the examples: this chunk starts at 4, "
             "the chunks before it end at 5"),
    ((0, 7), "dataset.chunks[1].first: chunk ranges must partition the examples: this chunk starts at 7, "
             "the chunks before it end at 5"),
    ((1, 5), "dataset.chunks[0].first: chunk ranges must partition the examples: this chunk starts at 1, "
             "the chunks before it end at 0"),
    ((0, 0), "dataset.chunks[1].first: chunk ranges must partition the examples: this chunk starts at 0, "
             "the chunks before it end at 5"),
])
def test_v2_overlapping_or_gapped_first_is_malformed(kaj, tmp_path, firsts, message):
    main = _chunked(kaj, tmp_path)
    for c, f in zip(main["dataset"]["chunks"], firsts):
        c["first"] = f
    assert verdict(rehash(main), tmp_path) == ("MALFORMED", None, message)


def test_v2_a_chunk_that_overstates_its_examples_is_malformed(kaj, tmp_path):
    main = _chunked(kaj, tmp_path)
    c0, c1 = main["dataset"]["chunks"]
    c0["examples"], c1["first"] = K + 1, K + 1
    status, _, message = verdict(_set_counts(main, N + 1, N + 1), tmp_path)
    assert status == "MALFORMED" and message.startswith(f"dataset.chunks[0] ({c0['file']}).inputs: ")


def test_v2_one_input_with_two_labels_across_two_chunks(kaj, tmp_path):
    doc = copy.deepcopy(kaj)
    ds = doc["dataset"]
    ds["inputs"][7] = copy.deepcopy(ds["inputs"][2])  # row 7 (chunk 1) repeats row 2's input (chunk 0)
    ds["labels"][7] = [str(int(ds["labels"][2][0]) + 1)]  # labels are one-coordinate columns (identity)
    doc["outputs"][7] = copy.deepcopy(doc["outputs"][2])
    rehash(doc)
    want = {"example": 7, "reason": "conflicting_labels", "same_input_as": 2, "label": ds["labels"][7]}
    orc = M.oracle(doc)
    assert orc.wrong is True and orc.conflicts == {7: 2} and orc.first == 7
    assert verdict(doc) == ("REFUTED", want, "examples 2 and 7 have the same input and different labels")
    main = _chunked(doc, tmp_path)
    assert len(main["dataset"]["chunks"]) == 2
    assert verdict(main, tmp_path) == ("REFUTED", want, "examples 2 and 7 have the same input and different labels")
    # with the same label, row 7 is a repeat: 9 distinct examples; the claim of 10 fails, of 9 holds
    ds["labels"][7] = copy.deepcopy(ds["labels"][2])
    rehash(doc)
    main = _chunked(doc, tmp_path / "same")
    status, witness, _ = verdict(main, tmp_path / "same")
    assert (status, witness["claim"]["quantity"], witness["measured"]) == ("REFUTED", "n_examples", str(N - 1))
    status, witness, message = verdict(_set_counts(main, N, N - 1), tmp_path / "same")
    assert (status, witness) == ("CERTIFIED", None)
    assert message.startswith(f"all {N - 1} distinct examples pass ({N} rows; 1 repeated row counted once)")


# ------------------------------------------------------------------ honest repeated rows, chunked by the writer

def test_v2_repeated_rows_across_chunks_count_once(tmp_path):
    """150 distinct examples each twice, consecutive (rows 2i, 2i + 1), in chunks of 5 by the writer:
    the pairs straddle chunk boundaries; CERTIFIED as 150 distinct examples; REFUTED claiming 300."""
    main = _chunked(with_claims(_doubled("interleaved"), FIVE), tmp_path)
    assert len(main["dataset"]["chunks"]) == 60
    status, witness, message = verdict(main, tmp_path)
    assert (status, witness) == ("CERTIFIED", None)
    assert message.startswith("all 150 distinct examples pass (300 rows; 150 repeated rows counted once) and all 5 "
                              "claims hold")
    status, witness, _ = verdict(_set_counts(main, 300, 300), tmp_path)
    assert (status, witness["claim"]["quantity"], witness["measured"]) == ("REFUTED", "n_examples", "150")


def test_v2_an_honest_dataset_whose_chunks_repeat_is_not_malformed(tmp_path):
    """The writer's own output for a valid version-1 certificate (150 distinct examples, then the same
    150 again) in chunks of 5: chunks 30..59 hold the rows of chunks 0..29. Every row is a legitimate
    repeat, so the certificate holds exactly as in version 1 (CERTIFIED, 150 distinct examples); each
    chunk names its first example, so equal rows never make equal chunk files."""
    main = _chunked(with_claims(_doubled("appended"), FIVE), tmp_path)
    assert main["dataset"]["chunks"][30]["sha256"] != main["dataset"]["chunks"][0]["sha256"]
    status, witness, message = verdict(main, tmp_path)
    assert (status, witness) == ("CERTIFIED", None)
    assert message.startswith("all 150 distinct examples pass (300 rows; 150 repeated rows counted once)")


def test_token_bytes_remembered_by_object_survive_reused_ids(monkeypatch):
    """DataFacts remembers a token's canonical bytes by the token object (issue 27); objects that
    die and whose ids are reused by other tokens must not get the old bytes."""
    from exactmem.kernel import facts as F

    monkeypatch.setattr(F, "KNOWN_TOKENS", 3)
    f = F.DataFacts(vectors=True)
    for i in range(200):  # a fresh tuple each row, freed after it: CPython reuses the ids
        f.add(i, [(Fraction(i % 50), Fraction(1))], [Fraction(i % 50)])
    q = f.quantities()
    assert (q["n_examples"], q["n_rows"], q["distinct_tokens"]) == (50, 200, 50)
    assert q["min_sep2"] == 1 and q["max_norm2"] == 49 ** 2 + 1


@pytest.mark.parametrize("scale", [1, 16, 2 ** 20, 2 ** 31, 2 ** 40])  # 2^31 and up: 3M >= 2^64, pair by pair
@pytest.mark.parametrize("n", [2, 3, 63, 64, 65, 300])  # PACK_MIN = 64: below it, pair by pair
def test_least_squared_distance_equals_every_pair(n, scale):
    """The kernel's δ² (packed base-2^64 digits, or pair by pair for few or large vectors) is the
    least ‖v − w‖² over all pairs, ties and repeated vectors included (issue 27)."""
    import random

    from exactmem.kernel.geometry import PACK_MIN, least_sq_distance

    assert PACK_MIN == 64
    rng = random.Random(n * 7919 + scale)
    for d in (1, 3, 16):
        iv = [[rng.randint(-scale, scale) for _ in range(d)] for _ in range(n)]
        if n > 2:
            iv[-1] = list(iv[n // 2])  # a repeated vector: δ² = 0
            iv[1] = [x + 1 for x in iv[0]]
        for vs in (iv, iv[:-1]):
            want = min((sum((a - b) ** 2 for a, b in zip(vs[i], vs[j])) for i in range(len(vs)) for j in range(i)),
                       default=None)  # one vector: no pair
            assert least_sq_distance(vs) == want


def test_min_sep2_of_rational_tokens_is_exact():
    """δ² of tokens with rational coordinates, through DataFacts: integers over the lcm, packed."""
    from exactmem.kernel import facts as F

    f = F.DataFacts(vectors=True)
    toks = [(Fraction(i, 3), Fraction(-i * i, 7)) for i in range(100)] + [(Fraction(1, 5), Fraction(0))]
    for i, t in enumerate(toks):
        f.add(i, [t], [0])
    want = min((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 for i, a in enumerate(toks) for b in toks[:i])
    assert f.quantities()["min_sep2"] == want == Fraction(421, 11025)
