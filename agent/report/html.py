"""A self-contained HTML report: the claims with links to the facts they cite, and the
drafter's throughput per log window against the baseline as an inline SVG plot.

The plot's points are values in the cited train-log facts (each point's tooltip names
the fact); nothing is drawn that a fact does not hold. A log whose step went back (a
restart, a resume from a checkpoint) is drawn as one line per run segment, never as a
line going back. Marks stand at the steps facts give: the verified change points of the
judged throughput, the restarts the train log sampled, and a crash where the console
log printed a step before it; each mark's tooltip cites its fact. What is drawn is read
from the facts by ``agent.report.plot_data``; this module lays it out and writes the page.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

from agent.analysis.throughput import subject
from agent.graph.state import DiagnosisState
from agent.model.facts import Fact, Ledger, latest, observed
from agent.model.shown import unshown
from agent.report.model import Report
from agent.report.plot_data import (
    Mark,
    Segment,
    Series,
    change_marks,
    crash_marks,
    number_text,
    restart_marks,
    throughput_series,
    unplaced_crashes,
)
from agent.report.threads import CSS as THREAD_CSS
from agent.report.threads import thread_bars

_ID = re.compile(r"\[(F-[0-9a-f]{4,})\]")


def segment_label(series: Series, index: int) -> str:
    """A legend entry: which run of the series, over which steps."""
    segment = series.segments[index]
    if len(series.segments) == 1:
        return f"{series.label} ({segment.span})"
    if segment.restart_line is not None:
        return (
            f"{series.label}, run {index + 1}, after the restart at line "
            f"{segment.restart_line:,} ({segment.span})"
        )
    if index:
        return f"{series.label}, run {index + 1}, after the step went back ({segment.span})"
    return f"{series.label}, run 1 ({segment.span})"


def series_title(fact: Fact | None) -> str:
    """What the plot shows, in the log's own words ("drafter tokens/s", "tokens/s")."""
    found = subject(fact)
    return f"{found.who if found else ''}tokens/s per log window"


WIDTH = 900
PAD_L, PAD_R, PAD_B = 84, 24, 46
PLOT_H = 240
LEGEND_ROW = 18
LABEL_ROW = 14
CHAR_W = 6.4  # a label character's width at 11px, to keep mark labels apart
# Between the axes and the first and last step: a mark at either end clears the axis.
INSET = 12
MAX_RUNS = 6  # legend entries per series; a log that went back more often gets one for the rest
NOW_COLORS = ("#c0392b", "#e67e22", "#16a085")  # run 1, 2, 3 (then again)
BASELINE = ("#95a5a6", "10 5", 6)  # colour, dash, width: wide under the runs, seen beside them
MARK_STYLES = {
    "change": ("#2471a3", "6 3"),
    "restart": ("#7d3c98", "3 3"),
    "crash": ("#111", "2 2"),
}
LINK = "#1a5fb4"


@dataclass(frozen=True)
class _Frame:
    """Where the data lands: steps across, tokens/s up from 0."""

    top: float  # the marks' lines start here, their labels below it
    data_top: float  # where the highest tick is, below the marks' labels
    bottom: float
    x0: float
    x1: float
    y_ticks: tuple[float, ...]  # from 0 to the highest, at or above every value

    def px(self, x: float) -> float:
        usable = WIDTH - PAD_L - PAD_R - 2 * INSET
        return PAD_L + INSET + (x - self.x0) / (self.x1 - self.x0) * usable

    def py(self, y: float) -> float:
        return self.bottom - y / self.y_ticks[-1] * (self.bottom - self.data_top)


def _tick_size(span: float, count: int, least: float) -> float:
    raw = max(span / count, least, 1e-9)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)


def _step_ticks(lo: float, hi: float) -> list[float]:
    """Round steps from ``lo`` to ``hi``, about six of them, whole steps apart."""
    size = _tick_size(hi - lo, 6, 1.0)
    first = math.ceil(lo / size) * size
    return [first + k * size for k in range(int((hi - first) / size + 1e-9) + 1)]


def _value_ticks(highest: float) -> tuple[float, ...]:
    """Round numbers from 0 up to the first at or above ``highest`` (with room above
    the highest point), about five of them."""
    size = _tick_size(highest * 1.05, 5, 0.0)
    return tuple(k * size for k in range(math.ceil(highest * 1.05 / size) + 1))


def _style(series: Series, index: int) -> tuple[str, str, float]:
    """Colour, dash and width of a segment: the baseline grey and dashed, each run of
    the present log its own colour."""
    if series.label == "baseline":
        return BASELINE
    return NOW_COLORS[index % len(NOW_COLORS)], "", 2


def _legend(series: list[Series]) -> list[tuple[str, str, tuple[str, str, float]]]:
    """(text, fact id, style) per segment; a series' runs past ``MAX_RUNS`` in one."""
    entries = []
    for s in series:
        runs = [(segment_label(s, j), s.fact, _style(s, j)) for j in range(len(s.segments))]
        if len(runs) > MAX_RUNS:
            more = f"{s.label}: {len(runs) - MAX_RUNS + 1} more runs"
            runs = [*runs[: MAX_RUNS - 1], (more, s.fact, runs[MAX_RUNS - 1][2])]
        entries += runs
    return entries


