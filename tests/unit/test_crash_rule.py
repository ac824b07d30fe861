"""The crash family's rule table: stdout-log facts made by the real parser from torch's
texts (tests/lib/torch_error_texts.py), checked in memory: verified, refuted, unverifiable,
not proposed; and the FX-race family refuted on every crash that is not its own."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, rank, verify
from agent.report.summaries import fact_summary
from agent.rules.base import Evidence
from agent.rules.crash import EPILOGUE_LINES, CrashStated
from agent.rules.fx_trace_race import FxTraceRace
from tests.lib import torch_error_texts as texts
from tests.lib.torch_error_texts import thread_crash
from tools.parsers import stdoutlog


def main_crash(last: str, prefix: str = "") -> list[str]:
    return [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/srv/train.py", line 90, in <module>',
        f"{prefix}    main()",
        f"{prefix}{last}",
    ]


PROGRESS = [f"step {i} loss 2.0" for i in range(1, 21)]


def log_fact(
    tmp_path: Path, lines: list[str], ledger: Ledger, **scan_kw: Any
) -> tuple[Fact, dict[str, Any]]:
    p = tmp_path / "console.log"
    p.write_text("\n".join(lines) + "\n")
    with io.FileIO(str(p), "r") as f:
        value = stdoutlog.scan(f, **scan_kw)
    fact = ledger.append(Fact(probe="stdoutlog", target="local", value=value))
    return fact, value


def checked(ledger: Ledger, fact: Fact, rule: Any = None) -> list[Hypothesis]:
    evidence = Evidence(ledger, [fact.id])
    return rank([verify(h, ledger) for h in (rule or CrashStated()).propose(evidence)])


def sentences(h: Hypothesis) -> str:
    return "\n".join(f"{v.outcome}: {v.sentence}" for v in h.verdicts)


def test_oom_in_two_workers_is_one_verified_cause(tmp_path: Path) -> None:
    """CUDA OOM in two worker threads is one verified cause: it counts both, names the threads it
    ended, quotes torch's message and asks the gpus probe next."""
    ledger = Ledger()
    lines = [
        *PROGRESS,
        *thread_crash("gpu-1", texts.CUDA_OOM),
        *thread_crash("gpu-2", texts.CUDA_OOM),
        "step 21 loss 2.0",  # the other workers go on a little
    ]
    fact, _ = log_fact(tmp_path, lines, ledger)
    [h] = checked(ledger, fact)
    assert h.status == "verified", sentences(h)
    text = sentences(h)
    assert "exception lines stating: a GPU ran out of memory = 2" in text
    assert "line number of its first exception line = 25" in text
    assert "line number of its last exception line = 30" in text
    assert (
        "threads or worker processes it ended (it escaped their run) = ['gpu-1', 'gpu-2']" in text
    )
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate" in text
    assert h.predictions and h.predictions[0].probe == "gpus"
    assert h.cites == [fact.id]


def test_nccl_abort_at_the_end_of_the_log_is_verified(tmp_path: Path) -> None:
    """An NCCL abort followed only by its C++ frame dump ended the run: verified, with weight 3,
    though 21 lines follow its last exception line."""
    ledger = Ledger()
    frames = [f"frame #{i}: c10::Error::Error() + 0x96" for i in range(20)]
    fact, _ = log_fact(tmp_path, [*PROGRESS, *texts.NCCL_ABORT_LINES, *frames], ledger)
    [h] = checked(ledger, fact)
    assert h.status == "verified", sentences(h)
    assert "log lines after its last exception line = 21" in sentences(h)
    assert h.weight == 3


