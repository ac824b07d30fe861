"""tools/parsers/_trainlog/speed.py keeps a log's speed as its trainer states it: the
records as points split into run segments (a segment ends where the step, the seconds or
the count go back, or where part of the log was not read), the recent figure over the
last records of the last segment, and each window's figure (``WindowSpeed``): the median
of stated values, or a difference of counts over a difference of seconds within one
segment, refused when its rounding bound is too wide.

The whole reading of logs is held to an oracle in test_speed_oracle.py and
test_speed_sources.py; here ``Speed``, ``Batch`` and ``WindowSpeed`` are driven directly."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tools.parsers._trainlog.points import Bounds, Point
from tools.parsers._trainlog.speed import GAP, MAX_SEGMENTS, Batch, Speed, WindowSpeed


def counted(line: int, total: float, seconds: float, segment: int = 0) -> Point:
    """A counter point whose step is its line."""
    return Point(line, line, None, total, seconds, None, segment)


def test_the_first_record_opens_a_segment_and_a_step_going_back_another() -> None:
    """The log's first record opens segment 0; a record whose step went back opens the
    next one. Each segment says where it begins and ends, why it began and how many
    records it holds."""
    sp = Speed()
    sp.point(10, 1.0, 5.0, None, None)
    sp.point(11, 2.0, 5.0, None, None)
    last = sp.point(12, 1.0, 6.0, None, None)
    assert last == Point(12, 1.0, 6.0, None, None, None, 1)
    assert sp.segments == [
        {
            "first_line": 10,
            "first_step": 1.0,
            "why": "the log's first record",
            "records": 2,
            "last_line": 11,
            "last_step": 2.0,
        },
        {
            "first_line": 12,
            "first_step": 1.0,
            "why": "the step went back",
            "records": 1,
            "last_line": 12,
            "last_step": 1.0,
        },
    ]


def test_a_gap_in_the_read_opens_a_segment_even_when_counters_go_on() -> None:
    """After a part of the log that was not read, the next record opens a new segment,
    saying so, although its step, count and seconds went forward."""
    sp = Speed()
    sp.point(1, 1.0, None, 100.0, 10.0)
    sp.gap()
    p = sp.point(None, 900.0, None, 90_000.0, 900.0)
    assert p.segment == 1
    assert sp.segments[-1]["why"] == GAP == "a part of the log between was not read"


def test_non_finite_numbers_make_no_point_values() -> None:
    """A NaN or infinite stated value is no speed; a count or clock that is not finite
    opens no span, so both are dropped from the point."""
    sp = Speed()
    assert sp.point(1, 1.0, math.nan, None, None) == Point(1, 1.0, None, None, None, None, 0)
    assert sp.point(2, 2.0, None, math.inf, 5.0) == Point(2, 2.0, None, None, None, None, 0)


def test_the_first_source_named_is_kept() -> None:
    """The speed's source is set once, by the first batch that names one."""
    sp = Speed()
    sp.source("stated", "tok_s", "tokens/s", "tok_s as stated")
    sp.source("derived", "tokens", "tokens/s", "difference of tokens")
    assert (sp.kind, sp.field, sp.unit, sp.how) == (
        "stated",
        "tok_s",
        "tokens/s",
        "tok_s as stated",
    )


def test_a_clean_batch_is_one_stretch_of_the_segment_made_into_points_on_demand() -> None:
    """Records with every number present and nothing going back are kept as columns of
    the current segment: the segment counts them all, the last one is the point a next
    record is compared with, and any record becomes its point when asked."""
    sp = Speed()
    batch = sp.run([1, 2, 3, 4], [1, 2, 3, 4], None, [100, 200, 300, 400], [10, 20, 30, 40], None)
    assert batch.points is None and batch.segment == 0
    assert batch.at(2) == Point(3, 3, None, 300, 30, None, 0)
    assert sp.prev == Point(4, 4, None, 400, 40, None, 0)
    assert (sp.seen, sp.seg_records) == (4, 4)
    assert sp.segments == [
        {
            "first_line": 1,
            "first_step": 1,
            "why": "the log's first record",
            "records": 4,
            "last_line": 4,
            "last_step": 4,
        }
    ]


def test_a_clean_batch_whose_first_record_went_back_is_a_new_segment() -> None:
    """Only the first record of a batch is compared with the record before it: where it
    went back, the whole batch is a stretch of the new segment."""
    sp = Speed()
    sp.run([1, 2], [10, 11], None, [100, 200], [10, 20], None)
    batch = sp.run([3, 4], [1, 2], None, [10, 20], [1, 2], None)
    assert batch.segment == 1
    assert [(s["why"], s["records"]) for s in sp.segments] == [
        ("the log's first record", 2),
        ("the step went back", 2),
    ]


