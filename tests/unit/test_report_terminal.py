"""``agent.report.terminal``: the terminal side of a guided session. What the first
screen shows of a report (the verdict, the symptoms, the ranked hypotheses with the claims
that decided them), and the menu's answers not yet specified elsewhere: the ways to stop,
the fix path, and what is said for an answer that cannot be taken."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console

from agent.report.model import ClaimDoc, HypothesisDoc, Line, Report, Section
from agent.report.terminal import ask_next, show


def shown(report: Report) -> list[str]:
    """What ``show`` prints for ``report``, line by line."""
    out = io.StringIO()
    show(Console(file=out, width=200), report)
    return out.getvalue().splitlines()


def report(hypotheses: list[HypothesisDoc]) -> Report:
    return Report(
        target="local",
        session="s-7",
        verdict="fault found",
        hypotheses=hypotheses,
        sections=[
            Section(
                title="symptoms",
                kind="symptoms",
                lines=[
                    Line(text="tokens/s fell to 0.50× [F-aaaa]", cites=["F-aaaa"], outcome="holds"),
                    Line(text="the run is [not] running", cites=["F-bbbb"]),
                ],
            ),
            Section(
                title="since it worked",
                kind="changes",
                lines=[Line(text="never on the first screen", cites=["F-cccc"])],
            ),
        ],
        facts=[],
    )


def test_the_first_screen_is_the_verdict_the_symptoms_and_the_ranked_hypotheses() -> None:
    """The verdict and session, then each symptom line with its mark and missing cites
    (no other section), then each hypothesis ranked: a verified one with all its claims,
    any other with only the first claim that did not hold."""
    verified = HypothesisDoc(
        kind="fx_trace_race",
        status="verified",
        source="rule",
        claims=[
            ClaimDoc(text="errors = 2 [F-dddd] ≥ 1", cites=["F-dddd"], status="holds"),
            ClaimDoc(text="threads = 3", cites=["F-eeee"], status="holds"),
        ],
    )
    refuted = HypothesisDoc(
        kind="crash_stated",
        status="refuted",
        source="rule",
        claims=[
            ClaimDoc(text="a = 1", cites=["F-1111"], status="holds"),
            ClaimDoc(text="b = 0 (the claim: b ≥ 1)", cites=["F-2222"], status="fails"),
            ClaimDoc(text="c = ?", cites=["F-3333"], status="unverifiable"),
        ],
    )
    assert shown(report([verified, refuted])) == [
        "fault found — session s-7",
        "  ✔ tokens/s fell to 0.50× [F-aaaa]",
        "  · the run is [not] running [F-bbbb]",
        "  1. fx_trace_race: verified",
        "     ✔ errors = 2 [F-dddd] ≥ 1",
        "     ✔ threads = 3 [F-eeee]",
        "  2. crash_stated: refuted",
        "     ✘ b = 0 (the claim: b ≥ 1) [F-2222]",
    ]


def test_no_hypothesis_is_said_so() -> None:
    """A report with no hypothesis says none was formed and where to look."""
    assert shown(report([]))[-1] == (
        "  no hypothesis was formed from the facts (see 'what was checked')"
    )


def test_an_undecided_hypothesis_whose_claims_all_held_shows_none() -> None:
    """A hypothesis not verified whose every claim held has no deciding claim to show."""
    untested = HypothesisDoc(
        kind="script_changed",
        status="unverifiable",
        source="rule",
        claims=[ClaimDoc(text="a = 1", cites=["F-1111"], status="holds")],
    )
    assert shown(report([untested]))[-1] == "  1. script_changed: unverifiable"


QUESTION: dict[str, Any] = {
    "kinds": ["fx_trace_race", "crash_stated"],
    "probes": ["stdoutlog", "trainlog"],
    "offered": ["lock-warmup", "set-limit"],
}


def scripted(*answers: str) -> tuple[list[str], list[str], Any, Any]:
    """A prompt that gives ``answers`` in turn; what was asked and what was said."""
    asked: list[str] = []
    said: list[str] = []
    replies: Iterator[str] = iter(answers)

    def prompt(text: str) -> str:
        asked.append(text)
        return next(replies)

    return asked, said, prompt, said.append


@pytest.mark.parametrize("answer", ["s", "stop", "q", "quit", "  S  ", "Quit"])
def test_every_way_to_stop_stops(answer: str) -> None:
    """``s``, ``stop``, ``q`` and ``quit``, in any case and with spaces around, stop."""
    _asked, said, prompt, say = scripted(answer)
    assert ask_next(QUESTION, prompt, say) == {"action": "stop"}
    assert said == []


@pytest.mark.parametrize(
    ("answers", "choice", "said"),
    [
        (("f", "set-limit"), {"action": "fix", "playbook": "set-limit"}, []),
        (("fix", ""), {"action": "fix", "playbook": "lock-warmup"}, []),
        (
            ("f", "rm-rf", "f", " lock-warmup "),
            {"action": "fix", "playbook": "lock-warmup"},
            ["'rm-rf' is not offered"],
        ),
    ],
    ids=["named", "empty-is-the-first-offered", "not-offered-asked-again"],
)
def test_fix_takes_an_offered_playbook(
    answers: tuple[str, ...], choice: dict[str, Any], said: list[str]
) -> None:
    """[f]ix asks which of the offered playbooks, an empty answer taking the first; a name
    not offered is refused by name and the menu is asked again."""
    asked, told, prompt, say = scripted(*answers)
    assert ask_next(QUESTION, prompt, say) == choice
    assert told == said
    assert asked[1] == "which playbook (lock-warmup, set-limit)"


def test_fix_with_nothing_offered_says_why_and_asks_again() -> None:
    """Typing ``f`` when no playbook is offered says that no verified hypothesis unlocks
    one, and the menu is asked again."""
    asked, said, prompt, say = scripted("f", "s")
    assert ask_next({**QUESTION, "offered": []}, prompt, say) == {"action": "stop"}
    assert said == ["no playbook is offered: no verified hypothesis unlocks one"]
    assert len(asked) == 2


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        (("t", "oom", "s"), ["unknown hypothesis kind 'oom'"]),
        (("p", " , ", "s"), ["no probe named"]),
        (("p", "trainlog, gpus, dmesg", "s"), ["unknown probes ['gpus', 'dmesg']"]),
    ],
    ids=["unknown-kind", "no-probe", "unknown-probes"],
)
def test_an_answer_that_cannot_be_taken_is_said_and_the_menu_asked_again(
    answers: tuple[str, ...], said: list[str]
) -> None:
    """A kind not on the list, a probe answer naming nothing, or probes not known are each
    said (the unknown probes by name) and the menu comes back."""
    asked, told, prompt, say = scripted(*answers)
    assert ask_next(QUESTION, prompt, say) == {"action": "stop"}
    assert told == said
    assert asked[0] == asked[2]


def test_the_test_and_probe_questions_list_the_choices() -> None:
    """Asked which hypothesis, the kinds are listed with ``all``; asked which probes, the
    known probes are listed."""
    asked, _said, prompt, say = scripted("test", "fx_trace_race")
    ask_next(QUESTION, prompt, say)
    assert asked[1] == "which one (fx_trace_race, crash_stated, or all)"
    asked, _said, prompt, say = scripted("probe", "stdoutlog")
    assert ask_next(QUESTION, prompt, say) == {"action": "probe", "probes": ["stdoutlog"]}
    assert asked[1] == "which probes, comma-separated (stdoutlog, trainlog)"
