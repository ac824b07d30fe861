"""Run commands on a remote host over SSH, through fabric's ``Connection``.

Fabric gives us ``~/.ssh/config`` resolution (aliases, User, Port, IdentityFile,
ConnectTimeout, ProxyJump) and the connection lifecycle. We drive the command itself on
the underlying paramiko channel rather than through ``Connection.run``, because invoke
decodes streams as text: probes and payloads must come back byte-exact, and stdin must be
closed (EOF) once sent, whatever it contains.

Every paramiko / socket exception is mapped here, once, onto ``tools.errors``. Only
``ConnectError`` is retried (with exponential backoff and jitter): an auth failure or a
bad host key will not get better by asking again, and a non-zero exit is not a failure.
"""

from __future__ import annotations

import os
import select
import shlex
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import paramiko
from fabric import Config, Connection
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from tools.errors import (
    AuthenticationError,
    CommandTimeout,
    ConnectError,
    ConnectionLost,
    HostKeyError,
    TransportError,
    UsageError,
)
from tools.localfile import read_regular, read_state
from tools.log import get_logger
from tools.transport.base import CommandResult, digest
from tools.transport.known_hosts import load as load_known_hosts
from tools.transport.ssh_options import SSHOptions

log = get_logger(__name__)

_CHUNK = 1 << 16


def _config(path: str | None) -> Config:
    """Fabric's config with ``path`` as the ssh_config; one line when it cannot be used."""
    if not path:
        return Config()
    if path == os.devnull:  # ssh -F /dev/null: no config at all
        return Config(runtime_ssh_path=path)
    read_state(Path(path), "the ssh config", 16 << 20)  # a FIFO, /dev/zero, odd bytes
    try:
        return Config(runtime_ssh_path=path)
    except (ValueError, paramiko.SSHException) as exc:
        raise UsageError(f"{path}: not a usable ssh config: {exc}") from None


IDENTITY_MAX = 1 << 20  # bytes of a private key file read: a 16 kbit RSA key is ~13 KB


def _identity(path: str) -> str:
    """``path`` when it holds a private key in a form paramiko reads (PEM or OpenSSH);
    UsageError in one line for a FIFO, a device, an oversized or binary file."""
    try:
        data = read_regular(Path(path), IDENTITY_MAX)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the identity file: {exc.strerror}") from None
    if b"-----BEGIN " not in data or b"PRIVATE KEY-----" not in data:
        raise UsageError(
            f"{path}: not a private key file (no '-----BEGIN ... PRIVATE KEY-----' block)"
        )
    return path


def _host_settings(config: Config, host: str, path: str | None) -> None:
    """UsageError in one line for a Port or HostName ssh_config gives ``host`` that no
    connection can use (paramiko would raise ValueError or UnicodeError mid-connect)."""
    found = config.base_ssh_config.lookup(host)
    where = f"{path or 'the ssh config'}: Host {host}"
    port = str(found.get("port", "22"))
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise UsageError(f"{where}: Port {port[:40]!r} is not a port number (1-65535)")
    name = str(found.get("hostname", host))
    try:
        labels = name.encode("idna").split(b".")
    except UnicodeError:
        labels = [b"x" * 64]
    if len(name) > 253 or any(len(label) > 63 for label in labels):
        raise UsageError(
            f"{where}: HostName {name[:40]!r}{'...' if len(name) > 40 else ''} is not a"
            f" host name ({len(name):,} characters; DNS allows 253, 63 a label)"
        )


