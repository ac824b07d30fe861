"""Environment drift: torch/triton/CUDA/Python/transformers, or torch's own files, differ
from the baseline (a snapshot, or what the last checkpoint recorded)."""

from __future__ import annotations

from agent.claims import Claim, Differs
from agent.comparables import ENVIRONMENT_KEYS
from agent.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence


class EnvironmentDrift:
    kind: Kind = "environment_drift"
    needs = frozenset({"pyenv", "torch_source", "integrity", "checkpoints"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        compared = [d for d in evidence.diff if d.key in ENVIRONMENT_KEYS]
        if not compared:
            return [
                Hypothesis(
                    kind="environment_drift",
                    claims=(),
                    predictions=(
                        Prediction(
                            expect="versions differ from a known good state",
                            probe="snapshot a baseline, or a checkpoint that records versions",
                        ),
                    ),
                )
            ]
        differing = [d for d in compared if d.differs]
        # Drift is "any of these differs": claim the ones that do; with none, claim them
        # all, so the refutation lists every version that was compared.
        chosen = differing or compared
        return [
            Hypothesis(
                kind="environment_drift",
                claims=tuple(Claim(predicate=Differs(a=d.current, b=d.baseline)) for d in chosen),
                weight=max(1, len(differing)),
                probes=("pyenv", "integrity"),
            )
        ]
