"""Many health targets at once (``agent.health.fleet``): each checked in a thread of its own,
at most ``jobs`` at a time, results in the targets' order; a target past its time limit is
"could not check", naming the session it was recorded in; a check that raises is logged and
reported, never waited for."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from structlog.testing import capture_logs

from agent.health.check import Cancel, HealthTarget
from agent.health.fleet import run_fleet
from agent.health.model import TargetResult
from tools.sweep import SweepSpec


def target(label: str) -> HealthTarget:
    return HealthTarget(label=label, uri="local", spec=SweepSpec())


def healthy(t: HealthTarget) -> TargetResult:
    return TargetResult(
        target=t.label,
        uri=t.uri,
        status="healthy",
        started_at=datetime(2026, 11, 30, tzinfo=UTC),
        duration_s=0.0,
    )


def test_no_targets_is_no_results() -> None:
    """An empty fleet returns at once with no results and runs no check."""

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        raise AssertionError("no target to check")

    assert run_fleet([], check, jobs=4, limit=10) == []


def test_jobs_below_one_still_checks_every_target_one_at_a_time() -> None:
    """A ``jobs`` of zero is taken as one: every target is still checked, in order."""
    seen: list[str] = []

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        seen.append(t.label)
        return healthy(t)

    results = run_fleet([target("a"), target("b"), target("c")], check, jobs=0, limit=10)
    assert [r.target for r in results] == ["a", "b", "c"]
    assert seen == ["a", "b", "c"]


def test_each_check_gets_its_own_cancel_and_none_is_called_in_time() -> None:
    """Every check is handed a cancel of its own; a check that finishes within its limit is
    never cancelled."""
    given: list[Cancel] = []

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        given.append(cancel)
        return healthy(t)

    run_fleet([target("a"), target("b")], check, jobs=2, limit=10)
    assert len({id(c) for c in given}) == 2
    assert [c.cancelled for c in given] == [False, False]


class Transport:
    name = "stub"

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class Recorded:
    """What a timed-out result reads of the session a check had opened."""

    id = "20261130-020000-ab12"
    transcript_path = Path("/state/sessions/20261130-020000-ab12/transcript.jsonl")


def test_a_target_past_its_limit_names_the_session_it_was_recorded_in() -> None:
    """A check still running at its limit is "could not check" with the limit as reason;
    its transport is closed and the result names the session and transcript it had opened,
    so what it did is still found."""
    release = threading.Event()
    transport = Transport()

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        cancel.attach(transport, Recorded())  # type: ignore[arg-type]
        release.wait(10)
        return healthy(t)

    try:
        # A limit the check's thread reaches its attach well within, on a loaded machine too.
        (late,) = run_fleet([target("slow")], check, jobs=1, limit=1.5)
    finally:
        release.set()
    assert (late.target, late.status) == ("slow", "could_not_check")
    assert late.reason == "time limit of 1.5s per target exceeded"
    assert (late.session, late.transcript) == (
        "20261130-020000-ab12",
        "/state/sessions/20261130-020000-ab12/transcript.jsonl",
    )
    assert late.duration_s == 1.5
    assert transport.closed


def test_a_check_that_raises_is_logged_with_its_target() -> None:
    """A check that raises is logged as an error event naming the target, beside the
    "could not check" result."""

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        raise ValueError("bad value")

    with capture_logs() as logs:
        (result,) = run_fleet([target("gpu-a")], check, jobs=1, limit=10)
    assert result.reason == "internal error: ValueError: bad value"
    raised = [e for e in logs if e["event"] == "health_check_raised"]
    assert [(e["target"], e["log_level"]) for e in raised] == [("gpu-a", "error")]
