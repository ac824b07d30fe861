"""The symptom layer: what the run did over time, from its training log, before any
failure family is asked why.

A *symptom* is a checked observation: claims over the trainlog fact, verified like a
hypothesis's. From the fact's windows (``tools.parsers.trainlog``: about 200 runs of
consecutive records, each reduced to medians, per group and overall) it finds, for the
throughput the diagnosis judges (``agent.analysis.throughput.subject``) and for each group:

- a *drop* or a *rise*: a change point where the median tokens/s of the windows after it
  is below 0.8× (or at least 1.25×) the median of the windows before it, sustained
  (``_sustained``: Mann-Whitney U one-sided at p < 0.001, a tenth of the log on each
  side), claimed with ``WindowRatio`` over those windows;
- *steady*: no such change, and the last quarter's median within 0.8×–1.25× of the
  median of the whole log (the windows holding a start are warm-up and are left out).
  Against the whole log rather than its first windows: a run's first windows still
  compile the shapes it meets, so "the start was slower" is the rule, not a symptom,
  while a crawl or a climb still moves the last quarter away from the whole;
- restarts (the step went back) and the last step logged, cited.

Change points: binary segmentation on the L1 cost of log tokens/s, not ``ruptures``.
The series is at most a few hundred window medians, so an exhaustive split search costs
nothing; the acceptance test is the ratio a human asks about ("it fell to a third"),
where PELT's penalty would have to be tuned per log and would bring numpy and scipy to a
controller that otherwise needs neither.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from agent.analysis.throughput import subject
from agent.model.claims import (
    AtLeast,
    AtMost,
    Claim,
    ClaimVerdict,
    Exists,
    PathPart,
    Ref,
    WindowRatio,
    check,
    window_series,
)
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, status_of

SymptomKind = Literal[
    "throughput_drop",
    "throughput_rise",
    "throughput_steady",
    "throughput_possible_drop",
    "speed_unobserved",
    "loss_nonfinite",
    "loss_diverged",
    "stalled",
    "stopped",
    "restarted",
]

DROP = 0.8  # after/before below this: a drop
RISE = 1.25  # at least this: a rise
MIN_WINDOWS = 3  # on each side of a change point
STEADY_MIN = 4  # windows for a steady claim: the last quarter (at least 2) against all
LEAST_SHARE = 10  # and a tenth of the log's windows
MAX_CHANGES = 3  # regimes per series, at most MAX_CHANGES + 1
MAX_GROUPS = 16
Z_SUSTAINED = 3.09  # one-sided p < 0.001 under the normal approximation of U

# Families whose verified hypothesis explains a throughput drop (a slower run): compiled
# code not running, recompiling, a cold cache, another torch, another script, a crash
# and restart. A family not named here explains no drop.
EXPLAINS_DROP = frozenset(
    {
        "silent_eager_fallback",
        "dataset_shape_churn",
        "compile_cache_cold",
        "environment_drift",
        "script_changed",
        "fx_trace_race",
        "ineffective_monkeypatch",
        "crash_stated",
        "own_code_time",
        "threads_blocked",
        "input_bound",
        "host_contention",
        "limit_not_applied",
    }
)


class Symptom(BaseModel):
    """One checked observation about the run over time."""

    model_config = ConfigDict(frozen=True)

    kind: SymptomKind
    series: str  # what was measured: "drafter tokens/s (sum of 3 series)", "rank=0 tokens/s"
    subject: bool  # the throughput the diagnosis judges, or one group of it
    claims: tuple[Claim, ...]
    verdicts: tuple[ClaimVerdict, ...] = ()
    status: Literal["verified", "refuted", "unverifiable", "untested"] = "untested"
    step: float | None = None  # where it changed (the first step after the change point)
    # The step the new regime began at, in the train-log fact, to the resolution of a
    # window: the earliest first step of the old regime's last window and the windows up
    # to the new regime's first (a restarted run's warm-up window starts where it
    # resumed; interleaved devices put a step on both sides of a window's edge). What
    # events and the derived baseline's checkpoint are dated against (agent.analysis.timing).
    began: Ref | None = None
    began_step: float | None = None
    ratio: float | None = None
    explained_by: tuple[str, ...] = ()
    # What a headline adds from the fact (why a drop is not confirmed, what would make
    # the speed observable, the loss's value): text the symptom's own numbers gave.
    note: str = ""

    def unsteady(self) -> str:
        """For a refuted steady claim, which way the last quarter moved: a climb once
        compiling is done is a healthy run's, a slowdown is a symptom."""
        return _unsteady_word(self.verdicts)

    def headline(self) -> str:
        """The symptom in a few words, from its own numbers."""
        where = f" at step {_num(self.step)}" if self.step is not None else ""
        if self.kind == "throughput_drop":
            return f"{self.series} fell to {self.ratio:.2f}×{where}"
        if self.kind == "throughput_rise":
            return f"{self.series} rose to {self.ratio:.2f}×{where}"
        if self.kind == "throughput_possible_drop":
            return (
                f"{self.series}: possible drop to {self.ratio:.2f}×{where}, not confirmed"
                f" ({self.note})"
            )
        if self.kind == "loss_diverged":
            return f"the loss diverged{where}: {self.note}"
        if self.kind == "stalled":
            after = f" after step {_num(self.step)}" if self.step is not None else ""
            return f"the run stalled{after}: {self.note}"
        if self.kind == "stopped":
            after = f" after step {_num(self.step)}" if self.step is not None else ""
            return f"the run is not running{after}: {self.note}"
        if self.kind == "speed_unobserved":
            return f"the run's speed is not observed: {self.note}"
        if self.kind == "loss_nonfinite" and self.series != "loss":
            return (
                f"the {self.series} is {self.note}{where} on, while the logged loss stays"
                " finite (a trainer that filters NaN losses, as Trainer's"
                " logging_nan_inf_filter does, logs them so)"
            )
        if self.kind == "loss_nonfinite":
            return f"the loss is {self.note}{where}"
        if self.kind == "throughput_steady":
            if self.status == "refuted":
                return (
                    f"{self.series} {self.unsteady()} in its last quarter, with no change"
                    " point sustained enough to place"
                )
            return f"{self.series} is steady"
        return f"the run restarted{where}" + (f" ({self.note})" if self.note else "")


