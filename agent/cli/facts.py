"""``dflash-doctor facts``: sweep the target's facts in one round trip and list them."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agent.cli.options import Config, Interpreter, Json, Target, Workspace, reaches_targets
from agent.cli.sessions import open_session, say_settings
from tools.errors import UsageError
from tools.transport.ssh_options import SSHOptions


@reaches_targets
def facts(
    target: Target = None,
    workspace: Workspace = None,
    interpreter: Interpreter = None,
    config: Config = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--only", help="Comma-separated probes (default: all but torch_runtime, on demand)."
        ),
    ] = None,
    as_json: Json = False,
    *,
    ssh: SSHOptions,
) -> None:
    from rich.console import Console
    from rich.table import Table

    from agent.graph.gather import SweepGatherer
    from agent.report.summaries import fact_summary
    from agent.sessions.targets import resolve_target

    resolved = resolve_target(target, workspace=workspace, interpreter=interpreter, config=config)
    probes = probe_list(only)
    say_settings(resolved)
    session = open_session("facts", resolved.uri, ssh)
    gatherer = SweepGatherer(session.target(str(resolved.uri)), resolved.spec, session.ledger)
    try:
        if as_json:
            gathered = gatherer(probes)
        else:
            count = len(probes) if probes else "all"
            with Console(stderr=True).status(
                f"sweeping {count} probes on {resolved.uri} (one round trip)…"
            ):
                gathered = gatherer(probes)
    finally:
        session.close()
    if as_json:
        document = {
            "session": session.id,
            "target": str(resolved.uri),
            "settings": resolved.settings,
            "facts": [f.model_dump(mode="json") for f in gathered],
            "skipped": gatherer.skipped,
        }
        typer.echo(json.dumps(document, indent=1))
        return
    table = Table(title=f"facts on {resolved.uri} (session {session.id})")
    for column in ("id", "probe", "summary"):
        table.add_column(column, overflow="fold")
    for fact in gathered:
        style = "" if fact.ok else "red"
        table.add_row(fact.id, fact.probe, fact_summary(fact), style=style)
    console = Console()
    console.print(table)
    for probe, why in sorted(gatherer.skipped.items()):
        # Nothing to look at: where it looked, and where else there may be something.
        console.print(f"not looked at: {probe}: {why}", style="dim", markup=False)
    console.print(f"ledger: {session.ledger.path}", style="dim")


def probe_list(only: str | None) -> frozenset[str] | None:
    """``--only``'s probes, each one the sweep knows."""
    if not only:
        return None
    from tools.probes import PROBES

    names = frozenset(p.strip() for p in only.split(",") if p.strip())
    unknown = sorted(names - set(PROBES))
    if unknown:
        raise UsageError(
            f"unknown probe(s) {', '.join(unknown)} in --only (known: {', '.join(PROBES)})"
        )
    return names
