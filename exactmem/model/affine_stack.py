"""Exact batched evaluation of stacks of token-wise affine maps with ReLU.

Every token-wise layer of the models (``affine``, ``feedforward``, ``embed`` after lookup)
is a composition of *steps* ``H ↦ ρ(W H + b 1ᵀ)`` where ρ applies ReLU to a chosen subset of
rows (a feed-forward layer with residual keeps the carried rows linear). A batch is a matrix
with one column per token (all tokens of all sequences side by side).

Values are held as `ScaledInts`: an integer matrix and one positive common
denominator. Steps are applied in *homogeneous coordinates*: the batch gets an extra row
equal to the denominator, and a step is the integer matrix ``[[D·W, D·b], [0, D]]`` with D
the step's common denominator. ReLU leaves that row alone because it is positive, so a
whole step is one exact integer matrix product followed by a row-masked ReLU.

Backends: ``"flint"`` (python-flint ``fmpz_mat`` products), ``"fraction"`` (plain Python,
the slow reference), ``"limbs"`` (float64 limb products, see ``limbs.py``) and ``"native"``
(compiled multi-limb integers, when numba is installed; see ``native.py``). ``"auto"`` picks
the fastest one that applies (native, then limbs, then flint). The step and batch types and the reference backend are in
``steps.py`` (every backend module imports them from there; they are re-exported here).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from .steps import AffineStep, ScaledInts, StackResult, _check_shapes, run_stack_fraction

__all__ = ["AffineStep", "ScaledInts", "StackResult", "BACKENDS", "run_stack", "run_stack_fraction",
           "run_stack_flint"]


def _homogeneous_flint(st: AffineStep):
    from flint import fmpz_mat

    D, Wi, bi = st.integer_form()
    m_in = st.m_in
    rows = [Wi[i] + [bi[i]] for i in range(st.m_out)]
    rows.append([0] * m_in + [D])
    return fmpz_mat(rows), D


def run_stack_flint(steps: Sequence[AffineStep], X: ScaledInts, trace: bool = False) -> StackResult:
    """python-flint backend: one ``fmpz_mat`` product per step, ReLU on the row-major entries."""
    from flint import fmpz_mat

    _check_shapes(steps, X.shape[0])
    m, T = X.shape
    H = fmpz_mat([list(r) for r in X.rows] + [[X.den] * T]) if T else None
    if T == 0:
        return StackResult(ScaledInts([[] for _ in range(steps[-1].m_out if steps else m)], 1), [], "flint")
    tr = []
    for st in steps:
        A, D = _homogeneous_flint(st)
        Z = A * H
        mo = st.m_out
        e = None
        if any(st.relu_rows):
            e = Z.entries()
            changed = False
            for i in range(mo):
                if st.relu_rows[i]:
                    base = i * T
                    seg = e[base:base + T]
                    if any(x < 0 for x in seg):
                        e[base:base + T] = [x if x > 0 else 0 for x in seg]
                        changed = True
            if changed:
                Z = fmpz_mat(mo + 1, T, e)
        if D != 1:
            Z = _reduce_flint(Z, mo, T, e)
        H = Z
        if trace:
            tr.append(_flint_to_scaled(H, mo, T))
    return StackResult(_flint_to_scaled(H, steps[-1].m_out if steps else m, T), tr, "flint")


def _reduce_flint(Z, mo: int, T: int, e=None):
    """Divide out the gcd of all entries (keeps dyadic denominators from piling up).

    ``e``: the entries of Z if the caller already has them. The division is python-flint's
    exact matrix division in C (it raises if not exact, which cannot happen here).
    """
    from flint import fmpz

    if e is None:
        e = Z.entries()
    g = fmpz(e[mo * T])  # the homogeneous row: every entry there is the denominator
    for x in e:
        g = g.gcd(x)
        if g == 1:
            return Z
    if g <= 1:
        return Z
    return Z / g


def _flint_to_scaled(H, mo: int, T: int) -> ScaledInts:
    e = [int(x) for x in H.entries()]
    den = e[mo * T]
    rows = [e[i * T:(i + 1) * T] for i in range(mo)]
    return ScaledInts(rows, den).reduced()


BACKENDS = {
    "fraction": run_stack_fraction,
    "flint": run_stack_flint,
}


PROGRESS_GROUP = 64  # progress is reported every this many steps (and at the end), whatever the backend

#: backends that call ``on_step(steps done)`` themselves, keeping their state between steps
STEP_PROGRESS = {"compress", "native"}


def run_stack(steps: Sequence[AffineStep], X: ScaledInts, backend: str = "auto", trace: bool = False,
              on_step: Optional[Callable[[int], None]] = None) -> StackResult:
    """Evaluate the steps on the batch X exactly. ``backend``: auto | native | limbs | flint |
    compress | fraction. ``on_step(steps done)``: progress (display only), every
    `PROGRESS_GROUP` steps and at the end; the ``native`` and ``compress`` engines count
    their steps without leaving their own representation, the others run in groups of that many
    steps."""
    if backend == "auto":
        backend = _auto_backend(steps, X)
    try:
        fn = BACKENDS[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; choose from {sorted(BACKENDS)} or 'auto'") from None
    if on_step is None:
        return fn(steps, X, trace=trace)
    if backend in STEP_PROGRESS:
        n = len(steps)

        def every_group(k: int) -> None:
            if k % PROGRESS_GROUP == 0 or k == n:
                on_step(k)

        return fn(steps, X, trace=trace, on_step=every_group)
    res = None
    tr: list = []
    for a in range(0, len(steps), PROGRESS_GROUP):
        res = fn(steps[a:a + PROGRESS_GROUP], X if res is None else res.out, trace=trace)
        tr.extend(res.trace)
        on_step(min(a + PROGRESS_GROUP, len(steps)))
    if res is None:
        return fn(steps, X, trace=trace)
    return StackResult(res.out, tr, res.backend)


NATIVE_AUTO_MIN_WORK = 1 << 17  # tokens x steps below which auto does not load numba (its start-up costs more)


def _auto_backend(steps: Sequence[AffineStep], X: Optional[ScaledInts] = None) -> str:
    big = X is None or X.shape[1] * len(steps) >= NATIVE_AUTO_MIN_WORK
    if big and "native" in BACKENDS:
        from .native import applies as native_applies

        if native_applies(steps):
            return "native"
    if "limbs" in BACKENDS:
        from .limbs import applies

        if applies(steps):
            return "limbs"
    return "flint"


try:  # optional exact multi-limb backend for dyadic weights (see limbs.py)
    from .limbs import run_stack_limbs

    BACKENDS["limbs"] = run_stack_limbs
except ImportError:
    pass

try:  # optional compiled (numba) multi-limb backend for dyadic weights (see native.py)
    from .native import AVAILABLE as _NATIVE, run_stack_native

    if _NATIVE:
        BACKENDS["native"] = run_stack_native
except ImportError:
    pass
