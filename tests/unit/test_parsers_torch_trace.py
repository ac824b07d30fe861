"""torch's structured trace read streaming (tools/parsers/torch_trace.py): each record
is glog's prefix and a JSON object, a payload's lines follow it with a leading tab; the
reader keeps per compile id the ``compilation_metrics`` row, the guard failure of the
``recompile_reasons`` artifact, the ``torch_version`` artifact, and per function its
compiles; bounded in rows, functions, line length and bytes. The records below are
written in torch 2.13's shape; expected values are worked out from them."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tools.parsers import torch_trace
from tools.parsers.torch_trace import rank_of, read_trace

GLOG = "V1202 20:30:32.414000 4987 torch/_dynamo/utils.py:1288] "
SIZE = "tensor 'x' size mismatch at index 0. expected 4, actual 5"


def record(obj: dict[str, Any]) -> str:
    return GLOG + json.dumps(obj)


def metrics(compile_id: str, **fields: Any) -> str:
    """A ``compilation_metrics`` record of ``score`` (frame 0 unless the id says)."""
    body: dict[str, Any] = {
        "compile_id": compile_id,
        "co_name": "score",
        "co_filename": "/ws/train.py",
        "co_firstlineno": 4,
    }
    body.update(fields)
    return record({"compilation_metrics": body})


def artifact(name: str, frame: int = 0, attempt: int = 0) -> str:
    """An artifact record whose payload follows on tab-led lines."""
    return record(
        {
            "artifact": {"name": name, "encoding": "json"},
            "frame_id": frame,
            "frame_compile_id": attempt,
            "has_payload": "5f2c",
        }
    )


def read(*lines: str, **limits: int) -> dict[str, Any]:
    return read_trace(io.BytesIO(("\n".join(lines) + "\n").encode()), **limits)


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("dedicated_log_torch_trace_rank_0_ab12cd.log", 0),
        ("dedicated_log_torch_trace_rank_12_x.log", 12),
        ("dedicated_log_torch_trace_ab12cd.log", None),
        ("dedicated_log_torch_trace_rank_x_ab.log", None),
    ],
    ids=["rank-0", "two-digit-rank", "no-rank", "rank-not-a-number"],
)
def test_the_rank_is_read_from_the_file_name(name: str, rank: int | None) -> None:
    """torch names a ranked process's file ``…rank_<R>_…``; a file with no such part is
    no rank's."""
    assert rank_of(name) == rank


def test_a_compile_row_carries_its_metrics_function_and_guard_failure() -> None:
    """A compile's row: its id, its line in the file, its frame, cache sizes, compile
    time, no failure or restart, the function its frame compiled and the guard failure
    the recompile artifact gave for the same compile id."""
    out = read(
        artifact("recompile_reasons", frame=0, attempt=1),
        "\t" + SIZE,
        metrics(
            "0/1",
            cache_size=1,
            accumulated_cache_size=1,
            entire_frame_compile_time_s=0.25,
            fail_type=None,
            fail_reason=None,
            restart_reasons=[],
        ),
    )
    assert out["compiles"] == [
        {
            "compile_id": "0/1",
            "line": 3,
            "frame": "0",
            "cache_size": 1,
            "accumulated_cache_size": 1,
            "compile_time_s": 0.25,
            "fail_type": None,
            "fail_reason": None,
            "restarts": 0,
            "restart_reason": None,
            "function": "score",
            "guard_failure": SIZE,
        }
    ]
    assert (out["compiles_dropped"], out["failed"], out["torch_version"]) == (0, [], None)
    assert (out["lines"], out["overlong_lines"], out["cut"]) == (3, 0, False)


@pytest.mark.parametrize(
    ("payload", "kept"),
    [
        (["\t" + SIZE], SIZE),
        (["\t" + json.dumps([SIZE, "older entry's failure"])], SIZE),
        (["\t[", '\t  "' + SIZE + '",', '\t  "older"', "\t]"], SIZE),
        (["\t" + SIZE, "\tsecond line of the text"], SIZE),
        (["\t[]"], None),
        (["\t   "], None),
    ],
    ids=[
        "bare-line",
        "json-list",
        "json-list-over-lines",
        "text-first-line",
        "empty-list",
        "blank",
    ],
)
def test_the_guard_failure_is_the_payloads_newest(payload: list[str], kept: str | None) -> None:
    """A ``recompile_reasons`` payload lists failures newest first: one bare line, or a
    JSON list (the first is kept), or text (its first line); an empty one gives none."""
    out = read(artifact("recompile_reasons", 0, 2), *payload, metrics("0/2", cache_size=2))
    assert out["compiles"][0]["guard_failure"] == kept


def test_a_payload_ends_at_the_next_record_or_the_files_end() -> None:
    """Only tab-led lines right after the artifact are its payload: the next record ends
    it, and the last payload of the file is read at its end."""
    out = read(
        artifact("recompile_reasons", 0, 1),
        "\tfirst reason",
        metrics("0/1"),
        "\tnot a payload: the metrics record has none",
        metrics("0/2"),
        artifact("recompile_reasons", 0, 2),
        "\tsecond reason",
    )
    assert [r["guard_failure"] for r in out["compiles"]] == ["first reason", "second reason"]


