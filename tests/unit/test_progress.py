"""``agent.analysis.progress``: is the run still advancing, and where did it start again.
A run whose logs have all been quiet for longer than its own logging interval allows is
stalled while a trainer lives in the workspace and stopped when none does; a console that
states a resume, or a trainer process younger than the train log, is a restart."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.progress import (
    logging_interval,
    restarted_process,
    resumed_in_console,
    stalled,
    stopped,
)
from agent.analysis.symptoms import Symptom
from agent.model.claims import Absent, AtLeast, AtMost, Claim, Greater, Matches, Ref
from agent.model.facts import Fact, Ledger

ROOT = "/ws"


def fact(ledger: Ledger, probe: str, value: Any) -> Fact:
    """A successful fact of ``probe`` holding ``value``, stored in ``ledger``."""
    return ledger.append(Fact(probe=probe, target="local", value=value))


def trainlog_value(age_s: float, interval: float = 10.0, mtime: float = 1000.0) -> dict[str, Any]:
    """A train log last written ``age_s`` seconds ago, every ``interval`` seconds."""
    return {
        "speed": {"median_interval_s": interval},
        "file": {"age_s": age_s, "mtime": mtime},
        "steps": {"max": 500},
    }


def world(
    ledger: Ledger,
    *,
    log_age: float,
    console_age: float | None = None,
    interval: float = 10.0,
    processes: list[dict[str, Any]] | None = None,
    in_workspace: Any = (),
    console_mtime: float = 1030.0,
) -> list[str]:
    """The facts a stall is judged by: train log, layout, process listing and, when
    ``console_age`` is given, the console log; their ids in gather order."""
    ids = [
        fact(ledger, "trainlog", trainlog_value(log_age, interval)).id,
        fact(ledger, "layout", {"root": ROOT}).id,
        fact(
            ledger,
            "processes",
            {"processes": processes or [], "in_workspace": list(in_workspace)},
        ).id,
    ]
    if console_age is not None:
        value = {"file": {"age_s": console_age, "mtime": console_mtime}}
        ids.append(fact(ledger, "stdoutlog", value).id)
    return ids


TRAINER = {"pid": 42, "cwd": "/ws/run", "state": "S"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"speed": {"median_interval_s": 10}, "time": {"median_interval_s": 20}},
            (10, ("speed", "median_interval_s"), "median seconds between its records"),
        ),
        (
            {"speed": {"median_interval_s": 0}, "time": {"median_interval_s": 20}},
            (20, ("time", "median_interval_s"), "median seconds between its timestamps"),
        ),
        (
            {"time": {"median_interval_s": 2.5}},
            (2.5, ("time", "median_interval_s"), "median seconds between its timestamps"),
        ),
        ({"speed": {"median_interval_s": -1}, "time": {"median_interval_s": 0}}, None),
        ({"speed": "fast"}, None),
        ("not a map", None),
    ],
    ids=[
        "speed-first",
        "zero-speed-falls-to-time",
        "time-only",
        "none-positive",
        "shapeless",
        "text",
    ],
)
def test_the_logging_interval_is_the_speeds_clock_else_the_timestamps(
    value: Any, expected: tuple[float, tuple[str, ...], str] | None
) -> None:
    """The run's interval is the speed's median seconds between records when positive,
    else the timestamps' median, with where it stands and what it is; neither is none."""
    assert logging_interval(Fact(probe="trainlog", target="local", value=value)) == expected


