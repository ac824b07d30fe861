"""What the live families share (``agent.rules.live_threads``): reading the live fact's
processes, naming a thread in a sentence, picking the thread a family tests, the claims
that a thread mostly did one activity and where it was, and the hypothesis made when a
live trainer's stacks could not be read, with what would let py-spy read them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.claims import Claim, check
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.live_threads import (
    doing,
    innermost_line,
    per_process,
    pick,
    processes,
    remedy,
    unread_stacks,
    who,
)


def sampled(activity: str | None, samples: int = 10, **more: Any) -> dict[str, Any]:
    return {"samples": samples, "activity": activity, **more}


def outcomes(claims: list[Claim], ledger: Ledger) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in (check(c, ledger) for c in claims)]


def test_processes_reads_each_entry_as_a_mapping() -> None:
    """The live fact's processes, each a mapping; an entry of another shape reads as an
    empty one and a fact without processes as none."""
    fact = Fact(probe="live", target="local", value={"processes": [{"pid": 1}, "junk"]})
    assert processes(fact) == [{"pid": 1}, {}]
    assert processes(Fact(probe="live", target="local", value={"processes": None})) == []
    assert processes(Fact(probe="live", target="local", value=[1, 2])) == []


def test_who_names_the_thread_its_id_and_its_process() -> None:
    """A thread in a sentence: its name quoted, its tid and its process's pid."""
    assert who({"name": "drafter-1", "tid": 31}, {"pid": 4242}) == (
        "thread 'drafter-1' (tid 31) of pid 4242"
    )


@pytest.mark.parametrize(
    ("threads", "chosen"),
    [
        ([], None),
        ([sampled("waiting", samples=0), {"activity": "compute"}], None),
        ([sampled("compute", score=9), sampled("loading", score=2)], 1),
        ([sampled("loading", score=2), sampled("loading", score=7)], 1),
        ([sampled("loading", score=5, cpu_s=1.0), sampled("loading", score=5, cpu_s=3.0)], 1),
        ([sampled("compute", cpu_s=0.5), sampled("waiting", cpu_s=2.0)], 1),
        ([sampled("loading", samples=0, score=9), sampled("loading", score=1)], 1),
        (["junk", sampled("loading", score=1)], 1),
    ],
    ids=[
        "no-threads",
        "none-sampled",
        "the-activity-wins-over-a-higher-score",
        "highest-score-among-those-doing-it",
        "cpu-breaks-a-tie",
        "none-doing-it-the-busiest-sampled",
        "an-unsampled-thread-is-never-picked",
        "an-entry-that-is-not-a-mapping-is-skipped",
    ],
)
def test_pick_chooses_the_thread_a_family_tests(threads: list[Any], chosen: int | None) -> None:
    """Of the sampled threads whose main activity is the family's, the one with the
    highest score (then CPU time); with none doing it, the busiest sampled thread; None
    when no thread was sampled."""
    assert pick(threads, ["loading"], "score") == chosen


def live_fact(ledger: Ledger, value: Any) -> Fact:
    return ledger.append(Fact(probe="live", target="local", value=value))


def test_doing_one_activity_is_an_equality_and_a_share_of_at_least_sixty_percent() -> None:
    """For one activity: the thread's main activity equals it, and that activity's share
    of its samples is at least 0.6."""
    ledger = Ledger()
    at = ("processes", 0, "threads", 0)
    fact = live_fact(ledger, {"processes": [{"threads": [sampled("waiting", activity_share=0.5)]}]})
    assert outcomes(doing(fact, at, "T", "waiting"), ledger) == [
        ("holds", f"what T mostly did = 'waiting' [{fact.id}] equals 'waiting'"),
        ("fails", f"share of T's samples in it = 0.5 [{fact.id}] < 0.6"),
    ]


def test_doing_one_of_several_activities_matches_them_whole() -> None:
    """For several activities, the main one must be exactly one of them: a name that only
    begins like one does not match."""
    ledger = Ledger()
    at = ("processes", 0, "threads", 0)
    value = {"processes": [{"threads": [sampled("sleeping_more", activity_share=0.7)]}]}
    fact = live_fact(ledger, value)
    assert outcomes(doing(fact, at, "T", ["sleeping", "own_code"]), ledger) == [
        (
            "fails",
            f"what T mostly did = 'sleeping_more' [{fact.id}] does not match "
            "/^(?:sleeping|own_code)$/",
        ),
        ("holds", f"share of T's samples in it = 0.7 [{fact.id}] ≥ 0.6"),
    ]


def test_innermost_line_is_claimed_only_where_its_text_was_read() -> None:
    """A claim on the innermost frame's source line where the stack holds its text; none
    for a frame without text or an empty stack."""
    ledger = Ledger()
    at = ("processes", 0, "threads", 0)
    with_text = {"stack": [{"function": "f", "text": "time.sleep(1)"}]}
    fact = live_fact(ledger, {"processes": [{"threads": [with_text]}]})
    assert outcomes(innermost_line(fact, at, "T", with_text), ledger) == [
        (
            "holds",
            "T's innermost line, as its source file has it = 'time.sleep(1)' "
            f"[{fact.id}] (present)",
        )
    ]
    assert innermost_line(fact, at, "T", {"stack": [{"function": "f"}]}) == []
    assert innermost_line(fact, at, "T", {"stack": []}) == []


