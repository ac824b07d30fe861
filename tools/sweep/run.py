"""Running a sweep: plan, render, one round trip, parse."""

from __future__ import annotations

import time
from collections.abc import Iterable

from tools.errors import CommandTimeout
from tools.log import get_logger
from tools.sweep.bundle import render
from tools.sweep.output import parse_output
from tools.sweep.plan import build_plan
from tools.sweep.results import SweepResult
from tools.sweep.spec import SweepSpec
from tools.transport.base import CommandResult, Transport

log = get_logger(__name__)

# Below this many seconds before the deadline a sweep is not started: the bundle could
# not even start its interpreter, and a timeout that fires at once says less than this.
_LEAST = 1.0


def sweep(
    transport: Transport,
    spec: SweepSpec,
    only: Iterable[str] | None = None,
    timeout: float | None = None,
    *,
    deadline: float | None = None,
) -> SweepResult:
    """Run the probes of ``spec`` (or the ``only`` subset) on ``transport`` in one
    round trip. ``timeout`` defaults to the plan's worst case; with a ``deadline``
    (``time.monotonic()``) the command must also end by then, and ``CommandTimeout`` is
    raised, nothing sent, when less than a second is left. A transport failure
    (unreachable host, the whole command timed out) raises a ``TransportError``."""
    plan = build_plan(spec, only)
    name = getattr(transport, "name", "?")
    bound = log.bind(target=name)
    if not plan.runnable():
        started = time.monotonic()
        empty = CommandResult(plan.argv, 0, b"", b"", 0.0, name)
        out = parse_output(empty, plan)
        bound.info("sweep_skipped", probes=len(plan.probes), duration=time.monotonic() - started)
        return out
    script = render(plan)
    limit = timeout or plan.budget()
    if deadline is not None:
        # Measured after the render, so the command's own time is what is left.
        left = deadline - time.monotonic()
        if left < _LEAST:
            raise CommandTimeout(
                "no time left in the target's time limit for the sweep", target=name
            )
        limit = min(limit, left)
    bound.info("sweep_started", probes=[p.name for p in plan.runnable()], bytes=len(script))
    result = transport.run(plan.argv, stdin=script, timeout=limit)
    out = parse_output(result, plan)
    bound.info(
        "sweep_finished",
        rc=result.rc,
        duration=round(result.duration, 3),
        failed=[r.probe for r in out.failed() if r.error is not None and r.error.kind != "skipped"],
    )
    return out
