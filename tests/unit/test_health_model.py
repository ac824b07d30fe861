"""What a health check produces (``agent.health.model``): how figures are printed for people
and for machines, the judged throughput's regression line, a run's tallies, and the run's
exit code with the reason it gives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.health.model import (
    EXIT_HEALTHY,
    EXIT_NOT_CHECKED,
    EXIT_REGRESSION,
    REGRESSED_BELOW,
    RULE,
    Check,
    HealthRun,
    Judged,
    Status,
    TargetResult,
    exact,
    exit_code,
    figure,
)

NOW = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def result(label: str, status: Status) -> TargetResult:
    return TargetResult(target=label, uri="local", status=status, started_at=NOW, duration_s=1.0)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1932.4817, "1,932"),
        (1234567.0, "1,234,567"),
        (100.0, "100"),
        (99.5, "99.5"),
        (3.14159, "3.142"),
        (0.000123456, "0.0001235"),
        (-2500.0, "-2,500"),
        (0.0, "0"),
    ],
    ids=["thousands", "millions", "hundred", "below-hundred", "small", "tiny", "negative", "zero"],
)
def test_figure_rounds_large_numbers_to_grouped_integers_and_keeps_four_digits_of_small(
    value: float, shown: str
) -> None:
    """From 100 up (either sign) a figure is a whole number with thousands separators;
    below, four significant digits."""
    assert figure(value) == shown


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1234567.0, "1234567"),
        (2000, "2000"),
        (4312.5, "4312.5"),
        (0.1, "0.1"),
        (93.25, "93.25"),
        (-3.0, "-3"),
        (1e20, "100000000000000000000"),
    ],
    ids=["large-whole", "int", "half", "tenth", "quarter", "negative-whole", "huge-whole"],
)
def test_exact_prints_the_same_number_unrounded(value: float, text: str) -> None:
    """A machine-read figure is the number itself: whole numbers without a decimal point
    or exponent, others as Python's shortest exact repr; it reads back to the same value."""
    assert exact(value) == text
    assert float(text) == value


def test_the_regression_line_is_the_baseline_times_the_ratio() -> None:
    """A judged throughput regressed below ``baseline × ratio``; the ratio defaults to the
    rule's (0.8, the symptom layer's drop) and the rule says so."""
    judged = Judged(label="t", value=1.0, value_fact="F-1", baseline=3000.0, baseline_fact="F-2")
    assert judged.ratio == REGRESSED_BELOW == 0.8
    assert judged.threshold == pytest.approx(2400.0)
    assert judged.model_copy(update={"ratio": 0.5}).threshold == 1500.0
    assert "below 0.8× the baseline's" in RULE


def test_a_results_regressions_are_its_failed_checks_in_order() -> None:
    """The regressions of a result are the names of its failed checks, in check order;
    errors and skips are not regressions."""
    checks = [
        Check(name=name, title=name, status=status)
        for name, status in (
            ("sweep", "passed"),
            ("throughput", "failed"),
            ("symptoms", "error"),
            ("script_changed", "failed"),
            ("blocked", "skipped"),
        )
    ]
    r = result("a", "regressed").model_copy(update={"checks": checks})
    assert r.regressions == ["throughput", "script_changed"]


def test_a_run_counts_its_targets_by_status() -> None:
    """A run tallies its targets per status, zero for a status none has."""
    run = HealthRun(
        run="r",
        started_at=NOW,
        finished_at=NOW,
        exit_code=1,
        exit_reason="",
        jobs=1,
        target_timeout_s=60,
        targets=[result("a", "regressed"), result("b", "healthy"), result("c", "regressed")],
    )
    assert [run.count(s) for s in ("healthy", "regressed", "could_not_check")] == [1, 2, 0]
    assert (run.format, run.rule) == ("dflash-doctor-health/1", RULE)


@pytest.mark.parametrize(
    ("statuses", "code", "why"),
    [
        (["healthy", "healthy", "healthy"], EXIT_HEALTHY, "all 3 target(s) healthy"),
        (["regressed", "healthy", "regressed"], EXIT_REGRESSION, "regression found on t0, t2"),
        (
            ["could_not_check", "regressed"],
            EXIT_REGRESSION,
            "regression found on t1 (could not check t0)",
        ),
        (["healthy", "could_not_check"], EXIT_NOT_CHECKED, "could not check t1"),
        ([], EXIT_NOT_CHECKED, "no targets"),
    ],
    ids=["healthy", "regressed", "regressed-and-unchecked", "unchecked", "empty"],
)
def test_the_exit_reason_names_the_targets_behind_the_code(
    statuses: list[Status], code: int, why: str
) -> None:
    """The reason names which targets regressed, and which could not be checked (beside a
    regression, in brackets), in target order; all healthy is counted."""
    assert exit_code([result(f"t{i}", s) for i, s in enumerate(statuses)]) == (code, why)


def test_the_exit_codes_are_the_documented_numbers() -> None:
    """0 healthy, 1 regression, 2 could not check: what cron, systemd and CI read."""
    assert (EXIT_HEALTHY, EXIT_REGRESSION, EXIT_NOT_CHECKED) == (0, 1, 2)
