# Shipped to targets running Python 3.8: zip(strict=) is 3.10+.
# ruff: noqa: B905
"""Tokens/s derived from a token count and seconds, for a log whose records state no
rate: the summarizer's fallback when no field holds the throughput.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .columns import Col, numbers
from .fields import CUMULATIVE_TOKENS

if TYPE_CHECKING:  # the summarizer calls this module: no import cycle at run time
    from .summarizer import Summarizer


def derive(
    s: Summarizer,
    recs: list[dict[str, Any]],
    lines: list[int | None],
    steps: Col,
    times: Col,
    groups: dict[str, list[int]] | None,
) -> Col | None:
    """Tokens/s from a token count and seconds, per series, when no field holds it:
    a running total over the time between records, or one step's tokens over its
    step time (else over the time since the record before, times the steps between)."""
    tokens = numbers(s.column("tokens", recs, lines, s.derive_offsets))
    s.derive_cols = None
    if tokens.vals.count(None) == len(recs):
        return None
    step_time = numbers(s.column("step_time", recs, lines, s.derive_offsets))
    clock = times
    clock_name = s.keys["time"]
    if not times.vals or times.vals.count(None) == len(recs):
        clock = numbers(s.column("elapsed", recs, lines, s.derive_offsets))
        clock_name = s.keys["elapsed"]
    name = s.keys["tokens"] or ""
    s.derive_cols = (tokens.vals, clock.vals)
    s.derive_names = (name, clock_name)
    if s.cumulative is None:
        if name in CUMULATIVE_TOKENS:
            s.cumulative = True
        else:
            seen = [v for v in tokens.vals if v is not None][:8]
            # A count that grows at every record is a running total; a per-step
            # count repeats or wanders.
            s.cumulative = len(seen) >= 3 and all(b > a for a, b in zip(seen, seen[1:]))  # noqa: RUF007 (3.8)
    label_of: list[str] = [""] * len(recs)
    for g, idx in (groups or {}).items():
        for i in idx or range(len(recs)):
            label_of[i] = g
    out: list[float | None] = []
    prev = s.derive_prev
    for i in range(len(recs)):
        tok, t, st = tokens.vals[i], clock.vals[i], steps.vals[i]
        dt_step = step_time.vals[i]
        v: float | None = None
        if tok is None:
            out.append(None)
            continue
        before = prev.get(label_of[i])
        if not s.cumulative and dt_step:
            v = tok / dt_step
        elif t is not None and before is not None and t > before[1]:
            if s.cumulative:
                v = (tok - before[0]) / (t - before[1]) if tok >= before[0] else None
            else:
                span = st - before[2] if st is not None and before[2] is not None else 1
                v = tok * max(1.0, span) / (t - before[1])
        if t is not None:
            prev[label_of[i]] = (tok, t, st)
        out.append(v)
    if s.derived is None and any(v is not None for v in out):
        over = s.keys["step_time"] if not s.cumulative and s.keys["step_time"] else None
        s.derived = {
            "tokens": name,
            "tokens_kind": "running total" if s.cumulative else "per step",
            "seconds": over or clock_name,
            "how": (
                f"{name} / {over}"
                if over
                else f"difference of {name} over difference of {clock_name}"
                if s.cumulative
                else f"{name} x steps between records / difference of {clock_name}"
            ),
        }
    return Col(out, False)
