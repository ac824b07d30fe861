"""Replay: re-run the diagnosis graph on a transcript's recorded command results, with no
machine, and compare what it concludes now with what it concluded then.

The graph, the rules and the fact parsing are today's; the evidence is the recording's.
Same verdicts -> the rule base still agrees with itself; different ones -> a diff that
says which hypothesis moved and which claim changed. A transcript that is broken, or a
command the graph asks for that the recording does not hold, is an error (exit 2).
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

from agent.baseline import Snapshot
from agent.comparables import comparables
from agent.facts import Fact, Ledger
from agent.gather import SweepGatherer
from agent.graph import build_graph
from agent.hypotheses import Hypothesis
from agent.nodes import Doctor
from agent.proposer import Proposed, parse_answer
from agent.rules import default_rules
from agent.rules.base import Evidence, Rule
from agent.state import Answer, Choice, DiagnosisState
from agent.symptoms import Symptom
from tools.bundle import SweepSpec
from tools.errors import TranscriptError
from tools.probes import PROBES
from tools.transcript import read_transcript
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
        return parse_answer(text, self.name, frozenset(PROBES))


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


def replay(path: Path, rules: Sequence[Rule] | None = None) -> ReplayResult:
    header, events = read_transcript(path)
    spec_data = header.get("spec")
    if header.get("command") not in ("diagnose", "demo", "health") or spec_data is None:
        raise TranscriptError(
            f"{path}: a {header.get('command')!r} transcript holds no diagnosis to replay"
        )
    recorded_verdict = next((e for e in events if e["type"] == "verdict"), None)
    if recorded_verdict is None:
        raise TranscriptError(f"{path}: no verdict recorded (the session did not finish)")
    spec = SweepSpec.model_validate(spec_data)
    target = str(header["target"])
    ledger = Ledger()
    baseline_facts = [
        Fact.model_validate(e["fact"]) for e in events if e["type"] == "fact" and e.get("baseline")
    ]
    answers = [Answer.model_validate(e) for e in events if e["type"] == "answer"]
    choices = [Choice.model_validate(e["choice"]) for e in events if e["type"] == "choice"]
    doctor = Doctor(
        ledger=ledger,
        gather=SweepGatherer(ReplayTransport(events, target), spec, ledger),
        rules=list(rules) if rules is not None else default_rules(),
        comparables=comparables,
        baselines=RecordedBaselines(header.get("baseline"), target, baseline_facts),
        approver="never",
        proposers=RecordedProposer.for_answers(answers),
    )
    start = DiagnosisState(
        target=target,
        mode="replay",
        baseline=header.get("baseline"),
        focus=recorded_verdict.get("focus") or [],
        interactive=bool(choices),
    )
    state = _run(doctor, start, choices)
    recorded = [
        Hypothesis.model_validate(e["hypothesis"]) for e in events if e["type"] == "hypothesis"
    ]
    before = [f"verdict: {recorded_verdict['verdict']}", *_hypothesis_lines(recorded)]
    after = [f"verdict: {state.verdict}", *_hypothesis_lines(state.hypotheses)]
    said = [e for e in events if e["type"] == "symptoms"]
    if said:
        # Compared where the transcript recorded them: one from before the symptom layer
        # has none to compare, and says nothing about them.
        symptoms = [Symptom.model_validate(s) for s in said[-1]["symptoms"]]
        before += _symptom_lines(symptoms)
        after += _symptom_lines(state.symptoms)
    differences = []
    if before != after:
        import difflib

        differences = list(difflib.unified_diff(before, after, "recorded", "replayed", lineterm=""))
    return ReplayResult(header=header, state=state, ledger=ledger, differences=differences)
