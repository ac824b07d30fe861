"""The playbook contract and the fix transaction (playbooks.base): where a trainer site keeps the
doctor's state, the one launch-file change a playbook plans, and how ``Transaction`` plans, locks,
re-checks, applies, judges and rolls back a fix, and recovers an apply that was interrupted.

The target is a workspace under tmp_path; the remote operations run in this process (the
operations program's own ``main``), and the trainer's restart is replaced by the run it would
have produced, so no process is started."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from playbooks._trainer import Restarted
from playbooks.base import (
    FX_TRACE,
    FileChange,
    Recurrence,
    TrainerSite,
    Transaction,
    launch_change,
    unified,
)
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess
from tools.errors import ApplyError

BEFORE = "#!/bin/sh\nexec python t.py\n"
AFTER = "#!/bin/sh\nexec python t.py --fixed\n"
NOW = 1_700_000_000.0
LIMIT = Recurrence("recompile_limit", "recompile-limit warning")


@dataclass
class Edit:
    """A playbook that replaces the launch file with ``after`` (``fail``: its probe no longer
    holds when planned again)."""

    name: str = "edit"
    requires: frozenset[str] = frozenset({"k"})
    answers: str = "k"
    signature: Recurrence = FX_TRACE
    after: str = AFTER
    why: str = "the trainer declares --fixed"
    fail: str = ""

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]:
        if self.fail:
            raise ApplyError(self.fail)
        text = remote.read(site.launch_file).decode()
        return launch_change(site, text, remote.sha256(site.launch_file), self.after, self.why)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def no_sleep(seconds: float) -> None:
    raise AssertionError(f"the transaction slept {seconds}s")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "launch.sh").write_text(BEFORE)
    return ws


def make_site(ws: Path, **extra: Any) -> TrainerSite:
    return TrainerSite(
        workspace=str(ws),
        launch_file=f"{ws}/launch.sh",
        pid_file=f"{ws}/train.pid",
        train_log=f"{ws}/train.log",
        stdout_log=f"{ws}/stdout.log",
        **extra,
    )


def make_tx(ws: Path, playbook: Edit | None = None, **extra: Any) -> Transaction:
    return Transaction(
        playbook=playbook or Edit(),
        site=make_site(ws),
        remote=Remote(InProcess()),
        baseline_tok_s=extra.pop("baseline_tok_s", 1000.0),
        clock=lambda: NOW,
        sleep=no_sleep,
        **extra,
    )


@pytest.mark.parametrize(
    ("cwd", "start_dir"),
    [(None, "/w"), ("/w/run", "/w/run")],
    ids=["workspace", "own-cwd"],
)
def test_a_site_keeps_the_doctors_state_in_one_folder_of_its_workspace(
    cwd: str | None, start_dir: str
) -> None:
    """The state folder, the doctor's started-pid record, the journal and the lock all sit in
    ``.dflash-doctor`` under the workspace; the trainer starts in its own cwd, else the
    workspace."""
    site = TrainerSite("/w", "/w/l.sh", "/w/p", "/w/t.log", "/w/o.log", cwd=cwd)
    assert (site.state_dir, site.started_file, site.journal_file, site.lock_file) == (
        "/w/.dflash-doctor",
        "/w/.dflash-doctor/started.pid",
        "/w/.dflash-doctor/apply.journal",
        "/w/.dflash-doctor/apply.lock",
    )
    assert site.start_dir == start_dir


@pytest.mark.parametrize(
    ("launch_text", "argv"),
    [
        (None, ["sh", "/w/l.sh"]),
        ("exec python t.py\n", ["sh", "-c", "exec python t.py\n"]),
    ],
    ids=["launch-file", "written-from-a-command"],
)
def test_the_trainer_restarts_as_it_was_started_before_the_fix(
    launch_text: str | None, argv: list[str]
) -> None:
    """Restarting "as it was" runs the user's launch file, or, where the launch file is the
    doctor's own, the text the trainer was started with before."""
    site = TrainerSite("/w", "/w/l.sh", "/w/p", "/w/t.log", "/w/o.log", launch_text=launch_text)
    assert site.argv_before() == argv


