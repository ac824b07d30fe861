"""tools.transport.target: a transport plus the container hops in front of the command. A
``Target`` is itself a transport: it wraps the argv (coreutils ``timeout`` innermost where
the client cannot stop the command itself, then the hops), gives the client a grace period
beyond the remote limit, turns the remote ``timeout``'s exit into ``CommandTimeout``, and
answers with the caller's argv under its own name.

How hops nest and where ``timeout`` goes in the wired argv is specified in
tests/unit/test_hops.py, and a real remote timeout in tests/unit/test_local.py and
tests/e2e/test_ssh.py; here the transport underneath is a stand-in that records what
reached it and answers as told."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest
from structlog.testing import capture_logs

from tools.errors import CommandTimeout, ConnectionLost
from tools.transport.base import CommandResult
from tools.transport.hops import Hop
from tools.transport.target import Target


class Answering:
    """A transport called ``name`` that records each command and answers ``rc`` after
    ``duration`` seconds (as reported, nothing waits)."""

    def __init__(self, name: str = "ssh://gpu1", rc: int = 0, duration: float = 0.5) -> None:
        self.name = name
        self.rc = rc
        self.duration = duration
        self.calls: list[tuple[tuple[str, ...], bytes | None, float | None]] = []
        self.closed = False

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.calls.append((tuple(argv), stdin, timeout))
        return CommandResult(
            tuple(argv), self.rc, b"out", b"err", self.duration, self.name, "stdin-digest"
        )

    def close(self) -> None:
        self.closed = True


class Failing(Answering):
    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        raise ConnectionLost("channel closed", target=self.name)


@pytest.mark.parametrize(
    ("transport", "hops", "uri", "name"),
    [
        ("local", (), None, "local"),
        ("ssh://gpu1", (Hop("pct", "200"),), None, "ssh://gpu1/pct:200"),
        (
            "ssh://gpu1",
            (Hop("pct", "200"), Hop("kubectl", "trainer", "ml")),
            None,
            "ssh://gpu1/pct:200/kubectl:trainer@ml",
        ),
        ("ssh://gpu1", (Hop("docker", "t"),), "gpu-box", "gpu-box"),
    ],
    ids=["transport-alone", "one-hop", "hops-in-order", "uri-given"],
)
def test_a_target_is_named_by_its_uri_else_its_transport_and_hops(
    transport: str, hops: tuple[Hop, ...], uri: str | None, name: str
) -> None:
    """The name is the URI it was opened from, else the transport's name and each hop,
    outermost first, joined by slashes."""
    assert Target(Answering(transport), hops, uri=uri).name == name


@pytest.mark.parametrize(
    ("transport", "hops", "given", "remote"),
    [
        ("local", (), None, False),
        ("local", (Hop("docker", "t"),), None, True),
        ("ssh://gpu1", (), None, True),
        ("ssh://gpu1", (), False, False),
        ("local", (), True, True),
    ],
    ids=["local", "local-through-a-hop", "ssh", "turned-off", "turned-on"],
)
def test_a_remote_timeout_is_used_wherever_the_client_cannot_stop_the_command(
    transport: str, hops: tuple[Hop, ...], given: bool | None, remote: bool
) -> None:
    """Unless told otherwise, only a local command without hops goes without a remote
    ``timeout``: over SSH or through a hop, a dropped connection leaves it running."""
    assert Target(Answering(transport), hops, remote_timeout=given).remote_timeout is remote


@pytest.mark.parametrize(
    ("transport", "timeout", "sent", "client_timeout"),
    [
        ("ssh://gpu1", 2.1, ("timeout", "-k", "5", "3", "ls"), 12.1),
        ("ssh://gpu1", 3.0, ("timeout", "-k", "5", "3", "ls"), 13.0),
        ("ssh://gpu1", None, ("ls",), None),
        ("local", 2.1, ("ls",), 2.1),
    ],
    ids=["rounded-up-with-grace", "whole-seconds", "no-limit", "local-client-enforces"],
)
def test_the_client_waits_ten_seconds_past_a_remote_limit(
    transport: str, timeout: float | None, sent: tuple[str, ...], client_timeout: float | None
) -> None:
    """With a remote ``timeout`` (whole seconds, rounded up, KILL 5 s after TERM) the
    client waits 10 s longer, so the target stops the command first; without one the
    client's limit is the caller's."""
    inner = Answering(transport)
    Target(inner).run(["ls"], stdin=b"data", timeout=timeout)
    assert inner.calls == [(sent, b"data", client_timeout)]


def test_the_answer_is_the_callers_command_under_the_targets_name() -> None:
    """The result names the argv the caller gave (not the wrapped one) and the target,
    with the exit status, output, duration and stdin digest the transport reported."""
    inner = Answering("ssh://gpu1", rc=3, duration=0.25)
    result = Target(inner, [Hop("pct", "200")]).run(("cat", "/ws/x"), timeout=5)
    assert inner.calls[0][0] == (
        "pct",
        "exec",
        "200",
        "--",
        "timeout",
        "-k",
        "5",
        "5",
        "cat",
        "/ws/x",
    )
    assert result == CommandResult(
        ("cat", "/ws/x"), 3, b"out", b"err", 0.25, "ssh://gpu1/pct:200", "stdin-digest"
    )


@pytest.mark.parametrize(
    ("rc", "duration"),
    [(124, 2.5), (137, 2.5), (124, 9.0)],
    ids=["term-worked", "kill-was-needed", "reported-late"],
)
def test_the_remote_timeouts_exit_after_the_limit_is_a_timeout(rc: int, duration: float) -> None:
    """Exit 124 (TERM stopped it) or 137 (KILL was needed) once the limit has passed is
    the remote ``timeout`` firing: CommandTimeout naming the program and the limit."""
    target = Target(Answering("ssh://gpu1", rc=rc, duration=duration))
    with pytest.raises(CommandTimeout) as caught:
        target.run(["sleep", "20"], timeout=2.5)
    assert str(caught.value) == (
        "ssh://gpu1: 'sleep' ran past its 2.5s limit and was stopped on the target"
    )


@pytest.mark.parametrize(
    ("transport", "rc", "duration", "timeout"),
    [
        ("ssh://gpu1", 124, 1.0, 2.5),
        ("ssh://gpu1", 137, 2.4, 2.5),
        ("ssh://gpu1", 1, 9.0, 2.5),
        ("ssh://gpu1", 124, 9.0, None),
        ("local", 124, 9.0, 2.5),
    ],
    ids=[
        "124-before-the-limit",
        "137-before-the-limit",
        "other-exit-after-the-limit",
        "no-limit",
        "no-remote-timeout",
    ],
)
def test_an_exit_the_remote_timeout_did_not_cause_is_the_commands_own(
    transport: str, rc: int, duration: float, timeout: float | None
) -> None:
    """124 or 137 before the limit, another exit after it, or no remote ``timeout`` at
    all: the command's own exit status, returned as it is."""
    target = Target(Answering(transport, rc=rc, duration=duration))
    assert target.run(["job"], timeout=timeout).rc == rc


