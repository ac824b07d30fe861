"""The train-log summarizer (tools/parsers/_trainlog/summarizer.py): blocks of records
taken column by column into per-series steps, throughput and loss, the clock, windows and
the damage counts, whatever field names, units and numbers the records hold."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tools.parsers._trainlog.summarizer import Summarizer
from tools.parsers._trainlog.values import LongInt

JAN_1_2026 = 1_767_225_600.0  # 2026-01-01T00:00:00Z in epoch seconds


def make(fields: dict[str, Any] | None = None, window: int = 100) -> Summarizer:
    return Summarizer(dict(fields or {}), None, window, 1000)


def feed(summ: Summarizer, recs: list[dict[str, Any]], first_line: int = 1) -> None:
    """One batch of records on consecutive lines, each line 100 bytes long."""
    lines: list[int | None] = list(range(first_line, first_line + len(recs)))
    summ.batch(recs, lines, [100 * (n - 1) for n in range(first_line, first_line + len(recs))])


@pytest.mark.parametrize(
    ("role", "col", "kept", "reasons"),
    [
        ("step", [1, 2, 3], [1, 2, 3], []),
        (
            "step",
            [1, 10**400, 3],
            [1, None, 3],
            ["integer of 401 digits: beyond the float range"],
        ),
        ("step", [2**70], [float(2**70)], []),
        ("time", [1.0, math.inf], [1.0, None], ["inf is not a finite number"]),
        (
            "throughput",
            [1.5, -(10**400)],
            [1.5, None],
            ["integer of 401 digits: beyond the float range"],
        ),
        (
            "throughput",
            [LongInt("9" * 5000)],
            [None],
            ["integer of 5000 digits: beyond the float range"],
        ),
        ("loss", [2.0, -math.inf], [2.0, -math.inf], []),
    ],
    ids=[
        "clean",
        "huge-int",
        "int-past-2**64-becomes-float",
        "inf-time",
        "huge-int-beside-float",
        "past-digit-limit",
        "inf-loss-kept-for-counting",
    ],
)
def test_usable_drops_numbers_nobody_can_compute_with(
    role: str, col: list[Any], kept: list[Any], reasons: list[str]
) -> None:
    """An integer beyond the float range, and an inf where a step or time belongs, become
    None and are counted by role with a sample naming why; an integer past 2**64 that a
    float holds becomes that float; a loss's infinity stays (it is counted as a training
    fact elsewhere)."""
    summ = make()
    out = summ.usable(role, col, [7] * len(col), [700] * len(col))
    assert out == kept
    assert [s["reason"] for s in summ.unusable_samples] == reasons
    assert summ.unusable_count == ({role: len(reasons)} if reasons else {})
    if reasons:
        assert summ.unusable_samples[0] == {
            "line": 7,
            "offset": 700,
            "field": role,
            "role": role,
            "reason": reasons[0],
        }


def test_unusable_numbers_are_all_counted_but_few_sampled() -> None:
    """Seven huge steps are seven unusable numbers; only the first five are sampled, each
    with its own line."""
    summ = make()
    summ.usable("step", [10**400] * 7, list(range(1, 8)), None)
    assert summ.unusable_count == {"step": 7}
    assert [s["line"] for s in summ.unusable_samples] == [1, 2, 3, 4, 5]
    assert {s["offset"] for s in summ.unusable_samples} == {None}


def test_field_renamed_mid_log_is_a_schema_change() -> None:
    """When the loss stops appearing under one common name and appears under another, the
    summarizer follows it and records where the name changed; both values count."""
    summ = make()
    feed(summ, [{"step": 1, "loss": 2.0}])
    feed(summ, [{"step": 2, "train_loss": 1.5}], first_line=2)
    assert summ.keys["loss"] == "train_loss"
    assert summ.schema_changes == [{"line": 2, "field": "loss", "from": "loss", "to": "train_loss"}]
    assert summ.all.loss.values == [2.0, 1.5]


def test_throughput_in_two_units_is_read_as_tokens_per_second() -> None:
    """Records that state the rate in tok/s and then in ktok/s (one batch) both end up in
    tokens/s: 500 tok/s and 2 ktok/s are 500 and 2000."""
    summ = make()
    feed(summ, [{"step": 1, "tok/s": 500}, {"step": 2, "ktok_s": 2}])
    assert summ.all.tok.values == [500.0, 2000.0]
    assert summ.scale == 1000.0
    assert summ.keys["throughput"] == "ktok_s"


def test_profile_field_is_the_only_source_of_its_role() -> None:
    """A role the profile names (a dotted name reaches into nested objects) is read from
    that field only: a record that lacks it has no loss, even beside a common name."""
    summ = make({"loss": "metrics.loss"})
    feed(summ, [{"metrics": {"loss": 2.5}, "loss": 9.0}, {"metrics": {}, "loss": 8.0}])
    assert summ.all.loss.values == [2.5]
    assert summ.schema_changes == []


@pytest.mark.parametrize(
    ("times", "first", "last", "unparsed"),
    [
        ([1.7e12, 1.7e12 + 2500], 1.7e9, 1.7e9 + 2.5, 0),
        ([1000, 1010.5], 1000.0, 1010.5, 0),
        (
            ["2026-01-01T00:00:00Z", "soon", "2026-01-01T00:00:10Z"],
            JAN_1_2026,
            JAN_1_2026 + 10,
            1,
        ),
    ],
    ids=["epoch-ms", "epoch-s", "iso-with-an-unreadable-one"],
)
def test_times_become_epoch_seconds(
    times: list[Any], first: float, last: float, unparsed: int
) -> None:
    """Timestamps in milliseconds, seconds or ISO-8601 become epoch seconds; a time that
    reads as none of them is counted as unparsed."""
    summ = make()
    feed(summ, [{"time": t} for t in times])
    assert (summ.t_first, summ.t_last, summ.t_unparsed) == (first, last, unparsed)
    assert summ.t_count == len(times) - unparsed


def test_partition_without_group_fields_is_one_series() -> None:
    """Records with none of the grouping fields are one series (None)."""
    assert make().partition([{"step": 1}, {"step": 2}]) is None


def test_partition_by_the_group_fields_of_the_first_record() -> None:
    """Without a profile the series are split by the grouping fields the first record has,
    in their fixed order (role before device), labelled ``field=value``."""
    recs = [
        {"device": "cuda:0", "role": "target"},
        {"device": "cuda:1", "role": "drafter"},
        {"device": "cuda:0", "role": "target"},
    ]
    summ = make()
    assert summ.partition(recs) == {
        "role=target,device=cuda:0": [0, 2],
        "role=drafter,device=cuda:1": [1],
    }
    assert summ.group_keys == ("role", "device")


@pytest.mark.parametrize(
    ("fields", "recs", "expected"),
    [
        ({}, [{"rank": 0}, {"rank": 0}], {"rank=0": []}),
        ({}, [{"rank": 0}, {"x": 1}], {"rank=0": [0], "rank=None": [1]}),
        (
            {},
            [{"device": ["a"]}, {"device": ["b"]}, {"device": ["a"]}],
            {'device=["a"]': [0, 2], 'device=["b"]': [1]},
        ),
        ({"group": []}, [{"rank": 0}, {"rank": 1}], None),
        (
            {"group": "node"},
            [{"node": "n1", "rank": 0}, {"node": "n2"}],
            {"node=n1": [0], "node=n2": [1]},
        ),
    ],
    ids=[
        "one-series-in-batch",
        "missing-field",
        "list-device",
        "profile-no-groups",
        "profile-group",
    ],
)
def test_partition_table(
    fields: dict[str, Any], recs: list[dict[str, Any]], expected: dict[str, list[int]] | None
) -> None:
    """A batch that holds one series maps its label to an empty list (every record); a
    record without the field is the series ``field=None``; a list where a device belongs is
    labelled by its JSON text; a profile's group fields (none at all, or a single name)
    win over the common ones."""
    assert make(fields).partition(recs) == expected


def test_partition_past_the_series_limit_shares_one_bucket() -> None:
    """Past 64 series, further ones share the series ``other``: memory stays bounded."""
    parts = make().partition([{"rank": r} for r in range(66)])
    assert parts is not None
    assert len(parts) == 65
    assert parts["rank=63"] == [63]
    assert parts["other"] == [64, 65]


def test_batch_counts_records_and_keeps_the_last_three() -> None:
    """A batch counts its records, notes the keys of its first and last record, and keeps
    the last three records for the summary."""
    summ = make()
    feed(summ, [{"step": 1, "a": 1}, {"step": 2, "b": 1}, {"step": 3, "c": 1}, {"step": 4}])
    assert summ.records == 4
    assert summ.keys_seen == {"step": 2, "a": 1}
    assert list(summ.last_records) == [{"step": 2, "b": 1}, {"step": 3, "c": 1}, {"step": 4}]
    assert summ.all.steps.last == 4


def test_first_nonfinite_loss_and_gradient_are_located() -> None:
    """The first NaN or infinite loss is kept with its line and step, and is not replaced
    by a later one; every non-finite loss is counted. The gradient's also names its field."""
    summ = make()
    feed(
        summ,
        [
            {"step": 1, "loss": 2.0, "gnorm": 1.0},
            {"step": 2, "loss": 1.9, "gnorm": math.inf},
            {"step": 3, "loss": math.nan, "gnorm": 1.0},
            {"step": 4, "loss": math.inf, "gnorm": 1.0},
        ],
        first_line=10,
    )
    feed(summ, [{"step": 5, "loss": math.nan}], first_line=14)
    assert summ.loss_first_nonfinite == {"line": 12, "step": 3, "value": "nan"}
    assert summ.grad_first_nonfinite == {"line": 11, "step": 2, "value": "inf", "field": "gnorm"}
    assert summ.nonfinite == {"throughput": 0, "loss": 3}
    assert summ.all.loss.values == [2.0, 1.9]


