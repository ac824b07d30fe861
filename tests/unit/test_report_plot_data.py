"""What the HTML report's plot draws (``agent.report.plot_data``): the judged throughput per
log window cut into run segments, and the marks (verified changes, sampled restarts, dated
crashes), each read from a fact and citing it. Expected values are worked out by hand from
the small facts built here."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.symptoms import Symptom
from agent.model.claims import AtLeast, Claim, ClaimVerdict, Ref
from agent.model.facts import Fact
from agent.report.plot_data import (
    Mark,
    Restart,
    Segment,
    Series,
    WindowPoint,
    change_marks,
    crash_marks,
    number_text,
    restart_marks,
    split_runs,
    throughput_series,
    unplaced_crashes,
)


def fact(value: Any, *, fact_id: str = "F-0001", error: str | None = None) -> Fact:
    return Fact(id=fact_id, probe="trainlog", target="local", value=value, error=error)


# -- numbers and spans ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1200, "1,200"),
        (1200.0, "1,200"),
        (7, "7"),
        (12.5, "12.5"),
        (0.123456, "0.1235"),
        (1234.5678, "1,235"),
        (None, "?"),
        ("1200", "?"),
    ],
    ids=["int", "whole-float", "small-int", "fraction", "four-digits", "rounded", "none", "text"],
)
def test_number_text_groups_thousands_and_drops_a_whole_floats_point(
    value: object, text: str
) -> None:
    """A whole number is shown grouped by thousands with no ``.0``; a fraction to four
    significant digits; anything that is not a number as ``?``."""
    assert number_text(value) == text


def test_a_segment_names_its_step_or_its_steps() -> None:
    """A segment of one point names its step; a longer one its first and last step, joined
    by an en dash."""
    assert Segment(((5.0, 1.0),)).span == "step 5"
    assert Segment(((10.0, 1.0), (1200.0, 2.0))).span == "steps 10–1,200"


def test_a_series_points_are_its_segments_points_in_order() -> None:
    """A series' points are those of its segments, one run after the other."""
    series = Series("now", "F-1", (Segment(((1.0, 10.0), (2.0, 20.0))), Segment(((0.0, 5.0),), 40)))
    assert series.points == [(1.0, 10.0), (2.0, 20.0), (0.0, 5.0)]


# -- run segments ------------------------------------------------------------------


def test_no_points_make_no_segment() -> None:
    """Nothing to draw is no segment at all (not one empty segment)."""
    assert split_runs([], [Restart(3, 0.0)]) == []


@pytest.mark.parametrize(
    ("to_step", "segments"),
    [
        (18.0, [((10.0, 1.0),), ((20.0, 2.0),)]),
        (19.0, [((10.0, 1.0), (20.0, 2.0))]),
        (25.0, [((10.0, 1.0), (20.0, 2.0))]),
    ],
    ids=["below-reach-splits", "at-reach-does-not", "above-reach-does-not"],
)
def test_a_restart_splits_only_when_it_goes_below_the_steps_reached(
    to_step: float, segments: list[tuple[tuple[float, float], ...]]
) -> None:
    """The first window reached step 19 (its last step); a restart sampled between the two
    windows starts a new run only when it went back below 19."""
    points = [WindowPoint(1, 10.0, 19.0, 1.0), WindowPoint(11, 20.0, 29.0, 2.0)]
    got = split_runs(points, [Restart(5, to_step)])
    assert [s.points for s in got] == segments


@pytest.mark.parametrize(
    ("line", "split"),
    [(1, False), (2, True), (11, True), (12, False)],
    ids=["at-previous-window", "just-after-it", "at-next-window", "after-next-window"],
)
def test_a_restart_counts_between_the_previous_windows_line_and_this_ones(
    line: int, split: bool
) -> None:
    """A restart belongs to the gap after the line of the previous window (exclusive) up
    to this window's line (inclusive); one outside that gap does not split here."""
    points = [WindowPoint(1, 10.0, 19.0, 1.0), WindowPoint(11, 20.0, 29.0, 2.0)]
    got = split_runs(points, [Restart(line, 0.0)])
    assert len(got) == (2 if split else 1)


def test_ranks_restarting_in_one_gap_are_one_restart_at_the_earliest_line() -> None:
    """Several restarts sampled in one gap (ranks restarting one after another) start
    one new run, labelled with the first of their lines."""
    points = [WindowPoint(1, 100.0, 190.0, 5.0), WindowPoint(20, 150.0, 160.0, 6.0)]
    got = split_runs(points, [Restart(9, 140.0), Restart(7, 145.0), Restart(12, 150.0)])
    assert got == [Segment(((100.0, 5.0),), None), Segment(((150.0, 6.0),), 7)]


