"""What torch's own logs say in a console (tools/parsers/_torchlogs.py): dynamo's
recompile and graph-break lines under ``TORCH_LOGS``, its recompile-limit warning with
its continuation lines, and the NCCL watchdog's timeout and progress lines, each read
from the blocks the console scan feeds, kept per function or place, and bounded. The
lines below are written in torch 2.13's formats as the module's docstring quotes them;
every expected value is worked out from those lines."""

from __future__ import annotations

from typing import Any

import pytest

from tools.parsers import _torchlogs
from tools.parsers._torchlogs import TorchLogs

SIZE_5_6 = "tensor 'x' size mismatch at index 0. expected 5, actual 6"
SIZE_4_6 = "tensor 'x' size mismatch at index 0. expected 4, actual 6"


def logged(
    kind: str, msg: str, *, cid: str = "0/1", pid: int = 8330, rank: int | None = None
) -> str:
    """One TORCH_LOGS line with torch's prefix (and torchrun's where ``rank`` is given)."""
    launcher = "" if rank is None else f"[rank{rank}]:"
    glog = f"V1202 20:02:54.205000 {pid} torch/_dynamo/guards.py:5396]"
    return f"{launcher}{glog} [{cid}] [__{kind}] {msg}"


def recompiling(
    fn: str = "score",
    where: str = "/ws/train.py:4",
    *,
    cid: str = "0/1",
    pid: int = 8330,
    rank: int | None = None,
) -> str:
    msg = f"Recompiling function {fn} in {where}"
    return logged("recompiles", msg, cid=cid, pid=pid, rank=rank)


def failure(
    entry: str, why: str, *, cid: str = "0/1", pid: int = 8330, rank: int | None = None
) -> str:
    """A guard failure line: the cache entry ``entry`` failed for ``why``."""
    return logged("recompiles", f"    - {entry}: {why}", cid=cid, pid=pid, rank=rank)


def broke(where: str, *, suppressed: bool = False) -> str:
    note = " (user stack suppressed due to duplicate graph break)" if suppressed else ""
    return logged("graph_breaks", f"Graph break{note} in user code at {where}")


def reason(text: str) -> str:
    return logged("graph_breaks", f"Graph Break Reason: {text}")


def read(*lines: str, first_line: int | None = 1) -> dict[str, Any]:
    """The reader's result for ``lines`` fed as one block."""
    logs = TorchLogs()
    logs.feed(("\n".join(lines) + "\n").encode(), first_line, 0)
    return logs.result()


def only_function(result: dict[str, Any]) -> dict[str, Any]:
    (fn,) = result["recompiles"]["functions"]
    assert isinstance(fn, dict)
    return fn


def test_a_recompile_keeps_its_first_guard_failure_and_counts_every_line() -> None:
    """A recompile lists one failure per cache entry, newest first: the first is why it
    recompiled and is the one kept (with the tensor, index and sizes it names, and its
    console line); every failure line is counted."""
    result = read(
        recompiling(cid="0/2"),
        logged("recompiles", "    triggered by the following guard failure(s):", cid="0/2"),
        failure("0/1", SIZE_5_6, cid="0/2"),
        failure("0/0", SIZE_4_6, cid="0/2"),
    )
    assert result["recompiles"]["count"] == 1
    assert only_function(result) == {
        "function": "score",
        "file": "/ws/train.py",
        "line": 4,
        "recompiles": 1,
        "first_line": 1,
        "last_line": 1,
        "compile_ids": ["0/2"],
        "guard_failures": [
            {
                "reason": SIZE_5_6,
                "count": 1,
                "first_line": 3,
                "tensor": "x",
                "index": 0,
                "expected": 5,
                "actual": 6,
            }
        ],
        "more_guard_failures": 0,
        "guard_failure_lines": 2,
        "new_sizes": {"x[0]": [6]},
        "distinct_new_sizes": 1,
    }


