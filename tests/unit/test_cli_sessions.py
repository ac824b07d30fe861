"""What the commands that reach a target share (``agent.cli.sessions``): the recorded
session each opens, its header naming the command and target, the target's host redacted
from the record, the session bound to every log event; and the line saying which settings
apply."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest
from structlog.testing import capture_logs

from agent.cli.sessions import open_session, say_settings
from agent.sessions import session as session_module
from agent.sessions.targets import Resolved
from tools.log import get_logger
from tools.sweep import SweepSpec
from tools.transport.ssh_options import SSHOptions
from tools.transport.uri import parse_target


class Recorded:
    """A session that keeps what it was opened with."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.id = "20261201-020000-ab12"


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions are ``Recorded`` ones."""
    monkeypatch.setattr(session_module, "Session", Recorded)


@pytest.mark.parametrize(
    ("uri", "hosts"),
    [
        ("ssh://root@gpu-7.lab:2222/pct:200", ["gpu-7.lab"]),
        ("ssh://10.0.0.5", ["10.0.0.5"]),
        ("local", []),
        ("local/pct:200", []),
    ],
    ids=["ssh-with-hops", "ssh-address", "local", "local-container"],
)
def test_a_session_names_the_command_and_target_and_redacts_the_host(
    opened: None, uri: str, hosts: list[str]
) -> None:
    """The session's header names the command and the target as given; the target's host,
    when it has one, is redacted from what the session records."""
    ssh = SSHOptions(retries=0)
    # In a context of its own: the session id it binds stays there.
    session: Any = contextvars.copy_context().run(open_session, "facts", parse_target(uri), ssh)
    assert session.kwargs == {
        "ssh": ssh,
        "header": {"command": "facts", "target": uri},
        "redact_hosts": hosts,
    }


def test_every_log_event_after_opening_names_the_session(opened: None) -> None:
    """Once a session is open, each event logged after carries its id."""

    def open_and_log() -> None:
        open_session("exec", parse_target("local"), SSHOptions())
        get_logger("agent.cli").info("sweep_started", probes=3)

    with capture_logs() as logs:
        contextvars.copy_context().run(open_and_log)
    assert logs == [
        {
            "event": "sweep_started",
            "log_level": "info",
            "session": "20261201-020000-ab12",
            "probes": 3,
        }
    ]


def test_the_settings_line_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """Which settings apply is one line on stderr, so stdout stays the command's output."""
    resolved = Resolved(
        parse_target("local"), SweepSpec(), settings="profile 'gpu' of doctor.toml (default)"
    )
    say_settings(resolved)
    assert capsys.readouterr() == ("", "settings: profile 'gpu' of doctor.toml (default)\n")
