"""``dflash-doctor resume``: continue a session after a crash, or answer its approval."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agent.cli.options import Full, MdOrJson
from tools.log import bind_contextvars, keep_off_prompts


def resume(
    session_id: Annotated[str, typer.Argument(help="The session id (see its state directory).")],
    approve: Annotated[
        bool | None, typer.Option("--approve/--decline", help="Answer the pending approval.")
    ] = None,
    fmt: MdOrJson = "md",
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    full: Full = False,
) -> None:
    from agent.cli.drive import drive
    from agent.sessions.session import Session

    if sys.stdin.isatty():
        keep_off_prompts()
    session = Session.reopen(session_id)
    bind_contextvars(session=session.id)
    drive(session, None, "json" if as_json else fmt, sys.stdin.isatty(), answer=approve, full=full)
