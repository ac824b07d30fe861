"""The own-code-time rule: a thread of the live trainer spends most of its samples in one
frame of the trainer's own code, either asleep there while the process (torch loaded)
barely uses a core, a fault on its own, or computing there while py-spy sees it active, a
fault only on a run that slowed. Live facts are built in memory as the live probe writes
them; the rule's claims are checked on them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.own_code import OwnCodeTime

WHO = "thread 'MainThread' (tid 7) of pid 4242"


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def thread(
    activity: str,
    *,
    samples: int = 10,
    share: float = 0.9,
    own: int = 9,
    innermost: int = 9,
    active: int = 0,
    name: str = "MainThread",
    tid: int = 7,
    text: str | None = "time.sleep(5)",
) -> dict[str, Any]:
    stack = [{"function": "on_step", "file": "/w/train.py", "line": 88, "text": text}]
    return {
        "name": name,
        "tid": tid,
        "samples": samples,
        "active_samples": active,
        "activity": activity,
        "activity_share": share,
        "own_frame": "/w/train.py:88 on_step",
        "own_frame_samples": own,
        "own_innermost_samples": innermost,
        "stack": stack,
        "cpu_s": 0.1,
    }


def checked(
    *threads: dict[str, Any], torch_loaded: bool | None = True, cpu: float = 0.01
) -> tuple[Fact, list[Hypothesis]]:
    ledger = Ledger()
    proc = {"pid": 4242, "torch_loaded": torch_loaded, "cpu_share": cpu, "threads": list(threads)}
    live = ledger.append(Fact(probe="live", target="local", value={"processes": [proc]}))
    found = OwnCodeTime().propose(Evidence(ledger, [live.id]))
    return live, [verify(h, ledger) for h in found]


def test_a_trainer_asleep_in_its_own_frame_is_verified_and_a_fault_alone() -> None:
    """A thread asleep at ``time.sleep(5)`` in train.py for 9 of 10 samples, torch loaded,
    the process at 0.01 of a core: every claim holds, from its activity to the CPU, and
    the finding is a fault without a slowdown beside it."""
    live, [h] = checked(thread("sleeping"))
    at = f"[{live.id}]"
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"what {WHO} mostly did = 'sleeping' {at} matches /^(?:sleeping|own_code)$/"),
        ("holds", f"share of {WHO}'s samples in it = 0.9 {at} ≥ 0.6"),
        (
            "holds",
            f"{WHO}'s frame in the trainer's code = '/w/train.py:88 on_step' {at} (present)",
        ),
        ("holds", f"samples that showed it = 9 {at} ≥ 6"),
        ("holds", f"samples whose innermost frame is the trainer's own code = 9 {at} ≥ 6"),
        (
            "holds",
            f"{WHO}'s innermost line, as its source file has it = 'time.sleep(5)' {at} (present)",
        ),
        ("holds", f"torch's libraries mapped into pid 4242 = True {at} equals True"),
        ("holds", f"cores pid 4242 used while it slept there = 0.01 {at} ≤ 0.5"),
    ]
    assert h.fault_alone is True
    assert h.weight == 2
    assert [(p.expect, p.probe) for p in h.predictions] == [
        (
            "the frame's line is where the time goes: removing the sleep or speeding the loop "
            "there brings the speed back",
            "live",
        )
    ]


def test_a_loop_busy_in_its_own_frame_is_claimed_active_and_no_fault_alone() -> None:
    """A thread computing in its own code is claimed active in at least 60% of its
    samples instead of idle with torch loaded, and is a fault only beside a slowdown."""
    live, [h] = checked(thread("own_code", active=8, text="for x in rows:"), cpu=1.0)
    assert h.status == "verified"
    assert said(h)[-1] == ("holds", f"samples py-spy saw {WHO} active in = 8 [{live.id}] ≥ 6")
    assert not any("torch's libraries" in s or "cores pid" in s for _, s in said(h))
    assert h.fault_alone is False


@pytest.mark.parametrize(
    ("samples", "own", "outcome", "sentence"),
    [
        (10, 6, "holds", "= 6 [{id}] ≥ 6"),
        (10, 5, "fails", "= 5 [{id}] < 6"),
        (7, 5, "holds", "= 5 [{id}] ≥ 5"),
        (7, 4, "fails", "= 4 [{id}] < 5"),
        (1, 1, "holds", "= 1 [{id}] ≥ 1"),
    ],
    ids=["6-of-10", "5-of-10", "5-of-7-rounds-up", "4-of-7", "one-sample-needs-one"],
)
def test_the_frame_must_show_in_60_percent_of_samples_rounded_up(
    samples: int, own: int, outcome: str, sentence: str
) -> None:
    """The own frame must be seen in at least 60% of the thread's samples, rounded up to
    a whole sample and never below one."""
    live, [h] = checked(thread("sleeping", samples=samples, own=own, innermost=own))
    assert said(h)[3] == (outcome, "samples that showed it " + sentence.format(id=live.id))


def test_a_process_without_torch_is_a_launcher_not_a_trainer_asleep() -> None:
    """A sleeping thread in a process torch is not mapped into (a launcher polling its
    trainer) is refuted on that claim."""
    live, [h] = checked(thread("sleeping"), torch_loaded=False)
    assert h.status == "refuted"
    assert said(h)[6] == (
        "fails",
        f"torch's libraries mapped into pid 4242 = False [{live.id}] differs from True",
    )


def test_a_sleeping_process_whose_cores_are_busy_is_refuted() -> None:
    """A process that used 0.8 of a core while its thread was said to sleep is not idle:
    the CPU claim fails."""
    live, [h] = checked(thread("sleeping"), cpu=0.8)
    assert said(h)[-1] == (
        "fails",
        f"cores pid 4242 used while it slept there = 0.8 [{live.id}] > 0.5",
    )


def test_the_thread_most_often_innermost_in_own_code_is_tested() -> None:
    """Of the threads sleeping or computing in own code, the one whose own code was
    innermost in the most samples is tested, not the one in library code with more."""
    _, [h] = checked(
        thread("own_code", innermost=3, name="a", tid=1, active=9),
        thread("sleeping", innermost=8, name="b", tid=2),
        thread("library", innermost=10, name="c", tid=3),
    )
    assert said(h)[0][1].startswith("what thread 'b' (tid 2) of pid 4242 mostly did = 'sleeping'")


def test_a_trainer_running_library_code_is_refuted_on_the_busiest_thread() -> None:
    """No thread sleeps or computes in its own code: the busiest is tested, and what it
    mostly did refutes the family."""
    live, [h] = checked(thread("library", innermost=0))
    assert h.status == "refuted"
    assert said(h)[0] == (
        "fails",
        f"what {WHO} mostly did = 'library' [{live.id}] does not match /^(?:sleeping|own_code)$/",
    )


def test_a_stack_without_source_text_claims_no_line() -> None:
    """Where the innermost line could not be read from its file, no line is claimed."""
    _, [h] = checked(thread("sleeping", text=None))
    assert not any("innermost line" in s for _, s in said(h))
    assert len(h.verdicts) == 7


def test_without_a_live_fact_nothing_is_proposed() -> None:
    """The family reads only the live fact: none, or a failed one, proposes nothing."""
    ledger = Ledger()
    failed = ledger.append(Fact(probe="live", target="local", error="timeout: killed"))
    assert OwnCodeTime().propose(Evidence(ledger, [failed.id])) == []
    assert OwnCodeTime().propose(Evidence(ledger, [])) == []
