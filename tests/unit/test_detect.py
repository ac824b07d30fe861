"""agent.analysis.detect: finding the symptoms a run's facts show (a drop, a rise, a
steady speed, a possible drop, restarts) from the train log's windows, the console's
progress bar or the checkpoints' pace, each symptom carrying the claims that check it.

Facts are written by hand here, window by window, so each expected claim (the windows
it spans, its ratio, the step it is dated at) is worked out from the table itself."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.detect import (
    _warm_up,
    bar_windows,
    find,
    find_in_bars,
    find_in_checkpoints,
    restart,
)
from agent.analysis.symptoms import Symptom, SymptomKind
from agent.model.claims import AtLeast, Claim, Ref, WindowRatio
from agent.model.facts import Fact, Ledger, PathPart

SPEED = (("speed",),)


def windows(speeds: list[float], key: str = "speed") -> list[dict[str, Any]]:
    """Window i covers steps 10i+1 to 10i+10 and log lines 10i+1 onwards."""
    return [
        {"first_step": 10 * i + 1, "last_step": 10 * i + 10, "first_line": 10 * i + 1, key: v}
        for i, v in enumerate(speeds)
    ]


def trainlog(
    ledger: Ledger, speeds: list[float], *, speed: dict[str, Any] | None = None, **more: Any
) -> Fact:
    """A train log of one series whose trainer states tokens/s (no groups)."""
    stated = {
        "unit": "tokens/s",
        "kind": "stated",
        "field": "tok/s",
        "recent": {"value": speeds[-1], "records": 10},
        **(speed or {}),
    }
    value = {"windows": windows(speeds), "speed": stated, **more}
    return ledger.append(Fact(probe="trainlog", target="local", value=value))


def ratio_claim(
    fact: Fact,
    label: str,
    spans: tuple[tuple[int, int], tuple[int, int]],
    ratio: float,
    below: bool,
    where: tuple[PathPart, ...] = ("windows",),
    series: tuple[tuple[str, ...], ...] = SPEED,
) -> Claim:
    return Claim(
        predicate=WindowRatio(
            a=Ref(fact=fact.id, path=where, label=label),
            series=series,
            before=spans[0],
            after=spans[1],
            ratio=ratio,
            below=below,
        )
    )


def steady(
    fact: Fact,
    label: str,
    whole: tuple[int, int],
    recent: tuple[int, int],
    where: tuple[PathPart, ...] = ("windows",),
    series: tuple[tuple[str, ...], ...] = SPEED,
) -> Symptom:
    """The steady symptom: the recent windows not below 0.8× the whole, and below 1.25×."""
    return Symptom(
        kind="throughput_steady",
        series=label,
        subject=True,
        claims=(
            ratio_claim(fact, label, (whole, recent), 0.8, False, where, series),
            ratio_claim(fact, label, (whole, recent), 1.25, True, where, series),
        ),
    )


def test_a_flat_log_is_steady_over_its_windows_after_the_first() -> None:
    """Eight flat windows: the first is a warm-up and is left out, so the steady claim
    compares windows 6-7 (the last quarter, at least two) with windows 1-7; the series is
    named by the speed's unit alone, and nothing else is told."""
    ledger = Ledger()
    fact = trainlog(ledger, [1000.0] * 8)
    assert find(fact) == [steady(fact, "tokens/s", (1, 7), (6, 7))]


@pytest.mark.parametrize(
    ("after", "kind", "ratio", "threshold", "below"),
    [
        (400.0, "throughput_drop", 0.4, 0.8, True),
        (2500.0, "throughput_rise", 2.5, 1.25, False),
    ],
    ids=["drop", "rise"],
)
def test_a_sustained_change_is_claimed_on_the_windows_either_side(
    after: float, kind: SymptomKind, ratio: float, threshold: float, below: bool
) -> None:
    """A warm-up window, eight windows at 1000 tokens/s and eight at another level: one
    change, dated at the first step of window 9 (91), begun at the first step of window 8
    (81, the earliest of the old regime's last window and the new one's first), claimed
    as windows 9-16 against windows 1-8 at the drop's or the rise's threshold. A change
    replaces the steady claim."""
    ledger = Ledger()
    fact = trainlog(ledger, [1000.0] * 9 + [after] * 8)
    assert find(fact) == [
        Symptom(
            kind=kind,
            series="tokens/s",
            subject=True,
            ratio=ratio,
            step=91,
            began=Ref(
                fact=fact.id,
                path=("windows", 8, "first_step"),
                label="first step of the last window before the change",
            ),
            began_step=81.0,
            claims=(ratio_claim(fact, "tokens/s", ((1, 8), (9, 16)), threshold, below),),
        )
    ]


