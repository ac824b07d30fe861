"""``agent.report.html``: the self-contained HTML report. Specified here on small
hand-built inputs: the round ticks of the plot's axes, where a series and a mark land
in the SVG, how mark labels are kept apart, the styles of the baseline and of each run,
fact ids turned into links, and the page around the report's sections and facts."""

from __future__ import annotations

import re

import pytest

from agent.graph.state import DiagnosisState
from agent.model.facts import Ledger
from agent.report.html import (
    BASELINE,
    NOW_COLORS,
    _Frame,
    _label_rows,
    _linked,
    _step_ticks,
    _style,
    _svg,
    _tick_size,
    _value_ticks,
    render_html,
    series_title,
)
from agent.report.model import FactDoc, Line, Report, Section
from agent.report.plot_data import Mark, Segment, Series


@pytest.mark.parametrize(
    ("span", "count", "least", "size"),
    [
        (10.0, 6, 1.0, 2.0),
        (1000.0, 6, 1.0, 200.0),
        (140.0, 6, 1.0, 25.0),
        (300.0, 6, 1.0, 50.0),
        (3.0, 6, 1.0, 1.0),
        (1050.0, 5, 0.0, 250.0),
    ],
    ids=["to-2", "to-200", "to-25", "exactly-50", "at-least-one-step", "values"],
)
def test_a_tick_is_the_first_round_size_at_or_above_an_even_share(
    span: float, count: int, least: float, size: float
) -> None:
    """A tick is the smallest of 1, 2, 2.5, 5 or 10 times a power of ten that is at least
    ``span / count`` (and at least ``least``)."""
    assert _tick_size(span, count, least) == size


@pytest.mark.parametrize(
    ("lo", "hi", "ticks"),
    [
        (0.0, 1000.0, [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]),
        (15.0, 95.0, [20.0, 40.0, 60.0, 80.0]),
        (5.0, 7.0, [5.0, 6.0, 7.0]),
    ],
    ids=["from-zero", "inside-the-range", "whole-steps"],
)
def test_step_ticks_are_round_steps_inside_the_range(
    lo: float, hi: float, ticks: list[float]
) -> None:
    """The step axis is labelled at round steps from the first multiple at or after the
    lowest step to the highest, never closer than one step apart."""
    assert _step_ticks(lo, hi) == ticks


@pytest.mark.parametrize(
    ("highest", "ticks"),
    [
        (1000.0, (0.0, 250.0, 500.0, 750.0, 1000.0, 1250.0)),
        (90.0, (0.0, 20.0, 40.0, 60.0, 80.0, 100.0)),
        (200.0, (0.0, 50.0, 100.0, 150.0, 200.0, 250.0)),
    ],
    ids=["room-above-1000", "past-90", "room-above-200"],
)
def test_value_ticks_start_at_zero_and_clear_the_highest_point(
    highest: float, ticks: tuple[float, ...]
) -> None:
    """The tokens/s axis starts at 0 and its last tick is at or above 1.05× the highest
    value, so the highest point never touches the top."""
    assert _value_ticks(highest) == ticks


def test_the_baseline_is_grey_and_dashed_and_each_run_has_its_own_colour() -> None:
    """A baseline segment is drawn in the baseline's grey dash; the present log's runs take
    the run colours in turn, starting again after the third."""
    now = Series(label="now", fact="F-aaaa", segments=())
    then = Series(label="baseline", fact="F-bbbb", segments=())
    assert _style(then, 4) == BASELINE
    assert [_style(now, j) for j in range(4)] == [
        (NOW_COLORS[0], "", 2),
        (NOW_COLORS[1], "", 2),
        (NOW_COLORS[2], "", 2),
        (NOW_COLORS[0], "", 2),
    ]


