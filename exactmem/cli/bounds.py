"""``python -m exactmem bounds ...``: the lower-bound checker from the command line.

Actions (``docs/cli.md``, ``docs/lower-bounds.md``):

    bounds minw --n 8 --N 1000 [--no-sharp]        smallest W allowed by Thm 4.3 (and by (90))
    (minw, chain, next-token, bits: --certificate FILE; run: --certificate DIR — the chain as a
    lower-bound certificate for `python -m exactmem check`, docs/lower-bound-certificates.md)
    bounds chain --n 8 --N 1000 --arch d=1,m=2,s=1,H=1,q=4,L=3 [--convention paper|exact] [--all-steps]
    bounds next-token --N 10000 [--arch ...] [--reduction --n 4 --kind hardmax|uniform|softmax]
    bounds bits --N 1000 [--C 2] [--n 8] [--W 60] [--compare]
    bounds degrees [--arch ...] [--n 2] [--N 1]
    bounds brute [--arch ...] [--n 2] [--N 2] [--values -1,0,1] [--samples 4000 | --exhaustive]
    bounds run [proofs/lower_bounds.py] [--size small|medium|large] [--only TEXT]
    bounds plot [--out docs/lower-bounds.png] [--quick]

Exit codes: 0 every checked step holds (or fails with a documented repair); 1 a step
fails; 2 undecided at the maximum precision; 3 bad input (one message, no traceback).
Sizes are bounded (``arch.parse_count``, `LIMITS`): a count is at most 10^1000, and each
action caps what its computation needs, so every input is answered or refused in seconds.
"""

from __future__ import annotations

import json
import sys
from typing import List

from ..errors import write_error

EXIT_OK, EXIT_FAILED, EXIT_UNDECIDED, EXIT_BAD_INPUT = 0, 1, 2, 3
DEFAULT_FILE = "lower_bounds"  # the packaged exactmem/proofs/lower_bounds.py, from any directory
DEFAULT_ARCH = "d=1,m=1,s=1,H=1,q=1,L=2"


MAX_L = 5000  # blocks of one architecture for chain / next-token --arch (loops over the blocks)
MAX_L_CERTIFICATE = 1000  # ... with --certificate (a certificate of L = 1000 has 6,000 steps, about 6 MB)
MAX_SHARP_BITS = 1400  # nN < 2^1400 (≈ 10^421) for the sharp search of minw (about 4 s there)
MAX_LABEL_BITS = 1 << 18  # bits --W: N·log2 C (C^N is computed exactly)
MAX_BRUTE = 500_000  # brute: (samples or grid points) × n·N × exact W, about 5 s
BIG_BITS = 2000  # numbers of more bits make every block slower: L is capped at MAX_L / (1 + bits/2000)
LIMITS = {"count": "10^1000", "L (chain, next-token --arch)": MAX_L, "L with --certificate": MAX_L_CERTIFICATE,
          "nN for the sharp search": "2^1400 (≈ 10^421)", "N·log2 C for bits --W": MAX_LABEL_BITS,
          "brute work": MAX_BRUTE}


def _check_depth(arch, n: int, N: int, cap: int) -> None:
    """Each of the L blocks costs more with huge numbers: L·(1 + bits/2000) ≤ cap, bits the size of
    the largest count of the chain (n³NH, the parameter count)."""
    from ..bounds.arch import BoundsInputError

    size = max((n ** 3 * N * arch.H).bit_length(), arch.W("paper").bit_length(), (N * n * arch.q).bit_length())
    allowed = cap // (1 + size // BIG_BITS)
    if arch.L > allowed:
        raise BoundsInputError(f"L = {arch.L} is too deep for numbers of {size} bits: at most L = {allowed} here "
                               f"(L·(1 + bits/{BIG_BITS}) ≤ {cap})")


def _certificate_option(p, what: str = "FILE") -> None:
    p.add_argument("--certificate", default=None, metavar=what,
                   help="also write the chain as a lower-bound certificate (every step re-checked by "
                        "`python -m exactmem check`; docs/lower-bound-certificates.md)"
                        + (": one file per instance in DIR" if what == "DIR" else ""))


