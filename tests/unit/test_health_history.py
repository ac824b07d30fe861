"""The health history (``agent.health.history``): each run kept whole under ``runs/``, one
line per target in ``history.jsonl``, and from those lines a target's "since" streaks and
throughput trend, kept apart per label, URI, workspace and profile."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from agent.health.history import HealthHistory, HistoryEntry, HistoryKey
from agent.health.model import Check, HealthRun, Metric, Status, TargetResult

T0 = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)


def result(
    status: Status,
    day: int,
    *,
    target: str = "gpu",
    workspace: str | None = "/w",
    profile: str | None = None,
    tps: float | None = None,
    failed: tuple[str, ...] = (),
) -> TargetResult:
    """A result of ``target`` on night ``day`` after T0, with ``failed`` checks failed."""
    metrics = {"tokens_per_s": Metric(value=tps, cites=["F-1"], label="t")} if tps else {}
    return TargetResult(
        target=target,
        uri="ssh://gpu",
        workspace=workspace,
        profile=profile,
        status=status,
        started_at=T0 + timedelta(days=day),
        duration_s=1.0,
        metrics=metrics,
        checks=[Check(name=n, title=n, status="failed") for n in failed],
    )


def run_of(run: str, *results: TargetResult) -> HealthRun:
    return HealthRun(
        run=run,
        started_at=results[0].started_at,
        finished_at=results[0].started_at,
        exit_code=0,
        exit_reason="",
        jobs=1,
        target_timeout_s=60,
        targets=list(results),
    )


def kept(history: HealthHistory, *nights: TargetResult) -> None:
    """Record each of ``nights`` as a run of its own, run0, run1, ..."""
    for i, night in enumerate(nights):
        history.record(run_of(f"run{i}", night))


def test_an_entry_takes_its_figures_and_failed_checks_from_the_result() -> None:
    """A history line carries the result's tokens/s and last step age (the metrics' values),
    its status, baseline and the names of its failed checks, under the run's name."""
    r = result("regressed", 0, tps=2500.0, failed=("throughput", "symptoms"))
    r = r.model_copy(
        update={
            "baseline": "good",
            "metrics": {
                **r.metrics,
                "last_step_age_s": Metric(value=42.5, cites=["F-2"], label="age"),
            },
        }
    )
    entry = HistoryEntry.of("run7", r)
    assert (entry.run, entry.at, entry.status, entry.baseline) == ("run7", T0, "regressed", "good")
    assert (entry.tokens_per_s, entry.last_step_age_s) == (2500.0, 42.5)
    assert entry.regressions == ["throughput", "symptoms"]
    assert entry.key == HistoryKey("gpu", "ssh://gpu", "/w", None) == HistoryKey.of(r)


def test_an_entry_without_figures_has_none_rather_than_zero() -> None:
    """A result that read no tokens/s and no step age is written with neither, not as 0."""
    entry = HistoryEntry.of("run0", result("could_not_check", 0))
    assert (entry.tokens_per_s, entry.last_step_age_s) == (None, None)


@pytest.mark.parametrize(
    ("line", "recorded"),
    [
        ({"workspace": "/w"}, True),
        ({"workspace": None}, True),
        ({}, False),
    ],
    ids=["named-workspace", "null-workspace", "no-workspace-field"],
)
def test_only_a_line_that_lacks_the_workspace_field_is_an_unrecorded_key(
    line: dict[str, str | None], recorded: bool
) -> None:
    """A line that names its workspace, even as null, is keyed by it; a line without the
    field (written before lines named one) is a key of its own, marked unrecorded."""
    base = {"run": "r", "at": "2026-11-01T02:00:00Z", "target": "gpu", "uri": "local"}
    entry = HistoryEntry.model_validate({**base, "status": "healthy", **line})
    assert entry.key.recorded is recorded
    assert entry.key.workspace == line.get("workspace")


def test_no_history_file_is_no_entries(tmp_path: Path) -> None:
    """Before the first run there is nothing to read: no entries, and no file is made."""
    history = HealthHistory(tmp_path / "health")
    assert history.entries() == []
    assert not (tmp_path / "health").exists()


def test_entries_are_oldest_first_and_filtered_by_target(tmp_path: Path) -> None:
    """Entries come back in time order whatever order they were written in, and only the
    named target's when one is given."""
    history = HealthHistory(tmp_path)
    kept(
        history,
        result("healthy", 2, target="a"),
        result("healthy", 0, target="b"),
        result("healthy", 1, target="a"),
    )
    assert [(e.run, e.target) for e in history.entries()] == [
        ("run1", "b"),
        ("run2", "a"),
        ("run0", "a"),
    ]
    assert [e.run for e in history.entries("a")] == ["run2", "run0"]


def test_a_damaged_line_is_skipped_with_a_warning_naming_its_line(tmp_path: Path) -> None:
    """A line that is not a history entry is skipped, and the warning names the file and
    the line number, so the damage can be found."""
    history = HealthHistory(tmp_path)
    kept(history, result("healthy", 0))
    with history.history_path.open("a") as fh:
        fh.write("\n" + json.dumps({"run": "x"}) + "\n")
    with capture_logs() as logs:
        assert [e.run for e in history.entries()] == ["run0"]
    (warning,) = [e for e in logs if e["event"] == "health_history_line_skipped"]
    assert (warning["path"], warning["line"]) == (str(history.history_path), 3)


