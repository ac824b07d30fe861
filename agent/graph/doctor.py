"""The graph's collaborators: ``Doctor`` holds everything the nodes need from outside
(the ledger, the gatherer, the rules, the fixes it may offer, who approves), injected as
LangGraph's runtime context, so that nothing is built at import and every test can hand
in real parts of its own choosing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from agent.analysis.baseline import Baselines, Comparable
from agent.graph.state import FixOutcome, FixPlan
from agent.model.facts import Fact, Ledger
from agent.rules.base import Evidence, Rule

if TYPE_CHECKING:
    from agent.graph.proposer import Proposed


class Gatherer(Protocol):
    """Runs probes on the target and returns their facts, already in the ledger."""

    def __call__(self, only: frozenset[str] | None) -> list[Fact]: ...


class Fixer(Protocol):
    """A fix as the graph offers it: planned from the evidence, applied after approval
    (``agent.graph.playbook_adapter`` makes one of each ``playbooks`` playbook)."""

    name: str
    requires: frozenset[str]

    def plan(self, evidence: Evidence) -> FixPlan: ...

    def apply(self, plan: FixPlan, evidence: Evidence) -> FixOutcome: ...


class Proposer(Protocol):
    """Anything besides the rules that proposes hypotheses (an LLM: ``agent.graph.proposer``)."""

    name: str

    def propose(self, evidence: Evidence) -> Proposed: ...


Approver = Callable[[FixPlan], tuple[bool, str]] | Literal["human", "never"]


@dataclass
class Doctor:
    """Everything the graph needs from outside, passed in; nothing is built at import."""

    ledger: Ledger
    gather: Gatherer
    rules: Sequence[Rule]
    comparables: Callable[[Ledger, Sequence[str], float | None], Sequence[Comparable]] = (
        lambda _l, _i, _b: ()
    )
    baselines: Baselines | None = None
    playbooks: Mapping[str, Fixer] = field(default_factory=dict)
    approver: Approver = "never"
    sanitize: Callable[[Fact], Fact] | None = None
    proposers: Sequence[Proposer] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def gather_missing(self, have: Sequence[str], needs: frozenset[str]) -> list[Fact]:
        """Facts for the probes in ``needs`` that no fact in ``have`` comes from yet.
        Family nodes run side by side; the lock keeps them from sweeping twice."""
        with self._lock:
            probes = {self.ledger.get(i).probe for i in have}
            missing = needs - probes
            return self.gather(frozenset(missing)) if missing else []
