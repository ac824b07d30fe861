"""What the summarizer keeps per series (``Group``), and where a column's numbers first
stopped being finite (a broken loss or gradient).

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from .columns import Col
from .speed import RECENT_MAX, RECENT_MIN, RECENT_SHARE
from .stats import Sample, median
from .steps import Steps


def first_nonfinite(col: Col, steps: Col, lines: list[int | None]) -> dict[str, Any] | None:
    """The first record of ``col`` whose number is NaN or infinite: where a run's loss
    (or gradient) broke; None when all are finite (a finite sum proves it at C speed)."""
    present = col.present()[0]
    if not present or math.isfinite(sum(present)):
        return None
    for k, v in enumerate(col.vals):
        if v is not None and not math.isfinite(v):
            return {
                "line": lines[k],
                "step": steps.vals[k],
                "value": repr(v),  # JSON holds no NaN: the text Python writes
            }
    return None


class Group:
    """Everything kept per series (per device/role when the log has several)."""

    def __init__(self, max_values: int) -> None:
        self.records = 0
        self.steps = Steps()
        self.tok = Sample(max_values)
        self.recent_tok: deque[float] = deque(maxlen=RECENT_MAX)
        self.loss = Sample(max_values)

    def absorb(self, other: Group, continuous: bool) -> None:
        self.records += other.records
        self.steps.absorb(other.steps, continuous)
        self.tok.absorb(other.tok)
        self.loss.absorb(other.loss)
        self.recent_tok.extend(other.recent_tok)

    def summary(self) -> dict[str, Any]:
        tok = self.tok.summary()
        # "Recent" is a stated window: the last quarter of the series' values, at least
        # RECENT_MIN and at most RECENT_MAX of them (a short log's "recent" is not all of it).
        k = max(RECENT_MIN, min(RECENT_MAX, self.tok.count // RECENT_SHARE))
        recent = list(self.recent_tok)[-k:]
        tok["recent_median"] = median(recent)
        tok["recent_records"] = len(recent)
        tok["recent_how"] = (
            f"median of the last {len(recent)} values (a quarter of the {self.tok.count},"
            f" at least {RECENT_MIN}, at most {RECENT_MAX})"
        )
        return {
            "records": self.records,
            "steps": self.steps.summary(),
            "throughput": tok,
            "loss": self.loss.summary(),
        }
