"""Recovering an apply that was interrupted (``playbooks.journal``): what its recovery
puts back, and how a plan and an outcome name the interrupted apply."""

from __future__ import annotations

import hashlib
import time
from typing import Any, NamedTuple

from playbooks.remote import Remote


class Restoration(NamedTuple):
    """A file a recovery changes: back to its backup, or removed (created by the apply)."""

    path: str
    now: str | None  # its sha256 now; None: it does not exist
    before: str  # its text now
    after: str  # its text once recovered ("" for a file removed)
    why: str


def restorations(remote: Remote, backups: dict[str, bytes | None]) -> list[Restoration]:
    """What a recovery changes, of the files the interrupted apply backed up: those no
    longer as their backup holds them, and those it created that are still there."""
    out = []
    for path, data in backups.items():
        now = remote.sha256(path)
        before = remote.read(path).decode(errors="replace") if now else ""
        after = "" if data is None else data.decode(errors="replace")
        if data is not None and now == hashlib.sha256(data).hexdigest():
            continue
        if data is None and not now:
            continue
        why = (
            "back to its backup, byte-identical"
            if data is not None
            else "created by the interrupted apply: removed"
        )
        out.append(Restoration(path, now, before, after, why))
    return out


def recovery_steps(entry: dict[str, Any], restoring: list[Restoration]) -> list[str]:
    """The steps of the plan that recovers the apply ``entry`` journals."""
    steps = [f"recover the interrupted apply ({entry_words(entry)})"]
    steps += [f"restore {r.path}: {r.why}" for r in restoring] or [
        "its files are already as they were before it"
    ]
    if isinstance(entry.get("started_pid"), int):
        steps.append(
            f"stop the trainer it started (process {entry['started_pid']}) if it still runs"
        )
    if entry.get("was_running") is not None:
        steps.append("start the trainer as before, unless it runs")
    return steps


def entry_words(entry: dict[str, Any]) -> str:
    """An interrupted apply in a few words, from its journal."""
    at = entry.get("at")
    when = (
        time.strftime(" at %Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
        if isinstance(at, int | float)
        else ""
    )
    found = entry.get("owner")
    owner: dict[str, Any] = found if isinstance(found, dict) else {}
    host = f" on {owner['host']}" if owner.get("host") else ""
    who = f" by process {owner.get('pid')}{host}" if owner else ""
    return f"{entry.get('playbook')}, begun{when}{who}, stopped at step {entry.get('step')}"
