"""Is the run still advancing, and where did it start again: a trainer whose process
lives while its logs stopped (stalled); logs that stopped with no process left in the
workspace (stopped: the run is over, finished or not); a resume the console states where
the train log shows none; a live trainer that started after the train log's first record
(a later process wrote the rest).

A hung trainer (a deadlock, a collective no rank joins, a sleep left in a callback) is
the worst thing to call healthy: its log simply ends, and every figure in it looks
fine. The symptom is three checked facts together:

- each of the run's logs (the train log and the console) has not changed for a while
  (``age_s``, the seconds since its last write on the target's own clock, read by the
  trainlog and stdoutlog probes);
- "a while" is measured against the run's own logging interval: ``STALL_FACTOR`` times
  the median seconds between its records (the speed's clock, else the records'
  timestamps), and never under ``STALL_FLOOR`` seconds;
- a trainer process runs in the workspace (its working directory is there) and is not
  a zombie.

Without an interval the stall is not judged: a log that never says how often it writes
cannot be late.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from agent.analysis.detect import restart
from agent.analysis.symptoms import Symptom
from agent.model.claims import Absent, AtLeast, AtMost, Claim, Greater, Matches, Ref, resolve
from agent.model.facts import Fact, Ledger, as_dict, latest, observed
from tools.figures import finite_number
from tools.parsers import trainlog_paths as log_paths
from tools.parsers.signatures import CHECKPOINT_LOAD, RESUME, RUN_SUMMARY, console_path
from tools.probes import value_paths as vp

STALL_FACTOR = 5.0
STALL_FLOOR = 30.0  # seconds: a checkpoint save or an evaluation pauses a log that long
ALIVE_STATES = "RSD"  # running, sleeping, waiting on I/O: not a zombie, not stopped


def logging_interval(trainlog: Fact) -> tuple[float, tuple[str, ...], str] | None:
    """The run's own seconds between records, where it is in the fact, and what it is."""
    spoken = finite_number(resolve(trainlog, log_paths.SPEED_INTERVAL))
    if spoken is not None and spoken > 0:
        return spoken, log_paths.SPEED_INTERVAL, "median seconds between its records"
    stamped = finite_number(resolve(trainlog, log_paths.TIME_INTERVAL))
    if stamped is not None and stamped > 0:
        return stamped, log_paths.TIME_INTERVAL, "median seconds between its timestamps"
    return None


def _trainer_in(processes: Fact, root: str) -> int | None:
    """The index of a live process whose working directory is the workspace."""
    for i, proc in enumerate(as_dict(processes.value).get("processes") or []):
        proc = as_dict(proc)
        cwd, state = proc.get("cwd"), proc.get("state")
        if (
            isinstance(cwd, str)
            and (cwd == root or cwd.startswith(root.rstrip("/") + "/"))
            and isinstance(state, str)
            and state in ALIVE_STATES
        ):
            return i
    return None


class _Quiet(NamedTuple):
    """Logs that have not grown for over the threshold the run's interval gives."""

    trainlog: Fact
    processes: Fact
    root: str
    seconds: float
    interval_path: tuple[str, ...]
    what: str
    threshold: float
    logs: list[tuple[Fact, float, str]]

    @property
    def quiet(self) -> float:
        return min(age for _, age, _ in self.logs)

    def claims(self) -> list[Claim]:
        """Each log's age over the threshold, and the interval it was computed from,
        cited where it stands."""
        out = [
            Claim(
                predicate=AtLeast(
                    a=Ref(fact=fact.id, path=vp.FILE_AGE, label=f"seconds since the {name} grew"),
                    value=round(self.threshold, 3),
                )
            )
            for fact, _, name in self.logs
        ]
        out.append(
            Claim(
                predicate=AtMost(
                    a=Ref(
                        fact=self.trainlog.id,
                        path=self.interval_path,
                        label=f"the run's {self.what}",
                    ),
                    value=self.seconds,
                )
            )
        )
        return out

    def last_step(self) -> float | None:
        """The step it stopped after, where the train log was written last (or with the
        others): a console that went on after it (a Trainer's checkpoint state) knows
        later steps."""
        mtime = {
            id(f): finite_number(as_dict(as_dict(f.value).get("file")).get("mtime"))
            for f, _, _ in self.logs
        }
        own = mtime.get(id(self.trainlog))
        if own is None or any(m is not None and m > own for m in mtime.values()):
            return None
        return finite_number(resolve(self.trainlog, log_paths.STEPS_MAX))

    def symptom(self, kind: Literal["stalled", "stopped"], tail: str, more: list[Claim]) -> Symptom:
        """The symptom: the logs' quiet and its threshold's interval, then ``more``."""
        return Symptom(
            kind=kind,
            series="progress",
            subject=False,
            step=self.last_step(),
            note=f"{self.said()}, {tail}",
            claims=(*self.claims(), *more),
        )

    def said(self) -> str:
        return (
            f"no log has grown for {self.quiet:,.0f} s, over {STALL_FACTOR:g}× the run's"
            f" logging interval ({self.what}: {self.seconds:.3g} s [{self.trainlog.id}], at"
            f" least {STALL_FLOOR:g} s)"
        )


