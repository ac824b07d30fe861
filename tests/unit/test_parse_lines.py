"""Bounded line reading: overlong lines, cut last lines, head/tail ranges."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tools.parsers._lines import LineReader, plan_ranges


def read_all(
    path: Path,
    start: int = 0,
    end: int | None = None,
    *,
    max_line: int = 100,
    first_line: int | None = 1,
    at_eof: bool = True,
) -> tuple[list[bytes], LineReader]:
    f = io.FileIO(str(path), "r")
    size = path.stat().st_size
    reader = LineReader(
        f,
        start,
        size if end is None else end,
        max_line=max_line,
        first_line=first_line,
        at_eof=at_eof,
    )
    lines: list[bytes] = []
    for b in reader:
        lines.extend(b.data.split(b"\n"))
    f.close()
    return lines, reader


@pytest.mark.parametrize(
    ("content", "expected", "cut"),
    [
        (b"a\nb\nc\n", [b"a", b"b", b"c"], False),
        (b"a\nb\nc", [b"a", b"b", b"c"], True),
        (b"\n\n", [b"", b""], False),
        (b"", [], False),
        (b"only", [b"only"], True),
    ],
)
def test_lines_and_cut_last_line(
    tmp_path: Path, content: bytes, expected: list[bytes], cut: bool
) -> None:
    """Every line comes back once, and a last line without a newline is flagged cut."""
    p = tmp_path / "f"
    p.write_bytes(content)
    lines, reader = read_all(p)
    assert lines == expected
    assert reader.cut_last_line is cut


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_overlong_line_is_blanked_and_numbered(tmp_path: Path, block: int) -> None:
    """A line over max_line becomes an empty line (numbers stay right) and is counted,
    whatever the block boundaries."""
    p = tmp_path / "f"
    p.write_bytes(b"short\n" + b"x" * 500 + b"\nafter\n")
    f = io.FileIO(str(p), "r")
    reader = LineReader(f, 0, p.stat().st_size, max_line=100, block=block)
    lines: list[bytes] = []
    overlong: list[int] = []
    for b in reader:
        lines.extend(b.data.split(b"\n"))
        overlong.extend(b.overlong)
    f.close()
    assert lines == [b"short", b"", b"after"]
    assert overlong == [2]
    assert reader.overlong == 1


def test_overlong_last_line_without_newline(tmp_path: Path) -> None:
    """A too-long line that is also the cut last line counts as both."""
    p = tmp_path / "f"
    p.write_bytes(b"ok\n" + b"y" * 1000)
    lines, reader = read_all(p)
    assert lines[0] == b"ok"
    assert reader.cut_last_line and reader.overlong == 1


def test_range_starting_mid_line_skips_to_next_line(tmp_path: Path) -> None:
    """A tail range that starts inside a line begins at the next whole line."""
    p = tmp_path / "f"
    p.write_bytes(b"first line\nsecond\nthird\n")
    lines, _ = read_all(p, start=3, first_line=None)
    assert lines == [b"second", b"third"]


def test_head_range_leaves_out_the_unfinished_line(tmp_path: Path) -> None:
    """A head range that ends mid-file does not report its last, partial line as cut."""
    p = tmp_path / "f"
    p.write_bytes(b"aaa\nbbb\nccc\n")
    lines, reader = read_all(p, end=6, at_eof=False)
    assert lines == [b"aaa"]
    assert not reader.cut_last_line


def test_plan_ranges() -> None:
    """Small files are read whole; large ones as head plus tail within max_scan."""
    assert plan_ranges(100, 1000, 10) == [(0, 100)]
    head, tail = plan_ranges(10_000, 1000, 100)
    assert head == (0, 100) and tail == (10_000 - 900, 10_000)
