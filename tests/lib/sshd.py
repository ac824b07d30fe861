"""A real OpenSSH server on 127.0.0.1 for the SSH tests (a pytest plugin; see conftest).

Each server gets its own generated host key, client key, authorized_keys, known_hosts and
ssh_config in a temporary directory, listens on a free port, and is stopped afterwards.
The user is whoever runs the tests. A stand-in ``pct`` (not Proxmox: a 20-line script that
checks the container id and runs what follows ``--``) is put first on the session PATH, so
the chain local -> ssh -> pct is exercised for real up to the container boundary.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools.transport.ssh_options import SSHOptions

STANDIN_PCT = """#!/bin/sh
# STAND-IN for Proxmox's `pct`, for tests only: `pct exec CTID -- CMD [ARGS...]` checks the
# container id against $STANDIN_PCT_CTIDS and runs CMD on this host; nothing else works.
if [ "$1" != exec ]; then echo "stand-in pct: only 'exec' is supported" >&2; exit 2; fi
ctid=$2
case " $(echo "$STANDIN_PCT_CTIDS" | tr , ' ') " in
  *" $ctid "*) ;;
  *) echo "stand-in pct: no container $ctid" >&2; exit 2;;
esac
if [ "$3" != "--" ]; then echo "stand-in pct: expected -- after the ctid" >&2; exit 2; fi
shift 3
exec "$@"
"""


def find_sshd() -> str | None:
    for candidate in (shutil.which("sshd"), "/usr/sbin/sshd"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SSHServer:
    root: Path
    sshd: str
    port: int = field(default_factory=free_port)
    user: str = field(default_factory=getpass.getuser)
    ctids: str = "200,201"  # SetEnv splits on spaces, so the stand-in takes commas
    proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}"

    @property
    def identity(self) -> Path:
        return self.root / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def host_key(self) -> Path:
        return self.root / "ssh_host_ed25519_key"

    def prepare(self) -> None:
        bin_dir = self.root / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        pct = bin_dir / "pct"
        pct.write_text(STANDIN_PCT)
        pct.chmod(0o755)
        keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", ""]
        subprocess.run([*keygen, "-f", str(self.identity)], check=True)
        (self.root / "authorized_keys").write_text(Path(f"{self.identity}.pub").read_text())
        self.new_host_key()
        # sshd's compiled-in PATH would hide the stand-in; SetEnv puts it first.
        path = f"{bin_dir}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        (self.root / "sshd_config").write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"PidFile {self.root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "UsePAM no",
                    "StrictModes no",
                    f"SetEnv PATH={path} STANDIN_PCT_CTIDS={self.ctids}",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        self.write_known_hosts()

    def new_host_key(self) -> None:
        for path in (self.host_key, Path(f"{self.host_key}.pub")):
            path.unlink(missing_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.host_key)], check=True
        )

    def write_known_hosts(self) -> None:
        key = Path(f"{self.host_key}.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {key[0]} {key[1]}\n")

    def ssh_config(self) -> Path:
        """An ssh_config with an alias, to show ~/.ssh/config-style resolution works."""
        path = self.root / "ssh_config"
        path.write_text(
            f"Host trainer-alias\n  HostName 127.0.0.1\n  Port {self.port}\n  User {self.user}\n"
            f"  IdentityFile {self.identity}\n  UserKnownHostsFile {self.known_hosts}\n"
        )
        return path

    def start(self) -> None:
        if os.geteuid() == 0:
            # sshd refuses to start as root without its privilege-separation directory.
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        with (self.root / "sshd.log").open("ab") as log_file:
            self.proc = subprocess.Popen(
                [self.sshd, "-D", "-e", "-f", str(self.root / "sshd_config")],
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = (self.root / "sshd.log").read_text(errors="replace")
                raise RuntimeError(f"sshd exited with {self.proc.returncode}: {log.strip()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 10 s")

    def stop(self) -> None:
        """Stop the listener and every session it spawned (all in its process group)."""
        if self.proc is None:
            return
        self.kill_sessions()
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def kill_sessions(self) -> int:
        """SIGKILL the per-connection sshd processes (children of our listener): what a
        dropped connection looks like from the client. Returns how many were killed."""
        if self.proc is None:
            return 0
        killed = 0
        for pid in _children(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        return killed


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: split after it.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent:
            found.append(int(entry.name))
    return found


@pytest.fixture
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    from tests.lib.need import need

    binary = find_sshd()
    need(binary is not None, "sshd", "install openssh-server (make test does so as root)")
    need(shutil.which("ssh-keygen") is not None, "ssh-keygen", "install openssh-client")
    assert binary is not None
    server = SSHServer(tmp_path_factory.mktemp("sshd"), binary)
    server.prepare()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def options(server: SSHServer, **overrides: object) -> SSHOptions:
    settings: dict[str, object] = {
        "identity_file": str(server.identity),
        "known_hosts": str(server.known_hosts),
        "connect_timeout": 3,
        "retries": 0,
    }
    settings.update(overrides)
    return SSHOptions(**settings)  # type: ignore[arg-type]