def test_a_slow_warm_up_window_is_no_drop() -> None:
    """The first window, still compiling at a tenth of the speed, is a warm-up: the rest
    is flat, so the log is steady."""
    ledger = Ledger()
    fact = trainlog(ledger, [100.0] + [1000.0] * 7)
    assert find(fact) == [steady(fact, "tokens/s", (1, 7), (6, 7))]


def test_too_few_windows_give_no_speed_symptom() -> None:
    """Four windows leave three after the warm-up, fewer than two on each side of any
    change: no speed symptom is told, neither steady nor a drop."""
    ledger = Ledger()
    assert find(trainlog(ledger, [1000.0, 1000.0, 300.0, 300.0])) == []


@pytest.mark.parametrize(
    ("restart_lines", "segment_lines", "kind", "expected"),
    [
        ([], [], "stated", {0}),
        ([25], [], "stated", {0, 2, 3}),
        ([25], [], "derived", {0, 2}),
        ([25], [], "stated_average", {0, 2}),
        ([], [35], "stated", {0, 3, 4}),
        ([0], [], "stated", {0}),
        (["25"], [], "stated", {0}),
        ([25, 41], [], "stated", {0, 2, 3, 4, 5}),
    ],
    ids=[
        "no-restart",
        "restart",
        "restart-counter",
        "restart-average",
        "segment",
        "before-first-window",
        "line-not-a-number",
        "two-restarts",
    ],
)
def test_warm_up_windows_are_the_first_and_those_holding_a_start(
    restart_lines: list[object], segment_lines: list[int], kind: str, expected: set[int]
) -> None:
    """Windows start at lines 1, 11, 21, 31, 41, 51. The first is always a warm-up; a
    restart or a new run segment at line L makes the last window starting at or before L
    a warm-up, and the next one too unless the speed is a difference of counters (a
    stated average or a derived rate, which no difference across a start reaches)."""
    ledger = Ledger()
    speed = {
        "kind": kind,
        "segments": [{"first_line": 1}] + [{"first_line": n} for n in segment_lines],
    }
    steps = {"restart_samples": [{"line": n} for n in restart_lines]}
    fact = trainlog(ledger, [1000.0] * 6, speed=speed, steps=steps)
    assert _warm_up(windows([1000.0] * 6), fact) == expected


DRAFTERS = ("role=drafter,rank=0", "role=drafter,rank=1")


def grouped(ledger: Ledger, per_gpu: list[float]) -> Fact:
    """Two drafter ranks, each at ``per_gpu`` window by window: the subject is their
    sum (an aggregate of two series)."""
    rows = windows(per_gpu)
    for row in rows:
        v = row.pop("speed")
        row["tok_s_median_by_group"] = {g: v for g in DRAFTERS}
    value = {
        "windows": rows,
        "groups": {g: {"throughput": {"recent_median": per_gpu[-1]}} for g in DRAFTERS},
        "aggregates": {"role=drafter": {"recent_median": 2 * per_gpu[-1]}},
    }
    return ledger.append(Fact(probe="trainlog", target="local", value=value))


def test_a_steady_aggregate_is_told_once_and_its_ranks_not_at_all() -> None:
    """Two drafter ranks at a flat speed: one steady symptom, for their sum, whose claims
    add up both ranks' paths; a rank alone is told only where it changed."""
    ledger = Ledger()
    fact = grouped(ledger, [500.0] * 8)
    paths = tuple(("tok_s_median_by_group", g) for g in DRAFTERS)
    label = "drafter tokens/s (sum of 2 series)"
    assert find(fact) == [steady(fact, label, (1, 7), (6, 7), series=paths)]


