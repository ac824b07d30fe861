"""The HTML report: its plot's run segments and marks on facts held in memory, then the
page opened in a real headless Chromium: what a person would see."""

from __future__ import annotations

import io
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.analysis.detect import find
from agent.analysis.symptoms import check_all
from agent.graph.state import DiagnosisState
from agent.model.facts import Fact, Ledger, latest
from agent.report.build import build_report
from agent.report.html import BASELINE, MARK_STYLES, NOW_COLORS, PAD_L, render_html, segment_label
from agent.report.plot_data import (
    change_marks,
    crash_marks,
    restart_marks,
    throughput_series,
    unplaced_crashes,
)
from agent.sessions.config import SessionConfig
from agent.sessions.recorded import load_recorded
from agent.sessions.runner import build_doctor, record_outcome, run_session
from agent.sessions.session import Session
from tests.lib import oracle
from tests.lib.browser import browse
from tests.lib.cli import cli
from tests.lib.diagnosis import snapshot
from tests.lib.pngread import pixels
from tests.lib.workspaces import clone, trainer
from tools.parsers import trainlog
from tools.sweep import SweepSpec

FX_RACE = Path(__file__).resolve().parents[2] / "transcripts" / "fx-race.jsonl"


# -- the plot's segments and marks, on facts held in memory --------------------------


def window(
    line: int, step: float, value: float | None, last: float | None = None
) -> dict[str, Any]:
    return {
        "first_line": line,
        "first_step": step,
        "last_step": step if last is None else last,
        "records": 1,
        "t_first": 0.0,
        "t_last": 0.0,
        "tok_s_median": value,
        "speed": value,
    }


def log_fact(
    ledger: Ledger, windows: list[dict[str, Any]], restarts: Sequence[tuple[int, float, float]] = ()
) -> Fact:
    """A train-log fact of one series; ``restarts`` as (line, from step, to step)."""
    samples = [{"line": ln, "offset": 0, "from_step": a, "to_step": b} for ln, a, b in restarts]
    value = {
        "windows": windows,
        "throughput": {"recent_median": 100.0},
        "speed": {
            "kind": "stated",
            "field": "tok/s",
            "unit": "tokens/s",
            "recent": {"value": 100.0},
        },
        "steps": {"restarts": len(samples), "restart_samples": samples},
    }
    return ledger.append(Fact(probe="trainlog", target="local", value=value))


def xs(segment_points: Sequence[tuple[float, float]]) -> list[float]:
    return [x for x, _ in segment_points]


def test_a_log_whose_step_goes_back_splits_into_two_runs() -> None:
    """A log whose step goes back is drawn as two runs, labelled with the restart's line, or
    as "after the step went back" when no restart was sampled."""
    ledger = Ledger()
    steps = [(10, 100), (20, 110), (30, 105), (5, 50), (15, 55)]
    windows = [window(line, step, value) for line, (step, value) in enumerate(steps, start=1)]
    fact = log_fact(ledger, windows, restarts=[(4, 30, 5)])
    series = throughput_series(fact, "now")
    assert series is not None and series.fact == fact.id
    assert [xs(s.points) for s in series.segments] == [[10, 20, 30], [5, 15]]
    assert [s.restart_line for s in series.segments] == [None, 4]
    assert segment_label(series, 0) == "now, run 1 (steps 10–30)"
    assert segment_label(series, 1) == "now, run 2, after the restart at line 4 (steps 5–15)"
    # Past the restarts the log kept samples of, the step going back still splits.
    unsampled = throughput_series(log_fact(ledger, windows), "now")
    assert unsampled is not None and len(unsampled.segments) == 2
    assert segment_label(unsampled, 1) == "now, run 2, after the step went back (steps 5–15)"


def test_a_monotonic_log_is_one_run() -> None:
    """A log whose step only grows is one run, labelled with its step range."""
    fact = log_fact(Ledger(), [window(k, 10 * k, 100 + k) for k in range(1, 6)])
    series = throughput_series(fact, "now")
    assert series is not None
    assert [xs(s.points) for s in series.segments] == [[10, 20, 30, 40, 50]]
    assert segment_label(series, 0) == "now (steps 10–50)"


