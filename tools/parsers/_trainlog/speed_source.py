# Shipped to targets running Python 3.8: zip(strict=) is 3.10+.
# ruff: noqa: B905
"""Which figure of a log is its speed (the source ``speed.Speed`` reads), and each batch
of records as the speed's points from that source.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .columns import Col, numbers
from .fields import find_alias, other_rate
from .speed import AVERAGE_FIELDS, AVERAGE_UNITS, Batch

if TYPE_CHECKING:  # the summarizer calls this module: no import cycle at run time
    from .summarizer import Summarizer


def average_field(recs: list[dict[str, Any]]) -> str | None:
    """The first of ``AVERAGE_FIELDS`` the batch's records hold."""
    for name, _ in AVERAGE_FIELDS:
        if any(name in d for d in recs):
            return name
    return None


def choose_source(
    s: Summarizer,
    recs: list[dict[str, Any]],
    lines: list[int | None],
    steps: Col,
    toks: Col,
    times: Col,
) -> bool:
    """Set the speed's source from the first batch that has one, the trainer's own
    figure first: a stated tokens/s, a stated average since the segment began with its
    seconds, a rate in another unit (samples/s, steps/s), a running token total over
    seconds, and last the steps over the records' clock. False when the batch has none."""
    sp = s.speed
    average = average_field(recs)
    clock = times if any(v is not None for v in times.vals) else None
    if clock is None and (s.keys["elapsed"] is not None or find_alias("elapsed", recs[0])):
        clock = numbers(s.column("elapsed", recs, lines, None))
    if any(v is not None for v in toks.vals) and s.derived is None:
        field = s.keys["throughput"] or "throughput"
        sp.source("stated", field, "tokens/s", f"{field} as stated at each record")
    elif average is not None:
        sp.source(
            "stated_average",
            average,
            AVERAGE_UNITS[average],
            f"difference of {average} x {{elapsed}} over difference of {{elapsed}}",
        )
    elif s.cumulative and s.derive_cols is not None and s.derive_names:
        # A running total with its clock: a piece of one record (a forked read's)
        # derives no value yet, and is still the same source.
        name, clock_name = s.derive_names
        how = f"difference of {name} over difference of {clock_name}"
        sp.source("derived", name, "tokens/s", how)
    elif s.derived is not None:
        tokens, how = str(s.derived["tokens"]), str(s.derived["how"])
        sp.source("derived_values", tokens, "tokens/s", how)
    elif (other := next(filter(None, map(other_rate, recs[:64])), None)) is not None:
        s.rate_field = other[0]
        sp.source("stated", other[0], other[1], f"{other[0]} as stated at each record")
    elif (
        clock is not None
        and any(v is not None for v in clock.vals)
        and any(v is not None for v in steps.vals)
    ):
        # The last resort: steps over the records' own clock.
        step_name = s.keys["step"] or "step"
        clock_name = s.keys["time"] if clock is times else s.keys["elapsed"]
        s.steps_over = clock is times
        sp.source(
            "derived",
            step_name,
            "steps/s",
            f"difference of {step_name} over difference of {clock_name}",
        )
    else:
        return False
    return True


def speed_points(
    s: Summarizer,
    recs: list[dict[str, Any]],
    lines: list[int | None],
    steps: Col,
    toks: Col,
    times: Col,
) -> Batch | None:
    """The batch's records as the speed's points (``speed.Speed``), read from the
    source ``choose_source`` picks on the first batch that has one."""
    sp = s.speed
    if sp.kind is None and not choose_source(s, recs, lines, steps, toks, times):
        return None
    step_vals = steps.vals
    if sp.kind in ("stated", "derived_values"):
        vals = toks.vals
        if s.rate_field is not None:
            vals = numbers([d.get(s.rate_field) for d in recs]).vals
        return s.speed.run(lines, step_vals, vals, None, None, None)
    if sp.kind == "derived" and sp.unit == "steps/s":
        secs = times.vals if s.steps_over else numbers(s.column("elapsed", recs, lines, None)).vals
        sp.bounds.learn([], secs)
        return s.speed.run(lines, step_vals, None, step_vals, secs, None)
    if sp.kind == "stated_average":
        assert sp.field is not None
        rates = numbers([d.get(sp.field) for d in recs]).vals
        secs = numbers(s.column("elapsed", recs, lines, None)).vals
        elapsed = s.keys["elapsed"] or "elapsed"
        if "{elapsed}" in sp.how:
            sp.how = sp.how.replace("{elapsed}", elapsed)
        sp.bounds.learn(rates, secs)
        totals = [r * t if r is not None and t is not None else None for r, t in zip(rates, secs)]
        return s.speed.run(lines, step_vals, None, totals, secs, rates)
    if sp.kind == "derived" and s.derive_cols is not None:
        counts, seconds = s.derive_cols
        sp.bounds.learn([], seconds)
        return s.speed.run(lines, step_vals, None, counts, seconds, None)
    return None
