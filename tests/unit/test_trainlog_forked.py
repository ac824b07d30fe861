"""Merging the summarizers of a log's pieces (tools/parsers/_trainlog/forked.py): how many
pieces to read side by side, each piece's line numbers moved to their place in the file,
and the pieces' summarizers merged in file order into the one a sequential read gives.
Reading in forked children end to end is specified in tests/e2e/test_parse_trainlog.py."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from tools.parsers._trainlog.forked import absorb, idle_cpus, shift_lines
from tools.parsers._trainlog.reader import pieces
from tools.parsers._trainlog.summarizer import Summarizer
from tools.parsers._trainlog.summary import summarize_log


def make(window: int = 100) -> Summarizer:
    return Summarizer({}, None, window, 1000)


def feed(summ: Summarizer, recs: list[dict[str, Any]], first_line: int, at: int) -> None:
    """One batch: lines numbered from ``first_line`` (as the piece counts them), each
    line 100 bytes, the first at byte ``100 * at`` of the file."""
    lines: list[int | None] = list(range(first_line, first_line + len(recs)))
    summ.batch(recs, lines, [100 * (at + i) for i in range(len(recs))])


def _raise_oserror() -> tuple[float, float, float]:
    raise OSError("no load average here")


@pytest.mark.parametrize(
    ("cpus", "load", "expected"),
    [
        (16, 0.2, 4),
        (2, 0.0, 2),
        (2, 0.4, 2),
        (2, 0.6, 1),
        (2, 5.0, 1),
        (None, 0.0, 1),
        (3, None, 3),
    ],
    ids=[
        "many-idle-capped",
        "idle",
        "rounds-up",
        "rounds-down",
        "overloaded",
        "unknown-cpus",
        "no-loadavg",
    ],
)
def test_idle_cpus(
    monkeypatch: pytest.MonkeyPatch, cpus: int | None, load: float | None, expected: int
) -> None:
    """The CPUs left idle by the one-minute load average, rounded, at least 1 and at most
    4; where the load cannot be read every CPU counts as idle."""
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    if load is None:
        monkeypatch.setattr(os, "getloadavg", _raise_oserror)
    else:
        monkeypatch.setattr(os, "getloadavg", lambda: (load, 0.0, 0.0))
    assert idle_cpus() == expected


def _piece() -> Summarizer:
    """A piece read on its own: a NaN loss on line 2; on line 3 the step goes back, the
    loss is renamed and the clock jumps; a bad line and an unusable number are sampled."""
    summ = make(window=2)
    feed(
        summ,
        [
            {"step": 1, "loss": 2.0, "time": 10.0},
            {"step": 2, "loss": math.nan, "time": 11.0},
            {"step": 1, "train_loss": 2.0, "time": 500.0},
        ],
        1,
        7,
    )
    summ.bad("not_json", 4, 1000, b"{")
    summ.usable("step", [10**400], [5], [1100])
    summ.other_samples.append({"line": 6, "offset": 1200, "sample": "warming up"})
    return summ


def _lines(summ: Summarizer) -> dict[str, Any]:
    steps = summ.all.steps
    assert summ.loss_first_nonfinite is not None
    return {
        "malformed": [s["line"] for s in summ.malformed_samples],
        "unusable": [s["line"] for s in summ.unusable_samples],
        "other": [s["line"] for s in summ.other_samples],
        "schema": [s["line"] for s in summ.schema_changes],
        "windows": [(w["first_line"], w["last_line"]) for w in summ.windows],
        "open_window": (summ.win.first_line, summ.win.last_line),
        "restarts": [s["line"] for s in steps.restart_samples],
        "jumps": sorted((d["line"] for _, _, d in steps.jumps.heap), key=str),
        "first_step_at": steps.first_at,
        "gaps": sorted((d["line"] for _, _, d in summ.gaps.heap), key=str),
        "first_time_at": summ.t_first_at,
        "nan_loss": summ.loss_first_nonfinite["line"],
    }


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (
            1000,
            {
                "malformed": [1004],
                "unusable": [1005],
                "other": [1006],
                "schema": [1003],
                "windows": [(1001, 1002)],
                "open_window": (1003, 1003),
                "restarts": [1003],
                "jumps": [1002, 1003],
                "first_step_at": (1001, 700),
                "gaps": [1002, 1003],
                "first_time_at": (1001, 700),
                "nan_loss": 1002,
            },
        ),
        (
            None,
            {
                "malformed": [None],
                "unusable": [None],
                "other": [None],
                "schema": [None],
                "windows": [(None, None)],
                "open_window": (None, None),
                "restarts": [None],
                "jumps": [None, None],
                "first_step_at": (None, 700),
                "gaps": [None, None],
                "first_time_at": (None, 700),
                "nan_loss": None,
            },
        ),
    ],
    ids=["known-place", "tail-of-a-huge-log"],
)
def test_shift_lines_moves_every_line_number(delta: int | None, expected: dict[str, Any]) -> None:
    """Every line number a piece keeps (samples, windows, restarts, jumps, gaps, where its
    first step and time were, its first NaN loss) moves by the lines before the piece, or
    becomes None where that place is unknown; byte offsets stay as they are."""
    summ = _piece()
    shift_lines(summ, delta)
    assert _lines(summ) == expected


FIRST = [
    {"step": 1, "loss": 2.0, "tok/s": 100.0, "time": 10.0},
    {"step": 2, "loss": 2.0, "tok/s": 110.0, "time": 11.0},
    {"step": 3, "loss": 1.9, "tok/s": 120.0, "time": 12.0},
]
SECOND = [
    {"step": 2, "loss": math.nan, "tok/s": 130.0, "time": 500.0},
    {"step": 3, "loss": 1.8, "tok/s": 140.0, "time": 501.0},
    {"step": 4, "loss": 1.7, "tok/s": 150.0, "time": 503.0},
]


def _facts(summ: Summarizer) -> dict[str, Any]:
    return {
        "records": summ.records,
        "steps": summ.all.steps.summary(),
        "tok": summ.all.tok.summary(),
        "loss": summ.all.loss.summary(),
        "nonfinite": summ.nonfinite,
        "loss_first_nonfinite": summ.loss_first_nonfinite,
        "intervals": sorted(summ.intervals.values),
        "gaps": summ.gaps.items(),
        "clock": (summ.t_first, summ.t_last, summ.t_count, summ.t_backwards),
        "windows": [(w["first_line"], w["last_line"], w["tok_s_median"]) for w in summ.windows],
        "last_records": list(summ.last_records),
    }


def test_absorb_gives_the_sequential_summarizer() -> None:
    """Two pieces read apart, the second's lines moved to its place and merged, hold what
    one read of both holds: the restart and the clock gap where the pieces meet (line 4),
    the first NaN loss, every interval, window and the last records."""
    one = make(window=3)
    feed(one, FIRST, 1, 0)
    feed(one, SECOND, 4, 3)
    head, tail = make(window=3), make(window=3)
    feed(head, FIRST, 1, 0)
    feed(tail, SECOND, 1, 3)
    shift_lines(tail, 3)
    absorb(head, tail, continuous=True)
    assert _facts(head) == _facts(one)
    assert head.all.steps.restart_samples == [
        {"line": 4, "offset": 300, "from_step": 3, "to_step": 2}
    ]
    assert head.gaps.items()[0] == {
        "line": 4,
        "offset": 300,
        "seconds": 488.0,
        "from_t": 12.0,
        "to_t": 500.0,
    }


def test_absorb_across_an_unread_part_invents_no_restart_or_gap() -> None:
    """Between the head and the tail of a huge log lies what was not read: the step
    going back and the seconds between them are neither a restart nor an interval."""
    head, tail = make(), make()
    feed(head, FIRST, 1, 0)
    feed(tail, SECOND, 1, 90)
    shift_lines(tail, None)
    absorb(head, tail, continuous=False)
    assert head.all.steps.restarts == 0
    assert sorted(head.intervals.values) == [1.0, 1.0, 1.0, 2.0]
    assert (head.t_first, head.t_last, head.t_count) == (10.0, 503.0, 6)
    assert head.all.steps.last == 4


def test_absorb_adds_the_damage_and_keeps_samples_in_file_order() -> None:
    """Bad lines, unusable numbers, blank and other lines and line shapes add up; the
    samples are the first five in file order."""
    head, tail = make(), make()
    for n in range(4):
        head.bad("not_json", n + 1, 0, b"{")
    head.usable("step", [10**400], [5], [0])
    head.blank, head.other_lines, head.shapes = 2, 1, {"kv": 3}
    for n in range(3):
        tail.bad("binary", n + 10, 0, b"\xff")
    tail.usable("loss", [10**400, 10**400], [11, 12], [0, 0])
    tail.blank, tail.other_lines, tail.shapes = 1, 4, {"kv": 1, "csv": 2}
    absorb(head, tail, continuous=True)
    assert head.malformed == {"not_json": 4, "binary": 3}
    assert [s["line"] for s in head.malformed_samples] == [1, 2, 3, 4, 10]
    assert head.unusable_count == {"step": 1, "loss": 2}
    assert [s["line"] for s in head.unusable_samples] == [5, 11, 12]
    assert (head.blank, head.other_lines, head.shapes) == (3, 5, {"kv": 4, "csv": 2})


def test_absorb_merges_series_by_label() -> None:
    """A series in both pieces is merged into one; a series only the later piece has is
    taken as it is; the overall view holds every record of both."""
    head, tail = make(), make()
    feed(head, [{"rank": 0, "tok/s": 10.0}, {"rank": 1, "tok/s": 20.0}], 1, 0)
    feed(tail, [{"rank": 1, "tok/s": 30.0}, {"rank": 2, "tok/s": 40.0}], 1, 2)
    absorb(head, tail, continuous=True)
    assert {g: grp.tok.values for g, grp in head.groups.items()} == {
        "rank=0": [10.0],
        "rank=1": [20.0, 30.0],
        "rank=2": [40.0],
    }
    assert head.all.tok.values == [10.0, 20.0, 30.0, 40.0]


def test_absorb_takes_field_names_the_first_piece_lacked() -> None:
    """A role the first piece never saw takes the later piece's field name, with no
    schema change; a name that differs where the pieces meet is a schema change at the
    later piece's first record."""
    head, tail = make(), make()
    feed(head, [{"step": 1, "loss": 2.0, "time": 1.0}], 1, 0)
    feed(tail, [{"step": 2, "train_loss": 1.9, "tok/s": 5.0, "time": 2.0}], 1, 1)
    shift_lines(tail, 1)
    absorb(head, tail, continuous=True)
    assert head.keys["throughput"] == "tok/s"
    assert head.keys["loss"] == "train_loss"
    assert head.schema_changes == [{"line": 2, "field": "loss", "from": "loss", "to": "train_loss"}]