def test_the_diff_names_the_file_now_and_after_the_fix() -> None:
    """A plan's diff is a unified diff whose two sides read "(now)" and "(after the fix)"."""
    assert unified("/w/l.sh", BEFORE, AFTER) == (
        "--- /w/l.sh (now)\n"
        "+++ /w/l.sh (after the fix)\n"
        "@@ -1,2 +1,2 @@\n"
        " #!/bin/sh\n"
        "-exec python t.py\n"
        "+exec python t.py --fixed\n"
    )


def test_a_launch_change_is_one_change_or_none_when_already_there() -> None:
    """The launch file changed is one FileChange carrying its sha256 before, the new text, the
    diff and why; a launch file that already reads as the fix gives no change."""
    site = TrainerSite("/w", "/w/l.sh", "/w/p", "/w/t.log", "/w/o.log")
    (change,) = launch_change(site, BEFORE, "ab" * 32, AFTER, "because")
    assert change == FileChange(
        path="/w/l.sh",
        before_sha256="ab" * 32,
        after=AFTER,
        diff=unified("/w/l.sh", BEFORE, AFTER),
        why="because",
    )
    assert launch_change(site, AFTER, "ab" * 32, AFTER, "because") == []


def test_a_plan_lists_its_steps_and_binds_the_files_it_read(ws: Path) -> None:
    """The plan says what changes and why, how the fix is verified (no new FX-trace error lines,
    tokens/s at least min_ratio of the baseline) and that it is rolled back otherwise; its
    preconditions are the launch file's sha256 as read."""
    launch = f"{ws}/launch.sh"
    plan = make_tx(ws).plan()
    assert plan.steps == [
        f"change {launch}: the trainer declares --fixed",
        f"restart the trainer from the launch file {launch}",
        "wait for its fresh log lines",
        "require: no new FX-trace error lines (fx_nested_trace in the console log),"
        " tokens/s ≥ 0.9 × baseline",
        "roll back (restore files byte-identical, restart as before) if not",
    ]
    assert (plan.playbook, plan.hypothesis, plan.recovers) == ("edit", "k", "")
    assert plan.preconditions == {launch: sha(BEFORE)}
    assert plan.diff == unified(launch, BEFORE, AFTER)
    assert (ws / "launch.sh").read_text() == BEFORE  # planning writes nothing


def test_a_plan_for_another_signature_also_requires_no_fx_trace_error(ws: Path) -> None:
    """A playbook judged by another signature must see neither it nor the FX-trace error; the
    launch's source and the measured series are named in the plan's own words."""
    tx = Transaction(
        playbook=Edit(signature=LIMIT),
        site=make_site(ws, launch_source="the running trainer (process 7)"),
        remote=Remote(InProcess()),
        baseline_tok_s=1.0,
        series="drafter ",
        clock=lambda: NOW,
        sleep=no_sleep,
    )
    steps = tx.plan().steps
    assert steps[1] == (
        f"restart the trainer from the launch file {ws}/launch.sh"
        " (from the running trainer (process 7))"
    )
    assert steps[3] == (
        "require: no new recompile-limit warning lines (recompile_limit in the console log)"
        " nor FX-trace error lines, drafter tokens/s ≥ 0.9 × baseline"
    )


def test_a_fix_already_there_plans_nothing_and_applies_without_locking(ws: Path) -> None:
    """Where the launch file already carries the fix, the plan has no change and one step saying
    so; applying it reports already_applied and takes no lock."""
    (ws / "launch.sh").write_text(AFTER)
    tx = make_tx(ws)
    plan = tx.plan()
    assert (plan.changes, plan.steps) == ([], ["nothing to change: already applied"])
    outcome = tx.apply(plan)
    assert (outcome.status, outcome.detail) == (
        "already_applied",
        "the launch file already carries this fix; nothing changed",
    )
    assert not (ws / ".dflash-doctor").exists()


