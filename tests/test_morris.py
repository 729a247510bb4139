"""``morris-capacity`` (issue 36, build item 2; docs/capacity.md § The Morris et al. experiment, certified).

Without torch: the committed section of docs/capacity.md is `morris_page.page_block` of the committed
docs/capacity/morris.json; the JSON's summary (capacities, α fits, the 99 % criterion) is recomputed
from its rows; the least-squares fit through the origin against a hand computation.

With torch (`needs_torch`): the quick run's invariants — every certificate re-checked CERTIFIED by
``python -m exactmem check``, its file's SHA-256 as recorded, dataset bits N·S·log₂V, certified memorized
bits = dataset − certified code length, certified ≤ float and ≥ 99 % of it, the bfloat16 rows measured on
bfloat16-representable weights; on one quick network the kernel CERTIFIES the code-length claim, REFUTES it
raised by one bit (the code-length bound lowered by 1), and REFUTES the claims after one output column of
the network (the tied token embedding's copy in the output MatMul) is zeroed.
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from exactmem.experiments import morris_capacity as mc
from exactmem.experiments import morris_page as mp

ROOT = Path(__file__).resolve().parents[1]
JSON = ROOT / mp.JSON_PATH


def committed():
    return json.loads(JSON.read_text(encoding="utf-8"))


def _read_cert(name: str) -> bytes:
    """A cited certificate's JSON bytes (gunzipped when committed as .json.gz)."""
    import gzip

    data = (ROOT / mp.CERT_DIR / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def test_the_cited_certificates_are_committed_as_recorded():
    """The certificates the page cites (the capacity rows) are in docs/capacity/certs/morris with the
    SHA-256 the JSON records, one per capacity (model, weights, seed) at its best N."""
    import hashlib

    js = committed()
    cited = js.get("certificates") or []
    caps = js["summary"]["capacities"]
    assert len(cited) == len(caps) >= 16
    want = {f"{c['model']}-N{c['N_certified']}-s{c['seed']}-{c['weights']}.verify.json" for c in caps}
    assert {c["file"].removesuffix(".gz") for c in cited} == want
    rows = {r["certificate"]: r for r in js["rows"]}
    for c in cited:
        assert c["sha256"] == rows[c["file"].removesuffix(".gz")]["certificate_sha256"], c["file"]
        assert hashlib.sha256(_read_cert(c["file"])).hexdigest() == c["sha256"], c["file"]
    on_disk = {p.name for p in (ROOT / mp.CERT_DIR).iterdir() if p.name.endswith((".verify.json", ".verify.json.gz"))}
    assert on_disk == {c["file"] for c in cited}  # no certificate of an earlier run left behind


def test_the_fast_graph_engine_certifies_a_cited_certificate_with_the_pages_code_length():
    """`check --engine fast` on the smallest cited certificate: its double-float bounds leave some code
    lengths undecided at first, which the kernel's ladder takes over; CERTIFIED with the row's total."""
    pytest.importorskip("numpy")
    from exactmem.certificate.fastcheck import check_certificate_fast

    js = committed()
    rows = {r["certificate"]: r for r in js["rows"]}
    c = min(js["certificates"], key=lambda c: (ROOT / mp.CERT_DIR / c["file"]).stat().st_size)
    v = check_certificate_fast(json.loads(_read_cert(c["file"])))
    assert v.status == "CERTIFIED", v.message
    assert v.measured["codelength_bits"] == Fraction(rows[c["file"].removesuffix(".gz")]["codelength_bits"])


@pytest.mark.slow
def test_every_cited_certificate_is_refuted_when_its_memorized_bits_are_raised_by_one_bit():
    """Issue 36's criterion on every network the page cites: the claim ``codelength_bits <= B`` with B one bit
    lower (memorized bits one bit higher) is REFUTED by `check --engine fast`'s verdict (the kernel judges the
    claim after confirming every example; the run's own check of the unchanged certificate was CERTIFIED)."""
    from exactmem.certificate.fastcheck import check_certificate_fast

    js = committed()
    rows = {r["certificate"]: r for r in js["rows"]}
    for c in js["certificates"]:
        doc = json.loads(_read_cert(c["file"]))
        claim = next(k for k in doc["claims"] if k["quantity"] == "codelength_bits")
        b = Fraction(claim["bound"])
        assert b == Fraction(rows[c["file"].removesuffix(".gz")]["codelength_bits"]), c["file"]
        b -= 1
        claim["bound"] = f"{b.numerator}/{b.denominator}"
        v = check_certificate_fast(_rehash(doc))
        assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == "codelength_bits", (c["file"], v.message)


@pytest.mark.slow
def test_the_cited_certificates_check_and_give_the_pages_code_lengths():
    """`check` of the four smallest cited certificates by the pure kernel and of the largest by the fast
    graph engine (what `check --engine auto` runs on it; `morris_capacity.check_engine`) from this checkout
    (all of them: `for f in docs/capacity/certs/morris/*; do python -m exactmem check $f --engine auto; done`):
    CERTIFIED, the measured codelength_bits the row's (so the page's certified memorized bits are the kernel's)."""
    from exactmem.certificate.fastcheck import check_certificate_fast
    from exactmem.kernel.checker import check_certificate

    js = committed()
    rows = {r["certificate"]: r for r in js["rows"]}
    by_size = sorted(js["certificates"], key=lambda c: len(_read_cert(c["file"])))
    for c, check in [(c, check_certificate) for c in by_size[:4]] + [(by_size[-1], check_certificate_fast)]:
        v = check(json.loads(_read_cert(c["file"])))
        assert v.status == "CERTIFIED", (c["file"], v.message)
        assert v.measured["codelength_bits"] == Fraction(rows[c["file"].removesuffix(".gz")]["codelength_bits"]), c["file"]


def test_the_docs_section_is_generated_from_the_json():
    js = committed()
    text = (ROOT / "docs" / "capacity.md").read_text(encoding="utf-8")
    assert text.count(mp.BEGIN) == 1 and text.count(mp.END) == 1
    a, b = text.index(mp.BEGIN), text.index(mp.END) + len(mp.END)
    assert text[a:b] == mp.page_block(js), "regenerate: python -m exactmem.experiments.morris_page " \
                                            "experiments/morris-capacity/morris-capacity.json"
    for fig in (mp.FIG1, mp.FIG6):
        assert (ROOT / fig).exists() and fig.split("/", 1)[1] in text


def test_the_committed_summary_follows_from_its_rows():
    js = committed()
    again = mc.summarize(js["rows"])
    S = js["summary"]
    assert again["capacities"] == S["capacities"]
    for w, kinds in again["fit"].items():
        for kind, f in kinds.items():
            assert f["n"] == S["fit"][w][kind]["n"]
            assert math.isclose(f["alpha"], S["fit"][w][kind]["alpha"], rel_tol=1e-12)
    assert again["min_certified_over_float"] == S["min_certified_over_float"]
    assert again["rows_below_99_percent"] == S["rows_below_99_percent"]
    for r in js["rows"]:  # the exact figures behind each row's floats
        assert Fraction(r["memorized_bits_exact"]) == r["dataset_bits"] - Fraction(r["codelength_bits"])
        assert math.isclose(r["certified_memorized_bits"], float(Fraction(r["memorized_bits_exact"])), rel_tol=1e-12)
        V, n = r.get("vocab", S["plan"]["vocab"]), r.get("seq_len", S["plan"]["seq_len"])  # the model's own (V, S)
        assert r["dataset_bits"] == r["N"] * n * int(math.log2(V))
        assert (V, n) == tuple(S["plan"].get("data", {}).get(r["model"], (S["plan"]["vocab"], S["plan"]["seq_len"])))
        assert r["check"] == "CERTIFIED"
    if not js["config"]["quick"]:  # the shape: >= 4 model sizes x >= 4 dataset sizes x >= 2 seeds
        models = {r["model"] for r in js["rows"]}
        assert len(models) >= 4 and len(S["plan"]["seeds"]) >= 2
        assert all(len({r["N"] for r in js["rows"] if r["model"] == m}) >= 4 for m in models)


def test_fit_through_origin_against_a_hand_computation():
    xs, ys = [1.0, 2.0, 4.0], [2.0, 5.0, 7.0]
    f = mc.fit_through_origin(xs, ys)
    a = (2 + 10 + 28) / (1 + 4 + 16)
    res = [y - a * x for x, y in zip(xs, ys)]
    assert math.isclose(f["alpha"], a)
    assert math.isclose(f["se"], math.sqrt(sum(r * r for r in res) / 2 / 21))
    assert mc.fit_through_origin([3.0], [6.0]) == {"alpha": 2.0, "se": None, "n": 1}


def _fake_run(tmp_path, P, seeds):
    """An earlier run's directory: every row of plan ``P`` for ``seeds`` with a certificate file each."""
    import hashlib

    (tmp_path / "certs").mkdir()
    rows = []
    for name, L, d, H in P["models"]:
        for N in P["N"][name]:
            for seed in seeds:
                for w in mc.WEIGHTS:
                    cert = f"{name}-N{N}-s{seed}-{w}.verify.json"
                    data = json.dumps({"net": cert}).encode()
                    (tmp_path / "certs" / cert).write_bytes(data)
                    rows.append({"model": name, "layers": L, "width": d, "heads": H, "N": N, "seed": seed, "weights": w,
                                 "steps": P["steps"][name], "lr": mc.model_lr(P, name),
                                 "dataset_bits": N * mc.SEQ_LEN * int(math.log2(mc.VOCAB)), "check": "CERTIFIED",
                                 "certificate": cert, "certificate_sha256": hashlib.sha256(data).hexdigest(),
                                 "train_s": 1.0, "verify_s": 2.0, "check_s": 3.0})
    (tmp_path / mc.PARTIAL).write_text(json.dumps(rows))
    return rows


def test_resume_keeps_only_rows_it_can_trust(tmp_path):
    """``--resume`` keeps a (model, N, seed) only when the plan, the verdict and every weight format's
    certificate (by SHA-256) are as the earlier row recorded."""
    P, seeds = mc.QUICK, [0, 1]
    rows = _fake_run(tmp_path, P, seeds)
    assert len(mc.resumable_rows(str(tmp_path), P, seeds)) == len(rows)
    assert mc.resumable_rows(str(tmp_path), P, [0]) == {mc._key(r): r for r in rows if r["seed"] == 0}
    first = rows[0]  # L1-d4 N=4 seed 0 float32
    (tmp_path / "certs" / first["certificate"]).write_bytes(b"{}")  # a changed certificate
    other = dict(rows[3], steps=rows[3]["steps"] + 1)  # a row trained with other steps
    flipped = dict(rows[5], check="REFUTED")
    edited = [r for r in rows if r not in (rows[3], rows[5])] + [other, flipped]
    (tmp_path / mc.PARTIAL).write_text(json.dumps(edited))
    kept = mc.resumable_rows(str(tmp_path), P, seeds)
    dropped = {mc._key(r)[:3] for r in (first, rows[3], rows[5])}
    assert {k[:3] for k in kept} == {mc._key(r)[:3] for r in rows} - dropped  # both weight formats go together
    assert len(kept) == len(rows) - 2 * len(dropped)
    changed = dict(P, models=[("L1-d4", 2, 4, 1)] + P["models"][1:])  # another shape under the same name
    assert {k[0] for k in mc.resumable_rows(str(tmp_path), changed, seeds)} == {"L1-d8"}
    times = mc.network_times(rows)
    assert times == {"train_s": len(rows) / 2, "verify_s": 2.0 * len(rows), "check_s": 3.0 * len(rows)}


def test_resume_is_refused_by_the_experiments_that_cannot(capsys):
    from exactmem.__main__ import main

    assert main(["experiment", "dana-fig1", "--resume"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("exactmem: error: experiment dana-fig1: --resume") and err.count("\n") == 1
    assert main(["experiment", "dana-fig1", "--models", "x"]) == 3
    assert "--models is not supported" in capsys.readouterr().err


def test_the_block_replaces_only_its_markers():
    text = "# Page\n\nbefore\n\n" + mp.BEGIN + "\nold\n" + mp.END + "\n\nafter\n"
    assert mp.replace_block(text, mp.BEGIN + "\nnew\n" + mp.END) == \
        "# Page\n\nbefore\n\n" + mp.BEGIN + "\nnew\n" + mp.END + "\n\nafter\n"


# ----------------------------------------------------------------------------- with torch: the quick run


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from exactmem.experiments.base import RunConfig, run_experiment

    out = tmp_path_factory.mktemp("morris")
    rec = run_experiment("morris-capacity", RunConfig(quick=True, out=str(out)))
    return out, json.loads((out / "morris-capacity.json").read_text())


def test_quick_run_invariants(quick):
    out, js = quick
    rows, P = js["rows"], mc.QUICK
    assert len(rows) == sum(len(P["N"][m[0]]) for m in P["models"]) * P["seeds"] * 2
    for r in rows:
        assert r["check"] == "CERTIFIED", r
        path = out / "certs" / r["certificate"]
        assert mc.sha256(str(path)) == r["certificate_sha256"]
        assert r["dataset_bits"] == r["N"] * mc.SEQ_LEN * int(math.log2(mc.VOCAB))
        mem = Fraction(r["memorized_bits_exact"])
        assert mem == r["dataset_bits"] - Fraction(r["codelength_bits"])
        # certified is a lower bound: at least the coder's 2 bits below the float estimate, within a hair of it
        assert r["certified_memorized_bits"] <= r["float_memorized_bits"] - 2 + 1e-3
        assert r["certified_memorized_bits"] >= r["float_memorized_bits"] - 2 - 1e-3
        assert r["certified_over_float"] >= 0.99
        doc = json.loads(path.read_text())
        claim = next(c for c in doc["claims"] if c["quantity"] == "codelength_bits")
        assert Fraction(claim["bound"]) == Fraction(r["codelength_bits"])
        if r["weights"] == "bfloat16":  # every weight of the certified graph is a bfloat16 value
            import numpy as np

            w = doc["model"]["graph"]["constants"]["inner.lm_head.weight"]["values"]
            a = np.array([float(Fraction(v)) for v in w], dtype=np.float32)
            assert np.array_equal(a.view(np.uint32) & 0xFFFF, np.zeros_like(a.view(np.uint32)))
    S = js["summary"]
    for c in S["capacities"]:
        mine = [r for r in rows if (r["model"], r["weights"], r["seed"]) == (c["model"], c["weights"], c["seed"])]
        assert c["certified"] == max(r["certified_memorized_bits"] for r in mine)
    assert set(S["fit"]) == {"float32", "bfloat16"} and S["checks"] == ["CERTIFIED"]
    assert {Path(f).name for f in js["figures"]} == {"morris-capacity-fig1.png", "morris-capacity-fig6.png"}
    assert mp.BEGIN in mp.page_block(js) and "| bfloat16 |" in mp.page_tables(js)


def test_a_resumed_quick_run_trains_nothing_and_keeps_every_row(quick, tmp_path, capsys):
    """``--resume`` on the quick run's directory: every row kept as it was, no network trained again."""
    import shutil

    from exactmem.experiments.base import RunConfig, run_experiment

    out, js = quick
    again = tmp_path / "again"
    shutil.copytree(out, again)
    capsys.readouterr()
    rec = run_experiment("morris-capacity", RunConfig(quick=True, out=str(again), resume=True))
    err = capsys.readouterr().err
    assert rec.summary["resumed_rows"] == len(js["rows"])
    assert rec.rows == js["rows"] and rec.summary["capacities"] == js["summary"]["capacities"]
    assert rec.timings["train_s"] == js["timings"]["train_s"]
    assert f"resuming: {len(js['rows'])} rows" in err and " steps in " not in err  # no training line of `run`


def test_a_skipped_network_is_left_out_of_the_rows_and_named_on_the_page(quick, tmp_path, monkeypatch, capsys):
    """The plan's ``skip`` leaves its (model, N, seed) out of the run — here a resumed one, so nothing trains —
    and the page's set-up names it."""
    import shutil

    from exactmem.experiments.base import RunConfig, run_experiment

    out, js = quick
    name = mc.QUICK["models"][0][0]
    N = mc.QUICK["N"][name][-1]
    monkeypatch.setitem(mc.QUICK, "skip", [(name, N, 0)])
    again = tmp_path / "skipped"
    shutil.copytree(out, again)
    rec = run_experiment("morris-capacity", RunConfig(quick=True, out=str(again), resume=True))
    capsys.readouterr()
    left = [r for r in js["rows"] if (r["model"], r["N"]) != (name, N)]
    assert rec.rows == left and len(left) == len(js["rows"]) - 2
    page = mp.page_block(json.loads((again / "morris-capacity.json").read_text()))
    assert f"not run: {name} N = {N} seed 0, for time" in page


def _rehash(doc):
    from exactmem.kernel.schema import canonical_hash

    doc = copy.deepcopy(doc)
    doc["hash"] = canonical_hash(doc)
    return doc


def test_the_kernel_certifies_the_claim_and_refutes_it_raised_by_one_bit(quick):
    from exactmem.kernel.checker import check_certificate

    out, js = quick
    r = max((r for r in js["rows"] if r["weights"] == "float32"), key=lambda r: r["certified_memorized_bits"])
    doc = json.loads((out / "certs" / r["certificate"]).read_text())
    v = check_certificate(doc)
    assert v.status == "CERTIFIED", v.message
    assert v.measured["codelength_bits"] == Fraction(r["codelength_bits"])

    raised = copy.deepcopy(doc)  # memorized bits claimed one bit higher = code length bound one bit lower
    c = next(c for c in raised["claims"] if c["quantity"] == "codelength_bits")
    b = Fraction(c["bound"]) - 1
    c["bound"] = f"{b.numerator}/{b.denominator}"
    v = check_certificate(_rehash(raised))
    assert v.status == "REFUTED" and v.witness["claim"]["quantity"] == "codelength_bits", v.message

    # a planted fault: the output weights of one token negated (its logit changes sign for every input); the
    # claimed code lengths of the examples whose positions predicted that token well no longer hold
    nudged = copy.deepcopy(doc)
    y = doc["dataset"]["labels"][0][-1]
    consts = nudged["model"]["graph"]["constants"]
    name = next(k for k, t in consts.items() if len(t.get("shape", [])) == 2 and t["shape"][1] == mc.VOCAB + 1
                and "values" in t and not k.startswith("codelength/"))
    t = consts[name]
    for i in range(t["shape"][0]):
        q = -Fraction(t["values"][i * t["shape"][1] + y])
        t["values"][i * t["shape"][1] + y] = str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"
    v = check_certificate(_rehash(nudged))
    assert v.status == "REFUTED", v.message  # the claimed code length (or the claimed verdict) of an example


# ----------------------------------------------------------------------------- engine choices (no torch)


def _fake_verify(tmp_path, calls, auto):
    """A stand-in for `verify.run.memorized_bits`: ``auto`` is the fast engine's memorized bits (an
    exception to raise), the arb ladder gives float − 2; each call writes its certificate file."""
    from types import SimpleNamespace

    def memorized_bits(module, inputs, labels, *, out, name, engine="auto", **kw):
        calls.append(engine)
        if engine == "auto" and isinstance(auto, Exception):
            raise auto
        path = tmp_path / f"{name}.verify.json"
        path.write_text(engine)
        mem = Fraction(auto) if engine == "auto" else Fraction(998)
        m = {"memorized_bits": str(mem), "codelength_bits": str(1000 - mem), "codelength_lower": "0",
             "float_memorized_bits": 1000.0, "float_codelength_bits": 0.0, "n_params": 10}
        return SimpleNamespace(memorized=m, certificate=str(path), unknown=0, bits=[53])
    return memorized_bits


@pytest.mark.parametrize("auto, engines, kept", [
    ("998", ["auto"], "998"),                                   # tight: the fast engine's certificate stays
    ("900", ["auto", "arb"], "998"),                            # 0.90 of the float estimate: the arb ladder's
    (ValueError("ball is not finite"), ["auto", "arb"], "998"),  # the fast path failed: the arb ladder's
])
def test_certify_bits_falls_back_to_the_arb_ladder(tmp_path, monkeypatch, auto, engines, kept):
    import exactmem.verify.run as vr

    calls = []
    monkeypatch.setattr(vr, "memorized_bits", _fake_verify(tmp_path, calls, auto))
    got = mc.certify_bits(None, [[0]] * 3, None, 1000, str(tmp_path), "net",
                          check=lambda p: {"status": "CERTIFIED", "message": "", "seconds": 0.0, "engine": "pure"})
    assert calls == engines
    assert got["memorized_bits_exact"] == kept and got["verify_engine"] == engines[-1]
    assert (tmp_path / "net.verify.json").read_text() == engines[-1]  # the kept certificate is the file checked
    assert (got["auto_memorized_bits_exact"] is None) == (engines == ["auto"])


def test_check_engine_by_size():
    assert mc.check_engine(15360, 96) == "pure" and mc.check_engine(15360, 192) == "auto"
    assert mc.check_engine(4608, 192) == "pure" and mc.check_engine(mc.AUTO_CHECK_WORK, 1) == "auto"


def test_models_cuts_the_plan_and_names_the_known_ones():
    from exactmem.experiments.base import ExperimentError

    P = mc.FULL
    cut = mc.select_models(P, "L2-d32, L1-d6")
    assert [m[0] for m in cut["models"]] == ["L1-d6", "L2-d32"] and cut["N"] == P["N"]  # plan order
    assert mc.select_models(P, "") is P
    with pytest.raises(ExperimentError, match="no model 'L9' in this plan; it has L1-d6, "):
        mc.select_models(P, "L1-d6,L9")


def test_a_model_with_its_own_vocabulary_counts_its_own_bits():
    """Morris et al.'s Table 1 row runs at V = 2048, S = 64: 64 · 11 bits per sequence; the others V = 64, S = 16."""
    assert mc.model_data(mc.FULL, "L1-d32-V2048") == (2048, 64)
    assert mc.dataset_bits(mc.FULL, "L1-d32-V2048", 480) == 480 * 64 * 11
    assert mc.model_data(mc.FULL, "L1-d6") == (mc.VOCAB, mc.SEQ_LEN)
    assert mc.dataset_bits(mc.FULL, "L1-d6", 40) == 40 * mc.SEQ_LEN * 6


def test_the_plans_skipped_networks_are_networks_of_the_plan():
    for P in (mc.FULL, mc.QUICK):
        names = {m[0] for m in P["models"]}
        for name, N, seed in P.get("skip", ()):
            assert name in names and N in P["N"][name] and 0 <= seed < P["seeds"]