def add_parser(sub) -> None:
    """Register ``bounds`` and its actions on the top-level subparsers object."""
    b = sub.add_parser("bounds", help="check the lower-bound counting arguments step by step",
                       description="Lower bounds of Kajitsuka & Sato (Thm 4.2, Thm 4.3) and the bit bound, "
                                   "every inequality evaluated exactly.")
    acts = b.add_subparsers(dest="action", required=True)

    def common(p, arch_default=None, n=None, N=None):
        if n is not None:
            p.add_argument("--n", default=n, metavar="n", help=f"sequence length n (default {n})")
        if N is not None:
            p.add_argument("--N", default=N, metavar="N", help=f"number of sequences N (default {N}); 10^6 and 1e6 accepted")
        if arch_default is not False:
            p.add_argument("--arch", default=arch_default,
                           help="architecture d=…,m=…,s=…,H=…,q=…,L=…" + (f" (default {arch_default})" if arch_default else ""))
        p.add_argument("--json", action="store_true", help="print the report as JSON")
        p.add_argument("--debug", action="store_true", help="show tracebacks for bad input")

    p = acts.add_parser("minw", help="smallest W allowed by nN ≤ 9W²log2(48e·nN), and by the sharp bound (90)")
    common(p, False, "8", "1000")
    p.add_argument("--no-sharp", action="store_true",
                   help="skip the search over architectures for bound (90) (well under a second at any n ≤ 10^6, "
                        "N ≤ 10^15; the search needs nN < 2^1400)")
    _certificate_option(p)

    p = acts.add_parser("chain", help="every step of Thm B.3's chain for one architecture and (n, N)")
    common(p, None, "8", "1000")
    p.add_argument("--convention", default="paper", choices=("paper", "exact"),
                   help="parameter count: paper (eq. (92)) or exact (default paper)")
    p.add_argument("--all-steps", action="store_true", help="do not elide the middle of long tables")
    _certificate_option(p)

    p = acts.add_parser("next-token", help="Thm 4.2: explicit bounds and the repeated-token reduction")
    common(p, None, "4", "10000")
    p.add_argument("--convention", default="paper", choices=("paper", "exact"),
                   help="parameter count: paper or exact (default paper)")
    p.add_argument("--reduction", action="store_true", help="check the reduction (64)–(65) on a random instance")
    p.add_argument("--kind", default="hardmax", choices=("hardmax", "uniform", "softmax"),
                   help="attention kind for --reduction (default hardmax)")
    p.add_argument("--seed", default="0", help="seed for --reduction (default 0)")
    _certificate_option(p)

    p = acts.add_parser("bits", help="bit lower bounds N·log2 C (nN for seq-to-seq)")
    common(p, False, None, "1000")
    p.add_argument("--n", default=None, help="sequence length (seq-to-seq: nN labelled tokens)")
    p.add_argument("--C", default="2", help="number of classes (default 2)")
    p.add_argument("--W", default=None, help="parameter count: also print the minimal bits per weight")
    p.add_argument("--compare", action="store_true", help="build the O(N) baselines and compare their bits")
    _certificate_option(p)

    p = acts.add_parser("degrees", help="degree/count bookkeeping checked with sympy polynomials")
    common(p, DEFAULT_ARCH, "2", "1")
    p.add_argument("--convention", default="paper", choices=("paper", "exact"),
                   help="parameter count: paper or exact (default paper)")
    p.add_argument("--seed", default="0", help="seed of the cell point θ0 (default 0)")

    p = acts.add_parser("brute", help="brute-force output sign patterns of a toy hardmax Transformer")
    common(p, "d=1,m=1,s=1,H=1,q=1,L=1", "2", "2")
    p.add_argument("--values", default="-1,0,1", help="parameter values (default -1,0,1)")
    p.add_argument("--samples", default="4000", help="number of seeded samples (default 4000)")
    p.add_argument("--exhaustive", action="store_true", help="enumerate the whole grid instead of sampling")
    p.add_argument("--seed", default="0", help="seed of the sampling (default 0)")

    p = acts.add_parser("run", help="run a lower-bound file (default: the packaged lower_bounds, also proofs/lower_bounds.py)")
    p.add_argument("file", nargs="?", default=DEFAULT_FILE,
                   help=f"lower-bound file, or the bare name of a packaged one (default {DEFAULT_FILE})")
    p.add_argument("--size", default="small", choices=("small", "medium", "large"),
                   help="which instances to run (default small)")
    p.add_argument("--only", default=None, help="only theorems whose name contains this text")
    p.add_argument("--json", action="store_true", help="print the rows (with each report) as JSON")
    p.add_argument("--verbose", action="store_true", help="print every report")
    _certificate_option(p, "DIR")
    p.add_argument("--debug", action="store_true", help="show tracebacks for bad input")

    p = acts.add_parser("plot", help="PNG of the lower bounds vs the O(N) baseline (needs matplotlib)")
    p.add_argument("--out", default="docs/lower-bounds.png", help="the PNG file (default docs/lower-bounds.png)")
    p.add_argument("--quick", action="store_true", help="fewer points (about 2 s instead of about 10 s; the full plot "
                                                          "goes to N = 10^12)")
    p.add_argument("--json", action="store_true", help="print the plotted series as JSON instead of the table")
    p.add_argument("--debug", action="store_true", help="show tracebacks for bad input")
    b.set_defaults(fn=run)  # usage errors: one line, exit 3, like every subcommand (exactmem.cli.app)


