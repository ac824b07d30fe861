"""tools/parsers/_trainlog/records.py turns a block of log lines into the records the
summarizer takes: JSON lines parsed in one call where the block is clean, else line by
line; CSV rows and text lines through ``logformats``; every line that holds no record
counted as damage by reason (or, in a console log, as another line).

The summarizer here is the real one, with ``batch`` also noting what it was handed, so
the tests can say which records, lines and offsets a block became."""

from __future__ import annotations

from typing import Any

import pytest

from tools.parsers._trainlog import records
from tools.parsers._trainlog.summarizer import Summarizer
from tools.parsers._trainlog.values import TOO_DEEP


class Noting(Summarizer):
    """The summarizer, noting every batch it is handed as (records, lines, offsets)."""

    def __init__(
        self,
        fmt: str = "jsonl",
        header: list[str] | None = None,
        fields: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(dict(fields or {}), None, 100, 1000, fmt=fmt, header=header)
        self.batches: list[tuple[list[dict[str, Any]], list[int | None], list[int]]] = []

    def batch(
        self, recs: list[dict[str, Any]], lines: list[int | None], offsets: list[int]
    ) -> None:
        if recs:
            self.batches.append((list(recs), list(lines), list(offsets)))
        super().batch(recs, lines, offsets)

    def handed(self) -> list[tuple[dict[str, Any], int | None, int]]:
        """Every record handed over, with its line and offset, in order."""
        return [
            t for recs, lines, offs in self.batches for t in zip(recs, lines, offs, strict=True)
        ]


def reasons(summ: Summarizer) -> list[tuple[str, int | None, int]]:
    return [(s["reason"], s["line"], s["offset"]) for s in summ.malformed_samples]


def test_a_clean_jsonl_block_is_one_batch_located_by_the_blocks_offset() -> None:
    """Well-formed JSON lines go to the summarizer in one batch, numbered on from the
    block's first line; each record is located by the block's own offset."""
    summ = Noting()
    records.block(summ, 10, 4096, b'{"step": 1}\n{"step": 2}\n{"step": 3}', [])
    assert summ.batches == [([{"step": 1}, {"step": 2}, {"step": 3}], [10, 11, 12], [4096] * 3)]
    assert (summ.records, summ.blank, summ.malformed) == (3, 0, {})


def test_a_block_with_unknown_line_numbers_keeps_them_unknown() -> None:
    """In the tail of a huge log (first line unknown) the records have no line numbers."""
    summ = Noting()
    records.block(summ, None, 0, b'{"step": 1}\n{"step": 2}', [])
    assert summ.handed() == [({"step": 1}, None, 0), ({"step": 2}, None, 0)]


def test_a_blank_line_sends_the_block_line_by_line_with_exact_offsets() -> None:
    """A blank line is counted as blank; the block then goes line by line and each
    record carries its own line's number and byte offset."""
    summ = Noting()
    data = b'{"step": 1}\n\n{"step": 2}'
    records.block(summ, 1, 100, data, [])
    assert summ.handed() == [({"step": 1}, 1, 100), ({"step": 2}, 3, 100 + 13)]
    assert (summ.blank, summ.malformed) == (1, {})


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"step": 1, "lo', "not_json"),
        (b'{"step": 1},{"step": 2}', "not_json"),
        (b"[1, 2]", "not_object"),
        (b"42", "not_object"),
        (b'{"step": 1\x00}', "binary"),
        (b'{"step": "\xff\xfe"}', "binary"),
        (b"[" * 100_000 + b"]" * 100_000, TOO_DEEP),
    ],
    ids=["cut", "two-records-on-one-line", "array", "number", "nul", "invalid-utf8", "too-deep"],
)
def test_a_jsonl_line_that_is_no_record_is_damage_by_reason(raw: bytes, reason: str) -> None:
    """A JSON line that does not parse is ``not_json``, or ``binary`` when it holds NULs
    or invalid UTF-8; a value that is not an object is ``not_object``; one nested past the
    parser's depth is ``too_deep``. The good lines around it are still read, each at its
    own offset."""
    summ = Noting()
    data = b'{"step": 1}\n' + raw + b'\n{"step": 3}'
    records.block(summ, 1, 0, data, [])
    assert summ.handed() == [({"step": 1}, 1, 0), ({"step": 3}, 3, 12 + len(raw) + 1)]
    assert summ.malformed == {reason: 1}
    assert reasons(summ) == [(reason, 2, 12)]


def test_an_overlong_line_is_damage_and_not_parsed() -> None:
    """A line the reader cut at ``max_line`` (present as an empty line) is counted as
    ``overlong`` at its number, with an empty sample, and the block is read line by
    line."""
    summ = Noting()
    records.block(summ, 5, 0, b'{"step": 1}\n\n{"step": 3}', [6])
    assert summ.handed() == [({"step": 1}, 5, 0), ({"step": 3}, 7, 13)]
    assert summ.malformed == {"overlong": 1}
    assert summ.malformed_samples == [{"line": 6, "offset": 12, "reason": "overlong", "sample": ""}]
    assert summ.blank == 0


@pytest.mark.parametrize(
    ("data", "whole", "reason"),
    [
        (b'{"step": 9}', True, None),
        (b'{"step": 9, "lo', False, "cut_last_line"),
        (b"[1]", False, "cut_last_line"),
        (b"[" * 100_000, True, TOO_DEEP),
    ],
    ids=["whole-record", "cut-mid-write", "not-an-object", "too-deep"],
)
def test_a_jsonl_last_line_without_newline_is_a_record_or_cut(
    data: bytes, whole: bool, reason: str | None
) -> None:
    """The final line of a JSON-lines log with no newline after it is a record when it
    parses to an object, else the sign of a write cut short (``cut_last_line``); a line
    too deep to follow shows no cut, and is counted ``too_deep``."""
    summ = Noting()
    assert records.last_line(summ, 40, 800, data, []) is whole
    assert summ.malformed == ({} if reason is None else {reason: 1})
    assert summ.handed() == ([({"step": 9}, 40, 800)] if reason is None else [])


