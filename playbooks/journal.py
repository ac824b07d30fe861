"""The apply journal and the apply lock's owner: what lets the next run find an apply that
was killed, and a lock nobody holds any more.

An apply can die anywhere: the controller SIGKILLed, the SSH connection dropped, the
machine rebooted. Before each step that changes the target, the transaction writes the
journal (``STATE/apply.journal``, written whole, fsynced with its directory): which apply,
its owner, the step reached, each backup with its sha256, the trainer that was running and
the one the apply started. A journal whose step is not final is an interrupted apply; the
next plan on that target is its recovery (``Transaction.plan``): put every file back
byte-identical from its backup, stop what the apply started, start the trainer as before.
Recovery rolls back rather than finishing the verification: the interrupted run's window
is gone or partial, and a fix the doctor cannot show working must not stay.

The lock (``STATE/apply.lock``, a directory made with ``mkdir``) names its owner: the
controller's host, pid and process start time, and the target-side heartbeat is the lock's
mtime, touched by every long operation (``Remote.wait``, ``Remote.stop``). A lock is
*stale*, and is broken instead of waited on, when its owner is a process on this
controller that is gone (or whose pid now belongs to another process), or when nothing has
touched it for ``LEASE_S`` (an owner on another controller, or an unreadable owner).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from typing import Any, Literal

from playbooks.remote import Remote
from tools.errors import ApplyError, ApplyRefused
from tools.probes.applies import FINAL_STEPS

# Steps, in the order an apply reaches them. An apply that stopped at a step that is not
# final is recovered by the next run on the target.
Step = Literal[
    "backed_up",  # every file to change is backed up; nothing changed yet
    "writing",  # files are being changed
    "stopping",  # the running trainer is being stopped
    "started",  # the fixed trainer runs (its pid recorded)
    "verifying",  # its fresh log lines are being read
    "rolling_back",  # files being restored
    "applied",  # final: verified
    "rolled_back",  # final: restored byte-identical
]
FINAL = frozenset(FINAL_STEPS)  # defined by the probe that reads the journal too
LEASE_S = 300.0  # a lock untouched this long, whose owner cannot be checked, is stale


@dataclass(frozen=True)
class Owner:
    """Who holds a lock: a process on a controller, told from a reused pid by its start
    time (clock ticks since boot, and which boot)."""

    host: str
    pid: int
    started: str | None

    def record(self, **extra: Any) -> str:
        return json.dumps(
            {"host": self.host, "pid": self.pid, "started": self.started, **extra},
            sort_keys=True,
        )


def _start_time(pid: int) -> str | None:
    """``boot_id:starttime`` of a local process, or None where /proc does not say."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            boot = fh.read().strip()
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return f"{boot}:{fields[19]}"
    except (OSError, IndexError):
        return None


def this_process() -> Owner:
    pid = os.getpid()
    return Owner(host=socket.gethostname(), pid=pid, started=_start_time(pid))


def stale(record: str, age_s: float | None, lease_s: float = LEASE_S) -> str | None:
    """Why the lock whose owner wrote ``record`` (and was last touched ``age_s`` ago) is
    stale, or None while its owner may still be working."""
    try:
        owner = json.loads(record)
    except ValueError:
        owner = None
    if isinstance(owner, dict) and owner.get("host") == socket.gethostname():
        pid, started = owner.get("pid"), owner.get("started")
        if isinstance(pid, int) and isinstance(started, str):
            now = _start_time(pid)
            if now is None:
                return f"its owner, process {pid} on this host, is gone"
            if now != started:
                return f"its owner's pid {pid} now belongs to another process"
            return None  # alive: a live owner's lock is never broken, however old
    if age_s is not None and age_s > lease_s:
        return f"nothing has touched it for {age_s:.0f}s (lease {lease_s:g}s)"
    return None


class Journal:
    """The apply journal on the target, at ``path``."""

    def __init__(self, remote: Remote, path: str) -> None:
        self.remote = remote
        self.path = path
        self.entry: dict[str, Any] = {}

    def read(self) -> dict[str, Any] | None:
        """The journal as the last apply left it, or None when there is none."""
        (kind,) = self.remote.kinds(self.path)
        if kind == "missing":
            return None
        if kind != "file":
            raise ApplyRefused(
                f"the apply journal {self.path} is a {kind}, not a regular file: the doctor"
                " neither reads nor writes through it; nothing was changed"
            )
        raw = self.remote.read(self.path)
        try:
            entry = json.loads(raw)
        except ValueError:
            entry = None
        if not isinstance(entry, dict) or not isinstance(entry.get("step"), str):
            raise ApplyError(
                f"the apply journal {self.path} is damaged (not the JSON an apply writes): "
                "an earlier apply may have left files changed; compare them with the "
                "backups beside it, then remove it"
            )
        return entry

    def begin(self, **entry: Any) -> None:
        self.entry = dict(entry)

    def note(self, **update: Any) -> None:
        """Record facts of the current step (a pid the rollback started) without moving."""
        self.entry.update(update)
        self.remote.write(self.path, json.dumps(self.entry, sort_keys=True).encode())

    def step(self, step: Step, **update: Any) -> None:
        """Record that the apply reached ``step`` (written and fsynced before it acts)."""
        self.entry.update(update, step=step)
        self.remote.write(self.path, json.dumps(self.entry, sort_keys=True).encode())


def interrupted(entry: dict[str, Any] | None) -> bool:
    return entry is not None and entry.get("step") not in FINAL
