"""Verifier-side budgets (kernel; ``docs/certificate.md`` § Budgets).

``Limits`` holds the verifier's limits (safe defaults below); a certificate's ``check.limits``
may only lower them. A limit hit raises `LimitExceeded`. Time is integer nanoseconds of
``time.monotonic_ns``; no floating point.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from typing import Optional

from .text import fmt

DEFAULT_MAX_PRECISION = 4096  # interval bits granted when the verifier names none (the writer's default ask)
START_PRECISION = 64  # the first rung of every precision ladder (examples, lower-bound steps, claim formulas)
# Highest values a verifier may set: they keep one step of a check (a parsed number, a gcd or
# division of intermediate values, a Taylor term of exp) well under a second.
CEILING = {"max_digits": 10 ** 6, "max_precision": 1 << 16, "max_value_bits": 1 << 20}


@dataclass(frozen=True)
class Limits:
    """What one check may spend. ``max_precision`` None: the certificate's ``check.max_precision``,
    at most DEFAULT_MAX_PRECISION; a value: exactly that cap. ``time_limit`` None: no limit."""

    max_digits: int = 100_000  # decimal digits of one numerator or denominator in the file
    max_bytes: int = 256 << 20  # bytes of the certificate document (after gunzip)
    max_precision: Optional[int] = None  # bits of interval precision after a softmax layer
    max_value_bits: int = 1 << 19  # bits of any intermediate integer, and of a softmax2 score spread
    time_limit: Optional[Fraction] = Fraction(3600)  # seconds of wall-clock time
    max_elements: int = 1 << 21  # elements of one tensor of a graph model (a zero dimension counted as 1)
    max_total_elements: int = 1 << 23  # elements of all tensors of one graph evaluation, constants included
    max_tensor_bits: int = 1 << 32  # bits of all tensors of one graph evaluation: elements × widest value, lo and hi

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if v is None and f.name in ("max_precision", "time_limit"):
                continue
            if f.name == "time_limit":
                if Fraction(v) <= 0:
                    raise ValueError("time_limit must be positive seconds or None")
                object.__setattr__(self, "time_limit", Fraction(v))
            elif not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= CEILING.get(f.name, v):
                raise ValueError(f"{f.name} must be a positive integer of at most {CEILING.get(f.name, 'any size')}, "
                                 f"got {v!r}")

    def lowered(self, asked: dict) -> "Limits":
        """These limits, lowered to what a certificate asks (never raised)."""
        return replace(self, **{k: min(v, getattr(self, k) or v) for k, v in asked.items()})  # None: no limit


class LimitExceeded(Exception):
    """A budget ran out. ``limit`` is the Limits field; the message says how to raise it."""

    def __init__(self, limit: str, what: str):
        option = "--" + limit.replace("_", "-")  # the `exactmem check` option
        super().__init__(f"{what} (verifier limit {limit}; raise it with {option} or Limits({limit}=...))")
        self.limit = limit


class Budget:
    """The running check's limits and deadline; ``tick()`` is called between bounded steps.
    ``until_ns``: a deadline shared by several processes (``time.time_ns()`` wall-clock
    nanoseconds, e.g. a sharded check's), checked besides this process's own. ``on_example``: called
    with each example's row index before it is judged (display only: progress)."""

    def __init__(self, limits: Optional[Limits] = None, until_ns: Optional[int] = None, on_example=None):
        self.limits, self.until_ns, self.on_example = limits or Limits(), until_ns, on_example or (lambda row: None)
        t = self.limits.time_limit
        self.deadline = None if t is None else time.monotonic_ns() + t.numerator * 10 ** 9 // t.denominator

    def restart(self, limits: Limits) -> None:
        """Apply lowered limits (e.g. the certificate's ask); the deadline only moves earlier."""
        old = self.deadline
        self.__init__(limits, self.until_ns, self.on_example)
        if old is not None and (self.deadline is None or old < self.deadline):
            self.deadline = old

    def tick(self) -> None:
        if (self.deadline is not None and time.monotonic_ns() > self.deadline) or \
                (self.until_ns is not None and time.time_ns() > self.until_ns):
            raise LimitExceeded("time_limit", f"time limit of {fmt(self.limits.time_limit, False)} s reached")

    def value(self, bits: int, what: str) -> None:
        if bits > self.limits.max_value_bits:
            raise LimitExceeded("max_value_bits", f"{what} needs {fmt(bits)} bits, more than {self.limits.max_value_bits}")

    def room(self, n: int, used: int, what: str, limit: str = "max_elements") -> int:
        """``used`` + ``n`` after checking ``n`` against ``limit`` and the sum against its total
        (max_elements: max_total_elements); raised before anything of that size is built."""
        total = "max_total_elements" if limit == "max_elements" else limit
        for lim, k in ((limit, n), (total, used + n)):
            if k > getattr(self.limits, lim):
                raise LimitExceeded(lim, f"{what}: {fmt(k)} {'bits' if 'bits' in lim else 'elements'}, more than "
                                         f"{getattr(self.limits, lim)}")
        return used + n