def _unsteady_word(verdicts: Sequence[ClaimVerdict]) -> str:
    """Which way a refuted steady claim went: its first claim is "the last quarter is
    not below 0.8× the whole", its second "below 1.25×" (``find``)."""
    fell = bool(verdicts) and verdicts[0].outcome == "fails"
    rose = len(verdicts) > 1 and verdicts[1].outcome == "fails"
    if fell and not rose:
        return "slowed"
    if rose and not fell:
        return "climbed"
    return "was not steady"


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"


class _Series(NamedTuple):
    label: str
    paths: tuple[tuple[str | int, ...], ...]
    subject: bool


def _series(fact: Fact) -> list[_Series]:
    """The subject's series and each group's, as paths inside a window."""
    found = subject(fact)
    if found is None:
        return []
    value = _dict(fact.value)
    groups = sorted(str(g) for g in _dict(value.get("groups")))
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


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _points(
    windows: Sequence[object], paths: Sequence[Sequence[str | int]]
) -> list[tuple[int, float]]:
    """(window index, value) for every window with a value (``claims.window_series``:
    the same numbers a ``WindowRatio`` claim is checked on)."""
    return [(i, v) for i, v, _, _ in window_series(list(windows), paths)]


def _l1(ys: Sequence[float]) -> float:
    m = statistics.median(ys)
    return sum(abs(y - m) for y in ys)


def _split(ys: Sequence[float], least: int) -> int | None:
    """The split k (ys[:k] | ys[k:]) that leaves the least absolute deviation from each
    side's median: the robust L1 cost, which one slow window moves little and which
    lands on the change itself (a score scaled by the sides' sizes drifts to the
    middle)."""
    splits = range(least, len(ys) - least + 1)
    if not splits:
        return None
    return min(splits, key=lambda k: (_l1(ys[:k]) + _l1(ys[k:]), k))


