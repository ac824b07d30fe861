"""Replay: re-run the diagnosis graph on a transcript's recorded command results, with no
machine, and compare what it concludes now with what it concluded then.

The graph, the rules and the fact parsing are today's; the evidence is the recording's.
Same verdicts -> the rule base still agrees with itself; different ones -> a diff that
says which hypothesis moved and which claim changed. A transcript that is broken, or a
command the graph asks for that the recording does not hold, is an error (exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.baseline import Snapshot
from agent.comparables import comparables
from agent.facts import Fact, Ledger
from agent.gather import SweepGatherer
from agent.graph import build_graph
from agent.hypotheses import Hypothesis
from agent.nodes import Doctor
from agent.rules import default_rules
from agent.rules.base import Rule
from agent.state import DiagnosisState
from tools.bundle import SweepSpec
from tools.errors import TranscriptError
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


def _hypothesis_lines(hypotheses: list[Hypothesis]) -> list[str]:
    lines = []
    for h in hypotheses:
        lines.append(f"{h.kind}: {h.status}")
        lines += [f"  {v.outcome}: {v.sentence}" for v in h.verdicts]
    return lines


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
    doctor = Doctor(
        ledger=ledger,
        gather=SweepGatherer(ReplayTransport(events, target), spec, ledger),
        rules=list(rules) if rules is not None else default_rules(),
        comparables=comparables,
        baselines=RecordedBaselines(header.get("baseline"), target, baseline_facts),
        approver="never",
    )
    start = DiagnosisState(target=target, mode="replay", baseline=header.get("baseline"))
    final = build_graph(doctor.rules, fixes=False).invoke(start, context=doctor)
    state = DiagnosisState.model_validate(final)
    recorded = [
        Hypothesis.model_validate(e["hypothesis"]) for e in events if e["type"] == "hypothesis"
    ]
    before = [f"verdict: {recorded_verdict['verdict']}", *_hypothesis_lines(recorded)]
    after = [f"verdict: {state.verdict}", *_hypothesis_lines(state.hypotheses)]
    differences = []
    if before != after:
        import difflib

        differences = list(difflib.unified_diff(before, after, "recorded", "replayed", lineterm=""))
    return ReplayResult(header=header, state=state, ledger=ledger, differences=differences)
