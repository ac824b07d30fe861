"""``dflash-doctor init``: write a commented doctor.toml template."""

from __future__ import annotations

from typing import Annotated

import typer


def init(
    path: Annotated[str, typer.Argument(help="Where to write it.")] = "doctor.toml",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    from tools.profile import write_template

    written = write_template(path, force=force)
    typer.echo(f"wrote {written}")
