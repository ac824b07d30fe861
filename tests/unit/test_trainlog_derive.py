"""Tokens/s derived from a token count and seconds (tools/parsers/_trainlog/derive.py), for
a log whose records state no rate: a running total over the time between records, or one
step's tokens over its step time or over the time since the record before, per series."""

from __future__ import annotations

from typing import Any

import pytest

from tools.parsers._trainlog.columns import numbers
from tools.parsers._trainlog.derive import derive
from tools.parsers._trainlog.summarizer import Summarizer


def make() -> Summarizer:
    return Summarizer({}, None, 100, 1000)


def run(
    summ: Summarizer, recs: list[dict[str, Any]], groups: dict[str, list[int]] | None = None
) -> list[float | None] | None:
    """The derived column of one batch, its steps and times read as the summarizer reads
    them."""
    lines: list[int | None] = list(range(1, len(recs) + 1))
    steps = numbers(summ.column("step", recs, lines))
    times = summ.times(recs, lines, [0] * len(recs))
    out = derive(summ, recs, lines, steps, times, groups)
    return None if out is None else out.vals


@pytest.mark.parametrize(
    ("recs", "rates", "derived"),
    [
        (
            [
                {"num_input_tokens_seen": 1000, "time": 10.0},
                {"num_input_tokens_seen": 3000, "time": 12.0},
                {"num_input_tokens_seen": 6000, "time": 15.0},
            ],
            [None, 1000.0, 1000.0],
            {
                "tokens": "num_input_tokens_seen",
                "tokens_kind": "running total",
                "seconds": "time",
                "how": "difference of num_input_tokens_seen over difference of time",
            },
        ),
        (
            [{"tokens": 100 * k, "time": float(k)} for k in range(1, 5)],
            [None, 100.0, 100.0, 100.0],
            {
                "tokens": "tokens",
                "tokens_kind": "running total",
                "seconds": "time",
                "how": "difference of tokens over difference of time",
            },
        ),
        (
            [
                {"tokens": 4096, "step_time": 0.5},
                {"tokens": 4096, "step_time": 0.25},
                {"tokens": 4096, "step_time": 0},
            ],
            [8192.0, 16384.0, None],
            {
                "tokens": "tokens",
                "tokens_kind": "per step",
                "seconds": "step_time",
                "how": "tokens / step_time",
            },
        ),
        (
            [
                {"step": 10, "ntokens": 1000, "time": 0.0},
                {"step": 20, "ntokens": 1000, "time": 4.0},
                {"step": 40, "ntokens": 1000, "time": 12.0},
                {"ntokens": 1000, "time": 14.0},
            ],
            [None, 2500.0, 2500.0, 500.0],
            {
                "tokens": "ntokens",
                "tokens_kind": "per step",
                "seconds": "time",
                "how": "ntokens x steps between records / difference of time",
            },
        ),
        (
            [
                {"num_tokens_seen": 0, "train_runtime": 0.0},
                {"num_tokens_seen": 500, "train_runtime": 0.5},
                {"num_tokens_seen": 1500, "train_runtime": 1.5},
            ],
            [None, 1000.0, 1000.0],
            {
                "tokens": "num_tokens_seen",
                "tokens_kind": "running total",
                "seconds": "train_runtime",
                "how": "difference of num_tokens_seen over difference of train_runtime",
            },
        ),
    ],
    ids=[
        "running-total-by-name",
        "running-total-by-growth",
        "per-step-over-step-time",
        "per-step-times-steps-between",
        "seconds-since-start",
    ],
)
def test_derived_rates_and_how(
    recs: list[dict[str, Any]], rates: list[float | None], derived: dict[str, str]
) -> None:
    """A running total (known by name, or growing at every record) gives the tokens
    between records over the seconds between; one step's tokens go over its step time,
    else times the steps between records (one when unknown) over the seconds between;
    without timestamps the seconds since the start serve. The first record of a running
    total has no rate, and the summarizer notes what was derived from what."""
    summ = make()
    assert run(summ, recs) == rates
    assert summ.derived == derived


def test_running_total_that_goes_back_gives_no_rate() -> None:
    """Where a running total falls (the run restarted), that record has no rate; the
    next one is rated from it."""
    recs = [
        {"total_tokens": 1000, "time": 0.0},
        {"total_tokens": 2000, "time": 1.0},
        {"total_tokens": 500, "time": 2.0},
        {"total_tokens": 1500, "time": 3.0},
    ]
    assert run(make(), recs) == [None, 1000.0, None, 1000.0]


def test_clock_that_stands_still_gives_no_rate() -> None:
    """Two records at the same second, or a clock gone back, give no rate (not a division
    by zero); the next record is rated from the last one seen."""
    recs = [
        {"total_tokens": 1000, "time": 5.0},
        {"total_tokens": 2000, "time": 5.0},
        {"total_tokens": 3000, "time": 4.0},
        {"total_tokens": 4000, "time": 6.0},
    ]
    assert run(make(), recs) == [None, None, None, 500.0]


def test_rate_carries_over_to_the_next_batch() -> None:
    """The last record of a batch is where the next batch's first rate starts."""
    summ = make()
    assert run(summ, [{"total_tokens": 100, "time": 1.0}]) == [None]
    assert run(summ, [{"total_tokens": 400, "time": 4.0}]) == [100.0]


def test_each_series_is_rated_on_its_own() -> None:
    """Records of several series interleaved are each rated against their own series'
    record before, never another's."""
    recs = [
        {"rank": 0, "total_tokens": 0, "time": 0.0},
        {"rank": 1, "total_tokens": 0, "time": 0.5},
        {"rank": 0, "total_tokens": 1000, "time": 1.0},
        {"rank": 1, "total_tokens": 4000, "time": 2.5},
    ]
    groups = {"rank=0": [0, 2], "rank=1": [1, 3]}
    assert run(make(), recs, groups) == [None, None, 1000.0, 2000.0]


def test_no_token_count_derives_nothing() -> None:
    """Without a token count there is nothing to derive from: no column, no note."""
    summ = make()
    assert run(summ, [{"step": 1, "time": 1.0}, {"step": 2, "time": 2.0}]) is None
    assert summ.derived is None and summ.derive_cols is None


def test_count_that_wanders_is_per_step() -> None:
    """A count under no running-total name that does not grow at every record is one
    step's tokens; the decision, once made, holds for the rest of the log."""
    summ = make()
    recs = [{"tokens": n, "time": float(k)} for k, n in enumerate([300, 200, 300, 400])]
    assert run(summ, recs) == [None, 200.0, 300.0, 400.0]
    assert summ.cumulative is False
    run(summ, [{"tokens": 500 + k, "time": 4.0 + k} for k in range(4)])
    assert summ.cumulative is False
