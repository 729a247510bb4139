"""Hardmax Transformer architectures (d, m, s, H, q, L) and their parameter counts.

The model of Kajitsuka & Sato eq. (4): ``E_out ∘ F_L ∘ … ∘ F_1 ∘ E_in`` with token-wise
linear ``E_in : R^d → R^m`` and ``E_out : R^m → R``, and blocks of H-head attention (head
size s; ``W^Q, W^K, W^V ∈ R^{s×m}``, ``W^O ∈ R^{m×s}``, eq. (2)) followed by a feed-forward
layer of width q (``W^(1) ∈ R^{q×m}``, ``b^(1) ∈ R^q``, ``W^(2) ∈ R^{m×q}``, ``b^(2) ∈ R^m``,
eq. (3)).

Two counting conventions (``docs/lower-bounds.md``):

* ``paper`` — App. B.2 eq. (92): ``4msH + 2(m+1)q`` per block, ``W_0 = md`` for ``E_in``,
  and ``W = W_L + md`` (``E_out`` counted as md).
* ``exact`` — every entry of eq. (2)–(4): ``4msH + 2mq + q + m`` per block, ``md`` for
  ``E_in`` and ``m`` for ``E_out``.

The two differ by ``(q − m)`` per block and ``m(d − 1)`` for ``E_out``. When ``m > q`` the
paper's ``W_l`` is *smaller* than the number of parameters the block-l outputs depend on,
so Lemma B.4 would be applied with too few variables; the exact count repairs this (see
``docs/errata.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List

CONVENTIONS = ("paper", "exact")


class BoundsInputError(ValueError):
    """Bad input to a bounds computation; the message names the offending value."""


def check_positive_int(name: str, value) -> int:
    """Return ``value`` if it is a positive int, else raise a clear BoundsInputError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BoundsInputError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise BoundsInputError(f"{name} must be a positive integer (≥ 1), got {value}")
    return value


def check_convention(convention: str) -> str:
    if convention not in CONVENTIONS:
        raise BoundsInputError(f"unknown parameter-count convention {convention!r}; use one of {CONVENTIONS}")
    return convention