def _emit(args, reports) -> int:
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=1, ensure_ascii=False, default=str))
    else:
        print("\n\n".join(r.to_markdown(None if getattr(args, "all_steps", False) else 40) for r in reports))
    if any(s.status == "undecided" for r in reports for s in r.steps):
        return EXIT_UNDECIDED
    return EXIT_OK if all(r.ok for r in reports) else EXIT_FAILED


def _int(name, v, cap=None):
    from ..bounds.arch import MAX_COUNT, parse_count

    return parse_count(f"--{name}", v, MAX_COUNT if cap is None else cap)  # messages name the option


def _command_line(args) -> dict:
    """The action and its arguments, for a certificate's ``meta`` (not hashed)."""
    skip = ("fn", "debug", "json", "certificate", "command")
    return {"bounds": args.action, **{k: v for k, v in sorted(vars(args).items())
                                      if k not in skip and k != "action" and isinstance(v, (str, bool))}}


def _arch(text, max_L=None):
    from ..bounds.arch import BoundsInputError, parse_architecture

    a = parse_architecture(text)
    if max_L is not None and a.L > max_L:
        raise BoundsInputError(f"L = {a.L} is too deep for this action: at most L = {max_L} blocks (each is checked "
                               "one by one)")
    return a


def _write_certificate(args, doc) -> None:
    """Write ``doc`` to ``--certificate`` and say what the kernel will check and what it will not."""
    from ..bounds.certificates import write_document

    try:
        write_document(doc, args.certificate)
    except OSError as e:
        from ..bounds.arch import BoundsInputError

        raise BoundsInputError(f"--certificate: {write_error(args.certificate, e)}") from None
    out = sys.stderr if getattr(args, "json", False) else sys.stdout
    print(f"\nwrote lower-bound certificate {args.certificate}: {len(doc['steps'])} steps for "
          f"`python -m exactmem check {args.certificate}`", file=out)
    for pc in doc.get("producer_checked", []):
        print(f"  checked by the producer (not in the certificate's steps): {pc['eq']} {pc['claim']}", file=out)


def _ints(text: str) -> List[int]:
    from ..bounds.arch import BoundsInputError

    try:
        vals = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise BoundsInputError(f"--values must be comma-separated integers, got {text!r}") from None
    if not vals:
        raise BoundsInputError("--values is empty")
    return vals


def _seed(text) -> int:
    from ..bounds.arch import BoundsInputError

    try:
        return int(text)
    except ValueError:
        raise BoundsInputError(f"--seed must be an integer, got {text!r}") from None


