"""Replay and report from transcripts: same verdicts -> 0, changed -> 1 with a diff,
broken or unrecorded -> 2 saying where and why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.cli import app
from agent.graph.state import DiagnosisState
from agent.rules import default_rules
from agent.rules.fx_trace_race import FxTraceRace
from agent.sessions.config import SessionConfig
from agent.sessions.replay import replay
from agent.sessions.runner import build_doctor, record_outcome, run_session
from agent.sessions.session import Session
from tests.lib.cli import cli
from tools.sweep import SweepSpec
from tools.transcript import TranscriptWriter, read_transcript


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """A real diagnosis on this machine, recorded, of a workspace that holds a script
    that compiles (so the compiler's families apply) and its console log."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "train.py").write_text("import torch\nmodel = torch.compile(model)\n")
    (tmp_path / "ws" / "train_stdout.log").write_text("starting\nstep 1 loss 2.0\n")
    spec = SweepSpec.for_workspace(str(tmp_path / "ws"), interpreter=sys.executable)
    session = Session.create(SessionConfig(command="diagnose", target="local", spec=spec))
    doctor = build_doctor(session, session.target("local"), spec)
    outcome = run_session(session, doctor, start=DiagnosisState(target="local"))
    record_outcome(session, outcome.state)
    session.close()
    return session.transcript_path


def rewrite(path: Path, lines: list[str]) -> None:
    path.write_text("".join(lines))


def test_replay_of_a_fresh_transcript_is_the_same(transcript: Path) -> None:
    """Replaying a fresh transcript gives the same verdict with no differences."""
    result = cli("-q", "replay", str(transcript), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["same"] is True and document["differences"] == []
    assert document["verdict"] == "insufficient_evidence"


def test_a_changed_rule_is_a_readable_diff_and_exit_1(
    transcript: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule that now wants more: the replay says which hypothesis moved and how."""

    class Stricter(FxTraceRace):
        def propose(self, evidence):  # type: ignore[no-untyped-def]
            return [h.model_copy(update={"weight": 9}) for h in super().propose(evidence)][:0]

    rules = [r if r.kind != "fx_trace_race" else Stricter() for r in default_rules()]
    result = replay(transcript, rules=rules)
    assert not result.same
    assert "-fx_trace_race: refuted" in result.differences
    monkeypatch.setattr("agent.sessions.replay.default_rules", lambda: rules)
    from typer.testing import CliRunner

    outcome = CliRunner().invoke(app, ["-q", "replay", str(transcript)])
    assert outcome.exit_code == 1
    assert "verdicts changed since recording" in outcome.output
    assert "-fx_trace_race: refuted" in outcome.output


@pytest.mark.parametrize(
    ("mangle", "why"),
    [
        (lambda t: [*t[:3], t[4], t[3], *t[5:]], "hash chain broken"),
        (lambda t: [*t[:2], *t[3:]], "hash chain broken"),
        (lambda t: [*t[:-1], t[-1][: len(t[-1]) // 2]], "truncated"),
        (lambda t: [*t[:2], "{oops\n", *t[2:]], "bad JSON"),
        (lambda t: [t[0].replace('"version":1', '"version":2'), *t[1:]], "transcript version 2"),
    ],
    ids=["reordered", "deleted", "truncated", "bad-json", "wrong-version"],
)
def test_broken_transcripts_exit_2_saying_where(transcript: Path, mangle, why: str) -> None:  # type: ignore[no-untyped-def]
    """A transcript reordered, cut, truncated, holding bad JSON or of another version is
    refused in one line, exit 2, naming the file and what is wrong."""
    rewrite(transcript, mangle(transcript.read_text().splitlines(keepends=True)))
    result = cli("replay", str(transcript))
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and why in lines[0] and str(transcript) in lines[0]


def test_tampered_event_is_caught(transcript: Path) -> None:
    """Edit one recorded exit code and keep the JSON valid: the chain breaks there."""
    lines = transcript.read_text().splitlines(keepends=True)
    event = json.loads(lines[1])
    event["rc"] = 1
    lines[1] = json.dumps(event, sort_keys=True, separators=(",", ":")) + "\n"
    rewrite(transcript, lines)
    result = cli("replay", str(transcript))
    assert result.returncode == 2
    assert ":3: hash chain broken" in result.stderr.decode()


def test_unrecorded_command_is_exit_2(transcript: Path, tmp_path: Path) -> None:
    """A well-chained transcript that lacks the sweep's command cannot be replayed."""
    header, events = read_transcript(transcript)
    copy = tmp_path / "copy.jsonl"
    writer = TranscriptWriter(
        copy,
        {k: v for k, v in header.items() if k not in ("type", "format", "version", "started_at")},
    )
    for event in events:
        if event["type"] not in ("command",):
            writer.write({k: v for k, v in event.items() if k not in ("seq", "prev")})
    writer.close()
    result = cli("replay", str(copy))
    assert result.returncode == 2
    assert "not in the transcript" in result.stderr.decode()


def test_report_renders_every_format(transcript: Path, tmp_path: Path) -> None:
    """``report`` renders a transcript as Markdown, JSON and HTML with its verdict; an
    unknown format exits 2."""
    for fmt in ("md", "json", "html"):
        out = tmp_path / f"r.{fmt}"
        result = cli("-q", "report", str(transcript), "--format", fmt, "--out", str(out))
        assert result.returncode == 0, result.stderr
        text = out.read_text()
        assert "insufficient evidence" in text
    assert cli("report", str(transcript), "--format", "pdf").returncode == 2
