"""The HTML report's per-thread activity bars (``agent.report.threads``): one bar per
sampled thread of each live trainer process, a segment per activity as wide as its share
of the thread's samples, each tooltip citing the live fact. The markup expected here is
written out by hand from the small live facts built in each test."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.facts import Fact
from agent.report.threads import COLORS, MAX_THREADS, thread_bars
from tools.probes._activities import ACTIVITIES


def live(processes: Any, *, error: str | None = None) -> Fact:
    return Fact(
        id="F-live",
        probe="live",
        target="local",
        value={"processes": processes},
        error=error,
    )


def rows(html: list[str]) -> list[str]:
    return [part for part in html if part.startswith("<tr class='thread'")]


@pytest.mark.parametrize(
    "fact",
    [
        None,
        live([{"threads": [{"samples": 3}]}], error="py-spy: permission denied"),
        live([]),
        live([{"pid": 1, "threads": [{"samples": 0}, {"name": "idle"}]}, {"pid": 2}]),
        Fact(id="F-live", probe="live", target="local", value="not a mapping"),
    ],
    ids=["no-fact", "failed", "no-process", "no-sampled-thread", "value-not-a-mapping"],
)
def test_no_sampled_thread_draws_no_section(fact: Fact | None) -> None:
    """Without a read live fact holding at least one sampled thread, nothing is drawn
    (no heading, no empty table)."""
    assert thread_bars(fact) == []


def test_a_thread_is_a_row_split_by_its_activities_shares() -> None:
    """A thread's row names it and its tid, shows its cores, and has one segment per
    activity it was seen in, in the key's order, each as wide as its samples over the
    thread's (3 of 8 = 37.50%, 5 of 8 = 62.50%), its tooltip saying both numbers and the
    fact; activities with no samples draw nothing."""
    thread = {
        "name": "MainThread",
        "tid": 42,
        "samples": 8,
        "cpu_share": 0.75,
        "activities": {"sleeping": 5, "collective": 3, "idle": 0, "python": "many"},
    }
    html = thread_bars(live([{"pid": 7, "cmdline": "python train.py", "threads": [thread]}]))
    assert html[3:] == [
        "<h3>pid 7 <code>python train.py</code></h3>"
        "<table><tr><th>thread</th><th>cores</th><th>samples</th></tr>",
        "<tr class='thread' data-fact='F-live' data-process='0' data-thread='0' "
        "data-of='8'><td>MainThread (tid 42)</td><td>0.75</td><td><div class='bar'>"
        "<span class='act' data-activity='collective' data-samples='3' "
        f"style='width:37.50%;background:{COLORS['collective']}' "
        "title='collective: 3 of 8 samples [F-live]'></span>"
        "<span class='act' data-activity='sleeping' data-samples='5' "
        f"style='width:62.50%;background:{COLORS['sleeping']}' "
        "title='sleeping: 5 of 8 samples [F-live]'></span>"
        "</div></td></tr>",
        "</table>",
    ]


def test_the_section_opens_with_its_heading_a_note_citing_the_fact_and_a_key() -> None:
    """The section starts with its heading, a note linking the live fact, and a key with
    one swatch per activity in the fixed order."""
    html = thread_bars(live([{"pid": 7, "threads": [{"samples": 1, "activities": {}}]}]))
    assert html[0] == "<h2 id='threads'>what the threads were doing</h2>"
    assert html[1] == (
        "<p class='note'>Each bar is one thread's stack samples [<a href='#F-live'>F-live</a>],"
        " split by activity; a segment's width is its share of them.</p>"
    )
    key = "".join(f"<span style='background:{COLORS[a]}'></span>{a}" for a in ACTIVITIES)
    assert html[2] == f"<p class='key'>{key}</p>"


def test_every_activity_has_its_own_colour() -> None:
    """Each activity has a colour, and no two share one, so the key reads both ways."""
    assert set(COLORS) == set(ACTIVITIES)
    assert len(set(COLORS.values())) == len(COLORS)


def test_rows_keep_the_facts_indices_past_unsampled_threads_and_processes() -> None:
    """A process with no sampled thread gets no table, and a thread with no samples no
    row; the rows that are drawn keep the process's and thread's places in the fact, so
    each bar can be read back against it."""
    processes = [
        {"pid": 1, "threads": [{"samples": 0}]},
        {"pid": 2, "threads": [{"samples": 0, "tid": 10}, {"samples": 2, "tid": 11}]},
    ]
    html = thread_bars(live(processes))
    assert [part[:4] for part in html].count("<h3>") == 1
    assert html[3] == (
        "<h3>pid 2 <code></code></h3><table><tr><th>thread</th><th>cores</th><th>samples</th></tr>"
    )
    (row,) = rows(html)
    assert "data-process='1' data-thread='1' data-of='2'" in row
    assert "<td>None (tid 11)</td><td></td>" in row


def test_only_the_first_threads_of_a_process_are_drawn() -> None:
    """At most ``MAX_THREADS`` threads per process are drawn, the first in the fact's
    order (the busiest first)."""
    threads = [{"samples": 1, "tid": k} for k in range(MAX_THREADS + 4)]
    drawn = rows(thread_bars(live([{"pid": 3, "threads": threads}])))
    assert len(drawn) == MAX_THREADS == 16
    assert f"data-thread='{MAX_THREADS - 1}'" in drawn[-1]


def test_names_and_command_lines_are_escaped_and_the_command_line_cut() -> None:
    """A process's command line and a thread's name are HTML-escaped (a trainer's own
    text cannot inject markup), and the command line is cut at 120 characters."""
    cmdline = "<b>" + "a" * 200
    thread = {"name": "<img src=x>", "tid": 1, "samples": 1, "cpu_share": 1.5}
    html = thread_bars(live([{"pid": 9, "cmdline": cmdline, "threads": [thread]}]))
    assert html[3] == (
        "<h3>pid 9 <code>&lt;b&gt;" + "a" * 117 + "</code></h3>"
        "<table><tr><th>thread</th><th>cores</th><th>samples</th></tr>"
    )
    (row,) = rows(html)
    assert "<td>&lt;img src=x&gt; (tid 1)</td><td>1.5</td>" in row
