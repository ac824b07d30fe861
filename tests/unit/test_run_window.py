"""What a restarted trainer wrote to its logs (playbooks._run_window): where a log ended before
the restart, the bytes written since (or the whole file when the run began it afresh), and those
bytes read with the diagnosis's own console and train-log parsers.

Logs live in a workspace under tmp_path, read by the remote operations run in this process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from playbooks._run_window import (
    console_summary,
    mark_end,
    signature_hits,
    window_summary,
    written_since,
)
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess

FX_LINE = (
    "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized"
    " function. This is not supported at the moment.\n"
)


@pytest.fixture
def remote() -> Remote:
    return Remote(InProcess())


def test_a_missing_log_is_marked_at_its_start(tmp_path: Path, remote: Remote) -> None:
    """A log not written yet ends at 0 and has no first bytes."""
    assert mark_end(remote, str(tmp_path / "none.log")) == (0, b"")


@pytest.mark.parametrize(
    ("size", "head"), [(10, 10), (5000, 4096)], ids=["short", "longer-than-the-head"]
)
def test_a_log_is_marked_by_its_size_and_first_bytes(
    tmp_path: Path, remote: Remote, size: int, head: int
) -> None:
    """The mark is the log's size now and its first bytes, at most 4096 of them."""
    data = bytes(i % 251 for i in range(size))
    (tmp_path / "o.log").write_bytes(data)
    assert mark_end(remote, str(tmp_path / "o.log")) == (size, data[:head])


@pytest.mark.parametrize(
    ("before", "after", "new"),
    [
        (b"old line\n", b"old line\nnew line\n", b"new line\n"),
        (b"old line\n", b"old line\n", b""),
        (b"old line\n", b"fresh\n", b"fresh\n"),
        (b"old line\nmore\n", b"OLD LINE\nmore\nand more\n", b"OLD LINE\nmore\nand more\n"),
        (None, b"first run\n", b"first run\n"),
    ],
    ids=["appended", "nothing-new", "truncated", "rewritten-longer", "created"],
)
def test_the_restarted_runs_lines_are_those_written_since_the_mark(
    tmp_path: Path, remote: Remote, before: bytes | None, after: bytes, new: bytes
) -> None:
    """A log appended to gives what was appended; one the run started afresh (its first bytes
    differ from the mark's, or it did not exist) gives the whole file."""
    log = tmp_path / "o.log"
    if before is not None:
        log.write_bytes(before)
    mark = mark_end(remote, str(log))
    log.write_bytes(after)
    assert written_since(remote, str(log), mark) == new


def test_a_log_the_restarted_run_never_opened_holds_nothing_it_wrote(
    tmp_path: Path, remote: Remote
) -> None:
    """A trainer that died before opening its log leaves none: nothing was written since
    the mark (it was an error naming FileNotFoundError, which hid why the fix failed)."""
    log = tmp_path / "o.log"
    log.write_bytes(b"step 1\n")
    mark = mark_end(remote, str(log))
    log.unlink()
    assert written_since(remote, str(log), mark) == b""
    assert written_since(remote, str(tmp_path / "never.log"), (0, b"")) == b""


@pytest.mark.parametrize(
    ("console", "hits"),
    [
        ({"signatures": {"fx_nested_trace": {"count": 3}}}, 3),
        ({"signatures": {"fx_nested_trace": {"count": "3"}}}, 0),
        ({"signatures": {"other": {"count": 3}}}, 0),
        ({"signatures": None}, 0),
        ({}, 0),
    ],
    ids=["counted", "count-not-a-number", "other-signature", "no-signatures", "empty-scan"],
)
def test_a_signatures_hits_are_its_count_or_none(console: dict[str, Any], hits: int) -> None:
    """The hits of a signature are the scan's whole-number count for its id; anything missing or
    malformed counts as none."""
    assert signature_hits(console, "fx_nested_trace") == hits


def test_the_console_window_is_scanned_with_the_profiles_extra_signatures() -> None:
    """The new console lines are scanned with the built-in signatures and the profile's own: an
    FX-trace error and a line of the profile's pattern are each counted once."""
    data = ("step 1\n" + FX_LINE + "BOOM 7\n").encode()
    console = console_summary(data, ({"id": "boom", "pattern": r"BOOM \d+"},))
    assert console["lines_read"] == 3
    assert (signature_hits(console, "fx_nested_trace"), signature_hits(console, "boom")) == (1, 1)
    assert signature_hits(console, "recompile_limit") == 0


def test_the_train_window_is_read_in_the_format_its_log_name_says() -> None:
    """The new train-log bytes are parsed as the log they came from: named ``.csv``, read as CSV,
    with the profile's field name for throughput."""
    data = b"step,speed\n1,100\n2,200\n3,300\n"
    summary = window_summary(data, "/w/metrics.csv", fields={"throughput": "speed"})
    assert (summary["format"], summary["records"]) == ("csv", 3)
    assert summary["fields"]["throughput"] == "speed"


def test_an_empty_train_window_has_no_records() -> None:
    """A restarted run that wrote no train-log line yields a summary with no records."""
    assert window_summary(b"", "/w/train.jsonl")["records"] == 0
