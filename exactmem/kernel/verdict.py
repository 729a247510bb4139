"""The kernel's answer: CERTIFIED, REFUTED (with a witness) or UNKNOWN, and its exit code."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, Optional

from .text import fmt, int_str


@dataclass
class Verdict:
    status: str  # "CERTIFIED" | "REFUTED" | "UNKNOWN"
    witness: Optional[dict]
    message: str
    precision: Optional[int]
    measured: Dict[str, int] = field(default_factory=dict)
    limit: Optional[str] = None  # the Limits field that stopped the check, if one did

    def to_json(self) -> dict:
        """Every value JSON-encodable and exact: a Fraction as "p/q", an int past 2^64 as its decimal text."""
        return {k: jsonable(v) for k, v in asdict(self).items() if k != "limit" or v}

    @property
    def exit_code(self) -> int:
        return {"CERTIFIED": 0, "REFUTED": 1, "UNKNOWN": 2}[self.status]


def jsonable(x):
    """``text.fmt`` unabbreviated (a Fraction as exact "p"/"p/q"), through dicts and lists; an int past 2^64 as text."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 64:
        return int_str(x)
    return fmt(x, abbreviate=False)
