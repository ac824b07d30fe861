"""Every shipped transcript (recorded by examples/record_transcripts.py on real runs)
replays with no machine to the verdicts it recorded, and renders."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.sessions.recorded import load_recorded
from agent.sessions.replay import replay
from tools.transcript import read_transcript

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "transcripts"
FILES = sorted(TRANSCRIPTS.glob("*.jsonl"))

EXPECTED = {
    "healthy": ("no_fault_found", set()),
    "script-changed": ("fault_found", {"script_changed"}),
    "cache-wiped": ("fault_found", {"compile_cache_cold"}),
    "checkpoint-truncated": ("fault_found", {"checkpoint_integrity"}),
    "fx-race": ("fault_found", {"fx_trace_race", "dataset_shape_churn"}),
    "incident-ssh": ("fault_found", {"fx_trace_race", "dataset_shape_churn"}),
    "version-drift": ("fault_found", {"environment_drift"}),
    "shape-churn": ("fault_found", {"dataset_shape_churn"}),
    "eager-fallback": ("fault_found", {"silent_eager_fallback", "dataset_shape_churn"}),
    "monkeypatch": (
        "fault_found",
        {"fx_trace_race", "ineffective_monkeypatch", "dataset_shape_churn"},
    ),
}
# The family ranked first, where the recording is about one family among several verified.
TOP = {
    "fx-race": "fx_trace_race",
    "incident-ssh": "fx_trace_race",
    "shape-churn": "dataset_shape_churn",
    "eager-fallback": "silent_eager_fallback",
    # The patch did not stop the race; the race is the cause and comes first.
    "monkeypatch": "fx_trace_race",
}


def test_every_scenario_is_shipped() -> None:
    """Every expected scenario has a shipped transcript, and no transcript is shipped without an
    expectation."""
    assert {f.stem for f in FILES} == set(EXPECTED)


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_replay_gives_the_recorded_verdicts(path: Path) -> None:
    """Each shipped transcript replays to the same outputs, the expected verdict and verified
    families, and, where several are verified, the expected family ranked first."""
    result = replay(path)
    assert result.same, "\n".join(result.differences)
    verdict, verified = EXPECTED[path.stem]
    assert result.state.verdict == verdict
    assert {h.kind for h in result.state.hypotheses if h.status == "verified"} == verified
    if path.stem in TOP:
        assert result.state.hypotheses[0].kind == TOP[path.stem]


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_transcripts_hide_the_recording_machine(path: Path) -> None:
    """The recorder redacted its own checkout and home directory from what probes saw."""
    header, _ = read_transcript(path)
    assert header["redacted"].get("PATH", 0) > 0
    assert "[REDACTED-PATH-" in path.read_text()


def test_the_incident_path_went_through_ssh_and_pct() -> None:
    """ssh, then `pct exec 200 --`, as the incident's engineers reached the trainer."""
    header, events = read_transcript(TRANSCRIPTS / "incident-ssh.jsonl")
    assert header["target"].startswith("ssh://") and header["target"].endswith("/pct:200")
    commands = [e for e in events if e["type"] == "command"]
    assert commands and all(e["target"] == header["target"] for e in commands)
    recorded = load_recorded(TRANSCRIPTS / "incident-ssh.jsonl")
    probes = {recorded.ledger.get(i).probe for i in recorded.state.facts}
    assert {
        "pyenv",
        "checksums",
        "caches",
        "torch_source",
        "checkpoints",
        "trainlog",
        "stdoutlog",
    } <= probes