@dataclass(frozen=True)
class Architecture:
    """A hardmax Transformer shape: token dim d, width m, head size s, H heads, FFN width q,
    L blocks (all ≥ 1)."""

    d: int
    m: int
    s: int
    H: int
    q: int
    L: int

    def __post_init__(self):
        for name in ("d", "m", "s", "H", "q", "L"):
            check_positive_int(name, getattr(self, name))

    def as_dict(self) -> Dict[str, int]:
        return {k: getattr(self, k) for k in ("d", "m", "s", "H", "q", "L")}

    def label(self) -> str:
        return "d={d} m={m} s={s} H={H} q={q} L={L}".format(**self.as_dict())

    # ------------------------------------------------------------------ counts (eq. (92))

    def attention_params(self) -> int:
        """W^Q, W^K, W^V, W^O of H heads: 4msH (both conventions)."""
        return 4 * self.m * self.s * self.H

    def ffn_params(self, convention: str = "paper") -> int:
        """Paper: 2(m+1)q. Exact: W^(1) (qm) + b^(1) (q) + W^(2) (mq) + b^(2) (m)."""
        if check_convention(convention) == "paper":
            return 2 * (self.m + 1) * self.q
        return 2 * self.m * self.q + self.q + self.m

    def block_params(self, convention: str = "paper") -> int:
        return self.attention_params() + self.ffn_params(convention)

    def e_in_params(self) -> int:
        return self.m * self.d

    def e_out_params(self, convention: str = "paper") -> int:
        """Paper (eq. (92), W = W_L + md): md. Exact: E_out : R^m → R has m entries."""
        return self.m * self.d if check_convention(convention) == "paper" else self.m

    def W_l(self, l: int, convention: str = "paper") -> int:
        """Eq. (92): W_l = md + l[4msH + 2(m+1)q] (parameters of E_in and blocks 1..l)."""
        if not 0 <= l <= self.L:
            raise BoundsInputError(f"block index l={l} outside 0..{self.L}")
        return self.e_in_params() + l * self.block_params(convention)

    def W_list(self, convention: str = "paper") -> List[int]:
        """[W_0, W_1, …, W_L] accumulated block by block (not from the closed form)."""
        out = [self.e_in_params()]
        for _ in range(self.L):
            out.append(out[-1] + self.block_params(convention))
        return out

    def W(self, convention: str = "paper") -> int:
        """Eq. (92): W = W_L + (E_out count)."""
        return self.W_l(self.L, convention) + self.e_out_params(convention)

    def layout(self) -> List[tuple]:
        """Every stored parameter of eq. (2)–(4) as (name, rows, cols), in forward order:
        E_in; per block l and head h: K, Q, V (s×m), O (m×s); W1 (q×m), b1 (q), W2 (m×q),
        b2 (m); E_out (1×m). The number of entries is ``W("exact")``."""
        m, s, q = self.m, self.s, self.q
        out = [("E_in", m, self.d)]
        for l in range(1, self.L + 1):
            for h in range(1, self.H + 1):
                out += [(f"K{l}.{h}", s, m), (f"Q{l}.{h}", s, m), (f"V{l}.{h}", s, m), (f"O{l}.{h}", m, s)]
            out += [(f"W1_{l}", q, m), (f"b1_{l}", q, 1), (f"W2_{l}", m, q), (f"b2_{l}", m, 1)]
        out.append(("E_out", 1, m))
        return out

    def att_vars(self, l: int, convention: str = "paper") -> int:
        """Variables of the block-l attention-score polynomials (eq. (79)): W_{l−1} + 2msH (W^K, W^Q)."""
        return self.W_l(l - 1, convention) + 2 * self.m * self.s * self.H

    def ffn_vars(self, l: int, convention: str = "paper") -> int:
        """Variables of the block-l pre-activations (eq. (84)): W_{l−1} + 2msH (W^V, W^O) + (m+1)q (W^(1), b^(1))."""
        return self.W_l(l - 1, convention) + 2 * self.m * self.s * self.H + (self.m + 1) * self.q


    # ------------------------------------------- variables the polynomials really involve

    def _cell_block(self) -> int:
        """Parameters of one earlier block that survive on a cell: W^V, W^O (2msH) and the FFN
        (2mq + q + m). W^K, W^Q of earlier blocks enter only through the argmax pattern,
        which is constant on a cell, so they are not variables of later polynomials."""
        return 2 * self.m * self.s * self.H + 2 * self.m * self.q + self.q + self.m

    def cell_att_vars(self, l: int) -> int:
        """Parameters the block-l score differences depend on, on a cell of S_{l−1}."""
        return self.e_in_params() + (l - 1) * self._cell_block() + 2 * self.m * self.s * self.H

    def cell_ffn_vars(self, l: int) -> int:
        """Parameters the block-l pre-activations depend on, on a cell."""
        return self.e_in_params() + (l - 1) * self._cell_block() + 2 * self.m * self.s * self.H + (self.m + 1) * self.q

    def cell_out_vars(self) -> int:
        """Parameters the final outputs depend on, on a cell of S_L."""
        return self.e_in_params() + self.L * self._cell_block() + self.m


def parse_architecture(text: str) -> Architecture:
    """Parse ``"d=1,m=2,s=1,H=1,q=4,L=3"`` (all six keys) into an Architecture."""
    vals: Dict[str, int] = {}
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise BoundsInputError(f"architecture item {part!r} is not of the form key=value")
        k, v = (t.strip() for t in part.split("=", 1))
        if k not in ("d", "m", "s", "H", "q", "L"):
            raise BoundsInputError(f"unknown architecture key {k!r}; keys are d, m, s, H, q, L")
        vals[k] = parse_count(k, v)
    missing = [k for k in ("d", "m", "s", "H", "q", "L") if k not in vals]
    if missing:
        raise BoundsInputError(f"architecture is missing {', '.join(missing)} (give d, m, s, H, q, L)")
    return Architecture(**vals)


