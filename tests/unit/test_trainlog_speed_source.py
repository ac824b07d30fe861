"""tools/parsers/_trainlog/speed_source.py decides which figure of a log is its speed,
from the first batch of records that has one, the trainer's own figure first: a stated
tokens/s, a stated average since the segment began, a running token total over seconds,
a rate in another unit, and last the steps over the records' clock. It then hands each
batch to the speed as points from that source.

The summarizer is the real one; its columns are read the way its ``batch`` reads them."""

from __future__ import annotations

from typing import Any

import pytest

from tools.parsers._trainlog.columns import Col, numbers
from tools.parsers._trainlog.points import Point
from tools.parsers._trainlog.speed_source import average_field, choose_source, speed_points
from tools.parsers._trainlog.summarizer import Summarizer


def fresh() -> Summarizer:
    return Summarizer({}, None, 100, 1000)


def read(summ: Summarizer, recs: list[dict[str, Any]]) -> tuple[list[int | None], Col, Col, Col]:
    """The batch's lines (1 on), steps, throughput and clock columns, as ``batch`` reads
    them (which also names the fields the summarizer found)."""
    lines: list[int | None] = list(range(1, len(recs) + 1))
    offsets = [0] * len(recs)
    steps = numbers(summ.column("step", recs, lines, offsets))
    toks = numbers(summ.column("throughput", recs, lines, offsets))
    return lines, steps, toks, summ.times(recs, lines, offsets)


def source_of(summ: Summarizer, recs: list[dict[str, Any]]) -> tuple[Any, ...]:
    lines, steps, toks, times = read(summ, recs)
    chosen = choose_source(summ, recs, lines, steps, toks, times)
    sp = summ.speed
    return (chosen, sp.kind, sp.field, sp.unit, sp.how)


@pytest.mark.parametrize(
    ("recs", "field"),
    [
        ([{"step": 1}], None),
        ([{"train_steps_per_second": 1.0}], "train_steps_per_second"),
        (
            [{"train_samples_per_second": 8.0}, {"train_tokens_per_second": 900.0}],
            "train_tokens_per_second",
        ),
        (
            [{"step": 1}, {"train_samples_per_second": 8.0, "train_steps_per_second": 1.0}],
            "train_samples_per_second",
        ),
    ],
    ids=["none", "steps", "tokens-before-samples-in-any-record", "samples-before-steps"],
)
def test_average_field_is_the_best_stated_average_any_record_holds(
    recs: list[dict[str, Any]], field: str | None
) -> None:
    """Of the stated averages (tokens, then samples, then steps per second) the best one
    that any record of the batch holds is the field, whatever the records' order."""
    assert average_field(recs) == field


def test_a_stated_tokens_per_second_comes_first() -> None:
    """A throughput field in the records is the speed as stated, even beside a stated
    average and a clock."""
    recs = [{"step": 1, "tokens_per_sec": 900.0, "train_tokens_per_second": 850.0, "time": 5.0}]
    assert source_of(fresh(), recs) == (
        True,
        "stated",
        "tokens_per_sec",
        "tokens/s",
        "tokens_per_sec as stated at each record",
    )


def test_a_stated_average_comes_before_a_clock() -> None:
    """Trainer's average since the segment began is differenced over its own seconds;
    which seconds is filled in when the points are read."""
    recs = [{"step": 1, "train_tokens_per_second": 850.0, "train_runtime": 10.0, "time": 5.0}]
    assert source_of(fresh(), recs) == (
        True,
        "stated_average",
        "train_tokens_per_second",
        "tokens/s",
        "difference of train_tokens_per_second x {elapsed} over difference of {elapsed}",
    )


def test_a_running_total_with_its_clock_is_derived_even_without_a_value_yet() -> None:
    """Where the summarizer found a running token total and its clock (a forked piece of
    one record derives no value yet) the source is that difference."""
    summ = fresh()
    summ.cumulative = True
    summ.derive_cols = ([100], [1.0])
    summ.derive_names = ("total_tokens", "elapsed")
    assert source_of(summ, [{"step": 1, "total_tokens": 100, "elapsed": 1.0}]) == (
        True,
        "derived",
        "total_tokens",
        "tokens/s",
        "difference of total_tokens over difference of elapsed",
    )


def test_values_derived_by_the_summarizer_are_their_own_source() -> None:
    """Throughput the summarizer derived (per-step tokens over a step time) is named by
    what it was derived from."""
    summ = fresh()
    summ.derived = {"tokens": "num_tokens", "how": "num_tokens over step_time"}
    assert source_of(summ, [{"step": 1, "num_tokens": 4096}]) == (
        True,
        "derived_values",
        "num_tokens",
        "tokens/s",
        "num_tokens over step_time",
    )


def test_a_rate_in_another_unit_is_stated_in_that_unit() -> None:
    """A samples/s rate (the whole process's before one GPU's) is the speed in
    samples/s, and the field it is read from is remembered."""
    summ = fresh()
    recs = [
        {
            "step": 1,
            "throughput/device/samples_per_sec": 2.0,
            "throughput/samples_per_sec": 8.0,
            "time": 5.0,
        }
    ]
    assert source_of(summ, recs) == (
        True,
        "stated",
        "throughput/samples_per_sec",
        "samples/s",
        "throughput/samples_per_sec as stated at each record",
    )
    assert summ.rate_field == "throughput/samples_per_sec"