def _label_rows(marks: list[Mark], frame: _Frame) -> list[tuple[int, str]]:
    """Per mark (in step order), the row of its label and which side of the line it
    sits on, so that no two labels overlap and none runs past the plot."""
    ends: list[float] = []  # each row's rightmost label end so far
    out = []
    for mark in marks:
        x, width = frame.px(mark.step), len(mark.label) * CHAR_W + 4
        side = "start" if x + width < WIDTH - PAD_R else "end"
        lo = x if side == "start" else x - width
        row = next((k for k, end in enumerate(ends) if lo > end + 8), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = lo + width
        out.append((row, side))
    return out


def _frame(series: list[Series], marks: list[Mark], top: float, label_rows: int) -> _Frame:
    xs = [x for s in series for x, _ in s.points] + [m.step for m in marks]
    x0, x1 = min(xs), max(xs)
    return _Frame(
        top=top,
        data_top=top + label_rows * LABEL_ROW + 10,
        bottom=top + PLOT_H,
        x0=x0,
        x1=x1 if x1 > x0 else x0 + 1,
        y_ticks=_value_ticks(max(y for s in series for _, y in s.points)),
    )


def _svg(series: list[Series], marks: list[Mark]) -> str:
    legend = _legend(series)
    marks = sorted(marks, key=lambda m: m.step)
    top = 14 + LEGEND_ROW * len(legend)
    # Where a label goes depends on the steps only, not on how many rows labels take.
    rows = _label_rows(marks, _frame(series, marks, top, 0))
    frame = _frame(series, marks, top, max((r for r, _ in rows), default=-1) + 1)
    height = frame.bottom + PAD_B
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
        'role="img" aria-label="tokens per second per log window" font-size="11">',
        *_legend_svg(legend),
        *_axes_svg(frame),
    ]
    for s in series:
        for j, segment in enumerate(s.segments):
            parts += _segment_svg(s, j, segment, frame)
    # Marks at one step (a crash, then the restart) share the height instead of hiding
    # each other: each draws its own stretch of the same vertical.
    at_x = [round(frame.px(m.step)) for m in marks]
    for k, (mark, (row, side)) in enumerate(zip(marks, rows, strict=True)):
        share = (at_x[:k].count(at_x[k]), at_x.count(at_x[k]))
        parts += _mark_svg(mark, row, side, frame, share)
    parts.append("</svg>")
    return "".join(parts)


def _legend_svg(legend: list[tuple[str, str, tuple[str, str, float]]]) -> list[str]:
    parts = []
    for k, (text, fact, (color, dash, width)) in enumerate(legend):
        y = 14 + k * LEGEND_ROW
        parts.append(
            f'<g class="legend-entry"><line x1="{PAD_L}" y1="{y - 4}" x2="{PAD_L + 30}" '
            f'y2="{y - 4}" stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash}"/>'
            f'<circle cx="{PAD_L + 15}" cy="{y - 4}" r="3" fill="{color}"/>'
            f'<text x="{PAD_L + 38}" y="{y}" font-size="12">{html.escape(text)}, train log '
            f'<a href="#{fact}"><tspan fill="{LINK}">[{fact}]</tspan></a></text></g>'
        )
    return parts


def _axes_svg(frame: _Frame) -> list[str]:
    left, right = PAD_L, WIDTH - PAD_R
    parts = []
    for value in frame.y_ticks:
        y = frame.py(value)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:,.0f}</text>'
        )
    for step in _step_ticks(frame.x0, frame.x1):
        parts.append(
            f'<text x="{frame.px(step):.1f}" y="{frame.bottom + 16:.1f}" '
            f'text-anchor="middle">{number_text(step)}</text>'
        )
    middle = (frame.top + frame.bottom) / 2
    parts += [
        f'<line class="axis-x" x1="{left}" y1="{frame.bottom}" x2="{right}" '
        f'y2="{frame.bottom}" stroke="#333" shape-rendering="crispEdges"/>',
        f'<line class="axis-y" x1="{left}" y1="{frame.top}" x2="{left}" y2="{frame.bottom}" '
        'stroke="#333" shape-rendering="crispEdges"/>',
        f'<text x="{(left + right) / 2}" y="{frame.bottom + 36:.1f}" text-anchor="middle" '
        'font-size="12">step</text>',
        f'<text transform="translate(18 {middle:.1f}) rotate(-90)" text-anchor="middle" '
        'font-size="12">tokens/s</text>',
    ]
    return parts


