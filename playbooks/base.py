"""The playbook contract, and the transaction every fix runs as.

A playbook declares the hypothesis kinds it answers (one verified is required), how to read its
preconditions, and how to turn the launch file into the fixed one. ``Transaction`` does
the rest, the same way for every playbook:

1. **plan** — what would change, as a unified diff; nothing is written;
2. (the approval happens outside, bound to the plan's digest);
3. **re-check** — the preconditions are read again (file hashes, then the playbook's own
   probes: planned again, it must make the approved changes); any drift aborts, saying
   what changed;
4. **apply** — under a lock on the target, every file backed up first;
5. **verify** — restart the trainer, wait for its fresh log lines, and require that the
   error signature that justified the fix (the playbook's ``signature``) is gone from the
   new window, that torch's FX-trace error is not there either (a crash is never a fix),
   and that the measured series' tokens/s is at least ``min_ratio`` × the baseline;
6. **roll back** on any failure — files restored byte-identical (checked by sha256), the
   trainer restarted as it was.

Playbooks live beside ``tools/`` and use it to act; they return results and never call
into the diagnosis graph (``agent/`` turns their observations into facts).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from playbooks.journal import LEASE_S, Journal, Owner, interrupted, stale, this_process
from playbooks.remote import Remote
from tools.errors import ApplyError, ApplyRefused
from tools.parsers import stdoutlog
from tools.parsers.signatures import FX_NESTED_TRACE
from tools.parsers.trainlog import summarize_log
from tools.probes import applies  # the doctor's own files on a target, named once


@dataclass(frozen=True)
class Recurrence:
    """The console-log signature (an id of ``tools.parsers.signatures.SIGNATURES``, or of a
    profile's ``extra_signatures``) whose hits in the restarted trainer's new log lines
    mean the fault a playbook answers is still there, and what to call it in a sentence.
    By id, not by text: the verification reads the new lines with the parser the
    diagnosis read the log with, so a fix is judged by the evidence that justified it."""

    id: str
    label: str


FX_TRACE = Recurrence(FX_NESTED_TRACE, "FX-trace error")


class FileChange(BaseModel):
    path: str
    before_sha256: str | None  # None: the file does not exist yet
    after: str  # the new content (text files: launch scripts, hooks)
    diff: str
    why: str = ""  # the facts the new content was derived from, for the plan's steps


class FixPlan(BaseModel):
    playbook: str
    hypothesis: str
    steps: list[str] = Field(default_factory=list)
    changes: list[FileChange] = Field(default_factory=list)
    preconditions: dict[str, str | None] = Field(default_factory=dict)
    diff: str = ""
    # The apply this plan recovers (its journal's id): a plan that undoes an interrupted
    # apply instead of making a fix (``playbooks.journal``).
    recovers: str = ""
    digest: str = ""  # the approval is bound to this: the plan and the facts it was made from


class FixOutcome(BaseModel):
    playbook: str
    status: Literal["applied", "already_applied", "rolled_back", "aborted", "declined", "planned"]
    detail: str = ""
    facts: list[str] = Field(default_factory=list)
    observations: dict[str, float | int | str | None] = Field(default_factory=dict)


@dataclass(frozen=True)
class TrainerSite:
    """Where a trainer lives on its target and how it is started (see ``playbooks.site``
    for building one from a profile or from the running trainer process)."""

    workspace: str
    launch_file: str  # a shell script whose ``exec`` line the playbooks edit
    pid_file: str
    train_log: str
    stdout_log: str
    interpreter: str = "python3"
    # Where the launch came from, for the plan: "the profile's launch file …", "the
    # running trainer (process N): its command line, working directory and environment".
    launch_source: str = ""
    # The launch script the doctor wrote from a launch *command* (the profile's, or the
    # running process's): ``launch_file`` is then the doctor's own and does not exist
    # until a fix writes it; this text is how the trainer was started before.
    launch_text: str | None = None
    cwd: str | None = None  # where the trainer starts (default: the workspace)
    trainer_pid: int | None = None  # the running trainer the processes probe saw
    # How the logs are read, from the profile (the sweep's own settings): the verification
    # reads the restarted run's lines exactly as the diagnosis read the run's.
    log_fields: dict[str, Any] = field(default_factory=dict)
    throughput_unit: str | None = None
    extra_signatures: tuple[dict[str, Any], ...] = ()

    @property
    def state_dir(self) -> str:
        return f"{self.workspace}/{applies.STATE_DIR}"

    @property
    def started_file(self) -> str:
        """The doctor's own record of the trainer it started (never the trainer's pid
        file: a trainer may refuse to start while its pid file names a live process)."""
        return f"{self.state_dir}/started.pid"

    @property
    def journal_file(self) -> str:
        return f"{self.state_dir}/{applies.JOURNAL}"

    @property
    def lock_file(self) -> str:
        return f"{self.state_dir}/{applies.LOCK}"

    @property
    def start_dir(self) -> str:
        return self.cwd or self.workspace

    def argv_before(self) -> list[str]:
        """How the trainer was started before any fix: to restart it "as it was"."""
        if self.launch_text is not None:
            return ["sh", "-c", self.launch_text]
        return ["sh", self.launch_file]


_HEAD = 4096  # bytes of a log compared to tell whether a restart began it afresh

# What the restarted run's train-log records are judged by: given the new window's
# summary (``tools.parsers.trainlog.summarize_log``), the tokens/s of the series the baseline
# is for, and how many records that series has in the window.
Measure = Callable[[dict[str, Any]], tuple[float | None, int]]


def overall_median(summary: dict[str, Any]) -> tuple[float | None, int]:
    """The window's median tokens/s over all its records (no subject known)."""
    value = (summary.get("throughput") or {}).get("median")
    records = summary.get("records")
    return (
        float(value) if isinstance(value, int | float) else None,
        records if isinstance(records, int) else 0,
    )