def test_an_nccl_timeout_names_the_collective_and_the_last_one_completed(
    tmp_path: Path,
) -> None:
    """The watchdog's lines (ProcessGroupNCCL.cpp) say which collective timed out on which
    rank and the last one that rank completed: the crash cites them from the console's
    torch_logs, once each though the timeout is printed twice (glog, then what())."""
    ledger = Ledger()
    work = texts.glog_line(texts.NCCL_WATCHDOG_WORK, source="ProcessGroupNCCL.cpp:1785")
    fact, _ = log_fact(tmp_path, [*PROGRESS, work, *texts.NCCL_ABORT_LINES], ledger)
    [h] = checked(ledger, fact)
    assert h.status == "verified", sentences(h)
    text = sentences(h)
    assert (
        "the collective the NCCL watchdog caught timing out on rank 1 (SeqNum 6463, after "
        "600017 ms) = 'ALLREDUCE'"
    ) in text, text
    assert "the last collective rank 1 completed, by its watchdog = 6,462 " in text, text


def test_a_logged_exception_the_run_survived_is_refuted(tmp_path: Path) -> None:
    """A traceback in the main thread with the run's progress after it did not end the
    run: refuted on the count of lines after it, never verified by its mere presence."""
    ledger = Ledger()
    after = [f"step {i} loss 1.0" for i in range(EPILOGUE_LINES + 1)]
    fact, _ = log_fact(tmp_path, [*main_crash("ValueError: bad row 17"), *after], ledger)
    [h] = checked(ledger, fact)
    assert h.status == "refuted", sentences(h)
    assert f"log lines after its last exception line = {EPILOGUE_LINES + 1}" in sentences(h)


def test_healthy_log_is_checked_and_refuted(tmp_path: Path) -> None:
    """A log with progress and no exception is still checked, and the crash is refuted on a count of
    zero exception lines."""
    ledger = Ledger()
    fact, _ = log_fact(tmp_path, PROGRESS, ledger)
    [h] = checked(ledger, fact)
    assert h.status == "refuted"
    assert "exception lines ending a traceback or an abort = 0" in sentences(h)


def test_unreadable_log_is_unverifiable_never_refuted() -> None:
    """A log that could not be read says nothing about a crash: unverifiable, never refuted."""
    ledger = Ledger()
    fact = ledger.append(Fact(probe="stdoutlog", target="local", error="not_found: no such file"))
    [h] = checked(ledger, fact)
    assert h.status == "unverifiable"


def test_crash_where_the_log_was_read_as_head_and_tail(tmp_path: Path) -> None:
    """A main-thread traceback in the head of a log whose middle was skipped: how much
    followed it is unknown, so whether it ended the run is unverifiable."""
    ledger = Ledger()
    filler = [f"step {i} " + "x" * 200 for i in range(4000)]
    lines = [*main_crash(texts.CUDA_OOM), *filler]
    fact, value = log_fact(tmp_path, lines, ledger, max_scan=200_000, head=40_000)
    assert value["coverage"]["mode"] == "head+tail"
    [h] = checked(ledger, fact)
    assert h.status == "unverifiable", sentences(h)


def test_fact_from_an_older_probe_proposes_nothing(tmp_path: Path) -> None:
    """A recorded fact from before causes were grouped did not look for them."""
    ledger = Ledger()
    _, value = log_fact(tmp_path, main_crash(texts.CUDA_OOM), ledger)
    del value["exception_causes"], value["exception_lines"]
    old = ledger.append(Fact(probe="stdoutlog", target="old", value=value))
    assert CrashStated().propose(Evidence(ledger, [old.id])) == []


def test_fx_trace_error_is_left_to_the_race_family(tmp_path: Path) -> None:
    """The FX-trace error in a worker is the race's evidence: no crash proposed for it;
    an OOM beside it is a crash of its own."""
    ledger = Ledger()
    lines = [*thread_crash("drafter-1", texts.FX_NESTED_TRACE), *main_crash(texts.CUDA_OOM)]
    fact, _ = log_fact(tmp_path, lines, ledger)
    found = checked(ledger, fact)
    assert len(found) == 1 and "out of memory" in sentences(found[0])
    only_fx, _ = log_fact(tmp_path, thread_crash("drafter-1", texts.FX_NESTED_TRACE), ledger)
    assert CrashStated().propose(Evidence(ledger, [only_fx.id])) == []


