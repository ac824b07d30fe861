"""How a fix's restarted run is measured: the tokens/s its new train-log records show,
judged against the baseline's (``Transaction``'s verification). ``agent.graph.fix_site``
picks the measure for the series the diagnosis judged; without one, the overall median.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# What the restarted run's train-log records are judged by: given the new window's
# summary (``tools.parsers.trainlog.summarize_log``), the tokens/s of the series the baseline
# is for, and how many records that series has in the window.
Measure = Callable[[dict[str, Any]], tuple[float | None, int]]


def overall_median(summary: dict[str, Any]) -> tuple[float | None, int]:
    """The window's median tokens/s over all its records (no subject known)."""
    value = (summary.get("throughput") or {}).get("median")
    records = summary.get("records")
    return (
        float(value) if isinstance(value, int | float) else None,
        records if isinstance(records, int) else 0,
    )
