"""``dflash-doctor replay``: re-run a recorded session with no machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.options import Json, RequireSignature


def replay(
    path: Annotated[Path, typer.Argument(help="A transcript (.jsonl).")],
    as_json: Json = False,
    require_signature: RequireSignature = False,
) -> None:
    from agent.sessions.replay import replay as replay_transcript

    result = replay_transcript(path, require_signature=require_signature)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "transcript": str(path),
                    "same": result.same,
                    "verdict": result.state.verdict,
                    "hypotheses": [
                        {"kind": h.kind, "status": h.status} for h in result.state.hypotheses
                    ],
                    "differences": result.differences,
                    "seal": result.seal.as_json(),
                },
                indent=1,
            )
        )
    elif result.same:
        typer.echo(f"{path}: same facts, same verdicts ({result.state.verdict})")
        typer.echo(f"{path}: {result.seal.sentence}")
    else:
        typer.echo(f"{path}: {result.seal.sentence}")
        typer.echo(f"{path}: verdicts changed since recording:")
        typer.echo("\n".join(result.differences))
    raise typer.Exit(0 if result.same else 1)
