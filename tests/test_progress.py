"""Progress of long runs (exactmem/progress.py; certify pipeline and sweeps): stderr only, a
tqdm bar on a terminal, plain lines (no carriage returns) otherwise, nothing with --quiet —
and never a change to stdout or to the results."""

import io
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from exactmem import sweep as S
from exactmem.cli.app import main
from exactmem.progress import Progress, choose_mode, fit_cost_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOY_PROOF = textwrap.dedent('''
    from fractions import Fraction as F
    from exactmem.certificate.writer import Claim
    from exactmem.data.dataset import Dataset
    from exactmem.model import Model, affine
    from exactmem.proof import Built, Instance, Theorem


    def build(params, seed):
        k = params["k"]
        xs = [4 * (i + 1 + seed) for i in range(k)]
        model = Model([affine([[F(19, 8)]], relu=True), affine([[2]])], input_dim=1)
        ds = Dataset([((F(x),),) for x in xs], [(F(19, 4) * x,) for x in xs], "vectors", seed)
        return Built(model, ds, [Claim("n_examples", "==", k, "k examples")])


    THEOREMS = [Theorem("toy.scale", "out = 2 relu(w x)", "test", build,
                        [Instance("k3", {"k": 3}), Instance("k2", {"k": 2})])]
''')


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def toy_proof(tmp_path):
    p = tmp_path / "toy_proof.py"
    p.write_text(TOY_PROOF)
    return str(p)


def _table(stdout: str) -> str:
    """stdout without the run-dependent time column."""
    return re.sub(r"[0-9.]+ s$", "t", stdout, flags=re.M)


# ----------------------------------------------------------------------------- the helper


def test_modes():
    assert choose_mode(quiet=True, file=FakeTTY()) == "quiet"
    assert choose_mode(file=FakeTTY()) == "bar"
    assert choose_mode(file=io.StringIO()) == "plain"
    assert choose_mode(file=io.StringIO(), mode="bar") == "bar"
    with pytest.raises(ValueError, match="progress mode"):
        choose_mode(mode="fancy")


def test_plain_lines_have_one_format_counts_and_eta_and_no_carriage_return():
    f = io.StringIO()
    with Progress(3, "work", "item", file=f, interval=0) as p:
        p.describe("first")
        p.stage("build", "building ...")
        p.update(1, "first: ok")
        p.stage("quiet stage")  # no line in plain mode
        p.update(1)  # count line (interval 0)
        p.note("a note")
        p.update(1, "third: ok")
    text = f.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "[1/3] first: building ..."
    assert lines[1].startswith("[1/3] first: ok; elapsed ") and "ETA" in lines[1]
    assert lines[2].startswith("[2/3] items done; elapsed ")
    assert lines[3] == "a note"
    assert lines[4].startswith("[3/3] third: ok; elapsed ") and "ETA" not in lines[4]
    assert len(lines) == 5


def test_eta_is_weighted_by_the_items_costs(monkeypatch):
    """Two cheap items took 2 s; the third costs 100 times one of them: the ETA is ~100 s,
    not the unweighted ~1 s."""
    clock = [0.0]
    monkeypatch.setattr("exactmem.progress.time.perf_counter", lambda: clock[0])
    f = io.StringIO()
    p = Progress(3, "work", "item", file=f, mode="plain", costs=[1, 1, 100])
    plain = Progress(3, "work", "item", file=io.StringIO(), mode="plain")
    clock[0] = 2.0
    p.update(2, "two small ones")
    assert p.eta() == pytest.approx(100.0)
    plain.update(2)
    assert plain.eta() == pytest.approx(1.0)
    assert "ETA 1 min 40 s" in f.getvalue()
    with pytest.raises(ValueError, match="one positive cost per item"):
        Progress(2, costs=[1], file=io.StringIO(), mode="plain")