def test_a_window_with_no_line_is_split_only_by_its_step() -> None:
    """Where a window's line in the log is unknown, no restart can be placed before it:
    only the step going back splits."""
    points = [
        WindowPoint(1, 10.0, 19.0, 1.0),
        WindowPoint(None, 20.0, 29.0, 2.0),
        WindowPoint(None, 15.0, 16.0, 3.0),
    ]
    got = split_runs(points, [Restart(5, 0.0)])
    assert got == [Segment(((10.0, 1.0), (20.0, 2.0)), None), Segment(((15.0, 3.0),), None)]


# -- the throughput series of a train-log fact ---------------------------------------


def test_no_fact_a_failed_one_or_one_without_windows_draws_nothing() -> None:
    """No train-log fact, a failed one, or one without a list of windows gives no series."""
    speed = {"speed": {"recent": {"value": 100.0}}}
    assert throughput_series(None, "now") is None
    window = {"first_line": 1, "first_step": 1, "speed": 100.0}
    assert throughput_series(fact({**speed, "windows": [window]}, error="boom"), "now") is None
    assert throughput_series(fact({**speed, "windows": "none"}), "now") is None


def test_a_window_without_a_first_step_is_left_out() -> None:
    """A window the plot cannot place (no first step) is not drawn; the others are."""
    value = {
        "speed": {"recent": {"value": 100.0}},
        "windows": [
            {"first_line": 1, "first_step": 10, "last_step": 19, "speed": 100.0},
            {"first_line": 2, "last_step": 29, "speed": 90.0},
            {"first_line": 3, "first_step": 30, "last_step": 39, "speed": 80.0},
        ],
    }
    series = throughput_series(fact(value, fact_id="F-abcd"), "baseline")
    assert series == Series("baseline", "F-abcd", (Segment(((10, 100.0), (30, 80.0))),))


def test_series_without_roles_are_summed_at_their_latest_numbers() -> None:
    """A log of two ranks and no role is judged by their sum: each window is drawn once
    both ranks have had a number, at the sum of their latest ones (190, 110+90=200,
    110+95=205)."""
    group = {"throughput": {"recent_median": 100.0}}
    value = {
        "groups": {"rank=0": group, "rank=1": group},
        "aggregates": {"all": {"recent_median": 200.0}},
        "windows": [
            {"first_line": 1, "first_step": 5, "tok_s_median_by_group": {"rank=0": 80.0}},
            {"first_line": 2, "first_step": 10, "tok_s_median_by_group": {"rank=0": 100.0}},
            {"first_line": 3, "first_step": 10, "tok_s_median_by_group": {"rank=1": 90.0}},
            {"first_line": 4, "first_step": 20, "tok_s_median_by_group": {"rank=0": 110.0}},
            {"first_line": 5, "first_step": 30, "tok_s_median_by_group": {"rank=1": 95.0}},
        ],
    }
    series = throughput_series(fact(value), "now")
    assert series is not None
    assert series.points == [(10, 190.0), (20, 200.0), (30, 205.0)]
    assert len(series.segments) == 1


# -- marks --------------------------------------------------------------------------


def symptom(**fields: Any) -> Symptom:
    claims = (
        Claim(predicate=AtLeast(a=Ref(fact="F-b"), value=1)),
        Claim(predicate=AtLeast(a=Ref(fact="F-a"), value=1)),
        Claim(predicate=AtLeast(a=Ref(fact="F-b", path=("x",)), value=2)),
    )
    base: dict[str, Any] = {
        "kind": "throughput_drop",
        "series": "drafter tokens/s",
        "subject": True,
        "claims": claims,
        "verdicts": (ClaimVerdict(outcome="holds", sentence="s", cites=("F-a",)),),
        "status": "verified",
        "step": 1200.0,
        "ratio": 0.5,
    }
    return Symptom.model_validate({**base, **fields})


def test_a_verified_drop_is_marked_where_it_changed_citing_each_fact_once() -> None:
    """A verified drop of the judged throughput is a change mark at its step, labelled with
    its ratio, titled with its headline and each cited fact once, in order."""
    (mark,) = change_marks([symptom()])
    assert mark == Mark(
        "change",
        1200.0,
        "fell to 0.50× at step 1,200",
        "drafter tokens/s fell to 0.50× at step 1,200 (verified) [F-a] [F-b]",
    )


def test_a_verified_rise_is_marked_as_a_rise() -> None:
    """A verified rise says "rose", its ratio to two decimals and a fractional step as is."""
    (mark,) = change_marks([symptom(kind="throughput_rise", ratio=1.456, step=30.5)])
    assert mark.label == "rose to 1.46× at step 30.5"
    assert mark.title == "drafter tokens/s rose to 1.46× at step 30.5 (verified) [F-a] [F-b]"


