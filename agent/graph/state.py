"""The diagnosis graph's state. Pydantic, so defaults apply and every field is typed;
only JSON-able values and our own frozen models live here, because the SQLite
checkpointer stores the state after every node (that is what makes ``resume`` work)."""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agent.analysis.baseline import DiffEntry
from agent.analysis.symptoms import Symptom
from agent.graph.applicability import NotApplicable
from agent.model.claims import ClaimVerdict
from agent.model.hypotheses import Hypothesis, Kind
from playbooks.base import FixOutcome, FixPlan

__all__ = [
    "Answer",
    "Choice",
    "DiagnosisState",
    "FixOutcome",
    "FixPlan",
    "Mode",
    "Refusal",
    "Verdict",
]
T = TypeVar("T")


def _union(left: list[str], right: list[str]) -> list[str]:
    """Fact ids gathered by nodes that ran side by side, without duplicates, in order."""
    return left + [r for r in right if r not in left]


def _round(left: list[T], right: list[T] | None) -> list[T]:
    """Appends what nodes running side by side add; ``None`` starts a new round (a guided
    session re-runs the families after more probes, and only the new proposals count)."""
    return [] if right is None else left + right


def _merge(left: dict[str, list[str]], right: dict[str, list[str]]) -> dict[str, list[str]]:
    return {**left, **right}


class Choice(BaseModel):
    """The engineer's answer at the guided menu."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["test", "probe", "fix", "stop"]
    kind: Kind | None = None
    """``test``: the family to test (None: all of them again)."""
    probes: list[str] = Field(default_factory=list)
    """``probe``: which probes to run again, for fresh facts."""
    playbook: str | None = None
    """``fix``: which offered playbook to plan."""


class Refusal(BaseModel):
    """Part of a proposer's answer that could not be read as a hypothesis, and why."""

    model_config = ConfigDict(extra="forbid")

    source: str
    reason: str


class Answer(BaseModel):
    """A proposer's raw answer, kept so that the transcript (and a replay) has it."""

    model_config = ConfigDict(extra="forbid")

    source: str
    text: str | None


Mode = Literal["guided", "demo", "health", "replay"]


# The diagnosis's verdict (a claim's is agent.model.claims.ClaimVerdict).
Verdict = Literal["fault_found", "no_fault_found", "insufficient_evidence", "unexplained_symptom"]


class DiagnosisState(BaseModel):
    model_config = ConfigDict(extra="forbid")
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
    derived_diff: list[DiffEntry] = Field(default_factory=list)
    """With a snapshot, the run's own record as a second baseline (checkpoints written
    before the drop, the log's early windows): shown beside the snapshot's diff, since
    the snapshot may be older than the state in which the run last worked."""
    symptoms: list[Symptom] = Field(default_factory=list)
    """What the run did over time (``agent.analysis.symptoms``), checked before any family runs;
    after verification, each verified drop names the families that explain it."""
    proposed: Annotated[list[Hypothesis], _round] = Field(default_factory=list)
    """What the family nodes (and any proposer) proposed this round, before verification."""
    refused: Annotated[list[Refusal], _round] = Field(default_factory=list)
    answers: Annotated[list[Answer], operator.add] = Field(default_factory=list)
    """Every proposer answer of every round, in order (a replay feeds them back)."""
    examined: Annotated[dict[str, list[str]], _merge] = Field(default_factory=dict)
    """Per family: the facts its rule looked at, so "no fault found" says what was checked."""
    focus: list[Kind] = Field(default_factory=list)
    """The families the engineer asked about (``--hypothesis``); empty: all of them."""
    interactive: bool = False
    """A human is at a terminal: after the verdict, show the menu (an interrupt)."""
    choices: Annotated[list[Choice], operator.add] = Field(default_factory=list)
    """Every answer given at the menu, in order (a replay feeds them back)."""
    rounds: int = 1
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    """Verified-status, ranked."""
    not_applicable: NotApplicable | None = None
    """Families whose precondition the run does not meet (it never compiles), set aside
    from ``hypotheses`` with the checked claims that say so (``agent.graph.applicability``)."""
    verdict: Verdict | None = None
    missing: list[str] = Field(default_factory=list)
    """Probes a hypothesis needed whose facts could not be gathered."""
    offered: list[str] = Field(default_factory=list)
    offered_for: dict[str, list[str]] = Field(default_factory=dict)
    """Per verified kind, the playbooks whose own ``requires`` name it: the one source
    of what a hypothesis unlocks."""
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

    @property
    def choice(self) -> Choice | None:
        """The latest answer at the menu."""
        return self.choices[-1] if self.choices else None

    def fact_ids(self) -> list[tuple[str, bool]]:
        """Each fact of the session once (a baseline fact equal to a current one has its
        id), with whether it is the baseline's alone: what a report lists and a
        transcript records."""
        ids = dict.fromkeys([*self.facts, *self.baseline_facts])
        return [(i, i in self.baseline_facts and i not in self.facts) for i in ids]