def test_absorb_keeps_the_last_records_of_the_last_piece_that_had_any() -> None:
    """The last records are the later piece's; a later piece with no records (all bad
    lines) leaves the earlier piece's."""
    head, tail, empty = make(), make(), make()
    feed(head, [{"step": 1}, {"step": 2}], 1, 0)
    feed(tail, [{"step": 3}], 1, 2)
    absorb(head, tail, continuous=True)
    assert list(head.last_records) == [{"step": 3}]
    empty.bad("binary", 1, 0, b"\xff")
    absorb(head, empty, continuous=True)
    assert list(head.last_records) == [{"step": 3}]
    assert head.records == 3


def test_absorb_records_a_rename_inside_the_later_piece_once() -> None:
    """A field renamed inside the later piece (line 3) is that piece's own schema change;
    the merge adds none where the pieces meet (line 2), where the name had not changed."""
    head, tail = make(), make()
    feed(head, [{"step": 1, "loss": 2.0, "time": 1.0}], 1, 0)
    feed(
        tail,
        [{"step": 2, "loss": 2.0, "time": 2.0}, {"step": 3, "train_loss": 2.0, "time": 3.0}],
        1,
        1,
    )
    shift_lines(tail, 1)
    absorb(head, tail, continuous=True)
    assert head.schema_changes == [{"line": 3, "field": "loss", "from": "loss", "to": "train_loss"}]
    assert head.keys["loss"] == "train_loss"