def test_mark_labels_take_a_new_row_only_when_they_would_overlap() -> None:
    """Labels go left to right in step order: one that would start within 8 px of the end
    of every row so far opens a row; one that would run past the plot's right edge sits
    left of its line."""
    # Steps 0 to 100 over 768 px from x=96: step s is at 96 + 7.68 s.
    frame = _Frame(top=0, data_top=10, bottom=250, x0=0, x1=100, y_ticks=(0.0, 1.0))
    marks = [
        Mark(kind="change", step=0, label="a", title=""),  # 96 to 106.4
        Mark(kind="change", step=1, label="bb", title=""),  # 103.68: overlaps row 0
        Mark(kind="restart", step=10, label="c", title=""),  # 172.8: clears row 0
        Mark(kind="crash", step=100, label="crash at step 100", title=""),  # 864 + 112.8 > 876
    ]
    assert _label_rows(marks, frame) == [(0, "start"), (1, "start"), (0, "start"), (0, "end")]


def test_the_svg_draws_each_segment_and_mark_where_its_values_fall() -> None:
    """Two legend rows put the plot's top at 50 and one row of labels puts the data's top
    at 74, 216 px above the axis at 290; values 100 and 200 against ticks up to 250 land
    at 203.6 and 117.2; steps 10 and 20 at the plot's inset ends (96 and 864). Every point
    has a tooltip naming its fact, and the mark at the last step labels to its left."""
    now = Series(
        label="now", fact="F-aaaa", segments=(Segment(points=((10.0, 100.0), (20.0, 200.0))),)
    )
    then = Series(
        label="baseline", fact="F-bbbb", segments=(Segment(points=((10.0, 150.0), (20.0, 150.0))),)
    )
    crash = Mark(kind="crash", step=20.0, label="crash", title="crash <here> [F-cccc]")
    svg = _svg([then, now], [crash])
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" width="900" height="336" ')
    assert svg.endswith("</svg>")
    assert 'class="series-now segment-0" fill="none" stroke="#c0392b" stroke-width="2"' in svg
    assert 'points="96.0,203.6 864.0,117.2"/>' in svg
    assert 'class="series-baseline segment-0"' in svg and 'points="96.0,160.4 864.0,160.4"/>' in svg
    assert "<title>now (steps 10–20): step 20, 200 tok/s [F-aaaa]</title>" in svg
    assert "<title>baseline (steps 10–20): step 10, 150 tok/s [F-bbbb]</title>" in svg
    assert svg.count("<circle") == 4 + 2  # four points, two legend swatches
    assert (
        '<g class="mark mark-crash"><title>crash &lt;here&gt; [F-cccc]</title>'
        '<line x1="864.0" y1="50" x2="864.0" y2="290" '
    ) in svg
    assert '<text x="860.0" y="61" text-anchor="end"' in svg
    legend = re.findall(r'<text x="122" y="(\d+)" font-size="12">([^<]*)<a href="#(F-\w+)">', svg)
    assert legend == [
        ("14", "baseline (steps 10–20), train log ", "F-bbbb"),
        ("32", "now (steps 10–20), train log ", "F-aaaa"),
    ]


def test_marks_at_one_step_share_its_height() -> None:
    """Two marks at the same step each draw their own half of the vertical, so neither
    hides the other."""
    now = Series(
        label="now", fact="F-aaaa", segments=(Segment(points=((0.0, 10.0), (100.0, 10.0))),)
    )
    marks = [
        Mark(kind="crash", step=50.0, label="crash", title="c"),
        Mark(kind="restart", step=50.0, label="restart", title="r"),
    ]
    svg = _svg([now], marks)
    # One legend row: top 32; two label rows: bottom at 32 + 240 = 272; halves of 240 px.
    assert '<line x1="480.0" y1="32" x2="480.0" y2="152" ' in svg
    assert '<line x1="480.0" y1="152" x2="480.0" y2="272" ' in svg


