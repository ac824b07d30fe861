"""``dflash-doctor exec`` (``agent.cli.execute``): one command through the target chain,
its output written back byte for byte, its exit code the process's (255 for one ssh could
not give); a bad URI refused before a session opens; ``--timeout`` bounding the connection
too; and the doctor's own info lines kept off the command's stderr."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from agent.cli import application, execute
from agent.cli.application import app
from tools.transport.base import CommandResult
from tools.transport.ssh_options import SSHOptions
from tools.transport.uri import TargetURI


def result_of(rc: int, stdout: bytes = b"", stderr: bytes = b"") -> CommandResult:
    return CommandResult(argv=(), rc=rc, stdout=stdout, stderr=stderr, duration=0.0, target="")


@dataclass
class Ran:
    """What the command saw: the session it opened, how it reached the target, and what
    it ran there; ``result`` is what the target answers."""

    result: CommandResult = field(default_factory=lambda: result_of(0))

    opened: list[tuple[str, str, SSHOptions]] = field(default_factory=list)
    targets: list[tuple[str, bool]] = field(default_factory=list)
    runs: list[tuple[list[str], float | None]] = field(default_factory=list)
    closed: int = 0
    logging: list[str] = field(default_factory=list)


class FakeTransport:
    def __init__(self, ran: Ran) -> None:
        self.ran = ran

    def run(self, argv: list[str], timeout: float | None = None) -> CommandResult:
        self.ran.runs.append((argv, timeout))
        return self.ran.result


class FakeSession:
    def __init__(self, ran: Ran) -> None:
        self.ran = ran

    def target(self, uri: str, redact_results: bool = True) -> FakeTransport:
        self.ran.targets.append((uri, redact_results))
        return FakeTransport(self.ran)

    def close(self) -> None:
        self.ran.closed += 1


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> Iterator[Ran]:
    """A session stand-in that records what ``exec`` does and answers with ``ran.result``;
    the logging configuration is recorded, not applied."""
    record = Ran()

    def open_session(command: str, uri: TargetURI, ssh: SSHOptions) -> FakeSession:
        record.opened.append((command, str(uri), ssh))
        return FakeSession(record)

    monkeypatch.setattr(execute, "open_session", open_session)
    monkeypatch.setattr(execute, "configure", lambda *, json, level: record.logging.append(level))
    monkeypatch.setattr(application, "configure", lambda *, json, level: None)
    yield record


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_the_commands_bytes_and_code_are_passed_through(ran: Ran) -> None:
    """The command runs on the target as given; its stdout and stderr are written as the
    very bytes it produced (not redacted, not decoded), and its code is the exit code."""
    ran.result = result_of(7, b"out \xff\n", b"err\n")
    result = invoke("exec", "--target", "local", "--", "sh", "-c", "exit 7")
    assert result.exit_code == 7
    assert (result.stdout_bytes, result.stderr_bytes) == (b"out \xff\n", b"err\n")
    assert ran.opened == [("exec", "local", SSHOptions())]
    assert ran.targets == [("local", False)]
    assert ran.runs == [(["sh", "-c", "exit 7"], None)]
    assert ran.closed == 1


@pytest.mark.parametrize(
    ("rc", "code"),
    [(0, 0), (255, 255), (-1, 255), (256, 255), (-15, 255)],
    ids=["zero", "ssh-255", "unknown-minus-one", "too-large", "signal"],
)
def test_a_code_no_process_can_exit_with_becomes_255(ran: Ran, rc: int, code: int) -> None:
    """A code in 0..255 is kept; anything else (ssh's -1 for "killed, status unknown") is
    255, what ssh(1) exits with."""
    ran.result = result_of(rc)
    assert invoke("exec", "--", "true").exit_code == code


def test_the_timeout_bounds_the_command_and_reaching_the_host(ran: Ran) -> None:
    """``--timeout`` is the command's limit and the whole connection's deadline, so a host
    that never answers cannot hold it longer."""
    invoke("exec", "-t", "ssh://root@gpu:2222", "--timeout", "4", "--", "true")
    ((_, uri, ssh),) = ran.opened
    assert uri == "ssh://root@gpu:2222"
    assert ssh == SSHOptions(connect_deadline=4.0)
    assert ran.runs == [(["true"], 4.0)]


def test_a_bad_target_is_refused_before_a_session_opens(ran: Ran) -> None:
    """A target URI that does not parse stops ``exec`` before any session is opened."""
    result = invoke("exec", "-t", "gpu-host", "--", "true")
    assert result.exit_code == 1  # the error itself; ``main`` turns it into one line
    assert str(result.exception) == (
        "bad target URI 'gpu-host': no scheme (expected 'local' or 'ssh://[user@]host[:port]')"
    )
    assert ran.opened == []


@pytest.mark.parametrize(
    ("flags", "logging"),
    [([], ["warning"]), (["-q"], ["warning"]), (["-v"], []), (["--log-json"], [])],
    ids=["default", "quiet", "verbose", "json"],
)
def test_info_lines_are_kept_off_the_commands_stderr_unless_asked_for(
    ran: Ran, flags: list[str], logging: list[str]
) -> None:
    """Unless ``-v`` or ``--log-json`` asked for them, ``exec`` logs warnings only, so its
    stderr is the command's own."""
    assert invoke(*flags, "exec", "--", "true").exit_code == 0
    assert ran.logging == logging


def test_the_session_is_closed_when_the_command_cannot_be_run(
    ran: Ran, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When running fails (the target cannot be reached), the session is still closed."""

    def unreachable(self: FakeTransport, argv: list[str], timeout: float | None = None) -> Any:
        raise ConnectionError("refused")

    monkeypatch.setattr(FakeTransport, "run", unreachable)
    result = invoke("exec", "--", "true")
    assert isinstance(result.exception, ConnectionError)
    assert ran.closed == 1