def test_recompiles_of_one_function_add_up_and_a_repeated_reason_is_counted() -> None:
    """Four recompiles of one function: their count, first and last console lines and
    compile ids; a reason seen twice is one entry counted twice at its first line; the
    new sizes are the distinct ``actual`` sizes, sorted, and a reason that names no size
    adds none."""
    first = "tensor 'x' size mismatch at index 0. expected 8, actual 3"
    second = "tensor 'x' size mismatch at index 0. expected 3, actual 5"
    result = read(
        recompiling(cid="0/1"),
        failure("0/0", first, cid="0/1"),
        recompiling(cid="0/2"),
        failure("0/1", second, cid="0/2"),
        recompiling(cid="0/3"),
        failure("0/0", first, cid="0/3"),
        recompiling(cid="0/4"),
        failure("0/3", "___check_global_state()", cid="0/4"),
    )
    fn = only_function(result)
    assert (fn["recompiles"], fn["first_line"], fn["last_line"]) == (4, 1, 7)
    assert fn["compile_ids"] == ["0/1", "0/2", "0/3", "0/4"]
    assert [(g["reason"], g["count"], g["first_line"]) for g in fn["guard_failures"]] == [
        (first, 2, 2),
        (second, 1, 4),
        ("___check_global_state()", 1, 8),
    ]
    assert "tensor" not in fn["guard_failures"][2]
    assert fn["new_sizes"] == {"x[0]": [3, 5]}
    assert fn["distinct_new_sizes"] == 2
    assert fn["guard_failure_lines"] == 4


def test_distinct_new_sizes_is_the_most_any_one_dimension_took() -> None:
    """Sizes are kept per tensor and index; the distinct count is that of the dimension
    that changed most (here x[0] took two sizes, y[1] one)."""
    fn = only_function(
        read(
            recompiling(cid="0/1"),
            failure("0/0", "tensor 'x' size mismatch at index 0. expected 2, actual 3"),
            recompiling(cid="0/2"),
            failure("0/1", "tensor 'y' size mismatch at index 1. expected 7, actual 9"),
            recompiling(cid="0/3"),
            failure("0/2", "tensor 'x' size mismatch at index 0. expected 3, actual 4"),
        )
    )
    assert fn["new_sizes"] == {"x[0]": [3, 4], "y[1]": [9]}
    assert fn["distinct_new_sizes"] == 2


def test_failure_lines_follow_the_recompile_of_their_own_process() -> None:
    """Two processes' lines interleave in one console: each failure line belongs to the
    recompile its own process logged last, not to the line just above it."""
    result = read(
        recompiling("f", "/ws/a.py:1", pid=100),
        recompiling("g", "/ws/b.py:2", pid=200),
        failure("0/0", SIZE_5_6, pid=100),
        failure("0/0", "___check_global_state()", pid=200),
    )
    got = {
        f["function"]: f["guard_failures"][0]["reason"] for f in result["recompiles"]["functions"]
    }
    assert got == {"f": SIZE_5_6, "g": "___check_global_state()"}
    assert result["ranks"] == []


def test_ranks_are_read_from_the_launchers_prefix_and_keep_their_lines_apart() -> None:
    """torchrun's ``[rankN]:`` prefix names the ranks seen; two ranks whose processes
    share a pid (on two hosts) still keep their failure lines apart."""
    result = read(
        recompiling("f", "/ws/a.py:1", rank=1),
        recompiling("g", "/ws/b.py:2", rank=0),
        failure("0/0", SIZE_5_6, rank=1),
        failure("0/0", SIZE_4_6, rank=0),
    )
    assert result["ranks"] == [0, 1]
    got = {
        f["function"]: f["guard_failures"][0]["reason"] for f in result["recompiles"]["functions"]
    }
    assert got == {"f": SIZE_5_6, "g": SIZE_4_6}


def test_a_failure_line_with_no_recompile_open_is_not_anyones() -> None:
    """A failure line before any recompile is dropped; after ``gap`` (the scan skipped
    part of the log) the recompile before it is closed and gets no more failures."""
    logs = TorchLogs()
    logs.feed((failure("0/0", SIZE_5_6) + "\n").encode(), 1, 0)
    assert logs.result()["recompiles"] == {"count": 0, "functions": []}
    logs.feed((recompiling() + "\n").encode(), 2, 0)
    logs.gap()
    logs.feed((failure("0/0", SIZE_5_6) + "\n").encode(), 900, 0)
    fn = only_function(logs.result())
    assert (fn["recompiles"], fn["guard_failures"], fn["guard_failure_lines"]) == (1, [], 0)


def test_functions_are_listed_most_recompiled_first() -> None:
    """The function recompiled most comes first, whatever the order they were seen in;
    the total counts every recompile."""
    result = read(
        recompiling("once", "/ws/a.py:1"),
        recompiling("twice", "/ws/b.py:2"),
        recompiling("twice", "/ws/b.py:2"),
    )
    assert [(f["function"], f["recompiles"]) for f in result["recompiles"]["functions"]] == [
        ("twice", 2),
        ("once", 1),
    ]
    assert result["recompiles"]["count"] == 3