def test_the_torch_version_comes_from_its_artifact() -> None:
    """The ``torch_version`` artifact's JSON payload gives the version torch ran."""
    out = read(artifact("torch_version"), '\t{"pytorch_version": "2.13.0+cu128"}')
    assert out["torch_version"] == "2.13.0+cu128"


def test_other_artifacts_and_payload_less_records_are_not_read() -> None:
    """Payloads of artifacts other than the two kept are skipped, and so is a recompile
    artifact that says it has no payload."""
    bare = record({"artifact": {"name": "recompile_reasons"}, "frame_id": 0, "frame_compile_id": 1})
    out = read(
        artifact("dynamo_cpp_guards_str", 0, 1),
        "\tTREE_GUARD_MANAGER: guessed reason",
        bare,
        "\tstray",
        metrics("0/1"),
    )
    assert out["compiles"][0]["guard_failure"] is None


@pytest.mark.parametrize(
    "line",
    [
        "plain console text",
        GLOG + "not json",
        GLOG + '{"compilation_metrics": ',
        GLOG + "[1, 2, 3]",
        GLOG + '{"compilation_metrics": "not a mapping"}',
        "",
    ],
    ids=["text", "prefixed-text", "broken-json", "json-list", "metrics-not-a-dict", "blank"],
)
def test_lines_that_are_not_records_are_passed_over(line: str) -> None:
    """A line that is not a JSON object (after the prefix), or whose metrics are not an
    object, adds nothing but is still counted as a line: the rows after it keep their
    line numbers."""
    out = read(line, metrics("0/0"))
    assert [(r["compile_id"], r["line"]) for r in out["compiles"]] == [("0/0", 2)]
    assert out["lines"] == 2


