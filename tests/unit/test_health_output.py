"""Health outputs: JSON, JUnit (validated against the shipped XSD), Markdown with trends,
the Prometheus textfile (parsed by prometheus_client), SVG charts; and the run history
behind "since" and the trends."""

from __future__ import annotations

import importlib.util
import json
import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.health.history import HealthHistory
from agent.health.model import (
    Check,
    Cited,
    CitedFact,
    HealthRun,
    Metric,
    Status,
    TargetResult,
    TrendPoint,
)
from agent.health.output import junit as health_junit
from agent.health.output import markdown as health_markdown
from agent.health.output import prom as health_prom
from agent.health.output.formats import trend_name, write
from agent.health.output.names import FILES
from agent.health.output.trend import sparkline, svg
from agent.rules import default_rules
from tests.lib.need import need

T0 = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)
XSD = Path(health_junit.__file__).with_name(health_junit.XSD)
FAMILIES = [r.kind for r in default_rules()]


def checks(failed: str | None = None, error: str | None = None) -> list[Check]:
    out = [Check(name="sweep", title="probe sweep", status="passed", message="14 of 14")]
    for kind in FAMILIES:
        if kind == failed:
            out.append(
                Check(
                    name=kind,
                    title=kind,
                    status="failed",
                    message="verified",
                    lines=[
                        Cited(
                            text="md5 of /w/train.py (now) = 'a' [F-aa11] differs from "
                            "'b' [F-bb22]",
                            cites=["F-aa11", "F-bb22"],
                            outcome="holds",
                        )
                    ],
                )
            )
        elif kind == error:
            out.append(Check(name=kind, title=kind, status="error", message="unverifiable"))
        else:
            out.append(Check(name=kind, title=kind, status="passed", message="refuted"))
    return out


def target_result(label: str, status: Status, at: datetime, **extra: object) -> TargetResult:
    fields: dict[str, object] = {
        "target": label,
        "uri": f"ssh://root@{label}/pct:200",
        "baseline": "good",
        "status": status,
        "started_at": at,
        "duration_s": 6.5,
        "session": "20261128-020000-ab12",
        "transcript": "/state/sessions/20261128-020000-ab12/transcript.jsonl",
    }
    fields.update(extra)
    return TargetResult.model_validate(fields)


def sample_run(at: datetime = T0) -> HealthRun:
    metrics = {
        "tokens_per_s": Metric(value=4312.5, cites=["F-aa11"], label="drafter tokens/s"),
        "baseline_tokens_per_s": Metric(value=12800.0, cites=["F-cc33"], label="baseline"),
        "last_step": Metric(value=1200, cites=["F-aa11"], label="drafter last step"),
        "last_step_age_s": Metric(value=93.25, cites=["F-dd44", "F-aa11"], label="age"),
    }
    targets = [
        target_result(
            "gpu-a",
            "regressed",
            at,
            reason="regressed: script_changed",
            checks=checks(failed="script_changed"),
            metrics=metrics,
            facts=[CitedFact(id="F-aa11", probe="checksums", command="python3 -")],
            since=at - timedelta(days=2),
            since_runs=3,
            trend=[
                TrendPoint(
                    run="r1", at=at - timedelta(days=2), status="healthy", tokens_per_s=12800
                ),
                TrendPoint(run="r2", at=at - timedelta(days=1), status="could_not_check"),
                TrendPoint(run="r3", at=at, status="regressed", tokens_per_s=4312.5),
            ],
        ),
        target_result(
            'gpu-"b"\\<&>',
            "could_not_check",
            at,
            # A probe's stderr can carry control characters; XML 1.0 cannot.
            reason="ConnectError: refused \x1b[31m\x00 <&>",
            checks=[
                Check(name="sweep", title="probe sweep", status="error", message="refused \x00"),
                *(
                    Check(name=k, title=k, status="skipped", message="not checked")
                    for k in FAMILIES
                ),
            ],
        ),
        target_result("gpu-c", "healthy", at, checks=checks()),
    ]
    return HealthRun(
        run="20261128-020000-0001",
        started_at=at,
        finished_at=at + timedelta(seconds=12),
        exit_code=1,
        exit_reason="regression found on gpu-a",
        jobs=4,
        target_timeout_s=600,
        targets=targets,
    )