def test_a_drop_of_an_aggregate_is_told_for_the_sum_and_for_each_rank() -> None:
    """Both ranks fall from 500 to 200 tokens/s: a drop of the sum (the subject) and one
    drop per rank (not the subject), each claimed on its own series and named by its
    group."""
    ledger = Ledger()
    fact = grouped(ledger, [500.0] * 9 + [200.0] * 8)
    found = find(fact)
    assert [(s.kind, s.series, s.subject, s.ratio) for s in found] == [
        ("throughput_drop", "drafter tokens/s (sum of 2 series)", True, 0.4),
        ("throughput_drop", f"{DRAFTERS[0]} tokens/s", False, 0.4),
        ("throughput_drop", f"{DRAFTERS[1]} tokens/s", False, 0.4),
    ]
    serieses = [
        tuple(("tok_s_median_by_group", g) for g in DRAFTERS),
        (("tok_s_median_by_group", DRAFTERS[0]),),
        (("tok_s_median_by_group", DRAFTERS[1]),),
    ]
    spans = ((1, 8), (9, 16))
    assert [s.claims for s in found] == [
        (ratio_claim(fact, s.series, spans, 0.8, True, series=paths),)
        for s, paths in zip(found, serieses, strict=True)
    ]


def test_a_log_without_a_speed_says_the_speed_is_unobserved() -> None:
    """Windows that hold no speed at all: the one symptom is that the speed is not
    observed, judged as the subject."""
    ledger = Ledger()
    value = {"windows": windows([2.0] * 8, key="loss_median"), "speed": {"windows_with_speed": 0}}
    fact = ledger.append(Fact(probe="trainlog", target="local", value=value))
    assert [(s.kind, s.subject) for s in find(fact)] == [("speed_unobserved", True)]


def test_a_step_that_went_back_is_a_restart_dated_where_it_resumed() -> None:
    """Two restarts logged, the first back to step 500: a restart symptom at step 500,
    claiming at least one time the logged step went back. A later run segment that the
    speed's counters show is no second restart."""
    ledger = Ledger()
    steps = {"restarts": 2, "restart_samples": [{"line": 90, "to_step": 500}]}
    speed = {"segments": [{"first_line": 1}, {"first_line": 30, "first_step": 300}]}
    fact = trainlog(ledger, [1000.0] * 8, steps=steps, speed=speed)
    restarts = [s for s in find(fact) if s.kind == "restarted"]
    claim = AtLeast(
        a=Ref(fact=fact.id, path=("steps", "restarts"), label="times the logged step went back"),
        value=1,
    )
    assert restarts == [
        Symptom(
            kind="restarted",
            series="steps",
            subject=False,
            step=500,
            claims=(Claim(predicate=claim),),
        )
    ]


def test_a_new_run_segment_is_a_restart_where_no_step_went_back() -> None:
    """No step went back, but the speed's counters started over at step 300: a restart
    dated at that segment's first step, noting why, claiming at least two segments."""
    ledger = Ledger()
    why = "train_runtime went back"
    speed = {"segments": [{"first_line": 1}, {"first_line": 30, "first_step": 300, "why": why}]}
    fact = trainlog(ledger, [1000.0] * 8, speed=speed)
    restarts = [s for s in find(fact) if s.kind == "restarted"]
    label = "run segments (a new one where the step or the speed's counters went back)"
    claim = AtLeast(a=Ref(fact=fact.id, path=("speed", "segment_count"), label=label), value=2)
    assert restarts == [
        Symptom(
            kind="restarted",
            series="steps",
            subject=False,
            step=300,
            note=why,
            claims=(Claim(predicate=claim),),
        )
    ]


def test_restart_claims_the_number_at_its_path_is_at_least_the_least() -> None:
    """``restart`` builds a restart symptom on one AtLeast claim at the path it is given,
    with the note and step it is given."""
    ledger = Ledger()
    fact = ledger.append(Fact(probe="stdoutlog", target="local", value={"reloads": 1}))
    made = restart(fact, ("reloads",), "reload lines", 1, note="the console says so", step=40)
    assert made == Symptom(
        kind="restarted",
        series="steps",
        subject=False,
        step=40,
        note="the console says so",
        claims=(
            Claim(
                predicate=AtLeast(
                    a=Ref(fact=fact.id, path=("reloads",), label="reload lines"), value=1
                )
            ),
        ),
    )
    assert made.headline() == "the run restarted at step 40 (the console says so)"


def console(ledger: Ledger, progress: object) -> Fact:
    return ledger.append(Fact(probe="stdoutlog", target="local", value={"progress": progress}))


