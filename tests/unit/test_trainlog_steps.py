"""tools/parsers/_trainlog/steps.py follows the step numbers of one series: their range,
the restarts (the step went back), the duplicates, the typical increment and the jumps
larger than it, each restart and jump cited by line and offset; pieces read apart are
joined (``absorb``) and several series' step summaries merged (``merge_steps``)."""

from __future__ import annotations

from typing import Any

from tools.parsers._trainlog.columns import Col
from tools.parsers._trainlog.steps import Steps, merge_steps
from tools.parsers._trainlog.values import SAMPLES


def steps_of(vals: list[float | None], first_line: int = 1) -> Steps:
    """A series fed one batch: records on consecutive lines, 100 bytes each."""
    s = Steps()
    add(s, vals, first_line)
    return s


def add(s: Steps, vals: list[float | None], first_line: int) -> None:
    lines: list[int | None] = list(range(first_line, first_line + len(vals)))
    s.add(
        Col(vals, None not in vals),
        lines,
        [100 * (n - 1) for n in range(first_line, first_line + len(vals))],
    )


def cite(line: int, from_step: float, to_step: float) -> dict[str, Any]:
    """A restart or jump as cited: its record's line and offset, the steps either side."""
    return {"line": line, "offset": 100 * (line - 1), "from_step": from_step, "to_step": to_step}


def test_a_series_summary_reads_its_range_restarts_duplicates_and_jumps() -> None:
    """Steps 10 20 30 20 30 30 80: the usual increment is 10, the step went back once
    (line 4, from 30 to 20), was repeated once, and jumped by more than usual once (line
    7, from 30 to 80)."""
    s = steps_of([10, 20, 30, 20, 30, 30, 80])
    assert s.summary() == {
        "count": 7,
        "first": 10,
        "last": 80,
        "min": 10,
        "max": 80,
        "typical_increment": 10,
        "restarts": 1,
        "restart_samples": [cite(4, 30, 20)],
        "duplicates": 1,
        "largest_jumps": [cite(7, 30, 80)],
    }
    assert s.first_at == (1, 0)


def test_records_without_a_step_are_skipped_but_keep_their_places() -> None:
    """Records with no step number are left out of the series; a restart after them is
    still cited at its own record's line."""
    s = steps_of([None, 5, None, 7, 3])
    summary = s.summary()
    assert (summary["count"], summary["first"], summary["last"]) == (3, 5, 3)
    assert s.first_at == (2, 100)
    assert summary["restart_samples"] == [cite(5, 7, 3)]


def test_the_first_step_of_a_batch_is_compared_with_the_last_of_the_batch_before() -> None:
    """A step going back between two batches is a restart cited at the later batch's
    first record, from the last step of the batch before."""
    s = steps_of([1, 2, 3])
    add(s, [2, 4], first_line=4)
    summary = s.summary()
    assert (summary["restarts"], summary["restart_samples"]) == (1, [cite(4, 3, 2)])
    assert (summary["count"], summary["min"], summary["max"]) == (5, 1, 4)


def test_a_series_with_no_steps_summarises_to_nothing() -> None:
    """A series whose records never held a step has no range, increment or samples."""
    s = steps_of([None, None])
    assert s.summary() == {
        "count": 0,
        "first": None,
        "last": None,
        "min": None,
        "max": None,
        "typical_increment": None,
        "restarts": 0,
        "restart_samples": [],
        "duplicates": 0,
        "largest_jumps": [],
    }


def test_restart_samples_are_capped_but_every_restart_is_counted() -> None:
    """Only the first ``SAMPLES`` restarts are cited; the count says how many there were."""
    assert SAMPLES == 5
    s = steps_of([5, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 1])
    summary = s.summary()
    assert summary["restarts"] == 7
    assert summary["restart_samples"] == [cite(line, 5, 1) for line in (2, 4, 6, 8, 10)]


def test_jumps_no_larger_than_the_typical_increment_are_not_listed() -> None:
    """The typical increment is the most frequent positive one; jumps no larger than it
    are not listed (a log that steps evenly has none)."""
    even = steps_of([1, 2, 3, 4])
    assert (even.summary()["typical_increment"], even.summary()["largest_jumps"]) == (1, [])
    mostly_two = steps_of([0, 2, 4, 6, 9, 11])
    assert mostly_two.summary()["typical_increment"] == 2
    assert mostly_two.summary()["largest_jumps"] == [cite(5, 6, 9)]


def test_absorbing_the_next_piece_counts_its_seam() -> None:
    """A piece that followed directly is appended: its first step compared with the last
    step before it (here a jump from 3 to 10 cited at the piece's first line), its
    counts, increments and jumps merged."""
    s = steps_of([1, 2, 3])
    s.absorb(steps_of([10, 11], first_line=50))
    assert s.summary() == {
        "count": 5,
        "first": 1,
        "last": 11,
        "min": 1,
        "max": 11,
        "typical_increment": 1,
        "restarts": 0,
        "restart_samples": [],
        "duplicates": 0,
        "largest_jumps": [cite(50, 3, 10)],
    }


