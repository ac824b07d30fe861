"""tools/parsers/stdoutlog.py scans a trainer's console log for the error signatures of
``signatures.SIGNATURES`` (plus a profile's own rows), follows tracebacks to their
exception line, groups exception lines by the cause they state, dates first hits by the
step printed before them, reads Trainer's run summaries, and reads a huge log as head and
tail, saying what it covered.

tests/e2e/test_parse_stdoutlog.py and test_crash_texts.py read real and realistic crash
texts; this module holds the scan's own rules at their edges."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tools.parsers import stdoutlog
from tools.parsers._hits import MAX_KEYS
from tools.parsers.signatures import SIGNATURES, Signature
from tools.parsers.stdoutlog import compile_signatures

FX = (
    "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized"
    " function. This is not supported at the moment."
)


def scan_text(tmp_path: Path, text: str, **kw: Any) -> dict[str, Any]:
    p = tmp_path / "train_stdout.log"
    p.write_bytes(text.encode())
    with io.FileIO(str(p), "r") as f:
        return stdoutlog.scan(f, **kw)


def traceback(last: str) -> str:
    """A Python traceback of one frame ending in ``last``, newline-terminated."""
    return f'Traceback (most recent call last):\n  File "train.py", line 9, in step\n{last}\n'


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"id": "fx_nested_trace", "pattern": "x"}],
            "signature 'fx_nested_trace': needs a new id and a pattern",
        ),
        ([{"pattern": "x"}], "signature None: needs a new id and a pattern"),
        ([{"id": "new"}], "signature 'new': needs a new id and a pattern"),
        (
            [{"id": "new", "pattern": "("}],
            "signature 'new': bad regex: missing ), unterminated subpattern at position 0",
        ),
        (
            [{"id": "mine", "pattern": "x"}, {"id": "mine", "pattern": "y"}],
            "signature 'mine': needs a new id and a pattern",
        ),
    ],
    ids=["table-id", "no-id", "no-pattern", "bad-regex", "same-id-twice"],
)
def test_a_bad_profile_row_is_refused_naming_it_and_what_is_wrong(
    rows: list[dict[str, str]], message: str
) -> None:
    """A profile row needs an id of its own (not the table's, not another row's) and a
    pattern that compiles; the error names the row and says which of these failed."""
    with pytest.raises(ValueError) as caught:
        compile_signatures(rows)
    assert str(caught.value) == message


def test_a_profile_row_is_appended_after_the_table() -> None:
    """The table's rows come first, unchanged; a profile's row follows with its meaning
    and needles (none given: an empty meaning, no needles)."""
    rows = compile_signatures(
        [
            {
                "id": "shapes",
                "pattern": "shapes differ",
                "means": "bad batch",
                "needles": ["shapes"],
            },
            {"id": "bare", "pattern": "bare"},
        ]
    )
    assert rows[: len(SIGNATURES)] == list(SIGNATURES)
    assert rows[len(SIGNATURES) :] == [
        Signature("shapes", "shapes differ", "bad batch", ("shapes",)),
        Signature("bare", "bare", "", ()),
    ]


@pytest.mark.parametrize(
    ("printed", "step"),
    [
        ("step 3 -> step 4", 4),
        ("Step #3", 3),
        ("STEP-9", 9),
        ("last_step 5", 5),
        ("step 12.5 of warmup", None),
        ("laststep 5", None),
        ("stepping 5", None),
        ("step 1234567890123", None),
    ],
    ids=[
        "last-on-the-line",
        "hash",
        "upper-hyphen",
        "underscore-before",
        "decimal",
        "inside-a-word",
        "longer-word",
        "thirteen-digits",
    ],
)
def test_what_counts_as_a_printed_step(tmp_path: Path, printed: str, step: int | None) -> None:
    """A step number is ``step`` as a word (or after ``_``) and up to twelve digits, not a
    decimal; of several on a line the last counts. It dates the first hit after it."""
    hit = scan_text(tmp_path, f"{printed}\n{FX}\n")["signatures"]["fx_nested_trace"]
    assert hit["first_after_step"] == (None if step is None else {"step": step, "line": 1})


def test_a_thread_is_named_only_just_before_its_traceback(tmp_path: Path) -> None:
    """``Exception in thread NAME:`` ties the traceback on the next line to that thread; a
    line between them unties it, and the exception counts outside any thread."""
    text = "Exception in thread loader:\nsomething else\n" + traceback("ValueError: bad row")
    out = scan_text(tmp_path, text)
    assert out["thread_exceptions"] == {}
    cause = out["exception_causes"]["ValueError"]
    assert (cause["threads"], cause["outside_threads"]) == ([], 1)


def test_a_traceback_still_open_at_the_end_is_said_so(tmp_path: Path) -> None:
    """A traceback whose exception line the log never wrote (the process died while
    printing it) is reported open at the end, with no exception."""
    out = scan_text(tmp_path, 'step 1\nTraceback (most recent call last):\n  File "a.py", line 1\n')
    assert out["open_traceback_at_end"] is True
    assert (out["exceptions"], out["exception_causes"], out["exception_lines"]) == ({}, {}, 0)
    closed = scan_text(tmp_path, traceback("ValueError: x"))
    assert closed["open_traceback_at_end"] is False


def test_a_cpp_exceptions_what_line_behind_a_prefix_states_its_cause(tmp_path: Path) -> None:
    """A C++ exception that aborted a rank: the ``what():`` line after libstdc++'s
    terminate line, behind the launcher's prefix, is the exception line, its class the
    exception, and its text the cause."""
    text = (
        "[rank0]: terminate called after throwing an instance of 'c10::Error'\n"
        "[rank0]:   what():  CUDA error: an illegal memory access was encountered\n"
        "Aborted\n"
    )
    cause = scan_text(tmp_path, text)["exception_causes"]["cuda_error"]
    assert cause["exception"] == "c10::Error"
    assert (cause["first_line"], cause["count"], cause["lines_after"]) == (2, 1, 1)
    assert cause["first"] == "CUDA error: an illegal memory access was encountered"


def test_a_head_and_tail_scan_says_what_it_covered_and_what_it_cannot_tell(
    tmp_path: Path,
) -> None:
    """A log larger than ``max_scan`` is read as its head (a quarter of the budget) and
    its tail: the coverage says which bytes; a cause in the head has no known count of
    lines after it (the middle was skipped), one in the tail has, without line numbers."""
    head = traceback("ValueError: bad row 1")
    filler = "".join(f"filler line {i:05d}\n" for i in range(1000))
    text = head + filler + traceback("KeyError: 'k'") + "bye\n"
    size = len(text.encode())
    out = scan_text(tmp_path, text, max_scan=4096, head=1024 * 1024)
    assert out["coverage"] == {
        "mode": "head+tail",
        "ranges": [[0, 1024], [size - 3072, size]],
        "bytes_read": 4096,
        "skipped_bytes": size - 4096,
    }
    causes = out["exception_causes"]
    assert (causes["ValueError"]["first_line"], causes["ValueError"]["lines_after"]) == (3, None)
    assert (causes["KeyError"]["first_line"], causes["KeyError"]["lines_after"]) == (None, 1)
    assert out["tail"][-2:] == ["KeyError: 'k'", "bye"]


def test_a_full_scan_covers_every_byte(tmp_path: Path) -> None:
    """A log within ``max_scan`` is read whole: one range, nothing skipped."""
    text = "step 1\nstep 2\n"
    out = scan_text(tmp_path, text)
    assert out["coverage"] == {
        "mode": "full",
        "ranges": [[0, len(text)]],
        "bytes_read": len(text),
        "skipped_bytes": 0,
    }
    assert (out["size"], out["lines_read"], out["overlong_lines"]) == (len(text), 2, 0)
    assert out["unterminated_last_line"] is False


def test_the_tail_keeps_as_many_lines_as_asked(tmp_path: Path) -> None:
    """``tail_lines`` sets how many of the log's last lines are kept."""
    out = scan_text(tmp_path, "a\nb\nc\nd\ne\n", tail_lines=3)
    assert out["tail"] == ["c", "d", "e"]


