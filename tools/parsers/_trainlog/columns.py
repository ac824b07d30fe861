"""A batch of records as columns: one list per field, so that list comprehensions and
builtins (``min``, ``sum``, ``map(sub)``) do the per-record work at C speed.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import is_not, itemgetter, sub
from typing import Any, NamedTuple

from .values import NUMERIC, NUMERIC_OR_NONE, SAMPLES


class Col(NamedTuple):
    """A column of one field over a batch of records: numbers, or None where a record has
    no number there; ``full`` when every record has one (the fast, common case)."""

    vals: list[float | None]
    full: bool

    def present(self) -> tuple[list[float], list[int] | None]:
        """The numbers that are there, and their indices (None when all are there)."""
        if self.full:
            return self.vals, None  # type: ignore[return-value]
        there = list(map(is_not, self.vals, repeat(None)))
        vals: list[Any] = list(compress(self.vals, there))
        return vals, list(compress(range(len(there)), there))

    def part(self, i: int, j: int) -> Col:
        return Col(self.vals[i:j], self.full)

    def take(self, pick: Any) -> Col:
        """The values at the indices ``pick`` (an itemgetter) selects."""
        return Col(list(pick(self.vals)), self.full)


def numbers(col: list[Any]) -> Col:
    """``col`` with everything that is not an int or float (None, bools, strings) as None."""
    types = set(map(type, col))
    if types <= NUMERIC:
        return Col(col, True)
    if types <= NUMERIC_OR_NONE:
        return Col(col, False)
    return Col([v if type(v) in NUMERIC else None for v in col], False)


def drop_nonfinite(vals: list[Any]) -> tuple[list[float], int]:
    """Drop NaN and infinities; a finite sum proves there are none, at C speed."""
    if math.isfinite(sum(vals)):
        return vals, 0
    kept = [v for v in vals if math.isfinite(v)]
    return kept, len(vals) - len(kept)


def picker(idx: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``itemgetter(*idx)`` that returns a tuple even for one index."""
    if len(idx) == 1:
        i = idx[0]
        return lambda seq: (seq[i],)
    getter: Any = itemgetter(*idx)
    return getter  # type: ignore[no-any-return]


def differences(vals: list[float], prev: float | None) -> tuple[list[float], int]:
    """Successive differences, and the index in ``vals`` the first one belongs to."""
    if prev is not None:
        return list(map(sub, vals, [prev, *vals[:-1]])), 0
    return list(map(sub, vals[1:], vals[:-1])), 1


def largest(diffs: list[float], floor: float) -> list[int]:
    """Indices of the few largest differences above ``floor``."""
    if not diffs or max(diffs) <= floor:
        return []
    return heapq.nlargest(
        SAMPLES, (k for k, dd in enumerate(diffs) if dd > floor), key=diffs.__getitem__
    )
