"""Exact linear algebra over Q (python-flint ``fmpq_mat`` / ``fmpz_mat``) and certified balls.

Matrices at the interface are sequences of rows of ``Fraction`` (ints and ``"p/q"`` strings
are accepted); results are tuples of rows of ``Fraction``. Everything in the first part is
exact: rank, solve, inverse, nullspace, integer kernels (LLL-reduced, so kernel vectors have
small integer entries), and a choice of independent rows.

The second part works with Arb balls (python-flint ``arb`` / ``arb_mat``), which enclose
the exact real value rigorously; it is used where values are transcendental (softmax):
certified lower bounds on the smallest singular value, rigorous upper bounds on logarithms,
conversions of ball endpoints to exact rationals. No floating point enters a result: a
ball's endpoints are exact dyadics, and every bound is returned as a ``Fraction`` on the
safe side.

A third part is rank arithmetic modulo a prime (NumPy ``int64``), used only to *search*
(e.g. which context row an active pair should attend to, note §4.4); a rank increase
modulo p implies a rank increase over Q, and every final claim is re-checked exactly.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm
from typing import List, Optional, Sequence, Tuple

from .numbers import to_rational

Matrix = Tuple[Tuple[Fraction, ...], ...]


class LinAlgError(ValueError):
    """A matrix is singular / rank-deficient where a full-rank one is needed."""


# ----------------------------------------------------------------------------- exact, over Q

def as_matrix(M) -> Matrix:
    """Rows of Fractions from nested sequences of ints, Fractions or 'p/q' strings."""
    out = tuple(tuple(to_rational(x) for x in row) for row in M)
    if out and any(len(r) != len(out[0]) for r in out):
        raise LinAlgError("ragged matrix: rows have different lengths")
    return out


def fmpq_matrix(M):
    """python-flint ``fmpq_mat`` of an exact matrix (empty shapes allowed)."""
    from flint import fmpq, fmpq_mat

    rows = [[fmpq(x.numerator, x.denominator) for x in r] for r in as_matrix(M)]
    if not rows:
        return fmpq_mat(0, 0)
    if not rows[0]:
        return fmpq_mat(len(rows), 0)
    return fmpq_mat(rows)


def from_fmpq(m) -> Matrix:
    """Rows of Fractions of an ``fmpq_mat``."""
    return tuple(tuple(Fraction(int(m[i, j].p), int(m[i, j].q)) for j in range(m.ncols()))
                 for i in range(m.nrows()))


def integer_rows(M) -> Tuple[List[List[int]], List[int]]:
    """Each row scaled by the lcm of its denominators: (integer rows, scale factors).

    Row scaling by nonzero numbers preserves rank and the row space.
    """
    ints, scales = [], []
    for r in as_matrix(M):
        L = lcm(*(x.denominator for x in r)) if r else 1
        ints.append([x.numerator * (L // x.denominator) for x in r])
        scales.append(L)
    return ints, scales


def fmpz_matrix(rows: Sequence[Sequence[int]]):
    from flint import fmpz_mat

    rows = [list(r) for r in rows]
    if not rows:
        return fmpz_mat(0, 0)
    if not rows[0]:
        return fmpz_mat(len(rows), 0)
    return fmpz_mat(rows)


def rank(M) -> int:
    """Exact rank over Q (rows scaled to integers, then ``fmpz_mat.rank``)."""
    M = as_matrix(M)
    if not M or not M[0]:
        return 0
    return int(fmpz_matrix(integer_rows(M)[0]).rank())


def transpose(M) -> Matrix:
    M = as_matrix(M)
    return tuple(zip(*M)) if M else ()


def matmul(A, B) -> Matrix:
    """Exact product A·B."""
    A, B = as_matrix(A), as_matrix(B)
    inner = len(A[0]) if A else 0
    if inner != len(B) or inner == 0:
        raise LinAlgError(f"shapes {len(A)}x{inner} and {len(B)}x{len(B[0]) if B else 0} do not multiply "
                          "(or have an empty inner dimension)")
    return from_fmpq(fmpq_matrix(A) * fmpq_matrix(B))


def matvec(A, x) -> Tuple[Fraction, ...]:
    """Exact A·x for a vector x."""
    A = as_matrix(A)
    x = tuple(to_rational(v) for v in x)
    return tuple(sum((a * b for a, b in zip(r, x) if a), Fraction(0)) for r in A)


def solve(A, B) -> Matrix:
    """The exact solution X of A X = B for square nonsingular A."""
    A, B = as_matrix(A), as_matrix(B)
    if len(A) != (len(A[0]) if A else 0):
        raise LinAlgError("solve needs a square matrix")
    if rank(A) < len(A):
        raise LinAlgError(f"singular {len(A)}x{len(A)} system (rank {rank(A)})")
    return from_fmpq(fmpq_matrix(A).solve(fmpq_matrix(B)))


def inverse(A) -> Matrix:
    """Exact inverse of a square nonsingular matrix."""
    A = as_matrix(A)
    n = len(A)
    return solve(A, tuple(tuple(Fraction(int(i == j)) for j in range(n)) for i in range(n)))


def nullspace(M) -> List[Tuple[Fraction, ...]]:
    """A basis (list of vectors) of the right kernel {x : M x = 0} over Q."""
    M = as_matrix(M)
    return [tuple(Fraction(x) for x in v) for v in integer_kernel(M, reduce=False)]


def integer_kernel(M, reduce: bool = True) -> List[Tuple[int, ...]]:
    """Integer vectors forming a basis of the right kernel of M over Q; LLL-reduced if ``reduce``.

    With ``reduce`` the basis spans the whole integer kernel lattice {y ∈ Z^d : M y = 0} and
    is LLL-reduced (the classical embedding: LLL on the rows of [I_d | N·Mᵀ] for a large N;
    rows whose tail vanishes are kernel vectors). Entries are then about det^(1/dim), far
    below the cofactor-sized vectors of a plain nullspace computation.
    """
    M = as_matrix(M)
    cols = len(M[0]) if M else 0
    if not M:
        return [tuple(int(i == j) for j in range(cols)) for i in range(cols)]
    ints = integer_rows(M)[0]
    X, nullity = fmpz_matrix(ints).nullspace()
    nullity = int(nullity)
    if nullity == 0:
        return []
    if not reduce:
        return [tuple(int(X[i, j]) for i in range(cols)) for j in range(nullity)]
    size = max(abs(a) for r in ints for a in r).bit_length() + 1
    shift = 2 * size * len(ints) + cols + 8
    while True:
        N = 1 << shift
        B = [[int(i == j) for j in range(cols)] + [N * r[i] for r in ints] for i in range(cols)]
        Lm = fmpz_matrix(B).lll()
        ker = [tuple(int(Lm[i, j]) for j in range(cols)) for i in range(Lm.nrows())
               if all(Lm[i, cols + k] == 0 for k in range(len(ints)))]
        if len(ker) == nullity:
            return ker
        shift *= 2


def independent_rows(M) -> List[int]:
    """Indices of a maximal set of linearly independent rows (the first ones, greedily).

    These are the pivot columns of the reduced row echelon form of Mᵀ.
    """
    M = as_matrix(M)
    if not M or not M[0]:
        return []
    Mt = fmpz_matrix(integer_rows(transpose(M))[0])
    R, _den, r = Mt.rref()
    piv, i = [], 0
    for j in range(Mt.ncols()):
        if i < int(r) and R[i, j] != 0:
            piv.append(j)
            i += 1
    return piv


def gram(X) -> Matrix:
    """Xᵀ X."""
    X = as_matrix(X)
    return matmul(transpose(X), X)


def left_inverse(X) -> Matrix:
    """(XᵀX)⁻¹Xᵀ for X with independent columns (the Moore–Penrose left inverse)."""
    X = as_matrix(X)
    G = gram(X)
    if rank(G) < len(G):
        raise LinAlgError("columns are linearly dependent: no left inverse")
    return solve(G, transpose(X))


def least_norm_solution(E, a) -> Tuple[Fraction, ...]:
    """The least-norm v with E v = a, v = Eᵀ(EEᵀ)⁻¹a (E of full row rank)."""
    E = as_matrix(E)
    G = matmul(E, transpose(E))
    y = solve(G, tuple((to_rational(x),) for x in a))
    return matvec(transpose(E), [r[0] for r in y])


# ----------------------------------------------------------------------------- certified balls

def arb_of(q):
    """The exact rational q as an Arb ball (exact when it fits the precision, else enclosed)."""
    from flint import arb, fmpq

    q = to_rational(q)
    return arb(fmpq(q.numerator, q.denominator))


def _dyadic(man_exp) -> Fraction:
    m, e = (int(v) for v in man_exp)
    return Fraction(m << e) if e >= 0 else Fraction(m, 1 << -e)


def upper_fraction(x) -> Fraction:
    """An exact dyadic ≥ every point of the ball x."""
    if not x.is_finite():
        raise LinAlgError("ball is not finite")
    return _dyadic(x.upper().man_exp())


def lower_fraction(x) -> Fraction:
    """An exact dyadic ≤ every point of the ball x."""
    if not x.is_finite():
        raise LinAlgError("ball is not finite")
    return _dyadic(x.lower().man_exp())


def mid_fraction(x) -> Fraction:
    """The ball's midpoint (an exact dyadic; a point *near* the value, not a bound)."""
    return _dyadic(x.mid().man_exp())