def test_a_quiet_run_with_a_live_trainer_is_stalled_with_its_claims() -> None:
    """Both logs quiet past 5× the interval while a trainer sleeps in the workspace is a
    stall: its note gives the shortest quiet and the interval, and its claims are each
    log's age at least the threshold, the interval at most its value, and the trainer's
    directory and state."""
    ledger = Ledger()
    processes = [{"pid": 7, "cwd": "/elsewhere", "state": "R"}, TRAINER]
    ids = world(ledger, log_age=1500, console_age=90, processes=processes)
    trainlog, _, listing, console = ids
    symptom = stalled(ledger, ids)
    assert symptom == Symptom(
        kind="stalled",
        series="progress",
        subject=False,
        step=None,  # the console was written after the train log: it knows later steps
        note=(
            f"no log has grown for 90 s, over 5× the run's logging interval (median seconds"
            f" between its records: 10 s [{trainlog}], at least 30 s), while trainer pid 42"
            " lives in the workspace"
        ),
        claims=(
            Claim(
                predicate=AtLeast(
                    a=Ref(
                        fact=trainlog,
                        path=("file", "age_s"),
                        label="seconds since the train log grew",
                    ),
                    value=50.0,
                )
            ),
            Claim(
                predicate=AtLeast(
                    a=Ref(
                        fact=console,
                        path=("file", "age_s"),
                        label="seconds since the console log grew",
                    ),
                    value=50.0,
                )
            ),
            Claim(
                predicate=AtMost(
                    a=Ref(
                        fact=trainlog,
                        path=("speed", "median_interval_s"),
                        label="the run's median seconds between its records",
                    ),
                    value=10.0,
                )
            ),
            Claim(
                predicate=Matches(
                    a=Ref(
                        fact=listing,
                        path=("processes", 1, "cwd"),
                        label="working directory of trainer pid 42",
                    ),
                    pattern="^/ws(/|$)",
                )
            ),
            Claim(
                predicate=Matches(
                    a=Ref(
                        fact=listing,
                        path=("processes", 1, "state"),
                        label="state of trainer pid 42",
                    ),
                    pattern="^[RSD]$",
                )
            ),
        ),
    )


def test_a_stall_is_dated_by_the_train_log_when_it_was_written_last() -> None:
    """Where the train log was written last (or with the console), the stall is at the
    train log's last step; quiet over a thousand seconds is written with a separator."""
    ledger = Ledger()
    ids = world(ledger, log_age=1500, console_age=2000, processes=[TRAINER], console_mtime=1000)
    symptom = stalled(ledger, ids)
    assert symptom is not None
    assert symptom.step == 500
    assert symptom.note.startswith("no log has grown for 1,500 s, over 5× ")


@pytest.mark.parametrize(
    ("interval", "age", "stall"),
    [
        (2.0, 29.0, False),
        (2.0, 30.0, True),
        (10.0, 49.0, False),
        (10.0, 50.0, True),
    ],
    ids=["under-floor", "at-floor", "under-5x", "at-5x"],
)
def test_the_threshold_is_five_intervals_and_never_under_thirty_seconds(
    interval: float, age: float, stall: bool
) -> None:
    """A log is late at five times the run's interval, but never before 30 s (a checkpoint
    save pauses a log that long)."""
    ledger = Ledger()
    ids = world(ledger, log_age=age, interval=interval, processes=[TRAINER])
    assert (stalled(ledger, ids) is not None) is stall


def test_one_log_still_growing_is_no_stall() -> None:
    """A console that grew recently means the run advances, however old the train log."""
    ledger = Ledger()
    ids = world(ledger, log_age=5000, console_age=3, processes=[TRAINER])
    assert stalled(ledger, ids) is None


@pytest.mark.parametrize(
    "proc",
    [
        {"pid": 42, "cwd": "/ws/run", "state": "Z"},
        {"pid": 42, "cwd": "/ws/run", "state": "T"},
        {"pid": 42, "cwd": "/wsother", "state": "S"},
        {"pid": 42, "cwd": None, "state": "S"},
    ],
    ids=["zombie", "stopped-by-signal", "sibling-directory", "no-cwd"],
)
def test_no_stall_without_a_live_trainer_in_the_workspace(proc: dict[str, Any]) -> None:
    """A zombie, a stopped process, or one working outside the workspace (a directory
    that only shares its name's start) is no live trainer: no stall."""
    ledger = Ledger()
    ids = world(ledger, log_age=600, processes=[proc])
    assert stalled(ledger, ids) is None