def test_json_round_trips() -> None:
    """The JSON report reads back into the same run, states its format version, and keeps each
    line's cited fact ids."""
    run = sample_run()
    again = HealthRun.model_validate_json(run.model_dump_json())
    assert again == run
    doc = json.loads(run.model_dump_json())
    assert doc["format"] == "dflash-doctor-health/1"
    assert doc["targets"][0]["checks"][2]["lines"][0]["cites"] == ["F-aa11", "F-bb22"]


def test_junit_validates_against_the_shipped_schema() -> None:
    """The JUnit file passes the shipped XSD even with XML-hostile target names and control
    characters: one suite per target, one case per check, the regression a failure citing each fact
    once, the unreachable target an error."""
    need(
        importlib.util.find_spec("xmlschema") is not None,
        "xmlschema",
        "pip install xmlschema (the dev extra)",
    )
    import xmlschema

    text = health_junit.render(sample_run())
    xmlschema.XMLSchema(str(XSD)).validate(text)
    root = ET.fromstring(text)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["gpu-a", 'gpu-"b"\\<&>', "gpu-c"]
    # One test case per target and check.
    assert all(len(s.findall("testcase")) == 1 + len(FAMILIES) for s in suites)
    assert root.get("tests") == str(3 * (1 + len(FAMILIES)))
    assert (root.get("failures"), root.get("errors")) == ("1", "1")
    failure = suites[0].find("testcase[@name='script_changed']/failure")
    assert failure is not None
    # Each fact the claim cites is named once: inline in its sentence, not again after it.
    assert [(failure.text or "").count(c) for c in ("[F-aa11]", "[F-bb22]")] == [1, 1]
    props = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert props["status"] == "regressed" and props["tokens_per_s"] == "4312.5"
    error = suites[1].find("testcase[@name='sweep']/error")
    assert error is not None and "\ufffd" in (error.get("message") or "")


def test_schema_rejects_what_dashboards_would_not_read() -> None:
    """The XSD is not a rubber stamp: a test case without a classname fails it."""
    need(
        importlib.util.find_spec("xmlschema") is not None,
        "xmlschema",
        "pip install xmlschema (the dev extra)",
    )
    import xmlschema

    schema = xmlschema.XMLSchema(str(XSD))
    bad = health_junit.render(sample_run()).replace('classname="dflash-doctor.health.gpu-c"', "")
    assert not schema.is_valid(bad)


