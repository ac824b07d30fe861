"""``dflash-doctor diagnose`` (``agent.cli.diagnose``): what the user typed becomes the
session's saved configuration and the graph's start state, and a family, proposer or
baseline that cannot be used stops the command before any session opens."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import agent.cli.diagnose
import agent.cli.drive
import agent.graph.proposer
import agent.sessions.session
import agent.sessions.targets
from agent.cli import application
from agent.cli.application import app
from agent.graph.state import DiagnosisState
from agent.model.hypotheses import KINDS
from agent.sessions.config import SessionConfig
from agent.sessions.targets import Resolved
from tools.errors import ConfigError, UsageError
from tools.sweep import SweepSpec
from tools.transport.ssh_options import SSHOptions
from tools.transport.uri import parse_target

SESSION_ID = "20261201-020000-ab12"
SETTINGS = "profile 'gpu' of doctor.toml (named by --target)"


@dataclass
class Seen:
    """What ``diagnose`` did: how it resolved the target, the sessions it created, how it
    drove them, whether it quieted the log for a menu and the proposers it loaded."""

    resolved: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    created: list[SessionConfig] = field(default_factory=list)
    driven: list[tuple[str, DiagnosisState, str, bool, bool]] = field(default_factory=list)
    quieted: int = 0
    loaded: list[str] = field(default_factory=list)


class FakeSession:
    """A session that records its config and says a target as ``recorded:TARGET``."""

    seen: Seen

    def __init__(self, config: SessionConfig) -> None:
        self.id = SESSION_ID
        self.config = config

    @classmethod
    def create(cls, config: SessionConfig) -> FakeSession:
        cls.seen.created.append(config)
        return cls(config)

    def recorded(self, text: str) -> str:
        return f"recorded:{text}"


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[Seen]:
    """Stand-ins for the target's resolution (an SSH target of a profile), the session,
    the driving of the graph and the quieting of the log; the logging is not configured."""
    record = Seen()

    def resolve_target(target: str | None, **options: Any) -> Resolved:
        record.resolved.append((target, options))
        return Resolved(
            parse_target("ssh://root@gpu-7:2222"),
            SweepSpec(workspace="/srv/ws"),
            name="gpu",
            settings=SETTINGS,
        )

    def drive(
        session: FakeSession, start: DiagnosisState, fmt: str, ask: bool, *, full: bool
    ) -> None:
        record.driven.append((session.id, start, fmt, ask, full))

    def quiet() -> None:
        record.quieted += 1

    FakeSession.seen = record
    monkeypatch.setattr(agent.sessions.targets, "resolve_target", resolve_target)
    monkeypatch.setattr(agent.sessions.session, "Session", FakeSession)
    monkeypatch.setattr(agent.cli.drive, "drive", drive)
    monkeypatch.setattr(agent.cli.diagnose, "keep_off_prompts", quiet)
    monkeypatch.setattr(application, "configure", lambda *, json, level: None)
    yield record


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["diagnose", *args])


def test_the_options_become_the_sessions_config_and_the_start_state(seen: Seen) -> None:
    """The target, workspace, interpreter and config are resolved together; the session
    saves the resolved URI and spec, the SSH options and the paths to redact; the graph
    starts at the target as the session records it, guided, with the family asked about
    as its focus and ``--plan-only`` kept."""
    result = invoke(
        "-t", "gpu", "-w", "/srv/ws", "--interpreter", "/venv/bin/python",
        "--config", "doctor.toml", "--hypothesis", "fx_trace_race", "--plan-only",
        "--redact-path", "/home/me", "--redact-path", "/data/secret",
        "-i", "/keys/id", "--retries", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert seen.resolved == [
        (
            "gpu",
            {"workspace": "/srv/ws", "interpreter": "/venv/bin/python", "config": "doctor.toml"},
        )
    ]
    (config,) = seen.created
    assert config == SessionConfig(
        command="diagnose",
        target="ssh://root@gpu-7:2222",
        mode="guided",
        spec=SweepSpec(workspace="/srv/ws"),
        baseline=None,
        ssh=dataclasses.asdict(SSHOptions(identity_file="/keys/id", retries=0)),
        redact_paths=["/home/me", "/data/secret"],
        proposer=None,
        created_at=config.created_at,
    )
    assert seen.driven == [
        (
            SESSION_ID,
            DiagnosisState(
                target="recorded:ssh://root@gpu-7:2222",
                mode="guided",
                plan_only=True,
                focus=["fx_trace_race"],
                interactive=False,
            ),
            "md",
            False,
            False,
        )
    ]


def test_the_settings_that_apply_are_said_on_stderr(seen: Seen) -> None:
    """Which settings the resolved target runs with is said on stderr before the session
    runs; stdout is left to the report."""
    result = invoke("-t", "gpu")
    assert (result.stdout, result.stderr) == ("", f"settings: {SETTINGS}\n")


@pytest.mark.parametrize(
    ("flags", "fmt", "full"),
    [
        ([], "md", False),
        (["--format", "json"], "json", False),
        (["--json"], "json", False),
        (["--format", "md", "--json"], "json", False),
        (["--full"], "md", True),
    ],
    ids=["default", "format-json", "json-flag", "json-flag-wins", "full"],
)
def test_the_report_format_and_length_reach_the_driver(
    seen: Seen, flags: list[str], fmt: str, full: bool
) -> None:
    """``--json`` is ``--format json`` whatever ``--format`` says; ``--full`` asks for
    the whole Markdown report."""
    assert invoke(*flags).exit_code == 0
    ((_, _, given_fmt, _, given_full),) = seen.driven
    assert (given_fmt, given_full) == (fmt, full)


@pytest.mark.parametrize(
    ("flags", "ask", "quieted"),
    [([], False, 0), (["--non-interactive"], False, 0), (["--interactive"], True, 1)],
    ids=["not-a-terminal", "non-interactive", "interactive"],
)
def test_the_menu_is_offered_when_asked_for_or_at_a_terminal(
    seen: Seen, flags: list[str], ask: bool, quieted: int
) -> None:
    """Without either flag the menu is offered only when stdin is a terminal (here it is
    not); ``--interactive`` offers it, says so in the start state, and first keeps the
    progress log off the prompts."""
    assert invoke(*flags).exit_code == 0
    ((_, start, _, given_ask, _),) = seen.driven
    assert (start.interactive, given_ask, seen.quieted) == (ask, ask, quieted)


def test_an_unknown_family_is_refused_before_a_session_opens(seen: Seen) -> None:
    """``--hypothesis`` naming no failure family is a usage error listing the families;
    no session is created, nothing is driven and no settings line is said."""
    result = invoke("--hypothesis", "gremlins")
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == f"--hypothesis 'gremlins': not one of {', '.join(KINDS)}"
    assert (seen.created, seen.driven, result.stderr) == ([], [], "")


def test_a_proposer_that_cannot_be_built_is_refused_before_a_session_opens(seen: Seen) -> None:
    """A ``--proposer`` not of the form MODULE:FACTORY is a usage error saying so, before
    any session is created."""
    result = invoke("--proposer", "just_a_module")
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == "--proposer 'just_a_module': expected MODULE:FACTORY"
    assert (seen.created, seen.driven) == ([], [])


def test_a_proposer_that_loads_is_saved_with_the_session(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proposer is built once to check it, then named in the session's config so that a
    resumed session can build it again."""
    monkeypatch.setattr(agent.graph.proposer, "load_model", seen.loaded.append)
    assert invoke("--proposer", "mine.models:chat").exit_code == 0
    assert seen.loaded == ["mine.models:chat"]
    assert [c.proposer for c in seen.created] == ["mine.models:chat"]


def test_an_unknown_baseline_is_refused_before_a_session_opens(seen: Seen) -> None:
    """A ``--baseline`` this installation has no snapshot of is refused, naming it and
    the snapshots known (none here), before any session is created."""
    result = invoke("--baseline", "good")
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception) == "no baseline named 'good' (known: none)"
    assert (seen.created, seen.driven) == ([], [])
