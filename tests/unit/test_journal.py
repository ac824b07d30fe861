"""The apply journal and the apply lock's owner (playbooks.journal): who holds a lock and when a
lock is stale, reading the journal an earlier apply left (or refusing a damaged one), writing it
step by step, and which journals are interrupted applies.

The journal lives in a workspace under tmp_path, read and written by the remote operations run in
this process."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from playbooks.journal import LEASE_S, Journal, Owner, interrupted, stale, this_process
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess
from tools.errors import ApplyError, ApplyRefused

HOST = socket.gethostname()


def start_time(pid: int) -> str:
    """``boot_id:starttime`` as proc(5) documents them: the boot's id and field 22 of the
    process's stat line."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return f"{boot}:{after_name[22 - 3]}"  # fields 1 and 2 are the pid and (name)


def unused_pid() -> int:
    """A pid no process can have: pids stay below pid_max."""
    return int(Path("/proc/sys/kernel/pid_max").read_text())


def test_an_owner_record_is_sorted_json_with_its_extras() -> None:
    """An owner's record is one JSON object, keys sorted, holding host, pid, start time and what
    the caller adds (the playbook, since when)."""
    record = Owner("h", 7, "b:1").record(playbook="lock-warmup", since=3.5)
    assert record == (
        '{"host": "h", "pid": 7, "playbook": "lock-warmup", "since": 3.5, "started": "b:1"}'
    )


def test_this_process_is_named_by_host_pid_and_start_time() -> None:
    """The running controller is its host name, its pid, and its boot and start time, which tell
    it from a later process given the same pid."""
    assert this_process() == Owner(HOST, os.getpid(), start_time(os.getpid()))


def local(pid: int, started: str | None) -> str:
    return json.dumps({"host": HOST, "pid": pid, "started": started})


@pytest.mark.parametrize(
    ("record", "age", "lease", "why"),
    [
        (lambda: local(os.getpid(), start_time(os.getpid())), 1e6, LEASE_S, None),
        (
            lambda: local(os.getpid(), "another-boot:1"),
            0.0,
            LEASE_S,
            f"its owner's pid {os.getpid()} now belongs to another process",
        ),
        (
            lambda: local(unused_pid(), "b:1"),
            0.0,
            LEASE_S,
            f"its owner, process {unused_pid()} on this host, is gone",
        ),
        (
            lambda: json.dumps({"host": "elsewhere", "pid": 1, "started": "b:1"}),
            301.0,
            LEASE_S,
            "nothing has touched it for 301s (lease 300s)",
        ),
        (lambda: json.dumps({"host": "elsewhere", "pid": 1}), 300.0, LEASE_S, None),
        (lambda: json.dumps({"host": "elsewhere", "pid": 1}), None, LEASE_S, None),
        (lambda: "unknown", 11.4, 10.0, "nothing has touched it for 11s (lease 10s)"),
        (lambda: local(os.getpid(), None), 2.0, 1.5, "nothing has touched it for 2s (lease 1.5s)"),
    ],
    ids=[
        "live-owner-however-old",
        "pid-reused",
        "owner-gone",
        "remote-owner-past-lease",
        "remote-owner-at-lease",
        "no-age",
        "unreadable-owner",
        "local-owner-without-start-time",
    ],
)
def test_when_a_lock_is_stale(
    record: Callable[[], str], age: float | None, lease: float, why: str | None
) -> None:
    """A lock owned by a process on this host is stale exactly when that process is gone or its
    pid now belongs to another; any other lock (another host, an unreadable owner) is stale once
    untouched for longer than the lease; the reason is said."""
    assert stale(record(), age, lease) == why


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "state").mkdir(parents=True)
    return ws


def journal(ws: Path) -> Journal:
    return Journal(Remote(InProcess(), root=str(ws)), f"{ws}/state/apply.journal")


def test_no_journal_reads_as_none(ws: Path) -> None:
    """A target where no apply ran has no journal: read gives None."""
    assert journal(ws).read() is None


def test_the_journal_reads_as_the_last_apply_left_it(ws: Path) -> None:
    """A journal is the JSON object the last apply wrote."""
    entry = {"apply": "a1", "step": "writing", "backups": [{"path": "/x", "created": True}]}
    (ws / "state" / "apply.journal").write_text(json.dumps(entry))
    assert journal(ws).read() == entry


@pytest.mark.parametrize(
    "text",
    ["{not json", '["step", "writing"]', '{"apply": "a1"}', '{"step": 3}'],
    ids=["not-json", "not-an-object", "no-step", "step-not-text"],
)
def test_a_damaged_journal_is_an_error_saying_what_to_do(ws: Path, text: str) -> None:
    """A journal that is not the JSON object an apply writes, with its step, cannot be trusted:
    the error names it and says to compare the files with the backups."""
    (ws / "state" / "apply.journal").write_text(text)
    with pytest.raises(ApplyError) as caught:
        journal(ws).read()
    assert str(caught.value) == (
        f"the apply journal {ws}/state/apply.journal is damaged (not the JSON an apply writes): "
        "an earlier apply may have left files changed; compare them with the backups beside it, "
        "then remove it"
    )


@pytest.mark.parametrize("kind", ["directory", "link"])
def test_a_journal_that_is_no_regular_file_is_refused(ws: Path, kind: str) -> None:
    """A journal path that is a directory or a symlink is neither read nor written through: the
    refusal names what it is."""
    path = ws / "state" / "apply.journal"
    if kind == "directory":
        path.mkdir()
    else:
        (ws / "elsewhere.json").write_text('{"step": "applied"}')
        path.symlink_to(ws / "elsewhere.json")
    with pytest.raises(ApplyRefused) as caught:
        journal(ws).read()
    assert str(caught.value) == (
        f"the apply journal {path} is a {kind}, not a regular file: the doctor neither reads nor"
        " writes through it; nothing was changed"
    )


def test_each_step_writes_the_whole_entry_and_a_note_keeps_the_step(ws: Path) -> None:
    """``begin`` holds the entry, each ``step`` writes it whole with the step reached (sorted
    JSON), and ``note`` records a fact without moving the step."""
    j = journal(ws)
    path = ws / "state" / "apply.journal"
    j.begin(apply="a1", playbook="p")
    assert not path.exists()  # nothing is written before the first step
    j.step("backed_up")
    assert path.read_text() == '{"apply": "a1", "playbook": "p", "step": "backed_up"}'
    j.step("writing", was_running=None)
    j.note(started_pid=42)
    assert json.loads(path.read_text()) == {
        "apply": "a1",
        "playbook": "p",
        "step": "writing",
        "was_running": None,
        "started_pid": 42,
    }
    assert j.read() == j.entry


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (None, False),
        ({"step": "applied"}, False),
        ({"step": "rolled_back"}, False),
        ({"step": "backed_up"}, True),
        ({"step": "writing"}, True),
        ({"step": "verifying"}, True),
        ({"step": "rolling_back"}, True),
    ],
    ids=[
        "no-journal",
        "applied",
        "rolled-back",
        "backed-up",
        "writing",
        "verifying",
        "rolling-back",
    ],
)
def test_an_apply_is_interrupted_until_it_reaches_a_final_step(
    entry: dict[str, Any] | None, expected: bool
) -> None:
    """Only "applied" and "rolled_back" end an apply; a journal at any other step is an apply
    that was interrupted, and no journal is none."""
    assert interrupted(entry) is expected
