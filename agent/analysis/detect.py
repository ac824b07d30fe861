"""Finding the symptoms a run's facts show, unchecked (``symptoms.check_all`` checks
them): from the train log's windows (``tools.parsers.trainlog``: about 200 runs of
consecutive records, each reduced to medians, per group and overall), else the console's
progress bar, else the checkpoints' pace. For the throughput the diagnosis judges
(``agent.analysis.throughput.subject``) and for each group:

- a *drop* or a *rise*: a change point where the median tokens/s of the windows after it
  is below 0.8× (or at least 1.25×) the median of the windows before it, sustained
  (``change_points``: Mann-Whitney U one-sided at p < 0.001, a tenth of the log on each
  side), claimed with ``WindowRatio`` over those windows;
- *steady*: no such change, and the last quarter's median within 0.8×–1.25× of the
  median of the whole log (the windows holding a start are warm-up and are left out).
  Against the whole log rather than its first windows: a run's first windows still
  compile the shapes it meets, so "the start was slower" is the rule, not a symptom,
  while a crawl or a climb still moves the last quarter away from the whole;
- restarts (the step went back) and the last step logged, cited; the loss's symptoms
  (``loss``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple

from agent.analysis.change_points import (
    DROP,
    MIN_WINDOWS,
    POSSIBLE_DROP,
    POSSIBLE_LEAST,
    RISE,
    STEADY_MIN,
    change_points,
    possible_drop,
    why_unconfirmed,
)
from agent.analysis.loss import loss_diverged, loss_nonfinite
from agent.analysis.symptoms import Symptom
from agent.analysis.throughput import subject
from agent.analysis.unobserved import speed_unobserved
from agent.model.claims import AtLeast, Claim, Ref, WindowRatio, resolve
from agent.model.facts import Fact, PathPart, as_dict, as_list
from agent.model.windows import window_series
from tools.parsers import trainlog_paths as log_paths
from tools.probes import checkpoint_paths as ckpt_paths

MAX_GROUPS = 16


class _Series(NamedTuple):
    label: str
    paths: tuple[tuple[str | int, ...], ...]
    subject: bool


def _series(fact: Fact) -> list[_Series]:
    """The subject's series and each group's, as paths inside a window."""
    found = subject(fact)
    if found is None:
        return []
    value = as_dict(fact.value)
    groups = sorted(str(g) for g in as_dict(value.get("groups")))
    if not groups:
        return [_Series(label=found.label.partition(" (")[0], paths=(("speed",),), subject=True)]
    members = list(found.members) or [str(found.path[1])]
    label = f"{found.who}tokens/s" + (f" (sum of {len(members)} series)" if found.members else "")
    out = [
        _Series(
            label=label,
            paths=tuple(("tok_s_median_by_group", g) for g in members),
            subject=True,
        )
    ]
    if found.members or len(groups) > 1:
        out += [
            _Series(label=f"{g} tokens/s", paths=(("tok_s_median_by_group", g),), subject=False)
            for g in groups[:MAX_GROUPS]
            if found.members or g != members[0]
        ]
    return out


def _points(
    windows: Sequence[object], paths: Sequence[Sequence[str | int]]
) -> list[tuple[int, float]]:
    """(window index, value) for every window with a value (``claims.window_series``:
    the same numbers a ``WindowRatio`` claim is checked on)."""
    return [(i, v) for i, v, _, _ in window_series(list(windows), paths)]


def _warm_up(windows: Sequence[object], fact: Fact) -> set[int]:
    """Windows that hold a start: the first, and the one holding each restart's line
    and the next. Where the speed is a difference of counters, a window's rate spans
    only records after the start (``speed``: no difference crosses a segment), so only
    the window holding the start is left out."""
    skip = {0}
    counter = resolve(fact, log_paths.SPEED_KIND) in COUNTER_KINDS
    samples = as_list(resolve(fact, log_paths.STEPS_RESTART_SAMPLES))
    lines = [s.get("line") for s in samples if isinstance(s, dict)]
    # A run segment's start (a resume whose steps go on, ``train_runtime`` restarting)
    # is a start too; the log's first segment is window 0's.
    segments = as_list(resolve(fact, log_paths.SPEED_SEGMENTS))
    lines += [s.get("first_line") for s in segments[1:] if isinstance(s, dict)]
    firsts = [w.get("first_line") if isinstance(w, dict) else None for w in windows]
    for line in lines:
        if not isinstance(line, int):
            continue
        holding = [i for i, f in enumerate(firsts) if isinstance(f, int) and f <= line]
        if holding:
            skip.add(max(holding))
            if not counter:
                skip.add(max(holding) + 1)
    return skip


COUNTER_KINDS = ("stated_average", "derived")


def _ratio(
    ref: Ref,
    series: _Series,
    spans: tuple[tuple[int, int], tuple[int, int]],
    ratio: float,
    below: bool,
) -> Claim:
    before, after = spans
    return Claim(
        predicate=WindowRatio(
            a=ref, series=series.paths, before=before, after=after, ratio=ratio, below=below
        )
    )


def _began(
    fact: Fact,
    windows: Sequence[object],
    last_old: int,
    first_new: int,
    where: tuple[PathPart, ...] = ("windows",),
) -> tuple[Ref, float] | None:
    """Where the new regime began (``Symptom.began``): a ref to the smallest first step
    of the windows (at ``where`` in the fact) from the old regime's last to the new
    regime's first."""
    candidates: list[tuple[float, tuple[PathPart, ...], str]] = []
    for i in range(last_old, first_new + 1):
        w = windows[i]
        if isinstance(w, dict) and isinstance(w.get("first_step"), int | float):
            which = "the last window before the change" if i == last_old else "a window after it"
            candidates.append((w["first_step"], (*where, i, "first_step"), which))
    if not candidates:
        return None
    step, path, which = min(candidates, key=lambda c: c[0])
    return Ref(fact=fact.id, path=path, label=f"first step of {which}"), float(step)


