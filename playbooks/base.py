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
   trainer restarted as it was. (The steps' work on the target is in ``playbooks._trainer``,
   ``_backups``, ``_run_window`` and ``_recovery``.)

Playbooks live beside ``tools/`` and use it to act; they return results and never call
into the diagnosis graph (``agent/`` turns their observations into facts).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from playbooks._backups import back_up, journaled_backups
from playbooks._recovery import entry_words, recovery_steps, restorations
from playbooks._run_window import console_summary, signature_hits, window_summary
from playbooks._trainer import TrainerControl
from playbooks.journal import LEASE_S, Journal, Owner, interrupted, stale, this_process
from playbooks.measure import Measure, overall_median
from playbooks.remote import Remote
from tools.errors import ApplyError
from tools.parsers.signatures import FX_NESTED_TRACE
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
    model_config = ConfigDict(extra="forbid")

    path: str
    before_sha256: str | None  # None: the file does not exist yet
    after: str  # the new content (text files: launch scripts, hooks)
    diff: str
    why: str = ""  # the facts the new content was derived from, for the plan's steps


class FixPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

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
    model_config = ConfigDict(extra="forbid")

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


def _aborted(plan: FixPlan, detail: str) -> FixOutcome:
    """The apply did not start, or stopped before changing anything: ``detail`` says why."""
    return FixOutcome(playbook=plan.playbook, status="aborted", detail=detail)


def _already_applied(plan: FixPlan) -> FixOutcome:
    """Nothing to change: the plan has no change, or another apply made the same fix."""
    return FixOutcome(
        playbook=plan.playbook,
        status="already_applied",
        detail="the launch file already carries this fix; nothing changed",
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
        self.trainer = TrainerControl(self.remote, self.site, self.journal, self.clock)

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
            return _already_applied(plan)
        # Lock first, then re-check: what is checked is what stays true until the apply
        # is done, since every apply on this target goes through the same lock.
        lock = self.site.lock_file
        owner = self.owner.record(playbook=plan.playbook, since=self.clock())
        locked, holder = self._acquire(lock, owner)
        if not locked:
            return _aborted(
                plan, f"another apply holds {lock} (waited {self.lock_wait:g}s): {holder}"
            )
        try:
            entry = self.journal.read()
            if plan.recovers:
                return self._recover(plan, entry)
            if interrupted(entry):
                assert entry is not None
                return _aborted(
                    plan,
                    f"an interrupted apply ({entry_words(entry)}) must be recovered "
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

    def _recheck(self, plan: FixPlan) -> FixOutcome | None:
        """Under the lock, just before writing: the reason not to apply, or None."""
        self.trainer.check_state_files()
        # What a playbook probed to make its plan (a log warning, a dataset's lengths) is
        # a precondition too: planned again now, it must make the changes approved.
        try:
            again = self.playbook.changes(self.site, self.remote)
        except ApplyError as exc:
            return _aborted(plan, f"a precondition no longer holds: {exc}")
        if not again:
            # Another apply (serialized before this one) already made the same fix.
            return _already_applied(plan)
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
            return _aborted(plan, f"the target changed since the plan was approved: {what}")
        if [(c.path, c.after) for c in again] != [(c.path, c.after) for c in plan.changes]:
            return _aborted(
                plan,
                "planned again now, the fix differs from the approved plan: "
                + ("; ".join(c.why or c.path for c in again) or "nothing to change any more"),
            )
        return None

    def _apply_locked(self, plan: FixPlan) -> FixOutcome:
        try:
            backups, rows = back_up(
                self.remote, plan.changes, f"{self.site.state_dir}/backups", self.clock()
            )
        except ApplyError as exc:
            return _aborted(plan, f"could not back up before changing anything: {exc}")
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
        was_running = self.trainer.running()
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
        restored = self.trainer.roll_back(backups, was_running)
        self.journal.step("rolled_back")
        return FixOutcome(
            playbook=plan.playbook,
            status="rolled_back",
            detail=f"{why}; {restored}",
            observations=observations,
        )

    # -- recovery of an interrupted apply (playbooks.journal) -----------------------

    def _recovery_plan(self, entry: dict[str, Any]) -> FixPlan:
        backups = journaled_backups(self.remote, entry, self.site.journal_file)
        restoring = restorations(self.remote, backups)
        changes = [
            FileChange(
                path=r.path,
                before_sha256=r.now,
                after=r.after,
                diff=unified(r.path, r.before, r.after),
                why=r.why,
            )
            for r in restoring
        ]
        return FixPlan(
            playbook=str(entry.get("playbook") or self.playbook.name),
            hypothesis=str(entry.get("hypothesis") or self.playbook.answers),
            steps=recovery_steps(entry, restoring),
            changes=changes,
            preconditions={c.path: c.before_sha256 for c in changes},
            diff="".join(c.diff for c in changes),
            recovers=str(entry.get("apply") or "unnamed"),
        )

    def _recover(self, plan: FixPlan, entry: dict[str, Any] | None) -> FixOutcome:
        if not interrupted(entry) or entry is None or entry.get("apply") != plan.recovers:
            return _aborted(
                plan,
                "the target changed since the recovery was approved: the interrupted "
                "apply it recovers is no longer the journal's",
            )
        now = {c.path: self.remote.sha256(c.path) for c in plan.changes}
        drifted = [p for p, sha in now.items() if plan.preconditions.get(p) != sha]
        if drifted:
            return _aborted(
                plan, "the target changed since the recovery was approved: " + ", ".join(drifted)
            )
        backups = journaled_backups(self.remote, entry, self.site.journal_file)
        self.journal.entry = dict(entry)
        self.journal.step("rolling_back", why="recovering an interrupted apply")
        stopped = ""
        if self.trainer.stop_started(entry):
            stopped = f"stopped the trainer it started (process {entry['started_pid']}); "
        was = entry.get("was_running")
        restored = self.trainer.roll_back(
            backups, was if isinstance(was, int) else None, stop=False
        )
        self.journal.step("rolled_back")
        return FixOutcome(
            playbook=plan.playbook,
            status="rolled_back",
            detail=f"recovered the interrupted apply ({entry_words(entry)}): {stopped}{restored}",
        )

    def _restart_and_observe(self, was_running: int | None) -> dict[str, float | int | str | None]:
        run = self.trainer.restart(was_running, self.run_timeout)
        console = console_summary(run.console, self.site.extra_signatures)
        window = window_summary(
            run.train_log,
            self.site.train_log,
            fields=self.site.log_fields,
            throughput_unit=self.site.throughput_unit,
        )
        speed, records = self.measure(window)
        signature = self.playbook.signature
        return {
            "restarted_at": run.started,
            "new_log_lines": console["lines_read"],
            "new_fx_errors": signature_hits(console, FX_TRACE.id),
            "signature": signature.label,
            "new_signature_lines": signature_hits(console, signature.id),
            "series": self.series,
            "new_drafter_records": records,
            "drafter_tok_s": speed,
            "baseline_tok_s": self.baseline_tok_s,
            "min_ratio": self.min_ratio,
            "run_finished": int(run.finished),
        }

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
