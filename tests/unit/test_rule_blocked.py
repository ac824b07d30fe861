"""The threads-blocked rule: a live trainer whose threads wait and nothing ends the wait,
either one thread inside a torch.distributed collective (a peer rank that does not join)
or two or more threads waiting on each other (a deadlock), while the process uses almost
no CPU and its logs have stopped growing. Live facts are built in memory as the live probe
writes them; the rule's claims are checked on them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.blocked import ThreadsBlocked

C10D = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def thread(
    name: str,
    tid: int,
    activity: str,
    share: float = 1.0,
    stack: list[dict[str, Any]] | None = None,
    samples: int = 10,
) -> dict[str, Any]:
    return {
        "name": name,
        "tid": tid,
        "samples": samples,
        "activity": activity,
        "activity_share": share,
        "stack": stack if stack is not None else [],
    }


def live_fact(ledger: Ledger, *threads: dict[str, Any], cpu: float = 0.02) -> Fact:
    proc = {"pid": 4242, "cpu_share": cpu, "threads": list(threads)}
    return ledger.append(Fact(probe="live", target="local", value={"processes": [proc]}))


def pulse(ledger: Ledger, probe: str, age: float | None) -> Fact:
    """A log fact whose file last grew ``age`` seconds before it was read."""
    return ledger.append(Fact(probe=probe, target="local", value={"file": {"age_s": age}}))


def checked(ledger: Ledger, *facts: Fact) -> list[Hypothesis]:
    found = ThreadsBlocked().propose(Evidence(ledger, [f.id for f in facts]))
    return [verify(h, ledger) for h in found]


ALL_REDUCE = [
    {"function": "all_reduce", "file": C10D, "line": 2500, "text": "work.wait()"},
    {"function": "step", "file": "/w/train.py", "line": 80},
]


def test_a_thread_in_a_collective_with_the_process_idle_and_the_log_quiet() -> None:
    """A thread sampled in ``all_reduce`` every time, the process at 0.02 of a core and
    the train log quiet for 120 s: verified, naming the collective it waits in; weight 3,
    and the peers' stacks are predicted to show who stopped calling it."""
    ledger = Ledger()
    live = live_fact(ledger, thread("MainThread", 7, "collective", stack=ALL_REDUCE))
    log = pulse(ledger, "trainlog", 120.0)
    [h] = checked(ledger, live, log)
    who = "thread 'MainThread' (tid 7) of pid 4242"
    at = f"[{live.id}]"
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"what {who} did = 'collective' {at} equals 'collective'"),
        ("holds", f"share of {who}'s samples in it = 1 {at} ≥ 1"),
        ("holds", f"the collective {who} waits in = 'all_reduce' {at} (present)"),
        ("holds", f"cores pid 4242 used while its threads waited = 0.02 {at} ≤ 0.1"),
        ("holds", f"seconds since the train log grew = 120 [{log.id}] ≥ 30"),
    ]
    assert h.weight == 3
    assert [(p.expect, p.probe) for p in h.predictions] == [
        (
            "the peer ranks' stacks show which one stopped calling the collective, and where",
            "live",
        )
    ]


def test_a_collective_outside_torch_distributed_is_not_named() -> None:
    """A thread classed as in a collective whose stack holds no frame of
    ``distributed_c10d.py`` is tested without a claim on which op it waits in."""
    ledger = Ledger()
    stack = [{"function": "wait", "file": "/w/comm.py", "line": 3, "text": "ev.wait()"}]
    live = live_fact(ledger, thread("MainThread", 7, "collective", stack=stack))
    [h] = checked(ledger, live)
    assert [s for _, s in said(h)] == [
        f"what thread 'MainThread' (tid 7) of pid 4242 did = 'collective' [{live.id}] equals "
        "'collective'",
        f"share of thread 'MainThread' (tid 7) of pid 4242's samples in it = 1 [{live.id}] ≥ 1",
        f"cores pid 4242 used while its threads waited = 0.02 [{live.id}] ≤ 0.1",
    ]


def test_a_collective_the_process_keeps_busy_beside_is_refuted() -> None:
    """A thread in a collective while the process used 1.5 cores is no blocked process:
    the CPU claim fails, stating the share observed."""
    ledger = Ledger()
    live = live_fact(ledger, thread("MainThread", 7, "collective", stack=ALL_REDUCE), cpu=1.5)
    [h] = checked(ledger, live)
    assert h.status == "refuted"
    assert said(h)[-1] == (
        "fails",
        f"cores pid 4242 used while its threads waited = 1.5 [{live.id}] > 0.1",
    )


def test_two_threads_waiting_on_each_other_are_a_deadlock() -> None:
    """Two threads waiting in every sample, each at the line its source file has: both are
    cited with what they did, their share and their line; the console quiet for 45 s."""
    ledger = Ledger()
    live = live_fact(
        ledger,
        thread("loader", 11, "waiting", stack=[{"function": "get", "text": "q.get()"}]),
        thread("writer", 12, "waiting", stack=[{"function": "run", "text": "with lock:"}]),
    )
    log = pulse(ledger, "stdoutlog", 45.0)
    [h] = checked(ledger, live, log)
    a, b = "thread 'loader' (tid 11) of pid 4242", "thread 'writer' (tid 12) of pid 4242"
    at = f"[{live.id}]"
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"what {a} did = 'waiting' {at} equals 'waiting'"),
        ("holds", f"share of {a}'s samples waiting = 1 {at} ≥ 1"),
        ("holds", f"the line {a} waits at = 'q.get()' {at} (present)"),
        ("holds", f"what {b} did = 'waiting' {at} equals 'waiting'"),
        ("holds", f"share of {b}'s samples waiting = 1 {at} ≥ 1"),
        ("holds", f"the line {b} waits at = 'with lock:' {at} (present)"),
        ("holds", f"cores pid 4242 used while its threads waited = 0.02 {at} ≤ 0.1"),
        ("holds", f"seconds since the console grew = 45 [{log.id}] ≥ 30"),
    ]
    assert [(p.expect, p.probe) for p in h.predictions] == [
        (
            "each thread waits on what another holds: their stacks again in a minute show "
            "the same lines",
            "live",
        )
    ]


