"""tools.transport.ssh: commands on a remote host over one reused SSH connection. Before
connecting it checks what it was given (the ssh_config, the Host's Port and HostName, the
identity file) and says in one line what cannot be used; it opens the connection with
timeouts capped by the deadline, loads known_hosts and refuses unknown, changed or revoked
host keys (or remembers a new one on request); each command runs on a fresh channel, its
argv joined once, stdin fed and stdout/stderr drained together until exit status *and*
EOF.

No connection is opened here: fabric's ``Connection`` is replaced by a stand-in whose
channel plays a scripted timeline. The real sshd is exercised in tests/e2e/test_ssh.py,
and the mapping of each library exception in tests/unit/test_errors.py."""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import paramiko
import pytest
from structlog.testing import capture_logs

import tools.transport.ssh as ssh
from tools.errors import CommandTimeout, ConnectionLost, HostKeyError, UsageError
from tools.transport.base import CommandResult
from tools.transport.ssh import SSHTransport
from tools.transport.ssh_options import SSHOptions

# -- stand-ins -------------------------------------------------------------------------


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


# An ssh-ed25519 public key blob (RFC 8709): the type name, then 32 key bytes.
BLOB = _ssh_string(b"ssh-ed25519") + _ssh_string(bytes(range(32)))
B64 = base64.b64encode(BLOB).decode()
SHA256_PRINT = "SHA256:" + base64.b64encode(hashlib.sha256(BLOB).digest()).decode().rstrip("=")


@dataclass
class Tick:
    """What the channel shows from one wait to the next."""

    stdout: bytes = b""
    stderr: bytes = b""
    exit_ready: bool = False
    eof: bool = False
    closed: bool = False


class Channel:
    """A paramiko channel playing ``ticks``: the next one begins each time the pump
    waits; ``send`` takes at most ``window`` bytes at once."""

    def __init__(self, ticks: Sequence[Tick], rc: int = 0, window: int = 1 << 20) -> None:
        self.ticks = list(ticks)
        self.at = 0
        self.rc = rc
        self.window = window
        self.out = bytearray(self.ticks[0].stdout)
        self.err = bytearray(self.ticks[0].stderr)
        self.events: list[str] = []
        self.sent = bytearray()
        self.command: bytes | None = None
        self.active = True

    # the pump's wait
    def advance(self) -> None:
        self.at = min(self.at + 1, len(self.ticks) - 1)
        self.out += self.ticks[self.at].stdout
        self.err += self.ticks[self.at].stderr

    def exec_command(self, command: bytes) -> None:
        self.command = command

    def get_transport(self) -> Any:
        return SimpleNamespace(is_active=lambda: self.active)

    def recv_ready(self) -> bool:
        return bool(self.out)

    def recv(self, n: int) -> bytes:
        assert n == 1 << 16
        data, self.out = bytes(self.out[:7]), self.out[7:]
        return data

    def recv_stderr_ready(self) -> bool:
        return bool(self.err)

    def recv_stderr(self, n: int) -> bytes:
        data, self.err = bytes(self.err), bytearray()
        return data

    def send_ready(self) -> bool:
        return True

    def send(self, data: memoryview) -> int:
        taken = bytes(data[: self.window])
        self.sent += taken
        self.events.append(f"send {len(taken)}")
        return len(taken)

    def shutdown_write(self) -> None:
        self.events.append("shutdown_write")

    def exit_status_ready(self) -> bool:
        return self.ticks[self.at].exit_ready

    @property
    def eof_received(self) -> bool:
        return self.ticks[self.at].eof

    @property
    def closed(self) -> bool:
        return self.ticks[self.at].closed

    def recv_exit_status(self) -> int:
        return self.rc

    def close(self) -> None:
        self.events.append("close")


FINISHED = Tick(exit_ready=True, eof=True)