def test_a_batch_with_a_missing_count_is_read_point_by_point() -> None:
    """A record without its count (an evaluation's, say) is no point; the others are
    points of the segment, one by one."""
    sp = Speed()
    batch = sp.run([5, 6, 7], [5, 6, 7], None, [500, None, 700], [50, 60, 70], None)
    assert batch.points == [
        Point(5, 5, None, 500, 50, None, 0),
        None,
        Point(7, 7, None, 700, 70, None, 0),
    ]


def test_the_recent_stated_figure_is_the_median_of_a_quarter_of_the_segment() -> None:
    """With a stated rate, the recent figure is the median of the last quarter of the
    last segment's records (20 records: the last 5, lines 16 to 20)."""
    sp = Speed()
    sp.source("stated", "tok_s", "tokens/s", "tok_s as stated at each record")
    n: list[int | None] = list(range(1, 21))
    sp.run(n, n, [float(i) for i in range(1, 21)], None, None, None)
    assert sp.recent_figure() == {
        "records": 5,
        "first_line": 16,
        "last_line": 20,
        "first_step": 16,
        "last_step": 20,
        "value": 18.0,
        "how": "median of tok_s over the last 5 records",
    }


def test_the_recent_counter_figure_spans_at_least_three_records() -> None:
    """With counts and seconds, the recent figure is the difference over the last records
    (a quarter of 8 is 2, so the least, 3): 200 counted over 20 whole seconds, each clock
    reading good to half a second; it cites its two ends."""
    sp = Speed()
    sp.source("derived", "tokens", "tokens/s", "difference of tokens over difference of time")
    n: list[int | None] = list(range(1, 9))
    sp.run(n, n, None, [100 * i for i in range(1, 9)], [10 * i for i in range(1, 9)], None)
    assert sp.recent_figure() == {
        "records": 3,
        "first_line": 6,
        "last_line": 8,
        "first_step": 6,
        "last_step": 8,
        "value": 10.0,
        "error": 0.5,
        "how": (
            "difference of tokens over difference of time, from the first to the last of"
            " the last 3 records"
        ),
        "first": {"line": 6, "step": 6, "count": 600, "seconds": 60},
        "last": {"line": 8, "step": 8, "count": 800, "seconds": 80},
    }


def test_no_recent_figure_without_a_source_or_records() -> None:
    """A speed with no source, or no record read, has no recent figure."""
    sp = Speed()
    assert sp.recent_figure() is None
    sp.point(1, 1.0, 3.0, None, None)
    assert sp.recent_figure() is None


def test_the_median_interval_is_taken_within_segments_only() -> None:
    """The run's logging interval is the median of the seconds between consecutive
    records of one segment; the drop to a new segment's clock is no interval."""
    sp = Speed()
    sp.run([1, 2, 3], [1, 2, 3], None, [1, 2, 3], [10, 20, 35], None)
    sp.run([4, 5], [1, 2], None, [1, 2], [5, 7], None)
    assert sp.median_interval() == 10
    stated = Speed()
    stated.point(1, 1.0, 3.0, None, None)
    assert stated.median_interval() is None


def test_segments_past_the_limit_are_counted_but_not_listed() -> None:
    """At most ``MAX_SEGMENTS`` segments are described; the count of segments goes on."""
    sp = Speed()
    for i in range(MAX_SEGMENTS + 6):
        sp.point(i, float(1000 - i), 1.0, None, None)
    assert len(sp.segments) == MAX_SEGMENTS
    assert sp.summary([])["segment_count"] == MAX_SEGMENTS + 6


def test_the_summary_names_how_windows_were_figured_and_the_early_baseline() -> None:
    """The summary says how a window's figure is computed for its kind, and the early
    baseline is the median of the early windows' speeds (windows without one left out)."""
    sp = Speed()
    sp.source("stated", "tok_s", "tokens/s", "tok_s as stated at each record")
    sp.point(1, 1.0, 3.0, None, None)
    early: list[dict[str, Any]] = [{"speed": 3.0}, {"speed": None}, {"speed": 1.0}, {"speed": 2.0}]
    summary = sp.summary(early)
    assert summary["window_how"] == "median of the stated values of the window's records"
    assert summary["early"]["value"] == 2.0
    assert summary["early"]["windows"] == [1, 4]
    assert (summary["segment_count"], summary["median_interval_s"]) == (1, None)
    counter = Speed()
    counter.source("derived", "tokens", "tokens/s", "x")
    assert counter.summary([])["window_how"] == (
        "difference of the counts over the difference of the seconds, from the window's"
        " first record (or the segment's last before it) to its last, within one run segment"
    )
    empty = Speed().summary([])
    assert (empty["kind"], empty["how"], empty["window_how"], empty["segment_count"]) == (
        None,
        None,
        None,
        0,
    )
    assert (empty["early"]["value"], empty["early"]["windows"]) == (None, None)


def test_a_stated_window_is_the_median_of_its_values() -> None:
    """A window of stated rates reports their median; one with none has no speed."""
    window = WindowSpeed(None)
    for v in (3.0, 1.0, 2.0, 10.0):
        window.add(Point(1, 1, v, None, None, None, 0))
    assert window.summary("stated", Bounds()) == {"speed": 2.5}
    assert WindowSpeed(None).summary("stated", Bounds()) == {"speed": None}


