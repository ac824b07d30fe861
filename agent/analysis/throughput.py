"""Which throughput a diagnosis compares, for a train log of any groups.

A log's series are whatever it carries (``tools.parsers.trainlog`` groups records by
role, device and rank fields, or keeps one series): one role=drafter series, three
drafter devices, ranks without roles, or none at all. The *subject* is the one quantity
the rules weigh (is the run slower than its baseline?):

- exactly one ``role=drafter`` series: that series (the reference trainer's log);
- several ``role=drafter`` series: their aggregate, the sum of their recent medians
  (devices work side by side, so their tokens/s add up);
- no role field: the only series, or the aggregate of all of them, summed alike;
- a log without groups: the median over its records.

Each series inside an aggregate is compared on its own as well, so a report shows which
device fell behind. The words name what the log says: "drafter" only where the log has
``role=drafter``; other series by their own labels (``rank=0``).

Where no snapshot exists, the baseline is what the newest checkpoint recorded (when it
records a throughput and the subject is that one drafter series: a per-device figure
measured by the trainer itself), else the log's own early window (``early_median``, the
steady state after warm-up; see ``tools.parsers.trainlog.EARLY_WHY``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.analysis.baseline import Comparable, DiffEntry
from agent.model.claims import MISSING, resolve
from agent.model.facts import Fact
from tools.figures import finite_number
from tools.parsers import trainlog_paths as log_paths

__all__ = ["PRIMARY_KEYS", "Subject", "primary_entry", "subject", "throughput_comparables"]

# Diff keys of the subject: the drafter's (the log says role=drafter), or the log's.
DRAFTER_KEY = "throughput.drafter"
LOG_KEY = "throughput"
PRIMARY_KEYS = (DRAFTER_KEY, LOG_KEY)
MAX_PER_GROUP = 16  # series compared one by one inside an aggregate


@dataclass(frozen=True)
class Subject:
    key: str
    label: str  # what a report calls it: "drafter tokens/s (median of the last N records)"
    who: str  # "drafter ", "rank=0 " or "" (a prefix for other labels)
    path: tuple[str | int, ...]  # the recent median in the trainlog fact
    early: tuple[str | int, ...]  # the log's own early-window baseline
    last_step: tuple[str | int, ...]
    members: tuple[str, ...]  # the series inside an aggregate (empty: one series)


def _one(key: str, group: str, who: str, records: object = None) -> Subject:
    over = f"the last {records} records" if isinstance(records, int) else "recent records"
    return Subject(
        key=key,
        label=f"{who}tokens/s (median of {over})",
        who=who,
        path=log_paths.group(group, "throughput", "recent_median"),
        early=log_paths.group(group, "throughput", "early_median"),
        last_step=log_paths.group(group, "steps", "last"),
        members=(),
    )


def _recent_records(fact: Fact, group: str) -> object:
    return resolve(fact, log_paths.group(group, "throughput", "recent_records"))


def _aggregate(key: str, name: str, members: list[str], who: str) -> Subject:
    return Subject(
        key=key,
        label=f"{who}tokens/s (sum of the recent medians of {len(members)} series,"
        " each over the last quarter of its records)",
        who=who,
        path=log_paths.aggregate(name, "recent_median"),
        early=log_paths.aggregate(name, "early_median"),
        last_step=log_paths.STEPS_MAX,
        members=tuple(members),
    )


def subject(fact: Fact | None) -> Subject | None:
    """The throughput ``fact`` (a trainlog fact) is judged by, when it holds one."""
    if fact is None or not fact.ok:
        return None
    groups = resolve(fact, log_paths.GROUPS)
    found: Subject
    if isinstance(groups, dict) and groups:
        names = sorted(str(g) for g in groups)
        drafters = [g for g in names if "role=drafter" in g.split(",")]
        if len(drafters) == 1:
            found = _one(DRAFTER_KEY, drafters[0], "drafter ", _recent_records(fact, drafters[0]))
        elif drafters:
            found = _aggregate(DRAFTER_KEY, "role=drafter", drafters, "drafter ")
        elif len(names) == 1:
            found = _one(LOG_KEY, names[0], f"{names[0]} ", _recent_records(fact, names[0]))
        else:
            found = _aggregate(LOG_KEY, "all", names, "")
    else:
        found = _speed(fact)
    return found if finite_number(resolve(fact, found.path)) is not None else None


def _speed(fact: Fact) -> Subject:
    """A log of one series: its speed as the trainer states it (``speed`` in the
    trainlog fact: a stated rate, the difference of a stated average since the run
    segment began, or a running total over seconds), over its recent records."""
    unit = resolve(fact, log_paths.SPEED_UNIT)
    field = resolve(fact, log_paths.SPEED_FIELD)
    kind = resolve(fact, log_paths.SPEED_KIND)
    records = resolve(fact, log_paths.SPEED_RECENT_RECORDS)
    over = f"last {records} records" if isinstance(records, int) else "recent records"
    name = str(unit) if isinstance(unit, str) else "tokens/s"
    if kind == "stated_average" and isinstance(field, str):
        label = f"{name} (from {field}, over the {over})"
    elif kind == "stated" and isinstance(field, str):
        label = f"{name} ({field}, median of the {over})"
    else:
        label = f"{name} (over the {over})"
    return Subject(
        key=LOG_KEY,
        label=label,
        who="",
        path=log_paths.SPEED_RECENT,
        early=log_paths.SPEED_EARLY,
        last_step=log_paths.STEPS_MAX,
        members=(),
    )


def throughput_comparables(
    trainlog: Fact | None,
    checkpoints: Fact | None,
    recorded: tuple[str | int, ...],
) -> list[Comparable]:
    """The subject and, inside an aggregate, each of its series. ``recorded`` locates
    the throughput the newest checkpoint recorded, in the checkpoints fact."""
    found = subject(trainlog)
    if found is None:
        return []
    derived: tuple[str, tuple[str | int, ...]] = ("trainlog", found.early)
    baseline_is = "the early windows' median"
    checkpoint_says = (
        checkpoints is not None and finite_number(resolve(checkpoints, recorded)) is not None
    )
    if checkpoint_says and not found.members and found.key == DRAFTER_KEY:
        derived = ("checkpoints", recorded)
        baseline_is = "what the newest checkpoint recorded"
    table = [
        Comparable(
            found.key,
            found.label,
            "trainlog",
            found.path,
            derived=derived,
            derived_is=baseline_is,
        )
    ]
    for group in found.members[:MAX_PER_GROUP]:
        if trainlog is None:
            break
        one = _one(f"{LOG_KEY}:{group}", group, f"{group} ", _recent_records(trainlog, group))
        if resolve(trainlog, one.path) is not MISSING:
            table.append(
                Comparable(
                    one.key,
                    one.label,
                    "trainlog",
                    one.path,
                    derived=("trainlog", one.early),
                    derived_is="the early windows' median",
                )
            )
    return table


def primary_entry(diff: Sequence[DiffEntry]) -> DiffEntry | None:
    """The subject's entry in a baseline diff, if it was compared."""
    return next((d for d in diff if d.key in PRIMARY_KEYS), None)