@dataclass
class Connection:
    """fabric's Connection, recording how it was made; ``open`` does what ``on_open``
    says (asks the host key policy, raises) instead of connecting."""

    host: str
    user: str | None = None
    port: int | None = None
    config: Any = None
    connect_timeout: int | None = None
    connect_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ssh_config: dict[str, str] = {}
        self.is_connected = False
        self.closed = False
        self.policy: Any = None
        self.keepalive: int | None = None
        self.host_keys = paramiko.HostKeys()
        self.channel = Channel([FINISHED])
        self.offered: paramiko.PKey | None = None
        self.on_open: Callable[[Connection], None] = lambda conn: None
        self.client = SimpleNamespace(
            get_host_keys=lambda: self.host_keys,
            set_missing_host_key_policy=self._set_policy,
            get_transport=lambda: SimpleNamespace(
                open_session=self._open_session,
                get_remote_server_key=lambda: self.offered,
                set_keepalive=self._set_keepalive,
            ),
        )

    def _set_policy(self, policy: Any) -> None:
        self.policy = policy

    def _set_keepalive(self, seconds: int) -> None:
        self.keepalive = seconds

    def _open_session(self, timeout: float) -> Channel:
        self.session_timeout = timeout
        return self.channel

    def open(self) -> None:
        self.on_open(self)
        self.is_connected = True

    def close(self) -> None:
        self.closed = True
        self.is_connected = False


class Made(list[Connection]):
    """The Connections a transport made, in order; each one's ``open`` does
    ``on_open`` (asks the host key policy, say) instead of connecting."""

    def __init__(self) -> None:
        super().__init__()
        self.on_open: Callable[[Connection], None] = lambda conn: None


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Made:
    """Every Connection the transport makes (none of them connects)."""
    made = Made()

    def make(*args: Any, **kwargs: Any) -> Connection:
        conn = Connection(*args, **kwargs)
        conn.on_open = made.on_open
        made.append(conn)
        return conn

    monkeypatch.setattr(ssh, "Connection", make)
    return made


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pump's wait on the channel moves the channel's timeline on instead."""

    def wait(readable: list[Channel], *rest: Any) -> tuple[list[Channel], list[Any], list[Any]]:
        readable[0].advance()
        return readable, [], []

    monkeypatch.setattr(ssh, "select", SimpleNamespace(select=wait))


def _options(tmp_path: Path, **given: Any) -> SSHOptions:
    """Options that read no file of this machine's: no ssh_config, known_hosts in
    ``tmp_path``, no retries."""
    settings: dict[str, Any] = {
        "ssh_config": os.devnull,
        "known_hosts": str(tmp_path / "known_hosts"),
        "retries": 0,
    }
    return SSHOptions(**{**settings, **given})


def _connected(conn: Connection, channel: Channel) -> SSHTransport:
    """A transport whose connection is already up: ``conn``, opening ``channel``."""
    transport = SSHTransport("gpu1")
    conn.channel = channel
    conn.is_connected = True
    transport._conn = conn
    return transport


# -- names and lines ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "user", "port", "name"),
    [
        ("gpu1", None, None, "ssh://gpu1"),
        ("gpu1", "me", None, "ssh://me@gpu1"),
        ("10.0.0.5", "me", 2222, "ssh://me@10.0.0.5:2222"),
        ("fe80::1", None, 22, "ssh://[fe80::1]:22"),
        ("::1", "root", None, "ssh://root@[::1]"),
    ],
    ids=["host", "user", "user-and-port", "ipv6-with-port", "ipv6-with-user"],
)
def test_the_transport_is_named_as_a_uri_writes_it(
    host: str, user: str | None, port: int | None, name: str
) -> None:
    """``ssh://[user@]host[:port]``, an IPv6 address in brackets; building it connects
    to nothing."""
    assert SSHTransport(host, user=user, port=port).name == name


@pytest.mark.parametrize(
    ("exc", "why"),
    [
        (
            paramiko.SSHException("Error reading\n   SSH protocol banner "),
            "Error reading SSH protocol banner",
        ),
        (EOFError(), "EOFError"),
        (OSError("   "), "OSError"),
    ],
    ids=["whitespace-collapsed", "no-text", "blank-text"],
)
def test_an_exceptions_reason_is_one_line(exc: BaseException, why: str) -> None:
    """A library exception's text becomes one line, runs of whitespace as one space;
    with no text, the exception's class name."""
    assert ssh._why(exc) == why


# -- what is checked before connecting -------------------------------------------------