def _quiet(ledger: Ledger, fact_ids: Sequence[str]) -> _Quiet | None:
    """The run's logs when every one of them has been quiet past the threshold; None when
    one still grows, or there is no interval, workspace or process listing to judge by."""
    trainlog = observed(latest(ledger, fact_ids, "trainlog"))
    layout = observed(latest(ledger, fact_ids, "layout"))
    processes = observed(latest(ledger, fact_ids, "processes"))
    if trainlog is None or layout is None or processes is None:
        return None
    root = as_dict(layout.value).get("root")
    interval = logging_interval(trainlog)
    if not isinstance(root, str) or interval is None:
        return None
    seconds, interval_path, what = interval
    threshold = max(STALL_FACTOR * seconds, STALL_FLOOR)
    logs: list[tuple[Fact, float, str]] = []
    for probe, name in (("trainlog", "train log"), ("stdoutlog", "console log")):
        fact = observed(latest(ledger, fact_ids, probe))
        age = finite_number(as_dict(as_dict(fact.value).get("file")).get("age_s")) if fact else None
        if fact is not None and age is not None:
            logs.append((fact, age, name))
    if not logs or min(age for _, age, _ in logs) < threshold:
        return None
    return _Quiet(trainlog, processes, root, seconds, interval_path, what, threshold, logs)


def stalled(ledger: Ledger, fact_ids: Sequence[str]) -> Symptom | None:
    """The stall symptom, unchecked, when the facts show one; None when they do not (a
    log still growing, no live trainer in the workspace, or no interval to judge by)."""
    found = _quiet(ledger, fact_ids)
    if found is None:
        return None
    processes, root = found.processes, found.root
    alive = _trainer_in(processes, root)
    if alive is None:
        return None
    proc = as_dict(as_dict(processes.value)["processes"][alive])
    pid = proc.get("pid")

    def about(part: str, label: str, pattern: str) -> Claim:
        ref = Ref(fact=processes.id, path=vp.process(alive, part), label=label)
        return Claim(predicate=Matches(a=ref, pattern=pattern))

    return found.symptom(
        "stalled",
        f"while trainer pid {pid} lives in the workspace",
        [
            about(
                "cwd",
                f"working directory of trainer pid {pid}",
                "^" + re.escape(root.rstrip("/")) + "(/|$)",
            ),
            about("state", f"state of trainer pid {pid}", f"^[{ALIVE_STATES}]$"),
        ],
    )


def stopped(ledger: Ledger, fact_ids: Sequence[str]) -> Symptom | None:
    """The run is not running: its logs quiet past the threshold (as for a stall) and no
    process on the target works in the workspace (``processes.in_workspace``, empty). Not
    a fault by itself (a finished run is so too): said, so that a report on a run that is
    over never reads as one on a live run."""
    found = _quiet(ledger, fact_ids)
    if found is None:
        return None
    working = as_dict(found.processes.value).get("in_workspace")
    if not isinstance(working, list) or working:
        return None
    label = "live processes that work in the workspace"
    ref = Ref(fact=found.processes.id, path=vp.IN_WORKSPACE, label=label)
    return found.symptom(
        "stopped",
        "and no process on the target works in the workspace",
        [Claim(predicate=Absent(a=ref))],
    )


def _said_resumed(console: Fact, signatures: dict[str, Any]) -> Symptom | None:
    """A line that says the run resumed, dated by the step printed before it."""
    sig = as_dict(signatures.get(RESUME))
    count = sig.get("count")
    if not isinstance(count, int) or count < 1:
        return None
    said = str(sig.get("first") or "")[:160]
    return restart(
        console,
        console_path(RESUME, "count"),
        "console lines that say the run resumed",
        1,
        f"the console says so at line {sig.get('first_line')}: {said!r}",
        finite_number(as_dict(sig.get("first_after_step")).get("step")),
    )