def _run(args) -> int:
    from ..bounds.arch import BoundsInputError

    a = args.action
    if a == "minw":
        from ..bounds.arch import BoundsInputError
        from ..bounds.seq2seq import min_W_report

        n, N = _int("n", args.n), _int("N", args.N)
        if not args.no_sharp and (n * N).bit_length() > MAX_SHARP_BITS:
            raise BoundsInputError(f"nN is a {(n * N).bit_length()}-bit number: the sharp search over architectures "
                                   f"needs nN < 2^{MAX_SHARP_BITS} (≈ 10^421); use --no-sharp for (96) alone")
        rep = min_W_report(n, N, sharp=not args.no_sharp)
        code = _emit(args, [rep])
        if args.certificate:
            from ..bounds.certificates import minw_chain
            from ..bounds.sharp import Family, min_W_sharp

            sharp = None if args.no_sharp else min_W_sharp(n, N)
            _write_certificate(args, minw_chain(n, N, rep.results["min W (96)"], sharp, Family()).document(
                {"arguments": _command_line(args)}))
        return code
    if a == "chain":
        from ..bounds.seq2seq import chain

        if not args.arch:
            raise BoundsInputError("chain needs --arch d=…,m=…,s=…,H=…,q=…,L=…")
        cap = MAX_L_CERTIFICATE if args.certificate else MAX_L
        arch, n, N = _arch(args.arch, cap), _int("n", args.n), _int("N", args.N)
        _check_depth(arch, n, N, cap)
        code = _emit(args, [chain(arch, n, N, args.convention)])
        if args.certificate:
            from ..bounds.certificates import chain_chain

            _write_certificate(args, chain_chain(arch, n, N, args.convention).document(
                {"arguments": _command_line(args)}))
        return code
    if a == "next-token":
        from ..bounds.next_token import (algorithm_bound_report, min_W_next_token, next_token_chain, reduction_report,
                                 vacuity_steps)
        from ..arith.steps import Report

        N = _int("N", args.N)
        mw = min_W_next_token(N)
        r0 = Report(f"Theorem B.2 minimal W: N={N}", vacuity_steps(mw))
        r0.results.update({"min W, sign-count bound N ≤ (W + W²/8)·log2(48e·N) (derived)": mw.sign_count,
                           "min W, GJ algorithm bound N ≤ 12W² + 20W (restated)": mw.algorithm,
                           "minimal parameter count (the larger)": mw.best})
        reps = [r0]
        if args.arch:
            arch = _arch(args.arch, MAX_L_CERTIFICATE if args.certificate else MAX_L)
            _check_depth(arch, 1, N, MAX_L_CERTIFICATE if args.certificate else MAX_L)
            reps += [next_token_chain(arch, N, args.convention), algorithm_bound_report(arch, N)]
            if args.reduction:
                reps.append(reduction_report(arch, _int("n", args.n, 1000), min(N, 50), args.kind, _seed(args.seed)))
        elif args.reduction:
            raise BoundsInputError("--reduction needs --arch")
        code = _emit(args, reps)
        if args.certificate:
            from ..bounds.certificates import combine, next_token_arch_chain, next_token_min_chain

            doc = next_token_min_chain(N, mw.sign_count, mw.algorithm).document()
            if args.arch:
                doc = combine(doc["statement"]["text"] + "; and the chain for " + arch.label(),
                              [doc, next_token_arch_chain(arch, N, args.convention).document()])
            if args.reduction:
                doc.setdefault("producer_checked", []).extend(
                    {"eq": s.eq, "claim": s.claim, "note": s.status + (f"; repair: {s.repair}" if s.repair else "")}
                    for s in reps[-1].steps)
                from ..kernel.schema import canonical_hash

                doc["hash"] = canonical_hash(doc)
            doc["meta"] = {"arguments": _command_line(args)}
            _write_certificate(args, doc)
        return code
    if a == "bits":
        from ..bounds.bits import baseline_rows, bits_summary

        N, C = _int("N", args.N), _int("C", args.C)
        n = _int("n", args.n) if args.n is not None else None
        W = _int("W", args.W) if args.W is not None else None
        pts = N * n if n else N
        if W is not None and pts * (C - 1).bit_length() > MAX_LABEL_BITS:
            raise BoundsInputError(f"with --W, N·log2 C (nN·log2 C) must be at most {MAX_LABEL_BITS} bits (C^N is "
                                   "computed exactly); drop --W for the labelling bits alone")
        if args.compare and N > 10 ** 5:
            raise BoundsInputError("--compare builds the O(N) baselines: use N ≤ 10^5")
        reps = [bits_summary(N, C, n, W)]
        if args.compare:
            reps += [r["report"] for r in baseline_rows([N], C=C)]
        code = _emit(args, reps)
        if args.certificate:
            from ..bounds.bits import min_exactmem_bits, min_fixed_bits, min_total_bits
            from ..bounds.certificates import bits_chain, bits_only_chain

            label = f"nN = {pts} binary tokens (n = {n}, N = {N})" if n else f"N = {N} points"
            ch = (bits_chain(pts, C, W, min_fixed_bits(W, pts, C), min_exactmem_bits(W, pts, C),
                             min_total_bits(W, pts, C), label) if W is not None else bits_only_chain(pts, C, label))
            for r in reps[1:]:
                for s in r.steps:
                    ch.by_producer(s.eq, f"{r.title}: {s.claim}", "measured on a built baseline model")
            _write_certificate(args, ch.document({"arguments": _command_line(args)}))
        return code
    if a == "degrees":
        from ..bounds.symbolic import symbolic_report

        arch = _arch(args.arch)
        if arch.W("exact") > 80 or arch.L > 3 or arch.d > 80:
            raise BoundsInputError("degrees is for tiny architectures (exact W ≤ 80, L ≤ 3): sympy expands every "
                                   "polynomial")
        n, N = _int("n", args.n), _int("N", args.N)
        if n * N > 12:
            raise BoundsInputError("degrees is for tiny instances: use n·N ≤ 12")
        return _emit(args, [symbolic_report(arch, n, N, _seed(args.seed), convention=args.convention)])
    if a == "brute":
        from ..bounds.toy import brute_force_report

        arch = _arch(args.arch, 8)
        samples = None if args.exhaustive else _int("samples", args.samples, MAX_BRUTE)
        n, N = _int("n", args.n, 1000), _int("N", args.N, 1000)
        vals, W = _ints(args.values), arch.W("exact")
        points = samples if samples is not None else (len(vals) ** W if W * len(vals).bit_length() < 64 else 2 ** 64)
        if points * n * N * W > MAX_BRUTE:
            raise BoundsInputError(f"brute is for toy instances: (samples or grid points) × n·N × W = "
                                   f"{points} × {n * N} × {W} is above {MAX_BRUTE:,}"
                                   + (" (use --samples)" if samples is None else ""))
        return _emit(args, [brute_force_report(arch, n, N, vals, samples, _seed(args.seed))])
    if a == "run":
        return run_lower_bounds(args.file, args.size, args.only, args.certificate, as_json=args.json,
                                verbose=args.verbose)
    if a == "plot":
        from ..bounds.plot import make_plot, series_markdown

        if args.quick:
            S = make_plot(args.out, N_values=(10, 1000, 10 ** 5), nN_values=(8, 800, 80000), sharp_n=(1,))
        else:
            S = make_plot(args.out)
        if args.json:
            print(json.dumps(S, indent=1, ensure_ascii=False))
        else:
            print(series_markdown(S))
            print(f"\nwrote {args.out}")
        return EXIT_OK
    raise BoundsInputError(f"unknown bounds action {a!r}")


