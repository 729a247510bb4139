"""The trusted kernel: parse, validate, evaluate and judge certificates; standard library only.

Every file here is one a reviewer must trust, and nothing else is here (``docs/certificate.md``
§ *What you must trust*). Each kind of certificate runs only part of the folder, its trusted base:

* layer models (the constructions' certificates): ``text``, ``limits``, ``verdict``, ``fields``,
  ``schema``, ``layerschema``, ``enclosure``, ``checker``, ``facts``, ``geometry``, ``linear``,
  ``evaluate``;
* graph models (trained networks, ``exactmem verify``): ``text``, ``limits``, ``verdict``,
  ``fields``, ``schema``, ``enclosure``, ``checker``, ``facts``, ``graph``;
* lower-bound certificates: ``text``, ``limits``, ``verdict``, ``fields``, ``schema``,
  ``enclosure``, ``checker``, ``lowerbound``.

``tests/test_kernel.py`` traces a check of each kind and fails if a file outside its base runs.
The public entry points are ``checker.check_certificate`` and ``checker.load_certificate``.
"""
