"""Host contention: other processes on the trainer's host take the cores it wants. Over
the live probe's window the host's cores were nearly all busy, more threads were ready to
run than there are cores (a queue for them), and processes that are neither the trainer
nor its children (nor the doctor) used at least a quarter of the cores; the busiest are
named with the CPU each used (those whose share rounds to none are not).

A cause of slowness, and a fault only on a run that got slower or stalled
(``Hypothesis.fault_alone``): a host whose other work leaves the trainer its cores is
busy, not contended for, and a trainer that is slowed by a neighbour shows it in its own
figures.

The evidence is the live fact's ``host`` (``tools.probes.live``): ``cores_busy`` (busy
over all CPU ticks in /proc/stat across the window), ``runnable`` (/proc/stat's
``procs_running`` at each sample, the probe's own thread not counted, and their median),
``cpus``, and ``others`` (each other process's CPU over the window, from its
/proc/PID/stat, the busiest first) with their sum ``others_cpu_share``. Proposed where a
live trainer process was found; containers see only their own processes, so a neighbour
in another container shows as busy cores and a queue with no name.
"""

from __future__ import annotations

from agent.model.claims import AtLeast, Claim, Exists, Greater, RatioAtLeast
from agent.model.facts import as_dict
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref
from agent.rules.live_threads import processes
from tools.figures import finite_number

SATURATED = 0.9  # of all cores' time busy over the window
NEIGHBOURS = 0.25  # of the host's cores used by other processes
NAMED = 3  # other processes cited by name


class HostContention:
    kind: Kind = "host_contention"
    needs = frozenset({"live"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        live = evidence.latest("live")
        if live is None or not live.ok or not processes(live):
            return []
        host = as_dict(as_dict(live.value).get("host"))
        claims = [
            Claim(
                predicate=AtLeast(
                    a=ref(live, "host", "cores_busy", label="share of the host's cores busy"),
                    value=SATURATED,
                )
            ),
            Claim(
                predicate=Greater(
                    a=ref(
                        live,
                        "host",
                        "runnable_median",
                        label="threads running or ready to run (median of the samples)",
                    ),
                    b=ref(live, "host", "cpus", label="the host's cores"),
                )
            ),
            Claim(
                predicate=RatioAtLeast(
                    a=ref(live, "host", "others_cpu_share", label="cores other processes used"),
                    b=ref(live, "host", "cpus", label="the host's cores"),
                    ratio=NEIGHBOURS,
                )
            ),
        ]
        named = 0
        for k, other in enumerate(host.get("others") or []):
            if named == NAMED:
                break
            # A neighbour whose share rounds to 0 (a tick over the window) is no evidence
            # for or against contention: claimed present, it would refute the hypothesis
            # that the three claims above establish.
            used = finite_number(as_dict(other).get("cpu_share"))
            if used is None or used <= 0:
                continue
            named += 1
            pid = as_dict(other).get("pid")
            claims.append(
                Claim(
                    predicate=Exists(
                        a=ref(
                            live,
                            "host",
                            "others",
                            k,
                            "cpu_share",
                            label=f"cores pid {pid} ({as_dict(other).get('name')}) used",
                        )
                    )
                )
            )
        return [
            Hypothesis(
                kind=self.kind,
                claims=tuple(claims),
                predictions=(
                    Prediction(
                        expect="with the processes named stopped or moved (or the trainer "
                        "given cores of its own), the speed comes back",
                        probe="live",
                    ),
                ),
                weight=1,
                fault_alone=False,
            )
        ]
