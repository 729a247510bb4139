"""Command line: ``python -m exactmem {certify,check,verify,inspect,bounds,sweep,report} ...`` (see ``docs/cli.md``).

Exit codes: 0 certified; 1 refuted (or a claim fails); 2 unknown; 3 bad input (a clear
message naming the problem, never a traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from ..errors import plural, report_error

EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a pipeline's reader leaving early
ENGINES = ("auto", "native", "flint", "limbs", "compress", "fraction")  # the producer's exact forward engines


def _engine_available(engine: str) -> Optional[str]:
    """None if ``--engine`` can run here, else what to do (``native`` needs numba)."""
    if engine != "native":
        return None
    from ..model.affine_stack import BACKENDS

    return None if "native" in BACKENDS else ("--engine native needs numba (pip install numba), or leave "
                                              "--engine auto, which falls back to limbs/flint")


def _cmd_certify(args) -> int:
    from ..pipeline.certify import certify_file, format_summary, format_table
    from ..proof import ProofFileError

    finished = []

    def show(row):
        finished.append(row)
        if row.verdict != "CERTIFIED":
            print(f"  {row.theorem} [{row.instance}]: {row.verdict}: {row.message}", file=sys.stderr)

    from ..data.dataset import DataError
    from ..distributed.cluster import ClusterError
    from ..model.forward import InputError
    from ..model.layers import ModelError
    from ..pipeline.loader import LowerBoundFile

    try:
        if args.workers < 1 or (args.chunk_size is not None and args.chunk_size < 0):
            raise ProofFileError("--workers must be at least 1 and --chunk-size at least 0")
        if why := _engine_available(args.engine):
            raise ProofFileError(why)
        rows = certify_file(args.proof, out_dir=args.out, seed=args.seed, size=args.size, gzip_output=args.gzip,
                            backend=args.engine, quiet=args.quiet, only=args.only, on_row=show,
                            checker=args.checker, chunk_examples=args.chunk_size, workers=args.workers,
                            scheduler=args.scheduler, debug=args.debug)
    except LowerBoundFile as lb:  # a file of LOWER_BOUNDS: the lower-bound runner, same options
        return _certify_lower_bounds(args, lb.bounds)
    except (ProofFileError, DataError, ModelError, InputError, ClusterError) as e:
        if args.debug:
            raise
        return report_error(e)
    except KeyboardInterrupt:  # Ctrl-C: the rows already finished, then exit 130
        if finished and not args.json:
            print((format_table if args.markdown else format_summary)(finished))
            print(f"\ncertificates of these rows in {args.out}/")
        print(f"interrupted after {plural(len(finished), 'finished instance')}"
              + (" (their table is above)" if finished and not args.json else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    if not rows:
        return report_error(f"{args.proof} has no instances for --size {args.size}"
                            + (f" matching --only {args.only!r}" if args.only else "")
                            + " (`--size small|medium|large|xlarge|xxlarge`; `--only` matches theorem or instance names)")
    if args.json:
        print(json.dumps([r.__dict__ for r in rows], indent=1, default=str))
    else:
        print((format_table if args.markdown else format_summary)(rows))
        from ..pipeline.certify import resolve_checker

        chk = resolve_checker(args.checker, args.size)
        how = f"{chk} checker"
        if args.workers > 1 or args.scheduler:
            how += f", sharded on {args.scheduler or f'{args.workers} Dask workers'}"
        print(f"\ncertificates in {args.out}/  (seed {args.seed}, size {args.size}, {how})")
    statuses = {r.verdict for r in rows}
    if statuses == {"CERTIFIED"}:
        return EXIT_OK
    if "REFUTED" in statuses:
        return EXIT_REFUTED
    if "ERROR" in statuses or "MALFORMED" in statuses:  # an instance that could not be built or checked
        return EXIT_BAD_INPUT
    return EXIT_UNKNOWN


LOWER_BOUND_SIZES = ("small", "medium", "large")


def _certify_lower_bounds(args, bounds) -> int:
    """``certify FILE`` for a file that defines ``LOWER_BOUNDS`` (``docs/proof-files.md``): the
    runner of ``bounds run`` with certify's options — ``--size``, ``--only``, ``--out`` (the
    lower-bound certificates it can write, for ``check``), ``--quiet``, ``--json``; exit 0 when every
    row is checked, 1 if one fails, 3 for bad input."""
    from ..bounds.arch import BoundsInputError
    from ..bounds.protocol import BoundsFileError
    from .bounds import run_lower_bounds

    unused = [opt for opt, given in (("--gzip", args.gzip), ("--engine", args.engine != "auto"),
                                     ("--checker", args.checker != "auto"), ("--workers", args.workers != 1),
                                     ("--scheduler", args.scheduler), ("--chunk-size", args.chunk_size is not None),
                                     ("--markdown", args.markdown)) if given]
    try:
        if unused:
            raise BoundsInputError(f"{args.proof} is a lower-bound file: {', '.join(unused)} "
                                   f"{'does' if len(unused) == 1 else 'do'} not apply (its options: --size, --only, "
                                   f"--out, --quiet, --json)")
        if args.size not in LOWER_BOUND_SIZES:
            raise BoundsInputError(f"{args.proof} is a lower-bound file: --size {args.size} is not one of its sizes "
                                   f"({', '.join(LOWER_BOUND_SIZES)})")
        rows = []
        code = run_lower_bounds(args.proof, args.size, args.only, args.out, as_json=args.json, quiet=args.quiet,
                                bounds=bounds, on_rows=rows.extend)
    except (BoundsInputError, BoundsFileError) as e:
        if args.debug:
            raise
        return report_error(e)
    if not args.json:
        written = sum(1 for r in rows if r.certificate)
        if written:
            print(f"\n{plural(written, 'lower-bound certificate')} in {args.out}/ (size {args.size}; the rows "
                  f"'checked by the producer' have none); check one: python -m exactmem check FILE")
        else:
            print(f"\nno certificates: every row is checked by the producer (size {args.size}; these lower bounds "
                  f"have no certificate form)")
    return code


def _cmd_check(args) -> int:
    from .check import main as check_main

    return check_main(["check", *args.argv_rest])  # the leading word: `check check` checks a file named "check"


def _cmd_verify(args) -> int:
    """``verify MODEL.onnx --data DATA.npz``: exit 0 when the certificate was written (whatever the
    counts), 3 for bad input (one line; ``--debug`` shows the traceback)."""
    from ..verify.run import VerifyInputError, verify

    try:
        res = verify(args.model, data=args.data, position=args.position, decode=args.decode, out=args.out,
                     workers=args.workers, quiet=args.quiet or args.json, max_precision=args.max_precision,
                     measure=args.measure, source_bits=args.source_bits, engine=args.engine,
                     scheduler=args.scheduler)
    except (VerifyInputError, OSError) as e:
        if args.debug:
            raise
        return report_error(e)
    if args.json:
        print(json.dumps(res.to_json()))
        return EXIT_OK
    if res.differences:
        print("row  certified  float argmax = label  bits  margin (label score - nearest other)")
        for d in res.differences[:50]:
            f = "n/a" if d["float_argmax_is_label"] is None else ("yes" if d["float_argmax_is_label"] else "no")
            print(f"{d['row']:>4}  {d['verdict']:<9}  {f:<20}  {d['bits']:>4}  {d['margin']}")
        if len(res.differences) > 50:
            print(f"... {len(res.differences) - 50} more (see --json)")
    print(res.summary())
    if res.memorized is not None:
        from ..verify.codelength import memorized_text

        print(memorized_text(res.memorized))
    print(f"certificate: {res.certificate}  (check it: python -m exactmem check {res.certificate})")
    return EXIT_OK


def _cmd_inspect(args) -> int:
    if args.html:  # one self-contained page: layers, bits plot, claims, per-example verdicts (inspect_html.py)
        from ..inspector.html import InspectError, write_html

        try:
            out, verdict = write_html(args.cert, args.html)
        except (InspectError, OSError) as e:
            if args.debug:
                raise
            return report_error(e)
        print(f"wrote {out} ({verdict})")
        return EXIT_OK
    import os

    from ..kernel.checker import MalformedCertificate, load_certificate
    from ..model.serialize import model_from_json
    from ..model.summary import summarize

    if os.path.isdir(args.cert):  # the same words as `check` (one clause, no "cannot read … cannot read")
        return report_error(f"{args.cert} is a directory, not a certificate file (give a .json or .json.gz file)")
    if not os.path.exists(args.cert):
        return report_error(f"no such certificate file: {args.cert}")
    try:
        doc = load_certificate(args.cert)
    except (MalformedCertificate, OSError) as e:  # the kernel's message names the file already
        if args.debug:
            raise
        return report_error(f"malformed certificate: {e}" if isinstance(e, MalformedCertificate) else e)
    if isinstance(doc.get("model"), dict) and "graph" in doc["model"]:  # a trained network (exactmem verify)
        from ..inspector.graph_text import graph_summary

        try:
            print(graph_summary(doc))
        except MalformedCertificate as e:
            if args.debug:
                raise
            return report_error(f"malformed certificate: {e}")
        return EXIT_OK
    try:
        model = model_from_json(doc["model"])
    except (MalformedCertificate, KeyError, ValueError, TypeError) as e:
        if args.debug:
            raise
        return report_error(f"cannot read a model from {args.cert}: {e}")
    print(summarize(model))
    return EXIT_OK


def _cmd_bounds(args) -> int:
    from .bounds import run

    return run(args)


def _cmd_sweep(args) -> int:
    import os
    import shlex

    if str(args.proof).lower().endswith(".onnx"):  # a trained network: bits per weight (docs/verify.md)
        from ..verify.bits_report import cli as bits_cli

        return bits_cli(args)

    from ..data.dataset import DataError
    from ..distributed.cluster import ClusterError
    from ..model.forward import InputError
    from ..model.layers import ModelError
    from ..proof import ProofFileError
    from ..sweep.report import COMMANDS_FILE, markdown_table, rows
    from ..sweep import SweepError, SweepSpec, parse_param, parse_values, run_sweep, sweep_document

    out = args.out or os.path.join("sweeps", os.path.splitext(os.path.basename(args.proof))[0])
    try:
        def ints(text, what):
            v = parse_values(text)
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                raise SweepError(f"{what} takes integers: {text!r}")
            return v

        spec = SweepSpec(
            proof=args.proof, theorems=args.theorem or (), only=args.only, instances=args.instance or (),
            size=args.size, params=[parse_param(p) for p in args.param or ()], unset=args.unset or (),
            seeds=ints(args.seeds, "--seeds"), models=[m.strip() for m in args.models.split(",") if m.strip()],
            formats=[f.strip() for f in args.formats.split(",") if f.strip()], arith_min=args.arith_min,
            neighbours=args.neighbours, max_bits=args.max_bits, bits=ints(args.bits, "--bits") if args.bits else (),
            certify=args.certify, engine=args.engine, float_engine=args.float_engine, prec=args.prec)
        if args.workers < 1:
            raise SweepError("--workers must be at least 1")
        if why := _engine_available(args.engine):
            raise SweepError(why)
        os.makedirs(out, exist_ok=True)
        line = "python -m exactmem sweep " + " ".join(shlex.quote(a) for a in args.argv_rest)
        path = os.path.join(out, COMMANDS_FILE)
        known = open(path, encoding="utf-8").read().splitlines() if os.path.exists(path) else []
        if line not in known:
            with open(path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        run = run_sweep(spec, out, workers=args.workers, quiet=args.quiet, verbose=args.verbose, fresh=args.fresh,
                        scheduler=args.scheduler)
    except (SweepError, ProofFileError, DataError, ModelError, InputError, OSError, ClusterError) as e:
        if args.debug:
            raise
        return report_error(e)
    doc = sweep_document(run.records)
    if args.json:
        print(json.dumps(doc, indent=1, sort_keys=True))
    else:
        if run.records:
            print(markdown_table(rows(doc)))
        print(f"\n{len(run.records)} points in {out}/ ({run.ran} run, {run.skipped} already there; "
              f"{run.seconds:.1f} s); tables: {out}/sweep.csv, sweep.md, sweep.tex; "
              f"`python -m exactmem report {out}` for the plots and the report page")
    if run.errors:
        return report_error(f"{plural(len(run.errors), 'point')} failed to build or run (listed above); "
                            f"{'it is' if len(run.errors) == 1 else 'they are'} not recorded and will be retried "
                            f"by the same command")
    return EXIT_OK


def _cmd_report(args) -> int:
    import shlex

    from ..sweep.report import load_sweep, merge, write_report, write_tables

    try:
        line = "python -m exactmem report " + " ".join(shlex.quote(a) for a in args.argv_rest)
        res = write_report(args.sweeps, args.out, img_dir=args.img_dir, prefix=args.prefix, plots=not args.no_plots,
                           title=args.title, report_command=line)
        if args.tables:
            write_tables(merge([load_sweep(p) for p in args.sweeps]), args.tables)
    except (OSError, ValueError, KeyError) as e:
        if args.debug:
            raise
        return report_error(e)
    if res["skipped"]:
        print(f"note: {res['skipped']}", file=sys.stderr)
    print(f"wrote {res['out']} ({res['rows']} rows, {len(res['plots'])} plots)")
    for p in res["plots"]:
        print(f"  {p}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from .check import add_arguments as add_check_arguments
    from .check import add_cluster_arguments

    p = argparse.ArgumentParser(prog="exactmem", description="Exact proof checker for Transformer memorization constructions.")
    p.add_argument("--version", action="version", version=f"exactmem {version()}",
                   help="print the version of exactmem and exit")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("certify", help="build and certify every theorem instance of a proof file")
    c.add_argument("proof", help="proof file, e.g. proofs/relu_interpolation.py")
    c.add_argument("--out", default="certificates", help="directory for certificates (default: certificates)")
    c.add_argument("--seed", type=int, default=0, help="seed for data and random choices (default 0)")
    c.add_argument("--size", choices=("small", "medium", "large", "xlarge", "xxlarge"), default="small",
                   help="which instances to run (xlarge: Kajitsuka next-token at N = 100,000; xxlarge: at N = 1,000,000)")
    c.add_argument("--only", default=None,
                   help="run only the instances whose theorem or instance name contains this text, "
                        "or exactly THEOREM/INSTANCE")
    c.add_argument("--gzip", action="store_true", help="write gzip-compressed certificates (.json.gz)")
    c.add_argument("--engine", default="auto", choices=ENGINES,
                   help="exact engine for the producer's forward pass (auto: the instance's preference, else "
                        "limbs/flint; the checker is always independent)")
    c.add_argument("--checker", default="auto", choices=("auto", "pure", "fast"),
                   help="independent checker: pure (int/Fraction, one example at a time) or fast (batched exact "
                        "path, same verdicts); auto = pure for --size small, fast for medium and large")
    add_cluster_arguments(c)
    c.add_argument("--chunk-size", type=int, default=None, metavar="K",
                   help="write certificates with more than K examples as version-2 chunk files of K examples "
                        "(default: chunks of 12,500 above 50,000 examples; 0: never)")
    c.add_argument("--json", action="store_true", help="print the summary as JSON")
    c.add_argument("--markdown", action="store_true",
                   help="print the full Markdown table (width, total bits, hypotheses) instead of the "
                        "80-column summary")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.add_argument("--debug", action="store_true", help="show Python tracebacks for bad input")
    c.set_defaults(fn=_cmd_certify)

    k = sub.add_parser("check", help="independently re-check a certificate file, within the verifier's limits")
    add_check_arguments(k)
    k.set_defaults(fn=_cmd_check)

    v = sub.add_parser("verify", help="certify which examples a trained ONNX network memorizes (docs/verify.md)")
    v.add_argument("model", help="ONNX file (e.g. written by torch.onnx.export)")
    v.add_argument("--data", required=True, help=".npz with inputs (N x n token ids or N x n x d floats) and labels")
    v.add_argument("--position", default="last", metavar="last|all|K",
                   help="read the last position's scores (labels N), every position's (labels N x n), or "
                        "position K's (an index, negative from the end; labels N)")
    v.add_argument("--decode", choices=("argmax",), default="argmax", help="how scores become a class (argmax)")
    v.add_argument("--out", default="certificates", help="directory for the certificate (default: certificates)")
    v.add_argument("--workers", type=int, default=1, help="evaluate examples in N processes (default 1)")
    v.add_argument("--max-precision", type=int, default=4096, help="top of the ball precision ladder in bits")
    v.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="a Dask scheduler (tcp://host:8786): the fast engine's batches run on its workers")
    v.add_argument("--engine", choices=("auto", "arb"), default="auto",
                   help="auto: the fast graph engine's enclosures first, the arb ladder for what they leave "
                        "undecided; arb: the arb ladder for every example")
    v.add_argument("--measure", choices=("bits",), default=None,
                   help="also certify the model's code length for the labels and the bits it memorized "
                        "(docs/capacity.md)")
    v.add_argument("--source-bits", default=None, metavar="BITS",
                   help="with --measure bits: the labels' entropy in bits (default: predictions x log2 classes)")
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.add_argument("--quiet", action="store_true", help="no progress on stderr")
    v.add_argument("--debug", action="store_true", help="show Python tracebacks for bad input")
    v.set_defaults(fn=_cmd_verify)

    i = sub.add_parser("inspect", help="print a summary of the model in a certificate")
    i.add_argument("cert", help="certificate file (.json or .json.gz)")
    i.add_argument("--html", metavar="OUT.html", default=None,
                   help="write one self-contained HTML page instead (checks the certificate; docs/cli.md)")
    i.add_argument("--debug", action="store_true", help="show Python tracebacks for bad input")
    i.set_defaults(fn=_cmd_inspect)

    w = sub.add_parser("sweep", help="bit-precision sweep over the theorems of a proof file (docs/precision.md)")
    w.add_argument("proof", help="proof file, e.g. proofs/vardi.py; or MODEL.onnx with --data: bits per weight of "
                                 "a trained network (docs/verify.md)")
    w.add_argument("--theorem", action="append", help="theorem name (repeatable; default: all)")
    w.add_argument("--only", default=None, help="only theorems whose name contains this text")
    w.add_argument("--instance", action="append", help="base instance name (repeatable; any size)")
    w.add_argument("--size", choices=("small", "medium", "large", "xlarge", "xxlarge"), default="small",
                   help="instances of this size when --instance is not given (with --param: the first one)")
    w.add_argument("--param", action="append", metavar="KEY=V1,V2",
                   help="override a parameter with a list of values (a:b and a:b:step ranges, 1e4, 2^10); "
                        "several --param form a grid")
    w.add_argument("--unset", action="append", metavar="KEY", help="drop a parameter of the base instance")
    w.add_argument("--seeds", default="0", help="seeds, e.g. 0,1,2 or 0:4 (default 0)")
    w.add_argument("--models", default="float,fixed,arith",
                   help="precision models: float (b significant bits), fixed (b fractional bits), arith "
                        "(floating-point evaluation); default all three")
    w.add_argument("--formats", default="bfloat16,float16,float32,float64",
                   help="formats of the arith model (also mpfrB: B-bit significand, unbounded exponent)")
    w.add_argument("--arith-min", action="store_true",
                   help="also search the smallest significand width (unbounded exponent, MPFR) that memorizes")
    w.add_argument("--neighbours", type=int, default=2, help="b values checked on each side of a minimum (default 2)")
    w.add_argument("--max-bits", type=int, default=4096, help="largest b tried when no b is known to work")
    w.add_argument("--bits", default=None, help="also evaluate these b exactly (e.g. 8,16,32)")
    w.add_argument("--certify", action="store_true",
                   help="write the quantized network at the minimal b and at b-1 as certificates and check them")
    w.add_argument("--engine", default="auto", choices=ENGINES,
                   help="exact engine (auto: the instance's preference)")
    w.add_argument("--float-engine", default="auto", choices=("auto", "numpy", "mpfr"),
                   help="floating-point engine (auto: numpy for named formats without softmax, else mpfr)")
    w.add_argument("--prec", type=int, default=128, help="starting ball precision after a softmax layer")
    w.add_argument("--workers", type=int, default=1,
                   help="run the points as tasks on an embedded Dask cluster of N worker processes (default 1)")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the points on an existing Dask scheduler (tcp://host:8786)")
    w.add_argument("--out", default=None, help="output directory (default sweeps/<proof name>)")
    w.add_argument("--fresh", action="store_true", help="recompute points already in the output directory")
    w.add_argument("--json", action="store_true", help="print the sweep document as JSON")
    w.add_argument("--quiet", action="store_true", help="no progress on stderr")
    w.add_argument("--verbose", action="store_true", help="one progress line per evaluation")
    w.add_argument("--debug", action="store_true", help="show Python tracebacks for bad input")
    w.add_argument("--data", default=None, help="MODEL.onnx only: .npz with inputs and labels (as for verify)")
    w.add_argument("--position", default="last", metavar="last|all|K", help="MODEL.onnx only: as for verify")
    w.add_argument("--max-precision", type=int, default=4096, help="MODEL.onnx only: top of the ball precision ladder")
    w.add_argument("--no-check", action="store_true",
                   help="MODEL.onnx only: write the certificates at b* and b*-1 without running the kernel on them")
    w.set_defaults(fn=_cmd_sweep)

    r = sub.add_parser("report", help="Markdown report with plots from sweep directories")
    r.add_argument("sweeps", nargs="+", help="sweep directories (or sweep.json files)")
    r.add_argument("--out", default="precision.md", help="the Markdown page (default precision.md)")
    r.add_argument("--img-dir", default=None, help="where the PNG plots go (default: img/ next to --out)")
    r.add_argument("--prefix", default="precision_", help="file name prefix of the plots (default precision_)")
    r.add_argument("--no-plots", action="store_true", help="tables only (no matplotlib needed)")
    r.add_argument("--title", default=None, help="page title")
    r.add_argument("--tables", default=None, metavar="DIR", help="also write the merged CSV/Markdown/LaTeX tables here")
    r.add_argument("--debug", action="store_true", help="show Python tracebacks")
    r.set_defaults(fn=_cmd_report)

    from .bounds import add_parser as add_bounds_parser

    add_bounds_parser(sub)
    sub.choices["bounds"].set_defaults(fn=_cmd_bounds)

    from ..export import add_parser as add_export_parser

    add_export_parser(sub)

    from ..experiments.cli import add_parser as add_experiment_parser

    add_experiment_parser(sub)
    _usage_errors_exit_3(p)
    return p


def version() -> str:
    """The installed distribution's version, else ``exactmem.__version__`` (a source tree on the path)."""
    try:
        from importlib.metadata import PackageNotFoundError, version as dist_version

        return dist_version("exactmem")
    except (ImportError, PackageNotFoundError):
        from ..version import __version__

        return __version__


