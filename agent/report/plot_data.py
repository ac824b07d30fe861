"""What the HTML report's plot draws, read from facts: the judged throughput per log
window in run segments, and the marks at the steps facts give (the verified change points,
the restarts the train log sampled, the crashes the console log dated).

Nothing here is drawn that a fact does not hold: each point comes from a cited train-log
fact and each mark's tooltip cites its fact. ``agent.report.html`` draws them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from agent.analysis.symptoms import Symptom
from agent.analysis.throughput import subject
from agent.model.claims import resolve
from agent.model.facts import Fact, as_dict
from agent.model.shown import shown_value
from agent.model.windows import window_series
from tools.parsers import trainlog_paths as log_paths
from tools.probes import value_paths as vp


@dataclass(frozen=True)
class Segment:
    """One run of the log: its points in step order, up to where the step went back."""

    points: tuple[tuple[float, float], ...]  # (step, tokens/s)
    restart_line: int | None = None  # the log line of the restart it follows, when known

    @property
    def span(self) -> str:
        first, last = self.points[0][0], self.points[-1][0]
        return (
            f"step {number_text(first)}"
            if first == last
            else f"steps {number_text(first)}–{number_text(last)}"
        )


@dataclass(frozen=True)
class Series:
    label: str  # "now" or "baseline"
    fact: str
    segments: tuple[Segment, ...]

    @property
    def points(self) -> list[tuple[float, float]]:
        return [p for s in self.segments for p in s.points]


@dataclass(frozen=True)
class Mark:
    """A vertical line at a step, with a short label and a tooltip citing its fact."""

    kind: Literal["change", "restart", "crash"]
    step: float
    label: str
    title: str


def number_text(value: object) -> str:
    """A step or a figure as a person reads it: 1,200, not 1200.0; 12,346, not
    1.235e+04. Shown as every claim's sentence shows it (``shown_value``), so a step on
    the plot reads as the claim citing it does; anything else, a boolean too, is ``?``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "?"
    return shown_value(value)


def _subject_paths(fact: Fact) -> list[tuple[str, ...]] | None:
    """Where the judged throughput is in a window: one path per series it sums."""
    found = subject(fact)
    if found is None:
        return None
    if found.members:
        return [("tok_s_median_by_group", g) for g in found.members]
    if found.path[0] == log_paths.GROUPS[0]:
        return [("tok_s_median_by_group", str(found.path[1]))]
    return [("speed",)]


def _restart_samples(fact: Fact) -> list[dict[str, Any]]:
    samples = resolve(fact, log_paths.STEPS_RESTART_SAMPLES)
    return [s for s in samples if isinstance(s, dict)] if isinstance(samples, list) else []


class WindowPoint(NamedTuple):
    line: int | None  # the window's first line in the log
    step: float  # its first step: where it is drawn
    last_step: float
    value: float  # tokens/s


class Restart(NamedTuple):
    """A restart sample: where in the log the step went back, and to which step."""

    line: int
    to_step: float


def split_runs(points: Sequence[WindowPoint], restarts: Sequence[Restart]) -> list[Segment]:
    """Points cut into run segments. A new one starts where the step is below the
    previous point's, or at the first point after a restart back below the steps the
    segment reached. A restart inside a window leaves that window's start, and so its
    point, in the old run; the devices of a run restarting one after another, back to
    where the new segment began, are that one restart."""
    segments: list[Segment] = []
    current: list[tuple[float, float]] = []
    after: int | None = None
    prev_line: int | None = None
    prev_step = reach = -math.inf
    for point in points:
        back = [
            r.line
            for r in restarts
            if prev_line is not None
            and point.line is not None
            and prev_line < r.line <= point.line
            and r.to_step < reach
        ]
        if current and (point.step < prev_step or back):
            segments.append(Segment(tuple(current), after))
            current, after, reach = [], min(back, default=None), -math.inf
        current.append((point.step, point.value))
        prev_line, prev_step = point.line, point.step
        reach = max(reach, point.last_step)
    if current:
        segments.append(Segment(tuple(current), after))
    return segments


def _restarts(fact: Fact) -> list[Restart]:
    """The restart samples a place in the log and a step can be read from."""
    return [
        Restart(s["line"], float(s["to_step"]))
        for s in _restart_samples(fact)
        if isinstance(s.get("line"), int) and isinstance(s.get("to_step"), int | float)
    ]


