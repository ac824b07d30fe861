"""Option checks shared by the command-line modules (``agent.cli``, ``agent.health_cli``):
a bad value is a usage error (exit 2, one line), never a traceback deep in a transport."""

from __future__ import annotations

from collections.abc import Callable

import typer

from tools.transport.base import check_timeout


def seconds(value: float | None) -> float | None:
    """A time limit option: finite, positive, at most a week (``check_timeout``)."""
    if value is None:
        return None
    try:
        return check_timeout(value, "the time limit")
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def one_of(*allowed: str) -> Callable[[str], str]:
    """A ``--format``-style option's check: one of ``allowed``, else a usage error."""

    def check(value: str) -> str:
        if value not in allowed:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    return check
