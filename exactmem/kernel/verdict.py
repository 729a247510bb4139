"""The kernel's answer: CERTIFIED, REFUTED (with a witness) or UNKNOWN, and its exit code."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, Optional


@dataclass
class Verdict:
    status: str  # "CERTIFIED" | "REFUTED" | "UNKNOWN"
    witness: Optional[dict]
    message: str
    precision: Optional[int]
    measured: Dict[str, int] = field(default_factory=dict)
    limit: Optional[str] = None  # the Limits field that stopped the check, if one did

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "limit" or v}

    @property
    def exit_code(self) -> int:
        return {"CERTIFIED": 0, "REFUTED": 1, "UNKNOWN": 2}[self.status]
