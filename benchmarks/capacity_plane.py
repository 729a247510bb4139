"""Generate the capacity plane of ``docs/capacity.md`` (issue 36, item 3): points from certificates only.

    python benchmarks/capacity_plane.py              # certify, sweep, check, then write JSON, figure, page
    python benchmarks/capacity_plane.py --trained    # only re-read the trained networks (morris.json), re-render
    python benchmarks/capacity_plane.py --bounds     # only recompute the Thm 4.3 ceilings, re-render
    python benchmarks/capacity_plane.py --render     # only re-render the figure and the page from plane.json

For every construction instance listed in `INSTANCES` (the papers' constructions: Kajitsuka & Sato
next-token and seq-to-seq, Theorem F.1 at several B, Vardi et al., Mahdavi et al., Dana et al.) it runs,
in fresh processes, exactly what a reader would run:

1. ``python -m exactmem certify PROOF --only THEOREM/INSTANCE --size S --gzip --out docs/capacity/certs``
   and ``python -m exactmem check CERT --json``: the kernel's verdict and its measurements (distinct
   inputs, sequence length, distinct labels, n_params, max_bits); the certificate's ``label_classes <=``
   claim gives C where it has one. Memorized bits = P·log₂C (``exactmem.capacity.plane``).
2. ``python -m exactmem sweep PROOF --theorem THEOREM --instance INSTANCE --models float --certify``:
   the minimal significand width b*; its two certificates (the network rounded to b* and to b* − 1)
   are copied next to the first and checked again here (CERTIFIED at b*, REFUTED at b* − 1 is what
   makes b* minimal); the bits per weight of the float format holding the b* network are measured on
   the certified network itself (`exactmem.sweep.quantize.identity_bits` / ``storage_bits``).
3. ``python -m exactmem bounds minw --n 1 --N P --certificate F`` for the Thm 4.3 ceilings, and ``check F``.

Trained networks come from ``docs/capacity/morris.json`` (the Morris experiment, ``--morris`` to use
another file; absent: the page says so). Writes ``docs/capacity/plane.json``, ``docs/img/capacity_plane.png``
and the section between ``<!-- plane:begin -->`` and ``<!-- plane:end -->`` of ``docs/capacity.md``.
About 9 minutes on this machine (6 of them the sweep of Kajitsuka next-token at N = 1,000; the run's
last line says how long it took).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from exactmem.capacity import plane  # noqa: E402

PLANE_JSON = "docs/capacity/plane.json"
MORRIS_JSON = "docs/capacity/morris.json"
CERTS = "docs/capacity/certs"
FIGURE = "docs/img/capacity_plane.png"
PAGE = "docs/capacity.md"
THM43_P = (100, 1_000, 10_000)  # binary labels P = nN for the Thm 4.3 ceilings (n = 1)

K_NT, K_S2S, K_F1 = "Kajitsuka next-token (Thm 4.1)", "Kajitsuka seq-to-seq (Cor. 4.1)", "Kajitsuka Thm F.1 (B bits)"
VARDI, MAHDAVI, DANA = "Vardi et al. (Lemma C.1 / F.1)", "Mahdavi et al. (one attention layer)", \
    "Dana et al. (attention-only)"
#: (family, proof file, theorem, instance, size that holds the instance). Left out: instances with one
#: class (0 bits) and those outside their theorem's hypotheses; Dana's Theorems 1-3 and Proposition 1
#: memorize distributions, not labels.
INSTANCES = [
    (K_NT, "proofs/kajitsuka.py", "kajitsuka.next_token", "N12-n4-d3-C4", "small"),
    (K_NT, "proofs/kajitsuka.py", "kajitsuka.next_token", "N30-n5-d2-C3-bigden", "small"),
    (K_NT, "proofs/kajitsuka.py", "kajitsuka.next_token", "N40-n8-d16-C4", "small"),
    (K_NT, "proofs/kajitsuka.py", "kajitsuka.next_token", "N1000-n8-d16-C4", "medium"),
    (K_S2S, "proofs/kajitsuka.py", "kajitsuka.seq2seq", "N10-n4-d3-C4", "small"),
    (K_S2S, "proofs/kajitsuka.py", "kajitsuka.seq2seq", "N24-n6-d8-C2", "small"),
    (K_F1, "proofs/kajitsuka.py", "kajitsuka.limited_bits", "N12-n4-d3-C4-B2", "small"),
    (K_F1, "proofs/kajitsuka.py", "kajitsuka.limited_bits", "N12-n4-d3-C4-B3", "small"),
    (K_F1, "proofs/kajitsuka.py", "kajitsuka.limited_bits", "N40-n8-d16-C4-B2", "medium"),
    (K_F1, "proofs/kajitsuka.py", "kajitsuka.limited_bits", "N40-n8-d16-C4-B6", "medium"),
    (VARDI, "proofs/vardi.py", "vardi.c1", "N16-V24-line-C16", "small"),
    (VARDI, "proofs/vardi.py", "vardi.c1", "N40-V60-d3-C2", "small"),
    (VARDI, "proofs/vardi.py", "vardi.c1", "N30-V40-d2-lattice-C1000", "small"),
    (VARDI, "proofs/vardi.py", "vardi.c1", "N64-d4-C16", "small"),
    (VARDI, "proofs/vardi.py", "vardi.f1", "N48-V56-d2-B4-C16", "small"),
    (MAHDAVI, "proofs/mahdavi.py", "mahdavi.softmax", "H3-n4-d8", "small"),
    (MAHDAVI, "proofs/mahdavi.py", "mahdavi.softmax", "H4-n6-d16-shared", "small"),
    (MAHDAVI, "proofs/mahdavi.py", "mahdavi.softmax", "H4-n6-d16-dh3", "small"),
    (MAHDAVI, "proofs/mahdavi.py", "mahdavi.softmax_classes", "H4-n4-d16-C10", "small"),
    (MAHDAVI, "proofs/mahdavi.py", "mahdavi.hardmax", "H3-n5-d12", "small"),
    (DANA, "proofs/dana.py", "dana.corollary1", "N10-d2-dh2-H2", "small"),
    (DANA, "proofs/dana.py", "dana.corollary1", "N10-d4-dh4-H3", "small"),
    (DANA, "proofs/dana.py", "dana.corollary1.base2", "N20-d6-dh6-H3", "small"),
    (DANA, "proofs/dana.py", "dana.remark2.rank1", "N10-d4-dh4-H2", "small"),
]


class GatherError(RuntimeError):
    pass


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args, expect=(0,)):
    """``python -m exactmem ARGS`` in a fresh process from the repository root; its stdout."""
    cmd = [sys.executable, "-m", "exactmem", *args]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode not in expect:
        raise GatherError(f"{' '.join(cmd[2:])} exited {r.returncode}: {r.stderr.strip()[-400:]}")
    return r.stdout


def check(path: str):
    """The kernel's verdict on ``path``, in a fresh process: (status, measured, message)."""
    out = json.loads(run(["check", path, "--json", "--quiet"], expect=(0, 1, 2)))
    return out["status"], out.get("measured") or {}, out.get("message", "")


