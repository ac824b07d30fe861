"""playbooks._recovery: recovering an apply that was interrupted. Of the files the apply
backed up, what its recovery changes (back to the backup, or removed where the apply created
it), the steps of the plan that recovers it, and the few words that name it.

Files live in a workspace under tmp_path, read by the fix operations run in this process
(tests/lib/in_process_remote.py). How a transaction plans and applies a recovery is
specified in tests/unit/test_playbooks_base.py."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from playbooks._recovery import Restoration, entry_words, recovery_steps, restorations
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess

BACK = "back to its backup, byte-identical"
CREATED = "created by the interrupted apply: removed"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_a_file_changed_since_its_backup_goes_back_to_it(ws: Path) -> None:
    """A backed-up file whose bytes now differ is restored: its sha256 and text now, the
    backup's text after."""
    (ws / "launch.sh").write_bytes(b"exec python t.py --fixed\n")
    path = f"{ws}/launch.sh"
    found = restorations(Remote(InProcess()), {path: b"exec python t.py\n"})
    assert found == [
        Restoration(
            path,
            _sha(b"exec python t.py --fixed\n"),
            "exec python t.py --fixed\n",
            "exec python t.py\n",
            BACK,
        )
    ]


def test_a_file_already_as_its_backup_is_left_alone(ws: Path) -> None:
    """A file byte-identical to its backup needs nothing: it is not listed."""
    (ws / "launch.sh").write_bytes(b"exec python t.py\n")
    assert restorations(Remote(InProcess()), {f"{ws}/launch.sh": b"exec python t.py\n"}) == []


def test_a_file_the_apply_created_is_removed_if_still_there(ws: Path) -> None:
    """A file with no backup (the apply created it) is removed while it exists, its text
    after being empty; once gone, nothing is left to do."""
    (ws / "hook.py").write_bytes(b"print('hook')\n")
    there, gone = f"{ws}/hook.py", f"{ws}/gone.py"
    found = restorations(Remote(InProcess()), {there: None, gone: None})
    assert found == [Restoration(there, _sha(b"print('hook')\n"), "print('hook')\n", "", CREATED)]


def test_a_backed_up_file_since_deleted_is_written_back(ws: Path) -> None:
    """A backed-up file that no longer exists is restored from its backup: no sha256
    now, no text before."""
    path = f"{ws}/train.py"
    found = restorations(Remote(InProcess()), {path: b"import torch\n"})
    assert found == [Restoration(path, None, "", "import torch\n", BACK)]


def test_bytes_that_are_not_utf8_are_shown_with_replacement_characters(ws: Path) -> None:
    """The texts before and after are for showing: bytes that are not UTF-8 become
    U+FFFD rather than stopping the recovery's plan."""
    (ws / "data.cfg").write_bytes(b"lr=\xff\n")
    path = f"{ws}/data.cfg"
    [found] = restorations(Remote(InProcess()), {path: b"lr=\xfe1\n"})
    assert (found.before, found.after) == ("lr=\ufffd\n", "lr=\ufffd1\n")


def test_restorations_follow_the_order_of_the_backups(ws: Path) -> None:
    """Files are listed in the order the apply backed them up."""
    for name in ("b.sh", "a.sh", "c.sh"):
        (ws / name).write_text("changed\n")
    backups: dict[str, bytes | None] = {f"{ws}/{n}": b"old\n" for n in ("c.sh", "a.sh", "b.sh")}
    found = restorations(Remote(InProcess()), backups)
    assert [r.path for r in found] == [f"{ws}/c.sh", f"{ws}/a.sh", f"{ws}/b.sh"]


ENTRY: dict[str, Any] = {
    "playbook": "recompile-limit",
    "at": 1_700_000_000,
    "owner": {"pid": 42, "host": "gpu1"},
    "step": "writing",
}
WORDS = (
    "recompile-limit, begun at 2023-11-14 22:13:20 UTC by process 42 on gpu1,"
    " stopped at step writing"
)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({}, WORDS),
        ({"at": 1_700_000_000.75}, WORDS),
        (
            {"at": "yesterday"},
            "recompile-limit, begun by process 42 on gpu1, stopped at step writing",
        ),
        (
            {"owner": "me"},
            "recompile-limit, begun at 2023-11-14 22:13:20 UTC, stopped at step writing",
        ),
        (
            {"owner": {}},
            "recompile-limit, begun at 2023-11-14 22:13:20 UTC, stopped at step writing",
        ),
        (
            {"step": "started", "at": None},
            "recompile-limit, begun by process 42 on gpu1, stopped at step started",
        ),
        (
            {"step": "started", "at": None, "owner": {"pid": 7}},
            "recompile-limit, begun by process 7, stopped at step started",
        ),
    ],
    ids=[
        "whole-entry",
        "fractional-time",
        "time-not-a-number",
        "owner-not-an-object",
        "owner-empty",
        "other-step-no-time",
        "owner-without-host",
    ],
)
def test_an_interrupted_apply_is_named_by_playbook_time_owner_and_step(
    changes: dict[str, Any], words: str
) -> None:
    """The playbook, when it began (UTC, to the second) where the journal holds a time,
    which process on which host ran it where it names an owner, and the step it stopped
    at."""
    assert entry_words({**ENTRY, **changes}) == words


def test_the_recovery_plan_restores_each_file_in_turn() -> None:
    """The plan names the interrupted apply, then one step per file it restores."""
    restoring = [
        Restoration("/ws/launch.sh", "a" * 64, "x", "y", BACK),
        Restoration("/ws/hook.py", "b" * 64, "h", "", CREATED),
    ]
    assert recovery_steps(ENTRY, restoring) == [
        f"recover the interrupted apply ({WORDS})",
        f"restore /ws/launch.sh: {BACK}",
        f"restore /ws/hook.py: {CREATED}",
    ]


@pytest.mark.parametrize(
    ("changes", "after"),
    [
        ({}, []),
        (
            {"started_pid": 4242},
            ["stop the trainer it started (process 4242) if it still runs"],
        ),
        ({"started_pid": "4242"}, []),
        ({"was_running": 99}, ["start the trainer as before, unless it runs"]),
        ({"was_running": None}, []),
        (
            {"started_pid": 5, "was_running": 3},
            [
                "stop the trainer it started (process 5) if it still runs",
                "start the trainer as before, unless it runs",
            ],
        ),
    ],
    ids=[
        "nothing-started-nothing-ran",
        "it-started-a-trainer",
        "started-pid-not-a-number",
        "a-trainer-ran-before",
        "none-ran-before",
        "stop-then-start",
    ],
)
def test_the_recovery_stops_what_the_apply_started_and_restarts_what_ran(
    changes: dict[str, Any], after: list[str]
) -> None:
    """With nothing to restore the plan says the files are already as before; then it
    stops the trainer the apply started (a journaled pid that is a number) and starts
    the trainer as before where one was running when the apply began."""
    assert recovery_steps({**ENTRY, **changes}, []) == [
        f"recover the interrupted apply ({WORDS})",
        "its files are already as they were before it",
        *after,
    ]