class Playbook(Protocol):
    name: str
    requires: frozenset[str]  # the hypothesis kinds it answers: offered when one is verified
    answers: str  # the hypothesis kind whose error signature must be gone afterwards
    signature: Recurrence  # that error signature, as it appears in the trainer's log

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]: ...


def launch_change(
    site: TrainerSite, text: str, sha: str | None, after: str, why: str
) -> list[FileChange]:
    """The launch file changed from ``text`` (its sha256 ``sha``) to ``after``, as a
    plan's one change; none where ``after`` is what is there (already applied)."""
    if after == text:
        return []
    diff = unified(site.launch_file, text, after)
    return [FileChange(path=site.launch_file, before_sha256=sha, after=after, diff=diff, why=why)]


def unified(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"{path} (now)",
            f"{path} (after the fix)",
        )
    )


@dataclass
class Transaction:
    playbook: Playbook
    site: TrainerSite
    remote: Remote
    baseline_tok_s: float | None
    min_ratio: float = 0.9
    run_timeout: float = 600.0
    # How long an apply waits for another one on the same target to finish. Applies are
    # serialized: the second starts only after the first let go, and then finds the
    # fix already there (or the target changed) instead of overlapping it.
    lock_wait: float = 1800.0
    measure: Measure = overall_median
    # What the measured series is called in the log's own words ("drafter ", "rank=0 ",
    # or "" for a log with one series): a sentence never says "drafter" of a trainer
    # whose log has no drafter role.
    series: str = ""
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    events: list[str] = field(default_factory=list)

    # A lock untouched this long whose owner cannot be checked is stale (journal.stale).
    lease: float = LEASE_S
    owner: Owner = field(default_factory=this_process)

    def __post_init__(self) -> None:
        # Every write of this transaction stays under the trainer's workspace.
        self.remote = self.remote.confined(self.site.workspace)
        self.journal = Journal(self.remote, self.site.journal_file)

    # -- 1. plan ------------------------------------------------------------------

    def plan(self) -> FixPlan:
        entry = self.journal.read()
        if interrupted(entry):
            assert entry is not None
            return self._recovery_plan(entry)
        changes = self.playbook.changes(self.site, self.remote)
        launch = f"the launch file {self.site.launch_file}"
        if self.site.launch_source:
            launch += f" (from {self.site.launch_source})"
        steps = [f"change {c.path}" + (f": {c.why}" if c.why else "") for c in changes] + [
            f"restart the trainer from {launch}",
            "wait for its fresh log lines",
            f"require: no new {self.playbook.signature.label} lines"
            f" ({self.playbook.signature.id} in the console log)"
            + ("" if self.playbook.signature == FX_TRACE else f" nor {FX_TRACE.label} lines")
            + f", {self.series}tokens/s ≥ {self.min_ratio:g} × baseline",
            "roll back (restore files byte-identical, restart as before) if not",
        ]
        return FixPlan(
            playbook=self.playbook.name,
            hypothesis=self.playbook.answers,
            steps=steps if changes else ["nothing to change: already applied"],
            changes=changes,
            preconditions=self._preconditions(changes),
            diff="".join(c.diff for c in changes),
        )

    def _preconditions(self, changes: list[FileChange]) -> dict[str, str | None]:
        found: dict[str, str | None] = {c.path: self.remote.sha256(c.path) for c in changes}
        found[self.site.launch_file] = self.remote.sha256(self.site.launch_file)
        return found

    # -- 3..6 ---------------------------------------------------------------------

    def apply(self, plan: FixPlan) -> FixOutcome:
        if not plan.changes and not plan.recovers:
            return FixOutcome(
                playbook=plan.playbook,
                status="already_applied",
                detail="the launch file already carries this fix; nothing changed",
            )
        # Lock first, then re-check: what is checked is what stays true until the apply
        # is done, since every apply on this target goes through the same lock.
        lock = self.site.lock_file
        owner = self.owner.record(playbook=plan.playbook, since=self.clock())
        locked, holder = self._acquire(lock, owner)
        if not locked:
            return FixOutcome(
                playbook=plan.playbook,
                status="aborted",
                detail=f"another apply holds {lock} (waited {self.lock_wait:g}s): {holder}",
            )
        try:
            entry = self.journal.read()
            if plan.recovers:
                return self._recover(plan, entry)
            if interrupted(entry):
                assert entry is not None
                return FixOutcome(
                    playbook=plan.playbook,
                    status="aborted",
                    detail=f"an interrupted apply ({_entry_words(entry)}) must be recovered "
                    "first: plan again, and the plan is its recovery",
                )
            refused = self._recheck(plan)
            return refused if refused is not None else self._apply_locked(plan)
        finally:
            self.remote.unlock(lock)

    def _acquire(self, lock: str, owner: str) -> tuple[bool, str]:
        deadline = self.clock() + self.lock_wait
        while True:
            locked, holder, age = self.remote.try_lock(lock, owner)
            if locked:
                return True, holder
            why = stale(holder, age, self.lease)
            if why is not None:
                # A dead owner's lock is broken, not waited on; its apply, if it got
                # as far as changing anything, is in the journal.
                self.remote.break_lock(lock)
                self.events.append(f"broke the stale lock {lock} ({why}): {holder}")
                continue
            if self.clock() >= deadline:
                return False, holder
            self.events.append(f"waiting for {lock}: {holder}")
            self.sleep(min(1.0, max(0.0, deadline - self.clock())))

    def _state_files_writable(self) -> None:
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

    def _recheck(self, plan: FixPlan) -> FixOutcome | None:
        """Under the lock, just before writing: the reason not to apply, or None."""
        self._state_files_writable()
        # What a playbook probed to make its plan (a log warning, a dataset's lengths) is
        # a precondition too: planned again now, it must make the changes approved.
        try:
            again = self.playbook.changes(self.site, self.remote)
        except ApplyError as exc:
            return FixOutcome(
                playbook=plan.playbook,
                status="aborted",
                detail=f"a precondition no longer holds: {exc}",
            )
        if not again:
            # Another apply (serialized before this one) already made the same fix.
            return FixOutcome(
                playbook=plan.playbook,
                status="already_applied",
                detail="the launch file already carries this fix; nothing changed",
            )
        now = self._preconditions(plan.changes)
        drifted = {
            k: (plan.preconditions.get(k), v)
            for k, v in now.items()
            if plan.preconditions.get(k) != v
        }
        if drifted:
            what = "; ".join(
                f"{k}: sha256 {(a or 'absent')[:12]} → {(b or 'absent')[:12]}"
                for k, (a, b) in drifted.items()
            )
            return FixOutcome(
                playbook=plan.playbook,
                status="aborted",
                detail=f"the target changed since the plan was approved: {what}",
            )
        if [(c.path, c.after) for c in again] != [(c.path, c.after) for c in plan.changes]:
            return FixOutcome(
                playbook=plan.playbook,
                status="aborted",
                detail="planned again now, the fix differs from the approved plan: "
                + ("; ".join(c.why or c.path for c in again) or "nothing to change any more"),
            )
        return None

    def _apply_locked(self, plan: FixPlan) -> FixOutcome:
        try:
            backups, rows = self._backup(plan)
        except ApplyError as exc:
            return FixOutcome(
                playbook=plan.playbook,
                status="aborted",
                detail=f"could not back up before changing anything: {exc}",
            )
        self.journal.begin(
            apply=hashlib.sha256(f"{plan.digest}{self.clock()}{self.owner}".encode()).hexdigest()[
                :16
            ],
            playbook=plan.playbook,
            hypothesis=plan.hypothesis,
            owner=json.loads(self.owner.record()),
            at=self.clock(),
            backups=rows,
        )
        self.journal.step("backed_up")
        was_running = self._running()
        self.journal.step("writing", was_running=was_running, restart=self.site.argv_before())
        observations: dict[str, float | int | str | None] = {}
        try:
            for change in plan.changes:
                self.remote.write(change.path, change.after.encode(), follow_link=True)
            observations = self._restart_and_observe(was_running)
            ok, why = self._verdict(observations)
        except ApplyError as exc:
            ok, why = False, str(exc)
        if ok:
            self.journal.step("applied")
            return FixOutcome(
                playbook=plan.playbook, status="applied", detail=why, observations=observations
            )
        self.journal.step("rolling_back", why=why)
        restored = self._rollback(backups, was_running)
        self.journal.step("rolled_back")
        return FixOutcome(
            playbook=plan.playbook,
            status="rolled_back",
            detail=f"{why}; {restored}",
            observations=observations,
        )

    # -- recovery of an interrupted apply (playbooks.journal) -----------------------

    def _recovery_plan(self, entry: dict[str, Any]) -> FixPlan:
        backups = self._journaled_backups(entry)
        changes = []
        for path, data in backups.items():
            now = self.remote.sha256(path)
            before = self.remote.read(path).decode(errors="replace") if now else ""
            after = "" if data is None else data.decode(errors="replace")
            if data is not None and now == hashlib.sha256(data).hexdigest():
                continue
            if data is None and not now:
                continue
            changes.append(
                FileChange(
                    path=path,
                    before_sha256=now,
                    after=after,
                    diff=unified(path, before, after),
                    why="back to its backup, byte-identical"
                    if data is not None
                    else "created by the interrupted apply: removed",
                )
            )
        steps = [f"recover the interrupted apply ({_entry_words(entry)})"]
        steps += [f"restore {c.path}: {c.why}" for c in changes] or [
            "its files are already as they were before it"
        ]
        if isinstance(entry.get("started_pid"), int):
            steps.append(
                f"stop the trainer it started (process {entry['started_pid']}) if it still runs"
            )
        if entry.get("was_running") is not None:
            steps.append("start the trainer as before, unless it runs")
        return FixPlan(
            playbook=str(entry.get("playbook") or self.playbook.name),
            hypothesis=str(entry.get("hypothesis") or self.playbook.answers),
            steps=steps,
            changes=changes,
            preconditions={c.path: c.before_sha256 for c in changes},
            diff="".join(c.diff for c in changes),
            recovers=str(entry.get("apply") or "unnamed"),
        )

    def _journaled_backups(self, entry: dict[str, Any]) -> dict[str, bytes | None]:
        """Each file the interrupted apply backed up, with its bytes from the backup
        (checked against the sha256 journaled with it), or None for one it created."""
        out: dict[str, bytes | None] = {}
        rows = entry.get("backups")
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, dict) or not isinstance(row.get("path"), str):
                raise ApplyError(f"the apply journal {self.site.journal_file} names a bad backup")
            if row.get("created"):
                out[row["path"]] = None
                continue
            data = self.remote.read(str(row.get("backup")))
            if hashlib.sha256(data).hexdigest() != row.get("sha256"):
                raise ApplyError(
                    f"the backup {row.get('backup')} of {row['path']} no longer has the "
                    "sha256 the journal recorded: not restoring from it"
                )
            out[row["path"]] = data
        return out

    def _recover(self, plan: FixPlan, entry: dict[str, Any] | None) -> FixOutcome:
        if not interrupted(entry) or entry is None or entry.get("apply") != plan.recovers:
            return FixOutcome(
                playbook=plan.playbook,
                status="aborted",
                detail="the target changed since the recovery was approved: the interrupted "
                "apply it recovers is no longer the journal's",
            )
        now = {c.path: self.remote.sha256(c.path) for c in plan.changes}
        drifted = [p for p, sha in now.items() if plan.preconditions.get(p) != sha]
        if drifted:
            return FixOutcome(
                playbook=plan.playbook,
                status="aborted",
                detail="the target changed since the recovery was approved: " + ", ".join(drifted),
            )
        backups = self._journaled_backups(entry)
        self.journal.entry = dict(entry)
        self.journal.step("rolling_back", why="recovering an interrupted apply")
        started = entry.get("started_pid")
        stopped = ""
        # Only the process the apply started: the same pid *and* start time.
        if (
            isinstance(started, int)
            and self.remote.alive(started)
            and self.remote.started_at(started) == entry.get("started_start")
        ):
            self.remote.stop(started, beat=self.site.lock_file)
            stopped = f"stopped the trainer it started (process {started}); "
        was = entry.get("was_running")
        restored = self._rollback(backups, was if isinstance(was, int) else None, stop=False)
        self.journal.step("rolled_back")
        return FixOutcome(
            playbook=plan.playbook,
            status="rolled_back",
            detail=f"recovered the interrupted apply ({_entry_words(entry)}): {stopped}{restored}",
        )

    def _running(self) -> int | None:
        """The trainer's pid: from its pid file, else the doctor's record of the one it
        started, else the process the probes saw."""
        pid = self.remote.running_pid(self.site.pid_file)
        if pid is None and self.site.pid_file != self.site.started_file:
            pid = self.remote.running_pid(self.site.started_file)
        if pid is None and self.site.trainer_pid is not None:
            pid = self.site.trainer_pid if self.remote.alive(self.site.trainer_pid) else None
        return pid

    def _start(self, argv: list[str]) -> int:
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

    def _backup(self, plan: FixPlan) -> tuple[dict[str, bytes | None], list[dict[str, str | bool]]]:
        """Each file to change, read and written to ``STATE/backups/STAMP/`` (fsynced);
        the bytes, and the journal's rows (backup path and sha256, or "created")."""
        backups: dict[str, bytes | None] = {}
        rows: list[dict[str, str | bool]] = []
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.clock()))
        for change in plan.changes:
            if change.before_sha256 is None:
                backups[change.path] = None
                rows.append({"path": change.path, "created": True})
                continue
            data = self.remote.read(change.path)
            name = change.path.replace("/", "_")
            where = f"{self.site.state_dir}/backups/{stamp}/{name}"
            sha = self.remote.write(where, data)
            if sha != hashlib.sha256(data).hexdigest():
                raise ApplyError(f"the backup {where} does not hold what was read")
            backups[change.path] = data
            rows.append({"path": change.path, "backup": where, "sha256": sha})
        return backups, rows

    def _launch_argv(self) -> list[str]:
        """How the fixed trainer starts: its launch file, where it exists (the user's, or
        the doctor's once a change wrote it); else as it started before (a fix that
        changed only the trainer's config file leaves the launch command as it was)."""
        if self.remote.sha256(self.site.launch_file) is not None:
            return ["sh", self.site.launch_file]
        return self.site.argv_before()

    def _restart_and_observe(self, was_running: int | None) -> dict[str, float | int | str | None]:
        if was_running is not None:
            self.journal.step("stopping")
            self.remote.stop(was_running, beat=self.site.lock_file)
        log_offset = self._mark(self.site.stdout_log)
        train_offset = self._mark(self.site.train_log)
        started = self.clock()
        pid = self._start(self._launch_argv())
        finished = self.remote.wait(pid, self.run_timeout, beat=self.site.lock_file)
        if not finished:
            self.remote.stop(pid, beat=self.site.lock_file)
        self.journal.step("verifying")
        console = console_summary(
            self._since(self.site.stdout_log, log_offset), self.site.extra_signatures
        )
        window = window_summary(
            self._since(self.site.train_log, train_offset),
            self.site.train_log,
            fields=self.site.log_fields,
            throughput_unit=self.site.throughput_unit,
        )
        speed, records = self.measure(window)
        signature = self.playbook.signature
        return {
            "restarted_at": started,
            "new_log_lines": console["lines_read"],
            "new_fx_errors": _hits(console, FX_TRACE.id),
            "signature": signature.label,
            "new_signature_lines": _hits(console, signature.id),
            "series": self.series,
            "new_drafter_records": records,
            "drafter_tok_s": speed,
            "baseline_tok_s": self.baseline_tok_s,
            "min_ratio": self.min_ratio,
            "run_finished": int(finished),
        }

    def _mark(self, path: str) -> tuple[int, bytes]:
        """Where ``path`` ends now, and its first bytes (to tell a file started afresh)."""
        size = self.remote.size(path)
        return size, self.remote.read_from(path, 0, _HEAD) if size else b""

    def _since(self, path: str, mark: tuple[int, bytes]) -> bytes:
        """What the restarted run wrote to ``path``: past the mark, or the whole file when
        the run started it afresh (truncated or replaced: its first bytes differ)."""
        offset, head = mark
        if offset and self.remote.read_from(path, 0, len(head)) != head:
            offset = 0
        return self.remote.read_from(path, offset)

    def _verdict(self, obs: dict[str, float | int | str | None]) -> tuple[bool, str]:
        if not obs.get("new_drafter_records"):
            return False, "no fresh train-log records after the restart"
        if obs.get("new_fx_errors"):
            return False, f"the FX-trace error came back {obs['new_fx_errors']} time(s)"
        if obs.get("new_signature_lines"):
            return False, (f"the {obs['signature']} came back {obs['new_signature_lines']} time(s)")
        speed = obs.get("drafter_tok_s")
        if self.baseline_tok_s is None or not isinstance(speed, int | float):
            return False, "no baseline tokens/s to verify against"
        ratio = speed / self.baseline_tok_s
        if ratio < self.min_ratio:
            return False, (
                f"{self.series}tokens/s {speed:,.0f} is {ratio:.2f}× the baseline "
                f"{self.baseline_tok_s:,.0f} (< {self.min_ratio:g}×)"
            )
        gone = "no FX-trace error"
        if obs.get("signature") != FX_TRACE.label:
            gone = f"no {obs['signature']} and no FX-trace error"
        return True, (
            f"{gone} in {obs['new_log_lines']} new log lines; {self.series}"
            f"tokens/s {speed:,.0f} = {ratio:.2f}× the baseline {self.baseline_tok_s:,.0f}"
        )

    def _rollback(
        self, backups: dict[str, bytes | None], was_running: int | None, *, stop: bool = True
    ) -> str:
        """Restore ``backups`` byte-identical and, if a trainer was running before, start
        it as before (unless one runs: a recovery never starts a second trainer)."""
        current = self.remote.running_pid(self.site.pid_file)
        if current is not None and stop:
            self.remote.stop(current, beat=self.site.lock_file)
            current = None
        started = self.journal.entry.get("started_pid")
        if (
            stop
            and isinstance(started, int)
            and self.remote.alive(started)
            and self.remote.started_at(started) == self.journal.entry.get("started_start")
        ):
            # The trainer this apply started, known by its journal whether or not its pid
            # file (the trainer's, or the doctor's started.pid) could be written.
            self.remote.stop(started, beat=self.site.lock_file)
        restored = []
        for path, data in backups.items():
            if data is None:
                continue  # a file the fix created: leave nothing of it behind
            sha = self.remote.write(path, data, follow_link=True)
            if sha != hashlib.sha256(data).hexdigest():
                raise ApplyError(
                    f"rollback of {path} did not restore its bytes (sha256 {sha[:12]})"
                )
            restored.append(path)
        removed = []
        for path, data in backups.items():
            if data is None and self.remote.sha256(path) is not None:
                # Created by the fix: gone again, as before it (an emptied launch file of
                # the doctor's own would read as a launch with no exec line).
                self.remote.remove(path)
                removed.append(path)
        restart = was_running is not None and current is None and self._running() is None
        if restart:
            self._start(self.site.argv_before())
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


