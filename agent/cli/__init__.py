"""The ``dflash-doctor`` command line: ``main`` is the entry point, ``app`` the typer
application (one module per command, the options they share in ``options``).

``app`` is imported on first use, so that ``dflash-doctor --version`` imports nothing but
this package's entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.cli.main import main

if TYPE_CHECKING:
    from agent.cli.application import app

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from agent.cli.application import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
