"""Transports: how a command reaches a target. See ``open_target``."""

from __future__ import annotations

from tools.transport.base import CommandResult, Transport, digest
from tools.transport.hops import Hop
from tools.transport.local import LocalTransport
from tools.transport.ssh import SSHOptions, SSHTransport
from tools.transport.target import Target
from tools.transport.uri import TargetURI, parse_target

__all__ = [
    "CommandResult",
    "Hop",
    "LocalTransport",
    "SSHOptions",
    "SSHTransport",
    "Target",
    "TargetURI",
    "Transport",
    "digest",
    "open_target",
    "parse_target",
]


def open_target(
    uri: str | TargetURI,
    *,
    ssh: SSHOptions | None = None,
    pool: dict[str, Transport] | None = None,
) -> Target:
    """Build the Target a URI names. Nothing connects until the first command runs.
    Targets that share a host share its connection through ``pool``."""
    parsed = parse_target(uri) if isinstance(uri, str) else uri
    pool = {} if pool is None else pool
    transport = pool.get(parsed.base)
    if transport is None:
        if parsed.scheme == "local":
            transport = LocalTransport()
        else:
            assert parsed.host is not None  # parse_target guarantees a host for ssh
            transport = SSHTransport(parsed.host, user=parsed.user, port=parsed.port, options=ssh)
        pool[parsed.base] = transport
    return Target(transport, parsed.hops, uri=str(parsed))
