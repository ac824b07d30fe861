"""``agent.health.output.formats``: a health run written out, one format to a string or
every asked-for format into a directory, with a throughput chart per target beside the
Markdown report, under file names that are safe and distinct for each target."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.health.model import HealthRun, TargetResult, TrendPoint
from agent.health.output.formats import render, trend_name, write
from agent.health.output.names import Format

T0 = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)


def digest(target: str) -> str:
    """The first six hex digits of the target name's SHA-256."""
    return hashlib.sha256(target.encode()).hexdigest()[:6]


@pytest.mark.parametrize(
    ("target", "slug"),
    [
        ("gpu-a", "gpu-a"),
        ("node_1.lab", "node_1.lab"),
        ("ssh://root@gpu-b/pct:200", "ssh_root_gpu-b_pct_200"),
        ("../etc/passwd", "etc_passwd"),
        ("_hidden.", "hidden"),
        ("///", "target"),
        ("", "target"),
        ("x" * 60, "x" * 48),
        ("ünïcode", "n_code"),
    ],
    ids=[
        "plain",
        "dot-underscore-kept",
        "uri",
        "path-climb",
        "edges-stripped",
        "only-symbols",
        "empty",
        "long",
        "non-ascii",
    ],
)
def test_a_trend_file_name_is_a_safe_slug_and_a_digest_of_the_name(target: str, slug: str) -> None:
    """Each run of characters outside letters, digits, ``_``, ``.`` and ``-`` becomes one
    underscore, leading and trailing dots and underscores go, the slug keeps at most 48
    characters (``target`` when nothing is left), and six hex digits of the name's
    SHA-256 keep two names apart."""
    assert trend_name(target) == f"trend-{slug}-{digest(target)}.svg"


def run(*targets: TargetResult) -> HealthRun:
    return HealthRun(
        run="20261128-020000-0001",
        started_at=T0,
        finished_at=T0,
        exit_code=0,
        exit_reason="all targets healthy",
        jobs=1,
        target_timeout_s=600,
        targets=list(targets),
    )


def result(label: str, trend: list[float | None]) -> TargetResult:
    """A healthy target whose stored runs read ``trend`` tokens/s, oldest first."""
    return TargetResult(
        target=label,
        uri="local",
        status="healthy",
        started_at=T0,
        duration_s=1.0,
        trend=[
            TrendPoint(run=f"r{i}", at=T0, status="healthy", tokens_per_s=v)
            for i, v in enumerate(trend)
        ],
    )


def test_render_gives_each_format_its_own_document() -> None:
    """JSON is indented and ends with a newline, JUnit is XML, Markdown opens with its
    heading and the Prometheus textfile with its comments."""
    health = run(result("gpu-a", []))
    as_json = render(health, "json")
    assert as_json.endswith("}\n")
    assert json.loads(as_json)["run"] == "20261128-020000-0001"
    assert as_json.startswith('{\n "format": "dflash-doctor-health/1",')
    assert render(health, "junit").lstrip().startswith("<?xml")
    assert render(health, "md").startswith("# dflash-doctor health: 1 healthy\n")
    assert render(health, "prom").startswith("# HELP ")


def test_write_creates_the_directory_and_returns_charts_then_reports(tmp_path: Path) -> None:
    """The output directory is made with its parents; a target with a figure in its trend
    gets a chart, one with none gets none; the charts come first, then the reports in the
    order asked."""
    out = tmp_path / "a" / "b"
    health = run(result("gpu-a", [None, 100.0]), result("gpu-b", [None, None]))
    written = write(health, ["md", "json"], out)
    assert written == [out / trend_name("gpu-a"), out / "health.md", out / "health.json"]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in written)
    assert (out / trend_name("gpu-a")).read_text().lstrip().startswith("<svg")


def test_the_markdown_links_the_chart_written_beside_it(tmp_path: Path) -> None:
    """The Markdown report links the chart file of a target that has one."""
    write(run(result("gpu-a", [90.0, 100.0])), ["md"], tmp_path)
    link = f"![tokens/s trend of gpu-a]({trend_name('gpu-a')})"
    assert link in (tmp_path / "health.md").read_text().splitlines()


@pytest.mark.parametrize("formats", [["json", "prom"], ["junit"]], ids=["json-prom", "junit"])
def test_no_chart_is_drawn_without_the_markdown_report(
    tmp_path: Path, formats: list[Format]
) -> None:
    """Charts belong to the Markdown report: other formats write their own file only."""
    written = write(run(result("gpu-a", [90.0, 100.0])), formats, tmp_path)
    assert [p.name for p in written] == [
        {"json": "health.json", "prom": "dflash_doctor_health.prom", "junit": "health.junit.xml"}[f]
        for f in formats
    ]


def test_write_replaces_a_report_already_there(tmp_path: Path) -> None:
    """A report from an earlier run in the directory is replaced whole."""
    (tmp_path / "health.json").write_text("stale")
    write(run(result("gpu-a", [])), ["json"], tmp_path)
    assert json.loads((tmp_path / "health.json").read_text())["targets"][0]["target"] == "gpu-a"