def test_no_stall_without_the_facts_to_judge_by() -> None:
    """With no layout, or a train log that states no interval, nothing is judged."""
    ledger = Ledger()
    ids = world(ledger, log_age=600, processes=[TRAINER])
    trainlog, _, listing = ids
    assert stalled(ledger, [trainlog, listing]) is None
    silent = fact(ledger, "trainlog", {"file": {"age_s": 600}}).id
    assert stalled(ledger, [silent, *ids[1:]]) is None


def test_a_quiet_run_with_no_process_in_the_workspace_is_stopped() -> None:
    """Quiet logs and an empty ``in_workspace`` list is a stopped run, claimed by the
    logs' ages, the interval and the absence of any working process."""
    ledger = Ledger()
    ids = world(ledger, log_age=600, in_workspace=[])
    _, _, listing = ids
    symptom = stopped(ledger, ids)
    assert symptom is not None
    assert (symptom.kind, symptom.series, symptom.step) == ("stopped", "progress", 500)
    assert symptom.note.endswith(", and no process on the target works in the workspace")
    assert symptom.claims[-1] == Claim(
        predicate=Absent(
            a=Ref(
                fact=listing,
                path=("in_workspace",),
                label="live processes that work in the workspace",
            )
        )
    )
    assert len(symptom.claims) == 3


@pytest.mark.parametrize(
    "in_workspace",
    [[{"pid": 42}], None],
    ids=["a-process-works-there", "not-listed"],
)
def test_a_run_is_not_said_stopped_while_a_process_works_there_or_none_is_listed(
    in_workspace: Any,
) -> None:
    """A process in the workspace, or a listing that does not say which processes work
    there, is no stopped run."""
    ledger = Ledger()
    ids = [
        fact(ledger, "trainlog", trainlog_value(600)).id,
        fact(ledger, "layout", {"root": ROOT}).id,
        fact(ledger, "processes", {"processes": [], "in_workspace": in_workspace}).id,
    ]
    assert stopped(ledger, ids) is None


FIRST = 1_700_000_000.0


def restart_facts(
    ledger: Ledger, start_time: float, first: float = FIRST, working: bool = True
) -> list[str]:
    """A train log whose first record is at ``first`` and a trainer (pid 9) started at
    ``start_time``, listed as working in the workspace when ``working``."""
    listing = {
        "processes": [{"pid": 3, "start_time": 1.0}, {"pid": 9, "start_time": start_time}],
        "in_workspace": [{"pid": 9}] if working else [],
    }
    return [
        fact(ledger, "trainlog", {"time": {"first": first}}).id,
        fact(ledger, "processes", listing).id,
    ]


def test_a_trainer_younger_than_the_train_log_is_a_restart() -> None:
    """A trainer in the workspace that started 600 s after the train log's first record
    is a restart, claimed as its start time greater than that record's time."""
    ledger = Ledger()
    trainlog, listing = restart_facts(ledger, FIRST + 600)
    assert restarted_process(ledger, [trainlog, listing], []) == Symptom(
        kind="restarted",
        series="steps",
        subject=False,
        note=(
            "trainer pid 9 started 600 s after the train log's first record: an earlier"
            " process wrote the log's start"
        ),
        claims=(
            Claim(
                predicate=Greater(
                    a=Ref(
                        fact=listing,
                        path=("processes", 1, "start_time"),
                        label="start time of trainer pid 9",
                    ),
                    b=Ref(
                        fact=trainlog,
                        path=("time", "first"),
                        label="time of the train log's first record",
                    ),
                )
            ),
        ),
    )


@pytest.mark.parametrize(
    ("start", "first", "working"),
    [
        (FIRST + 2.0, FIRST, True),
        (FIRST + 600, FIRST, False),
        (600.0, 5.0, True),
    ],
    ids=["within-slack", "not-in-workspace", "not-a-wall-clock"],
)
def test_no_restart_where_the_process_could_have_written_the_log_start(
    start: float, first: float, working: bool
) -> None:
    """A trainer started within 2 s of the first record, a process that does not work in
    the workspace, or a first record whose time is no wall clock, is no restart."""
    ledger = Ledger()
    ids = restart_facts(ledger, start, first, working)
    assert restarted_process(ledger, ids, []) is None