class _Points(NamedTuple):
    """One series' windows with a value: their indices in the windows, and the values."""

    idx: list[int]
    values: list[float]


def _dated(
    fact: Fact,
    windows: Sequence[object],
    where: tuple[PathPart, ...],
    last_old: int,
    first_new: int,
) -> dict[str, Any]:
    """A change's dates as Symptom fields: the first step of the new regime's first
    window, and where the new regime began (``_began``)."""
    window = windows[first_new]
    step = window.get("first_step") if isinstance(window, dict) else None
    began = _began(fact, windows, last_old, first_new, where)
    return {
        "step": step if isinstance(step, int | float) else None,
        "began": began[0] if began else None,
        "began_step": began[1] if began else None,
    }


def _changes(
    fact: Fact,
    windows: Sequence[object],
    where: tuple[PathPart, ...],
    series: _Series,
    points: _Points,
    cuts: list[int],
) -> list[Symptom]:
    """A drop or a rise at each sustained change point, claimed on the windows of the
    regimes on either side of it."""
    idx, values = points
    ref = Ref(fact=fact.id, path=where, label=series.label)
    bounds = [0, *cuts, len(values)]
    out = []
    for j, k in enumerate(cuts):
        before = (idx[bounds[j]], idx[k - 1])
        after = (idx[k], idx[bounds[j + 2] - 1])
        ratio = statistics.median(values[k : bounds[j + 2]]) / statistics.median(
            values[bounds[j] : k]
        )
        drop = ratio < 1
        out.append(
            Symptom(
                kind="throughput_drop" if drop else "throughput_rise",
                series=series.label,
                subject=series.subject,
                ratio=ratio,
                claims=(_ratio(ref, series, (before, after), DROP if drop else RISE, drop),),
                **_dated(fact, windows, where, idx[k - 1], idx[k]),
            )
        )
    return out


def _possible(
    fact: Fact,
    windows: Sequence[object],
    where: tuple[PathPart, ...],
    series: _Series,
    points: _Points,
) -> Symptom | None:
    """A drop too short to confirm yet plain (``change_points.possible_drop``), said as
    possible, with why it is not confirmed."""
    idx, values = points
    possible = possible_drop(values)
    if possible is None:
        return None
    k, ratio = possible
    ref = Ref(fact=fact.id, path=where, label=series.label)
    spans = ((idx[0], idx[k - 1]), (idx[k], idx[-1]))
    return Symptom(
        kind="throughput_possible_drop",
        series=series.label,
        subject=True,
        ratio=ratio,
        note=why_unconfirmed(k, len(values)),
        claims=(_ratio(ref, series, spans, POSSIBLE_DROP, True),),
        **_dated(fact, windows, where, idx[k - 1], idx[k]),
    )


