"""Checkpoint / log integrity: truncated or unreadable checkpoint files, missing step
directories, a train log whose last line was cut."""

from __future__ import annotations

from agent.model.claims import AtLeast, Claim, Equal
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, ref
from tools.parsers import trainlog_paths as log_paths


class CheckpointIntegrity:
    kind: Kind = "checkpoint_integrity"
    needs = frozenset({"checkpoints", "trainlog"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        ckpt = evidence.latest("checkpoints")
        if ckpt is None or not ckpt.ok:
            return []
        out = [
            Hypothesis(
                kind="checkpoint_integrity",
                claims=(
                    Claim(
                        predicate=AtLeast(
                            a=ref(ckpt, "problems", label="checkpoint files with problems"), value=1
                        )
                    ),
                ),
                weight=2,
            )
        ]
        if evidence.value("trainlog", *log_paths.CUT_LAST_LINE) is True:
            log = evidence.latest("trainlog")
            assert log is not None
            out.append(
                Hypothesis(
                    kind="checkpoint_integrity",
                    claims=(
                        Claim(
                            predicate=Equal(
                                a=ref(log, "cut_last_line", label="train log's last line cut"),
                                value=True,
                            )
                        ),
                    ),
                )
            )
        return out
