"""Replaying a transcript (``agent.sessions.replay``): what was recorded is read and its
shape checked before anything runs; the graph is given the recorded baseline, the
recorded proposer answers and menu choices, and never a human approver; and what it
concludes now is compared line by line with what was recorded, as a unified diff."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any, cast

import pytest

from agent.analysis.symptoms import Symptom
from agent.graph.doctor import Doctor
from agent.graph.proposer import Proposed
from agent.graph.state import Answer, Choice, DiagnosisState
from agent.model.claims import ClaimVerdict
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis
from agent.rules.base import Evidence
from agent.sessions import replay as replay_module
from agent.sessions.replay import (
    RecordedBaselines,
    RecordedProposer,
    ReplayResult,
    _command_shape,
    replay,
)
from tools.errors import TranscriptError
from tools.transcript import SealCheck, TranscriptWriter

NO_EVIDENCE = cast(Evidence, None)  # a recorded proposer never looks at the evidence


def holds(sentence: str) -> ClaimVerdict:
    return ClaimVerdict(outcome="holds", sentence=sentence, cites=())


def fails(sentence: str) -> ClaimVerdict:
    return ClaimVerdict(outcome="fails", sentence=sentence, cites=())


def hypothesis(kind: str, status: str, *verdicts: ClaimVerdict) -> dict[str, Any]:
    data = {"kind": kind, "claims": [], "status": status, "verdicts": verdicts}
    return Hypothesis.model_validate(data).model_dump(mode="json")


def symptom(status: str, *verdicts: ClaimVerdict, explained_by: tuple[str, ...] = ()) -> Symptom:
    return Symptom(
        kind="throughput_drop",
        series="drafter tokens/s",
        subject=True,
        claims=(),
        verdicts=verdicts,
        status=status,
        explained_by=explained_by,
    )


def transcript(path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    """A whole transcript of ``events`` sealed by this installation; by default that of a
    diagnosis of ``local`` with the default sweep spec."""
    writer = TranscriptWriter(
        path, {"command": "diagnose", "target": "local", "spec": {}, **header}
    )
    for event in events:
        writer.write(event)
    writer.close()
    return path


VERDICT: dict[str, Any] = {"type": "verdict", "verdict": "fault_found"}
RACE_VERIFIED = hypothesis("fx_trace_race", "verified", holds("FX-trace error lines = 1 ≥ 1"))


@dataclass
class Runs:
    """What the graph stand-in was given, and the state it answers with (``ends``)."""

    ends: DiagnosisState = field(default_factory=lambda: DiagnosisState(target="local"))
    given: list[tuple[Doctor, DiagnosisState, list[Choice]]] = field(default_factory=list)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runs]:
    """The graph does not run: a stand-in records what the replay gives it and answers
    with ``runs.ends``."""
    record = Runs()

    def run(doctor: Doctor, start: DiagnosisState, choices: list[Choice]) -> DiagnosisState:
        record.given.append((doctor, start, choices))
        return record.ends

    monkeypatch.setattr(replay_module, "_run", run)
    yield record


def ended(verdict: str, hypotheses: list[dict[str, Any]], **more: Any) -> DiagnosisState:
    return DiagnosisState.model_validate(
        {"target": "local", "verdict": verdict, "hypotheses": hypotheses, **more}
    )


def test_the_same_conclusions_are_a_replay_without_differences(runs: Runs, tmp_path: Path) -> None:
    """When today's verdict and hypotheses (family, status and each claim's sentence) are
    those recorded, the replay has no differences; it keeps the header and who sealed
    the file."""
    path = transcript(
        tmp_path / "t.jsonl", [{"type": "hypothesis", "hypothesis": RACE_VERIFIED}, VERDICT]
    )
    runs.ends = ended("fault_found", [RACE_VERIFIED])
    result = replay(path)
    assert (result.same, result.differences) == (True, [])
    assert (result.header["command"], result.seal.checked) == ("diagnose", True)


def test_changed_conclusions_are_a_unified_diff_from_recorded_to_replayed(
    runs: Runs, tmp_path: Path
) -> None:
    """A hypothesis whose status and claim changed is shown as a unified diff, recorded
    then replayed, with the verdict around it as context."""
    path = transcript(
        tmp_path / "t.jsonl", [{"type": "hypothesis", "hypothesis": RACE_VERIFIED}, VERDICT]
    )
    runs.ends = ended(
        "fault_found",
        [hypothesis("fx_trace_race", "refuted", fails("FX-trace error lines = 0 < 1"))],
    )
    result = replay(path)
    assert result.same is False
    assert result.differences == [
        "--- recorded",
        "+++ replayed",
        "@@ -1,3 +1,3 @@",
        " verdict: fault_found",
        "-fx_trace_race: verified",
        "-  holds: FX-trace error lines = 1 ≥ 1",
        "+fx_trace_race: refuted",
        "+  fails: FX-trace error lines = 0 < 1",
    ]


def test_symptoms_are_compared_when_the_transcript_recorded_them(
    runs: Runs, tmp_path: Path
) -> None:
    """Recorded symptoms are compared with today's: kind, series, status, each verdict's
    sentence and the families that explain it."""
    recorded = symptom("verified", holds("0.5× (< 0.8×)"), explained_by=("fx_trace_race",))
    path = transcript(
        tmp_path / "t.jsonl",
        [{"type": "symptoms", "symptoms": [recorded.model_dump(mode="json")]}, VERDICT],
    )
    runs.ends = ended("fault_found", [], symptoms=[symptom("refuted", fails("0.9× (≥ 0.8×)"))])
    assert replay(path).differences == [
        "--- recorded",
        "+++ replayed",
        "@@ -1,4 +1,3 @@",
        " verdict: fault_found",
        "-symptom throughput_drop (drafter tokens/s): verified",
        "-  holds: 0.5× (< 0.8×)",
        "-  explained by: fx_trace_race",
        "+symptom throughput_drop (drafter tokens/s): refuted",
        "+  fails: 0.9× (≥ 0.8×)",
    ]


def test_a_transcript_from_before_symptoms_says_nothing_about_them(
    runs: Runs, tmp_path: Path
) -> None:
    """A transcript that recorded no symptoms event is not held to today's symptoms:
    those found now make no difference."""
    path = transcript(tmp_path / "t.jsonl", [VERDICT])
    runs.ends = ended("fault_found", [], symptoms=[symptom("verified", holds("0.5×"))])
    assert replay(path).same is True


def test_the_graph_starts_as_the_recorded_session_did(runs: Runs, tmp_path: Path) -> None:
    """The replay starts the graph in replay mode at the recorded target, with the
    header's baseline and the verdict's focus, at the menu when choices were recorded
    (fed back in order); the doctor never approves a fix and its proposers are the
    recorded ones, one per source."""
    events: list[dict[str, Any]] = [
        {"type": "answer", "source": "llm:a", "text": "[]"},
        {"type": "answer", "source": "llm:b", "text": None},
        {"type": "choice", "choice": {"action": "test", "kind": "fx_trace_race"}},
        {"type": "choice", "choice": {"action": "stop"}},
        {**VERDICT, "focus": ["fx_trace_race"]},
    ]
    path = transcript(tmp_path / "t.jsonl", events, target="local/pct:200", baseline="good")
    runs.ends = ended("fault_found", [])
    replay(path)
    ((doctor, start, choices),) = runs.given
    assert start == DiagnosisState(
        target="local/pct:200",
        mode="replay",
        baseline="good",
        focus=["fx_trace_race"],
        interactive=True,
    )
    assert choices == [Choice(action="test", kind="fx_trace_race"), Choice(action="stop")]
    assert doctor.approver == "never"
    assert [p.name for p in doctor.proposers] == ["llm:a", "llm:b"]


@pytest.mark.parametrize(
    ("header", "events", "why"),
    [
        ({"command": "exec"}, [VERDICT], "a 'exec' transcript holds no diagnosis to replay"),
        ({"spec": None}, [VERDICT], "a 'diagnose' transcript holds no diagnosis to replay"),
        ({}, [], "no verdict recorded (the session did not finish)"),
        (
            {},
            [{"type": "verdict", "verdict": 3}],
            "not a diagnosis as this app records one: event 1: the verdict is not text",
        ),
        (
            {},
            [{"type": "choice", "choice": {"action": "retry"}}, VERDICT],
            "not a diagnosis as this app records one: 1 validation error for Choice",
        ),
        (
            {},
            [{"type": "hypothesis"}, VERDICT],
            "not a diagnosis as this app records one: an event lacks 'hypothesis'",
        ),
        (
            {},
            [{**VERDICT, "focus": ["gremlins"]}],
            "not a diagnosis as this app records one: 1 validation error for DiagnosisState",
        ),
    ],
    ids=[
        "not-a-diagnosis",
        "no-spec",
        "unfinished",
        "verdict-not-text",
        "unknown-choice",
        "hypothesis-missing",
        "unknown-focus",
    ],
)
def test_a_transcript_that_is_no_replayable_diagnosis_is_one_line(
    runs: Runs, tmp_path: Path, header: dict[str, Any], events: list[dict[str, Any]], why: str
) -> None:
    """A whole transcript that recorded no diagnosis, no verdict, or events not shaped as
    this app records them is refused in one line naming the file and what is wrong,
    before the graph runs."""
    path = transcript(tmp_path / "t.jsonl", events, **header)
    with pytest.raises(TranscriptError) as info:
        replay(path)
    assert str(info.value) == f"{path}: {why}"
    assert runs.given == []


COMMAND: dict[str, Any] = {
    "type": "command",
    "seq": 3,
    "target": "local",
    "argv": ["python3", "-B", "-"],
    "stdin_digest": "key:00",
    "rc": 0,
    "duration": 0.5,
    "stdout": "aGVsbG8K",
    "stderr": "",
}
COMMAND_ERROR: dict[str, Any] = {
    "type": "command_error",
    "seq": 3,
    "target": "local",
    "argv": ["python3"],
    "stdin_digest": "key:00",
    "error": "ConnectError",
    "message": "refused",
}
SHAPE = "event 3: a command's target, argv or stdin digest"


@pytest.mark.parametrize(
    ("event", "error", "message"),
    [
        ({**COMMAND, "target": 7}, TypeError, SHAPE),
        ({**COMMAND, "argv": ["python3", 1]}, TypeError, SHAPE),
        ({**COMMAND, "argv": "python3 -B -"}, TypeError, SHAPE),
        ({**COMMAND, "stdin_digest": None}, TypeError, SHAPE),
        ({k: v for k, v in COMMAND.items() if k != "rc"}, KeyError, "'rc'"),
        ({**COMMAND, "rc": "zero"}, ValueError, "invalid literal for int() with base 10: 'zero'"),
        ({**COMMAND, "duration": "soon"}, ValueError, "could not convert string to float: 'soon'"),
        ({**COMMAND, "stdout": 5}, TypeError, "event 3: stdout is not base64 text"),
        ({**COMMAND, "stderr": ["x"]}, TypeError, "event 3: stderr is not base64 text"),
        ({**COMMAND, "stdout": "not base64!"}, ValueError, "Only base64 data is allowed"),
        (
            {**COMMAND_ERROR, "message": None},
            TypeError,
            "event 3: a command error's error or message",
        ),
        ({k: v for k, v in COMMAND_ERROR.items() if k != "error"}, KeyError, "'error'"),
    ],
    ids=[
        "target-not-text",
        "argv-item-not-text",
        "argv-not-a-list",
        "no-stdin-digest",
        "no-rc",
        "rc-not-a-number",
        "duration-not-a-number",
        "stdout-not-text",
        "stderr-not-text",
        "stdout-not-base64",
        "error-message-not-text",
        "error-without-its-name",
    ],
)
def test_a_recorded_command_the_replay_could_not_answer_with_is_refused(
    event: dict[str, Any], error: type[Exception], message: str
) -> None:
    """A command (or command error) event is checked field by field before the graph runs:
    each field the replay transport reads must be there with its type, the exit code and
    duration numbers, the output base64 text."""
    with pytest.raises(error) as info:
        _command_shape(event)
    assert str(info.value) == message


@pytest.mark.parametrize("event", [COMMAND, COMMAND_ERROR], ids=["command", "command-error"])
def test_a_well_shaped_command_passes(event: dict[str, Any]) -> None:
    """A command event with every field the transport reads, or a command error with its
    error and message, passes the check."""
    _command_shape(event)


def test_the_recorded_baseline_is_given_by_its_name_only() -> None:
    """The baseline the transcript recorded is loaded by its name, holding the recorded
    facts and target; any other name is an error naming it."""
    fact = Fact(probe="host", target="local", value={"cpus": 8})
    baselines = RecordedBaselines("good", "local", [fact])
    snapshot = baselines.load("good")
    assert (snapshot.name, snapshot.target, snapshot.facts) == ("good", "local", [fact])
    assert snapshot.created_at.tzinfo is UTC
    with pytest.raises(TranscriptError, match=r"^transcript has no baseline 'other'$"):
        baselines.load("other")


def test_a_transcript_without_a_baseline_has_none_to_give() -> None:
    """A transcript that recorded no baseline refuses every name."""
    with pytest.raises(TranscriptError, match=r"^transcript has no baseline 'good'$"):
        RecordedBaselines(None, "local", []).load("good")


def test_recorded_answers_become_one_proposer_per_source_in_order() -> None:
    """Answers are grouped by the proposer that gave them, in the order each source first
    answered; each proposer says its own answers again in the order recorded."""
    answers = [
        Answer(source="llm:a", text="[]"),
        Answer(source="llm:b", text="7"),
        Answer(source="llm:a", text="{not json"),
    ]
    a, b = RecordedProposer.for_answers(answers)
    assert (a.name, b.name) == ("llm:a", "llm:b")
    assert a.propose(NO_EVIDENCE) == Proposed("llm:a", "[]", [], [])
    assert b.propose(NO_EVIDENCE) == Proposed(
        "llm:b", "7", [], ["the answer is a JSON int, not a list"]
    )
    assert a.propose(NO_EVIDENCE) == Proposed(
        "llm:a",
        "{not json",
        [],
        [
            "the answer is not JSON (Expecting property name enclosed in double quotes:"
            " line 1 column 2 (char 1))"
        ],
    )


def test_a_model_that_failed_fails_again_as_recorded() -> None:
    """An answer recorded without text (the model failed) is said again as a failure:
    no answer, no hypotheses, and why."""
    (proposer,) = RecordedProposer.for_answers([Answer(source="llm:a", text=None)])
    assert proposer.propose(NO_EVIDENCE) == Proposed(
        "llm:a", None, [], ["the model failed (as recorded)"]
    )


def test_a_proposer_asked_more_often_than_recorded_is_an_error() -> None:
    """Today's graph asking a proposer once more than the recording holds is an error
    naming the proposer: the replay cannot make up an answer."""
    proposer = RecordedProposer("llm:a", ["[]"])
    proposer.propose(NO_EVIDENCE)
    with pytest.raises(
        TranscriptError, match=r"^llm:a was asked more often than the transcript holds$"
    ):
        proposer.propose(NO_EVIDENCE)


def test_a_result_is_the_same_exactly_when_it_has_no_differences() -> None:
    """``same`` is true for a result without differences and false with any."""
    state = DiagnosisState(target="local")
    seal = SealCheck(key_id="k-1234", signed_by="this installation")
    assert ReplayResult({}, state, Ledger(), seal).same is True
    assert ReplayResult({}, state, Ledger(), seal, ["-verdict: x"]).same is False
