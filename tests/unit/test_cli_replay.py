"""``dflash-doctor replay FILE`` (``agent.cli.replay``): the outcome of replaying a
transcript said in two lines when the verdicts are the same (exit 0), as the seal and the
diff when they changed (exit 1), or as one JSON document; ``--require-signature`` passed
on to the replay."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import agent.sessions.replay
from agent.cli import application
from agent.cli.application import app
from agent.graph.state import DiagnosisState
from agent.model.facts import Ledger
from agent.model.hypotheses import Hypothesis
from agent.sessions.replay import ReplayResult
from tools.transcript import SealCheck

SIGNED = SealCheck(key_id="k-1234", signed_by="this installation")
ELSEWHERE = SealCheck(key_id="k-9999", signed_by="another installation", own_key_id="k-1234")
DIFF = ["--- recorded", "+++ replayed", "@@ -1 +1 @@", "-verdict: fault_found", "+verdict: None"]


@dataclass
class Replays:
    """What the replay answers (``result``) and how it was asked (path, signature)."""

    result: ReplayResult
    asked: list[tuple[Path, bool]] = field(default_factory=list)


def result_of(seal: SealCheck, differences: list[str]) -> ReplayResult:
    state = DiagnosisState(
        target="local",
        verdict="fault_found",
        hypotheses=[
            Hypothesis(kind="fx_trace_race", claims=(), status="verified"),
            Hypothesis(kind="script_changed", claims=(), status="refuted"),
        ],
    )
    return ReplayResult(header={}, state=state, ledger=Ledger(), seal=seal, differences=differences)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replays]:
    """The replay itself is a stand-in answering ``replays.result``."""
    record = Replays(result_of(SIGNED, []))

    def replay(path: Path, *, require_signature: bool) -> ReplayResult:
        record.asked.append((path, require_signature))
        return record.result

    monkeypatch.setattr(agent.sessions.replay, "replay", replay)
    monkeypatch.setattr(application, "configure", lambda *, json, level: None)
    yield record


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["replay", *args])


def test_the_same_verdicts_are_two_lines_and_exit_0(replays: Replays) -> None:
    """A replay that concludes what was recorded says so with the verdict, then who sealed
    the file, each line led by the file's path; the exit code is 0."""
    result = invoke("run.jsonl")
    assert result.exit_code == 0
    assert result.stdout == (
        "run.jsonl: same facts, same verdicts (fault_found)\n"
        "run.jsonl: sealed and signed by this installation (key id k-1234)\n"
    )
    assert replays.asked == [(Path("run.jsonl"), False)]


def test_changed_verdicts_are_the_seal_and_the_diff_and_exit_1(replays: Replays) -> None:
    """A replay whose verdicts differ says who sealed the file, that the verdicts changed,
    and then the diff line by line; the exit code is 1."""
    replays.result = result_of(ELSEWHERE, DIFF)
    result = invoke("run.jsonl")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "run.jsonl: sealed; signature not checked: signed by another installation"
        " (key id k-9999; this one's is k-1234)",
        "run.jsonl: verdicts changed since recording:",
        *DIFF,
    ]


@pytest.mark.parametrize(("differences", "code"), [([], 0), (DIFF, 1)], ids=["same", "changed"])
def test_json_is_one_document_with_the_same_exit_code(
    replays: Replays, differences: list[str], code: int
) -> None:
    """``--json`` prints the transcript's path, whether the verdicts are the same, the
    verdict, each hypothesis's family and status in order, the diff and the seal; the exit
    code is as without it."""
    replays.result = result_of(ELSEWHERE, differences)
    result = invoke("run.jsonl", "--json")
    assert result.exit_code == code
    assert json.loads(result.stdout) == {
        "transcript": "run.jsonl",
        "same": not differences,
        "verdict": "fault_found",
        "hypotheses": [
            {"kind": "fx_trace_race", "status": "verified"},
            {"kind": "script_changed", "status": "refuted"},
        ],
        "differences": differences,
        "seal": {"key_id": "k-9999", "signed_by": "another installation", "checked": False},
    }


def test_require_signature_is_passed_to_the_replay(replays: Replays) -> None:
    """``--require-signature`` asks the replay to refuse a file this installation did not
    sign."""
    assert invoke("run.jsonl", "--require-signature").exit_code == 0
    assert replays.asked == [(Path("run.jsonl"), True)]