def test_a_window_without_a_value_is_skipped() -> None:
    """A window with no value is left out of the plot, not drawn as zero."""
    fact = log_fact(Ledger(), [window(1, 10, 100), window(2, 20, None), window(3, 30, 90)])
    series = throughput_series(fact, "now")
    assert series is not None
    assert [s.points for s in series.segments] == [((10, 100), (30, 90))]


def test_other_series_windows_going_back_do_not_split_the_drafters() -> None:
    """Records of several devices interleave: a target's window can start below the
    drafter's last step. Only the windows holding the drafter's value count."""
    groups = {g: {"throughput": {"recent_median": 1.0}} for g in ("role=drafter", "role=target")}
    windows = []
    for k, step in enumerate((5, 10, 15, 20)):
        for j, (group, behind) in enumerate((("role=drafter", 0), ("role=target", 5))):
            w = window(2 * k + j + 1, step - behind, None)
            w["tok_s_median_by_group"] = {group: 100.0 + step}
            windows.append(w)
    value = {"windows": windows, "groups": groups, "steps": {"restarts": 0}}
    fact = Ledger().append(Fact(probe="trainlog", target="local", value=value))
    series = throughput_series(fact, "now")
    assert series is not None
    assert [xs(s.points) for s in series.segments] == [[5, 10, 15, 20]]


def test_a_restart_inside_a_window_splits_after_that_window() -> None:
    """The window holding the restart starts in the old run (its point is drawn there);
    the next one starts above that window's first step but below the steps it reached."""
    windows = [window(1, 100, 50, last=190), window(11, 200, 50, last=290)]
    windows.append(window(21, 260, 20, last=350))
    fact = log_fact(Ledger(), windows, restarts=[(15, 240, 250)])
    series = throughput_series(fact, "now")
    assert series is not None
    assert [xs(s.points) for s in series.segments] == [[100, 200], [260]]
    assert series.segments[1].restart_line == 15


def test_a_log_that_went_back_often_keeps_a_short_legend() -> None:
    """Eleven runs are all drawn; the legend names five and counts the rest."""
    ledger = Ledger()
    windows = [window(3 * r + k + 1, 10 * k, 100 + r) for r in range(11) for k in range(1, 4)]
    fact = log_fact(ledger, windows)
    state = DiagnosisState(target="local", facts=[fact.id])
    page = render_html(build_report(state, ledger, "s"), state, ledger)
    assert len(polylines(page, "now")) == 11
    entries = legend_texts(page)
    assert len(entries) == 6 and entries[0] == f"now, run 1 (steps 10–30), train log [{fact.id}]"
    assert entries[-1] == f"now: 6 more runs, train log [{fact.id}]"


def incident_log(path: Path, *, restart: bool) -> None:
    """Three devices under ``perf/tokens_per_second`` keyed by ``_step``, ~4,270 tok/s
    each to step 690; then (``restart``) a resume from step 600 at ~1,430 each, the step
    going back from 690 to 610 on each device in turn; else on at the same speed."""
    rng = random.Random(7)
    after = range(610, 1201, 10) if restart else range(700, 1201, 10)
    lines = []
    for k, step in enumerate([*range(10, 691, 10), *after]):
        slow = restart and k >= 69
        for device in range(3):
            tok = (1430 if slow else 4270) * rng.uniform(0.95, 1.05)
            lines.append({"_step": step, "device": f"cuda:{device}", "perf/tokens_per_second": tok})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


def parsed(path: Path, ledger: Ledger) -> Fact:
    with io.FileIO(str(path), "r") as f:
        value: Any = trainlog.summarize_log(f)
    return ledger.append(Fact(probe="trainlog", target="local", value=value))


@dataclass
class Drop:
    state: DiagnosisState
    ledger: Ledger
    now: Fact
    html: Path
    sources: dict[str, tuple[Path | None, dict[str, Any]]]  # each log fact, with its log


