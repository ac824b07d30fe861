# Shipped to targets running Python 3.8: zip(strict=) is 3.10+.
# ruff: noqa: B905
"""The summarizer: blocks of records accumulated column by column into per-series
steps, throughput and loss, time gaps, windows and damage counts, in bounded memory.
``records`` turns lines into the records it takes, ``result`` turns it into the
summary, ``forked`` merges the summarizers of pieces read side by side; ``derive`` and
``speed_source`` find the throughput and the speed where the records state neither.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from operator import itemgetter
from typing import Any

from .columns import Col, differences, drop_nonfinite, largest, numbers, picker
from .derive import derive
from .fields import (
    FIELD_ALIASES,
    GROUP_ALIASES,
    MAX_GROUPS,
    find_alias,
    lookup,
    scale_of,
)
from .group import Group, first_nonfinite
from .speed import RECENT_MAX, Speed, WindowSpeed
from .speed_source import average_field, speed_points
from .stats import Sample, Top, Window
from .values import (
    INT_FLOAT,
    NONFINITE_COUNTED,
    NUMERIC,
    SAMPLE_BYTES,
    SAMPLES,
    LongInt,
    key_text,
    label_value,
    to_time,
    why_unusable,
)


def _hashable(v: Any) -> Any:
    """``v`` where it can key a dict, else its JSON text (a list or object)."""
    try:
        hash(v)
    except TypeError:
        return key_text(v)
    return v


class Summarizer:
    """Accumulates blocks of records column by column: list comprehensions and builtins
    (``min``, ``sum``, ``map(sub)``) do the per-record work at C speed, and Python-level
    loops run only where something is off (a restart, a gap, a missing field)."""

    def __init__(
        self,
        fields: dict[str, Any],
        scale: float | None,
        window: int,
        max_values: int,
        fmt: str = "jsonl",
        header: list[str] | None = None,
    ) -> None:
        self.fmt = fmt
        self.header = header
        self.header_raw = ",".join(header) if header else None
        self.other_lines = 0  # text lines that hold no record (progress bars, warnings…)
        self.other_samples: list[dict[str, Any]] = []
        self.shapes: dict[str, int] = {}  # text records by the shape of their line
        self.derived: dict[str, Any] | None = None  # what throughput was derived from
        self.derive_prev: dict[str, tuple[float, float, float | None]] = {}
        self.derive_offsets: list[int] | None = None
        self.cumulative: bool | None = None
        group = fields.get("group")
        self.fixed_groups = group is not None
        self.group_keys: tuple[str, ...] | None = (
            None if group is None else tuple([group] if isinstance(group, str) else group)
        )
        self.fixed = {k: v for k, v in fields.items() if k in FIELD_ALIASES and v}
        self.keys: dict[str, str | None] = {k: self.fixed.get(k) for k in FIELD_ALIASES}
        # Each role's first name and its line: where a forked piece begins, so the merge
        # can tell a rename at the seam from one inside the piece.
        self.first_keys: dict[str, tuple[str, int | None]] = {}
        self.fixed_scale = scale
        self.scale = scale if scale is not None else 1.0
        self.window_size = window
        self.max_values = max_values
        self.records = 0
        self.blank = 0
        self.malformed: dict[str, int] = {}
        self.malformed_samples: list[dict[str, Any]] = []
        self.unusable_count: dict[str, int] = {}  # numbers nobody can compute with, by role
        self.unusable_samples: list[dict[str, Any]] = []
        self.keys_seen: dict[str, int] = {}
        self.schema_changes: list[dict[str, Any]] = []
        self.alias_cache: dict[tuple[str, tuple[str, ...]], str | None] = {}
        self.all = Group(max_values)
        self.groups: dict[str, Group] = {}
        self.labels: dict[Any, str] = {}
        self.nonfinite = {"throughput": 0, "loss": 0}
        # The first record whose loss is NaN or infinite: where a run's loss broke.
        self.loss_first_nonfinite: dict[str, Any] | None = None
        self.grad_first_nonfinite: dict[str, Any] | None = None
        self.t_first: float | None = None
        self.t_first_at: tuple[int | None, int] = (None, 0)
        self.t_last: float | None = None
        self.prev_t: float | None = None
        self.t_count = 0
        self.t_backwards = 0
        self.t_unparsed = 0
        self.intervals = Sample(max_values)
        self.gaps = Top(SAMPLES)
        self.windows: list[dict[str, Any]] = []
        self.win = Window()
        self.speed = Speed()
        self.win_speed = WindowSpeed(None)
        self.derive_cols: tuple[list[Any], list[Any]] | None = None
        self.derive_names: tuple[str, str | None] | None = None
        self.rate_field: str | None = None  # a stated rate in another unit than tokens/s
        self.steps_over = True  # steps/s over the timestamps (else over the seconds since start)
        self.last_records: deque[dict[str, Any]] = deque(maxlen=3)

    # -- damage -------------------------------------------------------------------
    def bad(self, reason: str, line: int | None, offset: int, raw: bytes) -> None:
        self.malformed[reason] = self.malformed.get(reason, 0) + 1
        if len(self.malformed_samples) < SAMPLES:
            self.malformed_samples.append(
                {
                    "line": line,
                    "offset": offset,
                    "reason": reason,
                    "sample": raw[:SAMPLE_BYTES].decode("utf-8", "replace"),
                }
            )

    def unusable(
        self, role: str, line: int | None, offset: int | None, field: str, why: str
    ) -> None:
        self.unusable_count[role] = self.unusable_count.get(role, 0) + 1
        if len(self.unusable_samples) < SAMPLES:
            self.unusable_samples.append(
                {"line": line, "offset": offset, "field": field, "role": role, "reason": why}
            )

    def usable(
        self, role: str, col: list[Any], lines: list[int | None], offsets: list[int] | None
    ) -> list[Any]:
        """``col`` without the numbers nobody can compute with: an integer beyond the
        float range (or past Python's digit limit), and an inf or NaN in the roles
        outside ``NONFINITE_COUNTED``; each is counted and sampled. An integer past
        2**64 becomes its float. A sum at C speed proves the common column clean."""
        types = set(map(type, col))
        ints = int in types or LongInt in types
        finite = role not in NONFINITE_COUNTED
        if not ints and not (finite and float in types):
            return col
        if LongInt not in types:
            nums = col if types <= NUMERIC else [v for v in col if type(v) in NUMERIC]
            try:
                # abs() of every number: no cancelling out, so the sum bounds each one.
                total = sum(map(abs, nums))
                if (not ints or total < INT_FLOAT) and (not finite or math.isfinite(total)):
                    return col
            except OverflowError:  # an int no float can hold met a float
                pass
        out = list(col)
        field = self.keys[role] or role
        for i, v in enumerate(col):
            why = why_unusable(v, finite)
            if why is not None:
                out[i] = None
                self.unusable(role, lines[i], offsets[i] if offsets else None, field, why)
            elif type(v) is int and not -INT_FLOAT < v < INT_FLOAT:
                out[i] = float(v)
        return out

    # -- columns ------------------------------------------------------------------
    def column(
        self,
        role: str,
        recs: list[dict[str, Any]],
        lines: list[int | None],
        offsets: list[int] | None = None,
    ) -> list[Any]:
        key = self.keys[role]
        if role in self.fixed:
            assert key is not None
            if "." in key:
                return self.usable(role, [lookup(d, key) for d in recs], lines, offsets)
            return self.usable(role, [d.get(key) for d in recs], lines, offsets)
        col: list[Any]
        if key is not None:
            try:
                # itemgetter through map runs at C speed; a record without the key
                # raises, and the slower path below finds an alias for it.
                return self.usable(role, list(map(itemgetter(key), recs)), lines, offsets)
            except KeyError:
                col = [d.get(key) for d in recs]
        else:
            col = [None] * len(recs)
        # Some records lack the field under its current name: look for an alias, once
        # per distinct key layout (records of one trainer share their keys' order).
        scales: list[float] | None = None
        for i, d in enumerate(recs):
            if col[i] is not None:
                continue
            layout = (role, tuple(d))
            if layout in self.alias_cache:
                name = self.alias_cache[layout]
            else:
                name = find_alias(role, d)
                if len(self.alias_cache) < 256:
                    self.alias_cache[layout] = name
            if name is None:
                continue
            if name != self.keys[role]:
                if self.keys[role] is None:
                    self.first_keys[role] = (name, lines[i])
                elif len(self.schema_changes) < SAMPLES:
                    self.schema_changes.append(
                        {"line": lines[i], "field": role, "from": self.keys[role], "to": name}
                    )
                self.keys[role] = name
            col[i] = d[name]
            if role == "throughput" and self.fixed_scale is None:
                if scales is None:
                    scales = [self.scale] * len(recs)
                scales[i] = scale_of(name)
        col = self.usable(role, col, lines, offsets)
        if scales is not None:
            # Values read under an alias carry that alias' unit; batch() multiplies by
            # the current scale, so divide it out here.
            new_scale = scale_of(self.keys[role] or "")
            col = [v * sc / new_scale if type(v) in NUMERIC else v for v, sc in zip(col, scales)]
            self.scale = new_scale
        return col

    def times(self, recs: list[dict[str, Any]], lines: list[int | None], offsets: list[int]) -> Col:
        raw = self.column("time", recs, lines, offsets)
        col = numbers(raw)
        if col.full:
            if col.vals and col.vals[0] > 1e11:  # type: ignore[operator]  # epoch ms
                return Col([v / 1000.0 for v in col.vals], True)  # type: ignore[operator]
            return col
        out: list[float | None] = []
        for r in raw:
            t = to_time(r)
            if t is None and r is not None:
                self.t_unparsed += 1
            out.append(t)
        return Col(out, None not in out)

    def partition(self, recs: list[dict[str, Any]]) -> dict[str, list[int]] | None:
        """The batch's records by series: label (``role=drafter,device=cuda:5``) to
        record indices (an empty list: every record of the batch), or None when the log
        has one series. Without a profile, the grouping fields are the ones of
        ``GROUP_ALIASES`` that the first record has."""
        if self.group_keys is None:
            self.group_keys = tuple(k for k in GROUP_ALIASES if k in recs[0])
        keys = self.group_keys
        if not keys:
            return None
        try:
            raw = list(map(itemgetter(*keys), recs))
        except KeyError:
            raw = [tuple(d.get(k) for k in keys) if len(keys) > 1 else d.get(keys[0]) for d in recs]
        # One pass, one dict lookup per record: cheaper than a filtering pass per series.
        by_key: dict[Any, list[int]] = {}
        try:
            for i, key in enumerate(raw):
                found = by_key.get(key)
                if found is None:
                    by_key[key] = [i]
                else:
                    found.append(i)
        except TypeError:  # a list or object where a device name belongs
            # Only those values become their JSON text: a plain name keeps the key (and
            # so the series) it has in every other batch.
            if len(keys) > 1:
                raw = [tuple(map(_hashable, v)) for v in raw]
            else:
                raw = [_hashable(v) for v in raw]
            by_key = {}
            for i, key in enumerate(raw):
                by_key.setdefault(key, []).append(i)
        labels = self.labels
        parts: dict[str, list[int]] = {}
        for key, idx in by_key.items():
            label = labels.get(key)
            if label is None:
                vals = key if len(keys) > 1 else (key,)
                label = ",".join(f"{k}={label_value(x)}" for k, x in zip(keys, vals))
                # Past MAX_GROUPS, further series share one bucket: memory stays bounded.
                if len(set(labels.values())) >= MAX_GROUPS:
                    label = "other"
                labels[key] = label
            parts[label] = sorted(parts[label] + idx) if label in parts else idx
        if len(parts) == 1:
            return {label: [] for label in parts}
        return parts

    # -- a batch of records ---------------------------------------------------------
    def batch(
        self, recs: list[dict[str, Any]], lines: list[int | None], offsets: list[int]
    ) -> None:
        n = len(recs)
        if not n:
            return
        self.records += n
        if len(self.keys_seen) < 64:
            for d in (recs[0], recs[-1]):
                for k in d:
                    self.keys_seen[k] = self.keys_seen.get(k, 0) + 1
        self.last_records.extend(recs[-3:])
        steps = numbers(self.column("step", recs, lines, offsets))
        toks = numbers(self.column("throughput", recs, lines, offsets))
        if self.scale != 1.0:
            toks = Col([v * self.scale if v is not None else None for v in toks.vals], toks.full)
        losses = numbers(self.column("loss", recs, lines, offsets))
        if self.loss_first_nonfinite is None:
            self.loss_first_nonfinite = first_nonfinite(losses, steps, lines)
        if self.grad_first_nonfinite is None:
            grads = numbers(self.column("grad_norm", recs, lines, offsets))
            self.grad_first_nonfinite = first_nonfinite(grads, steps, lines)
            if self.grad_first_nonfinite is not None:
                self.grad_first_nonfinite["field"] = self.keys["grad_norm"]
        times = self.times(recs, lines, offsets)
        groups = self.partition(recs)
        if (
            "throughput" not in self.fixed
            and not toks.full
            and toks.vals.count(None) == n
            and (self.keys["throughput"] is None or self.derived is not None)
            and self.speed.kind != "stated_average"
            and not (self.speed.kind is None and average_field(recs))
        ):
            self.derive_offsets = offsets
            derived = derive(self, recs, lines, steps, times, groups)
            if derived is not None:
                toks = derived
        self.time_batch(times, lines, offsets)
        points = speed_points(self, recs, lines, steps, toks, times) if groups is None else None
        self.series(self.all, steps if groups is None else None, toks, losses, lines, offsets)
        parts: dict[str, list[int]] = groups or {}
        for g, idx in parts.items():
            grp = self.groups.get(g)
            if grp is None:
                # Per-series quantiles need fewer values than the overall ones.
                grp = self.groups[g] = Group(max(1000, self.max_values // 4))
            if not idx:
                self.series(grp, steps, toks, losses, lines, offsets)
            else:
                pick = picker(idx)
                self.series(
                    grp,
                    steps.take(pick),
                    toks.take(pick),
                    losses.take(pick),
                    list(pick(lines)),
                    list(pick(offsets)),
                )
        i = 0
        while i < n:
            j = i + min(n - i, self.window_size - self.win.n)
            self.window(i, j, lines, steps, toks, losses, times, parts)
            if points is not None:
                points.feed(self.win_speed, i, j)
            if self.win.n >= self.window_size:
                self.close_window()
            i = j

    def series(
        self,
        grp: Group,
        steps: Col | None,
        toks: Col,
        losses: Col,
        lines: list[int | None] | None = None,
        offsets: list[int] | None = None,
    ) -> None:
        grp.records += len(toks.vals)
        if steps is not None and lines is not None and offsets is not None:
            grp.steps.add(steps, lines, offsets)
        tok_vals, bad = drop_nonfinite(toks.present()[0])
        loss_vals, bad_loss = drop_nonfinite(losses.present()[0])
        if grp is self.all:
            self.nonfinite["throughput"] += bad
            self.nonfinite["loss"] += bad_loss
        grp.tok.extend(tok_vals)
        grp.recent_tok.extend(tok_vals[-RECENT_MAX:])
        grp.loss.extend(loss_vals)

    def window(
        self,
        i: int,
        j: int,
        lines: list[int | None],
        steps: Col,
        toks: Col,
        losses: Col,
        times: Col,
        parts: dict[str, list[int]],
    ) -> None:
        w = self.win
        if not w.n:
            w.first_line = lines[i]
        w.last_line = lines[j - 1]
        w.n += j - i
        vals = steps.part(i, j).present()[0]
        if vals:
            if w.first_step is None:
                w.first_step = vals[0]
            w.last_step = vals[-1]
        vals = times.part(i, j).present()[0]
        if vals:
            if w.t_first is None:
                w.t_first = vals[0]
            w.t_last = vals[-1]
        tok_part = toks.part(i, j)
        w.tok.extend(drop_nonfinite(tok_part.present()[0])[0])
        w.loss.extend(drop_nonfinite(losses.part(i, j).present()[0])[0])
        for g, idx in parts.items():
            picked: list[Any]
            if idx:
                inside = idx[bisect_left(idx, i) : bisect_left(idx, j)]
                picked = [toks.vals[k] for k in inside]
            else:
                picked = tok_part.vals
            if not toks.full:
                picked = [v for v in picked if v is not None]
            w.by_group.setdefault(g, []).extend(drop_nonfinite(picked)[0])

    def time_batch(self, times: Col, lines: list[int | None], offsets: list[int]) -> None:
        vals, idx = times.present()
        if not vals:
            return
        self.t_count += len(vals)
        if self.t_first is None:
            self.t_first = vals[0]
            i0 = 0 if idx is None else idx[0]
            self.t_first_at = (lines[i0], offsets[i0])
        diffs, base = differences(vals, self.prev_t)
        self.prev_t = self.t_last = vals[-1]
        if not diffs:
            return
        if min(diffs) < 0:
            self.t_backwards += sum(1 for dd in diffs if dd < 0)
            self.intervals.extend([dd for dd in diffs if dd >= 0])
        else:
            self.intervals.extend(diffs)
        for k in largest(diffs, self.gaps.floor()):
            i = k + base if idx is None else idx[k + base]
            t = vals[k + base]
            self.gaps.push(
                diffs[k],
                {
                    "line": lines[i],
                    "offset": offsets[i],
                    "seconds": diffs[k],
                    "from_t": t - diffs[k],
                    "to_t": t,
                },
            )

    def close_window(self) -> None:
        if self.win.n:
            doc = self.win.summary()
            doc.update(self.win_speed.summary(self.speed.kind, self.speed.bounds))
            if doc.get("speed") is not None:
                self.speed.windows_with_speed += 1
            self.windows.append(doc)
        old = self.win_speed
        if self.win.n and self.speed.first_window_last is None and old.last is not None:
            # The first window with a counter point (a forked piece's first difference).
            self.speed.first_window_last = old.last
            self.speed.first_window_index = len(self.windows) - 1
        self.win_speed = WindowSpeed(old.last or old.anchor)
        self.win = Window()

    def break_continuity(self) -> None:
        """Between head and tail: what lies between was not seen, so no restart/gap."""
        self.close_window()
        self.win_speed = WindowSpeed(None)
        self.speed.gap()
        self.prev_t = None
        for grp in [self.all, *self.groups.values()]:
            grp.steps.last = None
