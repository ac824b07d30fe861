"""The typer application: the root options and every command, each from its own module.

Command modules import typer and the shared options only; what a command needs (the
graph, the transports, the reports) is imported when it runs, so that ``--help`` and a
local ``exec`` do not load langgraph, paramiko or pydantic models they never use.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agent._version import __version__
from agent.cli import (
    demo,
    diagnose,
    execute,
    facts,
    health,
    init,
    replay,
    report,
    resume,
    snapshot,
)
from tools.log import configure

app = typer.Typer(
    name="dflash-doctor",
    help="Evidence-first debugging for DFlash drafter training: facts first, then claims.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help texts are plain text: "ssh://user@host[:port][/HOP…]" read as Rich markup was
    # a closing tag with no opening one, and `exec --help` died of it.
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dflash-doctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    log_json: Annotated[
        bool, typer.Option("--log-json", help="Log JSON lines to stderr (for unattended runs).")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Log warnings and errors only.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug events too.")] = False,
) -> None:
    configure(json=log_json, level="warning" if quiet else "debug" if verbose else "info")


# In the order `--help` lists them.
app.command("exec", help=execute.HELP, context_settings={"allow_interspersed_args": False})(
    execute.exec_
)
app.command(help=facts.HELP)(facts.facts)
app.command(help=snapshot.HELP)(snapshot.snapshot)
app.command(help=diagnose.HELP)(diagnose.diagnose)
app.command(help=resume.HELP)(resume.resume)
app.command(help=replay.HELP)(replay.replay)
app.command(help=report.HELP)(report.report)
app.command(help=demo.HELP)(demo.demo)
app.command(help=init.HELP)(init.init)
app.command("health", help=health.HELP)(health.health)
