"""docs/errata.md and docs/lower-bounds.md against the tool (issue 15, item 5).

Every erratum carries a Fails:/Witness: classification whose commands name theorems and
tests that exist; every number the two pages quote about vacuous bounds, the Lemma B.2
witness, Dana's Experiment 6 and the construction-vs-lower-bound comparison is recomputed.
"""

import os
import re
import shlex
from fractions import Fraction


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLASSES = ("the proof only", "the proof of", "the statement", "neither", "undecided")


def _read(name):
    with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as fh:
        return fh.read()


def _num(text):
    return int(text.replace(",", ""))


# ------------------------------------------------------------------------ errata.md

def _entries(doc):
    """Numbered errata items, the Lemma B.2 section, the log-base note and the §9 table rows."""
    items = re.findall(r"^\d+\. \*\*.*?(?=^\d+\. \*\*|^#|^Not an erratum|\Z)", doc, re.S | re.M)
    b2 = doc[doc.index("### Kajitsuka & Sato Lemma B.2"):doc.index("### The other items")]
    note = doc[doc.index("Not an erratum"):doc.index("## Kajitsuka & Sato Theorem B.1")]
    return items + [b2, note]


def _table_rows(doc):
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in doc.splitlines()
            if re.match(r"\| \d+\. ", line)]


def _commands(text):
    return [c for c in re.findall(r"`((?:python -m|python -c)[^`]*)`", text)]


def test_every_erratum_says_what_fails_with_a_witness():
    doc = _read("errata.md")
    entries = _entries(doc)
    assert len(entries) >= 14  # 3 lower bounds + 5 Vardi + 4 Dana + Lemma B.2 + the log-base note
    for e in entries:
        m = re.search(r"\*\*Fails:\*\*\s+(.*)", e)
        assert m, e[:80]
        assert m.group(1).lstrip("(").startswith(CLASSES), m.group(1)
        w = e[e.index("**Witness:**"):]
        assert _commands(w), e[:80]
    rows = _table_rows(doc)
    assert [r[0].split(".")[0] for r in rows] == [str(k) for k in range(1, 12)]  # note §9 items 1–11
    for r in rows:
        assert len(r) == 4 and r[2].startswith(CLASSES), r
        assert _commands(r[3]) or r[3].startswith("none —"), r


def _pytest_k_names(expr):
    return [t for t in re.split(r"\s+(?:or|and)\s+|[()\"]", expr) if t.strip()]


def test_witness_commands_name_existing_theorems_and_tests():
    """`certify FILE --only X` selects at least one instance; `pytest FILE -k EXPR` names tests
    that exist — so a renamed theorem or test breaks this, not the reader."""
    from exactmem.pipeline.loader import load_proof_file

    doc = _read("errata.md")
    cmds = set(_commands(doc)) | set(re.findall(r"`(python -m pytest [^`]*)`", doc))
    checked = 0
    for cmd in cmds:
        argv = shlex.split(cmd)
        if argv[:4] == ["python", "-m", "exactmem", "certify"]:
            path = os.path.join(ROOT, argv[4])
            only = argv[argv.index("--only") + 1] if "--only" in argv else None
            theorems = load_proof_file(path)
            hits = [(t.name, i.name) for t in theorems for i in t.instances
                    if only is None or only in t.name or only in i.name]
            assert hits, cmd
            checked += 1
        elif argv[:3] == ["python", "-m", "pytest"]:
            with open(os.path.join(ROOT, argv[3]), encoding="utf-8") as fh:
                names = re.findall(r"^def (test_\w+)", fh.read(), re.M)
            for key in _pytest_k_names(argv[argv.index("-k") + 1]):
                assert any(key in n for n in names), (cmd, key)
            checked += 1
    assert checked >= 12


def test_lemma_b2_witness_in_the_doc_is_the_tools():
    from exactmem.proofs.kajitsuka_errata import WITNESS, b2_witness

    doc = _read("errata.md")
    assert WITNESS == b2_witness() == (1, 2)
    assert "**(f(x), f(y)) = (1, 2)**" in doc and "N2-n3-S2-f(1,2)" in doc


def test_dana_experiment6_numbers_in_the_doc():
    """Corollary 2's φ at Experiment 6 (N = 10, S = 2, d = 2, d_h = 5, H = 20), as printed and
    as the proof supports it (the ranks themselves: tests/test_dana.py)."""
    from exactmem.constructions.dana import association as dana

    doc = _read("errata.md")
    assert dana.corollary2_accuracy(dana.capacity(2, 5, 20), 100, 10) == 1
    assert dana.rank_bound(2, 5, 20) == 42
    assert dana.corollary2_accuracy(42, 100, 10) == Fraction(239, 500)
    assert "d = 2, dh = 5 and H from 1 to 20" in doc and "**239/500**" in doc


# ------------------------------------------------------------------- lower-bounds.md

def test_lower_bounds_doc_vacuity_thresholds():
    from exactmem.bounds.next_token import min_W_next_token
    from exactmem.bounds.seq2seq import min_W

    doc = _read("lower-bounds.md")
    assert "(96) is vacuous up to nN = 19,125" in doc
    assert (min_W(1, 19125).W, min_W(1, 19126).W) == (10, 11)
    assert "sign count up to N = 348 and the GJ algorithm bound up to N = 1,400" in doc
    assert (min_W_next_token(348).sign_count, min_W_next_token(349).sign_count) == (10, 11)
    assert (min_W_next_token(1400).algorithm, min_W_next_token(1401).algorithm) == (10, 11)


def _kajitsuka_table_params():
    doc = _read("kajitsuka.md")
    rows = doc[doc.index("<!-- kajitsuka-table:begin -->"):doc.index("<!-- kajitsuka-table:end -->")]
    return {_num(r[1]): _num(r[5]) for r in (line.split("|") for line in rows.splitlines())
            if len(r) > 5 and r[1].strip().replace(",", "").isdigit()}


def test_lower_bounds_doc_compares_with_the_built_construction():
    """The construction exists (no "does not exist" left) and the comparison table's numbers
    are the tool's: lower bounds recomputed, N = 1,000 built and measured, larger N taken
    from docs/kajitsuka.md's generated table, ratios recomputed."""
    from exactmem.bounds.next_token import min_W_next_token
    from exactmem.bounds.seq2seq import min_W, min_W_sharp
    from exactmem.constructions.kajitsuka.compact import build_measured

    doc = _read("lower-bounds.md")
    assert not re.search(r"does not exist yet|not implemented yet", doc)
    section = doc[doc.index("## The lower bounds against the construction"):doc.index("## The plot")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if re.match(r"\| (next-token|seq-to-seq) ", line)]
    assert len(rows) == 4
    table = _kajitsuka_table_params()
    for setting, N, bound, params, ratio in rows:
        N = _num(N.split()[0])
        params = _num(params)
        if setting == "next-token":
            mw = min_W_next_token(N)
            lower = _num(bound.split()[0])
            assert lower == mw.sign_count
            if N == 1000:
                assert "GJ: 9, vacuous" in bound and mw.algorithm == 9
                assert params == build_measured(N, "next_token", 8, 16, C=4)[0].n_params
            else:
                assert params == table[N]
        else:
            assert N == 1000 and min_W(8, N).W == 7 and min_W_sharp(8, N).W == 58
            assert "(96): 7, vacuous" in bound and "(90) over the family: 58" in bound
            lower = 58
            assert params == build_measured(N, "seq2seq", 8, 16, C=4)[0].n_params
        shown = _num(re.search(r"≈ ([\d,]+)", ratio).group(1))
        assert shown == round(Fraction(params, lower))
