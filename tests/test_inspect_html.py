"""``python -m exactmem inspect CERT --html OUT.html`` (issue 26, item 7): one self-contained page
with the layers, a bits-per-layer plot, the claims, the verdict and the per-example verdicts; every
string of the (untrusted) certificate escaped; lower-bound and graph certificates; and a look at the
page in headless Chromium (slow)."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from exactmem.kernel.schema import canonical_hash
from exactmem.cli.app import main
from exactmem.inspector.html import write_html

ROOT = Path(__file__).resolve().parent.parent
PLANT = '<script>alert("x")</script>'


def certify(out: Path, proof: str, only: str) -> Path:
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", proof, "--out", str(out), "--only", only,
                        "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    [path] = out.glob("*.json")
    return path


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    base = tmp_path_factory.mktemp("certs")
    return {"relu": certify(base / "relu", "proofs/relu_interpolation.py", "relu_interpolation.steps/N5-d2"),
            "kajitsuka": certify(base / "kaj", "proofs/kajitsuka.py", "kajitsuka.next_token/N12-n4-d3-C4")}


def rewrite(src: Path, dst: Path, change) -> Path:
    doc = json.loads(src.read_text())
    change(doc)
    doc["hash"] = canonical_hash(doc)
    dst.write_text(json.dumps(doc))
    return dst


def inspect_page(cert: Path, out: Path) -> str:
    assert main(["inspect", str(cert), "--html", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def examples_table(page: str) -> list:
    """(row, status) of the per-example table, in page order."""
    part = page.split("<h2>Examples", 1)[1]
    return re.findall(r'<tr><td class="num">(\d+)</td><td class="(\w+)">([^<]*)</td>', part)


def self_contained(page: str) -> None:
    assert "http" not in page.lower()  # no external URL of any kind (no src=, href=, url(...))
    assert "<script" not in page.lower()
    assert 'src="data:image/png;base64,' in page  # an embedded image


@pytest.mark.parametrize("which", ["relu", "kajitsuka"])
def test_page_has_layers_claims_verdict_and_an_embedded_image(certs, tmp_path, which):
    page = inspect_page(rewrite(certs[which], tmp_path / "c.json", lambda d: d.__setitem__("theorem", d["theorem"] + PLANT)),
                        tmp_path / "c.html")
    self_contained(page)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page  # the planted theorem string, escaped
    assert '<span class="verdict CERTIFIED">CERTIFIED</span>' in page
    assert "<h2>Layers (" in page and "<th>max bits</th><th>total bits</th>" in page
    assert "<h2>Stages (" in page and "<h2>Bits per layer</h2>" in page
    doc = json.loads(certs[which].read_text())
    assert f"<h2>Claims ({len(doc['claims'])})</h2>" in page
    assert page.count('<td class="yes">holds</td>') == len(doc["claims"])
    rows = examples_table(page)
    assert len(rows) == len(doc["dataset"]["inputs"]) and {s for _, s, _ in rows} == {"pass"}
    assert "Head-to-subset" not in page  # no assignment in meta: no section


def test_kajitsuka_page_shows_its_named_stages_and_the_measured_claims(certs, tmp_path):
    """certify writes the Lemma C.1 stages into meta.stages (Built.meta), and the page names them."""
    page = inspect_page(certs["kajitsuka"], tmp_path / "k.html")
    assert "<h2>Stages (9)</h2>" in page and "<h2>Layers (63)</h2>" in page
    assert "F2: Stage III, bit extraction (Lemma G.6)" in page and "uniform attention F^(UA), eq. (52)" in page
    assert "The certificate names no stages" not in page
    # claim, bound, measured, holds: width <= 14 measured 11; depth == 61
    assert '<td class="mono">width &lt;=</td><td class="num">14</td><td class="num">11</td><td class="yes">holds</td>' in page
    assert '<td class="mono">depth ==</td><td class="num">61</td><td class="num">61</td>' in page
    assert "12 pass" in page  # 12 rows (11 distinct)


def test_a_refuted_certificate_lists_the_failing_example_first(certs, tmp_path):
    def wrong_output(d):
        d["outputs"][3] = ["12345"]
        d["claims"][0]["bound"] = "999999"  # a failing claim as well: the table says which
    cert = rewrite(certs["relu"], tmp_path / "bad.json", wrong_output)
    out = tmp_path / "bad.html"
    assert main(["inspect", str(cert), "--html", str(out)]) == 0  # a page was written (the verdict is on it)
    page = out.read_text()
    assert '<span class="verdict REFUTED">' in page
    rows = examples_table(page)
    assert rows[0] == ("3", "fail", "REFUTED") and [s for _, s, _ in rows[1:]] == ["pass"] * 4
    assert "1 REFUTED, 4 pass" in page and "12345" in page
    assert page.count('<td class="no">fails</td>') == 1


def test_the_example_list_is_capped_and_says_so(certs, tmp_path):
    out, summary = write_html(str(certs["relu"]), str(tmp_path / "cap.html"), max_rows=2)
    page = Path(out).read_text()
    assert summary.startswith("CERTIFIED") and len(examples_table(page)) == 2
    assert "showing the first 2 of 5 rows" in page


def test_assignment_graph_from_meta(certs, tmp_path):
    # meta is not hashed: a producer may attach the head-to-subset partition (exactmem.constructions.mahdavi.assign)
    cert = certs["relu"]
    doc = json.loads(cert.read_text())
    doc["meta"]["partition"] = [[0, 1, 2], [3, 4]]
    (tmp_path / "a.json").write_text(json.dumps(doc))
    page = inspect_page(tmp_path / "a.json", tmp_path / "a.html")
    section = page.split("Head-to-subset assignment (2 heads, 5 examples)", 1)[1].split("</section>", 1)[0]
    assert 'src="data:image/png;base64,' in section and "<td>0, 1, 2</td>" in section
    doc["meta"]["partition"] = [[0, 99]]  # out of range: not drawn
    (tmp_path / "b.json").write_text(json.dumps(doc))
    assert "Head-to-subset" not in inspect_page(tmp_path / "b.json", tmp_path / "b.html")


def graph_doc(outputs):
    g = {"input": "ids", "output": "logits",
         "constants": {"wte": {"shape": [4, 3], "values": ["1", "0", "0", "0", "1", "0", "0", "0", "1", "1/2", "1/4", "-1"]}},
         "nodes": [{"op": "Gather", "inputs": ["wte", "ids"], "outputs": ["logits"], "attrs": {"axis": 0}}]}
    d = {"format": "exactmem-certificate", "version": 1, "theorem": "graph" + PLANT, "instance": "t", "seed": 0,
         "model": {"input": {"type": "tokens", "vocab": 4}, "graph": g, "readout": {"position": "last", "decode": "argmax"}},
         "dataset": {"inputs": [[0, 0], [1, 1], [2, 3], [3, 3]], "labels": [0, 1, 1, 0]}, "outputs": outputs,
         "claims": [{"quantity": "n_pass", "op": ">=", "bound": "2", "source": ""}],
         "check": {"error_bound": None, "max_precision": 4096}}
    d["hash"] = canonical_hash(d)
    return d


def test_graph_model_shows_claimed_verdicts(tmp_path):
    (tmp_path / "g.json").write_text(json.dumps(graph_doc(["pass", "pass", "fail", "unknown"])))
    page = inspect_page(tmp_path / "g.json", tmp_path / "g.html")
    self_contained(page)
    assert '<span class="verdict CERTIFIED">' in page and "<td>Gather</td>" in page
    assert "claimed verdicts (a trained network memorizes some examples): 1 fail, 2 pass, 1 unknown" in page
    assert '<td class="mono">n_pass &gt;=</td><td class="num">2</td><td class="num">2</td><td class="yes">' in page
    (tmp_path / "h.json").write_text(json.dumps(graph_doc(["pass", "fail", "fail", "unknown"])))
    page = inspect_page(tmp_path / "h.json", tmp_path / "h.html")
    assert '<span class="verdict REFUTED">' in page
    assert examples_table(page)[0] == ("1", "fail", "contradicted")


def test_lower_bound_certificate(tmp_path):
    path = tmp_path / "minw.json"
    assert main(["bounds", "minw", "--n", "8", "--N", "1000", "--certificate", str(path)]) == 0
    rewrite(path, path, lambda d: d["statement"].__setitem__("text", d["statement"]["text"] + PLANT))
    page = inspect_page(path, tmp_path / "minw.html")
    doc = json.loads(path.read_text())
    assert "http" not in page.lower() and "<script" not in page.lower() and "&lt;script&gt;" in page
    assert '<span class="verdict CERTIFIED">' in page
    assert f"<h2>Premises ({len(doc['premises'])})" in page and f"<h2>Steps ({len(doc['steps'])})</h2>" in page
    assert page.count('<td class="yes">holds</td>') == len(doc["steps"])

    def false_step(d):  # the first step the conclusion does not restate, sides swapped: it no longer holds
        concluding = {c["step"] for c in d["conclusion"]["steps"]}
        s = next(x for x in d["steps"] if x["id"] not in concluding)
        s["lhs"], s["rhs"] = ["+", s["rhs"], "1"], s["lhs"]
    rewrite(path, tmp_path / "bad.json", false_step)
    page = inspect_page(tmp_path / "bad.json", tmp_path / "bad.html")
    assert '<span class="verdict REFUTED">' in page and '<td class="no">false</td>' in page


def test_unreadable_certificate_is_one_line_and_exit_3(tmp_path, capsys):
    (tmp_path / "x.json").write_text("{not json")
    assert main(["inspect", str(tmp_path / "x.json"), "--html", str(tmp_path / "x.html")]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("exactmem: error:") and "\n" not in err and not (tmp_path / "x.html").exists()


@pytest.mark.slow
def test_chromium_renders_the_page(certs, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not on PATH (Debian: apt-get install -y chromium)")
    page = tmp_path / "kaj.html"
    inspect_page(certs["kajitsuka"], page)
    png = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}",
                    "--window-size=1200,1600", page.as_uri()], capture_output=True, timeout=120)
    assert png.exists() and png.stat().st_size > 20_000
    from matplotlib.image import imread

    img = imread(str(png))
    assert img.shape[0] >= 1500 and img.shape[1] >= 1100
    flat = img[..., :3].reshape(-1, 3)
    assert (flat != flat[0]).any(axis=1).mean() > 0.05  # not one colour: text, tables and the plot drawn
    assert len({tuple(map(float, p)) for p in flat[::97]}) > 20


def test_certify_writes_mahdavis_partition_and_the_page_draws_it(tmp_path):
    """Built.meta["partition"] reaches the certificate's meta (not hashed into any verdict) and the
    page shows the head-to-subset graph from it: each example under exactly one head."""
    cert = certify(tmp_path / "m", "proofs/mahdavi.py", "mahdavi.softmax/H3-n4-d8")
    doc = json.loads(cert.read_text())
    part = doc["meta"]["partition"]
    assert len(part) == 3 and sorted(t for S in part for t in S) == list(range(len(doc["dataset"]["inputs"])))
    page = inspect_page(cert, tmp_path / "m.html")
    assert "<h2>Head-to-subset assignment (3 heads, 10 examples)</h2>" in page
