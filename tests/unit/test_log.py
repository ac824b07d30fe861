"""tools.log: every module's logger. Events go to structlog, which is touched only for an
event at or above the configured level; ``configure`` chooses JSON lines or a console
renderer on stderr and the level, ``keep_off_prompts`` quietens the default level for a
menu, ``reset`` forgets all of it, and ``bind_contextvars`` adds values to every event.

The suite's conftest puts structlog's defaults and this module's settings back after
each test."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from tools import log


@pytest.fixture
def paramiko_logger(monkeypatch: pytest.MonkeyPatch) -> logging.Logger:
    """paramiko's stdlib logger, its handlers and propagation put back after the test."""
    logger = logging.getLogger("paramiko")
    monkeypatch.setattr(logger, "handlers", list(logger.handlers))
    monkeypatch.setattr(logger, "propagate", logger.propagate)
    return logger


def _json_lines(err: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.splitlines()]


def test_unconfigured_every_level_reaches_structlog_with_its_values() -> None:
    """Before ``configure`` (library use, tests) no level is filtered here: each method
    hands structlog its event, at its own level, with the values given."""
    logger = log.get_logger("tests.log")
    with capture_logs() as logs:
        logger.debug("d", n=1)
        logger.info("i", n=2)
        logger.warning("w", n=3)
        logger.error("e", n=4)
    assert logs == [
        {"event": "d", "n": 1, "log_level": "debug"},
        {"event": "i", "n": 2, "log_level": "info"},
        {"event": "w", "n": 3, "log_level": "warning"},
        {"event": "e", "n": 4, "log_level": "error"},
    ]


def test_the_events_values_win_over_bound_ones_which_win_over_the_context() -> None:
    """An event carries the context's values, the logger's bound values and its own; where
    they name the same key, the nearer one wins: the event's, then the logger's."""
    log.bind_contextvars(session="s1", target="ctx", step="ctx")
    logger = log.get_logger("tests.log").bind(target="bound", step="bound")
    with capture_logs() as logs:
        logger.info("ran", step="event")
    assert logs == [
        {"event": "ran", "session": "s1", "target": "bound", "step": "event", "log_level": "info"}
    ]


def test_binding_the_context_adds_to_what_is_bound() -> None:
    """A second ``bind_contextvars`` keeps the first one's other keys and replaces a key
    it names again."""
    log.bind_contextvars(session="s1", host="a")
    log.bind_contextvars(host="b", attempt=2)
    with capture_logs() as logs:
        log.get_logger("tests.log").info("x")
    assert logs == [{"event": "x", "session": "s1", "host": "b", "attempt": 2, "log_level": "info"}]


def test_bind_returns_a_new_logger_and_leaves_the_original_as_it_was() -> None:
    """``bind`` is structlog's: the returned logger carries the values, the one it was
    called on does not."""
    plain = log.get_logger("tests.log")
    bound = plain.bind(target="t")
    with capture_logs() as logs:
        plain.info("plain")
        bound.info("bound")
    assert logs == [
        {"event": "plain", "log_level": "info"},
        {"event": "bound", "target": "t", "log_level": "info"},
    ]


def test_configured_as_json_events_are_json_lines_on_stderr(
    capsys: pytest.CaptureFixture[str], paramiko_logger: logging.Logger
) -> None:
    """``configure(json=True)`` writes each event as one JSON object on stderr (stdout is
    the command's), with its level and an ISO UTC timestamp; nothing goes to stdout."""
    log.configure(json=True, level="info")
    log.bind_contextvars(session="s1")
    log.get_logger("tests.log").info("sweep_started", probes=3)
    out, err = capsys.readouterr()
    assert out == ""
    [event] = _json_lines(err)
    stamp = event.pop("timestamp")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", stamp), stamp
    assert event == {"event": "sweep_started", "session": "s1", "probes": 3, "level": "info"}