@pytest.mark.parametrize(
    "progress",
    [
        None,
        {"families": [{"windows": [{"speed": 1.0}]}]},
        {"chosen": 1, "families": [{"windows": [{"speed": 1.0}]}]},
        {"chosen": -1, "families": [{"windows": [{"speed": 1.0}]}]},
        {"chosen": "0", "families": [{"windows": [{"speed": 1.0}]}]},
        {"chosen": 0, "families": [{"windows": []}]},
        {"chosen": 0, "families": {"0": {"windows": [{"speed": 1.0}]}}},
    ],
    ids=[
        "no-progress",
        "none-chosen",
        "chosen-past-the-end",
        "chosen-negative",
        "chosen-not-an-int",
        "no-windows",
        "families-not-a-list",
    ],
)
def test_a_console_without_a_usable_chosen_bar_has_no_bar_windows(progress: object) -> None:
    """Only a chosen bar (an index into the families list) with at least one window has
    windows to judge; anything else is None, never an error."""
    ledger = Ledger()
    assert bar_windows(console(ledger, progress)) is None


def test_the_chosen_bar_gives_its_path_windows_and_family() -> None:
    """The chosen family's windows, where they stand in the console fact, and the family."""
    ledger = Ledger()
    family = {"desc": "train", "windows": [{"speed": 2.0}]}
    fact = console(ledger, {"chosen": 1, "families": [{"windows": [{"speed": 9.0}]}, family]})
    assert bar_windows(fact) == (
        ("progress", "families", 1, "windows"),
        [{"speed": 2.0}],
        family,
    )


def test_a_progress_bar_is_judged_without_the_windows_each_bar_begins_in() -> None:
    """A bar of seven windows, the first and the fourth beginning a bar (a new epoch): both
    are warm-ups, so the steady claim spans windows 1-6 and compares windows 5-6; the
    series names the bar's unit and description."""
    ledger = Ledger()
    rows = [{"speed": 3.0, "bar_start": i in (0, 3)} for i in range(7)]
    family = {"unit": "it/s", "desc": "Training", "windows": rows}
    fact = console(ledger, {"chosen": 0, "families": [family]})
    label = "it/s (the console's progress bar 'Training', as tqdm printed it)"
    where = ("progress", "families", 0, "windows")
    assert find_in_bars(fact) == [steady(fact, label, (1, 6), (5, 6), where)]


def test_checkpoint_pace_keeps_every_interval() -> None:
    """Four intervals between checkpoints, each holding a save: none is a warm-up, so all
    four are judged steady (windows 2-3 against 0-3)."""
    ledger = Ledger()
    rows = [{"speed": 0.5} for _ in range(4)]
    fact = ledger.append(
        Fact(probe="checkpoints", target="local", value={"pace": {"windows": rows}})
    )
    label = "steps/s (between checkpoints, by their modification times)"
    assert find_in_checkpoints(fact) == [steady(fact, label, (0, 3), (2, 3), ("pace", "windows"))]


def test_a_large_drop_in_too_few_windows_is_a_possible_drop() -> None:
    """Five checkpoint intervals, the last two at less than a third of the first three:
    too few for a sustained change (three a side are needed), plain enough to tell as a
    possible drop at the first of the two, with why it is not confirmed."""
    ledger = Ledger()
    pace = {"windows": windows([1000.0, 1000.0, 1000.0, 300.0, 300.0])}
    fact = ledger.append(Fact(probe="checkpoints", target="local", value={"pace": pace}))
    label = "steps/s (between checkpoints, by their modification times)"
    where = ("pace", "windows")
    assert find_in_checkpoints(fact) == [
        Symptom(
            kind="throughput_possible_drop",
            series=label,
            subject=True,
            ratio=0.3,
            step=31,
            began=Ref(
                fact=fact.id,
                path=(*where, 2, "first_step"),
                label="first step of the last window before the change",
            ),
            began_step=21.0,
            note="2 window(s) after it and 3 before; a sustained change needs 3 on each side",
            claims=(ratio_claim(fact, label, ((0, 2), (3, 4)), 0.5, True, where),),
        )
    ]


@pytest.mark.parametrize(
    "which",
    [find, find_in_bars, find_in_checkpoints],
    ids=["trainlog", "bars", "checkpoints"],
)
def test_a_failed_or_absent_fact_shows_no_symptom(which: Any) -> None:
    """Every source reads nothing from a missing fact or a failed observation."""
    ledger = Ledger()
    failed = ledger.append(Fact(probe="x", target="local", error="unreadable"))
    assert which(None) == [] and which(failed) == []