def _steady(fact: Fact, where: tuple[PathPart, ...], series: _Series, points: _Points) -> Symptom:
    """The steady claim: the last quarter's median within 0.8×–1.25× of the whole's."""
    idx = points.idx
    quarter = max(2, len(idx) // 4)
    whole, recent = (idx[0], idx[-1]), (idx[-quarter], idx[-1])
    ref = Ref(fact=fact.id, path=where, label=series.label)
    return Symptom(
        kind="throughput_steady",
        series=series.label,
        subject=True,
        claims=(
            _ratio(ref, series, (whole, recent), DROP, False),
            _ratio(ref, series, (whole, recent), RISE, True),
        ),
    )


def _throughput(
    fact: Fact,
    windows: Sequence[object],
    where: tuple[PathPart, ...],
    serieses: Sequence[_Series],
    skip: set[int],
) -> list[Symptom]:
    """The speed's symptoms over ``windows`` (at ``where`` in ``fact``), leaving out the
    windows ``skip`` holds (warm-ups): each sustained change, a possible drop, or a
    steady claim."""
    out: list[Symptom] = []
    for series in serieses:
        kept = [(i, v) for i, v in _points(windows, series.paths) if i not in skip]
        if len(kept) < 2 * POSSIBLE_LEAST or (len(kept) < 2 * MIN_WINDOWS and not series.subject):
            continue
        points = _Points([i for i, _ in kept], [v for _, v in kept])
        cuts = change_points(points.values) if len(kept) >= 2 * MIN_WINDOWS else []
        out += _changes(fact, windows, where, series, points, cuts)
        if cuts or not series.subject:
            continue
        possible = _possible(fact, windows, where, series, points)
        if possible is not None:
            out.append(possible)
        elif len(kept) >= STEADY_MIN:
            out.append(_steady(fact, where, series, points))
    return out


def find(fact: Fact | None) -> list[Symptom]:
    """The symptoms the trainlog ``fact`` shows, unchecked (``check_all`` checks them)."""
    if fact is None or not fact.ok:
        return []
    windows = resolve(fact, log_paths.WINDOWS)
    if not isinstance(windows, list):
        return []
    out = _throughput(fact, windows, log_paths.WINDOWS, _series(fact), _warm_up(windows, fact))
    if subject(fact) is None or not any(s.subject for s in _series(fact)):
        out.append(speed_unobserved(fact))
    out += loss_nonfinite(fact)
    out += loss_diverged(fact, windows)
    restarts = resolve(fact, log_paths.STEPS_RESTARTS)
    if isinstance(restarts, int) and restarts > 0:
        samples = as_list(resolve(fact, log_paths.STEPS_RESTART_SAMPLES))
        first = samples[0].get("to_step") if samples and isinstance(samples[0], dict) else None
        out.append(
            restart(
                fact,
                log_paths.STEPS_RESTARTS,
                "times the logged step went back",
                1,
                step=first if isinstance(first, int | float) else None,
            )
        )
    elif later := _segments(fact):
        out.append(_resumed(fact, later))
    return out


def bar_windows(console: Fact) -> tuple[tuple[PathPart, ...], list[object], dict[str, Any]] | None:
    """Where the console's chosen progress bar keeps its windows, the windows, and the
    bar's family (``tools.parsers._bars``); None without one."""
    progress = as_dict(as_dict(console.value).get("progress"))
    chosen = progress.get("chosen")
    families = progress.get("families")
    if not isinstance(chosen, int) or not isinstance(families, list):
        return None
    if not 0 <= chosen < len(families):
        return None
    family = as_dict(families[chosen])
    windows = family.get("windows")
    if not isinstance(windows, list) or not windows:
        return None
    return ("progress", "families", chosen, "windows"), windows, family


def find_in_bars(console: Fact | None) -> list[Symptom]:
    """The speed's symptoms from the console's progress bar (tqdm's printed rate), for a
    run whose train log states no speed: the same tests as ``find``, on the bar's
    windows, leaving out the window each bar begins in (its rate is warming up)."""
    if console is None or not console.ok:
        return []
    found = bar_windows(console)
    if found is None:
        return []
    where, windows, family = found
    desc = str(family.get("desc") or "")
    named = f" {desc!r}" if desc else ""
    label = (
        f"{family.get('unit') or 'it/s'} (the console's progress bar{named}, as tqdm printed it)"
    )
    skip = {0} | {i for i, w in enumerate(windows) if as_dict(w).get("bar_start")}
    series = [_Series(label=label, paths=(("speed",),), subject=True)]
    return _throughput(console, windows, where, series, skip)


def find_in_checkpoints(checkpoints: Fact | None) -> list[Symptom]:
    """The speed's symptoms from the checkpoints' pace (steps over their modification
    times, ``tools.probes.checkpoints.pace``): the last resort, for a run whose logs state
    no speed at all. Every interval holds a save, so none is a warm-up."""
    if checkpoints is None or not checkpoints.ok:
        return []
    windows = resolve(checkpoints, ckpt_paths.PACE_WINDOWS)
    if not isinstance(windows, list) or not windows:
        return []
    label = "steps/s (between checkpoints, by their modification times)"
    series = [_Series(label=label, paths=(("speed",),), subject=True)]
    return _throughput(checkpoints, windows, ckpt_paths.PACE_WINDOWS, series, set())


def _segments(fact: Fact) -> list[dict[str, Any]]:
    """The run segments after the first (``speed.segments``): each a resume or restart
    the speed's counters show, whether or not the step went back."""
    return [s for s in as_list(resolve(fact, log_paths.SPEED_SEGMENTS))[1:] if isinstance(s, dict)]


def restart(
    fact: Fact,
    path: tuple[PathPart, ...],
    label: str,
    least: float,
    note: str = "",
    step: float | None = None,
) -> Symptom:
    """A restart symptom on one claim: the number at ``path`` in ``fact`` is at least
    ``least`` (a count of restarts, of segments, a step printed before a reload)."""
    claim = Claim(predicate=AtLeast(a=Ref(fact=fact.id, path=path, label=label), value=least))
    return Symptom(
        kind="restarted", series="steps", subject=False, step=step, note=note, claims=(claim,)
    )


def _resumed(fact: Fact, later: list[dict[str, Any]]) -> Symptom:
    first = later[0]
    step = first.get("first_step")
    return restart(
        fact,
        log_paths.SPEED_SEGMENT_COUNT,
        "run segments (a new one where the step or the speed's counters went back)",
        2,
        note=str(first.get("why") or ""),
        step=step if isinstance(step, int | float) else None,
    )
