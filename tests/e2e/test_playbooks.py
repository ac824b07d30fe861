"""Fix playbooks as transactions, against the reference trainer after the incident.

Each test copies the crashed workspace of the FX race (tests/lib/workspaces.py), gives it a
launch file that restarts the same broken configuration, and runs a playbook on it for
real: the trainer is stopped, edited, restarted and its fresh log lines are read.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from examples.demo.run import reference_site
from playbooks import LockWarmup, ProcessIsolation, Remote, TrainerSite, Transaction
from playbooks.base import FX_TRACE
from playbooks.launch import with_env, with_flag
from tests.lib.workspaces import Scenario, ready_to_race
from tools.transport import LocalTransport

pytestmark = [pytest.mark.timeout(600)]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def site(race_scenario: Scenario, good_workspace: Path, tmp_path: Path) -> TrainerSite:
    ws = ready_to_race(race_scenario, good_workspace, tmp_path / "ws")
    return reference_site(ws)


def transaction(site: TrainerSite, playbook: object, baseline: float = 1.0) -> Transaction:
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    return Transaction(playbook, site, remote, baseline_tok_s=baseline, run_timeout=300)  # type: ignore[arg-type]


@pytest.mark.torch
@pytest.mark.slow
def test_plan_writes_nothing_and_shows_the_diff(site: TrainerSite) -> None:
    """Planning lock-warmup writes nothing in the workspace; the plan shows the launch
    file's diff and records its hash as the precondition."""
    launch = Path(site.launch_file)
    before = sha(launch)
    files_before = sorted(p.name for p in Path(site.workspace).iterdir())
    plan = transaction(site, LockWarmup()).plan()
    assert sha(launch) == before
    assert sorted(p.name for p in Path(site.workspace).iterdir()) == files_before
    assert "+exec " in plan.diff and "--compile-lock" in plan.diff
    assert plan.preconditions[site.launch_file] == before


@pytest.mark.torch
@pytest.mark.slow
def test_drift_between_approval_and_apply_aborts(site: TrainerSite) -> None:
    """A launch file edited after the plan was approved aborts the apply, naming the file,
    and nothing is written over the edit."""
    tx = transaction(site, LockWarmup())
    plan = tx.plan()
    launch = Path(site.launch_file)
    launch.write_text(launch.read_text() + "# edited by someone after the approval\n")
    edited = sha(launch)
    outcome = tx.apply(plan)
    assert outcome.status == "aborted"
    assert "changed since the plan was approved" in outcome.detail
    assert site.launch_file in outcome.detail
    assert sha(launch) == edited  # nothing written


@pytest.mark.torch
@pytest.mark.slow
def test_an_apply_waits_for_the_lock_then_gives_up_saying_who_holds_it(
    site: TrainerSite,
) -> None:
    """An apply finding another's lock waits its turn, then aborts saying who holds it and
    how long it waited, with the launch file unchanged."""
    tx = transaction(site, LockWarmup())
    tx.lock_wait = 2.0
    plan = tx.plan()
    before = sha(Path(site.launch_file))
    assert tx.remote.lock(f"{site.state_dir}/apply.lock", "another operator")[0]
    started = time.monotonic()
    outcome = tx.apply(plan)
    assert time.monotonic() - started >= 2.0  # it waited its turn first
    assert outcome.status == "aborted" and "another apply holds" in outcome.detail
    assert "another operator" in outcome.detail and "waited 2s" in outcome.detail
    assert sha(Path(site.launch_file)) == before


@pytest.mark.torch
@pytest.mark.slow
def test_concurrent_applies_are_serialized(site: TrainerSite) -> None:
    """Two operators approve the same fix at once: one applies it (restart, verify), the
    other waits for the lock, then finds it already applied and changes nothing."""
    first, second = transaction(site, LockWarmup()), transaction(site, LockWarmup())
    plans = [first.plan(), second.plan()]
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda tx, plan: tx.apply(plan), [first, second], plans))
    assert sorted(o.status for o in outcomes) == ["already_applied", "applied"], outcomes
    waited = first if outcomes[1].status == "applied" else second
    assert any(e.startswith("waiting for ") for e in waited.events)
    assert Path(site.launch_file).read_text().count("--compile-lock") == 1


