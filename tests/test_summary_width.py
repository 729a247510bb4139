"""``certify``'s terminal summary keeps every line within 80 columns (issue 37).

The default test formats synthetic rows (long instance names, "930 of 1000" counts, failing
claims, an ERROR's long message); the slow ones run the CLI on every proof file at ``--size
small`` and on ``proofs/kajitsuka.py`` at ``--size medium`` (about a minute each way) and check
every line it prints on stdout.
"""

import glob
import os
import subprocess
import sys

import pytest

from exactmem.pipeline.certify import SUMMARY_COLUMNS, Row, format_summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOWER_BOUND_FILES = {"dana_encoders.py", "lower_bounds.py"}  # `bounds run`, not `certify`


def _row(theorem, instance, verdict="CERTIFIED", examples=930, rows=1000, **kw):
    base = dict(params=133188, width=12, depth=1789, max_bits=738, total_bits=10 ** 6, seconds=3725.0, path="",
                claims=["c"] * 16, examples=examples, rows=rows)
    base.update(kw)
    return Row(theorem, instance, verdict, **base)


def _too_wide(text):
    return [line for line in text.splitlines() if len(line) > SUMMARY_COLUMNS]


def test_summary_fits_80_columns_with_long_names_and_notes():
    rows = [_row("kajitsuka.next_token_hardmax", "N1000-n8-d16-C4-hardmax"),
            _row("kajitsuka.next_token_hardmax", "N12-n4-d3-C4", examples=11, rows=12, seconds=0.4),
            _row("kajitsuka_paper_errata.eq110_as_exact_depth", "N30-n2-d2-C2-with-a-much-longer-instance-name",
                 verdict="REFUTED", witness={"claim": {"quantity": "attention_layers", "op": "<=", "bound": 409},
                                             "measured": 424}),
            Row("dana.theorem2", "N5-S1-d5-jensen", "ERROR", 0, 0, 0, 0, 0, 0.0, "",
                "ValueError: " + "a long message that goes on and on " * 12)]
    text = format_summary(rows)
    assert not _too_wide(text), "\n".join(_too_wide(text))
    lines = text.splitlines()
    # a name too long for its column stands on its own line, its cells on the next
    k = lines.index("  N1000-n8-d16-C4-hardmax")
    assert "CERTIFIED" in lines[k + 1] and "930 of 1000" in lines[k + 1] and lines[k + 1].lstrip().startswith("CERTIFIED")
    assert any(line.startswith("  N12-n4-d3-C4 ") and "11 of 12" in line for line in lines)
    assert "claim FAILS attention_layers <= 409 (is 424)" in text
    assert "ValueError: a long message" in text


def _certify_lines(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "exactmem", "certify", *args, "--out", "c", "--quiet"],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]  # 1: the errata files refute on purpose
    assert r.stdout.startswith("theorem / instance"), r.stdout[:500]
    return r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("proof", sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "proofs", "*.py"))
                                         if os.path.basename(p) not in LOWER_BOUND_FILES))
def test_certify_small_prints_within_80_columns(tmp_path, proof):
    out = _certify_lines(tmp_path, os.path.join(ROOT, "proofs", proof))
    assert not _too_wide(out), "\n".join(_too_wide(out))


@pytest.mark.slow
def test_certify_medium_kajitsuka_prints_within_80_columns(tmp_path):
    out = _certify_lines(tmp_path, os.path.join(ROOT, "proofs", "kajitsuka.py"), "--size", "medium")
    assert not _too_wide(out), "\n".join(_too_wide(out))
    assert "930 of 1000" in out and "\nnote: N counts the distinct examples" in out
    assert "\nkajitsuka.limited_bits  (Kajitsuka & Sato, Thm F.1)\n" in out


def test_theorem_lines_name_the_papers_result():
    """The README's Thms F.1, E.1, D.1 are visible next to the theorem names of the summary."""
    from exactmem.pipeline.certify import paper_reference
    from exactmem.pipeline.loader import load_proof_file

    sources = {t.name: t.source for f in ("kajitsuka.py", "dana.py", "vardi.py", "mahdavi.py", "relu_interpolation.py")
               for t in load_proof_file(os.path.join(ROOT, "proofs", f))}
    expect = {"kajitsuka.next_token": "Kajitsuka & Sato, Thm 4.1 / B.1", "kajitsuka.seq2seq": "Kajitsuka & Sato, Cor. 4.1",
              "kajitsuka.limited_bits": "Kajitsuka & Sato, Thm F.1", "kajitsuka.embedding": "Kajitsuka & Sato, Thm E.1",
              "kajitsuka.deep_sets": "Kajitsuka & Sato, Thm D.1", "kajitsuka.deep_sets_phi": "Kajitsuka & Sato, Thm D.1",
              "dana.corollary1": "Dana et al., Cor. 1", "dana.theorem2": "Dana et al., Thm 2",
              "vardi.c1": "Kajitsuka & Sato, Lemma C.1", "mahdavi.softmax": "Mahdavi et al., Thm 1",
              "relu_interpolation.steps": ""}
    assert {k: paper_reference(sources[k]) for k in expect} == expect
    text = format_summary([_row("kajitsuka.limited_bits", "N12-n4-d3-C4-B2", source=sources["kajitsuka.limited_bits"]),
                           _row("relu_interpolation.steps", "N5-d2", source=sources["relu_interpolation.steps"])])
    assert "\nkajitsuka.limited_bits  (Kajitsuka & Sato, Thm F.1)\n" in text
    assert "\nrelu_interpolation.steps\n" in text
    long = format_summary([_row("x" * 60, "N1", source=sources["kajitsuka.limited_bits"])])
    assert "\n" + "x" * 60 + "  (Thm F.1)\n" in long  # the authors go first when the line would not fit


def test_a_note_explains_when_N_differs_from_the_instance_name():
    same = [_row("kajitsuka.next_token", "N12-n4-d3-C4", examples=11, rows=12),  # a repeat: 12 rows
            _row("kajitsuka.deep_sets", "N8-M3-d2-C3-empty", examples=8, rows=8),
            _row("vardi_errata.len_scaled", "N16-V24-line-C16", verdict="REFUTED", examples=None, rows=None),
            _row("relu_interpolation.steps", "tiny", examples=3, rows=3)]
    assert "note:" not in format_summary(same)
    differ = same + [_row("kajitsuka.deep_sets_phi", "N8-M3-d2-C3-empty", examples=9, rows=9),
                     _row("dana.corollary1", "N10-d2-dh2-H2", examples=6, rows=6)]
    text = format_summary(differ)
    assert not _too_wide(text), "\n".join(_too_wide(text))
    note = " ".join(line.strip() for line in text[text.index("note:"):].splitlines())
    assert note == ("note: N counts the distinct examples the checker found; an instance name's N<k> is the size "
                    "asked of the construction, which certifies a different number of examples in 2 rows here "
                    "(e.g. kajitsuka.deep_sets_phi [N8-M3-d2-C3-empty]: 9). See docs/cli.md.")
