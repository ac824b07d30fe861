"""The files a fix changes, kept to be put back (playbooks._backups): each backed up and checked
before anything is written, read back from the journal's rows (checked against their sha256), and
restored byte-identical, the files the fix created removed.

Files live in a workspace under tmp_path, read and written by the remote operations run in this
process."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from playbooks._backups import back_up, journaled_backups, restore
from playbooks.base import FileChange
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess
from tools.errors import ApplyError

NOW = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
STAMP = "20231114-221320"


class Lossy(Remote):
    """A target whose writes do not keep what was sent: the sha256 it answers is of nothing."""

    def write(self, path: str, data: bytes, *, follow_link: bool = False) -> str:
        return hashlib.sha256(b"").hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def change(path: str, before: bytes | None) -> FileChange:
    return FileChange(
        path=path, before_sha256=None if before is None else sha(before), after="new", diff=""
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_each_file_to_change_is_backed_up_under_the_applys_stamp(ws: Path) -> None:
    """An existing file is copied to ``folder/STAMP/`` (its path flattened into the name) and
    journaled with its sha256; a file the fix creates is journaled as created, with no copy."""
    (ws / "launch.sh").write_bytes(b"exec python t.py\n")
    remote = Remote(InProcess(), root=str(ws))
    launch, hook = f"{ws}/launch.sh", f"{ws}/hook/sitecustomize.py"
    folder = f"{ws}/state/backups"
    backups, rows = back_up(
        remote, [change(launch, b"exec python t.py\n"), change(hook, None)], folder, NOW
    )
    where = f"{folder}/{STAMP}/{launch.replace('/', '_')}"
    assert backups == {launch: b"exec python t.py\n", hook: None}
    assert rows == [
        {"path": launch, "backup": where, "sha256": sha(b"exec python t.py\n")},
        {"path": hook, "created": True},
    ]
    assert Path(where).read_bytes() == b"exec python t.py\n"


def test_a_backup_that_does_not_hold_what_was_read_stops_the_apply(ws: Path) -> None:
    """A backup whose sha256 after writing is not that of the bytes read is an error naming the
    backup: nothing may be changed without a good copy."""
    (ws / "launch.sh").write_bytes(b"x\n")
    remote = Lossy(InProcess(), root=str(ws))
    where = f"{ws}/b/{STAMP}/{str(ws / 'launch.sh').replace('/', '_')}"
    with pytest.raises(ApplyError) as caught:
        back_up(remote, [change(f"{ws}/launch.sh", b"x\n")], f"{ws}/b", NOW)
    assert str(caught.value) == f"the backup {where} does not hold what was read"


def test_the_journaled_backups_are_read_back_checked(ws: Path) -> None:
    """Each row of an interrupted apply's journal gives its file's bytes from the backup, or None
    for a file it created; a journal without rows gives nothing to restore."""
    (ws / "copy").write_bytes(b"old\n")
    remote = Remote(InProcess())
    entry: dict[str, Any] = {
        "backups": [
            {"path": "/t/launch.sh", "backup": f"{ws}/copy", "sha256": sha(b"old\n")},
            {"path": "/t/hook.py", "created": True},
        ]
    }
    assert journaled_backups(remote, entry, "/t/j") == {
        "/t/launch.sh": b"old\n",
        "/t/hook.py": None,
    }
    assert journaled_backups(remote, {"step": "writing"}, "/t/j") == {}


def test_a_backup_changed_since_it_was_journaled_is_not_restored_from(ws: Path) -> None:
    """A backup whose bytes no longer have the journaled sha256 is refused, naming the backup and
    the file it was of."""
    (ws / "copy").write_bytes(b"tampered\n")
    entry = {"backups": [{"path": "/t/l.sh", "backup": f"{ws}/copy", "sha256": sha(b"old\n")}]}
    with pytest.raises(ApplyError) as caught:
        journaled_backups(Remote(InProcess()), entry, "/t/j")
    assert str(caught.value) == (
        f"the backup {ws}/copy of /t/l.sh no longer has the sha256 the journal recorded:"
        " not restoring from it"
    )


@pytest.mark.parametrize(
    "row",
    [["/t/l.sh"], {"backup": "/b", "sha256": "00"}, {"path": 3, "created": True}],
    ids=["not-an-object", "no-path", "path-not-text"],
)
def test_a_journal_row_without_a_path_is_a_bad_backup(row: Any) -> None:
    """A row that is not an object naming its file's path is an error naming the journal."""
    with pytest.raises(ApplyError, match=r"^the apply journal /t/j names a bad backup$"):
        journaled_backups(Remote(InProcess()), {"backups": [row]}, "/t/j")


def test_a_rollback_restores_bytes_and_removes_what_the_fix_created(ws: Path) -> None:
    """Restoring writes each backed-up file byte-identical and removes each created file still
    there; a created file already gone is passed over; the paths restored and removed are
    returned."""
    (ws / "launch.sh").write_bytes(b"fixed\n")
    (ws / "hook.py").write_bytes(b"hook\n")
    remote = Remote(InProcess(), root=str(ws))
    backups = {f"{ws}/launch.sh": b"as it was\n", f"{ws}/hook.py": None, f"{ws}/gone.py": None}
    assert restore(remote, backups) == ([f"{ws}/launch.sh"], [f"{ws}/hook.py"])
    assert (ws / "launch.sh").read_bytes() == b"as it was\n"
    assert sorted(p.name for p in ws.iterdir()) == ["launch.sh"]


def test_a_launch_file_that_is_a_link_stays_a_link_when_restored(ws: Path) -> None:
    """A backed-up file that is a symlink inside the workspace is restored where it points: the
    link stays a link."""
    (ws / "real.sh").write_bytes(b"fixed\n")
    (ws / "launch.sh").symlink_to(ws / "real.sh")
    remote = Remote(InProcess(), root=str(ws))
    restore(remote, {f"{ws}/launch.sh": b"as it was\n"})
    assert (ws / "launch.sh").is_symlink()
    assert (ws / "real.sh").read_bytes() == b"as it was\n"


def test_a_rollback_that_does_not_restore_the_bytes_is_an_error(ws: Path) -> None:
    """A restored file whose sha256 is not that of its backup is an error naming the file and the
    sha256 found."""
    remote = Lossy(InProcess(), root=str(ws))
    with pytest.raises(ApplyError) as caught:
        restore(remote, {f"{ws}/launch.sh": b"as it was\n"})
    assert str(caught.value) == (
        f"rollback of {ws}/launch.sh did not restore its bytes (sha256 {sha(b'')[:12]})"
    )
