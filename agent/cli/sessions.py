"""What the commands that reach a target share: the session they record into and the line
that says which settings apply."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from tools.log import bind_contextvars

if TYPE_CHECKING:
    from agent.sessions.session import Session
    from agent.sessions.targets import Resolved
    from tools.transport.ssh_options import SSHOptions
    from tools.transport.uri import TargetURI


def open_session(command: str, uri: TargetURI, ssh: SSHOptions) -> Session:
    """A recorded session for one command on ``uri``, its host name redacted."""
    from agent.sessions.session import Session

    session = Session(
        ssh=ssh,
        header={"command": command, "target": str(uri)},
        redact_hosts=[uri.host] if uri.host else [],
    )
    bind_contextvars(session=session.id)
    return session


def say_settings(resolved: Resolved) -> None:
    """Which profile (or none) the command runs with: a --config never applies silently."""
    typer.echo(f"settings: {resolved.settings}", err=True)
