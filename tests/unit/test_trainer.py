"""playbooks._trainer: the trainer as one fix's transaction handles it. Which process runs
it (its pid file, the doctor's record of what it started, the process the probes saw);
starting it and journaling the start; stopping only the exact process an apply started;
refusing, before anything changes, state files that are links or no regular files; the
command the fixed trainer starts with; a restart that reads what the fixed run wrote; and
a rollback that puts files back and restarts the trainer as it was.

Files live in a workspace under tmp_path, read and written by the fix operations run in
this process (tests/lib/in_process_remote.py); the process operations (pids, start, stop,
wait) are answered by a stand-in table here, so no process is started or signalled."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from playbooks._trainer import Restarted, TrainerControl
from playbooks.base import TrainerSite
from playbooks.journal import Journal
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess
from tools.errors import ApplyRefused

NOW = 1_700_000_000.0


class Processes(Remote):
    """The operations on a workspace here, with the target's processes a table: which
    pids are alive (and since when), what each pid file names; starts, stops and waits
    are recorded. A started process appends ``writes`` to the files named there."""

    def __init__(self, ws: Path) -> None:
        super().__init__(InProcess(), root=str(ws))
        self.alive_since: dict[int, str] = {}
        self.pid_files: dict[str, int] = {}
        self.next_pid = 500
        self.finishes = True
        self.writes: dict[str, bytes] = {}
        self.calls: list[tuple[Any, ...]] = []

    def running_pid(self, pid_file: str) -> int | None:
        pid = self.pid_files.get(pid_file)
        return pid if pid in self.alive_since else None

    def alive(self, pid: int) -> bool:
        return pid in self.alive_since

    def started_at(self, pid: int) -> str | None:
        return self.alive_since.get(pid)

    def stop(self, pid: int, timeout: float = 60.0, beat: str | None = None) -> bool:
        self.calls.append(("stop", pid, beat))
        self.alive_since.pop(pid, None)
        return False

    def start_process(
        self, argv: Sequence[str], cwd: str, log: str, env: dict[str, str] | None = None
    ) -> tuple[int, str | None]:
        pid = self.next_pid
        self.next_pid += 1
        self.calls.append(("start", list(argv), cwd, log))
        self.alive_since[pid] = f"t{pid}"
        for path, data in self.writes.items():
            with open(path, "ab") as fh:
                fh.write(data)
        return pid, f"t{pid}"

    def wait(self, pid: int, timeout: float, beat: str | None = None) -> bool:
        self.calls.append(("wait", pid, timeout, beat))
        return self.finishes


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".dflash-doctor").mkdir(parents=True)
    (ws / "launch.sh").write_text("exec python train.py\n")
    return ws


def _site(ws: Path, **given: Any) -> TrainerSite:
    return TrainerSite(
        str(ws), f"{ws}/launch.sh", f"{ws}/train.pid", f"{ws}/t.log", f"{ws}/o.log", **given
    )


def _control(ws: Path, site: TrainerSite | None = None) -> tuple[TrainerControl, Processes]:
    remote = Processes(ws)
    site = site or _site(ws)
    control = TrainerControl(remote, site, Journal(remote, site.journal_file), lambda: NOW)
    return control, remote


def _journal(ws: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ws / ".dflash-doctor" / "apply.journal").read_text())
    return data


# -- which process -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alive", "trainer_pid", "running"),
    [
        ({11, 22, 33}, 33, 11),
        ({22, 33}, 33, 22),
        ({33}, 33, 33),
        (set(), 33, None),
        ({22}, None, 22),
        (set(), None, None),
    ],
    ids=[
        "its-pid-file",
        "the-doctors-record",
        "the-process-the-probes-saw",
        "the-process-the-probes-saw-is-gone",
        "no-process-seen",
        "none-runs",
    ],
)
def test_the_running_trainer_is_found_in_order(
    ws: Path, alive: set[int], trainer_pid: int | None, running: int | None
) -> None:
    """The trainer's own pid file first, then the doctor's record of the trainer it
    started, then the process the probes saw, each only while that process is alive."""
    control, remote = _control(ws, _site(ws, trainer_pid=trainer_pid))
    remote.pid_files = {f"{ws}/train.pid": 11, f"{ws}/.dflash-doctor/started.pid": 22}
    remote.alive_since = {pid: "t" for pid in alive}
    assert control.running() == running


# -- starting and stopping -----------------------------------------------------------------


def test_a_start_during_the_apply_is_journaled_and_recorded(ws: Path) -> None:
    """Started while the apply writes (or stops the old trainer), the journal moves to
    ``started`` with the new process's pid and start time, and the doctor's record
    ``started.pid`` names it; it starts in the workspace, its output to launch.log."""
    control, remote = _control(ws)
    control.journal.step("writing")
    assert control.start(["sh", f"{ws}/launch.sh"]) == 500
    assert remote.calls == [
        ("start", ["sh", f"{ws}/launch.sh"], str(ws), f"{ws}/.dflash-doctor/launch.log")
    ]
    assert _journal(ws) == {"step": "started", "started_pid": 500, "started_start": "t500"}
    assert (ws / ".dflash-doctor" / "started.pid").read_text() == "500\n"


def test_a_start_during_a_rollback_is_noted_without_moving_the_step(ws: Path) -> None:
    """The rollback's restart "as before" notes the pid and start time; the step stays
    where the rollback put it until it is done."""
    control, _ = _control(ws, _site(ws, cwd="/ws/run"))
    control.journal.step("rolling_back")
    control.start(["sh", "-c", "exec python train.py"])
    assert _journal(ws) == {"step": "rolling_back", "started_pid": 500, "started_start": "t500"}


def test_a_start_outside_any_apply_writes_no_journal(ws: Path) -> None:
    """With no apply begun there is nothing to journal; the doctor's record is still
    written, and the trainer starts in its own directory where the site names one."""
    control, remote = _control(ws, _site(ws, cwd=f"{ws}/run"))
    control.start(["sh", f"{ws}/launch.sh"])
    assert not (ws / ".dflash-doctor" / "apply.journal").exists()
    assert (ws / ".dflash-doctor" / "started.pid").read_text() == "500\n"
    assert remote.calls[0][2] == f"{ws}/run"


@pytest.mark.parametrize(
    ("entry", "alive_since", "stopped"),
    [
        ({"started_pid": 77, "started_start": "t77"}, {77: "t77"}, True),
        ({"started_pid": 77, "started_start": "t77"}, {77: "t99"}, False),
        ({"started_pid": 77, "started_start": "t77"}, {}, False),
        ({"started_pid": "77", "started_start": "t77"}, {77: "t77"}, False),
        ({}, {77: "t77"}, False),
    ],
    ids=[
        "same-pid-same-start",
        "pid-reused-by-another-process",
        "already-gone",
        "pid-not-a-number",
        "nothing-started",
    ],
)
def test_only_the_exact_process_the_apply_started_is_stopped(
    ws: Path, entry: dict[str, Any], alive_since: dict[int, str], stopped: bool
) -> None:
    """The process is stopped only when its pid *and* its start time are the journal's
    (a pid reused since is another process), keeping the apply lock's heartbeat."""
    control, remote = _control(ws)
    remote.alive_since = dict(alive_since)
    assert control.stop_started(entry) is stopped
    expected = [("stop", 77, f"{ws}/.dflash-doctor/apply.lock")] if stopped else []
    assert remote.calls == expected


