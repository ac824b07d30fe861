"""The guided menu's keystrokes (``agent.report.terminal``), driven by a scripted prompt:
it offers only what can run, says what is in focus, and shows what a [p]robe brought."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console

from agent.report.terminal import ask_next, show_new

QUESTION: dict[str, Any] = {
    "question": "next",
    "kinds": ["fx_trace_race", "crash_stated"],
    "probes": ["stdoutlog", "trainlog"],
    "offered": [],
    "focus": [],
}


def scripted(*answers: str) -> tuple[list[str], list[str], Any, Any]:
    """A prompt that answers ``answers`` in turn, and what was asked and said."""
    asked: list[str] = []
    said: list[str] = []
    replies: Iterator[str] = iter(answers)

    def prompt(text: str) -> str:
        asked.append(text)
        return next(replies)

    return asked, said, prompt, said.append


@pytest.mark.parametrize(
    ("offered", "menu"),
    [
        ([], "next: [t]est a hypothesis, [p]robe again, [s]top"),
        (["lock-warmup"], "next: [t]est a hypothesis, [p]robe again, [f]ix, [s]top"),
    ],
)
def test_fix_is_on_the_menu_only_when_a_playbook_is_offered(offered: list[str], menu: str) -> None:
    """Nothing to fix: no [f]ix on the menu (it was offered when nothing could run)."""
    asked, _said, prompt, say = scripted("s")
    assert ask_next({**QUESTION, "offered": offered}, prompt, say) == {"action": "stop"}
    assert asked == [menu]


def test_an_answer_off_the_menu_names_the_letters_it_offers() -> None:
    """An unknown letter is answered with the letters the menu offers, no more."""
    _asked, said, prompt, say = scripted("x", "s")
    ask_next(QUESTION, prompt, say)
    assert said == ["'x': answer one of t, p, s"]


def test_the_focus_is_said_and_all_widens_it() -> None:
    """After ``t KIND`` the next menu says what is in focus; ``t`` then ``all`` widens it."""
    _asked, said, prompt, say = scripted("t", "all")
    answer = ask_next({**QUESTION, "focus": ["fx_trace_race"]}, prompt, say)
    assert said == ["in focus: fx_trace_race (t, then all, to test every family)"]
    assert answer == {"action": "test", "kind": None}


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        (("t", "crash_stated"), {"action": "test", "kind": "crash_stated"}),
        (("p", "stdoutlog, trainlog"), {"action": "probe", "probes": ["stdoutlog", "trainlog"]}),
        (("p", "nonsense", "p", "trainlog"), {"action": "probe", "probes": ["trainlog"]}),
    ],
)
def test_each_answer_becomes_the_choice_the_graph_expects(
    answers: tuple[str, ...], expected: dict[str, Any]
) -> None:
    """Keystrokes to choices, a probe name the menu does not know asked for again."""
    _asked, _said, prompt, say = scripted(*answers)
    assert ask_next(QUESTION, prompt, say) == expected


def test_what_a_probe_brought_is_shown_by_fact() -> None:
    """Each new fact with its id, probe and what it holds; nothing when none is new."""
    out = io.StringIO()
    console = Console(file=out, width=200)
    show_new(console, [])
    assert out.getvalue() == ""
    show_new(console, [("F-1a2b", "stdoutlog", "2 signatures hit: fx_nested_trace ×3")])
    assert out.getvalue().splitlines() == [
        "  1 new fact(s):",
        "    F-1a2b stdoutlog: 2 signatures hit: fx_nested_trace ×3",
    ]
