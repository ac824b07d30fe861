"""``agent.health.run``: an unattended health run. Specified here: how ``--baseline``
values are read (one default, per-target overrides, a derived baseline for the rest),
the limits a run refuses, and that a run checks every target, hides the hosts behind
their pseudonyms, annotates the results from the history, keeps the run and sets the
exit code."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.health.check import Cancel, HealthTarget
from agent.health.history import HealthHistory
from agent.health.model import Status, TargetResult
from agent.health.run import _baselines, run_health
from tools.errors import UsageError
from tools.pseudonym import host_names
from tools.sweep import SweepSpec
from tools.transport import SSHOptions

PAIRS = [("gpu-a", "gpu-a"), ("ssh://h:22/pct:1", "ssh://h/pct:1")]


@pytest.mark.parametrize(
    ("given", "chosen"),
    [
        ([], {"gpu-a": None, "ssh://h/pct:1": None}),
        (["good"], {"gpu-a": "good", "ssh://h/pct:1": "good"}),
        (["good", "good"], {"gpu-a": "good", "ssh://h/pct:1": "good"}),
        (["gpu-a=mine"], {"gpu-a": "mine", "ssh://h/pct:1": None}),
        (["gpu-a=mine", "good"], {"gpu-a": "mine", "ssh://h/pct:1": "good"}),
        (["ssh://h/pct:1=by-label"], {"gpu-a": None, "ssh://h/pct:1": "by-label"}),
        (
            ["ssh://h/pct:1=by-label", "ssh://h:22/pct:1=as-typed"],
            {"gpu-a": None, "ssh://h/pct:1": "as-typed"},
        ),
    ],
    ids=[
        "none-derived",
        "one-default",
        "default-twice",
        "override",
        "override-and-default",
        "by-label",
        "typed-wins",
    ],
)
def test_each_target_gets_its_override_else_the_default_else_none(
    given: list[str], chosen: dict[str, str | None]
) -> None:
    """``TARGET=NAME`` names one target's baseline, by the name as typed or as reported
    (as typed wins); a bare ``NAME`` is every other target's; a target with neither is
    derived (None). The same default given twice is one default."""
    assert _baselines(given, PAIRS) == chosen


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["good", "other"], "two default baselines: 'good' and 'other'"),
        (["=good"], "bad --baseline '=good': expected NAME or TARGET=NAME"),
        (["gpu-a="], "bad --baseline 'gpu-a=': expected NAME or TARGET=NAME"),
        (["zz=a", "gpu-a=b", "yy=c"], "--baseline for unknown target(s): yy, zz"),
    ],
    ids=["two-defaults", "no-target", "no-name", "unknown-targets-sorted"],
)
def test_a_baseline_that_cannot_be_read_is_a_usage_error(given: list[str], message: str) -> None:
    """Two different defaults, an override missing its target or its name, or an override
    for a target not being checked stops the run and says which."""
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        _baselines(given, PAIRS)


@pytest.mark.parametrize(
    ("jobs", "limit", "message"),
    [
        (0, 600.0, "--jobs must be at least 1, got 0"),
        (1, 0.0, "--target-timeout must be positive, got 0"),
        (1, -2.5, "--target-timeout must be positive, got -2.5"),
    ],
    ids=["no-jobs", "zero-limit", "negative-limit"],
)
def test_a_run_without_a_worker_or_time_is_refused_before_anything_runs(
    tmp_path: Path, jobs: int, limit: float, message: str
) -> None:
    """No worker or a limit that is not positive is a usage error, and no target is checked
    and no history is written."""
    checked: list[str] = []

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        checked.append(t.label)
        raise AssertionError("nothing may be checked")

    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        run_health(
            [HealthTarget(label="a", uri="local", spec=SweepSpec())],
            ssh=SSHOptions(),
            jobs=jobs,
            limit=limit,
            history=HealthHistory(tmp_path / "history"),
            check=check,
        )
    assert checked == []
    assert not (tmp_path / "history").exists()


NOW = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def outcome(target: HealthTarget, status: Status, reason: str = "") -> TargetResult:
    return TargetResult(
        target=target.label,
        uri=target.uri,
        status=status,
        reason=reason,
        started_at=NOW,
        duration_s=0.5,
    )


def test_a_run_checks_each_target_and_keeps_the_result_under_pseudonyms(tmp_path: Path) -> None:
    """Every target is checked; a result naming an SSH host names it by its pseudonym
    (URI, label and reason); a local target keeps its name; the exit code follows the
    worst status; the run is recorded in the history with its limits."""
    local = HealthTarget(label="local", uri="local", spec=SweepSpec())
    remote = HealthTarget(label="ssh://gpu-7/pct:1", uri="ssh://gpu-7/pct:1", spec=SweepSpec())

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        if t is remote:
            return outcome(t, "could_not_check", "ConnectError: ssh://gpu-7: refused")
        return outcome(t, "healthy")

    history = HealthHistory(tmp_path / "history")
    run = run_health(
        [local, remote], ssh=SSHOptions(), jobs=2, limit=30.0, history=history, check=check
    )
    hidden = host_names().pseudonym("gpu-7")
    assert hidden != "gpu-7"
    assert [(t.target, t.uri, t.status, t.reason) for t in run.targets] == [
        ("local", "local", "healthy", ""),
        (
            f"ssh://{hidden}/pct:1",
            f"ssh://{hidden}/pct:1",
            "could_not_check",
            f"ConnectError: ssh://{hidden}: refused",
        ),
    ]
    assert (run.exit_code, run.exit_reason) == (2, f"could not check ssh://{hidden}/pct:1")
    assert (run.jobs, run.target_timeout_s) == (2, 30.0)
    assert history.run_path(run.run).is_file()
    assert "gpu-7" not in history.history_path.read_text()
    assert [e.target for e in history.entries()] == ["local", f"ssh://{hidden}/pct:1"]


def test_a_second_run_continues_the_streak_from_the_first(tmp_path: Path) -> None:
    """The results are annotated from the runs kept before: a target healthy twice is
    healthy since the first run, over 2 runs, and its trend holds both."""
    local = HealthTarget(label="local", uri="local", spec=SweepSpec())

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        return outcome(t, "healthy")

    history = HealthHistory(tmp_path / "history")
    first = run_health([local], ssh=SSHOptions(), history=history, check=check)
    second = run_health([local], ssh=SSHOptions(), history=history, check=check)
    (again,) = second.targets
    assert (first.exit_code, first.exit_reason) == (0, "all 1 target(s) healthy")
    assert again.since_runs == 2
    assert again.since == NOW
    assert [p.run for p in again.trend] == [first.run, second.run]