@pytest.mark.torch
@pytest.mark.slow
def test_ineffective_fix_rolls_back_byte_identical(site: TrainerSite) -> None:
    """A 'fix' that changes nothing that matters (a log flag): the race comes back, the
    launch file is restored byte for byte."""
    launch = Path(site.launch_file)
    before = launch.read_bytes()
    tx = transaction(site, _Knob())
    plan = tx.plan()
    assert plan.changes, plan
    outcome = tx.apply(plan)
    assert outcome.status == "rolled_back", outcome
    assert "FX-trace error came back" in outcome.detail
    assert launch.read_bytes() == before
    assert outcome.observations["new_fx_errors"]


class _Knob:
    """A playbook that sets a flag which does not address the race."""

    name = "ineffective"
    requires = frozenset({"fx_trace_race"})
    answers = "fx_trace_race"
    signature = FX_TRACE

    def changes(self, site: TrainerSite, remote: Remote):  # type: ignore[no-untyped-def]
        from playbooks.base import FileChange, unified

        text = remote.read(site.launch_file).decode()
        after = with_flag(text, site.launch_file, "--max-seconds", "600")
        return [
            FileChange(
                path=site.launch_file,
                before_sha256=remote.sha256(site.launch_file),
                after=after,
                diff=unified(site.launch_file, text, after),
            )
        ]


@pytest.mark.torch
@pytest.mark.slow
def test_knob_route_fixes_the_race_and_a_second_apply_changes_nothing(site: TrainerSite) -> None:
    """Adding the trainer's ``--compile-lock`` fixes the emulated race in the restarted run;
    a second apply finds it already applied and changes nothing."""
    tx = transaction(site, LockWarmup())
    outcome = tx.apply(tx.plan())
    assert outcome.status == "applied", outcome
    assert outcome.observations["new_fx_errors"] == 0
    assert outcome.observations["new_drafter_records"]
    assert "--compile-lock" in Path(site.launch_file).read_text()
    # The race was emulated in the restarted run, and the lock's warm-up is what beat it
    # (the trainer's own --compile-lock, so no separate trainer test runs it again).
    console = Path(site.stdout_log).read_text()
    assert "compile lock: warm-up done" in console
    assert "--emulate-torch211-race" in Path(site.launch_file).read_text()
    after = sha(Path(site.launch_file))
    again = transaction(site, LockWarmup())
    second = again.apply(again.plan())
    assert second.status == "already_applied"
    assert sha(Path(site.launch_file)) == after


@pytest.mark.torch
@pytest.mark.slow
def test_hook_route_fixes_the_race_without_touching_the_trainer(site: TrainerSite) -> None:
    """No knob: a start-up hook wraps torch.compile with the lock; the trainer's files
    (its package and its launcher script) stay byte-identical."""
    script = Path(site.workspace) / "train_dflash.py"
    script_before = sha(script)
    tx = transaction(site, LockWarmup(knob=None))
    plan = tx.plan()
    assert {Path(c.path).name for c in plan.changes} == {"sitecustomize.py", "launch.sh"}
    outcome = tx.apply(plan)
    assert outcome.status == "applied", outcome
    assert sha(script) == script_before
    log = (Path(site.workspace) / ".dflash-doctor" / "launch.log").read_text()
    assert "dflash-doctor compile-lock hook active" in log


