"""What a sweep runs: `SweepSpec`, ``--param`` value parsing, and `plan`.

`plan` validates a spec against its proof file and expands it into points (each with a stable
key).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .formats import NAMED_FORMATS, SweepError, get_format

TASKS = ("quant-float", "quant-fixed", "arith")
MODELS = {"float": "quant-float", "fixed": "quant-fixed", "arith": "arith"}


def _jsonable(x):
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, float):
        return x
    if isinstance(x, Fraction):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in x]
    return str(x)


def _canon(x) -> str:
    return json.dumps(_jsonable(x), sort_keys=True, separators=(",", ":"))


def point_key(point: Dict[str, Any]) -> str:
    ident = {k: point[k] for k in ("proof_sha", "theorem", "params", "seed", "task", "settings")}
    return hashlib.sha256(_canon(ident).encode()).hexdigest()[:24]


def _slug(point) -> str:
    ov = point.get("overrides") or {}
    if not ov:
        return point["instance"]
    return point["instance"] + "@" + ",".join(f"{k}={_jsonable(v)}" for k, v in ov.items())


def file_sha(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


_NUM = re.compile(r"^[+-]?\d+$")


def parse_value(s: str):
    """A --param value: int (also 1e4, 10^4, 2^10), true/false, none, or the string itself."""
    t = s.strip()
    if _NUM.match(t):
        return int(t)
    m = re.fullmatch(r"(\d+)\^(\d+)", t)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    m = re.fullmatch(r"(\d+)e(\d+)", t, re.I)
    if m:
        return int(m.group(1)) * 10 ** int(m.group(2))
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    if t.lower() == "none":
        return None
    return t


def parse_values(text: str) -> List[Any]:
    """Comma-separated values; ``a:b`` (inclusive) and ``a:b:step`` integer ranges."""
    out: List[Any] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if ":" in part:
            bits = [parse_value(x) for x in part.split(":")]
            if len(bits) not in (2, 3) or not all(isinstance(x, int) and not isinstance(x, bool) for x in bits):
                raise SweepError(f"bad range {part!r}: use a:b or a:b:step with integers")
            step = bits[2] if len(bits) == 3 else 1
            if step <= 0:
                raise SweepError(f"bad range {part!r}: the step must be positive")
            out.extend(range(bits[0], bits[1] + 1, step))
        else:
            out.append(parse_value(part))
    if not out:
        raise SweepError(f"no values in {text!r}")
    return out


def parse_param(text: str) -> Tuple[str, List[Any]]:
    if "=" not in text:
        raise SweepError(f"--param needs KEY=V1,V2,...; got {text!r}")
    k, v = text.split("=", 1)
    k = k.strip()
    if not k:
        raise SweepError(f"--param needs a key: {text!r}")
    return k, parse_values(v)


@dataclass
class SweepSpec:
    """What to sweep. ``params``: list of (key, values) overriding the base instances'
    parameters (Cartesian product); ``instances``: base instance names (default: every
    instance of ``size``, or with ``params`` the first one of ``size``)."""

    proof: str
    theorems: Sequence[str] = ()
    only: Optional[str] = None
    instances: Sequence[str] = ()
    size: str = "small"
    params: Sequence[Tuple[str, Sequence[Any]]] = ()
    unset: Sequence[str] = ()
    seeds: Sequence[int] = (0,)
    models: Sequence[str] = ("float", "fixed", "arith")
    formats: Sequence[str] = NAMED_FORMATS
    arith_min: bool = False
    neighbours: int = 2
    max_bits: int = 4096
    bits: Sequence[int] = ()
    certify: bool = False
    engine: str = "auto"
    float_engine: str = "auto"
    prec: int = 128

    def settings(self, task: str) -> Dict[str, Any]:
        if task == "arith":
            s = {"formats": list(self.formats), "arith_min": bool(self.arith_min)}
            if self.arith_min:
                s.update({"neighbours": self.neighbours, "max_bits": self.max_bits})
            return s
        return {"neighbours": self.neighbours, "max_bits": self.max_bits, "bits": sorted(set(self.bits)),
                "certify": bool(self.certify), "prec": self.prec}


def plan(spec: SweepSpec) -> List[Dict[str, Any]]:
    """Every point of the sweep, in grid order."""
    from ..pipeline.loader import load_proof_file, source_sha

    for m in spec.models:
        if m not in MODELS:
            raise SweepError(f"unknown precision model {m!r}; use {', '.join(MODELS)}")
    for f in spec.formats:
        get_format(f)
    if spec.neighbours < 0 or spec.max_bits < 1:
        raise SweepError("--neighbours must be >= 0 and --max-bits >= 1")
    theorems = load_proof_file(spec.proof)
    names = [t.name for t in theorems]
    for t in spec.theorems:
        if t not in names:
            raise SweepError(f"{spec.proof} has no theorem {t!r}; it has {', '.join(names)}")
    sel = [t for t in theorems if (not spec.theorems or t.name in spec.theorems)
           and (spec.only is None or spec.only in t.name)]
    if not sel:
        raise SweepError(f"no theorem of {spec.proof} matches")
    sha = source_sha(spec.proof)  # the packaged module too: proofs/*.py only re-export it
    proof = os.path.relpath(os.path.abspath(spec.proof)) if not os.path.isabs(spec.proof) else spec.proof
    keys = [k for k, _ in spec.params]
    combos = list(itertools.product(*[list(v) for _, v in spec.params])) if spec.params else [()]
    points = []
    for t in sel:
        if spec.instances:
            bases = [i for i in t.instances if i.name in spec.instances]
            if not bases:
                if spec.theorems or len(sel) == 1:
                    raise SweepError(f"theorem {t.name} has no instance {', '.join(spec.instances)}; it has "
                                     f"{', '.join(i.name for i in t.instances)}")
                continue
        else:
            bases = t.instances_for(spec.size)
            if spec.params:
                bases = bases[:1]
        for inst in bases:
            for combo in combos:
                ov = dict(zip(keys, combo))
                params = dict(inst.params)
                for k in spec.unset:
                    params.pop(k, None)
                params.update(ov)
                for seed in spec.seeds:
                    for m in spec.models:
                        task = MODELS[m]
                        p = {"proof": proof, "proof_sha": sha, "theorem": t.name, "instance": inst.name,
                             "overrides": ov, "unset": list(spec.unset), "params": params, "seed": int(seed),
                             "task": task, "settings": spec.settings(task),
                             "engine": inst.engine if spec.engine == "auto" else spec.engine}
                        if task == "arith":
                            p["settings"]["float_engine"] = spec.float_engine
                            if spec.float_engine == "auto":
                                del p["settings"]["float_engine"]
                        p["key"] = point_key(p)
                        points.append(p)
    if not points:
        raise SweepError(f"{spec.proof}: no instances for --size {spec.size}")
    seen, uniq = set(), []
    for p in points:
        if p["key"] not in seen:
            seen.add(p["key"])
            uniq.append(p)
    return uniq
