"""A summarizer's state as the summary: the schema read (which field is what, and why),
per-series and overall statistics, the early baseline, aggregates over series, time
gaps, damage.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import Any

from . import values
from .fields import FIELD_ALIASES, GROUP_ALIASES, UNIT_SCALE
from .stats import median
from .steps import merge_steps
from .summarizer import Summarizer
from .values import clip_record


def schema(summ: Summarizer) -> dict[str, Any]:
    """Which field plays which role, and why: part of the fact, so a report can say
    what was read and a profile can correct it."""
    why: dict[str, str] = {}
    for role, key in summ.keys.items():
        if role in summ.fixed:
            why[role] = "named by the profile"
        elif key is not None:
            why[role] = (
                f"common name {key!r}"
                if key in FIELD_ALIASES[role]
                else f"{key!r} ends in a common name"
            )
    if summ.derived is not None:
        why["throughput"] = "derived: " + str(summ.derived["how"])
    elif summ.keys["throughput"] is None:
        why["throughput"] = (
            "no field with a common throughput name, and no token count with"
            " seconds to derive it from"
        )
    if summ.group_keys:
        why["group"] = (
            "named by the profile"
            if summ.fixed_groups
            else "fields of " + ", ".join(GROUP_ALIASES) + " in the first record"
        )
    used = {k for k in summ.keys.values() if k} | set(summ.group_keys or ())
    if summ.speed.field:
        used.add(summ.speed.field)
        why["speed"] = f"{summ.speed.kind}: {summ.speed.how}"
    unit = next((u for u, sc in UNIT_SCALE.items() if sc == summ.scale), f"x{summ.scale} tok/s")
    return {
        "format": summ.fmt,
        "step": summ.keys["step"],
        "loss": summ.keys["loss"],
        "throughput": summ.keys["throughput"] if summ.derived is None else "derived",
        "throughput_unit": unit,
        "time": summ.keys["time"],
        "elapsed": summ.keys["elapsed"],
        "tokens": summ.keys["tokens"],
        "derived": summ.derived,
        "group": list(summ.group_keys or ()),
        "ignored": sorted(k for k in summ.keys_seen if k not in used)[:32],
        "shapes": dict(sorted(summ.shapes.items())),
        "why": why,
    }


def result(summ: Summarizer) -> dict[str, Any]:
    summ.close_window()
    overall = summ.all.summary()
    groups = {g: grp.summary() for g, grp in sorted(summ.groups.items())}
    if groups:
        # Steps only make sense per series; the overall view is their union.
        overall["steps"] = merge_steps([grp["steps"] for grp in groups.values()])
    tok = overall["throughput"]
    tok["unit"] = "tok/s"
    tok["nonfinite"] = summ.nonfinite["throughput"]
    early = early_windows(summ.windows)
    tok["early_median"] = median(
        [w["tok_s_median"] for w in early if w["tok_s_median"] is not None]
    )
    for g, part in groups.items():
        part["throughput"]["early_median"] = median(
            [
                v
                for w in early
                for v in [(w.get("tok_s_median_by_group") or {}).get(g)]
                if v is not None
            ]
        )
    return {
        "format": summ.fmt,
        "schema": schema(summ),
        "other_lines": summ.other_lines,
        "other_samples": summ.other_samples,
        "early_window": {
            "windows": len(early),
            "first_step": early[0]["first_step"] if early else None,
            "last_step": early[-1]["last_step"] if early else None,
            "why": EARLY_WHY,
        },
        "aggregates": aggregates(groups, tok, list(summ.group_keys or ())),
        "records": summ.records,
        "blank_lines": summ.blank,
        **damage(summ),
        "fields": dict(summ.keys),
        "group_fields": list(summ.group_keys or ()),
        "throughput_scale": summ.scale,
        "keys_seen": sorted(summ.keys_seen),
        "schema_changes": summ.schema_changes,
        "steps": overall["steps"],
        "throughput": tok,
        "loss": dict(
            overall["loss"],
            nonfinite=summ.nonfinite["loss"],
            first_nonfinite=summ.loss_first_nonfinite,
        ),
        "grad_norm": {
            "field": summ.keys.get("grad_norm"),
            "first_nonfinite": summ.grad_first_nonfinite,
        },
        "groups": groups,
        "time": clock(summ),
        "window_records": summ.window_size,
        "decoder": values.DECODER,
        "windows": summ.windows,
        "speed": summ.speed.summary(early),
        "last_records": [clip_record(d) for d in summ.last_records],
    }


def clock(summ: Summarizer) -> dict[str, Any]:
    """The records' timestamps: their span, the median interval, and the gaps far
    longer than it (ten times it, and at least 120 s)."""
    median_dt = summ.intervals.summary().get("median")
    threshold = max(120.0, 10.0 * median_dt) if median_dt is not None else 120.0
    return {
        "count": summ.t_count,
        "unparsed": summ.t_unparsed,
        "first": summ.t_first,
        "last": summ.t_last,
        "span_s": (summ.t_last - summ.t_first)
        if summ.t_first is not None and summ.t_last is not None
        else None,
        "median_interval_s": median_dt,
        "backwards": summ.t_backwards,
        "gap_threshold_s": threshold,
        "gaps": [g for g in summ.gaps.items() if g["seconds"] > threshold],
    }


def damage(summ: Summarizer) -> dict[str, Any]:
    """The lines that held no readable record and the numbers nobody can compute with,
    counted by why, with samples."""
    return {
        "malformed": sum(summ.malformed.values()),
        "malformed_by_reason": dict(sorted(summ.malformed.items())),
        "malformed_samples": summ.malformed_samples,
        "unusable_numbers": {
            "count": sum(summ.unusable_count.values()),
            "by_field": dict(sorted(summ.unusable_count.items())),
            "samples": sorted(
                summ.unusable_samples,
                key=lambda d: (d["line"] is None, d["line"] or 0, d["offset"] or 0),
            ),
        },
    }


# The log's own baseline when nothing else records one: the run's early steady state.
# The first window is left out (compilation and warm-up make it slow, and a baseline
# that low would hide any slowdown); the next quarter of the windows is the baseline.
EARLY_WHY = "windows 2 to 1+n/4 of the log's n windows (the first is warm-up)"


def early_windows(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return windows[1 : 1 + max(1, len(windows) // 4)]


def aggregates(
    groups: dict[str, dict[str, Any]], tok: dict[str, Any], keys: list[str]
) -> dict[str, dict[str, Any]]:
    """Throughput over several series: all of them, and each ``field=value`` the log's
    groups share (``role=drafter`` over three drafter devices). Per-series throughput
    adds up (devices work side by side), so an aggregate is the sum of its series'
    medians; a log of one series has the median over its records."""
    if not groups:
        return {
            "all": {
                "how": "median over the log's records (one series)",
                "groups": [],
                "recent_median": tok.get("recent_median"),
                "median": tok.get("median"),
                "early_median": tok.get("early_median"),
            }
        }
    subsets: dict[str, list[str]] = {"all": sorted(groups)}
    for k in keys:
        by_value: dict[str, list[str]] = {}
        for g in sorted(groups):
            for part in g.split(","):
                if part.partition("=")[0] == k:
                    by_value.setdefault(part, []).append(g)
        for label, members in by_value.items():
            if len(members) > 1:  # every group may share it (all drafters): named still
                subsets[label] = members
    out: dict[str, dict[str, Any]] = {}
    for label, members in subsets.items():
        entry: dict[str, Any] = {
            "how": "sum of the per-group medians",
            "groups": members,
        }
        for stat in ("recent_median", "median", "early_median"):
            vals = [groups[g]["throughput"].get(stat) for g in members]
            nums = [v for v in vals if isinstance(v, (int, float))]
            entry[stat] = sum(nums) if nums else None
            entry[stat + "_groups"] = len(nums)
        out[label] = entry
    return out
