"""What a rule is: one failure family, the facts it needs, and how it turns them into
hypotheses made of claims. Rules never gather anything themselves; the graph gathers
what ``needs`` names before the rule may run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.analysis.baseline import DiffEntry
from agent.model.claims import MISSING, Claim, Equal, Ref, resolve
from agent.model.facts import Fact, Ledger, latest
from agent.model.hypotheses import Hypothesis, Kind


@dataclass
class Evidence:
    """A rule's read-only view: the session's facts, newest per probe, and the diff."""

    ledger: Ledger
    fact_ids: Sequence[str]
    diff: Sequence[DiffEntry] = field(default_factory=list)

    def latest(self, probe: str) -> Fact | None:
        """The newest ``probe`` fact, failed included (``agent.model.facts.latest``'s rule)."""
        return latest(self.ledger, self.fact_ids, probe)

    def value(self, probe: str, *path: str | int) -> object:
        """The value at ``path`` in the newest ``probe`` fact; None when absent or failed."""
        fact = self.latest(probe)
        if fact is None or not fact.ok:
            return None
        value = resolve(fact, path)
        return None if value is MISSING else value

    def differing(self, *keys: str) -> list[DiffEntry]:
        return [d for d in self.diff if d.differs and (not keys or d.key in keys)]


def ref(fact: Fact, *path: str | int, label: str = "") -> Ref:
    return Ref(fact=fact.id, path=path, label=label)


def trace_words(file: dict[str, Any]) -> str:
    """Whose structured trace a TORCH_TRACE file is, in a claim's words: a job's ranks
    each write their own, so a claim on one names its rank where the file name holds it."""
    rank = file.get("rank")
    if isinstance(rank, int) and not isinstance(rank, bool):
        return f"rank {rank}'s structured trace (torch)"
    return "torch's structured trace"


def has(fact: Fact | None, *path: str | int) -> bool:
    """Whether ``fact`` holds a value at ``path`` (a claim about it can be checked)."""
    return fact is not None and fact.ok and resolve(fact, path) is not MISSING


class Rule(Protocol):
    kind: Kind
    needs: frozenset[str]

    def propose(self, evidence: Evidence) -> list[Hypothesis]: ...


def binds_check_at_wrap(source: Fact) -> Claim:
    """The torch-source fact says compiled wrappers bind the FX check when they are
    created: why a process-global flag trips another thread's call, and why a later patch
    of the check does not reach them (the FX race and the monkeypatch both rest on it)."""
    label = "compiled wrappers bind the FX check at creation"
    return Claim(
        predicate=Equal(a=ref(source, "binds_check_at_wrap", "value", label=label), value=True)
    )
