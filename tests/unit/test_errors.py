"""Every foreign exception the SSH boundary can meet is mapped onto our one tree.

Most faults are produced for real in test_ssh.py (refused, banner timeout, auth, host
keys, dropped connection). This table covers the rest by making fabric's
``Connection.open`` raise the real library exception classes: a stand-in for faults we
cannot cause on loopback (DNS failure, network unreachable, a TCP connect timeout).
"""

from __future__ import annotations

import socket

import paramiko
import pytest
from fabric import Connection

from tools import errors
from tools.transport import SSHOptions, SSHTransport


def _bad_host_key() -> paramiko.BadHostKeyException:
    a = paramiko.RSAKey.generate(1024)
    b = paramiko.RSAKey.generate(1024)
    return paramiko.BadHostKeyException("h", a, b)


CASES: list[tuple[BaseException, type[errors.TransportError], str]] = [
    (socket.gaierror(-2, "Name or service not known"), errors.TransportError, "cannot resolve"),
    (TimeoutError("timed out"), errors.ConnectError, "timed out connecting"),
    (
        paramiko.ssh_exception.NoValidConnectionsError({("127.0.0.1", 1): OSError(111, "x")}),
        errors.ConnectError,
        "connection refused",
    ),
    (OSError(101, "Network is unreachable"), errors.ConnectError, "Network is unreachable"),
    (EOFError(), errors.ConnectError, "EOFError"),
    (paramiko.SSHException("Error reading SSH protocol banner"), errors.ConnectError, "banner"),
    (
        paramiko.AuthenticationException("Authentication failed."),
        errors.AuthenticationError,
        "authentication failed",
    ),
    (
        paramiko.BadAuthenticationType("Bad authentication type", ["password"]),
        errors.AuthenticationError,
        "authentication failed",
    ),
    (_bad_host_key(), errors.HostKeyError, "host key changed"),
]


@pytest.mark.parametrize(
    ("raised", "mapped", "text"), CASES, ids=[type(c[0]).__name__ for c in CASES]
)
def test_foreign_exception_is_mapped(
    monkeypatch: pytest.MonkeyPatch,
    raised: BaseException,
    mapped: type[errors.TransportError],
    text: str,
) -> None:
    """Each library exception met while opening the SSH connection becomes its TransportError
    subclass: one line, starting with the target's address, keeping the cause's text."""

    def fail(self: Connection) -> None:
        raise raised

    monkeypatch.setattr(Connection, "open", fail)
    transport = SSHTransport(
        "example.invalid", options=SSHOptions(retries=0, known_hosts="/dev/null")
    )
    with pytest.raises(errors.TransportError) as info:
        transport.run(["true"])
    assert type(info.value) is mapped
    assert text in str(info.value)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("ssh://example.invalid: ")


def test_only_connect_errors_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """Auth and host-key failures are tried once; connection failures 1 + retries times."""
    calls: list[str] = []

    def fail_with(exc: BaseException):  # type: ignore[no-untyped-def]
        def fail(self: Connection) -> None:
            calls.append(type(exc).__name__)
            raise exc

        return fail

    opts = SSHOptions(retries=2, backoff_initial=0.01, backoff_max=0.01, known_hosts="/dev/null")
    for exc, expected in [
        (paramiko.AuthenticationException("no"), 1),
        (_bad_host_key(), 1),
        (OSError(113, "No route to host"), 3),
    ]:
        calls.clear()
        monkeypatch.setattr(Connection, "open", fail_with(exc))
        with pytest.raises(errors.TransportError):
            SSHTransport("example.invalid", options=opts).run(["true"])
        assert len(calls) == expected, type(exc).__name__


def test_tree_shape() -> None:
    """Usage errors exit 2; transport errors exit 255 like ssh(1); one root for all."""
    cls: type[errors.DoctorError]
    for cls in (errors.TargetURIError, errors.ConfigError):
        assert issubclass(cls, errors.UsageError) and cls.exit_code == 2
    for cls in (
        errors.ConnectError,
        errors.AuthenticationError,
        errors.HostKeyError,
        errors.CommandTimeout,
        errors.ConnectionLost,
    ):
        assert issubclass(cls, errors.TransportError) and cls.exit_code == 255
    # Replay's contract: a transcript that cannot be replayed exits 2.
    assert issubclass(errors.NotRecorded, errors.TransportError)
    assert errors.NotRecorded.exit_code == errors.TranscriptError.exit_code == 2
    for cls in (
        errors.UsageError,
        errors.TransportError,
        errors.LedgerError,
        errors.TranscriptError,
    ):
        assert issubclass(cls, errors.DoctorError)
