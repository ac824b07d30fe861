"""Dataset shape churn: the dataset grew since the baseline, so the workers meet new
sequence lengths and compile new shapes mid-run (recompiles, and the window in which the
FX race can strike)."""

from __future__ import annotations

from agent.claims import Claim, Greater, Ref
from agent.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence


class DatasetShapeChurn:
    kind: Kind = "dataset_shape_churn"
    needs = frozenset({"dataset"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        sizes = [d for d in evidence.diff if d.key.startswith("dataset.lines:")]
        if not sizes:
            return []
        out = []
        for size in sizes:
            path = size.key.split(":", 1)[1]
            longest = next((d for d in evidence.diff if d.key == f"dataset.longest:{path}"), None)
            # More prompts, and longer ones than the longest the baseline had: the
            # workers will meet sequence lengths they never compiled.
            claims = [Claim(predicate=Greater(a=size.current, b=size.baseline))]
            if longest is not None:
                claims.append(Claim(predicate=Greater(a=longest.current, b=longest.baseline)))
            else:
                # More prompts alone are no new shapes: the longest prompt then must be
                # compared too, and where the baseline never recorded it the claim stays
                # open (unverifiable) rather than the churn being taken as shown.
                claims.append(
                    Claim(
                        predicate=Greater(
                            a=Ref(
                                fact=size.current.fact,
                                path=("files", f"@path={path}", "line_bytes", "max"),
                                label=f"longest prompt line in {path} (bytes, now)",
                            ),
                            b=Ref(
                                fact=size.baseline.fact,
                                path=(*size.baseline.path[:-1], "dataset_longest"),
                                label=f"longest prompt line in {path} (bytes, baseline)",
                            ),
                        )
                    )
                )
            out.append(
                Hypothesis(
                    kind="dataset_shape_churn",
                    claims=tuple(claims),
                    predictions=(
                        Prediction(
                            expect="dynamo recompiles for the new lengths",
                            probe="stdoutlog with TORCH_LOGS=recompiles",
                        ),
                    ),
                    unlocks=("lock-warmup", "recompile-limit"),
                )
            )
        return out