# -- the state files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    [
        ("started.pid", lambda p: p.symlink_to("/etc/passwd"), "link"),
        ("apply.journal", lambda p: p.mkdir(), "directory"),
        ("launch.log", lambda p: p.symlink_to(p.with_name("elsewhere")), "link"),
    ],
    ids=["record-is-a-link", "journal-is-a-directory", "log-is-a-dangling-link"],
)
def test_a_state_file_that_is_no_regular_file_refuses_the_apply(
    ws: Path, name: str, make: Any, kind: str
) -> None:
    """Before anything changes: the doctor's record, its journal or its launch log that
    is a link or no regular file refuses the apply, naming the path and what it is."""
    path = ws / ".dflash-doctor" / name
    make(path)
    control, _ = _control(ws)
    with pytest.raises(ApplyRefused) as caught:
        control.check_state_files()
    assert str(caught.value) == (
        f"{path} is a {kind}, not a regular file: the doctor does not write through it;"
        " nothing was changed"
    )


def test_state_files_that_are_files_or_missing_pass(ws: Path) -> None:
    """Missing state files (a first apply) and regular ones (a later one) are fine."""
    (ws / ".dflash-doctor" / "started.pid").write_text("12\n")
    control, _ = _control(ws)
    control.check_state_files()


# -- the launch command ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("launch_exists", "launch_text", "argv"),
    [
        (True, None, ["sh", "{ws}/launch.sh"]),
        (True, "exec python train.py", ["sh", "{ws}/launch.sh"]),
        (False, "exec python train.py --lr 3", ["sh", "-c", "exec python train.py --lr 3"]),
        (False, None, ["sh", "{ws}/launch.sh"]),
    ],
    ids=[
        "the-users-launch-file",
        "the-doctors-launch-file-once-written",
        "the-command-it-started-with",
        "no-file-no-command",
    ],
)
def test_the_fixed_trainer_starts_from_the_launch_file_where_it_exists(
    ws: Path, launch_exists: bool, launch_text: str | None, argv: list[str]
) -> None:
    """The launch file where it exists (the user's, or the doctor's once a change wrote
    it); else the trainer starts as before (the launch command it was started with)."""
    if not launch_exists:
        (ws / "launch.sh").unlink()
    control, _ = _control(ws, _site(ws, launch_text=launch_text))
    assert control.launch_argv() == [a.format(ws=ws) for a in argv]