def test_clock_counts_backward_steps_and_keeps_the_longest_gap() -> None:
    """Between records the clock's intervals are kept, one that goes back is counted
    apart (not as an interval), and the longest interval is kept with the line it ends on;
    the interval across two batches counts too."""
    summ = make()
    feed(summ, [{"time": 100.0}, {"time": 101.0}, {"time": 99.0}])
    feed(summ, [{"time": 400.0}], first_line=4)
    assert summ.t_backwards == 1
    assert sorted(summ.intervals.values) == [1.0, 301.0]
    assert summ.gaps.items()[0] == {
        "line": 4,
        "offset": 300,
        "seconds": 301.0,
        "from_t": 99.0,
        "to_t": 400.0,
    }
    assert summ.t_first_at == (1, 0)


def test_windows_close_every_window_records() -> None:
    """Records are cut into windows of ``window`` records, across batches; each closed
    window says its lines, steps, record count and median throughput."""
    summ = make(window=2)
    feed(summ, [{"step": s, "tok/s": 100.0 * s} for s in (1, 2, 3)])
    feed(summ, [{"step": s, "tok/s": 100.0 * s} for s in (4, 5)], first_line=4)
    got = [
        {k: w[k] for k in ("first_line", "last_line", "first_step", "last_step", "records")}
        | {"tok": w["tok_s_median"]}
        for w in summ.windows
    ]
    assert got == [
        {
            "first_line": 1,
            "last_line": 2,
            "first_step": 1,
            "last_step": 2,
            "records": 2,
            "tok": 150.0,
        },
        {
            "first_line": 3,
            "last_line": 4,
            "first_step": 3,
            "last_step": 4,
            "records": 2,
            "tok": 350.0,
        },
    ]
    assert summ.win.n == 1 and summ.win.first_line == 5


