"""From probe results to facts: the one place where a sweep's results enter the ledger."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence

from agent.model.facts import Fact, Ledger
from tools.carry import carry_py_spy, local_py_spy
from tools.errors import WorkspaceMissing
from tools.log import get_logger
from tools.sweep import ProbeResult, SweepResult, SweepSpec, build_plan, sweep
from tools.text import model_json
from tools.transport.base import CommandResult, KeyedStdin, Transport

Sweep = Callable[..., SweepResult]
log = get_logger(__name__)


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

    With ``carry``, a sweep whose live probe found the trainer and no py-spy on the
    target runs that probe again with this machine's py-spy carried there
    (``tools.carry``), and removes it after; both live facts are filed, the later one
    with the stacks.
    """

    def __init__(
        self,
        transport: Transport,
        spec: SweepSpec,
        ledger: Ledger,
        *,
        run_sweep: Sweep = sweep,
        on_result: Callable[[SweepResult], None] | None = None,
        carry: bool = False,
    ) -> None:
        self.transport = transport
        self.spec = spec
        self.ledger = ledger
        self.run_sweep = run_sweep
        self.on_result = on_result
        # Put this machine's py-spy on a target that has none (``tools.carry``).
        self.carry = carry
        self.skipped: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, only: Iterable[str] | None) -> list[Fact]:
        with self._lock:
            probes = None if only is None else sorted(only)
            plan = build_plan(self.spec, probes)
            keyed = _PlanKeyed(
                self.transport, hashlib.sha256(model_json(plan).encode()).hexdigest()
            )
            result = self.run_sweep(keyed, self.spec, only=probes)
            facts = self._file(result)
            missing = missing_workspace(result, self.spec)
            if missing is not None:
                raise WorkspaceMissing(
                    f"--workspace {self.spec.workspace}: not a directory on the target"
                    f" ({missing}); give the trainer's own directory"
                )
            if self.carry and _wants_py_spy(result):
                facts += self._live_with_carried_py_spy()
            return facts

    def _file(self, result: SweepResult) -> list[Fact]:
        if self.on_result is not None:
            self.on_result(result)
        facts = []
        for probe in result.results:
            if probe.error is not None and probe.error.kind == "skipped":
                self.skipped[probe.probe] = probe.error.message
                continue
            facts.append(self.ledger.append(fact_from_probe(probe)))
        return facts

    def _live_with_carried_py_spy(self) -> list[Fact]:
        """The live probe again, with this machine's py-spy carried to the target and
        taken away after; nothing where it cannot be carried (the first live fact says
        py-spy is missing, with the remedy)."""
        binary = local_py_spy()
        if binary is None:
            log.warning("py_spy_not_carried", why="no py-spy on this machine")
            return []
        carried, why = carry_py_spy(self.transport, binary)
        if carried is None:
            log.warning("py_spy_not_carried", why=why)
            return []
        try:
            spec = self.spec.model_copy(update={"py_spy": carried.path, "py_spy_carried": True})
            plan = build_plan(spec, ["live"])
            keyed = _PlanKeyed(
                self.transport, hashlib.sha256(model_json(plan).encode()).hexdigest()
            )
            return self._file(self.run_sweep(keyed, spec, only=["live"]))
        finally:
            failed = carried.remove()
            if failed is not None:
                log.warning("py_spy_not_removed", why=failed)


def missing_workspace(result: SweepResult, spec: SweepSpec) -> str | None:
    """What the layout probe said when the workspace itself is missing or no directory
    on the target (every probe of the trainer's files would find nothing there)."""
    for probe in result.results:
        error = probe.error
        if (
            probe.probe == "layout"
            and error is not None
            and error.kind in ("not_found", "not_a_directory")
            and error.path == spec.workspace
        ):
            return error.message
    return None


def _wants_py_spy(result: SweepResult) -> bool:
    """The live probe found trainer processes and no py-spy on the target to read them."""
    for probe in result.results:
        value = probe.value
        if probe.probe == "live" and isinstance(value, dict):
            return value.get("py_spy") is None and bool(value.get("processes"))
    return False
