"""The numbers a ``WindowRatio`` claim is checked on: a series read across a train log's
window summaries, one per window that holds it (devices side by side summed). The report's
plot and the loss's symptoms read the same numbers from here."""

from __future__ import annotations

from collections.abc import Sequence

from agent.model.facts import PathPart
from tools.figures import finite_number


def window_series(
    windows: object, series: Sequence[Sequence[PathPart]]
) -> list[tuple[int, float, float | None, float | None]]:
    """(index, value, first step, last step) of each window that has a value for
    ``series``. One path: the window's number there. Several (devices side by side):
    their sum, each path at its latest number so far, since a window of interleaved
    records need not hold every device; a window counts once every path has had a
    number and it holds one of its own."""
    out: list[tuple[int, float, float | None, float | None]] = []
    latest: dict[int, float] = {}
    for i, window in enumerate(windows if isinstance(windows, list) else []):
        if not isinstance(window, dict):
            continue
        fresh = False
        for p, path in enumerate(series):
            n = finite_number(_at(window, path))
            if n is not None and n > 0:
                latest[p] = n
                fresh = True
        if fresh and len(latest) == len(series):
            out.append(
                (
                    i,
                    sum(latest.values()),
                    finite_number(window.get("first_step")),
                    finite_number(window.get("last_step")),
                )
            )
    return out


def window_values(
    windows: object, series: Sequence[Sequence[PathPart]], span: tuple[int, int]
) -> tuple[list[float], tuple[float | None, float | None]]:
    """The numbers ``WindowRatio`` takes its median of, one per window ``span[0]`` to
    ``span[1]`` (inclusive) that has one, and the first and last step they cover."""
    picked = [w for w in window_series(windows, series) if span[0] <= w[0] <= span[1]]
    steps = [n for w in picked for n in w[2:] if n is not None]
    return [w[1] for w in picked], ((min(steps), max(steps)) if steps else (None, None))


def _at(value: object, path: Sequence[PathPart]) -> object:
    for part in path:
        if isinstance(value, dict) and isinstance(part, str):
            value = value.get(part)
        elif isinstance(value, list) and isinstance(part, int) and -len(value) <= part < len(value):
            value = value[part]
        else:
            return None
    return value
