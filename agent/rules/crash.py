"""Crash with a stated cause: the trainer's console log says what ended a worker or the
run (CUDA out of memory, a collective timeout, an NCCL or CUDA error, torch.compile's
backend failing, or any other exception that escaped a worker thread or ended the log).
One hypothesis per cause the log states.

The evidence is the stdout-log fact's ``exception_causes``: the exception lines that
state the cause (a Python traceback's last line, or the ``what()`` of a C++ exception
that aborted the process), the last of them (matched against the signature that names
the cause), where they are (first and last line numbers), and that it ended something:
it escaped a thread (Python prints "Exception in thread NAME:" only for an exception
that ended the thread's run), or at most a launcher's epilogue follows it in the log.

The FX-trace error is the FX-race family's evidence (the symptom of a race, not a cause
of its own), so this family leaves it to that rule.

A collective timeout names the rank that fell behind where torch's Flight Recorder
dumps were read (``flight_recorder``): the first collective of a process group some
rank never enqueued, its op, and the ranks that did not reach it.
"""

from __future__ import annotations

from typing import Any

from agent.model.claims import AtLeast, AtMost, Claim, Exists, Matches
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, has, ref
from tools.parsers.signatures import COLLECTIVE_TIMEOUT, CUDA_OOM, FX_NESTED_TRACE, SIGNATURES
from tools.probes import value_paths as vp

CAUSES = vp.EXCEPTION_CAUSES
# What the FX-race family cites; a crash by it is that family's answer.
RACE_EVIDENCE = frozenset({FX_NESTED_TRACE})
# Lines a launcher or the C++ runtime prints after the exception that ended a run:
# torchrun's failure summary, a C++ exception's stack frames, a shell's "Aborted".
EPILOGUE_LINES = 100
_PATTERN = {sig.id: sig.pattern for sig in SIGNATURES}
_WHAT_NEXT: dict[str, Prediction] = {
    CUDA_OOM: Prediction(
        expect="the memory asked for grew (batch, sequence length, model) or another "
        "process held the GPU's memory",
        probe="gpus",
    ),
    COLLECTIVE_TIMEOUT: Prediction(
        expect="another rank stalled or died before this one's collective timed out "
        "(its own log shows the first exception)",
        probe="stdoutlog of every rank",
    ),
}


class CrashStated:
    kind: Kind = "crash_stated"
    needs = frozenset({"stdoutlog", "flight_recorder"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        log = evidence.latest("stdoutlog")
        if log is None:
            return []
        causes = evidence.value("stdoutlog", *CAUSES)
        if log.ok and not isinstance(causes, dict):
            return []  # a probe from before causes were grouped: it did not look
        if not isinstance(causes, dict) or not causes:
            # Nothing ended a traceback or aborted (or the log could not be read: then
            # this is unverifiable, never refuted).
            label = "exception lines ending a traceback or an abort"
            return [
                Hypothesis(
                    kind="crash_stated",
                    claims=(
                        Claim(
                            predicate=AtLeast(a=ref(log, "exception_lines", label=label), value=1)
                        ),
                    ),
                )
            ]
        behind = _timed_out_work(log) + _fell_behind(evidence.latest("flight_recorder"))
        return [
            self._one(log, key, record, behind if key == COLLECTIVE_TIMEOUT else [])
            for key, record in causes.items()
            if key not in RACE_EVIDENCE and isinstance(record, dict)
        ]

    def _one(self, log: Fact, key: str, record: dict[str, Any], more: list[Claim]) -> Hypothesis:
        at = (*CAUSES, key)
        signature = record.get("signature")
        named = isinstance(signature, str) and signature in _PATTERN
        what = record.get("means") if named else f"{record.get('exception')} raised"
        claims = [
            Claim(
                predicate=AtLeast(
                    a=ref(log, *at, "count", label=f"exception lines stating: {what}"), value=1
                )
            )
        ]
        last = ref(log, *at, "last", label="its last exception line")
        if named:
            assert isinstance(signature, str)
            claims.append(Claim(predicate=Matches(a=last, pattern=_PATTERN[signature])))
        else:
            claims.append(Claim(predicate=Exists(a=last)))
        for end in ("first", "last"):
            if isinstance(record.get(f"{end}_line"), int):
                label = f"line number of its {end} exception line"
                claims.append(Claim(predicate=Exists(a=ref(log, *at, f"{end}_line", label=label))))
        if record.get("threads") and has(log, *at, "threads"):
            label = "threads or worker processes it ended (it escaped their run)"
            claims.append(Claim(predicate=Exists(a=ref(log, *at, "threads", label=label))))
        else:
            label = "log lines after its last exception line"
            claims.append(
                Claim(
                    predicate=AtMost(
                        a=ref(log, *at, "lines_after", label=label), value=EPILOGUE_LINES
                    )
                )
            )
        claims.extend(more)
        prediction = None if more else _WHAT_NEXT.get(key)
        return Hypothesis(
            kind="crash_stated",
            claims=tuple(claims),
            predictions=(prediction,) if prediction is not None else (),
            # A cause torch names outranks an exception only its class names.
            weight=3 if named else 2,
        )


def _fell_behind(dumps: Fact | None) -> list[Claim]:
    """From torch's Flight Recorder dumps, the first collective some rank never
    enqueued and the ranks that did not reach it: who fell behind, and on what."""
    if dumps is None or not dumps.ok or not has(dumps, "first_missing", 0, "not_reached_by", 0):
        return []
    value: Any = dumps.value
    first: dict[str, Any] = value["first_missing"][0]
    ranks = ", ".join(str(r) for r in first.get("not_reached_by") or [])
    op = first.get("op") or "an op no dump names"
    seq = ref(
        dumps,
        "first_missing",
        0,
        "collective_seq_id",
        label=(
            f"the first collective of process group {first.get('pg')} that rank(s) {ranks}"
            f" never enqueued ({op}), by the ranks' Flight Recorder dumps"
        ),
    )
    rank = ref(dumps, "first_missing", 0, "not_reached_by", 0, label="the rank that fell behind")
    return [Claim(predicate=AtLeast(a=seq, value=1)), Claim(predicate=Exists(a=rank))]


def _timed_out_work(log: Fact) -> list[Claim]:
    """The collective the NCCL watchdog caught timing out (its SeqNum and op, the rank)
    and the last one that rank completed, where the console kept the watchdog's lines."""
    if not has(log, "torch_logs", "collective_timeouts", 0, "op"):
        return []
    value: Any = log.value
    first: dict[str, Any] = value["torch_logs"]["collective_timeouts"][0]
    at = ("torch_logs", "collective_timeouts", 0)
    rank = first.get("rank")
    out = [
        Claim(
            predicate=Exists(
                a=ref(
                    log,
                    *at,
                    "op",
                    label=(
                        f"the collective the NCCL watchdog caught timing out on rank {rank}"
                        f" (SeqNum {first.get('seq')}, after {first.get('ran_ms')} ms)"
                    ),
                )
            )
        )
    ]
    if isinstance(first.get("last_completed"), int):
        label = f"the last collective rank {rank} completed, by its watchdog"
        out.append(Claim(predicate=Exists(a=ref(log, *at, "last_completed", label=label))))
    return out
