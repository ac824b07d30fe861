"""The files a fix changes, kept to be put back: each backed up (and checked) before
anything is written, read back from the apply journal's record of them, and restored
byte-identical by a rollback."""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any

from playbooks.remote import Remote
from tools.errors import ApplyError

if TYPE_CHECKING:
    from playbooks.base import FileChange


def back_up(
    remote: Remote, changes: list[FileChange], folder: str, now: float
) -> tuple[dict[str, bytes | None], list[dict[str, str | bool]]]:
    """Each file to change, read and written to ``folder/STAMP/`` (``now``, fsynced); the
    bytes, and the journal's rows (backup path and sha256, or "created")."""
    backups: dict[str, bytes | None] = {}
    rows: list[dict[str, str | bool]] = []
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    for change in changes:
        if change.before_sha256 is None:
            backups[change.path] = None
            rows.append({"path": change.path, "created": True})
            continue
        data = remote.read(change.path)
        name = change.path.replace("/", "_")
        where = f"{folder}/{stamp}/{name}"
        sha = remote.write(where, data)
        if sha != hashlib.sha256(data).hexdigest():
            raise ApplyError(f"the backup {where} does not hold what was read")
        backups[change.path] = data
        rows.append({"path": change.path, "backup": where, "sha256": sha})
    return backups, rows


def journaled_backups(
    remote: Remote, entry: dict[str, Any], journal_file: str
) -> dict[str, bytes | None]:
    """Each file an interrupted apply backed up, with its bytes from the backup (checked
    against the sha256 journaled with it), or None for one it created."""
    out: dict[str, bytes | None] = {}
    rows = entry.get("backups")
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or not isinstance(row.get("path"), str):
            raise ApplyError(f"the apply journal {journal_file} names a bad backup")
        if row.get("created"):
            out[row["path"]] = None
            continue
        data = remote.read(str(row.get("backup")))
        if hashlib.sha256(data).hexdigest() != row.get("sha256"):
            raise ApplyError(
                f"the backup {row.get('backup')} of {row['path']} no longer has the "
                "sha256 the journal recorded: not restoring from it"
            )
        out[row["path"]] = data
    return out


def restore(remote: Remote, backups: dict[str, bytes | None]) -> tuple[list[str], list[str]]:
    """Put ``backups`` back: each file byte-identical (checked by sha256), then each file
    the fix created removed; the paths restored, and those removed."""
    restored = []
    for path, data in backups.items():
        if data is None:
            continue  # a file the fix created: leave nothing of it behind
        sha = remote.write(path, data, follow_link=True)
        if sha != hashlib.sha256(data).hexdigest():
            raise ApplyError(f"rollback of {path} did not restore its bytes (sha256 {sha[:12]})")
        restored.append(path)
    removed = []
    for path, data in backups.items():
        if data is None and remote.sha256(path) is not None:
            # Created by the fix: gone again, as before it (an emptied launch file of
            # the doctor's own would read as a launch with no exec line).
            remote.remove(path)
            removed.append(path)
    return restored, removed