def _entry_words(entry: dict[str, Any]) -> str:
    """An interrupted apply in a few words, from its journal."""
    at = entry.get("at")
    when = (
        time.strftime(" at %Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
        if isinstance(at, int | float)
        else ""
    )
    owner = entry.get("owner") if isinstance(entry.get("owner"), dict) else {}
    who = f" by process {owner.get('pid')} on {owner.get('host')}" if owner else ""
    return f"{entry.get('playbook')}, begun{when}{who}, stopped at step {entry.get('step')}"


def _parsed(data: bytes, name: str, parse: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    # The parsers read a file (fstat, seek); the window is written to one, named like
    # the log since the train-log parser tells formats by the name.
    with tempfile.NamedTemporaryFile(suffix=f"-{os.path.basename(name)}") as fh:
        fh.write(data)
        fh.flush()
        with open(fh.name, "rb", buffering=0) as raw:
            return parse(raw)


def window_summary(
    data: bytes,
    log_path: str,
    *,
    fields: dict[str, Any] | None = None,
    throughput_unit: str | None = None,
) -> dict[str, Any]:
    """The train-log summary of the records a restarted run wrote: the trainlog probe's
    own parser with the profile's field names and unit, as the diagnosis read the log;
    ``log_path`` names the format."""
    return _parsed(
        data,
        log_path,
        lambda raw: summarize_log(raw, fields=fields or None, throughput_unit=throughput_unit),
    )


def console_summary(data: bytes, extra: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """The console-log scan of the lines a restarted run printed: the stdoutlog probe's
    parser with the profile's extra signatures (tracebacks, threads, every signature)."""
    return _parsed(data, "stdout.log", lambda raw: stdoutlog.scan(raw, extra=extra))


def _hits(console: dict[str, Any], signature: str) -> int:
    hit = (console.get("signatures") or {}).get(signature) or {}
    count = hit.get("count")
    return count if isinstance(count, int) else 0