@pytest.mark.torch
@pytest.mark.slow
def test_process_isolation_fixes_the_race(site: TrainerSite) -> None:
    """The race emulated, one process per device: each has its own tracing flags, so
    nobody sees another's (the reference trainer's ``--workers processes``, as applied)."""
    train_log = Path(site.train_log)
    before = train_log.stat().st_size if train_log.exists() else 0
    tx = transaction(site, ProcessIsolation())
    outcome = tx.apply(tx.plan())
    assert outcome.status == "applied", outcome
    assert "--workers processes" in Path(site.launch_file).read_text()
    # "applied": the verification found no FX-trace error in the restarted run's lines.
    assert "started 3 worker processes" in Path(site.stdout_log).read_text()
    # Each process trained its own device: the targets of the restarted run logged both.
    with train_log.open("rb") as fh:
        fh.seek(before)
        new = [json.loads(line) for line in fh.read().splitlines() if line.strip()]
    assert {r["device"] for r in new if r.get("role") == "target"} == {"sim:0", "sim:1"}
    assert any(r.get("role") == "drafter" for r in new)


@pytest.mark.parametrize(
    ("line", "flag", "value", "expected"),
    [
        (
            "exec python t.py --a 1\n",
            "--compile-lock",
            None,
            "exec python t.py --a 1 --compile-lock\n",
        ),
        (
            "exec python t.py --compile-lock\n",
            "--compile-lock",
            None,
            "exec python t.py --compile-lock\n",
        ),
        (
            "exec python t.py --workers threads\n",
            "--workers",
            "processes",
            "exec python t.py --workers processes\n",
        ),
        ("exec python 'my dir/t.py'\n", "--x", None, "exec python 'my dir/t.py' --x\n"),
    ],
)
def test_with_flag_edits_only_the_exec_line(
    line: str, flag: str, value: str | None, expected: str
) -> None:
    """Adding or setting a flag edits only the exec line, keeping other lines, an existing
    flag, and quoting as they were."""
    text = "#!/bin/sh\n# keep me\n" + line
    assert with_flag(text, "launch.sh", flag, value) == "#!/bin/sh\n# keep me\n" + expected


def test_with_env_is_idempotent() -> None:
    """Setting an environment variable on the exec line puts it behind ``env`` once; doing
    it again changes nothing."""
    text = "#!/bin/sh\nexec python t.py\n"
    once = with_env(text, "launch.sh", {"A": "1"})
    assert once == "#!/bin/sh\nexec env A=1 python t.py\n"
    assert with_env(once, "launch.sh", {"A": "1"}) == once


@pytest.mark.torch
@pytest.mark.slow
def test_guided_diagnose_plan_only_shows_the_fix_and_writes_nothing(
    site: TrainerSite, race_scenario: Scenario
) -> None:
    """`diagnose --plan-only`: the verified race unlocks lock-warmup; its diff is shown;
    the launch file is untouched."""
    import json

    from tests.lib.cli import cli

    race_scenario.install_baseline("good")
    launch = Path(site.launch_file)
    before = sha(launch)
    result = cli(
        "-q",
        "diagnose",
        "--target",
        "local",
        "--workspace",
        site.workspace,
        "--interpreter",
        sys.executable,
        "--baseline",
        "good",
        "--plan-only",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    fix = next(s for s in report["sections"] if s["title"] == "fix: lock-warmup")
    texts = [line["text"] for line in fix["lines"]]
    assert "plan only: nothing was written" in texts
    assert any("--compile-lock" in t for t in texts)
    assert sha(launch) == before


def test_every_playbook_is_verified_by_a_signature_the_console_parser_has() -> None:
    """A fix is judged by the evidence that justified it: its signature is a row of the
    console-log parser the diagnosis reads the log with, not a copy of its text."""
    from playbooks import default_playbooks
    from playbooks.base import FX_TRACE
    from tools.parsers.signatures import SIGNATURES

    ids = {s.id for s in SIGNATURES}
    assert FX_TRACE.id in ids
    playbooks = default_playbooks()
    assert playbooks
    for playbook in playbooks:
        assert playbook.signature.id in ids, playbook.name
