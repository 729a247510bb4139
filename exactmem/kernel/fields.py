"""Field validation shared by the kernel's readers (kernel; standard library only).

One message per malformed field, naming its path."""

from __future__ import annotations

from typing import Optional


class MalformedCertificate(Exception):
    """The file is not a valid certificate (or exceeds a size limit); the message names why."""


def unexpected(e: Exception, where: str) -> str:
    """One line for an exception no check foresaw: where, its type, its text (cut short)."""
    text = " ".join(str(e).split())
    return f"{where}: the kernel met {type(e).__name__}" + (f" ({text[:200]})" if text else "")


def jtype(x) -> str:
    """A short description of a JSON value for messages."""
    if x is None or isinstance(x, bool):
        return "null" if x is None else "boolean"
    if isinstance(x, int):
        return f"number {x}" if x.bit_length() < 64 else f"a {x.bit_length()}-bit number"
    if isinstance(x, float):
        return f"number {x!r}"
    if isinstance(x, str):
        return f"string {x[:40]!r}"
    return {list: "list", tuple: "list", dict: "object"}.get(type(x), type(x).__name__)


def bad(path: str, what: str):
    raise MalformedCertificate(f"{path}: {what}")


def integer(x, path: str, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    if not isinstance(x, int) or isinstance(x, bool):
        bad(path, f"expected a JSON integer, got {jtype(x)}")
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        shown = x if x.bit_length() < 64 else jtype(x)
        bad(path, f"integer {shown} out of range [{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]")
    return x


def _str(x, path: str, choices=None) -> str:
    if not isinstance(x, str):
        bad(path, f"expected a string, got {jtype(x)}")
    if choices is not None and x not in choices:
        bad(path, f"{x[:40]!r} is not one of {', '.join(map(repr, choices))}")
    return x


def _list(x, path: str, n: Optional[int] = None, nonempty: bool = False) -> list:
    if not isinstance(x, (list, tuple)):
        bad(path, f"expected a list, got {jtype(x)}")
    if n is not None and len(x) != n:
        bad(path, f"wrong shape: expected length {n}, got {len(x)}")
    if nonempty and not x:
        bad(path, "wrong shape: expected a nonempty list")
    return x


def _obj(x, path: str, required=(), optional=()) -> dict:
    """An object with the ``required`` fields and no fields but these and the ``optional`` ones
    (``optional`` None: any other fields, checked later)."""
    if not isinstance(x, dict):
        bad(path, f"expected an object, got {jtype(x)}")
    for k in required:
        if k not in x:
            bad(path, f"missing field {k!r}")
    extra = [] if optional is None else sorted(set(x) - set(required) - set(optional), key=str)
    if extra:
        bad(path, f"unknown field {extra[0][:40]!r}")
    return x