def test_an_apply_gives_up_on_a_lock_a_live_owner_holds(ws: Path) -> None:
    """A lock held by another apply, touched recently, is waited on for lock_wait seconds, then
    the apply is aborted naming the lock and its holder; nothing is changed."""
    tx = make_tx(ws, lock_wait=0.0)
    lock = f"{ws}/.dflash-doctor/apply.lock"
    holder = '{"host": "elsewhere", "pid": 1}'
    assert tx.remote.lock(lock, holder) == (True, "")
    outcome = tx.apply(tx.plan())
    assert (outcome.status, outcome.detail) == (
        "aborted",
        f"another apply holds {lock} (waited 0s): {holder}",
    )
    assert (ws / "launch.sh").read_text() == BEFORE
    assert (Path(lock) / "owner").read_text() == holder  # not ours to release


def test_a_stale_lock_is_broken_then_drift_aborts_the_apply(ws: Path) -> None:
    """A lock nobody touched for longer than the lease is broken (kept beside, as an event);
    under the new lock, a launch file changed since the plan aborts the apply naming both
    sha256s, and the lock is let go."""
    tx = make_tx(ws)
    lock = ws / ".dflash-doctor" / "apply.lock"
    holder = '{"host": "elsewhere", "pid": 1}'
    tx.remote.lock(str(lock), holder)
    plan = tx.plan()
    (ws / "launch.sh").write_text(BEFORE + "# edited by hand\n")
    old = time.time() - 999.6  # read as 1000s, or a little more on a slow machine
    os.utime(lock, (old, old))
    outcome = tx.apply(plan)
    edited = sha(BEFORE + "# edited by hand\n")
    assert (outcome.status, outcome.detail) == (
        "aborted",
        "the target changed since the plan was approved: "
        f"{ws}/launch.sh: sha256 {sha(BEFORE)[:12]} → {edited[:12]}",
    )
    (event,) = tx.events
    broke = re.fullmatch(
        rf"broke the stale lock {re.escape(str(lock))} \(nothing has touched it for "
        rf"(\d+)s \(lease 300s\)\): {re.escape(holder)}",
        event,
    )
    assert broke is not None, event
    assert 1000 <= int(broke.group(1)) <= 1060, event  # the age as it was read, whole seconds
    assert not lock.exists()
    (kept,) = [p.name for p in lock.parent.iterdir() if p.name.startswith("apply.lock.stale-")]
    assert (lock.parent / kept / "owner").read_text() == holder


@pytest.mark.parametrize(
    ("again", "status", "detail"),
    [
        (
            Edit(fail="no recompile-limit warning in stdout.log"),
            "aborted",
            "a precondition no longer holds: no recompile-limit warning in stdout.log",
        ),
        (
            Edit(after=AFTER + "# more\n", why="a different fix"),
            "aborted",
            "planned again now, the fix differs from the approved plan: a different fix",
        ),
        (
            Edit(after=BEFORE),
            "already_applied",
            "the launch file already carries this fix; nothing changed",
        ),
    ],
    ids=["precondition-gone", "fix-differs", "made-meanwhile"],
)
def test_planned_again_under_the_lock_the_fix_must_be_the_approved_one(
    ws: Path, again: Edit, status: str, detail: str
) -> None:
    """Under the lock the playbook plans again: a precondition that no longer holds or a
    different fix aborts the apply, and no change left to make means already applied; the
    launch file is untouched and the lock released."""
    plan = make_tx(ws).plan()
    outcome = make_tx(ws, again).apply(plan)
    assert (outcome.status, outcome.detail) == (status, detail)
    assert (ws / "launch.sh").read_text() == BEFORE
    assert not (ws / ".dflash-doctor" / "apply.lock").exists()


def restarted_with(console: bytes) -> Any:
    def restart(was_running: int | None, timeout: float) -> Restarted:
        assert was_running is None  # no trainer ran: no pid file, none started
        return Restarted(NOW + 5, True, console, b"")

    return restart