def test_prometheus_textfile_parses_and_carries_the_flags() -> None:
    """The Prometheus textfile parses with prometheus_client and carries per-target regression,
    status, speed, step age, 'since' and exit-code series; an unreachable target gets no family
    flags, since nothing was decided about it."""
    need(
        importlib.util.find_spec("prometheus_client") is not None,
        "prometheus_client",
        "pip install prometheus_client (the dev extra)",
    )
    from prometheus_client.parser import text_string_to_metric_families

    text = health_prom.render(sample_run())
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }

    def value(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    weird = 'gpu-"b"\\<&>'
    assert value("dflash_doctor_health_regression", target="gpu-a") == 1
    assert (
        value("dflash_doctor_health_regression_family", target="gpu-a", family="script_changed")
        == 1
    )
    assert (
        value("dflash_doctor_health_regression_family", target="gpu-c", family="script_changed")
        == 0
    )
    assert value("dflash_doctor_health_up", target=weird) == 0
    assert value("dflash_doctor_health_status", target=weird, status="could_not_check") == 1
    assert value("dflash_doctor_tokens_per_second", target="gpu-a") == 4312.5
    assert value("dflash_doctor_last_step_age_seconds", target="gpu-a") == 93.25
    assert value("dflash_doctor_health_status_since_timestamp_seconds", target="gpu-a") == (
        (T0 - timedelta(days=2)).timestamp()
    )
    assert value("dflash_doctor_health_exit_code") == 1
    # An unreachable target has no family flags: nothing was decided about it.
    assert not any(
        k[0].endswith("regression_family") and ("target", weird) in k[1] for k in samples
    )


def test_markdown_has_the_fleet_table_trend_and_cited_verdicts() -> None:
    """The Markdown report opens with the fleet's tally, gives each target a row with status, since,
    figures with citations and a sparkline, links the trend chart, and lists cited verdicts and the
    facts' commands."""
    text = health_markdown.render(sample_run(), {"gpu-a": "trend-gpu-a.svg"})
    assert text.startswith("# dflash-doctor health: 1 regressed, 1 could not check, 1 healthy")
    row = next(line for line in text.splitlines() if line.startswith("| `gpu-a`"))
    assert "✘ regressed" in row and "2026-11-26 02:00 UTC (3 runs)" in row
    assert "4,312 [F-aa11]" in row and "1.6 min [F-dd44, F-aa11]" in row
    assert "█·▁" in row  # 12800, a gap, 4312.5
    assert "![tokens/s trend of gpu-a](trend-gpu-a.svg)" in text
    assert "- ✔ md5 of /w/train.py (now) = 'a' [F-aa11] differs from 'b' [F-bb22]" in text
    assert "| F-aa11 | checksums | `python3 -` |" in text


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ([1.0, 2.0, 3.0], "▁▅█"),
        ([5.0, 5.0], "▅▅"),
        ([None, 1.0, None, 8.0], "·▁·█"),
        ([None], ""),
        ([], ""),
    ],
)
def test_sparkline(values: list[float | None], line: str) -> None:
    """A sparkline scales values from lowest to highest, shows a flat series mid-height, marks
    unread nights with a dot, and is empty with nothing read."""
    assert sparkline(values) == line


def test_svg_chart_breaks_at_gaps_and_parses() -> None:
    """The SVG trend parses, its line breaks where a night has no figure rather than bridging it,
    and its title gives the latest figure and the number of runs."""
    points = [
        TrendPoint(run=f"r{i}", at=T0 + timedelta(days=i), status="healthy", tokens_per_s=v)
        for i, v in enumerate([12800.0, 12750.0, None, 4300.0, 4310.0])
    ]
    root = ET.fromstring(svg(points, "gpu-a tokens/s"))
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}polyline")) == 2
    assert len(root.findall(f"{ns}circle")) == 4
    assert "4,310 tok/s (latest of 5 runs)" in (root.findtext(f"{ns}title") or "")


def test_write_puts_every_format_in_the_directory(tmp_path: Path) -> None:
    """Writing the formats puts each file, and the trend chart the Markdown links, in the output
    directory, leaving no temporary file behind."""
    written = write(sample_run(), ["json", "junit", "md", "prom"], tmp_path / "out")
    names = sorted(p.name for p in written)
    assert names == sorted([*FILES.values(), trend_name("gpu-a")])
    assert not list((tmp_path / "out").glob(".*.tmp"))
    assert trend_name("gpu-a") in (tmp_path / "out" / "health.md").read_text()


def test_trend_names_are_safe_and_distinct() -> None:
    """A trend chart's file name is made safe from a URI, and two target names that would sanitise
    alike still get different files."""
    assert trend_name("ssh://root@h:22/pct:200").startswith("trend-ssh_root_h_22_pct_200-")
    assert trend_name("a/b") != trend_name("a_b")


