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
    # What ``gather_missing`` swept for the pass now running (known by the facts its
    # family nodes start from), per probe: a probe two families lack then runs once. A
    # skipped probe keeps its empty list, so it too is not asked for again.
    _pass: frozenset[str] = field(default=frozenset(), init=False, repr=False)
    _swept: dict[str, list[Fact]] = field(default_factory=dict, init=False, repr=False)

    def gather_missing(self, have: Sequence[str], needs: frozenset[str]) -> list[Fact]:
        """Facts for the probes in ``needs`` that no fact in ``have`` comes from yet.

        Family nodes run side by side, each from the pass's same ``have``, so none sees
        the facts another gathers: under the lock the probes swept for this ``have`` are
        remembered, and a family that needs one is handed its facts rather than sweeping
        it again. A pass that starts from other facts sweeps afresh."""
        with self._lock:
            if frozenset(have) != self._pass:
                self._pass, self._swept = frozenset(have), {}
            lacking = needs - {self.ledger.get(i).probe for i in have}
            swept = [f for p in sorted(lacking & self._swept.keys()) for f in self._swept[p]]
            missing = lacking - self._swept.keys()
            if not missing:
                return swept
            new = self.gather(frozenset(missing))
            for probe in missing:
                self._swept[probe] = []
            for fact in new:
                self._swept.setdefault(fact.probe, []).append(fact)
            return swept + new