def _first_line(window: object) -> int | None:
    line = as_dict(window).get("first_line")
    return line if isinstance(line, int) else None


def throughput_series(fact: Fact | None, label: str) -> Series | None:
    """The judged throughput (agent.analysis.throughput's subject: the drafter series, a sum over
    several, or the log's one series) per log window of a train-log fact, at the step of
    the window's start, in run segments (``split_runs``)."""
    if fact is None:
        return None
    paths = _subject_paths(fact)
    windows = resolve(fact, log_paths.WINDOWS)
    if paths is None or not isinstance(windows, list):
        return None
    # The numbers the symptoms' WindowRatio claims are checked on (a sum carries each
    # device's latest value across interleaved windows), so a change point's ratio is
    # one of what is drawn.
    points = [
        WindowPoint(_first_line(windows[i]), first, first if last is None else last, value)
        for i, value, first, last in window_series(windows, paths)
        if first is not None
    ]
    segments = split_runs(points, _restarts(fact))
    return Series(label, fact.id, tuple(segments)) if segments else None


def _cite(ids: Sequence[str]) -> str:
    return " ".join(f"[{i}]" for i in ids)


def change_marks(symptoms: Sequence[Symptom]) -> list[Mark]:
    """The verified change points of the judged throughput, at the first step after."""
    marks = []
    for s in symptoms:
        if (
            not s.subject
            or s.status != "verified"
            or s.kind not in ("throughput_drop", "throughput_rise")
            or s.step is None
            or s.ratio is None
        ):
            continue
        verb = "fell" if s.kind == "throughput_drop" else "rose"
        cites = sorted({f for claim in s.claims for f in claim.cites})
        marks.append(
            Mark(
                "change",
                s.step,
                f"{verb} to {s.ratio:.2f}× at step {number_text(s.step)}",
                f"{s.headline()} (verified) {_cite(cites)}",
            )
        )
    return marks


def restart_marks(fact: Fact) -> list[Mark]:
    """One mark per step the train log's restart samples say a run started again at."""
    moves: dict[float, list[str]] = {}
    for sample in _restart_samples(fact):
        to = sample.get("to_step")
        if not isinstance(to, int | float):
            continue
        line = sample.get("line")
        where = f" at line {line:,}" if isinstance(line, int) else ""
        moves.setdefault(float(to), []).append(
            f"{number_text(sample.get('from_step'))}→{number_text(to)}{where}"
        )
    return [
        Mark(
            "restart",
            step,
            "restart",
            f"restart: the logged step went back {', '.join(m)} [{fact.id}]",
        )
        for step, m in sorted(moves.items())
    ]


def _crashes(fact: Fact | None) -> list[tuple[str, dict[str, Any], float | None]]:
    """The console log's stated causes of a crash (its ``exception_causes``), each with
    the last step the log printed before it, where the fact holds one (the cause's own,
    else that of the signature the cause is named by)."""
    value = as_dict(fact.value) if fact is not None else {}
    signatures = as_dict(value.get("signatures"))
    out = []
    causes = as_dict(resolve(fact, vp.EXCEPTION_CAUSES)) if fact is not None else {}
    for key, cause in sorted(causes.items()):
        if not isinstance(cause, dict):
            continue
        before = as_dict(
            cause.get("first_after_step") or as_dict(signatures.get(key)).get("first_after_step")
        )
        step = before.get("step")
        out.append((key, cause, float(step) if isinstance(step, int | float) else None))
    return out


def crash_marks(fact: Fact | None) -> list[Mark]:
    """Each crash the console log dates by a step it printed before it."""
    if fact is None:
        return []
    return [
        Mark(
            "crash",
            step,
            f"{cause.get('exception') or key} after step {number_text(step)}",
            f"crash: {cause.get('first') or key} (console log line "
            f"{number_text(cause.get('first_line'))}, after it printed step "
            f"{number_text(step)}) [{fact.id}]",
        )
        for key, cause, step in _crashes(fact)
        if step is not None
    ]


def unplaced_crashes(fact: Fact | None) -> str | None:
    """Why a crash the console log states is not on the plot: it printed no step."""
    names = sorted({str(c.get("exception") or k) for k, c, step in _crashes(fact) if step is None})
    if fact is None or not names:
        return None
    return (
        f"The console log [{fact.id}] states {', '.join(names)} but prints no step before "
        "it, so the plot does not place it."
    )
