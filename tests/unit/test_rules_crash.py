"""``agent.rules.crash``: the crash-with-a-stated-cause family's proposals, read from
hand-built console facts. One hypothesis per cause the log states, its claims shaped by
what the fact holds: a cause torch names is matched against its signature, an exception
only its class names must exist; line numbers, the threads it ended or the epilogue after
it; and for a collective timeout, the watchdog's and the Flight Recorder's word on who
fell behind."""

from __future__ import annotations

from typing import Any

from agent.model.claims import AtLeast, AtMost, Claim, Exists, Matches, Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Prediction
from agent.rules.base import Evidence
from agent.rules.crash import EPILOGUE_LINES, CrashStated
from tools.parsers.signatures import (
    COLLECTIVE_TIMEOUT,
    CUDA_OOM,
    FX_NESTED_TRACE,
    SIGNATURES,
)

PATTERN = {sig.id: sig.pattern for sig in SIGNATURES}


def proposed(*facts: tuple[str, Any, str | None]) -> tuple[list[Hypothesis], list[Fact]]:
    """The crash family's proposals on facts given as (probe, value, error)."""
    ledger = Ledger()
    stored = [
        ledger.append(Fact(probe=probe, target="local", value=value, error=error))
        for probe, value, error in facts
    ]
    return CrashStated().propose(Evidence(ledger, [f.id for f in stored])), stored


def causes(**records: Any) -> tuple[str, Any, None]:
    """A console fact whose ``exception_causes`` are ``records``."""
    return ("stdoutlog", {"exception_causes": records}, None)


def at(fact: Fact, key: str, field: str, label: str) -> Ref:
    return Ref(fact=fact.id, path=("exception_causes", key, field), label=label)


def test_no_console_fact_proposes_nothing() -> None:
    """Without a console log there is no crash to weigh."""
    hypotheses, _ = proposed(("trainlog", {"records": 3}, None))
    assert hypotheses == []


def test_a_cause_torch_names_is_matched_and_located_and_its_threads_named() -> None:
    """A CUDA OOM ending two threads: counted with torch's meaning in its label, its last
    line matched against the OOM signature, both line numbers and the threads claimed to
    exist; it asks the gpus probe next and weighs 3."""
    record = {
        "signature": CUDA_OOM,
        "means": "a GPU ran out of memory",
        "count": 2,
        "last": "torch.OutOfMemoryError: CUDA out of memory.",
        "first_line": 25,
        "last_line": 30,
        "threads": ["gpu-1", "gpu-2"],
    }
    (h,), (log,) = proposed(causes(**{CUDA_OOM: record}))
    assert h == Hypothesis(
        kind="crash_stated",
        claims=(
            Claim(
                predicate=AtLeast(
                    a=at(
                        log, CUDA_OOM, "count", "exception lines stating: a GPU ran out of memory"
                    ),
                    value=1,
                )
            ),
            Claim(
                predicate=Matches(
                    a=at(log, CUDA_OOM, "last", "its last exception line"),
                    pattern=PATTERN[CUDA_OOM],
                )
            ),
            Claim(
                predicate=Exists(
                    a=at(log, CUDA_OOM, "first_line", "line number of its first exception line")
                )
            ),
            Claim(
                predicate=Exists(
                    a=at(log, CUDA_OOM, "last_line", "line number of its last exception line")
                )
            ),
            Claim(
                predicate=Exists(
                    a=at(
                        log,
                        CUDA_OOM,
                        "threads",
                        "threads or worker processes it ended (it escaped their run)",
                    )
                )
            ),
        ),
        predictions=(
            Prediction(
                expect="the memory asked for grew (batch, sequence length, model) or another "
                "process held the GPU's memory",
                probe="gpus",
            ),
        ),
        weight=3,
    )


def test_an_exception_only_its_class_names_must_exist_and_end_the_log() -> None:
    """An exception no signature names is "<class> raised", its last line need only exist,
    a line number that is not an integer is not claimed, and with no thread it ended it
    must be followed by at most the launcher's epilogue; no next probe, weight 2."""
    record = {
        "signature": "made_up",  # not a known signature: named by its class
        "exception": "ValueError",
        "means": "never used",
        "first_line": "12",
        "last_line": 40,
        "threads": [],
    }
    (h,), (log,) = proposed(causes(ValueError=record))
    assert h.claims == (
        Claim(
            predicate=AtLeast(
                a=at(log, "ValueError", "count", "exception lines stating: ValueError raised"),
                value=1,
            )
        ),
        Claim(predicate=Exists(a=at(log, "ValueError", "last", "its last exception line"))),
        Claim(
            predicate=Exists(
                a=at(log, "ValueError", "last_line", "line number of its last exception line")
            )
        ),
        Claim(
            predicate=AtMost(
                a=at(log, "ValueError", "lines_after", "log lines after its last exception line"),
                value=EPILOGUE_LINES,
            )
        ),
    )
    assert (h.predictions, h.weight) == ((), 2)