@pytest.mark.parametrize(
    ("text", "linked"),
    [
        ("count = 2 [F-1a2b]", 'count = 2 [<a href="#F-1a2b">F-1a2b</a>]'),
        ("a < b [F-1a2b3]", 'a &lt; b [<a href="#F-1a2b3">F-1a2b3</a>]'),
        ("short [F-123] or not hex [F-zz99]", "short [F-123] or not hex [F-zz99]"),
        ("bare F-1a2b", "bare F-1a2b"),
    ],
    ids=["linked", "escaped-and-long-id", "not-ids", "unbracketed"],
)
def test_a_bracketed_fact_id_becomes_a_link_and_the_rest_is_escaped(text: str, linked: str) -> None:
    """A fact id in brackets, ``F-`` and at least four hex digits, links to its row; the
    text around it is HTML-escaped and anything else that looks like an id is left."""
    assert _linked(text) == linked


def test_a_plot_with_no_train_log_is_titled_by_tokens_alone() -> None:
    """Without a train-log fact the plot's title names no series."""
    assert series_title(None) == "tokens/s per log window"


def test_the_page_holds_the_verdict_sections_and_facts_escaped_and_linked() -> None:
    """The page is titled by the verdict, names target and session and the transcript's
    check, gives each section a heading with its status and a list item per line (its
    cites appended unless the text names them), then a table row per fact, anchored by
    its id; with no train log there is no plot."""
    report = Report(
        target="ssh://h/<pct>",
        session="s-1",
        verdict="fault found",
        hypotheses=[],
        sections=[
            Section(
                title="checksums & co",
                status="verified",
                kind="changes",
                lines=[
                    Line(text="md5 = 'a' [F-aaaa]", cites=["F-aaaa", "F-bbbb"], outcome="holds"),
                    Line(text="plain", cites=[]),
                ],
            ),
            Section(title="probed with", kind="probed_with", lines=[]),
        ],
        facts=[
            FactDoc(
                id="F-aaaa",
                baseline=False,
                probe="checksums",
                command="md5sum '<x>'",
                rc=0,
                error=None,
                value=None,
            ),
            FactDoc(
                id="F-bbbb",
                baseline=True,
                probe="gpus (baseline)",
                command="nvidia-smi",
                rc=None,
                error="not found",
                value=None,
            ),
        ],
        transcript="signed by this installation",
    )
    page = render_html(report, DiagnosisState(target="ssh://h/<pct>"), Ledger())
    head, _, body = page.partition("</style></head><body>\n")
    assert head.startswith(
        "<!doctype html><html><head><meta charset='utf-8'>\n"
        "<title>dflash-doctor: fault found</title>\n<style>"
    )
    assert body.split("\n") == [
        "<h1 id='verdict'>dflash-doctor report: fault found</h1>",
        "<p>target <code>ssh://h/&lt;pct&gt;</code> · session <code>s-1</code></p>",
        "<p class='transcript'>transcript: signed by this installation</p>",
        "<h2>checksums &amp; co <span class='status verified'>verified</span></h2><ul>",
        "<li class='holds'>md5 = &#x27;a&#x27; [<a href=\"#F-aaaa\">F-aaaa</a>]"
        " [<a href='#F-bbbb'>F-bbbb</a>]</li>",
        "<li class='info'>plain</li>",
        "</ul>",
        "<h2>probed with</h2><ul>",
        "</ul>",
        "<h2 id='facts'>facts</h2><table><tr><th>id</th><th>probe</th><th>command</th>"
        "<th>rc</th><th>error</th></tr>",
        "<tr id='F-aaaa'><td>F-aaaa</td><td>checksums</td><td><code>md5sum &#x27;&lt;x&gt;&#x27;"
        "</code></td><td>0</td><td></td></tr>",
        "<tr id='F-bbbb'><td>F-bbbb</td><td>gpus (baseline)</td><td><code>nvidia-smi</code></td>"
        "<td>None</td><td>not found</td></tr>",
        "</table></body></html>",
    ]
