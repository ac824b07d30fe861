"""What the console scan keeps of each signature and cause it hits, and how it finds their
lines (tools/parsers/_hits.py): the prefix trainers and launchers write before a line,
the exception line that ends a traceback past that prefix, the lines a signature
matches, a hit's first and last line, a cause's threads, and the earliest entries kept
of a table too large to list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.parsers import _hits, stdoutlog
from tools.parsers._hits import PREFIX, Cause, Hit, clip, earliest, exception_line, lines_matching


@pytest.mark.parametrize(
    ("line", "body"),
    [
        (b"[rank0]:Traceback (most recent call last):", b"Traceback (most recent call last):"),
        (b"[default0]:[rank0]: RuntimeError: boom", b"RuntimeError: boom"),
        (
            b"E1130 12:00:01.123456 1234 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught",
            b"[Rank 0] Watchdog caught",
        ),
        (b"2026-11-30 12:00:01,123 - ERROR - RuntimeError: x", b"RuntimeError: x"),
        (b"2026-11-30 12:00:01,123 - trainer - WARNING - slow", b"slow"),
        (b"ERROR:root:ValueError: bad", b"ValueError: bad"),
        (b"ERROR 09-18 04:30:01 [core.py:1355] EngineCore failed", b"EngineCore failed"),
        (b"12:00:01 [INFO] saved", b"saved"),
        (b'  File "t.py", line 3, in <module>', b'  File "t.py", line 3, in <module>'),
        (b"RuntimeError: plain", b"RuntimeError: plain"),
    ],
    ids=[
        "torchrun-rank",
        "two-launcher-tags",
        "glog",
        "logging-time-level",
        "logging-logger-name",
        "logging-basic",
        "vllm-style",
        "time-and-tag",
        "indented-frame-untouched",
        "no-prefix",
    ],
)
def test_the_prefix_is_what_comes_before_the_lines_own_text(line: bytes, body: bytes) -> None:
    """Timestamps, ``[tags]``, glog's prefix and Python logging's level and logger name
    are the prefix; what follows is the line's own text, its indentation kept."""
    found = PREFIX.match(line)
    assert found is not None
    assert line[found.end() :] == body


TRACEBACK = (
    b"[rank0]:Traceback (most recent call last):\n"
    b'[rank0]:  File "t.py", line 3, in <module>\n'
    b"[rank0]:    main()\n"
    b"[rank0]:RuntimeError: boom\n"
    b"[rank0]:step 9\n"
)


def test_the_exception_line_is_the_first_after_the_frames() -> None:
    """Reading past the traceback's header with its prefix, the indented frames are
    passed over and the exception line is found: its start and end in the block, and
    the three lines read to reach it."""
    pos = TRACEBACK.index(b"\n") + 1
    start = TRACEBACK.index(b"[rank0]:RuntimeError")
    end = start + len(b"[rank0]:RuntimeError: boom")
    assert exception_line(TRACEBACK, pos, b"[rank0]:", 10) == (start, end, 3)


def test_a_prefix_whose_clock_ticked_still_gives_the_exception_line() -> None:
    """A later line's timestamp differs from the header's prefix: the line's own prefix
    is taken off instead, and it is still the exception line."""
    data = (
        b'2026-11-30 12:00:01,123 - ERROR -   File "t.py", line 3, in <module>\n'
        b"2026-11-30 12:00:02,456 - ERROR - ValueError: x\n"
    )
    start = data.index(b"2026-11-30 12:00:02")
    assert exception_line(data, 0, b"2026-11-30 12:00:01,123 - ERROR - ", 10) == (
        start,
        len(data) - 1,
        2,
    )


def test_banners_blank_lines_and_other_prints_do_not_end_the_traceback() -> None:
    """The banners between chained exceptions, blank lines, a nested header and another
    thread's print (not a class name then a colon) are read past; a bare class name with
    no message (``KeyboardInterrupt``) is an exception line, the block's last line even
    without its newline."""
    data = (
        b'  File "a.py", line 1, in f\n'
        b"\n"
        b"During handling of the above exception, another exception occurred:\n"
        b"The above exception was the direct cause of the following exception:\n"
        b"Traceback (most recent call last):\n"
        b"step 5 loss 1.0\n"
        b"KeyboardInterrupt"
    )
    start = data.rindex(b"\n") + 1
    assert exception_line(data, 0, b"", 20) == (start, len(data), 7)


def test_no_exception_line_before_the_block_or_the_budget_ends() -> None:
    """A block that ends inside the frames gives -1 and the lines it read; a budget of
    lines that runs out gives -1 and the budget."""
    frames = b'  File "a.py", line 1, in f\n    g()\n  File "b.py", line 2, in g\n'
    assert exception_line(frames, 0, b"", 10) == (-1, -1, 3)
    assert exception_line(frames + b"RuntimeError: late\n", 0, b"", 2) == (-1, -1, 2)