@pytest.mark.parametrize(
    ("tail_recs", "line"),
    [
        ([{"step": 3, "train_loss": 2.0}, {"step": 4, "train_loss": 2.0}], 3),
        ([{"step": 3, "time": 3.0}, {"step": 4, "train_loss": 2.0, "time": 4.0}], 4),
    ],
    ids=["no-clock", "first-record-lacks-the-field"],
)
def test_absorb_places_a_rename_at_the_seam_on_the_first_record_with_the_field(
    tail_recs: list[dict[str, Any]], line: int
) -> None:
    """A name that changed exactly where the pieces meet is a schema change at the later
    piece's first record that holds the field (lines 1-2 are the head's, so the tail's
    records are lines 3 and 4), whether or not the records carry a clock."""
    head, tail = make(), make()
    feed(head, [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 2.0}], 1, 0)
    feed(tail, tail_recs, 1, 2)
    shift_lines(tail, 2)
    absorb(head, tail, True)
    assert head.schema_changes == [
        {"line": line, "field": "loss", "from": "loss", "to": "train_loss"}
    ]


def test_absorb_puts_the_seam_rename_before_the_later_piece_own_renames() -> None:
    """Renames stay in file order: loss becomes train_loss where the pieces meet (line 2),
    then train_loss becomes lm_loss inside the later piece (line 3)."""
    head, tail = make(), make()
    feed(head, [{"step": 1, "loss": 2.0}], 1, 0)
    feed(tail, [{"step": 2, "train_loss": 2.0}, {"step": 3, "lm_loss": 2.0}], 1, 1)
    shift_lines(tail, 1)
    absorb(head, tail, True)
    assert head.schema_changes == [
        {"line": 2, "field": "loss", "from": "loss", "to": "train_loss"},
        {"line": 3, "field": "loss", "from": "train_loss", "to": "lm_loss"},
    ]


