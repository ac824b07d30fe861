"""``agent.health.output.markdown``: a health run as Markdown, a fleet table and then one
section per target, where every figure carries the fact ids it was read from, table cells
cannot break the table, and only failed or undecided checks list their verdicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.health.model import (
    RULE,
    Check,
    Cited,
    CitedFact,
    HealthRun,
    Judged,
    Metric,
    TargetResult,
    TrendPoint,
)
from agent.health.output.markdown import _age, render, which

T0 = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (59.4, "59 s [F-1]"),
        (60.0, "1.0 min [F-1]"),
        (3599.0, "60.0 min [F-1]"),
        (3600.0, "1.0 h [F-1]"),
        (5400.0, "1.5 h [F-1]"),
        (86400.0, "1.0 d [F-1]"),
        (-120.0, "-2.0 min [F-1]"),
    ],
    ids=[
        "seconds",
        "a-minute",
        "under-an-hour",
        "an-hour",
        "hour-and-a-half",
        "a-day",
        "clock-skew",
    ],
)
def test_an_age_is_written_in_the_largest_unit_it_fills(seconds: float, shown: str) -> None:
    """An age is in days, hours or minutes to one decimal from the first unit it reaches
    (by size, so a negative age from clock skew too), else whole seconds, with its cites."""
    assert _age(Metric(value=seconds, cites=["F-1"], label="age")) == shown


def test_no_age_is_a_dash() -> None:
    """A target with no last-step age shows a dash."""
    assert _age(None) == "–"


def result(**fields: object) -> TargetResult:
    base: dict[str, object] = {
        "target": "gpu-a",
        "uri": "gpu-a",
        "status": "healthy",
        "started_at": T0,
        "duration_s": 1.0,
    }
    return TargetResult.model_validate({**base, **fields})


@pytest.mark.parametrize(
    ("baseline", "word"),
    [("good", "snapshot `good`"), (None, "derived")],
    ids=["snapshot", "derived"],
)
def test_the_baseline_in_a_word(baseline: str | None, word: str) -> None:
    """A named baseline is its snapshot; none is the derived one."""
    assert which(result(baseline=baseline)) == word


def fleet(*targets: TargetResult) -> HealthRun:
    return HealthRun(
        run="r-1",
        started_at=T0,
        finished_at=T0 + timedelta(seconds=9),
        exit_code=1,
        exit_reason="regression found on gpu-a",
        jobs=2,
        target_timeout_s=600,
        targets=list(targets),
    )


REGRESSED = result(
    uri="ssh://root@gpu-a/pct:200",
    workspace="/w/a",
    status="regressed",
    reason="regressed: throughput",
    session="s1",
    transcript="/t.jsonl",
    since=T0,
    since_runs=3,
    baseline_used=Cited(text="derived from the train log's early windows", cites=["F-aa11"]),
    judged=Judged(
        label="drafter tokens/s",
        value=850.4,
        value_fact="F-aa11",
        baseline=1000.0,
        baseline_fact="F-aa11",
        ratio=0.9,
    ),
    metrics={
        "tokens_per_s": Metric(value=850.4, cites=["F-aa11"], label="drafter tokens/s"),
        "baseline_tokens_per_s": Metric(
            value=1000.0, cites=["F-aa11"], label="baseline drafter tokens/s"
        ),
        "last_step": Metric(value=1200, cites=["F-aa11"], label="drafter last step"),
        "last_step_age_s": Metric(value=7200, cites=["F-dd44"], label="age"),
    },
    checks=[
        Check(name="sweep", title="probe sweep", status="passed", message="14 of 14 | ok"),
        Check(
            name="throughput",
            title="tokens/s against the baseline",
            status="failed",
            message="850 < 900",
            since=T0 - timedelta(days=1),
            lines=[
                Cited(text="tokens/s = 850.4 [F-aa11] < 900", cites=["F-aa11"], outcome="fails"),
                Cited(text="drafter last step = 1200", cites=["F-dd44"]),
            ],
        ),
        Check(
            name="applies", title="an interrupted apply", status="error", message="journal\nunread"
        ),
        Check(name="symptoms", title="what the run did over time", status="skipped"),
        Check(
            name="own_code",
            title="own code",
            status="passed",
            lines=[Cited(text="never shown", cites=["F-ee55"], outcome="holds")],
        ),
    ],
    facts=[
        CitedFact(id="F-aa11", probe="trainlog", command="python3 - | tee"),
        CitedFact(id="F-cc33", probe="checksums", command="md5sum", baseline=True),
    ],
)

UNREACHED = result(
    target="gpu-b|x",
    uri="gpu-b|x",
    baseline="good",
    status="could_not_check",
    reason="ConnectError: refused",
    trend=[
        TrendPoint(run="r0", at=T0, status="healthy"),
        TrendPoint(run="r1", at=T0, status="healthy", tokens_per_s=1.0),
        TrendPoint(run="r2", at=T0, status="could_not_check", tokens_per_s=8.0),
    ],
    checks=[
        Check(
            name="sweep",
            title="probe sweep",
            status="error",
            message="refused",
            lines=[Cited(text="ssh said: refused", outcome="unverifiable")],
        )
    ],
)


def test_a_fleet_renders_its_tally_table_and_a_section_per_target() -> None:
    """The whole document for a regressed target and an unreachable one: the tally,
    the run line, the exit code and the rule; a row per target (figures with cites, the
    baseline, the sparkline, the age, the failed checks); then each target's section
    with where it is, its figures, its checks table, the verdicts of failed or
    undecided checks only, and the facts it cites with their commands."""
    text = render(fleet(REGRESSED, UNREACHED), {"gpu-b|x": "trend-b.svg"})
    assert text.split("\n") == [
        "# dflash-doctor health: 1 regressed, 1 could not check",
        "",
        "- run: `r-1`, 2026-11-28 02:00 UTC, 2 target(s), 2 at a time, 600s limit each",
        "- exit code 1: regression found on gpu-a",
        f"- a target is {RULE}",
        "",
        "| target | status | since | tokens/s | baseline tokens/s | trend | last step age"
        " | regressed |",
        "|---|---|---|---|---|---|---|---|",
        "| `gpu-a` | ✘ regressed | 2026-11-28 02:00 UTC (3 runs) | 850 [F-aa11]"
        " | 1,000 [F-aa11] (derived) | – | 2.0 h [F-dd44] | throughput |",
        "| `gpu-b\\|x` | ? could not check |  (1 run) | – | snapshot `good` | ·▁█ | – | – |",
        "",
        "## `gpu-a` — ✘ regressed",
        "",
        "- target: `ssh://root@gpu-a/pct:200`",
        "- workspace: `/w/a`",
        "- baseline: derived from the train log's early windows [F-aa11]",
        "- regressed: throughput",
        "- session `s1`, transcript `/t.jsonl`",
        "- drafter tokens/s = 850 [F-aa11]",
        "- baseline drafter tokens/s = 1,000 [F-aa11]",
        "- regressed below 900 tokens/s (0.9× the baseline's 1,000)",
        "- drafter last step = 1,200 [F-aa11]",
        "- last step age = 2.0 h [F-dd44]",
        "",
        "| check | result | |",
        "|---|---|---|",
        "| probe sweep | ✔ passed | 14 of 14 \\| ok |",
        "| tokens/s against the baseline | ✘ failed since 2026-11-27 02:00 UTC | 850 < 900 |",
        "| an interrupted apply | ? error | journal unread |",
        "| what the run did over time | – skipped |  |",
        "| own code | ✔ passed |  |",
        "",
        "### tokens/s against the baseline — failed",
        "",
        "- ✘ tokens/s = 850.4 [F-aa11] < 900",
        "- · drafter last step = 1200 [F-dd44]",
        "",
        "| fact | probe | command |",
        "|---|---|---|",
        "| F-aa11 | trainlog | `python3 - \\| tee` |",
        "| F-cc33 (baseline) | checksums | `md5sum` |",
        "",
        "## `gpu-b|x` — ? could not check",
        "",
        "- baseline: snapshot `good`",
        "- ConnectError: refused",
        "- tokens/s over the last 3 runs: ·▁█",
        "",
        "![tokens/s trend of gpu-b|x](trend-b.svg)",
        "",
        "| check | result | |",
        "|---|---|---|",
        "| probe sweep | ? error | refused |",
        "",
        "### probe sweep — error",
        "",
        "- ? ssh said: refused",
        "",
    ]


def test_an_empty_fleet_says_no_targets() -> None:
    """A run with no targets says so in its heading and has an empty table."""
    text = render(fleet())
    assert text.split("\n")[0] == "# dflash-doctor health: no targets"
    assert text.endswith("|---|---|---|---|---|---|---|---|\n")
