"""Replay: re-run the diagnosis graph on a transcript's recorded command results, with no
machine, and compare what it concludes now with what it concluded then.

The graph, the rules and the fact parsing are today's; the evidence is the recording's.

What a good replay (exit 0) proves, and no more:

- the file is whole: every line chains to the one before it, and the seal, its last
  line, matches every byte before it and the number of events. On its own that rules
  out a cut (a killed writer included), a dropped, doubled, reordered or appended line,
  and any edit that did not also recompute the chain and the seal;
- where the replay says "signed by this installation": the seal's HMAC checks with this
  state directory's transcript key (``tools.signing``), so the file is byte for byte
  one that an installation holding that key sealed, and no one without the key
  re-chained or re-sealed it. Where it says the signature was not checked (the seal
  names another installation's key, or this one has none), the file is whole, but
  anyone could have written it whole; ``--require-signature`` refuses it then;
- the verdicts, hypotheses, claim outcomes and symptoms that today's graph and rules
  compute from the recorded command results are those the transcript recorded.

What it does not prove: that the recorded outputs were true of the machine. The
installation that recorded them is trusted to have run what it says it ran and written
what came back; the seal says only that nothing changed after it wrote them. Nor does
it tell an older sealed copy of a resumed session from the newer one: each was whole
when sealed.

Exit codes: 0 as above; 1 when the file is whole but the verdicts differ (a rule
changed), with the diff; 2 when it cannot be replayed: unreadable, broken chain, not
sealed (cut short, its writer killed, or written before transcripts were sealed), a
line after the seal, a seal that does not match, a signature this installation's key
refutes, a refused key file, a signature not checked here when one is required, or a
command the graph asks for that the recording does not hold.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import ValidationError

from agent.analysis.baseline import Snapshot
from agent.analysis.diff_keys import comparables
from agent.analysis.symptoms import Symptom
from agent.graph.doctor import Doctor
from agent.graph.gather import SweepGatherer
from agent.graph.proposer import Proposed, parse_answer
from agent.graph.state import Answer, Choice, DiagnosisState
from agent.graph.wiring import build_graph
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis
from agent.rules import default_rules
from agent.rules.base import Evidence, Rule
from agent.sessions.recorded import flat_event, ill_shaped
from tools.errors import TranscriptError
from tools.signing import load_key
from tools.sweep import SweepSpec
from tools.transcript import SealCheck, read_sealed, unb64
from tools.transport.record import ReplayTransport


class RecordedBaselines:
    """The baseline snapshot as the transcript recorded it (the store is not needed)."""

    def __init__(self, name: str | None, target: str, facts: list[Fact]) -> None:
        self.name = name
        self.snapshot = Snapshot(
            name=name or "", target=target, created_at=datetime.now(UTC), facts=facts
        )

    def load(self, name: str) -> Snapshot:
        if name != self.name:
            raise TranscriptError(f"transcript has no baseline {name!r}")
        return self.snapshot


@dataclass
class ReplayResult:
    header: dict[str, Any]
    state: DiagnosisState
    ledger: Ledger
    seal: SealCheck
    differences: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differences


def _symptom_lines(symptoms: list[Symptom]) -> list[str]:
    lines = []
    for s in symptoms:
        lines.append(f"symptom {s.kind} ({s.series}): {s.status}")
        lines += [f"  {v.outcome}: {v.sentence}" for v in s.verdicts]
        if s.explained_by:
            lines.append(f"  explained by: {', '.join(s.explained_by)}")
    return lines


def _hypothesis_lines(hypotheses: list[Hypothesis]) -> list[str]:
    lines = []
    for h in hypotheses:
        lines.append(f"{h.kind}: {h.status}")
        lines += [f"  {v.outcome}: {v.sentence}" for v in h.verdicts]
    return lines


class RecordedProposer:
    """A proposer that says again what it said when the session was recorded: the
    model is not called (nor needed) on replay, its answers are evidence like commands."""

    def __init__(self, source: str, texts: list[str | None]) -> None:
        self.name = source
        self._texts = deque(texts)

    @classmethod
    def for_answers(cls, answers: list[Answer]) -> list[RecordedProposer]:
        by_source: dict[str, list[str | None]] = {}
        for answer in answers:
            by_source.setdefault(answer.source, []).append(answer.text)
        return [cls(source, texts) for source, texts in by_source.items()]

    def propose(self, evidence: Evidence) -> Proposed:
        if not self._texts:
            raise TranscriptError(f"{self.name} was asked more often than the transcript holds")
        text = self._texts.popleft()
        if text is None:
            return Proposed(self.name, None, [], ["the model failed (as recorded)"])
        return parse_answer(text, self.name)


def _run(doctor: Doctor, start: DiagnosisState, choices: list[Choice]) -> DiagnosisState:
    """The graph once, or, for a guided session, once per recorded menu answer, in order.
    A replay never fixes anything: a recorded choice to fix ends it there."""
    if not choices:
        final = build_graph(doctor.rules, fixes=False).invoke(start, context=doctor)
        return DiagnosisState.model_validate(final)
    graph = build_graph(doctor.rules, checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "replay"}, "recursion_limit": 1000}
    result = graph.invoke(start, config, context=doctor)
    answers = [c.model_dump(mode="json") for c in choices if c.action in ("test", "probe")]
    for answer in [*answers, {"action": "stop"}]:
        if not result.get("__interrupt__"):
            break
        result = graph.invoke(Command(resume=answer), config, context=doctor)
    return DiagnosisState.model_validate(graph.get_state(config).values)


@dataclass
class _Recording:
    """What the transcript recorded, parsed before anything runs."""

    spec: SweepSpec
    target: str
    verdict: dict[str, Any]
    baseline_facts: list[Fact]
    answers: list[Answer]
    choices: list[Choice]
    hypotheses: list[Hypothesis]
    symptoms: list[Symptom] | None


def _command_shape(event: dict[str, Any]) -> None:
    """Raise (KeyError, TypeError, ValueError) unless the replay transport can answer
    with ``event``: checked before the graph runs, not as a traceback in the middle."""
    if not (
        isinstance(event["target"], str)
        and isinstance(event["stdin_digest"], str)
        and isinstance(event["argv"], list)
        and all(isinstance(a, str) for a in event["argv"])
    ):
        raise TypeError(f"event {event.get('seq')}: a command's target, argv or stdin digest")
    if event["type"] == "command":
        int(event["rc"])
        float(event["duration"])
        for stream in ("stdout", "stderr"):
            if not isinstance(event[stream], str):
                raise TypeError(f"event {event.get('seq')}: {stream} is not base64 text")
            unb64(event[stream])
    elif not (isinstance(event["error"], str) and isinstance(event["message"], str)):
        raise TypeError(f"event {event.get('seq')}: a command error's error or message")


def _recording(path: Path, header: dict[str, Any], events: list[dict[str, Any]]) -> _Recording:
    spec_data = header.get("spec")
    if header.get("command") not in ("diagnose", "demo", "health") or spec_data is None:
        raise TranscriptError(
            f"{path}: a {header.get('command')!r} transcript holds no diagnosis to replay"
        )
    verdict = next((e for e in events if e["type"] == "verdict"), None)
    if verdict is None:
        raise TranscriptError(f"{path}: no verdict recorded (the session did not finish)")
    said = [e for e in events if e["type"] == "symptoms"]
    try:
        for event in events:
            if event["type"] in ("command", "command_error"):
                _command_shape(event)
        if not isinstance(verdict["verdict"], str):  # compared, as text, after the run
            raise TypeError(f"event {verdict.get('seq')}: the verdict is not text")
        return _Recording(
            spec=SweepSpec.model_validate(spec_data),
            target=str(header["target"]),
            verdict=verdict,
            baseline_facts=[
                Fact.model_validate(e["fact"])
                for e in events
                if e["type"] == "fact" and e.get("baseline")
            ],
            answers=[flat_event(Answer, e) for e in events if e["type"] == "answer"],
            choices=[Choice.model_validate(e["choice"]) for e in events if e["type"] == "choice"],
            hypotheses=[
                Hypothesis.model_validate(e["hypothesis"])
                for e in events
                if e["type"] == "hypothesis"
            ],
            # Compared where the transcript recorded them: one from before the symptom
            # layer has none to compare, and says nothing about them.
            symptoms=[Symptom.model_validate(s) for s in said[-1]["symptoms"]] if said else None,
        )
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        raise ill_shaped(path, exc) from None


def replay(
    path: Path, rules: Sequence[Rule] | None = None, *, require_signature: bool = False
) -> ReplayResult:
    # The key is looked up, never made: a replay writes nothing.
    sealed = read_sealed(path, load_key(), require_signature=require_signature)
    recording = _recording(path, sealed.header, sealed.events)
    target = recording.target
    ledger = Ledger()
    doctor = Doctor(
        ledger=ledger,
        # carry: a session that carried py-spy asks the recording the same questions (a
        # session that did not never asks: its live fact had py-spy or no trainer).
        gather=SweepGatherer(
            ReplayTransport(sealed.events, target), recording.spec, ledger, carry=True
        ),
        rules=list(rules) if rules is not None else default_rules(),
        comparables=comparables,
        baselines=RecordedBaselines(
            sealed.header.get("baseline"), target, recording.baseline_facts
        ),
        approver="never",
        proposers=RecordedProposer.for_answers(recording.answers),
    )
    try:
        start = DiagnosisState(
            target=target,
            mode="replay",
            baseline=sealed.header.get("baseline"),
            focus=recording.verdict.get("focus") or [],
            interactive=bool(recording.choices),
        )
    except ValidationError as exc:  # a header's baseline or a verdict's focus ill-typed
        raise ill_shaped(path, exc) from None
    state = _run(doctor, start, recording.choices)
    before = [f"verdict: {recording.verdict['verdict']}", *_hypothesis_lines(recording.hypotheses)]
    after = [f"verdict: {state.verdict}", *_hypothesis_lines(state.hypotheses)]
    if recording.symptoms is not None:
        before += _symptom_lines(recording.symptoms)
        after += _symptom_lines(state.symptoms)
    differences = []
    if before != after:
        import difflib

        differences = list(difflib.unified_diff(before, after, "recorded", "replayed", lineterm=""))
    return ReplayResult(
        header=sealed.header, state=state, ledger=ledger, seal=sealed.seal, differences=differences
    )