def test_each_command_is_logged_with_a_digest_of_its_argv() -> None:
    """A command is one info event: the target, the first 12 hex digits of the sha256 of
    the space-joined argv (never the argv itself), the exit status and duration."""
    target = Target(Answering("ssh://gpu1", rc=0, duration=0.123456))
    with capture_logs() as logs:
        target.run(["cat", "/ws/secret token"])
    said = hashlib.sha256(b"cat /ws/secret token").hexdigest()[:12]
    assert logs == [
        {
            "event": "command",
            "target": "ssh://gpu1",
            "argv_digest": said,
            "rc": 0,
            "duration": 0.1235,
            "log_level": "info",
        }
    ]


def test_an_argument_that_is_not_utf8_is_digested_as_its_bytes() -> None:
    """An argument holding surrogate escapes (bytes a file name had that are not UTF-8)
    is digested as those bytes, never an encoding error."""
    target = Target(Answering())
    with capture_logs() as logs:
        target.run(["cat", "/ws/caf\udce9"])
    assert logs[0]["argv_digest"] == hashlib.sha256(b"cat /ws/caf\xe9").hexdigest()[:12]


def test_a_transport_failure_is_logged_and_raised_as_it_was() -> None:
    """The transport's exception reaches the caller unchanged, after an event saying the
    command failed and why."""
    target = Target(Failing())
    with capture_logs() as logs, pytest.raises(ConnectionLost) as caught:
        target.run(["ls"])
    assert str(caught.value) == "ssh://gpu1: channel closed"
    assert [(e["event"], e["error"]) for e in logs] == [
        ("command_failed", "ssh://gpu1: channel closed")
    ]


def test_the_timeout_is_logged_as_a_warning() -> None:
    """The remote ``timeout`` firing is a warning event with the exit status and the
    time the command ran."""
    target = Target(Answering(rc=124, duration=4.0))
    with capture_logs() as logs, pytest.raises(CommandTimeout):
        target.run(["sleep", "9"], timeout=3)
    assert [(e["event"], e["log_level"], e["rc"], e["duration"]) for e in logs] == [
        ("command_timeout", "warning", 124, 4.0)
    ]


def test_closing_the_target_closes_its_transport() -> None:
    """``close`` is passed on to the transport underneath."""
    inner = Answering()
    Target(inner).close()
    assert inner.closed is True
