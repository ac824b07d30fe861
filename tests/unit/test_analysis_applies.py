"""``agent.analysis.applies``: what the ``applies`` fact says of the doctor's own applies
on a workspace, as cited sentences. Only an unfinished apply or an unreadable journal is
said; an apply still under way (its lock touched within the lease) is told apart from one
that was interrupted."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.applies import in_progress, interrupted
from agent.model.facts import Fact, Ledger


def applies(ledger: Ledger, value: Any, error: str | None = None) -> Fact:
    """An ``applies`` fact holding ``value``, stored in ``ledger``."""
    return ledger.append(Fact(probe="applies", target="local", value=value, error=error))


JOURNAL = {
    "interrupted": True,
    "playbook": "lock-warmup",
    "step": "started",
    "path": "/ws/.dflash-doctor/apply.journal",
    "backups": 2,
}


@pytest.mark.parametrize(
    ("lock", "expected"),
    [
        ({"path": "/ws/.dflash-doctor/apply.lock", "age_s": 0}, True),
        ({"path": "/ws/.dflash-doctor/apply.lock", "age_s": 299.9}, True),
        ({"path": "/ws/.dflash-doctor/apply.lock", "age_s": 300.0}, False),
        ({"path": "/ws/.dflash-doctor/apply.lock", "age_s": 4000}, False),
        ({"path": "/ws/.dflash-doctor/apply.lock"}, False),
        ({"path": "/ws/.dflash-doctor/apply.lock", "age_s": "12"}, False),
        (None, False),
        ("a lock", False),
    ],
    ids=[
        "just-touched",
        "inside-lease",
        "at-lease",
        "long-silent",
        "no-age",
        "age-text",
        "none",
        "not-a-map",
    ],
)
def test_an_apply_is_in_progress_only_while_its_lock_is_younger_than_the_lease(
    lock: Any, expected: bool
) -> None:
    """An apply may still be running only when its lock's age is a number under the
    five-minute lease; no lock, no age or an age that is no number is not a live apply."""
    ledger = Ledger()
    fact = applies(ledger, {"journal": JOURNAL, "lock": lock})
    assert in_progress(ledger, [fact.id]) is expected


@pytest.mark.parametrize(
    "value",
    [
        None,
        "journal",
        {"journal": None, "lock": None},
        {"journal": {**JOURNAL, "interrupted": False}, "lock": None},
        {"journal": "not a map", "lock": None},
    ],
    ids=["no-value", "text-value", "no-journal", "ended", "journal-text"],
)
def test_nothing_is_said_of_an_apply_that_ended_or_never_was(value: Any) -> None:
    """A fact with no journal, a journal whose apply ended, or a value of another shape
    gives no sentence."""
    ledger = Ledger()
    fact = applies(ledger, value)
    assert interrupted(ledger, [fact.id]) == []


def test_a_failed_or_missing_fact_says_nothing() -> None:
    """A failed ``applies`` probe is no observation, and no ``applies`` fact at all is
    nothing to say: neither is an apply in progress."""
    ledger = Ledger()
    failed = applies(ledger, {"journal": JOURNAL, "lock": {"age_s": 1}}, error="ssh: refused")
    other = ledger.append(Fact(probe="layout", target="local", value={"root": "/ws"}))
    assert interrupted(ledger, [failed.id]) == []
    assert in_progress(ledger, [failed.id]) is False
    assert interrupted(ledger, [other.id]) == []


def test_the_newest_applies_fact_is_the_one_read() -> None:
    """After a re-gather, the newest ``applies`` fact decides: an apply that has since
    ended is not said to be interrupted."""
    ledger = Ledger()
    old = applies(ledger, {"journal": JOURNAL, "lock": None})
    new = applies(ledger, {"journal": {**JOURNAL, "interrupted": False}, "lock": None})
    assert interrupted(ledger, [old.id, new.id]) == []
    assert len(interrupted(ledger, [new.id, old.id])) == 1


def test_an_interrupted_apply_with_its_lock_left_is_two_cited_sentences() -> None:
    """An apply that stopped part way is said with its playbook, start time (UTC), step,
    journal and backups, then its stale lock with its age; both cite the fact."""
    ledger = Ledger()
    # 1_700_000_000 s after the epoch is 2023-11-14 22:13:20 UTC.
    journal = {**JOURNAL, "at": 1_700_000_000}
    lock = {"path": "/ws/.dflash-doctor/apply.lock", "age_s": 612.4}
    fact = applies(ledger, {"journal": journal, "lock": lock})
    assert interrupted(ledger, [fact.id]) == [
        (
            "an apply of lock-warmup, begun 2023-11-14 22:13:20 UTC, stopped at step started"
            " and never ended (/ws/.dflash-doctor/apply.journal, 2 backup(s)): the next fix"
            " plan on this target is its recovery",
            [fact.id],
        ),
        (
            "its lock /ws/.dflash-doctor/apply.lock is still there, last touched 612s before"
            " this sweep",
            [fact.id],
        ),
    ]


def test_an_interrupted_apply_without_a_time_or_playbook_or_lock_is_one_sentence() -> None:
    """With no start time the date is left out, with no playbook it is "a playbook", with
    no backups count it is 0, and with no lock there is no second sentence."""
    ledger = Ledger()
    journal = {"interrupted": True, "step": "backed_up", "path": "/ws/j", "at": "yesterday"}
    fact = applies(ledger, {"journal": journal, "lock": None})
    assert interrupted(ledger, [fact.id]) == [
        (
            "an apply of a playbook, stopped at step backed_up and never ended (/ws/j, 0"
            " backup(s)): the next fix plan on this target is its recovery",
            [fact.id],
        )
    ]


def test_an_apply_under_way_is_said_so_not_interrupted() -> None:
    """A journal that has not ended whose lock was touched within the lease is an apply
    under way: one sentence with its step and how long ago the lock was touched."""
    ledger = Ledger()
    lock = {"path": "/ws/.dflash-doctor/apply.lock", "age_s": 4.6}
    fact = applies(ledger, {"journal": JOURNAL, "lock": lock})
    assert interrupted(ledger, [fact.id]) == [
        (
            "an apply of lock-warmup is under way (step started; its lock"
            " /ws/.dflash-doctor/apply.lock was touched 5s before this sweep)",
            [fact.id],
        )
    ]


@pytest.mark.parametrize(
    "lock",
    [{"path": "/ws/.dflash-doctor/apply.lock", "age_s": 3}, None],
    ids=["fresh-lock", "no-lock"],
)
def test_an_unreadable_journal_is_said_with_its_error_whatever_the_lock(lock: Any) -> None:
    """A journal the probe could not read is said with its path and its error, and the
    advice to compare the files with their backups, even while a lock is fresh."""
    ledger = Ledger()
    journal = {"interrupted": True, "path": "/ws/j", "error": "is not JSON"}
    fact = applies(ledger, {"journal": journal, "lock": lock})
    assert interrupted(ledger, [fact.id]) == [
        (
            "the apply journal /ws/j is not JSON: an earlier apply may have left files"
            " changed; compare them with the backups beside it",
            [fact.id],
        )
    ]
