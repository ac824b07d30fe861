"""Diagnosis end to end on real reference-trainer workspaces: facts, baseline diff, the
rule base, verified/refuted hypotheses, cited reports.

Every workspace was produced by the trainer itself (see tests/workspaces.py); each test
takes a snapshot of its own copy while it is good, breaks it with the trainer's own
`break` command (or a real run), and diagnoses it.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from agent.baseline import baseline_store
from agent.facts import Ledger
from agent.report.build import build_report
from agent.report.markdown import render_markdown
from agent.runner import build_doctor, run_session
from agent.session import Session, SessionConfig
from agent.state import DiagnosisState
from tests.workspaces import Scenario, clone, trainer
from tools.sweep import SweepSpec

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]


def spec(ws: Path, **profile: Any) -> SweepSpec:
    return SweepSpec.for_workspace(str(ws), interpreter=sys.executable, **profile)


def snapshot(ws: Path, name: str = "good", **profile: Any) -> None:
    at = spec(ws, **profile)
    session = Session.create(SessionConfig(command="snapshot", target="local", spec=at))
    doctor = build_doctor(session, session.target("local"), at)
    facts = doctor.gather(None)
    session.close()
    baseline_store().save(name, "local", facts)


def diagnose(
    ws: Path, baseline: str | None = "good", **profile: Any
) -> tuple[DiagnosisState, Ledger, str]:
    at = spec(ws, **profile)
    config = SessionConfig(command="diagnose", target="local", spec=at, baseline=baseline)
    session = Session.create(config)
    doctor = build_doctor(session, session.target("local"), at)
    outcome = run_session(session, doctor, start=DiagnosisState(target="local", baseline=baseline))
    session.close()
    report = render_markdown(build_report(outcome.state, session.ledger, session.id))
    return outcome.state, session.ledger, report


def statuses(state: DiagnosisState) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for h in state.hypotheses:
        out.setdefault(h.kind, set()).add(h.status)
    return out


def assert_grounded(state: DiagnosisState, ledger: Ledger, report: str) -> None:
    """Every fact id the report prints is in the ledger and listed with its command."""
    cited = set(re.findall(r"F-[0-9a-f]{4,}", report))
    assert cited, "a report without citations"
    for fact_id in cited:
        assert fact_id in ledger, fact_id
        assert f"| {fact_id} |" in report, f"{fact_id} is cited but not listed with its command"
    for hyp in state.hypotheses:
        for verdict in hyp.verdicts:
            assert verdict.outcome != "rejected", verdict


def test_healthy_workspace_is_no_fault_found(good_workspace: Path, tmp_path: Path) -> None:
    """Nothing changed since the snapshot: every family is checked and refuted, and the
    report says what was checked."""
    ws = clone(good_workspace, tmp_path / "ws")
    snapshot(ws)
    state, ledger, report = diagnose(ws)
    assert state.verdict == "no_fault_found", statuses(state)
    assert {s for v in statuses(state).values() for s in v} == {"refuted"}
    assert {"environment_drift", "fx_trace_race", "script_changed"} <= statuses(state).keys()
    assert report.startswith("# dflash-doctor report: no fault found")
    # Steady, or faster after its compiling start on a loaded machine (a change point, or
    # a last quarter that climbed with none placed): never a drop, never a slowdown.
    judged = [
        (s.kind, s.status, s.unsteady() if s.status == "refuted" else "")
        for s in state.symptoms
        if s.subject
    ]
    assert judged in (
        [("throughput_steady", "verified", "")],
        [("throughput_rise", "verified", "")],
        [("throughput_steady", "refuted", "climbed")],
    ), judged
    assert "## symptoms" in report and "drafter tokens/s " in report
    assert_grounded(state, ledger, report)


def test_changed_script_is_found_by_its_md5(good_workspace: Path, tmp_path: Path) -> None:
    ws = clone(good_workspace, tmp_path / "ws")
    snapshot(ws)
    assert trainer("break", "script", "--workspace", ws).returncode == 0
    state, ledger, report = diagnose(ws)
    assert statuses(state)["script_changed"] == {"verified"}
    assert state.hypotheses[0].kind == "script_changed"
    claim = state.hypotheses[0].verdicts[0]
    assert f"md5 of {ws}/train_dflash.py (now)" in claim.sentence
    assert statuses(state)["fx_trace_race"] == {"refuted"}
    assert_grounded(state, ledger, report)


def test_truncated_checkpoint_is_an_integrity_fault(good_workspace: Path, tmp_path: Path) -> None:
    ws = clone(good_workspace, tmp_path / "ws")
    snapshot(ws)
    assert trainer("break", "truncate-checkpoint", "--workspace", ws).returncode == 0
    state, ledger, report = diagnose(ws)
    assert "verified" in statuses(state)["checkpoint_integrity"]
    assert "checkpoint files with problems = 1" in report
    assert_grounded(state, ledger, report)


def test_wiped_compile_cache_is_cold(good_workspace: Path, tmp_path: Path) -> None:
    """The reference trainer sets its cache directory in code, out of sight: the profile
    names it, and the snapshot saw it warm."""
    ws = clone(good_workspace, tmp_path / "ws")
    cache = (f"{ws}/compile_cache",)
    snapshot(ws, extra_caches=cache)
    assert trainer("break", "compile-cache", "--workspace", ws).returncode == 0
    state, ledger, report = diagnose(ws, extra_caches=cache)
    assert "verified" in statuses(state)["compile_cache_cold"]
    assert f"extra compile cache {ws}/compile_cache: exists = False" in report
    assert_grounded(state, ledger, report)


def test_the_incident_fx_race_after_the_dataset_grew(race_scenario: Scenario) -> None:
    """The run died with torch's own error after a new length was added: the FX race is
    verified and ranked first, and the dataset churn behind it is verified too."""
    race_scenario.install_baseline("good")
    state, ledger, report = diagnose(race_scenario.ws)
    assert state.verdict == "fault_found"
    assert state.hypotheses[0].kind == "fx_trace_race"
    assert statuses(state)["fx_trace_race"] == {"verified"}
    assert statuses(state)["dataset_shape_churn"] == {"verified"}
    assert "Detected that you are using FX to symbolically trace" in report
    assert "compiled wrappers bind the FX check at creation = True" in report
    # The incident's own question: the environment did not change, so it is not blamed;
    # the race is found citing the error line, the threads, the new shapes, the build.
    assert statuses(state).get("environment_drift", {"refuted"}) == {"refuted"}
    race = next(h for h in state.hypotheses if h.kind == "fx_trace_race")
    said = [v.sentence for v in race.verdicts]
    assert all(v.outcome == "holds" and v.cites for v in race.verdicts), said
    for needle in (
        "first FX-trace error",
        "exceptions escaping a thread",
        "worker mode the trainer recorded (one per device) = 'threads'",
        "longest prompt",
        "installed torch build = '" + metadata.version("torch") + "'",
    ):
        assert any(needle in line for line in said), (needle, said)
    assert_grounded(state, ledger, report)


def test_without_workspace_or_baseline_the_answer_is_insufficient_evidence(tmp_path: Path) -> None:
    """Nothing to look at and nothing to compare with: the app says what it could not
    observe instead of guessing."""
    state, _ledger, report = diagnose(tmp_path / "nowhere", baseline=None)
    assert state.verdict == "insufficient_evidence"
    assert {"checkpoints", "trainlog", "stdoutlog"} <= set(state.missing)
    assert "could not observe" in report
    assert "not_found" in report
