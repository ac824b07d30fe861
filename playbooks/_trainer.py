"""The trainer on its target as a fix's transaction (``playbooks.base``) handles it:
which process runs it, starting it (and keeping the doctor's record of what it started,
in state files checked before anything changes), stopping the one an apply started,
restarting it to read what the fixed run writes, and putting it back on a rollback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from playbooks._backups import restore
from playbooks._run_window import mark_end, written_since
from playbooks.journal import Journal
from playbooks.remote import Remote
from tools.errors import ApplyRefused

if TYPE_CHECKING:
    from playbooks.base import TrainerSite


class Restarted(NamedTuple):
    """A run of the fixed trainer: when it started, whether it finished in the time it
    was given, and what it wrote to the console log and to the train log."""

    started: float
    finished: bool
    console: bytes
    train_log: bytes


@dataclass
class TrainerControl:
    """The trainer of ``site``, as one transaction handles it (its remote, its journal)."""

    remote: Remote
    site: TrainerSite
    journal: Journal
    clock: Callable[[], float]

    def running(self) -> int | None:
        """The trainer's pid: from its pid file, else the doctor's record of the one it
        started, else the process the probes saw."""
        pid = self.remote.running_pid(self.site.pid_file)
        if pid is None and self.site.pid_file != self.site.started_file:
            pid = self.remote.running_pid(self.site.started_file)
        if pid is None and self.site.trainer_pid is not None:
            pid = self.site.trainer_pid if self.remote.alive(self.site.trainer_pid) else None
        return pid

    def start(self, argv: list[str]) -> int:
        pid, start = self.remote.start_process(
            argv, cwd=self.site.start_dir, log=f"{self.site.state_dir}/launch.log"
        )
        if self.journal.entry.get("step") in ("writing", "stopping"):
            self.journal.step("started", started_pid=pid, started_start=start)
        elif self.journal.entry:
            # The rollback's restart "as before": the step stays rolling_back until done.
            self.journal.note(started_pid=pid, started_start=start)
        # The doctor's own record of what it started: a launch file need not write one.
        self.remote.write(self.site.started_file, f"{pid}\n".encode())
        return pid

    def stop_started(self, entry: dict[str, Any]) -> bool:
        """Stop the trainer the apply that ``entry`` journals started, if it still runs:
        only that process, the same pid *and* start time."""
        started = entry.get("started_pid")
        if (
            isinstance(started, int)
            and self.remote.alive(started)
            and self.remote.started_at(started) == entry.get("started_start")
        ):
            self.remote.stop(started, beat=self.site.lock_file)
            return True
        return False

    def check_state_files(self) -> None:
        """ApplyRefused, before anything changes, for a file of the doctor's state an
        apply writes that is a link or no regular file: found only once the trainer was
        restarted, it would stop the apply halfway (the trainer it started running on)."""
        site = self.site
        paths = (site.started_file, site.journal_file, f"{site.state_dir}/launch.log")
        for path, kind in zip(paths, self.remote.kinds(*paths), strict=True):
            if kind not in ("missing", "file"):
                raise ApplyRefused(
                    f"{path} is a {kind}, not a regular file: the doctor does not write"
                    " through it; nothing was changed"
                )

    def launch_argv(self) -> list[str]:
        """How the fixed trainer starts: its launch file, where it exists (the user's, or
        the doctor's once a change wrote it); else as it started before (a fix that
        changed only the trainer's config file leaves the launch command as it was)."""
        if self.remote.sha256(self.site.launch_file) is not None:
            return ["sh", self.site.launch_file]
        return self.site.argv_before()

    def restart(self, was_running: int | None, timeout: float) -> Restarted:
        """Stop the trainer that runs, start the fixed one and wait for it (``timeout``
        seconds, then stopped): what it wrote to the logs meanwhile."""
        if was_running is not None:
            self.journal.step("stopping")
            self.remote.stop(was_running, beat=self.site.lock_file)
        log_mark = mark_end(self.remote, self.site.stdout_log)
        train_mark = mark_end(self.remote, self.site.train_log)
        started = self.clock()
        pid = self.start(self.launch_argv())
        finished = self.remote.wait(pid, timeout, beat=self.site.lock_file)
        if not finished:
            self.remote.stop(pid, beat=self.site.lock_file)
        self.journal.step("verifying")
        return Restarted(
            started,
            finished,
            written_since(self.remote, self.site.stdout_log, log_mark),
            written_since(self.remote, self.site.train_log, train_mark),
        )

    def roll_back(
        self, backups: dict[str, bytes | None], was_running: int | None, *, stop: bool = True
    ) -> str:
        """Restore ``backups`` byte-identical and, if a trainer was running before, start
        it as before (unless one runs: a recovery never starts a second trainer)."""
        current = self.remote.running_pid(self.site.pid_file)
        if current is not None and stop:
            self.remote.stop(current, beat=self.site.lock_file)
            current = None
        if stop:
            # The trainer this apply started, known by its journal whether or not its pid
            # file (the trainer's, or the doctor's started.pid) could be written.
            self.stop_started(self.journal.entry)
        restored, removed = restore(self.remote, backups)
        restart = was_running is not None and current is None and self.running() is None
        if restart:
            self.start(self.site.argv_before())
        done = []
        if restored:
            done.append("restored " + ", ".join(restored) + " byte-identical")
        if removed:
            done.append("removed " + ", ".join(removed) + " (created by the fix)")
        return (
            "rolled back: "
            + ("; ".join(done) or "nothing had been written")
            + ("; trainer restarted as before" if restart else "")
            + (
                "; the trainer was running again, not restarted"
                if was_running is not None and not restart
                else ""
            )
        )
