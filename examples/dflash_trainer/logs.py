"""The two logs of the incident's ``checkpoints/`` directory.

Both are appended with one ``os.write`` per line on an ``O_APPEND`` descriptor, so the
lines of several threads or processes interleave whole instead of tearing.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any


def _open_append(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def worker_name() -> str:
    """Thread name in threads mode, process name in processes mode (both name the device)."""
    thread = threading.current_thread()
    if thread is threading.main_thread():
        return multiprocessing.current_process().name
    return thread.name


class Console:
    """What the trainer prints: to its stdout and to ``train_stdout.log``."""

    def __init__(self, path: Path, echo: bool = True) -> None:
        self._fd = _open_append(path)
        self._echo = echo

    def say(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        lines = "".join(f"{stamp} [{worker_name()}] {ln}\n" for ln in message.splitlines())
        os.write(self._fd, lines.encode())
        if self._echo:
            sys.stdout.write(lines)
            sys.stdout.flush()

    def exception(self, what: str) -> None:
        """Write the current exception as Python's threading excepthook would, with the name."""
        self.say(f"Exception in {what} {worker_name()}:\n{traceback.format_exc().rstrip()}")

    def capture_torch_logs(self) -> None:
        """Route torch's warnings (recompile limit, eager flex) and Python warnings here.

        They are the evidence of a silent eager fallback, so they must reach the log file,
        not only the terminal.
        """
        handler = _ConsoleHandler(self)
        handler.setLevel(logging.WARNING)
        logging.captureWarnings(True)
        # torch's own loggers do not propagate to "torch"; each needs the handler.
        for name in ("torch", "torch._dynamo", "torch._inductor", "py.warnings"):
            logging.getLogger(name).addHandler(handler)

    def close(self) -> None:
        os.close(self._fd)


class _ConsoleHandler(logging.Handler):
    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        self.console.say(f"{record.levelname} {record.name}: {record.getMessage()}")


class TrainLog:
    """``train_log.jsonl``: step, loss, tokens/s and timestamp, one line per device."""

    def __init__(self, path: Path) -> None:
        self._fd = _open_append(path)

    def record(self, **fields: Any) -> None:
        line = json.dumps({"timestamp": round(time.time(), 3), **fields}, sort_keys=True)
        os.write(self._fd, (line + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)
