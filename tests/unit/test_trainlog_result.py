"""A summarizer's state as the train log's summary (tools/parsers/_trainlog/result.py): the
schema read and why, the early baseline, aggregates over series, the clock's gaps and the
damage, as the report and the analyses read them."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tools.parsers._trainlog.result import (
    EARLY_WHY,
    aggregates,
    clock,
    damage,
    early_windows,
    result,
    schema,
)
from tools.parsers._trainlog.summarizer import Summarizer

GROUPS_WHY = "fields of role, device, rank, local_rank, global_rank in the first record"
NO_THROUGHPUT = (
    "no field with a common throughput name, and no token count with seconds to derive it from"
)


def read(
    recs: list[dict[str, Any]],
    fields: dict[str, Any] | None = None,
    scale: float | None = None,
    window: int = 100,
) -> Summarizer:
    summ = Summarizer(dict(fields or {}), scale, window, 1000)
    summ.batch(recs, list(range(1, len(recs) + 1)), [0] * len(recs))
    return summ


@pytest.mark.parametrize(
    ("recs", "fields", "why"),
    [
        (
            [{"step": 1, "loss": 2.0, "tok/s": 5.0}],
            {},
            {
                "step": "common name 'step'",
                "loss": "common name 'loss'",
                "throughput": "common name 'tok/s'",
            },
        ),
        (
            [{"step": 1, "train/lm_loss": 2.0, "perf/throughput": 5.0}],
            {},
            {
                "step": "common name 'step'",
                "loss": "'train/lm_loss' ends in a common name",
                "throughput": "'perf/throughput' ends in a common name",
            },
        ),
        (
            [{"it": 1, "speed": 5.0}],
            {"step": "it", "throughput": "speed"},
            {"step": "named by the profile", "throughput": "named by the profile"},
        ),
        ([{"step": 1}], {}, {"step": "common name 'step'", "throughput": NO_THROUGHPUT}),
        (
            [{"tokens": 4096, "step_time": 0.5}],
            {},
            {
                "tokens": "common name 'tokens'",
                "step_time": "common name 'step_time'",
                "throughput": "derived: tokens / step_time",
            },
        ),
        (
            [{"rank": 0, "tok/s": 5.0}],
            {},
            {"throughput": "common name 'tok/s'", "group": GROUPS_WHY},
        ),
        (
            [{"node": "a", "tok/s": 5.0}],
            {"group": ["node"]},
            {"throughput": "common name 'tok/s'", "group": "named by the profile"},
        ),
    ],
    ids=[
        "common-names",
        "nested-names",
        "profile",
        "no-throughput",
        "derived",
        "groups",
        "profile-groups",
    ],
)
def test_schema_says_why_each_field_was_read(
    recs: list[dict[str, Any]], fields: dict[str, Any], why: dict[str, str]
) -> None:
    """Each role read says why: a common name, a nested name ending in one, the profile's
    naming; the throughput says how it was derived, or why there is none; the series say
    where their fields came from."""
    got = schema(read(recs, fields))["why"]
    got.pop("speed", None)  # the speed's own wording is specified with the speed
    assert got == why


@pytest.mark.parametrize(
    ("scale", "unit"),
    [(None, "tok/s"), (1000.0, "ktok/s"), (1e6, "mtok/s"), (2.5, "x2.5 tok/s")],
    ids=["default", "ktok", "mtok", "odd-scale"],
)
def test_schema_names_the_throughput_unit(scale: float | None, unit: str) -> None:
    """The unit the throughput was read in: a known unit by name, any other scale as a
    multiple of tok/s."""
    assert schema(read([{"tok/s": 1.0}], scale=scale))["throughput_unit"] == unit


def test_schema_lists_the_fields_nobody_read() -> None:
    """Fields seen that play no role are listed, sorted, so a profile can name them; the
    fields read (and the series' fields) are not."""
    out = schema(read([{"step": 1, "rank": 0, "lr": 0.1, "epoch": 1, "loss": 2.0}]))
    assert out["ignored"] == ["epoch", "lr"]
    assert (out["step"], out["loss"], out["throughput"], out["group"]) == (
        "step",
        "loss",
        None,
        ["rank"],
    )
    assert out["format"] == "jsonl"


@pytest.mark.parametrize(
    ("n", "expected"),
    [(0, []), (1, []), (2, [1]), (4, [1]), (7, [1]), (8, [1, 2]), (12, [1, 2, 3])],
    ids=["none", "one", "two", "four", "seven", "eight", "twelve"],
)
def test_early_windows_skip_the_warm_up(n: int, expected: list[int]) -> None:
    """The early baseline is windows 2 to 1+n/4 (at least one): the first window is
    warm-up and never part of it."""
    windows = [{"i": i} for i in range(n)]
    assert [w["i"] for w in early_windows(windows)] == expected


def test_aggregates_of_one_series_are_its_own_figures() -> None:
    """A log of one series has one aggregate: the medians over its records, said so."""
    tok = {"recent_median": 90.0, "median": 100.0, "early_median": 110.0, "count": 7}
    assert aggregates({}, tok, []) == {
        "all": {
            "how": "median over the log's records (one series)",
            "groups": [],
            "recent_median": 90.0,
            "median": 100.0,
            "early_median": 110.0,
        }
    }


def test_aggregates_sum_the_series_sharing_a_value() -> None:
    """Series add up (devices work side by side): the aggregate over all series and over
    each ``field=value`` that two or more share is the sum of their medians, counting the
    series that had one; a value only one series has is no aggregate."""
    groups: dict[str, dict[str, Any]] = {
        "role=drafter,device=cuda:1": {
            "throughput": {"recent_median": 100.0, "median": 110.0, "early_median": 120.0}
        },
        "role=drafter,device=cuda:2": {
            "throughput": {"recent_median": 200.0, "median": 210.0, "early_median": None}
        },
        "role=target,device=cuda:0": {
            "throughput": {"recent_median": 1000.0, "median": 1010.0, "early_median": 1020.0}
        },
    }
    drafters = ["role=drafter,device=cuda:1", "role=drafter,device=cuda:2"]
    how = "sum of the per-group medians"
    assert aggregates(groups, {}, ["role", "device"]) == {
        "all": {
            "how": how,
            "groups": [*drafters, "role=target,device=cuda:0"],
            "recent_median": 1300.0,
            "recent_median_groups": 3,
            "median": 1330.0,
            "median_groups": 3,
            "early_median": 1140.0,
            "early_median_groups": 2,
        },
        "role=drafter": {
            "how": how,
            "groups": drafters,
            "recent_median": 300.0,
            "recent_median_groups": 2,
            "median": 320.0,
            "median_groups": 2,
            "early_median": 120.0,
            "early_median_groups": 1,
        },
    }


def test_aggregate_without_any_figure_is_none() -> None:
    """Where no series has a figure, the aggregate's figure is None (not 0) over no series."""
    groups = {
        "rank=0": {"throughput": {"median": None}},
        "rank=1": {"throughput": {"median": None}},
    }
    out = aggregates(groups, {}, ["rank"])
    assert (out["all"]["median"], out["all"]["median_groups"]) == (None, 0)
    assert list(out) == ["all"]


@pytest.mark.parametrize(
    ("times", "median", "threshold", "gaps"),
    [
        ([0.0, 10.0, 20.0, 30.0, 180.0], 10.0, 120.0, [150.0]),
        ([0.0, 10.0, 20.0, 30.0, 140.0], 10.0, 120.0, []),
        ([0.0, 20.0, 40.0, 60.0, 80.0, 230.0, 340.0], 20.0, 200.0, []),
        ([0.0, 20.0, 40.0, 60.0, 80.0, 290.0], 20.0, 200.0, [210.0]),
    ],
    ids=["long-silence", "under-two-minutes", "short-beside-slow-records", "ten-intervals"],
)
def test_clock_gaps_are_far_longer_than_the_usual_interval(
    times: list[float], median: float, threshold: float, gaps: list[float]
) -> None:
    """A gap is an interval of ten times the median interval, and at least 120 s: a
    silence shorter than that is the log's ordinary pace."""
    out = clock(read([{"time": t} for t in times]))
    assert (out["median_interval_s"], out["gap_threshold_s"]) == (median, threshold)
    assert [g["seconds"] for g in out["gaps"]] == gaps
    assert (out["first"], out["last"], out["span_s"]) == (times[0], times[-1], times[-1])
    assert out["count"] == len(times)


def test_clock_without_times() -> None:
    """A log without timestamps has no span, no median interval and the 120 s floor."""
    out = clock(read([{"step": 1}, {"step": 2}]))
    assert out == {
        "count": 0,
        "unparsed": 0,
        "first": None,
        "last": None,
        "span_s": None,
        "median_interval_s": None,
        "backwards": 0,
        "gap_threshold_s": 120.0,
        "gaps": [],
    }


def test_damage_counts_by_reason_and_orders_samples_by_line() -> None:
    """Bad lines and unusable numbers are counted in all and by reason or field; the
    unusable numbers' samples are in file order, those of unknown lines (the tail of a
    huge log) last by offset."""
    summ = read([])
    summ.bad("not_json", 3, 30, b"{")
    summ.bad("binary", 5, 50, b"\x00")
    summ.bad("not_json", 9, 90, b"[")
    summ.unusable("loss", None, 900, "loss", "why")
    summ.unusable("step", 8, 80, "step", "why")
    summ.unusable("loss", None, 700, "loss", "why")
    summ.unusable("step", 2, 20, "step", "why")
    out = damage(summ)
    assert out["malformed"] == 3
    assert out["malformed_by_reason"] == {"binary": 1, "not_json": 2}
    assert [s["line"] for s in out["malformed_samples"]] == [3, 5, 9]
    bad = out["unusable_numbers"]
    assert (bad["count"], bad["by_field"]) == (4, {"loss": 2, "step": 2})
    assert [(s["line"], s["offset"]) for s in bad["samples"]] == [
        (2, 20),
        (8, 80),
        (None, 700),
        (None, 900),
    ]


def test_result_early_baseline_overall_and_per_series() -> None:
    """The early median is the median of the early windows' medians, overall and per
    series; the aggregate over the series sums the series' early medians."""
    recs = [
        {"step": p + 1, "rank": r, "tok/s": (10.0 if r == 0 else 100.0) * (p + 1)}
        for p in range(8)
        for r in (0, 1)
    ]
    out = result(read(recs, window=2))
    assert len(out["windows"]) == 8
    assert out["early_window"] == {
        "windows": 2,
        "first_step": 2,
        "last_step": 3,
        "why": EARLY_WHY,
    }
    assert out["throughput"]["early_median"] == 137.5
    assert out["groups"]["rank=0"]["throughput"]["early_median"] == 25.0
    assert out["groups"]["rank=1"]["throughput"]["early_median"] == 250.0
    assert out["aggregates"]["all"]["early_median"] == 275.0


def test_result_steps_of_several_series_are_their_union() -> None:
    """Interleaved series each count their own steps: the overall steps are the union of
    the series' (no restart where one series' line follows another's)."""
    recs = [{"step": s, "rank": r} for s in (1, 2, 3) for r in (0, 1)]
    steps = result(read(recs))["steps"]
    assert steps == {
        "count": 6,
        "min": 1,
        "max": 3,
        "restarts": 0,
        "restart_samples": [],
        "duplicates": 0,
        "per_group": True,
    }


def test_result_losses_gradients_and_last_records() -> None:
    """The loss says how many values were not finite and where the first was; the
    gradient names its field; the last records are clipped so one huge field cannot bloat
    the summary."""
    recs: list[dict[str, Any]] = [
        {"step": 1, "loss": 2.0, "grad_norm": 1.0, "note": "x" * 500},
        {"step": 2, "loss": math.inf, "grad_norm": math.nan},
    ]
    out = result(read(recs))
    assert out["loss"]["nonfinite"] == 1
    assert out["loss"]["first_nonfinite"] == {"line": 2, "step": 2, "value": "inf"}
    assert out["grad_norm"] == {
        "field": "grad_norm",
        "first_nonfinite": {"line": 2, "step": 2, "value": "nan", "field": "grad_norm"},
    }
    assert out["last_records"][0]["note"] == '"' + "x" * 159
    assert out["last_records"][1]["loss"] == "<inf: not a finite number>"
    assert (out["records"], out["throughput"]["unit"], out["throughput"]["nonfinite"]) == (
        2,
        "tok/s",
        0,
    )