def test_a_restart_already_found_is_not_found_again() -> None:
    """When another symptom already says the run restarted, neither the process nor the
    console adds a second restart."""
    ledger = Ledger()
    ids = restart_facts(ledger, FIRST + 600)
    console = fact(ledger, "stdoutlog", {"signatures": {"run_summary": {"count": 3}}}).id
    found = [Symptom(kind="restarted", series="steps", subject=False, claims=())]
    assert restarted_process(ledger, ids, found) is None
    assert resumed_in_console(ledger, [*ids, console], found) is None


RESUME = {
    "count": 1,
    "first": "Continuing training from checkpoint, will skip to saved global_step",
    "first_line": 12,
    "first_after_step": {"step": 40},
}
RELOAD = {"first_midrun": {"after_step": {"step": 120}, "text": "loaded ckpt-100", "line": 300}}
SUMMARIES = {"count": 2, "first_line": 10, "last_line": 90}


@pytest.mark.parametrize(
    ("signatures", "path", "label", "least", "note", "step"),
    [
        (
            {"resume": RESUME, "checkpoint_load": RELOAD, "run_summary": SUMMARIES},
            ("signatures", "resume", "count"),
            "console lines that say the run resumed",
            1,
            "the console says so at line 12: 'Continuing training from checkpoint, will skip"
            " to saved global_step'",
            40,
        ),
        (
            {"resume": {"count": 0}, "checkpoint_load": RELOAD, "run_summary": SUMMARIES},
            ("signatures", "checkpoint_load", "first_midrun", "after_step", "step"),
            "the step the console printed before it loaded a checkpoint",
            0,
            "the console loaded a checkpoint after step 120, at line 300: 'loaded ckpt-100'",
            120,
        ),
        (
            {"run_summary": SUMMARIES},
            ("signatures", "run_summary", "count"),
            "summaries of a train() call on the console",
            2,
            "the console holds 2 summaries of Trainer's train() calls, the first at line 10"
            " and the last at line 90",
            None,
        ),
    ],
    ids=["said-resumed", "reloaded-midrun", "trained-twice"],
)
def test_a_console_restart_is_the_first_of_said_reloaded_trained_again(
    signatures: dict[str, Any],
    path: tuple[str, ...],
    label: str,
    least: float,
    note: str,
    step: float | None,
) -> None:
    """The console's restart is a line saying it resumed, else a checkpoint loaded after a
    printed step, else a second summary of train(): one claim on the count or step."""
    ledger = Ledger()
    console = fact(ledger, "stdoutlog", {"signatures": signatures}).id
    assert resumed_in_console(ledger, [console], []) == Symptom(
        kind="restarted",
        series="steps",
        subject=False,
        step=step,
        note=note,
        claims=(
            Claim(predicate=AtLeast(a=Ref(fact=console, path=path, label=label), value=least)),
        ),
    )


def test_a_console_with_one_summary_and_no_resume_is_no_restart() -> None:
    """One train() summary, no resume line and no mid-run load is a run that trained once."""
    ledger = Ledger()
    value = {"signatures": {"run_summary": {"count": 1}, "checkpoint_load": {"first_midrun": None}}}
    console = fact(ledger, "stdoutlog", value).id
    assert resumed_in_console(ledger, [console], []) is None


def test_a_quoted_resume_line_is_cut_at_160_characters() -> None:
    """The resume line is quoted in the note to its first 160 characters."""
    ledger = Ledger()
    said = {"count": 1, "first": "r" * 200, "first_line": 3}
    console = fact(ledger, "stdoutlog", {"signatures": {"resume": said}}).id
    symptom = resumed_in_console(ledger, [console], [])
    assert symptom is not None
    assert symptom.note == "the console says so at line 3: '" + "r" * 160 + "'"
    assert symptom.step is None