def _config_with(tmp_path: Path, host_lines: str) -> str:
    path = tmp_path / "ssh_config"
    path.write_text(f"Host box\n{host_lines}")
    return str(path)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("  Port 0\n", "Port '0' is not a port number (1-65535)"),
        ("  Port 65536\n", "Port '65536' is not a port number (1-65535)"),
        ("  Port -22\n", "Port '-22' is not a port number (1-65535)"),
        ("  Port \u0663\u0663\n", "Port '\u0663\u0663' is not a port number (1-65535)"),
        (
            f"  HostName {'a' * 254}\n",
            f"HostName {'a' * 40!r}... is not a host name (254 characters; DNS allows 253,"
            " 63 a label)",
        ),
        (
            f"  HostName {'b' * 64}.example\n",
            f"HostName {'b' * 40!r}... is not a host name (72 characters; DNS allows 253,"
            " 63 a label)",
        ),
        (
            "  HostName a..b\n",
            "HostName 'a..b' is not a host name (4 characters; DNS allows 253, 63 a label)",
        ),
    ],
    ids=[
        "port-zero",
        "port-too-big",
        "port-negative",
        "port-in-arabic-digits",
        "name-too-long",
        "label-too-long",
        "empty-label",
    ],
)
def test_a_host_setting_no_connection_can_use_is_one_line(
    tmp_path: Path, lines: str, message: str
) -> None:
    """A Port outside 1-65535 (ASCII digits only) or a HostName DNS cannot carry is a
    UsageError naming the config file, the Host and the setting, shown cut to 40
    characters."""
    path = _config_with(tmp_path, lines)
    with pytest.raises(UsageError) as caught:
        ssh._host_settings(ssh._config(path), "box", path)
    assert str(caught.value) == f"{path}: Host box: {message}"


@pytest.mark.parametrize(
    "lines",
    [
        "  Port 1\n",
        "  Port 65535\n",
        f"  HostName {'c' * 63}.{'d' * 63}\n",
        "  HostName bücher.example\n",
    ],
    ids=["port-one", "port-65535", "labels-of-63", "international-name"],
)
def test_host_settings_at_the_bounds_are_accepted(tmp_path: Path, lines: str) -> None:
    """The bounds themselves are usable, and an international name is measured in its
    IDNA form."""
    path = _config_with(tmp_path, lines)
    ssh._host_settings(ssh._config(path), "box", path)


def test_a_host_the_config_does_not_name_uses_port_22_and_its_own_name() -> None:
    """A host the config does not name is checked as given: port 22, its own name; a
    bad name is reported against "the ssh config" when no file was named."""
    config = ssh._config(os.devnull)
    ssh._host_settings(config, "gpu1", None)
    with pytest.raises(UsageError) as caught:
        ssh._host_settings(config, "x" * 64, None)
    assert str(caught.value) == (
        f"the ssh config: Host {'x' * 64}: HostName {'x' * 40!r}... is not a host name "
        "(64 characters; DNS allows 253, 63 a label)"
    )


def test_an_ssh_config_that_does_not_parse_is_one_line(tmp_path: Path) -> None:
    """A config file paramiko cannot parse is a UsageError naming the file and the
    line it stopped at."""
    path = tmp_path / "ssh_config"
    path.write_text("Host box\n  Port\n")
    with pytest.raises(UsageError) as caught:
        ssh._config(str(path))
    assert str(caught.value) == f"{path}: not a usable ssh config: Unparsable line Port"


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----\n",
            True,
        ),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", True),
        ("ssh-ed25519 AAAAC3Nza me@host\n", False),
        ("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", False),
    ],
    ids=["openssh-key", "pem-key", "public-key", "certificate"],
)
def test_an_identity_file_must_hold_a_private_key_block(
    tmp_path: Path, text: str, accepted: bool
) -> None:
    """A file holding a ``-----BEGIN … PRIVATE KEY-----`` block is used as it is; a
    public key or a certificate is a UsageError naming the file (its contents are not
    repeated)."""
    key = tmp_path / "id_test"
    key.write_text(text)
    if accepted:
        assert ssh._identity(str(key)) == str(key)
        return
    with pytest.raises(UsageError) as caught:
        ssh._identity(str(key))
    assert str(caught.value) == (
        f"{key}: not a private key file (no '-----BEGIN ... PRIVATE KEY-----' block)"
    )


def test_a_missing_identity_file_is_one_line(tmp_path: Path) -> None:
    """An identity file that is not there is a UsageError saying it cannot be read and
    why."""
    key = tmp_path / "absent"
    with pytest.raises(UsageError) as caught:
        ssh._identity(str(key))
    assert str(caught.value) == f"{key}: cannot read the identity file: No such file or directory"


