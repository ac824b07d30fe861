"""Many targets at once: bounded concurrency and a hard time limit per target.

Each target is checked in a thread of its own, at most ``jobs`` at a time. The time limit
is enforced here, not only inside the check: a host that accepts TCP and then says
nothing, or a sweep that hangs, is declared "could not check" when its limit is up, its
transport is closed (which ends an SSH command in flight), and its slot goes to the next
target. The abandoned thread is a daemon: it can finish late or never, but it cannot
hold the run, and whatever it returns late is ignored.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from agent.health.check import Cancel, HealthTarget, not_checked
from agent.health.model import TargetResult
from tools.log import get_logger

log = get_logger(__name__)

CheckFn = Callable[[HealthTarget, float, Cancel], TargetResult]
"""Checks one target before a ``time.monotonic()`` deadline; must not raise."""


def run_fleet(
    targets: Sequence[HealthTarget],
    check: CheckFn,
    *,
    jobs: int,
    limit: float,
) -> list[TargetResult]:
    """Results in the order of ``targets``."""
    done: queue.Queue[tuple[int, TargetResult]] = queue.Queue()
    results: dict[int, TargetResult] = {}
    running: dict[int, tuple[float, datetime, Cancel]] = {}
    pending = list(enumerate(targets))

    def work(index: int, target: HealthTarget, deadline: float, cancel: Cancel) -> None:
        started_at = datetime.now(UTC)
        try:
            result = check(target, deadline, cancel)
        except Exception as exc:  # a check must not raise; if one does, say so, at once
            log.exception("health_check_raised", target=target.label)
            result = not_checked(
                target,
                started_at,
                time.monotonic() - (deadline - limit),
                f"internal error: {type(exc).__name__}: {exc}",
            )
        done.put((index, result))

    while pending or running:
        while pending and len(running) < max(1, jobs):
            index, target = pending.pop(0)
            deadline = time.monotonic() + limit
            cancel = Cancel()
            running[index] = (deadline, datetime.now(UTC), cancel)
            threading.Thread(
                target=work,
                args=(index, target, deadline, cancel),
                name=f"health-{target.label}",
                daemon=True,
            ).start()
        wait = min(d for d, _, _ in running.values()) - time.monotonic()
        try:
            index, result = done.get(timeout=max(0.0, wait))
        except queue.Empty:
            _expire(targets, running, results, limit)
            continue
        if index in running:  # else it came back after its time limit: too late
            del running[index]
            results[index] = result
    return [results[i] for i in range(len(targets))]


def _expire(
    targets: Sequence[HealthTarget],
    running: dict[int, tuple[float, datetime, Cancel]],
    results: dict[int, TargetResult],
    limit: float,
) -> None:
    now = time.monotonic()
    for index, (deadline, started_at, cancel) in list(running.items()):
        if deadline > now:
            continue
        del running[index]
        target = targets[index]
        log.warning("health_time_limit", target=target.label, limit=limit)
        cancel()
        session = cancel.session
        results[index] = not_checked(
            target,
            started_at,
            limit,
            f"time limit of {limit:g}s per target exceeded",
            session=session.id if session else None,
            transcript=str(session.transcript_path) if session else None,
        )