def read_doc(path: str):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(os.path.join(ROOT, path), "rt", encoding="utf-8") as f:
        return json.load(f)


def labels_and_classes(doc, measured):
    """P (labelled predictions of the distinct inputs) and C with its origin, from the checked
    certificate: P = n_examples (× the sequence length when every position is labelled, all inputs
    then being of that length); C = the bound of the ``label_classes <=`` claim, else the kernel's
    count of distinct labels."""
    n, seq = measured["n_examples"], measured.get("seq_len", 1)
    position = (doc["model"].get("readout") or {}).get("position")
    if position == "all":
        lens = {len(x) for x in doc["dataset"]["inputs"]} if "inputs" in doc.get("dataset", {}) else {seq}
        if lens != {seq}:
            raise GatherError(f"{doc['theorem']} {doc['instance']}: inputs of several lengths {sorted(lens)}")
        P = n * seq
    else:
        P = n
    claim = [c for c in doc["claims"] if c["quantity"] == "label_classes" and c["op"] == "<="]
    if claim:
        return P, int(Fraction(claim[0]["bound"])), "claim"
    return P, measured["label_classes"], "kernel"


def construction_point(i, total, fam, proof, thm, inst, size, tmp):
    t0 = time.perf_counter()
    tag = f"[{i}/{total}] {thm} [{inst}]"
    say(f"{tag}: certify")
    rows = json.loads(run(["certify", proof, "--only", f"{thm}/{inst}", "--size", size, "--gzip", "--quiet", "--json",
                           "--out", CERTS]))
    if len(rows) != 1:
        raise GatherError(f"{tag}: certify gave {len(rows)} rows")
    cert = os.path.relpath(rows[0]["path"], ROOT)
    status, meas, _ = check(cert)
    doc = read_doc(cert)
    P, C, C_from = labels_and_classes(doc, meas)
    point = {"family": fam, "proof": proof, "theorem": thm, "instance": inst, "size": size, "seed": doc["seed"],
             "certificate": cert, "status": status, "n_examples": meas["n_examples"], "seq_len": meas.get("seq_len"),
             "labels": P, "classes": C, "classes_from": C_from,
             "memorized_bits": P * math.log2(C) if C > 1 else 0.0,
             "n_params": meas["n_params"], "max_bits": meas["max_bits"], "b_star": None}
    say(f"{tag}: {status}; sweep (float, --certify)")
    sw = os.path.join(tmp, f"{thm}.{inst}")
    run(["sweep", proof, "--theorem", thm, "--instance", inst, "--models", "float", "--certify", "--neighbours", "0",
         "--out", sw, "--quiet"])
    with open(os.path.join(sw, "points.jsonl"), encoding="utf-8") as f:
        pts = [json.loads(line) for line in f if line.strip()]
    crit = pts[0]["result"]["criteria"]["exact"]
    if crit.get("status") != "found":
        point["b_star_why"] = f"sweep: {crit.get('status')} (no float width up to {pts[0]['result'].get('cap')} " \
                              f"bits memorizes: a weight is not dyadic or the rounding never matches)"
    else:
        certs = {}
        for c in crit["certificates"]:
            dst = os.path.join(CERTS, f"{thm}.{inst}.float-b{c['b']}.json.gz")
            shutil.copyfile(os.path.join(sw, c["path"]), os.path.join(ROOT, dst))
            st, m, _ = check(dst)
            certs[c["b"]] = {"b": c["b"], "certificate": dst, "status": st, "n_params": m.get("n_params")}
        b = crit["min_b"]
        bstar = dict(certs[b])
        bstar.update(float_format(read_doc(certs[b]["certificate"])))
        bstar["below"] = certs.get(b - 1)
        point["b_star"] = bstar
    say(f"{tag}: done ({time.perf_counter() - t0:.1f} s)")
    return point


