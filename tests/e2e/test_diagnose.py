"""Diagnosis end to end on real reference-trainer workspaces: facts, baseline diff, the
rule base, verified/refuted hypotheses, cited reports.

Every workspace was produced by the trainer itself (see tests/lib/workspaces.py); each test
takes a snapshot of its own copy while it is good, breaks it with the trainer's own
`break` command (or a real run), and diagnoses it.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from tests.lib.diagnosis import assert_grounded, diagnose, snapshot, statuses
from tests.lib.workspaces import Scenario, clone, trainer

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]


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
    """The training script edited since the snapshot: script_changed is verified first,
    citing the script's md5 now, and the FX race is refuted."""
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
    """A checkpoint the trainer's own break truncated: checkpoint integrity is verified and
    the report counts the one damaged file."""
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
    """Nothing to look at (an empty workspace) and nothing to compare with: the app says
    what it could not observe instead of guessing."""
    (tmp_path / "empty").mkdir()
    state, _ledger, report = diagnose(tmp_path / "empty", baseline=None)
    assert state.verdict == "insufficient_evidence"
    # An empty workspace (one that is not there at all is exit 2: test_cli_hostile).
    assert "trainlog" in state.missing
    assert "could not observe" in report
    assert "not_found" in report