# -- connecting ------------------------------------------------------------------------


def test_a_connection_is_made_with_the_options_timeouts(tmp_path: Path, made: Made) -> None:
    """With no deadline the connection gets the options' timeouts as given, the host,
    user and port, keepalive on, and unknown host keys refused."""
    transport = SSHTransport("gpu1", user="me", port=2222, options=_options(tmp_path))
    transport.run(["true"])
    [conn] = made
    assert (conn.host, conn.user, conn.port, conn.connect_timeout) == ("gpu1", "me", 2222, 10)
    assert conn.connect_kwargs == {
        "banner_timeout": 10.0,
        "auth_timeout": 10.0,
        "channel_timeout": 10.0,
    }
    assert conn.keepalive == 15
    assert type(conn.policy).__name__ == "_RefuseUnknownKey"


@pytest.mark.parametrize(
    ("deadline", "connect_timeout", "cap"),
    [(3.0, 3, 3.0), (0.2, 1, 0.2), (25.0, 10, 10.0)],
    ids=["deadline-cuts-every-timeout", "at-least-a-second-to-connect", "deadline-further"],
)
def test_every_timeout_is_capped_by_the_connect_deadline(
    tmp_path: Path, made: Made, deadline: float, connect_timeout: int, cap: float
) -> None:
    """Reaching the host must fit the deadline: the banner, auth and channel timeouts
    are cut to it, and the TCP connect timeout too, in whole seconds, never under one."""
    options = _options(tmp_path, connect_deadline=deadline, keepalive=0)
    SSHTransport("gpu1", options=options).run(["true"])
    [conn] = made
    assert conn.connect_timeout == connect_timeout
    assert conn.connect_kwargs == {
        "banner_timeout": cap,
        "auth_timeout": cap,
        "channel_timeout": cap,
    }
    assert conn.keepalive is None


def test_an_identity_file_is_the_only_key_tried(tmp_path: Path, made: Made) -> None:
    """With an identity file, that key alone is offered: no agent, no default keys."""
    key = tmp_path / "id_test"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n")
    SSHTransport("gpu1", options=_options(tmp_path, identity_file=str(key))).run(["true"])
    [conn] = made
    assert conn.connect_kwargs["key_filename"] == [str(key)]
    assert (conn.connect_kwargs["look_for_keys"], conn.connect_kwargs["allow_agent"]) == (
        False,
        False,
    )


def test_known_hosts_are_loaded_into_the_client(tmp_path: Path, made: Made) -> None:
    """The keys of the known_hosts file are the client's known keys, under each name."""
    (tmp_path / "known_hosts").write_text(f"gpu1,10.0.0.5 ssh-ed25519 {B64}\n")
    SSHTransport("gpu1", options=_options(tmp_path)).run(["true"])
    [conn] = made
    for name in ("gpu1", "10.0.0.5"):
        assert conn.host_keys.lookup(name)["ssh-ed25519"].get_base64() == B64


def test_the_connection_is_reused_while_it_is_up(tmp_path: Path, made: Made) -> None:
    """Two commands, one connection; once it is down, the next command makes a new one."""
    transport = SSHTransport("gpu1", options=_options(tmp_path))
    transport.run(["true"])
    made[0].channel = Channel([FINISHED])
    transport.run(["true"])
    assert len(made) == 1
    made[0].is_connected = False
    transport.run(["true"])
    assert len(made) == 2 and made[0].closed


def test_an_unknown_host_key_is_refused_naming_its_fingerprint(tmp_path: Path, made: Made) -> None:
    """By default a host key known_hosts does not hold stops the connection: a
    HostKeyError naming the target, the key's type and SHA256 fingerprint, and what to
    do."""

    def offer_key(conn: Connection) -> None:
        conn.policy.missing_host_key(conn.client, "gpu1", paramiko.Ed25519Key(data=BLOB))

    made.on_open = offer_key
    with pytest.raises(HostKeyError) as caught:
        SSHTransport("gpu1", options=_options(tmp_path)).run(["true"])
    assert str(caught.value) == (
        f"ssh://gpu1: unknown host key (ssh-ed25519 {SHA256_PRINT}); refusing to connect. "
        "Check the fingerprint, then add it to known_hosts or pass --accept-new-host-key"
    )