def test_an_overlong_jsonl_last_line_is_cut() -> None:
    """A last line the reader cut at ``max_line`` is not parsed: it is a cut last line."""
    summ = Noting()
    assert records.last_line(summ, 40, 800, b"", [40]) is False
    assert summ.malformed == {"cut_last_line": 1}


@pytest.mark.parametrize(
    ("data", "overlong", "whole", "other", "damage"),
    [
        (b"step 9 loss=2.5", [], True, 0, {}),
        (b" 40%|####      | 40/100 [00:12<00:18,  3.21it/s]", [], True, 1, {}),
        (b"", [7], False, 0, {"cut_last_line": 1}),
    ],
    ids=["record", "progress-bar", "overlong"],
)
def test_a_console_log_may_end_without_a_newline(
    data: bytes, overlong: list[int], whole: bool, other: int, damage: dict[str, int]
) -> None:
    """A text log's last line with no record in it (tqdm's bar, redrawn with ``\\r``) is
    just another line, not a cut; one that holds a record is read; an overlong one is
    still a cut last line."""
    summ = Noting(fmt="text")
    assert records.last_line(summ, 7, 0, data, overlong) is whole
    assert (summ.other_lines, summ.malformed) == (other, damage)
    assert summ.handed() == ([({"step": 9, "loss": 2.5}, 7, 0)] if data.startswith(b"step") else [])


def test_a_csv_last_line_with_the_wrong_cell_count_is_cut() -> None:
    """A CSV log's last row with fewer cells than its header is a write cut short."""
    summ = Noting(fmt="csv", header=["step", "loss"])
    assert records.last_line(summ, 3, 30, b"4", []) is False
    assert summ.malformed == {"cut_last_line": 1}
    assert records.last_line(summ, 3, 30, b"4,2.5", []) is True
    assert summ.handed() == [({"step": 4, "loss": 2.5}, 3, 30)]


def test_csv_rows_become_records_and_a_repeated_header_is_skipped() -> None:
    """Each CSV row is a record of the header's names (empty cells left out); the header
    written again (a resumed logger) is neither a record nor damage; a row with another
    cell count is ``csv_cells``."""
    summ = Noting(fmt="csv", header=["step", "loss", "lr"])
    data = b"1,2.5,\nstep,loss,lr\n2,2.4,0.1\n3,2.3"
    records.block(summ, 2, 20, data, [])
    assert summ.handed() == [
        ({"step": 1, "loss": 2.5}, 2, 20),
        ({"step": 2, "loss": 2.4, "lr": 0.1}, 4, 20 + 7 + 13),
    ]
    assert reasons(summ) == [("csv_cells", 5, 20 + 7 + 13 + 10)]


def test_binary_lines_in_csv_and_text_logs_are_damage() -> None:
    """A line holding a NUL or invalid UTF-8 is ``binary`` damage in a CSV or text log;
    as a last line it is only not a record (``last`` reports no damage of its own)."""
    for fmt, header in (("csv", ["step", "loss"]), ("text", None)):
        summ = Noting(fmt=fmt, header=header)
        records.block(summ, 1, 0, b"1,\x00\n\xff\xfe", [])
        assert reasons(summ) == [("binary", 1, 0), ("binary", 2, 4)], fmt
        quiet = Noting(fmt=fmt, header=header)
        assert records.parse_other(quiet, b"\x00", 1, 0, last=True) is None
        assert quiet.malformed == {}, fmt


def test_text_lines_are_records_by_shape_and_the_rest_are_other_lines() -> None:
    """A text line that holds a step, loss, throughput or token count is a record and its
    shape is counted; a config line of other numbers (``lr=3e-4 warmup=100``) and a plain
    sentence are other lines, sampled with their numbers."""
    summ = Noting(fmt="text")
    data = b"lr=3e-4 warmup=100\nStep 3 | loss:2.5 lr:0.1\nloading shards\nstep 4 loss=2.4"
    records.block(summ, 1, 0, data, [])
    assert [rec for rec, _, _ in summ.handed()] == [
        {"step": 3, "loss": 2.5, "lr": 0.1},
        {"step": 4, "loss": 2.4},
    ]
    assert summ.shapes == {"torchtune": 1, "pairs": 1}
    assert summ.other_lines == 2
    assert summ.other_samples == [
        {"line": 1, "sample": "lr=3e-4 warmup=100"},
        {"line": 3, "sample": "loading shards"},
    ]
    assert summ.malformed == {}


@pytest.mark.parametrize(
    ("fields", "record", "counts"),
    [
        ({}, {"lr": 0.1, "warmup": 100}, False),
        ({}, {"loss": 2.5, "lr": 0.1}, True),
        ({}, {"tokens_per_sec": 900.0, "lr": 0.1}, True),
        ({"loss": "objective"}, {"objective": 2.5, "lr": 0.1}, True),
        ({"loss": "objective"}, {"loss": 2.5, "lr": 0.1}, False),
    ],
    ids=[
        "config-line",
        "loss-by-alias",
        "throughput-by-alias",
        "fixed-name-present",
        "fixed-name-absent-alias-ignored",
    ],
)
def test_recognised_needs_a_training_role(
    fields: dict[str, str], record: dict[str, Any], counts: bool
) -> None:
    """A text record counts when a step, loss, throughput or token count is in it, by the
    name the profile fixed for the role or, where none is fixed, by a known alias."""
    assert records.recognised(Noting(fmt="text", fields=fields), record) is counts
