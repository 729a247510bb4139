"""``exactmem check``: read a certificate within the verifier's limits and print its verdict.

Exit 0 CERTIFIED, 1 REFUTED (with a witness), 2 UNKNOWN (undecided, or a limit reached: the
message names it), 3 malformed (one line naming the field or the limit). Imports only the
kernel; ``--engine fast`` loads the optional NumPy accelerator, ``--engine auto`` picks it when
it applies (`auto_engine`) and says on stderr which engine ran. Progress (examples re-derived,
or layers for the fast engine) goes to stderr on a terminal, or with ``--progress``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from fractions import Fraction
from typing import List, Optional

from ..kernel.checker import MalformedCertificate, check_certificate, load_certificate, unexpected
from ..certificate.chunkfiles import chunk_reader
from ..kernel.limits import Budget, Limits


PROGRESS_INTERVAL: Optional[float] = None  # seconds between plain progress lines (None: progress.PLAIN_INTERVAL)
AUTO_FAST_MIN_EXAMPLES = 1000  # --engine auto: fast from this many rows (the library's rule, pipeline.certify's
# constant of the same name; a test holds them equal — importing the pipeline here would cost 0.3 s)


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"check: {message}; usage: exactmem check [options] CERT (see `exactmem check --help`)")


def _positive(text: str, what: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 30) or int(text) < 1:
        raise _UsageError(f"{what} must be a positive integer, got {text[:40]!r}")
    return int(text)


def _seconds(text: str) -> Optional[Fraction]:
    if text.lower() == "none":
        return None
    try:
        t = Fraction(text)  # exact: "2.5" is 5/2
    except (ValueError, ZeroDivisionError):
        raise _UsageError(f"--time-limit takes seconds (e.g. 30, 2.5, 1/4) or none, got {text[:40]!r}") from None
    if t <= 0:
        raise _UsageError("--time-limit must be positive (or none)")
    return t


def add_arguments(ap: argparse.ArgumentParser) -> None:
    d = Limits()
    ap.add_argument("cert", help="certificate file (.json or .json.gz)")
    ap.add_argument("--json", action="store_true", help="print the verdict as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress lines and no engine line on stderr")
    ap.add_argument("--progress", action="store_true",
                    help="progress lines on stderr even when it is not a terminal (on a terminal: a bar by default)")
    ap.add_argument("--engine", choices=("pure", "fast", "auto"), default="pure",
                    help="pure (default): the kernel, one example at a time, int/Fraction only; fast: the optional "
                         "batched exact NumPy path (exactmem/certificate/fastcheck.py; graph models: float64 "
                         "enclosures with proven rounding, exactmem/fastgraph/, the kernel deciding), same verdicts; "
                         "auto: fast when it applies (token-wise layers and hardmax/uniform attention with at least "
                         "1,000 examples; NumPy installed), else pure; a line on stderr says which ran")
    ap.add_argument("--max-precision", default=None, metavar="BITS",
                    help=f"most interval bits granted after a softmax layer (default {d.max_precision or 4096}; "
                         "the certificate's check.max_precision may lower it)")
    ap.add_argument("--time-limit", default=None, metavar="SECONDS",
                    help=f"wall-clock limit, then UNKNOWN (default {d.time_limit}; 'none' for no limit)")
    ap.add_argument("--max-digits", default=None, metavar="N",
                    help=f"most decimal digits of one number in the file (default {d.max_digits:,})")
    ap.add_argument("--max-bytes", default=None, metavar="N",
                    help=f"most bytes of the certificate after gunzip (default {d.max_bytes:,})")
    add_cluster_arguments(ap)
    ap.add_argument("--shards", type=int, default=None, metavar="K",
                    help="example shards of a version-1 certificate with --workers/--scheduler (default: 4 per worker "
                         "for the pure kernel; shards of 12,500 examples or more for --engine fast; a graph model: "
                         "shards of at most 256 examples, 4 per worker at least)")
    ap.add_argument("--max-value-bits", default=None, metavar="N",
                    help=f"most bits of an intermediate value or softmax2 score spread (default {d.max_value_bits:,})")
    ap.add_argument("--max-elements", default=None, metavar="N",
                    help=f"most elements of one tensor of a graph model, a zero dimension counted as 1 "
                         f"(default {d.max_elements:,})")
    ap.add_argument("--max-total-elements", default=None, metavar="N",
                    help=f"most elements of all tensors of one graph evaluation (default {d.max_total_elements:,})")
    ap.add_argument("--max-tensor-bits", default=None, metavar="N",
                    help=f"most bits held by all tensors of one graph evaluation, elements times widest value "
                         f"(default {d.max_tensor_bits:,})")


def _rows(doc) -> Optional[int]:
    """The certificate's example rows as it states them (display only; the kernel counts them)."""
    ds = doc.get("dataset") if isinstance(doc, dict) else None
    if isinstance(ds, dict) and isinstance(ds.get("inputs"), list):
        return len(ds["inputs"])
    chunks = ds.get("chunks") if isinstance(ds, dict) else None
    if isinstance(chunks, list):
        try:
            return sum(int(c["examples"]) for c in chunks)
        except (KeyError, TypeError, ValueError):
            return None
    return None