@pytest.fixture
def drop(tmp_path: Path) -> Drop:
    """A run that resumed from step 600 at a third of its speed, against its good run:
    both logs read by the real parser, the symptoms found and checked by the real layer."""
    ledger = Ledger()
    incident_log(tmp_path / "now.jsonl", restart=True)
    incident_log(tmp_path / "then.jsonl", restart=False)
    now, then = parsed(tmp_path / "now.jsonl", ledger), parsed(tmp_path / "then.jsonl", ledger)
    symptoms = check_all(find(now), ledger)
    state = DiagnosisState(
        target="local", facts=[now.id], baseline_facts=[then.id], symptoms=symptoms
    )
    page = tmp_path / "drop.html"
    page.write_text(render_html(build_report(state, ledger, "s"), state, ledger), encoding="utf-8")
    sources: dict[str, tuple[Path | None, dict[str, Any]]] = {}
    for name, fact in (("now", now), ("then", then)):
        assert isinstance(fact.value, dict)
        sources[fact.id] = (tmp_path / f"{name}.jsonl", fact.value)
    return Drop(state, ledger, now, page, sources)


def test_the_plot_draws_the_figures_of_the_raw_logs(drop: Drop) -> None:
    """Every point, run, mark and legend entry of the plot, held to the two logs by the
    independent reader (``tests/lib/oracle/``)."""
    assert oracle.check_html(drop.html.read_text(encoding="utf-8"), drop.sources) == []


def test_the_plot_of_a_log_of_one_series_draws_its_stated_speed(tmp_path: Path) -> None:
    """A log naming no series (its speed as the trainer states it), read by the real
    parser, its fall found by the symptom layer: the plot's points and change mark are
    the log's own figures."""
    ledger, log = Ledger(), tmp_path / "plain.jsonl"
    speeds = [3000.0 * (1 + 0.01 * (k % 5)) for k in range(250)] + [1000.0] * 150
    log.write_text("".join(
        json.dumps({"step": k + 1, "time": 1.7e9 + k, "tokens_per_s": tok}) + "\n"
        for k, tok in enumerate(speeds)
    ))  # fmt: skip
    fact = parsed(log, ledger)
    state = DiagnosisState(target="local", facts=[fact.id], symptoms=check_all(find(fact), ledger))
    page = render_html(build_report(state, ledger, "s"), state, ledger)
    assert page.count("<circle ") > 100 and 'class="mark mark-change"' in page
    assert isinstance(fact.value, dict)
    assert oracle.check_html(page, {fact.id: (log, fact.value)}) == []


def alter(text: str, pattern: str, how: Callable[[str], str]) -> str:
    """``text`` with the first group of the first match of ``pattern`` rewritten."""
    found = re.search(pattern, text)
    assert found, pattern
    return text[: found.start(1)] + how(found[1]) + text[found.end(1) :]


def bigger(number: str) -> str:
    return f"{float(number.replace(',', '')) * 1.1:,.0f}"


