"""The degrees and polynomial counts the proof of Theorem B.3 relies on, as data.

Kajitsuka & Sato App. B.2 partition the parameter space block by block. On a cell of
``S_{l−1}`` the inputs of block l are polynomials in the parameters of degree ≤ 4(l−1)+1;
then (eq. numbers of the paper):

* (77)–(78) attention-score differences ``a_{k,k'} − a_{k'',k'}``: N·H·n³ polynomials of
  degree ≤ 8l − 4;
* (82)–(83) feed-forward pre-activations: N·q·n polynomials of degree ≤ 4l;
* (85) block outputs: degree ≤ 4l + 1;
* (88) final outputs after E_out: nN polynomials of degree ≤ 4L + 2.

The chain (`seq2seq`) and the symbolic checker (`symbolic`) both read these
numbers from a [`Bookkeeping`][exactmem.bounds.Bookkeeping], so a deliberately wrong entry (e.g. degree 8l − 5) can
be planted and must be detected (``tests/test_bounds_symbolic.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


def score_degree(l: int) -> int:
    """Eq. (77): attention scores of block l have degree ≤ 2(4(l−1)+1) + 2 = 8l − 4."""
    return 8 * l - 4


def preact_degree(l: int) -> int:
    """Eq. (82): FFN pre-activations of block l have degree ≤ 4(l−1)+3 + 1 = 4l."""
    return 4 * l


def block_out_degree(l: int) -> int:
    """Eq. (85): block-l outputs have degree ≤ 4l + 1 (E_in's outputs: degree 1 = 4·0+1)."""
    return 4 * l + 1


def output_degree(L: int) -> int:
    """Eq. (88): final outputs (after E_out) have degree ≤ 4L + 2."""
    return 4 * L + 2


def score_count(n: int, N: int, H: int) -> int:
    """Eq. (78): differences a^{(i)}_{h,k,k'} − a^{(i)}_{h,k'',k'} over i, h, k, k', k'': N·H·n³."""
    return N * H * n ** 3


def relu_count(n: int, N: int, q: int) -> int:
    """Eq. (83): pre-activations over i, token k, unit: N·q·n."""
    return N * q * n


def output_count(n: int, N: int) -> int:
    """Eq. (70): outputs N_θ(X^{(i)})_k over i, k: nN."""
    return n * N


@dataclass(frozen=True)
class Bookkeeping:
    """Degrees and polynomial counts used by the chain (defaults: the paper's)."""

    score_degree: Callable[[int], int] = score_degree
    preact_degree: Callable[[int], int] = preact_degree
    block_out_degree: Callable[[int], int] = block_out_degree
    output_degree: Callable[[int], int] = output_degree
    score_count: Callable[[int, int, int], int] = score_count
    relu_count: Callable[[int, int, int], int] = relu_count
    output_count: Callable[[int, int], int] = output_count
    name: str = "paper"


PAPER = Bookkeeping()