def auto_engine(doc) -> tuple:
    """(engine, why) for ``--engine auto``: ``fast`` for a graph model (`exactmem/fastgraph`: every example it
    does not decide goes to the kernel), or when the accelerator evaluates every layer
    itself (token-wise layers, ``hardmax``/``uniform`` attention — it hands everything else to the
    kernel), the certificate has at least ``AUTO_FAST_MIN_EXAMPLES`` rows (below, loading NumPy and
    numba costs more than it saves; the library's ``checker="auto"`` rule) and NumPy is installed;
    else ``pure``. The choice never changes a verdict: both engines give the kernel's."""
    model = doc.get("model") if isinstance(doc, dict) else None
    layers = model.get("layers") if isinstance(model, dict) else None
    if isinstance(model, dict) and isinstance(model.get("graph"), dict):
        try:
            from ..fastgraph import check  # noqa: F401  (NumPy)
        except ImportError:
            return "pure", "NumPy is not installed (pip install numpy)"
        return "fast", ("a graph model: the fast graph engine's enclosures (float64, then double-float midpoints), "
                        "the kernel for every example they leave undecided")
    if not isinstance(layers, list):
        return "pure", "not a layer model"
    kinds = sorted({str(l.get("kind")) for l in layers if isinstance(l, dict) and l.get("type") == "attention"}
                   - {"hardmax", "uniform"})
    if kinds:
        return "pure", f"{kinds[0]} attention is evaluated by the kernel"
    n = _rows(doc)
    if n is not None and n < AUTO_FAST_MIN_EXAMPLES:
        return "pure", f"{n:,} examples (the fast engine from {AUTO_FAST_MIN_EXAMPLES:,})"
    try:
        from ..certificate import fastcheck  # noqa: F401  (NumPy)
    except ImportError:
        return "pure", "NumPy is not installed (pip install numpy)"
    return "fast", "token-wise layers and exact attention"


def _show_progress(args) -> bool:
    if args.quiet:
        return False
    try:
        return args.progress or sys.stderr.isatty()
    except (AttributeError, ValueError):
        return args.progress


class _NoProgress:
    """Stands in for `exactmem.progress.Progress` when nothing is shown (the default off a
    terminal): the check then imports nothing outside the kernel and this command."""
    mode = "quiet"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def note(self, *args):
        pass

    describe = stage = within = note


def _single(args, limits: Limits):
    """The check in this process: the engine (``auto`` resolved from the document), progress on
    stderr (examples re-derived by the kernel, layers by the fast engine), the kernel's Verdict."""
    budget = Budget(limits)  # the clock runs from here: reading the file counts
    doc = load_certificate(args.cert, limits)
    engine, why = (args.engine, "") if args.engine != "auto" else auto_engine(doc)
    bar = _NoProgress()
    if _show_progress(args):
        from ..progress import PLAIN_INTERVAL, Progress

        bar = Progress(1, "check", "certificate", interval=PLAIN_INTERVAL if PROGRESS_INTERVAL is None
                       else PROGRESS_INTERVAL)
    with bar as prog:
        if why:
            line = f"engine: {engine} (--engine auto: {why})"
            if prog.mode != "quiet":
                prog.note(line)
            elif not args.quiet:
                print(line, file=sys.stderr, flush=True)
        prog.describe(os.path.basename(args.cert))
        prog.stage(f"check ({engine} engine)", f"checking with the {engine} engine ...")
        rows, kw = _rows(doc), {}
        if rows and prog.mode != "quiet":
            budget.on_example = lambda g: prog.within(g + 1, rows, "example")
        if engine == "fast":
            from ..certificate.fastcheck import check_certificate_fast as check
            if prog.mode != "quiet":
                unit = "example" if isinstance((doc.get("model") or {}).get("graph"), dict) else "layer"
                kw["progress"] = lambda k, n: prog.within(k, n, unit)
        else:
            check = check_certificate
        verdict = check(doc, budget=budget, read_chunk=chunk_reader(os.path.dirname(os.path.abspath(args.cert)),
                                                                     limits), **kw)
        if prog.mode == "bar":  # the bar left on screen shows the check finished (plain mode: stdout says it)
            prog.update(1)
        return verdict