def test_a_counter_window_takes_its_difference_from_the_segments_last_point_before() -> None:
    """A window's rate runs from the segment's last point before the window to the
    window's last point: 200 over 20 whole seconds is 10, good to 0.5."""
    window = WindowSpeed(counted(5, 500, 50))
    window.add(counted(6, 600, 60))
    window.add(counted(7, 700, 70))
    assert window.summary("derived", Bounds()) == {
        "speed_from": {"line": 5, "step": 5, "count": 500, "seconds": 50},
        "speed_to": {"line": 7, "step": 7, "count": 700, "seconds": 70},
        "speed": 10.0,
        "speed_error": 0.5,
    }


def test_a_window_in_a_new_segment_starts_its_span_afresh() -> None:
    """A point from another segment than the anchor's replaces it: no difference crosses
    a segment."""
    window = WindowSpeed(counted(5, 500, 50, segment=0))
    window.add(counted(6, 10, 1, segment=1))
    window.add(counted(7, 210, 21, segment=1))
    summary: dict[str, Any] = window.summary("derived", Bounds())
    assert summary["speed_from"] == {"line": 6, "step": 6, "count": 10, "seconds": 1}
    assert summary["speed"] == 10.0


@pytest.mark.parametrize(
    ("anchor", "last", "expected"),
    [
        (
            counted(1, 100, 10),
            counted(2, 110, 11),
            {"speed": None, "speed_error": 10.0},
        ),
        (
            counted(1, 500, 10),
            counted(2, 500, 20),
            {"speed": None, "speed_error": 0.0},
        ),
        (counted(1, 500, 10), counted(1, 500, 10), {"speed": None}),
    ],
    ids=["rounding-too-wide", "no-progress", "no-time-passed"],
)
def test_a_counter_window_without_a_trustworthy_rate_has_no_speed(
    anchor: Point, last: Point, expected: dict[str, Any]
) -> None:
    """A rate whose bound is more than a fifth of itself (10 counted over one whole
    second, each clock reading half a second off), a rate of zero, or no time between
    the ends is no speed; the bound is still given where there was a rate."""
    window = WindowSpeed(anchor)
    window.add(last)
    summary = window.summary("derived", Bounds())
    assert {k: summary[k] for k in ("speed", "speed_error") if k in summary} == expected


def test_a_window_without_counter_points_has_no_speed() -> None:
    """A counter window that saw no point with a count has nothing to difference."""
    window = WindowSpeed(None)
    window.add(Point(1, 1, None, None, 10.0, None, 0))
    assert window.summary("derived", Bounds()) == {"speed": None}


def test_feeding_a_stretch_of_columns_is_adding_its_points() -> None:
    """A batch kept as columns feeds a window records ``i`` to ``j`` as adding them one
    by one would: its stated values, and its first and last point as the span."""
    cols_batch = Batch(
        cols=(
            [1, 2, 3, 4],
            [1, 2, 3, 4],
            [9.0, 8.0, 7.0, 6.0],
            [10, 20, 30, 40],
            [1, 2, 3, 4],
            None,
        ),
        segment=2,
    )
    window = WindowSpeed(None)
    cols_batch.feed(window, 1, 3)
    assert window.vals == [8.0, 7.0]
    assert window.anchor == Point(2, 2, 8.0, 20, 2, None, 2)
    assert window.last == Point(3, 3, 7.0, 30, 3, None, 2)
    cols_batch.feed(window, 3, 3)
    assert window.last == Point(3, 3, 7.0, 30, 3, None, 2)


def test_feeding_points_skips_the_records_that_are_none() -> None:
    """A batch read point by point feeds the window its points, skipping records that
    made none."""
    points_batch = Batch(points=[counted(1, 10, 1), None, counted(3, 30, 3)])
    window = WindowSpeed(None)
    points_batch.feed(window, 0, 3)
    assert (window.anchor, window.last) == (counted(1, 10, 1), counted(3, 30, 3))


def test_shifting_lines_renumbers_segments_and_points() -> None:
    """A piece read on its own is renumbered by ``delta``; an unknown delta makes its
    line numbers unknown."""
    sp = Speed()
    sp.point(1, 1.0, None, 10.0, 1.0)
    sp.point(2, 2.0, None, 20.0, 2.0)
    sp.shift_lines(100)
    assert (sp.segments[0]["first_line"], sp.segments[0]["last_line"]) == (101, 102)
    assert [p.line for p in sp.recent] == [101, 102]
    assert sp.head is not None and sp.prev is not None
    assert (sp.head.line, sp.prev.line) == (101, 102)
    sp.shift_lines(None)
    assert sp.prev is not None
    assert (sp.segments[0]["first_line"], sp.prev.line) == (None, None)