def log_upper(q) -> Fraction:
    """A rational ≥ ln(q) for a rational q > 0 (Arb's rigorous logarithm)."""
    q = to_rational(q)
    if q <= 0:
        raise LinAlgError("log of a non-positive number")
    return upper_fraction(arb_of(q).log())


def sqrt_upper(q) -> Fraction:
    """A rational ≥ √q for a rational q ≥ 0."""
    q = to_rational(q)
    return Fraction(0) if q == 0 else upper_fraction(arb_of(q).sqrt())


def arb_matrix(M):
    """An ``arb_mat`` from rows of Fractions or of arb balls."""
    from flint import arb, arb_mat

    rows = [[x if isinstance(x, arb) else arb_of(x) for x in r] for r in M]
    return arb_mat(rows)


def _frobenius_upper(A) -> Fraction:
    """A rational ≥ ‖A‖_F ≥ ‖A‖₂ for every matrix in the ball matrix A.

    ‖A‖_F² = trace(A Aᵀ); Arb's product of a ball with itself encloses every x² with x in
    the ball, so the computed trace encloses ‖A‖_F² for every point of A (C-level product).
    """
    m, n = A.nrows(), A.ncols()
    P = A * A.transpose() if m <= n else A.transpose() * A
    tr = P[0, 0]
    for i in range(1, P.nrows()):
        tr += P[i, i]
    return sqrt_upper(upper_fraction(tr)) if tr.is_finite() else _raise_not_finite()


