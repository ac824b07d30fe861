"""Throughput trends of the health outputs (``agent.health.output.trend``): the sparkline's
scaling, and the SVG chart's caption, guide lines (the baseline and the regression line),
where each run's point lands and how it is coloured by its verdict."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

from agent.health.model import Status, TrendPoint
from agent.health.output.trend import sparkline, svg

NS = "{http://www.w3.org/2000/svg}"
T0 = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)


def point(day: int, tps: float | None, status: Status, *failed: str) -> TrendPoint:
    return TrendPoint(
        run=f"r{day}",
        at=T0 + timedelta(days=day),
        status=status,
        tokens_per_s=tps,
        regressions=list(failed),
    )


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], "▁▂▃▄▅▆▇█"),
        ([0.0, 100.0, 30.0], "▁█▃"),
        ([0.0, 100.0, 64.0], "▁█▅"),
        ([-5.0, 5.0, None], "▁█·"),
        ([None, 7.0, None], "·▅·"),
    ],
    ids=["one-bar-per-eighth", "rounds-down", "rounds-to-nearest", "negative", "one-value"],
)
def test_sparkline_places_each_value_on_the_nearest_of_eight_bars(
    values: list[float | None], line: str
) -> None:
    """Each value takes the bar nearest its place between the lowest and highest value;
    a lone value is mid-height, a missing one a dot."""
    assert sparkline(values) == line


def chart() -> ET.Element:
    """Four nights: healthy 1,000; throughput regressed 2,000; unreachable; another check
    failed at 1,500; against a 2,500 tokens/s snapshot, regressed below 0.8×."""
    points = [
        point(0, 1000.0, "healthy"),
        point(1, 2000.0, "regressed", "throughput"),
        point(2, None, "could_not_check"),
        point(3, 1500.0, "regressed", "script_changed"),
    ]
    return ET.fromstring(svg(points, "gpu-a tokens/s", 2500.0, which="snapshot 'good'", ratio=0.8))


def test_the_caption_gives_the_latest_figure_the_baseline_and_the_line() -> None:
    """The chart's title (and accessible label) is the latest figure, the number of runs,
    the baseline's tokens/s and the figure below which the run regressed."""
    root = chart()
    caption = (
        "gpu-a tokens/s: 1,500 tok/s (latest of 4 runs), baseline 2,500, regressed below 2,000"
    )
    assert root.findtext(f"{NS}title") == caption
    assert root.get("aria-label") == caption


def test_the_scale_runs_from_zero_to_the_highest_of_the_runs_and_the_baseline() -> None:
    """The axis reads from 0 to the highest figure drawn, the baseline included."""
    texts = [t.text for t in chart().iter(f"{NS}text")]
    assert texts[-1] == "0 … 2,500 tok/s"


def test_the_baseline_and_regression_lines_sit_at_their_figures() -> None:
    """The baseline is a dashed line at its height, titled with whose it is; the regression
    line is dotted at baseline × ratio, titled with the ratio (the chart is 120 high, drawn
    between 28 and 92, so 2,500 of 2,500 is at 28 and 2,000 at 40.8)."""
    guides = [
        (line.get("y1"), line.get("stroke-dasharray"), line.findtext(f"{NS}title"))
        for line in chart().iter(f"{NS}line")
        if line.get("stroke-dasharray")
    ]
    assert guides == [
        ("28.0", "4 3", "baseline: 2,500 tok/s (snapshot 'good')"),
        ("40.8", "1 3", "regressed below: 2,000 tok/s (0.8× the baseline's)"),
    ]


def test_each_point_is_placed_and_coloured_by_its_verdict() -> None:
    """One point per run with a figure, spread evenly across (28 to 452): green when healthy,
    red when the throughput regressed, orange when another check failed; its tooltip gives
    the time, the figure, the status and the failed checks."""
    dots = [
        (c.get("cx"), c.get("cy"), c.get("fill"), c.findtext(f"{NS}title"))
        for c in chart().iter(f"{NS}circle")
    ]
    assert dots == [
        ("28.0", "66.4", "#2f855a", "2026-11-01 02:00 UTC: 1,000 tok/s (healthy)"),
        ("169.3", "40.8", "#c53030", "2026-11-02 02:00 UTC: 2,000 tok/s (regressed: throughput)"),
        (
            "452.0",
            "53.6",
            "#dd6b20",
            "2026-11-04 02:00 UTC: 1,500 tok/s (regressed: script_changed)",
        ),
    ]


def test_the_line_is_broken_at_the_run_without_a_figure() -> None:
    """The line joins the runs on each side of a gap separately, never across it."""
    lines = [p.get("points") for p in chart().iter(f"{NS}polyline")]
    assert lines == ["28.0,66.4 169.3,40.8", "452.0,53.6"]


def test_without_a_ratio_there_is_no_regression_line() -> None:
    """A baseline without a ratio draws the baseline only, with no owner in brackets when
    ``which`` is not given, and the caption stops at the baseline."""
    root = ET.fromstring(svg([point(0, 1000.0, "healthy")], "t", 2000.0))
    guides = [
        ln.findtext(f"{NS}title") for ln in root.iter(f"{NS}line") if ln.get("stroke-dasharray")
    ]
    assert guides == ["baseline: 2,000 tok/s"]
    assert root.findtext(f"{NS}title") == "t: 1,000 tok/s (latest of 1 runs), baseline 2,000"


def test_a_chart_with_no_figure_is_its_title_alone() -> None:
    """Runs that read no figure and no baseline: no line, no point, no guide; the caption is
    the title, escaped as text."""
    root = ET.fromstring(svg([point(0, None, "could_not_check")], 'a<b & "c"'))
    assert root.findtext(f"{NS}title") == 'a<b & "c"'
    assert root.get("aria-label") == 'a<b & "c"'
    assert [len(list(root.iter(f"{NS}{tag}"))) for tag in ("polyline", "circle")] == [0, 0]
    assert [t.text for t in root.iter(f"{NS}text")][-1] == "0 … 1 tok/s"
