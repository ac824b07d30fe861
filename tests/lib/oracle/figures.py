"""The judged throughput of one log, recomputed from it: the figures health and the HTML
plot show (``figures``), and the facts a session's transcript holds."""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from tests.lib.oracle.speed import (
    RECENT_MAX,
    RECENT_MIN,
    _counter_ends,
    _early,
    _group_rows,
    _median,
    _num,
    _rate,
    _recent_points,
    _series,
    _step_key,
    read_points,
    read_records,
)

# -- the judged throughput of one log: the figures health and the HTML plot show -------


class Figures(NamedTuple):
    """The throughput a log is judged by, recomputed from its raw records."""

    subject: tuple[str, ...]  # the series summed; empty for a log of one unnamed series
    recent: float | None
    records: int | None  # the values the recent figure is over (one series only)
    early: float | None
    last_step: float | None
    last_time: float | None
    plot: list[tuple[int, float, float | None]]  # (window, value, first step) with a value


def subject_of(labels: Iterable[str]) -> tuple[str, ...]:
    """The series a log is judged by: its one ``role=drafter`` series, else all its
    drafter series (summed), else its one series, or all of them (summed)."""
    names = sorted(labels)
    drafters = [g for g in names if "role=drafter" in g.split(",")]
    return tuple(drafters or names)


def _sum_latest(rows: list[list[float | None]]) -> list[float | None]:
    """Per window, the judged value drawn and weighed for a change: one series' window
    median, or several series' sum, each at its latest positive median so far, from the
    window where each has had one, on the windows holding one of their own."""
    latest: dict[int, float] = {}
    out: list[float | None] = []
    for row in rows:
        fresh = False
        for p, n in enumerate(row):
            if n is not None and n > 0:
                latest[p] = n
                fresh = True
        out.append(sum(latest.values()) if fresh and len(latest) == len(row) else None)
    return out