@pytest.mark.parametrize(
    "fields",
    [
        {"subject": False},
        {"status": "refuted"},
        {"status": "unverifiable"},
        {"kind": "throughput_steady"},
        {"kind": "throughput_possible_drop", "note": "too short"},
        {"step": None},
        {"ratio": None},
    ],
    ids=[
        "other-series",
        "refuted",
        "unverifiable",
        "steady",
        "possible-drop",
        "no-step",
        "no-ratio",
    ],
)
def test_only_verified_changes_of_the_judged_throughput_are_marked(fields: dict[str, Any]) -> None:
    """A change of another series, one not verified, a symptom that is no change, or one
    without a step or ratio to place it is not marked."""
    assert change_marks([symptom(**fields)]) == []


def test_restarts_are_one_mark_per_step_gone_back_to_listing_each_move() -> None:
    """Restart samples going back to one step are one mark there, its title listing each
    move (with its line where known); marks come in step order; a sample without a
    number to go back to is left out."""
    samples = [
        {"line": 1200, "from_step": 690, "to_step": 610},
        {"from_step": 50, "to_step": 10},
        {"line": 1300, "from_step": 700, "to_step": 610},
        {"line": 5, "from_step": 5},
        {"line": 6, "to_step": "soon"},
        "not a sample",
    ]
    marks = restart_marks(fact({"steps": {"restart_samples": samples}}, fact_id="F-r"))
    assert marks == [
        Mark("restart", 10.0, "restart", "restart: the logged step went back 50→10 [F-r]"),
        Mark(
            "restart",
            610.0,
            "restart",
            "restart: the logged step went back 690→610 at line 1,200, 700→610 at line 1,300 [F-r]",
        ),
    ]


@pytest.mark.parametrize(
    "value",
    [None, {"steps": None}, {"steps": {"restart_samples": "many"}}],
    ids=["no-value", "no-steps", "samples-not-a-list"],
)
def test_a_fact_without_restart_samples_has_no_restart_mark(value: Any) -> None:
    """No restart samples to read, no restart marks."""
    assert restart_marks(fact(value)) == []


CONSOLE = {
    "exception_causes": {
        "b_key": {
            "first_line": 1234,
            "first": "RuntimeError: boom",
            "exception": "RuntimeError",
            "first_after_step": {"step": 40},
        },
        "a_key": {"first_line": 7, "first_after_step": None},
        "c_key": "not a cause",
    },
    "signatures": {
        "a_key": {"first_after_step": {"step": 12.5}},
        "b_key": {"first_after_step": {"step": 999}},
    },
}


def test_crashes_are_marked_at_the_step_printed_before_them() -> None:
    """Each stated cause is marked at the step printed before it: its own, else that of
    the signature of the same name; a cause without an exception or first line is named
    by its key; causes come in key order."""
    marks = crash_marks(fact(CONSOLE, fact_id="F-c"))
    assert marks == [
        Mark(
            "crash",
            12.5,
            "a_key after step 12.5",
            "crash: a_key (console log line 7, after it printed step 12.5) [F-c]",
        ),
        Mark(
            "crash",
            40.0,
            "RuntimeError after step 40",
            "crash: RuntimeError: boom (console log line 1,234, after it printed step 40) [F-c]",
        ),
    ]
    assert unplaced_crashes(fact(CONSOLE, fact_id="F-c")) is None


def test_crashes_with_no_step_are_named_once_each_in_order() -> None:
    """The crashes the plot cannot place are named in one sentence citing the console log:
    sorted, each exception once, a cause without one by its key."""
    causes = {
        "k1": {"exception": "ZError"},
        "k2": {"exception": "AError"},
        "k3": {},
        "k4": {"exception": "ZError"},
        "k5": {"exception": "Dated", "first_after_step": {"step": 3}},
    }
    console = fact({"exception_causes": causes}, fact_id="F-c")
    assert unplaced_crashes(console) == (
        "The console log [F-c] states AError, ZError, k3 but prints no step before it, "
        "so the plot does not place it."
    )
    assert [m.step for m in crash_marks(console)] == [3.0]


def test_no_console_log_places_and_names_no_crash() -> None:
    """Without a console-log fact there is no crash mark and nothing to explain."""
    assert crash_marks(None) == []
    assert unplaced_crashes(None) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (12345.678, "12,346"),
        (-12345.678, "-12,346"),
        (10**30, "100000… (an integer of 31 digits)"),
        (True, "?"),
    ],
    ids=["past-ten-thousand", "negative", "huge-int", "bool"],
)
def test_number_text_shows_a_figure_as_a_claims_sentence_does(value: object, text: str) -> None:
    """A figure past 10,000 is whole and grouped (12,346, never 1.235e+04), a huge integer
    by its size, as ``shown_value`` shows it in every claim's sentence; a boolean is no
    figure."""
    assert number_text(value) == text
