"""Labelled datasets of token sequences, exact rationals throughout, plus seeded generators."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence

from ..arith.numbers import format_rational, parse_rational, to_rational


class DataError(ValueError):
    """A dataset is malformed or violates an assumption; the message names the culprit."""


@dataclass
class Dataset:
    """N labelled sequences. ``inputs[i]`` is a tuple of tokens (vectors of Fractions, or int ids).

    ``labels[i]``: for identity decoding, the exact output column (tuple of Fractions) — or,
    for sequence-to-sequence, a tuple of such columns; for argmax decoding, a class index
    (or a tuple of them).
    """

    inputs: List[tuple]
    labels: List[Any]
    input_type: str = "vectors"
    seed: Optional[int] = None
    name: str = ""
    info: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if len(self.inputs) != len(self.labels):
            raise DataError(f"{len(self.inputs)} inputs but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.inputs)


def _token_to_json(tok, input_type):
    return tok if input_type == "tokens" else [format_rational(x) for x in tok]


def dataset_to_json(ds: Dataset, decode: str = "identity") -> Dict[str, Any]:
    """The dataset's JSON form; a token object shared among sequences is formatted once (each
    occurrence gets a list of its own, so editing one example's JSON never edits another's)."""
    if ds.input_type == "tokens":
        inputs = [list(X) for X in ds.inputs]
    else:
        done: Dict[int, list] = {}  # id(token) -> its texts; ds keeps every token alive meanwhile: ids are unique

        def token_json(t) -> list:
            j = done.get(id(t))
            if j is None:
                j = done[id(t)] = _token_to_json(t, ds.input_type)
            return j.copy()

        inputs = [[token_json(t) for t in X] for X in ds.inputs]
    if decode == "argmax":
        labels = [lab if isinstance(lab, int) else list(lab) for lab in ds.labels]
    else:
        labels = [_identity_label_json(lab) for lab in ds.labels]
    return {"inputs": inputs, "labels": labels}


def _identity_label_json(lab):
    if lab and isinstance(lab[0], (tuple, list)):
        return [[format_rational(x) for x in col] for col in lab]
    return [format_rational(x) for x in lab]


def dataset_from_json(d: Dict[str, Any], input_type: str, decode: str) -> Dataset:
    def tok(t):
        return t if input_type == "tokens" else tuple(parse_rational(x) for x in t)

    inputs = [tuple(tok(t) for t in X) for X in d["inputs"]]
    if decode == "argmax":
        labels = [lab if isinstance(lab, int) else tuple(lab) for lab in d["labels"]]
    else:
        labels = [tuple(tuple(parse_rational(x) for x in c) for c in lab) if lab and isinstance(lab[0], list)
                  else tuple(parse_rational(x) for x in lab) for lab in d["labels"]]
    return Dataset(inputs, labels, input_type)


def random_points(n_points: int, dim: int, seed: int, coord_range: int = 1000, denominators: Sequence[int] = (1,),
                  distinct: bool = True) -> List[tuple]:
    """Seeded random points in Q^dim with coordinates k/q, |k| ≤ coord_range·q, q from ``denominators``."""
    rng = random.Random(seed)
    seen = set()
    out = []
    tries = 0
    while len(out) < n_points:
        tries += 1
        if tries > 100 * n_points + 1000:
            raise DataError(f"could not draw {n_points} distinct points; enlarge coord_range")
        p = tuple(Fraction(rng.randint(-coord_range * q, coord_range * q), q)
                  for q in (rng.choice(denominators) for _ in range(dim)))
        if distinct and p in seen:
            continue
        seen.add(p)
        out.append(p)
    return out


def random_labels(n: int, seed: int, num_classes: Optional[int] = None, denominator: int = 1,
                  label_range: int = 100) -> List[Fraction]:
    """Seeded labels: integers in [0, num_classes) if given, else rationals k/denominator."""
    rng = random.Random(seed)
    if num_classes is not None:
        return [Fraction(rng.randrange(num_classes)) for _ in range(n)]
    return [Fraction(rng.randint(-label_range * denominator, label_range * denominator), denominator)
            for _ in range(n)]


def labels_exact(values: Sequence) -> List[Fraction]:
    return [to_rational(v) for v in values]