class _RefuseUnknownKey(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        raise HostKeyError(
            f"unknown host key ({key.get_name()} {key.fingerprint}); refusing to connect. "
            "Check the fingerprint, then add it to known_hosts or pass --accept-new-host-key"
        )


class _AcceptNewKey(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
    """OpenSSH's StrictHostKeyChecking=accept-new: remember unknown keys, refuse changed ones
    (paramiko raises BadHostKeyException for a changed key before any policy is asked)."""

    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self.known_hosts.open("a") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        log.warning("host_key_accepted", host=hostname, fingerprint=key.fingerprint)


class SSHTransport:
    """One reused SSH connection to one host; commands run on fresh channels."""

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int | None = None,
        options: SSHOptions | None = None,
    ) -> None:
        self.options = options or SSHOptions()
        user_part = f"{user}@" if user else ""
        port_part = f":{port}" if port is not None else ""
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address, as a URI writes it
        self.name = f"ssh://{user_part}{shown}{port_part}"
        self._host, self._user, self._port = host, user, port
        self._conn: Connection | None = None

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        argv = tuple(argv)
        conn = self._connected()
        started = time.monotonic()
        # The single place where argv becomes a string: the remote shell parses it back.
        command = shlex.join(argv)
        try:
            channel = conn.client.get_transport().open_session(timeout=self.options.channel_timeout)
            # Bytes, as ssh(1) sends them: an argument that is not UTF-8 (os.fsdecode's
            # surrogates) goes out as the bytes it was given.
            channel.exec_command(command.encode("utf-8", "surrogateescape"))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._drop()
            raise ConnectionLost(f"could not start command: {_why(exc)}", target=self.name) from exc
        try:
            out, err, rc = self._pump(channel, stdin, timeout, started)
        finally:
            channel.close()
        return CommandResult(
            argv, rc, out, err, time.monotonic() - started, self.name, digest(stdin)
        )

    def close(self) -> None:
        self._drop()

    # -- connection -----------------------------------------------------------------

    def _connected(self) -> Connection:
        if self._conn is not None and self._conn.is_connected:
            return self._conn
        self._drop()
        deadline = self.options.connect_deadline
        stop = stop_after_attempt(self.options.retries + 1)
        retrying = Retrying(
            stop=stop if deadline is None else stop | stop_after_delay(deadline),
            wait=wait_exponential_jitter(
                multiplier=self.options.backoff_initial, max=self.options.backoff_max
            ),
            retry=retry_if_exception_type(ConnectError),
            before_sleep=self._log_retry,
            reraise=True,
        )
        self._conn = retrying(self._connect_once)
        return self._conn

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "ssh_connect_retry",
            target=self.name,
            attempt=state.attempt_number,
            error=str(exc),
            sleep=round(state.next_action.sleep, 3) if state.next_action else None,
        )

    def _connect_once(self) -> Connection:
        opts = self.options
        config = _config(opts.ssh_config)
        _host_settings(config, self._host, opts.ssh_config)
        cap = opts.connect_deadline if opts.connect_deadline is not None else float("inf")
        connect_kwargs: dict[str, Any] = {
            "banner_timeout": min(opts.banner_timeout, cap),
            "auth_timeout": min(opts.auth_timeout, cap),
            "channel_timeout": min(opts.channel_timeout, cap),
        }
        if opts.identity_file:
            connect_kwargs["key_filename"] = [_identity(opts.identity_file)]
            connect_kwargs["look_for_keys"] = False
            connect_kwargs["allow_agent"] = False
        conn = Connection(
            self._host,
            user=self._user,
            port=self._port,
            config=config,
            connect_timeout=max(1, round(min(opts.connect_timeout, cap))),
            connect_kwargs=connect_kwargs,
        )
        known_hosts = self._known_hosts(conn)
        # Fabric trusts every host key (AutoAddPolicy) and loads no known_hosts at all:
        # replace both, so a changed key is refused and an unknown one only on request.
        known = load_known_hosts(known_hosts)
        for number, why in known.skipped:
            log.warning("known_hosts_line_skipped", file=str(known_hosts), line=number, why=why)
        for name, keys in known.keys.items():
            for keytype, key in keys.items():
                conn.client.get_host_keys().add(name, keytype, key)
        conn.client.set_missing_host_key_policy(
            _AcceptNewKey(known_hosts) if opts.accept_new_host_key else _RefuseUnknownKey()
        )
        try:
            conn.open()
        except HostKeyError as exc:
            raise HostKeyError(str(exc), target=self.name) from None
        except paramiko.BadHostKeyException as exc:
            raise HostKeyError(
                f"host key changed: known_hosts has {exc.expected_key.fingerprint}, "
                f"server offered {exc.key.fingerprint}; refusing to connect "
                f"(possible man-in-the-middle; fix {known_hosts} if the change is expected)",
                target=self.name,
            ) from exc
        except paramiko.AuthenticationException as exc:
            raise AuthenticationError(
                f"authentication failed: {_why(exc)}", target=self.name
            ) from exc
        except socket.gaierror as exc:
            # Not a ConnectError: a name that does not resolve will not resolve on retry.
            raise TransportError(f"cannot resolve host: {exc.strerror}", target=self.name) from exc
        except TimeoutError as exc:
            raise ConnectError(
                f"timed out connecting after {opts.connect_timeout:g}s", target=self.name
            ) from exc
        except paramiko.ssh_exception.NoValidConnectionsError as exc:
            # Its text is "[Errno None] Unable to connect to port …": the target says where.
            raise ConnectError("connection refused", target=self.name) from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectError(f"cannot connect: {_why(exc)}", target=self.name) from exc
        transport = conn.client.get_transport()
        offered = transport.get_remote_server_key() if transport is not None else None
        if offered is not None and offered.get_base64() in known.revoked:
            conn.close()
            raise HostKeyError(
                f"host key {offered.get_fingerprint().hex()} is marked @revoked in "
                f"{known_hosts}; refusing to connect",
                target=self.name,
            )
        if transport is not None and opts.keepalive:
            transport.set_keepalive(opts.keepalive)
        log.debug("ssh_connected", target=self.name)
        return conn

    def _known_hosts(self, conn: Connection) -> Path:
        if self.options.known_hosts:
            return Path(self.options.known_hosts)
        configured = conn.ssh_config.get("userknownhostsfile")
        first = configured.split()[0] if configured else "~/.ssh/known_hosts"
        return Path(os.path.expanduser(first))

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- one command --------------------------------------------------------------

    def _pump(
        self,
        channel: paramiko.Channel,
        stdin: bytes | None,
        timeout: float | None,
        started: float,
    ) -> tuple[bytes, bytes, int]:
        """Feed stdin and drain stdout/stderr at the same time, so neither side can fill
        its window and deadlock the other."""
        out, err = bytearray(), bytearray()
        pending = memoryview(stdin or b"")
        if not pending:
            channel.shutdown_write()
        deadline = None if timeout is None else started + timeout
        transport = channel.get_transport()
        while True:
            moved = False
            while channel.recv_ready():
                out += channel.recv(_CHUNK)
                moved = True
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(_CHUNK)
                moved = True
            if pending and channel.send_ready():
                sent = channel.send(pending[:_CHUNK])
                pending = pending[sent:]
                if not pending:
                    channel.shutdown_write()
                moved = True
            if (
                channel.exit_status_ready()
                and channel.eof_received
                and not (channel.recv_ready() or channel.recv_stderr_ready())
            ):
                # sshd may send exit-status while output is still queued behind a full
                # window; EOF comes only after the last byte, so wait for both.
                rc = channel.recv_exit_status()
                # paramiko also marks the status "ready" (as -1) when the connection dies,
                # but then no EOF came: that case falls through to ConnectionLost below.
                # A -1 after EOF is a command that died of a signal (paramiko ignores
                # exit-signal).
                return bytes(out), bytes(err), rc
            if channel.closed or not transport.is_active():
                if channel.exit_status_ready() and channel.eof_received:
                    # The status, EOF and close arrived together, after the check above
                    # looked (paramiko reads them on its own thread): a command that
                    # ended, read on the next pass, not a connection lost.
                    continue
                self._drop()
                raise ConnectionLost(
                    "connection closed while the command ran (no exit status received)",
                    target=self.name,
                )
            if deadline is not None and time.monotonic() > deadline:
                # Closing our end does not stop a process that ignores SIGHUP; the
                # remote-side `timeout` that Target wraps around the argv does.
                raise CommandTimeout(f"no exit status after {timeout:g}s", target=self.name)
            if not moved:
                select.select([channel], [], [], 0.05)


def _why(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())