def _sustained(left: Sequence[float], right: Sequence[float]) -> float | None:
    """The ratio of the medians (right / left) when it is a sustained change: below
    ``DROP`` (or at least ``RISE``), and the windows of one side below those of the other
    beyond chance: Mann-Whitney's U, one-sided, z > ``Z_SUSTAINED`` (p < 0.001). Too few
    windows can never pass (3 and 3, or 6 and 6, cannot reach it): a short log's wobble is
    no change."""
    ratio = math.exp(statistics.median(right) - statistics.median(left))
    if DROP <= ratio < RISE:
        return None
    n1, n2 = len(left), len(right)
    lower = sum((r < x) + 0.5 * (r == x) for r in right for x in left)
    u = lower if ratio < 1 else n1 * n2 - lower
    z = (u - n1 * n2 / 2) / math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    return ratio if z > Z_SUSTAINED else None


def change_points(values: Sequence[float]) -> list[int]:
    """Indices k where a new regime starts (values[k] is its first).

    Candidates come from binary segmentation, split on the L1 cost whatever the split's
    size, three levels deep (a drop and a recovery leave no change between the series'
    halves, only inside them). Then each candidate is tested against the segments on
    either side of it, and the weakest that fails is removed until all pass: what stays
    is a sustained change between its neighbours."""
    ys = [math.log(v) for v in values]
    # A regime lasts a tenth of the log at least (and MIN_WINDOWS): a few slow windows
    # in a long noisy log are not a change, and a crawl shorter than that is not told.
    least = max(MIN_WINDOWS, len(ys) // LEAST_SHARE)
    cuts: set[int] = set()

    def segment(lo: int, hi: int, depth: int) -> None:
        if depth == 0 or hi - lo < 2 * least:
            return
        k = _split(ys[lo:hi], least)
        if k is None:
            return
        cuts.add(lo + k)
        segment(lo, lo + k, depth - 1)
        segment(lo + k, hi, depth - 1)

    segment(0, len(ys), 3)
    while cuts:
        order = sorted(cuts)
        bounds = [0, *order, len(ys)]
        failing = []
        for j, k in enumerate(order):
            left, right = ys[bounds[j] : k], ys[k : bounds[j + 2]]
            if min(len(left), len(right)) < least or _sustained(left, right) is None:
                gap = abs(statistics.median(right) - statistics.median(left))
                failing.append((gap, k))
        if not failing:
            break
        cuts.discard(min(failing)[1])
    # Each cut found in a wider segment may sit a few windows off (a segment that holds
    # two regimes has a flat cost around them): place it again between its neighbours.
    order = sorted(cuts)
    for j in range(len(order)):
        lo = order[j - 1] if j else 0
        hi = order[j + 1] if j + 1 < len(order) else len(ys)
        moved = _split(ys[lo:hi], least)
        if moved is not None and _sustained(ys[lo : lo + moved], ys[lo + moved : hi]):
            order[j] = lo + moved
    cuts = set(order)
    strongest = sorted(cuts, key=lambda k: -abs(_jump(ys, sorted(cuts), k)))
    return sorted(strongest[:MAX_CHANGES])


def _jump(ys: Sequence[float], order: list[int], k: int) -> float:
    bounds = [0, *order, len(ys)]
    j = order.index(k)
    return statistics.median(ys[k : bounds[j + 2]]) - statistics.median(ys[bounds[j] : k])


def _warm_up(windows: Sequence[object], fact: Fact) -> set[int]:
    """Windows that hold a start: the first, and the one holding each restart's line
    and the next. Where the speed is a difference of counters, a window's rate spans
    only records after the start (``speed``: no difference crosses a segment), so only
    the window holding the start is left out."""
    skip = {0}
    counter = _dict(_dict(fact.value).get("speed")).get("kind") in COUNTER_KINDS
    samples = _dict(_dict(fact.value).get("steps")).get("restart_samples") or []
    lines = [s.get("line") for s in samples if isinstance(s, dict)]
    # A run segment's start (a resume whose steps go on, ``train_runtime`` restarting)
    # is a start too; the log's first segment is window 0's.
    segments = _dict(_dict(fact.value).get("speed")).get("segments") or []
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


POSSIBLE_LEAST = 2  # windows on each side of a drop that is possible, not confirmed
# A drop too short to confirm is told only when it is large: a few windows of a short
# run on a shared machine swing by a third (a neighbour's burst, a checkpoint save inside
# a logging interval), and a halving is no such swing.
POSSIBLE_DROP = 0.5


def _possible_drop(values: Sequence[float]) -> tuple[int, float] | None:
    """A drop too short or too few windows long to be sustained (``change_points``),
    yet plain: (k, ratio) where every window from ``k`` on is below the median before it
    and their median is below ``POSSIBLE_DROP`` times that. A run that slowed in its last few
    records is said to have possibly slowed, never to be fine."""
    ys = [math.log(v) for v in values]
    k = _split(ys, POSSIBLE_LEAST)
    if k is None:
        return None
    before, after = values[:k], values[k:]
    ratio = statistics.median(after) / statistics.median(before)
    if ratio >= POSSIBLE_DROP or max(after) >= statistics.median(before):
        return None
    return k, ratio


def _unconfirmed(k: int, n: int) -> str:
    """Why a possible drop is not a confirmed one, in the terms ``change_points`` uses."""
    least = max(MIN_WINDOWS, n // LEAST_SHARE)
    if min(k, n - k) < least:
        return (
            f"{n - k} window(s) after it and {k} before; a sustained change needs {least}"
            " on each side"
        )
    return "the windows on either side do not differ beyond chance: Mann-Whitney p ≥ 0.001"


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
        points = [(i, v) for i, v in _points(windows, series.paths) if i not in skip]
        if len(points) < 2 * POSSIBLE_LEAST or (
            len(points) < 2 * MIN_WINDOWS and not series.subject
        ):
            continue
        idx = [i for i, _ in points]
        values = [v for _, v in points]
        ref = Ref(fact=fact.id, path=where, label=series.label)
        cuts = change_points(values) if len(points) >= 2 * MIN_WINDOWS else []
        bounds = [0, *cuts, len(points)]
        for j, k in enumerate(cuts):
            before = (idx[bounds[j]], idx[k - 1])
            after = (idx[k], idx[bounds[j + 2] - 1])
            ratio = statistics.median(values[k : bounds[j + 2]]) / statistics.median(
                values[bounds[j] : k]
            )
            drop = ratio < 1
            window = windows[idx[k]]
            step = window.get("first_step") if isinstance(window, dict) else None
            began = _began(fact, windows, idx[k - 1], idx[k], where)
            out.append(
                Symptom(
                    kind="throughput_drop" if drop else "throughput_rise",
                    series=series.label,
                    subject=series.subject,
                    step=step if isinstance(step, int | float) else None,
                    began=began[0] if began else None,
                    began_step=began[1] if began else None,
                    ratio=ratio,
                    claims=(_ratio(ref, series, (before, after), DROP if drop else RISE, drop),),
                )
            )
        possible = _possible_drop(values) if not cuts and series.subject else None
        if possible is not None:
            k, ratio = possible
            began = _began(fact, windows, idx[k - 1], idx[k], where)
            window = windows[idx[k]]
            step = window.get("first_step") if isinstance(window, dict) else None
            out.append(
                Symptom(
                    kind="throughput_possible_drop",
                    series=series.label,
                    subject=True,
                    step=step if isinstance(step, int | float) else None,
                    began=began[0] if began else None,
                    began_step=began[1] if began else None,
                    ratio=ratio,
                    note=_unconfirmed(k, len(values)),
                    claims=(
                        _ratio(
                            ref,
                            series,
                            ((idx[0], idx[k - 1]), (idx[k], idx[-1])),
                            POSSIBLE_DROP,
                            True,
                        ),
                    ),
                )
            )
        elif not cuts and series.subject and len(points) >= STEADY_MIN:
            quarter = max(2, len(points) // 4)
            whole = (idx[0], idx[-1])
            recent = (idx[-quarter], idx[-1])
            out.append(
                Symptom(
                    kind="throughput_steady",
                    series=series.label,
                    subject=True,
                    claims=(
                        _ratio(ref, series, (whole, recent), DROP, False),
                        _ratio(ref, series, (whole, recent), RISE, True),
                    ),
                )
            )
    return out


def find(fact: Fact | None) -> list[Symptom]:
    """The symptoms the trainlog ``fact`` shows, unchecked (``check_all`` checks them)."""
    if fact is None or not fact.ok:
        return []
    value = _dict(fact.value)
    windows = value.get("windows")
    if not isinstance(windows, list):
        return []
    out = _throughput(fact, windows, ("windows",), _series(fact), _warm_up(windows, fact))
    if subject(fact) is None or not any(s.subject for s in _series(fact)):
        out.append(_speed_unobserved(fact))
    out += _loss_nonfinite(fact)
    out += _loss_diverged(fact, windows)
    steps = _dict(value.get("steps"))
    restarts = steps.get("restarts")
    if isinstance(restarts, int) and restarts > 0:
        samples = steps.get("restart_samples") or []
        first = samples[0].get("to_step") if samples and isinstance(samples[0], dict) else None
        out.append(
            restart(
                fact,
                ("steps", "restarts"),
                "times the logged step went back",
                1,
                step=first if isinstance(first, int | float) else None,
            )
        )
    elif _segments(value):
        out.append(_resumed(fact, _segments(value)))
    return out


def bar_windows(console: Fact) -> tuple[tuple[PathPart, ...], list[object], dict[str, Any]] | None:
    """Where the console's chosen progress bar keeps its windows, the windows, and the
    bar's family (``tools.parsers._bars``); None without one."""
    progress = _dict(_dict(console.value).get("progress"))
    chosen = progress.get("chosen")
    families = progress.get("families")
    if not isinstance(chosen, int) or not isinstance(families, list):
        return None
    if not 0 <= chosen < len(families):
        return None
    family = _dict(families[chosen])
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
    skip = {0} | {i for i, w in enumerate(windows) if _dict(w).get("bar_start")}
    series = [_Series(label=label, paths=(("speed",),), subject=True)]
    return _throughput(console, windows, where, series, skip)


def find_in_checkpoints(checkpoints: Fact | None) -> list[Symptom]:
    """The speed's symptoms from the checkpoints' pace (steps over their modification
    times, ``tools.probes.checkpoints.pace``): the last resort, for a run whose logs state
    no speed at all. Every interval holds a save, so none is a warm-up."""
    if checkpoints is None or not checkpoints.ok:
        return []
    windows = _dict(_dict(checkpoints.value).get("pace")).get("windows")
    if not isinstance(windows, list) or not windows:
        return []
    label = "steps/s (between checkpoints, by their modification times)"
    series = [_Series(label=label, paths=(("speed",),), subject=True)]
    return _throughput(checkpoints, windows, ("pace", "windows"), series, set())


RUN_RATES = ("train_tokens_per_second", "train_samples_per_second", "train_steps_per_second")


def with_run_summaries(found: list[Symptom], console: Fact | None) -> list[Symptom]:
    """A speed left unobserved, with what the Trainer's summaries of its train() calls
    state (an average over each call, not a speed over time): each call's rates cited
    where the console holds them, so the report shows the trainer's own figures."""
    if console is None or not console.ok:
        return found
    summaries = _dict(console.value).get("run_summaries")
    if not isinstance(summaries, list) or not summaries:
        return found
    claims = []
    for i, summary in enumerate(summaries[-4:], start=max(0, len(summaries) - 4)):
        figures = _dict(_dict(summary).get("figures"))
        for key in RUN_RATES:
            if key in figures:
                label = f"{key} of the Trainer's run summary at line {_dict(summary).get('line')}"
                path = ("run_summaries", i, "figures", key)
                claims.append(
                    Claim(predicate=Exists(a=Ref(fact=console.id, path=path, label=label)))
                )
                break
    added = (
        f"; the Trainer's summaries of its {len(summaries)} train() call(s) state only an"
        " average over each"
    )
    return [
        s.model_copy(update={"claims": (*s.claims, *claims), "note": s.note + added})
        if s.kind == "speed_unobserved"
        else s
        for s in found
    ]


def judged_speed(symptoms: Sequence[Symptom]) -> bool:
    """Whether a symptom judges the run's speed (a change, a possible drop, steady)."""
    return any(s.subject and s.kind.startswith("throughput_") for s in symptoms)


def _segments(value: dict[str, Any]) -> list[dict[str, Any]]:
    """The run segments after the first (``speed.segments``): each a resume or restart
    the speed's counters show, whether or not the step went back."""
    segs = _dict(value.get("speed")).get("segments")
    return [s for s in segs[1:] if isinstance(s, dict)] if isinstance(segs, list) else []


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
        ("speed", "segment_count"),
        "run segments (a new one where the step or the speed's counters went back)",
        2,
        note=str(first.get("why") or ""),
        step=step if isinstance(step, int | float) else None,
    )


def speed_hint(value: dict[str, Any]) -> str:
    """What would make a run's speed observable, by what its log shows of its trainer."""
    fmt = value.get("format")
    seen = {str(k) for k in value.get("keys_seen") or ()}
    if fmt == "trainer_state" or {"grad_norm", "learning_rate", "epoch"} <= seen:
        return (
            "Hugging Face Trainer logs its speed with include_num_input_tokens_seen=True"
            " (train_tokens_per_second at each logging step); its progress bar"
            " (disable_tqdm=False, the default) on the console states one too"
        )
    if fmt == "csv":
        return (
            "Lightning logs it with the ThroughputMonitor callback"
            " (throughput/tokens_per_sec); or a tokens/s or a timestamp column"
        )
    return (
        "a tokens/s field, or a running token count with a timestamp, in each record"
        " (or name them in the profile's log_fields); or a tqdm progress bar on the console"
    )


def _speed_unobserved(fact: Fact) -> Symptom:
    value = _dict(fact.value)
    have = _dict(value.get("speed")).get("windows_with_speed")
    counted = isinstance(have, int) and have > 0
    note = (
        f"{have} window(s) with a speed, too few to tell a trend; {speed_hint(value)}"
        if counted
        else speed_hint(value)
    )
    return Symptom(
        kind="speed_unobserved",
        series="speed",
        subject=True,
        note=note,
        claims=(
            Claim(
                predicate=AtMost(
                    a=Ref(
                        fact=fact.id,
                        path=("speed", "windows_with_speed"),
                        label="train-log windows with a speed",
                    ),
                    value=(have if counted else 0),
                )
            ),
        ),
    )


DIVERGED = 2.0  # the last quarter's median loss at least this times the early windows'


def _loss_diverged(fact: Fact, windows: Sequence[object]) -> list[Symptom]:
    """A loss that grew: the median of the last quarter of the windows' median losses at
    least ``DIVERGED`` times the early windows' (2 to 1+n/4, as the speed's early
    baseline), dated at the first window after them whose loss is past that. A loss
    that is not positive everywhere (some objectives go negative) is not judged."""
    paths = (("loss_median",),)
    points = [(i, v) for i, v, _, _ in window_series(list(windows), paths)]
    n = len(windows)
    early = [(i, v) for i, v in points if 1 <= i <= max(1, n // 4)]
    if len(points) < 2 * STEADY_MIN or len(early) < 2:
        return []
    values = [v for _, v in points]
    if min(values) <= 0:
        return []
    recent = points[-max(2, len(points) // 4) :]
    base = statistics.median(v for _, v in early)
    now = statistics.median(v for _, v in recent)
    if now < DIVERGED * base:
        return []
    first = next(i for i, v in points if i > early[-1][0] and v >= DIVERGED * base)
    window = windows[first]
    step = window.get("first_step") if isinstance(window, dict) else None
    ref = Ref(fact=fact.id, path=("windows",), label="loss")
    spans = ((early[0][0], early[-1][0]), (recent[0][0], recent[-1][0]))
    return [
        Symptom(
            kind="loss_diverged",
            series="loss",
            subject=False,
            step=step if isinstance(step, int | float) else None,
            ratio=now / base,
            note=f"its recent median is {now / base:.2f}× the early windows'",
            claims=(
                Claim(
                    predicate=WindowRatio(
                        a=ref,
                        series=paths,
                        before=spans[0],
                        after=spans[1],
                        ratio=DIVERGED,
                        below=False,
                    )
                ),
            ),
        )
    ]


def _broke(fact: Fact, root: str, series: str, note: str, claim: Claim) -> Symptom:
    """A non-finite loss or gradient symptom, dated at ``root``'s first such record."""
    step = _dict(_dict(_dict(fact.value).get(root)).get("first_nonfinite")).get("step")
    dated = isinstance(step, int | float)
    return Symptom(
        kind="loss_nonfinite",
        series=series,
        subject=False,
        step=step if dated else None,
        began=Ref(fact=fact.id, path=(root, "first_nonfinite", "step"), label="step")
        if dated
        else None,
        began_step=step if dated else None,
        note=note,
        claims=(claim,),
    )


def _grad_nonfinite(fact: Fact) -> list[Symptom]:
    """A NaN or infinite gradient norm where the logged loss stayed finite: a trainer
    that filters such losses out of its log (Trainer's logging_nan_inf_filter writes 0)
    still shows it in the norm."""
    first = _dict(_dict(_dict(fact.value).get("grad_norm")).get("first_nonfinite"))
    if not first:
        return []
    field = first.get("field") or "grad_norm"
    path = ("grad_norm", "first_nonfinite", "value")
    label = f"the first NaN or infinite {field}"
    claim = Claim(predicate=Exists(a=Ref(fact=fact.id, path=path, label=label)))
    return [
        _broke(fact, "grad_norm", f"gradient norm ({field})", f"{first.get('value')} from", claim)
    ]


def _loss_nonfinite(fact: Fact) -> list[Symptom]:
    loss = _dict(_dict(fact.value).get("loss"))
    count = loss.get("nonfinite")
    if not isinstance(count, int) or count < 1:
        return _grad_nonfinite(fact)
    value = _dict(loss.get("first_nonfinite")).get("value", "not finite")
    label = "records whose loss is NaN or infinite"
    claim = Claim(
        predicate=AtLeast(a=Ref(fact=fact.id, path=("loss", "nonfinite"), label=label), value=1)
    )
    return [_broke(fact, "loss", "loss", f"{value} in {count} record(s), first", claim)]


def observed_healthy(symptoms: Sequence[Symptom]) -> bool:
    """The judged speed was observed and held: a verified steady or rise, or a last
    quarter that climbed (compiling done), and no possible drop or broken loss."""
    ok = any(
        s.subject
        and (
            (s.kind in ("throughput_steady", "throughput_rise") and s.status == "verified")
            or (
                s.kind == "throughput_steady"
                and s.status == "refuted"
                and s.unsteady() == "climbed"
            )
        )
        for s in symptoms
    )
    return ok and not any(
        s.status == "verified" and s.kind in ("throughput_possible_drop", *BROKEN) for s in symptoms
    )


# Symptoms that are faults whatever the speed: a loss gone NaN or infinite or diverged,
# a trainer alive whose logs stopped.
BROKEN = ("loss_nonfinite", "loss_diverged", "stalled")


# Symptoms of a slower or stuck run: what a family that is no fault alone needs.
SLOWED = ("throughput_drop", "throughput_possible_drop", "stalled")


def slowed(symptoms: Sequence[Symptom]) -> bool:
    """The run shows a verified drop (confirmed or possible) of the judged throughput,
    or a stall."""
    return any(
        s.status == "verified" and s.kind in SLOWED and (s.subject or s.kind == "stalled")
        for s in symptoms
    )


def is_fault(hypothesis: Hypothesis, symptoms: Sequence[Symptom]) -> bool:
    """A verified hypothesis that says something is wrong: one that is a fault alone, or
    a cause of slowness on a run that shows a slowdown or a stall."""
    return hypothesis.status == "verified" and (hypothesis.fault_alone or slowed(symptoms))


def broken(symptoms: Sequence[Symptom]) -> list[Symptom]:
    """The verified symptoms of ``BROKEN``."""
    return [s for s in symptoms if s.kind in BROKEN and s.status == "verified"]


def check_all(symptoms: Sequence[Symptom], ledger: Ledger) -> list[Symptom]:
    """Each symptom with its claims checked, by the hypotheses' status rule."""
    out = []
    for symptom in symptoms:
        verdicts = tuple(check(c, ledger) for c in symptom.claims)
        out.append(symptom.model_copy(update={"verdicts": verdicts, "status": status_of(verdicts)}))
    return out


def explain(symptoms: Sequence[Symptom], verified_kinds: Sequence[str]) -> list[Symptom]:
    """Each verified drop of the judged throughput with the verified families that
    explain a drop."""
    by = tuple(k for k in verified_kinds if k in EXPLAINS_DROP)
    return [
        s.model_copy(update={"explained_by": by})
        if s.kind == "throughput_drop" and s.status == "verified"
        else s
        for s in symptoms
    ]


def unexplained(symptoms: Sequence[Symptom]) -> list[Symptom]:
    """Verified drops of the judged throughput that no verified family explains."""
    return [
        s
        for s in symptoms
        if s.kind == "throughput_drop"
        and s.subject
        and s.status == "verified"
        and not s.explained_by
    ]