# (the pattern whose first group is altered, how, the figure the oracle must name); the
# page's first point is the baseline's first window.
PLOT_ALTERED: list[tuple[str, Callable[[str], str], str]] = [
    (r"<circle [^>]*><title>[^<]*: step [\d,]+, ([\d,]+) tok/s", bigger, "html:point 0 tok/s"),
    (r"<circle [^>]*><title>[^<]*: step ([\d,]+),", lambda v: "15", "html:point 0 step"),
    (r'<circle cx="[\d.]+" cy="([\d.]+)" [^>]*><title>', lambda v: f"{float(v) - 2:.1f}",
     "html:point 0 y"),
    (r'<circle cx="([\d.]+)" [^>]*><title>', lambda v: f"{float(v) + 2:.1f}", "html:point 0 x"),
    (r"<circle [^>]*><title>baseline \((steps 10)–", lambda v: "steps 20", "html:run span"),
    (r">fell to ([\d.]+)× at step", lambda v: f"{float(v) + 0.05:.2f}", "html:change mark ratio"),
    (r"went back 690→610 at line (\d+)", lambda v: str(int(v) - 1), "html:restart at line"),
    (r"after the restart at line (\d+)", lambda v: str(int(v) + 50), "html:legend entry"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pattern", "how", "figure"), PLOT_ALTERED, ids=[a[2] for a in PLOT_ALTERED]
)
def test_the_oracle_names_a_plot_figure_altered(
    drop: Drop, pattern: str, how: Callable[[str], str], figure: str
) -> None:
    """One number of the plot off: the oracle names it."""
    page = alter(drop.html.read_text(encoding="utf-8"), pattern, how)
    bad = oracle.check_html(page, drop.sources)
    assert any(m.figure.startswith(figure) for m in bad), bad


def test_the_oracle_holds_the_plot_to_the_raw_log(drop: Drop, tmp_path: Path) -> None:
    """The present log with its last device's tokens/s 10% higher: the points drawn from
    its windows are no longer the log's."""
    now = drop.now.id
    path, value = drop.sources[now]
    assert path is not None
    faster = tmp_path / "faster.jsonl"
    faster.write_text("".join(
        json.dumps({**r, "perf/tokens_per_second": r["perf/tokens_per_second"] * 1.1}) + "\n"
        if r["device"] == "cuda:2" else json.dumps(r) + "\n"
        for r in map(json.loads, path.read_text().splitlines())
    ))  # fmt: skip
    page = drop.html.read_text(encoding="utf-8")
    bad = oracle.check_html(page, {**drop.sources, now: (faster, value)})
    assert any(m.figure.endswith(" tok/s") and m.where == f"plot of {now}" for m in bad), bad


def test_devices_restarting_one_after_another_are_one_restart(drop: Drop) -> None:
    """Several devices restarting one after another are one restart: two runs, each drawn in
    step order."""
    value: Any = drop.now.value
    assert len(value["steps"]["restart_samples"]) == 3  # one per device
    series = throughput_series(drop.now, "now")
    assert series is not None
    first, second = series.segments
    assert xs(first.points)[-1] == 690 and xs(second.points)[0] == 610
    assert segment_label(series, 1).startswith("now, run 2, after the restart at line ")
    for segment in series.segments:
        assert xs(segment.points) == sorted(xs(segment.points))


def test_marks_cite_their_facts(drop: Drop) -> None:
    """The change and restart marks are labelled with what happened and where, and each
    mark's title on the page cites its fact."""
    (fell,) = change_marks(drop.state.symptoms)
    assert fell.kind == "change" and re.fullmatch(r"fell to 0\.3\d× at step 6[0-9]0", fell.label)
    assert fell.title.endswith(f"(verified) [{drop.now.id}]")
    (restart,) = restart_marks(drop.now)
    assert (restart.step, restart.label) == (610, "restart")
    assert restart.title.count("690→610 at line ") == 3 and restart.title.endswith(
        f"[{drop.now.id}]"
    )
    page = drop.html.read_text(encoding="utf-8")
    titles = re.findall(r'<g class="mark mark-\w+"><title>([^<]*)</title>', page)
    assert len(titles) == 2 and all(t.endswith(f"[{drop.now.id}]") for t in titles)


def console_fact(ledger: Ledger, step_before: dict[str, int] | None) -> Fact:
    """A console log whose FX error ended a thread; the step the log printed last before
    it, where it printed one, is on the signature that names the cause."""
    cause = {"count": 1, "first_line": 25, "first": "RuntimeError: FX", "exception": "RuntimeError"}
    value = {
        "exception_causes": {"fx_nested_trace": dict(cause, first_after_step=None)},
        "signatures": {"fx_nested_trace": {"count": 1, "first_after_step": step_before}},
    }
    return ledger.append(Fact(probe="stdoutlog", target="local", value=value))


def test_a_crash_is_marked_only_at_a_step_the_console_log_printed() -> None:
    """A crash is marked at the step the console log printed before it; with no step printed
    it is not placed, and a sentence citing the log says why."""
    ledger = Ledger()
    dated = console_fact(ledger, {"step": 690, "line": 20})
    (mark,) = crash_marks(dated)
    assert (mark.step, mark.label) == (690, "RuntimeError after step 690")
    assert mark.title.endswith(f"[{dated.id}]") and "line 25" in mark.title
    assert unplaced_crashes(dated) is None
    undated = console_fact(ledger, None)
    assert crash_marks(undated) == []
    assert unplaced_crashes(undated) == (
        f"The console log [{undated.id}] states RuntimeError but prints no step before it, "
        "so the plot does not place it."
    )


# -- in a browser -----------------------------------------------------------------


class Shot:
    """A screenshot, read as pixels: where a colour is, within a tolerance."""

    def __init__(self, html: Path, tmp: Path) -> None:
        path = tmp / "report.png"
        result = browse(html, tmp, f"--screenshot={path}", "--window-size=1000,900")
        assert result.returncode == 0 and path.exists(), result.stderr
        self.width, self.height, self.px = pixels(path)
        assert (self.width, self.height) == (1000, 900)

    def where(self, color: str, tolerance: int) -> list[tuple[int, int]]:
        want = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
        return [
            (k % self.width, k // self.width)
            for k, rgb in enumerate(self.px)
            if all(abs(c - w) <= tolerance for c, w in zip(rgb, want, strict=True))
        ]

    def columns(self, color: str, tolerance: int, least: int) -> list[int]:
        """The columns holding at least ``least`` pixels of ``color``: vertical lines."""
        counts: dict[int, int] = {}
        for x, _ in self.where(color, tolerance):
            counts[x] = counts.get(x, 0) + 1
        return sorted(x for x, n in counts.items() if n >= least)

    def y_axis(self) -> tuple[int, int]:
        """The plot's y axis (the one long vertical line of #333): its column, and the
        top row of the longest unbroken run of it there (text above may share the colour)."""
        (x,) = self.columns("#333333", 8, 150)
        rows = sorted(y for cx, y in self.where("#333333", 8) if cx == x)
        runs: list[list[int]] = []
        for y in rows:
            if runs and y == runs[-1][-1] + 1:
                runs[-1].append(y)
            else:
                runs.append([y])
        return x, max(runs, key=len)[0]


def dom_of(html: Path, tmp: Path) -> str:
    dom = browse(html, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr
    return dom.stdout


def polylines(dom: str, label: str) -> dict[str, list[float]]:
    """Per class (``series-now segment-1``), the x coordinates of its points in order."""
    found = re.findall(rf'<polyline class="(series-{label} segment-\d+)"[^>]*points="([^"]*)"', dom)
    return {cls: [float(p.split(",")[0]) for p in pts.split()] for cls, pts in found}


def legend_texts(dom: str) -> list[str]:
    svg = dom[dom.index("<svg") : dom.index("</svg>")]
    entries = re.findall(r'<g class="legend-entry">(.*?)</g>', svg)
    return [re.sub(r"<[^>]+>", "", e) for e in entries]


def mark_x(dom: str, kind: str) -> float:
    (x,) = re.findall(rf'<g class="mark mark-{kind}"><title>[^<]*</title><line x1="([0-9.]+)"', dom)
    return float(x)


@pytest.mark.slow
def test_browser_draws_a_restarted_run_apart_from_its_baseline(tmp_path: Path) -> None:
    """The shipped FX-race transcript: the run restarted at step 5 after reaching 40,
    and its first run is the baseline's numbers again."""
    html = tmp_path / "report.html"
    assert cli("-q", "report", str(FX_RACE), "--format", "html", "--out", str(html)).returncode == 0
    page = html.read_text(encoding="utf-8")
    assert oracle.check_html(page, oracle.transcript_sources(FX_RACE)) == []
    dom = dom_of(html, tmp_path)
    runs = polylines(dom, "now")
    assert list(runs) == ["series-now segment-0", "series-now segment-1"]
    assert all(x == sorted(x) for x in runs.values()), runs  # no line goes back
    assert runs["series-now segment-1"][0] < runs["series-now segment-0"][-1]
    assert list(polylines(dom, "baseline")) == ["series-baseline segment-0"]
    recorded = load_recorded(FX_RACE)
    now_fact = latest(recorded.ledger, recorded.state.facts, "trainlog")
    then_fact = latest(recorded.ledger, recorded.state.baseline_facts, "trainlog")
    assert now_fact is not None and then_fact is not None
    now_id = now_fact.id
    # Where run 2 got to before the race struck again is the recording's: its steps are
    # read from the points drawn for it (each titled with its step).
    run2_steps = [
        int(n) for n in re.findall(r"<circle [^>]*><title>now, run 2[^<]*: step (\d+),", dom)
    ]
    assert run2_steps and run2_steps[0] == 5 and max(run2_steps) <= 40, run2_steps
    first, last = run2_steps[0], max(run2_steps)
    span = f"step {first}" if first == last else f"steps {first}–{last}"
    assert legend_texts(dom) == [
        f"baseline (steps 5–40), train log [{then_fact.id}]",
        f"now, run 1 (steps 5–40), train log [{now_id}]",
        f"now, run 2, after the restart at line 17 ({span}), train log [{now_id}]",
    ]
    # The restart stands where run 2 starts; the crash where the console dates it: at
    # the x of run 2's point at the step printed before the FX error, citing its fact.
    restart = mark_x(dom, "restart")
    assert restart == runs["series-now segment-1"][0]
    console = latest(recorded.ledger, recorded.state.facts, "stdoutlog")
    assert console is not None
    scanned: Any = console.value
    crash_step = scanned["signatures"]["fx_nested_trace"]["first_after_step"]["step"]
    at_crash = re.findall(
        rf'<circle cx="([0-9.]+)"[^>]*><title>now, run 2[^<]*: step {crash_step},', dom
    )
    assert at_crash and mark_x(dom, "crash") in {float(x) for x in at_crash}, at_crash
    assert "prints no step before it" not in dom
    assert re.search(
        rf"<title>crash: [^<]*after it printed step {crash_step}\) \[{console.id}\]</title>", dom
    )
    shared = crash_step == first  # the crash at the restart's step: one vertical for both

    shot = Shot(html, tmp_path)
    axis_x, plot_top = shot.y_axis()
    grey, _, _ = BASELINE
    in_legend = [y for _, y in shot.where(grey, 6) if y < plot_top]
    in_plot = [y for _, y in shot.where(grey, 6) if y >= plot_top]
    assert len(in_legend) > 40, f"the baseline's legend swatch is not visible ({len(in_legend)})"
    assert len(in_plot) > 200, f"the baseline is not visible beside the run ({len(in_plot)})"
    run2 = [y for _, y in shot.where(NOW_COLORS[1], 20)]
    run2_legend, run2_plot = [y for y in run2 if y < plot_top], [y for y in run2 if y >= plot_top]
    assert len(run2_legend) > 20 and len(run2_plot) > 8, (len(run2_legend), len(run2_plot))
    # The restart's line, dashed half on: at least some 40 px of its colour, in one
    # column (sharing its vertical with a crash at the same step, each draws half of it).
    purple, _ = MARK_STYLES["restart"]
    columns = shot.columns(purple, 16, 40)
    assert columns and max(columns) - min(columns) <= 2, columns  # one line, one place
    assert abs((columns[0] - axis_x) - (restart - PAD_L)) <= 2, (columns, axis_x, restart)
    crash = re.findall(r'<g class="mark mark-crash">.*?<line [^>]*y1="(\d+)" [^>]*y2="(\d+)"', dom)
    restart_span = re.findall(
        r'<g class="mark mark-restart">.*?<line [^>]*y1="(\d+)" [^>]*y2="(\d+)"', dom
    )
    ((c1, c2),), ((r1, r2),) = crash, restart_span
    if shared:
        assert int(c2) <= int(r1) or int(r2) <= int(c1), (crash, restart_span)  # not over
    else:
        assert mark_x(dom, "crash") != restart  # two verticals, each its own step


@pytest.mark.slow
def test_browser_marks_the_change_point_at_its_step(drop: Drop, tmp_path: Path) -> None:
    """In a real browser the change mark is one vertical line at the x of the run's point at
    the symptom's step, labelled with the drop."""
    dom = dom_of(drop.html, tmp_path)
    (fell,) = [s for s in drop.state.symptoms if s.kind == "throughput_drop" and s.subject]
    assert fell.step is not None and fell.ratio is not None
    label = f"fell to {fell.ratio:.2f}× at step {int(fell.step)}"
    assert f">{label}</text>" in dom
    # The mark stands at the x of the run's point at the symptom's step.
    at_step = re.findall(
        rf'<circle cx="([0-9.]+)"[^>]*><title>now, run 2[^<]*: step {int(fell.step)},', dom
    )
    assert at_step and mark_x(dom, "change") == float(at_step[0])
    runs = polylines(dom, "now")
    assert len(runs) == 2 and all(x == sorted(x) for x in runs.values())

    shot = Shot(drop.html, tmp_path)
    axis_x, _ = shot.y_axis()
    blue, _ = MARK_STYLES["change"]
    columns = shot.columns(blue, 16, 100)
    assert columns and max(columns) - min(columns) <= 2, columns  # one line, one place
    offset = mark_x(dom, "change") - PAD_L
    assert abs((columns[0] - axis_x) - offset) <= 2, (columns, axis_x, offset)


@pytest.fixture(scope="module")
def recorded_race(good_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded diagnosis of a workspace whose script changed after a snapshot."""
    ws = clone(good_workspace, tmp_path_factory.mktemp("html") / "ws")
    snapshot(ws)
    assert trainer("break", "script", "--workspace", ws).returncode == 0
    spec = SweepSpec.for_workspace(str(ws), interpreter=sys.executable)
    session = Session.create(
        SessionConfig(command="diagnose", target="local", spec=spec, baseline="good")
    )
    doctor = build_doctor(session, session.target("local"), spec)
    outcome = run_session(session, doctor, start=DiagnosisState(target="local", baseline="good"))
    record_outcome(session, outcome.state)
    session.close()
    return session.transcript_path


@pytest.mark.slow
@pytest.mark.torch
def test_browser_shows_plot_claims_and_citations(recorded_race: Path, tmp_path: Path) -> None:
    """A recorded race's HTML report, opened in a browser, shows the verdict, every claim,
    links from each citation to its fact row, and both series visibly drawn."""
    html = tmp_path / "report.html"
    assert (
        cli("-q", "report", str(recorded_race), "--format", "html", "--out", str(html)).returncode
        == 0
    )
    page = html.read_text(encoding="utf-8")
    assert oracle.check_html(page, oracle.transcript_sources(recorded_race)) == []
    text = dom_of(html, tmp_path)
    assert "dflash-doctor report: fault found" in text
    assert "drafter tokens/s per log window" in text
    # Every claim is on the page, and every citation links to a fact row that exists.
    recorded = load_recorded(recorded_race)
    for hyp in recorded.state.hypotheses:
        for verdict in hyp.verdicts:
            assert (
                verdict.sentence.split(" [")[0].replace("'", "&#x27;") in text
                or verdict.sentence.split(" [")[0] in text
            )
    links = set(re.findall(r'href="#(F-[0-9a-f]+)"', text))
    rows = set(re.findall(r'<tr id="(F-[0-9a-f]+)"', text))
    assert links and links <= rows
    # Two series drawn, each one run.
    assert list(polylines(text, "now")) == ["series-now segment-0"]
    assert list(polylines(text, "baseline")) == ["series-baseline segment-0"]

    shot = Shot(html, tmp_path)
    red = len(shot.where(NOW_COLORS[0], 23))
    grey = len(shot.where(BASELINE[0], 6))
    assert red > 200, f"the 'now' series is not visible ({red} red pixels)"
    assert grey > 100, f"the baseline series is not visible ({grey} grey pixels)"
