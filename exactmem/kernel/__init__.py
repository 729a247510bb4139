"""The trusted kernel: parse, validate, evaluate and judge certificates; standard library only.

Every file here is one a reviewer must trust, and nothing else is here (``docs/certificate.md``
§ *What you must trust*). Each kind of certificate runs only part of the folder, its trusted base:

* layer models (the constructions' certificates): ``text``, ``limits``, ``verdict``, ``fields``,
  ``schema``, ``layerschema``, ``enclosure``, ``interval``, ``checker``, ``facts``, ``geometry``,
  ``linear``, ``evaluate``;
* graph models (trained networks, ``exactmem verify``, with or without code-length claims): ``text``,
  ``limits``, ``verdict``, ``fields``, ``schema``, ``enclosure``, ``checker``, ``facts``,
  ``fixedpoint``, ``graph``;
* lower-bound certificates: ``text``, ``limits``, ``verdict``, ``fields``, ``schema``,
  ``enclosure``, ``interval``, ``checker``, ``logarithm``, ``expression``, ``lowerbound``;
* claim formulas (a layer model's bounds stated as formulas: that each bound is its formula's
  value, pure arithmetic): ``text``, ``limits``, ``verdict``, ``fields``, ``enclosure``,
  ``interval``, ``logarithm``, ``expression``, ``formulas``.

A layer model with claim formulas rests on two bases: the layer-model base for the network and
the comparison of each claim with the measured quantity, the claim-formula base for "this bound is
the value of this formula". ``tests/test_kernel.py`` traces a check of each kind (the claim
formulas while `formulas.check_formulas` runs) and fails if a file outside its base runs.
The public entry points are ``checker.check_certificate`` and ``checker.load_certificate``.
"""
