"""Run a diagnosis session: build the collaborators, run (or resume) the graph, and say
where it stopped. The CLI, the demo, health checks and replays all come through here."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.types import Command

from agent.analysis.baseline import BaselineStore, baseline_store
from agent.analysis.diff_keys import comparables
from agent.graph.doctor import Approver, Doctor, Fixer, Proposer
from agent.graph.gather import SweepGatherer
from agent.graph.state import DiagnosisState
from agent.graph.wiring import build_graph, sqlite_checkpointer
from agent.rules import default_rules
from agent.rules.base import Rule
from agent.sessions.session import Session
from tools.errors import ConfigError
from tools.sweep import SweepSpec
from tools.transcript import read_transcript
from tools.transport.base import Transport


@dataclass
class Outcome:
    state: DiagnosisState
    paused: dict[str, Any] | None  # the approval question, when the graph waits for one


def build_doctor(
    session: Session,
    transport: Transport,
    spec: SweepSpec,
    *,
    approver: Approver = "never",
    playbooks: Mapping[str, Fixer] | None = None,
    rules: Sequence[Rule] | None = None,
    baselines: BaselineStore | None = None,
    proposers: Sequence[Proposer] = (),
    carry_py_spy: bool = False,
) -> Doctor:
    """``carry_py_spy``: put this machine's py-spy on a target that has none, for the live
    stacks (diagnose and guided sessions; never a health check)."""
    return Doctor(
        ledger=session.ledger,
        gather=SweepGatherer(transport, spec, session.ledger, carry=carry_py_spy),
        rules=list(rules if rules is not None else default_rules()),
        comparables=comparables,
        baselines=baselines or baseline_store(),
        playbooks=dict(playbooks or {}),
        approver=approver,
        sanitize=session.sanitize,
        proposers=proposers,
    )


def run_session(
    session: Session,
    doctor: Doctor,
    *,
    start: DiagnosisState | None = None,
    answer: Any = None,
    fixes: bool = True,
) -> Outcome:
    """Start the graph from ``start``, or continue it: with ``answer`` (the reply to an
    approval question) or, when neither is given, from its last checkpoint."""
    graph = build_graph(
        doctor.rules,
        checkpointer=sqlite_checkpointer(session.graph_path, session.recorded),
        fixes=fixes,
    )
    config = {"configurable": {"thread_id": session.id}}
    if start is not None:
        payload: Any = start
    else:
        payload = Command(resume=answer) if answer is not None else None
        if not graph.get_state(config).values:
            # Continuing, or answering, needs a checkpoint; an emptied or replaced
            # graph.sqlite has none.
            raise ConfigError(
                f"{session.graph_path}: holds no saved state for session {session.id}; "
                "it cannot be resumed (start a new diagnosis)"
            )
    result = graph.invoke(payload, config, context=doctor)
    snapshot = graph.get_state(config)
    paused = None
    interrupts = result.get("__interrupt__") if isinstance(result, dict) else None
    if interrupts:
        paused = interrupts[0].value
    state = DiagnosisState.model_validate(snapshot.values)
    return Outcome(state=state, paused=paused)


def record_outcome(session: Session, state: DiagnosisState) -> None:
    """Facts, claim verdicts, hypotheses, the plan, the approval, the fix's outcome and
    verification and the verdict go into the transcript after the commands that produced
    them: a transcript alone is enough to render the report the session rendered live
    (``agent.sessions.recorded``) and to check a replay against. Every field a report
    section reads is recorded, the families set aside and why no fix was planned too.
    A session resumed after it had finished adds nothing: its outcome is recorded
    already."""
    if os.path.lexists(session.transcript_path):
        _, events = read_transcript(session.transcript_path)
        if any(e["type"] == "verdict" for e in events):
            return
    for fact_id, baseline in state.fact_ids():
        fact = session.ledger.get(fact_id)
        session.record({"type": "fact", "baseline": baseline, "fact": fact.model_dump(mode="json")})
    for entry in state.diff:
        session.record({"type": "diff", "entry": entry.model_dump(mode="json")})
    for entry in state.derived_diff:
        session.record({"type": "derived_diff", "entry": entry.model_dump(mode="json")})
    for answer in state.answers:
        session.record({"type": "answer", **answer.model_dump(mode="json")})
    for refusal in state.refused:
        session.record({"type": "refused", **refusal.model_dump(mode="json")})
    for choice in state.choices:
        session.record({"type": "choice", "choice": choice.model_dump(mode="json")})
    session.record(
        {"type": "symptoms", "symptoms": [s.model_dump(mode="json") for s in state.symptoms]}
    )
    for hyp in state.hypotheses:
        session.record({"type": "hypothesis", "hypothesis": hyp.model_dump(mode="json")})
    if state.plan is not None:
        session.record({"type": "plan", "plan": state.plan.model_dump(mode="json")})
        session.record({"type": "approval", "approved": state.approved, "by": state.approved_by})
    if state.outcome is not None:
        session.record(
            {
                "type": "apply",
                "outcome": state.outcome.model_dump(mode="json"),
                "verification": [v.model_dump(mode="json") for v in state.verification],
            }
        )
    session.record(
        {
            "type": "verdict",
            "verdict": state.verdict,
            "missing": state.missing,
            "baseline": state.baseline,
            "mode": state.mode,
            "focus": state.focus,
            "examined": state.examined,
            "offered_for": state.offered_for,
            "offered": state.offered,
            "not_applicable": (
                state.not_applicable.model_dump(mode="json")
                if state.not_applicable is not None
                else None
            ),
            "plan_error": state.plan_error,
            "plan_only": state.plan_only,
        }
    )
