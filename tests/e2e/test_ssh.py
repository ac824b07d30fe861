"""The SSH transport against a real sshd on 127.0.0.1, through a stand-in `pct` hop."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.lib.helpers import processes_with
from tests.lib.sshd import SSHServer, options
from tools.errors import (
    AuthenticationError,
    CommandTimeout,
    ConnectError,
    ConnectionLost,
    HostKeyError,
    TransportError,
)
from tools.transport import SSHOptions, SSHTransport, Target, open_target

pytestmark = pytest.mark.ssh

PAYLOADS = [
    "it's",
    'say "hi"',
    "$(touch /tmp/should-not-exist-$$)",
    "`id`",
    "$HOME",
    "a b  c   d",
    "line1\nline2\n",
    "tab\there",
    "ünïcødé ✓ 你好 🚀",
    "back\\slash",
    "*?[glob]",
    "; exit 3 &&",
    "-n",
    "",
]


@pytest.fixture
def pct_target(sshd_server: SSHServer) -> Iterator[Target]:
    target = open_target(f"{sshd_server.uri}/pct:200", ssh=options(sshd_server))
    yield target
    target.close()


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_argv_payloads_come_back_byte_exact(pct_target: Target, payload: str) -> None:
    """Quotes, $(…), backticks, $HOME, spaces, newlines and UTF-8 reach the command as
    one literal argument through ssh and pct, and come back unchanged."""
    result = pct_target.run(["printf", "%s", payload])
    assert result.rc == 0, result.stderr
    assert result.stdout == payload.encode()


@pytest.mark.parametrize("word", [b"bad\xff", b"\xe9t\xe9 \x80$(id)", b"caf\xc3\xa9\xff"])
def test_an_argv_word_that_is_not_utf8_goes_out_as_its_bytes(
    pct_target: Target, word: bytes
) -> None:
    """A word of argv as Python gives bytes that are not UTF-8 (``os.fsdecode``'s
    surrogates) reaches the command as those bytes, through ssh and pct, as ssh(1) sends
    them."""
    result = pct_target.run(["printf", "%s", os.fsdecode(word)])
    assert result.rc == 0, result.stderr
    assert result.stdout == word


def test_binary_blob_round_trips_through_stdin(pct_target: Target) -> None:
    """A NUL-free binary blob (every other byte value, invalid UTF-8 included) sent on stdin
    comes back byte-exact, larger than one SSH window so stdin and stdout interleave."""
    blob = bytes(range(1, 256)) * 8192  # ~2 MB
    result = pct_target.run(["cat"], stdin=blob)
    assert result.rc == 0
    assert result.stdout == blob


def test_stderr_is_kept_apart(pct_target: Target) -> None:
    """Through ssh and pct, the command's stderr comes back apart from its stdout."""
    result = pct_target.run(["sh", "-c", "printf out; printf err >&2"])
    assert (result.stdout, result.stderr) == (b"out", b"err")


@pytest.mark.parametrize("code", [0, 1, 7, 255])
def test_exit_codes_come_back_exact(pct_target: Target, code: int) -> None:
    """Exit codes are data: 255 from the command is not mistaken for an ssh failure."""
    assert pct_target.run(["sh", "-c", f"exit {code}"]).rc == code


def test_unknown_container_is_an_exit_code_not_an_exception(sshd_server: SSHServer) -> None:
    """The stand-in pct refuses ctid 999; that is the command's result, not a transport error."""
    result = open_target(f"{sshd_server.uri}/pct:999", ssh=options(sshd_server)).run(["true"])
    assert result.rc == 2
    assert b"no container 999" in result.stderr


def test_connection_is_reused_per_target(sshd_server: SSHServer) -> None:
    """Several commands, one TCP connection (one ssh_connected event)."""
    target = open_target(sshd_server.uri, ssh=options(sshd_server))
    with capture_logs() as logs:
        for _ in range(3):
            assert target.run(["true"]).rc == 0
    target.close()
    assert [e["event"] for e in logs].count("ssh_connected") == 1


def test_ssh_config_alias_is_honoured(sshd_server: SSHServer) -> None:
    """HostName, Port, User, IdentityFile and UserKnownHostsFile come from ssh_config."""
    transport = SSHTransport(
        "trainer-alias", options=SSHOptions(ssh_config=str(sshd_server.ssh_config()), retries=0)
    )
    result = Target(transport).run(["id", "-un"])
    transport.close()
    assert result.stdout.decode().strip() == sshd_server.user


def test_remote_timeout_stops_the_command_on_the_host(pct_target: Target) -> None:
    """A timed-out command raises CommandTimeout and is no longer running on the target."""
    marker = uuid.uuid4().hex
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        pct_target.run(["sh", "-c", f"sleep 30; : {marker}"], timeout=1)
    assert time.monotonic() - started < 8
    time.sleep(0.3)
    assert not processes_with(marker)


