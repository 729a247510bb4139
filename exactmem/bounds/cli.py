"""``python -m exactmem bounds ...``: the lower-bound checker from the command line.

Actions (``docs/cli.md``, ``docs/lower-bounds.md``):

    bounds minw --n 8 --N 1000 [--no-sharp]        smallest W allowed by Thm 4.3 (and by (90))
    bounds chain --n 8 --N 1000 --arch d=1,m=2,s=1,H=1,q=4,L=3 [--convention paper|exact] [--all-steps]
    bounds next-token --N 10000 [--arch ...] [--reduction --n 4 --kind hardmax|uniform|softmax]
    bounds bits --N 1000 [--C 2] [--n 8] [--W 60] [--compare]
    bounds degrees [--arch ...] [--n 2] [--N 1]
    bounds brute [--arch ...] [--n 2] [--N 2] [--values -1,0,1] [--samples 4000 | --exhaustive]
    bounds run [proofs/lower_bounds.py] [--size small|medium|large] [--only TEXT]
    bounds plot [--out docs/lower-bounds.png] [--quick]

Exit codes: 0 every checked step holds (or fails with a documented repair); 1 a step
fails; 2 undecided at the maximum precision; 3 bad input (one message, no traceback).
"""

from __future__ import annotations

import json
import sys
from typing import List

EXIT_OK, EXIT_FAILED, EXIT_UNDECIDED, EXIT_BAD_INPUT = 0, 1, 2, 3
DEFAULT_FILE = "lower_bounds"  # the packaged exactmem/proofs/lower_bounds.py, from any directory
DEFAULT_ARCH = "d=1,m=1,s=1,H=1,q=1,L=2"


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
                        "N ≤ 10^15)")

    p = acts.add_parser("chain", help="every step of Thm B.3's chain for one architecture and (n, N)")
    common(p, None, "8", "1000")
    p.add_argument("--convention", default="paper", help="parameter count: paper (eq. (92)) or exact")
    p.add_argument("--all-steps", action="store_true", help="do not elide the middle of long tables")

    p = acts.add_parser("next-token", help="Thm 4.2: explicit bounds and the repeated-token reduction")
    common(p, None, "4", "10000")
    p.add_argument("--convention", default="paper", help="parameter count: paper or exact")
    p.add_argument("--reduction", action="store_true", help="check the reduction (64)–(65) on a random instance")
    p.add_argument("--kind", default="hardmax", help="attention kind for --reduction: hardmax, uniform, softmax")
    p.add_argument("--seed", default="0", help="seed for --reduction (default 0)")

    p = acts.add_parser("bits", help="bit lower bounds N·log2 C (nN for seq-to-seq)")
    common(p, False, None, "1000")
    p.add_argument("--n", default=None, help="sequence length (seq-to-seq: nN labelled tokens)")
    p.add_argument("--C", default="2", help="number of classes (default 2)")
    p.add_argument("--W", default=None, help="parameter count: also print the minimal bits per weight")
    p.add_argument("--compare", action="store_true", help="build the O(N) baselines and compare their bits")

    p = acts.add_parser("degrees", help="degree/count bookkeeping checked with sympy polynomials")
    common(p, DEFAULT_ARCH, "2", "1")
    p.add_argument("--convention", default="paper", help="parameter count: paper or exact")
    p.add_argument("--seed", default="0", help="seed of the cell point θ0")

    p = acts.add_parser("brute", help="brute-force output sign patterns of a toy hardmax Transformer")
    common(p, "d=1,m=1,s=1,H=1,q=1,L=1", "2", "2")
    p.add_argument("--values", default="-1,0,1", help="parameter values (default -1,0,1)")
    p.add_argument("--samples", default="4000", help="number of seeded samples (default 4000)")
    p.add_argument("--exhaustive", action="store_true", help="enumerate the whole grid instead of sampling")
    p.add_argument("--seed", default="0")

    p = acts.add_parser("run", help="run a lower-bound file (default: the packaged lower_bounds, also proofs/lower_bounds.py)")
    p.add_argument("file", nargs="?", default=DEFAULT_FILE)
    p.add_argument("--size", default="small", help="small | medium | large")
    p.add_argument("--only", default=None, help="only theorems whose name contains this text")
    p.add_argument("--json", action="store_true")
    p.add_argument("--verbose", action="store_true", help="print every report")
    p.add_argument("--debug", action="store_true")

    p = acts.add_parser("plot", help="PNG of the lower bounds vs the O(N) baseline (needs matplotlib)")
    p.add_argument("--out", default="docs/lower-bounds.png")
    p.add_argument("--quick", action="store_true", help="fewer points (about 2 s instead of about 10 s; the full plot "
                                                          "goes to N = 10^12)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--debug", action="store_true")
    for parser in [b] + list(acts.choices.values()):
        _exit_3_on_usage_errors(parser)
    b.set_defaults(fn=run)


def _exit_3_on_usage_errors(parser) -> None:
    """Usage errors (missing action, unknown option) are bad input: one message, exit 3
    (argparse's default is exit 2, which exactmem reserves for "undecided")."""

    def error(message, parser=parser):
        parser.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)

    parser.error = error
    known = parser.parse_known_args

    def parse_known_args(args=None, namespace=None, parser=parser, known=known):
        ns, extras = known(args, namespace)
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras

    parser.parse_known_args = parse_known_args