def test_windows_keep_the_median_per_series() -> None:
    """In a log of several series, each window also holds each series' median throughput."""
    summ = make(window=4)
    feed(
        summ,
        [
            {"rank": 0, "tok/s": 10.0},
            {"rank": 1, "tok/s": 50.0},
            {"rank": 0, "tok/s": 30.0},
            {"rank": 1, "tok/s": 70.0},
        ],
    )
    assert summ.windows[0]["tok_s_median_by_group"] == {"rank=0": 20.0, "rank=1": 60.0}
    assert summ.windows[0]["tok_s_median"] == 40.0
    assert sorted(summ.groups) == ["rank=0", "rank=1"]
    assert summ.groups["rank=1"].tok.values == [50.0, 70.0]


@pytest.mark.parametrize(
    ("broken", "restarts", "intervals"),
    [(False, 1, [4900.0]), (True, 0, [])],
    ids=["continuous", "unread-part-between"],
)
def test_break_continuity_forgets_the_step_and_the_clock(
    broken: bool, restarts: int, intervals: list[float]
) -> None:
    """A step that goes back between two parts is a restart, and the seconds between them
    an interval (a gap), only when the parts are continuous: with an unread part between,
    nothing is known of what came between."""
    summ = make()
    feed(summ, [{"step": 5, "time": 100.0}])
    if broken:
        summ.break_continuity()
    feed(summ, [{"step": 1, "time": 5000.0}], first_line=2)
    assert summ.all.steps.restarts == restarts
    assert summ.intervals.values == intervals
    assert (summ.t_first, summ.t_last) == (100.0, 5000.0)