def test_configured_events_below_the_level_are_dropped(
    capsys: pytest.CaptureFixture[str], paramiko_logger: logging.Logger
) -> None:
    """At level ``warning`` only warning and error events are written."""
    log.configure(json=True, level="warning")
    logger = log.get_logger("tests.log")
    logger.debug("d")
    logger.info("i")
    logger.warning("w")
    logger.error("e")
    err = capsys.readouterr().err
    assert [(e["event"], e["level"]) for e in _json_lines(err)] == [
        ("w", "warning"),
        ("e", "error"),
    ]


def test_an_event_below_the_level_never_touches_structlog(
    monkeypatch: pytest.MonkeyPatch, paramiko_logger: logging.Logger
) -> None:
    """Filtering happens before structlog: an event under the level costs no structlog
    call at all (so a quiet run need not import it)."""
    log.configure(level="error")

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("structlog was asked for a logger")

    monkeypatch.setattr(structlog, "get_logger", forbidden)
    logger = log.get_logger("tests.log")
    logger.debug("d")
    logger.info("i")
    logger.warning("w")


@pytest.mark.parametrize("level", ["loud", "INFO", ""], ids=["unknown", "upper-case", "empty"])
def test_an_unknown_level_is_refused_naming_the_choices(
    level: str, paramiko_logger: logging.Logger
) -> None:
    """``configure`` refuses a level it does not know, saying which it was and which
    levels there are."""
    expected = f"unknown log level {level!r} (one of debug, info, warning, error, critical)"
    with pytest.raises(ValueError) as caught:
        log.configure(level=level)
    assert str(caught.value) == expected


def test_configure_silences_paramikos_own_log(paramiko_logger: logging.Logger) -> None:
    """paramiko's tracebacks are not passed on to the root logger once configured: its
    logger stops propagating and has a handler that drops records."""
    paramiko_logger.propagate = True
    log.configure(level="info")
    assert paramiko_logger.propagate is False
    assert any(isinstance(h, logging.NullHandler) for h in paramiko_logger.handlers)


@pytest.mark.parametrize(
    ("json_lines", "level", "info_written"),
    [
        (False, "info", False),
        (False, "debug", True),
        (True, "info", True),
    ],
    ids=["console-default-quietened", "verbose-kept", "json-kept"],
)
def test_prompts_quieten_only_the_console_default(
    json_lines: bool,
    level: str,
    info_written: bool,
    capsys: pytest.CaptureFixture[str],
    paramiko_logger: logging.Logger,
) -> None:
    """``keep_off_prompts`` raises the console's default level (info) to warning, so a
    menu is not interleaved with progress events; ``-v`` (debug) and JSON logs keep
    theirs. Warnings are written in every case."""
    log.configure(json=json_lines, level=level)
    log.keep_off_prompts()
    logger = log.get_logger("tests.log")
    logger.info("progress_event")
    after_info = capsys.readouterr().err
    logger.warning("warning_event")
    after_warning = capsys.readouterr().err
    assert ("progress_event" in after_info) is info_written
    assert "warning_event" in after_warning


def test_prompts_change_nothing_before_configure() -> None:
    """Without a configuration there is no default level to quieten: info events still
    reach structlog."""
    log.keep_off_prompts()
    with capture_logs() as logs:
        log.get_logger("tests.log").info("still_here")
    assert logs == [{"event": "still_here", "log_level": "info"}]


def test_reset_forgets_the_level_and_the_bound_context(
    paramiko_logger: logging.Logger,
) -> None:
    """After ``reset`` events go to structlog as it stands, unfiltered, without the
    values bound before."""
    log.configure(level="error")
    log.bind_contextvars(session="s1")
    log.reset()
    structlog.reset_defaults()  # what configure applied to structlog itself
    with capture_logs() as logs:
        log.get_logger("tests.log").info("after_reset")
    assert logs == [{"event": "after_reset", "log_level": "info"}]