def test_accept_new_remembers_an_unknown_key(tmp_path: Path, made: Made) -> None:
    """With ``accept_new_host_key`` an unknown key is trusted for this connection and
    appended to known_hosts (its directory made, private to the user), with a warning
    naming the host and fingerprint."""
    known = tmp_path / "new" / "known_hosts"

    def offer_key(conn: Connection) -> None:
        conn.policy.missing_host_key(conn.client, "gpu1", paramiko.Ed25519Key(data=BLOB))

    made.on_open = offer_key
    options = _options(tmp_path, known_hosts=str(known), accept_new_host_key=True)
    with capture_logs() as logs:
        SSHTransport("gpu1", options=options).run(["true"])
    assert known.read_text() == f"gpu1 ssh-ed25519 {B64}\n"
    assert known.parent.stat().st_mode & 0o777 == 0o700
    assert made[0].host_keys.lookup("gpu1")["ssh-ed25519"].get_base64() == B64
    accepted = [e for e in logs if e["event"] == "host_key_accepted"]
    assert [(e["log_level"], e["host"], e["fingerprint"]) for e in accepted] == [
        ("warning", "gpu1", SHA256_PRINT)
    ]


def test_a_revoked_host_key_is_refused_after_connecting(tmp_path: Path, made: Made) -> None:
    """A key known_hosts marks ``@revoked`` is refused even once the handshake is done:
    the connection is closed and the error names the key's MD5 fingerprint and the
    file."""
    known = tmp_path / "known_hosts"
    known.write_text(f"@revoked * ssh-ed25519 {B64}\n")

    def offer_revoked(conn: Connection) -> None:
        conn.offered = paramiko.Ed25519Key(data=BLOB)

    made.on_open = offer_revoked
    with pytest.raises(HostKeyError) as caught:
        SSHTransport("gpu1", options=_options(tmp_path)).run(["true"])
    assert str(caught.value) == (
        f"ssh://gpu1: host key {hashlib.md5(BLOB).hexdigest()} is marked @revoked in "
        f"{known}; refusing to connect"
    )
    assert made[0].closed


@pytest.mark.parametrize(
    ("options_file", "configured", "expected"),
    [
        ("/etc/doctor/known_hosts", "~/kh", "/etc/doctor/known_hosts"),
        (None, "~/kh /etc/ssh/kh2", "~/kh"),
        (None, None, "~/.ssh/known_hosts"),
    ],
    ids=["options-win", "first-of-the-configs-files", "openssh-default"],
)
def test_the_known_hosts_file_is_the_options_else_the_configs_else_the_default(
    options_file: str | None, configured: str | None, expected: str
) -> None:
    """known_hosts comes from the options, else the first UserKnownHostsFile of the
    ssh_config, else ``~/.ssh/known_hosts``, with ``~`` expanded."""
    conn = Connection("gpu1")
    if configured is not None:
        conn.ssh_config = {"userknownhostsfile": configured}
    transport = SSHTransport("gpu1", options=SSHOptions(known_hosts=options_file))
    assert transport._known_hosts(conn) == Path(os.path.expanduser(expected))


# -- one command -----------------------------------------------------------------------


def test_the_argv_is_joined_once_and_sent_as_bytes() -> None:
    """The argv becomes one shell-quoted command, sent as bytes; an argument that is not
    UTF-8 (surrogate escapes) goes out as its own bytes. The session is opened with the
    channel timeout."""
    conn = Connection("gpu1")
    channel = Channel([FINISHED])
    _connected(conn, channel).run(["cat", "/ws/a b", "caf\udce9", "$HOME"])
    assert channel.command == b"cat '/ws/a b' 'caf\xe9' '$HOME'"
    assert conn.session_timeout == 10.0
    assert channel.events[-1] == "close"


def test_stdin_is_fed_in_pieces_then_closed() -> None:
    """Stdin is sent as the channel takes it (64 KiB at most at once), and the write
    side is shut once the last byte is out, so the command sees EOF."""
    stdin = bytes(range(256)) * 600  # 153,600 bytes
    channel = Channel([Tick(), FINISHED], window=40_000)
    result = _connected(Connection("gpu1"), channel).run(["python3", "-"], stdin=stdin)
    assert bytes(channel.sent) == stdin
    assert channel.events == [
        "send 40000",
        "send 40000",
        "send 40000",
        "send 33600",
        "shutdown_write",
        "close",
    ]
    assert result.stdin_digest == hashlib.sha256(stdin).hexdigest()