def test_bad_lines_are_counted_by_reason_with_a_few_samples() -> None:
    """Each bad line counts under its reason; the first five are sampled with line,
    offset and at most 160 bytes of the line, decoded with replacement characters."""
    summ = make()
    summ.bad("binary", 3, 40, b"\xff" + b"x" * 300)
    for n in range(6):
        summ.bad("not_json", 4 + n, 50 + n, b"{")
    assert summ.malformed == {"binary": 1, "not_json": 6}
    assert len(summ.malformed_samples) == 5
    assert summ.malformed_samples[0] == {
        "line": 3,
        "offset": 40,
        "reason": "binary",
        "sample": "\ufffd" + "x" * 159,
    }
    assert summ.malformed_samples[4]["line"] == 7


def test_a_stated_rate_is_never_derived() -> None:
    """A log that states its throughput is read as stated, even with a token count and
    step time beside it from which one could be derived."""
    summ = make()
    feed(summ, [{"step": s, "tok/s": 900.0, "tokens": 4096, "step_time": 0.5} for s in range(4)])
    assert summ.derived is None
    assert summ.all.tok.values == [900.0] * 4


def test_no_rate_field_derives_it() -> None:
    """With no throughput field, one step's tokens over its step time is the throughput
    (4096 tokens in 0.5 s: 8192 tok/s), and the summarizer notes how it derived it."""
    summ = make()
    feed(summ, [{"step": s, "tokens": 4096, "step_time": 0.5} for s in range(4)])
    assert summ.all.tok.values == [8192.0] * 4
    assert summ.derived is not None and summ.derived["how"] == "tokens / step_time"


def test_a_list_device_in_a_later_batch_leaves_the_other_series_whole() -> None:
    """A batch that holds a list where a device belongs labels only that value by its
    JSON text: cuda:0 stays one series across batches (1, 2 then 3), never a second one
    labelled ``"cuda:0"`` with quotes."""
    summ = make()
    feed(summ, [{"device": "cuda:0", "tok/s": 1.0}, {"device": "cuda:0", "tok/s": 2.0}])
    feed(summ, [{"device": "cuda:0", "tok/s": 3.0}, {"device": ["x"], "tok/s": 4.0}], 3)
    assert {g: grp.tok.values for g, grp in summ.groups.items()} == {
        "device=cuda:0": [1.0, 2.0, 3.0],
        'device=["x"]': [4.0],
    }


def test_a_list_in_one_of_several_group_fields_is_labelled_by_its_own_text() -> None:
    """With two group fields, a list in one of them is written as its JSON text beside
    the other field's plain value: the records are the series role=drafter,device=cuda:0
    and role=drafter,device=["x"], not one series with a garbled label."""
    recs: list[dict[str, Any]] = [
        {"role": "drafter", "device": "cuda:0"},
        {"role": "drafter", "device": ["x"]},
    ]
    assert make().partition(recs) == {
        "role=drafter,device=cuda:0": [0],
        'role=drafter,device=["x"]': [1],
    }
