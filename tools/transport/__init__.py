"""Transports: how a command reaches a target. See ``open_target``.

Each name loads with its module on first use (PEP 562): the SSH transport (paramiko,
fabric) when an ``ssh://`` target is opened, so that a local target never pays for it,
and nothing at all for ``--help``, which needs only ``ssh_options``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.transport.base import CommandResult, Transport, digest
    from tools.transport.hops import Hop
    from tools.transport.local import LocalTransport
    from tools.transport.ssh import SSHTransport
    from tools.transport.ssh_options import SSHOptions
    from tools.transport.target import Target
    from tools.transport.uri import TargetURI, parse_target

_HOMES = {
    "CommandResult": "base",
    "Transport": "base",
    "digest": "base",
    "Hop": "hops",
    "LocalTransport": "local",
    "SSHTransport": "ssh",
    "SSHOptions": "ssh_options",
    "Target": "target",
    "TargetURI": "uri",
    "parse_target": "uri",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def open_target(
    uri: str | TargetURI,
    *,
    ssh: SSHOptions | None = None,
    pool: dict[str, Transport] | None = None,
) -> Target:
    """Build the Target a URI names. Nothing connects until the first command runs.
    Targets that share a host share its connection through ``pool``."""
    from tools.transport.local import LocalTransport
    from tools.transport.target import Target
    from tools.transport.uri import parse_target

    parsed = parse_target(uri) if isinstance(uri, str) else uri
    pool = {} if pool is None else pool
    transport = pool.get(parsed.base)
    if transport is None:
        if parsed.scheme == "local":
            transport = LocalTransport()
        else:
            from tools.transport.ssh import SSHTransport

            assert parsed.host is not None  # parse_target guarantees a host for ssh
            transport = SSHTransport(parsed.host, user=parsed.user, port=parsed.port, options=ssh)
        pool[parsed.base] = transport
    return Target(transport, parsed.hops, uri=str(parsed))
