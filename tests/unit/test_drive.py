"""Driving a diagnosis session for ``diagnose`` and ``resume`` (``agent.cli.drive``): how a
run that paused says how to go on, and a run with no verdict exits 1; an approval given on
the command line bound to the plan it answers, and refused where the session waits at the
menu; the fix plan shown whole before asking; end of input at the menu taken as "stop";
the doctor wired with a human approver; the printed report naming the target as given."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from rich.console import Console

from agent.cli import drive
from agent.graph.state import DiagnosisState, Verdict
from agent.model.facts import Ledger
from agent.sessions.runner import Outcome
from tools.errors import UsageError
from tools.sweep import SweepSpec

SESSION_ID = "20261201-020000-ab12"


def session(target: str = "ssh://root@gpu", **config: Any) -> Any:
    """A session as the helpers read it: its id, ledger and configuration."""
    return SimpleNamespace(
        id=SESSION_ID,
        ledger=Ledger(),
        config=SimpleNamespace(target=target, **config),
    )


def outcome(paused: dict[str, Any] | None, verdict: Verdict | None = None) -> Outcome:
    return Outcome(state=DiagnosisState(target="ssh://<host-1>", verdict=verdict), paused=paused)


@pytest.mark.parametrize(
    ("paused", "hint"),
    [
        (
            {"question": "next"},
            f"paused at the menu: run `dflash-doctor resume {SESSION_ID}` in a terminal\n",
        ),
        (
            {"question": "approve", "plan": {}},
            f"paused for approval: dflash-doctor resume {SESSION_ID} --approve (or --decline)\n",
        ),
    ],
    ids=["at-the-menu", "for-approval"],
)
def test_a_paused_session_says_how_to_go_on(
    paused: dict[str, Any], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session that paused tells, on stderr, the command that goes on from there: a
    terminal for the menu, ``--approve``/``--decline`` for an approval."""
    drive._say_how_it_ended(session(), outcome(paused))
    assert capsys.readouterr() == ("", hint)


def test_a_finished_session_without_a_verdict_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    """A session that ran to its end and reached no verdict exits 1, silently (the log says
    why)."""
    with pytest.raises(typer.Exit) as exited:
        drive._say_how_it_ended(session(), outcome(None))
    assert exited.value.exit_code == 1
    assert capsys.readouterr() == ("", "")


def test_a_finished_session_with_a_verdict_ends_quietly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A verdict reached, even "no fault found", is a normal end: no hint, no exit code."""
    drive._say_how_it_ended(session(), outcome(None, "no_fault_found"))
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(
    ("pending", "answer", "reply"),
    [
        (
            {"question": "approve", "plan": {"digest": "d41d"}},
            True,
            {"approve": True, "digest": "d41d"},
        ),
        (
            {"question": "approve", "plan": {"digest": "d41d"}},
            False,
            {"approve": False, "digest": "d41d"},
        ),
        (None, True, {"approve": True, "digest": None}),
    ],
    ids=["approve", "decline", "nothing-pending"],
)
def test_an_approval_is_bound_to_the_plan_it_answers(
    monkeypatch: pytest.MonkeyPatch,
    pending: dict[str, Any] | None,
    answer: bool,
    reply: dict[str, Any],
) -> None:
    """``--approve`` or ``--decline`` becomes the answer carrying the digest of the plan the
    session waits on (none when it waits on none), so it cannot approve another plan."""
    monkeypatch.setattr(drive, "_pending_question", lambda s, d: pending)
    assert drive._approval(session(), None, answer) == reply  # type: ignore[arg-type]


def test_an_approval_for_a_session_at_the_menu_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that waits at the menu, not for an approval, refuses ``--approve`` with a
    usage error naming the session and how to go on."""
    monkeypatch.setattr(drive, "_pending_question", lambda s, d: {"question": "next"})
    with pytest.raises(UsageError) as refused:
        drive._approval(session(), None, True)  # type: ignore[arg-type]
    assert str(refused.value) == (
        f"session {SESSION_ID} waits at the menu, not for an approval: "
        f"run `dflash-doctor resume {SESSION_ID}` in a terminal"
    )


@pytest.mark.parametrize("confirmed", [True, False], ids=["yes", "no"])
def test_the_fix_plan_is_shown_whole_before_asking(
    monkeypatch: pytest.MonkeyPatch, confirmed: bool
) -> None:
    """Before asking, the plan's playbook, the hypothesis it answers, its steps and each
    change's diff are shown as written (brackets are not markup); the answer, no by
    default, is bound to the plan's digest."""
    asked: list[tuple[str, bool]] = []

    def confirm(text: str, default: bool, err: bool) -> bool:
        asked.append((text, default))
        return confirmed

    monkeypatch.setattr(typer, "confirm", confirm)
    out = io.StringIO()
    plan = {
        "playbook": "pin_torch",
        "hypothesis": "environment_drift",
        "steps": ["back up [requirements.txt]", "pin torch==2.4.1"],
        "changes": [{"diff": "-torch\n+torch==2.4.1"}],
        "digest": "d41d",
    }
    reply = drive._ask_approval(Console(file=out, width=200), plan)
    assert reply == {"approve": confirmed, "digest": "d41d"}
    assert asked == [("apply this fix?", False)]
    assert out.getvalue() == (
        "fix pin_torch answers environment_drift: back up [requirements.txt]; pin torch==2.4.1\n"
        "-torch\n+torch==2.4.1\n"
    )


@pytest.mark.parametrize(
    ("typed", "line"),
    [("t", "t"), (typer.Abort(), "stop"), (EOFError(), "stop")],
    ids=["an-answer", "ctrl-c", "end-of-input"],
)
def test_end_of_input_at_the_menu_is_stop(
    monkeypatch: pytest.MonkeyPatch, typed: str | BaseException, line: str
) -> None:
    """A line typed at the menu is the answer; end of input or an abort is "stop", so a
    closed terminal ends the session instead of failing it."""

    def prompt(text: str, **kwargs: Any) -> str:
        if isinstance(typed, BaseException):
            raise typed
        return typed

    monkeypatch.setattr(typer, "prompt", prompt)
    assert drive._prompt("[n]ext? ") == line


def test_the_report_names_the_target_as_the_user_gave_it() -> None:
    """The state keeps the transcript's placeholder for the host; the printed report names
    the target as given on the command line, with the session's id."""
    report = drive._report(session("ssh://root@gpu-7"), outcome(None).state)
    assert (report.target, report.session) == ("ssh://root@gpu-7", SESSION_ID)


def test_the_doctor_has_a_human_approver_and_no_playbook_without_a_workspace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A diagnosis's doctor asks a human to approve and carries py-spy for live stacks;
    without a workspace no playbook is offered (a fix needs to know where the trainer
    lives), and without a proposer none is added."""
    built: list[dict[str, Any]] = []

    doctor = object()

    def build_doctor(s: Any, transport: Any, spec: SweepSpec, **kwargs: Any) -> object:
        built.append({"spec": spec, **kwargs})
        return doctor

    monkeypatch.setattr(drive, "build_doctor", build_doctor)
    spec = SweepSpec()
    made: object = drive._doctor(session(), "transport", spec, None)  # type: ignore[arg-type]
    assert made is doctor
    assert built == [
        {
            "spec": spec,
            "approver": "human",
            "playbooks": {},
            "proposers": [],
            "carry_py_spy": True,
        }
    ]
