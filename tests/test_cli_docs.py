"""The command line and ``docs/cli.md`` in step (issue 26, items 3 and 5): ``--version``; every
argument of every subcommand has help and every option is documented in its section; a usage
error in any subcommand is one line ``exactmem: error: …`` and exit 3 (2 means UNKNOWN)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from exactmem import __version__
from exactmem import __main__ as entry
from exactmem.cli.app import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
SKIP = (argparse._HelpAction, argparse._VersionAction)


def _walk(parser: argparse.ArgumentParser, path=()):
    """(command path, parser) for the top parser and every subcommand and sub-action, depth first."""
    yield path, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, child in a.choices.items():
                yield from _walk(child, path + (name,))


def _subparser_actions(parser):
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def _section(path) -> str:
    """The text of ``docs/cli.md`` from the heading of the subcommand to the next ``## ``
    heading (``### `` subsections of it included); the whole file for the top level."""
    if not path:
        return DOC
    m = re.search(rf"^## `{re.escape(path[0])}\b.*?(?=^## |\Z)", DOC, re.M | re.S)
    assert m, f"docs/cli.md has no section `## `{path[0]} …``"
    return m.group(0)


PARSERS = list(_walk(build_parser()))


def test_the_walk_sees_every_subcommand_and_action():
    names = {p for p, _ in PARSERS}
    for cmd in ("certify", "check", "verify", "inspect", "sweep", "report", "bounds", "export", "experiment"):
        assert (cmd,) in names, cmd
    for act in ("minw", "chain", "next-token", "bits", "degrees", "brute", "run", "plot"):
        assert ("bounds", act) in names, act


@pytest.mark.parametrize("path,parser", PARSERS, ids=[" ".join(p) or "exactmem" for p, _ in PARSERS])
def test_every_argument_has_help_and_every_option_is_documented(path, parser):
    section = _section(path)
    missing_help, undocumented = [], []
    for a in parser._actions:
        if isinstance(a, SKIP):
            continue
        if isinstance(a, argparse._SubParsersAction):
            for choice in a._choices_actions:  # each subcommand's one-line help in `--help`
                if not (choice.help or "").strip():
                    missing_help.append(f"subcommand {choice.dest}")
            continue
        if not (a.help or "").strip() or a.help == argparse.SUPPRESS:
            missing_help.append("/".join(a.option_strings) or a.dest)
        for opt in a.option_strings:
            if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", section):
                undocumented.append(opt)
    where = " ".join(("exactmem",) + path)
    assert not missing_help, f"{where}: arguments without help=: {missing_help}"
    assert not undocumented, f"{where}: options missing from docs/cli.md's section: {undocumented}"


def test_free_text_choices_are_choices():
    by_path = dict(PARSERS)

    def choices(path, opt):
        return next(a.choices for a in by_path[path]._actions if opt in a.option_strings)

    assert tuple(choices(("bounds", "run"), "--size")) == ("small", "medium", "large")
    assert tuple(choices(("bounds", "next-token"), "--kind")) == ("hardmax", "uniform", "softmax")
    for act in ("chain", "next-token", "degrees"):
        assert tuple(choices(("bounds", act), "--convention")) == ("paper", "exact")
    assert tuple(choices(("certify",), "--size")) == ("small", "medium", "large", "xlarge", "xxlarge")


# ---------------------------------------------------------------------------------- --version

def test_version_in_process(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"exactmem {__version__}\n"
    assert entry.main(["--version"]) == 0
    assert capsys.readouterr().out == f"exactmem {__version__}\n"


def test_version_matches_pyproject():
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert m and m.group(1) == __version__


@pytest.mark.parametrize("how", [["-m", "exactmem"], ["-c", "import sys; from exactmem.__main__ import main; "
                                                          "sys.exit(main(sys.argv[1:]))"]],
                         ids=["python -m exactmem", "console script"])
def test_version_command(how):
    r = subprocess.run([sys.executable, *how, "--version"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == f"exactmem {__version__}\n" and r.stderr == ""


# --------------------------------------------------------------------------- usage errors: exit 3

USAGE_ERRORS = [
    (["certify", "--bogus"], "certify"),
    (["certify", "proofs/kajitsuka.py", "--bogus"], "certify: unrecognized arguments: --bogus"),
    (["certify", "proofs/kajitsuka.py", "--size", "huge"], "certify: argument --size: invalid choice: 'huge'"),
    (["experiment", "--bogus"], "experiment"),
    (["experiment", "list", "--bogus"], "experiment: unrecognized arguments: --bogus"),
    (["verify"], "verify: the following arguments are required: model, --data"),
    (["sweep"], "sweep: the following arguments are required: proof"),
    (["inspect"], "inspect: the following arguments are required: cert"),
    (["export"], "export: the following arguments are required: cert, --out"),
    (["report"], "report: the following arguments are required: sweeps"),
    (["bounds", "minw", "--bogus"], "bounds minw: unrecognized arguments: --bogus"),
    (["bounds", "run", "--size", "huge"], "bounds run: argument --size: invalid choice: 'huge'"),
    (["bounds"], "bounds: the following arguments are required: action"),
    ([], "the following arguments are required: command"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["check"], "check: the following arguments are required: cert"),
]


def _one_error_line(err: str, says: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("exactmem: error: ") and says in lines[0], lines[0]
    assert "usage: exactmem" in lines[0] and "--help" in lines[0], lines[0]  # the usage and where help is
    return lines[0]


@pytest.mark.parametrize("argv,says", USAGE_ERRORS, ids=[" ".join(a) or "(none)" for a, _ in USAGE_ERRORS])
def test_usage_error_is_one_line_and_exit_3(argv, says, capsys):
    for entry_main in (main, entry.main):  # exactmem.cli.app and the console script (check goes to the kernel)
        assert entry_main(list(argv)) == 3, (entry_main.__module__, argv)
        out, err = capsys.readouterr()
        assert out == ""
        _one_error_line(err, says)


@pytest.mark.parametrize("argv", [["check"], ["certify", "--bogus"], ["experiment", "--bogus"], ["bounds", "minw", "--bogus"]])
def test_usage_error_exit_3_from_python_m(argv):
    r = subprocess.run([sys.executable, "-m", "exactmem", *argv], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 3 and r.stdout == "", (r.returncode, r.stderr)
    _one_error_line(r.stderr, argv[0])


def test_check_alone_is_not_a_file_named_check(tmp_path, monkeypatch, capsys):
    """`exactmem check` reads no file; `exactmem check check` reads the file called "check"."""
    monkeypatch.chdir(tmp_path)
    assert entry.main(["check"]) == 3
    assert "required: cert" in capsys.readouterr().err
    for m in (entry.main, main):
        assert m(["check", "check"]) == 3
        err = capsys.readouterr().err
        assert "required" not in err and "check" in err  # a missing certificate named check, not a usage error