def test_a_quoted_line_is_clipped_and_decoded() -> None:
    """A quoted line is its first 300 bytes, bytes that are not UTF-8 replaced (a
    character cut at the bound too), a trailing carriage return dropped."""
    assert clip(b"CUDA out of memory\r") == "CUDA out of memory"
    assert clip(b"bad \xff byte") == "bad \ufffd byte"
    assert clip(b"a" * 299 + "é".encode() + b"tail") == "a" * 299 + "\ufffd"


def test_a_hit_keeps_its_first_and_last_line_and_counts() -> None:
    """The first hit's line, offset and text stay; each later hit moves the last ones;
    after one hit the last is the first."""
    hit = Hit()
    hit.add(3, 100, b"CUDA out of memory\r")
    assert hit.summary() == {
        "count": 1,
        "first_line": 3,
        "first_offset": 100,
        "first": "CUDA out of memory",
        "first_after_step": None,
        "first_midrun": None,
        "last_line": 3,
        "last_offset": 100,
        "last": "CUDA out of memory",
    }
    hit.add(None, 900, b"CUDA out of memory again")
    summary = hit.summary()
    assert (summary["count"], summary["first_line"], summary["first"]) == (
        2,
        3,
        "CUDA out of memory",
    )
    assert (summary["last_line"], summary["last_offset"], summary["last"]) == (
        None,
        900,
        "CUDA out of memory again",
    )


def test_a_cause_lists_its_threads_once_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each thread a cause was stated in is listed once, up to the bound; lines outside
    any thread are counted; the last place it was seen is the latest."""
    monkeypatch.setattr(_hits, "MAX_THREADS", 2)
    cause = Cause("RuntimeError")
    for thread, index in (("worker-0", 5), (None, 6), ("worker-0", 7), ("w1", 8), ("w2", 9)):
        cause.seen_in(thread, index, index + 10)
    assert cause.exception == "RuntimeError"
    assert cause.threads == ["worker-0", "w1"]
    assert cause.outside_threads == 1
    assert (cause.last_index, cause.last_range) == (9, 19)


def hit_at(offset: int) -> Hit:
    hit = Hit()
    hit.add(None, offset, b"x")
    return hit


def test_a_small_table_is_listed_whole_in_key_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table within the bound is listed whole, sorted by key."""
    monkeypatch.setattr(_hits, "MAX_KEYS", 3)
    table = {"b": hit_at(5), "a": hit_at(9), "c": hit_at(1)}
    assert [k for k, _ in earliest(table)] == ["a", "b", "c"]


def test_a_large_table_keeps_the_entries_seen_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bound, the entries whose first hit came earliest in the log are kept
    (a tie broken by key), listed in key order."""
    monkeypatch.setattr(_hits, "MAX_KEYS", 2)
    table = {"d": hit_at(1), "c": hit_at(50), "b": hit_at(50), "a": hit_at(99)}
    assert [k for k, _ in earliest(table)] == ["b", "d"]


NCCL = (
    b"ok line\nNCCL error: unhandled system error\nno match NCCL here\nNCCL error again, NCCL error"
)


@pytest.mark.parametrize(
    "needles",
    [[b"NCCL"], [b"NCCL", b"error"]],
    ids=["one-needle", "two-needles-same-lines"],
)
def test_the_lines_a_signature_matches_are_found_through_its_needles(
    needles: list[bytes],
) -> None:
    """Each line a needle lands in and the regex matches is listed once, with the row's
    index (two needles or two hits on one line still list it once); a line the needle
    lands in but the regex does not match is not; the last line ends at the data's end."""
    assert lines_matching(NCCL, re.compile(rb"NCCL error"), needles, 5) == [
        (8, 42, 5),
        (62, 90, 5),
    ]


def test_without_needles_the_regex_alone_finds_the_lines() -> None:
    """A row with no needles is searched with its regex: each matching line's start and
    end."""
    data = b"step 1\nloss\nstep 2"
    assert lines_matching(data, re.compile(rb"^step \d+$", re.M), [], 1) == [
        (0, 6, 1),
        (12, 18, 1),
    ]


def test_without_needles_a_line_the_regex_matches_twice_is_listed_once() -> None:
    """``oom`` twice on the first line (bytes 0-12) and not on the second: that line is
    listed once, as it is when the row has the needle ``oom``."""
    data = b"oom then oom\nok\n"
    assert lines_matching(data, re.compile(rb"oom"), [], 0) == [(0, 12, 0)]
    assert lines_matching(data, re.compile(rb"oom"), [b"oom"], 0) == [(0, 12, 0)]


def test_a_profile_signature_counts_a_line_once_however_often_it_matches(
    tmp_path: Path,
) -> None:
    """Through the console scan: a profile's ``oom`` signature on a log whose second line
    says ``oom`` twice is one hit, on line 2 (byte 7, after ``step 1\\n``)."""
    log = tmp_path / "train.log"
    log.write_bytes(b"step 1\noom here and oom there\nstep 2\n")
    with open(log, "rb", buffering=0) as f:
        out = stdoutlog.scan(f, extra=[{"id": "mine", "pattern": "oom"}])
    mine = out["signatures"]["mine"]
    assert (mine["count"], mine["first_line"], mine["first_offset"]) == (1, 2, 7)
