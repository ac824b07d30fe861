"""Time in the trainer's own code: a thread of the live trainer spends most of its
sampled stacks in one frame of the trainer's own code, either sleeping there (a debugging
sleep left in a callback, a poll loop) while the whole process barely uses a core, or
computing there (a slow Python loop) while the thread keeps a core busy. What one stack
dump shows in seconds, and no log says.

The evidence is the live fact (``tools.probes.live``): per thread, the activity most of
its samples fell in (``tools.probes._activities``) and that share, its innermost frame
outside the standard library and installed packages (``file:line function``) with how
many samples showed it, and the thread's and the process's CPU share over the window.
The thread tested is the one whose own frame the most samples showed (else the busiest):
a trainer that runs library code is a refuted hypothesis, not none, so the report says
what was looked at.
"""

from __future__ import annotations

import math
from typing import Any

from agent.claims import AtLeast, AtMost, Claim, Exists, Matches
from agent.facts import Fact
from agent.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref

SHARE = 0.6  # of a thread's samples in the activity, and showing the one own frame
IDLE_CPU = 0.5  # a process that sleeps uses less than half a core
BUSY_CPU = 0.5  # a thread computing in its own code keeps at least half a core busy
OWN = ("sleeping", "own_code")


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _pick(threads: list[Any]) -> int | None:
    """The thread whose own frame the most samples showed; else the busiest sampled."""
    sampled = [(j, _dict(t)) for j, t in enumerate(threads) if _dict(t).get("samples")]
    if not sampled:
        return None
    own = [(j, t) for j, t in sampled if t.get("activity") in OWN and t.get("own_frame")]
    pool = own or sampled
    return max(pool, key=lambda jt: (jt[1].get("own_frame_samples") or 0, jt[1].get("cpu_s") or 0))[
        0
    ]


def remedy(preflight: dict[str, Any], uid: object) -> str:
    """What would let py-spy attach: the trainer's own user (or root) where the probe ran
    as another without CAP_SYS_PTRACE, else what this kind of host withholds."""
    euid = preflight.get("euid")
    if isinstance(euid, int) and euid != 0 and euid != uid and not preflight.get("cap_sys_ptrace"):
        return f"probe as the trainer's user (uid {uid}) or as root (the probe ran as uid {euid})"
    return str(preflight.get("remedy_if_denied") or "")


def unread_stacks(live: Fact, i: int, proc: dict[str, Any]) -> Hypothesis:
    """A live trainer whose stacks could not be read: unverifiable, with what would read
    them (py-spy on the target, or the permission this kind of host withholds)."""
    value = _dict(live.value)
    pid = proc.get("pid")
    if value.get("py_spy") is None:
        expect = (
            f"py-spy is not on the target (its PATH, beside its Python) to read pid {pid}'s"
            " stacks: pip install py-spy there, or name it in the profile (py_spy)"
        )
    else:
        expect = (
            f"py-spy could not read pid {pid}'s stacks ({proc.get('stacks_error')}):"
            f" {remedy(_dict(value.get('preflight')), proc.get('uid'))}"
        )
    label = f"what the threads of pid {pid} did"
    return Hypothesis(
        kind="own_code_time",
        claims=(
            Claim(
                predicate=Exists(a=ref(live, "processes", i, "threads", 0, "activity", label=label))
            ),
        ),
        predictions=(Prediction(expect=expect, probe="live"),),
        probes=("live",),
    )


class OwnCodeTime:
    kind: Kind = "own_code_time"
    needs = frozenset({"live"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        live = evidence.latest("live")
        if live is None or not live.ok:
            return []
        out = []
        for i, proc in enumerate(_dict(live.value).get("processes") or []):
            threads = _dict(proc).get("threads") or []
            j = _pick(threads)
            if j is not None:
                out.append(self._one(live, i, _dict(proc), j, _dict(threads[j])))
            elif threads:
                out.append(unread_stacks(live, i, _dict(proc)))
        return out

    def _one(
        self, live: Fact, i: int, proc: dict[str, Any], j: int, thread: dict[str, Any]
    ) -> Hypothesis:
        at = ("processes", i, "threads", j)
        who = f"thread {thread.get('name')!r} (tid {thread.get('tid')}) of pid {proc.get('pid')}"
        samples = int(thread.get("samples") or 0)
        claims = [
            Claim(
                predicate=Matches(
                    a=ref(live, *at, "activity", label=f"what {who} mostly did"),
                    pattern="^(?:" + "|".join(OWN) + ")$",
                )
            ),
            Claim(
                predicate=AtLeast(
                    a=ref(live, *at, "activity_share", label=f"share of {who}'s samples in it"),
                    value=SHARE,
                )
            ),
            Claim(
                predicate=Exists(
                    a=ref(live, *at, "own_frame", label=f"{who}'s frame in the trainer's code")
                )
            ),
            Claim(
                predicate=AtLeast(
                    a=ref(live, *at, "own_frame_samples", label="samples that showed it"),
                    value=max(1, math.ceil(SHARE * samples)),
                )
            ),
        ]
        if _dict((thread.get("stack") or [{}])[0]).get("text"):
            label = f"{who}'s innermost line, as its source file has it"
            claims.append(
                Claim(predicate=Exists(a=ref(live, *at, "stack", 0, "text", label=label)))
            )
        if thread.get("activity") == "own_code":
            label = f"cores {who} kept busy"
            claims.append(
                Claim(predicate=AtLeast(a=ref(live, *at, "cpu_share", label=label), value=BUSY_CPU))
            )
        else:
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
            probes=("live",),
            weight=2,
        )