def test_exception_classes_past_the_listing_limit_are_counted(tmp_path: Path) -> None:
    """Past ``MAX_KEYS`` distinct exception classes, the earliest are listed and the rest
    only counted in ``not_listed`` (for the exceptions and the causes no signature
    names); every exception line is still counted."""
    limit = MAX_KEYS
    assert limit == 200
    text = "".join(traceback(f"Error{i}: boom") for i in range(limit + 5))
    out = scan_text(tmp_path, text)
    assert len(out["exceptions"]) == limit
    assert "Error0" in out["exceptions"] and f"Error{limit + 4}" not in out["exceptions"]
    assert out["not_listed"] == {"exceptions": 5, "exception_causes": 5}
    assert out["exception_lines"] == limit + 5


def test_a_run_summary_keeps_its_finite_numeric_figures(tmp_path: Path) -> None:
    """Of a run summary's figures, numbers (or strings of numbers) are kept, under names
    cut to 64 characters; flags, words and NaN are not figures."""
    long_key = "k" + "a" * 70
    line = (
        f"{{'train_runtime': 12.5, 'flag': True, 'speed': 'nan', 'note': 'x', '{long_key}': '3'}}"
    )
    out = scan_text(tmp_path, line + "\n")
    assert out["run_summaries"] == [
        {"line": 1, "offset": 0, "figures": {"train_runtime": 12.5, long_key[:64]: 3.0}}
    ]


@pytest.mark.parametrize(
    "line",
    [
        "{'train_runtime': 'n/a', 'train_loss': '2.0'}",
        "{'train_runtime': 1.0, 'padding': '" + "x" * stdoutlog.SUMMARY_BYTES + "'}",
        "{'train_runtime': 1.0, 'broken': }",
    ],
    ids=["no-runtime-figure", "too-long", "not-a-literal"],
)
def test_a_summary_line_that_cannot_be_read_is_seen_but_not_kept(tmp_path: Path, line: str) -> None:
    """A summary whose runtime is no number, one longer than ``SUMMARY_BYTES``, or one
    that is no dict literal is a hit of the signature but no run summary."""
    out = scan_text(tmp_path, line + "\n")
    assert out["signatures"]["run_summary"]["count"] == 1
    assert out["run_summaries"] == []


def test_run_summaries_past_the_limit_are_not_kept(tmp_path: Path) -> None:
    """At most ``MAX_SUMMARIES`` run summaries are kept, the first ones."""
    limit = stdoutlog.MAX_SUMMARIES
    text = "".join(f"{{'train_runtime': {i}.5}}\n" for i in range(limit + 3))
    out = scan_text(tmp_path, text)
    assert len(out["run_summaries"]) == limit
    assert out["run_summaries"][-1]["figures"] == {"train_runtime": limit - 1 + 0.5}
    assert out["signatures"]["run_summary"]["count"] == limit + 3
