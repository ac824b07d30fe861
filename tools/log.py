"""Logging for every module: structlog events, with structlog loaded only when an event is
actually written.

Importing structlog costs about 0.2 s on this project's machines (it imports rich for its
console tracebacks), which is most of what a local ``exec`` or ``--help`` would otherwise
spend before doing anything. So modules log through ``get_logger`` here: the logger checks
the configured level first and imports structlog only for an event that will be written.
The CLI calls ``configure`` once; the configuration is applied to structlog when it loads.

Until ``configure`` is called (library use, tests), every event goes to structlog as
configured elsewhere, exactly as ``structlog.get_logger`` would.
"""

from __future__ import annotations

import contextvars
import sys
from typing import Any

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}

# None: not configured here; structlog decides (its own defaults or a test's capture).
_settings: dict[str, Any] | None = None
_applied = False
# The process's bound context (a session id): our own context variable, merged into each
# event, so binding it does not import structlog either.
_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "dflash_doctor_log_context", default=None
)


def configure(*, json: bool = False, level: str = "info") -> None:
    """Where events go and from which level: JSON lines or a console renderer, on stderr
    (stdout belongs to command output and ``--json`` documents)."""
    global _settings, _applied
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r} (one of {', '.join(LEVELS)})")
    _settings = {"json": json, "level": level}
    # paramiko logs its own tracebacks (a banner timeout, a reset) through the root
    # logger's last-resort handler; we map those failures to one-line errors already, so
    # its log would only be noise in a cron mail.
    import logging

    paramiko_log = logging.getLogger("paramiko")
    paramiko_log.addHandler(logging.NullHandler())
    paramiko_log.propagate = False
    _applied = False
    if "structlog" in sys.modules:
        _apply()  # already loaded (a second configure, a test): apply now


def keep_off_prompts() -> None:
    """A menu at a terminal is not interleaved with progress events: the default level
    (``info``, no ``-v``) becomes ``warning``; ``-v`` and ``--log-json`` keep theirs."""
    if _settings is not None and not _settings["json"] and _settings["level"] == "info":
        configure(json=False, level="warning")


def reset() -> None:
    """Forget ``configure`` (and the bound context): events go to structlog as it stands,
    as before any configuration. For tests that run the CLI in-process."""
    global _settings, _applied
    _settings = None
    _applied = False
    _context.set(None)


def bind_contextvars(**values: Any) -> None:
    """Bind ``values`` to every later event of this context (thread, task)."""
    _context.set({**(_context.get() or {}), **values})


def _enabled(level: int) -> bool:
    return _settings is None or level >= LEVELS[_settings["level"]]


def _apply() -> None:
    global _applied

    import structlog

    _applied = True
    if _settings is None:
        return
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
    ]
    if _settings["json"]:
        processors.append(structlog.processors.JSONRenderer())
    else:
        processors.append(structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[_settings["level"]]),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )


class Logger:
    """The subset of structlog's bound logger this project uses: ``bind`` and one method
    per level. An event below the configured level costs a dictionary lookup."""

    __slots__ = ("_bound", "_name")

    def __init__(self, name: str, bound: dict[str, Any] | None = None) -> None:
        self._name = name
        self._bound = bound or {}

    def bind(self, **values: Any) -> Logger:
        return Logger(self._name, {**self._bound, **values})

    def _emit(self, method: str, level: int, event: str, values: dict[str, Any]) -> None:
        if not _enabled(level):
            return
        if not _applied:
            _apply()
        import structlog

        logger = structlog.get_logger(self._name)
        getattr(logger, method)(event, **{**(_context.get() or {}), **self._bound, **values})

    def debug(self, event: str, **values: Any) -> None:
        self._emit("debug", 10, event, values)

    def info(self, event: str, **values: Any) -> None:
        self._emit("info", 20, event, values)

    def warning(self, event: str, **values: Any) -> None:
        self._emit("warning", 30, event, values)

    def error(self, event: str, **values: Any) -> None:
        self._emit("error", 40, event, values)

    def exception(self, event: str, **values: Any) -> None:
        self._emit("exception", 40, event, values)


def get_logger(name: str) -> Logger:
    return Logger(name)
