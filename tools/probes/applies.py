"""The doctor's own applies on this workspace: the apply journal and the apply lock a fix
leaves in ``WORKSPACE/.dflash-doctor/`` (``playbooks.journal``), read so that any run —
a diagnosis, a nightly health check — says when an apply was interrupted, not only the
next fix plan. These are the doctor's files, not the trainer's: no trainer layout is
assumed.

Shipped in the probe bundle: stdlib only, Python >= 3.8. Reads two files; writes nothing.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Any

from ..figures import finite_number
from ._common import Context, TypedDict, loads_strict, read_capped

NAME = "applies"
TIMEOUT = 10.0

STATE_DIR = ".dflash-doctor"
JOURNAL = "apply.journal"
LOCK = "apply.lock"
# The steps an apply ends at; a journal at any other step is an interrupted apply. The
# one definition: playbooks.journal reads it from here.
FINAL_STEPS = ("applied", "rolled_back")
MAX_JOURNAL = 1 << 20


class Journal(TypedDict, total=False):
    path: str
    apply: str
    playbook: str
    step: str
    at: float | None  # when the apply began, the controller's clock
    backups: int
    interrupted: bool
    error: str  # the journal could not be read as one


class Lock(TypedDict, total=False):
    path: str
    age_s: float  # since its heartbeat (its mtime), this target's clock
    owner: str


class AppliesValue(TypedDict, total=False):
    state_dir: str
    journal: Journal | None
    lock: Lock | None


def _journal(path: str) -> Journal | None:
    if not os.path.lexists(path):
        return None
    try:
        data, more = read_capped(path, MAX_JOURNAL)
    except OSError as exc:  # FileRefused too: a FIFO, a device, a loop
        reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
        return {"path": path, "error": f"cannot read: {reason}", "interrupted": True}
    try:
        entry = loads_strict(data.decode("utf-8")) if not more else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        entry = None
    if not isinstance(entry, dict) or not isinstance(entry.get("step"), str):
        return {"path": path, "error": "not the JSON an apply writes", "interrupted": True}
    at = entry.get("at")
    rows = entry.get("backups")
    return {
        "path": path,
        "apply": str(entry.get("apply") or ""),
        "playbook": str(entry.get("playbook") or ""),
        "step": entry["step"],
        # A time a float holds, finite: a 400-digit number or a NaN is no time.
        "at": finite_number(at),
        "backups": len(rows) if isinstance(rows, list) else 0,
        "interrupted": entry["step"] not in FINAL_STEPS,
    }


def _lock(path: str) -> Lock | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    lock: Lock = {"path": path, "age_s": round(max(0.0, time.time() - st.st_mtime), 3)}
    if stat.S_ISDIR(st.st_mode):
        try:
            owner, _ = read_capped(os.path.join(path, "owner"), 4096)
            lock["owner"] = owner.decode("utf-8", "replace")
        except OSError:  # FileRefused included
            lock["owner"] = "unknown"
    return lock


def collect(params: dict[str, Any], ctx: Context) -> AppliesValue:
    state = os.path.join(str(params["workspace"]), STATE_DIR)
    return {
        "state_dir": state,
        "journal": _journal(os.path.join(state, JOURNAL)),
        "lock": _lock(os.path.join(state, LOCK)),
    }


VALUE = AppliesValue