def test_the_race_evidence_and_records_of_no_shape_are_left_out() -> None:
    """The FX-trace error is the race family's evidence and a record that is no mapping
    says nothing: only the other causes are proposed, in the log's order."""
    oom = {"signature": CUDA_OOM, "means": "a GPU ran out of memory"}
    other = {"exception": "KeyError"}
    hypotheses, (log,) = proposed(
        causes(
            **{
                FX_NESTED_TRACE: {"signature": FX_NESTED_TRACE},
                "odd": "text",
                "KeyError": other,
                CUDA_OOM: oom,
            }
        )
    )
    assert [h.claims[0].predicate.a for h in hypotheses] == [
        at(log, "KeyError", "count", "exception lines stating: KeyError raised"),
        at(log, CUDA_OOM, "count", "exception lines stating: a GPU ran out of memory"),
    ]


TIMEOUT = {"signature": COLLECTIVE_TIMEOUT, "means": "a collective timed out", "count": 1}


def test_a_collective_timeout_alone_asks_for_every_ranks_log() -> None:
    """With neither the watchdog's lines nor Flight Recorder dumps, a collective timeout
    predicts that another rank stalled first and asks for every rank's log."""
    (h,), _ = proposed(causes(**{COLLECTIVE_TIMEOUT: TIMEOUT}))
    assert h.predictions == (
        Prediction(
            expect="another rank stalled or died before this one's collective timed out "
            "(its own log shows the first exception)",
            probe="stdoutlog of every rank",
        ),
    )


def test_a_collective_timeout_names_the_work_and_the_rank_that_fell_behind() -> None:
    """The watchdog's timed-out collective (rank, SeqNum, time) and the last one that rank
    completed, then the Flight Recorder's first collective never enqueued and the rank
    that did not reach it, are added to the timeout only; with them no next probe is
    predicted."""
    console = {
        "exception_causes": {
            COLLECTIVE_TIMEOUT: TIMEOUT,
            CUDA_OOM: {"signature": CUDA_OOM, "means": "a GPU ran out of memory"},
        },
        "torch_logs": {
            "collective_timeouts": [
                {"op": "ALLREDUCE", "rank": 0, "seq": 41, "ran_ms": 600000, "last_completed": 40}
            ]
        },
    }
    dumps = {
        "first_missing": [
            {"pg": 0, "op": "allreduce", "collective_seq_id": 41, "not_reached_by": [1, 3]}
        ]
    }
    (timeout, oom), (log, recorder) = proposed(
        ("stdoutlog", console, None), ("flight_recorder", dumps, None)
    )
    watchdog = ("torch_logs", "collective_timeouts", 0)
    missing = ("first_missing", 0)
    assert timeout.claims[-4:] == (
        Claim(
            predicate=Exists(
                a=Ref(
                    fact=log.id,
                    path=(*watchdog, "op"),
                    label="the collective the NCCL watchdog caught timing out on rank 0"
                    " (SeqNum 41, after 600000 ms)",
                )
            )
        ),
        Claim(
            predicate=Exists(
                a=Ref(
                    fact=log.id,
                    path=(*watchdog, "last_completed"),
                    label="the last collective rank 0 completed, by its watchdog",
                )
            )
        ),
        Claim(
            predicate=AtLeast(
                a=Ref(
                    fact=recorder.id,
                    path=(*missing, "collective_seq_id"),
                    label="the first collective of process group 0 that rank(s) 1, 3 never"
                    " enqueued (allreduce), by the ranks' Flight Recorder dumps",
                ),
                value=1,
            )
        ),
        Claim(
            predicate=Exists(
                a=Ref(
                    fact=recorder.id,
                    path=(*missing, "not_reached_by", 0),
                    label="the rank that fell behind",
                )
            )
        ),
    )
    assert timeout.predictions == ()
    assert len(oom.claims) == 3  # count, match, epilogue: none of the timeout's evidence
    assert oom.predictions[0].probe == "gpus"


def test_a_flight_recorder_that_names_no_rank_adds_nothing() -> None:
    """Dumps with no rank that missed a collective, or a failed dump read, add no claim;
    a watchdog line without a completed collective adds only the timed-out one."""
    console = {
        "exception_causes": {COLLECTIVE_TIMEOUT: TIMEOUT},
        "torch_logs": {
            "collective_timeouts": [{"op": "BROADCAST", "rank": 2, "seq": 7, "ran_ms": 1800000}]
        },
    }
    for recorder in (
        ("flight_recorder", {"first_missing": [{"pg": 0, "not_reached_by": []}]}, None),
        ("flight_recorder", None, "no dumps readable"),
    ):
        (h,), _ = proposed(("stdoutlog", console, None), recorder)
        assert [c.predicate.op for c in h.claims] == ["at_least", "matches", "at_most", "exists"]
        assert h.claims[-1].predicate.a.label == (
            "the collective the NCCL watchdog caught timing out on rank 2 (SeqNum 7, after"
            " 1800000 ms)"
        )
