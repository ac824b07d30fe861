"""``dflash-doctor resume SESSION`` (``agent.cli.resume``): the saved session reopened by
its id and driven on from its checkpoint, with ``--approve`` or ``--decline`` as the
answer to its pending approval and the report in the format asked for."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import agent.cli.drive
import agent.sessions.session
from agent.cli import application
from agent.cli.application import app
from tools.errors import ConfigError

SESSION_ID = "20261201-020000-ab12"


@dataclass
class Resumed:
    """The ids reopened and how each reopened session was driven."""

    reopened: list[str] = field(default_factory=list)
    driven: list[tuple[str, Any, str, bool, dict[str, Any]]] = field(default_factory=list)


class FakeSession:
    resumed: Resumed

    def __init__(self, session_id: str) -> None:
        self.id = session_id

    @classmethod
    def reopen(cls, session_id: str) -> FakeSession:
        cls.resumed.reopened.append(session_id)
        if session_id != SESSION_ID:
            raise ConfigError(f"no session {session_id!r}")
        return cls(session_id)


@pytest.fixture
def resumed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Resumed]:
    """A saved session ``SESSION_ID`` (no other) and a driver that records its calls."""
    record = Resumed()

    def drive(session: FakeSession, start: Any, fmt: str, ask: bool, **options: Any) -> None:
        record.driven.append((session.id, start, fmt, ask, options))

    FakeSession.resumed = record
    monkeypatch.setattr(agent.sessions.session, "Session", FakeSession)
    monkeypatch.setattr(agent.cli.drive, "drive", drive)
    monkeypatch.setattr(application, "configure", lambda *, json, level: None)
    yield record


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["resume", *args])


@pytest.mark.parametrize(
    ("flags", "answer"),
    [([], None), (["--approve"], True), (["--decline"], False)],
    ids=["continue", "approve", "decline"],
)
def test_the_session_goes_on_from_its_checkpoint_with_the_answer_given(
    resumed: Resumed, flags: list[str], answer: bool | None
) -> None:
    """The session is reopened by its id and driven with no start state (its checkpoint
    is where it goes on from); ``--approve`` answers yes, ``--decline`` no, neither
    leaves the approval unanswered. Stdin is not a terminal here, so nothing is asked."""
    assert invoke(SESSION_ID, *flags).exit_code == 0
    assert resumed.reopened == [SESSION_ID]
    assert resumed.driven == [(SESSION_ID, None, "md", False, {"answer": answer, "full": False})]


@pytest.mark.parametrize(
    ("flags", "fmt", "full"),
    [
        (["--format", "json"], "json", False),
        (["--json"], "json", False),
        (["--format", "md", "--json"], "json", False),
        (["--full"], "md", True),
    ],
    ids=["format-json", "json-flag", "json-flag-wins", "full"],
)
def test_the_report_format_and_length_reach_the_driver(
    resumed: Resumed, flags: list[str], fmt: str, full: bool
) -> None:
    """``--json`` is ``--format json`` whatever ``--format`` says; ``--full`` asks for
    the whole Markdown report."""
    assert invoke(SESSION_ID, *flags).exit_code == 0
    ((_, _, given_fmt, _, options),) = resumed.driven
    assert (given_fmt, options["full"]) == (fmt, full)


def test_a_session_that_cannot_be_reopened_is_not_driven(resumed: Resumed) -> None:
    """When the id names no saved session, the reopening's error is the command's and
    nothing is driven."""
    result = invoke("20261201-020000-ffff")
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception) == "no session '20261201-020000-ffff'"
    assert resumed.driven == []


def test_a_format_other_than_md_or_json_is_a_usage_error(resumed: Resumed) -> None:
    """``--format html`` is not a live report's format: exit 2 naming the choices, before
    any session is reopened."""
    result = invoke(SESSION_ID, "--format", "html")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: Invalid value for '--format': 'html' is not one of md, json"
    )
    assert resumed.reopened == []