def test_graph_breaks_are_counted_per_place_with_their_first_reason() -> None:
    """Each break is counted at its file and line (the suppressed-stack form too), with
    the reason logged right after its first occurrence; places are listed most breaks
    first."""
    result = read(
        broke("/ws/train.py:9"),
        reason("Call to `torch._dynamo.graph_break()`"),
        broke("/ws/train.py:6"),
        reason("Data-dependent branching"),
        broke("/ws/train.py:6", suppressed=True),
        reason("Data-dependent branching, again"),
    )
    assert result["graph_breaks"] == {
        "count": 3,
        "locations": [
            {
                "file": "/ws/train.py",
                "line": 6,
                "count": 2,
                "reason": "Data-dependent branching",
                "first_line": 3,
            },
            {
                "file": "/ws/train.py",
                "line": 9,
                "count": 1,
                "reason": "Call to `torch._dynamo.graph_break()`",
                "first_line": 1,
            },
        ],
    }


def test_a_break_reason_belongs_only_to_the_break_just_before_it() -> None:
    """A reason with no break open is dropped, a break's reason is taken once (a second
    reason line is no one's), and a break with no reason line keeps none."""
    result = read(
        reason("orphan"),
        broke("/ws/train.py:6"),
        reason("first"),
        reason("second"),
        broke("/ws/model.py:3"),
    )
    reasons = {b["line"]: b["reason"] for b in result["graph_breaks"]["locations"]}
    assert reasons == {6: "first", 3: None}


TORCH_PREFIX = "[rank0]:W1202 20:02:55.000000 8330 torch/_dynamo/convert_frame.py:1016] [0/8] "


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(
            [
                TORCH_PREFIX + "torch._dynamo hit config.recompile_limit (8)",
                TORCH_PREFIX + "   function: 'score' (/ws/train.py:4)",
                TORCH_PREFIX + "   last reason: 0/7: " + SIZE_5_6,
                TORCH_PREFIX + 'To log all recompilation reasons, use TORCH_LOGS="recompiles".',
            ],
            {
                "limit": "recompile_limit",
                "value": 8,
                "rank": 0,
                "line": 1,
                "function": "score",
                "where": "/ws/train.py:4",
                "last_reason": "0/7: " + SIZE_5_6,
            },
            id="torch-formatter-under-torchrun",
        ),
        pytest.param(
            [
                "step 10 loss 1.0",
                "torch._dynamo hit config.cache_size_limit (64)",
                "   function: 'forward' (/ws/model.py:10)",
                "   last reason: 1/63: ___check_obj_id(L['self'], 1234)",
            ],
            {
                "limit": "cache_size_limit",
                "value": 64,
                "rank": None,
                "line": 2,
                "function": "forward",
                "where": "/ws/model.py:10",
                "last_reason": "1/63: ___check_obj_id(L['self'], 1234)",
            },
            id="plain-logging-older-limit",
        ),
        pytest.param(
            ["W1202 20:02:55 1 x.py:1] torch._dynamo hit config.accumulated_recompile_limit (256)"],
            {
                "limit": "accumulated_recompile_limit",
                "value": 256,
                "rank": None,
                "line": 1,
                "function": None,
                "where": None,
                "last_reason": None,
            },
            id="accumulated-limit-without-continuation",
        ),
    ],
)
def test_the_recompile_limit_warning_is_read_with_its_continuation(
    lines: list[str], expected: dict[str, Any]
) -> None:
    """The warning's limit, value, rank and console line, and the function and last
    reason its continuation lines give, whichever form the logging took."""
    assert read(*lines)["limit_hits"] == [expected]


def test_a_limit_warning_continues_across_blocks_but_not_across_a_gap() -> None:
    """The continuation lines are the warning's when they come in the next block; once
    the scan skipped part of the log, a ``function:`` line is no longer the warning's."""
    head = b"torch._dynamo hit config.recompile_limit (8)\n"
    tail = b"   function: 'score' (/ws/train.py:4)\n"
    joined = TorchLogs()
    joined.feed(head, 1, 0)
    joined.feed(tail, 2, len(head))
    assert joined.result()["limit_hits"][0]["function"] == "score"
    cut = TorchLogs()
    cut.feed(head, 1, 0)
    cut.gap()
    cut.feed(tail, 50, 0)
    assert cut.result()["limit_hits"][0]["function"] is None


def test_any_other_line_ends_the_limit_warning() -> None:
    """A line that is neither the function nor the last reason ends the warning: a
    ``function:`` line after it belongs to something else. Without line numbers (a block
    read from the tail) the warning's line is None."""
    result = read(
        "torch._dynamo hit config.recompile_limit (8)",
        "step 5 loss 1.0",
        "   function: 'other' (/ws/other.py:1)",
        first_line=None,
    )
    (hit,) = result["limit_hits"]
    assert (hit["function"], hit["line"]) == (None, None)