def test_forked_read_gives_the_sequential_schema_changes(tmp_path: Path) -> None:
    """Read in three forked pieces (lines 1-11, 12-21, 22-30: 32-byte lines cut at a
    third of the file each, then at the next line end), a log without timestamps whose
    loss is renamed exactly where the second piece starts (line 12) and inside it
    (line 17) gives the one-process summary: both renames, each once, at its line."""
    names = ["train_loss"] * 11 + ["total_loss"] * 5 + ["train/loss"] * 14
    p = tmp_path / "train_log.jsonl"
    p.write_text("".join(json.dumps({"step": 10 + i, n: 2.0}) + "\n" for i, n in enumerate(names)))
    with io.FileIO(str(p), "r") as f:
        size = os.fstat(f.fileno()).st_size
        # The seams the expected lines are worked out for: 3 pieces, really split.
        assert [pc.start for pc in pieces(f, [(0, size)], size, 3)] == [0, 352, 672]
        one = summarize_log(f, workers=1)
    with io.FileIO(str(p), "r") as f:
        many = summarize_log(f, workers=3)
    assert many["schema_changes"] == [
        {"line": 12, "field": "loss", "from": "train_loss", "to": "total_loss"},
        {"line": 17, "field": "loss", "from": "total_loss", "to": "train/loss"},
    ]
    assert many["schema_changes"] == one["schema_changes"]
    # The names seen (and so those ignored) are sampled from each batch's first and last
    # record, and the pieces' batches end elsewhere than the one read's.
    skip = {"windows", "offset", "window_records", "keys_seen", "ignored"}
    assert _without(many, skip) == _without(one, skip)


def _without(value: Any, keys: set[str]) -> Any:
    """``value`` without the facts a forked read may differ in (windows cut at the
    pieces' seams, block offsets)."""
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value
