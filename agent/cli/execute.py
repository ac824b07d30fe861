"""``dflash-doctor exec``: one command through the target chain, as if run there."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated

import typer

from agent.cli.options import TargetURI, reaches_targets, seconds
from agent.cli.sessions import open_session
from tools.log import configure
from tools.transport.ssh_options import SSHOptions


@reaches_targets
def exec_(
    ctx: typer.Context,
    command: Annotated[list[str], typer.Argument(help="The command and its arguments, after --.")],
    target: TargetURI = "local",
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds before the command is killed.", callback=seconds),
    ] = None,
    *,
    ssh: SSHOptions,
) -> None:
    from tools.transport.uri import parse_target

    root = ctx.parent.params if ctx.parent else {}
    if not (root.get("verbose") or root.get("log_json")):
        # The command's stderr is its own: an info line of ours after it would change
        # what a script sees. Warnings (a retried connection) still show.
        configure(json=False, level="warning")
    uri = parse_target(target)  # bad URIs fail here, before a session is created
    if timeout is not None:
        # --timeout bounds reaching the host as well: a port that never sends a banner
        # must not hold the command for every retry's connect timeout.
        ssh = dataclasses.replace(ssh, connect_deadline=timeout)
    session = open_session("exec", uri, ssh)
    try:
        # exec prints the command's own bytes; only the transcript is redacted.
        result = session.target(str(uri), redact_results=False).run(command, timeout=timeout)
    finally:
        session.close()
    sys.stdout.buffer.write(result.stdout)
    sys.stdout.buffer.flush()
    sys.stderr.buffer.write(result.stderr)
    sys.stderr.buffer.flush()
    # ssh reports "killed by a signal, status unknown" as -1; 255 is what ssh(1) exits with.
    raise typer.Exit(result.rc if 0 <= result.rc <= 255 else 255)
