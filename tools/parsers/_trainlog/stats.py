"""Statistics in bounded memory: quantiles from a systematic sample, the few largest
items, and windows of consecutive records reduced to their medians.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any


class Sample:
    """Quantiles from a bounded sample: every value until ``cap``, then every 2nd, 4th…"""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.values: list[float] = []
        self.stride = 1
        self.next_pos = 0  # index (among all values seen) of the next value to keep
        self.count = 0
        self.lo = math.inf
        self.hi = -math.inf
        self.first: float | None = None
        self.last: float | None = None

    def extend(self, vals: list[float]) -> None:
        if not vals:
            return
        n = len(vals)
        lo, hi = min(vals), max(vals)
        if lo < self.lo:
            self.lo = lo
        if hi > self.hi:
            self.hi = hi
        if self.first is None:
            self.first = vals[0]
        self.last = vals[-1]
        start = self.next_pos - self.count
        if start < n:
            kept = vals[start :: self.stride]
            self.values.extend(kept)
            self.next_pos += len(kept) * self.stride
        self.count += n
        while len(self.values) >= self.cap:
            # Halve the sample; the next value kept is one stride (the new one) after
            # the last value that survived the halving.
            last_survives = (len(self.values) - 1) % 2 == 0
            del self.values[1::2]
            if last_survives:
                self.next_pos += self.stride
            self.stride *= 2

    def absorb(self, other: Sample) -> None:
        """Append ``other`` (the values that came after these): both samples are
        brought to the coarser stride, then capped again."""
        if not other.count:
            return
        stride = max(self.stride, other.stride)
        mine = self.values[:: stride // self.stride]
        theirs = other.values[:: stride // other.stride]
        self.values = mine + theirs
        self.stride = stride
        self.count += other.count
        self.lo = min(self.lo, other.lo)
        self.hi = max(self.hi, other.hi)
        if self.first is None:
            self.first = other.first
        self.last = other.last
        while len(self.values) >= self.cap:
            del self.values[1::2]
            self.stride *= 2
        self.next_pos = self.count  # nothing is added after a merge

    def summary(self) -> dict[str, Any]:
        if not self.count:
            return {"count": 0}
        vals = sorted(self.values)
        return {
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "min": self.lo,
            "max": self.hi,
            "p10": quantile(vals, 0.1),
            "median": quantile(vals, 0.5),
            "p90": quantile(vals, 0.9),
            "exact": self.stride == 1,
            "sampled_every": self.stride,
        }


def quantile(sorted_vals: Sequence[float], q: float) -> float | None:
    if not sorted_vals:
        return None
    pos = (len(sorted_vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def median(vals: list[float]) -> float | None:
    return quantile(sorted(vals), 0.5) if vals else None


def middle(sorted_vals: Sequence[float]) -> float:
    """The median of values already sorted (at least one) as a reader recomputes it by
    hand: the middle value, or the mean of the two middle ones. ``median`` interpolates
    through ``quantile`` instead, which can differ from this in the last bit."""
    mid = len(sorted_vals) // 2
    if len(sorted_vals) % 2:
        return sorted_vals[mid]
    return (sorted_vals[mid - 1] + sorted_vals[mid]) / 2


class Window:
    """A run of consecutive records (``window_records`` of them) reduced to medians."""

    __slots__ = (
        "by_group",
        "first_line",
        "first_step",
        "last_line",
        "last_step",
        "loss",
        "n",
        "t_first",
        "t_last",
        "tok",
    )

    def __init__(self) -> None:
        self.first_line: int | None = None
        self.last_line: int | None = None
        self.first_step: float | None = None
        self.last_step: float | None = None
        self.n = 0
        self.t_first: float | None = None
        self.t_last: float | None = None
        self.tok: list[float] = []
        self.loss: list[float] = []
        self.by_group: dict[str, list[float]] = {}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "first_line": self.first_line,
            "last_line": self.last_line,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "records": self.n,
            "t_first": self.t_first,
            "t_last": self.t_last,
            "tok_s_median": median(self.tok),
            "loss_median": median(self.loss),
        }
        if self.by_group:
            out["tok_s_median_by_group"] = {g: median(v) for g, v in sorted(self.by_group.items())}
        return out


class Top:
    """The ``k`` largest items seen, by a numeric key."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.heap: list[tuple[float, int, dict[str, Any]]] = []
        self.seq = 0

    def floor(self) -> float:
        return self.heap[0][0] if len(self.heap) >= self.k else -math.inf

    def push(self, key: float, item: dict[str, Any]) -> None:
        self.seq += 1
        entry = (key, self.seq, item)
        if len(self.heap) < self.k:
            heapq.heappush(self.heap, entry)
        elif key > self.heap[0][0]:
            heapq.heapreplace(self.heap, entry)

    def items(self) -> list[dict[str, Any]]:
        return [e[2] for e in sorted(self.heap, key=lambda e: (-e[0], e[1]))]

    def absorb(self, other: Top) -> None:
        for key, _, item in sorted(other.heap, key=lambda e: e[1]):
            self.push(key, item)
