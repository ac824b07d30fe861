"""Time in the trainer's own code: a thread of the live trainer spends most of its
sampled stacks in one frame of the trainer's own code, either sleeping there (a debugging
sleep left in a callback, a poll loop) while the whole process, torch loaded in it,
barely uses a core, or computing there (a slow Python loop) while py-spy sees the thread
active. What one stack dump shows in seconds, and no log says. Sleeping is a fault on its
own; computing is one only on a run that got slower or stalled (a hand-written loop's
own lines are where it calls torch: ``Hypothesis.fault_alone``).

The evidence is the live fact (``tools.probes.live``): per thread, the activity most of
its samples fell in (``tools.probes._activities``) and that share, its innermost frame
outside the standard library and installed packages (``file:line function``) with how
many samples showed it, how many samples had the trainer's own code innermost (a launcher
such as torchrun's agent sleeps inside the library it calls, below its own script's
frame), how many py-spy saw it active in, the process's CPU share over the window and
whether torch is mapped into it. The thread tested is the one with its own code innermost
in the most samples (else the busiest): a trainer that runs library code is a refuted
hypothesis, not none, so the report says what was looked at.
"""

from __future__ import annotations

import math
from typing import Any

from agent.model.claims import AtLeast, AtMost, Claim, Equal, Exists
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref
from agent.rules.live_threads import (
    SHARE,
    doing,
    innermost_line,
    per_process,
    who,
)

IDLE_CPU = 0.5  # a process that sleeps uses less than half a core
OWN = ("sleeping", "own_code")


class OwnCodeTime:
    kind: Kind = "own_code_time"
    needs = frozenset({"live"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        return per_process(
            self.kind, evidence.latest("live"), OWN, "own_innermost_samples", self._one
        )

    def _one(
        self, live: Fact, i: int, proc: dict[str, Any], j: int, thread: dict[str, Any]
    ) -> Hypothesis:
        at = ("processes", i, "threads", j)
        busy = thread.get("activity") == "own_code"
        claims = (
            *_in_own_code(live, at, thread, who(thread, proc)),
            *(_busy(live, at, thread, who(thread, proc)) if busy else _asleep(live, i, proc)),
        )
        return Hypothesis(
            kind="own_code_time",
            claims=claims,
            predictions=(
                Prediction(
                    expect="the frame's line is where the time goes: removing the sleep or "
                    "speeding the loop there brings the speed back",
                    probe="live",
                ),
            ),
            weight=2,
            # A loop busy in the trainer's own code may be the training itself (a
            # hand-written loop calls torch from its own lines): a fault only on a run
            # that got slower. A trainer asleep most of the time is one on its own.
            fault_alone=not busy,
        )


def _least_share(thread: dict[str, Any]) -> int:
    """``SHARE`` of the thread's samples, at least one."""
    return max(1, math.ceil(SHARE * int(thread.get("samples") or 0)))


def _in_own_code(
    live: Fact, at: tuple[str | int, ...], thread: dict[str, Any], name: str
) -> list[Claim]:
    """The thread spends most of its samples in a frame of the trainer's own code, as
    the innermost frame."""
    return [
        *doing(live, at, name, OWN),
        Claim(
            predicate=Exists(
                a=ref(live, *at, "own_frame", label=f"{name}'s frame in the trainer's code")
            )
        ),
        Claim(
            predicate=AtLeast(
                a=ref(live, *at, "own_frame_samples", label="samples that showed it"),
                value=_least_share(thread),
            )
        ),
        # Where the thread is, not a caller of it: a launcher's loop (torchrun's
        # agent) sleeps in the library it calls, not in its own frame.
        Claim(
            predicate=AtLeast(
                a=ref(
                    live,
                    *at,
                    "own_innermost_samples",
                    label="samples whose innermost frame is the trainer's own code",
                ),
                value=_least_share(thread),
            )
        ),
        *innermost_line(live, at, name, thread),
    ]


def _busy(live: Fact, at: tuple[str | int, ...], thread: dict[str, Any], name: str) -> list[Claim]:
    """A loop busy there: py-spy's "active" (running or runnable), not its CPU share: a
    loop on a host whose cores are shared is as busy, it only gets less of them."""
    label = f"samples py-spy saw {name} active in"
    return [
        Claim(
            predicate=AtLeast(
                a=ref(live, *at, "active_samples", label=label), value=_least_share(thread)
            )
        )
    ]


def _asleep(live: Fact, i: int, proc: dict[str, Any]) -> list[Claim]:
    """A trainer asleep there, not a launcher that polls the trainer it started: torch is
    loaded into the process and it used next to no CPU."""
    loaded = f"torch's libraries mapped into pid {proc.get('pid')}"
    idle = f"cores pid {proc.get('pid')} used while it slept there"
    return [
        Claim(
            predicate=Equal(a=ref(live, "processes", i, "torch_loaded", label=loaded), value=True)
        ),
        Claim(
            predicate=AtMost(a=ref(live, "processes", i, "cpu_share", label=idle), value=IDLE_CPU)
        ),
    ]