def test_one_waiting_thread_beside_a_working_one_is_refuted_on_the_worker() -> None:
    """With only one thread waiting, the two busiest sampled threads are tested, the
    waiting one first: the other's activity refutes the deadlock."""
    ledger = Ledger()
    live = live_fact(
        ledger,
        thread("trainer", 11, "compute", share=0.9),
        thread("saver", 12, "waiting", share=0.7),
    )
    [h] = checked(ledger, live)
    assert h.status == "refuted"
    sentences = [s for _, s in said(h)]
    assert sentences[0].startswith("what thread 'saver' (tid 12)")
    assert (
        f"what thread 'trainer' (tid 11) of pid 4242 did = 'compute' [{live.id}] differs from "
        "'waiting'"
    ) in sentences
    assert (
        f"share of thread 'saver' (tid 12) of pid 4242's samples waiting = 0.7 [{live.id}] < 1"
    ) in sentences


def test_at_most_four_waiting_threads_are_cited_the_most_waiting_first() -> None:
    """Six waiting threads: the four with the largest share of samples waiting are cited,
    in that order."""
    ledger = Ledger()
    shares = [0.5, 1.0, 0.9, 0.6, 0.95, 0.8]
    threads = [thread(f"w{k}", 20 + k, "waiting", share=s) for k, s in enumerate(shares)]
    live = live_fact(ledger, *threads)
    [h] = checked(ledger, live)
    cited = [s.split(" ")[2] for _, s in said(h) if s.startswith("what ")]
    assert cited == ["'w1'", "'w4'", "'w2'", "'w5'"]


@pytest.mark.parametrize(
    "threads",
    [
        [thread("MainThread", 7, "waiting")],
        [thread("MainThread", 7, "waiting"), thread("idle", 8, "waiting", samples=0)],
        [],
    ],
    ids=["one-thread-has-nothing-to-deadlock-with", "unsampled-threads-do-not-count", "none"],
)
def test_fewer_than_two_sampled_threads_and_no_collective_is_not_tested(
    threads: list[dict[str, Any]],
) -> None:
    """A process with fewer than two sampled threads and none in a collective cannot be
    deadlocked: nothing is proposed for it."""
    ledger = Ledger()
    live = live_fact(ledger, *threads)
    assert checked(ledger, live) == []


def test_the_train_log_is_the_pulse_when_it_has_an_age_else_the_console() -> None:
    """The logs' pulse is the train log's age where it has one; a train log without an
    age leaves the console's to be cited."""
    ledger = Ledger()
    live = live_fact(ledger, thread("MainThread", 7, "collective", stack=ALL_REDUCE))
    train, console = pulse(ledger, "trainlog", 90.0), pulse(ledger, "stdoutlog", 40.0)
    [h] = checked(ledger, live, train, console)
    assert said(h)[-1] == ("holds", f"seconds since the train log grew = 90 [{train.id}] ≥ 30")
    ageless = pulse(ledger, "trainlog", None)
    [h] = checked(ledger, live, ageless, console)
    assert said(h)[-1] == ("holds", f"seconds since the console grew = 40 [{console.id}] ≥ 30")


def test_a_log_that_grew_recently_refutes_the_wait() -> None:
    """The console grew 5 s ago: the trainer is not stuck, and the pulse claim fails."""
    ledger = Ledger()
    live = live_fact(ledger, thread("MainThread", 7, "collective", stack=ALL_REDUCE))
    log = pulse(ledger, "stdoutlog", 5.0)
    [h] = checked(ledger, live, log)
    assert h.status == "refuted"
    assert said(h)[-1] == ("fails", f"seconds since the console grew = 5 [{log.id}] < 30")


def test_without_a_readable_live_fact_nothing_is_proposed() -> None:
    """The live probe failed or did not run: the family needs its stacks and proposes
    nothing."""
    ledger = Ledger()
    failed = ledger.append(Fact(probe="live", target="local", error="timeout: killed"))
    log = pulse(ledger, "trainlog", 120.0)
    assert checked(ledger, failed, log) == []
    assert checked(ledger, log) == []


def test_each_process_is_tested_on_its_own() -> None:
    """Two trainer processes: a hypothesis for each, citing its own place in the fact."""
    ledger = Ledger()
    procs = [
        {"pid": 1, "cpu_share": 0.0, "threads": [thread("a", 1, "collective", stack=ALL_REDUCE)]},
        {"pid": 2, "cpu_share": 0.0, "threads": [thread("b", 2, "collective", stack=ALL_REDUCE)]},
    ]
    live = ledger.append(Fact(probe="live", target="local", value={"processes": procs}))
    first, second = checked(ledger, live)
    assert said(first)[0][1].startswith("what thread 'a' (tid 1) of pid 1 did")
    assert said(second)[0][1].startswith("what thread 'b' (tid 2) of pid 2 did")
