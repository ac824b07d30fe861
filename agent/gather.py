"""From probe results to facts: the one place where a sweep's results enter the ledger."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from agent.facts import Fact, Ledger
from tools.bundle import ProbeResult, SweepResult, SweepSpec, sweep
from tools.transport.base import Transport

Sweep = Callable[..., SweepResult]


def fact_from_probe(result: ProbeResult) -> Fact:
    return Fact(
        probe=result.probe,
        target=result.target,
        argv=result.argv,
        rc=result.rc,
        stdout_digest=result.stdout_digest,
        stderr_digest=result.stderr_digest,
        value=result.value,
        error=result.error_text,
        duration=result.duration,
    )


class SweepGatherer:
    """Runs the probe bundle on a target (one round trip) and files the results.

    A probe that had nothing to look at (``skipped``) observed nothing, so it becomes no
    fact; every other result, failures included, does. Family nodes run side by side, so
    a lock keeps their sweeps (and ledger appends) one at a time.
    """

    def __init__(
        self,
        transport: Transport,
        spec: SweepSpec,
        ledger: Ledger,
        *,
        run_sweep: Sweep = sweep,
        on_result: Callable[[SweepResult], None] | None = None,
    ) -> None:
        self.transport = transport
        self.spec = spec
        self.ledger = ledger
        self.run_sweep = run_sweep
        self.on_result = on_result
        self.skipped: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, only: Iterable[str] | None) -> list[Fact]:
        with self._lock:
            result = self.run_sweep(
                self.transport, self.spec, only=None if only is None else sorted(only)
            )
            if self.on_result is not None:
                self.on_result(result)
            facts = []
            for probe in result.results:
                if probe.error is not None and probe.error.kind == "skipped":
                    self.skipped[probe.probe] = probe.error.message
                    continue
                facts.append(self.ledger.append(fact_from_probe(probe)))
            return facts