def _raise_not_finite():
    raise LinAlgError("ball is not finite")


def sigma_min_lower(Z) -> Optional[Fraction]:
    """A certified lower bound σ > 0 on σ_min(Z) for every matrix in the ball matrix Z (m×T, m ≥ T).

    Method (an a-posteriori verification; the approximate inverse need not be exact): the
    Gram enclosure G ∋ ZᵀZ is one Arb product; R, an inverse of G's midpoint, is frozen to
    exact dyadics. For every G' in the balls, with θ ≥ ‖RG' − I‖₂ (rigorous) and θ < 1,
    ‖RG'x‖ ≥ (1 − θ)‖x‖ and ‖RG'x‖ ≤ ‖R‖₂‖G'x‖, hence σ_min(G') ≥ (1 − θ)/‖R‖₂; since
    G' = ZᵀZ is symmetric positive semidefinite, σ_min(Z)² = σ_min(G'). Both norms are bounded
    by Frobenius norms (at most a factor T^(1/4) lost on σ; c depends on σ only through a log).
    Returns ``None`` when θ < 1 cannot be shown (rank-deficient or too ill-conditioned at
    the current precision).
    """
    m, T = Z.nrows(), Z.ncols()
    if m < T:
        return None
    G = Z.transpose() * Z
    try:
        R = G.mid().inv().mid()
    except (ZeroDivisionError, ValueError):
        return None
    theta = _frobenius_upper(R * G - _identity_arb(T))
    if theta >= 1:
        return None
    nr = _frobenius_upper(R)
    if nr == 0:
        return None
    lam = arb_of(1 - theta) / arb_of(nr)
    return lower_fraction(lam.sqrt())


