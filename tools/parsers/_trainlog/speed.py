"""The run's speed, read the way its trainer states it, per run segment.

Which figure is the speed, in this order:

- ``stated``: a field that holds a rate at each record (``tok/s``, Lightning's
  ``throughput/tokens_per_sec``): a window's figure is the median of the stated values;
- ``stated_average``: Hugging Face ``Trainer``'s ``train_tokens_per_second`` (then
  ``train_samples_per_second``, ``train_steps_per_second``), which is no rate at a step
  but an average since the run segment began (``speed_metrics``: the count since the
  segment's ``start_time`` over ``train_runtime``, the seconds since then). Its count is
  ``rate × train_runtime``, and a window's rate is the correct difference of those counts
  over the difference of ``train_runtime``, within one segment;
- ``derived``: a running token total over seconds (timestamps or seconds since start),
  differenced the same way.

A *run segment* is a stretch of records from one process: it ends where the seconds or
the count go back (``train_runtime`` restarts at a resume) or the step goes back. A
difference never crosses a segment: across one, the counters of two processes would be
subtracted. So the first record of a segment opens a span but has no rate of its own.

Windows and the recent figure say what they were computed from: record lines, steps, and
for a difference the two counts and clocks, so that anyone can recompute a figure from
two lines of the log and a subtraction.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

# Shipped to targets running Python 3.8: zip(strict=) is 3.10+.
# ruff: noqa: B905
from __future__ import annotations

import math
from collections import deque
from operator import le
from typing import TYPE_CHECKING, Any

from .points import Bounds, Point, break_reason, moved, point_doc, span_rate
from .stats import middle

# Stated averages since the segment began (Trainer's speed_metrics), best first, with the
# unit each is in.
AVERAGE_FIELDS = (
    ("train_tokens_per_second", "tokens/s"),
    ("train_samples_per_second", "samples/s"),
    ("train_steps_per_second", "steps/s"),
)
AVERAGE_UNITS = dict(AVERAGE_FIELDS)
RECENT_MAX = 50  # records the recent figure may span, at most
RECENT_SHARE = 4  # and a quarter of the last segment's records, at least RECENT_MIN
RECENT_MIN = 3
MAX_SEGMENTS = 64
# A difference of two rounded counts is only as good as their rounding: a window whose
# bound on the error is more than this share of its rate has no figure (a console that
# prints 4 significant digits, differenced over a short span, says nothing).
MAX_REL_ERROR = 0.2


GAP = "a part of the log between was not read"

if TYPE_CHECKING:  # annotations only: the bundle runs on Python 3.8
    # A batch's columns: record lines, steps, then the values, totals, seconds and rates
    # the speed's source has (None: it has no such column).
    Columns = tuple[
        list[int | None],
        list[Any],
        list[Any] | None,
        list[Any] | None,
        list[Any] | None,
        list[Any] | None,
    ]


def _record(cols: Columns, k: int) -> tuple[int | None, Any, Any, Any, Any, Any]:
    """Record ``k`` of the columns, in ``Point``'s order (a missing column gives None)."""
    lines, steps, values, totals, secs, rates = cols
    return (
        lines[k],
        steps[k],
        None if values is None else values[k],
        None if totals is None else totals[k],
        None if secs is None else secs[k],
        None if rates is None else rates[k],
    )