@pytest.mark.parametrize(
    ("rec", "clock", "over_timestamps"),
    [
        ({"step": 1, "time": 5.0}, "time", True),
        ({"step": 1, "elapsed": 5.0}, "elapsed", False),
    ],
    ids=["timestamps", "seconds-since-start"],
)
def test_steps_over_the_records_clock_are_the_last_resort(
    rec: dict[str, Any], clock: str, over_timestamps: bool
) -> None:
    """With no figure of the trainer's own, the speed is the steps over the records'
    timestamps, or over their seconds since start when they have no timestamps."""
    summ = fresh()
    assert source_of(summ, [rec]) == (
        True,
        "derived",
        "step",
        "steps/s",
        f"difference of step over difference of {clock}",
    )
    assert summ.steps_over is over_timestamps


def test_a_batch_with_no_figure_leaves_the_source_unset() -> None:
    """Records with steps but no clock, rate or count give no source yet; no points."""
    summ = fresh()
    recs = [{"step": 1, "loss": 2.5}]
    assert source_of(summ, recs) == (False, None, None, "tokens/s", "")
    lines, steps, toks, times = read(summ, recs)
    assert speed_points(summ, recs, lines, steps, toks, times) is None


def points_of(summ: Summarizer, recs: list[dict[str, Any]]) -> list[Point | None]:
    """Every record of the batch as the point the speed made of it."""
    lines, steps, toks, times = read(summ, recs)
    batch = speed_points(summ, recs, lines, steps, toks, times)
    assert batch is not None
    if batch.points is not None:
        return batch.points
    return [batch.at(k) for k in range(len(recs))]


def test_stated_points_carry_the_stated_values() -> None:
    """With a stated throughput each point's value is the record's figure."""
    recs = [{"step": 1, "tokens_per_sec": 900.0}, {"step": 2, "tokens_per_sec": 950.0}]
    assert points_of(fresh(), recs) == [
        Point(1, 1, 900.0, None, None, None, 0),
        Point(2, 2, 950.0, None, None, None, 0),
    ]


def test_a_rate_in_another_unit_is_read_from_its_own_field() -> None:
    """With a samples/s source the points' values are that field's, not a throughput."""
    recs = [{"step": 1, "samples_per_sec": 8.0}, {"step": 2, "samples_per_sec": 9.0}]
    assert points_of(fresh(), recs) == [
        Point(1, 1, 8.0, None, None, None, 0),
        Point(2, 2, 9.0, None, None, None, 0),
    ]


def test_stated_average_points_are_rate_times_seconds() -> None:
    """A stated average becomes a count (the average times ``train_runtime``) over those
    seconds, the average kept for its rounding; the how names the seconds field."""
    summ = fresh()
    recs = [
        {"step": 1, "train_tokens_per_second": 100.0, "train_runtime": 10.0},
        {"step": 2, "train_tokens_per_second": 110.0, "train_runtime": 20.0},
    ]
    assert points_of(summ, recs) == [
        Point(1, 1, None, 1000.0, 10.0, 100.0, 0),
        Point(2, 2, None, 2200.0, 20.0, 110.0, 0),
    ]
    assert summ.speed.how == (
        "difference of train_tokens_per_second x train_runtime over difference of train_runtime"
    )


def test_a_stated_average_without_its_seconds_is_no_point() -> None:
    """A record holding the average but not the seconds it runs over makes no point."""
    recs = [
        {"step": 1, "train_tokens_per_second": 100.0, "train_runtime": 10.0},
        {"step": 2, "train_tokens_per_second": 110.0},
    ]
    assert points_of(fresh(), recs) == [Point(1, 1, None, 1000.0, 10.0, 100.0, 0), None]


@pytest.mark.parametrize(
    ("recs", "points"),
    [
        (
            [{"step": 1, "time": 5.0}, {"step": 3, "time": 7.5}],
            [Point(1, 1, None, 1, 5.0, None, 0), Point(2, 3, None, 3, 7.5, None, 0)],
        ),
        (
            [{"step": 1, "elapsed": 2.0}, {"step": 3, "elapsed": 4.0}],
            [Point(1, 1, None, 1, 2.0, None, 0), Point(2, 3, None, 3, 4.0, None, 0)],
        ),
    ],
    ids=["over-timestamps", "over-seconds-since-start"],
)
def test_steps_per_second_points_count_steps_over_the_clock(
    recs: list[dict[str, Any]], points: list[Point]
) -> None:
    """With the last-resort source each point's count is its step and its seconds the
    clock the source chose."""
    assert points_of(fresh(), recs) == points


def test_a_running_totals_points_are_the_summarizers_counts_and_seconds() -> None:
    """A derived speed takes its counts and seconds from the columns the summarizer
    derived for the batch."""
    summ = fresh()
    summ.speed.source("derived", "total_tokens", "tokens/s", "difference of total_tokens")
    summ.derive_cols = ([100, 300], [1.0, 2.0])
    recs = [{"step": 1}, {"step": 2}]
    assert points_of(summ, recs) == [
        Point(1, 1, None, 100, 1.0, None, 0),
        Point(2, 2, None, 300, 2.0, None, 0),
    ]


def test_a_derived_source_without_its_columns_gives_no_points() -> None:
    """A token-total source whose columns the summarizer has not derived for this batch
    gives the speed nothing."""
    summ = fresh()
    summ.speed.source("derived", "total_tokens", "tokens/s", "difference of total_tokens")
    recs = [{"step": 1}]
    lines, steps, toks, times = read(summ, recs)
    assert speed_points(summ, recs, lines, steps, toks, times) is None
