"""The small independent certificate checker (kernel; ``docs/certificate.md``).

``check_certificate`` validates a certificate (`schema`), checks its claims, re-derives
every example's output (`evaluate`) and returns a `Verdict`, within the verifier's
budget (`limits`). Accelerators (``fastcheck``, sharded checks) use the public names: they
may decide how to compute an example's exact output, never how it is judged.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Callable, Iterable, List, Optional, Tuple

from .evaluate import LAYER_MESSAGES, SOFTMAX2_MAX_SPREAD, Undecided, judge_example, layer_example  # noqa: F401
from .fields import bad, unexpected  # noqa: F401 (re-exported: the command's one-line errors)
from .facts import DATA_QUANTITIES, VECTOR_QUANTITIES, VERDICT_QUANTITIES, DataFacts
from .formulas import check_formulas
from .fixedpoint import exp_fx, log_fx
from .graph import NAMES, run_graph
from .limits import DEFAULT_MAX_PRECISION, START_PRECISION, Budget, LimitExceeded, Limits
from .lowerbound import FORMAT as LOWER_BOUND_FORMAT, check_lower_bound  # a lower-bound document: its own base
from .schema import (OPS, MalformedCertificate, ParsedCertificate, canonical_hash,  # noqa: F401 (re-exported)
                     decode_certificate, integer, load_certificate, parse_certificate, parse_chunk)
from .text import SHORT, fmt
from .verdict import Verdict  # noqa: F401 (re-exported: the kernel's public answer)

# an example's refutation message, by its witness's reason (layer models' reasons: evaluate.py)
REFUTED_BY = {**LAYER_MESSAGES, "verdict": "the claimed verdict {claimed!r} is contradicted by the re-derived scores",
              "codelength": "the claimed code length {claimed} bits is below the re-derived lower bound {lower_bound}"}


def judge_verdict(cert: ParsedCertificate, e: int, cols, s: int, F: int = START_PRECISION,
                  budget: Optional[Budget] = None) -> Tuple[str, Optional[dict]]:
    """A graph model's claimed verdict of example e against the score enclosures ``cols`` ((lo, hi,
    special-value codes or None) over 2^s, one per read position): an example surely passes when at
    every position the label's lower bound exceeds every other upper bound, surely fails when at some
    position another lower bound is >= the label's upper bound (exact ties fail) or a score is NaN
    (no argmax). ±∞ compare as extended reals. 'pass' if the claim is confirmed; 'fail' with a
    witness if the intervals contradict it; else 'undecided'. A claim 'unknown' is not judged. With
    code-length claims, a confirmed (or unclaimed) verdict is followed by `_code_length`."""
    claimed, labels = cert.outputs[e], cert.labels[e] if cert.position == "all" else [cert.labels[e]]
    found = []
    for t, ((lo, hi, sp), lab) in enumerate(zip(cols, labels)):
        if lab >= len(lo):
            bad(f"dataset.labels[{e}]", f"class {lab} out of range (the graph gives {len(lo)} scores)")
        if sp:  # ±∞ become points below / above every finite bound of the row: the same order
            m, M = min(lo) - 1, max(hi) + 1
            lo, hi = ([M if c == 1 else m if c == -1 else v for c, v in zip(sp, b)] for b in (lo, hi))
        others = [k for k in range(len(lo)) if k != lab]
        top = max(others, key=hi.__getitem__, default=None)
        low = max(others, key=lo.__getitem__, default=None)
        nan = sp and next((k for k in [lab] + others if sp[k] == 2), None)
        found.append(("fail", t, nan, lo, hi) if nan is not None else
                     ("pass", t, top, lo, hi) if top is None or lo[lab] > hi[top] else
                     ("fail", t, low, lo, hi) if lo[low] >= hi[lab] else ("undecided", t, top, lo, hi))
    got = next((f for f in found if f[0] == "fail"), found[0] if all(f[0] == "pass" for f in found) else None)
    if claimed == "unknown" or got is not None and got[0] == claimed:  # confirmed or not claimed: code lengths next
        return ("pass", None) if cert.codelengths is None else _code_length(cert, e, cols, s, labels, F, budget)
    if got is None:
        return "undecided", None
    _, t, k, lo, hi = got
    lab, sp = labels[t], cols[t][2]
    w = {"example": e + cert.first, "reason": "verdict", "claimed": claimed, "classes": [lab, k],
         "scores": [NAMES[sp[j]] if sp and sp[j] else fmt([Fraction(lo[j], 1 << s), Fraction(hi[j], 1 << s)])
                    for j in (lab, k) if j is not None]}
    return "fail", {**w, "position": t} if cert.position == "all" else w


def _code_length(cert: ParsedCertificate, e: int, cols, s: int, labels, F: int, budget) -> Tuple[str, Optional[dict]]:
    """Example e's claimed code length c, Σ over its read positions of −log₂ softmax(scores)[label]
    (``docs/verify-format.md`` § Code length). With the scores in [lo, hi] over 2^s, each term
    log₂ Σ_k exp(s_k − s_y) lies in [log₂ Σ_k exp(lo_k − hi_y), log₂ Σ_k exp(hi_k − lo_y)] (increasing in
    s_k, decreasing in s_y); exp and ln are `fixedpoint`'s outward bounds at G = max(F, s) bits, ln 2
    from `log_fx` too; the upper sum holds exp(hi_y − lo_y) >= 1, so its logarithm is >= 0, and a lower
    bound below 0 is raised to 0. 'pass' when the upper end is at most c, 'fail' (REFUTED, with a
    witness) when the lower end exceeds c; else undecided (more bits), and always so when a score is a
    special value. e^x < 2^(2x): each row's largest term is charged to the value limit first. The lower
    end is only computed when the upper end does not already confirm c (it can only refute)."""
    if any(sp for _, _, sp in cols):
        raise Undecided()  # a special value: its bounds are placeholders
    G, c, rows = max(F, s), cert.codelengths[e], [(lo, hi, y) for (lo, hi, _), y in zip(cols, labels)]
    l2 = log_fx(2 << G, G, False), log_fx(2 << G, G, True)  # ln 2 over 2^G
    for lo, hi, y in rows:
        if budget is not None:
            budget.value(2 * max(0, (max(hi) - lo[y]) >> s) + G + 2, "a code-length term exp(s_k - s_label)")
    high = sum((Fraction(log_fx(sum(exp_fx((h - lo[y]) << (G - s), G, True) for h in hi), G, True), l2[0])
                for lo, hi, y in rows), Fraction(0))
    if high <= c:
        return "pass", None
    downs = [sum(exp_fx((v - hi[y]) << (G - s), G, False) for v in lo) for lo, hi, y in rows]
    low = sum((max(Fraction(log_fx(d, G, False), l2[1]), Fraction(0)) for d in downs if d), Fraction(0))
    if low <= c:
        raise Undecided()  # c within the enclosure
    return "fail", {"example": e + cert.first, "reason": "codelength", "claimed": fmt(c), "lower_bound": fmt(low),
                    "upper_bound": fmt(high)}


def check_claims(cert: ParsedCertificate, data: bool = False, skip=(), budget: Optional[Budget] = None,
                 cap: Optional[int] = None) -> Optional[Verdict]:
    """The REFUTED verdict of the first failing claim, or None when all hold: the model's claims
    (``data`` False, judged before any example, after the claim formulas: `formulas.check_formulas`
    within ``budget`` up to ``cap`` bits, which may also answer UNKNOWN), or the claims on the data
    quantities that the examples' facts gave (``data`` True; ``min_sep2`` None: no two distinct
    tokens, so only a lower bound holds, vacuously)."""
    if not data and cert.formulas and (v := check_formulas(cert, cap or cert.max_precision, budget or Budget())):
        return v
    m = cert.measured
    for raw, q, op, bound in cert.claims:
        if (q in DATA_QUANTITIES or q in VERDICT_QUANTITIES) != data or q in skip:
            continue
        if not (op in (">=", ">") if m[q] is None else OPS[op](m[q], bound)):
            shown = dict(raw) if len(raw["bound"]) <= SHORT else {**raw, "bound": fmt(bound)}
            got = "none (fewer than two distinct tokens)" if m[q] is None else fmt(m[q])
            return Verdict("REFUTED", {"claim": shown, "bound": fmt(bound), "measured": str(got)},
                           f"claim {q} {op} {fmt(bound)} fails: measured {q} = {got}", None, m)
    return None


def new_facts(cert: ParsedCertificate) -> DataFacts:
    """The facts a check of ``cert`` collects (token vectors only if a claim needs them)."""
    return DataFacts(vectors=any(q in VECTOR_QUANTITIES for _, q, _, _ in cert.claims), verdicts=cert.graph is not None,
                     codes=bool(cert.spec and cert.spec[6]))


def conflict_verdict(cert: ParsedCertificate, earlier: int, later: int, label=None) -> Verdict:
    """REFUTED: rows ``earlier`` and ``later`` hold one input with two labels (no function memorizes both)."""
    wit = {"example": later, "reason": "conflicting_labels", "same_input_as": earlier}
    if label is not None:
        wit["label"] = fmt(label)
    return Verdict("REFUTED", wit, f"examples {earlier} and {later} have the same input and different labels",
                   None, cert.measured)


def conclude(cert: ParsedCertificate, v: Verdict, facts: DataFacts, budget: Budget) -> Verdict:
    """The verdict once every example was seen: the data quantities join the measurements, the
    claims on them are judged, and a CERTIFIED message counts distinct examples."""
    if v.status == "REFUTED" or facts.rows != cert.measured["n_rows"]:
        return v  # a refutation stands; with rows unseen (time limit) the data claims stay unjudged
    try:
        m = {**cert.measured, **facts.quantities(budget.tick)}
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, f"{x} while counting the data facts; no refutation found", v.precision,
                       cert.measured, x.limit)
    v.measured = m
    # undecided examples leave the confirmed-verdict counts short: claims on them wait for a full check
    refuted = check_claims(replace(cert, measured=m), data=True, skip=() if v.status == "CERTIFIED" else VERDICT_QUANTITIES)
    if refuted or v.status != "CERTIFIED":
        return refuted or v
    rows = f" ({facts.rows} rows; {facts.repeats} repeated {_plural(facts.repeats, 'row')} counted once)" \
        if facts.repeats else ""
    n, tail = m["n_examples"], v.message.rsplit(" (", 1)[-1]  # the precision note, after any formula text
    v.message = (f"every claimed verdict holds: {m['n_pass']} of {n} distinct examples pass, {m['n_fail']} fail, "
                 f"{n - m['n_pass'] - m['n_fail']} not claimed{rows}; " if cert.graph is not None else
                 f"all {n} distinct {_plural(n, 'example')} pass{'es' if n == 1 else ''}{rows} and ") + \
        f"{_claims_hold(cert)} ({tail}"
    return v


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _claims_hold(cert: ParsedCertificate) -> str:
    k = len(cert.claims)
    text = "no claims are stated" if k == 0 else "the one claim holds" if k == 1 else f"all {k} claims hold"
    return text + (cert.formulas.get("text", "") if cert.formulas else "")


def precision_cap(cert: ParsedCertificate, max_precision: Optional[int], limits: Limits) -> int:
    """Interval bits granted: the verifier's cap (argument, else limits, else the default), lowered
    to what the certificate asks."""
    if max_precision is not None:
        integer(max_precision, "max_precision argument", 1)
    return min(max_precision or limits.max_precision or DEFAULT_MAX_PRECISION, cert.max_precision)


def _example(cert: ParsedCertificate, e: int, cap: int, budget: Budget):
    """(status, witness, precision used) of example e: a graph model's in intervals throughout, doubling
    the precision while undecided (a claim "unknown" without a code length is not evaluated); a layer model's by
    `evaluate.layer_example` (which answers a REFUTED Verdict for a softmax2 score that is not an integer)."""
    if cert.graph is None:
        return layer_example(cert, e, cap, budget, _ladder)
    if cert.outputs[e] == "unknown" and cert.codelengths is None:
        return "pass", None, None
    return _ladder(cap, lambda p: judge_verdict(cert, e, *run_graph(cert.graph, cert.inputs[e], cert.tokens, p, budget,
                                                                     cert.position), p, budget))


def _ladder(cap: int, attempt: Callable):
    """attempt(p) at p = 64, 128, ... up to the cap while it is undecided: (status, witness, p)."""
    p = min(START_PRECISION, cap)
    while True:
        try:
            status, wit = attempt(p)
        except Undecided:
            status, wit = "undecided", None
        if status != "undecided" or p >= cap:
            return status, wit, p
        p = min(2 * p, cap)


def _certified(cert: ParsedCertificate, n: int, used: Optional[int], where: str = "") -> Verdict:
    tail = f"interval precision up to {used} bits" if used is not None else "exact"
    return Verdict("CERTIFIED", None, f"all {n} {_plural(n, 'example')} pass and {_claims_hold(cert)} ({tail}{where})",
                   used, cert.measured)


def check_examples(cert: ParsedCertificate, examples: Iterable[int], cap: int, budget: Budget,
                   facts: Optional[DataFacts] = None) -> Verdict:
    """Check the given examples (indices into ``cert.inputs``; reported as ``e + cert.first``) in
    order: the first refutation, else UNKNOWN if any is undecided or a limit stops the check, else
    CERTIFIED (for these examples; the claims are checked apart). Each example joins ``facts``
    before it is evaluated: an input seen before with another label is REFUTED at once."""
    used, undecided, notes, m, todo, hit = None, [], [], cert.measured, list(examples), "max_value_bits"
    for done, e in enumerate(todo):
        g = e + cert.first
        budget.on_example(g)
        if facts is not None and (earlier := facts.add(g, cert.inputs[e], cert.labels[e])) is not None:
            return conflict_verdict(cert, earlier, g, cert.labels[e])
        try:
            budget.tick()
            r = _example(cert, e, cap, budget)
            if isinstance(r, Verdict):
                return r
            status, wit, p = r
        except LimitExceeded as x:
            if x.limit == "time_limit":
                return Verdict("UNKNOWN", None, f"{x} after {done} of {len(todo)} examples; no refutation found "
                                                f"among them", used, m, x.limit)
            status, p, hit = "undecided", getattr(x, "precision", None), hit if notes else x.limit
            notes.append(f"example {g}: {x}")
        used = p if used is None or (p is not None and p > used) else used
        if status == "pass" and facts is not None:
            facts.confirm(cert.outputs[e], cert.codelengths and cert.codelengths[e])
        if status == "fail":
            return Verdict("REFUTED", wit, f"example {g}: " + REFUTED_BY[wit["reason"]].format(**wit), used, m)
        if status == "undecided":
            undecided.append(g)
    if not undecided:
        return _certified(cert, len(todo), used)
    shown = ", ".join(map(str, undecided[:10])) + (", ..." if len(undecided) > 10 else "")
    at = f" at precision {cap}" if cert.softmax_at is not None else ""
    msg = f"{len(undecided)} of {len(todo)} examples undecided{at} (examples {shown})"
    msg, limit = (msg + f"; {'; '.join(notes[:3])}" + ("; ..." if len(notes) > 3 else ""), hit) if notes else \
        (str(LimitExceeded("max_precision", msg)), "max_precision")  # notes: some examples hit the value limit
    return Verdict("UNKNOWN", None, f"{msg}; no refutation found", used, m, limit)


def combine_verdicts(cert: ParsedCertificate, parts: List[Tuple[int, int, object]], where: str) -> Verdict:
    """One verdict from the verdicts of contiguous parts (lo, hi, Verdict, or the exception that
    stopped the part) of the examples: the lowest refutation; else UNKNOWN when a part is
    undecided, failed or missing; CERTIFIED only when parts covering every example certify."""
    m, n, failed, covered = cert.measured, cert.measured["n_rows"], [], 0
    parts = sorted(parts, key=lambda p: p[0])
    for lo, hi, v in parts:
        if isinstance(v, Verdict) and v.status == "REFUTED":
            if failed:  # still a real counter-example; an earlier part might hold an earlier one
                v.message += f" (not necessarily the first: {'; '.join(failed[:3])})"
            return v
        if not isinstance(v, Verdict):
            failed.append(f"examples {lo}..{hi - 1} could not be checked ({type(v).__name__}: {v})")
    for lo, hi, _ in parts + [(n, n, None)]:  # the gaps, and any rows past the last part
        if lo != covered:
            failed.append(f"examples {covered}..{lo - 1} were not checked")
        covered = max(covered, hi)
    if failed:
        return Verdict("UNKNOWN", None, f"{'; '.join(failed[:3])}; no refutation found", None, m)
    used = max((v.precision for _, _, v in parts if v.precision is not None), default=None)
    unknown = [(lo, hi, v) for lo, hi, v in parts if v.status == "UNKNOWN"]
    if unknown:
        msg = "; ".join(f"examples {lo}..{hi - 1}: {v.message}" for lo, hi, v in unknown[:3])
        return Verdict("UNKNOWN", None, msg + ("; ..." if len(unknown) > 3 else ""), used, m, unknown[0][2].limit)
    return _certified(cert, n, used, f"; {where}")


def check_chunks(cert: ParsedCertificate, read_chunk: Optional[Callable[[str], bytes]], cap: int, budget: Budget,
                 check_part: Optional[Callable] = None, facts: Optional[DataFacts] = None) -> Verdict:
    """A version-2 certificate, one chunk in memory at a time (``read_chunk(file)`` gives its
    bytes; ``check_part(chunk, cap, budget, facts)`` defaults to the kernel's check_examples)."""
    if read_chunk is None:
        raise MalformedCertificate("dataset: a chunked (version 2) certificate needs its chunk files")
    parts = []
    for k, (file, _, count, first) in enumerate(cert.chunks):
        try:
            budget.tick()
            part = parse_chunk(cert, k, read_chunk(file), budget)
        except LimitExceeded as x:
            return Verdict("UNKNOWN", None, f"{x} after {first} examples; no refutation found among them", None,
                           cert.measured, x.limit)
        v = check_part(part, cap, budget, facts) if check_part else check_examples(part, range(count), cap, budget, facts)
        if v.status == "REFUTED" or v.limit == "time_limit":
            return v
        parts.append((first, first + count, v))
    return combine_verdicts(cert, parts, f"{len(cert.chunks)} chunks")


def check_certificate(doc: dict, max_precision: Optional[int] = None, *, limits: Optional[Limits] = None,
                      budget: Optional[Budget] = None, read_chunk: Optional[Callable[[str], bytes]] = None) -> Verdict:
    """Validate ``doc`` (MalformedCertificate if invalid or over a size limit), verify its hash,
    check the claims and re-derive every example, within ``limits`` (default: ``Limits()``).
    A version-2 (chunked) certificate needs ``read_chunk`` (see ``chunkfiles.chunk_reader``).
    A lower-bound certificate (format ``exactmem-lower-bound``) goes to `lowerbound`. Any other
    exception of the kernel (a bug, or an input no check foresaw) becomes MalformedCertificate, one
    line naming where; MemoryError and RecursionError pass through for the caller to report."""
    budget = budget or Budget(limits)
    try:
        return _check(doc, max_precision, budget, read_chunk)
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, f"{x}; no refutation found", None, {}, x.limit)
    except (MalformedCertificate, MemoryError, RecursionError):
        raise
    except Exception as e:
        raise MalformedCertificate(unexpected(e, "while checking the certificate")) from None


def _check(doc, max_precision, budget: Budget, read_chunk) -> Verdict:
    if isinstance(doc, dict) and doc.get("format") == LOWER_BOUND_FORMAT:
        return check_lower_bound(doc, budget)
    try:
        cert = parse_certificate(doc, budget)
    except LimitExceeded as x:
        return Verdict("UNKNOWN", None, f"{x} while reading the certificate", None, {}, x.limit)
    cap = precision_cap(cert, max_precision, budget.limits)
    if refuted := check_claims(cert, budget=budget, cap=cap):
        return refuted
    facts = new_facts(cert)
    v = check_examples(cert, range(len(cert.inputs)), cap, budget, facts) if cert.chunks is None else \
        check_chunks(cert, read_chunk, cap, budget, facts=facts)
    return conclude(cert, v, facts, budget)
