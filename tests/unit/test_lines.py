"""tools/parsers/_lines.py reads a byte range of a log as blocks of complete lines with
bounded memory: each block says the number of its first line and its byte offset, a line
longer than ``max_line`` is kept only as an empty line with its number, and a file larger
than ``max_scan`` is planned as a head and a tail.

test_parse_lines.py holds which lines come back; this module holds the blocks themselves
(numbers, offsets, counters) and the edges of the limits."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tools.parsers._lines import Block, LineReader, plan_ranges


def blocks(
    path: Path,
    start: int = 0,
    end: int | None = None,
    *,
    max_line: int = 100,
    first_line: int | None = 1,
    at_eof: bool = True,
    aligned: bool = False,
    block: int = 1 << 20,
) -> tuple[list[Block], LineReader]:
    """Every block ``LineReader`` yields for ``[start, end)`` of ``path`` (``end``: the
    file's size), and the reader afterwards for its counters."""
    with io.FileIO(str(path), "r") as f:
        reader = LineReader(
            f,
            start,
            path.stat().st_size if end is None else end,
            max_line=max_line,
            first_line=first_line,
            at_eof=at_eof,
            aligned=aligned,
            block=block,
        )
        return list(reader), reader


def test_blocks_number_their_first_line_and_give_its_offset(tmp_path: Path) -> None:
    """Reads of 4 bytes cut lines apart; each block still holds whole lines, numbered on
    from ``first_line``, with the file offset where its first line begins."""
    p = tmp_path / "log"
    p.write_bytes(b"ab\ncd\nef\n")
    got, reader = blocks(p, max_line=100, block=4, first_line=40)
    assert got == [
        Block(40, 0, b"ab", []),
        Block(41, 3, b"cd", []),
        Block(42, 6, b"ef", []),
    ]
    assert (reader.lines, reader.bytes_read, reader.overlong) == (3, 9, 0)
    assert reader.cut_last_line is False


def test_a_read_is_never_longer_than_the_longest_line_allowed(tmp_path: Path) -> None:
    """The read size is capped at ``max_line``: with ``max_line`` 4 the same file comes
    back in the same blocks as with reads of 4 bytes."""
    p = tmp_path / "log"
    p.write_bytes(b"ab\ncd\nef\n")
    got, reader = blocks(p, max_line=4)
    assert reader.block == 4
    assert [b.data for b in got] == [b"ab", b"cd", b"ef"]


def test_a_line_of_exactly_max_line_bytes_is_kept_and_one_more_is_not(tmp_path: Path) -> None:
    """``max_line`` is the longest line kept: five bytes pass under ``max_line=5``, six are
    blanked, counted and numbered, and the line after keeps its number."""
    p = tmp_path / "log"
    p.write_bytes(b"12345\n123456\nz\n")
    got, reader = blocks(p, max_line=5)
    assert got == [Block(1, 0, b"12345", []), Block(2, 6, b"\nz", [2])]
    assert (reader.lines, reader.overlong) == (3, 1)


def test_an_overlong_line_where_numbers_are_unknown_is_counted_not_numbered(
    tmp_path: Path,
) -> None:
    """In a tail read with no line numbers, an overlong line is still blanked and counted
    by the reader, but no number is listed for it."""
    p = tmp_path / "log"
    p.write_bytes(b"x" * 50 + b"\nok\n")
    got, reader = blocks(p, max_line=10, first_line=None)
    assert got == [Block(None, 0, b"\nok", [])]
    assert (reader.overlong, reader.lines) == (1, 2)


def test_an_overlong_cut_last_line_is_an_empty_numbered_block(tmp_path: Path) -> None:
    """A writer killed in the middle of an overlong line: the line comes back as an empty
    block at its offset, numbered and listed as overlong."""
    p = tmp_path / "log"
    p.write_bytes(b"ok\n" + b"y" * 30)
    got, reader = blocks(p, max_line=10)
    assert got == [Block(1, 0, b"ok", []), Block(2, 3, b"", [2])]
    assert (reader.cut_last_line, reader.lines, reader.overlong) == (True, 2, 1)


def test_an_aligned_start_is_read_from_its_first_byte(tmp_path: Path) -> None:
    """When ``start`` is known to begin a line (``aligned``) nothing before the first
    newline is dropped; without it, the bytes up to that newline are taken for the end of
    a line the range cannot see whole."""
    p = tmp_path / "log"
    p.write_bytes(b"one\ntwo\nthree\n")
    got, _ = blocks(p, start=4, aligned=True, first_line=2)
    assert got == [Block(2, 4, b"two\nthree", [])]
    got, _ = blocks(p, start=4, first_line=None)
    assert got == [Block(None, 8, b"three", [])]


def test_a_range_starting_inside_the_last_line_yields_nothing(tmp_path: Path) -> None:
    """A range that starts inside a line with no newline after it has no whole line to
    give, not even a cut one."""
    p = tmp_path / "log"
    p.write_bytes(b"abcdef")
    got, reader = blocks(p, start=2, first_line=None)
    assert got == []
    assert (reader.cut_last_line, reader.lines, reader.bytes_read) == (False, 0, 4)


def test_a_head_range_reads_only_up_to_its_end(tmp_path: Path) -> None:
    """A head range ending right after a newline gives the lines before it and reads no
    byte past ``end``."""
    p = tmp_path / "log"
    p.write_bytes(b"aaa\nbbb\nccc\n")
    got, reader = blocks(p, end=4, at_eof=False)
    assert got == [Block(1, 0, b"aaa", [])]
    assert (reader.bytes_read, reader.lines) == (4, 1)


def test_a_file_shorter_than_its_range_is_read_to_its_end(tmp_path: Path) -> None:
    """A file that shrank below ``end`` after it was measured is read to where it ends;
    its last line without a newline is the cut last line."""
    p = tmp_path / "log"
    p.write_bytes(b"ab\ncd")
    got, reader = blocks(p, end=50)
    assert got == [Block(1, 0, b"ab", []), Block(2, 3, b"cd", [])]
    assert (reader.cut_last_line, reader.bytes_read) == (True, 5)


@pytest.mark.parametrize(
    ("size", "max_scan", "head", "ranges"),
    [
        (0, 1000, 10, [(0, 0)]),
        (1000, 1000, 10, [(0, 1000)]),
        (1001, 1000, 100, [(0, 100), (101, 1001)]),
        (10_000, 1000, 250, [(0, 250), (9250, 10_000)]),
        (10_000, 1000, 600, [(0, 250), (9250, 10_000)]),
    ],
    ids=["empty", "exactly-fits", "one-byte-over", "head-at-quarter", "head-capped-to-quarter"],
)
def test_plan_ranges_reads_head_and_tail_within_max_scan(
    size: int, max_scan: int, head: int, ranges: list[tuple[int, int]]
) -> None:
    """A file of at most ``max_scan`` bytes is one range; a larger one is a head of at most
    a quarter of ``max_scan`` and a tail of the rest, together exactly ``max_scan``."""
    assert plan_ranges(size, max_scan, head) == ranges
