"""structlog configuration. Called once, by the CLI entry point; library code only binds
context and logs events."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(*, json: bool = False, level: str = "info") -> None:
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    # paramiko logs its own tracebacks (a banner timeout, a reset) through the root
    # logger's last-resort handler; we map those failures to one-line errors already, so
    # its log would only be noise in a cron mail.
    paramiko_log = logging.getLogger("paramiko")
    paramiko_log.addHandler(logging.NullHandler())
    paramiko_log.propagate = False
    renderer: structlog.typing.Processor
    if json:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[*processors, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        # Logs go to stderr: stdout belongs to the command output and --json documents.
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