@pytest.mark.parametrize(
    "crash",
    [
        thread_crash("drafter-0", texts.CUDA_OOM),
        texts.NCCL_ABORT_LINES,
        main_crash(texts.GLOO_TIMEOUT, "[rank0]: "),
        thread_crash("target-1", texts.INDUCTOR_ERROR),
        thread_crash("drafter-2", "ValueError: bad batch 7"),
    ],
    ids=["oom", "nccl-timeout", "gloo-timeout", "inductor", "thread-valueerror"],
)
def test_no_crash_is_called_an_fx_race(tmp_path: Path, crash: list[str]) -> None:
    """Each crash is verified as what it states; the FX race, which needs torch's
    FX-trace error, is refuted on the same log."""
    ledger = Ledger()
    fact, _ = log_fact(tmp_path, [*PROGRESS, *crash], ledger)
    [h] = checked(ledger, fact)
    assert h.status == "verified", sentences(h)
    [race] = checked(ledger, fact, FxTraceRace())
    assert race.status == "refuted", sentences(race)


def test_distinct_causes_are_one_hypothesis_each_named_first(tmp_path: Path) -> None:
    """A worker's ValueError, then the OOM that ended the run: two causes; the one torch
    names ranks above the one only its class names."""
    ledger = Ledger()
    lines = [*thread_crash("loader-0", "ValueError: bad batch 7"), *main_crash(texts.CUDA_OOM)]
    fact, _ = log_fact(tmp_path, lines, ledger)
    found = checked(ledger, fact)
    assert [h.status for h in found] == ["verified", "verified"]
    assert "out of memory" in sentences(found[0])
    assert "ValueError raised" in sentences(found[1])


def test_fact_summary_names_the_causes(tmp_path: Path) -> None:
    """The log fact's one-line summary counts exception lines by cause (``cuda_oom×2``), so a reader
    sees them without opening the fact."""
    ledger = Ledger()
    lines = [*thread_crash("gpu-1", texts.CUDA_OOM), *thread_crash("gpu-2", texts.CUDA_OOM)]
    fact, _ = log_fact(tmp_path, lines, ledger)
    assert fact_summary(fact).endswith(" · exception lines by cause: cuda_oom×2")


def test_the_race_outranks_a_crash_beside_it(tmp_path: Path) -> None:
    """The incident's log with torch's other error in a second worker: both verified, the
    FX race (the explanation) ranked above the crash it caused."""
    ledger = Ledger()
    lines = [
        *PROGRESS,
        *thread_crash("drafter-1", texts.FX_NESTED_TRACE),
        *thread_crash("target-2", "NameError: module is not installed as a submodule"),
    ]
    log, _ = log_fact(tmp_path, lines, ledger)
    source = ledger.append(
        Fact(
            probe="torch_source",
            target="local",
            value={
                "binds_check_at_wrap": {"value": True},
                "holds_compiling_flag": {"value": False},
            },
        )
    )
    evidence = Evidence(ledger, [log.id, source.id])
    proposed = [*FxTraceRace().propose(evidence), *CrashStated().propose(evidence)]
    found = rank([verify(h, ledger) for h in proposed])
    assert [(h.kind, h.status) for h in found] == [
        ("fx_trace_race", "verified"),
        ("crash_stated", "verified"),
    ], [sentences(h) for h in found]
    assert "NameError raised" in sentences(found[1])


def test_another_threads_print_inside_a_traceback_is_not_its_exception(tmp_path: Path) -> None:
    """Threads share the console: a worker's progress line can land between the frames
    of another worker's traceback and its exception line (the clean-clone CI run saw
    "step 50 device=cpu:2 …" read as the exception). A line that does not start with a
    class name is skipped; the exception line after it is the cause."""
    ledger = Ledger()
    crash = thread_crash("drafter-1", texts.NCCL_ERROR)
    lines = [*PROGRESS, *crash[:-1], "step 50 device=cpu:2 loss=1.2345 acc=0.500", crash[-1]]
    fact, value = log_fact(tmp_path, lines, ledger)
    assert list(value["exceptions"]) == ["torch.distributed.DistBackendError"]
    [h] = checked(ledger, fact)
    assert h.status == "verified", sentences(h)
    assert "DistBackendError" in sentences(h) and "step 50 device" not in sentences(h)
