"""Script changed: a training script's md5 differs from the baseline's."""

from __future__ import annotations

from agent.model.claims import Claim, Differs
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence


class ScriptChanged:
    kind: Kind = "script_changed"
    needs = frozenset({"checksums"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        compared = [d for d in evidence.diff if d.key.startswith("md5:")]
        if not compared:
            return []
        differing = [d for d in compared if d.differs]
        chosen = differing or compared
        return [
            Hypothesis(
                kind="script_changed",
                claims=tuple(Claim(predicate=Differs(a=d.current, b=d.baseline)) for d in chosen),
                weight=max(1, len(differing)),
            )
        ]
