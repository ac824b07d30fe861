"""The diagnosis graph's state. Pydantic, so defaults apply and every field is typed;
only JSON-able values and our own frozen models live here, because the SQLite
checkpointer stores the state after every node (that is what makes ``resume`` work)."""

from __future__ import annotations

import operator
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agent.baseline import DiffEntry
from agent.claims import Verdict as ClaimVerdict
from agent.hypotheses import Hypothesis
from playbooks.base import FixOutcome, FixPlan


def _union(left: list[str], right: list[str]) -> list[str]:
    """Fact ids gathered by nodes that ran side by side, without duplicates, in order."""
    return left + [r for r in right if r not in left]


Mode = Literal["guided", "demo", "health", "replay"]

__all__ = ["DiagnosisState", "FixOutcome", "FixPlan", "Mode", "Verdict"]
Verdict = Literal["fault_found", "no_fault_found", "insufficient_evidence"]


class DiagnosisState(BaseModel):
    target: str
    """The target URI (or profile name) the session runs against."""
    mode: Mode = "guided"
    baseline: str | None = None
    """Name of a stored baseline snapshot; None derives one from the workspace."""
    facts: Annotated[list[str], _union] = Field(default_factory=list)
    """Ids of every fact this session gathered, in the ledger."""
    baseline_facts: list[str] = Field(default_factory=list)
    """Ids of the baseline snapshot's facts, imported into the ledger; kept apart from
    ``facts`` so that rules never mistake the known good state for the present one."""
    diff: list[DiffEntry] = Field(default_factory=list)
    """Fact-by-fact differences between the baseline and now."""
    proposed: Annotated[list[Hypothesis], operator.add] = Field(default_factory=list)
    """What the family nodes proposed, before verification."""
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    """Verified-status, ranked."""
    verdict: Verdict | None = None
    missing: list[str] = Field(default_factory=list)
    """Probes a hypothesis needed whose facts could not be gathered."""
    offered: list[str] = Field(default_factory=list)
    plan: FixPlan | None = None
    approved: bool | None = None
    approved_by: str = ""
    outcome: FixOutcome | None = None
    plan_error: str | None = None
    """Why the offered fix could not be planned (the diagnosis stands without it)."""
    plan_only: bool = False
    """Stop after the plan: show what would change, write nothing."""
    verification: list[ClaimVerdict] = Field(default_factory=list)
    """The fix's verification, as claims checked on the facts observed after it."""
