"""``exactmem export`` and ``python -m exactmem.export`` ([`exactmem.export`][exactmem.export])."""

from __future__ import annotations

import json
from typing import List, Optional

from ..errors import report_error
from .arrays import save
from .float_eval import float_accuracy
from .formats import FORMATS

#: the float format of ``exactmem export`` without ``--dtype`` (stated in its output)
DEFAULT_DTYPE = "float32"


# ----------------------------------------------------------------------------- command line


def add_parser(sub) -> None:
    """Register ``export`` on the top-level subparsers object of ``exactmem.cli.app``."""
    e = sub.add_parser("export", help="export a certificate's model to .npz / .safetensors in a float dtype",
                       description="Round the exact weights of a certificate's model to a float format, write "
                                   ".npz or .safetensors (architecture included), report the rounding, and "
                                   "evaluate the float model on the certificate's dataset.")
    e.add_argument("cert", help="certificate file (.json or .json.gz)")
    e.add_argument("--out", required=True, help="output file: .npz or .safetensors")
    e.add_argument("--dtype", default=None, choices=tuple(FORMATS),
                   help="float format (default float32; the output names the format either way)")
    e.add_argument("--no-eval", action="store_true", help="do not evaluate the float model on the dataset")
    e.add_argument("--json", action="store_true", help="print the report as JSON")
    e.add_argument("--debug", action="store_true", help="show the Python traceback for bad input")
    e.set_defaults(fn=run_cli)


def run_cli(args) -> int:
    """Handler of ``exactmem export``: exit 0 on success, 3 on unreadable input."""
    from ..kernel.checker import MalformedCertificate, load_certificate
    from ..data.dataset import dataset_from_json
    from ..model.serialize import model_from_json

    try:
        doc = load_certificate(args.cert)
        model = model_from_json(doc["model"])
        ds = dataset_from_json(doc["dataset"], model.input_type, model.decode)
    except (MalformedCertificate, KeyError, ValueError, TypeError) as e:
        if getattr(args, "debug", False):
            raise
        return report_error(f"{args.cert}: {e}")
    dtype = args.dtype or DEFAULT_DTYPE
    try:
        rep = save(model, args.out, dtype)
    except (ValueError, ImportError, OSError) as e:
        if getattr(args, "debug", False):
            raise
        return report_error(str(e) if args.out in str(e) else f"{args.out}: {e}")
    acc = None if args.no_eval else float_accuracy(model, ds, dtype)
    if args.json:
        out = {"out": args.out, "dtype": dtype, "dtype_is_default": args.dtype is None, "rounding": rep.as_dict()}
        if acc is not None:
            out["float_accuracy"] = {"examples": acc.examples, "exact": acc.exact, "nearest": acc.nearest,
                                     "nonfinite": acc.nonfinite}
        print(json.dumps(out, indent=1))
    else:
        how = "the default; --dtype to choose" if args.dtype is None else "--dtype"
        print(f"wrote {args.out}: weights in {dtype} ({how})")
        print(rep)
        if acc is not None:
            print(f"float model on the certificate's {acc.examples} examples: {acc}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m exactmem.export CERT --out FILE [--dtype float32]`` (same as ``exactmem export``)."""
    import argparse

    p = argparse.ArgumentParser(prog="exactmem-export")
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = p.parse_args(["export"] + list(argv if argv is not None else __import__("sys").argv[1:]))
    return args.fn(args)