def _segment_svg(series: Series, index: int, segment: Segment, frame: _Frame) -> list[str]:
    color, dash, width = _style(series, index)
    label = html.escape(segment_label(series, index))
    path = " ".join(f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in segment.points)
    parts = [
        f'<polyline class="series-{html.escape(series.label)} segment-{index}" fill="none" '
        f'stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash}" points="{path}"/>'
    ]
    parts += [
        f'<circle cx="{frame.px(x):.1f}" cy="{frame.py(y):.1f}" r="{width / 2 + 2:g}" '
        f'fill="{color}">'
        f"<title>{label}: step {number_text(x)}, {y:,.0f} tok/s [{series.fact}]</title></circle>"
        for x, y in segment.points
    ]
    return parts


def _mark_svg(
    mark: Mark, row: int, side: str, frame: _Frame, share: tuple[int, int] = (0, 1)
) -> list[str]:
    color, dash = MARK_STYLES[mark.kind]
    x = frame.px(mark.step)
    text_x = x + 4 if side == "start" else x - 4
    part, parts = share
    span = (frame.bottom - frame.top) / parts
    y1, y2 = frame.top + part * span, frame.top + (part + 1) * span
    return [
        f'<g class="mark mark-{mark.kind}"><title>{html.escape(mark.title)}</title>'
        f'<line x1="{x:.1f}" y1="{y1:.0f}" x2="{x:.1f}" y2="{y2:.0f}" '
        f'stroke="{color}" stroke-width="1.5" stroke-dasharray="{dash}" '
        'shape-rendering="crispEdges"/>'
        f'<text x="{text_x:.1f}" y="{frame.top + 11 + row * LABEL_ROW}" text-anchor="{side}" '
        f'fill="{color}" stroke="#fff" stroke-width="3" paint-order="stroke">'
        f"{html.escape(mark.label)}</text></g>"
    ]


def _linked(text: str) -> str:
    return _ID.sub(lambda m: f'[<a href="#{m.group(1)}">{m.group(1)}</a>]', html.escape(text))


_CSS = (
    """
body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}
h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.6em}
.status{font-size:.8em;padding:.1em .5em;border-radius:.3em;background:#eee}
.verified{background:#fadbd8}.refuted{background:#e8f6f3}.unverifiable{background:#fcf3cf}
li.holds::marker{content:"✔ "}li.fails::marker{content:"✘ "}li.unverifiable::marker{content:"? "}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:.2em .5em}
code{font-size:.9em}.note{font-size:.85em;color:#555}
"""
    + THREAD_CSS
)


def _plot(state: DiagnosisState, ledger: Ledger) -> list[str]:
    """The throughput section: heading, plot and what the plot could not place."""
    log = observed(latest(ledger, state.facts, "trainlog"))
    console = observed(latest(ledger, state.facts, "stdoutlog"))
    now = throughput_series(log, "now")
    then = throughput_series(observed(latest(ledger, state.baseline_facts, "trainlog")), "baseline")
    series = [s for s in (then, now) if s is not None]
    if not series:
        return []
    # Marks stand on the present run's steps: without its series there is nothing to mark.
    marks = []
    if log is not None and now is not None:
        marks = change_marks(state.symptoms) + restart_marks(log) + crash_marks(console)
    note = unplaced_crashes(console)
    out = [
        f"<h2 id='throughput'>{html.escape(series_title(log))}</h2>",
        _svg(series, marks),
    ]
    if note is not None:
        out.append(f"<p class='note'>{_linked(note)}</p>")
    return out


def _transcript_line(report: Report) -> list[str]:
    if not report.transcript:
        return []
    return [f"<p class='transcript'>transcript: {html.escape(report.transcript)}</p>"]


def render_html(report: Report, state: DiagnosisState, ledger: Ledger) -> str:
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>dflash-doctor: {html.escape(report.verdict)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1 id='verdict'>dflash-doctor report: {html.escape(report.verdict)}</h1>",
        f"<p>target <code>{html.escape(report.target)}</code> · session "
        f"<code>{html.escape(report.session)}</code></p>",
        *_transcript_line(report),
        *_plot(state, ledger),
        *thread_bars(observed(latest(ledger, state.facts, "live"))),
    ]
    for section in report.sections:
        status = (
            f" <span class='status {section.status}'>{html.escape(section.status)}</span>"
            if section.status
            else ""
        )
        out.append(f"<h2>{html.escape(section.title)}{status}</h2><ul>")
        for line in section.lines:
            cites = "".join(f" [<a href='#{c}'>{c}</a>]" for c in unshown(line.text, line.cites))
            out.append(f"<li class='{line.outcome}'>{_linked(line.text)}{cites}</li>")
        out.append("</ul>")
    out.append(
        "<h2 id='facts'>facts</h2><table><tr><th>id</th><th>probe</th><th>command</th>"
        "<th>rc</th><th>error</th></tr>"
    )
    for fact in report.facts:
        out.append(
            f"<tr id='{fact.id}'><td>{fact.id}</td><td>{html.escape(fact.probe)}</td>"
            f"<td><code>{html.escape(fact.command)}</code></td><td>{fact.rc}</td>"
            f"<td>{html.escape(fact.error or '')}</td></tr>"
        )
    out.append("</table></body></html>")
    return "\n".join(out)