# -- restarting ----------------------------------------------------------------------------


def test_a_restart_stops_the_old_trainer_and_reads_what_the_new_one_wrote(ws: Path) -> None:
    """The running trainer is stopped (journaled ``stopping``), the fixed one started
    from the launch file and waited for; what it appended to the console and train logs,
    and only that, comes back, with the clock's time at the start."""
    (ws / "o.log").write_bytes(b"old console\n")
    (ws / "t.log").write_bytes(b'{"step": 1}\n')
    control, remote = _control(ws)
    remote.alive_since = {40: "t40"}
    remote.writes = {f"{ws}/o.log": b"new console\n", f"{ws}/t.log": b'{"step": 2}\n'}
    control.journal.step("writing")
    restarted = control.restart(40, timeout=120.0)
    lock = f"{ws}/.dflash-doctor/apply.lock"
    assert restarted == Restarted(NOW, True, b"new console\n", b'{"step": 2}\n')
    assert remote.calls == [
        ("stop", 40, lock),
        ("start", ["sh", f"{ws}/launch.sh"], str(ws), f"{ws}/.dflash-doctor/launch.log"),
        ("wait", 500, 120.0, lock),
    ]
    assert _journal(ws) == {"step": "verifying", "started_pid": 500, "started_start": "t500"}


def test_a_restart_that_does_not_finish_in_time_is_stopped(ws: Path) -> None:
    """A fixed run still going after its time is stopped and reported as not finished;
    with no trainer running before, nothing is stopped first."""
    (ws / "o.log").write_bytes(b"")
    (ws / "t.log").write_bytes(b"")
    control, remote = _control(ws)
    remote.finishes = False
    control.journal.step("writing")
    restarted = control.restart(None, timeout=5.0)
    lock = f"{ws}/.dflash-doctor/apply.lock"
    assert restarted == Restarted(NOW, False, b"", b"")
    assert remote.calls == [
        ("start", ["sh", f"{ws}/launch.sh"], str(ws), f"{ws}/.dflash-doctor/launch.log"),
        ("wait", 500, 5.0, lock),
        ("stop", 500, lock),
    ]
    assert _journal(ws)["step"] == "verifying"


# -- rolling back ------------------------------------------------------------------------


def test_a_rollback_restores_removes_and_restarts_the_trainer_as_before(ws: Path) -> None:
    """Files go back byte-identical, files the fix created are removed, the trainer the
    apply started is stopped and the one that ran before is started as before."""
    (ws / "launch.sh").write_text("exec python train.py --fixed\n")
    (ws / "hook.py").write_text("fix\n")
    control, remote = _control(ws)
    control.journal.step("rolling_back", started_pid=60, started_start="t60")
    remote.alive_since = {60: "t60"}
    backups: dict[str, bytes | None] = {
        f"{ws}/launch.sh": b"exec python train.py\n",
        f"{ws}/hook.py": None,
    }
    detail = control.roll_back(backups, was_running=40)
    assert detail == (
        f"rolled back: restored {ws}/launch.sh byte-identical; removed {ws}/hook.py"
        " (created by the fix); trainer restarted as before"
    )
    assert (ws / "launch.sh").read_text() == "exec python train.py\n"
    assert not (ws / "hook.py").exists()
    assert [c[0:2] for c in remote.calls] == [("stop", 60), ("start", ["sh", f"{ws}/launch.sh"])]


def test_a_rollback_with_nothing_written_and_no_trainer_before_says_so(ws: Path) -> None:
    """No file was written and no trainer ran: nothing to restore, nothing to start."""
    control, remote = _control(ws)
    assert control.roll_back({}, was_running=None) == "rolled back: nothing had been written"
    assert remote.calls == []


def test_a_rollback_stops_the_trainer_running_now_before_restarting(ws: Path) -> None:
    """The trainer its pid file names (the fixed one) is stopped, then the one from
    before is started again."""
    control, remote = _control(ws)
    remote.pid_files = {f"{ws}/train.pid": 70}
    remote.alive_since = {70: "t70"}
    detail = control.roll_back({}, was_running=40)
    assert detail == "rolled back: nothing had been written; trainer restarted as before"
    assert [c[0:2] for c in remote.calls] == [("stop", 70), ("start", ["sh", f"{ws}/launch.sh"])]


def test_a_recovery_never_starts_a_second_trainer(ws: Path) -> None:
    """Without stopping (a recovery), a trainer that runs again is left running and
    not started twice; the outcome says so."""
    control, remote = _control(ws)
    remote.pid_files = {f"{ws}/train.pid": 70}
    remote.alive_since = {70: "t70"}
    detail = control.roll_back({}, was_running=40, stop=False)
    assert detail == (
        "rolled back: nothing had been written; the trainer was running again, not restarted"
    )
    assert remote.calls == []
