"""Dataset shape churn: the dataset grew since the baseline, so the workers meet new
sequence lengths and compile new shapes mid-run (recompiles, and the window in which the
FX race can strike)."""

from __future__ import annotations

from agent.claims import Claim, Differs, Greater
from agent.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref


class DatasetShapeChurn:
    kind: Kind = "dataset_shape_churn"
    needs = frozenset({"dataset", "checkpoints"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        sizes = [d for d in evidence.diff if d.key.startswith("dataset.lines:")]
        if not sizes:
            return []
        grown = [d for d in sizes if d.differs]
        chosen = grown or sizes
        claims = [Claim(predicate=Greater(a=d.current, b=d.baseline)) for d in chosen]
        lengths_then = evidence.value("checkpoints", "steps", 0, "metadata", "dataset", "lengths")
        lengths_now = evidence.value("checkpoints", "steps", -1, "metadata", "dataset", "lengths")
        ckpt = evidence.latest("checkpoints")
        if ckpt is not None and lengths_then is not None and lengths_now is not None:
            claims.append(
                Claim(
                    predicate=Differs(
                        a=ref(
                            ckpt,
                            "steps",
                            -1,
                            "metadata",
                            "dataset",
                            "lengths",
                            label="sequence lengths (latest checkpoint)",
                        ),
                        b=ref(
                            ckpt,
                            "steps",
                            0,
                            "metadata",
                            "dataset",
                            "lengths",
                            label="sequence lengths (first checkpoint)",
                        ),
                    )
                )
            )
        return [
            Hypothesis(
                kind="dataset_shape_churn",
                claims=tuple(claims),
                predictions=(
                    Prediction(
                        expect="dynamo recompiles for the new lengths",
                        probe="stdoutlog with TORCH_LOGS=recompiles",
                    ),
                ),
                probes=("dataset", "checkpoints"),
                unlocks=("lock-warmup",),
            )
        ]
