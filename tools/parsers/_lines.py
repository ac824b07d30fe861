"""Bounded-memory line reading for logs of any size and any content.

Shipped in the probe bundle: stdlib only, Python >= 3.8.

Two rules keep a hostile log from hurting the reader:
- a line longer than ``max_line`` is never held whole: it is dropped (its number is
  kept) and reading resumes after its newline, so a 50 MB line costs ``max_line``;
- a file larger than ``max_scan`` is not read whole: its head and its tail are, and the
  middle is reported as skipped, so a multi-GB log costs ``max_scan`` bytes of reading.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["Block", "LineReader", "plan_ranges"]

BLOCK = 1 << 20


class Block(NamedTuple):
    """Complete lines ``first_line`` onward (1-based; None when the count is unknown,
    i.e. in the tail of a file whose middle was skipped), newline-separated, without a
    trailing newline. An overlong line is present as an empty line, and its number is
    in ``overlong``."""

    first_line: int | None
    offset: int
    data: bytes
    overlong: list[int]


def plan_ranges(size: int, max_scan: int, head: int) -> list[tuple[int, int]]:
    """Byte ranges to read: all of it when it fits in ``max_scan``, else head and tail."""
    if size <= max_scan:
        return [(0, size)]
    head = min(head, max_scan // 4)
    return [(0, head), (size - (max_scan - head), size)]


class LineReader:
    """Reads ``[start, end)`` of a binary file as blocks of complete lines.

    When ``start`` is not 0 (and not ``aligned``) the reader begins after the first
    newline at or past it, because the bytes before that newline are the end of a line
    it cannot see whole.
    When ``end`` is the end of the file (``at_eof``), a last line with no newline after
    it is yielded and ``cut_last_line`` is set (a writer killed mid-line); otherwise the
    unfinished line at ``end`` is not this range's to read and is left out.
    """

    def __init__(
        self,
        f: io.FileIO,
        start: int,
        end: int,
        *,
        max_line: int,
        first_line: int | None = 1,
        at_eof: bool = True,
        aligned: bool = False,
        block: int = BLOCK,
    ) -> None:
        self.f = f
        self.start = start
        self.end = end
        self.max_line = max_line
        self.first_line = first_line
        self.at_eof = at_eof
        self.aligned = aligned  # ``start`` is known to be the start of a line
        # Reads no longer than the longest line allowed: then a line that fits in one
        # read is short enough, and only a line continued across reads (checked as it
        # grows, and as the first line of a block) can be too long.
        self.block = min(block, max_line)
        self.cut_last_line = False
        self.lines = 0
        self.overlong = 0
        self.bytes_read = 0

    def __iter__(self) -> Iterator[Block]:
        f = self.f
        f.seek(self.start)
        pos = self.start
        lineno = self.first_line
        partial = b""  # the start of the line that continues into the next read
        line_start = self.start  # file offset of that line
        skipping = self.start > 0 and not self.aligned  # drop bytes up to the next newline
        discarding = False  # the current line is already too long: drop until newline
        while pos < self.end:
            chunk = f.read(min(self.block, self.end - pos))
            if not chunk:
                break
            chunk_at = pos
            pos += len(chunk)
            self.bytes_read += len(chunk)
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                chunk = chunk[nl + 1 :]
                chunk_at += nl + 1
                line_start = chunk_at
                skipping = False
            last_nl = chunk.rfind(b"\n")
            if last_nl < 0:
                if not discarding:
                    partial += chunk
                    if len(partial) > self.max_line:
                        partial, discarding = b"", True
                continue
            complete = chunk[:last_nl]
            overlong: list[int] = []
            if discarding:
                # The too-long line ends at the first newline: keep its place as an empty
                # line so that the numbers of the lines after it stay right.
                nl = complete.find(b"\n")
                data = complete[nl:] if nl >= 0 else b""
                overlong.append(lineno if lineno is not None else -1)
                discarding = False
            else:
                data = partial + complete if partial else complete
                nl = data.find(b"\n")
                if (nl if nl >= 0 else len(data)) > self.max_line:
                    data = data[nl:] if nl >= 0 else b""
                    overlong.append(lineno if lineno is not None else -1)
            n = data.count(b"\n") + 1
            self.overlong += len(overlong)
            yield Block(lineno, line_start, data, [x for x in overlong if x >= 0])
            self.lines += n
            if lineno is not None:
                lineno += n
            rest = chunk[last_nl + 1 :]
            line_start = chunk_at + last_nl + 1
            if len(rest) > self.max_line:
                partial, discarding = b"", True
            else:
                partial = rest
        if not self.at_eof or skipping:
            return
        if discarding:
            self.cut_last_line = True
            self.lines += 1
            self.overlong += 1
            yield Block(lineno, line_start, b"", [lineno] if lineno is not None else [])
        elif partial:
            self.cut_last_line = True
            self.lines += 1
            yield Block(lineno, line_start, partial, [])