def add_cluster_arguments(ap: argparse.ArgumentParser) -> None:
    """--workers / --scheduler, shared by ``check`` and ``certify`` (docs/scaling.md)."""
    ap.add_argument("--workers", type=int, default=1, metavar="N",
                    help="check the examples in shards on an embedded Dask cluster of N worker processes "
                         "(default 1: in this process); the same verdict and witness (docs/scaling.md)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="shard the check on an existing Dask scheduler instead (e.g. tcp://host:8786)")


def limits_from_args(args) -> Limits:
    """The verifier's Limits from parsed ``check`` arguments (defaults where not given)."""
    kw = {k: _positive(getattr(args, k), "--" + k.replace("_", "-"))
          for k in ("max_precision", "max_digits", "max_bytes", "max_value_bits", "max_elements", "max_total_elements",
                    "max_tensor_bits") if getattr(args, k) is not None}
    if args.time_limit is not None:
        kw["time_limit"] = _seconds(args.time_limit)
    try:
        return Limits(**kw)
    except ValueError as e:  # past a ceiling
        raise _UsageError(str(e)) from None


def _sharded(args, limits: Limits):
    """The check sharded on a Dask cluster (exactmem.distributed: outside the kernel, loaded only
    here). ``--time-limit`` is one wall-clock deadline from the command's start (the process's,
    up to a second back): cluster start, reading, every shard and the wait for them share it
    (docs/scaling.md)."""
    from ..distributed.cluster import ClusterError, command_start_ns

    t = limits.time_limit
    until_ns = None if t is None else command_start_ns() + t.numerator * 10 ** 9 // t.denominator
    from ..distributed.check import check_sharded, silence_dask_logs, worker_status
    from ..progress import Progress

    silence_dask_logs()  # for the rest of this process: the verdict and progress are the only output

    with Progress(None, "check", "shard", quiet=args.quiet) as prog:
        def shard_done(done, total, lo, v):
            status = v.status if hasattr(v, "status") else f"failed ({type(v).__name__})"
            prog.update(1, f"shard {done}/{total} from example {lo}: {status}")

        try:
            return check_sharded(args.cert, workers=args.workers, scheduler=args.scheduler, shards=args.shards,
                                 limits=limits, engine=args.engine,
                                 on_shard=None if args.quiet else shard_done, until_ns=until_ns,
                                 on_workers=None if args.quiet else lambda st: prog.status(worker_status(st)))
        except ClusterError as e:
            raise _UsageError(str(e)) from None


def main(argv: Optional[List[str]] = None) -> int:
    """``check CERT [--json] [--engine pure|fast|auto] [--progress] [limits]``; the leading word ``check`` may be omitted."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:  # the command word, never the file: `check` alone is a usage error
        argv = argv[1:]
    ap = _Parser(prog="exactmem check", description="Independent checker for exactmem certificates.")
    add_arguments(ap)
    try:
        args = ap.parse_args(argv)
        if os.path.isdir(args.cert):
            raise _UsageError(f"{args.cert} is a directory, not a certificate file (give a .json or .json.gz file)")
        if not os.path.lexists(args.cert):
            raise _UsageError(f"no such certificate file: {args.cert}")
        limits = limits_from_args(args)
        if args.engine == "fast":
            from ..certificate import fastcheck  # noqa: F401  (NumPy: fail here, before reading)
        if args.workers < 1 or (args.shards is not None and args.shards < 1):
            raise _UsageError("--workers and --shards must be at least 1")
        if args.workers > 1 or args.scheduler:
            run = lambda: _sharded(args, limits)  # noqa: E731
        else:
            run = lambda: _single(args, limits)  # noqa: E731
    except _UsageError as e:
        print(f"exactmem: error: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    code, out, err = answer(run, args.json, args.cert)
    if err:
        print(err, file=sys.stderr)
    try:
        if out:
            print(out)
        sys.stdout.flush()  # here, so that a reader leaving early (`| head`) is caught, not at exit
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as the main parser's commands (docs/cli.md)
    return code


def answer(run, as_json: bool = False, name: str = "the certificate"):
    """(exit code, stdout text, stderr line) of one check: ``run()`` gives the kernel's Verdict. The one
    place the command runs the kernel: whatever it raises (but Ctrl-C: exit 130) is one line, exit 3."""
    try:
        verdict = run()
        if as_json:
            return verdict.exit_code, json.dumps(verdict.to_json(), sort_keys=True), ""
        wit = "" if verdict.witness is None else "\nwitness: " + json.dumps(verdict.witness, sort_keys=True)
        return verdict.exit_code, f"{verdict.status}: {verdict.message}{wit}", ""
    except _UsageError as e:
        return 3, "", f"exactmem: error: {e}"
    except MalformedCertificate as e:
        return 3, "", f"exactmem: error: malformed certificate: {' '.join(str(e).split())}"
    except (RecursionError, MemoryError) as e:
        return 3, "", (f"exactmem: error: cannot check certificate {name}: {type(e).__name__} (the file nests or "
                       f"grows past what this process can hold; lower --max-elements or --max-tensor-bits)")
    except KeyboardInterrupt:
        return 130, "", "interrupted"
    except Exception as e:  # a bug, or an input no check foresaw: still one line, never a traceback
        return 3, "", f"exactmem: error: malformed certificate: {unexpected(e, 'while checking ' + name)}"


if __name__ == "__main__":
    sys.exit(main())