def run_lower_bounds(path: str, size: str = "small", only=None, certificate_dir=None, *, as_json: bool = False,
                     verbose: bool = False, quiet: bool = False, bounds=None, on_rows=None) -> int:
    """Run a lower-bound file (``bounds run FILE``, and ``certify FILE`` when FILE defines
    ``LOWER_BOUNDS``): one line per row on stderr (none with ``quiet``), the table (or JSON),
    the certificates in ``certificate_dir``; ``on_rows`` receives the rows; exit 0 when every row
    is checked, else 1."""
    from ..bounds.arch import BoundsInputError
    from ..bounds.protocol import format_rows
    from ..pipeline.loader import run_bounds_file

    def show(row):
        if not as_json and not quiet:
            print(f"  {row.theorem} [{row.instance}]: {'ok' if row.ok else 'FAILED'} ({row.seconds:.2f} s)",
                  file=sys.stderr)

    builders = None
    if certificate_dir:
        from ..bounds.dana.certificates import BUILDERS as builders
    rows = run_bounds_file(path, size, only, on_row=show, certificate_dir=certificate_dir, builders=builders,
                           bounds=bounds)
    if on_rows:
        on_rows(rows)
    if not rows:
        raise BoundsInputError(f"{path} has no instances for --size {size}"
                               + (f" matching --only {only!r}" if only else ""))
    if as_json:
        print(json.dumps([dict(theorem=r.theorem, instance=r.instance, ok=r.ok, report=r.report.as_dict())
                          for r in rows], indent=1, ensure_ascii=False, default=str))
    else:
        if verbose:
            print("\n\n".join(r.report.to_markdown(40) for r in rows) + "\n")
        print(format_rows(rows, certificates=bool(certificate_dir)))
        groups = {}
        for r in rows:
            for s in r.report.repaired:
                eqs = groups.setdefault(s.repair, [])
                if s.eq not in eqs:
                    eqs.append(s.eq)
        if groups:
            print("\nRepairs the written proofs need:\n" + "\n".join(f"* {', '.join(e)}: {t}"
                                                                     for t, e in groups.items()))
    return EXIT_OK if all(r.ok for r in rows) else EXIT_FAILED


def run(args) -> int:
    """Handler for ``python -m exactmem bounds``: bad input → one message, exit 3."""
    from ..bounds.arch import BoundsInputError
    from ..bounds.plot import PlotUnavailable
    from ..bounds.protocol import BoundsFileError

    try:
        return _run(args)
    except (BoundsInputError, BoundsFileError, PlotUnavailable) as e:
        if getattr(args, "debug", False):
            raise
        from ..errors import report_error

        return report_error(e)
