"""The proof files that ship with exactmem: one module per paper (``docs/proof-files.md``).

Each module defines ``THEOREMS`` (a list of `exactmem.proof.Theorem`: statements,
default instances, ``build`` functions and the claims computed from the paper's formulas) —
or, for `exactmem.proofs.lower_bounds`, ``LOWER_BOUNDS``. They are the single source of
each theorem's claims: the library (``em.kajitsuka.next_token(...).claims`` etc., through
[`exactmem.api.proof_module`][exactmem.api.proof_module]) and ``python -m exactmem certify`` read the same module, in
a checkout and in an installed wheel alike.

The checkout's ``proofs/<name>.py`` files are thin re-exports of these modules, so the
documented commands (``python -m exactmem certify proofs/kajitsuka.py``) keep their paths;
``python -m exactmem certify kajitsuka`` (a bare name, no such file in the working
directory) loads the packaged module directly.

Modules: ``kajitsuka``, ``vardi``, ``mahdavi``, ``dana``, ``relu_interpolation`` (theorems
that are certified), ``kajitsuka_errata``, ``vardi_errata`` (literal readings the checker
refutes, ``docs/errata.md``; ``kajitsuka_errata`` also certifies Lemma B.2's statement with
the witness f the tool finds) and ``lower_bounds`` (``python -m exactmem bounds run``).
Nothing is imported here: each module loads its constructions only when asked for.
"""

import pkgutil as _pkgutil


def names():
    """The packaged proof modules, sorted (``exactmem.proofs.<name>``)."""
    return sorted(m.name for m in _pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
