"""One style for user errors on every command (``docs/cli.md`` § Exit codes).

A user error is one line on stderr, ``exactmem: error: …``, naming the file or option and what
to do, and the command exits 3 (`EXIT_BAD_INPUT`); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys

EXIT_BAD_INPUT = 3
PREFIX = "exactmem: error: "


def one_line(message: object) -> str:
    """``message`` with every run of whitespace (newlines included) folded to one space."""
    return " ".join(str(message).split())


def report_error(message: object, file=None) -> int:
    """Print ``exactmem: error: MESSAGE`` as one line on stderr; returns exit code 3."""
    print(PREFIX + one_line(message), file=file or sys.stderr)
    return EXIT_BAD_INPUT


def plural(count: int, noun: str, plural_form: str = "") -> str:
    """``1 point``, ``2 points`` (``plural_form`` for irregular nouns)."""
    return f"{count:,} {noun if count == 1 else plural_form or noun + 's'}"