def float_format(doc):
    """The float format that holds the weights of a certified layer model exactly: significand
    bits (the largest odd part), exponent bits, and bits per weight = 1 + significand + exponent."""
    from exactmem.model.serialize import model_from_json
    from exactmem.sweep.quantize import identity_bits, storage_bits

    model = model_from_json(doc["model"])
    s = identity_bits(model, "float")
    st = storage_bits(model, "float", s)
    return {"significand_bits": s, "exponent_bits": st["exponent_bits"], "bits_per_weight": st["per_weight"]}


def thm43_rows():
    out = []
    for P in THM43_P:
        path = os.path.join(CERTS, f"thm43.minw.P{P}.json")
        run(["bounds", "minw", "--n", "1", "--N", str(P), "--no-sharp", "--certificate", path])
        status, _, msg = check(path)
        doc = read_doc(path)
        W = int(next(d["expr"] for d in doc["definitions"] if d["name"] == "W"))
        out.append({"P": P, "W_min": W, "certificate": path, "status": status, "conclusion": doc["conclusion"]["text"]})
    return out


def trained_rows(path: str):
    """The trained networks' rows from the experiment's JSON (its ``rows``, or a list), normalized."""
    full = os.path.join(ROOT, path)
    if not os.path.exists(full):
        return None, []
    with open(full, encoding="utf-8") as f:
        doc = json.load(f)
    rows = doc if isinstance(doc, list) else doc.get("rows", [])
    return path, plane.normalize_trained_rows(rows)


def render(doc) -> None:
    """Figure and page section from ``doc`` (the plane document)."""
    plane.figure(doc, os.path.join(ROOT, FIGURE))
    with open(os.path.join(ROOT, PAGE), encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(ROOT, PAGE), "w", encoding="utf-8") as f:
        f.write(plane.replace_section(text, plane.section(doc)))


def write_json(doc) -> None:
    path = os.path.join(ROOT, PLANE_JSON)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--render", action="store_true", help="only re-render figure and page from plane.json")
    ap.add_argument("--trained", action="store_true", help="only re-read the trained networks, then re-render")
    ap.add_argument("--bounds", action="store_true", help="only recompute the Thm 4.3 ceilings, then re-render")
    ap.add_argument("--morris", default=MORRIS_JSON, help=f"the trained networks' JSON (default {MORRIS_JSON})")
    ap.add_argument("--only", default=None, help="only construction instances whose theorem/instance contains this")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.render or a.trained or a.bounds:
        doc = plane.load(os.path.join(ROOT, PLANE_JSON))
        if a.trained:
            doc["trained_source"], doc["trained"] = trained_rows(a.morris)
        if a.bounds:
            for f in os.listdir(os.path.join(ROOT, CERTS)):
                if f.startswith("thm43."):
                    os.remove(os.path.join(ROOT, CERTS, f))
            doc["thm43"] = thm43_rows()
        if a.trained or a.bounds:
            write_json(doc)
        render(doc)
        print(f"rendered {FIGURE} and {PAGE} from {PLANE_JSON}")
        return 0
    os.makedirs(os.path.join(ROOT, CERTS), exist_ok=True)
    todo = [x for x in INSTANCES if a.only is None or a.only in f"{x[2]}/{x[3]}"]
    points, skipped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (fam, proof, thm, inst, size) in enumerate(todo, 1):
            p = construction_point(i, len(todo), fam, proof, thm, inst, size, tmp)
            points.append(p)
            if p["status"] != "CERTIFIED":
                skipped.append({"theorem": thm, "instance": inst, "why": f"check: {p['status']}"})
    say("Thm 4.3 ceilings: bounds minw")
    src, trained = trained_rows(a.morris)
    doc = {"format": plane.FORMAT, "version": 1, "generated_by": "python benchmarks/capacity_plane.py",
           "constructions": points, "skipped": skipped, "thm43": thm43_rows(),
           "trained_source": src, "trained": trained}
    write_json(doc)
    render(doc)
    print(f"wrote {PLANE_JSON}, {FIGURE} and the plane section of {PAGE}: {len(points)} constructions, "
          f"{len(trained)} trained rows, {len(doc['thm43'])} Thm 4.3 ceilings "
          f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
