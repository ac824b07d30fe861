"""What the console scan (``stdoutlog``) keeps of each signature and each cause it hits
(``Hit``, ``Cause``), and how it finds their lines: the lines a signature matches, and
the exception line that ends a traceback, past the prefix trainers write before a line.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

SAMPLE = 300  # bytes kept of a line quoted (a hit, the log's tail)

# What trainers and launchers put before each line: a timestamp, [tags], torchrun's
# "[rank0]:" and "[default0]:", glog's "E1130 12:00:01.123456 1234 file.cpp:632] ", and
# Python logging's level and logger name ("2026-11-30 12:00:01,123 - ERROR - ",
# "ERROR:root:", "ERROR 09-18 04:30:01 [core.py:1355] ").
_TIME = rb"(?:[0-9][0-9TZ:.,/ +-]*)?"
_TAGS = rb"(?:\[[^\]\n]*\]:? ?)*"
_GLOG = rb"(?:[DIWEF][0-9]{4} [0-9:.]+ +[0-9]+ [^\]\n ]+\] )?"
_LEVEL = rb"(?:(?:[\w.]+ - )?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)(?: - |:[\w.]*:| +))"
PREFIX = re.compile(b"^" + _TIME + _TAGS + _GLOG + b"(?:" + _LEVEL + _TIME + _TAGS + b")?")

MAX_THREADS = 32  # thread names kept per cause
# Distinct exception classes, threads and causes listed: the earliest (a run's first
# crash is its cause; the thousandth worker's traceback is its echo), the rest counted in
# ``not_listed``, so 60,000 distinct thread tracebacks cost their tail, not the fact.
MAX_KEYS = 200
# Lines that continue a traceback once the prefix is gone: indented frames, blanks, and
# the banners between chained exceptions.
_TB_CONT = (
    b" ",
    b"\t",
    b"Traceback (most",
    b"During handling of the above",
    b"The above exception was",
)


# An exception line starts with its class: a dotted name, then ":" or the line's end.
_EXC_LINE = re.compile(rb"[A-Za-z_][\w.]*(?::|\s*$)")


def exception_line(data: bytes, pos: int, prefix: bytes, budget: int) -> tuple[int, int, int]:
    """Find the exception line that ends a traceback, reading lines from ``pos``.

    Returns (start, end, lines read); start is -1 when the block ended first (or the
    budget of lines ran out: then lines read is ``budget``)."""
    n = 0
    while pos < len(data) and n < budget:
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        line = data[pos:end]
        n += 1
        if line.startswith(prefix):
            body = line[len(prefix) :]
        else:
            # Same kind of prefix, different text (the clock ticked mid-traceback).
            m = PREFIX.match(line)
            body = line[m.end() :] if m else line
        # A line that does not start with a class name is another thread's print that
        # landed inside the traceback (they share the console): the exception line is
        # still to come.
        if body.strip() and not body.startswith(_TB_CONT) and _EXC_LINE.match(body):
            return pos, end, n
        pos = end + 1
    return -1, -1, n


def clip(raw: bytes) -> str:
    return raw[:SAMPLE].decode("utf-8", "replace").rstrip("\r")


class Hit:
    __slots__ = (
        "count",
        "first",
        "first_after_step",
        "first_line",
        "first_midrun",
        "first_offset",
        "last",
        "last_line",
        "last_offset",
    )

    def __init__(self) -> None:
        self.count = 0
        # The last step number the log printed at or before the first hit (its line too):
        # what dates an event against the train log's steps (None: none printed before).
        self.first_after_step: dict[str, int | None] | None = None
        # For ``MIDRUN`` signatures: the first hit after a step was printed (its line,
        # offset, text, and that step): where the run went back mid-way.
        self.first_midrun: dict[str, Any] | None = None
        self.first_line: int | None = None
        self.first_offset = 0
        self.first = ""
        self.last_line: int | None = None
        self.last_offset = 0
        self.last = ""

    def add(self, line: int | None, offset: int, text: bytes) -> None:
        if not self.count:
            self.first_line, self.first_offset, self.first = line, offset, clip(text)
        self.count += 1
        self.last_line, self.last_offset = line, offset
        self.last = clip(text) if self.count > 1 else self.first

    def summary(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "first_line": self.first_line,
            "first_offset": self.first_offset,
            "first": self.first,
            "first_after_step": self.first_after_step,
            "first_midrun": self.first_midrun,
            "last_line": self.last_line,
            "last_offset": self.last_offset,
            "last": self.last,
        }


class Cause(Hit):
    """The exception lines that state one cause: where, in which threads, and how many
    lines of the log came after the last one (how close it is to where the log ends)."""

    __slots__ = ("exception", "last_index", "last_range", "outside_threads", "threads")

    def __init__(self, exception: str) -> None:
        super().__init__()
        self.exception = exception
        self.threads: list[str] = []
        self.outside_threads = 0
        self.last_index = 0
        self.last_range = 0

    def seen_in(self, thread: str | None, index: int, in_range: int) -> None:
        if thread is None:
            self.outside_threads += 1
        elif thread not in self.threads and len(self.threads) < MAX_THREADS:
            self.threads.append(thread)
        self.last_index, self.last_range = index, in_range


_H = TypeVar("_H", bound=Hit)


def earliest(table: Mapping[str, _H]) -> list[tuple[str, _H]]:
    """The ``MAX_KEYS`` entries of ``table`` seen first in the log, in key order."""
    kept = list(table.items())
    if len(kept) > MAX_KEYS:
        kept = sorted(kept, key=lambda kv: (kv[1].first_offset, kv[0]))[:MAX_KEYS]
    return sorted(kept, key=lambda kv: kv[0])


def lines_matching(
    data: bytes, regex: re.Pattern[bytes], needles: list[bytes], index: int
) -> list[tuple[int, int, int]]:
    """(line start, line end, ``index``) of each line of ``data`` the signature matches:
    the lines its needles land in, or (with no needles) wherever its regex matches."""
    found: list[tuple[int, int, int]] = []
    if not needles:
        pos = 0
        while pos <= len(data):
            m = regex.search(data, pos)
            if m is None:
                break
            start = data.rfind(b"\n", 0, m.start()) + 1
            end = data.find(b"\n", m.start())
            if end < 0:
                end = len(data)
            found.append((start, end, index))
            # On from the next line: a line is listed once however often it matches.
            pos = end + 1
        return found
    seen: set[int] = set()
    for needle in needles:
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            if end < 0:
                end = len(data)
            if start not in seen and regex.search(data, start, end):
                seen.add(start)
                found.append((start, end, index))
            pos = data.find(needle, end)
    return found