WATCHDOG = (
    "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
    "milliseconds before timing out."
)


def test_a_collective_timeout_is_read_once_with_its_ranks_progress() -> None:
    """The watchdog's timeout (its rank, sequence number, operation, timeout and how long
    it ran) is one entry however often it is printed (glog's line, then the exception's
    text), joined with that rank's last enqueued and completed work; a rank that only
    reports its progress (a dump signal from another rank) is listed in ``nccl_work``."""
    glog = "[rank1]:[E1202 20:10:00.000000 123 ProcessGroupNCCL.cpp:632] "
    result = read(
        glog + WATCHDOG,
        glog
        + "[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) "
        + "detected by watchdog at work: 42, last enqueued NCCL work: 43, "
        + "last completed NCCL work: 41.",
        "[rank0]:[E1202 20:10:01.000000 122 ProcessGroupNCCL.cpp:1700] [PG ID 0 PG GUID "
        + "0(default_pg) Rank 0] Received a dump signal due to a collective timeout from "
        + "rank 1. Last enqueued NCCL work: 43, last completed NCCL work: 42.",
        "RuntimeError: " + WATCHDOG,
    )
    assert result["collective_timeouts"] == [
        {
            "rank": 1,
            "seq": 42,
            "op": "ALLREDUCE",
            "timeout_ms": 600000,
            "ran_ms": 600010,
            "line": 1,
            "mentions": 2,
            "last_enqueued": 43,
            "last_completed": 41,
            "work_line": 2,
        }
    ]
    assert result["nccl_work"] == {
        "0": {"last_enqueued": 43, "last_completed": 42, "work_line": 3},
        "1": {"last_enqueued": 43, "last_completed": 41, "work_line": 2},
    }


def test_a_function_past_the_bound_is_overflow_and_takes_no_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for one function, a second is counted as overflow, and the failure
    lines that follow its recompile are not pinned on the first function."""
    monkeypatch.setattr(_torchlogs, "MAX_KEYS", 1)
    result = read(
        recompiling("f", "/ws/a.py:1"),
        failure("0/0", SIZE_5_6),
        recompiling("g", "/ws/b.py:2"),
        failure("1/0", SIZE_4_6),
    )
    fn = only_function(result)
    assert fn["function"] == "f" and fn["guard_failure_lines"] == 1
    assert result["overflow"] == 1


def test_a_break_place_past_the_bound_is_overflow_and_takes_no_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for one break place, a second is overflow, and the reason logged after
    it is not given to the first place."""
    monkeypatch.setattr(_torchlogs, "MAX_KEYS", 1)
    result = read(broke("/ws/train.py:6"), broke("/ws/train.py:9"), reason("nine"))
    assert result["graph_breaks"]["locations"] == [
        {"file": "/ws/train.py", "line": 6, "count": 1, "reason": None, "first_line": 1}
    ]
    assert result["overflow"] == 1


def test_failures_past_the_bound_are_counted_and_their_sizes_still_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for one distinct failure (and one compile id), a second distinct reason
    is counted in ``more_guard_failures``; the new size it names is still kept."""
    monkeypatch.setattr(_torchlogs, "MAX_FAILURES", 1)
    fn = only_function(
        read(
            recompiling(cid="0/1"),
            failure("0/0", SIZE_4_6),
            recompiling(cid="0/2"),
            failure("0/1", "tensor 'x' size mismatch at index 0. expected 6, actual 7"),
        )
    )
    assert [g["reason"] for g in fn["guard_failures"]] == [SIZE_4_6]
    assert fn["more_guard_failures"] == 1
    assert fn["compile_ids"] == ["0/1"]
    assert fn["new_sizes"] == {"x[0]": [6, 7]}


def test_new_sizes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for two sizes per dimension, the third new size is not kept."""
    monkeypatch.setattr(_torchlogs, "MAX_SIZES", 2)
    lines = []
    for n in (5, 6, 7):
        lines += [
            recompiling(cid=f"0/{n}"),
            failure("0/0", f"tensor 'x' size mismatch at index 0. expected 4, actual {n}"),
        ]
    assert only_function(read(*lines))["new_sizes"] == {"x[0]": [5, 6]}


def test_a_long_reason_is_clipped_to_the_text_bound() -> None:
    """A reason is kept stripped and at most ``MAX_TEXT`` (300) characters long."""
    fn = only_function(read(recompiling(), failure("0/0", "a" * 400 + "   ")))
    assert fn["guard_failures"][0]["reason"] == "a" * 300