def _recent(values: list[float]) -> tuple[float | None, int]:
    k = max(RECENT_MIN, min(RECENT_MAX, len(values) // 4))
    return _median(values[-k:]), len(values[-k:])


def _total(parts: list[float | None]) -> float | None:
    nums = [v for v in parts if v is not None]
    return sum(nums) if nums else None


def _first_steps(
    recs: list[tuple[int, dict[str, Any]]], summary: dict[str, Any]
) -> list[float | None]:
    """Each window's first step: that of its first record holding one."""
    key = _step_key(summary)
    steps = [(ln, s) for ln, rec in recs if (s := _num(rec.get(key))) is not None]
    lines = [ln for ln, _ in steps]
    out: list[float | None] = []
    for w in summary["windows"]:
        i = bisect_left(lines, w["first_line"])
        out.append(steps[i][1] if i < len(steps) and lines[i] <= w["last_line"] else None)
    return out


def _last_time(recs: list[tuple[int, dict[str, Any]]], key: Any) -> float | None:
    """The clock of the last record holding one; None where that is not a plain number
    (a date the parser may read and this reader does not)."""
    for _, rec in reversed(recs) if key else ():
        if key in rec:
            return _num(rec[key])
    return None


def _group_figures(
    recs: list[tuple[int, dict[str, Any]]], summary: dict[str, Any], subject: Sequence[str] | None
) -> Figures:
    rows = _group_rows(recs, summary)
    labels = tuple(subject) if subject is not None else subject_of(rows)
    series = _series(rows)
    cols = {
        g: ([ln for ln, _ in series.get(g, [])], [v for _, v in series.get(g, [])]) for g in labels
    }

    def in_window(g: str, w: dict[str, Any]) -> float | None:
        lines, values = cols[g]
        lo, hi = bisect_left(lines, w["first_line"]), bisect_right(lines, w["last_line"])
        return _median(values[lo:hi])

    recents = [_recent(cols[g][1]) for g in labels]
    early = [
        _median([m for w in _early(summary["windows"]) if (m := in_window(g, w)) is not None])
        for g in labels
    ]
    drawn = _sum_latest([[in_window(g, w) for g in labels] for w in summary["windows"]])
    firsts = _first_steps(recs, summary)
    if len(labels) == 1:
        steps = [r.step for r in rows.get(labels[0], []) if r.step is not None]
        last_step = steps[-1] if steps else None
    else:  # the log's steps, over every series
        last_step = max(
            (r.step for rs in rows.values() for r in rs if r.step is not None), default=None
        )
    return Figures(
        subject=labels,
        recent=recents[0][0] if len(labels) == 1 else _total([m for m, _ in recents]),
        records=recents[0][1] if len(labels) == 1 else None,
        early=early[0] if len(labels) == 1 else _total(early),
        last_step=last_step,
        last_time=_last_time(recs, (summary.get("fields") or {}).get("time")),
        plot=[(i, v, firsts[i]) for i, v in enumerate(drawn) if v is not None],
    )


def _speed_figures(
    path: Path, summary: dict[str, Any]
) -> tuple[list[float | None], float | None, float | None, int | None]:
    """A log of one series: each window's speed, the recent figure, the early one, and
    the records the recent one is over."""
    windows = summary["windows"]
    kind = summary["speed"]["kind"]
    if kind not in ("stated", "stated_average", "derived"):
        return [None] * len(windows), None, None, None
    points = read_points(path, summary)
    lines = [p.line for p in points]
    values: list[float | None] = []
    for w in windows:
        lo, hi = bisect_left(lines, w["first_line"]), bisect_right(lines, w["last_line"])
        if kind == "stated":
            values.append(_median([p.value for p in points[lo:hi] if p.value is not None]))
        else:  # a rate the summary withheld is drawn nowhere (``check`` holds it to the rule)
            values.append(
                _rate(*_counter_ends(points, lo, hi)) if w.get("speed") is not None else None
            )
    pts = _recent_points(points)
    if kind == "stated":
        recent = _median([p.value for p in pts if p.value is not None])
    else:
        recent = _rate(pts[0], pts[-1]) if pts else None
    span = min(len(windows) - 1, max(1, len(windows) // 4))
    early = _median([v for v in values[1 : 1 + span] if v is not None])
    return values, recent, early, len(pts) if recent is not None else None


def figures(
    path: Path, summary: dict[str, Any], subject: Sequence[str] | None = None
) -> Figures | None:
    """The judged throughput of the log at ``path``, read as ``summary`` (a trainlog
    fact's value) says it is laid out: its format, fields, series and windows' lines.
    ``subject``: the series to judge (a baseline's log is judged by the present's).
    None for per-step counts over step times (``derived_values``), not recomputed here."""
    if (summary.get("speed") or {}).get("kind") == "derived_values":
        return None
    recs = list(read_records(path, summary["format"]))
    if summary.get("group_fields"):
        return _group_figures(recs, summary, subject)
    values, recent, early, records = _speed_figures(path, summary)
    firsts = _first_steps(recs, summary)
    drawn = _sum_latest([[v] for v in values])
    steps = [s for _, rec in recs if (s := _num(rec.get(_step_key(summary)))) is not None]
    return Figures(
        subject=(),
        recent=recent,
        records=records,
        early=early,
        last_step=max(steps, default=None),
        last_time=_last_time(recs, (summary.get("fields") or {}).get("time")),
        plot=[(i, v, firsts[i]) for i, v in enumerate(drawn) if v is not None],
    )


def went_back(path: Path, summary: dict[str, Any]) -> dict[int, tuple[float, float]]:
    """Line -> (from step, to step) of each record whose step is below the one before
    it in its series (the whole log, where it has no series)."""
    keys = summary.get("group_fields") or []
    step_key = _step_key(summary)
    last: dict[str, float] = {}
    out: dict[int, tuple[float, float]] = {}
    for line, rec in read_records(path, summary["format"]):
        step = _num(rec.get(step_key))
        if step is None or not all(k in rec for k in keys):
            continue
        label = ",".join(f"{k}={rec[k]}" for k in keys)
        if label in last and step < last[label]:
            out[line] = (last[label], step)
        last[label] = step
    return out


# -- where the figures were read from: a session's transcript -----------------------------


def transcript_facts(path: Path) -> dict[str, dict[str, Any]]:
    """Each fact a session transcript recorded, by id, with ``baseline``: True for a
    baseline snapshot's fact."""
    out: dict[str, dict[str, Any]] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(text)
        except ValueError:
            continue
        fact = (
            event.get("fact") if isinstance(event, dict) and event.get("type") == "fact" else None
        )
        if isinstance(fact, dict) and isinstance(fact.get("id"), str):
            out[fact["id"]] = {**fact, "baseline": bool(event.get("baseline"))}
    return out


def raw_log(fact: dict[str, Any] | None, *, as_read: bool = False) -> Path | None:
    """The log a trainlog fact was read from, where this machine holds it. A baseline's
    fact describes the file as it was when its snapshot was taken, and so does every
    fact of a recorded session (``as_read``): then the log counts only while its size
    and mtime are still the ones the fact recorded."""
    value = fact.get("value") if fact else None
    if (
        not fact
        or fact.get("probe") != "trainlog"
        or fact.get("error")
        or not isinstance(value, dict)
    ):
        return None
    path = Path(str((value.get("source") or {}).get("path", "")))
    if not path.is_file() or "windows" not in value:
        return None
    if fact.get("baseline") or as_read:
        seen, now = value.get("file") or {}, path.stat()
        mtime = seen.get("mtime")
        if seen.get("size") != now.st_size or not isinstance(mtime, int | float):
            return None
        if abs(mtime - now.st_mtime) > 1e-3:
            return None
    return path


def log_figures(
    fact: dict[str, Any] | None, subject: Sequence[str] | None = None
) -> Figures | None:
    path = raw_log(fact)
    return figures(path, fact["value"], subject) if path is not None and fact else None


def transcript_sources(path: Path) -> dict[str, tuple[Path | None, dict[str, Any]]]:
    """Each trainlog fact of a recorded session: its raw log, where it is still as the
    fact read it (``raw_log``), and its value."""
    return {
        i: (raw_log(f, as_read=True), f["value"])
        for i, f in transcript_facts(path).items()
        if f.get("probe") == "trainlog" and isinstance(f.get("value"), dict)
    }
