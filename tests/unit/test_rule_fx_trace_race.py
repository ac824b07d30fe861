"""The FX-trace-race rule: torch's nested-FX-trace error raised in worker threads, compiled
wrappers that bind the FX check when they are created, and, on a torch that does not hold
its compiling flag while compiling, a concurrent compile enough to set it off; where no error
was printed, the live probe catching one thread FX-tracing while another runs compiled code.
With the error in hand the rule also claims where it struck (threads, new lengths, the torch
build). Facts are built in memory as the probes write them; the claims are checked on them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry
from agent.model.claims import Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.fx_trace_race import FxTraceRace
from tools.parsers.signatures import FX_ERROR_TEXT

FIRST = f"RuntimeError: {FX_ERROR_TEXT}. This is not supported."


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def console(errors: int, escaped: int | None = None) -> dict[str, Any]:
    """A console fact's value: ``errors`` FX-trace error lines, the first quoted, and the
    exceptions that escaped a thread (as many as the errors unless told)."""
    fx: dict[str, Any] = {"count": errors}
    if errors:
        fx["first"] = FIRST
    escaped = errors if escaped is None else escaped
    return {"signatures": {"fx_nested_trace": fx, "thread_exception": {"count": escaped}}}


def source(holds: bool | None, binds: bool = True) -> dict[str, Any]:
    return {"binds_check_at_wrap": {"value": binds}, "holds_compiling_flag": {"value": holds}}


class Session:
    def __init__(self) -> None:
        self.ledger = Ledger()
        self.ids: list[str] = []
        self.diff: list[DiffEntry] = []

    def add(self, probe: str, value: Any = None, error: str | None = None) -> Fact:
        fact = self.ledger.append(Fact(probe=probe, target="local", value=value, error=error))
        self.ids.append(fact.id)
        return fact

    def proposed(self) -> list[Hypothesis]:
        return FxTraceRace().propose(Evidence(self.ledger, self.ids, self.diff))

    def checked(self) -> Hypothesis:
        [h] = [verify(h, self.ledger) for h in self.proposed()]
        return h


def test_printed_errors_on_a_torch_that_lets_compiles_race_are_verified() -> None:
    """Three FX-trace errors, each escaping a thread, on a torch whose wrappers bind the
    check and whose compilation does not hold the compiling flag: every claim holds, and
    the weight is the error count plus 2."""
    s = Session()
    log = s.add("stdoutlog", console(3))
    src = s.add("torch_source", source(holds=False))
    h = s.checked()
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"FX-trace error lines = 3 [{log.id}] ≥ 1"),
        ("holds", f"first FX-trace error [{log.id}] contains {FX_ERROR_TEXT!r}"),
        ("holds", f"exceptions escaping a thread = 3 [{log.id}] ≥ 1"),
        ("holds", f"compiled wrappers bind the FX check at creation = True [{src.id}] equals True"),
        ("holds", f"compilation holds torch's compiling flag = False [{src.id}] equals False"),
    ]
    assert h.weight == 5
    assert h.predictions == ()


def test_a_torch_that_holds_its_compiling_flag_predicts_another_tracer() -> None:
    """Where torch holds its compiling flag during compilation, a compile alone cannot
    trip the check: no claim on the flag, and the prediction says something else in the
    process sets the tracing flag."""
    s = Session()
    s.add("stdoutlog", console(1))
    s.add("torch_source", source(holds=True))
    h = s.checked()
    assert len(h.verdicts) == 4
    assert said(h)[-1][1].startswith("compiled wrappers bind the FX check at creation")
    [p] = h.predictions
    assert (p.expect, p.probe) == (
        "something in the process other than torch's own compilation (an FX trace, make_fx, "
        "an emulation) sets the tracing flag, since this torch holds its compiling flag while "
        "compiling",
        "processes / the trainer's code",
    )


def test_an_error_that_escaped_no_thread_refutes_the_race() -> None:
    """FX-trace errors that no thread died of are not the race's worker-thread failure:
    the escaping-exception claim fails on its count."""
    s = Session()
    log = s.add("stdoutlog", console(2, escaped=0))
    h = s.checked()
    assert h.status == "refuted"
    assert said(h)[2] == ("fails", f"exceptions escaping a thread = 0 [{log.id}] < 1")


def test_a_console_without_the_error_and_nothing_caught_live_is_refuted() -> None:
    """No FX-trace error printed and no live sighting: the race is refuted on the zero
    count alone, with weight 3 (one, plus 2)."""
    s = Session()
    log = s.add("stdoutlog", console(0))
    h = s.checked()
    assert h.status == "refuted"
    assert said(h) == [("fails", f"FX-trace error lines = 0 [{log.id}] < 1")]
    assert h.weight == 3


def test_an_unreadable_console_leaves_the_race_open() -> None:
    """A console that could not be read neither shows nor refutes the error: the race is
    proposed and unverifiable."""
    s = Session()
    log = s.add("stdoutlog", None, "not_found: console.log")
    h = s.checked()
    assert h.status == "unverifiable"
    assert said(h) == [
        ("unverifiable", f"{log.id} (stdoutlog) is a failed observation: not_found: console.log")
    ]


def test_no_console_fact_proposes_nothing() -> None:
    """Without a console fact the race has nothing to rest on and is not proposed."""
    s = Session()
    s.add("torch_source", source(holds=False))
    assert s.proposed() == []


def live(*procs: dict[str, Any]) -> dict[str, Any]:
    return {"processes": list(procs)}


def proc(pid: int, overlaps: int) -> dict[str, Any]:
    threads = [{"tid": 31, "name": "drafter-1"}, {"tid": 32, "name": "drafter-2"}]
    found: dict[str, Any] = {"samples": overlaps}
    if overlaps:
        found.update(tracer=31, caller=32)
    return {"pid": pid, "threads": threads, "fx_trace_overlaps": found}


def test_the_race_caught_live_stands_in_for_the_printed_error() -> None:
    """No error printed (the race running eagerly), but the live probe saw thread
    'drafter-1' FX-tracing while 'drafter-2' was inside a compiled function: that sighting,
    in the first process that had one, is the race's claim, with no error-text claims."""
    s = Session()
    s.add("stdoutlog", console(0))
    fact = s.add("live", live(proc(100, 0), proc(200, 2)))
    h = s.checked()
    assert h.status == "verified"
    assert said(h) == [
        (
            "holds",
            "samples of pid 200 in which thread 'drafter-1' (tid 31) FX-traced while thread "
            f"'drafter-2' (tid 32) was inside a compiled function = 2 [{fact.id}] ≥ 1",
        )
    ]
    assert h.weight == 3


