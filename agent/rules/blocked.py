"""Threads blocked: the live trainer waits and nothing will end the wait, while the
process uses almost no CPU and its logs have not grown for ``STALL_FLOOR`` seconds. Two
forms, cited with the threads and the lines they wait at, as the target's source files
have them:

- a thread inside a collective (``torch.distributed``'s ``all_reduce``, ``broadcast``,
  ``barrier``, …) in every sample: it waits for a peer rank that does not join, and the
  op is named (the frame of ``distributed_c10d.py`` in its stack);
- two or more threads waiting (on a lock, a condition, a join, a queue) in every sample:
  a deadlock, each holding what the other waits for.

The evidence is the live fact (``tools.probes.live``): each thread's activity over its
samples (``tools.probes._activities``: ``collective`` is any frame in torch's
distributed modules; ``waiting`` a line that acquires, waits, joins or gets, or a
``with`` block entered while py-spy sees the thread idle), its share, its representative
stack; the process's CPU share; and the logs' pulse (``file.age_s``). A process with one
thread and no collective is not tested (nothing to deadlock with); one whose threads do
not all wait is a refuted hypothesis, so the report says what was looked at.
"""

from __future__ import annotations

from typing import Any

from agent.analysis.progress import STALL_FLOOR
from agent.model.claims import AtLeast, AtMost, Claim, Equal, Exists
from agent.model.facts import Fact, as_dict
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref
from agent.rules.live_threads import processes, who

IDLE_CPU = 0.1  # of one core: a process whose threads all wait does nothing else
MAX_CITED = 4  # threads cited
COLLECTIVES = "torch/distributed/distributed_c10d.py"  # where all_reduce & co. are defined


class ThreadsBlocked:
    kind: Kind = "threads_blocked"
    needs = frozenset({"live", "trainlog", "stdoutlog"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        live = evidence.latest("live")
        if live is None or not live.ok:
            return []
        pulse = next(
            (
                fact
                for fact in (evidence.latest("trainlog"), evidence.latest("stdoutlog"))
                if fact is not None
                and fact.ok
                and as_dict(as_dict(fact.value).get("file")).get("age_s") is not None
            ),
            None,
        )
        out = []
        for i, proc in enumerate(processes(live)):
            threads = [(j, as_dict(t)) for j, t in enumerate(proc.get("threads") or [])]
            sampled = [(j, t) for j, t in threads if t.get("samples")]
            collective = [(j, t) for j, t in sampled if t.get("activity") == "collective"]
            if collective:
                out.append(self._collective(live, pulse, i, proc, *collective[0]))
            elif len(sampled) >= 2:
                out.append(self._one(live, pulse, i, proc, sampled))
        return out

    def _collective(
        self,
        live: Fact,
        pulse: Fact | None,
        i: int,
        proc: dict[str, Any],
        j: int,
        thread: dict[str, Any],
    ) -> Hypothesis:
        """A thread inside a collective in every sample, the process idle, the logs
        quiet: it waits for a peer that does not join (a rank stopped, hung, or gone)."""
        at = ("processes", i, "threads", j)
        name = who(thread, proc)
        claims = [
            Claim(
                predicate=Equal(
                    a=ref(live, *at, "activity", label=f"what {name} did"), value="collective"
                )
            ),
            Claim(
                predicate=AtLeast(
                    a=ref(live, *at, "activity_share", label=f"share of {name}'s samples in it"),
                    value=1.0,
                )
            ),
        ]
        stack = [as_dict(f) for f in thread.get("stack") or []]
        op = next((k for k, f in enumerate(stack) if COLLECTIVES in str(f.get("file"))), None)
        if op is not None:
            label = f"the collective {name} waits in"
            claims.append(
                Claim(predicate=Exists(a=ref(live, *at, "stack", op, "function", label=label)))
            )
        return self._finish(
            live,
            pulse,
            i,
            proc,
            claims,
            "the peer ranks' stacks show which one stopped calling the collective, and where",
        )

    def _finish(
        self,
        live: Fact,
        pulse: Fact | None,
        i: int,
        proc: dict[str, Any],
        claims: list[Claim],
        expect: str,
    ) -> Hypothesis:
        """The claims every blocked process shares: it used almost no CPU, and its logs
        have not grown for the stall floor."""
        label = f"cores pid {proc.get('pid')} used while its threads waited"
        claims.append(
            Claim(
                predicate=AtMost(
                    a=ref(live, "processes", i, "cpu_share", label=label), value=IDLE_CPU
                )
            )
        )
        if pulse is not None:
            label = (
                f"seconds since the {'train log' if pulse.probe == 'trainlog' else 'console'} grew"
            )
            claims.append(
                Claim(
                    predicate=AtLeast(a=ref(pulse, "file", "age_s", label=label), value=STALL_FLOOR)
                )
            )
        return Hypothesis(
            kind="threads_blocked",
            claims=tuple(claims),
            predictions=(Prediction(expect=expect, probe="live"),),
            weight=3,
        )

    def _one(
        self,
        live: Fact,
        pulse: Fact | None,
        i: int,
        proc: dict[str, Any],
        sampled: list[tuple[int, dict[str, Any]]],
    ) -> Hypothesis:
        # The waiting threads first (all samples waiting), then the others: two at least.
        ranked = sorted(
            sampled,
            key=lambda jt: (
                jt[1].get("activity") != "waiting",
                -(jt[1].get("activity_share") or 0),
            ),
        )
        cited = [jt for jt in ranked if jt[1].get("activity") == "waiting"][:MAX_CITED]
        cited = cited if len(cited) >= 2 else ranked[:2]
        claims: list[Claim] = []
        for j, thread in cited:
            at = ("processes", i, "threads", j)
            name = who(thread, proc)
            claims.append(
                Claim(
                    predicate=Equal(
                        a=ref(live, *at, "activity", label=f"what {name} did"), value="waiting"
                    )
                )
            )
            claims.append(
                Claim(
                    predicate=AtLeast(
                        a=ref(
                            live, *at, "activity_share", label=f"share of {name}'s samples waiting"
                        ),
                        value=1.0,
                    )
                )
            )
            if as_dict((thread.get("stack") or [{}])[0]).get("text"):
                label = f"the line {name} waits at"
                claims.append(
                    Claim(predicate=Exists(a=ref(live, *at, "stack", 0, "text", label=label)))
                )
        return self._finish(
            live,
            pulse,
            i,
            proc,
            claims,
            "each thread waits on what another holds: their stacks again in a minute show "
            "the same lines",
        )