def _emit(args, reports) -> int:
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=1, ensure_ascii=False, default=str))
    else:
        print("\n\n".join(r.to_markdown(None if getattr(args, "all_steps", False) else 40) for r in reports))
    if any(s.status == "undecided" for r in reports for s in r.steps):
        return EXIT_UNDECIDED
    return EXIT_OK if all(r.ok for r in reports) else EXIT_FAILED


def _int(name, v):
    from .arch import parse_count

    return parse_count(name, v)


def _arch(text):
    from .arch import parse_architecture

    return parse_architecture(text)


def _ints(text: str) -> List[int]:
    from .arch import BoundsInputError

    try:
        vals = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise BoundsInputError(f"--values must be comma-separated integers, got {text!r}") from None
    if not vals:
        raise BoundsInputError("--values is empty")
    return vals


def _seed(text) -> int:
    from .arch import BoundsInputError

    try:
        return int(text)
    except ValueError:
        raise BoundsInputError(f"--seed must be an integer, got {text!r}") from None


def _run(args) -> int:
    from .arch import BoundsInputError

    a = args.action
    if a == "minw":
        from .seq2seq import min_W_report

        return _emit(args, [min_W_report(_int("n", args.n), _int("N", args.N), sharp=not args.no_sharp)])
    if a == "chain":
        from .seq2seq import chain

        if not args.arch:
            raise BoundsInputError("chain needs --arch d=…,m=…,s=…,H=…,q=…,L=…")
        return _emit(args, [chain(_arch(args.arch), _int("n", args.n), _int("N", args.N), args.convention)])
    if a == "next-token":
        from .next_token import (algorithm_bound_report, min_W_next_token, next_token_chain, reduction_report,
                                 vacuity_steps)
        from .report import Report

        N = _int("N", args.N)
        mw = min_W_next_token(N)
        r0 = Report(f"Theorem B.2 minimal W: N={N}", vacuity_steps(mw))
        r0.results.update({"min W, sign-count bound N ≤ (W + W²/8)·log2(48e·N) (derived)": mw.sign_count,
                           "min W, GJ algorithm bound N ≤ 12W² + 20W (restated)": mw.algorithm,
                           "minimal parameter count (the larger)": mw.best})
        reps = [r0]
        if args.arch:
            arch = _arch(args.arch)
            reps += [next_token_chain(arch, N, args.convention), algorithm_bound_report(arch, N)]
            if args.reduction:
                reps.append(reduction_report(arch, _int("n", args.n), min(N, 50), args.kind, _seed(args.seed)))
        elif args.reduction:
            raise BoundsInputError("--reduction needs --arch")
        return _emit(args, reps)
    if a == "bits":
        from .bits import baseline_rows, bits_summary

        N, C = _int("N", args.N), _int("C", args.C)
        n = _int("n", args.n) if args.n is not None else None
        W = _int("W", args.W) if args.W is not None else None
        reps = [bits_summary(N, C, n, W)]
        if args.compare:
            reps += [r["report"] for r in baseline_rows([N], C=C)]
        return _emit(args, reps)
    if a == "degrees":
        from .symbolic import symbolic_report

        arch = _arch(args.arch)
        if arch.W("exact") > 80 or arch.L > 3:
            raise BoundsInputError("degrees is for tiny architectures (exact W ≤ 80, L ≤ 3): sympy expands every "
                                   "polynomial")
        n, N = _int("n", args.n), _int("N", args.N)
        if n * N > 12:
            raise BoundsInputError("degrees is for tiny instances: use n·N ≤ 12")
        return _emit(args, [symbolic_report(arch, n, N, _seed(args.seed), convention=args.convention)])
    if a == "brute":
        from .toy import brute_force_report

        arch = _arch(args.arch)
        samples = None if args.exhaustive else _int("samples", args.samples)
        return _emit(args, [brute_force_report(arch, _int("n", args.n), _int("N", args.N), _ints(args.values),
                                               samples, _seed(args.seed))])
    if a == "run":
        from .protocol import format_rows, run_bounds_file

        def show(row):
            if not args.json:
                print(f"  {row.theorem} [{row.instance}]: {'ok' if row.ok else 'FAILED'} ({row.seconds:.2f} s)",
                      file=sys.stderr)

        rows = run_bounds_file(args.file, args.size, args.only, on_row=show)
        if not rows:
            raise BoundsInputError(f"{args.file} has no instances for --size {args.size}"
                                   + (f" matching --only {args.only!r}" if args.only else ""))
        if args.json:
            print(json.dumps([dict(theorem=r.theorem, instance=r.instance, ok=r.ok, report=r.report.as_dict())
                              for r in rows], indent=1, ensure_ascii=False, default=str))
        else:
            if args.verbose:
                print("\n\n".join(r.report.to_markdown(40) for r in rows) + "\n")
            print(format_rows(rows))
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
    if a == "plot":
        from .plot import make_plot, series_markdown

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


def run(args) -> int:
    """Handler for ``python -m exactmem bounds``: bad input → one message, exit 3."""
    from .arch import BoundsInputError
    from .plot import PlotUnavailable
    from .protocol import BoundsFileError

    try:
        return _run(args)
    except (BoundsInputError, BoundsFileError, PlotUnavailable) as e:
        if getattr(args, "debug", False):
            raise
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
