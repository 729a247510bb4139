"""Sweep results on disk, and reading, merging and one-line summaries of them.

The files: ``points.jsonl`` (one record per finished point, append-only, so a sweep resumes),
``sweep.json`` (the `sweep_document`) and ``commands.txt``. Also reading and merging sweep
documents, and one-line summaries of records.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Sequence

from ..certificate.writer import write_bytes_atomic
from .spec import TASKS

FORMAT = "exactmem-sweep"
VERSION = 1
POINTS_FILE = "points.jsonl"
SWEEP_FILE = "sweep.json"
COMMANDS_FILE = "commands.txt"


def load_records(out_dir: str) -> Dict[str, Dict[str, Any]]:
    """Finished records by key (the last one wins); a torn last line (a killed run) is dropped
    and cut from the file so later appends stay valid."""
    path = os.path.join(out_dir, POINTS_FILE)
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        data = f.read()
    recs: Dict[str, Dict[str, Any]] = {}
    good_end = 0
    pos = 0
    for line in data.splitlines(keepends=True):
        pos += len(line)
        if not line.endswith(b"\n"):
            break
        try:
            r = json.loads(line)
        except ValueError:
            break
        if isinstance(r, dict) and "key" in r and r.get("status") == "done":
            recs[r["key"]] = r
        good_end = pos
    if good_end < len(data):
        with open(path, "r+b") as f:
            f.truncate(good_end)
    return recs


def _append(out_dir: str, rec: Dict[str, Any]) -> None:
    path = os.path.join(out_dir, POINTS_FILE)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _sort_key(rec):
    p = rec["point"]

    def norm(v):
        return (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, str(v))

    params = tuple((k, norm(v)) for k, v in sorted(p["params"].items()))
    return (p["proof"], p["theorem"], p["instance"], params, p["seed"], TASKS.index(p["task"]), rec["key"])


def sweep_document(records: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """The ``sweep.json`` document: every finished point, sorted; deterministic (no times in
    ``points``; timings are kept separately under ``seconds``)."""
    recs = sorted(records, key=_sort_key)
    vers = []
    for r in recs:
        v = r.get("versions")
        if v and v not in vers:
            vers.append(v)
    seeds = sorted({r["point"]["seed"] for r in recs})
    pts = []
    secs = {}
    for r in recs:
        r2 = {k: v for k, v in r.items() if k not in ("seconds", "versions")}
        pts.append(r2)
        secs[r["key"]] = r.get("seconds")
    return {"format": FORMAT, "version": VERSION, "seeds": seeds, "versions": vers, "points": pts, "seconds": secs}


def write_json_atomic(path: str, doc: Any) -> None:
    write_bytes_atomic((json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8"), path)


def summarize_record(rec: Dict[str, Any]) -> str:
    if rec.get("status") != "done":
        return f"ERROR {rec.get('error')}"
    r = rec["result"]
    if rec["point"]["task"].startswith("quant"):
        c = r["criteria"]
        v = sum(len(x["violations"]) for x in c.values())
        s = f"min b exact {c['exact']['min_b']}, nearest {c['nearest']['min_b']} ({len(r['evals'])} evaluations"
        s += f", {v} monotonicity violations)" if v else ")"
        cert = c["exact"].get("certificates")
        if cert:
            s += " " + ", ".join(f"b={x['b']} {x['verdict']}" for x in cert)
        return s
    n = rec["model"]["n_examples"]
    parts = [f"{k} {'ok' if v['exact']['fail'] == 0 else str(v['exact']['fail']) + '/' + str(n) + ' wrong'}"
             for k, v in r["formats"].items()]
    if "mantissa" in r:
        parts.append(f"min mantissa {r['mantissa']['criteria']['exact']['min_b']}")
    return ", ".join(parts)


def write_text_atomic(path: str, text: str) -> None:
    write_bytes_atomic(text.encode("utf-8"), path)


def load_sweep(path: str) -> Dict[str, Any]:
    """A sweep document from a sweep directory (its ``sweep.json``) or a JSON file."""
    p = os.path.join(path, SWEEP_FILE) if os.path.isdir(path) else path
    if not os.path.exists(p):
        raise FileNotFoundError(f"no sweep results at {p} (run `python -m exactmem sweep ... --out DIR` first)")
    with open(p, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != "exactmem-sweep":
        raise ValueError(f"{p} is not an exactmem sweep document")
    return doc


def merge(docs: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    recs: Dict[str, Dict[str, Any]] = {}
    secs: Dict[str, Any] = {}
    vers: List[Dict[str, Any]] = []
    for d in docs:
        for r in d["points"]:
            recs[r["key"]] = dict(r, versions=None)
        secs.update(d.get("seconds", {}))
        for v in d.get("versions", []):
            if v not in vers:
                vers.append(v)
    out = sweep_document([{k: v for k, v in r.items() if k != "versions"} for r in recs.values()])
    out["versions"], out["seconds"] = vers, secs
    return out