def test_a_verified_fix_stays_and_the_journal_ends_applied(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix whose restarted run has fresh records, no FX-trace error and tokens/s at least
    min_ratio × the baseline is applied: the launch file keeps the fix, the journal's last step
    is "applied" and names the backup of the file as it was."""
    tx = make_tx(ws, baseline_tok_s=800.0, measure=lambda window: (1000.0, 4))
    monkeypatch.setattr(tx.trainer, "restart", restarted_with(b"step 1 done\n"))
    outcome = tx.apply(tx.plan())
    assert (outcome.status, outcome.detail) == (
        "applied",
        "no FX-trace error in 1 new log lines; tokens/s 1,000 = 1.25× the baseline 800",
    )
    assert outcome.observations["new_drafter_records"] == 4
    assert (ws / "launch.sh").read_text() == AFTER
    journal = json.loads((ws / ".dflash-doctor" / "apply.journal").read_text())
    assert (journal["step"], journal["playbook"], journal["at"]) == ("applied", "edit", NOW)
    (row,) = journal["backups"]
    assert row["sha256"] == sha(BEFORE)
    assert Path(row["backup"]).read_text() == BEFORE
    assert not (ws / ".dflash-doctor" / "apply.lock").exists()


def test_a_fix_that_slows_the_trainer_is_rolled_back_byte_identical(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tokens/s below min_ratio × the baseline rolls the fix back: the launch file is restored
    byte-identical, the outcome says by how much it fell short and what was restored."""
    tx = make_tx(ws, measure=lambda window: (500.0, 4))
    monkeypatch.setattr(tx.trainer, "restart", restarted_with(b""))
    outcome = tx.apply(tx.plan())
    why = "tokens/s 500 is 0.50× the baseline 1,000 (< 0.9×)"
    assert (outcome.status, outcome.detail) == (
        "rolled_back",
        f"{why}; rolled back: restored {ws}/launch.sh byte-identical",
    )
    assert (ws / "launch.sh").read_text() == BEFORE
    journal = json.loads((ws / ".dflash-doctor" / "apply.journal").read_text())
    assert (journal["step"], journal["why"]) == ("rolled_back", why)


def test_a_restart_that_fails_is_rolled_back_with_its_reason(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart that raises leaves no half-applied fix: the reason it failed opens the
    outcome's detail and the launch file is back as it was."""
    tx = make_tx(ws)

    def restart(was_running: int | None, timeout: float) -> Restarted:
        raise ApplyError("the trainer exited before writing a log line")

    monkeypatch.setattr(tx.trainer, "restart", restart)
    outcome = tx.apply(tx.plan())
    assert (outcome.status, outcome.detail) == (
        "rolled_back",
        "the trainer exited before writing a log line;"
        f" rolled back: restored {ws}/launch.sh byte-identical",
    )
    assert (ws / "launch.sh").read_text() == BEFORE


@pytest.mark.parametrize(
    ("obs", "verdict"),
    [
        (
            {"new_drafter_records": 0, "drafter_tok_s": 2000.0},
            (False, "no fresh train-log records after the restart"),
        ),
        (
            {"new_drafter_records": 3, "new_fx_errors": 2},
            (False, "the FX-trace error came back 2 time(s)"),
        ),
        (
            {"new_drafter_records": 3, "signature": LIMIT.label, "new_signature_lines": 3},
            (False, "the recompile-limit warning came back 3 time(s)"),
        ),
        (
            {"new_drafter_records": 3, "drafter_tok_s": None},
            (False, "no baseline tokens/s to verify against"),
        ),
        (
            {"new_drafter_records": 3, "drafter_tok_s": 1799.0, "signature": LIMIT.label},
            (False, "drafter tokens/s 1,799 is 0.90× the baseline 2,000 (< 0.9×)"),
        ),
        (
            {
                "new_drafter_records": 3,
                "drafter_tok_s": 1800.0,
                "signature": LIMIT.label,
                "new_log_lines": 10,
            },
            (
                True,
                "no recompile-limit warning and no FX-trace error in 10 new log lines;"
                " drafter tokens/s 1,800 = 0.90× the baseline 2,000",
            ),
        ),
    ],
    ids=["no-records", "fx-error", "signature-back", "no-speed", "just-too-slow", "at-the-ratio"],
)
def test_the_verdict_on_a_restarted_run(
    ws: Path, obs: dict[str, float | int | str | None], verdict: tuple[bool, str]
) -> None:
    """A fix holds only with fresh records, no FX-trace error, no new lines of its own signature
    and tokens/s of at least min_ratio × the baseline (exactly the ratio passes); the sentence
    says which test failed, or what was seen."""
    tx = make_tx(ws, playbook=Edit(signature=LIMIT), baseline_tok_s=2000.0, series="drafter ")
    assert tx._verdict(obs) == verdict


def interrupted_journal(ws: Path) -> dict[str, Any]:
    """An apply of ``edit`` killed while writing: its backup holds the launch file as it was,
    and the launch file holds the fix."""
    backup = ws / ".dflash-doctor" / "backups" / "b" / "launch.sh"
    backup.parent.mkdir(parents=True)
    backup.write_text(BEFORE)
    (ws / "launch.sh").write_text(AFTER)
    entry = {
        "apply": "abc123",
        "playbook": "edit",
        "hypothesis": "k",
        "step": "writing",
        "at": 0,
        "owner": {"host": "h", "pid": 42},
        "backups": [{"path": f"{ws}/launch.sh", "backup": str(backup), "sha256": sha(BEFORE)}],
    }
    (ws / ".dflash-doctor" / "apply.journal").write_text(json.dumps(entry))
    return entry


WORDS = "edit, begun at 1970-01-01 00:00:00 UTC by process 42 on h, stopped at step writing"


def test_after_an_interrupted_apply_the_plan_is_its_recovery(ws: Path) -> None:
    """A journal whose step is not final makes the next plan the interrupted apply's recovery:
    each file back to its backup, named by the apply's id."""
    interrupted_journal(ws)
    plan = make_tx(ws).plan()
    launch = f"{ws}/launch.sh"
    assert plan.recovers == "abc123"
    assert plan.steps == [
        f"recover the interrupted apply ({WORDS})",
        f"restore {launch}: back to its backup, byte-identical",
    ]
    assert [(c.path, c.before_sha256, c.after) for c in plan.changes] == [
        (launch, sha(AFTER), BEFORE)
    ]
    assert plan.preconditions == {launch: sha(AFTER)}


def test_a_fix_is_refused_until_the_interrupted_apply_is_recovered(ws: Path) -> None:
    """A fix planned before the journal showed an interrupted apply is aborted: that apply must
    be recovered first; nothing is changed."""
    plan = make_tx(ws).plan()
    interrupted_journal(ws)
    outcome = make_tx(ws).apply(plan)
    assert (outcome.status, outcome.detail) == (
        "aborted",
        f"an interrupted apply ({WORDS}) must be recovered first: plan again, and the plan is"
        " its recovery",
    )
    assert (ws / "launch.sh").read_text() == AFTER


def test_the_recovery_restores_the_files_and_closes_the_journal(ws: Path) -> None:
    """Applying the recovery plan puts the launch file back byte-identical from its backup and
    leaves the journal at the final step rolled_back."""
    interrupted_journal(ws)
    tx = make_tx(ws)
    outcome = tx.apply(tx.plan())
    assert (outcome.status, outcome.detail) == (
        "rolled_back",
        f"recovered the interrupted apply ({WORDS}):"
        f" rolled back: restored {ws}/launch.sh byte-identical",
    )
    assert (ws / "launch.sh").read_text() == BEFORE
    journal = json.loads((ws / ".dflash-doctor" / "apply.journal").read_text())
    assert journal["step"] == "rolled_back"


def test_a_recovery_is_refused_once_the_journal_names_another_apply(ws: Path) -> None:
    """A recovery plan is bound to the apply it recovers: when the journal no longer names that
    apply as interrupted, applying it is aborted and nothing is restored."""
    entry = interrupted_journal(ws)
    tx = make_tx(ws)
    plan = tx.plan()
    entry["apply"] = "another"
    (ws / ".dflash-doctor" / "apply.journal").write_text(json.dumps(entry))
    outcome = tx.apply(plan)
    assert (outcome.status, outcome.detail) == (
        "aborted",
        "the target changed since the recovery was approved: the interrupted apply it recovers"
        " is no longer the journal's",
    )
    assert (ws / "launch.sh").read_text() == AFTER
