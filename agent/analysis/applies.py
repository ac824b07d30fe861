"""What the ``applies`` fact says of the doctor's own applies on the workspace, in
sentences that cite it: for the report (a section of its own) and for health checks (a
check that fails while an apply is interrupted, and cannot decide while one is under
way). Only an unfinished apply, or a journal that could not be read, is said; an apply
that ended says nothing."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from agent.model.facts import Ledger, latest, observed
from playbooks.journal import LEASE_S

TITLE = "an interrupted apply"


def in_progress(ledger: Ledger, ids: Sequence[str]) -> bool:
    """Whether the unfinished apply the ``applies`` fact shows may still be running: its
    lock was touched within the lease (``playbooks.journal.LEASE_S``), as a live apply's
    heartbeat touches it, so its journal is an apply under way, not an interrupted one."""
    fact = observed(latest(ledger, ids, "applies"))
    if fact is None or not isinstance(fact.value, dict):
        return False
    lock: Any = fact.value.get("lock")
    age = lock.get("age_s") if isinstance(lock, dict) else None
    return isinstance(age, int | float) and age < LEASE_S


def interrupted(ledger: Ledger, ids: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(sentence, cited fact ids) for an unfinished apply the ``applies`` fact shows."""
    fact = observed(latest(ledger, ids, "applies"))
    if fact is None or not isinstance(fact.value, dict):
        return []
    journal: Any = fact.value.get("journal")
    if not isinstance(journal, dict) or not journal.get("interrupted"):
        return []
    cites = [fact.id]
    lock: Any = fact.value.get("lock")
    if in_progress(ledger, ids) and not journal.get("error"):
        return [
            (
                f"an apply of {journal.get('playbook') or 'a playbook'} is under way (step "
                f"{journal.get('step')}; its lock {lock.get('path')} was touched "
                f"{lock.get('age_s', 0):.0f}s before this sweep)",
                cites,
            )
        ]
    path = journal.get("path")
    if journal.get("error"):
        return [
            (
                f"the apply journal {path} {journal['error']}: an earlier apply may have left "
                "files changed; compare them with the backups beside it",
                cites,
            )
        ]
    at = journal.get("at")
    begun = (
        time.strftime(", begun %Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
        if isinstance(at, int | float)
        else ""
    )
    out = [
        (
            f"an apply of {journal.get('playbook') or 'a playbook'}{begun}, stopped at step "
            f"{journal.get('step')} and never ended ({path}, {journal.get('backups', 0)} "
            "backup(s)): the next fix plan on this target is its recovery",
            cites,
        )
    ]
    if isinstance(lock, dict):
        out.append(
            (
                f"its lock {lock.get('path')} is still there, last touched "
                f"{lock.get('age_s', 0):.0f}s before this sweep",
                cites,
            )
        )
    return out