def test_a_record_needs_no_prefix() -> None:
    """A record written without glog's prefix (a bare JSON object) is read all the same;
    torchrun's ``[rankN]:`` before the prefix is taken off too."""
    bare = json.dumps({"compilation_metrics": {"compile_id": "3/0", "co_name": "f"}})
    ranked = "[rank1]:" + metrics("4/0")
    out = read(bare, ranked)
    assert [(r["compile_id"], r["function"]) for r in out["compiles"]] == [
        ("3/0", "f"),
        ("4/0", "score"),
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"cache_size": True}, {"cache_size": None}),
        ({"cache_size": "3"}, {"cache_size": None}),
        ({"accumulated_cache_size": 2.0}, {"accumulated_cache_size": None}),
        ({"entire_frame_compile_time_s": float("nan")}, {"compile_time_s": None}),
        ({"entire_frame_compile_time_s": "1.5"}, {"compile_time_s": None}),
        ({"entire_frame_compile_time_s": 2}, {"compile_time_s": 2.0}),
        ({"fail_type": "   "}, {"fail_type": None}),
        ({"fail_type": "  Unsupported\nsecond line"}, {"fail_type": "Unsupported"}),
        ({"fail_reason": "r" * 400}, {"fail_reason": "r" * 300}),
        ({"fail_reason": 7}, {"fail_reason": None}),
        ({"restart_reasons": "not a list"}, {"restarts": 0, "restart_reason": None}),
        (
            {"restart_reasons": ["graph break in loop", "second"]},
            {"restarts": 2, "restart_reason": "graph break in loop"},
        ),
    ],
    ids=[
        "bool-is-not-a-count",
        "string-is-not-a-count",
        "float-is-not-a-count",
        "nan-time",
        "string-time",
        "int-time",
        "blank-text",
        "multi-line-text",
        "long-text",
        "text-not-a-string",
        "restarts-not-a-list",
        "restarts",
    ],
)
def test_each_metric_is_kept_only_in_the_type_it_should_have(
    fields: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Counts are ints (not bools or floats), the compile time a finite number, texts a
    stripped first line of at most 300 characters, restarts counted with the first one's
    text: anything else is None, never a guess."""
    (row,) = read(metrics("0/0", **fields))["compiles"]
    assert {k: row[k] for k in expected} == expected


def test_a_metrics_record_without_a_compile_id_is_frame_unknown() -> None:
    """A compile with no id is kept under ``?``, its frame ``?`` too."""
    (row,) = read(record({"compilation_metrics": {"co_name": "f"}}))["compiles"]
    assert (row["compile_id"], row["frame"], row["function"]) == ("?", "?", "f")


def test_functions_sum_their_compiles_time_recompiles_and_first_failure() -> None:
    """Per frame: its function (as the frame's first metrics named it), compiles,
    failed compiles, total compile time, recompiles (the most cache entries a compile of
    it found) and its first failure; listed most compiled first. A frame whose metrics
    never named a function is not listed."""
    out = read(
        metrics("1/0", co_name="tokenize", co_filename="/ws/h.py", co_firstlineno=9),
        metrics("0/0", cache_size=0, entire_frame_compile_time_s=0.5),
        metrics("0/1", cache_size=1, entire_frame_compile_time_s=0.25, co_name="renamed"),
        metrics(
            "0/2",
            cache_size=2,
            entire_frame_compile_time_s=0.125,
            fail_type="RecompileLimitExceeded",
            fail_reason="Dynamo recompile limit exceeded",
        ),
        metrics("0/3", cache_size=1, fail_type="Unsupported", fail_reason="later"),
        record({"compilation_metrics": {"compile_id": "2/0"}}),
    )
    assert out["functions"] == [
        {
            "function": "score",
            "file": "/ws/train.py",
            "line": 4,
            "frame": "0",
            "compiles": 4,
            "failed": 2,
            "compile_time_s": 0.875,
            "recompiles": 2,
            "first_failure": {
                "compile_id": "0/2",
                "fail_type": "RecompileLimitExceeded",
                "fail_reason": "Dynamo recompile limit exceeded",
            },
        },
        {
            "function": "tokenize",
            "file": "/ws/h.py",
            "line": 9,
            "frame": "1",
            "compiles": 1,
            "failed": 0,
            "compile_time_s": 0.0,
            "recompiles": 0,
        },
    ]
    assert [r["compile_id"] for r in out["failed"]] == ["0/2", "0/3"]
    assert [r["function"] for r in out["compiles"]][1:4] == ["score"] * 3


def test_rows_past_the_bound_keep_the_start_and_the_newest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for four rows, six compiles keep the first two and the newest two, and
    two are counted dropped."""
    monkeypatch.setattr(torch_trace, "MAX_ROWS", 4)
    out = read(*(metrics(f"0/{n}") for n in range(6)))
    assert [r["compile_id"] for r in out["compiles"]] == ["0/0", "0/1", "0/4", "0/5"]
    assert out["compiles_dropped"] == 2


def test_functions_past_the_bound_are_not_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for one function, the second frame's compiles are left out of the
    function list (their rows are kept)."""
    monkeypatch.setattr(torch_trace, "MAX_FUNCTIONS", 1)
    out = read(metrics("0/0"), metrics("1/0", co_name="other"), metrics("1/1", co_name="other"))
    assert [(f["frame"], f["compiles"]) for f in out["functions"]] == [("0", 1)]
    assert len(out["compiles"]) == 3


def test_an_overlong_line_is_skipped_whole_and_counted_once() -> None:
    """A line longer than ``max_line`` is skipped to its end (however many reads that
    takes) and counted as one line, so the rows after it keep their line numbers; every
    byte is counted read."""
    first, long, last = metrics("0/0"), GLOG + "x" * 1000, metrics("0/1")
    data = "\n".join([first, long, last]) + "\n"
    out = read_trace(io.BytesIO(data.encode()), max_line=300)
    assert [(r["compile_id"], r["line"]) for r in out["compiles"]] == [("0/0", 1), ("0/1", 3)]
    assert (out["lines"], out["overlong_lines"], out["bytes_read"]) == (3, 1, len(data))
    assert out["cut"] is False


def test_a_line_of_exactly_max_line_bytes_is_read() -> None:
    """The bound is on the line's text: a record of exactly ``max_line`` bytes before its
    newline is read, not skipped."""
    line = metrics("0/0")
    out = read(line, max_line=len(line))
    assert (len(out["compiles"]), out["overlong_lines"]) == (1, 0)


def test_reading_stops_at_the_byte_bound_after_the_line_that_crosses_it() -> None:
    """Past ``max_bytes`` no further line is read and the result says it was cut; the
    line that crossed the bound is read whole."""
    lines = [metrics(f"0/{n}") for n in range(3)]
    first = len(lines[0]) + 1
    out = read(*lines, max_bytes=first + 1)
    assert [r["compile_id"] for r in out["compiles"]] == ["0/0", "0/1"]
    assert (out["lines"], out["bytes_read"], out["cut"]) == (2, first + len(lines[1]) + 1, True)


@pytest.mark.parametrize(
    ("data", "limits", "expected"),
    [
        (b'{"a":1}\n', {"max_bytes": 8}, (1, 0, 8, False)),
        (b'{"a":1}\n{"b":2}\n', {"max_bytes": 8}, (1, 0, 8, True)),
        (b"x" * 20 + b"\n", {"max_bytes": 21, "max_line": 5}, (1, 1, 21, False)),
    ],
    ids=["file-of-exactly-the-bound", "one-line-past-the-bound", "overlong-line-to-the-bound"],
)
def test_a_file_that_ends_at_the_byte_bound_is_not_cut(
    data: bytes, limits: dict[str, int], expected: tuple[int, int, int, bool]
) -> None:
    """(lines, overlong lines, bytes read, cut): an 8-byte file read with a bound of 8
    bytes is read to its end, so nothing is cut; a second line past the bound is left
    unread, so it is; a 21-byte over-long line skipped to the bound is the whole file."""
    out = read_trace(io.BytesIO(data), **limits)
    assert (out["lines"], out["overlong_lines"], out["bytes_read"], out["cut"]) == expected