def test_a_seam_that_goes_back_or_repeats_is_a_restart_or_a_duplicate() -> None:
    """At the seam between two pieces, a step going back is a restart (cited at the
    piece's first record) and a repeated step a duplicate."""
    back = steps_of([1, 2, 3])
    back.absorb(steps_of([2, 3], first_line=4))
    assert (back.restarts, back.restart_samples) == (1, [cite(4, 3, 2)])
    repeated = steps_of([1, 2, 3])
    repeated.absorb(steps_of([3, 4], first_line=4))
    assert (repeated.restarts, repeated.duplicates) == (0, 1)


def test_a_seam_over_an_unread_part_compares_nothing() -> None:
    """When part of the log between two pieces was not read, their steps are not
    compared: no restart, duplicate or jump is made up at the seam."""
    s = steps_of([1, 2, 3])
    s.absorb(steps_of([1, 2], first_line=900), continuous=False)
    summary = s.summary()
    assert (summary["count"], summary["restarts"], summary["duplicates"]) == (5, 0, 0)
    assert summary["last"] == 2


def test_absorbing_into_an_empty_series_takes_the_pieces_first_step() -> None:
    """An empty series absorbing a piece starts where the piece starts; absorbing an
    empty piece changes nothing."""
    s = Steps()
    s.absorb(steps_of([7, 8], first_line=20))
    assert (s.first, s.first_at, s.count) == (7, (20, 1900), 2)
    s.absorb(Steps())
    assert (s.count, s.last) == (2, 8)


def test_merge_steps_sums_the_series_and_orders_their_restarts_by_place() -> None:
    """Several series' summaries merge into one count, range, restart and duplicate
    total; their restart samples come in source order, those without a line number
    (the tail of a skipped log) last by offset, at most ``SAMPLES``; empty series are
    left out."""
    tail = {"line": None, "offset": 9000, "from_step": 9, "to_step": 1}
    parts: list[dict[str, Any]] = [
        {
            "count": 3,
            "min": 5,
            "max": 9,
            "restarts": 2,
            "restart_samples": [tail, cite(40, 5, 2)],
            "duplicates": 1,
        },
        {
            "count": 2,
            "min": 1,
            "max": 4,
            "restarts": 1,
            "restart_samples": [cite(7, 4, 1)],
            "duplicates": 0,
        },
        {
            "count": 0,
            "min": None,
            "max": None,
            "restarts": 0,
            "restart_samples": [],
            "duplicates": 0,
        },
    ]
    assert merge_steps(parts) == {
        "count": 5,
        "min": 1,
        "max": 9,
        "restarts": 3,
        "restart_samples": [cite(7, 4, 1), cite(40, 5, 2), tail],
        "duplicates": 1,
        "per_group": True,
    }


def test_merging_no_counted_series_gives_no_range() -> None:
    """Series that never held a step merge to a count of 0 and no range."""
    empty: dict[str, Any] = {
        "count": 0,
        "min": None,
        "max": None,
        "restarts": 0,
        "restart_samples": [],
        "duplicates": 0,
    }
    assert merge_steps([empty]) == {
        "count": 0,
        "min": None,
        "max": None,
        "restarts": 0,
        "restart_samples": [],
        "duplicates": 0,
        "per_group": True,
    }


def test_a_series_that_never_steps_forward_lists_no_jumps() -> None:
    """A jump is a step forward. Steps 3 2 1 go back twice and 5 5 5 3 repeat twice and
    go back once: neither has a typical increment, and neither lists a jump (3 → 2 and
    2 → 1 are restarts, 5 → 5 duplicates), while the restarts and duplicates are
    counted."""
    back = steps_of([3, 2, 1]).summary()
    assert (back["typical_increment"], back["restarts"], back["duplicates"]) == (None, 2, 0)
    assert back["restart_samples"] == [cite(2, 3, 2), cite(3, 2, 1)]
    assert back["largest_jumps"] == []
    flat = steps_of([5, 5, 5, 3]).summary()
    assert (flat["typical_increment"], flat["restarts"], flat["duplicates"]) == (None, 1, 2)
    assert flat["largest_jumps"] == []


def test_an_absorbed_piece_that_goes_back_adds_no_jumps() -> None:
    """Pieces read apart and joined keep only forward jumps too: 9, then a piece 4 2
    (the seam 9 → 4 and 4 → 2 both go back) is two restarts and no jump."""
    s = steps_of([9])
    s.absorb(steps_of([4, 2], first_line=2))
    summary = s.summary()
    assert (summary["typical_increment"], summary["restarts"]) == (None, 2)
    assert summary["largest_jumps"] == []
