"""The coverage table of docs/index.md stays true: every command names a theorem that exists in
its proof file, no constructive result is "missing", and (when the papers' full texts are next to
the checkout) every numbered theorem, lemma, corollary and proposition has a row."""

import os
import re
import shlex

import pytest

from exactmem.bounds.protocol import load_bounds_file
from exactmem.proof import load_proof_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULLTEXT = os.path.join(ROOT, "..", "shared", "papers", "fulltext")
STATUSES = ("certified on instances", "checked", "inside ", "not constructive", "unavailable")
NUMBERED = re.compile(r"^(Theorem|Lemma|Corollary|Proposition) ([A-Z]\.)?[0-9]+(\.[0-9]+)?", re.M)


def coverage_rows():
    text = open(os.path.join(ROOT, "docs", "index.md"), encoding="utf-8").read()
    block = text.split("<!-- coverage:start -->")[1].split("<!-- coverage:end -->")[0]
    rows = []
    for line in block.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").replace("\\|", "¦").split("|")]
        assert len(cells) == 5, line
        rows.append(dict(zip(("paper", "result", "statement", "status", "command"), cells)))
    return rows


ROWS = coverage_rows()


def _theorem_names(kind: str, path: str):
    path = os.path.join(ROOT, path)
    items = load_proof_file(path) if kind == "certify" else load_bounds_file(path)
    return {t.name for t in items}


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['paper'].split(',')[0]}: {r['result']}" for r in ROWS])
def test_row_names_an_existing_theorem(row):
    assert row["status"].startswith(STATUSES), f"unknown status {row['status']!r}"
    assert "missing" not in row["status"]
    args = shlex.split(row["command"].strip("`"))
    assert args[:3] == ["python", "-m", "exactmem"], row["command"]
    kind = args[3]
    path = args[5] if kind == "bounds" else args[4]
    assert (kind, args[4] if kind == "bounds" else "") in (("certify", ""), ("bounds", "run")), row["command"]
    names = _theorem_names(kind, path)
    if "--only" in args:
        only = args[args.index("--only") + 1]
        assert any(only in n for n in names), f"{path} has no theorem matching {only!r}: {sorted(names)}"


@pytest.mark.skipif(not os.path.isdir(FULLTEXT), reason="the papers' full texts are not next to this checkout")
def test_every_numbered_result_has_a_row():
    covered = " ".join(r["result"] for r in ROWS)
    papers = {"kajitsuka-sato-2025.txt": "Kajitsuka", "dana-pydi-chevaleyre-2025.txt": "Dana"}
    for name, who in papers.items():
        text = open(os.path.join(FULLTEXT, name), encoding="utf-8", errors="replace").read()
        mine = " ".join(r["result"] for r in ROWS if r["paper"].startswith(who))
        for m in sorted(set(x.group(0) for x in NUMBERED.finditer(text))):
            kind, number = m.split(" ", 1)
            # "Theorem 4.1 / B.1" covers both numbers
            pattern = rf"{kind} ([0-9A-Z.]+ / )?{re.escape(number)}\b"
            assert re.search(pattern, mine), f"{who}: no coverage row for {m}"
    assert "Mahdavi" in covered or any(r["paper"].startswith("Mahdavi") for r in ROWS)
