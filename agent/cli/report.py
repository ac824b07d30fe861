"""``dflash-doctor report``: render a recorded session as Markdown, HTML or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.options import Full, MdHtmlOrJson, RequireSignature
from tools.localfile import may_write, write_file
from tools.text import model_json


def report(
    path: Annotated[Path, typer.Argument(help="A transcript (.jsonl).")],
    fmt: MdHtmlOrJson = "md",
    full: Full = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here, not stdout.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")] = False,
    require_signature: RequireSignature = False,
) -> None:
    from agent.report.build import build_report
    from agent.report.html import render_html
    from agent.report.markdown import render_markdown
    from agent.sessions.recorded import load_recorded

    if out is not None:
        may_write(out, force=force, what="the report")
    recorded = load_recorded(path, require_signature=require_signature)
    built = build_report(recorded.state, recorded.ledger, str(recorded.header.get("session")))
    built = built.model_copy(update={"transcript": recorded.seal.sentence})
    if not recorded.seal.checked:
        # Whoever holds another key could have written every line of it: said where the
        # reader looks, and in the document itself.
        typer.echo(
            f"dflash-doctor: warning: {path}: {recorded.seal.sentence}; shown as recorded"
            " (--require-signature refuses it)",
            err=True,
        )
    if fmt == "json":
        text = model_json(built, indent=1)
    elif fmt == "html":
        text = render_html(built, recorded.state, recorded.ledger)
    else:
        text = render_markdown(built, full=full)
    if out is None:
        typer.echo(text)
    else:
        write_file(out, text, force=force, what="the report")
        typer.echo(f"wrote {out}", err=True)