def _identity_arb(n):
    from flint import arb_mat

    I = arb_mat(n, n)
    for i in range(n):
        I[i, i] = 1
    return I


def singular_values_enclosure(Z) -> List:
    """Rigorous enclosures (arb balls) of all singular values of a small ball matrix Z, ascending.

    Eigenvalues of ZᵀZ by Arb's certified eigenvalue isolation (raises ``LinAlgError`` when
    they cannot be isolated at the current precision), then square roots.
    """
    from flint import acb_mat

    G = Z.transpose() * Z
    try:
        ev = acb_mat(G).eig()
    except ValueError as e:
        raise LinAlgError(f"cannot isolate the eigenvalues of ZᵀZ: {e}") from e
    vals = [e.real for e in ev]
    vals.sort(key=lambda x: mid_fraction(x))
    out = []
    for v in vals:
        if v > 0:
            out.append(v.sqrt())
        else:
            out.append(v.nonnegative_part().sqrt())
    return out


# ----------------------------------------------------------------------------- search modulo p

PRIME = 67108859  # < 2^26: products of residues stay below 2^52, sums of 2^10 of them fit int64


class SpanModP:
    """Incremental span of integer vectors modulo a prime (reduced echelon form, NumPy int64).

    ``try_add(v)`` adds v if it is independent of the current vectors modulo p and returns
    whether it did. Independence modulo p implies independence over Q, so a set built this
    way is certainly independent over Q; the converse can fail (rarely), so a failed search
    is retried exactly or with another prime by the caller.
    """

    def __init__(self, dim: int, p: int = PRIME):
        import numpy as np

        self.np = np
        self.p = p
        self.dim = dim
        self.pivots: List[int] = []
        self.B = np.zeros((0, dim), dtype=np.int64)

    def reduce(self, v):
        np = self.np
        v = np.asarray([int(x) % self.p for x in v], dtype=np.int64)
        if not self.pivots:
            return v
        coeff = v[self.pivots]
        # chunk the reduction so that each partial sum stays below 2^63
        acc = v.copy()
        for a in range(0, len(self.pivots), 1024):
            acc = (acc - coeff[a:a + 1024] @ self.B[a:a + 1024]) % self.p
        return acc

    def residual_nonzero(self, v) -> bool:
        return bool(self.reduce(v).any())

    def try_add(self, v) -> bool:
        np = self.np
        r = self.reduce(v)
        nz = np.nonzero(r)[0]
        if len(nz) == 0:
            return False
        j = int(nz[0])
        r = (r * pow(int(r[j]), -1, self.p)) % self.p
        if len(self.pivots):
            col = self.B[:, j].copy()
            self.B = (self.B - (col[:, None] * r[None, :]) % self.p) % self.p
        self.B = np.vstack([self.B, r[None, :]])
        self.pivots.append(j)
        return True

    @property
    def rank(self) -> int:
        return len(self.pivots)


def integer_column(col: Sequence[Fraction]) -> List[int]:
    """A rational vector scaled by the lcm of its denominators (same direction, integer entries)."""
    L = lcm(*(Fraction(x).denominator for x in col)) if col else 1
    return [int(Fraction(x) * L) for x in col]


class arb_precision:
    """Context manager: run Arb computations at ``bits`` of working precision."""

    def __init__(self, bits: int):
        self.bits = int(bits)

    def __enter__(self):
        from flint import ctx

        self.old = ctx.prec
        ctx.prec = self.bits
        return self

    def __exit__(self, *exc):
        from flint import ctx

        ctx.prec = self.old
        return False
