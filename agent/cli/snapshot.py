"""``dflash-doctor snapshot``: store the target's facts now as a named known good state."""

from __future__ import annotations

from typing import Annotated

import typer

from agent.cli.options import Config, Interpreter, Target, Workspace, reaches_targets
from agent.cli.sessions import open_session, say_settings
from tools.transport.ssh_options import SSHOptions


@reaches_targets
def snapshot(
    name: Annotated[str, typer.Option("--name", "-n", help="Name of the baseline.")],
    target: Target = None,
    workspace: Workspace = None,
    interpreter: Interpreter = None,
    config: Config = None,
    *,
    ssh: SSHOptions,
) -> None:
    from agent.analysis.baseline import baseline_store
    from agent.graph.gather import SweepGatherer
    from agent.sessions.targets import resolve_target

    resolved = resolve_target(target, workspace=workspace, interpreter=interpreter, config=config)
    store = baseline_store()
    store.path(name)  # a bad name fails before anything runs
    say_settings(resolved)
    session = open_session("snapshot", resolved.uri, ssh)
    try:
        gathered = SweepGatherer(session.target(str(resolved.uri)), resolved.spec, session.ledger)(
            None
        )
    finally:
        session.close()
    path = store.save(name, str(resolved.uri), gathered)
    failed = [f.probe for f in gathered if not f.ok]
    typer.echo(f"baseline {name!r}: {len(gathered)} facts from {resolved.uri} -> {path}")
    if failed:
        typer.echo(f"  (could not observe: {', '.join(failed)})")