def test_history_answers_since_when(tmp_path: Path) -> None:
    """Healthy, regressed twice (with an unreachable night between), then regressed again:
    the regression dates from its first night; the could-not-check night neither breaks
    nor extends the streak; the trend lists every night with gaps where nothing was read."""
    history = HealthHistory(tmp_path)
    nights = [
        ("healthy", None, 12800.0),
        ("regressed", "script_changed", 4300.0),
        ("could_not_check", None, None),
        ("regressed", "script_changed", 4310.0),
    ]
    for i, (status, failed, tps) in enumerate(nights):
        at = T0 + timedelta(days=i)
        metrics = {"tokens_per_s": Metric(value=tps, cites=["F-1"], label="t")} if tps else {}
        r = target_result("gpu-a", status, at, checks=checks(failed=failed), metrics=metrics)  # type: ignore[arg-type]
        r = history.annotate(r, f"run{i}")
        history.record(run_of(r, f"run{i}"))
    tonight = target_result(
        "gpu-a",
        "regressed",
        T0 + timedelta(days=4),
        checks=checks(failed="script_changed"),
        metrics={"tokens_per_s": Metric(value=4320.0, cites=["F-9"], label="t")},
    )
    annotated = history.annotate(tonight, "run4")
    assert annotated.since == T0 + timedelta(days=1)
    assert annotated.since_runs == 3
    assert annotated.checks[2].name == "script_changed"
    assert annotated.checks[2].since == T0 + timedelta(days=1)
    assert [p.tokens_per_s for p in annotated.trend] == [12800.0, 4300.0, None, 4310.0, 4320.0]
    assert history.annotate(tonight, "run4", trend=2).trend[0].tokens_per_s == 4310.0
    assert (tmp_path / "runs" / "run3.json").exists()


def test_history_skips_a_damaged_line(tmp_path: Path) -> None:
    """A half-written line in the history file is skipped; the runs recorded around it are still
    read."""
    history = HealthHistory(tmp_path)
    r = target_result("gpu-a", "healthy", T0, checks=checks())
    history.record(run_of(r, "run0"))
    with history.history_path.open("a") as fh:
        fh.write('{"run": "half a li\n')
    history.record(run_of(target_result("gpu-a", "healthy", T0 + timedelta(days=1)), "run1"))
    assert [e.run for e in history.entries("gpu-a")] == ["run0", "run1"]


def test_a_status_change_starts_a_new_streak(tmp_path: Path) -> None:
    """A healthy night after a regressed one starts a new streak: 'since' is tonight, one run
    long."""
    history = HealthHistory(tmp_path)
    history.record(run_of(target_result("gpu-a", "regressed", T0), "run0"))
    now = target_result("gpu-a", "healthy", T0 + timedelta(days=1))
    annotated = history.annotate(now, "run1")
    assert (annotated.since, annotated.since_runs) == (now.started_at, 1)
    assert math.isclose(annotated.duration_s, 6.5)


def run_of(result: TargetResult, run: str) -> HealthRun:
    return HealthRun(
        run=run,
        started_at=result.started_at,
        finished_at=result.started_at,
        exit_code=0,
        exit_reason="",
        jobs=1,
        target_timeout_s=60,
        targets=[result],
    )


def test_annotating_a_run_reads_the_history_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Annotating every target of a run reads the history file once, not once per target, and each
    still gets its streak and trend."""
    history = HealthHistory(tmp_path)
    history.record(sample_run(T0))
    reads = 0
    real = HealthHistory.entries

    def counting(self: HealthHistory, target: str | None = None) -> list[Any]:
        nonlocal reads
        reads += 1
        return real(self, target)

    monkeypatch.setattr(HealthHistory, "entries", counting)
    tonight = sample_run(T0 + timedelta(days=1)).targets
    annotated = history.annotate_all(tonight, "run1")
    assert reads == 1
    assert [a.since_runs for a in annotated] == [2, 2, 2]
    assert [len(a.trend) for a in annotated] == [2, 2, 2]
