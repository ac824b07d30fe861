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
        name = who(thread, proc)
        samples = int(thread.get("samples") or 0)
        claims = [
            *doing(live, at, name, OWN),
            Claim(
                predicate=Exists(
                    a=ref(live, *at, "own_frame", label=f"{name}'s frame in the trainer's code")
                )
            ),
            Claim(
                predicate=AtLeast(
                    a=ref(live, *at, "own_frame_samples", label="samples that showed it"),
                    value=max(1, math.ceil(SHARE * samples)),
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
                    value=max(1, math.ceil(SHARE * samples)),
                )
            ),
            *innermost_line(live, at, name, thread),
        ]
        busy = thread.get("activity") == "own_code"
        if busy:
            # py-spy's "active" (running or runnable), not its CPU share: a loop on a host
            # whose cores are shared is as busy, it only gets less of them.
            label = f"samples py-spy saw {name} active in"
            claims.append(
                Claim(
                    predicate=AtLeast(
                        a=ref(live, *at, "active_samples", label=label),
                        value=max(1, math.ceil(SHARE * samples)),
                    )
                )
            )
        else:
            # A trainer asleep, not a launcher that polls the trainer it started.
            label = f"torch's libraries mapped into pid {proc.get('pid')}"
            claims.append(
                Claim(
                    predicate=Equal(
                        a=ref(live, "processes", i, "torch_loaded", label=label), value=True
                    )
                )
            )
            label = f"cores pid {proc.get('pid')} used while it slept there"
            claims.append(
                Claim(
                    predicate=AtMost(
                        a=ref(live, "processes", i, "cpu_share", label=label), value=IDLE_CPU
                    )
                )
            )
        return Hypothesis(
            kind="own_code_time",
            claims=tuple(claims),
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
