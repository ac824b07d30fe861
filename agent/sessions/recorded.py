"""A finished session as its transcript recorded it: the state and the ledger, rebuilt
from the events alone (no machine, no rerun), for ``report FILE``.

A report is rendered only from a whole transcript, checked as a replay checks it
(``tools.transcript.read_sealed``): a cut or edited file would have it say what the
session never found. Who signed it is in ``Recorded.seal``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.analysis.baseline import DiffEntry
from agent.analysis.symptoms import Symptom
from agent.graph.applicability import NotApplicable
from agent.graph.state import Answer, Choice, DiagnosisState, FixOutcome, FixPlan, Refusal
from agent.model.claims import ClaimVerdict
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis
from tools.errors import TranscriptError
from tools.signing import load_key
from tools.transcript import ENVELOPE, SealCheck, read_sealed

M = TypeVar("M", bound=BaseModel)


@dataclass
class Recorded:
    header: dict[str, Any]
    state: DiagnosisState
    ledger: Ledger
    seal: SealCheck


def flat_event(model: type[M], event: dict[str, Any]) -> M:
    """A model recorded flat in its event (an answer, a refusal): the event less the
    writer's envelope, so that a field the model does not know is still refused."""
    return model.model_validate({k: v for k, v in event.items() if k not in ENVELOPE})


def ill_shaped(path: Path, exc: Exception) -> TranscriptError:
    """A whole transcript whose content is not what this app records (one sealed by
    another installation is whole without anyone here having checked its content): one
    line saying what, never a traceback."""
    if isinstance(exc, KeyError):
        first = f"an event lacks {exc.args[0]!r}"
    else:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return TranscriptError(f"{path}: not a diagnosis as this app records one: {first}")


def load_recorded(path: Path, *, require_signature: bool = False) -> Recorded:
    sealed = read_sealed(path, load_key(), require_signature=require_signature)
    try:
        return _recorded(path, sealed)
    except (ValidationError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ill_shaped(path, exc) from None


def _recorded(path: Path, sealed: Any) -> Recorded:
    header, events = sealed.header, sealed.events
    verdict = next((e for e in events if e["type"] == "verdict"), None)
    if verdict is None:
        raise TranscriptError(f"{path}: no verdict recorded (the session did not finish)")
    ledger = Ledger()
    facts: list[str] = []
    baseline: list[str] = []
    for event in events:
        if event["type"] == "fact":
            fact = ledger.append(Fact.model_validate(event["fact"]))
            if fact.id != event["fact"]["id"]:
                raise TranscriptError(
                    f"{path}: event {event['seq']}: fact {event['fact']['id']} does not match "
                    "its content"
                )
            (baseline if event.get("baseline") else facts).append(fact.id)
    plan = next((FixPlan.model_validate(e["plan"]) for e in events if e["type"] == "plan"), None)
    approval = next((e for e in events if e["type"] == "approval"), None)
    applied = next((e for e in events if e["type"] == "apply"), None)
    # The families set aside, the offer, the plan's error and plan-only (with the verdict)
    # and the fix's verification (with its outcome) are recorded because the report reads
    # them; a transcript from before they were (the shipped ones) reads as having none.
    aside = verdict.get("not_applicable")
    state = DiagnosisState(
        target=str(header.get("target")),
        mode=verdict.get("mode") or "guided",
        baseline=verdict.get("baseline"),
        facts=facts,
        baseline_facts=baseline,
        diff=[DiffEntry.model_validate(e["entry"]) for e in events if e["type"] == "diff"],
        derived_diff=[
            DiffEntry.model_validate(e["entry"]) for e in events if e["type"] == "derived_diff"
        ],
        symptoms=[
            Symptom.model_validate(s)
            for e in events
            if e["type"] == "symptoms"
            for s in e["symptoms"]
        ],
        hypotheses=[
            Hypothesis.model_validate(e["hypothesis"]) for e in events if e["type"] == "hypothesis"
        ],
        verdict=verdict["verdict"],
        missing=verdict.get("missing") or [],
        plan=plan,
        approved=approval["approved"] if approval else None,
        approved_by=approval["by"] if approval else "",
        outcome=FixOutcome.model_validate(applied["outcome"]) if applied else None,
        verification=[
            ClaimVerdict.model_validate(v) for v in (applied or {}).get("verification") or []
        ],
        focus=verdict.get("focus") or [],
        examined=verdict.get("examined") or {},
        offered_for=verdict.get("offered_for") or {},
        offered=verdict.get("offered") or [],
        not_applicable=NotApplicable.model_validate(aside) if aside is not None else None,
        plan_error=verdict.get("plan_error"),
        plan_only=verdict.get("plan_only", False),
        refused=[flat_event(Refusal, e) for e in events if e["type"] == "refused"],
        answers=[flat_event(Answer, e) for e in events if e["type"] == "answer"],
        choices=[Choice.model_validate(e["choice"]) for e in events if e["type"] == "choice"],
    )
    return Recorded(header=header, state=state, ledger=ledger, seal=sealed.seal)
