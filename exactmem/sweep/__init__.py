"""Bit-precision sweeps: how many bits a construction really needs (``docs/precision.md``).

A sweep runs over *proof files* (``exactmem.proof``): every theorem ``build(params, seed)``
gives a model, a dataset and claims, so every construction with a proof file is sweepable.
A sweep point is (proof file, theorem, parameters — an instance's, optionally overridden —,
seed, task). Tasks:

``quant-float`` / ``quant-fixed`` — **weight quantization**. Every stored weight is rounded
(to nearest, ties to even) to ``b`` significant bits (floating-style, unbounded exponent,
`exactmem.arith.numbers.round_to_bits`) or to ``b`` fractional bits (fixed point: a multiple
of 2^-b). The quantized network is evaluated *exactly* (`exactmem.model.forward`;
balls, decided rigorously, for softmax) and every example is judged by two criteria:

* ``exact``: the construction's own criterion — output equal to the label (identity
  decoding), within the certificate's ``error_bound`` if the theorem states one, or strict
  argmax (argmax decoding);
* ``nearest``: decoding by rounding to the nearest label — each output component strictly
  closer to its label than to any other label value occurring at that component in the
  dataset (identity decoding; for argmax decoding it is the same as ``exact``).

The minimal ``b`` per criterion is found by bisection between a failing ``b`` and one that
works (for dyadic weights: the number of bits at which quantization is the identity), and
the monotonicity the bisection assumes is *checked*: ``neighbours`` values on each side of
the result are evaluated too and every ``b`` that contradicts monotonicity is reported as a
violation. Optionally the quantized network at the minimum (and one bit below) is written as
a certificate and handed to the independent checker.

``arith`` — **arithmetic precision**. The exact model's weights and inputs are rounded to a
floating-point format and the network is evaluated with every operation rounded (to
nearest, ties to even) in that format: the named IEEE-style formats bfloat16, float16,
float32, float64 (bounded exponent range: overflow gives ±inf, gradual underflow to
subnormals, NaN propagates) and, with ``arith_min``, the smallest mantissa width ``b`` with
an unbounded exponent at which every example still comes out right. The order of operations
is fixed (see `OPERATION_ORDER`); the reference engine is MPFR (gmpy2 contexts with
the format's precision, exponent range and subnormals; ``exp`` correctly rounded), a NumPy
engine computes the same numbers for softmax-free models and is tested against it.

Results go to ``OUT/points.jsonl`` (one line per finished point; a re-run skips points
already there, so an interrupted sweep resumes and gives identical results) and
``OUT/sweep.json`` (all points, with seeds and versions), plus the CSV, Markdown and LaTeX
tables of `exactmem.sweep.tables`. ``workers > 1`` runs points in separate processes.

The package, by idea: `formats` (float formats, `SweepError`),
`quantize` (rounding weights to b bits), `judge`
(the criteria, exact evaluation, the minimal-b search), `arith`
(floating-point evaluation), `spec` (`SweepSpec`, ``--param``,
the grid of points), `point` (running one point),
`results` (the files on disk), `tables` (the
tables) and `runner` (the driver and its worker pool).
`exactmem.sweep.report` reads the results; nothing here imports it.
"""

from .arith import FloatResult, evaluate_format, float_forward, make_arith
from .formats import FORMATS, NAMED_FORMATS, OPERATION_ORDER, FloatFormat, SweepError, get_format, mantissa_format
from .judge import MAX_FAILING, Judge, _ok, evaluate_exact, exact_outputs, search_minimal
from .point import STRUCTURAL, information_bound, run_arith, run_point, run_quant, versions
from .quantize import fraction_bits, identity_bits, quantize_model, quantize_value, significant_bits, storage_bits
from .results import (COMMANDS_FILE, FORMAT, POINTS_FILE, SWEEP_FILE, VERSION, load_records, load_sweep, merge,
                      summarize_record, sweep_document, write_json_atomic, write_text_atomic)
from .runner import SweepRun, run_sweep
from .spec import MODELS, TASKS, SweepSpec, _slug, file_sha, parse_param, parse_value, parse_values, plan, point_key
from .tables import (CSV_FIELDS, TABLE_COLUMNS, csv_text, formula_bound, latex_table, markdown_table, rows,
                     table_cells, tex_escape, write_tables)