REMEDY_IF_DENIED = "run the container with --cap-add SYS_PTRACE"


@pytest.mark.parametrize(
    ("preflight", "uid", "expected"),
    [
        (
            {"euid": 1000, "cap_sys_ptrace": False, "remedy_if_denied": REMEDY_IF_DENIED},
            0,
            "probe as the trainer's user (uid 0) or as root (the probe ran as uid 1000)",
        ),
        (
            {"euid": 0, "cap_sys_ptrace": False, "remedy_if_denied": REMEDY_IF_DENIED},
            1000,
            REMEDY_IF_DENIED,
        ),
        (
            {"euid": 1000, "cap_sys_ptrace": False, "remedy_if_denied": REMEDY_IF_DENIED},
            1000,
            REMEDY_IF_DENIED,
        ),
        (
            {"euid": 1000, "cap_sys_ptrace": True, "remedy_if_denied": REMEDY_IF_DENIED},
            0,
            REMEDY_IF_DENIED,
        ),
        ({"euid": "1000", "remedy_if_denied": REMEDY_IF_DENIED}, 0, REMEDY_IF_DENIED),
        ({}, 0, ""),
    ],
    ids=[
        "another-user-without-ptrace",
        "root-is-denied-by-the-host",
        "the-trainers-own-user-is-denied-by-the-host",
        "ptrace-capability-held",
        "euid-not-a-number",
        "nothing-known",
    ],
)
def test_remedy_says_what_would_let_py_spy_attach(
    preflight: dict[str, Any], uid: object, expected: str
) -> None:
    """A probe that ran as another non-root user without CAP_SYS_PTRACE is told to run as
    the trainer's user or root; otherwise the host's own remedy (empty when unknown)."""
    assert remedy(preflight, uid) == expected


def unread_process(py_spy: str | None) -> tuple[Ledger, Fact]:
    ledger = Ledger()
    proc = {
        "pid": 4242,
        "uid": 0,
        "stacks_error": "Permission Denied",
        "threads": [{"tid": 7, "name": "MainThread", "samples": 0, "activity": None}],
    }
    value = {
        "py_spy": py_spy,
        "preflight": {"euid": 1000, "cap_sys_ptrace": False},
        "processes": [proc],
    }
    return ledger, live_fact(ledger, value)


def test_stacks_py_spy_could_not_read_are_unverifiable_with_the_remedy() -> None:
    """A process whose stacks py-spy could not read: the hypothesis claims what its threads
    did, which is unobserved (unverifiable), and predicts the error and the remedy."""
    ledger, fact = unread_process("/usr/bin/py-spy")
    h = verify(unread_stacks("input_bound", fact, 0, processes(fact)[0]), ledger)
    assert h.kind == "input_bound"
    assert h.status == "unverifiable"
    assert [(v.outcome, v.sentence) for v in h.verdicts] == [
        ("unverifiable", f"{fact.id} (live) observed no what the threads of pid 4242 did (null)")
    ]
    [p] = h.predictions
    assert (p.probe, p.expect) == (
        "live",
        "py-spy could not read pid 4242's stacks (Permission Denied): probe as the trainer's "
        "user (uid 0) or as root (the probe ran as uid 1000)",
    )


def test_stacks_without_py_spy_say_where_to_install_it() -> None:
    """With no py-spy on the target the prediction says to install it beside the
    trainer's Python or name it in the profile."""
    _, fact = unread_process(None)
    h = unread_stacks("own_code_time", fact, 0, processes(fact)[0])
    assert h.predictions[0].expect == (
        "py-spy is not on the target (its PATH, beside its Python) to read pid 4242's stacks: "
        "pip install py-spy there, or name it in the profile (py_spy)"
    )


def test_per_process_tests_the_picked_thread_of_each_process() -> None:
    """Each process with a sampled thread is handed, with its index, to the family's
    function on the thread ``pick`` chose; one whose threads were none sampled gets the
    unread-stacks hypothesis; one with no threads at all gets nothing."""
    ledger = Ledger()
    procs = [
        {"pid": 1, "threads": [sampled("compute", cpu_s=1.0), sampled("loading", score=3)]},
        {"pid": 2, "threads": [{"tid": 9, "samples": 0}]},
        {"pid": 3, "threads": []},
    ]
    fact = live_fact(ledger, {"py_spy": None, "processes": procs})
    seen: list[tuple[int, int, object]] = []

    def one(live: Fact, i: int, proc: dict[str, Any], j: int, thread: dict[str, Any]) -> Hypothesis:
        seen.append((i, j, thread.get("activity")))
        return unread_stacks("input_bound", live, i, proc)

    out = per_process("input_bound", fact, ["loading"], "score", one)
    assert seen == [(0, 1, "loading")]
    assert len(out) == 2
    assert "pid 2's stacks" in out[1].predictions[0].expect


def test_per_process_needs_a_live_fact_that_was_read() -> None:
    """No live fact, or a failed one: no hypothesis."""
    failed = Fact(probe="live", target="local", error="timeout: killed")

    def one(live: Fact, i: int, proc: dict[str, Any], j: int, thread: dict[str, Any]) -> Hypothesis:
        raise AssertionError("no thread to test")

    assert per_process("input_bound", None, ["loading"], "score", one) == []
    assert per_process("input_bound", failed, ["loading"], "score", one) == []