@pytest.mark.parametrize("stdin", [None, b""], ids=["no-stdin", "empty-stdin"])
def test_without_stdin_the_write_side_is_shut_at_once(stdin: bytes | None) -> None:
    """With nothing to send the command gets EOF on stdin before anything else."""
    channel = Channel([FINISHED])
    result = _connected(Connection("gpu1"), channel).run(["true"], stdin=stdin)
    assert channel.events == ["shutdown_write", "close"]
    assert result.stdin_digest == ("" if stdin is None else hashlib.sha256(b"").hexdigest())


def test_output_queued_behind_the_exit_status_is_read_to_eof() -> None:
    """sshd may report the exit status while output is still on its way: the command
    ends only at exit status *and* EOF with nothing left to read, so every byte of
    stdout and stderr comes back."""
    channel = Channel(
        [
            Tick(stdout=b"first part ", exit_ready=True),
            Tick(stdout=b"second part", stderr=b"warning\n", exit_ready=True),
            Tick(exit_ready=True, eof=True),
        ],
        rc=3,
    )
    result = _connected(Connection("gpu1"), channel).run(["job"])
    assert result == CommandResult(
        ("job",), 3, b"first part second part", b"warning\n", result.duration, "ssh://gpu1", ""
    )


def test_a_connection_that_dies_mid_command_is_lost_not_an_exit_status() -> None:
    """A status without EOF on a closed channel is the connection dying (paramiko marks
    it -1): ConnectionLost, and the connection is dropped for the next command."""
    conn = Connection("gpu1")
    channel = Channel([Tick(stdout=b"partial"), Tick(exit_ready=True, closed=True)], rc=-1)
    transport = _connected(conn, channel)
    with pytest.raises(ConnectionLost) as caught:
        transport.run(["job"])
    assert str(caught.value) == (
        "ssh://gpu1: connection closed while the command ran (no exit status received)"
    )
    assert conn.closed and channel.events[-1] == "close"


def test_a_signal_death_after_eof_is_an_exit_status_of_minus_one() -> None:
    """Exit status -1 *with* EOF is a command killed by a signal: data, not a failure."""
    channel = Channel([Tick(exit_ready=True, eof=True)], rc=-1)
    assert _connected(Connection("gpu1"), channel).run(["job"]).rc == -1


def test_no_exit_status_within_the_timeout_is_a_command_timeout() -> None:
    """A command with no exit status by its time limit raises CommandTimeout naming the
    limit; the channel is closed."""
    channel = Channel([Tick()])
    with pytest.raises(CommandTimeout) as caught:
        _connected(Connection("gpu1"), channel).run(["sleep", "99"], timeout=0.0)
    assert str(caught.value) == "ssh://gpu1: no exit status after 0s"
    assert channel.events[-1] == "close"


def test_a_channel_that_cannot_be_opened_drops_the_connection() -> None:
    """Failing to open the channel or start the command is ConnectionLost with the
    library's reason in one line, and the connection is dropped."""
    conn = Connection("gpu1")
    transport = _connected(conn, Channel([FINISHED]))

    def refuse(timeout: float) -> Channel:
        raise paramiko.SSHException("Channel\n  closed.")

    conn.client.get_transport = lambda: SimpleNamespace(open_session=refuse)
    with pytest.raises(ConnectionLost) as caught:
        transport.run(["true"])
    assert str(caught.value) == "ssh://gpu1: could not start command: Channel closed."
    assert conn.closed


class LateStatusChannel(Channel):
    """A channel whose exit status, EOF and close all land between the pump's status
    check and its close check (paramiko's reader thread delivers them together)."""

    def __init__(self) -> None:
        super().__init__([Tick(stdout=b"done\n", exit_ready=True, eof=True, closed=True)], rc=0)
        self.looked = 0

    def exit_status_ready(self) -> bool:
        self.looked += 1
        return self.looked > 1


def test_a_status_that_arrives_with_the_close_is_the_commands_exit() -> None:
    """A quick command whose status, EOF and close came in at once, just after the pump
    looked for the status, ended with its status: the close does not make it a lost
    connection (a clean-clone run lost a py-spy upload over the real sshd to this)."""
    channel = LateStatusChannel()
    result = _connected(Connection("gpu1"), channel).run(["true"])
    assert (result.rc, result.stdout) == (0, b"done\n")