def _reloaded(console: Fact, signatures: dict[str, Any]) -> Symptom | None:
    """A checkpoint loaded after the console printed a step: the run went back to it."""
    midrun = as_dict(as_dict(signatures.get(CHECKPOINT_LOAD)).get("first_midrun"))
    step = finite_number(as_dict(midrun.get("after_step")).get("step"))
    if step is None:
        return None
    said = str(midrun.get("text") or "")[:160]
    return restart(
        console,
        console_path(CHECKPOINT_LOAD, "first_midrun", "after_step", "step"),
        "the step the console printed before it loaded a checkpoint",
        0,
        f"the console loaded a checkpoint after step {step:g}, at line {midrun.get('line')}:"
        f" {said!r}",
        step,
    )


def _trained_again(console: Fact, signatures: dict[str, Any]) -> Symptom | None:
    """Trainer's summary printed more than once: its train() ran again in this console
    (a resume, or a script that trains twice), each call a segment of its own."""
    sig = as_dict(signatures.get(RUN_SUMMARY))
    count = sig.get("count")
    if not isinstance(count, int) or count < 2:
        return None
    return restart(
        console,
        console_path(RUN_SUMMARY, "count"),
        "summaries of a train() call on the console",
        2,
        f"the console holds {count} summaries of Trainer's train() calls, the first at"
        f" line {sig.get('first_line')} and the last at line {sig.get('last_line')}",
        None,
    )


def resumed_in_console(
    ledger: Ledger, fact_ids: Sequence[str], found: Sequence[Symptom]
) -> Symptom | None:
    """A restart the console shows where the train log shows none (its steps went on,
    its counters did not go back), the first of: a line that says so (Trainer's
    "Continuing training from …", Lightning's "Restoring states from the checkpoint path
    at …", a script's "resuming from …"); a checkpoint loaded after a step was printed;
    a second summary of Trainer's train()."""
    if any(s.kind == "restarted" for s in found):
        return None
    console = observed(latest(ledger, fact_ids, "stdoutlog"))
    if console is None:
        return None
    signatures = as_dict(as_dict(console.value).get("signatures"))
    for read in (_said_resumed, _reloaded, _trained_again):
        symptom = read(console, signatures)
        if symptom is not None:
            return symptom
    return None


EPOCH_FLOOR = 1e9  # seconds: a record time below this is not a wall clock (2001 on)
START_SLACK = 2.0  # seconds: a process start is known to a clock tick and a boot second


def restarted_process(
    ledger: Ledger, fact_ids: Sequence[str], found: Sequence[Symptom]
) -> Symptom | None:
    """A trainer process that works in the workspace and started after the train log's
    first record (its wall clock): an earlier process wrote the start of the log, so the
    run was started again, where nothing else says so."""
    if any(s.kind == "restarted" for s in found):
        return None
    trainlog = observed(latest(ledger, fact_ids, "trainlog"))
    processes = observed(latest(ledger, fact_ids, "processes"))
    if trainlog is None or processes is None:
        return None
    first = finite_number(resolve(trainlog, log_paths.TIME_FIRST))
    if first is None or first < EPOCH_FLOOR:
        return None
    value = as_dict(processes.value)
    working = {as_dict(w).get("pid") for w in value.get("in_workspace") or []}
    for i, proc in enumerate(value.get("processes") or []):
        proc = as_dict(proc)
        started = finite_number(proc.get("start_time"))
        if proc.get("pid") not in working or started is None or started <= first + START_SLACK:
            continue
        pid = proc.get("pid")
        return Symptom(
            kind="restarted",
            series="steps",
            subject=False,
            note=(
                f"trainer pid {pid} started {started - first:,.0f} s after the train log's"
                " first record: an earlier process wrote the log's start"
            ),
            claims=(
                Claim(
                    predicate=Greater(
                        a=Ref(
                            fact=processes.id,
                            path=vp.process(i, "start_time"),
                            label=f"start time of trainer pid {pid}",
                        ),
                        b=Ref(
                            fact=trainlog.id,
                            path=log_paths.TIME_FIRST,
                            label="time of the train log's first record",
                        ),
                    )
                ),
            ),
        )
    return None