class UsageError(Exception):
    """A command line argparse rejects: printed as one line ``exactmem: error: ...``, exit 3."""


def _short_usage(parser: argparse.ArgumentParser) -> str:
    words = [parser.prog, "[options]"]
    for a in parser._actions:
        if a.option_strings or a.help == argparse.SUPPRESS:
            continue
        name = a.metavar or (a.dest.upper() if not a.choices else "{" + ",".join(a.choices) + "}")
        words.append(f"[{name}]" if a.nargs == "?" else f"{name} ..." if a.nargs == argparse.PARSER else name)
    return " ".join(words)


def _usage_errors_exit_3(parser: argparse.ArgumentParser) -> None:
    """Every parser of the tree reports a usage error as one line naming the command and the
    option, with its usage and where the help is, exit 3: argparse's own exit 2 means UNKNOWN
    here. Extra arguments are reported by the subcommand they follow (its usage, not the top's)."""

    def error(message, parser=parser):
        cmd = parser.prog[len("exactmem "):] if parser.prog.startswith("exactmem ") else ""
        raise UsageError(f"{cmd + ': ' if cmd else ''}{' '.join(str(message).split())}; "
                         f"usage: {_short_usage(parser)} (see `{parser.prog} --help`)")

    known = parser.parse_known_args

    def parse_known_args(args=None, namespace=None, parser=parser, known=known):
        ns, extras = known(args, namespace)
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras

    parser.error = error
    parser.parse_known_args = parse_known_args
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _usage_errors_exit_3(child)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except UsageError as e:
            return report_error(e)
        except SystemExit as e:  # --help, --version: printed, exit 0
            return e.code if isinstance(e.code, int) else EXIT_BAD_INPUT
        args.argv_rest = argv[1:]  # for the commands recorded by sweep/report
        code = args.fn(args)
        sys.stdout.flush()  # here, so that a reader leaving early is caught below, not at interpreter exit
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `exactmem certify ... | head`: the reader left; no traceback at exit either
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