def test_out_of_order_items_carry_their_own_cost(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("exactmem.progress.time.perf_counter", lambda: clock[0])
    p = Progress(3, "work", "item", file=io.StringIO(), mode="plain", costs=[1, 3, 2])
    clock[0] = 3.0
    p.update(1, "the big one finished first", cost=3)
    assert p.eta() is None  # one sample: ETA unknown
    clock[0] = 4.0
    p.update(1, "then the small one", cost=1)
    assert p.eta() == pytest.approx(2.0)  # 1 s per unit of cost, cost 2 left


# ----------------------------------------------------------------------------- the calibrated ETA (issue 37)


def test_cost_model_fit():
    """seconds ≈ a + b·cost, a, b ≥ 0, least squares; None with one sample or a negative slope."""
    assert fit_cost_model([]) is None and fit_cost_model([(10, 5.0)]) is None
    assert fit_cost_model([(10, 1.0), (110, 11.0)]) == pytest.approx((0.0, 0.1))
    assert fit_cost_model([(10, 2.0), (110, 12.0)]) == pytest.approx((1.0, 0.1))
    assert fit_cost_model([(1, 1.0), (1, 3.0)]) == pytest.approx((0.0, 2.0))  # one cost: the plain rate
    assert fit_cost_model([(10, 5.0), (110, 2.0)]) is None  # bigger and faster: no model yet
    # a warm-up first sample that contradicts the rest is dropped once there are more
    assert fit_cost_model([(10, 20.0), (60, 6.0), (110, 11.0)]) == pytest.approx((0.0, 0.1))
    assert fit_cost_model([(10, 2.0), (20, 3.0), (30, 4.0), (40, 0.0)]) is None
    assert fit_cost_model([(10, 0.0), (20, -1.0)]) is None  # a negative slope: no model
    assert fit_cost_model([(10, 3.0), (20, 1.0), (30, 1.0)]) == pytest.approx((1.0, 0.0))  # overhead only


def test_eta_unknown_until_two_items_then_the_calibrated_model():
    """The issue's case: a cheap first instance (cost 10, 2 s of which most is warm-up) must not
    be extrapolated to the big ones. One finished item: 'ETA unknown'; two: a + b·cost fitted
    (here a = 1 s, b = 0.1 s per unit), minus the time spent on the item under way."""
    t = [0.0]
    f = io.StringIO()
    p = Progress(3, "certify", "instance", file=f, mode="plain", costs=[10, 110, 1000], clock=lambda: t[0])
    t[0] = 2.0
    p.update(1, "first: ok")
    assert p.eta() is None and "ETA unknown" in f.getvalue().splitlines()[-1]
    assert "ETA 3 min 42 s" not in f.getvalue()  # the one-instance extrapolation 2 s/10 × 1,110
    t[0] = 14.0
    p.update(1, "second: ok")
    assert p.eta() == pytest.approx(101.0)  # 1 + 0.1 × 1,000
    assert f.getvalue().splitlines()[-1].endswith("ETA 1 min 41 s")
    assert p.eta(now=64.0) == pytest.approx(51.0)  # 50 s spent on the third
    assert p.eta(now=500.0) == pytest.approx(0.0)  # over its prediction: nothing else to wait for
    t[0] = 120.0
    p.update(1, "third: ok")
    assert p.eta() is None and "ETA" not in f.getvalue().splitlines()[-1]  # done: no ETA at all


def test_eta_without_costs_counts_items():
    t = [0.0]
    p = Progress(4, "sweep", "point", file=io.StringIO(), mode="plain", clock=lambda: t[0])
    t[0] = 30.0
    p.update(1)
    assert p.eta() is None
    t[0] = 40.0
    p.update(1)
    assert p.eta() == pytest.approx(40.0)  # 20 s per point (30 and 10), two left


def test_progress_inside_a_stage(monkeypatch):
    """Plain mode: an in-stage line only once the stage has run ``interval`` seconds, then at most
    every ``interval``; the bar shows the count after the stage's name."""
    clock = [0.0]
    monkeypatch.setattr("exactmem.progress.time.perf_counter", lambda: clock[0])
    f = io.StringIO()
    p = Progress(1, "work", "item", file=f, mode="plain", interval=10)
    p.describe("big")
    p.stage("forward")
    p.within(1, 100, "layer")  # at 0 s: too early
    clock[0] = 11.0
    p.within(40, 100, "layer")
    clock[0] = 12.0
    p.within(41, 100, "layer")  # 1 s after the last line
    clock[0] = 25.0
    p.within(90, 100, "layer")
    assert f.getvalue().splitlines() == ["[1/1] big: forward: layer 40/100 (11 s)", "[1/1] big: forward: layer 90/100 (25 s)"]
    t = FakeTTY()
    with Progress(2, "work", "item", file=t) as b:
        b.describe("big")
        b.stage("check (pure)")
        b.within(7, 9, "example")
        assert "[1] big: check (pure)" in t.getvalue() and "example 7/9" in t.getvalue()


def test_durations_have_one_format():
    from exactmem.progress import duration

    assert [duration(x) for x in (0.04, 3.26, 12.4, 65, 3725)] == ["0.0 s", "3.3 s", "12 s", "1 min 05 s",
                                                                   "1 h 02 min"]


def test_plain_count_lines_are_rate_limited():
    f = io.StringIO()
    with Progress(1000, "many", file=f, interval=3600) as p:
        for _ in range(1000):
            p.update()
    assert f.getvalue().count("\n") == 1 and "[1000/1000]" in f.getvalue()  # only the final count line


def test_quiet_prints_nothing():
    f = FakeTTY()
    with Progress(2, "work", file=f, quiet=True) as p:
        p.stage("build", "building ...")
        p.update(1, "done")
        p.note("note")
        with p.suspended():
            pass
        p.update(1)
    assert f.getvalue() == "" and p.done == 2


def test_bar_on_a_terminal_has_rate_and_eta():
    f = FakeTTY()
    with Progress(4, "work", "item", file=f) as p:
        p.describe("work [1/4]")
        p.stage("forward")
        p.update(1, "first: ok")
        p.update(3)
    text = f.getvalue()
    assert "\r" in text and "[1/4] first: ok\n" in text
    assert "4/4 items" in text and "ETA" in text and "elapsed" in text
    assert "forward" in text


# ----------------------------------------------------------------------------- certify


def test_certify_progress_goes_to_stderr_only(toy_proof, tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "certs")
    args = ["certify", toy_proof, "--out", out]
    assert main(args + ["--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    assert main(args) == 0  # capsys: stderr is not a terminal, so plain lines
    plain = capsys.readouterr()
    assert "\r" not in plain.err
    lines = plain.err.splitlines()
    assert lines[0] == "[1/2] toy.scale [k3]: building ..."
    assert any(l.startswith("[2/2] toy.scale [k2]: checking ") for l in lines)
    assert any(l.startswith("[2/2] toy.scale [k2] CERTIFIED in ") and "check" in l for l in lines)
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    assert main(args) == 0
    bar = capsys.readouterr()
    assert "\r" in fake.getvalue() and "2/2 instances" in fake.getvalue()
    assert _table(quiet.out) == _table(plain.out) == _table(bar.out)
    assert quiet.out.splitlines()[1] == "toy.scale" and quiet.out.splitlines()[2].split()[:3] == ["k3", "CERTIFIED", "3"]


def test_certify_file_results_do_not_depend_on_progress(toy_proof, tmp_path, capsys, monkeypatch):
    from exactmem.pipeline.certify import certify_file

    a = certify_file(toy_proof, out_dir=str(tmp_path / "a"), quiet=True)
    monkeypatch.setattr(sys, "stderr", FakeTTY())
    b = certify_file(toy_proof, out_dir=str(tmp_path / "b"))
    key = lambda rows: [(r.theorem, r.instance, r.verdict, r.params, r.max_bits, r.total_bits) for r in rows]
    assert key(a) == key(b)
    for r, s in zip(a, b):
        assert json.load(open(r.path)) == json.load(open(s.path))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal test")
def test_certify_draws_a_bar_on_a_real_terminal(toy_proof, tmp_path):
    import pty
    import select

    master, slave = pty.openpty()  # size 0 x 0: the helper still draws a 100-column bar
    proc = subprocess.Popen([sys.executable, "-m", "exactmem", "certify", toy_proof, "--out", str(tmp_path)],
                            cwd=ROOT, stdin=slave, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode()
    assert proc.wait() == 0
    os.close(master)
    text = err.decode("utf-8", "replace")
    assert "\r" in text and "2/2 instances" in text and "ETA" in text
    assert "toy.scale [k3] CERTIFIED in " in text
    assert "toy.scale" in out and "\r" not in out and "ETA" not in out


# ----------------------------------------------------------------------------- sweeps


def test_sweep_progress_plain_quiet_and_bar(toy_proof, tmp_path, capsys, monkeypatch):
    spec = S.SweepSpec(toy_proof, theorems=("toy.scale",), instances=("k3",), params=[("k", [2, 3])],
                       models=("fixed",))
    a = S.run_sweep(spec, str(tmp_path / "a"), quiet=True)
    assert capsys.readouterr().err == ""
    b = S.run_sweep(spec, str(tmp_path / "b"))
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0].startswith("sweep: 2 points (0 already in ")
    # inside the first point, before its result: its start at once, then what it does (issue 37)
    assert lines[1].startswith("[1/2] toy.scale ") and lines[1].endswith(": building the instance")
    assert lines[2].startswith("[1/2] ") and "built: " in lines[2] and "parameters" in lines[2]
    results = [ln for ln in lines if "ETA" in ln]
    assert results[0].startswith("[1/2] toy.scale ") and lines.index(results[0]) > 2
    assert [ln for ln in lines if ln.startswith("[2/2] toy.scale ")], lines
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    c = S.run_sweep(spec, str(tmp_path / "c"))
    assert "\r" in fake.getvalue() and "2/2 points" in fake.getvalue()
    assert capsys.readouterr().out == ""
    strip = lambda run: [{k: v for k, v in r.items() if k not in ("seconds", "finished", "out_dir", "point")}
                         for r in run.records]
    assert strip(a) == strip(b) == strip(c) and len(a.records) == 2


# ----------------------------------------------------------------------------- the kernel stays clean


def test_kernel_does_not_import_progress_or_tqdm():
    code = ("import sys, exactmem.kernel.checker, exactmem.certificate.fastcheck, exactmem.cli.check\n"
            "print('tqdm' in sys.modules, 'exactmem.progress' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_status_lines_are_rate_limited_in_plain_mode_and_fill_the_bar_postfix():
    f = io.StringIO()
    with Progress(None, "check", "shard", file=f, mode="plain", interval=3600) as p:
        for k in range(50):
            p.status(f"worker 0: layer {k}/50")
    assert f.getvalue() == "[1] worker 0: layer 0/50\n"  # the first at once, then at most one per interval
    t = FakeTTY()
    with Progress(None, "check", "shard", file=t) as p:
        p.status("worker 0: layer 3/9; worker 1: layer 4/9")
        assert p.mode == "bar"
    assert "worker 1: layer 4/9" in t.getvalue()


def test_the_kernel_reports_each_example_before_judging_it_and_the_verdict_is_unchanged(toy_proof, tmp_path):
    from exactmem.kernel.checker import check_certificate, load_certificate
    from exactmem.kernel.limits import Budget
    from exactmem.pipeline.certify import certify_file

    row = certify_file(toy_proof, out_dir=str(tmp_path), quiet=True, only="k3")[0]
    doc = load_certificate(row.path)
    seen = []
    v = check_certificate(doc, budget=Budget(on_example=seen.append))
    assert seen == [0, 1, 2] and v.to_json() == check_certificate(load_certificate(row.path)).to_json()


def test_forward_reports_layers_and_gives_the_same_outputs():
    from fractions import Fraction as F

    from exactmem.model import Model, affine, forward
    from exactmem.model.affine_stack import PROGRESS_GROUP as PROGRESS_STEPS

    layers = [affine([[F(k + 2, k + 1)]], relu=k % 2 == 0) for k in range(150)]
    m = Model(layers, input_dim=1)
    xs = [[(F(3, 7),)], [(F(-5, 2),)]]
    seen = []
    a = forward(m, xs, on_layer=lambda k, n: seen.append((k, n)))
    assert a.outputs == forward(m, xs).outputs
    assert seen[-1] == (150, 150) and len(seen) == -(-150 // PROGRESS_STEPS)
    assert [k for k, _ in seen] == sorted(k for k, _ in seen)
