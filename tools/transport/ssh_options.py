"""How to reach SSH hosts, as plain data: the command line builds it for every command that
reaches a target, so it lives apart from the transport (which imports paramiko and fabric,
a quarter of a second that ``--help`` and a local ``exec`` should not pay)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SSHOptions:
    """How to reach SSH hosts. Defaults follow OpenSSH, except that an unknown host key
    is refused unless ``accept_new_host_key`` is set (OpenSSH would ask a human)."""

    connect_timeout: float = 10.0
    banner_timeout: float = 10.0
    auth_timeout: float = 10.0
    channel_timeout: float = 10.0
    keepalive: int = 15
    retries: int = 3
    backoff_initial: float = 0.5
    backoff_max: float = 8.0
    accept_new_host_key: bool = False
    known_hosts: str | None = None
    identity_file: str | None = None
    ssh_config: str | None = None  # None: ~/.ssh/config as fabric loads it
    # All connecting, every attempt and its waits, within this many seconds (a command's
    # --timeout bounds reaching the host too, not only the command).
    connect_deadline: float | None = None
