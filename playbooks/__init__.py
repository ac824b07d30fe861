"""Fix playbooks, each run as a guarded transaction (see ``playbooks.base``)."""

from __future__ import annotations

from playbooks.base import FileChange, FixOutcome, FixPlan, Playbook, TrainerSite, Transaction
from playbooks.lock_warmup import LockWarmup
from playbooks.process_isolation import ProcessIsolation
from playbooks.recompile_limit import RecompileLimit
from playbooks.remote import Remote
from tools.errors import ApplyError

__all__ = [
    "ApplyError",
    "FileChange",
    "FixOutcome",
    "FixPlan",
    "LockWarmup",
    "Playbook",
    "ProcessIsolation",
    "RecompileLimit",
    "Remote",
    "TrainerSite",
    "Transaction",
    "default_playbooks",
]


def default_playbooks() -> list[Playbook]:
    return [LockWarmup(), ProcessIsolation(), RecompileLimit()]
