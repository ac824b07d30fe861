"""A session survives a crash: `resume` continues from the last checkpointed node, and
nothing that already ran (the sweep) runs again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.graph.state import DiagnosisState
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules import default_rules
from agent.rules.base import Evidence, Rule
from agent.sessions.config import SessionConfig
from agent.sessions.runner import build_doctor, run_session
from agent.sessions.session import Session
from tests.lib.cli import cli
from tools.sweep import SweepSpec


class Crash(Exception):
    """Stands in for the process dying (a closed laptop, an OOM kill) inside a node."""


class CrashingRule:
    kind: Kind = "checkpoint_integrity"
    needs = frozenset({"checkpoints"})

    def __init__(self, crash: bool) -> None:
        self.crash = crash

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        if self.crash:
            raise Crash("killed mid-diagnosis")
        return []


def test_crash_then_resume_does_not_sweep_again(tmp_path: Path) -> None:
    """A session that crashed in a rule resumes from its checkpoint without running the
    sweep again, and reaches a verdict."""
    (tmp_path / "ws").mkdir()
    spec = SweepSpec.for_workspace(str(tmp_path / "ws"), interpreter=sys.executable)
    config = SessionConfig(command="diagnose", target="local", spec=spec)
    session = Session.create(config)
    sweeps: list[object] = []
    rules: list[Rule] = [*default_rules()[:3], CrashingRule(crash=True)]
    doctor = build_doctor(session, session.target("local"), spec, rules=rules)
    real_gather = doctor.gather

    def counting(only: frozenset[str] | None) -> list[Fact]:
        sweeps.append(only)
        return real_gather(only)

    doctor.gather = counting
    with pytest.raises(Crash):
        run_session(session, doctor, start=DiagnosisState(target="local"))
    session.close()
    # The full sweep, and the probes the families asked for again before the crash.
    swept = list(sweeps)
    assert swept[0] is None

    again = Session.reopen(session.id)
    assert again.config is not None and again.config.spec == spec
    rules[-1] = CrashingRule(crash=False)
    doctor2 = build_doctor(again, again.target("local"), spec, rules=rules)
    real_gather = doctor2.gather
    doctor2.gather = counting
    outcome = run_session(again, doctor2)  # no start, no answer: continue from the checkpoint
    again.close()
    # A family may still ask for a probe the sweep found nothing for; the sweep is not run.
    assert None not in sweeps[len(swept) :], "the sweep ran again after resume"
    assert outcome.state.verdict is not None
    assert {h.kind for h in outcome.state.hypotheses} >= {"environment_drift"}


def test_resume_cli_reports_a_finished_session_again(tmp_path: Path) -> None:
    """`diagnose` then `resume SESSION`: same report, no new sweep in the transcript."""
    ws = tmp_path / "ws"
    ws.mkdir()
    first = cli(
        "-q",
        "diagnose",
        "--target",
        "local",
        "--workspace",
        str(ws),
        "--interpreter",
        sys.executable,
        "--format",
        "json",
    )
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    again = cli("-q", "resume", report["session"], "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["verdict"] == report["verdict"]


def test_resume_unknown_session_is_one_line_exit_2() -> None:
    """Resuming a session that does not exist, or an id that is a path, exits 2 saying
    which."""
    result = cli("resume", "20990101-000000-abcd")
    assert result.returncode == 2
    assert "no session 20990101-000000-abcd" in result.stderr.decode()
    bad = cli("resume", "../../etc")
    assert bad.returncode == 2 and "bad session id" in bad.stderr.decode()