def test_record_keeps_the_whole_run_and_one_line_per_target(tmp_path: Path) -> None:
    """Recording a run writes its document to ``runs/<run>.json`` (read back, the same run)
    and appends one history line per target, leaving no temporary file."""
    history = HealthHistory(tmp_path)
    run = run_of("20261101-0001", result("healthy", 0, target="a"), result("regressed", 0))
    path = history.record(run)
    assert path == tmp_path / "runs" / "20261101-0001.json"
    assert HealthRun.model_validate_json(path.read_text()) == run
    lines = history.history_path.read_text().splitlines()
    assert [json.loads(line)["target"] for line in lines] == ["a", "gpu"]
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_second_run_appends_and_keeps_the_first(tmp_path: Path) -> None:
    """Each run adds its lines after those already kept; nothing earlier is rewritten."""
    history = HealthHistory(tmp_path)
    kept(history, result("healthy", 0))
    first = history.history_path.read_text()
    kept(history, result("healthy", 1))
    text = history.history_path.read_text()
    assert text.startswith(first) and len(text.splitlines()) == 2


def test_could_not_check_tonight_counts_the_unbroken_could_not_check_nights(
    tmp_path: Path,
) -> None:
    """A target that still cannot be checked has a could-not-check streak: it began on the
    first of the unreachable nights after its last healthy one."""
    history = HealthHistory(tmp_path)
    kept(history, result("healthy", 0), result("could_not_check", 1), result("could_not_check", 2))
    annotated = history.annotate(result("could_not_check", 3), "run3")
    assert (annotated.since, annotated.since_runs) == (T0 + timedelta(days=1), 3)


def test_a_failed_checks_since_is_broken_by_a_night_it_did_not_fail(tmp_path: Path) -> None:
    """A failed check dates from the first night of its own unbroken streak: a checked night
    on which it did not fail (even one regressed by another check) ends the earlier streak,
    and an unreachable night is skipped over."""
    history = HealthHistory(tmp_path)
    kept(
        history,
        result("regressed", 0, failed=("script_changed",)),
        result("regressed", 1, failed=("throughput",)),
        result("regressed", 2, failed=("script_changed",)),
        result("could_not_check", 3),
    )
    tonight = result("regressed", 4, failed=("script_changed", "throughput"))
    annotated = history.annotate(tonight, "run4")
    since = {c.name: c.since for c in annotated.checks}
    assert since == {"script_changed": T0 + timedelta(days=2), "throughput": T0 + timedelta(days=4)}
    # The target's own status streak counts every regressed night, the unreachable one skipped.
    assert (annotated.since, annotated.since_runs) == (T0, 4)


def test_only_failed_checks_get_a_since(tmp_path: Path) -> None:
    """A check that passed has no "since": the streak is of failures only."""
    tonight = result("healthy", 0).model_copy(
        update={"checks": [Check(name="sweep", title="probe sweep", status="passed")]}
    )
    annotated = HealthHistory(tmp_path).annotate(tonight, "run0")
    assert annotated.checks[0].since is None


@pytest.mark.parametrize(
    ("trend", "expected"),
    [(30, [1.0, 2.0, 3.0, 4.0]), (3, [2.0, 3.0, 4.0]), (1, [4.0]), (0, [4.0])],
    ids=["all", "last-three", "tonight-only", "zero-still-tonight"],
)
def test_the_trend_holds_at_most_trend_runs_ending_with_tonight(
    tmp_path: Path, trend: int, expected: list[float]
) -> None:
    """The trend is the last ``trend`` runs including tonight's, oldest first; tonight is in
    it however small ``trend`` is."""
    history = HealthHistory(tmp_path)
    kept(history, *(result("healthy", d, tps=float(d + 1)) for d in range(3)))
    annotated = history.annotate(result("healthy", 3, tps=4.0), "run3", trend)
    assert [p.tokens_per_s for p in annotated.trend] == expected
    assert annotated.trend[-1].run == "run3"


@pytest.mark.parametrize(
    "other",
    [
        {"workspace": "/other"},
        {"profile": "/etc/doctor.toml"},
        {"workspace": None},
    ],
    ids=["other-workspace", "other-profile", "no-workspace"],
)
def test_annotate_reads_only_the_lines_of_the_results_own_key(
    tmp_path: Path, other: dict[str, str | None]
) -> None:
    """Runs of the same target name in another workspace or profile are another target's
    history: they join neither tonight's streak nor its trend."""
    history = HealthHistory(tmp_path)
    kept(history, result("healthy", 0, tps=1.0), result("healthy", 1, tps=2.0, **other))  # type: ignore[arg-type]
    annotated = history.annotate(result("healthy", 2, tps=3.0), "run2")
    assert annotated.since_runs == 2
    assert [p.tokens_per_s for p in annotated.trend] == [1.0, 3.0]


def test_annotate_all_gives_each_result_its_own_keys_history(tmp_path: Path) -> None:
    """Annotating a run's results at once keeps each target's streak and trend its own."""
    history = HealthHistory(tmp_path)
    kept(history, result("healthy", 0, target="a", tps=1.0), result("regressed", 0, target="b"))
    a, b = history.annotate_all(
        [result("healthy", 1, target="a", tps=2.0), result("healthy", 1, target="b")], "run1"
    )
    assert (a.since_runs, [p.tokens_per_s for p in a.trend]) == (2, [1.0, 2.0])
    assert (b.since, b.since_runs) == (T0 + timedelta(days=1), 1)


def test_annotate_with_past_given_reads_no_file(tmp_path: Path) -> None:
    """With ``past`` given, the streak is reckoned from it alone (the file is not read: here
    there is none to read)."""
    past = [HistoryEntry.of("run0", result("regressed", 0))]
    annotated = HealthHistory(tmp_path / "absent").annotate(
        result("regressed", 1), "run1", past=past
    )
    assert (annotated.since, annotated.since_runs) == (T0, 2)
    assert not (tmp_path / "absent").exists()
