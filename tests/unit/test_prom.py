"""The health run as a Prometheus textfile (``agent.health.output.prom``): which series each
target gets and with which labels, values printed exactly as the JSON has them, label values
escaped as the exposition format wants, and HELP/TYPE only for series that have samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent.health.model import Check, CheckStatus, HealthRun, Judged, Metric, Status, TargetResult
from agent.health.output.prom import render

T0 = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)


def check(name: str, status: CheckStatus) -> Check:
    return Check(name=name, title=name, status=status)


def target(label: str, status: Status, **extra: object) -> TargetResult:
    fields: dict[str, object] = {
        "target": label,
        "uri": "local",
        "status": status,
        "started_at": T0,
        "duration_s": 6.5,
    }
    return TargetResult.model_validate({**fields, **extra})


def run_of(*targets: TargetResult, exit_code: int = 1) -> HealthRun:
    return HealthRun(
        run="r",
        started_at=T0,
        finished_at=T0 + timedelta(seconds=9),
        exit_code=exit_code,
        exit_reason="",
        jobs=1,
        target_timeout_s=60,
        targets=list(targets),
    )


def samples(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]


def regressed() -> TargetResult:
    """A target judged 2,000 tokens/s against a derived 3,000: throughput failed, one family
    passed, the symptoms undecided."""
    return target(
        "gpu",
        "regressed",
        checks=[
            check("sweep", "passed"),
            check("throughput", "failed"),
            check("symptoms", "error"),
            check("script_changed", "passed"),
            check("crash_stated", "error"),
        ],
        judged=Judged(
            label="t", value=2000.0, value_fact="F-1", baseline=3000.0, baseline_fact="F-1"
        ),
        metrics={
            "tokens_per_s": Metric(value=2000.0, cites=["F-1"], label="t"),
            "baseline_tokens_per_s": Metric(value=3000.0, cites=["F-1"], label="b"),
            "last_step": Metric(value=1200.0, cites=["F-1"], label="s"),
            "last_step_age_s": Metric(value=93.25, cites=["F-1", "F-2"], label="a"),
        },
        since=T0 - timedelta(days=1),
    )


def test_a_judged_target_gets_every_series_in_order() -> None:
    """A checked, regressed target: one status series per status (1 for its own), up,
    regression, a flag for each decided family and for the throughput, the ratio, the
    judged figures and the line below which it regressed, the derived baseline's info, the
    step and its age, since, duration; then the run's time and exit code."""
    since = (T0 - timedelta(days=1)).timestamp()
    assert samples(render(run_of(regressed()))) == [
        'dflash_doctor_health_status{target="gpu",status="healthy"} 0',
        'dflash_doctor_health_status{target="gpu",status="regressed"} 1',
        'dflash_doctor_health_status{target="gpu",status="could_not_check"} 0',
        'dflash_doctor_health_up{target="gpu"} 1',
        'dflash_doctor_health_regression{target="gpu"} 1',
        'dflash_doctor_health_regression_family{target="gpu",family="script_changed"} 0',
        'dflash_doctor_health_throughput_regression{target="gpu"} 1',
        "dflash_doctor_health_regression_ratio 0.8",
        'dflash_doctor_tokens_per_second{target="gpu"} 2000',
        'dflash_doctor_baseline_tokens_per_second{target="gpu"} 3000',
        'dflash_doctor_regressed_below_tokens_per_second{target="gpu"} 2400',
        'dflash_doctor_health_baseline_info{target="gpu",kind="derived",baseline=""} 1',
        'dflash_doctor_last_step{target="gpu"} 1200',
        'dflash_doctor_last_step_age_seconds{target="gpu"} 93.25',
        f'dflash_doctor_health_status_since_timestamp_seconds{{target="gpu"}} {int(since)}',
        'dflash_doctor_health_check_duration_seconds{target="gpu"} 6.5',
        f"dflash_doctor_health_last_run_timestamp_seconds {int(T0.timestamp())}",
        "dflash_doctor_health_exit_code 1",
    ]


def test_each_series_with_samples_is_introduced_once_by_help_and_type() -> None:
    """Every series with samples opens with its HELP and a gauge TYPE line, right before
    its samples; a series no target has (here none is judged) is left out entirely."""
    text = render(run_of(target("gpu", "healthy", baseline="good"), exit_code=0))
    lines = text.splitlines()
    i = lines.index("# TYPE dflash_doctor_health_up gauge")
    assert lines[i - 1] == (
        "# HELP dflash_doctor_health_up 1 if the last health run could check the target, 0 if not."
    )
    assert lines[i + 1] == 'dflash_doctor_health_up{target="gpu"} 1'
    assert sum(line.startswith("# TYPE ") for line in lines) == len(
        {s.partition("{")[0].partition(" ")[0] for s in samples(text)}
    )
    for absent in ("tokens_per_second", "health_throughput_regression", "regression_family"):
        assert f"dflash_doctor_{absent}" not in text
    assert text.endswith("dflash_doctor_health_exit_code 0\n")


def test_a_snapshot_baseline_is_named_in_the_info_series() -> None:
    """A target compared with a snapshot says so and names it."""
    text = render(run_of(target("gpu", "healthy", baseline="good")))
    assert (
        'dflash_doctor_health_baseline_info{target="gpu",kind="snapshot",baseline="good"} 1'
        in samples(text)
    )


def test_label_values_escape_backslash_quote_and_newline() -> None:
    """A target name with a backslash, a double quote and a newline is written with each
    escaped (\\\\, \\", \\n), so the line still parses as one sample."""
    text = render(run_of(target('a\\b"c\nd', "could_not_check")))
    assert r'dflash_doctor_health_up{target="a\\b\"c\nd"} 0' in samples(text)
    assert all(line.startswith(("#", "dflash_doctor_")) for line in text.splitlines())


def test_undecided_checks_raise_no_flag() -> None:
    """A throughput check or family that errored or was skipped has no regression flag:
    nothing was decided about it, so neither 0 nor 1 is said."""
    t = target(
        "gpu",
        "could_not_check",
        checks=[check("throughput", "skipped"), check("script_changed", "error")],
    )
    text = render(run_of(t, exit_code=2))
    assert "health_throughput_regression{" not in text
    assert "health_regression_family{" not in text
    assert 'dflash_doctor_health_regression{target="gpu"} 0' in samples(text)


def test_figures_are_printed_unrounded() -> None:
    """A large or fractional figure is the JSON's number, not a rounded or exponent form."""
    t = target(
        "gpu",
        "healthy",
        duration_s=0.125,
        metrics={"tokens_per_s": Metric(value=1234567.0, cites=[], label="t")},
    )
    lines = samples(render(run_of(t)))
    assert 'dflash_doctor_tokens_per_second{target="gpu"} 1234567' in lines
    assert 'dflash_doctor_health_check_duration_seconds{target="gpu"} 0.125' in lines
