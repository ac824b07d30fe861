"""Reading a log's byte ranges into a summarizer (tools/parsers/_trainlog/reader.py): the
ranges cut into pieces that each start at a line's start, and the pieces read in order
with line numbers counted across them where they can be known."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tools.parsers._trainlog.reader import Piece, pieces, scan
from tools.parsers._trainlog.summarizer import Summarizer

LINE = 11  # bytes of each line below, newline included


def write(tmp_path: Path, lines: list[str]) -> Path:
    assert all(len(line) == LINE - 1 for line in lines)
    p = tmp_path / "train_log.jsonl"
    p.write_text("".join(line + "\n" for line in lines))
    return p


def steps(values: list[int]) -> list[str]:
    return [f'{{"step":{v}}}' for v in values]


def test_one_piece_is_the_whole_range(tmp_path: Path) -> None:
    """Asked for one piece, a whole file is one piece: aligned, numbered, at the end."""
    p = write(tmp_path, steps(list(range(10))))
    with io.FileIO(str(p)) as f:
        assert pieces(f, [(0, 110)], 110, 1) == [Piece(0, 110, True, True, False, True)]


def test_pieces_start_at_line_starts(tmp_path: Path) -> None:
    """A range cut in three is cut just after the first newline past each third (byte 36
    falls in the line ending at 43, byte 73 in the one ending at 76), so every piece
    starts at a line's start and only the last reaches the end of the file."""
    p = write(tmp_path, steps(list(range(10))))
    with io.FileIO(str(p)) as f:
        assert pieces(f, [(0, 110)], 110, 3) == [
            Piece(0, 44, True, True, False, False),
            Piece(44, 77, True, True, False, False),
            Piece(77, 110, True, True, False, True),
        ]


def test_a_line_longer_than_a_piece_is_not_cut(tmp_path: Path) -> None:
    """Where no newline lies inside the range past a cut point, the range stays whole."""
    p = tmp_path / "train_log.jsonl"
    p.write_text('{"blob": "' + "x" * 200 + '"}\n')
    with io.FileIO(str(p)) as f:
        assert pieces(f, [(0, 213)], 213, 4) == [Piece(0, 213, True, True, False, True)]


def test_head_and_tail_pieces(tmp_path: Path) -> None:
    """The tail of a head+tail read starts after a gap, mid-line as far as anyone knows,
    and its line numbers cannot be known; the head is numbered and does not reach the end."""
    p = write(tmp_path, steps(list(range(10))))
    with io.FileIO(str(p)) as f:
        assert pieces(f, [(0, 33), (66, 110)], 110, 1) == [
            Piece(0, 33, True, True, False, False),
            Piece(66, 110, False, False, True, True),
        ]


def test_scan_numbers_lines_across_pieces(tmp_path: Path) -> None:
    """Pieces read in order count lines from 1 across them: a bad line at the start of
    the third piece is line 8, at byte 77; every byte and line is counted."""
    lines = steps(list(range(10)))
    lines[2] = "not json!!"
    lines[7] = "still not!"
    p = write(tmp_path, lines)
    with io.FileIO(str(p)) as f:
        out = scan(f, pieces(f, [(0, 110)], 110, 3), Summarizer({}, None, 100, 1000), 1000)
    assert (out.lines, out.bytes_read, out.cut, out.unterminated) == (10, 110, False, False)
    assert out.summ.records == 8
    assert [(s["line"], s["offset"]) for s in out.summ.malformed_samples] == [(3, 22), (8, 77)]


def test_scan_of_head_and_tail(tmp_path: Path) -> None:
    """In the tail of a head+tail read the line numbers are unknown (None) and its partial
    first line is skipped; a step that goes back across the unread part is no restart."""
    lines = steps([7, 8, 9, 0, 0, 0, 0, 1, 2, 3])
    lines[8] = "not json!!"
    p = write(tmp_path, lines)
    with io.FileIO(str(p)) as f:
        out = scan(
            f, pieces(f, [(0, 33), (66, 110)], 110, 1), Summarizer({}, None, 100, 1000), 1000
        )
    assert (out.lines, out.bytes_read) == (6, 77)
    assert out.summ.records == 5
    assert [(s["line"], s["offset"]) for s in out.summ.malformed_samples] == [(None, 88)]
    assert out.summ.all.steps.restarts == 0
    assert (out.summ.all.steps.first, out.summ.all.steps.last) == (7, 3)


@pytest.mark.parametrize(
    ("content", "cut", "unterminated", "records"),
    [
        (b'{"step":1}\n{"step":2}\n', False, False, 2),
        (b'{"step":1}\n{"step":2}', True, True, 2),
        (b'{"step":1}\n{"step":', True, False, 1),
    ],
    ids=["ended", "unterminated-record", "cut-mid-record"],
)
def test_scan_last_line(
    tmp_path: Path, content: bytes, cut: bool, unterminated: bool, records: int
) -> None:
    """A last line without its newline is reported: whole (a live writer) when it still
    holds a record, cut when it does not."""
    p = tmp_path / "train_log.jsonl"
    p.write_bytes(content)
    size = len(content)
    with io.FileIO(str(p)) as f:
        out = scan(f, pieces(f, [(0, size)], size, 1), Summarizer({}, None, 100, 1000), 1000)
    assert (out.cut, out.unterminated, out.summ.records, out.lines) == (
        cut,
        unterminated,
        records,
        2,
    )