def test_server_down_fails_after_the_configured_retries(sshd_server: SSHServer) -> None:
    """sshd stopped before connect: ConnectError after 1 + retries attempts, within bounds."""
    sshd_server.stop()
    transport = SSHTransport(
        "127.0.0.1",
        user=sshd_server.user,
        port=sshd_server.port,
        options=options(sshd_server, retries=2, backoff_initial=0.1, backoff_max=0.2),
    )
    started = time.monotonic()
    with capture_logs() as logs, pytest.raises(ConnectError, match="connection refused"):
        Target(transport).run(["true"])
    assert time.monotonic() - started < 5
    assert [e["event"] for e in logs].count("ssh_connect_retry") == 2


def test_silent_server_hits_the_banner_timeout() -> None:
    """A port that accepts but never speaks SSH: ConnectError after banner_timeout, retried."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        transport = SSHTransport(
            "127.0.0.1",
            port=port,
            options=SSHOptions(banner_timeout=1, retries=1, backoff_initial=0.1, backoff_max=0.1),
        )
        started = time.monotonic()
        with capture_logs() as logs, pytest.raises(ConnectError, match="banner"):
            transport.run(["true"])
    assert 2 <= time.monotonic() - started < 8
    assert [e["event"] for e in logs].count("ssh_connect_retry") == 1


def test_auth_failure_is_not_retried(sshd_server: SSHServer, tmp_path: Path) -> None:
    """A key the server does not accept: AuthenticationError at once, no retry."""
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    transport = SSHTransport(
        "127.0.0.1",
        user=sshd_server.user,
        port=sshd_server.port,
        options=options(sshd_server, identity_file=str(stranger), retries=3),
    )
    with capture_logs() as logs, pytest.raises(AuthenticationError, match="authentication failed"):
        transport.run(["true"])
    assert "ssh_connect_retry" not in [e["event"] for e in logs]


def test_unknown_host_key_is_refused_by_default(sshd_server: SSHServer) -> None:
    """With the server missing from known_hosts, nothing runs unless the user opts in."""
    sshd_server.known_hosts.write_text("")
    transport = SSHTransport(
        "127.0.0.1",
        user=sshd_server.user,
        port=sshd_server.port,
        options=options(sshd_server, retries=3),
    )
    with capture_logs() as logs, pytest.raises(HostKeyError, match="unknown host key"):
        transport.run(["true"])
    assert "ssh_connect_retry" not in [e["event"] for e in logs]
    assert sshd_server.known_hosts.read_text() == ""


def test_accept_new_host_key_remembers_it(sshd_server: SSHServer) -> None:
    """--accept-new-host-key trusts a first-seen key and writes it to known_hosts, so the
    next connection succeeds under the default (refusing) policy."""
    sshd_server.known_hosts.write_text("")
    first = SSHTransport(
        "127.0.0.1",
        user=sshd_server.user,
        port=sshd_server.port,
        options=options(sshd_server, accept_new_host_key=True),
    )
    assert first.run(["true"]).rc == 0
    first.close()
    assert f"[127.0.0.1]:{sshd_server.port}" in sshd_server.known_hosts.read_text()
    second = SSHTransport(
        "127.0.0.1", user=sshd_server.user, port=sshd_server.port, options=options(sshd_server)
    )
    assert second.run(["true"]).rc == 0
    second.close()


@pytest.mark.parametrize("accept_new", [False, True])
def test_changed_host_key_is_refused(sshd_server: SSHServer, accept_new: bool) -> None:
    """A host key that differs from known_hosts is refused, even with accept-new."""
    sshd_server.stop()
    sshd_server.new_host_key()
    sshd_server.start()
    transport = SSHTransport(
        "127.0.0.1",
        user=sshd_server.user,
        port=sshd_server.port,
        options=options(sshd_server, accept_new_host_key=accept_new, retries=3),
    )
    with pytest.raises(HostKeyError, match="host key changed"):
        transport.run(["true"])


def test_sshd_killed_mid_command_raises_without_hanging(sshd_server: SSHServer) -> None:
    """The server side dies while a command runs: ConnectionLost, promptly."""
    transport = SSHTransport(
        "127.0.0.1", user=sshd_server.user, port=sshd_server.port, options=options(sshd_server)
    )
    target = Target(transport)
    assert target.run(["true"]).rc == 0
    killer = threading.Timer(0.5, sshd_server.kill_sessions)
    killer.start()
    started = time.monotonic()
    with pytest.raises(ConnectionLost):
        target.run(["sleep", "30"], timeout=60)
    killer.join()
    assert time.monotonic() - started < 10


def test_transport_errors_share_one_root(sshd_server: SSHServer) -> None:
    """Callers can catch every carrying failure with TransportError."""
    for cls in (ConnectError, AuthenticationError, HostKeyError, CommandTimeout, ConnectionLost):
        assert issubclass(cls, TransportError)


def test_command_killed_by_signal_is_data_not_a_lost_connection(pct_target: Target) -> None:
    """The command dies of SIGKILL on a healthy connection: a result, not ConnectionLost.
    sshd reports exit-signal, which paramiko surfaces as -1."""
    result = pct_target.run(["sh", "-c", "kill -9 $$"])
    assert result.rc in (-1, 137)
    assert pct_target.run(["true"]).rc == 0
