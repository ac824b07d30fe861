"""Any run says when an apply was interrupted (issue 14, item 4): the ``applies`` probe
reads the journal the transaction writes (here written by the real ``Journal`` through
the real operations), the report has a section for it, and a health check fails on it
while the apply stays unrecovered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent.analysis import applies as agent_applies
from agent.model.facts import Fact, Ledger
from playbooks import Remote
from playbooks.journal import Journal, this_process
from tests.lib import oracle
from tests.lib.cli import SCRIPT
from tests.lib.diagnosis import diagnose, snapshot
from tests.lib.workspaces import clone
from tools.probes import applies
from tools.probes._common import Context
from tools.transport import LocalTransport


def collect(ws: Path) -> applies.AppliesValue:
    return applies.collect({"workspace": str(ws)}, Context())


def interrupt(ws: Path, step: str = "started") -> None:
    """An apply that reached ``step`` and died: the journal as the transaction writes it,
    and its lock."""
    remote = Remote(LocalTransport(), interpreter=sys.executable).confined(str(ws))
    state = ws / ".dflash-doctor"
    journal = Journal(remote, str(state / "apply.journal"))
    journal.begin(
        apply="a1b2c3d4e5f60718",
        playbook="lock-warmup",
        hypothesis="fx_trace_race",
        owner=json.loads(this_process().record()),
        at=time.time(),
        backups=[{"path": str(ws / "launch.sh"), "backup": "b", "sha256": "0" * 64}],
    )
    journal.step("backed_up")
    journal.step(step)  # type: ignore[arg-type]
    assert remote.lock(str(state / "apply.lock"), this_process().record())[0]


def silence(ws: Path, seconds: float = 600) -> None:
    """The lock's heartbeat stopped ``seconds`` ago: its apply died then."""
    lock = ws / ".dflash-doctor" / "apply.lock"
    then = time.time() - seconds
    os.utime(lock, (then, then))


def said(ws: Path) -> list[str]:
    """What the report and health would say of the workspace's applies."""
    ledger = Ledger()
    value: Any = collect(ws)
    fact = ledger.append(Fact(probe="applies", target="local", argv=("probe",), value=value))
    return [text for text, cites in agent_applies.interrupted(ledger, [fact.id]) if cites]


def test_no_state_directory_is_nothing_to_say(tmp_path: Path) -> None:
    """A workspace with no ``.dflash-doctor`` has no journal and no lock to report."""
    assert collect(tmp_path) == {
        "state_dir": str(tmp_path / ".dflash-doctor"),
        "journal": None,
        "lock": None,
    }


def test_an_interrupted_apply_is_read_from_its_journal(tmp_path: Path) -> None:
    """An apply that died after starting is read from its journal as interrupted, with its
    step, playbook and backups, and its lock's age and owner."""
    interrupt(tmp_path)
    value = collect(tmp_path)
    journal = value["journal"]
    assert journal is not None
    assert (journal["interrupted"], journal["step"], journal["playbook"]) == (
        True,
        "started",
        "lock-warmup",
    )
    assert journal["backups"] == 1 and isinstance(journal["at"], float)
    lock = value["lock"]
    assert lock is not None and 0 <= lock["age_s"] < 60
    assert json.loads(lock["owner"])["pid"] == os.getpid()


@pytest.mark.parametrize("step", ["applied", "rolled_back"])
def test_an_apply_that_ended_is_not_interrupted(tmp_path: Path, step: str) -> None:
    """A journal whose apply ended, applied or rolled back, is not interrupted."""
    interrupt(tmp_path, step)
    journal = collect(tmp_path)["journal"]
    assert journal is not None and journal["interrupted"] is False


@pytest.mark.parametrize("kind", ["garbage", "fifo", "dir"])
def test_a_journal_that_is_not_one_is_said_without_hanging(tmp_path: Path, kind: str) -> None:
    """A journal that is garbage, a FIFO or a directory is reported at once as interrupted
    with an error, without blocking on it."""
    state = tmp_path / ".dflash-doctor"
    state.mkdir()
    path = state / "apply.journal"
    if kind == "garbage":
        path.write_bytes(b"\x00{not json")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    started = time.monotonic()
    journal = collect(tmp_path)["journal"]
    assert time.monotonic() - started < 5
    assert journal is not None and journal["interrupted"] is True and journal["error"]


def test_an_apply_whose_lock_is_fresh_is_under_way_not_interrupted(tmp_path: Path) -> None:
    """An apply whose lock is fresh is said to be under way; once its lock has gone silent
    it is said to have stopped and never ended."""
    interrupt(tmp_path)
    (line,) = said(tmp_path)
    assert line.startswith("an apply of lock-warmup is under way (step started; its lock ")
    silence(tmp_path)
    first, lock = said(tmp_path)
    assert "stopped at step started and never ended" in first
    assert "last touched 600s before this sweep" in lock


@pytest.mark.torch
@pytest.mark.slow
def test_diagnose_and_health_say_so(good_workspace: Path, tmp_path: Path) -> None:
    """An interrupted apply gets its own cited section in the diagnose report, saying the
    next plan recovers it, and fails health's ``applies`` check so the target counts as
    regressed."""
    ws = clone(good_workspace, tmp_path / "ws")
    snapshot(ws)
    interrupt(ws)
    silence(ws)
    state, ledger, report = diagnose(ws)
    fact = next(ledger.get(i) for i in state.facts if ledger.get(i).probe == "applies")
    assert "## an interrupted apply" in report, report
    assert (
        "an apply of lock-warmup, begun " in report
        and "stopped at step started and never ended" in report
        and "the next fix plan on this target is its recovery" in report
        and f"[{fact.id}]" in report
    ), report

    config = tmp_path / "doctor.toml"
    config.write_text(
        f'[targets.here]\nuri = "local"\nworkspace = "{ws}"\ninterpreter = "{sys.executable}"\n'
    )
    env = {**os.environ, "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME", "")}
    done = subprocess.run(
        [SCRIPT, "-q", "health", "--format", "json", "--target", "here", "--config", str(config),
         "--baseline", "good"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert oracle.check_health(json.loads(done.stdout)) == []
    (result,) = json.loads(done.stdout)["targets"]
    check = next(c for c in result["checks"] if c["name"] == "applies")
    assert check["status"] == "failed", check
    assert "stopped at step started" in check["message"]
    assert all(line["cites"] for line in check["lines"])
    assert result["status"] == "regressed" and "applies" in result["reason"]