MAX_COUNT_DIGITS = 1000  # a count is at most 10^1000 (docs/cli.md § bounds: the measured cost)
MAX_COUNT = 10 ** MAX_COUNT_DIGITS
_DIGITS = re.compile(r"[0-9]+")


def _digits(name: str, t: str, text) -> int:
    """A decimal digit string within the cap (checked on its length, before int())."""
    if not _DIGITS.fullmatch(t):
        raise ValueError
    if len(t.lstrip("0")) > MAX_COUNT_DIGITS + 1:
        raise BoundsInputError(_too_large(name, text))
    return int(t)


def _too_large(name: str, text, cap: int = MAX_COUNT) -> str:
    return (f"{name} = {str(text)[:40]}{'…' if len(str(text)) > 40 else ''} is too large: "
            + (f"counts up to 10^{MAX_COUNT_DIGITS} are accepted" if cap == MAX_COUNT else f"at most {cap:,} here"))


def parse_count(name: str, text, cap: int = MAX_COUNT) -> int:
    """Parse a positive integer written as ``1000``, ``1_000``, ``1,000``, ``10^6``, ``10**6`` or ``1e6``,
    at most ``cap`` (default 10^1000). The size is bounded *before* any big number is built:
    digit strings by their length, ``b^e`` and ``ae k`` by e·log2 b and k; ``10**10**10``
    (one power only) and anything else is a one-line BoundsInputError."""
    if isinstance(text, int) and not isinstance(text, bool):
        val = check_positive_int(name, text)
        if val > cap:
            raise BoundsInputError(_too_large(name, f"a {val.bit_length()}-bit number", cap))
        return val
    t = str(text).strip().replace("_", "")
    try:
        if "^" in t or "**" in t:
            b, e = t.replace("**", "^").split("^", 1)
            b, e = _digits(name, b.strip(), text), _digits(name, e.strip(), text)
            if b > 1 and (len(str(e)) > 8 or e * (b.bit_length() - 1) > cap.bit_length()):
                raise BoundsInputError(_too_large(name, text, cap))
            val = b ** e
        elif "e" in t.lower():
            b, e = t.lower().split("e", 1)
            b, e = _digits(name, b.strip(), text), _digits(name, e.strip().lstrip("+"), text)
            if b and (e > MAX_COUNT_DIGITS + 1):
                raise BoundsInputError(_too_large(name, text, cap))
            val = b * 10 ** e
        else:
            u = t.replace(",", "")
            val = -_digits(name, u[1:], text) if u.startswith("-") else _digits(name, u, text)
    except ValueError as x:
        if isinstance(x, BoundsInputError):
            raise
        raise BoundsInputError(f"{name} must be a positive integer (like 1000, 10^6, 1e6), got "
                               f"{str(text)[:40]!r}") from None
    val = check_positive_int(name, val)
    if val > cap:
        raise BoundsInputError(_too_large(name, text, cap))
    return val


SMALLEST_LABEL = "d=m=s=H=q=L=1"


def smallest_W(convention: str = "paper") -> int:
    """W of the smallest architecture of eq. (4), d = m = s = H = q = L = 1: 10 under eq. (92)
    (md + L[4msH + 2(m+1)q] + md) and under the exact count (md + L[4msH + 2mq + q + m] + m).
    Both counts are sums of products of the dimensions with positive coefficients, hence
    increasing in each dimension (all ≥ 1): no Transformer of the family has fewer parameters,
    so a lower bound W ≥ W_min with W_min ≤ this number rules out nothing (it is vacuous)."""
    return Architecture(1, 1, 1, 1, 1, 1).W(convention)