class Speed:
    """The speed's source, segments and recent records, in bounded memory."""

    def __init__(self) -> None:
        self.kind: str | None = None  # stated | stated_average | derived
        self.field: str | None = None
        self.unit = "tokens/s"
        self.how = ""
        self.prev: Point | None = None
        self.segment = 0
        self.segments: list[dict[str, Any]] = []
        self.seg_records = 0
        self.recent: deque[Point] = deque(maxlen=RECENT_MAX)
        self.pending: str | None = None
        self.seen = 0
        self.windows_with_speed = 0
        self.bounds = Bounds()
        self.head: Point | None = None  # the first point (a forked piece's merge needs it)
        # The last point of the first window (a forked piece's first window takes its
        # difference from the previous piece's last point: ``absorb``).
        self.first_window_last: Point | None = None
        self.first_window_index = 0  # that window's place in the piece's windows

    def gap(self) -> None:
        """A part of the log between here and the next record was not read: no
        difference spans it."""
        self.prev = None
        self.pending = GAP

    def source(self, kind: str, field: str, unit: str, how: str) -> None:
        if self.kind is None:
            self.kind, self.field, self.unit, self.how = kind, field, unit, how

    def run(
        self,
        lines: list[int | None],
        steps: list[Any],
        values: list[Any] | None,
        totals: list[Any] | None,
        secs: list[Any] | None,
        rates: list[Any] | None,
    ) -> Batch:
        """A batch's records (columns), as ``point`` would take them one by one: where
        every number is there and finite and nothing after the first record goes back
        (the common case, checked at C speed), they are one stretch of the current
        segment, and points are made only where a figure will cite one."""
        n = len(lines)
        cols: Columns = (lines, steps, values, totals, secs, rates)
        given = [c for c in cols[1:] if c is not None]
        if (
            n < 2
            or not all(None not in c for c in given)
            or not all(all(map(le, c, c[1:])) for c in (steps, totals, secs) if c is not None)
            or not all(math.isfinite(sum(c)) for c in given if c is not steps)
        ):
            return Batch(points=[self._one(k, cols) for k in range(n)])
        self._one(0, cols)
        seg = self.segment
        if len(self.segments) == seg + 1:
            last = self.segments[-1]
            last["records"] += n - 1
            last["last_line"], last["last_step"] = lines[-1], steps[-1]
        self.seen += n - 1
        self.seg_records += n - 1
        batch = Batch(cols=cols, segment=seg)
        self.recent.extend(batch.at(k) for k in range(max(1, n - RECENT_MAX), n))
        self.prev = batch.at(n - 1)
        return batch

    def _one(self, k: int, cols: Columns) -> Point | None:
        """Record ``k`` as a point; a counter record without its pair (an evaluation's,
        say) is none."""
        _, _, _, totals, secs, _ = cols
        if totals is not None and (totals[k] is None or secs is None or secs[k] is None):
            return None
        return self.point(*_record(cols, k))

    def point(
        self,
        line: int | None,
        step: float | None,
        value: float | None,
        count: float | None,
        seconds: float | None,
        rate: float | None = None,
    ) -> Point:
        """The record as a point, opening a new segment where the counters or the step
        went back."""
        # NaN or an infinity is no speed (the summary counts them as damage); a count
        # or clock that is not finite opens no span.
        if value is not None and not math.isfinite(value):
            value = None
        if count is not None and seconds is not None and not math.isfinite(count + seconds):
            count = seconds = None
        prev = self.prev
        if prev is None:
            why: str | None = self.pending or "the log's first record"
            self.pending = None
        else:
            why = break_reason(prev, step, seconds, count)
        if why is not None:
            if self.seen:
                self.segment += 1
            self.seg_records = 0
            if len(self.segments) < MAX_SEGMENTS:
                self.segments.append(
                    {"first_line": line, "first_step": step, "why": why, "records": 0}
                )
        p = Point(line, step, value, count, seconds, rate, self.segment)
        if self.head is None:
            self.head = p
        self.seen += 1
        self.seg_records += 1
        if len(self.segments) == self.segment + 1:
            seg = self.segments[-1]
            seg["records"] += 1
            seg["last_line"], seg["last_step"] = line, step
        self.recent.append(p)
        self.prev = p
        return p

    def recent_figure(self) -> dict[str, Any] | None:
        """The last K records of the last segment (K: a quarter of its records, at least
        ``RECENT_MIN``, at most ``RECENT_MAX``), and the figure over them."""
        if self.prev is None or self.kind is None:
            return None
        last = [p for p in self.recent if p.segment == self.prev.segment]
        k = min(len(last), max(RECENT_MIN, min(RECENT_MAX, self.seg_records // RECENT_SHARE)))
        pts = last[-k:]
        if not pts:
            return None
        doc: dict[str, Any] = {
            "records": len(pts),
            "first_line": pts[0].line,
            "last_line": pts[-1].line,
            "first_step": pts[0].step,
            "last_step": pts[-1].step,
        }
        if self.kind == "stated":
            vals = sorted(p.value for p in pts if p.value is not None)
            if not vals:
                return None
            doc.update(
                value=middle(vals), how=f"median of {self.field} over the last {len(pts)} records"
            )
            return doc
        rate = span_rate(pts[0], pts[-1], self.bounds)
        if rate is None:
            return None
        doc.update(
            value=rate[0],
            error=rate[1],
            how=f"{self.how}, from the first to the last of the last {len(pts)} records",
            first=point_doc(pts[0]),
            last=point_doc(pts[-1]),
        )
        return doc

    def median_interval(self) -> float | None:
        """The run's own logging interval: the median of the seconds between
        consecutive recent records of one segment (counter kinds, whose seconds are the
        trainer's clock), None where the speed carries no clock."""
        pts = [p for p in self.recent if p.seconds is not None]
        gaps = sorted(
            b.seconds - a.seconds  # type: ignore[operator]
            for a, b in zip(pts, pts[1:])  # noqa: RUF007 (3.8 has no pairwise)
            if a.segment == b.segment and b.seconds > a.seconds  # type: ignore[operator]
        )
        return middle(gaps) if gaps else None

    def shift_lines(self, delta: int | None) -> None:
        """Renumber a piece read on its own (``forked.shift_lines``)."""
        for seg in self.segments:
            for key in ("first_line", "last_line"):
                if seg.get(key) is not None:
                    seg[key] = None if delta is None else seg[key] + delta
        self.recent = deque((moved(p, delta) for p in self.recent), maxlen=RECENT_MAX)  # type: ignore[misc]
        self.prev = moved(self.prev, delta)
        self.head = moved(self.head, delta)
        self.first_window_last = moved(self.first_window_last, delta)

    def absorb(self, other: Speed, continuous: bool, windows: list[dict[str, Any]]) -> None:
        """Append ``other``, the speed of the records after these (a forked read's next
        piece, whose window summaries are ``windows``; ``continuous`` False when a part
        between was not read), as if one reader had read both: the piece's first record
        continues the last segment unless it went back, and the piece's first window with
        a counter point (its summary, updated here) takes its difference from this
        part's last point."""
        first_window = windows[other.first_window_index] if windows else None
        if self.kind is None:
            self.kind, self.field, self.unit, self.how = (
                other.kind,
                other.field,
                other.unit,
                other.how,
            )
        head, prev = other.head, self.prev
        if head is None:
            return
        segs = [dict(seg) for seg in other.segments]
        if prev is None or not self.seen:
            shift, joined = 0, False
        else:
            why = GAP if not continuous else break_reason(prev, head.step, head.seconds, head.total)
            joined = why is None
            shift = self.segment if joined else self.segment + 1
            if joined and segs and len(self.segments) == self.segment + 1:
                last = self.segments[-1]
                last["records"] += segs[0]["records"]
                last["last_line"] = segs[0].get("last_line")
                last["last_step"] = segs[0].get("last_step")
                segs = segs[1:]
            elif joined and segs:
                segs = segs[1:]
            elif segs:
                segs[0]["why"] = why
        self.segments.extend(segs[: max(0, MAX_SEGMENTS - len(self.segments))])
        self.recent.extend(p._replace(segment=p.segment + shift) for p in other.recent)
        assert other.prev is not None
        self.prev = other.prev._replace(segment=other.prev.segment + shift)
        self.seg_records = (
            self.seg_records + other.seg_records
            if joined and other.segment == 0
            else other.seg_records
        )
        self.segment = self.prev.segment
        self.seen += other.seen
        self.windows_with_speed += other.windows_with_speed
        self.bounds.absorb(other.bounds)
        last_of_first = other.first_window_last
        if (
            joined
            and prev is not None
            and first_window is not None
            and last_of_first is not None
            and last_of_first.segment == 0
            and self.kind in ("stated_average", "derived")
        ):
            window = WindowSpeed(prev)
            window.add(last_of_first._replace(segment=prev.segment))
            had = first_window.get("speed") is not None
            for key in ("speed", "speed_from", "speed_to", "speed_error"):
                first_window.pop(key, None)
            first_window.update(window.summary(self.kind, self.bounds))
            self.windows_with_speed += (first_window.get("speed") is not None) - had

    def summary(self, early: list[dict[str, Any]]) -> dict[str, Any]:
        """The speed's part of the summary; ``early``: the log's early windows
        (``result.early_windows``), whose median is the early baseline."""
        vals = sorted(w["speed"] for w in early if w.get("speed") is not None)
        early_value = middle(vals) if vals else None
        return {
            "kind": self.kind,
            "field": self.field,
            "unit": self.unit,
            "how": self.how or None,
            "window_how": (
                "median of the stated values of the window's records"
                if self.kind == "stated"
                else "difference of the counts over the difference of the seconds, from"
                " the window's first record (or the segment's last before it) to its last,"
                " within one run segment"
                if self.kind is not None
                else None
            ),
            "segments": self.segments,
            "segment_count": self.segment + 1 if self.prev is not None else 0,
            "windows_with_speed": self.windows_with_speed,
            "median_interval_s": self.median_interval(),
            "recent": self.recent_figure(),
            "early": {
                "value": early_value,
                # early_windows: windows[1 : 1 + n/4]
                "windows": [1, len(early)] if early else None,
                "how": "median of the windows' speed over windows 2 to 1+n/4 of the log's n"
                " (the first is warm-up)",
            },
        }


class Batch:
    """A batch of records as the speed read them: each a point (where something went back
    or was missing), or columns of one segment whose points are made on demand."""

    __slots__ = ("cols", "points", "segment")

    def __init__(
        self,
        points: list[Point | None] | None = None,
        cols: Columns | None = None,
        segment: int = 0,
    ) -> None:
        self.points = points
        self.cols = cols
        self.segment = segment  # the one segment the columns are a stretch of

    def at(self, k: int) -> Point:
        assert self.cols is not None
        return Point(*_record(self.cols, k), self.segment)

    def feed(self, window: WindowSpeed, i: int, j: int) -> None:
        """Records ``i`` to ``j`` (excluded) into ``window``, as ``WindowSpeed.add`` one
        by one would."""
        if self.points is not None:
            for p in self.points[i:j]:
                if p is not None:
                    window.add(p)
            return
        if j <= i:
            return
        assert self.cols is not None
        _, _, values, totals, _, _ = self.cols
        seg = self.segment
        if values is not None:
            window.vals.extend(values[i:j])
        if totals is not None:
            if window.anchor is None or window.anchor.segment != seg:
                window.anchor = self.at(i)
            window.last = self.at(j - 1)


class WindowSpeed:
    """What a window keeps of the speed: the stated values, or the first and last point
    of its last segment (the span its rate is taken over)."""

    __slots__ = ("anchor", "last", "vals")

    def __init__(self, anchor: Point | None) -> None:
        self.anchor = anchor  # the segment's last point before this window, if any
        self.last: Point | None = None
        self.vals: list[float] = []

    def shift_lines(self, delta: int | None) -> None:
        self.anchor = moved(self.anchor, delta)
        self.last = moved(self.last, delta)

    def add(self, p: Point) -> None:
        if p.value is not None:
            self.vals.append(p.value)
        if p.total is None:
            return
        if self.anchor is None or self.anchor.segment != p.segment:
            self.anchor = p
        self.last = p

    def summary(self, kind: str | None, bounds: Bounds) -> dict[str, Any]:
        if kind == "stated":
            vals = sorted(self.vals)
            return {"speed": middle(vals) if vals else None}
        if self.anchor is None or self.last is None:
            return {"speed": None}
        rate = span_rate(self.anchor, self.last, bounds)
        out: dict[str, Any] = {
            "speed_from": point_doc(self.anchor),
            "speed_to": point_doc(self.last),
        }
        if rate is None or (rate[0] > 0 and rate[1] > MAX_REL_ERROR * rate[0]) or rate[0] <= 0:
            out["speed"] = None
            if rate is not None:
                out["speed_error"] = rate[1]
            return out
        out["speed"] = rate[0]
        out["speed_error"] = rate[1]
        return out
