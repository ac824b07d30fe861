"""A record as the run's speed sees it (``Point``), and how far its count and seconds may
be off by their rounding (``Bounds``): what a rate between two points is, and whether the
second one starts a new run segment (``speed`` has the whole story).

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple


class Point(NamedTuple):
    """One record as the speed sees it."""

    line: int | None
    step: float | None
    value: float | None  # a stated rate (``stated``), else None
    total: float | None  # a count since some origin (``stated_average``, ``derived``)
    seconds: float | None  # the clock that count runs against
    rate: float | None  # the stated average the count was made from (its rounding counts)
    segment: int


def _digits(value: float) -> tuple[int, int]:
    """(significant digits, exponent of the last one) of ``value`` as written."""
    text = repr(float(value)).lower()
    mant, _, exp = text.partition("e")
    mant = mant.lstrip("-")
    whole, _, frac = mant.partition(".")
    frac = frac.rstrip("0")
    try:
        shift = int(exp) if exp else 0
    except ValueError:
        shift = 0
    if not frac:  # 10880.0 (a console's 1.088e+04): its trailing zeros show nothing
        stripped = whole.rstrip("0")
        shift += len(whole) - len(stripped)
        whole = stripped
    digits = (whole + frac).lstrip("0") or "0"
    return len(digits), shift - len(frac)


class Precision:
    """How finely a trainer writes one field, learnt from its values: a value's own
    text understates it (``1.0`` from a field rounded to 4 decimals), so the bound on a
    value's rounding is half a unit in the finest decimal place the field has shown,
    or in its last significant digit if the field keeps a fixed count of them (a
    console's ``f"{v:.4g}"``), whichever is coarser."""

    def __init__(self, clock: bool = False) -> None:
        self.sig = 0  # most significant digits seen
        self.place: int | None = None  # finest decimal place seen (exponent)
        # An int is exact as a count, but a clock written as an int (``int(time.time())``)
        # is good to the second only.
        self.clock = clock

    def learn(self, vals: list[float]) -> None:
        for v in vals:
            if isinstance(v, float) and math.isfinite(v) and v:
                sig, place = _digits(v)
                self.sig = max(self.sig, sig)
                self.place = place if self.place is None else min(self.place, place)

    def bound(self, value: float) -> float:
        if isinstance(value, int) and not isinstance(value, bool):
            return 0.5 if self.clock else 0.0
        if not value or not math.isfinite(value):
            return 0.0
        sig, place = _digits(value)
        finest = place if self.place is None else min(place, self.place)
        lead = place + sig - 1  # exponent of the value's leading digit
        by_sig = lead - max(self.sig, sig) + 1
        return 0.5 * 10.0 ** max(finest, by_sig)


def point_doc(p: Point) -> dict[str, Any]:
    out: dict[str, Any] = {"line": p.line, "step": p.step}
    if p.total is not None:
        out["count"] = p.total
        out["seconds"] = p.seconds
    else:
        out["value"] = p.value
    return out


class Bounds:
    """How finely the log writes the stated averages and the clock: what a point's count
    and seconds may be off by. Learnt from a sample of each batch's values; computed only
    for the points a figure cites (the digits of every value would cost more than the
    rest of the summary)."""

    def __init__(self) -> None:
        self.rate = Precision()
        self.secs = Precision(clock=True)

    def learn(self, rates: list[Any], secs: list[Any]) -> None:
        self.rate.learn(_sample(rates))
        self.secs.learn(_sample(secs))

    def absorb(self, other: Bounds) -> None:
        for mine, theirs in ((self.rate, other.rate), (self.secs, other.secs)):
            mine.sig = max(mine.sig, theirs.sig)
            if theirs.place is not None:
                mine.place = theirs.place if mine.place is None else min(mine.place, theirs.place)

    def of(self, p: Point) -> tuple[float, float]:
        """(bound on the count, bound on the seconds) of ``p``."""
        if p.seconds is None:
            return 0.0, 0.0
        serr = self.secs.bound(p.seconds)
        if p.rate is None:
            return 0.0, serr
        return abs(p.seconds) * self.rate.bound(p.rate) + abs(p.rate) * serr, serr


SAMPLE = 32  # values a batch teaches the precision from


def _sample(vals: list[Any]) -> list[float]:
    present = [v for v in vals if v is not None]
    if len(present) <= SAMPLE:
        return present
    step = len(present) // SAMPLE
    return present[::step]


def span_rate(first: Point, last: Point, bounds: Bounds) -> tuple[float, float] | None:
    """(rate, bound on its error) from ``first`` to ``last`` of one segment."""
    if (
        first.total is None
        or last.total is None
        or first.seconds is None
        or last.seconds is None
        or first.segment != last.segment
        or last.seconds <= first.seconds
    ):
        return None
    dt = last.seconds - first.seconds
    rate = (last.total - first.total) / dt
    # The counts' rounding over dt, and the rounding of dt itself scaling the rate.
    (e0, s0), (e1, s1) = bounds.of(first), bounds.of(last)
    return rate, (e0 + e1 + abs(rate) * (s0 + s1)) / dt


def moved(p: Point | None, delta: int | None) -> Point | None:
    if p is None or p.line is None:
        return p
    return p._replace(line=None if delta is None else p.line + delta)


def break_reason(
    prev: Point, step: float | None, seconds: float | None, count: float | None
) -> str | None:
    """Why a record after ``prev`` starts a new run segment, or None when it continues
    the segment: the step or a counter went back. A repeated step alone is no restart:
    loggers write several rows for one step (Lightning's CSVLogger writes one per
    ``log_metrics`` call, its ThroughputMonitor's apart from the loss)."""
    if step is not None and prev.step is not None and step < prev.step:
        return "the step went back"
    if seconds is not None and prev.seconds is not None and seconds < prev.seconds:
        return "the seconds counter went back"
    if count is not None and prev.total is not None and count < prev.total:
        return "the count went back"
    return None
