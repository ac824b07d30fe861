"""Reading the file's byte ranges (the whole file, or head and tail) through
``LineReader`` into a summarizer, in pieces that each start at a line's start.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import io
from typing import NamedTuple

from .._lines import LineReader
from . import records
from .summarizer import Summarizer


class Piece(NamedTuple):
    start: int
    end: int
    aligned: bool  # starts at the start of a line
    numbered: bool  # its line numbers can be known (it is not in the tail of a huge log)
    after_gap: bool  # unread bytes lie between it and the piece before
    at_eof: bool


def pieces(f: io.FileIO, ranges: list[tuple[int, int]], size: int, k: int) -> list[Piece]:
    """The byte ranges cut into about ``k`` pieces that each start at a line's start."""
    total = sum(e - s for s, e in ranges) or 1
    out: list[Piece] = []
    for r, (start, end) in enumerate(ranges):
        n = max(1, round(k * (end - start) / total))
        cuts = [start]
        for j in range(1, n):
            off = start + (end - start) * j // n
            f.seek(off)
            nl = f.read(1 << 20).find(b"\n")
            if nl >= 0 and cuts[-1] < off + nl + 1 < end:
                cuts.append(off + nl + 1)
        cuts.append(end)
        for i in range(len(cuts) - 1):
            out.append(
                Piece(
                    cuts[i],
                    cuts[i + 1],
                    aligned=start == 0 or i > 0,
                    numbered=r == 0,
                    after_gap=r > 0 and i == 0,
                    at_eof=cuts[i + 1] == size,
                )
            )
    return out


class Scan(NamedTuple):
    summ: Summarizer
    lines: int
    bytes_read: int
    cut: bool
    unterminated: bool


def scan(f: io.FileIO, pieces: list[Piece], summ: Summarizer, max_line: int) -> Scan:
    """Read ``pieces`` in order into ``summ`` (line numbers counted from 1)."""
    lines = bytes_read = 0
    cut = unterminated = False
    for i, piece in enumerate(pieces):
        if i and piece.after_gap:
            summ.break_continuity()
        first = (lines + 1) if piece.numbered else None
        reader = LineReader(
            f,
            piece.start,
            piece.end,
            max_line=max_line,
            first_line=first,
            at_eof=piece.at_eof,
            aligned=piece.aligned,
        )
        for b in reader:
            if reader.cut_last_line:
                unterminated = records.last_line(summ, b.first_line, b.offset, b.data, b.overlong)
            else:
                records.block(summ, b.first_line, b.offset, b.data, b.overlong)
        bytes_read += reader.bytes_read
        lines += reader.lines
        cut = cut or reader.cut_last_line
    return Scan(summ, lines, bytes_read, cut, unterminated)
