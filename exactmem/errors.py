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


class WriteError(OSError):
    """Writing a user's file failed. The message names the user's path (never a temporary name)
    and the reason in words (never raw ``[Errno …]`` text); an ``OSError``, so handlers of
    ``OSError`` catch it."""


_REASONS = {"EACCES": "permission denied", "EPERM": "permission denied", "ENOSPC": "no space left on the device",
            "EROFS": "the file system is read-only", "EDQUOT": "the disk quota is exceeded",
            "ENAMETOOLONG": "the name is too long", "EFBIG": "the file is too large", "EIO": "an input/output error",
            "EISDIR": "it is a directory", "ETXTBSY": "the file is busy", "EMFILE": "too many open files"}


def os_reason(exc: BaseException, path: str) -> str:
    """Why writing ``path`` failed, in words, from the ``OSError`` ``exc`` (any temporary name it
    mentions is not repeated)."""
    import errno
    import os

    if isinstance(exc, WriteError):
        return str(exc)
    given_dir = os.path.dirname(str(path)) or "."
    code = errno.errorcode.get(getattr(exc, "errno", None) or -1, "")
    if code == "ENOENT" or code == "ENOTDIR" or code == "EEXIST":
        # walk up to the first component that is missing or not a directory
        d = os.path.abspath(given_dir)
        probe = d
        while probe and not os.path.exists(probe):
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
        if os.path.exists(probe) and not os.path.isdir(probe):
            return f"{probe} is not a directory"
        if not os.path.isdir(d):
            return f"no such directory {given_dir}"
    if code == "EISDIR" or os.path.isdir(str(path)):
        return "it is a directory"
    if code in _REASONS:
        return _REASONS[code]
    words = getattr(exc, "strerror", None) or type(exc).__name__
    return str(words)[:1].lower() + str(words)[1:]


def write_error(path: str, exc: BaseException) -> WriteError:
    """``WriteError("cannot write PATH: REASON")`` for an ``OSError`` raised while writing ``path``."""
    if isinstance(exc, WriteError):
        return exc
    err = WriteError(f"cannot write {path}: {os_reason(exc, path)}")
    err.errno = getattr(exc, "errno", None)
    return err


def install_hint(extra: str) -> str:
    """The one install hint, in the form that works from this repository (exactmem is not on the
    package index): ``pip install -e '.[EXTRA]' (from the repository root)``."""
    return f"pip install -e '.[{extra}]' (from the repository root)"


class MissingExtra(ImportError):
    """An optional package is not installed; the message (one line) names what needs it, the
    package and the extra that pulls it, with ``install_hint``."""


def missing_extra(what: str, package: str, extra: str) -> MissingExtra:
    """``MissingExtra("WHAT needs PACKAGE, which is not installed: pip install -e '.[EXTRA]' …")``."""
    return MissingExtra(f"{what} needs {package}, which is not installed: {install_hint(extra)}")


def require(package: str, extra: str, what: str) -> None:
    """Raise ``missing_extra(...)`` unless ``package`` can be imported (a lookup, not an import)."""
    import importlib.util

    try:
        found = importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise missing_extra(what, package, extra)
