"""Command line: ``python -m exactmem {certify,check,inspect,bounds} ...`` (see ``docs/cli.md``).

Exit codes: 0 certified; 1 refuted (or a claim fails); 2 unknown; 3 bad input (a clear
message naming the problem, never a traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def _cmd_certify(args) -> int:
    from .certify import certify_file, format_table
    from .proof import ProofFileError

    def show(row):
        if row.verdict != "CERTIFIED":
            print(f"  {row.theorem} [{row.instance}]: {row.verdict}: {row.message}", file=sys.stderr)

    from .data.dataset import DataError
    from .model.forward import InputError
    from .model.layers import ModelError

    try:
        rows = certify_file(args.proof, out_dir=args.out, seed=args.seed, size=args.size, gzip_output=args.gzip,
                            backend=args.engine, quiet=args.quiet, only=args.only, on_row=show,
                            checker=args.checker)
    except (ProofFileError, DataError, ModelError, InputError) as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not rows:
        print(f"error: {args.proof} has no instances for --size {args.size}"
              + (f" matching --only {args.only!r}" if args.only else ""), file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps([r.__dict__ for r in rows], indent=1, default=str))
    else:
        print(format_table(rows))
        from .certify import resolve_checker

        chk = resolve_checker(args.checker, args.size)
        how = f"{chk} checker" + (f" (--checker auto for --size {args.size})" if args.checker == "auto" else "")
        print(f"\ncertificates in {args.out}/  (seed {args.seed}, size {args.size}, {how})")
    statuses = {r.verdict for r in rows}
    if statuses == {"CERTIFIED"}:
        return EXIT_OK
    if "REFUTED" in statuses:
        return EXIT_REFUTED
    return EXIT_UNKNOWN


def _cmd_check(args) -> int:
    from .certificate.checker import main as check_main

    argv = [args.cert] + (["--json"] if args.json else []) + ["--engine", args.engine]
    if args.max_precision is not None:
        argv += ["--max-precision", str(args.max_precision)]
    return check_main(argv)


def _cmd_inspect(args) -> int:
    from .certificate.checker import MalformedCertificate, load_certificate
    from .model.serialize import model_from_json
    from .model.summary import summarize

    try:
        doc = load_certificate(args.cert)
        model = model_from_json(doc["model"])
    except (MalformedCertificate, KeyError, ValueError, TypeError) as e:
        print(f"error: cannot read model from {args.cert}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(summarize(model))
    return EXIT_OK


def _cmd_bounds(args) -> int:
    from .bounds.cli import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="exactmem", description="Exact proof checker for Transformer memorization constructions.")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("certify", help="build and certify every theorem instance of a proof file")
    c.add_argument("proof", help="proof file, e.g. proofs/relu_interpolation.py")
    c.add_argument("--out", default="certificates", help="directory for certificates (default: certificates)")
    c.add_argument("--seed", type=int, default=0, help="seed for data and random choices (default 0)")
    c.add_argument("--size", choices=("small", "medium", "large"), default="small", help="which instances to run")
    c.add_argument("--only", default=None, help="run only theorems whose name contains this text")
    c.add_argument("--gzip", action="store_true", help="write gzip-compressed certificates (.json.gz)")
    c.add_argument("--engine", default="auto", choices=("auto", "flint", "limbs", "compress", "fraction"),
                   help="exact engine for the producer's forward pass (auto: the instance's preference, else "
                        "limbs/flint; the checker is always independent)")
    c.add_argument("--checker", default="auto", choices=("auto", "pure", "fast"),
                   help="independent checker: pure (int/Fraction, one example at a time) or fast (batched exact "
                        "path, same verdicts); auto = pure for --size small, fast for medium and large")
    c.add_argument("--json", action="store_true", help="print the summary as JSON")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.add_argument("--debug", action="store_true", help="show Python tracebacks for bad input")
    c.set_defaults(fn=_cmd_certify)

    k = sub.add_parser("check", help="independently re-check a certificate file")
    k.add_argument("cert")
    k.add_argument("--json", action="store_true", help="print the verdict as JSON")
    k.add_argument("--max-precision", type=int, default=None, help="cap for interval precision (bits)")
    k.add_argument("--engine", choices=("pure", "fast"), default="pure",
                   help="pure (default): the small int/Fraction checker, one example at a time; fast: the optional "
                        "batched exact path (exactmem/certificate/fastcheck.py), same verdicts")
    k.set_defaults(fn=_cmd_check)

    i = sub.add_parser("inspect", help="print a summary of the model in a certificate")
    i.add_argument("cert")
    i.set_defaults(fn=_cmd_inspect)

    from .bounds.cli import add_parser as add_bounds_parser

    add_bounds_parser(sub)
    sub.choices["bounds"].set_defaults(fn=_cmd_bounds)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
