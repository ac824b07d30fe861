"""From probe results to facts: the one place where a sweep's results enter the ledger."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence

from agent.facts import Fact, Ledger
from tools.sweep import ProbeResult, SweepResult, SweepSpec, build_plan, sweep
from tools.transport.base import CommandResult, KeyedStdin, Transport

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


class _PlanKeyed:
    """Hands the bundle to the transport keyed by its plan (see ``KeyedStdin``), so a
    recorded sweep replays for the same plan even after the probes' code changed."""

    def __init__(self, inner: Transport, key: str) -> None:
        self.inner = inner
        self.key = key
        self.name = inner.name

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        keyed = None if stdin is None else KeyedStdin(stdin, self.key)
        return self.inner.run(argv, stdin=keyed, timeout=timeout)

    def close(self) -> None:
        self.inner.close()


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
            probes = None if only is None else sorted(only)
            plan = build_plan(self.spec, probes)
            keyed = _PlanKeyed(
                self.transport, hashlib.sha256(plan.model_dump_json().encode()).hexdigest()
            )
            result = self.run_sweep(keyed, self.spec, only=probes)
            if self.on_result is not None:
                self.on_result(result)
            facts = []
            for probe in result.results:
                if probe.error is not None and probe.error.kind == "skipped":
                    self.skipped[probe.probe] = probe.error.message
                    continue
                facts.append(self.ledger.append(fact_from_probe(probe)))
            return facts