def test_a_printed_error_is_claimed_before_a_live_sighting() -> None:
    """With the error printed, the console's claims are made and the live sighting is not
    added to them."""
    s = Session()
    log = s.add("stdoutlog", console(1))
    s.add("live", live(proc(200, 2)))
    h = s.checked()
    assert h.cites == [log.id]


@pytest.mark.parametrize(
    ("workers", "outcome", "sentence"),
    [
        ("threads", "holds", "= 'threads' [{ck}] equals 'threads'"),
        ("processes", "fails", "= 'processes' [{ck}] differs from 'threads'"),
    ],
    ids=["worker-threads", "worker-processes"],
)
def test_the_worker_mode_the_trainer_recorded_is_claimed(
    workers: str, outcome: str, sentence: str
) -> None:
    """With the error printed, the worker mode the newest checkpoint recorded is claimed to
    be threads: the race lives between threads of one process."""
    s = Session()
    s.add("stdoutlog", console(1))
    ck = s.add("checkpoints", {"recorded": {"config": {"workers": workers}}})
    h = s.checked()
    label = "worker mode the trainer recorded (one per device) "
    assert said(h)[-1] == (outcome, label + sentence.format(ck=ck.id))


def test_new_lengths_and_the_torch_build_are_claimed_where_the_facts_hold_them() -> None:
    """With the error printed, a longest prompt grown since the baseline and the torch
    build the interpreter has are each claimed; a compared length that did not change is
    not."""
    s = Session()
    s.add("stdoutlog", console(1))
    then = s.add("dataset", {"files": [{"path": "/w/a", "line_bytes": {"max": 700}}]})
    now = s.add("dataset", {"files": [{"path": "/w/a", "line_bytes": {"max": 900}}]})
    env = s.add("pyenv", {"key_packages": {"torch": "2.11.0+cu130"}})

    def longest(path: str, current: int, baseline: int) -> DiffEntry:
        at = ("files", f"@path={path}", "line_bytes", "max")
        return DiffEntry(
            key=f"dataset.longest:{path}",
            label="longest",
            current=Ref(fact=now.id, path=at, label=f"longest line of {path} now"),
            baseline=Ref(fact=then.id, path=at, label=f"longest line of {path} then"),
            current_value=current,
            baseline_value=baseline,
        )

    s.diff = [longest("/w/same", 700, 700), longest("/w/a", 900, 700)]
    h = s.checked()
    assert said(h)[3:] == [
        (
            "holds",
            f"longest line of /w/a now = 900 [{now.id}] > longest line of /w/a then = 700 "
            f"[{then.id}]",
        ),
        ("holds", f"installed torch build = '2.11.0+cu130' [{env.id}] (present)"),
    ]


def test_where_the_race_struck_is_not_claimed_without_the_error() -> None:
    """Caught live but never printed, the race claims no worker mode or torch build: those
    describe where a printed error struck."""
    s = Session()
    s.add("stdoutlog", console(0))
    s.add("checkpoints", {"recorded": {"config": {"workers": "threads"}}})
    s.add("pyenv", {"key_packages": {"torch": "2.11.0"}})
    fact = s.add("live", live(proc(200, 1)))
    h = s.checked()
    assert h.cites == [fact.id]
